// End to end: a forced tool choice to a model that thinks on every request and then takes none — DeepSeek
// V4 ("Thinking mode does not support this tool_choice": deepseek-ai/DeepSeek-V3#1376) and Qwen on Alibaba
// DashScope ("The tool_choice parameter does not support being set to required or object in thinking
// mode": cloudwego/eino#994). Agent frameworks force one for structured output and to make an agent act
// (LangChain's withStructuredOutput, the Agents SDK's and the AI SDK's `required`), and every such request
// failed. Each is answered after one refusal, with the choice left to the model (a named tool offered
// alone), and the model's next request goes at once (docs/budgeting.md#refused-fields). And a temperature
// the model holds at one value (Kimi's thinking models: "invalid temperature: only 1 is allowed for this
// model", NoFxAiOS/nofx#1415), left out.
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGatewayOn } from '../helpers/start-gateway.js';

const deepseek = 'deepseek-v4-flash';
const qwen = 'qwen3.6-plus';
const kimi = 'kimi-k2.6';
/** GLM as Z.AI serves it (through OpenRouter): `auto` is the only tool choice it takes. */
const glm = 'z-ai/glm-5.3-flash';
/** gpt-5.6-sol behind a relay that writes `auto` as an object the Responses API refuses. */
const relayed = 'gpt-5.6-sol';

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    thinkingToolChoice: [deepseek, qwen, kimi],
    autoToolChoiceOnly: [glm],
    autoChoiceAsObject: [relayed],
    fixedTemperature: { [kimi]: 1 },
    // A model that calls the first tool it is offered, as structured output asks it to.
    respond: (_messages, body) => {
      const offered = (body.tools as Array<{ function: { name: string } }> | undefined)?.[0]?.function.name;
      return offered === undefined
        ? undefined
        : { toolCalls: [{ id: 'call_1', name: offered, arguments: '{"city":"Paris","celsius":21}' }] };
    },
  });
  harness = await startGatewayOn(fake, inject('redisUrl'));
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

/** LangChain's structured output of `model` by a named tool (its `functionCalling` method): the weather in a city. */
const structuredWeather = (model: string) =>
  new ChatOpenAI({
    model,
    apiKey: 'sk-choice',
    maxRetries: 0,
    configuration: { baseURL: harness.baseUrl },
  }).withStructuredOutput(
    {
      type: 'object',
      title: 'weather',
      description: 'The weather in a city.',
      properties: { city: { type: 'string' }, celsius: { type: 'number' } },
      required: ['city', 'celsius'],
    },
    { method: 'functionCalling' },
  );

const sent = () =>
  fake.chatRequests.at(-1)?.body as { tool_choice?: unknown; tools?: Array<{ function: { name: string } }> };

