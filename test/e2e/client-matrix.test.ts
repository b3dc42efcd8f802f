// The clients people point at the gateway, unchanged (issue "Every client"): the official `openai`
// client, LangChain's ChatOpenAI and the Vercel AI SDK with both of its OpenAI providers. Each does a
// chat, a stream, a tool round trip and a session turn, and meets each error the gateway answers itself;
// the assertions are what its user sees: the error class, the status and the message.
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ContextOverflowError } from '@langchain/core/errors';
import { HumanMessage, ToolMessage, type AIMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool, type LanguageModel } from 'ai';
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, gate } from '../helpers/fake-upstream.js';
import { findFreePort } from '../helpers/redis-server.js';
import { prose } from '../helpers/text.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const key = 'gk-matrix';
const weatherTool = {
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: {
    type: 'object' as const,
    properties: { city: { type: 'string' as const } },
    required: ['city'],
  },
};

/** What a user of the client sees when a call fails. */
interface Seen {
  /** The error's class name (ContextOverflowError, BadRequestError, AI_APICallError…). */
  kind: string;
  status: number | undefined;
  message: string;
}

interface Client {
  chat(prompt: string): Promise<string>;
  stream(prompt: string): Promise<string>;
  /** Asks for the weather; the model calls the tool, the client answers it, the model replies. */
  toolRoundTrip(): Promise<string>;
  failure(prompt: string, model?: string): Promise<Seen>;
}

type Options = { baseURL: string; apiKey?: string; session?: string };

function seen(error: unknown): Seen {
  const value = error as {
    name?: string;
    constructor: { name: string };
    status?: number;
    statusCode?: number;
    message: string;
  };
  return {
    kind: value instanceof ContextOverflowError ? 'ContextOverflowError' : value.constructor.name,
    status: value.status ?? value.statusCode ?? (value as { cause?: { status?: number } }).cause?.status,
    message: value.message,
  };
}

async function failureOf(call: () => Promise<unknown>): Promise<Seen> {
  try {
    await call();
  } catch (error) {
    return seen(error);
  }
  throw new Error('the call was expected to fail');
}

function openaiClient({ baseURL, apiKey = key, session }: Options): Client {
  const client = new OpenAI({
    baseURL,
    apiKey,
    maxRetries: 0,
    defaultHeaders: session === undefined ? {} : { 'x-session-id': session },
  });
  const ask = (content: string, model = 'gpt-4o-mini') =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content }] });
  return {
    chat: async (prompt) => (await ask(prompt)).choices[0]?.message.content ?? '',
    async stream(prompt) {
      let text = '';
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: prompt }],
        stream: true,
      });
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    },
    async toolRoundTrip() {
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
      const tools = [{ type: 'function' as const, function: weatherTool }];
      const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
      const call = first.choices[0]?.message.tool_calls?.[0];
      if (call === undefined || call.type !== 'function') throw new Error('no tool call');
      messages.push(first.choices[0]?.message as OpenAI.ChatCompletionMessageParam, {
        role: 'tool',
        tool_call_id: call.id,
        content: 'sunny',
      });
      const second = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
      return second.choices[0]?.message.content ?? '';
    },
    failure: (prompt, model) => failureOf(() => ask(prompt, model)),
  };
}

function langchainClient({ baseURL, apiKey = key, session }: Options): Client {
  const model = (name = 'gpt-4o-mini') =>
    new ChatOpenAI({
      model: name,
      apiKey,
      maxRetries: 0,
      configuration: { baseURL, defaultHeaders: session === undefined ? {} : { 'x-session-id': session } },
    });
  return {
    chat: async (prompt) => String((await model().invoke([new HumanMessage(prompt)])).content),
    async stream(prompt) {
      let text = '';
      for await (const chunk of await model().stream([new HumanMessage(prompt)]))
        text += String(chunk.content);
      return text;
    },
    async toolRoundTrip() {
      const withTools = model().bindTools([{ type: 'function', function: weatherTool }]);
      const question = new HumanMessage('Weather in Paris?');
      const first = (await withTools.invoke([question])) as AIMessage;
      const call = first.tool_calls?.[0];
      if (call?.id === undefined) throw new Error('no tool call');
      const second = await withTools.invoke([
        question,
        first,
        new ToolMessage({ content: 'sunny', tool_call_id: call.id }),
      ]);
      return String(second.content);
    },
    failure: (prompt, name) => failureOf(() => model(name).invoke([new HumanMessage(prompt)])),
  };
}

