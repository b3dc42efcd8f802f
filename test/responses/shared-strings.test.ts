// Which strings of a stored response Redis need hold only once: those of its input items and its
// Response that the chat messages made of them hold too, found on requests bridged as clients send them.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { bridgeRequest, outputItemsOf, responseObject } from '../../src/responses/bridge.js';
import { sharedStrings } from '../../src/responses/shared-strings.js';
import { valueAt } from '../../src/json-paths.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { createRedisResponseStore } from '../../src/store/response-store.js';
import { withHeldOnce } from '../helpers/held-once.js';

const long = (name: string) => `${name}: ${'a "quoted" line, café\n'.repeat(20)}`;
/** What the service stores of a request and its reply: the messages, the input items, the Response. */
function stored(input: unknown[], reply: Record<string, unknown>, id = 'resp_1') {
  const bridged = bridgeRequest({ model: 'gpt-4o-mini', input });
  const messages = [...bridged.messages, reply];
  const inputItems = bridged.inputItems.map((item, index) => ({ id: `msg_${id}_${index}`, ...item }));
  const meta = { id, createdAt: 0, model: 'gpt-4o-mini', echo: {} };
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

describe('a stored response whose strings are held once, in a real Redis', () => {
  /** Strings as fast-check makes them, some as long as a file a tool read (escapes and all). */
  const text = fc.oneof(
    fc.string(),
    fc.string().map((start) => `${start}${long('page')}`),
  );
  const part = fc.record({ type: fc.constant('input_text'), text });
  const item = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'assistant', 'developer'), content: text }),
    fc.record({ role: fc.constant('user'), content: fc.array(part, { minLength: 1, maxLength: 3 }) }),
    fc.record({
      type: fc.constant('function_call'),
      call_id: fc.constantFrom('c1', 'c2'),
      name: fc.constant('f'),
      arguments: text,
    }),
    fc.record({
      type: fc.constant('function_call_output'),
      call_id: fc.constantFrom('c1', 'c2'),
      output: text,
    }),
  );
  const reply = fc.record({
    role: fc.constant('assistant'),
    content: text,
    tool_calls: fc.array(
      fc.record({
        id: fc.constantFrom('c3', 'c4'),
        type: fc.constant('function'),
        function: fc.record({ name: fc.constant('g'), arguments: text }),
      }),
      { maxLength: 2 },
    ),
  });

  it('reads back every item and the Response as they were given, and holds each long string once', async () => {
    const redis = createRedisConnection({ mode: 'standalone', url: inject('redisUrl') });
    for (let attempt = 0; attempt < 100 && redis.status !== 'ready'; attempt++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const store = createRedisResponseStore({ redis, ttlSeconds: 60 });
    const tenant = `tenant-${randomUUID()}`;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 6 }), reply, async (input, answer) => {
          const id = `resp_${randomUUID()}`;
          const { messages, inputItems, response, shared } = stored(input, answer, id);
          await store.put(
            withHeldOnce(
              {
                id,
                tenantId: tenant,
                previousId: undefined,
                rootId: id,
                depth: 1,
                ancestors: [],
                messagesBefore: 0,
                messages,
                tokens: 1,
                inputItems,
                response,
              },
              shared,
            ),
          );
          const read = await store.get(tenant, id);
          expect(read?.inputItems).toEqual(inputItems);
          expect(read?.response).toEqual(response);
          expect(read?.messages).toEqual(messages);
          const ids = [...inputItems, ...(response.output as unknown[])].map(
            (entry) => (entry as { id: string }).id,
          );
          expect(await store.findItems(tenant, ids)).toEqual([
            ...inputItems,
            ...(response.output as unknown[]),
          ]);
          // A tool's output or a plain message's text of 256 characters or more is in the messages only:
          // not in its item as the rest of the record holds it (another item may hold the same text in a
          // field that is not shared, a call's arguments).
          const rest = JSON.parse((await redis.get(`ctxgate:resp:{${tenant}}:${id}:rest`)) as string) as {
            inputItems: Array<{ output?: unknown; content?: unknown }>;
          };
          inputItems.forEach((entry, index) => {
            const value =
              (entry as { output?: unknown; content?: unknown }).output ??
              (entry as { content?: unknown }).content;
            const kept = rest.inputItems[index];
            if (typeof value === 'string' && value.length >= 256)
              expect(kept?.output ?? kept?.content).not.toBe(value);
          });
        }),
        { numRuns: 40 },
      );
    } finally {
      redis.disconnect();
    }
  });
});
