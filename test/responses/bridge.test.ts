// The Responses request bridged onto Chat Completions, as values. The requests below are what current
// clients send: Codex 0.169's first request (client_metadata, include of encrypted reasoning, a namespace
// tool and web_search beside its function tools, reasoning.summary), the AI SDK's and the Agents SDK's
// (reasoning items replayed, item references already resolved by the service). What a Chat Completions
// upstream cannot do is dropped and named when that changes nothing the client relies on, refused when
// it would (a forced tool that is not there, a stored prompt or conversation), and refused whole with
// `unbridgeable: reject`.
import { describe, expect, it } from 'vitest';
import { parseChatCompletionRequest } from '../../src/chat/chat-request-schema.js';
import { isGatewayError } from '../../src/errors.js';
import {
  bridgeRequest,
  compactionItemOf,
  newId,
  outputItemsOf,
  userItemsOf,
  type BridgeOptions,
} from '../../src/responses/bridge.js';
import { compactedHistory } from '../../src/upstream/carried-state.js';

const drop: BridgeOptions = { defaultTruncation: 'auto', unbridgeable: 'drop' };
const reject: BridgeOptions = { defaultTruncation: 'auto', unbridgeable: 'reject' };

const execCommand = {
  type: 'function',
  name: 'exec_command',
  description: 'Runs a command in a PTY.',
  strict: false,
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
};

/** Codex 0.169's first request, as captured from `codex exec` (texts shortened). */
const codexFirstRequest = {
  model: 'gpt-5.1-codex',
  instructions: 'You are Codex, a coding agent.',
  input: [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Write hello.txt' }] },
  ],
  tools: [
    execCommand,
    {
      type: 'namespace',
      name: 'multi_agent_v1',
      description: 'Sub-agents.',
      tools: [{ type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: {} } }],
    },
    { type: 'web_search', external_web_access: false },
  ],
  tool_choice: 'auto',
  parallel_tool_calls: true,
  reasoning: { effort: 'medium', summary: 'auto' },
  store: false,
  stream: true,
  include: ['reasoning.encrypted_content'],
  prompt_cache_key: '019a-thread',
  client_metadata: { 'x-codex-installation-id': 'abc' },
};

/** The names of a bridged request's chat tools, in order. */
const chatToolNames = (bridged: ReturnType<typeof bridgeRequest>): string[] =>
  ((bridged.chatFields.tools ?? []) as Array<{ function: { name: string } }>).map(
    (tool) => tool.function.name,
  );

/** A bridged request is a chat request the gateway's own check accepts. */
const expectChatRequest = (bridged: ReturnType<typeof bridgeRequest>): void =>
  expect(() =>
    parseChatCompletionRequest({ ...bridged.chatFields, messages: bridged.messages }),
  ).not.toThrow();

