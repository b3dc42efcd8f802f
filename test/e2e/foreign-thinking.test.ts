// End to end: a conversation that goes on on Claude after another model thought in it (docs/anthropic.md
// #thinking-another-model-signed). Anthropic-compatible endpoints of other providers sign their models'
// thinking their own way — z.ai's GLM, MiniMax — and Anthropic refuses every signature it did not give:
// "messages.1.content.0: Invalid `signature` in `thinking` block" (tombii/better-ccflare#52 after a switch
// from z.ai back to Claude; decolua/9router#922 between Claude and MiniMax; router-for-me/CLIProxyAPI#1584
// mid-conversation). A client's switch (Claude Code's /model), a fallback or a session's next model
// then failed on every request: the history holds that thinking for good, and in a session the client
// cannot take it out. Through the official Anthropic client, with two strict fakes that each refuse the
// other's signatures.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  FakeAnthropic,
  anthropicUpstreamYaml,
  type RecordedAnthropicRequest,
} from '../helpers/fake-anthropic.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const glm = 'glm-4.7';
const claudeModel = 'claude-sonnet-4-6';
let claude: FakeAnthropic;
let zai: FakeAnthropic;
let chat: FakeUpstream;
let harness: GatewayHarness;

type Json = Record<string, unknown>;

/** The model: calls the weather tool for a question, answers from the tool's result once it has one. */
const toolModel = (body: Json) => {
  const last = (body.messages as Array<{ content: unknown }>).at(-1)?.content;
  return JSON.stringify(last).includes('tool_result')
    ? { text: 'Sunny in Oslo.' }
    : { toolUse: { name: 'get_weather', input: { city: 'Oslo' } } };
};

