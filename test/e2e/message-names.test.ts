// End to end (docs/budgeting.md#refused-fields): a message's `name`, which says who spoke. LangChain's
// createAgent gives every answer of an agent its name (langchain-ai/langchain#34254), as AutoGen and
// Semantic Kernel do; the second step of such an agent sends it back. OpenAI refuses a name of spaces
// ("Invalid 'messages[2].name': string does not match pattern": microsoft/semantic-kernel#9340), xAI a
// name on any message but the user's (pipecat-ai/pipecat#2274), Mistral's API a user's name; every step
// after the first failed through the gateway. After one refusal the names are written to fit, or left out
// where the provider reads none, learned per model, on the wire only.
import { ChatOpenAI } from '@langchain/openai';
import { createAgent, tool } from 'langchain';
import OpenAI from 'openai';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream, mistralUnknownFields, type ChatMessage } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGateway } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
let mistral: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  // An agent's two steps: a search, then the answer from its result.
  const respond = (messages: ReadonlyArray<ChatMessage>) =>
    messages.at(-1)?.role === 'tool'
      ? { content: 'The retry budget is in src/retry.ts.' }
      : { toolCalls: [{ id: 'call_grep1', name: 'grep', arguments: '{"pattern":"retry budget"}' }] };
  fake = new FakeUpstream({ openaiNames: ['gpt-4.1'], xaiRules: ['grok-4'], respond });
  mistral = new FakeUpstream({ forbiddenFields: mistralUnknownFields, mistralMessages: true });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start() },
    configYaml: [
      'upstreams:',
      '  - name: mistral',
      `    base_url: ${await mistral.start()}`,
      '    models: ["mistral-*"]',
      '',
    ].join('\n'),
  });
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
  await mistral.stop();
});

const grep = tool(async ({ pattern }: { pattern: string }) => `src/retry.ts: // ${pattern}`, {
  name: 'grep',
  description: 'Searches the code.',
  schema: z.object({ pattern: z.string() }),
});

/** LangChain's agent named `name`, on `model` through the gateway. */
function agentOn(model: string, name: string) {
  const chat = new ChatOpenAI({
    model,
    apiKey: 'sk-agents',
    maxRetries: 0,
    configuration: { baseURL: harness.baseUrl },
  });
  return createAgent({ model: chat, tools: [grep], name });
}

const statusesSince = (before: number) => fake.chatRequests.slice(before).map((request) => request.status);
const namesSent = () =>
  (fake.chatRequests.at(-1)?.body as { messages: ChatMessage[] }).messages.map((message) => message.name);

describe("LangChain's createAgent, its answers named", () => {
  it('to OpenAI, which takes no name of spaces: the name written to fit after one refusal, then at once', async () => {
    const before = fake.chatRequests.length;
    const run = await agentOn('gpt-4.1', 'Research Agent').invoke({
      messages: [{ role: 'user', content: 'Where is the retry budget?' }],
    });
    expect(String(run.messages.at(-1)?.content)).toBe('The retry budget is in src/retry.ts.');
    expect(statusesSince(before)).toEqual([200, 400, 200]);
    expect(namesSent()).toEqual([undefined, 'Research_Agent', 'grep']);
    const again = fake.chatRequests.length;
    await agentOn('gpt-4.1', 'Research Agent').invoke({
      messages: [{ role: 'user', content: 'And the backoff?' }],
    });
    expect(statusesSince(again)).toEqual([200, 200]);
  });

  it("to Grok, which takes a name on the user's message only: the names left out", async () => {
    const before = fake.chatRequests.length;
    const run = await agentOn('grok-4', 'researcher').invoke({
      messages: [{ role: 'user', content: 'Where is the retry budget?' }],
    });
    expect(String(run.messages.at(-1)?.content)).toBe('The retry budget is in src/retry.ts.');
    expect(statusesSince(before)).toEqual([200, 400, 200]);
    expect(namesSent()).toEqual([undefined, undefined, undefined]);
  });
});

describe("the OpenAI client, a user's name", () => {
  it("to Mistral's API, which has no field for it: left out after one refusal", async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-agents', maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You answer the team.' },
      { role: 'user', content: 'Which file holds the retry budget?', name: 'ada' },
    ];
    const before = mistral.chatRequests.length;
    const answer = await client.chat.completions.create({ model: 'mistral-small-latest', messages });
    expect(answer.choices).toHaveLength(1);
    expect(mistral.chatRequests.slice(before).map((request) => request.status)).toEqual([422, 200]);
    const sent = (mistral.chatRequests.at(-1)?.body as { messages: ChatMessage[] }).messages;
    expect(sent).toEqual([messages[0], { role: 'user', content: 'Which file holds the retry budget?' }]);
  });
});
