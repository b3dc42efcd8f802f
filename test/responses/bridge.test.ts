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
import { bridgeRequest, newId, type BridgeOptions } from '../../src/responses/bridge.js';

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
  it("drops Codex's client_metadata, include, namespace and web_search tools and reasoning.summary, and names each", () => {
    const bridged = bridgeRequest(codexFirstRequest, drop);
    expect(bridged.dropped).toEqual([
      'client_metadata',
      'include reasoning.encrypted_content',
      'reasoning.summary',
      'tools[1] (namespace multi_agent_v1)',
      'tools[2] (web_search)',
    ]);
    // Only the function tool travels: the model is told of nothing it cannot call.
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
