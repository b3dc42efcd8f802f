// Tool call ids as providers take them back (tool-call-ids.ts): which ids every provider takes, the ids
// made for calls given none, and a conversation's ids given anew with each result following its call.
import { describe, expect, it } from 'vitest';
import {
  answerCallId,
  isPortableCallId,
  madeCallId,
  portableIds,
  withCallIdsGiven,
  type CallIdSlots,
} from '../../src/upstream/tool-call-ids.js';

describe('isPortableCallId', () => {
  it.each([
    ['call_abc123', true],
    ['toolu_01A09q90qw90lq917835lq9', true],
    ['a', true],
    ['x'.repeat(40), true],
    // OpenAI: at least 1 and at most 40 characters.
    ['', false],
    ['x'.repeat(41), false],
    ['portkey-6aa6db90-1b84-4155-9f32-f658c97d6b1b', false],
    // Anthropic and Bedrock: letters, digits, _ and - only.
    ['functions.read_file:0', false],
    ['call 1', false],
    ['call|1', false],
    [42, false],
    [undefined, false],
  ])('%j: %s', (id, expected) => {
    expect(isPortableCallId(id)).toBe(expected);
  });
});

describe('madeCallId and answerCallId', () => {
  it('makes an id every provider takes, the same from the same seed and another from another', () => {
    const made = madeCallId('seed');
    expect(made).toMatch(/^call_[A-Za-z0-9]{20}$/);
    expect(isPortableCallId(made)).toBe(true);
    expect(madeCallId('seed')).toBe(made);
    expect(madeCallId('seed2')).not.toBe(made);
  });

  it("makes an answer's call ids from its id, its choice and the call's place", () => {
    const ids = [
      answerCallId({ id: 'chatcmpl-1' }, 0, 0),
      answerCallId({ id: 'chatcmpl-1' }, 0, 1),
      answerCallId({ id: 'chatcmpl-1' }, 1, 0),
      answerCallId({ id: 'chatcmpl-2' }, 0, 0),
    ];
    expect(new Set(ids).size).toBe(4);
    expect(answerCallId({ id: 'chatcmpl-1', created: 5 }, 0, 1)).toBe(ids[1]);
  });

  it("takes the answer's `created` when it has no id, and makes one of its place alone from neither", () => {
    expect(answerCallId({ created: 1_700_000_000 }, 0, 0)).not.toBe(
      answerCallId({ created: 1_700_000_001 }, 0, 0),
    );
    expect(answerCallId({ id: '', created: 7 }, 0, 0)).toBe(answerCallId({ created: 7 }, 0, 0));
    expect(answerCallId(undefined, 0, 0)).toBe(answerCallId({}, 0, 0));
    expect(answerCallId(undefined, 0, 0)).not.toBe(answerCallId(undefined, 0, 1));
  });
});

/** A conversation as pairs: a message of calls (`calls`) or of results (`results`), ids only. */
type Message = { calls?: unknown[]; results?: unknown[] };
const slots: CallIdSlots<Message> = {
  callIds: (message) => message.calls,
  resultIds: (message) => message.results,
  withCallIds: (message, ids) => ({ calls: [...ids] }),
  withResultIds: (message, ids) => ({ results: [...ids] }),
};

describe('withCallIdsGiven with portableIds', () => {
  it('is the same array, each message the same object, when every id is taken and none given twice', () => {
    const messages: Message[] = [
      { calls: ['a', 'b'] },
      { results: ['b', 'a'] },
      { calls: ['c'] },
      { results: ['c'] },
    ];
    expect(withCallIdsGiven(messages, slots, portableIds())).toBe(messages);
  });

  it('gives calls of one empty id an id each, and their results follow them in order', () => {
    const messages: Message[] = [{ calls: ['', ''] }, { results: [''] }, { results: [''] }];
    const out = withCallIdsGiven(messages, slots, portableIds());
    const [first, second] = out[0]?.calls ?? [];
    expect(isPortableCallId(first) && isPortableCallId(second) && first !== second).toBe(true);
    expect(out.slice(1)).toEqual([{ results: [first] }, { results: [second] }]);
  });

  it('gives an id given again in a later turn (Kimi K3) another, its result too; the first keeps its own', () => {
    const messages: Message[] = [
      { calls: ['call_1'] },
      { results: ['call_1'] },
      { calls: ['call_1'] },
      { results: ['call_1'] },
    ];
    const out = withCallIdsGiven(messages, slots, portableIds());
    expect(out[0]).toBe(messages[0]);
    expect(out[1]).toBe(messages[1]);
    const again = out[2]?.calls?.[0];
    expect(again).not.toBe('call_1');
    expect(isPortableCallId(again)).toBe(true);
    expect(out[3]).toEqual({ results: [again] });
  });

  it("rewrites only the ids refused, in the calls' order, and a result of another id stays", () => {
    const messages: Message[] = [
      { calls: ['ok', 'functions.read:0'] },
      { results: ['functions.read:0', 'ok', 'gone'] },
    ];
    const out = withCallIdsGiven(messages, slots, portableIds());
    const made = out[0]?.calls?.[1];
    expect(out[0]?.calls?.[0]).toBe('ok');
    expect(isPortableCallId(made)).toBe(true);
    expect(out[1]).toEqual({ results: [made, 'ok', 'gone'] });
  });

  it('makes the same ids for the same conversation (a prompt cache sees the same prefix)', () => {
    const messages: Message[] = [{ calls: ['', 'x'.repeat(50)] }, { results: ['', 'x'.repeat(50)] }];
    expect(withCallIdsGiven(messages, slots, portableIds())).toEqual(
      withCallIdsGiven(messages, slots, portableIds()),
    );
  });
});

describe('withCallIdsGiven on a body built to cost', () => {
  it('is linear in the ids when 100,000 calls and results share one', () => {
    const ids = Array.from({ length: 100_000 }, () => '');
    const out = withCallIdsGiven([{ calls: ids }, { results: ids }], slots, portableIds());
    const made = out[0]?.calls ?? [];
    expect(new Set(made).size).toBe(100_000);
    expect(out[1]?.results).toEqual(made);
  });
});
