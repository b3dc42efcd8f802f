// Which stored messages a retry of the last turn replaces (docs/sessions.md#retries), as a table: the
// request must say it is a retry, and its new messages, found against the session as it was before
// that turn, must be the turn's own, its reply left out.
import { describe, expect, it } from 'vitest';
import type { HistoryMode } from '../../src/context/reconcile.js';
import type { ContextMessage } from '../../src/context/types.js';
import { retriedTurnLength, type TurnRetry } from '../../src/sessions/session-turn.js';
import { emptySnapshot, type SessionSnapshot } from '../../src/store/session-store.js';

const user = (content: string): ContextMessage => ({ role: 'user', content });
const assistant = (content: string): ContextMessage => ({ role: 'assistant', content });
const stored = [user('one'), assistant('first answer'), user('two'), assistant('second answer')];

function snapshot(extra: Partial<SessionSnapshot> = {}): SessionSnapshot {
  return {
    ...emptySnapshot,
    version: 2,
    messages: stored.map((message) => ({ message, tokens: 5 })),
    lastTurn: { messages: 2, key: 'key-2' },
    ...extra,
  };
}

const marked: TurnRetry = { retried: true, key: undefined };
const unmarked: TurnRetry = { retried: false, key: undefined };

describe('retriedTurnLength', () => {
  it.each<[string, SessionSnapshot, ContextMessage[], HistoryMode, TurnRetry, number]>([
    [
      'a marked resend of the whole conversation less the reply',
      snapshot(),
      [user('one'), assistant('first answer'), user('two')],
      'auto',
      marked,
      2,
    ],
    ['a marked delta resend of the turn', snapshot(), [user('two')], 'delta', marked, 2],
    [
      'a delta resend carrying the turn’s key',
      snapshot(),
      [user('two')],
      'delta',
      { retried: false, key: 'key-2' },
      2,
    ],
    ['the same question without a mark', snapshot(), [user('two')], 'delta', unmarked, 0],
    ['another key', snapshot(), [user('two')], 'delta', { retried: false, key: 'key-3' }, 0],
    ['a marked request with other messages', snapshot(), [user('three')], 'delta', marked, 0],
    [
      'a marked request that continues after the reply',
      snapshot(),
      [...stored, user('three')],
      'auto',
      marked,
      0,
    ],
    ['no last turn known', snapshot({ lastTurn: undefined }), [user('two')], 'delta', marked, 0],
    [
      'a last turn inside the protected head',
      snapshot({ headMessages: 3 }),
      [user('two')],
      'delta',
      marked,
      0,
    ],
    [
      'a last turn an in-turn summary stands for',
      snapshot({
        turnSummary: {
          text: 's',
          tokens: 1,
          turnStart: 2,
          toMessage: 3,
          steps: 1,
          coveredTokens: 5,
          updatedAtMs: 0,
        },
      }),
      [user('two')],
      'delta',
      marked,
      0,
    ],
  ])('%s: %i', (_label, session, incoming, mode, retry, expected) => {
    const messages = session.messages.map((entry) => entry.message as ContextMessage);
    expect(retriedTurnLength(session, messages, incoming, mode, retry)).toBe(expected);
  });
});
