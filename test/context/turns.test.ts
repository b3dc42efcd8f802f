// Turns and tool pairing (turns.ts), as tables in a short notation — `S` system, `D` developer, `U` user,
// `A` assistant text, `A(x,y)` an assistant message calling x and y, `T(x)` the result of call x — and a
// property: whatever a client sends, the repaired conversation has no orphan, keeps every message that
// was not one, and is repaired already.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  findOrphans,
  leadingSystemCount,
  messageText,
  repairToolPairing,
  sourcePositions,
  splitTurns,
} from '../../src/context/turns.js';
import type { ContextMessage } from '../../src/context/types.js';

function parse(notation: string): ContextMessage[] {
  return notation
    .split(' ')
    .filter(Boolean)
    .map((token): ContextMessage => {
      const match = /^([SDUAT])(?:\(([^)]*)\))?$/.exec(token);
      if (match === null) throw new Error(`bad token ${token}`);
      const [, kind, ids] = match;
      if (kind === 'S') return { role: 'system', content: 's' };
      if (kind === 'D') return { role: 'developer', content: 'd' };
      if (kind === 'U') return { role: 'user', content: 'u' };
      if (kind === 'T') return { role: 'tool', tool_call_id: ids ?? '', content: `result of ${ids}` };
      if (ids === undefined) return { role: 'assistant', content: 'a' };
      return {
        role: 'assistant',
        content: null,
        tool_calls: ids
          .split(',')
          .map((id) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } })),
      };
    });
}

function show(messages: readonly ContextMessage[]): string {
  return messages
    .map((message) => {
      if (message.role === 'system') return 'S';
      if (message.role === 'developer') return 'D';
      if (message.role === 'user') return 'U';
      if (message.role === 'tool') return `T(${message.tool_call_id})`;
      const calls = message.tool_calls ?? [];
      return calls.length === 0 ? 'A' : `A(${calls.map((call) => call.id).join(',')})`;
    })
    .join(' ');
}

describe('turns', () => {
  it.each([
    [
      'S U A U A',
      1,
      [
        [1, 3],
        [3, 5],
      ],
    ],
    [
      'S D U A(x) T(x) A U',
      2,
      [
        [2, 6],
        [6, 7],
      ],
    ],
    ['U', 0, [[0, 1]]],
    ['S S', 2, []],
    // Messages before the first user message are a turn of their own.
    [
      'S A U A',
      1,
      [
        [1, 2],
        [2, 4],
      ],
    ],
  ] as const)('%s: %i system messages, then turns %j', (notation, system, turns) => {
    const messages = parse(notation);
    expect(leadingSystemCount(messages)).toBe(system);
    expect(splitTurns(messages, system).map((turn) => [turn.start, turn.end])).toEqual(turns);
  });

  it.each<[string, unknown, string]>([
    ['a string', 'hello', 'hello'],
    [
      'text parts',
      [
        { type: 'text', text: 'a' },
        { type: 'image_url', image_url: { url: 'x' } },
        { type: 'text', text: 'b' },
      ],
      'ab',
    ],
    ['null', null, ''],
    ['parts that are not objects', [null, 3, 'x'], ''],
  ])('the text of %s', (_name, content, text) => {
    expect(messageText({ role: 'user', content } as ContextMessage)).toBe(text);
  });
});

