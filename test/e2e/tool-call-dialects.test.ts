// End to end: tool calls as OpenAI-compatible servers give them, not as OpenAI does
// (docs/budgeting.md#tool-calls-as-providers-give-them). SGLang, Cloudflare Workers AI and OpenCode's Zen
// gateway stream each continuation delta of a call with `id`, `type` and `function.name` repeated as null
// (sgl-project/sglang#35542, anomalyco/opencode#43328); llama-server builds of March 2026 gave a whole
// answer's arguments as the decoded object (ggml-org/llama.cpp#20198, `--tool-args-object` since)
// (calls without ids: tool-call-ids.test.ts). Through
// the official OpenAI and Anthropic clients, with a strict fake that refuses a call sent back with an id,
// name or arguments that are not text: a session's loop goes on with each call as the model made it, and
// every API the gateway speaks gives the call's arguments as its own shape says.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGatewayOn } from '../helpers/start-gateway.js';

/** A model as SGLang serves it (null-padded continuation deltas). */
const sglang = 'Qwen/Qwen3-Coder-30B-A3B-Instruct';
/** A model as llama-server with object arguments serves it. */
const llama = 'qwen3-coder-30b-a3b-instruct-q4_k_m.gguf';

/** A model served as Kimi K2 is: its own kind of tool call ids, and none other in its history. */
const kimi = 'moonshotai/kimi-k2.7';

/** Models whose streamed calls depart from OpenAI's deltas, each as FakeUpstream's toolDeltaDialects says. */
const dialects = {
  // Gemini's OpenAI-compatible endpoint: parallel calls all at index 0.
  'gemini-3-flash-preview': 'same-index',
  // MiniMax on NVIDIA NIM: the id, type and whole name on every delta.
  'minimaxai/minimax-m2.7': 'repeated-fields',
  // A gateway that translates Bedrock's answers: each call whole, without an index.
  'bedrock-claude-via-gateway': 'indexless-whole',
  // Gemini (continuedev/continue#5849) and Mistral (openclaw/openclaw#130532): a name in pieces, as
  // arguments are streamed ('edit_ex', 'isting_file').
  'mistral-medium-latest': 'name-in-pieces',
} as const;

/** A model whose answers finish as `stop`, its calls' too (Gemini's OpenAI-compatible endpoint, LiteLLM). */
const saysStop = 'gemini-3-flash-via-litellm';
/** A model whose answers finish as `tool_calls`, its text's too (a proxy before Claude). */
const saysCalls = 'sonnet-via-proxy';
/** A model as OpenVINO's model server streams it: chunks without an id (openvinotoolkit/model_server#3553). */
const openvino = 'OpenVINO/Qwen3-8B-int4-ov';
/** A model as OpenCode's Zen streams it: a last event of its cost alone, without an id (anomalyco/opencode#39061). */
const zen = 'opencode/kimi-k2.6';
/** A model as MiniMax's API streams it: `role: ""` on every delta (Th0rgal/sandboxed.sh#143). */
const emptyRoles = 'MiniMax-M2.5';
/** A model whose stream's usage chunk has no `choices` (Vercel's v0 API: vercel/ai#7417). */
const bareUsage = 'v0-1.5-lg';
/** A model answered as GitHub Copilot's API answers: an id, but no `object` or `created` (0xPlaygrounds/rig#1451). */
const copilot = 'copilot/gpt-4.1';
/** A model streamed as Cloudflare Workers AI streams it: choices without their index (vercel/ai#4031). */
const workersAi = '@cf/meta/llama-3.1-8b-instruct-fast';
/** A model whose stream says `finish_reason: ""` before its last chunk (SGLang 0.4.3: sgl-project/sglang#3912). */
const saysBlank = 'deepseek-r1:70b';
/** A model whose stream says `finish_reason: "null"` (KoboldCpp: PowerShell/AIShell#350), its whole answer none. */
const saysNull = 'koboldcpp/Mistral-Small-24B';
/** A model whose stream says `finish_reason: "None"` on every chunk (SGLang of August 2024: vercel/ai#2548). */
const saysNone = 'sglang-2024/Qwen2-72B-Instruct';
/** A model whose answers finish as `eos` (Together's open models: vespa-engine/vespa#33327). */
const saysEos = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    nullPaddedToolDeltas: [sglang],
    decodedToolArguments: [llama],
    toolDeltaDialects: dialects,
    kimiToolCallIds: [kimi],
    finishReasons: { [saysStop]: 'stop', [saysCalls]: 'tool_calls', [saysEos]: 'eos' },
    idlessChunks: [openvino],
    costChunks: [zen],
    emptyRoles: [emptyRoles],
    usageWithoutChoices: [bareUsage],
    noCreated: [copilot],
    choicesWithoutIndex: [workersAi],
    blankFinishes: { [saysBlank]: '', [saysNull]: 'null', [saysNone]: 'None' },
  });
  harness = await startGatewayOn(fake, inject('redisUrl'));
});
// Each test its own answers: one that failed leaves none queued for the next.
beforeEach(() => fake.clearQueue());
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-dialects', maxRetries: 0, defaultHeaders: headers });

