// End to end: an agent's command that printed nothing (`mkdir -p src`, `git add .`) gives a tool result of
// "", and Gemini refuses a message of no text ("Unable to submit request because it has an empty text
// parameter. Add a value to the parameter and try again.", microsoft/autogen#5762,
// FoundationAgents/OpenManus#913): every later request of the conversation failed. Through the official
// client and the AI SDK, with a strict fake that refuses so: answered after one refusal, the result sent
// as `(no output)`, the next request at once (docs/budgeting.md#refused-fields).
import { randomUUID } from 'node:crypto';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const gemini = 'gemini-2.5-flash';
const flash = 'gemini-3-flash-preview';

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    geminiRules: [gemini, flash],
    // A model that runs the shell once, then says it is done.
    respond: (messages) =>
      messages.at(-1)?.role === 'tool'
        ? { content: 'Created src.' }
        : { toolCalls: [{ id: 'call_sh', name: 'shell', arguments: '{"command":"mkdir -p src"}' }] },
  });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const shell: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
};
const lastToolMessage = () =>
  (fake.chatRequests.at(-1)?.body as { messages: ChatMessage[] }).messages.findLast(
    (message) => message.role === 'tool',
  );

describe('a tool result of no text, to Gemini', () => {
  it('a client that keeps the conversation is answered after one refusal, then at once', async () => {
    const chat = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-empty', maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Make a src folder.' }];
    const first = await chat.chat.completions.create({ model: gemini, tools: [shell], messages });
    const reply = first.choices[0]?.message as OpenAI.ChatCompletionMessage;
    messages.push(reply, { role: 'tool', tool_call_id: reply.tool_calls?.[0]?.id ?? '', content: '' });
    const before = fake.chatRequests.length;
    const second = await chat.chat.completions.create({ model: gemini, tools: [shell], messages });
    expect(second.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(lastToolMessage()?.content).toBe('(no output)');
    const again = fake.chatRequests.length;
    await chat.chat.completions.create({ model: gemini, tools: [shell], messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it("the AI SDK's loop, its tool returning nothing, in a session", async () => {
    const provider = createOpenAICompatible({
      name: 'gateway',
      baseURL: harness.baseUrl,
      apiKey: 'sk-empty',
      headers: { 'x-session-id': `empty-${randomUUID()}` },
    });
    const result = streamText({
      model: provider.chatModel(flash),
      prompt: 'Make a src folder.',
      maxRetries: 0,
      tools: {
        shell: tool({
          inputSchema: jsonSchema<{ command: string }>({
            type: 'object',
            properties: { command: { type: 'string' } },
          }),
          execute: async () => '',
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe('Created src.');
    expect(lastToolMessage()?.content).toBe('(no output)');
  });
});
