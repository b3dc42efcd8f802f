// End to end: a conversation that goes on on Claude after another model thought in it (docs/anthropic.md
// #thinking-another-model-signed). Anthropic-compatible endpoints of other providers sign their models'
// thinking their own way — z.ai's GLM, MiniMax — and Anthropic refuses every signature it did not give:
// "messages.1.content.0: Invalid `signature` in `thinking` block" (tombii/better-ccflare#52 after a switch
// from z.ai back to Claude; decolua/9router#922 between Claude and MiniMax; router-for-me/CLIProxyAPI#1584
// mid-conversation). A client's switch (Claude Code's /model), a fallback or a session's next model
// then failed on every request: the history holds that thinking for good, and in a session the client
// cannot take it out. Through the official Anthropic client, with two strict fakes that each refuse the
// other's signatures. Gemini 3 likewise refuses a thought signature another Gemini backend gave ("Corrupted
// thought signature." on Google's OpenAI-compatible endpoint, "Thought signature is not valid" on Vertex:
// diegosouzapw/OmniRoute#1410, decolua/9router#301): through the official OpenAI client.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  FakeAnthropic,
  anthropicUpstreamYaml,
  type RecordedAnthropicRequest,
} from '../helpers/fake-anthropic.js';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const glm = 'glm-4.7';
const claudeModel = 'claude-sonnet-4-6';
/** Gemini 3 through Google AI Studio's OpenAI-compatible endpoint, and through another backend's. */
const studioGemini = 'gemini-3-flash-preview';
const vertexGemini = 'gemini-3-pro-vertex';
let claude: FakeAnthropic;
let zai: FakeAnthropic;
let chat: FakeUpstream;
let vertex: FakeUpstream;
/** GPT-5.6 served by OpenAI (`chat`) and by Azure: each seals the reasoning it gives for itself. */
const openaiGpt = 'gpt-5.6-sol';
const azureGpt = 'azure-gpt-5.6-sol';
let azure: FakeUpstream;
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
  chat = new FakeUpstream({ thoughtSignatures: [studioGemini], toolsNeedResponses: [openaiGpt] });
  vertex = new FakeUpstream({ thoughtSignatures: [vertexGemini] });
  azure = new FakeUpstream({ toolsNeedResponses: [azureGpt] });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await chat.start(), REDIS_URL: inject('redisUrl') },
    configYaml: [
      'upstreams:',
      '  - name: vertex',
      `    base_url: ${await vertex.start()}`,
      `    models: ["${vertexGemini}"]`,
      '  - name: azure',
      `    base_url: ${await azure.start()}`,
      `    models: ["${azureGpt}"]`,
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
  await vertex.stop();
  await azure.stop();
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

  // Claude's signatures are bound to the model that thought, too ("blocks generated by a different model
  // replayed into the conversation" fail the check: Anthropic, anthropics/anthropic-sdk-python#1598;
  // vybestack/llxprt-code#2335 on /model between Opus and Sonnet).
  it("after a switch between Claude models: Opus's thinking left out after one refusal", async () => {
    claude.respond = () => ({ text: 'Noted.' });
    try {
      const question: Anthropic.MessageParam = { role: 'user', content: 'We are going to Oslo.' };
      const first = await ask('claude-opus-4-6', [question]);
      expect(first.content[0]?.type).toBe('thinking');
      const from = claude.messageRequests.length;
      const next = await ask(claudeModel, [
        question,
        { role: 'assistant', content: first.content },
        { role: 'user', content: 'In June.' },
      ]);
      expect(next.content.at(-1)).toEqual(expect.objectContaining({ type: 'text', text: 'Noted.' }));
      expect(statusesFrom(from)).toEqual([400, 200]);
      expect(thinkingSent(claude.messageRequests.at(-1))).toEqual([[], [], []]);
    } finally {
      claude.respond = toolModel;
    }
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

describe('a tool loop another Gemini backend began, going on on Gemini elsewhere', () => {
  it("is answered after one refusal, each call's signature Google's stand-in", async () => {
    const openai = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-thinking', maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } },
    ];
    const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Oslo?' };
    chat.enqueue({ toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: '{}' }] });
    const first = await openai.chat.completions.create({ model: studioGemini, messages: [question], tools });
    const step = first.choices[0]?.message as OpenAI.ChatCompletionMessageParam;
    const given = (
      step as { tool_calls?: Array<{ extra_content?: { google?: { thought_signature?: string } } }> }
    ).tool_calls?.[0]?.extra_content?.google?.thought_signature;
    expect(given).toMatch(/^[A-Za-z0-9+/=]{8,}$/);
    // The client (KiloCode, OpenCode) moves the loop on to the other backend's Gemini.
    const since = vertex.chatRequests.length;
    vertex.enqueue({}, { content: 'Sunny in Oslo.' });
    const { data, response } = await openai.chat.completions
      .create({
        model: vertexGemini,
        messages: [question, step, { role: 'tool', tool_call_id: 'call_w', content: 'Sunny' }],
        tools,
      })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('Sunny in Oslo.');
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const signatures = vertex.chatRequests
      .slice(since)
      .map((request) => (request.body as { messages: ChatMessage[] }).messages[1]?.tool_calls?.[0])
      .map((call) => call?.extra_content?.google?.thought_signature);
    expect(signatures).toEqual([given, 'skip_thought_signature_validator']);
  });
});

// OpenAI and Azure each seal a reasoning model's reasoning for themselves and refuse the other's: "The
// encrypted content for item rs_… could not be verified." (manaflow-ai/subrouter#259, measured on
// gpt-5.6-sol; VicBilibily/GCMP#345 through a relay that moved between Azure resources).
describe("a tool loop whose reasoning OpenAI sealed, going on at Azure's deployment", () => {
  it('is answered after one refusal, without the reasoning Azure cannot read', async () => {
    const openai = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-thinking', maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } },
    ];
    const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Oslo?' };
    chat.enqueue({}, { toolCalls: [{ id: 'call_r', name: 'get_weather', arguments: '{}' }] });
    const first = await openai.chat.completions.create({
      model: openaiGpt,
      messages: [question],
      tools,
      reasoning_effort: 'high',
    });
    const step = first.choices[0]?.message as OpenAI.ChatCompletionMessage & {
      reasoning_details?: unknown[];
    };
    expect(step.reasoning_details).toHaveLength(1);
    // The conversation goes on at Azure (a fallback, a relay's failover, the user's choice).
    const since = azure.requests.length;
    azure.enqueue({}, {}, { content: 'Sunny in Oslo.' });
    const { data, response } = await openai.chat.completions
      .create({
        model: azureGpt,
        messages: [question, step, { role: 'tool', tool_call_id: 'call_r', content: 'Sunny' }],
        tools,
        reasoning_effort: 'high',
      })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('Sunny in Oslo.');
    expect(response.headers.get('x-ctxgate-attempts')).toBe('3');
    const sent = azure.requests.slice(since);
    expect(sent.map((request) => [request.path, request.status])).toEqual([
      ['/v1/chat/completions', 400],
      ['/v1/responses', 400],
      ['/v1/responses', 200],
    ]);
    const input = (sent.at(-1)?.body as { input: Array<{ type?: string }> }).input;
    expect(input.map((item) => item.type ?? 'message')).toEqual([
      'message',
      'function_call',
      'function_call_output',
    ]);
  });
});