const weather = { id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris","unit":"C"}' };
const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } } },
    },
  },
];
/** The assistant message with tool calls of a request the provider received. */
const callsSent = (request: { body?: unknown } | undefined) =>
  ((request?.body as { messages?: ChatMessage[] } | undefined)?.messages ?? []).find(
    (message) => (message.tool_calls?.length ?? 0) > 0,
  )?.tool_calls;

describe('a stream whose continuation deltas repeat a call’s id and name as null (SGLang)', () => {
  it("a session's loop sends the call back as the model made it, and the model is shown the result", async () => {
    const chat = client({ 'x-session-id': `sglang-${randomUUID()}` });
    fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C in Paris.' });
    const stream = await chat.chat.completions.create({
      model: sglang,
      stream: true,
      tools,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    });
    // The client reads the deltas as the provider gave them: the id and name on the call's first.
    let callId = '';
    for await (const chunk of stream)
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) callId ||= call.id ?? '';
    expect(callId).toBe(weather.id);
    const since = fake.chatRequests.length;
    const answer = await chat.chat.completions.create({
      model: sglang,
      stream: true,
      tools,
      messages: [{ role: 'tool', tool_call_id: callId, content: '18 °C, clear' }],
    });
    let text = '';
    for await (const chunk of answer) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('It is 18 °C in Paris.');
    const sent = fake.chatRequests[since]?.body as { messages: ChatMessage[] };
    expect(callsSent({ body: sent })).toEqual([
      {
        id: weather.id,
        type: 'function',
        function: { name: weather.name, arguments: weather.arguments },
      },
    ]);
    expect(sent.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: weather.id, content: '18 °C, clear' });
  });
});

