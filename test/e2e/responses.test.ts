// End to end (issue "The Responses API"): POST /v1/responses through the official openai client and the
// AI SDK's default openai(model) provider and LangChain's ChatOpenAI with useResponsesApi, bridged onto a strict fake that only speaks Chat Completions:
// whole and streamed answers, a function tool round trip, previous_response_id chains fitted into an
// 8,192-token window, continued on another gateway process and after a restart, and the stored
// responses' endpoints.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import { HumanMessage, ToolMessage, type AIMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, gate, type ChatMessage } from '../helpers/fake-upstream.js';
import { prose } from '../helpers/text.js';
import { zstdCompress } from '../helpers/zstd.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const window = 8_192;
const configYaml = `models:\n  - match: chain-model\n    window: ${window}\n    output_reserve: 300\n`;
let fake: FakeUpstream;
let upstreamUrl: string;
let harness: GatewayHarness;

beforeAll(async () => {
  // gpt-5-mini as OpenAI serves it: max_tokens and a temperature other than 1 are refused.
  fake = new FakeUpstream({ windows: { 'chain-model': window }, reasoningModels: ['gpt-5-mini'] });
  upstreamUrl = await fake.start();
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
    configYaml,
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = (gateway = harness) =>
  new OpenAI({ baseURL: gateway.baseUrl, apiKey: 'sk-responses', maxRetries: 0 });
const sentMessages = (index: number) =>
  (fake.chatRequests[index]?.body as { messages: ChatMessage[] }).messages;

describe('POST /v1/responses over a Chat Completions provider', () => {
  it('answers a string input with a Response object', async () => {
    fake.setDefault({ content: 'Hello back.' });
    const before = fake.chatRequests.length;
    const response = await client().responses.create({
      model: 'gpt-4o-mini',
      instructions: 'Be brief.',
      input: 'Hello?',
      max_output_tokens: 100,
    });
    expect(response.id).toMatch(/^resp_/);
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Hello back.');
    expect(response.usage?.input_tokens).toBe(fake.chatRequests[before]?.promptTokens);
    expect(sentMessages(before)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Hello?' }] },
    ]);
    expect((fake.chatRequests[before]?.body as { max_tokens?: number }).max_tokens).toBe(100);
  });

  it('caps a reasoning model’s answer under the name OpenAI takes for it, and any other model’s as max_tokens', async () => {
    for (const [model, field] of [
      ['gpt-5-mini', 'max_completion_tokens'],
      ['chain-model', 'max_tokens'],
    ] as const) {
      const response = await client().responses.create({ model, input: 'Say hi.', max_output_tokens: 120 });
      expect(response.status).toBe('completed');
      const sent = fake.chatRequests.at(-1)?.body as Record<string, unknown>;
      expect(sent[field]).toBe(120);
      expect(Object.keys(sent).filter((key) => /^max_(?:completion_)?tokens$/.test(key))).toEqual([field]);
    }
  });

  it('streams the Responses event sequence as the provider streams', async () => {
    // The provider sends two chunks, then the rest only once the client has the first words.
    const firstWordsSeen = gate();
    fake.setDefault({
      content: 'one two three four five',
      chunks: 5,
      pauseAfterChunks: 2,
      resumeWhen: firstWordsSeen.opened,
    });
    const stream = await client().responses.create({ model: 'gpt-4o-mini', input: 'Count.', stream: true });
    const types: string[] = [];
    const sequence: number[] = [];
    let text = '';
    // Whether the provider had finished its answer when the first words reached the client.
    let providerDoneAtFirstDelta: boolean | undefined;
    for await (const event of stream) {
      types.push(event.type);
      sequence.push(event.sequence_number);
      if (event.type === 'response.output_text.delta') {
        providerDoneAtFirstDelta ??= fake.chatRequests.at(-1)?.completed;
        firstWordsSeen.open();
        text += event.delta;
      }
    }
    expect(text).toBe('one two three four five');
    expect(types.filter((type) => type !== 'response.output_text.delta')).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(sequence).toEqual(sequence.map((_value, index) => index));
    // Translated as it arrives: the first words reach the client while the provider is still sending.
    expect(providerDoneAtFirstDelta).toBe(false);
    fake.setDefault({ content: 'ok' });
  });

  it('does a function tool round trip with function_call_output', async () => {
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        description: 'The weather in a city.',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        strict: false,
      },
    ];
    fake.enqueue({ toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
    const first = await client().responses.create({
      model: 'gpt-4o-mini',
      input: 'Weather in Paris?',
      tools,
    });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', call_id: 'call_w1', name: 'get_weather' });
    fake.setDefault({ content: 'Sunny in Paris.' });
    const before = fake.chatRequests.length;
    const second = await client().responses.create({
      model: 'gpt-4o-mini',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'call_w1', output: 'sunny' }],
      tools,
    });
    expect(second.output_text).toBe('Sunny in Paris.');
    expect(sentMessages(before).map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
  });

  it('reads a request body zstd-compressed as Codex signed in with ChatGPT sends it (enable_request_compression)', async () => {
    // Before, the gateway answered such a body 415 unsupported_media_type: Codex could do nothing through it.
    fake.setDefault({ content: 'Read it.' });
    const before = fake.chatRequests.length;
    const response = await fetch(`${harness.baseUrl}/responses`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk-responses',
        'content-type': 'application/json',
        'content-encoding': 'zstd',
      },
      body: zstdCompress(
        JSON.stringify({
          model: 'gpt-4o-mini',
          instructions: 'You are Codex.',
          input: [
            { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Read the log.' }] },
          ],
          store: false,
          stream: false,
        }),
      ),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { output_text?: string; output: unknown[] }).output).toEqual([
      expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: 'Read it.' })] }),
    ]);
    expect(sentMessages(before).at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'Read the log.' }],
    });
  });

  it("takes a user's message between a call and its output, as Codex sends one that steered while the call ran", async () => {
    // The Responses API pairs a call and its output by call_id wherever the output stands
    // (deepseek-ai/awesome-deepseek-integration#740); Chat Completions takes them only next to each other.
    // Before, the gateway took the call and its output out as counterparts of none: the model never saw
    // what the command printed.
    fake.setDefault({ content: 'The build passed; now the logs.' });
    const before = fake.chatRequests.length;
    const answer = await client().responses.create({
      model: 'gpt-4o-mini',
      store: false,
      input: [
        { type: 'message', role: 'user', content: 'Run the build.' },
        { type: 'function_call', call_id: 'call_b1', name: 'shell', arguments: '{"cmd":"make"}' },
        { type: 'message', role: 'user', content: 'Also check the logs afterwards.' },
        { type: 'function_call_output', call_id: 'call_b1', output: 'build passed' },
      ],
      tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' }, strict: false }],
    });
    expect(answer.output_text).toBe('The build passed; now the logs.');
    expect(sentMessages(before)).toEqual([
      { role: 'user', content: 'Run the build.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_b1', type: 'function', function: { name: 'shell', arguments: '{"cmd":"make"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_b1', content: 'build passed' },
      { role: 'user', content: 'Also check the logs afterwards.' },
    ]);
  });

  it('keeps a 20-turn chain that never says truncation inside an 8,192-token window, and refuses it whole with truncation disabled', async () => {
    fake.setDefault({ content: `Noted. ${prose(120, 5)}` });
    let previous: string | undefined;
    for (let turn = 0; turn < 20; turn++) {
      const before = fake.chatRequests.length;
      // As the agent SDKs send it: no truncation field (responses.default_truncation: auto).
      const response = await client().responses.create({
        model: 'chain-model',
        input: `Turn ${turn}: ${prose(400, turn)}`,
        ...(previous === undefined ? {} : { previous_response_id: previous }),
      });
      expect(response.truncation).toBe('auto');
      expect(response.status).toBe('completed');
      expect(fake.chatRequests[before]?.promptTokens ?? Infinity).toBeLessThanOrEqual(window - 300);
      previous = response.id;
    }
    // Twenty turns of ~530 tokens do not fit whole: asked not to truncate, the gateway answers 400.
    const refused = await client()
      .responses.create({
        model: 'chain-model',
        input: 'And now?',
        previous_response_id: previous as string,
        truncation: 'disabled',
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
  });

  it('lets two requests continue the same response: chains branch', async () => {
    fake.setDefault({ content: 'root answer' });
    const root = await client().responses.create({ model: 'gpt-4o-mini', input: 'The root.' });
    fake.setDefault({ content: 'branch answer' });
    const [left, right] = await Promise.all(
      ['Left?', 'Right?'].map((input) =>
        client().responses.create({ model: 'gpt-4o-mini', input, previous_response_id: root.id }),
      ),
    );
    const before = fake.chatRequests.length;
    await client().responses.create({
      model: 'gpt-4o-mini',
      input: 'More left.',
      previous_response_id: left?.id ?? '',
    });
    const sent = JSON.stringify(sentMessages(before));
    expect(sent).toContain('The root.');
    expect(sent).toContain('Left?');
    expect(sent).not.toContain('Right?');
    expect(right?.status).toBe('completed');
  });

  it('continues a chain on another gateway process, and after a restart', async () => {
    fake.setDefault({ content: 'remembered' });
    const first = await client().responses.create({ model: 'gpt-4o-mini', input: 'My code is K-42.' });
    const other = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
      configYaml,
    });
    try {
      await waitUntilReady(other);
      const before = fake.chatRequests.length;
      const second = await client(other).responses.create({
        model: 'gpt-4o-mini',
        input: 'What is my code?',
        previous_response_id: first.id,
      });
      expect(JSON.stringify(sentMessages(before))).toContain('My code is K-42.');
      await other.close();
      const restarted = await startGateway({
        env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
        configYaml,
      });
      try {
        await waitUntilReady(restarted);
        const third = await client(restarted).responses.create({
          model: 'gpt-4o-mini',
          input: 'And again?',
          previous_response_id: second.id,
        });
        expect(third.status).toBe('completed');
        expect(sentMessages(fake.chatRequests.length - 1).map((message) => message.role)).toEqual([
          'user',
          'assistant',
          'user',
          'assistant',
          'user',
        ]);
      } finally {
        await restarted.close();
      }
    } finally {
      await other.close().catch(() => undefined);
    }
  });

  it('serves the stored responses: read, input items, input tokens, delete; other tenants see nothing', async () => {
    fake.setDefault({ content: 'stored' });
    const created = await client().responses.create({ model: 'gpt-4o-mini', input: 'Keep this.' });
    expect((await client().responses.retrieve(created.id)).output_text).toBe('stored');
    const items = await client().responses.inputItems.list(created.id);
    expect(items.data).toHaveLength(1);
    expect(items.data[0]).toMatchObject({ type: 'message', role: 'user' });
    const tokens = await fetch(`${harness.baseUrl}/responses/input_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-responses' },
      body: JSON.stringify({ model: 'gpt-4o-mini', input: 'And this?', previous_response_id: created.id }),
    });
    expect(((await tokens.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(5);
    const stranger = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-someone-else', maxRetries: 0 });
    expect(await stranger.responses.retrieve(created.id).catch((error: unknown) => error)).toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    await client().responses.delete(created.id);
    expect(
      await client()
        .responses.retrieve(created.id)
        .catch((error: unknown) => error),
    ).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('leaves out a tool the upstream cannot run, answers, and names it in X-Ctxgate-Dropped and the log', async () => {
    fake.setDefault({ content: 'Answered without searching.' });
    const before = fake.chatRequests.length;
    const { data, response } = await client()
      .responses.create({
        model: 'gpt-4o-mini',
        input: 'Search.',
        tools: [{ type: 'web_search' }],
        include: ['reasoning.encrypted_content'],
      })
      .withResponse();
    expect(data.output_text).toBe('Answered without searching.');
    expect(response.headers.get('x-ctxgate-dropped')).toBe(
      'include reasoning.encrypted_content, tools[0] (web_search)',
    );
    expect((fake.chatRequests[before]?.body as { tools?: unknown }).tools).toBeUndefined();
    const logged = harness.logLines
      .map((line) => JSON.parse(line) as { msg?: string; reqId?: string; dropped?: string[]; route?: string })
      .filter((line) => line.msg === 'request' && line.route === '/v1/responses');
    expect(logged.at(-1)?.dropped).toEqual(['include reasoning.encrypted_content', 'tools[0] (web_search)']);
  });

  it('a hosted tool alone, left out, takes the settings of tool calling with it (OpenAI refuses them with no tools)', async () => {
    // The Agents SDK's WebSearchTool alone, with parallel tool calls off in its model settings.
    fake.setDefault({ content: 'Answered without searching.' });
    const before = fake.chatRequests.length;
    const response = await client().responses.create({
      model: 'gpt-4o-mini',
      input: 'Search.',
      tools: [{ type: 'web_search' }],
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
    expect(response.output_text).toBe('Answered without searching.');
    expect(fake.chatRequests.length - before).toBe(1);
    const sent = fake.chatRequests[before]?.body as Record<string, unknown>;
    expect([sent.tools, sent.tool_choice, sent.parallel_tool_calls]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    // As the client asked it: the response says so.
    expect(response.parallel_tool_calls).toBe(false);
  });

  it('refuses a tool_choice that forces a tool it cannot run, and logs the param it names', async () => {
    const refused = await client()
      .responses.create({
        model: 'gpt-4o-mini',
        input: 'Search.',
        stream: true,
        tools: [{ type: 'web_search' }],
        tool_choice: { type: 'web_search' } as never,
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tool_choice');
    const logged = harness.logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === 'request' && line.route === '/v1/responses');
    // Logged as the client asked it (streamed), with the param the refusal names.
    expect(logged.at(-1)).toMatchObject({ status: 400, stream: true, errorParam: 'tool_choice' });
  });

  it('resolves item_reference items from the stored responses of the same tenant only', async () => {
    fake.setDefault({ content: 'The code word is Larkspur.' });
    const first = await client().responses.create({ model: 'gpt-4o-mini', input: 'Pick a code word.' });
    const said = first.output.find((item) => item.type === 'message');
    fake.setDefault({ content: 'It was Larkspur.' });
    const before = fake.chatRequests.length;
    const second = await client().responses.create({
      model: 'gpt-4o-mini',
      input: [
        { role: 'user', content: 'Pick a code word.' },
        { type: 'item_reference', id: said?.id as string },
        { role: 'user', content: 'Which was it?' },
      ],
    });
    expect(second.output_text).toBe('It was Larkspur.');
    expect(sentMessages(before)).toEqual([
      { role: 'user', content: 'Pick a code word.' },
      { role: 'assistant', content: [{ type: 'text', text: 'The code word is Larkspur.' }] },
      { role: 'user', content: 'Which was it?' },
    ]);
    const unknown = await client()
      .responses.create({ model: 'gpt-4o-mini', input: [{ type: 'item_reference', id: 'msg_nowhere' }] })
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    expect((unknown as Error).message).toMatch(/Item with id 'msg_nowhere' not found/);
    expect((unknown as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[0].id');
    const stranger = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-someone-else', maxRetries: 0 });
    const foreign = await stranger.responses
      .create({ model: 'gpt-4o-mini', input: [{ type: 'item_reference', id: said?.id as string }] })
      .catch((error: unknown) => error);
    expect(foreign).toBeInstanceOf(OpenAI.BadRequestError);
    expect((foreign as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[0].id');
  });

  it('resolves an item_reference to an input item the client read from input_items, for its tenant only', async () => {
    fake.setDefault({ content: 'Noted.' });
    const first = await client().responses.create({
      model: 'gpt-4o-mini',
      input: [
        { role: 'user', content: 'The deploy window is Tuesday 14:00.' },
        { role: 'user', content: 'The on-call engineer is Priya.' },
      ],
    });
    const listed = await client().responses.inputItems.list(first.id);
    const onCall = listed.data.find(
      (item) => item.type === 'message' && JSON.stringify(item.content).includes('Priya'),
    );
    // Named after its response: msg_, the response id's 48 hex digits and 8 for its position.
    expect(onCall?.id).toBe(`msg_${first.id.slice('resp_'.length)}00000001`);
    fake.setDefault({ content: 'Priya.' });
    const before = fake.chatRequests.length;
    await client().responses.create({
      model: 'gpt-4o-mini',
      input: [
        { type: 'item_reference', id: onCall?.id as string },
        { role: 'user', content: 'Who is on call?' },
      ],
    });
    expect(sentMessages(before)).toEqual([
      { role: 'user', content: 'The on-call engineer is Priya.' },
      { role: 'user', content: 'Who is on call?' },
    ]);
    const stranger = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-someone-else', maxRetries: 0 });
    const foreign = await stranger.responses
      .create({ model: 'gpt-4o-mini', input: [{ type: 'item_reference', id: onCall?.id as string }] })
      .catch((error: unknown) => error);
    expect(foreign).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('stores a response from the client’s bytes, and reads it back as it was sent: chain and input items', async () => {
    fake.setDefault({ content: 'Noted.' });
    const input = [
      { role: 'user', content: 'Le café est prêt.' },
      { type: 'function_call', call_id: 'call_cafe', name: 'brew', arguments: '{"kind":"café"}' },
      { type: 'function_call_output', call_id: 'call_cafe', output: 'Brewed: café "noir".' },
    ];
    const body = JSON.stringify({ model: 'gpt-4o-mini', input }, null, 2).replace(/é/g, '\\u00e9');
    const first = await fetch(`${harness.baseUrl}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-responses' },
      body,
    });
    expect(first.status).toBe(200);
    const { id } = (await first.json()) as { id: string };
    const items = await client().responses.inputItems.list(id, { order: 'asc' });
    expect(items.data.map((item) => ({ ...item, id: undefined }))).toEqual([
      { id: undefined, type: 'message', role: 'user', content: 'Le café est prêt.' },
      { id: undefined, ...input[1] },
      { id: undefined, ...input[2] },
    ]);
    const before = fake.chatRequests.length;
    await client().responses.create({ model: 'gpt-4o-mini', previous_response_id: id, input: 'Et après?' });
    expect(sentMessages(before)).toEqual([
      { role: 'user', content: 'Le café est prêt.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_cafe', type: 'function', function: { name: 'brew', arguments: '{"kind":"café"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_cafe', content: 'Brewed: café "noir".' },
      // The provider's reply as it came.
      expect.objectContaining({ role: 'assistant', content: 'Noted.' }),
      { role: 'user', content: [{ type: 'text', text: 'Et après?' }] },
    ]);
  });

  it('keeps each long text of a stored response once in Redis, and gives every one back whole', async () => {
    // An agent's turn as the AI SDK and Codex send it: a user message of one text part, a tool call and
    // the file it read, a plain message; and a long answer. Each text is in the chat messages a chain
    // sends again and in the input items (or the output) the API lists: Redis need hold it only once.
    const marked = (name: string) => `${name} ${randomUUID()}: "quoted", café,\n${prose(150, name.length)}`;
    const [asked, file, plain, answer] = ['asked', 'file', 'plain', 'answer'].map(marked) as [
      string,
      string,
      string,
      string,
    ];
    fake.setDefault({ content: answer });
    const input = [
      { role: 'user' as const, content: [{ type: 'input_text' as const, text: asked }] },
      {
        type: 'function_call' as const,
        call_id: 'call_read',
        name: 'read_file',
        arguments: '{"path":"a.md"}',
      },
      { type: 'function_call_output' as const, call_id: 'call_read', output: file },
      { role: 'user' as const, content: plain },
    ];
    const first = await client().responses.create({ model: 'gpt-4o-mini', input });
    const redis = new Redis(inject('redisUrl'));
    try {
      const keys = await redis.keys(`ctxgate:resp:*:${first.id}*`);
      const values = (await redis.mget(...keys)).join('\n');
      for (const text of [asked, file, plain, answer])
        expect(values.split(JSON.stringify(text).slice(1, -1)).length - 1).toBe(1);
    } finally {
      redis.disconnect();
    }
    // Read back whole: the input items, the Response, an item reference to either, and the chain.
    const items = await client().responses.inputItems.list(first.id, { order: 'asc' });
    expect(items.data.map((item) => ({ ...item, id: undefined }))).toEqual([
      { id: undefined, type: 'message', ...input[0] },
      { id: undefined, ...input[1] },
      { id: undefined, ...input[2] },
      { id: undefined, type: 'message', ...input[3] },
    ]);
    expect((await client().responses.retrieve(first.id)).output_text).toBe(answer);
    const said = first.output.find((item) => item.type === 'message');
    const before = fake.chatRequests.length;
    await client().responses.create({
      model: 'gpt-4o-mini',
      store: false,
      input: [
        { type: 'item_reference', id: items.data[1]?.id as string },
        { type: 'item_reference', id: items.data[2]?.id as string },
        { type: 'item_reference', id: said?.id as string },
        { role: 'user', content: 'And?' },
      ],
    });
    expect(sentMessages(before)).toEqual([
      expect.objectContaining({
        role: 'assistant',
        tool_calls: [expect.objectContaining({ id: 'call_read' })],
      }),
      { role: 'tool', tool_call_id: 'call_read', content: file },
      { role: 'assistant', content: [{ type: 'text', text: answer }] },
      { role: 'user', content: 'And?' },
    ]);
    await client().responses.create({ model: 'gpt-4o-mini', previous_response_id: first.id, input: 'Next?' });
    expect(sentMessages(before + 1).slice(0, 5)).toEqual([
      { role: 'user', content: [{ type: 'text', text: asked }] },
      expect.objectContaining({
        role: 'assistant',
        tool_calls: [expect.objectContaining({ id: 'call_read' })],
      }),
      { role: 'tool', tool_call_id: 'call_read', content: file },
      { role: 'user', content: plain },
      expect.objectContaining({ role: 'assistant', content: answer }),
    ]);
  });

  it('keeps a streamed answer once in Redis, and gives it back whole', async () => {
    const answer = `Streamed ${randomUUID()}: "quoted", café, ${prose(120, 7)}`;
    fake.setDefault({ content: answer, chunks: 9 });
    const stream = await client().responses.create({ model: 'gpt-4o-mini', input: 'Tell me.', stream: true });
    let id = '';
    for await (const event of stream) if (event.type === 'response.completed') id = event.response.id;
    const redis = new Redis(inject('redisUrl'));
    try {
      const values = (await redis.mget(...(await redis.keys(`ctxgate:resp:*:${id}*`)))).join('\n');
      expect(values.split(JSON.stringify(answer).slice(1, -1)).length - 1).toBe(1);
    } finally {
      redis.disconnect();
    }
    expect((await client().responses.retrieve(id)).output_text).toBe(answer);
    fake.setDefault({ content: 'ok' });
  });

  it('sends the plain messages it keeps of a shortened input in the client’s own bytes', async () => {
    fake.setDefault({ content: 'Oui.' });
    const before = fake.chatRequests.length;
    // 60 plain messages of ~250 tokens each (over the 8,192-token window), written as some clients
    // write JSON: indented, every é an escape.
    const input = Array.from({ length: 60 }, (_unused, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: `Message ${index}, café: ${prose(200, index)}`,
    }));
    input.push({ role: 'user', content: 'Et le café?' });
    const body = JSON.stringify({ model: 'chain-model', input, store: false }, null, 2).replace(
      /é/g,
      '\\u00e9',
    );
    const response = await fetch(`${harness.baseUrl}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-responses' },
      body,
    });
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('x-context-dropped-messages'))).toBeGreaterThan(0);
    const sent = fake.chatRequests[before];
    // What was kept went as the client wrote it; what was left out is named by the gateway's notice.
    expect(sent?.rawBody).toContain('{\n      "role": "user",\n      "content": "Et le caf\\u00e9?"\n    }');
    expect(sent?.rawBody).toContain('earlier messages of this conversation were omitted');
    const messages = (sent?.body as { messages: ChatMessage[] }).messages;
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'Et le café?' });
    expect(messages.filter((message) => message.content === input[59]?.content)).toHaveLength(1);
  });
});

describe('the AI SDK’s default openai(model) provider (the Responses API)', () => {
  const provider = () => createOpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-responses' });

  it('generates and streams text', async () => {
    fake.setDefault({ content: 'from the responses bridge' });
    const generated = await generateText({ model: provider()('gpt-4o-mini'), prompt: 'Hi', maxRetries: 0 });
    expect(generated.text).toBe('from the responses bridge');
    let streamed = '';
    for await (const part of streamText({ model: provider()('gpt-4o-mini'), prompt: 'Hi', maxRetries: 0 })
      .textStream)
      streamed += part;
    expect(streamed).toBe('from the responses bridge');
  });

  it('holds a three-turn conversation whose earlier answers it sends as item references', async () => {
    const messages: ModelMessage[] = [];
    const answers = ['First: Larkspur.', 'Second: Juniper.', 'Both: Larkspur and Juniper.'];
    const seen: ChatMessage[][] = [];
    for (const [turn, answer] of answers.entries()) {
      fake.setDefault({ content: answer });
      messages.push({ role: 'user', content: `Turn ${turn + 1}: name a code word.` });
      const before = fake.chatRequests.length;
      const result = await generateText({ model: provider()('gpt-4o-mini'), messages, maxRetries: 0 });
      expect(result.text).toBe(answer);
      const sent = (result.request.body as { input: Array<{ type?: string }> }).input;
      // The SDK sent its earlier answers by reference, not as text.
      expect(sent.filter((item) => item.type === 'item_reference')).toHaveLength(turn);
      seen.push(sentMessages(before));
      messages.push(...result.response.messages);
    }
    // The third request carried both earlier answers' text to the model.
    expect(
      seen[2]?.filter((message) => message.role === 'assistant').map((message) => message.content),
    ).toEqual([[{ type: 'text', text: 'First: Larkspur.' }], [{ type: 'text', text: 'Second: Juniper.' }]]);
  });

  it('runs a tool', async () => {
    fake.enqueue({ toolCalls: [{ id: 'call_sdk1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] });
    fake.setDefault({ content: 'Cold in Oslo.' });
    const result = await generateText({
      model: provider()('gpt-4o-mini'),
      prompt: 'Weather in Oslo?',
      maxRetries: 0,
      tools: {
        get_weather: tool({
          description: 'The weather in a city.',
          inputSchema: jsonSchema<{ city: string }>({
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          }),
          execute: async ({ city }) => `cold in ${city}`,
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(result.text).toBe('Cold in Oslo.');
  });
});

describe('LangChain’s ChatOpenAI with useResponsesApi', () => {
  it('runs a 30-step tool loop of ~1,500-token results on an 8,192-token model, no truncation passed', async () => {
    const steps = 30;
    fake.enqueue(
      ...Array.from({ length: steps - 1 }, (_unused, index) => ({
        toolCalls: [{ id: `call_lc_${index + 1}`, name: 'read_page', arguments: `{"page":${index + 1}}` }],
      })),
    );
    fake.setDefault({ content: 'All pages read.' });
    const model = new ChatOpenAI({
      model: 'chain-model',
      apiKey: 'sk-responses',
      maxRetries: 0,
      useResponsesApi: true,
      configuration: { baseURL: harness.baseUrl },
    }).bindTools([
      {
        type: 'function',
        function: {
          name: 'read_page',
          description: 'Reads one page of the log.',
          parameters: { type: 'object', properties: { page: { type: 'number' } }, required: ['page'] },
        },
      },
    ]);
    const history: BaseMessage[] = [new HumanMessage('Read the log page by page, then say so.')];
    let answer: AIMessage | undefined;
    for (let step = 1; step <= steps; step++) {
      answer = (await model.invoke(history)) as AIMessage;
      history.push(answer);
      for (const call of answer.tool_calls ?? [])
        history.push(new ToolMessage({ content: prose(1_500, step), tool_call_id: call.id ?? '' }));
    }
    expect(answer?.tool_calls ?? []).toEqual([]);
    expect(answer?.text).toBe('All pages read.');
    // The whole history (~45,000 tokens) was sent each time and fitted by the gateway.
    expect(
      Math.max(...fake.chatRequests.slice(-steps).map((request) => request.promptTokens ?? 0)),
    ).toBeLessThanOrEqual(window);
  });
});
