// Tool definitions counted as OpenAI counts them: the prompt counts published with real API responses
// (gpt-3.5-turbo, cl100k_base; collected by hmarr/openai-chat-tokens, whose tests check them against
// the API), and the rendering of nested schemas, arrays, enums, unions and defaults.
import { describe, expect, it } from 'vitest';
import {
  countPromptTokens,
  countToolTokens,
  renderToolDefinitions,
  toolDefinitionsLongerThan,
} from '../../src/context/token-accounting.js';
import type { ContextMessage } from '../../src/context/types.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';

const tokenizer = createTiktokenTokenizers().forEncoding('cl100k_base');
const asTools = (functions: unknown[]) =>
  functions.map((definition) => ({ type: 'function', function: definition }));

const published: Array<{ name: string; messages: ContextMessage[]; functions: unknown[]; tokens: number }> = [
  {
    name: 'one function, no parameters',
    messages: [{ role: 'user', content: 'hello' }],
    functions: [{ name: 'foo', parameters: { type: 'object', properties: {} } }],
    tokens: 31,
  },
  {
    name: 'a description',
    messages: [{ role: 'user', content: 'hello' }],
    functions: [{ name: 'foo', description: 'Do a foo', parameters: { type: 'object', properties: {} } }],
    tokens: 36,
  },
  {
    name: 'a string parameter',
    messages: [{ role: 'user', content: 'hello' }],
    functions: [
      {
        name: 'bing_bong',
        description: 'Do a bing bong',
        parameters: { type: 'object', properties: { foo: { type: 'string' } } },
      },
    ],
    tokens: 49,
  },
  {
    name: 'a described number parameter',
    messages: [{ role: 'user', content: 'hello' }],
    functions: [
      {
        name: 'bing_bong',
        description: 'Do a bing bong',
        parameters: {
          type: 'object',
          properties: { foo: { type: 'string' }, bar: { type: 'number', description: 'A number' } },
        },
      },
    ],
    tokens: 57,
  },
  {
    name: 'a nested object with an enum',
    messages: [{ role: 'user', content: 'hello' }],
    functions: [
      {
        name: 'bing_bong',
        description: 'Do a bing bong',
        parameters: {
          type: 'object',
          properties: {
            foo: {
              type: 'object',
              properties: { bar: { type: 'string', enum: ['a', 'b', 'c'] }, baz: { type: 'boolean' } },
            },
          },
        },
      },
    ],
    tokens: 68,
  },
  {
    name: 'a system message carrying the tools',
    messages: [
      { role: 'system', content: 'Hello' },
      { role: 'user', content: 'Hi there' },
    ],
    functions: [{ name: 'do_stuff', parameters: { type: 'object', properties: {} } }],
    tokens: 35,
  },
  {
    name: 'arrays of objects, required fields, enums and descriptions',
    messages: [{ role: 'user', content: 'hello' }],
    functions: [
      {
        name: 'get_recipe',
        parameters: {
          type: 'object',
          required: ['ingredients', 'instructions', 'time_to_cook'],
          properties: {
            ingredients: {
              type: 'array',
              items: {
                type: 'object',
                required: ['name', 'unit', 'amount'],
                properties: {
                  name: { type: 'string' },
                  unit: { enum: ['grams', 'ml', 'cups', 'pieces', 'teaspoons'], type: 'string' },
                  amount: { type: 'number' },
                },
              },
            },
            instructions: {
              type: 'array',
              items: { type: 'string' },
              description: 'Steps to prepare the recipe (no numbering)',
            },
            time_to_cook: { type: 'number', description: 'Total time to prepare the recipe in minutes' },
          },
        },
      },
    ],
    tokens: 106,
  },
];