describe('a whole answer whose call gives its arguments as an object (llama-server)', () => {
  it('a session answers, gives the arguments as their JSON text, and sends them back as such', async () => {
    const chat = client({ 'x-session-id': `llama-${randomUUID()}` });
    fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C in Paris.' });
    const first = await chat.chat.completions.create({
      model: llama,
      tools,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    });
    const call = first.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.arguments).toBe(weather.arguments);
    const since = fake.chatRequests.length;
    const second = await chat.chat.completions.create({
      model: llama,
      tools,
      messages: [{ role: 'tool', tool_call_id: call.id, content: '18 °C, clear' }],
    });
    expect(second.choices[0]?.message.content).toBe('It is 18 °C in Paris.');
    expect(callsSent(fake.chatRequests[since])?.[0]?.function).toEqual({
      name: weather.name,
      arguments: weather.arguments,
    });
  });

  it('a client that keeps the conversation sends back the call it was given, and is answered', async () => {
    const chat = client();
    fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C in Paris.' });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'What is the weather in Paris?' },
    ];
    const first = await chat.chat.completions.create({ model: llama, tools, messages });
    const reply = first.choices[0]?.message as OpenAI.ChatCompletionMessage;
    const callId = reply.tool_calls?.[0]?.id ?? '';
    messages.push(reply, { role: 'tool', tool_call_id: callId, content: '18 °C, clear' });
    const second = await chat.chat.completions.create({ model: llama, tools, messages });
    expect(second.choices[0]?.message.content).toBe('It is 18 °C in Paris.');
  });

  it('the Responses API gives a function_call item with the arguments as text', async () => {
    fake.enqueue({ toolCalls: [weather] });
    const response = await client().responses.create({
      model: llama,
      store: false,
      input: 'What is the weather in Paris?',
      tools: [{ type: 'function', name: 'get_weather', parameters: null, strict: false }],
    });
    const item = response.output.find((entry) => entry.type === 'function_call');
    expect(item).toMatchObject({ call_id: weather.id, name: weather.name, arguments: weather.arguments });
  });

  it("Anthropic's Messages API gives a tool_use block with the arguments as its input", async () => {
    fake.enqueue({ toolCalls: [weather] });
    const anthropic = new Anthropic({ baseURL: harness.baseUrl.replace(/\/v1$/, ''), apiKey: 'sk-dialects' });
    const message = await anthropic.messages.create({
      model: llama,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: {} } }],
    });
    expect(message.content.find((block) => block.type === 'tool_use')).toMatchObject({
      id: weather.id,
      name: weather.name,
      input: { city: 'Paris', unit: 'C' },
    });
  });
});

describe.each(Object.entries(dialects))('two parallel calls streamed by %s (%s)', (model) => {
  const lyon = { id: 'call_weather_2', name: 'get_weather', arguments: '{"city":"Lyon","unit":"C"}' };
  const made = [weather, lyon];
  const asMade = made.map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));

  it("a session's loop: the client reads each call, and both go back as the model made them", async () => {
    const chat = client({ 'x-session-id': `dialect-${randomUUID()}` });
    fake.enqueue({ toolCalls: made }, { content: 'Paris 18 °C, Lyon 21 °C.' });
    // The official client joins a stream's deltas by their index and takes each name whole.
    const first = await chat.chat.completions
      .stream({ model, tools, messages: [{ role: 'user', content: 'The weather in Paris and in Lyon?' }] })
      .finalChatCompletion();
    expect(first.choices[0]?.message.tool_calls).toEqual(asMade);
    const since = fake.chatRequests.length;
    const answer = await chat.chat.completions.create({
      model,
      tools,
      messages: [
        { role: 'tool', tool_call_id: weather.id, content: 'Paris: 18 °C' },
        { role: 'tool', tool_call_id: lyon.id, content: 'Lyon: 21 °C' },
      ],
    });
    expect(answer.choices[0]?.message.content).toBe('Paris 18 °C, Lyon 21 °C.');
    const sent = (fake.chatRequests[since]?.body as { messages: ChatMessage[] }).messages;
    expect(callsSent({ body: { messages: sent } })).toEqual(asMade);
    expect(sent.slice(-2)).toEqual([
      { role: 'tool', tool_call_id: weather.id, content: 'Paris: 18 °C' },
      { role: 'tool', tool_call_id: lyon.id, content: 'Lyon: 21 °C' },
    ]);
  });

  it('a client that keeps the conversation reads each call, its arguments whole JSON', async () => {
    fake.enqueue({ toolCalls: made });
    const stream = client().chat.completions.stream({
      model,
      tools,
      messages: [{ role: 'user', content: 'The weather in Paris and in Lyon?' }],
    });
    const calls = (await stream.finalChatCompletion()).choices[0]?.message.tool_calls ?? [];
    expect(calls).toEqual(asMade);
  });

  it("the AI SDK's OpenAI-compatible provider runs each call with its input, then answers", async () => {
    fake.enqueue({ toolCalls: made }, { content: 'Paris 18 °C, Lyon 21 °C.' });
    const provider = createOpenAICompatible({
      name: 'gateway',
      baseURL: harness.baseUrl,
      apiKey: 'sk-dialects',
    });
    const ran: unknown[] = [];
    const result = streamText({
      model: provider.chatModel(model),
      prompt: 'The weather in Paris and in Lyon?',
      maxRetries: 0,
      tools: {
        get_weather: tool({
          inputSchema: jsonSchema<{ city: string; unit: string }>({
            type: 'object',
            properties: { city: { type: 'string' }, unit: { type: 'string' } },
          }),
          execute: async (input) => {
            ran.push(input);
            return `${input.city}: ${input.city === 'Paris' ? 18 : 21} °C`;
          },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe('Paris 18 °C, Lyon 21 °C.');
    expect(ran).toEqual(made.map((call) => JSON.parse(call.arguments)));
  });

  it('a Responses stream gives a function_call item for each call, its arguments whole', async () => {
    fake.enqueue({ toolCalls: made });
    const stream = await client().responses.create({
      model,
      stream: true,
      store: false,
      input: 'The weather in Paris and in Lyon?',
      tools: [{ type: 'function', name: 'get_weather', parameters: null, strict: false }],
    });
    let output: OpenAI.Responses.ResponseOutputItem[] = [];
    for await (const event of stream) if (event.type === 'response.completed') output = event.response.output;
    expect(
      output
        .filter((item) => item.type === 'function_call')
        .map(({ call_id, name, arguments: text }) => ({ call_id, name, arguments: text })),
    ).toEqual(made.map((call) => ({ call_id: call.id, name: call.name, arguments: call.arguments })));
  });

  it('a Messages stream gives a tool_use block for each call, with its input', async () => {
    fake.enqueue({ toolCalls: made });
    const anthropic = new Anthropic({ baseURL: harness.baseUrl.replace(/\/v1$/, ''), apiKey: 'sk-dialects' });
    const message = await anthropic.messages
      .stream({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'The weather in Paris and in Lyon?' }],
        tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: {} } }],
      })
      .finalMessage();
    expect(
      message.content
        .filter((block) => block.type === 'tool_use')
        .map(({ id, name, input }) => ({ id, name, input })),
    ).toEqual(made.map((call) => ({ id: call.id, name: call.name, input: JSON.parse(call.arguments) })));
  });
});

