// The request schema accepts what the OpenAI API accepts and keeps every field it does not know.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chatCompletionRequestSchema,
  parseChatCompletionRequest,
  plainlyValid,
} from '../../src/chat/chat-request-schema.js';

const accepted: Array<{ name: string; body: Record<string, unknown> }> = [
  { name: 'a plain user message', body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } },
  {
    name: 'system and developer messages',
    body: {
      model: 'o3',
      messages: [
        { role: 'developer', content: 'x' },
        { role: 'system', content: [{ type: 'text', text: 'y' }] },
        { role: 'user', content: 'z' },
      ],
    },
  },
  {
    name: 'image, audio and file parts',
    body: {
      model: 'gpt-4o',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
            { type: 'file', file: { file_id: 'file-abc' } },
          ],
        },
      ],
    },
  },
  {
    name: 'an assistant tool call with null content and its tool result',
    body: {
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'sunny' }] },
      ],
      tools: [{ type: 'function', function: { name: 'w', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'w' } },
      parallel_tool_calls: false,
    },
  },
  {
    name: 'an assistant refusal part',
    body: {
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] },
        { role: 'user', content: 'y' },
      ],
    },
  },
  {
    name: 'a legacy function message',
    body: { model: 'gpt-3.5-turbo', messages: [{ role: 'function', name: 'f', content: 'r' }] },
  },
  {
    name: 'response_format, stream_options and null optional fields',
    body: {
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_object' },
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: null,
      max_completion_tokens: 100,
      temperature: null,
    },
  },
  {
    name: 'vendor fields and vendor part types',
    body: {
      model: 'deepseek-reasoner',
      messages: [
        { role: 'user', content: [{ type: 'video_url', video_url: { url: 'x' } }] },
        { role: 'assistant', content: 'a', reasoning_content: 'thinking', prefix: true },
      ],
      top_k: 40,
      chat_template_kwargs: { enable_thinking: false },
    },
  },
];

describe('parseChatCompletionRequest', () => {
  it.each(accepted)('accepts $name and keeps every field', ({ body }) => {
    expect(parseChatCompletionRequest(structuredClone(body))).toEqual(body);
  });

  it.each(accepted)(
    "keeps the keys of $name in the client's order (what a prompt cache compares)",
    ({ body }) => {
      const reversed = (value: unknown): unknown =>
        Array.isArray(value)
          ? value.map(reversed)
          : typeof value === 'object' && value !== null
            ? Object.fromEntries(
                Object.entries(value)
                  .reverse()
                  .map(([key, inner]) => [key, reversed(inner)]),
              )
            : value;
      const written = reversed(body);
      expect(JSON.stringify(parseChatCompletionRequest(structuredClone(written)))).toBe(
        JSON.stringify(written),
      );
    },
  );
});

// The hand-written check that lets a valid body skip the schema: it may say no to a valid body (the
// schema then decides), never yes to one the schema refuses.
const roles = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];
const partTypes = ['text', 'refusal', 'image_url', 'input_audio', 'file', 'video_url'];

/** Each field valid or not, present or not, the way a client (or an attacker) might write it. */
function bodies(valid: boolean) {
  const pick = <T>(good: fc.Arbitrary<T>, ...bad: Array<fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> =>
    valid ? good : fc.oneof({ arbitrary: good, weight: 12 * bad.length }, ...bad);
  const text = fc.string({ maxLength: 8 });
  const junk = fc.oneof(fc.integer(), fc.constant(null), fc.constant([]), fc.constant({}), text);
  const part = fc.constantFrom(...partTypes).chain((type) =>
    fc.record({
      type: pick(fc.constant(type), fc.integer()),
      [type === 'image_url' || type === 'input_audio' || type === 'file' ? type : 'extra']: pick(
        fc.record({ url: text, data: text, file_id: text }),
        junk,
        fc.record({ url: junk, data: junk }),
      ),
      text: pick(text, junk),
      refusal: pick(text, junk),
    }),
  );
  const call = fc.record(
    {
      id: pick(text, junk),
      type: pick(fc.constant('function'), junk),
      function: pick(
        fc.record({ name: text, arguments: text }),
        junk,
        fc.record({ name: junk, arguments: junk }, { requiredKeys: [] }),
      ),
    },
    { requiredKeys: valid ? ['id'] : [] },
  );
  const message = fc.constantFrom(...roles).chain((role) =>
    fc.record(
      {
        role: pick(fc.constant(role), fc.constant('robot'), junk),
        content: pick(
          fc.oneof(text, fc.constant(null), fc.array(part, { maxLength: 3 })),
          junk,
          fc.array(junk, { maxLength: 2 }),
        ),
        name: pick(text, junk),
        tool_calls: pick(fc.oneof(fc.constant(null), fc.array(call, { maxLength: 3 })), junk),
        tool_call_id: pick(text, junk),
      },
      { requiredKeys: valid ? ['role', 'content', 'tool_call_id'] : [] },
    ),
  );
  const count = fc.oneof(fc.nat(), fc.constant(null));
  return fc.record(
    {
      model: pick(
        fc
          .string({ minLength: 1, maxLength: 20 })
          .filter((model) => [...model].every((char) => char >= ' ' && char !== '\u007f')),
        fc.constantFrom('', 'gpt\u0001', 'gpt\u001f', 'gpt\u007f', 'x'.repeat(257)),
        junk,
      ),
      messages: pick(fc.array(message, { minLength: 1, maxLength: 4 }), fc.constant([]), junk),
      stream: pick(fc.oneof(fc.boolean(), fc.constant(null)), junk),
      max_tokens: pick(count, fc.constantFrom(-1, 1.5, '10', 2 ** 60), junk),
      max_completion_tokens: pick(count, fc.constantFrom(-1, 0.5), junk),
      stream_options: pick(fc.oneof(fc.constant(null), fc.record({ include_usage: fc.boolean() })), junk),
      n: pick(
        fc.oneof(fc.integer({ min: 1, max: 128 }), fc.constant(null)),
        fc.constantFrom(0, 129, 2.5),
        junk,
      ),
      stop: pick(fc.oneof(text, fc.constant(null), fc.array(text, { maxLength: 3 })), junk, fc.array(junk)),
      tools: pick(
        fc.oneof(fc.constant(null), fc.array(fc.record({ type: text }), { maxLength: 2 })),
        junk,
        fc.array(junk, { maxLength: 2 }),
      ),
      temperature: fc.oneof(fc.double(), fc.constant(null)),
    },
    { requiredKeys: valid ? ['model', 'messages'] : [] },
  );
}

describe('plainlyValid', () => {
  it('says yes only to bodies the schema accepts (property)', () => {
    let said = 0;
    fc.assert(
      fc.property(bodies(false), (body) => {
        if (!plainlyValid(body as Record<string, unknown>)) return;
        said++;
        expect(chatCompletionRequestSchema.safeParse(body).success).toBe(true);
      }),
      { numRuns: 20_000, seed: 28 },
    );
    // The draws reach the bodies it accepts, so the property was tried where it matters.
    expect(said).toBeGreaterThan(500);
  });

  it('says yes to every valid body of the usual shapes, so those skip the schema (property)', () => {
    fc.assert(
      fc.property(bodies(true), (body) => {
        const valid = chatCompletionRequestSchema.safeParse(body).success;
        expect(plainlyValid(body as Record<string, unknown>)).toBe(valid);
        expect(valid).toBe(true);
      }),
      { numRuns: 2_000, seed: 28 },
    );
  });

  it.each(accepted)('says yes to $name', ({ body }) => {
    expect(plainlyValid(structuredClone(body))).toBe(true);
  });
});
