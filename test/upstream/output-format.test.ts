// Structured output across the wires (docs/anthropic.md#structured-output): a chat client's schema written
// in the subset Claude takes — checked against the strict fake Anthropic, which refuses what Claude
// refuses — and Claude's format and effort in chat's words.
import { zodResponseFormat } from 'openai/helpers/zod';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  anthropicOutputFormat,
  anthropicOutputSchema,
  chatReasoningEffort,
  withEffortAsClaudes,
  chatResponseFormat,
} from '../../src/upstream/output-format.js';
import { findAnthropicRefusal } from '../helpers/fake-anthropic.js';

/** What the strict fake Anthropic answers a request asking for this format: undefined when it takes it. */
const refusalOf = (format: unknown) =>
  findAnthropicRefusal({
    model: 'claude-sonnet-5',
    max_tokens: 10,
    messages: [{ role: 'user', content: 'Plan it.' }],
    output_config: { format },
  });

/** A plan as the OpenAI SDK's `zodResponseFormat` writes it: bounds, a pattern, a nullable e-mail. */
const plan = z.object({
  title: z.string().min(3),
  steps: z.array(z.string()).max(5),
  priority: z.int().min(1).max(5),
  owner: z.email().nullable(),
});
const openaiFormat = zodResponseFormat(plan, 'plan');