describe('tool definitions', () => {
  it.each(published)('$name: $tokens tokens, as the API counted them', ({ messages, functions, tokens }) => {
    expect(countPromptTokens(messages, asTools(functions), tokenizer)).toBe(tokens);
  });

  it('writes nested objects, arrays, unions and defaults out, so their size is counted', () => {
    const text = renderToolDefinitions(
      asTools([
        {
          name: 'search',
          description: 'Search the index.\nReturns at most ten hits.',
          parameters: {
            type: 'object',
            required: ['query'],
            properties: {
              query: { type: 'string', description: 'What to look for' },
              filters: {
                type: 'object',
                properties: {
                  tags: { type: 'array', items: { type: 'string' } },
                  since: { anyOf: [{ type: 'string' }, { type: 'null' }] },
                },
              },
              limit: { type: 'integer', default: 10 },
              mode: { type: ['string', 'null'], enum: ['fast', 'exact'] },
            },
          },
        },
      ]),
    );
    expect(text).toBe(
      [
        'namespace functions {',
        '',
        '// Search the index.',
        '// Returns at most ten hits.',
        'type search = (_: {',
        '// What to look for',
        'query: string,',
        'filters?: {',
        '  tags?: string[],',
        '  since?: string | null,',
        '},',
        'limit?: number, // default: 10',
        'mode?: "fast" | "exact",',
        '}) => any;',
        '',
        '} // namespace functions',
      ].join('\n'),
    );
  });

  it('writes each listed type once: a type listed twice, or two numbers, are one', () => {
    const text = renderToolDefinitions(
      asTools([
        {
          name: 'f',
          parameters: {
            type: 'object',
            properties: {
              a: { type: ['object', 'object'], properties: { b: { type: 'string' } } },
              c: { type: ['integer', 'number', 'null'] },
            },
          },
        },
      ]),
    );
    expect(text).toContain('a?: {\n  b?: string,\n},\nc?: number | null,');
  });

  it('writes a schema nested twenty levels, each listing its type twice, in about its own size', () => {
    let schema: unknown = { type: 'string' };
    for (let level = 0; level < 20; level++)
      schema = { type: ['object', 'object'], properties: { a: schema } };
    const tools = asTools([{ name: 'f', parameters: { type: 'object', properties: { x: schema } } }]);
    // Written once per level, as an object of one property: 20 lines of at most 40 characters.
    expect(renderToolDefinitions(tools)?.length).toBeLessThan(2_000);
  });

  // A description of empty lines deep in a schema: two bytes of JSON a line, written as 60 spaces of
  // indentation and a comment mark each.
  const deepBlankDescription = (lines: number) => {
    let schema: unknown = { type: 'string', description: '\n'.repeat(lines) };
    for (let level = 0; level < 28; level++) schema = { type: 'object', properties: { a: schema } };
    return asTools([{ name: 'f', parameters: { type: 'object', properties: { x: schema } } }]);
  };

  it('counts a 2 MB description that would be written 30 times longer as more than the largest window', () => {
    // gpt-4.1's 1,047,576 tokens: the largest window of a model whose tools are written this way.
    expect(countToolTokens(deepBlankDescription(1_000_000), tokenizer)).toBeGreaterThan(1_047_576);
  });

  it('writes out a large tool set of ordinary definitions whole', () => {
    const tools = asTools(
      Array.from({ length: 2_000 }, (_unused, index) => ({
        name: `tool_${index}`,
        description: 'Looks up the estimates for a proposal.',
        parameters: {
          type: 'object',
          properties: { id: { type: 'string', description: 'The proposal. '.repeat(200) } },
        },
      })),
    );
    const text = renderToolDefinitions(tools);
    expect(text?.length).toBeGreaterThan(5_000_000);
    expect(text).toContain('type tool_1999 = (_: {');
    expect(renderToolDefinitions(deepBlankDescription(1_000))).toContain(`${' '.repeat(56)}// \n`);
  });

  it.each([
    ['a string', 'abcdefghij', 10, false],
    ['a string one longer', 'abcdefghijk', 10, true],
    ['keys and values', [{ abc: 'defg' }], 7, false],
    ['keys and values one over', [{ abc: 'defg' }], 6, true],
    ['nested arrays', [[['ab'], ['cd']], 'ef'], 5, true],
    ['numbers and booleans, which are not strings', [{ a: 12345678, b: true, c: null }], 3, false],
  ])('measures the strings of tool definitions: %s', (_name, tools, limit, longer) => {
    expect(toolDefinitionsLongerThan(tools, limit)).toBe(longer);
  });

  it('counts 10,000 tools of 3 KB as more than the largest window', () => {
    const prose = 'Looks up the estimates for a proposal and returns them. '.repeat(55);
    const tools = asTools(
      Array.from({ length: 10_000 }, (_unused, index) => ({
        name: `tool_${index}`,
        parameters: { type: 'object', properties: { id: { type: 'string', description: prose } } },
      })),
    );
    expect(countToolTokens(tools, tokenizer)).toBeGreaterThan(1_047_576);
    expect(countToolTokens(tools, tokenizer, { format: 'json' })).toBeGreaterThan(1_047_576);
  });
});
