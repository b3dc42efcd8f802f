// End to end: MCP tools whose input schemas a provider refuses — OpenAI an array without `items`
// ("Invalid schema for function 'google-docs_writeSpreadsheet': In context=('properties', 'values',
// 'items'), array schema missing items.", anomalyco/opencode#20273), Anthropic alternatives at the top
// ("input_schema does not support oneOf, allOf, or anyOf at the top level", aliargun/mcp-server-gemini#8),
// Gemini `$schema`, `additionalProperties`, `const` and lists of types ("Unknown name
// \"additionalProperties\" at 'tools[0].function_declarations[9].parameters…'", zed-industries/zed#45552).
// Through the official clients, with strict fakes that refuse such schemas in the providers' words: the
// request is answered after one refusal, the model is shown every property, and the next request of the
// model goes at once (docs/budgeting.md#refused-fields).
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic, startGatewayWithClaude } from '../helpers/fake-anthropic.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import type { GatewayHarness } from '../helpers/start-gateway.js';

const gemini = 'gemini-3-pro-preview';
const kimi = 'kimi-k2.7-code';
/** Kimi as Fireworks serves it: the branches of an allOf merged, a keyword given twice a conflict. */
const fireworksKimi = 'accounts/fireworks/models/kimi-k2p7-code';

let fake: FakeUpstream;
let claude: FakeAnthropic;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    geminiRules: [gemini, 'gemini-3.1-flash-preview'],
    moonshotRules: [kimi],
    fireworksRules: [fireworksKimi],
    // A model that calls the first tool it was shown.
    respond: (_messages, body) => {
      const shown = (body.tools as Array<{ function: { name: string } }> | undefined)?.[0]?.function.name;
      return shown === undefined
        ? undefined
        : { toolCalls: [{ id: 'call_1', name: shown, arguments: '{"values":[["a"]]}' }] };
    },
  });
  claude = new FakeAnthropic();
  claude.respond = (body) => ({
    toolUse: { name: (body.tools as Array<{ name: string }>)[0]?.name ?? 'none', input: { query: 'x' } },
  });
  harness = await startGatewayWithClaude(fake, claude, inject('redisUrl'));
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await claude.stop();
});

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-schemas', maxRetries: 0 });

/** google-docs-mcp's writeSpreadsheet as OpenCode sends it (anomalyco/opencode#20273). */
const writeSpreadsheet: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'google-docs_writeSpreadsheet',
    parameters: {
      type: 'object',
      properties: {
        spreadsheetId: { type: 'string' },
        range: { type: 'string', description: 'A1 notation' },
        values: { type: 'array', items: { type: 'array' }, description: 'Rows of cells' },
      },
      required: ['spreadsheetId', 'values'],
    },
  },
};

/** Parameters as zod-to-json-schema and pydantic write them for an MCP server. */
const mcpSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  additionalProperties: false,
  properties: {
    mode: { const: 'append' },
    limit: { type: ['integer', 'null'], exclusiveMinimum: 0 },
    filter: { $ref: '#/$defs/Filter' },
  },
  required: ['mode'],
  $defs: {
    Filter: {
      type: 'object',
      additionalProperties: false,
      properties: { field: { type: 'string' }, value: { type: 'string' } },
    },
  },
};

type SentTool = { function: { name: string; parameters: Record<string, unknown> } };
const toolsSent = () => (fake.chatRequests.at(-1)?.body as { tools: SentTool[] }).tools;