describe('a chat schema for the answer, as Claude takes it', () => {
  it("is refused by Claude as OpenAI's SDK writes it (the case), and taken as written", () => {
    const asSent = { type: 'json_schema', schema: openaiFormat.json_schema.schema };
    expect(refusalOf(asSent)).toMatch(/^output_config\.format\.schema: For '\w+' type, propert/);
    const format = anthropicOutputFormat(openaiFormat);
    expect(refusalOf(format)).toBeUndefined();
  });

  it('tells in the description what Claude does not constrain, as Anthropic’s SDK does', () => {
    const schema = anthropicOutputFormat(openaiFormat)?.schema as Record<string, Record<string, unknown>>;
    const properties = schema.properties as Record<string, Record<string, unknown>>;
    expect(properties.title).toEqual({ type: 'string', description: '{minLength: 3}' });
    expect(properties.priority).toEqual({ type: 'integer', description: '{minimum: 1, maximum: 5}' });
    expect(properties.steps).toEqual({
      type: 'array',
      items: { type: 'string' },
      description: '{maxItems: 5}',
    });
    // The format Claude constrains stays; the pattern beside it is told.
    const email = (properties.owner?.anyOf as Array<Record<string, unknown>>)[0];
    expect(email).toMatchObject({ type: 'string', format: 'email' });
    expect(String(email?.description)).toMatch(/^\{pattern: "\^/);
    expect(schema.$schema).toBeUndefined();
    expect(schema.required).toEqual(['title', 'steps', 'priority', 'owner']);
  });

  it.each([
    [
      'an object open to more properties',
      { type: 'object', properties: { a: { type: 'string' } } },
      { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false },
    ],
    [
      'an object of any more properties of a schema (a map)',
      { type: 'object', additionalProperties: { type: 'number' }, description: 'Scores by name.' },
      {
        type: 'object',
        additionalProperties: false,
        description: 'Scores by name.\n\n{additionalProperties: {"type":"number"}}',
      },
    ],
    [
      'oneOf, and a definition referenced',
      {
        $defs: { tag: { type: 'string', maxLength: 8 } },
        oneOf: [{ $ref: '#/$defs/tag' }, { type: 'array', items: { $ref: '#/$defs/tag' }, minItems: 2 }],
      },
      {
        $defs: { tag: { type: 'string', description: '{maxLength: 8}' } },
        anyOf: [
          { $ref: '#/$defs/tag' },
          { type: 'array', items: { $ref: '#/$defs/tag' }, description: '{minItems: 2}' },
        ],
      },
    ],
    [
      'an enum of objects and a const of an array (Claude takes primitive values only)',
      {
        type: 'object',
        properties: { a: { enum: [{ x: 1 }, 'b'] }, b: { const: [1] }, c: { enum: ['x', 1, null] } },
      },
      {
        type: 'object',
        properties: {
          a: { description: '{enum: [{"x":1},"b"]}' },
          b: { description: '{const: [1]}' },
          c: { enum: ['x', 1, null] },
        },
        additionalProperties: false,
      },
    ],
    [
      'a format Claude does not know, a default, an array of at least one',
      { type: 'array', minItems: 1, items: { type: 'string', format: 'color', default: 'red' } },
      {
        type: 'array',
        minItems: 1,
        items: { type: 'string', description: '{format: "color", default: "red"}' },
      },
    ],
  ])('%s', (_case, schema, written) => {
    expect(anthropicOutputSchema(schema)).toEqual(written);
    expect(refusalOf({ type: 'json_schema', schema: written })).toBeUndefined();
  });

  it('leaves the client’s schema as it was (a copy)', () => {
    const schema = { type: 'object', properties: { n: { type: 'number', minimum: 0 } } };
    const before = JSON.stringify(schema);
    anthropicOutputSchema(schema);
    expect(JSON.stringify(schema)).toBe(before);
  });

  it('sends no schema of more than Claude compiles (5,000 schemas): neither written nor as it came', () => {
    const wide = (count: number) => ({
      type: 'json_schema',
      json_schema: {
        name: 'wide',
        schema: {
          type: 'object',
          properties: Object.fromEntries(
            Array.from({ length: count }, (_, index) => [`p${index}`, { type: 'integer' }]),
          ),
        },
      },
    });
    expect(anthropicOutputFormat(wide(4_999))?.schema).toMatchObject({ additionalProperties: false });
    expect(anthropicOutputFormat(wide(5_000))).toBeUndefined();
  });

  it.each([
    ['JSON mode', { type: 'json_object' }],
    ['text', { type: 'text' }],
    ['a schema format of no schema', { type: 'json_schema', json_schema: { name: 'x' } }],
    ['nothing', undefined],
  ])('has no counterpart for %s', (_case, responseFormat) => {
    expect(anthropicOutputFormat(responseFormat)).toBeUndefined();
  });
});

describe("Claude's format and effort in chat's words", () => {
  it("a Messages format as a named chat schema, not strict (Claude's may leave properties optional)", () => {
    const format = zodOutputFormat(z.object({ city: z.string(), note: z.string().optional() }));
    expect(chatResponseFormat(format)).toEqual({
      type: 'json_schema',
      json_schema: { name: 'response', schema: format.schema },
    });
    expect(chatResponseFormat({ type: 'text' })).toBeUndefined();
  });

  it.each([
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
    ['xhigh', 'xhigh'],
    ['max', 'xhigh'],
    ['ultra', undefined],
    [3, undefined],
  ])('effort %s as reasoning_effort %s', (effort, expected) => {
    expect(chatReasoningEffort(effort)).toBe(expected);
  });
});

describe('withEffortAsClaudes', () => {
  const messages = [{ role: 'user', content: 'Plan it.' }];

  it.each([
    ['none', 'low'],
    ['minimal', 'low'],
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
    ['xhigh', 'xhigh'],
  ])(
    "a chat request's reasoning_effort %s goes as Claude's effort %s, beside what output_config holds",
    (given, effort) => {
      const format = { type: 'json_schema', schema: { type: 'object' } };
      expect(
        withEffortAsClaudes({
          model: 'claude-x',
          messages,
          reasoning_effort: given,
          ctxgate_anthropic: { top_k: 5, output_config: { format } },
        }),
      ).toEqual({
        model: 'claude-x',
        messages,
        ctxgate_anthropic: { top_k: 5, output_config: { format, effort } },
      });
    },
  );

  it("keeps a Messages client's own effort, leaves out a value chat does not define, and changes nothing of none", () => {
    const own = {
      model: 'claude-x',
      messages,
      reasoning_effort: 'high',
      ctxgate_anthropic: { output_config: { effort: 'max' } },
    };
    expect(withEffortAsClaudes(own)).toEqual({
      model: 'claude-x',
      messages,
      ctxgate_anthropic: { output_config: { effort: 'max' } },
    });
    expect(withEffortAsClaudes({ model: 'claude-x', messages, reasoning_effort: 'turbo' })).toEqual({
      model: 'claude-x',
      messages,
    });
    const none = { model: 'claude-x', messages };
    expect(withEffortAsClaudes(none)).toBe(none);
  });
});
