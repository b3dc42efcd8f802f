// Which stored messages a retry of the last turn replaces (docs/sessions.md#retries), as a table: the
// request must say it is a retry, and its new messages, found against the session as it was before
// that turn, must be the turn's own, its reply left out. And a stored summary as the session's view
// shows it (a real redis-server): made once per summary, with the bytes the upstream body copies; the
// system prompt an agent sends with every request, neither written nor read again while unchanged.
import { inSession } from '../helpers/in-session.js';
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import type { HistoryMode } from '../../src/context/reconcile.js';
import { summaryMessage } from '../../src/context/summary.js';
import type { ContextMessage } from '../../src/context/types.js';
import { bridgeMessagesRequest } from '../../src/messages/bridge.js';
import { createHoldQueue } from '../../src/sessions/hold-queue.js';
import {
  beginSessionTurn,
  isCompactedConversation,
  isOtherConversation,
  previewSessionTurn,
  retriedTurnLength,
  sameJson,
  type SummaryMessages,
  type TurnRetry,
} from '../../src/sessions/session-turn.js';
import { serializeChatBody } from '../../src/chat/chat-body.js';
import { inPreviousPart } from '../../src/known-bytes.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { createRedisSessionStore } from '../../src/store/redis-session-store.js';
import { createMemorySessionStore } from '../../src/store/memory-session-store.js';
import {
  emptySnapshot,
  type SessionHold,
  type SessionKey,
  type SessionSnapshot,
  type SessionStore,
} from '../../src/store/session-store.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { commitTurns, storeSummary } from '../helpers/stored-turns.js';
import { words } from '../helpers/words.js';
import { seeded } from '../helpers/text.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';

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
    [
      'a last turn an earlier turn’s in-turn summary stands for',
      snapshot({
        pastTurnSummaries: [
          { text: 's', tokens: 1, turnStart: 2, toMessage: 3, steps: 1, coveredTokens: 5, updatedAtMs: 0 },
        ],
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

describe('a stored summary as the session shows it', () => {
  const limits = { maxActiveMessages: 40, minActiveMessages: 1, idleTtlSeconds: 3_600 };

  /** A session of four question/answer turns in a real redis-server, its first two turns summarized. */
  async function summarizedSession(store: SessionStore): Promise<SessionKey> {
    for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const key = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId: 'shown-summary' };
    await commitTurns(store, key, 4);
    await storeSummary(store, key, 0, summaryOf('They spoke of "vault 7" — and ✓.', 4));
    return key;
  }

  const summaryOf = (text: string, toMessage: number) => ({
    text,
    tokens: 12,
    fromMessage: 0,
    toMessage,
    coveredTokens: 8,
    updatedAtMs: 1,
  });

  it('is made once while the stored summary is unchanged, its bytes the JSON of the message sent, and anew once it changes', async () => {
    const store = createRedisSessionStore({
      redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
      limits,
    });
    try {
      const key = await summarizedSession(store);
      const summaries: SummaryMessages = new WeakMap();
      const view = async (memo: SummaryMessages | undefined) => {
        const seen = await inSession(
          previewSessionTurn({
            store,
            key,
            historyMode: 'delta',
            incoming: [user('question 4')],
            tokenizer: words,
            ...(memo === undefined ? {} : { summaries: memo }),
          }),
        );
        if (seen === undefined) throw new Error('the request was taken for another conversation');
        return seen;
      };
      const first = await view(summaries);
      const again = await view(summaries);
      const shown = first.summary?.message as ContextMessage;
      expect(shown).toEqual(summaryMessage('They spoke of "vault 7" — and ✓.', 4));
      expect(again.summary?.message).toBe(shown);
      // Known bytes wherever the renderer placed it: exactly what JSON.stringify writes for it.
      const sent = [user('earlier'), shown, ...again.conversation.slice(-2)];
      const known = again.knownBytes(sent);
      expect(known[1]?.toString('utf8')).toBe(
        JSON.stringify(summaryMessage('They spoke of "vault 7" — and ✓.', 4)),
      );
      expect(known[0]).toBeUndefined();
      // Sent merged into another message (notice placement), it is not the same object: no bytes for it.
      expect(again.knownBytes([{ ...shown }])[0]).toBeUndefined();
      // Without a memo each request makes its own (equal) message.
      const plain = await view(undefined);
      expect(plain.summary?.message).toEqual(shown);
      expect(plain.summary?.message).not.toBe(shown);
      // A new summary is shown as it is now.
      await storeSummary(store, key, 4, summaryOf('They spoke of vault 8.', 6));
      const changed = await view(summaries);
      expect(changed.summary?.message).toEqual(summaryMessage('They spoke of vault 8.', 6));
      expect(changed.knownBytes([changed.summary?.message as ContextMessage])[0]?.toString('utf8')).toBe(
        JSON.stringify(summaryMessage('They spoke of vault 8.', 6)),
      );
    } finally {
      await store.close();
    }
  });
});

describe('a session’s stored bytes for the upstream body', () => {
  const limits = { maxActiveMessages: 30, minActiveMessages: 1, idleTtlSeconds: 3_600 };
  const request = { model: 'm', messages: [], temperature: 0 };
  const partsOf = (known: ReadonlyArray<Buffer | undefined>): number =>
    known.filter((bytes) => bytes !== undefined && bytes !== inPreviousPart).length;

  it('gives stored messages sent in their order as runs of the store’s memory, and the body is exact', async () => {
    const connect = () =>
      createRedisSessionStore({
        redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
        limits,
      });
    const writer = connect();
    const reader = connect();
    try {
      for (let attempt = 0; attempt < 100 && !(await writer.ping()); attempt++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const key = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId: 'runs' };
      const view = () =>
        inSession(
          previewSessionTurn({
            store: reader,
            key,
            historyMode: 'delta',
            incoming: [user('new — “ü”')],
            tokenizer: words,
          }),
        );
      // The first turn is the protected head: the turns after it spill, leaving a gap in what this
      // replica holds between the head and the rest.
      const hold = await writer.acquire(key, 10_000);
      await writer.commit(key, {
        hold: hold as SessionHold,
        expectedVersion: 0,
        append: [
          { message: user('first question'), tokens: 3 },
          { message: assistant('first answer'), tokens: 3 },
        ],
        headMessages: 2,
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      let from = 1;
      const runs: number[] = [];
      for (const turns of [20, 1, 3, 6]) {
        // Another replica writes; this one reads what was appended (its oldest turns spilling meanwhile).
        await commitTurns(writer, key, turns, 3, from);
        from += turns;
        const seen = await view();
        const conversation = seen.conversation;
        const storedCount = conversation.length - 1;
        expect(storedCount).toBeGreaterThan(10);
        // Everything in order: the stored messages are one run, the new message serialized.
        const whole = seen.knownBytes(conversation, true);
        runs.push(partsOf(whole));
        expect(serializeChatBody(request, conversation, whole).toString('utf8')).toBe(
          JSON.stringify({ ...request, messages: conversation }),
        );
        // One left out and one sent as a copy (a masked result is another object): three runs.
        const sent = conversation.filter((_message, index) => index !== 3);
        sent[7] = { ...(sent[7] as ContextMessage) };
        const known = seen.knownBytes(sent, true);
        expect(partsOf(known)).toBe(partsOf(whole) + 2);
        expect(serializeChatBody(request, sent, known).toString('utf8')).toBe(
          JSON.stringify({ ...request, messages: sent }),
        );
        // Without runs, each stored message has its own bytes.
        expect(partsOf(seen.knownBytes(conversation))).toBe(storedCount);
      }
      // Read whole, the stored messages are one run; after a spill, the head and the rest.
      expect(runs[0]).toBe(1);
      expect(runs[1]).toBe(2);
      expect(Math.max(...runs)).toBe(2);
    } finally {
      await writer.close();
      await reader.close();
    }
  });
});

describe('earlier turns’ in-turn summaries as the session shows them', () => {
  it('gives each the place of its turn in this request’s conversation', async () => {
    const store = createMemorySessionStore({
      limits: { maxActiveMessages: 40, minActiveMessages: 1, idleTtlSeconds: 3_600 },
    });
    const key = { tenantId: 't-past', sessionId: 'past-summaries' };
    // Three turns of two messages; each gets an in-turn summary of its first message after the task.
    const turnSummaryOf = (turn: number) => ({
      text: `turn ${turn} so far`,
      tokens: 4,
      turnStart: 2 * turn,
      toMessage: 2 * turn + 2,
      steps: 1,
      coveredTokens: 5,
      updatedAtMs: turn,
    });
    for (let turn = 0; turn < 3; turn++) {
      await commitTurns(store, key, 1, 5, turn);
      const lockToken = (await store.acquireSummaryLock(key, 10_000)) as string;
      await store.storeTurnSummary(key, { lockToken, expectedToMessage: 0, summary: turnSummaryOf(turn) });
      await store.releaseSummaryLock(key, lockToken);
    }
    const view = await inSession(
      previewSessionTurn({
        store,
        key,
        historyMode: 'delta',
        incoming: [user('question 3')],
        tokenizer: words,
      }),
    );
    // Turn 0 at 0–1, turn 1 at 2–3, turn 2 (the latest summary's) at 4–5: each summary stands for its answer.
    expect(view.pastTurnSummaries?.map((summary) => [summary.message.content, summary.coversUntil])).toEqual([
      ["[ctxgate] Summary of this task's earlier steps, which are not shown:\nturn 0 so far", 2],
      ["[ctxgate] Summary of this task's earlier steps, which are not shown:\nturn 1 so far", 4],
    ]);
    expect(view.turnSummary?.coversUntil).toBe(6);
    await store.close();
  });
});

describe('sameJson', () => {
  it.each<[string, unknown, unknown, boolean]>([
    ['the same text', { role: 'system', content: 'rules' }, { role: 'system', content: 'rules' }, true],
    ['another text', { role: 'system', content: 'rules' }, { role: 'system', content: 'rule' }, false],
    ['keys in another order', { role: 'system', content: 'x' }, { content: 'x', role: 'system' }, false],
    ['a key more', { role: 'system', content: 'x' }, { role: 'system', content: 'x', name: 'a' }, false],
    [
      'parts, equal',
      { role: 'system', content: [{ type: 'text', text: 'a' }] },
      { role: 'system', content: [{ type: 'text', text: 'a' }] },
      true,
    ],
    ['parts, one more', { content: [{ text: 'a' }] }, { content: [{ text: 'a' }, { text: 'b' }] }, false],
    ['an array and an object of its keys', { content: ['a'] }, { content: { 0: 'a' } }, false],
    ['a number and its text', { n: 1 }, { n: '1' }, false],
    ['null and an object', { n: null }, { n: {} }, false],
    // JSON.stringify writes what a value's toJSON gives (a bridged message's extension).
    ['a value and its JSON', { n: { a: 1, toJSON: () => ({ b: 2 }) } }, { n: { b: 2 } }, true],
    ['a value and what it was', { n: { a: 1, toJSON: () => ({ b: 2 }) } }, { n: { a: 1 } }, false],
  ])('%s', (_name, a, b, expected) => {
    expect(sameJson(a, b)).toBe(expected);
    expect(sameJson(b, a)).toBe(expected);
  });

  it('takes nesting past its bound as different, without recursing on', () => {
    const deep = (levels: number): unknown => (levels === 0 ? 'x' : { next: deep(levels - 1) });
    expect(sameJson(deep(10), deep(10))).toBe(true);
    expect(sameJson(deep(5_000), deep(5_000))).toBe(false);
  });
});

/** An agent's instructions (the same text, parsed anew from every request's body) as a chat request sends them. */
const chatInstructions = (): ContextMessage => ({
  role: 'system',
  content: 'You are a coding agent — "follow the rules" ✓ '.repeat(1_500),
});

/** The same as a Messages request sends them (two blocks, Claude Code's way), bridged for an Anthropic upstream. */
const bridgedInstructions = (): ContextMessage =>
  (
    bridgeMessagesRequest(
      {
        model: 'claude-sonnet-4-5',
        max_tokens: 1_000,
        system: [
          { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
          {
            type: 'text',
            text: 'You are a coding agent — "follow the rules" ✓ '.repeat(1_500),
            cache_control: { type: 'ephemeral' },
          },
        ],
        messages: [{ role: 'user', content: 'Go.' }],
      },
      { native: true, requireMaxTokens: true },
    ).chatBody.messages as ContextMessage[]
  )[0] as ContextMessage;

describe('the system prompt a request sends again', () => {
  it.each([
    ['a chat request’s', chatInstructions],
    ['a Messages request’s, bridged for an Anthropic upstream', bridgedInstructions],
  ])(
    '%s is neither written nor read again while it is the stored one, and goes upstream as its stored bytes; a changed one is stored (a redis-server of its own: its byte counts are this test’s)',
    async (_name, sent) => {
      const redis = await startRedisServer();
      const store = createRedisSessionStore({
        redis: createRedisConnection({ mode: 'standalone', url: redis.url }),
        limits: { maxActiveMessages: 1_000, minActiveMessages: 1, idleTtlSeconds: 3_600 },
      });
      const admin = createRedisConnection({ mode: 'standalone', url: redis.url });
      const bytes = async (): Promise<{ toRedis: number; fromRedis: number }> => {
        const stats = await admin.info('stats');
        return {
          toRedis: Number(/total_net_input_bytes:(\d+)/.exec(stats)?.[1]),
          fromRedis: Number(/total_net_output_bytes:(\d+)/.exec(stats)?.[1]),
        };
      };
      const key = { tenantId: 't-system', sessionId: 'agent' };
      const turn = async (incoming: ContextMessage[]) => {
        const opened = await inSession(
          beginSessionTurn({
            holdQueue: createHoldQueue(),
            store,
            key,
            historyMode: 'delta',
            incoming,
            tokenizer: words,
            holdMs: 30_000,
            maxTurnMessages: 1_000,
          }),
        );
        await opened.commit(assistant('done'), {
          window: 1_000_000,
          historyStartIndex: 0,
          keepFirstTurns: 1,
        });
        return opened;
      };
      // As the store keeps it: its JSON.
      const instructions = JSON.parse(JSON.stringify(sent())) as ContextMessage;
      const size = Buffer.byteLength(JSON.stringify(instructions));
      try {
        for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++)
          await new Promise((resolve) => setTimeout(resolve, 50));
        for (let attempt = 0; attempt < 100 && admin.status !== 'ready'; attempt++)
          await new Promise((resolve) => setTimeout(resolve, 50));
        await turn([sent(), user('first')]);
        await turn([sent(), user('second')]);
        const before = await bytes();
        const again = await turn([sent(), user('third')]);
        const after = await bytes();
        expect(after.toRedis - before.toRedis).toBeLessThan(size / 2);
        expect(after.fromRedis - before.fromRedis).toBeLessThan(size / 2);
        // Shown as the stored one, equal to what was sent, and its bytes are what JSON.stringify writes.
        const shown = again.conversation[0] as ContextMessage;
        expect(shown).toEqual(instructions);
        expect(again.knownBytes([shown, user('third')])[0]?.toString('utf8')).toBe(
          JSON.stringify(instructions),
        );
        expect(again.knownBytes([{ ...shown }])[0]).toBeUndefined();
        // Changed (keys in another order count as a change): stored, and shown by every store after.
        const reordered = {
          content: `${String(instructions.content)} Now in Rust.`,
          role: 'system',
        } as ContextMessage;
        const changed = await turn([reordered, user('fourth')]);
        expect(changed.knownBytes([changed.conversation[0] as ContextMessage])[0]).toBeUndefined();
        const quiet = await turn([user('fifth')]);
        expect(Object.keys(quiet.conversation[0] as ContextMessage)).toEqual(['content', 'role']);
        expect(quiet.conversation[0]).toEqual(reordered);
        const other = createRedisSessionStore({
          redis: createRedisConnection({ mode: 'standalone', url: redis.url }),
          limits: { maxActiveMessages: 1_000, minActiveMessages: 1, idleTtlSeconds: 3_600 },
        });
        try {
          for (let attempt = 0; attempt < 100 && !(await other.ping()); attempt++)
            await new Promise((resolve) => setTimeout(resolve, 50));
          expect((await other.load(key)).systemPrompt).toEqual(reordered);
        } finally {
          await other.close();
        }
      } finally {
        await store.close();
        admin.disconnect();
        await redis.stop();
      }
    },
  );
});

describe('a system message sent after the conversation began', () => {
  it('is history, stored where it stood, and the leading one stays the system prompt (Claude Code on Claude Opus 5)', async () => {
    const store = createMemorySessionStore({
      limits: { maxActiveMessages: 40, minActiveMessages: 1, idleTtlSeconds: 3_600 },
    });
    const key = { tenantId: 't-mid', sessionId: 'mid-conversation-system' };
    const instructions: ContextMessage = { role: 'system', content: 'You are Claude Code.' };
    const environment: ContextMessage = { role: 'system', content: '# Environment: /work' };
    const turn = async (incoming: ContextMessage[]) => {
      const opened = await inSession(
        beginSessionTurn({
          holdQueue: createHoldQueue(),
          store,
          key,
          historyMode: 'auto',
          incoming,
          tokenizer: words,
          holdMs: 30_000,
          maxTurnMessages: 1_000,
        }),
      );
      await opened.commit(assistant('done'), { window: 1_000_000, historyStartIndex: 0, keepFirstTurns: 1 });
      return opened;
    };
    const first = await turn([instructions, user('Go.'), environment]);
    expect(first.conversation).toEqual([instructions, user('Go.'), environment]);
    // The whole conversation again, as Claude Code sends it: only the new message is new.
    const again = [instructions, user('Go.'), environment, assistant('done'), user('And then?')];
    const second = await turn(again);
    expect(second.conversation).toEqual(again);
    expect((await store.load(key)).systemPrompt).toEqual(instructions);
    expect((await store.load(key)).messages.map((entry) => entry.message)).toEqual([
      ...again.slice(1),
      assistant('done'),
    ]);
  });
});

describe('new messages of a large body', () => {
  // 1,200 new messages of 2,000 characters of identifiers and numbers (few of their pieces repeat):
  // 2.4 million characters, more than a request counts one by one (countingWorkLimit); the rest is
  // estimated at the ratio the counted ones gave.
  const random = seeded(17);
  const incoming = Array.from({ length: 1_200 }, (_unused, index) => {
    let text = '';
    while (text.length < 2_000)
      text += `ledger_${Math.floor(random() * 1e6).toString(36)} = ${Math.floor(random() * 1e5)}; `;
    return index % 2 === 0 ? user(text.slice(0, 2_000)) : assistant(text.slice(0, 2_000));
  });
  const viewOf = async (messages: ContextMessage[]) => {
    const store = createMemorySessionStore({
      limits: { maxActiveMessages: 4_000, minActiveMessages: 1, idleTtlSeconds: 3_600 },
    });
    let chars = 0;
    const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');
    const view = await inSession(
      previewSessionTurn({
        store,
        key: { tenantId: 't-large', sessionId: randomUUID() },
        historyMode: 'delta',
        incoming: messages,
        tokenizer: Object.assign({}, tokenizer, {
          count: (text: string) => {
            if (text.length > 64) chars += text.length;
            return tokenizer.count(text);
          },
        }),
      }),
    );
    await store.close();
    return { view, chars };
  };

  it('counts them within a bounded CPU time, the newest exactly, and says some were estimated', async () => {
    const total = incoming.reduce((sum, message) => sum + String(message.content).length, 0);
    const { view, chars } = await viewOf(incoming);
    expect(chars).toBeLessThan(total / 2);
    expect(view.estimatedCounts).toBe(true);
    // Each message counted whole by a tokenizer of its own.
    const exact = createTiktokenTokenizers().forEncoding('o200k_base');
    const truth = incoming.map((message) => 4 + exact.count(String(message.content)));
    const sum = (counts: readonly number[]) => counts.reduce((a, b) => a + b, 0);
    expect(view.conversationTokens).toHaveLength(incoming.length);
    expect(Math.abs(sum(view.conversationTokens) - sum(truth)) / sum(truth)).toBeLessThan(0.03);
    expect(view.conversationTokens.slice(-50)).toEqual(truth.slice(-50));
    // A few of them are counted whole, and nothing is said.
    const few = await viewOf(incoming.slice(0, 20));
    expect(few.view.estimatedCounts).toBeUndefined();
    expect(few.view.conversationTokens).toEqual(truth.slice(0, 20));
  });
});

// A whole-history client (Claude Code) runs several conversations under one session id: its sub-agents'
// and side requests'. Each is served without the session, never mixed into the session's conversation
// (docs/sessions.md#other-conversations).
/** A step of an agent's loop: its call to read `id`, and what the read returned. */
const read = (id: string): ContextMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'read', arguments: `{"path":"${id}.txt"}` } }],
});
const output = (id: string, text = `text of ${id}`): ContextMessage => ({
  role: 'tool',
  tool_call_id: id,
  content: text,
});
/** The instructions a whole-history agent sends with every request. */
const agentInstructions: ContextMessage = { role: 'system', content: 'You are a coding agent.' };

