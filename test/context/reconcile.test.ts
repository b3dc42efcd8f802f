// Session reconciliation as a table: which incoming messages are new given what the session stores —
// a client resending the whole conversation, one sending only its new message, one that resends a
// message the session already holds as new text, and tool calls compared by id, name and arguments.
import { describe, expect, it } from 'vitest';
import {
  branchPoint,
  canonicalMessage,
  newMessagesStart,
  type HistoryMode,
} from '../../src/context/reconcile.js';
import type { ContextMessage } from '../../src/context/types.js';

const user = (content: string): ContextMessage => ({ role: 'user', content });
const assistant = (content: string): ContextMessage => ({ role: 'assistant', content });
const call = (id: string, args = '{}'): ContextMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'read', arguments: args } }],
});
const result = (id: string, content: string): ContextMessage => ({ role: 'tool', tool_call_id: id, content });

const stored = [
  user('hi'),
  assistant('hello'),
  user('weather?'),
  call('c1'),
  result('c1', 'sunny'),
  assistant('Sunny.'),
];

describe('newMessagesStart', () => {
  it.each<[string, readonly ContextMessage[], readonly ContextMessage[], HistoryMode, number]>([
    ['the whole conversation resent, one new message', stored, [...stored, user('thanks')], 'auto', 6],
    ['only the new message', stored, [user('thanks')], 'auto', 0],
    [
      'delta: everything is new, even a resent message',
      stored,
      [stored[5] as ContextMessage, user('x')],
      'delta',
      0,
    ],
    ['the tail of the conversation resent', stored, [...stored.slice(3), user('more')], 'auto', 3],
    ['full mode behaves as auto', stored, [...stored, user('thanks')], 'full', 6],
    ['nothing stored: all new', [], [user('a'), user('b')], 'auto', 0],
    ['nothing incoming', stored, [], 'auto', 0],
    // The last stored message appears again later in what is sent: the latest occurrence ends the overlap.
    [
      'a repeated answer: the latest occurrence counts',
      [user('q'), assistant('ok')],
      [user('q'), assistant('ok'), user('again'), assistant('ok'), user('new')],
      'auto',
      2,
    ],
    // Same text, different tool-call arguments: not the stored message.
    [
      'a tool call with other arguments is new',
      [user('go'), call('c9', '{"a":1}')],
      [user('go'), call('c9', '{"a":2}')],
      'auto',
      0,
    ],
    // The incoming prefix does not line up with the stored list: nothing is taken as known.
    [
      'a last message matching by chance',
      stored,
      [user('other'), assistant('Sunny.'), user('next')],
      'auto',
      0,
    ],
  ])('%s', (_name, storedMessages, incoming, mode, expected) => {
    expect(newMessagesStart(storedMessages, incoming, mode)).toBe(expected);
  });
});

describe('newMessagesStart past the archive', () => {
  // The stored list is the head (the first turn) and the active rest; two messages between them moved to
  // the archive.
  const head = [user('first'), assistant('first answer')];
  const archived = [user('second'), assistant('second answer')];
  const rest = [user('third'), assistant('third answer')];
  const gap = { head: 2, archived: 2 };
  it.each<[string, readonly ContextMessage[], number]>([
    ['the whole conversation resent', [...head, ...archived, ...rest, user('fourth')], 6],
    ['the whole conversation resent, nothing new', [...head, ...archived, ...rest], 6],
    [
      'its first turn another',
      [user('other'), assistant('first answer'), ...archived, ...rest, user('x')],
      0,
    ],
    [
      'fewer messages between than the archive holds',
      [...head, archived[0] as ContextMessage, ...rest, user('x')],
      0,
    ],
    [
      'more messages between than the archive holds',
      [...head, ...archived, user('extra'), ...rest, user('x')],
      0,
    ],
    ['the tail resent, as before', [...rest, user('fourth')], 2],
  ])('%s', (_name, incoming, expected) => {
    expect(newMessagesStart([...head, ...rest], incoming, 'auto', gap)).toBe(expected);
  });
});

describe('branchPoint', () => {
  // A whole-history client that rewrites the end of its conversation: a regenerated answer, an edited
  // message. The first turn is the head; two messages after it moved to the archive.
  const head = [user('first'), assistant('first answer')];
  const archived = [user('second'), assistant('second answer')];
  const rest = [user('third'), assistant('third answer'), user('fourth'), assistant('fourth answer')];
  const gap = { head: 2, archived: 2 };
  it.each<[string, readonly ContextMessage[], number | undefined]>([
    ['the last answer regenerated', [...head, ...archived, ...rest.slice(0, 3)], 5],
    ['the last question edited', [...head, ...archived, ...rest.slice(0, 2), user('fourth, edited')], 4],
    ['rewound to the first message after the archive', [...head, ...archived, user('third, edited')], 2],
    ['another first turn', [user('other'), ...archived.slice(1), ...rest], undefined],
    ['parting inside the archive', [...head, user('second, edited')], undefined],
    ['not parting at all', [...head, ...archived, ...rest], undefined],
  ])('%s', (_name, incoming, expected) => {
    expect(branchPoint([...head, ...rest], incoming, gap)).toBe(expected);
  });

  it('keeps nothing of a conversation that shares nothing with the stored one', () => {
    expect(branchPoint(stored, [user('another'), assistant('conversation')])).toBeUndefined();
    expect(branchPoint(stored, [user('hi'), assistant('hello'), user('edited')])).toBe(2);
  });
});

describe('canonicalMessage', () => {
  it('compares role, text, calls and tool_call_id, not object identity or content shape', () => {
    expect(canonicalMessage(user('hi'))).toBe(
      canonicalMessage({ role: 'user', content: [{ type: 'text', text: 'hi' }] }),
    );
    expect(canonicalMessage(user('hi'))).not.toBe(canonicalMessage(assistant('hi')));
    expect(canonicalMessage(result('a', 'x'))).not.toBe(canonicalMessage(result('b', 'x')));
  });
});