function refusal(run: () => unknown): { param: unknown; message: string } {
  try {
    run();
  } catch (error) {
    if (isGatewayError(error)) return { param: error.param, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('bridgeRequest: what cannot be bridged', () => {
  it("drops Codex's client_metadata, include, web_search tool and reasoning.summary, and names each", () => {
    const bridged = bridgeRequest(codexFirstRequest, drop);
    expect(bridged.dropped).toEqual([
      'client_metadata',
      'include reasoning.encrypted_content',
      'reasoning.summary',
      'tools[2] (web_search)',
    ]);
    // Function tools travel, a namespace's under `<namespace>__<name>`: the model is told of nothing it
    // cannot call.
    expect(bridged.chatFields.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'exec_command',
          description: 'Runs a command in a PTY.',
          parameters: execCommand.parameters,
          strict: false,
        },
      },
      {
        type: 'function',
        function: { name: 'multi_agent_v1__spawn_agent', parameters: { type: 'object', properties: {} } },
      },
    ]);
    expect([...bridged.toolNames]).toEqual([
      ['multi_agent_v1__spawn_agent', { name: 'spawn_agent', namespace: 'multi_agent_v1', custom: false }],
    ]);
    expect(bridged.chatFields).toMatchObject({
      tool_choice: 'auto',
      reasoning_effort: 'medium',
      prompt_cache_key: '019a-thread',
      stream: true,
    });
    expect(Object.keys(bridged.chatFields)).not.toContain('client_metadata');
    expect(bridged.messages.map((message) => message.role)).toEqual(['developer', 'user']);
  });

  it('carries prompt caching’s retention and options on, as Chat Completions takes them too', () => {
    // GPT-5.6's prompt_cache_options and the 24h retention, as the Agents SDK and the AI SDK send them.
    const request = {
      model: 'gpt-5.6-sol',
      input: 'Summarize the repository.',
      prompt_cache_key: 'thread-7',
      prompt_cache_retention: '24h',
      prompt_cache_options: { mode: 'implicit', ttl: '30m' },
    };
    const bridged = bridgeRequest(request, reject);
    expect(bridged.dropped).toEqual([]);
    expect(bridged.chatFields).toMatchObject({
      prompt_cache_key: 'thread-7',
      prompt_cache_retention: '24h',
      prompt_cache_options: { mode: 'implicit', ttl: '30m' },
    });
  });

  it('refuses the first of them, naming it, with unbridgeable: reject', () => {
    expect(refusal(() => bridgeRequest(codexFirstRequest, reject))).toEqual({
      param: 'client_metadata',
      message: "'client_metadata' has no Chat Completions equivalent and cannot be bridged by ctxgate.",
    });
    const { client_metadata: _, ...withoutMetadata } = codexFirstRequest;
    expect(refusal(() => bridgeRequest(withoutMetadata, reject)).param).toBe('include[0]');
    expect(
      refusal(() => bridgeRequest({ model: 'm', input: 'x', tools: [{ type: 'web_search' }] }, reject)).param,
    ).toBe('tools[0]');
  });

  it('drops reasoning items of the input (their encrypted content cannot be replayed) and keeps the turns around them', () => {
    const bridged = bridgeRequest(
      {
        model: 'm',
        input: [
          { type: 'message', role: 'user', content: 'Run it.' },
          { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA…' },
          { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'exec_command', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_1', output: 'done' },
        ],
      },
      drop,
    );
    expect(bridged.dropped).toEqual(['input[1] (reasoning)']);
    expect(bridged.messages).toEqual([
      { role: 'user', content: 'Run it.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'exec_command', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'done' },
    ]);
    expect(
      refusal(() => bridgeRequest({ model: 'm', input: [{ type: 'reasoning', summary: [] }] }, reject)).param,
    ).toBe('input[0].type');
  });

  it("sends a chat provider's reasoning, given back as a reasoning item, with the assistant message it preceded", () => {
    // As Codex sends back what a thinking model (DeepSeek V4, Kimi K2) said through the gateway: DeepSeek
    // refuses a tool call sent back without its reasoning_content.
    const thought = (text: string) => ({
      type: 'reasoning',
      id: 'rs_1',
      summary: [],
      content: [{ type: 'reasoning_text', text }],
    });
    const bridged = bridgeRequest(
      {
        model: 'm',
        input: [
          { type: 'message', role: 'user', content: 'Run it.' },
          thought('I should run it.'),
          { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'exec_command', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_1', output: 'done' },
          thought('It ran.'),
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
          { type: 'message', role: 'user', content: 'Again.' },
          thought('Again, then.'),
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Running.' }] },
          { type: 'function_call', id: 'fc_2', call_id: 'call_2', name: 'exec_command', arguments: '{}' },
        ],
      },
      drop,
    );
    expect(bridged.dropped).toEqual([]);
    expect(bridged.messages.map((message) => [message.role, message.reasoning_content])).toEqual([
      ['user', undefined],
      ['assistant', 'I should run it.'],
      ['tool', undefined],
      ['assistant', 'It ran.'],
      ['user', undefined],
      ['assistant', 'Again, then.'],
    ]);
    expect(bridged.messages[5]?.tool_calls).toHaveLength(1);
  });

  it("gives a chat reply's reasoning_content as a reasoning item before the rest", () => {
    const output = outputItemsOf({
      role: 'assistant',
      content: null,
      reasoning_content: 'I should run it.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'exec_command', arguments: '{}' } }],
    });
    expect(output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    expect(output[0]).toMatchObject({
      type: 'reasoning',
      summary: [],
      content: [{ type: 'reasoning_text', text: 'I should run it.' }],
    });
    expect(String(output[0]?.id)).toMatch(/^rs_/);
  });

  it("gives a chat answer given as chunks (Mistral's reasoning models) as its reasoning and its text", () => {
    const output = outputItemsOf({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: [{ type: 'text', text: 'Think.' }] },
        { type: 'text', text: 'Done.' },
      ],
    });
    expect(output).toMatchObject([
      { type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Think.' }] },
      { type: 'message', content: [{ type: 'output_text', text: 'Done.' }] },
    ]);
  });

  it("gives back, on each call, what the provider attached to it: Gemini's thought signature, round trip", () => {
    const signature = { google: { thought_signature: 'CrICAdHtim827fQ==' } };
    const calls = [
      {
        id: 'call_1',
        type: 'function',
        function: { name: 'exec_command', arguments: '{}' },
        extra_content: signature,
      },
      { id: 'call_2', type: 'function', function: { name: 'exec_command', arguments: '{"a":1}' } },
    ];
    const output = outputItemsOf({ role: 'assistant', content: null, tool_calls: calls });
    // A reasoning item of encrypted content only, before the calls: what a client sends back as it got it.
    expect(output.map((item) => item.type)).toEqual(['reasoning', 'function_call', 'function_call']);
    expect(output[0]).toEqual({
      id: expect.stringMatching(/^rs_/),
      type: 'reasoning',
      summary: [],
      encrypted_content: expect.any(String),
    });
    expect(output[1]).not.toHaveProperty('extra_content');
    // As Codex sends the step back (store: false), the item ids left out, results after the calls.
    const bridged = bridgeRequest(
      {
        model: 'm',
        input: [
          { type: 'message', role: 'user', content: 'Run it.' },
          ...output.map(({ id: _id, ...item }) => item),
          { type: 'function_call_output', call_id: 'call_1', output: 'one' },
          { type: 'function_call_output', call_id: 'call_2', output: 'two' },
        ],
      },
      drop,
    );
    expect(bridged.dropped).toEqual([]);
    expect(bridged.messages[1]).toEqual({ role: 'assistant', content: null, tool_calls: calls });
    expect(bridged.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
  });

  it('always refuses what would change the answer: a forced tool that is not bridged, a stored prompt or conversation, background', () => {
    const forced = (toolChoice: unknown) =>
      refusal(() =>
        bridgeRequest(
          { model: 'm', input: 'x', tools: [execCommand, { type: 'web_search' }], tool_choice: toolChoice },
          drop,
        ),
      );
    expect(forced({ type: 'function', name: 'web_search' }).param).toBe('tool_choice');
    expect(forced({ type: 'web_search' }).param).toBe('tool_choice');
    expect(
      refusal(() =>
        bridgeRequest(
          { model: 'm', input: 'x', tools: [{ type: 'web_search' }], tool_choice: 'required' },
          drop,
        ),
      ).param,
    ).toBe('tool_choice');
    expect(
      refusal(() => bridgeRequest({ model: 'm', input: 'x', prompt: { id: 'pmpt_1' } }, drop)).param,
    ).toBe('prompt');
    expect(refusal(() => bridgeRequest({ model: 'm', input: 'x', conversation: 'conv_1' }, drop)).param).toBe(
      'conversation',
    );
    expect(refusal(() => bridgeRequest({ model: 'm', input: 'x', background: true }, drop)).param).toBe(
      'background',
    );
    // An unknown item type is not history a model can go without: refused, not dropped.
    expect(refusal(() => bridgeRequest({ model: 'm', input: [{ type: 'mystery' }] }, drop)).param).toBe(
      'input[0].type',
    );
  });

  it('narrows the tools to those allowed_tools names and keeps its mode', () => {
    const other = { ...execCommand, name: 'read_file' };
    const bridged = bridgeRequest(
      {
        model: 'm',
        input: 'x',
        tools: [execCommand, other],
        tool_choice: {
          type: 'allowed_tools',
          mode: 'required',
          tools: [{ type: 'function', name: 'read_file' }],
        },
      },
      drop,
    );
    expect(bridged.chatFields.tool_choice).toBe('required');
    expect(
      (bridged.chatFields.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name),
    ).toEqual(['read_file']);
  });

  it('carries text.verbosity and reasoning.effort over, and drops nothing from a plain request', () => {
    const bridged = bridgeRequest(
      { model: 'm', input: 'x', text: { verbosity: 'low' }, reasoning: { effort: 'high' } },
      drop,
    );
    expect(bridged.dropped).toEqual([]);
    expect(bridged.chatFields).toMatchObject({ verbosity: 'low', reasoning_effort: 'high' });
  });
});

/**
 * Codex 0.171's first request on GPT-6 (`gpt-6.2-sol`, "responses lite", captured from `codex exec`,
 * texts and most tools left out): no `instructions` and no `tools`; its tools come in an
 * `additional_tools` input item, every one in a namespace, and the one that acts, `exec`, is a custom
 * tool whose input is JavaScript in a lark grammar.
 */
const codexLiteRequest = {
  model: 'gpt-6.2-sol',
  stream: true,
  input: [
    {
      type: 'additional_tools',
      id: 'at_01',
      role: 'developer',
      tools: [
        {
          type: 'namespace',
          name: 'functions',
          description: '',
          tools: [
            {
              type: 'custom',
              name: 'exec',
              description: 'Run JavaScript code to orchestrate/compose tool calls',
              format: { type: 'grammar', syntax: 'lark', definition: 'start: SOURCE\nSOURCE: /.+/s' },
            },
            {
              type: 'function',
              name: 'wait',
              description: 'Waits.',
              strict: false,
              parameters: { type: 'object', properties: { ms: { type: 'number' } } },
            },
          ],
        },
        {
          type: 'namespace',
          name: 'collaboration',
          description: 'Agents.',
          tools: [
            { type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: {} } },
            { type: 'web_search' },
          ],
        },
      ],
    },
    {
      type: 'message',
      id: 'msg_1',
      role: 'developer',
      content: [{ type: 'input_text', text: 'You are Codex.' }],
    },
    {
      type: 'message',
      id: 'msg_2',
      role: 'user',
      content: [{ type: 'input_text', text: 'Write the note.' }],
    },
  ],
  tool_choice: 'auto',
  parallel_tool_calls: false,
  reasoning: { effort: 'low', context: 'all_turns' },
  store: false,
  include: ['reasoning.encrypted_content'],
  text: { verbosity: 'low' },
};

/** An MCP tool as Codex 0.171 gives it in a tool_search_output: in a namespace of its server. */
const inventoryTool = (kind: number) => ({
  type: 'function',
  name: `lookup_${kind}`,
  description: `Looks up a record of kind ${kind}.`,
  strict: false,
  defer_loading: true,
  parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
});

/**
 * Codex 0.171 with an MCP server (captured from `codex exec`, texts and most tools left out): the server's
 * tools are in no list; Codex offers a `tool_search` it runs itself, and gives the tools it found in a
 * `tool_search_output` item after the model's `tool_search_call`.
 */
const codexSearchRequest = {
  model: 'gpt-5.5',
  stream: true,
  tools: [
    execCommand,
    {
      type: 'tool_search',
      execution: 'client',
      description: '# Tool discovery\n\nSearches over deferred tool metadata with BM25.',
      parameters: {
        type: 'object',
        properties: { limit: { type: 'number' }, query: { type: 'string' } },
        required: ['query'],
        additionalProperties: false,
      },
    },
    { type: 'web_search', external_web_access: false },
  ],
  input: [
    {
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'Look up record X1 of kind 7.' }],
    },
    {
      type: 'tool_search_call',
      id: 'tsc_1',
      call_id: 'call_ts1',
      status: 'completed',
      execution: 'client',
      arguments: { query: 'lookup kind 7', limit: 2 },
    },
    {
      type: 'tool_search_output',
      id: 'tso_1',
      call_id: 'call_ts1',
      status: 'completed',
      execution: 'client',
      tools: [
        {
          type: 'namespace',
          name: 'mcp__inv',
          description: 'Tools in the mcp__inv namespace.',
          tools: [inventoryTool(7), inventoryTool(37)],
        },
      ],
    },
  ],
  store: false,
};

describe("bridgeRequest: a tool search the client runs (Codex's, for its MCP servers' tools)", () => {
  it('offers the search as a function tool, and the tools it found, under <namespace>__<name>, after the request’s', () => {
    const bridged = bridgeRequest(codexSearchRequest, drop);
    expect(bridged.dropped).toEqual(['tools[2] (web_search)']);
    const tools = bridged.chatFields.tools as Array<{ function: Record<string, unknown> }>;
    expect(tools.map((tool) => tool.function.name)).toEqual([
      'exec_command',
      'tool_search',
      'mcp__inv__lookup_7',
      'mcp__inv__lookup_37',
    ]);
    expect(tools[1]?.function).toEqual({
      name: 'tool_search',
      description: codexSearchRequest.tools[1]?.description,
      parameters: codexSearchRequest.tools[1]?.parameters,
    });
    // The found tool as a chat tool: no defer_loading, which a chat provider does not know.
    expect(tools[2]?.function).toEqual({
      name: 'mcp__inv__lookup_7',
      description: 'Looks up a record of kind 7.',
      parameters: inventoryTool(7).parameters,
      strict: false,
    });
    expect(bridged.toolsFromInput).toBe(true);
    expect(bridged.toolNames.get('tool_search')).toEqual({
      name: 'tool_search',
      custom: false,
      search: true,
    });
    expect(bridged.toolNames.get('mcp__inv__lookup_37')).toEqual({
      name: 'lookup_37',
      namespace: 'mcp__inv',
      custom: false,
    });
    // The search and what it found, as a call and its result; the model is told what it can call now.
    expect(bridged.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_ts1',
            type: 'function',
            function: { name: 'tool_search', arguments: '{"query":"lookup kind 7","limit":2}' },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_ts1',
        content: 'Tools found, which can be called now: mcp__inv__lookup_7, mcp__inv__lookup_37.',
      },
    ]);
    expectChatRequest(bridged);
  });

  it('gives each tool once when two searches found it, and says so when a search found none', () => {
    const again = (callId: string, tools: unknown[]) => [
      { type: 'tool_search_call', call_id: callId, execution: 'client', arguments: { query: 'kind' } },
      { type: 'tool_search_output', call_id: callId, execution: 'client', tools },
    ];
    const bridged = bridgeRequest(
      {
        ...codexSearchRequest,
        input: [
          ...codexSearchRequest.input,
          ...again('call_ts2', [
            { type: 'namespace', name: 'mcp__inv', tools: [inventoryTool(7), inventoryTool(9)] },
          ]),
          ...again('call_ts3', []),
        ],
      },
      drop,
    );
    expect(chatToolNames(bridged)).toEqual([
      'exec_command',
      'tool_search',
      'mcp__inv__lookup_7',
      'mcp__inv__lookup_37',
      'mcp__inv__lookup_9',
    ]);
    expect(bridged.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_ts3',
      content: 'No tools were found.',
    });
    expectChatRequest(bridged);
  });

  it("answers the model's call of the search as a tool_search_call, and of a found tool as a function_call in its namespace", () => {
    const bridged = bridgeRequest(codexSearchRequest, drop);
    const output = outputItemsOf(
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'tool_search', arguments: '{"query":"kind 9"}' },
          },
          { id: 'call_2', type: 'function', function: { name: 'tool_search', arguments: 'kind 9' } },
          {
            id: 'call_3',
            type: 'function',
            function: { name: 'mcp__inv__lookup_7', arguments: '{"id":"X1"}' },
          },
        ],
      },
      bridged.toolNames,
    );
    expect(output).toEqual([
      {
        id: expect.stringMatching(/^tsc_/),
        type: 'tool_search_call',
        status: 'completed',
        call_id: 'call_1',
        execution: 'client',
        arguments: { query: 'kind 9' },
      },
      // A model that wrote its query alone, not as JSON: the query.
      expect.objectContaining({
        type: 'tool_search_call',
        call_id: 'call_2',
        arguments: { query: 'kind 9' },
      }),
      {
        id: expect.stringMatching(/^fc_/),
        type: 'function_call',
        status: 'completed',
        call_id: 'call_3',
        namespace: 'mcp__inv',
        name: 'lookup_7',
        arguments: '{"id":"X1"}',
      },
    ]);
  });

  it("drops (or refuses) OpenAI's hosted search and its items: no other model can run it or read them", () => {
    const hosted = {
      ...codexSearchRequest,
      tools: [execCommand, { type: 'tool_search' }],
      input: [
        codexSearchRequest.input[0],
        {
          type: 'tool_search_call',
          id: 'ts_1',
          call_id: null,
          execution: 'server',
          arguments: { query: 'kind' },
        },
        {
          type: 'tool_search_output',
          id: 'tso_1',
          call_id: null,
          execution: 'server',
          tools: [inventoryTool(7)],
        },
      ],
    };
    const bridged = bridgeRequest(hosted, drop);
    expect(bridged.dropped).toEqual([
      'input[1] (tool_search_call)',
      'input[2] (tool_search_output)',
      'tools[1] (tool_search)',
    ]);
    expect((bridged.chatFields.tools as unknown[]).length).toBe(1);
    expect(bridged.messages).toHaveLength(1);
    expect(refusal(() => bridgeRequest(hosted, reject)).param).toBe('input[1].type');
  });
});