/** A session of `store` as an agent that resends its whole conversation opens and answers its turns. */
function agentTurns(store: SessionStore, sessionId: string) {
  const key = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId };
  const holdQueue = createHoldQueue();
  const open = (incoming: ContextMessage[], historyMode: HistoryMode = 'auto') =>
    beginSessionTurn({
      holdQueue,
      store,
      key,
      historyMode,
      incoming,
      tokenizer: words,
      holdMs: 30_000,
      maxTurnMessages: 100,
    });
  const answer = async (incoming: ContextMessage[], reply: ContextMessage) => {
    const opened = await inSession(open(incoming));
    await opened.commit(reply, { window: 1_000_000, historyStartIndex: 0, keepFirstTurns: 1 });
    return opened;
  };
  return { key, holdQueue, open, answer };
}

/** A real Redis and the memory store, each with room for 100 active messages. */
const bothStores: Array<[string, () => SessionStore]> = [
  [
    'Redis',
    () =>
      createRedisSessionStore({
        redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
        limits: { maxActiveMessages: 100, minActiveMessages: 1, idleTtlSeconds: 3_600 },
      }),
  ],
  [
    'memory',
    () =>
      createMemorySessionStore({
        limits: { maxActiveMessages: 100, minActiveMessages: 1, idleTtlSeconds: 3_600 },
      }),
  ],
];

