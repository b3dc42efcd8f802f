// End to end: streams whose every delta is the whole text so far. DashScope's Coding Plan paths and
// QwenLM's chat API stream `delta.content` (and `reasoning_content`) as everything written until then, not
// what is new (QwenLM/qwen-code#3896, CherryHQ/cherry-studio#833): every client that joins deltas, as
// OpenAI's stream contract says to, showed each prefix again (a table ~14 times over), and a session
// stored that as the answer and sent it back on every later turn. Through the official OpenAI, AI SDK and
// Anthropic clients, against a fake that streams as those providers do: each client reads the answer
// once, and the session keeps it once.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGateway } from '../helpers/start-gateway.js';

/** A model streamed as DashScope's Coding Plan paths stream it: each delta the whole text so far. */
const cumulative = 'qwen3.6-coder-plus';
/** The same model thinking first, its reasoning streamed the same way. */
const thinking = 'qwen3.6-plus-thinking';
/** A model whose calls' arguments are streamed each whole so far, then whole again (DeepSeek, Baidu Qianfan). */
const qianfan = 'ernie-5.0-thinking';
/** A model streamed as OpenAI streams it. */
const incremental = 'qwen3.6-coder-flash';

const table = [
  'Here is a Flowchart Syntax Reference:',
  '| Syntax | Meaning |',
  '|---|---|',
  '| `flowchart TD` | Direction |',
  '| `A[Text]` | Node |',
  '| `A --> B` | Link |',
].join('\n');

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    cumulativeDeltas: [cumulative, thinking],
    thinking: [thinking],
    cumulativeArguments: [qianfan],
  });
  harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
});
beforeEach(() => fake.clearQueue());
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-cumulative', maxRetries: 0, defaultHeaders: headers });

/** What the OpenAI client's deltas join to, as every client joins them. */
async function joined(model: string, headers: Record<string, string> = {}, question = 'Flowchart syntax?') {
  let text = '';
  for await (const chunk of await client(headers).chat.completions.create({
    model,
    stream: true,
    messages: [{ role: 'user', content: question }],
  }))
    text += chunk.choices[0]?.delta.content ?? '';
  return text;
}

describe('a chat stream whose deltas repeat the text so far', () => {
  it('the OpenAI client joins its deltas to the answer, once', async () => {
    fake.enqueue({ content: table, chunks: 8 });
    expect(await joined(cumulative)).toBe(table);
  });

  it('a session keeps the answer once, and sends it back once', async () => {
    const headers = { 'x-session-id': `dashscope-${randomUUID()}` };
    fake.enqueue({ content: table, chunks: 8 }, { content: 'Yes.', chunks: 2 });
    await joined(cumulative, headers);
    const since = fake.chatRequests.length;
    expect(await joined(cumulative, headers, 'Is that all?')).toBe('Yes.');
    const sent = (fake.chatRequests[since]?.body as { messages: ChatMessage[] }).messages;
    expect(sent.filter((message) => message.role === 'assistant').map((message) => message.content)).toEqual([
      table,
    ]);
  });

  it("the AI SDK's text and reasoning are each the model's, once", async () => {
    fake.enqueue({ content: table, chunks: 6 });
    const provider = createOpenAICompatible({ name: 'dashscope', baseURL: harness.baseUrl, apiKey: 'sk-c' });
    const result = streamText({ model: provider(thinking), prompt: 'Flowchart syntax?', maxRetries: 0 });
    expect(await result.text).toBe(table);
    expect(await result.reasoningText).toBe(`Thinking before answer ${fake.chatRequests.length}.`);
  });

  it('a stream as OpenAI streams it goes as it came, a delta that repeats a short one kept', async () => {
    fake.enqueue({ content: 'hahaha', chunks: 3 }, { content: table, chunks: 8 });
    expect(await joined(incremental)).toBe('hahaha');
    expect(await joined(incremental)).toBe(table);
  });
});

describe('the bridges, before such a provider', () => {
  it("a Responses client's output text is the answer, once", async () => {
    fake.enqueue({ content: table, chunks: 8 });
    let text = '';
    for await (const event of await client().responses.create({
      model: cumulative,
      input: 'Flowchart syntax?',
      store: false,
      stream: true,
    }))
      if (event.type === 'response.output_text.delta') text += event.delta;
    expect(text).toBe(table);
  });

  it("an Anthropic client's text is the answer, once", async () => {
    fake.enqueue({ content: table, chunks: 8 });
    const anthropic = new Anthropic({
      baseURL: harness.baseUrl.replace(/\/v1$/, ''),
      apiKey: 'sk-cumulative',
      maxRetries: 0,
    });
    const stream = anthropic.messages.stream({
      model: cumulative,
      max_tokens: 512,
      messages: [{ role: 'user', content: 'Flowchart syntax?' }],
    });
    const message = await stream.finalMessage();
    expect(message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')).toBe(table);
  });
});

describe("a stream whose calls' arguments repeat them so far", () => {
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

  it("the OpenAI client's call has the model's arguments, and a session sends them back so", async () => {
    const headers = { 'x-session-id': `qianfan-${randomUUID()}` };
    fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C.' });
    const stream = client(headers).chat.completions.stream({
      model: qianfan,
      tools,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const call = (await stream.finalChatCompletion()).choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function.arguments : undefined).toBe(weather.arguments);
    const since = fake.chatRequests.length;
    await client(headers).chat.completions.create({
      model: qianfan,
      tools,
      messages: [{ role: 'tool', tool_call_id: call?.id ?? '', content: '18 °C' }],
    });
    const sent = (fake.chatRequests[since]?.body as { messages: ChatMessage[] }).messages;
    expect(
      sent.flatMap((message) => message.tool_calls ?? []).map((entry) => entry.function?.arguments),
    ).toEqual([weather.arguments]);
  });

  it('the AI SDK runs the tool with the arguments the model gave', async () => {
    fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C.' });
    const provider = createOpenAICompatible({ name: 'qianfan', baseURL: harness.baseUrl, apiKey: 'sk-c' });
    const inputs: unknown[] = [];
    const result = streamText({
      model: provider(qianfan),
      prompt: 'Weather in Paris?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        get_weather: tool({
          inputSchema: jsonSchema<{ city: string; unit: string }>({
            type: 'object',
            properties: { city: { type: 'string' }, unit: { type: 'string' } },
          }),
          execute: async (input) => {
            inputs.push(input);
            return '18 °C';
          },
        }),
      },
    });
    expect(await result.text).toBe('It is 18 °C.');
    expect(inputs).toEqual([{ city: 'Paris', unit: 'C' }]);
  });
});