describe('an MCP tool whose schema OpenAI refuses: an array without items', () => {
  it('is answered after one refusal, every property shown; the next request goes at once', async () => {
    const model = 'gpt-5.2';
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model,
      tools: [writeSpreadsheet],
      messages: [{ role: 'user', content: 'Write a cell.' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      function: { name: 'google-docs_writeSpreadsheet' },
    });
    expect(fake.chatRequests.length - before).toBe(2);
    const parameters = toolsSent()[0]?.function.parameters as {
      properties: Record<string, { items?: { items?: unknown } }>;
      required: string[];
    };
    expect(Object.keys(parameters.properties)).toEqual(['spreadsheetId', 'range', 'values']);
    expect(parameters.properties.values?.items?.items).toEqual({});
    expect(parameters.required).toEqual(['spreadsheetId', 'values']);
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model,
      tools: [writeSpreadsheet],
      messages: [{ role: 'user', content: 'And another.' }],
    });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it('the model learned so, another client’s strict tool still goes as it wrote it', async () => {
    const strict = {
      type: 'object',
      additionalProperties: false,
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['C', 'F'] } },
      required: ['city', 'unit'],
    };
    await client().chat.completions.create({
      model: 'gpt-5.2',
      tools: [{ type: 'function', function: { name: 'weather', strict: true, parameters: strict } }],
      messages: [{ role: 'user', content: 'Weather?' }],
    });
    expect(toolsSent()[0]?.function.parameters).toEqual(strict);
  });

  it('from a Responses client (Codex’s shape), bridged onto chat', async () => {
    const response = await client().responses.create({
      model: 'gpt-5.1-codex',
      store: false,
      input: 'Write a cell.',
      tools: [
        {
          type: 'function',
          name: 'google-docs_writeSpreadsheet',
          parameters: writeSpreadsheet.function.parameters as Record<string, unknown>,
          strict: false,
        },
      ],
    });
    expect(response.output.find((item) => item.type === 'function_call')).toMatchObject({
      name: 'google-docs_writeSpreadsheet',
    });
  });
});

describe('an MCP tool whose schema Gemini refuses: $schema, additionalProperties, const, a list of types, $ref', () => {
  it('is answered after one refusal, with each property as Gemini reads it', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: gemini,
      tools: [{ type: 'function', function: { name: 'search_rows', parameters: mcpSchema } }],
      messages: [{ role: 'user', content: 'Find the rows.' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'search_rows' } });
    expect(fake.chatRequests.length - before).toBe(2);
    expect(toolsSent()[0]?.function.parameters).toEqual({
      type: 'object',
      properties: {
        mode: { enum: ['append'] },
        limit: { type: 'integer', nullable: true },
        filter: { type: 'object', properties: { field: { type: 'string' }, value: { type: 'string' } } },
      },
      required: ['mode'],
    });
  });
});