/** A catalog tool the Agents SDK defers (`deferLoading`), as it sends it. */
const deferredTool = (kind: number) => ({
  type: 'function',
  name: `lookup_${kind}`,
  description: `Looks up a record of kind ${kind}.\nBy its id.`,
  parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  strict: true,
  defer_loading: true,
});

/** The Agents SDK's request: its tool search, a tool it does not defer, and a catalog it does. */
const catalogRequest = (search: Record<string, unknown>, input: unknown[] = []) => ({
  model: 'gpt-5.5',
  tools: [
    search,
    execCommand,
    deferredTool(1),
    { type: 'namespace', name: 'crm', description: 'CRM tools.', tools: [deferredTool(2)] },
  ],
  input: [{ role: 'user', content: 'Look up record X1 of kind 2.' }, ...input],
});

describe('bridgeRequest: deferred tools (defer_loading), as the Agents SDK sends them', () => {
  it("holds a deferred tool back from the model beside the client's search, naming it in the search, until a search loads it", () => {
    const bridged = bridgeRequest(catalogRequest({ type: 'tool_search', execution: 'client' }), drop);
    expect(chatToolNames(bridged)).toEqual(['tool_search', 'exec_command']);
    const search = (bridged.chatFields.tools as Array<{ function: Record<string, unknown> }>)[0]?.function;
    // OpenAI's built-in schema, which the Agents SDK's loader reads: the paths to load.
    expect(search?.parameters).toMatchObject({ required: ['paths'] });
    expect(search?.description).toBe(
      'Deferred tools it can load (path: description):\nlookup_1: Looks up a record of kind 1.\ncrm.lookup_2: Looks up a record of kind 2.',
    );
    const loaded = bridgeRequest(
      catalogRequest({ type: 'tool_search', execution: 'client' }, [
        { type: 'tool_search_call', call_id: 'ts_1', execution: 'client', arguments: { paths: ['crm'] } },
        {
          type: 'tool_search_output',
          call_id: 'ts_1',
          execution: 'client',
          tools: [{ type: 'namespace', name: 'crm', description: 'CRM tools.', tools: [deferredTool(2)] }],
        },
      ]),
      drop,
    );
    expect(chatToolNames(loaded)).toEqual(['tool_search', 'exec_command', 'crm__lookup_2']);
    expect(
      (loaded.chatFields.tools as Array<{ function: Record<string, unknown> }>)[0]?.function.description,
    ).toBe('Deferred tools it can load (path: description):\nlookup_1: Looks up a record of kind 1.');
  });

  it("gives every deferred tool beside OpenAI's search, and answers a first call of one after the search items that load it", () => {
    const bridged = bridgeRequest(catalogRequest({ type: 'tool_search' }), drop);
    expect(bridged.dropped).toEqual(['tools[0] (tool_search)']);
    expect(chatToolNames(bridged)).toEqual(['exec_command', 'lookup_1', 'crm__lookup_2']);
    const call = (id: string, name: string) => ({
      id,
      type: 'function',
      function: { name, arguments: '{"id":"X1"}' },
    });
    const output = outputItemsOf(
      {
        role: 'assistant',
        content: null,
        tool_calls: [call('c1', 'crm__lookup_2'), call('c2', 'crm__lookup_2'), call('c3', 'exec_command')],
      },
      bridged.toolNames,
    );
    const server = { status: 'completed', call_id: null, execution: 'server' };
    expect(output).toEqual([
      {
        id: expect.stringMatching(/^tsc_/),
        type: 'tool_search_call',
        ...server,
        arguments: { paths: ['crm.lookup_2'] },
      },
      {
        id: expect.stringMatching(/^tso_/),
        type: 'tool_search_output',
        ...server,
        tools: [{ type: 'namespace', name: 'crm', description: 'CRM tools.', tools: [deferredTool(2)] }],
      },
      expect.objectContaining({ type: 'function_call', call_id: 'c1', namespace: 'crm', name: 'lookup_2' }),
      // Loaded once in an answer; a tool not deferred needs no search.
      expect.objectContaining({ type: 'function_call', call_id: 'c2' }),
      expect.objectContaining({ type: 'function_call', call_id: 'c3', name: 'exec_command' }),
    ]);
    // Sent back, the search items load it: its next call has none before it.
    const later = bridgeRequest(catalogRequest({ type: 'tool_search' }, output.slice(0, 2)), drop);
    expect(later.toolNames.get('crm__lookup_2')?.loads).toBeUndefined();
    expect(later.toolNames.get('lookup_1')?.loads).toEqual(deferredTool(1));
    expect(later.messages).toHaveLength(1);
  });
});