function aiSdkClient(provider: (name: string) => LanguageModel): Client {
  return {
    chat: async (prompt) =>
      (await generateText({ model: provider('gpt-4o-mini'), prompt, maxRetries: 0 })).text,
    async stream(prompt) {
      let text = '';
      const result = streamText({ model: provider('gpt-4o-mini'), prompt, maxRetries: 0 });
      for await (const part of result.textStream) text += part;
      return text;
    },
    async toolRoundTrip() {
      const result = await generateText({
        model: provider('gpt-4o-mini'),
        prompt: 'Weather in Paris?',
        maxRetries: 0,
        tools: {
          get_weather: tool({
            description: weatherTool.description,
            inputSchema: jsonSchema<{ city: string }>(weatherTool.parameters),
            execute: async () => 'sunny',
          }),
        },
        stopWhen: stepCountIs(3),
      });
      return result.text;
    },
    failure: (prompt, name = 'gpt-4o-mini') =>
      failureOf(() => generateText({ model: provider(name), prompt, maxRetries: 0 })),
  };
}

const clients: Array<[string, (options: Options) => Client]> = [
  ['openai', openaiClient],
  ['langchain', langchainClient],
  [
    'ai-sdk openai',
    ({ baseURL, apiKey = key, session }) => {
      const provider = createOpenAI({
        baseURL,
        apiKey,
        headers: session === undefined ? {} : { 'x-session-id': session },
      });
      return aiSdkClient((name) => provider.chat(name));
    },
  ],
  [
    'ai-sdk openai-compatible',
    ({ baseURL, apiKey = key, session }) => {
      const provider = createOpenAICompatible({
        name: 'ctxgate',
        baseURL,
        apiKey,
        headers: session === undefined ? {} : { 'x-session-id': session },
      });
      return aiSdkClient((name) => provider.chatModel(name));
    },
  ],
];

/** The class each client's user catches, by status: the OpenAI SDK's, LangChain's, the AI SDK's. */
function expectedKind(client: string, status: number): string {
  if (client.startsWith('ai-sdk')) return 'APICallError';
  if (client === 'langchain' && status === 400) return 'ContextOverflowError';
  const openaiClasses: Record<number, string> = {
    400: 'BadRequestError',
    401: 'AuthenticationError',
    409: 'ConflictError',
    429: 'RateLimitError',
    502: 'InternalServerError',
  };
  return openaiClasses[status] ?? 'unknown';
}

let fake: FakeUpstream;
let harness: GatewayHarness;
let unreachable: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({ windows: { 'tiny-model': 2_000 } });
  const env = { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl'), GATEWAY_API_KEYS: key };
  harness = await startGateway({
    env,
    configYaml: [
      'models:',
      '  - match: tiny-model',
      '    window: 2000',
      '    output_reserve: 200',
      'sessions:',
      '  busy_wait_ms: 200',
      'budgets:',
      '  defaults:',
      '    max_request_tokens: { limit: 20000, mode: hard }',
      '',
    ].join('\n'),
  });
  unreachable = await startGateway({
    env: { ...env, UPSTREAM_BASE_URL: `http://127.0.0.1:${await findFreePort()}/v1` },
  });
  await waitUntilReady(harness);
  await waitUntilReady(unreachable);
});