describe('a conversation that moves to Kimi K2, whose history holds another model’s tool call ids', () => {
  const mixed: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'user', content: 'What is the weather in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: weather.id, type: 'function', function: { name: weather.name, arguments: weather.arguments } },
      ],
    },
    { role: 'tool', tool_call_id: weather.id, content: '18 °C, clear' },
    { role: 'assistant', content: 'It is 18 °C in Paris.' },
    { role: 'user', content: 'And tomorrow?' },
  ];
  const asKimiTakes = (sent: ChatMessage[]) =>
    sent.flatMap((message) =>
      message.role === 'tool' ? [message.tool_call_id] : (message.tool_calls ?? []).map((call) => call.id),
    );

  it('a session whose client switches to Kimi: Kimi is sent its own kind of ids, and answers', async () => {
    const chat = client({ 'x-session-id': `kimi-${randomUUID()}` });
    fake.enqueue(
      { toolCalls: [weather] },
      { content: 'It is 18 °C in Paris.' },
      { content: 'Tomorrow 20 °C.' },
    );
    await chat.chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [mixed[0] as OpenAI.ChatCompletionMessageParam],
    });
    await chat.chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [{ role: 'tool', tool_call_id: weather.id, content: '18 °C, clear' }],
    });
    const since = fake.chatRequests.length;
    const answer = await chat.chat.completions.create({
      model: kimi,
      tools,
      messages: [{ role: 'user', content: 'And tomorrow?' }],
    });
    expect(answer.choices[0]?.message.content).toBe('Tomorrow 20 °C.');
    const sent = (fake.chatRequests[since]?.body as { messages: ChatMessage[] }).messages;
    expect(asKimiTakes(sent)).toEqual(['functions.get_weather:0', 'functions.get_weather:0']);
  });

  it('a client that keeps the conversation, another model’s ids in it: Kimi is sent its own kind, and answers', async () => {
    fake.enqueue({ content: 'Tomorrow 20 °C.' });
    const since = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: kimi, tools, messages: mixed });
    expect(answer.choices[0]?.message.content).toBe('Tomorrow 20 °C.');
    expect(asKimiTakes((fake.chatRequests[since]?.body as { messages: ChatMessage[] }).messages)).toEqual([
      'functions.get_weather:0',
      'functions.get_weather:0',
    ]);
  });

  it('a history of Kimi’s own ids goes as the client sent it', async () => {
    fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C in Paris.' });
    const chat = client();
    const messages: OpenAI.ChatCompletionMessageParam[] = [mixed[0] as OpenAI.ChatCompletionMessageParam];
    const first = await chat.chat.completions.create({ model: kimi, tools, messages });
    const reply = first.choices[0]?.message as OpenAI.ChatCompletionMessage;
    expect(reply.tool_calls?.[0]?.id).toBe('functions.get_weather:0');
    messages.push(reply, { role: 'tool', tool_call_id: 'functions.get_weather:0', content: '18 °C, clear' });
    const since = fake.chatRequests.length;
    const second = await chat.chat.completions.create({ model: kimi, tools, messages });
    expect(second.choices[0]?.message.content).toBe('It is 18 °C in Paris.');
    expect(asKimiTakes((fake.chatRequests[since]?.body as { messages: ChatMessage[] }).messages)).toEqual([
      'functions.get_weather:0',
      'functions.get_weather:0',
    ]);
  });
});