describe('bridgeRequest: namespaces, custom tools and tools given in the input (Codex on GPT-6)', () => {
  it("bridges the tools of an additional_tools item, a namespace's under <namespace>__<name>, a custom tool as a function of its input", () => {
    const bridged = bridgeRequest(codexLiteRequest, drop);
    expect(bridged.dropped).toEqual([
      'include reasoning.encrypted_content',
      'reasoning.context',
      'input[0].tools[1].tools[1] (web_search)',
    ]);
    expect(bridged.chatFields.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'functions__exec',
          description: 'Run JavaScript code to orchestrate/compose tool calls',
          parameters: {
            type: 'object',
            properties: {
              input: {
                type: 'string',
                description:
                  "The tool's whole input, as raw text. It follows this lark grammar:\nstart: SOURCE\nSOURCE: /.+/s",
              },
            },
            required: ['input'],
            additionalProperties: false,
          },
        },
      },
      {
        type: 'function',
        function: {
          name: 'functions__wait',
          description: 'Waits.',
          parameters: { type: 'object', properties: { ms: { type: 'number' } } },
          strict: false,
        },
      },
      {
        type: 'function',
        function: { name: 'collaboration__spawn_agent', parameters: { type: 'object', properties: {} } },
      },
    ]);
    expect(bridged.chatFields).toMatchObject({
      tool_choice: 'auto',
      reasoning_effort: 'low',
      verbosity: 'low',
    });
    expect(bridged.toolsFromInput).toBe(true);
    expect(Object.fromEntries(bridged.toolNames)).toEqual({
      functions__exec: { name: 'exec', namespace: 'functions', custom: true },
      functions__wait: { name: 'wait', namespace: 'functions', custom: false },
      collaboration__spawn_agent: { name: 'spawn_agent', namespace: 'collaboration', custom: false },
    });
    // The tools item is no message; the messages keep their order.
    expect(bridged.messages).toEqual([
      { role: 'developer', content: [{ type: 'text', text: 'You are Codex.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Write the note.' }] },
    ]);
    // A chat request the gateway's own check accepts.
    expectChatRequest(bridged);
  });

  it('replays calls of namespaced and custom tools as the chat calls the model made, and their outputs as tool messages', () => {
    const bridged = bridgeRequest(
      {
        ...codexLiteRequest,
        input: [
          ...codexLiteRequest.input,
          {
            type: 'custom_tool_call',
            id: 'ctc_1',
            call_id: 'call_1',
            namespace: 'functions',
            name: 'exec',
            input: 'await tools.exec_command({ cmd: "ls" })',
            status: 'completed',
          },
          {
            type: 'custom_tool_call_output',
            call_id: 'call_1',
            output: [
              { type: 'input_text', text: 'Script completed\nOutput:\n' },
              { type: 'input_text', text: 'note.txt\n' },
              { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo' },
            ],
          },
          {
            type: 'function_call',
            call_id: 'call_2',
            namespace: 'collaboration',
            name: 'spawn_agent',
            arguments: '{}',
          },
          { type: 'function_call_output', call_id: 'call_2', output: 'spawned' },
        ],
      },
      drop,
    );
    expect(bridged.messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: {
              name: 'functions__exec',
              arguments: JSON.stringify({ input: 'await tools.exec_command({ cmd: "ls" })' }),
            },
          },
        ],
      },
      // Codex's exec answers in content parts: as parts, its image among them (sent to a chat provider
      // in a user message after the results: tool-media.ts).
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: [
          { type: 'text', text: 'Script completed\nOutput:\n' },
          { type: 'text', text: 'note.txt\n' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_2',
            type: 'function',
            function: { name: 'collaboration__spawn_agent', arguments: '{}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_2', content: 'spawned' },
    ]);
    // The items are kept as the Responses API defines them, namespace and input included.
    expect(bridged.inputItems[3]).toEqual({
      type: 'custom_tool_call',
      id: 'ctc_1',
      call_id: 'call_1',
      namespace: 'functions',
      name: 'exec',
      input: 'await tools.exec_command({ cmd: "ls" })',
      status: 'completed',
    });
    expect(bridged.itemSources.fields.slice(3)).toEqual(['input', undefined, 'arguments', 'output']);
  });

  it("answers the model's calls as the client named the tools: a custom_tool_call with its input, a function_call with its namespace", () => {
    const bridged = bridgeRequest(codexLiteRequest, drop);
    const output = outputItemsOf(
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'functions__exec', arguments: '{"input":"text(\'hi\')"}' },
          },
          {
            id: 'call_2',
            type: 'function',
            function: { name: 'collaboration__spawn_agent', arguments: '{}' },
          },
          { id: 'call_3', type: 'function', function: { name: 'functions__exec', arguments: 'exit()' } },
        ],
      },
      bridged.toolNames,
    );
    expect(output).toEqual([
      {
        id: expect.stringMatching(/^ctc_/),
        type: 'custom_tool_call',
        status: 'completed',
        call_id: 'call_1',
        namespace: 'functions',
        name: 'exec',
        input: "text('hi')",
      },
      {
        id: expect.stringMatching(/^fc_/),
        type: 'function_call',
        status: 'completed',
        call_id: 'call_2',
        namespace: 'collaboration',
        name: 'spawn_agent',
        arguments: '{}',
      },
      // A model that wrote the input itself, not as the function's argument: taken as it is.
      expect.objectContaining({ type: 'custom_tool_call', call_id: 'call_3', input: 'exit()' }),
    ]);
  });

  it('forces a namespaced or custom tool by the name the client gives it, and refuses one not bridged', () => {
    const forced = bridgeRequest(
      { ...codexLiteRequest, tool_choice: { type: 'custom', namespace: 'functions', name: 'exec' } },
      drop,
    );
    expect(forced.chatFields.tool_choice).toEqual({
      type: 'function',
      function: { name: 'functions__exec' },
    });
    const allowed = bridgeRequest(
      {
        ...codexLiteRequest,
        tool_choice: {
          type: 'allowed_tools',
          mode: 'required',
          tools: [{ type: 'function', namespace: 'collaboration', name: 'spawn_agent' }],
        },
      },
      drop,
    );
    expect(
      (allowed.chatFields.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name),
    ).toEqual(['collaboration__spawn_agent']);
    expect(
      refusal(() =>
        bridgeRequest({ ...codexLiteRequest, tool_choice: { type: 'function', name: 'exec' } }, drop),
      ),
    ).toEqual({
      param: 'tool_choice',
      message: "'tool_choice' forces 'exec', which is not a tool this request bridges.",
    });
  });

  it('refuses a tool inside a namespace with unbridgeable: reject, naming where it stands', () => {
    expect(
      refusal(() =>
        bridgeRequest({ ...codexLiteRequest, include: undefined, reasoning: { effort: 'low' } }, reject),
      ).param,
    ).toBe('input[0].tools[1].tools[1]');
  });
});

