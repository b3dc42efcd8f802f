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