describe('a finish that does not say what the answer holds', () => {
  // anomalyco/opencode#14972, #20719, vercel/workflow#1387: an agent that reads the finish stopped after its
  // first call; mastra-ai/mastra#14187, open-webui/open-webui#23095: one called the model again and again.
  const weatherTool = tool({
    inputSchema: jsonSchema<{ city: string; unit: string }>({
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string' } },
    }),
    execute: async (input) => `${input.city}: 18 °C`,
  });
  const provider = () =>
    createOpenAICompatible({ name: 'gateway', baseURL: harness.baseUrl, apiKey: 'sk-dialects' });

  it("calls that finish as stop: the AI SDK's step finishes for its tool calls, whole and streamed", async () => {
    fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C in Paris.' });
    const result = streamText({
      model: provider().chatModel(saysStop),
      prompt: 'The weather in Paris?',
      maxRetries: 0,
      tools: { get_weather: weatherTool },
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe('It is 18 °C in Paris.');
    expect((await result.steps).map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    fake.enqueue({ toolCalls: [weather] });
    const whole = await client().chat.completions.create({
      model: saysStop,
      tools,
      messages: [{ role: 'user', content: 'The weather in Paris?' }],
    });
    expect(whole.choices[0]?.finish_reason).toBe('tool_calls');
    expect(whole.choices[0]?.message.tool_calls).toHaveLength(1);
  });

  it('text that finishes as tool_calls: the OpenAI client is told it stopped, whole and streamed', async () => {
    fake.enqueue({ content: 'Hello.' }, { content: 'Hello again.' });
    const whole = await client().chat.completions.create({
      model: saysCalls,
      tools,
      messages: [{ role: 'user', content: 'Hi.' }],
    });
    expect(whole.choices[0]?.finish_reason).toBe('stop');
    const stream = client().chat.completions.stream({
      model: saysCalls,
      tools,
      messages: [{ role: 'user', content: 'Hi.' }],
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.finish_reason).toBe('stop');
    expect(final.choices[0]?.message.content).toBe('Hello again.');
  });

  it('a finish of another server\'s word ("eos"): the AI SDK is told its answer stopped, not "other"', async () => {
    // vercel/workflow#1387: an agent that took "other" for an end it did not know.
    fake.enqueue({ content: 'Hello.' }, { content: 'Hello again.' });
    const result = streamText({ model: provider().chatModel(saysEos), prompt: 'Hi.', maxRetries: 0 });
    expect(await result.text).toBe('Hello.');
    expect(await result.finishReason).toBe('stop');
    const whole = await client().chat.completions.create({
      model: saysEos,
      messages: [{ role: 'user', content: 'Hi.' }],
    });
    expect(whole.choices[0]?.finish_reason).toBe('stop');
  });
});

describe("a stream whose chunks have no id (OpenVINO's model server)", () => {
  // Strict clients refuse a chunk without one: async-openai (64bit/async-openai#408), Spring AI
  // (spring-projects/spring-ai#6928), openai-kotlin.
  it('the client is given one id for every chunk, a call among them', async () => {
    fake.enqueue({ toolCalls: [weather] });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await client().chat.completions.create({
      model: openvino,
      stream: true,
      tools,
      messages: [{ role: 'user', content: 'The weather in Paris?' }],
    }))
      chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    const ids = new Set(chunks.map((chunk) => chunk.id));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^chatcmpl-[\w-]{8,}$/);
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    expect(
      chunks.flatMap((chunk) => chunk.choices[0]?.delta.tool_calls ?? []).map((call) => call.id),
    ).toContain(weather.id);
  });

  it("a stream whose last event is Zen's cost alone: that chunk too has the stream's id, time and model", async () => {
    fake.enqueue({ content: 'Sunny in Paris.', chunks: 3 });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await client().chat.completions.create({
      model: zen,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'The weather in Paris?' }],
    }))
      chunks.push(chunk);
    const [first] = chunks;
    expect(chunks.length).toBeGreaterThan(4);
    expect(first?.id).toMatch(/^chatcmpl-/);
    for (const chunk of chunks) {
      expect(chunk.id).toBe(first?.id);
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.created).toBe(first?.created);
      expect(chunk.model).toBe(zen);
    }
    expect((chunks.at(-1) as unknown as { cost?: unknown }).cost).toBe('0');
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Sunny in Paris.');
  });

  it('a whole answer without an id or a time of its own is given both', async () => {
    fake.enqueue({ content: 'Sunny.' });
    const whole = await client().chat.completions.create({
      model: openvino,
      messages: [{ role: 'user', content: 'The weather in Paris?' }],
    });
    expect(whole.id).toMatch(/^chatcmpl-[\w-]{8,}$/);
    expect(Math.abs(whole.created - Date.now() / 1000)).toBeLessThan(3_600);
    expect(whole.object).toBe('chat.completion');
    expect(whole.choices[0]?.message.content).toBe('Sunny.');
  });
});