// Gemini refuses an empty text among an enum's values ("…properties[permission].enum[3]: cannot be empty"):
// Cline's tools on Gemini, every request failed.
describe('a tool whose enum holds an empty text, which Gemini refuses', () => {
  it('is answered after one refusal, the values told in the description; the next request at once', async () => {
    const tool: OpenAI.ChatCompletionTool = {
      type: 'function',
      function: {
        name: 'set_permission',
        parameters: {
          type: 'object',
          properties: { permission: { type: 'string', enum: ['read', 'write', 'admin', ''] } },
          required: ['permission'],
        },
      },
    };
    const ask = () =>
      client().chat.completions.create({
        model: 'gemini-3.1-flash-preview',
        tools: [tool],
        messages: [{ role: 'user', content: 'Make it read-only.' }],
      });
    const before = fake.chatRequests.length;
    const answer = await ask();
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      function: { name: 'set_permission' },
    });
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(toolsSent()[0]?.function.parameters).toEqual({
      type: 'object',
      properties: { permission: { type: 'string', description: 'One of: "read", "write", "admin", "".' } },
      required: ['permission'],
    });
    const again = fake.chatRequests.length;
    await ask();
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

/**
 * Tools as agents sent them to Kimi, each refused by Moonshot's validator and failing every request: the
 * Notion MCP server's `notion-create-attachment`, a type beside alternatives at the top
 * (MoonshotAI/kimi-code#2661); pi-subagents' `subagent`, a type beside alternatives in a property
 * (nicobailon/pi-subagents#127); JetBrains' `execute_terminal_command`, an enum of no type
 * (MoonshotAI/kimi-cli#2030); oh-my-pi's `task`, a schema of `true` (can1357/oh-my-pi#5952); and a
 * draft-07 MCP server's references into `definitions` (NousResearch/hermes-agent#14804).
 */
const kimiTools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'notion-create-attachment',
      parameters: {
        type: 'object',
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        description: 'Provide exactly one of the documented input variants.',
        anyOf: [
          {
            type: 'object',
            properties: { filename: { type: 'string' }, content: { type: 'string' } },
            required: ['filename', 'content'],
          },
          {
            type: 'object',
            properties: { filename: { type: 'string' }, source_url: { type: 'string' } },
            required: ['filename', 'source_url'],
          },
        ],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'subagent',
      parameters: {
        type: 'object',
        properties: {
          task: { type: 'string' },
          skill: { type: 'string', anyOf: [{ enum: ['review', 'plan'] }, { pattern: '^custom:' }] },
        },
        required: ['task'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'execute_terminal_command',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string' },
          truncateMode: { enum: ['START', 'MIDDLE', 'END', 'NONE'] },
        },
        required: ['command'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'task',
      parameters: {
        type: 'object',
        properties: {
          tasks: {
            type: 'array',
            items: {
              type: 'object',
              properties: { prompt: { type: 'string' }, outputSchema: true },
              required: ['prompt'],
            },
          },
        },
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'dataforseo_serp',
      parameters: {
        type: 'object',
        properties: { location: { $ref: '#/definitions/Location' } },
        definitions: {
          Location: { type: 'object', properties: { code: { type: 'integer' }, name: { type: 'string' } } },
        },
      },
    },
  },
];

describe('MCP tools whose schemas Moonshot refuses (Kimi): each of its faults', () => {
  it('is answered after one refusal, every property shown; the next request goes at once', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: kimi,
      tools: kimiTools,
      messages: [{ role: 'user', content: 'Attach the file.' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      function: { name: 'notion-create-attachment' },
    });
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    const sent = toolsSent().map((tool) => tool.function.parameters);
    const propertiesOf = (schema: unknown) =>
      Object.keys((schema as { properties: Record<string, unknown> }).properties);
    expect(sent.map(propertiesOf)).toEqual([
      ['filename', 'content', 'source_url'],
      ['task', 'skill'],
      ['command', 'truncateMode'],
      ['tasks'],
      ['location'],
    ]);
    // What each said is kept: the variants' one shared requirement, the skill's alternatives, the enum.
    expect(sent[0]?.required).toEqual(['filename']);
    expect(sent[1]?.properties).toMatchObject({
      skill: {
        anyOf: [
          { type: 'string', enum: ['review', 'plan'] },
          { type: 'string', pattern: '^custom:' },
        ],
      },
    });
    expect(sent[2]?.properties).toMatchObject({
      truncateMode: { type: 'string', enum: ['START', 'MIDDLE', 'END', 'NONE'] },
    });
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model: kimi,
      tools: kimiTools,
      messages: [{ role: 'user', content: 'And another.' }],
    });
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

// Fireworks merges an `allOf`'s branches and refuses two conditionals' `if` as a conflict: pi-subagents'
// chain step (nicobailon/pi-subagents#265, #325) failed every request of a Kimi session on Fireworks.
describe('an MCP tool whose schema Fireworks refuses: conditionals under allOf (Kimi K2.6)', () => {
  const subagent = {
    type: 'function' as const,
    function: {
      name: 'subagent',
      description: 'Runs a chain of agents.',
      parameters: {
        type: 'object',
        properties: {
          // pi-subagents' chain step: its dynamic fan-out's fields required together, by conditionals.
          chain: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                agent: { type: 'string' },
                expand: { type: 'string' },
                collect: { type: 'string' },
                parallel: { type: 'object' },
              },
              required: ['agent'],
              allOf: [
                { if: { required: ['expand'] }, then: { required: ['parallel', 'collect'] } },
                { if: { required: ['collect'] }, then: { required: ['expand', 'parallel'] } },
              ],
            },
          },
        },
        required: ['chain'],
      },
    },
  };

  it('is answered after one refusal, its properties and requirement kept; the next request at once', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: fireworksKimi,
      tools: [subagent],
      messages: [{ role: 'user', content: 'Run the chain.' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'subagent' } });
    const sent = fake.chatRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([400, 200]);
    const parameters = toolsSent()[0]?.function.parameters as {
      required: unknown;
      properties: { chain: { items: Record<string, unknown> } };
    };
    const step = parameters.properties.chain.items;
    expect(parameters.required).toEqual(['chain']);
    expect(Object.keys(step.properties as object)).toEqual(['agent', 'expand', 'collect', 'parallel']);
    expect(step.required).toEqual(['agent']);
    expect(step.allOf).toBeUndefined();
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model: fireworksKimi,
      tools: [subagent],
      messages: [{ role: 'user', content: 'Again.' }],
    });
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

describe('an MCP tool whose schema Anthropic refuses: alternatives at the top', () => {
  it('Claude, from a chat client: answered, the alternatives one object of their properties', async () => {
    const before = claude.messageRequests.length;
    const answer = await client().chat.completions.create({
      model: 'claude-sonnet-4-6',
      tools: [
        {
          type: 'function',
          function: {
            name: 'lookup',
            parameters: {
              anyOf: [
                { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
                { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
              ],
            },
          },
        },
      ],
      messages: [{ role: 'user', content: 'Look it up.' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'lookup' } });
    expect(claude.messageRequests.length - before).toBe(2);
    const schema = (claude.messageRequests.at(-1)?.body as { tools: Array<{ input_schema: unknown }> })
      .tools[0]?.input_schema as { type: string; properties: Record<string, unknown>; required?: string[] };
    expect(schema.type).toBe('object');
    expect(Object.keys(schema.properties)).toEqual(['query', 'id']);
    expect(schema.required).toBeUndefined();
  });

  it('Claude, from a Messages client (Claude Code’s shape): answered after one refusal', async () => {
    const before = claude.messageRequests.length;
    const anthropic = new Anthropic({ baseURL: harness.baseUrl.replace(/\/v1$/, ''), apiKey: 'sk-schemas' });
    const message = await anthropic.messages.create({
      model: 'claude-opus-4-6',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Look it up.' }],
      tools: [
        {
          name: 'lookup',
          input_schema: {
            type: 'object',
            anyOf: [
              { properties: { query: { type: 'string' } } },
              { properties: { id: { type: 'integer' } } },
            ],
          },
        },
      ],
    });
    expect(message.content.find((block) => block.type === 'tool_use')).toMatchObject({ name: 'lookup' });
    expect(claude.messageRequests.length - before).toBe(2);
    const schema = (claude.messageRequests.at(-1)?.body as { tools: Array<{ input_schema: unknown }> })
      .tools[0]?.input_schema as { type: string; properties: Record<string, unknown> };
    expect(Object.keys(schema.properties)).toEqual(['query', 'id']);
  });
});

describe('more tools than OpenAI takes in one request (128): an agent with many MCP servers', () => {
  // Claude Code's own tools, then its MCP servers' (musistudio/claude-code-router#686; opencode#4909).
  const many: OpenAI.ChatCompletionTool[] = Array.from({ length: 142 }, (_, at) => ({
    type: 'function',
    function: {
      name: at < 20 ? `builtin_${at}` : `mcp__server__tool_${at}`,
      parameters: { type: 'object', properties: { values: { type: 'string' } } },
    },
  }));
  const called = 'mcp__server__tool_141';
  const history: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'user', content: 'Use the last tool.' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_9', type: 'function', function: { name: called, arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'call_9', content: 'done' },
    { role: 'user', content: 'Again.' },
  ];

  it('is answered after one refusal with 128 tools, the one the conversation called among them', async () => {
    const model = 'gpt-5-mini';
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model, tools: many, messages: history });
    expect(answer.choices[0]?.message.tool_calls?.[0]?.type).toBe('function');
    expect(fake.chatRequests.length - before).toBe(2);
    const names = toolsSent().map((tool) => tool.function.name);
    expect(names).toHaveLength(128);
    expect(names).toContain(called);
    // The rest in the client's order: its own tools first.
    expect(names.slice(0, 20)).toEqual(
      many.slice(0, 20).map((tool) => (tool as { function: { name: string } }).function.name),
    );
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model, tools: many, messages: history });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it('from a Messages client (Claude Code’s shape) on an OpenAI model', async () => {
    const anthropic = new Anthropic({ baseURL: harness.baseUrl.replace(/\/v1$/, ''), apiKey: 'sk-schemas' });
    const message = await anthropic.messages.create({
      model: 'gpt-5',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Go.' }],
      tools: many.map((tool) => ({
        name: (tool as { function: { name: string } }).function.name,
        input_schema: { type: 'object' as const, properties: {} },
      })),
    });
    expect(message.content.some((block) => block.type === 'tool_use')).toBe(true);
    expect(toolsSent()).toHaveLength(128);
  });
});