describe('a forced tool choice, to a model that thinks and then takes none', () => {
  it("LangChain's structured output (a named tool) from DeepSeek V4: answered after one refusal, the next at once", async () => {
    const model = structuredWeather(deepseek);
    const before = fake.chatRequests.length;
    expect(await model.invoke('Weather in Paris?')).toEqual({ city: 'Paris', celsius: 21 });
    expect(fake.chatRequests.length - before).toBe(2);
    expect(sent().tool_choice).toBe('auto');
    expect(sent().tools?.map((tool) => tool.function.name)).toEqual(['weather']);
    const again = fake.chatRequests.length;
    await model.invoke('Weather in Lyon?');
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it("the OpenAI client's `required` to Qwen on DashScope: auto, every tool offered", async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-choice', maxRetries: 0 });
    const tool = (name: string): OpenAI.ChatCompletionTool => ({
      type: 'function',
      function: { name, parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    });
    const answer = await client.chat.completions.create({
      model: qwen,
      tools: [tool('get_weather'), tool('get_time')],
      tool_choice: 'required',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather' } });
    expect(sent().tool_choice).toBe('auto');
    expect(sent().tools?.map((tool) => tool.function.name)).toEqual(['get_weather', 'get_time']);
  });
});

describe("Z.AI's GLM, which takes no tool choice but auto", () => {
  it("LangChain's structured output (a named tool): answered after one refusal, the tool offered alone; the next at once", async () => {
    const model = structuredWeather(glm);
    const before = fake.chatRequests.length;
    expect(await model.invoke('Weather in Paris?')).toEqual({ city: 'Paris', celsius: 21 });
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sent().tool_choice).toBe('auto');
    const again = fake.chatRequests.length;
    await model.invoke('Weather in Lyon?');
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

// A request that gives no tools but speaks of them — an empty list, a tool choice — which OpenAI refuses
// (continuedev/continue#3370) and Z.AI with its code 1210 (code-yeongyu/oh-my-openagent#6753): sent without
// them, as it means the same; and a history whose answer has an empty list of calls (openai/openai-node#1341).
describe('a relay that writes a tool choice of auto as the Responses API refuses it', () => {
  it("the OpenAI client's `auto` (Kilo sends it with every request): answered without it after one refusal, the next at once", async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-choice', maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({
        model: relayed,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
        tool_choice: 'auto',
      });
    const before = fake.chatRequests.length;
    const answer = await ask();
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'weather' } });
    const sent = fake.chatRequests.slice(before).map((request) => JSON.parse(request.rawBody) as object);
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatchObject({ tool_choice: 'auto' });
    // Left out: the choice is the model's all the same, and the tools go as they were.
    expect(sent[1]).not.toHaveProperty('tool_choice');
    expect(sent[1]).toMatchObject({ tools: [{ function: { name: 'weather' } }] });
    const next = fake.chatRequests.length;
    await ask();
    expect(fake.chatRequests.length - next).toBe(1);
  });
});

describe('a request of no tools that speaks of tools', () => {
  it('an empty tool list, a tool choice and parallel_tool_calls: sent without them, answered at once', async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-choice', maxRetries: 0 });
    const before = fake.chatRequests.length;
    const answer = await client.chat.completions.create({
      model: 'local-model',
      tools: [],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      messages: [{ role: 'user', content: 'Hello?' }],
    });
    expect(answer.choices[0]?.message.role).toBe('assistant');
    const sentNow = fake.chatRequests.slice(before);
    expect(sentNow.map((request) => request.status)).toEqual([200]);
    expect(Object.keys(sentNow[0]?.body ?? {})).not.toEqual(expect.arrayContaining(['tools']));
    expect(sentNow[0]?.body).not.toHaveProperty('tool_choice');
    expect(sentNow[0]?.body).not.toHaveProperty('parallel_tool_calls');
  });

  it('a tool choice with no tools at all, streamed: sent without it', async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-choice', maxRetries: 0 });
    const before = fake.chatRequests.length;
    const stream = await client.chat.completions.create({
      model: 'local-model',
      stream: true,
      tool_choice: 'none',
      messages: [{ role: 'user', content: 'Hello?' }],
    });
    for await (const _chunk of stream) void _chunk;
    const sentNow = fake.chatRequests.slice(before);
    expect(sentNow.map((request) => request.status)).toEqual([200]);
    expect(sentNow[0]?.body).not.toHaveProperty('tool_choice');
  });

  it('an answer in the history with an empty list of calls: sent without the list', async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-choice', maxRetries: 0 });
    const before = fake.chatRequests.length;
    await client.chat.completions.create({
      model: 'local-model',
      messages: [
        { role: 'user', content: 'Hi.' },
        { role: 'assistant', content: 'Hello.', tool_calls: [] },
        { role: 'user', content: 'How are you?' },
      ],
    });
    const sentNow = fake.chatRequests.slice(before);
    expect(sentNow.map((request) => request.status)).toEqual([200]);
    expect((sentNow[0]?.body as { messages: Array<Record<string, unknown>> }).messages[1]).toEqual({
      role: 'assistant',
      content: 'Hello.',
    });
  });
});

describe('a temperature the model holds at one value (Kimi K2.6: 1)', () => {
  it("a client's 0.2 with a forced tool: answered after a refusal of each, both left to the model; the next at once", async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-choice', maxRetries: 0 });
    const request: OpenAI.ChatCompletionCreateParamsNonStreaming = {
      model: kimi,
      temperature: 0.2,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      tool_choice: 'required',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    };
    const before = fake.chatRequests.length;
    const answer = await client.chat.completions.create(request);
    expect(answer.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(3);
    expect(sent()).not.toHaveProperty('temperature');
    expect(sent().tool_choice).toBe('auto');
    const again = fake.chatRequests.length;
    await client.chat.completions.create(request);
    expect(fake.chatRequests.length - again).toBe(1);
  });
});
