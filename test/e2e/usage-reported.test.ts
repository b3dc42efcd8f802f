// End to end: usage where the provider reports none. Some OpenAI-compatible servers give no `usage`, even
// when the client asks for it with `stream_options.include_usage` (anomalyco/opencode#13141,
// charmbracelet/crush#2891); agents size their context by it, and with none their meter sat at 0 and
// their compaction never fired until the provider refused the prompt (openclaw/openclaw#56670). A client
// that asked is given the gateway's own count of the prompt it sent, and of the answer; a Responses
// client (which always gets usage) the same, not zeros. Through the AI SDK and the official OpenAI
// client, against a strict fake that reports no usage; its own count of each prompt is the reference.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGateway } from '../helpers/start-gateway.js';

/** A model served with no usage reported. */
const model = 'qwen3.8-27b-local';
/** A model that thinks (120 tokens an answer) and whose usage says what its prompt cache held (DeepSeek's). */
const cachingModel = 'deepseek-v4-pro';
const question = `Summarize the release notes. ${'The gateway fits every request into the window. '.repeat(60)}`;

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    noUsage: [model],
    reportsCachedTokens: [cachingModel],
    thinkingSpends: { [cachingModel]: 120 },
    respond: () => ({ content: 'The gateway fits requests.' }),
  });
  harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-usage', maxRetries: 0 });
/** The provider's own count of the last prompt it was sent. */
const counted = () => fake.chatRequests.at(-1)?.promptTokens ?? 0;
/** Within a tenth of the provider's count (its template and the gateway's count differ a little). */
const nearCounted = (tokens: number | undefined) => {
  expect(counted()).toBeGreaterThan(500);
  expect(Math.abs((tokens ?? 0) - counted())).toBeLessThanOrEqual(counted() / 10);
};

describe('a chat stream that asked for usage, from a provider that reports none', () => {
  it("the AI SDK's usage counts the prompt and the answer", async () => {
    const provider = createOpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-usage' });
    const result = streamText({ model: provider.chat(model), prompt: question, maxRetries: 0 });
    expect(await result.text).toBe('The gateway fits requests.');
    const usage = await result.usage;
    nearCounted(usage.inputTokens);
    expect(usage.outputTokens).toBeGreaterThan(0);
  });

  it('the OpenAI client gets a last chunk of usage and no choices; a client that did not ask, none', async () => {
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    const stream = await client().chat.completions.create({
      model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: question }],
    });
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    nearCounted(last?.usage?.prompt_tokens);
    expect(last?.usage?.total_tokens).toBe(
      (last?.usage?.prompt_tokens ?? 0) + (last?.usage?.completion_tokens ?? 0),
    );
    const unasked: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await client().chat.completions.create({
      model,
      stream: true,
      messages: [{ role: 'user', content: question }],
    }))
      unasked.push(chunk);
    expect(unasked.some((chunk) => chunk.usage !== undefined && chunk.usage !== null)).toBe(false);
    expect(unasked.every((chunk) => chunk.choices.length === 1)).toBe(true);
  });
});

describe('a whole chat answer, from a provider that reports none', () => {
  it('is given usage, as OpenAI gives every answer', async () => {
    const answer = await client().chat.completions.create({
      model,
      messages: [{ role: 'user', content: question }],
    });
    expect(answer.choices[0]?.message.content).toBe('The gateway fits requests.');
    nearCounted(answer.usage?.prompt_tokens);
    expect(answer.usage?.completion_tokens).toBeGreaterThan(0);
  });
});

describe('a Responses client, from a provider that reports none', () => {
  it.each([false, true])('its usage counts the prompt, not 0 (streamed: %s)', async (stream) => {
    let usage: OpenAI.Responses.ResponseUsage | undefined;
    if (stream) {
      for await (const event of await client().responses.create({
        model,
        input: question,
        store: false,
        stream: true,
      }))
        if (event.type === 'response.completed') usage = event.response.usage;
    } else usage = (await client().responses.create({ model, input: question, store: false })).usage;
    nearCounted(usage?.input_tokens);
    expect(usage?.total_tokens).toBe((usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0));
  });
});

describe('a Responses client, from a provider that says what its cache held and what its model thought', () => {
  // The AI SDK's Responses provider reads cachedInputTokens and reasoningTokens from them (costs, and the
  // share of a prompt a cache holds); they were always 0 through the bridge.
  it.each([false, true])("the AI SDK's usage carries them (streamed: %s)", async (stream) => {
    const provider = createOpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-usage' });
    const first = await generateText({
      model: provider.responses(cachingModel),
      prompt: question,
      maxRetries: 0,
    });
    const held = counted();
    const messages = [
      { role: 'user' as const, content: question },
      { role: 'assistant' as const, content: first.text },
      { role: 'user' as const, content: 'And in one line?' },
    ];
    const usage = stream
      ? await streamText({ model: provider.responses(cachingModel), messages, maxRetries: 0 }).usage
      : (await generateText({ model: provider.responses(cachingModel), messages, maxRetries: 0 })).usage;
    expect(held).toBeGreaterThan(500);
    expect(usage.cachedInputTokens).toBe(held);
    expect(usage.reasoningTokens).toBe(120);
    expect(usage.inputTokens).toBe(counted());
  });
});
