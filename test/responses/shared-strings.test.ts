// Which strings of a stored response Redis need hold only once: those of its input items and its
// Response that the chat messages made of them hold too, found on requests bridged as clients send them.
import { describe, expect, it } from 'vitest';
import { bridgeRequest, outputItemsOf, responseObject } from '../../src/responses/bridge.js';
import { sharedStrings } from '../../src/responses/shared-strings.js';
import { valueAt } from '../../src/json-paths.js';

const long = (name: string) => `${name}: ${'a "quoted" line, café\n'.repeat(20)}`;
const meta = { id: 'resp_1', createdAt: 0, model: 'gpt-4o-mini', echo: {} };

/** What the service stores of a request and its reply: the messages, the input items, the Response. */
function stored(input: unknown[], reply: Record<string, unknown>) {
  const bridged = bridgeRequest({ model: 'gpt-4o-mini', input });
  const messages = [...bridged.messages, reply];
  const inputItems = bridged.inputItems.map((item, index) => ({ id: `msg_${index}`, ...item }));
  const response = responseObject(meta, outputItemsOf(reply), 'stop', null);
  return { messages, inputItems, response, shared: sharedStrings(bridged, messages, inputItems, response) };
}

describe('sharedStrings', () => {
  it.each([
    ['a plain message', [{ role: 'user', content: long('plain') }], [['inputItems', 0, 'content']]],
    [
      'a message of text parts (the AI SDK, Codex)',
      [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: long('one') },
            { type: 'input_text', text: long('two') },
          ],
        },
      ],
      [
        ['inputItems', 0, 'content', 0, 'text'],
        ['inputItems', 0, 'content', 1, 'text'],
      ],
    ],
    [
      'a tool call and its output',
      [
        { type: 'function_call', call_id: 'c1', name: 'read', arguments: '{"path":"a"}' },
        { type: 'function_call_output', call_id: 'c1', output: long('file') },
      ],
      [['inputItems', 1, 'output']],
    ],
    ['strings under 256 characters', [{ role: 'user', content: 'short' }], []],
  ])('names the long strings of %s, each where its message holds the same string', (_name, input, places) => {
    const { messages, inputItems, response, shared } = stored(input, { role: 'assistant', content: 'Ok.' });
    expect(shared.map(([at]) => at)).toEqual(places);
    const held = { inputItems, response };
    for (const [at, from] of shared) {
      expect(typeof valueAt(held, at)).toBe('string');
      expect(valueAt(messages, from)).toBe(valueAt(held, at));
    }
  });

  it('names the answer’s text and its tool calls’ arguments in the Response’s output', () => {
    const args = JSON.stringify({ patch: long('patch') });
    const reply = {
      role: 'assistant',
      content: long('answer'),
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'noop', arguments: '{}' } },
        { id: 'c2', type: 'function', function: { name: 'apply', arguments: args } },
      ],
    };
    const { shared } = stored([{ role: 'user', content: 'Go.' }], reply);
    expect(shared).toEqual([
      [
        ['response', 'output', 0, 'content', 0, 'text'],
        [1, 'content'],
      ],
      [
        ['response', 'output', 2, 'arguments'],
        [1, 'tool_calls', 1, 'function', 'arguments'],
      ],
    ]);
  });

  it('names the arguments of tool calls joined into one assistant message, by their call ids', () => {
    const input = [
      { type: 'function_call', call_id: 'c1', name: 'a', arguments: JSON.stringify({ text: long('first') }) },
      { type: 'function_call', call_id: 'c2', name: 'b', arguments: '{}' },
      { type: 'function_call', call_id: 'c3', name: 'c', arguments: JSON.stringify({ text: long('third') }) },
      { type: 'function_call_output', call_id: 'c1', output: 'x' },
      { type: 'function_call_output', call_id: 'c2', output: 'y' },
      { type: 'function_call_output', call_id: 'c3', output: 'z' },
    ];
    const { shared } = stored(input, { role: 'assistant', content: 'Ok.' });
    expect(shared).toEqual([
      [
        ['inputItems', 0, 'arguments'],
        [0, 'tool_calls', 0, 'function', 'arguments'],
      ],
      [
        ['inputItems', 2, 'arguments'],
        [0, 'tool_calls', 2, 'function', 'arguments'],
      ],
    ]);
  });
});