beforeAll(async () => {
  claude = new FakeAnthropic();
  zai = new FakeAnthropic({ signer: 'zai' });
  claude.respond = toolModel;
  zai.respond = toolModel;
  chat = new FakeUpstream();
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await chat.start(), REDIS_URL: inject('redisUrl') },
    configYaml: [
      'upstreams:',
      ...anthropicUpstreamYaml('zai', await zai.start(), ['glm-*']),
      ...anthropicUpstreamYaml('claude', await claude.start(), ['claude-*']),
      '',
    ].join('\n'),
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await claude.stop();
  await zai.stop();
  await chat.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new Anthropic({
    baseURL: harness.baseUrl.replace(/\/v1$/, ''),
    apiKey: 'sk-thinking',
    maxRetries: 0,
    defaultHeaders: headers,
  });

const weatherTool = {
  name: 'get_weather',
  description: 'The weather in a city.',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

const thinkingOn = { type: 'enabled' as const, budget_tokens: 1_024 };

const ask = (model: string, messages: Anthropic.MessageParam[], headers: Record<string, string> = {}) =>
  client(headers).messages.create({
    model,
    max_tokens: 2_000,
    thinking: thinkingOn,
    tools: [weatherTool],
    messages,
  });

const resultOf = (use: Anthropic.ContentBlock | undefined, content: string): Anthropic.MessageParam => ({
  role: 'user',
  content: [{ type: 'tool_result', tool_use_id: use?.type === 'tool_use' ? use.id : '', content }],
});

/** The thinking blocks each message of a request Claude was sent holds, by message. */
const thinkingSent = (request: RecordedAnthropicRequest | undefined) =>
  (request?.body.messages as Array<{ content: unknown }>).map((message) =>
    Array.isArray(message.content)
      ? (message.content as Json[])
          .filter((block) => block.type === 'thinking')
          .map((block) => block.signature)
      : [],
  );

/** What Claude was sent from the request at `from` on: each request's status. */
const statusesFrom = (from: number) => claude.messageRequests.slice(from).map((request) => request.status);

describe("a conversation another provider's model thought in, going on on Claude", () => {
  it("after a switch at the user's turn: GLM's thinking left out after one refusal, Claude thinks on", async () => {
    const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo?' };
    const first = await ask(glm, [question]);
    const use = first.content.find((block) => block.type === 'tool_use');
    const second = await ask(glm, [
      question,
      { role: 'assistant', content: first.content },
      resultOf(use, 'Sunny'),
    ]);
    expect(second.content.at(-1)).toEqual(expect.objectContaining({ type: 'text', text: 'Sunny in Oslo.' }));
    // The user moves on to Claude with the conversation so far.
    const from = claude.messageRequests.length;
    const history: Anthropic.MessageParam[] = [
      question,
      { role: 'assistant', content: first.content },
      resultOf(use, 'Sunny'),
      { role: 'assistant', content: second.content },
      { role: 'user', content: 'And tomorrow?' },
    ];
    const third = await ask(claudeModel, history);
    expect(third.content[0]?.type).toBe('thinking');
    expect(statusesFrom(from)).toEqual([400, 200]);
    const sent = claude.messageRequests.at(-1);
    // Nothing of the conversation is left out but GLM's thinking; thinking stays on.
    expect(thinkingSent(sent)).toEqual([[], [], [], [], []]);
    expect((sent?.body.messages as unknown[]).length).toBe(history.length);
    expect(sent?.body.thinking).toEqual(thinkingOn);
  });

  it("in Claude's own tool loop after the switch: Claude's thinking goes back with its call, GLM's does not", async () => {
    const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo?' };
    zai.respond = () => ({ text: 'Let me know the city again.' });
    const first = await ask(glm, [question]);
    zai.respond = toolModel;
    const history: Anthropic.MessageParam[] = [
      question,
      { role: 'assistant', content: first.content },
      { role: 'user', content: 'Oslo, please.' },
    ];
    const call = await ask(claudeModel, history);
    const use = call.content.find((block) => block.type === 'tool_use');
    const from = claude.messageRequests.length;
    const answer = await ask(claudeModel, [
      ...history,
      { role: 'assistant', content: call.content },
      resultOf(use, 'Sunny'),
    ]);
    expect(answer.content.at(-1)).toEqual(expect.objectContaining({ type: 'text', text: 'Sunny in Oslo.' }));
    expect(statusesFrom(from)).toEqual([400, 200]);
    const sent = claude.messageRequests.at(-1);
    const claudes = call.content.find((block) => block.type === 'thinking');
    expect(thinkingSent(sent)).toEqual([[], [], [], [claudes?.type === 'thinking' && claudes.signature], []]);
    expect(sent?.body.thinking).toEqual(thinkingOn);
  });

  it('in the middle of a tool loop GLM began: the answer to its call comes with thinking off for that request', async () => {
    const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo?' };
    const first = await ask(glm, [question]);
    const use = first.content.find((block) => block.type === 'tool_use');
    const from = claude.messageRequests.length;
    const answer = await ask(claudeModel, [
      question,
      { role: 'assistant', content: first.content },
      resultOf(use, 'Sunny'),
    ]);
    expect(answer.content).toEqual([expect.objectContaining({ type: 'text', text: 'Sunny in Oslo.' })]);
    expect(statusesFrom(from)).toEqual([400, 200]);
    const sent = claude.messageRequests.at(-1);
    expect(thinkingSent(sent)).toEqual([[], [], []]);
    expect(sent?.body.thinking).toBeUndefined();
    // The call and its result still go: the conversation is whole.
    expect(JSON.stringify(sent?.body.messages)).toContain(use?.type === 'tool_use' ? use.id : 'no call');
  });

  it('in a session whose next turns go to Claude: every turn answered', async () => {
    const session = { 'x-session-id': `foreign-thinking-${randomUUID()}` };
    zai.respond = () => ({ text: 'Noted: Oslo.' });
    claude.respond = () => ({ text: 'Noted.' });
    try {
      await ask(glm, [{ role: 'user', content: 'We are going to Oslo.' }], session);
      const from = claude.messageRequests.length;
      const second = await ask(claudeModel, [{ role: 'user', content: 'In June.' }], session);
      const third = await ask(claudeModel, [{ role: 'user', content: 'For a week.' }], session);
      expect([second.content.at(-1), third.content.at(-1)]).toEqual([
        expect.objectContaining({ type: 'text', text: 'Noted.' }),
        expect.objectContaining({ type: 'text', text: 'Noted.' }),
      ]);
      // The stored turn GLM thought in is refused at each request, and sent again without thinking.
      expect(statusesFrom(from)).toEqual([400, 200, 400, 200]);
      expect(thinkingSent(claude.messageRequests.at(-1)).flat()).toEqual([]);
    } finally {
      zai.respond = toolModel;
      claude.respond = toolModel;
    }
  });
});
