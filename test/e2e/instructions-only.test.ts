// End to end: a request of instructions only — system messages and no other, as an LLM-as-a-judge prompt,
// a LangChain call of one SystemMessage or an agent run with no prompt send it — which OpenAI answers and
// other providers refuse: Claude ("messages: at least one message is required": langchain-ai/langchain#31657,
// arthur-ai/arthur-engine#1302, Helicone/helicone#5257), Gemini's OpenAI-compatible endpoint ("contents is
// not specified": langchain-ai/langchain#33940), GLM's API ("The messages parameter is illegal") and Qwen on
// DashScope ("The messages list should not contain only one message with role \"system\"": agentscope#425). Every
// such request failed through the gateway. The instructions are sent as what the user asks: to Claude from
// the first request, to a chat model after its refusal, learned once (docs/budgeting.md#refused-fields).
import { ChatOpenAI } from '@langchain/openai';
import { SystemMessage } from '@langchain/core/messages';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic } from '../helpers/fake-anthropic.js';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGateway, waitUntilReady } from '../helpers/start-gateway.js';

const judge =
  'You are a strict grader. The answer "Paris is the capital of France" is correct. Reply PASS or FAIL only.';

let fake: FakeUpstream;
let claude: FakeAnthropic;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    userTurnRequired: ['gemini-2.5-flash', 'glm-4.6', 'qwen-plus'],
    respond: () => ({ content: 'PASS' }),
  });
  claude = new FakeAnthropic({ apiKey: 'sk-judge' });
  claude.respond = () => ({ text: 'PASS' });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    configYaml: [
      'upstreams:',
      '  - name: anthropic',
      `    base_url: ${await claude.start()}`,
      '    kind: anthropic',
      '    models: ["claude-*"]',
      '',
    ].join('\n'),
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await claude.stop();
});

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-judge', maxRetries: 0 });
const statusesSince = (before: number) => fake.chatRequests.slice(before).map((request) => request.status);
const sentMessages = () => (fake.chatRequests.at(-1)?.body as { messages: ChatMessage[] }).messages;

describe('instructions only, to Claude', () => {
  it('the OpenAI client: answered at once, the instructions sent as the user message', async () => {
    const before = claude.requests.length;
    const answer = await client().chat.completions.create({
      model: 'claude-sonnet-4-6',
      messages: [{ role: 'system', content: judge }],
      max_tokens: 5,
    });
    expect(answer.choices[0]?.message.content).toBe('PASS');
    expect(claude.requests.length - before).toBe(1);
    const sent = claude.requests.at(-1)?.body as { system?: unknown; messages: unknown[] };
    expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: judge }] }]);
    expect(sent.system).toBeUndefined();
  });

  it("LangChain's SystemMessage alone, streamed", async () => {
    const chat = new ChatOpenAI({
      model: 'claude-haiku-4-5',
      apiKey: 'sk-judge',
      maxRetries: 0,
      configuration: { baseURL: harness.baseUrl },
    });
    let text = '';
    for await (const piece of await chat.stream([new SystemMessage(judge)])) text += String(piece.content);
    expect(text).toBe('PASS');
  });
});

describe.each(['gemini-2.5-flash', 'glm-4.6', 'qwen-plus'])(
  'instructions only, to %s, which refuses them',
  (model) => {
    it('answered after one refusal, the last instruction sent as the user message; the next at once', async () => {
      const messages = [
        { role: 'system' as const, content: 'Grade answers about geography.' },
        { role: 'system' as const, content: judge },
      ];
      const before = fake.chatRequests.length;
      const answer = await client().chat.completions.create({ model, messages });
      expect(answer.choices[0]?.message.content).toBe('PASS');
      expect(statusesSince(before)).toEqual([400, 200]);
      expect(sentMessages()).toEqual([messages[0], { role: 'user', content: judge }]);
      const again = fake.chatRequests.length;
      await client().chat.completions.create({ model, messages });
      expect(statusesSince(again)).toEqual([200]);
      // A conversation with a user message goes as it came.
      const asked = [
        messages[1] as (typeof messages)[number],
        { role: 'user' as const, content: 'Grade: Lyon.' },
      ];
      await client().chat.completions.create({ model, messages: asked });
      expect(sentMessages()).toEqual(asked);
    });
  },
);