describe("chunks a strict client refuses, in OpenAI's shape for the AI SDK's OpenAI provider", () => {
  // The provider validates every chunk: `delta.role` must be "assistant" or absent, `choices` a list. One
  // chunk that is not ends the answer in an error (vercel/ai#7417, Th0rgal/sandboxed.sh#143).
  it.each([
    ['MiniMax\'s `role: ""` on every delta', emptyRoles],
    ["v0's usage chunk without `choices`", bareUsage],
    ["Cloudflare Workers AI's choices without their `index`", workersAi],
  ])('%s: the answer is read whole, its usage too', async (_name, model) => {
    fake.enqueue({ content: 'Sunny in Paris today.', chunks: 4 });
    const provider = createOpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-dialects' });
    const errors: unknown[] = [];
    const result = streamText({
      model: provider.chat(model),
      prompt: 'The weather in Paris?',
      maxRetries: 0,
      onError: ({ error }) => {
        errors.push(error);
      },
    });
    expect(await result.text).toBe('Sunny in Paris today.');
    expect(errors).toEqual([]);
    expect(await result.finishReason).toBe('stop');
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
  });
});

describe('a whole answer with an id but no time (GitHub Copilot, Azure-flavored endpoints)', () => {
  // Strict clients refuse it: Spring AI (spring-projects/spring-ai#6010), rig (0xPlaygrounds/rig#1451),
  // Koog; the AI SDK 6.0.86 behind a proxy that left it out threw "Invalid time value" (0xzr/freellmpool#112).
  it('the client is given its `object` and a `created`, its id as it came', async () => {
    fake.enqueue({ content: 'Reviewed.' });
    const { data, response } = await client()
      .chat.completions.create({ model: copilot, messages: [{ role: 'user', content: 'Review this.' }] })
      .withResponse();
    const raw = data as unknown as Record<string, unknown>;
    expect(raw.object).toBe('chat.completion');
    expect(typeof raw.created).toBe('number');
    expect(Math.abs(Number(raw.created) - Date.now() / 1000)).toBeLessThan(3_600);
    expect(data.id).toMatch(/^chatcmpl-/);
    expect(data.choices[0]?.message.content).toBe('Reviewed.');
    expect(response.status).toBe(200);
  });
});