// The Agents SDK's coding agent: `shellTool({ shell })` and `applyPatchTool({ editor })`, as its Responses
// model sends them (openaiResponsesModel.js), and the items its run loop sends back.
describe("bridgeRequest: tools the client runs (the Agents SDK's shell and apply_patch)", () => {
  const codingAgent = {
    model: 'deepseek-chat',
    instructions: 'You are a coding agent.',
    tools: [
      { type: 'shell', environment: { type: 'local' } },
      { type: 'apply_patch' },
      { type: 'shell', environment: { type: 'container_auto' } },
    ],
    input: [{ type: 'message', role: 'user', content: 'Fix the README.' }],
  };

  it("gives the model each as a function of its name; a shell in OpenAI's container is dropped and named", () => {
    const bridged = bridgeRequest(codingAgent, drop);
    const tools = bridged.chatFields.tools as Array<{ function: { name: string; parameters: unknown } }>;
    expect(tools.map((tool) => tool.function.name)).toEqual(['shell', 'apply_patch']);
    expect(tools[0]?.function.parameters).toMatchObject({ required: ['commands'] });
    expect(tools[1]?.function.parameters).toMatchObject({
      properties: { type: { enum: ['create_file', 'update_file', 'delete_file'] } },
      required: ['type', 'path'],
    });
    expect(bridged.dropped).toEqual(['tools[2] (shell)']);
  });

  it("leaves a function of the client's named shell as it is, the built-in dropped beside it", () => {
    const own = { type: 'function', name: 'shell', parameters: { type: 'object', properties: {} } };
    const bridged = bridgeRequest(
      Object.assign({}, codingAgent, { tools: [codingAgent.tools[0], own] }),
      drop,
    );
    expect(bridged.chatFields.tools).toEqual([
      { type: 'function', function: { name: 'shell', parameters: own.parameters } },
    ]);
    expect(bridged.dropped).toEqual(['tools[0] (shell)']);
  });

  it('replays the calls as the chat calls they stand for, and their outputs as what the model reads', () => {
    const bridged = bridgeRequest(
      Object.assign({}, codingAgent, {
        input: [
          ...codingAgent.input,
          {
            type: 'shell_call',
            id: 'sh_1',
            call_id: 'call_sh',
            status: 'completed',
            action: { commands: ['ls', 'cat README'], timeout_ms: 5000, max_output_length: null },
          },
          {
            type: 'shell_call_output',
            call_id: 'call_sh',
            output: [
              { stdout: 'README\n', stderr: '', outcome: { type: 'exit', exit_code: 0 } },
              {
                stdout: '',
                stderr: 'cat: README: Permission denied\n',
                outcome: { type: 'exit', exit_code: 1 },
              },
            ],
          },
          {
            type: 'apply_patch_call',
            id: 'apc_1',
            call_id: 'call_ap',
            status: 'completed',
            operation: { type: 'update_file', path: 'README', diff: '@@\n-a\n+b\n' },
          },
          { type: 'apply_patch_call_output', call_id: 'call_ap', status: 'failed', output: 'No such file' },
        ],
      }),
      drop,
    );
    expect(bridged.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_sh',
            type: 'function',
            function: { name: 'shell', arguments: '{"commands":["ls","cat README"],"timeout_ms":5000}' },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_sh',
        content: 'README\n\n[exit code 0]\n\n\n[stderr]\ncat: README: Permission denied\n\n[exit code 1]',
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_ap',
            type: 'function',
            function: {
              name: 'apply_patch',
              arguments: '{"type":"update_file","path":"README","diff":"@@\\n-a\\n+b\\n"}',
            },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_ap', content: 'Failed: No such file' },
    ]);
    expect(bridged.dropped).toEqual(['tools[2] (shell)']);
  });

  it("answers the model's calls as the items the client runs", () => {
    const bridged = bridgeRequest(codingAgent, drop);
    const output = outputItemsOf(
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'shell', arguments: '{"commands":["npm test"]}' },
          },
          {
            id: 'call_2',
            type: 'function',
            function: {
              name: 'apply_patch',
              arguments: '{"type":"create_file","path":"a.txt","diff":"+hi"}',
            },
          },
        ],
      },
      bridged.toolNames,
    );
    expect(output).toEqual([
      {
        id: expect.stringMatching(/^sh_[0-9a-f]{48}$/),
        type: 'shell_call',
        status: 'completed',
        call_id: 'call_1',
        action: { commands: ['npm test'], timeout_ms: null, max_output_length: null },
        environment: { type: 'local' },
      },
      {
        id: expect.stringMatching(/^apc_[0-9a-f]{48}$/),
        type: 'apply_patch_call',
        status: 'completed',
        call_id: 'call_2',
        operation: { type: 'create_file', path: 'a.txt', diff: '+hi' },
      },
    ]);
  });

  it('forces either by its type; refuses forcing one not bridged', () => {
    const forced = bridgeRequest(
      Object.assign({}, codingAgent, { tool_choice: { type: 'apply_patch' } }),
      drop,
    );
    expect(forced.chatFields.tool_choice).toEqual({ type: 'function', function: { name: 'apply_patch' } });
    const allowed = bridgeRequest(
      Object.assign({}, codingAgent, {
        tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'shell' }] },
      }),
      drop,
    );
    expect(
      (allowed.chatFields.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name),
    ).toEqual(['shell']);
    let refusal: unknown;
    try {
      bridgeRequest(
        Object.assign({}, codingAgent, { tools: [{ type: 'apply_patch' }], tool_choice: { type: 'shell' } }),
        drop,
      );
    } catch (error) {
      refusal = error;
    }
    expect(isGatewayError(refusal) && refusal.message).toBe(
      "'tool_choice' forces 'shell', which is not a tool this request bridges.",
    );
  });
});

