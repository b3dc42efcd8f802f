// End to end: structured output to a server that takes less of `response_format` than OpenAI does, each
// refusal learned once (docs/budgeting.md#refused-fields), through the real clients against a strict fake
// that refuses in each server's words:
// - JSON mode, which the AI SDK's OpenAI-compatible provider asks for its structured output, to LM Studio,
//   which takes a JSON Schema only ("'response_format.type' must be 'json_schema' or 'text'":
//   lmstudio-ai/lmstudio-bug-tracker#189, LoadShine/tada#16): asked as a JSON Schema of any object;
// - LangChain's JSON mode to an older OpenAI model, which takes neither JSON format ("Invalid parameter:
//   'response_format' of type 'json_object' is not supported with this model."): sent without, the model
//   told to answer in JSON where no message says so;
// - the OpenAI client's parse helper to GPT4All, which takes no `response_format` at all ("'response_format'
//   is not supported": rspamd/rspamd#5276): sent without, its schema told in the system message.
// Every such request failed before; each is answered after its refusals, and the model's next at once.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, jsonSchema, Output, stepCountIs, tool } from 'ai';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGatewayOn } from '../helpers/start-gateway.js';

/** A model as LM Studio serves it, as its API lists it. */
const lmStudio = 'qwen/qwen3-8b';
/** An older OpenAI model, as Azure still deploys it. */
const olderOpenAI = 'gpt-4-0613';
/** A model as GPT4All's local server serves it. */
const gpt4all = 'Llama 3.2 3B Instruct';
/** A model as Gemini's OpenAI-compatible endpoint serves it: structured output or tools, not both at once. */
const gemini = 'gemini-2.5-flash';

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    schemaFormatOnly: [lmStudio],
    noJsonFormats: [olderOpenAI],
    noResponseFormat: [gpt4all],
    noFormatWithTools: [gemini],
    // A model that answers as it was asked: the weather, in JSON. Gemini, given a tool, looks the weather
    // up first, and answers in JSON only when asked to (a format, or a schema in its instructions).
    respond: (messages, body) => {
      const weather = '{"city":"Paris","celsius":21}';
      if (body.model !== gemini) return { content: weather };
      const looked = messages.some((message) => message.role === 'tool');
      if (Array.isArray(body.tools) && !looked)
        return { toolCalls: [{ id: 'call_weather_1', name: 'weather', arguments: '{"city":"Paris"}' }] };
      const asked =
        body.response_format !== undefined ||
        messages.some(
          (message) =>
            message.role === 'system' && String(message.content).includes('follows this JSON Schema'),
        );
      return { content: asked ? weather : 'It is 21 degrees in Paris.' };
    },
  });
  harness = await startGatewayOn(fake, inject('redisUrl'));
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const weatherSchema = {
  type: 'object' as const,
  properties: { city: { type: 'string' as const }, celsius: { type: 'number' as const } },
  required: ['city', 'celsius'],
  additionalProperties: false,
};

const sent = () =>
  fake.chatRequests.at(-1)?.body as { response_format?: unknown; messages: ChatMessage[] } | undefined;
const formatOf = (body: unknown) => (body as { response_format?: unknown } | undefined)?.response_format;
const statusesSince = (before: number) => fake.chatRequests.slice(before).map((request) => request.status);

describe('JSON mode to LM Studio, which takes a JSON Schema only', () => {
  it("the AI SDK's structured output (JSON mode from its OpenAI-compatible provider): answered after one refusal, the next at once", async () => {
    const model = createOpenAICompatible({
      name: 'lmstudio',
      baseURL: harness.baseUrl,
      apiKey: 'sk-formats',
    })(lmStudio);
    const ask = () =>
      generateText({
        model,
        maxRetries: 0,
        output: Output.object({ schema: jsonSchema<{ city: string; celsius: number }>(weatherSchema) }),
        prompt: 'Weather in Paris?',
      });
    const before = fake.chatRequests.length;
    expect((await ask()).output).toEqual({ city: 'Paris', celsius: 21 });
    expect(statusesSince(before)).toEqual([400, 200]);
    expect(formatOf(fake.chatRequests.at(-2)?.body)).toEqual({ type: 'json_object' });
    expect(sent()?.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'response', schema: { type: 'object' } },
    });
    const again = fake.chatRequests.length;
    expect((await ask()).output).toEqual({ city: 'Paris', celsius: 21 });
    expect(statusesSince(again)).toEqual([200]);
  });
});

