// The Messages service between the bridge and the chat engine: a Messages request reaches the engine as
// the chat request it stands for (an Anthropic key turned into a bearer token only for a Chat Completions
// upstream), the engine's answers — whole, streamed, refused — reach the client in Anthropic's format,
// a request the bridge refuses never reaches the engine, and count_tokens asks an `anthropic` upstream
// for its own count (falling back to the gateway's estimate when it cannot say). The chat engine is
// replaced by one that answers from a script and records what it was asked (it is tested on its own).
import { createFieldFixes } from '../../src/upstream/field-fixes.js';
import { describe, expect, it } from 'vitest';
import type { ChatInput, ChatService } from '../../src/chat/chat-turn.js';
import { outcomeOf } from '../../src/chat/request-outcome.js';
import { loadConfig } from '../../src/config/load-config.js';
import { noOverrides } from '../../src/context/request-overrides.js';
import { isGatewayError } from '../../src/errors.js';
import { createMessagesService, type MessagesInput } from '../../src/messages/messages-service.js';
import { recordingClient, scriptedUpstream, type ScriptedAnswer } from '../helpers/port-fakes.js';
import { sseEvents } from '../helpers/sse-events.js';
import { knownBytesText } from '../helpers/known-bytes.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const config = loadConfig({
  env: {
    GATEWAY_API_KEYS: 'gk-test',
    CLAUDE_KEY: 'sk-ant-test',
    CTXGATE_CONFIG: writeConfigFile(
      [
        'upstreams:',
        '  - name: claude',
        '    base_url: http://claude.invalid/v1',
        '    api_key_env: CLAUDE_KEY',
        "    models: ['claude-*']",
        '    kind: anthropic',
        '',
      ].join('\n'),
    ),
  },
});

type EngineAnswer = { whole: number; body: unknown } | { stream: string[] } | { previewTokens: string };

/** A chat engine answering from a script, keeping what it was asked. */
function scriptedChat(answer: EngineAnswer): ChatService & { asked: ChatInput[] } {
  const asked: ChatInput[] = [];
  return {
    asked,
    async complete(input, client) {
      asked.push(input);
      if ('whole' in answer) {
        await client.sendWhole(answer.whole, {}, Buffer.from(JSON.stringify(answer.body)));
      } else if ('stream' in answer) {
        client.openStream(200, { 'x-context-input-tokens': '42' });
        for (const chunk of answer.stream) await client.write(Buffer.from(chunk));
        client.end();
      }
      return { model: String((input.body as { model?: unknown }).model) };
    },
    async preview(input) {
      asked.push({ ...input, warn: () => undefined, info: () => undefined });
      const tokens = 'previewTokens' in answer ? answer.previewTokens : '0';
      return {
        headers: { 'x-context-input-tokens': tokens },
        body: { messages: [{ role: 'user', content: 'hello' }] },
        outcome: { model: 'm' },
      };
    },
  };
}

const credential = { mode: 'gateway_key' as const, tenantId: 'acme', mayHoldSessions: true };

function input(body: unknown, headers: Record<string, string> = {}): MessagesInput {
  return {
    body,
    rawBody: Buffer.from(JSON.stringify(body)),
    countingBytes: Buffer.byteLength(JSON.stringify(body)),
    overrides: noOverrides,
    credential,
    clientHeaders: headers,
    startedAtMs: 0,
    warn: () => undefined,
    info: () => undefined,
  };
}

const request = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 256,
  system: 'Be brief.',
  messages: [{ role: 'user', content: 'What is 2 + 2?' }],
  ...extra,
});

const completion = {
  id: 'chatcmpl-1',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Four.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 20, completion_tokens: 2 },
};

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