describe('another conversation under the same id', () => {
  const call = (id: string): ContextMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'Agent', arguments: '{}' } }],
  });
  const result = (id: string): ContextMessage => ({ role: 'tool', tool_call_id: id, content: 'started' });
  const waiting = [user('task'), call('call_a')];

  // [name, resent, stored, incoming, mode, the request brings instructions other than the stored ones, other]
  it.each<[string, boolean, readonly ContextMessage[], ContextMessage[], HistoryMode, boolean, boolean]>([
    ['a delta turn after an answer', false, stored, [user('three')], 'auto', true, false],
    [
      'a sub-agent while the call that started it is unanswered',
      false,
      waiting,
      [user('count')],
      'auto',
      true,
      true,
    ],
    ['a delta client setting the call aside', false, waiting, [user('something else')], 'auto', false, false],
    ['the call answered, a delta client', false, waiting, [result('call_a')], 'auto', true, false],
    ['another call answered', false, waiting, [result('call_b'), user('go on')], 'auto', true, true],
    [
      'anything, once the client has resent the conversation',
      true,
      stored,
      [user('count')],
      'auto',
      false,
      true,
    ],
    ['anything, in full mode', false, stored, [user('count')], 'full', false, true],
    ['nothing, in delta mode', true, waiting, [user('count')], 'delta', true, false],
    ['nothing, for a new session', true, [], [user('count')], 'full', true, false],
  ])('is %s: %s', (_name, resent, storedMessages, incoming, mode, ownInstructions, other) => {
    expect(isOtherConversation({ resent }, storedMessages, incoming, mode, ownInstructions)).toBe(other);
  });

  it.each(bothStores)(
    'is served without the session, which stays as it was (%s)',
    async (_name, makeStore) => {
      const store = makeStore();
      const { key, holdQueue, open, answer } = agentTurns(store, 'claude-code');
      const roles = async () => (await store.load(key)).messages.map((entry) => entry.message.role);
      try {
        for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++)
          await new Promise((resolve) => setTimeout(resolve, 50));
        await answer([user('task')], call('call_a'));
        // The sub-agent the call started: its own conversation. The hold is given back at once.
        const helper: ContextMessage = { role: 'system', content: 'You are a helper agent.' };
        expect(await open([helper, user('count to three')])).toBeUndefined();
        expect(await roles()).toEqual(['user', 'assistant']);
        // The main agent goes on, resending its conversation: the session learns its client resends.
        await answer([user('task'), call('call_a'), result('call_a')], assistant('started it'));
        expect((await store.load(key)).resent).toBe(true);
        // A background sub-agent, after the answer: its own conversation too.
        expect(
          await open([user('count to three'), assistant('one two three'), user('again')]),
        ).toBeUndefined();
        await answer(
          [
            user('task'),
            call('call_a'),
            result('call_a'),
            assistant('started it'),
            user('it said one two three'),
          ],
          assistant('done'),
        );
        expect(await roles()).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']);
        // A delta client's session learns nothing of the kind.
        const delta = { tenantId: key.tenantId, sessionId: 'delta' };
        for (const question of ['one', 'two']) {
          const opened = await inSession(
            beginSessionTurn({
              holdQueue,
              store,
              key: delta,
              historyMode: 'auto',
              incoming: [user(question)],
              tokenizer: words,
              holdMs: 30_000,
              maxTurnMessages: 100,
            }),
          );
          await opened.commit(assistant(`${question} answered`), {
            window: 1_000_000,
            historyStartIndex: 0,
            keepFirstTurns: 1,
          });
        }
        const deltaSession = await store.load(delta);
        expect(deltaSession.messages).toHaveLength(4);
        expect(deltaSession.resent).not.toBe(true);
      } finally {
        await store.close();
      }
    },
  );
});