describe('tool pairing', () => {
  it.each<{ input: string; orphans: number[]; repaired: string; toolMessages: number; toolCalls: number }>([
    { input: 'U A(x) T(x) A', orphans: [], repaired: 'U A(x) T(x) A', toolMessages: 0, toolCalls: 0 },
    {
      input: 'U A(x,y) T(y) T(x) A',
      orphans: [],
      repaired: 'U A(x,y) T(y) T(x) A',
      toolMessages: 0,
      toolCalls: 0,
    },
    { input: 'U T(x) A', orphans: [1], repaired: 'U A', toolMessages: 1, toolCalls: 0 },
    { input: 'U A(x) U', orphans: [1], repaired: 'U U', toolMessages: 0, toolCalls: 1 },
    { input: 'U A(x,y) T(x) U', orphans: [1], repaired: 'U A(x) T(x) U', toolMessages: 0, toolCalls: 1 },
    { input: 'U A(x) T(x) T(x) A', orphans: [3], repaired: 'U A(x) T(x) A', toolMessages: 1, toolCalls: 0 },
    { input: 'U A(x) T(z) A', orphans: [2, 1], repaired: 'U A', toolMessages: 1, toolCalls: 1 },
    // A result after other messages answers nothing: its call was left unanswered before them.
    { input: 'U A(x) U T(x)', orphans: [1, 3], repaired: 'U U', toolMessages: 1, toolCalls: 1 },
    // A provider that gives its calls one id (an empty one, as some do): one result for each, in order.
    {
      input: 'U A(e,e) T(e) T(e) A',
      orphans: [],
      repaired: 'U A(e,e) T(e) T(e) A',
      toolMessages: 0,
      toolCalls: 0,
    },
    { input: 'U A(e,e) T(e) U', orphans: [1], repaired: 'U A(e) T(e) U', toolMessages: 0, toolCalls: 1 },
    {
      input: 'U A(e,e) T(e) T(e) T(e) A',
      orphans: [4],
      repaired: 'U A(e,e) T(e) T(e) A',
      toolMessages: 1,
      toolCalls: 0,
    },
  ])(
    '$input: orphans at $orphans, repaired to $repaired',
    ({ input, orphans, repaired, toolMessages, toolCalls }) => {
      const messages = parse(input);
      expect(findOrphans(messages)).toEqual(orphans);
      const repair = repairToolPairing(messages);
      expect(show(repair.messages)).toBe(repaired);
      expect([repair.removedToolMessages, repair.removedToolCalls]).toEqual([toolMessages, toolCalls]);
      if (orphans.length === 0) expect(repair.messages).toBe(messages);
    },
  );

  it('keeps an assistant message’s text when all its calls go', () => {
    const [user, , ending] = parse('U A U');
    const call: ContextMessage = {
      role: 'assistant',
      content: 'Let me look.',
      tool_calls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: '{}' } }],
    };
    const repair = repairToolPairing([user as ContextMessage, call, ending as ContextMessage]);
    expect(repair.messages[1]).toEqual({ role: 'assistant', content: 'Let me look.' });
  });

  it('leaves no orphan in any conversation, and keeps what was not one (property)', () => {
    const token = fc.oneof(
      fc.constantFrom('S', 'U', 'A'),
      fc.constantFrom('x', 'y', 'z').map((id) => `T(${id})`),
      fc.subarray(['x', 'y', 'z'], { minLength: 1 }).map((ids) => `A(${ids.join(',')})`),
      // Calls that share an id.
      fc.array(fc.constantFrom('x', 'e'), { minLength: 2, maxLength: 3 }).map((ids) => `A(${ids.join(',')})`),
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 14 }), (tokens) => {
        const messages = parse(tokens.join(' '));
        const repair = repairToolPairing(messages);
        expect(findOrphans(repair.messages)).toEqual([]);
        expect(repairToolPairing(repair.messages).messages).toBe(repair.messages);
        // Every message without tool calls or tool role survives, in order.
        const plain = (list: readonly ContextMessage[]) =>
          show(list.filter((message) => message.role !== 'tool' && (message.tool_calls?.length ?? 0) === 0));
        expect(plain(repair.messages)).toBe(plain(messages));
        // The counts say what went.
        const tools = (list: readonly ContextMessage[]) =>
          list.filter((message) => message.role === 'tool').length;
        const calls = (list: readonly ContextMessage[]) =>
          list.reduce((sum, message) => sum + (message.tool_calls?.length ?? 0), 0);
        expect(tools(messages) - tools(repair.messages)).toBe(repair.removedToolMessages);
        expect(calls(messages) - calls(repair.messages)).toBe(repair.removedToolCalls);
      }),
      { numRuns: 500, seed: 11 },
    );
  });
});

describe('where each sent message came from', () => {
  const conversation = Array.from({ length: 300 }, (_message, index): ContextMessage => ({
    role: index % 2 === 0 ? 'user' : 'assistant',
    content: `message ${index}`,
  }));
  const copy = (index: number): ContextMessage => ({ ...(conversation[index] as ContextMessage) });
  const notice: ContextMessage = { role: 'system', content: '[ctxgate] 12 earlier messages were omitted.' };

  it.each<[string, () => ContextMessage[], number[]]>([
    ['all of it, as it is', () => conversation.slice(0, 5), [0, 1, 2, 3, 4]],
    [
      'a notice and a rewritten message among them',
      () => [conversation[0], notice, copy(1), conversation[2]] as ContextMessage[],
      [0, -1, -1, 2],
    ],
    [
      'a start past a gap longer than the walk looks ahead',
      () => [conversation[0], notice, conversation[200], conversation[201]] as ContextMessage[],
      [0, -1, 200, 201],
    ],
    [
      'copies to the end, after a gap',
      () => [conversation[0], conversation[150], copy(151), copy(152)] as ContextMessage[],
      [0, 150, -1, -1],
    ],
    ['nothing of it', () => [notice, copy(3)], [-1, -1]],
    [
      'more copies at the end than are looked for one by one, after a gap',
      () =>
        [
          conversation[0],
          conversation[150],
          ...Array.from({ length: 10 }, (_copy, at) => copy(151 + at)),
        ] as ContextMessage[],
      [0, 150, ...Array<number>(10).fill(-1)],
    ],
    [
      'a gap, then an original among copies at the end',
      () => [conversation[0], copy(1), copy(2), conversation[250], copy(251)] as ContextMessage[],
      [0, -1, -1, 250, -1],
    ],
  ])('pairs %s', (_name, rendered, expected) => {
    expect([...sourcePositions(conversation, rendered())]).toEqual(expected);
  });

  it('pairs every message sent as it was and no other, whatever the gaps (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            skip: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 60, max: 140 })),
            copies: fc.integer({ min: 0, max: 2 }),
          }),
          { maxLength: 60 },
        ),
        (steps) => {
          const rendered: ContextMessage[] = [];
          const expected: number[] = [];
          let index = -1;
          for (const { skip, copies } of steps) {
            for (let made = 0; made < copies; made++) {
              rendered.push(made % 2 === 0 ? { ...notice } : copy(Math.max(0, index)));
              expected.push(-1);
            }
            index += 1 + skip;
            if (index >= conversation.length) break;
            rendered.push(conversation[index] as ContextMessage);
            expected.push(index);
          }
          expect([...sourcePositions(conversation, rendered)]).toEqual(expected);
        },
      ),
      { numRuns: 500, seed: 3 },
    );
  });
});