afterAll(async () => {
  await harness.close();
  await unreachable.close();
  await fake.stop();
});

describe.each(clients)('%s through the gateway', (name, make) => {
  const client = () => make({ baseURL: harness.baseUrl });

  it('chats and streams', async () => {
    fake.setDefault({ content: 'hello from the model' });
    expect(await client().chat('Hi!')).toBe('hello from the model');
    expect(await client().stream('Hi again!')).toBe('hello from the model');
  });

  it('does a tool round trip', async () => {
    fake.clearQueue();
    fake.enqueue({
      toolCalls: [
        { id: `call_${randomUUID().slice(0, 8)}`, name: 'get_weather', arguments: '{"city":"Paris"}' },
      ],
    });
    fake.setDefault({ content: 'It is sunny in Paris.' });
    expect(await client().toolRoundTrip()).toBe('It is sunny in Paris.');
  });

  it('keeps a session: the second turn reaches the model with the first', async () => {
    const session = make({ baseURL: harness.baseUrl, session: `matrix-${randomUUID()}` });
    fake.setDefault({ content: 'noted' });
    await session.chat('My name is Ada.');
    const before = fake.chatRequests.length;
    await session.chat('What is my name?');
    const sent = fake.chatRequests[before]?.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(sent.messages[0]?.content)).toContain('My name is Ada.');
  });

  it('sees a turn too big for the window as a context overflow (400 context_length_exceeded)', async () => {
    const error = await client().failure(prose(5_000, 1), 'tiny-model');
    expect(error.status).toBe(400);
    expect(error.kind).toBe(expectedKind(name, 400));
    expect(error.message).toMatch(/maximum context length is 2000 tokens/);
  });

  it('sees a wrong key as 401', async () => {
    const error = await make({ baseURL: harness.baseUrl, apiKey: 'gk-wrong' }).failure('Hi');
    expect(error.status).toBe(401);
    expect(error.kind).toBe(expectedKind(name, 401));
    expect(error.message).toMatch(/API key/i);
  });

  it('sees a used-up budget as 429', async () => {
    const error = await client().failure(prose(25_000, 2));
    expect(error.status).toBe(429);
    expect(error.kind).toBe(expectedKind(name, 429));
    expect(error.message).toMatch(/budget/i);
  });

  it('is not retried into a used-up budget by the OpenAI SDK (x-should-retry: false)', async () => {
    if (name !== 'openai') return;
    const refusals = async () => {
      const text = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
      return Number(
        /ctxgate_budget_refusals_total\{budget="max_request_tokens"\} (\d+)/.exec(text)?.[1] ?? 0,
      );
    };
    const before = await refusals();
    const retrying = new OpenAI({ baseURL: harness.baseUrl, apiKey: key, maxRetries: 2 });
    const error = await retrying.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: prose(25_000, 3) }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((await refusals()) - before).toBe(1);
  });

  it('sees a session held past the wait as 409', async () => {
    const id = `busy-${randomUUID()}`;
    const answerFirst = gate();
    fake.enqueue({ answerWhen: answerFirst.opened, content: 'slow' });
    const first = make({ baseURL: harness.baseUrl, session: id }).chat(`first of ${id}`);
    // The first holds the session until the test lets the upstream answer it.
    await fake.chatRequestHolding(`first of ${id}`);
    const error = await make({ baseURL: harness.baseUrl, session: id }).failure('second');
    answerFirst.open();
    await first;
    expect(error.status).toBe(409);
    expect(error.kind).toBe(expectedKind(name, 409));
    expect(error.message).toMatch(/held this session/);
  });

  it('sees an unreachable upstream as 502', async () => {
    const error = await make({ baseURL: unreachable.baseUrl }).failure('Hi');
    expect(error.status).toBe(502);
    expect(error.kind).toBe(expectedKind(name, 502));
    expect(error.message).toMatch(/Upstream could not be reached/);
  });
});