describe('a conversation its client compacted', () => {
  const summaryAnswer = assistant(
    '<analysis>The user reads files.</analysis>\n<summary>1. The user asked for the launch code; it is CODE-4711.\n2. Files read: a.txt, b.txt.</summary>',
  );
  const conversation = [
    user('read a and b'),
    read('a'),
    output('a'),
    read('b'),
    output('b'),
    assistant('read both'),
  ];

  // [name, stored, incoming, compacted]
  it.each<[string, readonly ContextMessage[], ContextMessage[], boolean]>([
    [
      'led by a summary, keeping the newest messages as they were (pi)',
      conversation,
      [user('Summary: the user reads files.'), read('b'), output('b'), assistant('read both'), user('now c')],
      true,
    ],
    [
      'starting with the summary the newest stored answer gave (Claude Code)',
      [...conversation, user('Summarize the conversation.'), summaryAnswer],
      [
        user(
          'This session is being continued from a previous conversation that ran out of context.\nSummary:\n1. The user asked for the launch code; it is CODE-4711.\n2. Files read: a.txt, b.txt.',
        ),
        user('go on'),
      ],
      true,
    ],
    ['a new conversation (a sub-agent, a side request)', conversation, [user('count to three')], false],
    [
      'a new conversation that quotes a short answer',
      [...conversation, assistant('ok')],
      [user('ok, count to three')],
      false,
    ],
    [
      'one that starts as the stored one does (a rewrite, not a compaction)',
      conversation,
      [user('read a and b'), read('b'), output('b'), assistant('read both')],
      false,
    ],
    [
      'the newest stored message first, nothing before it',
      conversation,
      [assistant('read both'), user('go on')],
      false,
    ],
    ['nothing stored', [], [user('Summary.'), user('go on')], false],
  ])('is %s: %s', (_name, storedMessages, incoming, compacted) => {
    expect(isCompactedConversation(storedMessages, incoming)).toBe(compacted);
  });

  it.each(bothStores)(
    'starts the session over with it, with the session’s own instructions only (%s)',
    async (_name, makeStore) => {
      const store = makeStore();
      const { key, open, answer } = agentTurns(store, 'pi');
      const instructions = agentInstructions;
      const contents = async () =>
        (await store.load(key)).messages.map((entry) => entry.message.content ?? entry.message.tool_calls);
      try {
        for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++)
          await new Promise((resolve) => setTimeout(resolve, 50));
        // The agent's loop, its whole conversation resent each time.
        const sent: ContextMessage[] = [user('read a and b')];
        for (const id of ['a', 'b']) {
          await answer([instructions, ...sent], read(id));
          sent.push(read(id), output(id));
        }
        await answer([instructions, ...sent], assistant('read both'));
        sent.push(assistant('read both'));
        expect(await contents()).toHaveLength(6);
        // Its compaction call: instructions of its own, served without the session.
        const compactor: ContextMessage = { role: 'system', content: 'You summarize conversations.' };
        expect(await open([compactor, user(JSON.stringify(sent))])).toBeUndefined();
        // Then the compacted conversation, with the agent's instructions: the session starts over with it.
        const compacted = [user('Summary: the user reads files.'), ...sent.slice(-3), user('now c')];
        const opened = await answer([instructions, ...compacted], read('c'));
        expect(opened.conversation).toEqual([instructions, ...compacted]);
        expect(await contents()).toEqual(
          [...compacted, read('c')].map((message) => message.content ?? message.tool_calls),
        );
        // It goes on from there: the next request continues the conversation the session now holds.
        await answer([instructions, ...compacted, read('c'), output('c')], assistant('read c'));
        expect(await contents()).toHaveLength(compacted.length + 3);
        // With instructions of its own, the same request would have been another conversation.
        const other = await open([
          { role: 'system', content: 'You are a helper.' },
          user('Summary: a helper.'),
          output('c'),
          assistant('read c'),
          user('go on'),
        ]);
        expect(other).toBeUndefined();
        expect(await contents()).toHaveLength(compacted.length + 3);
      } finally {
        await store.close();
      }
    },
  );
});