describe('a stream that says a finish of "", "null" or "None" before its last chunk (SGLang, Ollama 2024, KoboldCpp)', () => {
  // Strongly typed clients refuse either ("Unknown ChatFinishReason value.": openai/openai-dotnet#389;
  // async-openai, sgl-project/sglang#3912), and every reader of the stream took the first chunk's as the
  // answer's end: a stream cut after it passed for a whole answer.
  it.each([saysBlank, saysNull, saysNone])(
    '%s: every chunk but the last says null, the last says stop, as OpenAI streams',
    async (model) => {
      fake.enqueue({ content: 'One two three four.', chunks: 4 });
      const finishes: unknown[] = [];
      for await (const chunk of await client().chat.completions.create({
        model,
        stream: true,
        messages: [{ role: 'user', content: 'Count.' }],
      }))
        finishes.push(chunk.choices[0]?.finish_reason);
      expect(finishes.length).toBeGreaterThan(4);
      expect(finishes.slice(0, -1).every((finish) => finish === null)).toBe(true);
      expect(finishes.at(-1)).toBe('stop');
    },
  );

  it.each([saysBlank, saysNone])(
    "%s, ended before its finish in a session: the client's stream fails, and the session keeps no half answer",
    async (model) => {
      const sessionId = `sglang-old-${randomUUID()}`;
      const chat = client({ 'x-session-id': sessionId });
      fake.enqueue({ content: 'One two three four five six.', chunks: 6, endAfterChunks: 3 });
      await expect(
        (async () => {
          for await (const _chunk of await chat.chat.completions.create({
            model,
            stream: true,
            messages: [{ role: 'user', content: 'Count.' }],
          })) {
            // drain
          }
        })(),
      ).rejects.toThrow();
      const response = await fetch(`${harness.baseUrl}/sessions/${sessionId}/history?limit=100`, {
        headers: { authorization: 'Bearer sk-dialects' },
      });
      const stored = ((await response.json()) as { data?: Array<{ role: string }> }).data ?? [];
      expect(stored.filter((message) => message.role === 'assistant')).toEqual([]);
    },
  );

  it('a whole answer that says no finish is given stop, and tool_calls beside calls', async () => {
    fake.enqueue({ content: 'Sunny.' }, { toolCalls: [weather] });
    const text = await client().chat.completions.create({
      model: saysNull,
      messages: [{ role: 'user', content: 'The weather in Paris?' }],
    });
    expect(text.choices[0]?.finish_reason).toBe('stop');
    const calls = await client().chat.completions.create({
      model: saysNull,
      tools,
      messages: [{ role: 'user', content: 'The weather in Paris?' }],
    });
    expect(calls.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it("a Responses client's stream ended before its finish is not a completed response", async () => {
    fake.enqueue({ content: 'One two three four five six.', chunks: 6, endAfterChunks: 3 });
    const types: string[] = [];
    await client()
      .responses.create({ model: saysBlank, input: 'Count.', store: false, stream: true })
      .then(async (stream) => {
        for await (const event of stream) types.push(event.type);
      })
      .catch(() => undefined);
    expect(types).not.toContain('response.completed');
  });
});