describe('bridgeRequest: truncation', () => {
  it('fits a request that does not say (responses.default_truncation: auto) and honours an explicit disabled', () => {
    expect(bridgeRequest({ model: 'm', input: 'x' }, drop).truncation).toBe('auto');
    expect(bridgeRequest({ model: 'm', input: 'x', truncation: 'disabled' }, drop).truncation).toBe(
      'disabled',
    );
    expect(bridgeRequest({ model: 'm', input: 'x' }, drop).echo.truncation).toBe('auto');
  });

  it("follows OpenAI's own default when configured so (default_truncation: disabled)", () => {
    const strict: BridgeOptions = { defaultTruncation: 'disabled', unbridgeable: 'drop' };
    expect(bridgeRequest({ model: 'm', input: 'x' }, strict).truncation).toBe('disabled');
    expect(bridgeRequest({ model: 'm', input: 'x', truncation: 'auto' }, strict).truncation).toBe('auto');
    expect(
      refusal(() => bridgeRequest({ model: 'm', input: 'x', truncation: 'sometimes' }, strict)).param,
    ).toBe('truncation');
  });
});

describe('bridgeRequest: the request limits', () => {
  const limits = { maxMessages: 4, maxToolCalls: 5 };
  const limited: BridgeOptions = { ...drop, limits };
  const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'f', arguments: '{}' });
  const output = (id: string) => ({ type: 'function_call_output', call_id: id, output: 'ok' });
  // An item no bridge takes: read, it is refused on its own.
  const unknownItem = { type: 'computer_screenshot_v9' };

  it('refuses an input of more messages than one request may hold before reading its items, in the chat check’s words', () => {
    // The instructions, a user message, two outputs and an assistant message: 5 messages.
    const input = [
      { role: 'user', content: 'go' },
      call('c1'),
      output('c1'),
      output('c2'),
      { role: 'assistant', content: 'done' },
      unknownItem,
    ];
    expect(refusal(() => bridgeRequest({ model: 'm', instructions: 'Be brief.', input }, limited))).toEqual({
      param: 'messages',
      message: "Invalid 'messages': array too long. Expected an array with at most 4 messages, but got 5.",
    });
    // Without the limits the items are read, and the unknown one is what is refused.
    expect(refusal(() => bridgeRequest({ model: 'm', instructions: 'Be brief.', input }, drop)).param).toBe(
      'input[5].type',
    );
  });

  it('refuses more function calls than the tool-call limit the same way', () => {
    const input = [{ role: 'user', content: 'go' }, ...['a', 'b', 'c', 'd', 'e', 'f'].map(call), unknownItem];
    expect(refusal(() => bridgeRequest({ model: 'm', input }, limited))).toEqual({
      param: 'messages',
      message: "Invalid 'messages': too many tool calls. Expected at most 5 in all, but got 6.",
    });
  });

  it('counts no more than the chat request holds: what it lets through, the chat check still judges', () => {
    // Four messages by the input's count; bridged, the call is an assistant message of its own: five.
    const body = {
      model: 'm',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: 'go' }, call('c1'), output('c1'), output('c2')],
    };
    const bridged = bridgeRequest(body, limited);
    const messages = [bridged.instructions, ...bridged.messages];
    expect(messages.map((message) => message?.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(
      refusal(() => parseChatCompletionRequest({ model: 'm', messages }, { ...limits, maxContentParts: 10 }))
        .message,
    ).toBe("Invalid 'messages': array too long. Expected an array with at most 4 messages, but got 5.");
  });
});