describe('a conversation rewritten where the session cannot take its end off', () => {
  it('starts the session over with it: a rewind inside the steps an in-turn summary stands for', async () => {
    const store = createMemorySessionStore({
      limits: { maxActiveMessages: 100, minActiveMessages: 1, idleTtlSeconds: 3_600 },
    });
    const { key, open, answer } = agentTurns(store, 'rewind');
    const instructions = agentInstructions;
    // One task of four steps, its whole conversation resent each time.
    const sent: ContextMessage[] = [user('read a to d')];
    for (const id of ['a', 'b', 'c', 'd']) {
      await answer([instructions, ...sent], read(id));
      sent.push(read(id), output(id));
    }
    await answer([instructions, ...sent], read('e'));
    // The session's summary of the task's first steps (what its summarizer stores as the loop grows).
    const lockToken = (await store.acquireSummaryLock(key, 10_000))!;
    const summary = {
      text: 'Read a and b.',
      tokens: 4,
      turnStart: 0,
      toMessage: 5,
      steps: 2,
      coveredTokens: 40,
      updatedAtMs: 1_700_000_000_000,
    };
    expect(await store.storeTurnSummary(key, { lockToken, expectedToMessage: 0, summary })).toEqual({
      ok: true,
      archivedMessages: 0,
    });
    await store.releaseSummaryLock(key, lockToken);
    // The user rewinds to the first step and says otherwise (Claude Code's rewind): the end it takes off
    // is summarized, so it was served without the session from then on.
    const rewound = [user('read a to d'), read('a'), output('a', 'a.txt is gone'), user('then read x')];
    const opened = await open([instructions, ...rewound]);
    expect(opened).toBeDefined();
    expect(opened?.conversation).toEqual([instructions, ...rewound]);
    await opened?.commit(read('x'), { window: 1_000_000, historyStartIndex: 0, keepFirstTurns: 1 });
    const after = await store.load(key);
    expect(after.messages.map((entry) => entry.message)).toEqual([...rewound, read('x')]);
    expect(after.turnSummary).toBeUndefined();
    // And it goes on from there.
    await answer([instructions, ...rewound, read('x'), output('x')], assistant('read x'));
    expect((await store.load(key)).messages).toHaveLength(rewound.length + 3);
    await store.close();
  });
});