describe('JSON formats to an older OpenAI model, which takes neither', () => {
  it("LangChain's JSON mode: answered after the refusals of both, sent without, told to answer in JSON; the next at once", async () => {
    const model = new ChatOpenAI({
      model: olderOpenAI,
      apiKey: 'sk-formats',
      maxRetries: 0,
      configuration: { baseURL: harness.baseUrl },
    }).withStructuredOutput(weatherSchema, { method: 'jsonMode' });
    const before = fake.chatRequests.length;
    expect(await model.invoke('Weather in Paris?')).toEqual({ city: 'Paris', celsius: 21 });
    expect(statusesSince(before)).toEqual([400, 400, 200]);
    expect(formatOf(fake.chatRequests.at(-2)?.body)).toMatchObject({ type: 'json_schema' });
    expect(sent()?.response_format).toBeUndefined();
    expect(sent()?.messages[0]).toEqual({
      role: 'system',
      content: 'Answer with one JSON object, and nothing else.',
    });
    expect(sent()?.messages.at(-1)).toEqual({ role: 'user', content: 'Weather in Paris?' });
    const again = fake.chatRequests.length;
    await model.invoke('Weather in Lyon? Answer in JSON.');
    expect(statusesSince(again)).toEqual([200]);
    // A prompt that says "json" already is sent as it came.
    expect(sent()?.messages).toEqual([{ role: 'user', content: 'Weather in Lyon? Answer in JSON.' }]);
  });
});

describe('structured output to GPT4All, which takes no response_format', () => {
  const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-formats', maxRetries: 0 });
  const weather = z.object({ city: z.string(), celsius: z.number() });

  it("the OpenAI client's parse helper: answered after one refusal, sent without, the schema told; the next at once", async () => {
    const ask = () =>
      client().chat.completions.parse({
        model: gpt4all,
        messages: [
          { role: 'system', content: 'You report the weather.' },
          { role: 'user', content: 'Paris?' },
        ],
        response_format: zodResponseFormat(weather, 'weather'),
      });
    const before = fake.chatRequests.length;
    expect((await ask()).choices[0]?.message.parsed).toEqual({ city: 'Paris', celsius: 21 });
    expect(statusesSince(before)).toEqual([400, 200]);
    expect(sent()?.response_format).toBeUndefined();
    const system = String(sent()?.messages[0]?.content);
    expect(system).toMatch(/^You report the weather\.\n\n.*\(weather\)/s);
    expect(system).toContain('"celsius":{"type":"number"}');
    const again = fake.chatRequests.length;
    await ask();
    expect(statusesSince(again)).toEqual([200]);
  });

  it('a Responses request with a text format (Codex’s --output-schema) to it: one call, its schema told', async () => {
    const before = fake.chatRequests.length;
    const response = await client().responses.create({
      model: gpt4all,
      store: false,
      input: 'Paris?',
      text: { format: { type: 'json_schema', name: 'weather', schema: weatherSchema, strict: true } },
    });
    expect(response.output_text).toBe('{"city":"Paris","celsius":21}');
    expect(statusesSince(before)).toEqual([200]);
    expect(sent()?.response_format).toBeUndefined();
    expect(sent()?.messages[0]?.role).toBe('system');
    expect(String(sent()?.messages[0]?.content)).toContain(JSON.stringify(weatherSchema));
  });
});

describe('structured output beside tools to Gemini, which takes either but not both at once', () => {
  const model = () =>
    createOpenAICompatible({
      name: 'gemini',
      baseURL: harness.baseUrl,
      apiKey: 'sk-formats',
      supportsStructuredOutputs: true,
    })(gemini);
  const output = Output.object({ schema: jsonSchema<{ city: string; celsius: number }>(weatherSchema) });

  it("the AI SDK's structured output with a tool: answered after one refusal, the schema told while tools are sent; the model's next at once", async () => {
    const ask = () =>
      generateText({
        model: model(),
        maxRetries: 0,
        output,
        tools: {
          weather: tool({
            description: 'The weather in a city.',
            inputSchema: jsonSchema<{ city: string }>({
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
            }),
            execute: async ({ city }) => `${city}: 21 degrees`,
          }),
        },
        stopWhen: stepCountIs(3),
        prompt: 'Weather in Paris?',
      });
    const before = fake.chatRequests.length;
    expect((await ask()).output).toEqual({ city: 'Paris', celsius: 21 });
    // The refusal, the tool call, the answer.
    expect(statusesSince(before)).toEqual([400, 200, 200]);
    expect(formatOf(fake.chatRequests[before]?.body)).toMatchObject({ type: 'json_schema' });
    for (const call of fake.chatRequests.slice(before + 1)) {
      expect(formatOf(call.body)).toBeUndefined();
      const system = (call.body as { messages: ChatMessage[] }).messages[0];
      expect(system?.role).toBe('system');
      expect(String(system?.content)).toContain(JSON.stringify(weatherSchema));
    }
    const again = fake.chatRequests.length;
    expect((await ask()).output).toEqual({ city: 'Paris', celsius: 21 });
    expect(statusesSince(again)).toEqual([200, 200]);
  });

  it('the same model asked for structured output without tools: the format sent as it came, at once', async () => {
    const before = fake.chatRequests.length;
    const result = await generateText({ model: model(), maxRetries: 0, output, prompt: 'Weather in Paris?' });
    expect(result.output).toEqual({ city: 'Paris', celsius: 21 });
    expect(statusesSince(before)).toEqual([200]);
    expect(sent()?.response_format).toMatchObject({ type: 'json_schema' });
    expect(sent()?.messages).toEqual([{ role: 'user', content: 'Weather in Paris?' }]);
  });
});