describe('newId', () => {
  it('makes ids of 48 random hex digits, none twice over many draws of the pool', () => {
    const ids = Array.from({ length: 2_000 }, () => newId('msg'));
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{48}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // Random: every hex digit turns up in every position over 2,000 ids.
    for (let position = 4; position < 52; position++)
      expect(new Set(ids.map((id) => id[position])).size).toBe(16);
  });
});

describe('bridgeRequest: origins', () => {
  it('names the input item each message was made of (-1 for calls) and where its content stands, dropped items skipped', () => {
    const bridged = bridgeRequest({
      model: 'm',
      input: [
        { role: 'user', content: 'Go.' },
        { type: 'reasoning', summary: [] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'ok' },
        { type: 'message', role: 'assistant', content: 'Done.' },
        { type: 'function_call', call_id: 'c2', name: 'f', arguments: '{}' },
      ],
    });
    expect(bridged.messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect([...bridged.sources.origins]).toEqual([0, -1, 3, 4]);
    // Where each message's strings stand in its item when they came as they are.
    const content = [{ inMessage: ['content'], inElement: ['content'] }];
    expect(bridged.sources.strings).toEqual([
      content,
      undefined,
      [{ inMessage: ['content'], inElement: ['output'] }],
      content,
    ]);
  });

  it('says where the texts of content parts and the URLs of images stand, part for part', () => {
    const bridged = bridgeRequest({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look.' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
          ],
        },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'No.' }] },
      ],
    });
    expect(bridged.messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Look.' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
      ],
    });
    expect(bridged.sources.strings).toEqual([
      [
        { inMessage: ['content', 0, 'text'], inElement: ['content', 0, 'text'] },
        { inMessage: ['content', 1, 'image_url', 'url'], inElement: ['content', 1, 'image_url'] },
      ],
      [{ inMessage: ['content', 0, 'text'], inElement: ['content', 0, 'refusal'] }],
    ]);
  });
});

describe('bridgeRequest: items between a call and its output', () => {
  // The Responses API pairs a call with its output by call_id wherever the output stands, and Codex
  // sends what came meanwhile between them — a user's message steering mid-turn, a developer message, a
  // reasoning item (deepseek-ai/awesome-deepseek-integration#740, MiniMax-AI/MiniMax-M2#69). Chat
  // Completions takes a call's results only right after it: the outputs go there, what came between
  // after them, in its order.
  const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'f', arguments: '{}' });
  const output = (id: string) => ({ type: 'function_call_output', call_id: id, output: `out ${id}` });
  const user = (text: string) => ({ type: 'message', role: 'user', content: text });
  const developer = (text: string) => ({ type: 'message', role: 'developer', content: text });
  const shape = (input: unknown[]) =>
    bridgeRequest({ model: 'm', input }).messages.map((message) =>
      message.role === 'tool'
        ? `tool ${String(message.tool_call_id)}`
        : message.role === 'assistant'
          ? `assistant ${((message.tool_calls ?? []) as Array<{ id: string }>).map((entry) => entry.id).join(',')}`
          : `${message.role} ${String(message.content)}`,
    );

  it.each([
    [
      "a user's message steering while the call ran",
      [user('Go.'), call('c1'), user('Also the logs.'), output('c1')],
      ['user Go.', 'assistant c1', 'tool c1', 'user Also the logs.'],
    ],
    [
      'two calls, a developer message and a user message between them and their outputs, a reasoning item too',
      [
        user('Go.'),
        call('c1'),
        call('c2'),
        developer('Approved.'),
        { type: 'reasoning', summary: [] },
        output('c2'),
        user('Hurry.'),
        output('c1'),
      ],
      ['user Go.', 'assistant c1,c2', 'tool c2', 'tool c1', 'developer Approved.', 'user Hurry.'],
    ],
    [
      'a call whose output never came: what followed stays where it was',
      [user('Go.'), call('c1'), user('Never mind.')],
      ['user Go.', 'assistant c1', 'user Never mind.'],
    ],
    [
      'the next step made before the output came: the message goes first, as it came',
      [user('Go.'), call('c1'), user('Also the logs.'), call('c2'), output('c1'), output('c2')],
      ['user Go.', 'assistant c1', 'user Also the logs.', 'assistant c2', 'tool c1', 'tool c2'],
    ],
  ])('%s', (_name, input, expected) => {
    expect(shape(input)).toEqual(expected);
  });

  it("keeps each message's origin beside it", () => {
    const bridged = bridgeRequest({
      model: 'm',
      input: [user('Go.'), call('c1'), user('Also.'), output('c1')],
    });
    expect([...bridged.sources.origins]).toEqual([0, -1, 3, 2]);
  });
});

describe('bridgeRequest: files (input_file)', () => {
  const pdfData = 'data:application/pdf;base64,JVBERi0xLjQK';
  const bridgedFile = (part: Record<string, unknown>) =>
    bridgeRequest({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Read it.' },
            { type: 'input_file', ...part },
          ],
        },
      ],
    });

  it('makes a PDF sent as data a Chat Completions file part, with its name (OpenAI asks for one beside the data)', () => {
    const bridged = bridgedFile({ filename: 'report.pdf', file_data: pdfData });
    expect(bridged.messages[0]?.content).toEqual([
      { type: 'text', text: 'Read it.' },
      { type: 'file', file: { filename: 'report.pdf', file_data: pdfData } },
    ]);
    // The data is copied from the client's bytes, as an image's URL is.
    expect(bridged.sources.strings?.[0]).toContainEqual({
      inMessage: ['content', 1, 'file', 'file_data'],
      inElement: ['content', 1, 'file_data'],
    });
    expect(bridgedFile({ file_data: pdfData }).messages[0]?.content).toContainEqual({
      type: 'file',
      file: { filename: 'file.pdf', file_data: pdfData },
    });
  });

  it('makes an uploaded file’s id a file part by id', () => {
    expect(bridgedFile({ file_id: 'file-abc123' }).messages[0]?.content).toContainEqual({
      type: 'file',
      file: { file_id: 'file-abc123' },
    });
  });

  it('makes a file a tool gave (a function_call_output part) a file part of its tool message', () => {
    const bridged = bridgeRequest({
      model: 'm',
      input: [
        { type: 'function_call', call_id: 'c1', name: 'fetch_report', arguments: '{}' },
        {
          type: 'function_call_output',
          call_id: 'c1',
          output: [
            { type: 'input_text', text: 'The report:' },
            { type: 'input_file', filename: 'q3.pdf', file_data: pdfData },
          ],
        },
      ],
    });
    expect(bridged.messages[1]).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: [
        { type: 'text', text: 'The report:' },
        { type: 'file', file: { filename: 'q3.pdf', file_data: pdfData } },
      ],
    });
  });

  it('refuses a file by URL, which Chat Completions cannot take, naming the part', () => {
    expect(() => bridgedFile({ file_url: 'https://example.com/report.pdf' })).toThrow(
      expect.objectContaining({
        code: 'invalid_request',
        param: 'input[0].content[1]',
        message: expect.stringContaining('Chat Completions takes no file_url'),
      }),
    );
  });
});