describe('the Messages service: create', () => {
  it('hands the engine the chat request the Messages request stands for', async () => {
    const chat = scriptedChat({ whole: 200, body: completion });
    const service = createMessagesService({
      chat,
      config,
      upstream: scriptedUpstream([]),
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    await service.create(input(request('gpt-4o-mini', { stop_sequences: ['END'] })), recordingClient());
    expect(chat.asked).toHaveLength(1);
    expect(chat.asked[0]?.body).toMatchObject({
      model: 'gpt-4o-mini',
      max_tokens: 256,
      stop: ['END'],
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is 2 + 2?' },
      ],
    });
    // The bytes the client sent are Anthropic's: never forwarded as the chat body. Their size still
    // decides how exactly the prompt is counted (a body over 4 MB from samples).
    expect(chat.asked[0]?.rawBody).toBeUndefined();
    expect(chat.asked[0]?.countingBytes).toBe(
      Buffer.byteLength(JSON.stringify(request('gpt-4o-mini', { stop_sequences: ['END'] }))),
    );
  });

  it.each<[string, unknown, boolean]>([
    ['a long system string', 'long', true],
    [
      'one long text block with cache_control',
      [{ type: 'text', text: 'long', cache_control: { type: 'ephemeral' } }],
      true,
    ],
    [
      'two blocks (the prompt is their join)',
      [
        { type: 'text', text: 'long' },
        { type: 'text', text: 'more' },
      ],
      false,
    ],
    ['a short system string', 'Be brief.', false],
  ])('gives the engine the system prompt in the client’s own bytes: %s', async (_label, shape, copied) => {
    const prompt = `You are a coding agent; paths look like src/a.ts. ${'Follow the rules. '.repeat(80)}`;
    const system = JSON.parse(JSON.stringify(shape).replaceAll('"long"', JSON.stringify(prompt))) as unknown;
    // The client spells '/' as '\/': bytes copied keep its spelling.
    const text = JSON.stringify(request('gpt-4o-mini', { system })).replaceAll('/', '\\/');
    const body = JSON.parse(text) as Record<string, unknown>;
    const chat = scriptedChat({ whole: 200, body: completion });
    const service = createMessagesService({
      chat,
      config,
      upstream: scriptedUpstream([]),
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    await service.create(Object.assign(input(body), { rawBody: Buffer.from(text) }), recordingClient());
    const asked = chat.asked[0] as ChatInput;
    const messages = (asked.body as { messages: Array<Record<string, unknown>> }).messages;
    expect(messages[0]?.role).toBe('system');
    const known = (asked.messageBytes?.(messages as never) ?? []).map(knownBytesText);
    if (!copied) {
      expect(known[0]).toBeUndefined();
      return;
    }
    expect(JSON.parse(known[0] as string)).toEqual(messages[0]);
    expect(known[0]).toContain(JSON.stringify(prompt).replaceAll('/', '\\/'));
  });

  it.each<[string, string, Array<[string, unknown]>]>([
    [
      'a model whose template takes one system message, first: its text in the user message before it',
      'local-coder',
      [
        ['system', 'You are Claude Code.'],
        ['user', 'Tell me the code.\n\n# Environment'],
        ['assistant', 'It is 42.'],
        ['user', 'Answer in French now.\n\nAnd the next one?'],
      ],
    ],
    [
      'an OpenAI model: a system message where it stood',
      'gpt-5.4',
      [
        ['system', 'You are Claude Code.'],
        ['user', 'Tell me the code.'],
        ['system', '# Environment'],
        ['assistant', 'It is 42.'],
        ['system', 'Answer in French now.'],
        ['user', 'And the next one?'],
      ],
    ],
  ])(
    'hands the engine a system message in the conversation as the model takes it: %s',
    async (_name, model, sent) => {
      const chat = scriptedChat({ whole: 200, body: completion });
      const service = createMessagesService({
        chat,
        config,
        upstream: scriptedUpstream([]),
        fieldFixes: createFieldFixes({ maxEntries: 10 }),
      });
      const body = {
        model,
        max_tokens: 256,
        system: 'You are Claude Code.',
        messages: [
          { role: 'user', content: 'Tell me the code.' },
          { role: 'system', content: '# Environment' },
          { role: 'assistant', content: 'It is 42.' },
          { role: 'system', content: 'Answer in French now.' },
          { role: 'user', content: 'And the next one?' },
        ],
      };
      await service.create(input(body), recordingClient());
      const messages = (chat.asked[0]?.body as { messages: Array<{ role: string; content: unknown }> })
        .messages;
      expect(messages.map((message) => [message.role, message.content])).toEqual(sent);
    },
  );

  it('gives a thinking model its reasoning back under the name its answers gave it (vLLM 0.17: `reasoning`)', async () => {
    const thinking = {
      id: 'c',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            reasoning: 'I should read it.',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    };
    const chat = scriptedChat({ whole: 200, body: thinking });
    const service = createMessagesService({
      chat,
      config,
      upstream: scriptedUpstream([]),
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    const client = recordingClient();
    await service.create(input(request('qwen3.5')), client);
    const answer = JSON.parse(client.received) as { content: Array<Record<string, unknown>> };
    expect(answer.content[0]).toEqual({ type: 'thinking', thinking: 'I should read it.', signature: '' });
    // Claude Code sends the answer back with the tool's result: its thinking goes back as vLLM reads it.
    await service.create(
      input(
        request('qwen3.5', {
          messages: [
            { role: 'user', content: 'What is 2 + 2?' },
            { role: 'assistant', content: answer.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '4' }] },
          ],
        }),
      ),
      recordingClient(),
    );
    const sent = (chat.asked[1]?.body as { messages: Array<Record<string, unknown>> }).messages;
    expect(sent[2]).toMatchObject({ role: 'assistant', reasoning: 'I should read it.' });
    expect(sent[2]).not.toHaveProperty('reasoning_content');
  });

  it.each<[string, string, Record<string, string>, Record<string, string | undefined>]>([
    [
      'an x-api-key to a Chat Completions upstream becomes a bearer token',
      'gpt-4o-mini',
      { 'x-api-key': 'sk-client' },
      { authorization: 'Bearer sk-client', 'x-api-key': undefined },
    ],
    [
      'an x-api-key beside an Authorization stays as it came',
      'gpt-4o-mini',
      { 'x-api-key': 'sk-client', authorization: 'Bearer gk-test' },
      { authorization: 'Bearer gk-test', 'x-api-key': 'sk-client' },
    ],
    [
      'an x-api-key to an anthropic upstream stays an x-api-key',
      'claude-sonnet-4-5',
      { 'x-api-key': 'sk-client' },
      { authorization: undefined, 'x-api-key': 'sk-client' },
    ],
  ])('%s', async (_name, model, headers, expected) => {
    const chat = scriptedChat({ whole: 200, body: completion });
    const service = createMessagesService({
      chat,
      config,
      upstream: scriptedUpstream([]),
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    await service.create(input(request(model), headers), recordingClient());
    const sent = chat.asked[0]?.clientHeaders ?? {};
    for (const [name, value] of Object.entries(expected)) expect(sent[name], name).toBe(value);
  });

  it('answers a whole completion as an Anthropic message', async () => {
    const client = recordingClient();
    const service = createMessagesService({
      chat: scriptedChat({ whole: 200, body: completion }),
      config,
      upstream: scriptedUpstream([]),
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    await service.create(input(request('gpt-4o-mini')), client);
    const message = JSON.parse(client.received);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'gpt-4o-mini',
      content: [{ type: 'text', text: 'Four.' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 20, output_tokens: 2 },
    });
    expect(message.id).toMatch(/^msg_/);
  });

  it("answers the engine's refusal in Anthropic's error shape", async () => {
    const client = recordingClient();
    const refusal = { error: { message: 'Rate limit reached.', type: 'rate_limit_error', code: null } };
    const service = createMessagesService({
      chat: scriptedChat({ whole: 429, body: refusal }),
      config,
      upstream: scriptedUpstream([]),
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    await service.create(input(request('gpt-4o-mini')), client);
    expect(client.statuses).toEqual([429]);
    expect(JSON.parse(client.received)).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'Rate limit reached.' },
    });
  });

  it('translates a streamed completion into Anthropic events, usage and stop reason included', async () => {
    const client = recordingClient();
    const stream = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Fo' }),
      chunk({ content: 'ur.' }),
      chunk({}, 'stop'),
      `data: ${JSON.stringify({ id: 'c', choices: [], usage: { prompt_tokens: 20, completion_tokens: 2 } })}\n\n`,
      'data: [DONE]\n\n',
    ];
    const service = createMessagesService({
      chat: scriptedChat({ stream }),
      config,
      upstream: scriptedUpstream([]),
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    await service.create(input(request('gpt-4o-mini', { stream: true })), client);
    const received = sseEvents(client.received);
    expect(received.map((event) => event.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const text = received
      .filter((event) => event.event === 'content_block_delta')
      .map((event) => (event.data.delta as { text: string }).text)
      .join('');
    expect(text).toBe('Four.');
    expect(received[0]?.data).toMatchObject({ message: { usage: { input_tokens: 42 } } });
    expect(received[6]?.data).toMatchObject({
      delta: { stop_reason: 'end_turn' },
      usage: { output_tokens: 2 },
    });
    expect(client.ended).toBe(true);
  });

  it.each<[string, unknown, string]>([
    ['no max_tokens', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens'],
    [
      'a role Anthropic does not know',
      request('gpt-4o-mini', { messages: [{ role: 'tool', content: 'x' }] }),
      'role',
    ],
    ['a body that is not an object', [1, 2, 3], 'object'],
  ])('refuses %s before the engine is asked', async (_name, body, wording) => {
    const chat = scriptedChat({ whole: 200, body: completion });
    const service = createMessagesService({
      chat,
      config,
      upstream: scriptedUpstream([]),
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    const failure = await service.create(input(body), recordingClient()).catch((error: unknown) => error);
    expect(isGatewayError(failure) && failure.status).toBe(400);
    expect((failure as Error).message).toContain(wording);
    expect(chat.asked).toEqual([]);
    // What was done until the refusal travels with it, for the request's log line.
    expect(outcomeOf(failure)).toBeDefined();
  });
});

describe('the Messages service: the name of a request’s tool set', () => {
  const read = { name: 'Read', description: 'Reads a file.', input_schema: { type: 'object' } };
  const write = { name: 'Write', input_schema: { type: 'object', properties: { path: { type: 'string' } } } };
  const search = { type: 'web_search_20250305', name: 'web_search' };
  const bodies: Array<[string, string]> = [
    ['gpt-4o-mini', JSON.stringify(request('gpt-4o-mini', { tools: [read, write] }))],
    // The same tools with another conversation: the same set.
    ['gpt-4o-mini', JSON.stringify(request('gpt-4o-mini', { tools: [read, write], system: 'Be exact.' }))],
    ['gpt-4o-mini', JSON.stringify(request('gpt-4o-mini', { tools: [write, read] }))],
    // A server tool: no chat tool, whether the upstream runs it (natively) or not.
    ['gpt-4o-mini', JSON.stringify(request('gpt-4o-mini', { tools: [read, search] }))],
    ['claude-sonnet-4-5', JSON.stringify(request('claude-sonnet-4-5', { tools: [read, search] }))],
    ['claude-sonnet-4-5', JSON.stringify(request('claude-sonnet-4-5', { tools: [read] }))],
    // tools given twice, the second spelled with an escape: JSON.parse keeps the second.
    [
      'gpt-4o-mini',
      `{"tools":${JSON.stringify([read, write])},"model":"gpt-4o-mini","max_tokens":256,"messages":[{"role":"user","content":"Hi"}],"t\\u006fols":${JSON.stringify([write])}}`,
    ],
    ['gpt-4o-mini', JSON.stringify(request('gpt-4o-mini', { tools: [write] }))],
  ];

  it('names two requests’ tools alike only when the engine gets the same tools', async () => {
    const asked: ChatInput[] = [];
    for (const [, text] of bodies) {
      const chat = scriptedChat({ whole: 200, body: completion });
      const service = createMessagesService({
        chat,
        config,
        upstream: scriptedUpstream([]),
        fieldFixes: createFieldFixes({ maxEntries: 10 }),
      });
      const body = JSON.parse(text) as unknown;
      await service.create(Object.assign(input(body), { rawBody: Buffer.from(text) }), recordingClient());
      asked.push(chat.asked[0] as ChatInput);
    }
    const keys = asked.map((one) => one.toolsKey);
    // Every request but the one giving `tools` twice is named.
    expect(keys.map((key) => key === undefined)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      true,
      false,
    ]);
    for (const [a, first] of asked.entries())
      for (const second of asked)
        if (first.toolsKey !== undefined && first.toolsKey === second.toolsKey)
          expect([a, (second.body as { tools?: unknown }).tools]).toEqual([
            a,
            (first.body as { tools?: unknown }).tools,
          ]);
    expect(new Set(keys).size).toBe(6);
  });
});

describe('the Messages service: count_tokens', () => {
  const count = (status: number, body: unknown): ScriptedAnswer => ({
    status,
    headers: { 'content-type': 'application/json' },
    chunks: [JSON.stringify(body)],
  });

  it("answers a Chat Completions model's count with the gateway's estimate, asking no upstream", async () => {
    const upstream = scriptedUpstream([]);
    const service = createMessagesService({
      chat: scriptedChat({ previewTokens: '137' }),
      config,
      upstream,
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    const { body } = await service.countTokens(input(request('gpt-4o-mini', { max_tokens: undefined })));
    expect(body).toEqual({ input_tokens: 137 });
    expect(upstream.sent).toEqual([]);
  });

  it('asks an anthropic upstream for its own count of what would be sent, without max_tokens', async () => {
    const upstream = scriptedUpstream([count(200, { input_tokens: 151 })]);
    const service = createMessagesService({
      chat: scriptedChat({ previewTokens: '137' }),
      config,
      upstream,
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    const { body } = await service.countTokens(
      input(request('claude-sonnet-4-5'), { authorization: 'Bearer gk-test' }),
    );
    expect(body).toEqual({ input_tokens: 151 });
    expect(upstream.sent).toHaveLength(1);
    const sent = upstream.sent[0];
    expect(sent?.path).toBe('/messages/count_tokens');
    expect(sent?.upstream.name).toBe('claude');
    expect(sent?.headers['x-api-key']).toBe('sk-ant-test');
    expect(sent?.headers['anthropic-version']).toBe('2023-06-01');
    const sentBody = JSON.parse(String(sent?.body));
    expect(sentBody).not.toHaveProperty('max_tokens');
    expect(sentBody.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hello' }] }]);
  });

  it('asks it without the anthropic-beta flags and the members that model refused', async () => {
    const upstream = scriptedUpstream([count(200, { input_tokens: 151 })]);
    const fieldFixes = createFieldFixes({ maxEntries: 10 });
    fieldFixes.remember('claude', 'claude-sonnet-4-5', {
      field: 'anthropic-beta',
      value: 'effort-2025-11-24',
    });
    fieldFixes.remember('claude', 'claude-sonnet-4-5', { field: 'context_management' });
    const service = createMessagesService({
      chat: scriptedChat({ previewTokens: '137' }),
      config,
      upstream,
      fieldFixes,
    });
    const { body } = await service.countTokens(
      input(
        request('claude-sonnet-4-5', {
          context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        }),
        { 'anthropic-beta': 'claude-code-20250219,effort-2025-11-24' },
      ),
    );
    expect(body).toEqual({ input_tokens: 151 });
    expect(upstream.sent[0]?.headers['anthropic-beta']).toBe('claude-code-20250219');
    expect(JSON.parse(String(upstream.sent[0]?.body))).not.toHaveProperty('context_management');
  });

  it.each<[string, ScriptedAnswer]>([
    ['a refusal', count(429, { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } })],
    ['a count that is not a number', count(200, { input_tokens: 'many' })],
    ['a body that is not JSON', { status: 200, chunks: ['<html>'] }],
    ['a connection that breaks', { status: 200, chunks: ['{"input'], breaks: true }],
    ['no connection at all', { status: 0, refused: true }],
  ])("falls back to the gateway's estimate on %s from the upstream", async (_name, answer) => {
    const upstream = scriptedUpstream([answer]);
    const service = createMessagesService({
      chat: scriptedChat({ previewTokens: '137' }),
      config,
      upstream,
      fieldFixes: createFieldFixes({ maxEntries: 10 }),
    });
    const { body } = await service.countTokens(input(request('claude-sonnet-4-5')));
    expect(body).toEqual({ input_tokens: 137 });
    expect(upstream.sent).toHaveLength(1);
  });
});