describe("bridgeRequest: compaction (Codex's remote compaction)", () => {
  // As Codex sends it: the history, then a compaction_trigger item, streamed, with its tools.
  const history = [
    { type: 'message', role: 'user', content: 'Count the steps.' },
    { type: 'function_call', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"seq 3"}' },
    { type: 'function_call_output', call_id: 'call_1', output: '1\n2\n3' },
  ];
  const asked = {
    model: 'm',
    stream: true,
    tools: [execCommand],
    tool_choice: 'auto',
    input: [...history, { type: 'compaction_trigger' }],
  };

  it('asks the model for a summary in place of the trigger, whole, calling no tool', () => {
    const bridged = bridgeRequest(asked, drop);
    expect(bridged.compaction).toBe(true);
    expect(bridged.dropped).toEqual([]);
    expect(bridged.messages).toHaveLength(4);
    expect(bridged.messages.slice(0, 3).map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
    ]);
    const request = bridged.messages[3];
    expect(request?.role).toBe('user');
    expect(String(request?.content)).toMatch(/summary/i);
    // The tools stay (the history calls them); none may be called. The client's stream is kept apart.
    expect(bridged.chatFields.tool_choice).toBe('none');
    expect((bridged.chatFields.tools as unknown[]).length).toBe(1);
    expect(bridged.chatFields.stream).toBeUndefined();
    expect(bridged.chatFields.stream_options).toBeUndefined();
    expect(bridged.stream).toBe(true);
    // With no tools there is no tool_choice to send.
    const bare = bridgeRequest({ model: 'm', input: [...history, { type: 'compaction_trigger' }] }, drop);
    expect(bare.chatFields.tool_choice).toBeUndefined();
  });

  it('reads a trigger only as the last item: elsewhere it is dropped and named', () => {
    const bridged = bridgeRequest(
      { model: 'm', stream: true, input: [{ type: 'compaction_trigger' }, ...history] },
      drop,
    );
    expect(bridged.compaction).toBe(false);
    expect(bridged.dropped).toEqual(['input[0] (compaction_trigger)']);
    expect(bridged.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(bridged.chatFields.stream).toBe(true);
  });

  it('gives the summary back in place of the history when the compaction item is sent back; drops one not its own', () => {
    const summary = 'Counted 1 to 3 with seq; next: count to 6.';
    const bridged = bridgeRequest(
      {
        model: 'm',
        input: [
          { type: 'message', role: 'user', content: 'Count the steps.' },
          compactionItemOf('cmp_1', summary),
          { type: 'message', role: 'user', content: 'Go on.' },
        ],
      },
      drop,
    );
    expect(bridged.compaction).toBe(false);
    expect(bridged.dropped).toEqual([]);
    expect(bridged.messages.map((message) => message.role)).toEqual(['user', 'user', 'user']);
    expect(String(bridged.messages[1]?.content).endsWith(summary)).toBe(true);
    expect(String(bridged.messages[1]?.content).length).toBeGreaterThan(summary.length);
    // OpenAI's compaction cannot be read by another model.
    const openai = bridgeRequest(
      {
        model: 'm',
        input: [
          { type: 'message', role: 'user', content: 'Count the steps.' },
          { type: 'compaction', id: 'cmp_2', encrypted_content: 'gAAAAABpCompacted…' },
        ],
      },
      drop,
    );
    expect(openai.dropped).toEqual(['input[1] (compaction)']);
    expect(openai.messages).toEqual([{ role: 'user', content: 'Count the steps.' }]);
  });
});

describe("bridgeRequest: a sub-agent's task (Codex's multi-agent v2 agent_message item)", () => {
  // As Codex 0.171 hands a spawned agent its task: the parent's history forked, then the message, its
  // header as text and the parent's words as `encrypted_content` (encrypted only by OpenAI's Responses
  // API; through a gateway they are the words the parent model wrote).
  const task = {
    type: 'agent_message',
    id: 'amsg_01a2',
    author: '/root',
    recipient: '/root/worker',
    content: [
      {
        type: 'input_text',
        text: 'Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\n',
      },
      { type: 'encrypted_content', encrypted_content: 'Write worker.txt.' },
    ],
  };

  it('gives the sub-agent its task as a user message, header and words in order, under either setting', () => {
    for (const options of [drop, reject]) {
      const bridged = bridgeRequest(
        {
          model: 'm',
          input: [{ type: 'message', role: 'user', content: 'Delegate it.' }, task],
        },
        options,
      );
      expect(bridged.dropped).toEqual([]);
      expect(bridged.messages).toEqual([
        { role: 'user', content: 'Delegate it.' },
        {
          role: 'user',
          content:
            'Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\nWrite worker.txt.',
        },
      ]);
    }
  });

  it('makes no message of one with nothing in it, and refuses a part it cannot read', () => {
    const empty = bridgeRequest(
      {
        model: 'm',
        input: [
          { type: 'message', role: 'user', content: 'Hi.' },
          { ...task, content: null },
        ],
      },
      drop,
    );
    expect(empty.messages).toEqual([{ role: 'user', content: 'Hi.' }]);
    expect(
      refusal(() =>
        bridgeRequest(
          { model: 'm', input: [{ ...task, content: [{ type: 'input_audio', data: 'AAAA' }] }] },
          drop,
        ),
      ).param,
    ).toBe('input[0].content[0]');
  });
});

describe('userItemsOf: the user messages POST /v1/responses/compact answers', () => {
  it("gives the chain's user messages as parts, then the input's, leaving out the rest and earlier summaries", () => {
    const items = userItemsOf(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Read page 1.' },
        { role: 'assistant', content: 'Read it.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at this.' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
            { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
          ],
        },
        { role: 'user', content: `${compactedHistory}Pages 1 to 3 were read.` },
        { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] },
      ],
      [
        { type: 'message', role: 'user', content: 'Read page 2.' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Read.' }] },
        { role: 'user', content: [{ type: 'input_text', text: 'And page 3.' }] },
        { type: 'function_call_output', call_id: 'c', output: 'Page 3.' },
      ],
    );
    expect(items.map(({ id: _id, ...item }) => item)).toEqual([
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Read page 1.' }] },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Look at this.' },
          { type: 'input_image', image_url: 'https://example.com/a.png' },
        ],
      },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Read page 2.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And page 3.' }] },
    ]);
    // The chain's messages get ids of their own, as output items have.
    expect(items.slice(0, 2).map((item) => item.id)).toEqual([
      expect.stringMatching(/^msg_/),
      expect.stringMatching(/^msg_/),
    ]);
  });
});
