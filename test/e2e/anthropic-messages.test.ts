// End to end (docs/anthropic.md): Anthropic's Messages API through the official @anthropic-ai/sdk,
// natively to a strict fake Anthropic (`kind: anthropic`, whose real window the gateway is not told)
// and bridged to the strict fake Chat Completions provider: whole and streamed answers, a tool round
// trip, thinking signatures kept, count_tokens, errors in Anthropic's shape with its overflow wording,
// recovery from "prompt is too long", and a session by X-Session-Id.
import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic, contentText, documentPages, webSearchBlocks } from '../helpers/fake-anthropic.js';
import { pdf } from '../helpers/pdf.js';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { prose } from '../helpers/text.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const anthropicWindow = 6_000;
/** The window of a Claude the gateway is told of, for a catalog of deferred tools. */
const catalogWindow = 30_000;
let anthropic: FakeAnthropic;
let catalogClaude: FakeAnthropic;
/** Claude behind Vertex (the flags it does not know refused by name) and behind Bedrock ("invalid beta flag"). */
let vertexClaude: FakeAnthropic;
let bedrockClaude: FakeAnthropic;
let openai: FakeUpstream;
let harness: GatewayHarness;

/** A Chat Completions model of the strict fake that follows a schema for its answer when asked one. */
const structuredChatModel = 'gpt-structured';
/** The trip a model plans, as JSON; and as the prose a model writes when asked no schema. */
const trip = { city: 'Lisbon', days: 3, stops: ['Alfama', 'Belém'] };
const tripProse = 'Here is a plan: three days in Lisbon, Alfama first, then Belém.';
/** The answer of a model asked `format` (chat's response_format, or Claude's output_config.format). */
const structuredAnswer = (format: unknown): string =>
  (format as { type?: unknown } | undefined)?.type === 'json_schema' ? JSON.stringify(trip) : tripProse;
let anthropicUrl: string;

beforeAll(async () => {
  anthropic = new FakeAnthropic({
    window: anthropicWindow,
    apiKey: 'sk-ant-operator',
    // Claude models that take thinking in one mode only.
    thinkingModes: {
      'claude-opus-4-8': 'adaptive',
      'claude-opus-4-7': 'adaptive',
      'claude-haiku-4-5-20251001': 'enabled',
      'MiniMax-M3': 'adaptive',
      'MiniMax-M3-budget': 'enabled',
    },
    efforts: {
      'claude-opus-4.7': ['medium'],
      'claude-sonnet-4.5': 'none',
      'claude-haiku-4-5': 'no effort',
      // As GitHub Copilot serves Opus (efforts up to high), and a Claude that takes no effort.
      'claude-opus-4-7-copilot': ['low', 'medium', 'high'],
      'claude-sonnet-4-5-effortless': 'no effort',
    },
    noDeferral: ['z-ai/glm-5.3'],
    blockTypes: { 'doubao-seed-2.0-code': ['text', 'thinking', 'image', 'tool_use', 'tool_result'] },
    noSystemMessages: { 'deepseek-v4-flash': 'serde', 'glm-5.2': 'pydantic', 'gpt-5.5-via-relay': 'relay' },
    templateSystemFirst: ['qwen3.8:27b'],
    noCacheTtl: ['claude-sonnet-4-20250514'],
    noStrictTools: ['claude-sonnet-5-bedrock'],
    unexplained: ['kimi-for-coding', 'kimi-k3'],
    deepseekEndpoint: ['deepseek-v4-pro[1m]'],
    moonshotSchemas: ['kimi-for-coding'],
    zenResults: ['claude-sonnet-4-6-zen'],
    noLongContext: {
      'claude-3-5-haiku-20241022': 'subscription',
      'claude-3-7-sonnet-20250219': 'authentication',
    },
    longContext: ['claude-sonnet-4-0', 'claude-sonnet-4-5-unbilled'],
    longContextUnbilled: ['claude-sonnet-4-5-unbilled'],
    fastUnbilled: ['claude-opus-4-8-uncredited'],
    alwaysThinks: ['glm-5.3-ark'],
  });
  // Beside the plain local model, one that thinks as DeepSeek V4 does and one served as Gemini 3 is.
  openai = new FakeUpstream({
    windows: { 'local-model': 8_192 },
    thinking: ['deepseek-v4-pro'],
    thoughtSignatures: ['gemini-3-pro-preview'],
    // As DeepSeek's API: no file part.
    noFiles: ['deepseek-chat'],
    // A model that answers in JSON only when asked a schema, prose otherwise.
    respond: (_messages, body) =>
      body.model === structuredChatModel ? { content: structuredAnswer(body.response_format) } : undefined,
  });
  anthropicUrl = await anthropic.start();
  catalogClaude = new FakeAnthropic({ window: catalogWindow, apiKey: 'sk-ant-operator' });
  const interleaved = ['interleaved-thinking-2025-05-14'];
  vertexClaude = new FakeAnthropic({
    apiKey: 'sk-ant-operator',
    betas: { accepted: interleaved, refusal: 'named' },
    unknownMembers: ['diagnostics'],
    unknownBlockMembers: ['tool_use.caller', 'text.citations'],
  });
  bedrockClaude = new FakeAnthropic({
    apiKey: 'sk-ant-operator',
    betas: { accepted: interleaved, refusal: 'bare' },
  });
  const openaiUrl = await openai.start();
  harness = await startGateway({
    env: {
      UPSTREAM_BASE_URL: openaiUrl,
      REDIS_URL: inject('redisUrl'),
      ANTHROPIC_KEY: 'sk-ant-operator',
      GATEWAY_API_KEYS: 'gw-anthropic-test',
    },
    configYaml: [
      'upstreams:',
      '  - name: catalog',
      `    base_url: ${await catalogClaude.start()}`,
      '    kind: anthropic',
      '    api_key_env: ANTHROPIC_KEY',
      '    models: ["claude-catalog-*", "claude-untold-*"]',
      '  - name: vertex',
      `    base_url: ${await vertexClaude.start()}`,
      '    kind: anthropic',
      '    api_key_env: ANTHROPIC_KEY',
      '    models: ["claude-vertex-*"]',
      '  - name: bedrock',
      `    base_url: ${await bedrockClaude.start()}`,
      '    kind: anthropic',
      '    api_key_env: ANTHROPIC_KEY',
      '    models: ["claude-bedrock-*"]',
      '  - name: anthropic',
      `    base_url: ${anthropicUrl}`,
      '    kind: anthropic',
      '    api_key_env: ANTHROPIC_KEY',
      '    models: ["claude-*", "MiniMax-*", "z-ai/*", "doubao-*", "glm-5.3-ark", "deepseek-v4-flash", "deepseek-v4-pro[1m]", "glm-5.2", "qwen3.8:27b", "kimi-*", "gpt-5.5-via-relay"]',
      'policies:',
      '  tiny:',
      '    budgets:',
      '      max_request_tokens: { limit: 5, mode: hard }',
      'models:',
      // Sonnet 4.5's window, small here, and a fallback to Opus 4.7's, larger: a model of the other thinking mode.
      '  - match: claude-sonnet-4-5-20250929',
      '    window: 3000',
      '    fallbacks: [claude-opus-4-7]',
      '  - match: claude-opus-4-7',
      `    window: ${anthropicWindow}`,
      '  - match: claude-catalog-*',
      `    window: ${catalogWindow}`,
      '  - match: local-model',
      '    window: 8192',
      '    output_reserve: 512',
      '',
    ].join('\n'),
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await anthropic.stop();
  await catalogClaude.stop();
  await vertexClaude.stop();
  await bedrockClaude.stop();
  await openai.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new Anthropic({
    baseURL: harness.baseUrl.replace(/\/v1$/, ''),
    apiKey: 'gw-anthropic-test',
    maxRetries: 0,
    defaultHeaders: headers,
  });

/** A user message attaching a PDF as Claude Code does (a document block titled report.pdf), then asking. */
const pdfMessage = (report: Buffer, question: string): Anthropic.MessageParam => ({
  role: 'user',
  content: [
    {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: report.toString('base64') },
      title: 'report.pdf',
    },
    { type: 'text', text: question },
  ],
});

/** A Chat Completions request to the gateway, with the gateway key, as any chat client sends one. */
const postChat = (body: Record<string, unknown>) =>
  fetch(`${harness.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer gw-anthropic-test' },
    body: JSON.stringify(body),
  });

const weatherTool = {
  name: 'get_weather',
  description: 'The weather in a city.',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** The model: calls the weather tool for a question, answers from the tool's result once it has one. */
function toolModel(messages: Array<{ role: string; content: unknown }>): {
  text?: string;
  toolUse?: { name: string; input: Record<string, unknown> };
} {
  const last = messages.at(-1);
  const result = Array.isArray(last?.content)
    ? (last.content as Array<{ type: string; content?: unknown }>).find(
        (block) => block.type === 'tool_result',
      )
    : undefined;
  if (result !== undefined) return { text: `The tool said: ${contentText(result.content)}` };
  return { toolUse: { name: 'get_weather', input: { city: 'Oslo' } } };
}

describe('POST /v1/messages to an anthropic upstream (native)', () => {
  it('answers a message, with the operator key as x-api-key and the context headers', async () => {
    anthropic.respond = () => ({ text: 'Hello, native.' });
    const before = anthropic.messageRequests.length;
    const { data, response } = await client({ 'anthropic-beta': 'context-management-2025-06-27' })
      .messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 200,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'Hi?' }],
      })
      .withResponse();
    expect(data.type).toBe('message');
    expect(data.content).toEqual([{ type: 'text', text: 'Hello, native.' }]);
    expect(data.stop_reason).toBe('end_turn');
    const sent = anthropic.messageRequests[before];
    expect(sent?.headers['x-api-key']).toBe('sk-ant-operator');
    expect(sent?.headers.authorization).toBeUndefined();
    // Anthropic's own headers are passed on.
    expect(sent?.headers['anthropic-beta']).toBe('context-management-2025-06-27');
    expect(sent?.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(sent?.body.system).toBe('Be brief.');
    expect(sent?.body.max_tokens).toBe(200);
    expect(data.usage.input_tokens).toBe(sent?.inputTokens);
    expect(Number(response.headers.get('x-context-input-tokens'))).toBeGreaterThan(0);
    expect(response.headers.get('x-context-retries')).toBe('0');
  });

  it('adds anthropic-version when the client sent none (curl), which Anthropic requires', async () => {
    anthropic.respond = () => ({ text: 'versioned' });
    const response = await fetch(`${harness.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer gw-anthropic-test' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { content: unknown }).content).toEqual([
      { type: 'text', text: 'versioned' },
    ]);
    expect(anthropic.messageRequests.at(-1)?.headers['anthropic-version']).toBe('2023-06-01');
  });

  it('streams the answer as Anthropic events', async () => {
    anthropic.respond = () => ({ text: 'Streamed natively, in pieces.' });
    const stream = client().messages.stream({
      model: 'claude-sonnet-4-5',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Stream please.' }],
    });
    const seen: string[] = [];
    stream.on('streamEvent', (event) => seen.push(event.type));
    const message = await stream.finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'Streamed natively, in pieces.' }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(seen[0]).toBe('message_start');
    expect(seen).toContain('content_block_delta');
    expect(seen.at(-1)).toBe('message_stop');
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it('makes a tool round trip, streamed and not, the tool_result right after its tool_use', async () => {
    anthropic.respond = (body) => toolModel(body.messages as never);
    for (const streamed of [false, true]) {
      const question = { role: 'user' as const, content: 'Weather in Oslo?' };
      const first = streamed
        ? await client()
            .messages.stream({
              model: 'claude-haiku-4-5',
              max_tokens: 300,
              tools: [weatherTool],
              messages: [question],
            })
            .finalMessage()
        : await client().messages.create({
            model: 'claude-haiku-4-5',
            max_tokens: 300,
            tools: [weatherTool],
            messages: [question],
          });
      expect(first.stop_reason).toBe('tool_use');
      const use = first.content.find((block) => block.type === 'tool_use');
      expect(use).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Oslo' } });
      const answer = await client().messages.create({
        model: 'claude-haiku-4-5',
        max_tokens: 300,
        tools: [weatherTool],
        messages: [
          question,
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: (use as { id: string }).id, content: '12°C, rain' },
            ],
          },
        ],
      });
      expect(answer.content).toEqual([{ type: 'text', text: 'The tool said: 12°C, rain' }]);
      // The tools went to Anthropic as the client wrote them.
      expect(anthropic.messageRequests.at(-1)?.body.tools).toEqual([weatherTool]);
    }
  });

  it('sends what the engine left of a Claude Code request in the client’s own bytes', async () => {
    anthropic.respond = () => ({ text: 'Lu.' });
    const before = anthropic.messageRequests.length;
    // Claude Code's shape: two system blocks (cache_control on the last), its tools, a tool loop;
    // written indented and with every é an escape, as some clients write JSON.
    const messages: unknown[] = [{ role: 'user', content: [{ type: 'text', text: 'Résume le dépôt.' }] }];
    for (let step = 0; step < 3; step++) {
      messages.push({
        role: 'assistant',
        content: [
          { type: 'tool_use', id: `toolu_${step}`, name: 'get_weather', input: { city: `Città ${step}` } },
        ],
      });
      messages.push({
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: `toolu_${step}`, content: `café ${prose(100, step)}` }],
      });
    }
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      system: [
        { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
        { type: 'text', text: 'Réponds brièvement.', cache_control: { type: 'ephemeral' } },
      ],
      tools: [weatherTool],
      messages,
    };
    const spelled = (value: unknown, indent: number) =>
      JSON.stringify(value, null, 2)
        .replaceAll('\n', `\n${' '.repeat(indent)}`)
        .replace(/é/g, '\\u00e9');
    const response = await fetch(`${harness.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'gw-anthropic-test' },
      body: spelled(body, 0),
    });
    expect(response.status).toBe(200);
    const sent = anthropic.messageRequests[before];
    expect(sent?.status).toBe(200);
    for (const message of messages) expect(sent?.rawBody).toContain(spelled(message, 4));
    expect(sent?.rawBody).toContain(spelled(body.system, 2));
    expect(sent?.rawBody).toContain(spelled(body.tools, 2));
    expect(sent?.body.messages).toEqual(messages);
  });

  it.each([
    ['a thinking model’s reasoning (DeepSeek V4: a block of no signature)', 'deepseek-v4-pro'],
    [
      'Gemini 3’s thought signature (a block of no text, its signature the gateway’s)',
      'gemini-3-pro-preview',
    ],
  ])(
    'goes on natively on Claude after a step bridged to another model: the thinking block the gateway made for %s is not sent (Anthropic refuses it)',
    async (_name, other) => {
      anthropic.respond = (body) => toolModel(body.messages as never);
      openai.setDefault({
        toolCalls: [{ id: 'call_oslo', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
      });
      const question = { role: 'user' as const, content: 'Weather in Oslo?' };
      const first = await client().messages.create({
        model: other,
        max_tokens: 500,
        tools: [weatherTool],
        messages: [question],
      });
      openai.setDefault({});
      expect(first.content.map((block) => block.type)).toEqual(['thinking', 'tool_use']);
      // The conversation goes on on Claude, as an agent passes the content back as it got it.
      const { data: answer, response } = await client()
        .messages.create({
          model: 'claude-sonnet-4-5',
          max_tokens: 500,
          tools: [weatherTool],
          messages: [
            question,
            { role: 'assistant', content: first.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_oslo', content: 'sunny' }] },
          ],
        })
        .withResponse();
      expect(answer.content.at(-1)).toEqual({ type: 'text', text: 'The tool said: sunny' });
      expect(response.headers.get('x-ctxgate-dropped')).toBe('thinking');
      const sent = anthropic.messageRequests.at(-1)?.body as { messages: Array<{ content: unknown[] }> };
      expect(sent.messages[1]?.content).toEqual([first.content[1]]);
    },
  );

  it('keeps the thinking block and its signature in the current tool loop (Anthropic refuses it without)', async () => {
    anthropic.respond = (body) => ({
      thinking: 'I should look it up.',
      ...toolModel(body.messages as never),
    });
    const question = { role: 'user' as const, content: 'Weather in Oslo?' };
    const first = await client().messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 2_000,
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      tools: [weatherTool],
      messages: [question],
    });
    expect(first.content[0]).toMatchObject({ type: 'thinking', thinking: 'I should look it up.' });
    expect((first.content[0] as { signature: string }).signature).toMatch(/^sig-/);
    console.log(
      'PROBE0',
      JSON.stringify(first.content),
      JSON.stringify(catalogClaude.messageRequests.at(-1)?.status),
    );
    const use = first.content.find((block) => block.type === 'tool_use') as { id: string };
    const answer = await client().messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 2_000,
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      tools: [weatherTool],
      messages: [
        question,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
      ],
    });
    expect(answer.content.at(-1)).toEqual({ type: 'text', text: 'The tool said: sunny' });
    const sent = anthropic.messageRequests.at(-1)?.body as {
      messages: Array<{ content: unknown[] }>;
      thinking: unknown;
    };
    expect(sent.thinking).toEqual({ type: 'enabled', budget_tokens: 1_024 });
    expect(sent.messages[1]?.content[0]).toEqual(first.content[0]);
  });

  it('recovers from "prompt is too long" on a window it was not told, and the next request fits first time', async () => {
    anthropic.respond = () => ({ text: 'Fitted.' });
    const messages: Anthropic.MessageParam[] = [];
    for (let turn = 0; turn < 40; turn++)
      messages.push(
        { role: 'user', content: prose(150, turn) },
        { role: 'assistant', content: prose(60, 100 + turn) },
      );
    messages.push({ role: 'user', content: 'What now?' });
    const before = anthropic.messageRequests.length;
    const { data, response } = await client()
      .messages.create({ model: 'claude-opus-4-1', max_tokens: 500, messages })
      .withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'Fitted.' }]);
    const calls = anthropic.messageRequests.slice(before);
    expect(calls[0]?.status).toBe(400);
    expect(calls.at(-1)?.status).toBe(200);
    expect(Number(response.headers.get('x-context-retries'))).toBe(calls.length - 1);
    expect(Number(response.headers.get('x-context-dropped-messages'))).toBeGreaterThan(0);
    const last = calls.at(-1)?.body as { messages: Array<{ role: string; content: unknown }> };
    expect(contentText(last.messages.at(-1)?.content)).toContain('What now?');
    // The omission notice is text in a user message, never a system message mid-conversation.
    expect(last.messages.every((message) => message.role === 'user' || message.role === 'assistant')).toBe(
      true,
    );

    const afterFirst = anthropic.messageRequests.length;
    const next = await client()
      .messages.create({
        model: 'claude-opus-4-1',
        max_tokens: 500,
        messages: [
          ...messages,
          { role: 'assistant', content: 'Fitted.' },
          { role: 'user', content: 'And then?' },
        ],
      })
      .withResponse();
    expect(next.response.headers.get('x-context-retries')).toBe('0');
    expect(anthropic.messageRequests.length - afterFirst).toBe(1);
  });
});

// A thinking budget (`thinking: {type: "enabled", budget_tokens}`) must be under max_tokens; the gateway
// lowers max_tokens to what the fitted prompt leaves, and Anthropic refused every such request
// ("`max_tokens` must be greater than `thinking.budget_tokens`", anthropics/claude-code#8756).
/**
 * `ask` answered with `text` after one refusal of the flags its first request carried (the upstream's
 * `anthropic-beta` headers as `sent`), and its next request answered at once.
 */
async function expectFlagsLeftOutOnce(
  fake: FakeAnthropic,
  ask: () => Promise<{ content: unknown }>,
  text: string,
  sent: string[],
): Promise<void> {
  const before = fake.messageRequests.length;
  const answer = await ask();
  expect(answer.content).toEqual([{ type: 'text', text }]);
  const requests = fake.messageRequests.slice(before);
  expect(requests.map((request) => request.status)).toEqual([400, 200]);
  expect(requests.map((request) => request.headers['anthropic-beta'])).toEqual(sent);
  const again = fake.messageRequests.length;
  await ask();
  expect(fake.messageRequests.slice(again).map((request) => request.status)).toEqual([200]);
}

// Claude Code's `[1m]` models ask Claude's 1M window with a flag, which a model without it (Haiku, a fallback
// onto it) or a key without it refuses (anthropics/claude-code's users behind relays: diegosouzapw/OmniRoute
// #10119; clewdr, sub2api): every request of the session failed, though the model answers without it.
describe("Claude's 1M window asked of a model or a key without it", () => {
  const flags = ['context-1m-2025-08-07', 'interleaved-thinking-2025-05-14'];
  it.each([
    ['the subscription has none', 'claude-3-5-haiku-20241022'],
    ["a Pro plan's token takes none", 'claude-3-7-sonnet-20250219'],
  ])(
    '%s: the flag left out after one refusal, the others kept; the next request at once',
    async (_case, model) => {
      anthropic.respond = () => ({ text: 'Hello without a million tokens.' });
      const ask = () =>
        client().beta.messages.create({
          model,
          max_tokens: 100,
          betas: flags,
          messages: [{ role: 'user', content: 'Hi?' }],
        });
      await expectFlagsLeftOutOnce(anthropic, ask, 'Hello without a million tokens.', [
        flags.join(','),
        'interleaved-thinking-2025-05-14',
      ]);
    },
  );
});

describe("Claude's 1M window asked of a model that has it with the flag (Sonnet 4, 4.5)", () => {
  // Ten turns of about 26,000 tokens: past the 200,000 the gateway knows the model by, within the million.
  const messages: Anthropic.MessageParam[] = Array.from({ length: 10 }, (_unused, turn) => [
    { role: 'user' as const, content: `Chapter ${turn}: ${prose(26_000, turn)}` },
    { role: 'assistant' as const, content: `Read chapter ${turn}.` },
  ]).flat();
  messages.push({ role: 'user', content: 'What happened in chapter 0?' });

  it('is sent whole, the window the flag asks; the same conversation without the flag is fitted to 200,000', async () => {
    anthropic.respond = () => ({ text: 'It began.' });
    const ask = (betas: string[]) =>
      client()
        .beta.messages.create({ model: 'claude-sonnet-4-0', max_tokens: 1_000, betas, messages })
        .withResponse();
    const before = anthropic.messageRequests.length;
    const flagged = await ask(['context-1m-2025-08-07']);
    expect(flagged.data.content).toEqual([{ type: 'text', text: 'It began.' }]);
    expect(flagged.response.headers.get('x-context-dropped-messages')).toBe('0');
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([200]);
    expect((sent[0]?.body as { messages: unknown[] }).messages).toHaveLength(messages.length);

    const plain = await ask([]);
    expect(Number(plain.response.headers.get('x-context-dropped-messages'))).toBeGreaterThan(0);
    expect(anthropic.messageRequests.at(-1)?.status).toBe(200);
  });

  it('on a key not billed for the million (a 429 that is no rate): fitted to the 200,000, the next request at once', async () => {
    anthropic.respond = () => ({ text: 'It began.' });
    const ask = () =>
      client()
        .beta.messages.create({
          model: 'claude-sonnet-4-5-unbilled',
          max_tokens: 1_000,
          betas: ['context-1m-2025-08-07'],
          messages,
        })
        .withResponse();
    const before = anthropic.messageRequests.length;
    const first = await ask();
    expect(first.data.content).toEqual([{ type: 'text', text: 'It began.' }]);
    expect(Number(first.response.headers.get('x-context-dropped-messages'))).toBeGreaterThan(0);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.at(0)?.status).toBe(429);
    expect(sent.at(-1)?.status).toBe(200);
    expect(sent.at(-1)?.headers['anthropic-beta']).toBeUndefined();
    const again = anthropic.messageRequests.length;
    await ask();
    expect(anthropic.messageRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

// Fast mode on a key with no usage credits for it: Anthropic's 429 "Usage credits are required for fast
// mode." is no rate (waiting changes nothing: CLIProxyAPI#4703; Claude Code's log shows it 2,364 times a day,
// each retried before falling back), and Anthropic's fast mode guide has the client send the request again
// at standard speed.
describe('fast mode asked on a key with no usage credits for it', () => {
  it('is answered at standard speed after one refusal, with no wait; the next request at once', async () => {
    anthropic.respond = () => ({ text: 'Done, at standard speed.' });
    const ask = () =>
      client().beta.messages.create({
        model: 'claude-opus-4-8-uncredited',
        max_tokens: 200,
        speed: 'fast',
        betas: ['fast-mode-2026-02-01', 'interleaved-thinking-2025-05-14'],
        messages: [{ role: 'user', content: 'Refactor this quickly.' }],
      });
    const before = anthropic.messageRequests.length;
    const answer = await ask();
    expect(answer.content).toEqual([{ type: 'text', text: 'Done, at standard speed.' }]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([429, 200]);
    expect((sent[0]?.body as { speed?: unknown }).speed).toBe('fast');
    expect((sent[1]?.body as { speed?: unknown }).speed).toBeUndefined();
    // The flag that asks for it goes with it; the others stay.
    expect(sent[1]?.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    const again = anthropic.messageRequests.length;
    await ask();
    expect(anthropic.messageRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });

  // Credits are the key's: where each client's own key goes to the upstream, one client's lack of them says
  // nothing of the next one's. The fix is kept for that key: a client whose key has credits gets fast mode.
  it("on a client's own key: kept for that key alone; another key still gets fast mode", async () => {
    const ownKeys = new FakeAnthropic({
      fastUnbilled: ['claude-opus-4-8'],
      fastCreditedKeys: ['sk-ant-with-credits'],
    });
    const ownKeysUrl = await ownKeys.start();
    const gateway = await startGateway({
      env: { UPSTREAM_BASE_URL: ownKeysUrl },
      configYaml: [
        'upstreams:',
        '  - name: own-keys',
        `    base_url: ${ownKeysUrl}`,
        '    kind: anthropic',
        '    models: ["claude-*"]',
        '',
      ].join('\n'),
    });
    try {
      ownKeys.respond = () => ({ text: 'Done.' });
      const ask = (apiKey: string) =>
        new Anthropic({
          baseURL: gateway.baseUrl.replace(/\/v1$/, ''),
          apiKey,
          maxRetries: 0,
        }).beta.messages.create({
          model: 'claude-opus-4-8',
          max_tokens: 200,
          speed: 'fast',
          betas: ['fast-mode-2026-02-01'],
          messages: [{ role: 'user', content: 'Refactor this quickly.' }],
        });
      const speeds = () =>
        ownKeys.messageRequests.map((request) => [
          request.headers['x-api-key'],
          request.status,
          (request.body as { speed?: unknown }).speed ?? 'standard',
        ]);
      await ask('sk-ant-no-credits');
      await ask('sk-ant-no-credits');
      await ask('sk-ant-with-credits');
      expect(speeds()).toEqual([
        ['sk-ant-no-credits', 429, 'fast'],
        ['sk-ant-no-credits', 200, 'standard'],
        ['sk-ant-no-credits', 200, 'standard'],
        ['sk-ant-with-credits', 200, 'fast'],
      ]);
    } finally {
      await gateway.close();
      await ownKeys.stop();
    }
  });
});

describe('anthropic-beta flags an Anthropic-compatible upstream refuses (Vertex, Bedrock)', () => {
  // Claude Code's flags with every request (anthropics/claude-code#70563, QuantumNous/new-api#2975).
  const flags = [
    'interleaved-thinking-2025-05-14',
    'prompt-caching-scope-2026-01-05',
    'advisor-tool-2026-03-01',
  ];
  const ask = (model: string) =>
    client().beta.messages.create({
      model,
      max_tokens: 100,
      betas: flags,
      messages: [{ role: 'user', content: 'Hi?' }],
    });

  it('Vertex: the flags it named are left out after its one refusal; the next request goes at once', async () => {
    vertexClaude.respond = () => ({ text: 'Hello from Vertex.' });
    await expectFlagsLeftOutOnce(vertexClaude, () => ask('claude-vertex-sonnet-4-6'), 'Hello from Vertex.', [
      flags.join(','),
      'interleaved-thinking-2025-05-14',
    ]);
  });

  it('Vertex: the members the flags it refused turn on are left out too, each after its one refusal', async () => {
    vertexClaude.respond = () => ({ text: 'Hello from Vertex.' });
    const request = {
      model: 'claude-vertex-opus-4-6',
      max_tokens: 100,
      betas: ['context-management-2025-06-27', 'advanced-tool-use-2025-11-20'],
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      tools: [
        { name: 'list_files', description: 'Lists files.', input_schema: { type: 'object' as const } },
        Object.assign({}, weatherTool, { defer_loading: true }),
      ],
      messages: [{ role: 'user' as const, content: 'Hi?' }],
    };
    const before = vertexClaude.messageRequests.length;
    const answer = await client().beta.messages.create(request as never);
    expect((answer as { content: unknown }).content).toEqual([{ type: 'text', text: 'Hello from Vertex.' }]);
    const sent = vertexClaude.messageRequests.slice(before);
    expect(sent.map((each) => each.refusal ?? each.status)).toEqual([
      'Unexpected value(s) `context-management-2025-06-27`, `advanced-tool-use-2025-11-20` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.',
      'context_management: Extra inputs are not permitted',
      'tools.1.custom.defer_loading: Extra inputs are not permitted',
      200,
    ]);
    const last = sent.at(-1)?.body as { tools: unknown[]; context_management?: unknown };
    expect(last.context_management).toBeUndefined();
    expect(last.tools).toEqual([request.tools[0], weatherTool]);
    const again = vertexClaude.messageRequests.length;
    await client().beta.messages.create(request as never);
    expect(vertexClaude.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });

  it("Vertex: Claude Code's diagnostics, a member it does not know, is left out after its one refusal; the next at once", async () => {
    vertexClaude.respond = () => ({ text: 'Hello from Vertex.' });
    const before = vertexClaude.messageRequests.length;
    const ask = () =>
      client().messages.create({
        model: 'claude-vertex-fable-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Hi?' }],
        // As Claude Code 2.1.220 sends it (anthropics/claude-code#82539).
        diagnostics: { previous_message_id: 'msg_01ABC' },
      } as never);
    expect((await ask()).content).toEqual([expect.objectContaining({ text: 'Hello from Vertex.' })]);
    expect((await ask()).content).toEqual([expect.objectContaining({ text: 'Hello from Vertex.' })]);
    const sent = vertexClaude.messageRequests.slice(before);
    expect(sent.map((request) => [request.status, request.body.diagnostics])).toEqual([
      [400, { previous_message_id: 'msg_01ABC' }],
      [200, undefined],
      [200, undefined],
    ]);
  });

  it("Vertex: Claude's tool call sent back with its caller, which it does not know, goes without after one refusal; the next at once", async () => {
    vertexClaude.respond = () => ({ text: 'It rains in Oslo.' });
    const before = vertexClaude.messageRequests.length;
    const ask = () =>
      client().messages.create({
        model: 'claude-vertex-opus-5',
        max_tokens: 100,
        tools: [weatherTool],
        messages: [
          { role: 'user', content: 'Weather in Oslo?' },
          {
            role: 'assistant',
            content: [
              // As Claude answers a tool call (its programmatic tool calling's caller).
              {
                type: 'tool_use',
                id: 'toolu_1',
                name: 'get_weather',
                input: { city: 'Oslo' },
                caller: { type: 'direct' },
              },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'rain' }] },
        ],
      } as never);
    expect((await ask()).content).toEqual([expect.objectContaining({ text: 'It rains in Oslo.' })]);
    await ask();
    const sent = vertexClaude.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([400, 200, 200]);
    expect(sent[0]?.refusal).toBe('messages.1.content.0.tool_use.caller: Extra inputs are not permitted');
    expect((sent[1]?.body.messages as Array<{ content: unknown }>)[1]?.content).toEqual([
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
    ]);
  });

  it('Bedrock: the header is left out after its one refusal, which names no flag; the next request goes at once', async () => {
    bedrockClaude.respond = () => ({ text: 'Hello from Bedrock.' });
    const before = bedrockClaude.messageRequests.length;
    const answer = await ask('claude-bedrock-opus-4-7');
    expect(answer.content).toEqual([{ type: 'text', text: 'Hello from Bedrock.' }]);
    const sent = bedrockClaude.messageRequests.slice(before);
    expect(sent.map((request) => [request.status, request.headers['anthropic-beta']])).toEqual([
      [400, flags.join(',')],
      [200, undefined],
    ]);
    const again = bedrockClaude.messageRequests.length;
    await ask('claude-bedrock-opus-4-7');
    expect(bedrockClaude.messageRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

describe('thinking in the mode the Claude model takes', () => {
  const question = { role: 'user' as const, content: 'Hi?' };

  it.each([
    ['Opus 4.8, which takes adaptive thinking only (an older client)', 'claude-opus-4-8'],
    // CherryHQ/cherry-studio#16431: "invalid params, invalid thinking.type: \"enabled\" (allowed: adaptive,
    // disabled) (2013)" — Claude Code's budget to a model it does not know.
    ["MiniMax-M3, which takes adaptive thinking only, in MiniMax's words", 'MiniMax-M3'],
  ])('a budget to %s: adaptive after one refusal', async (_name, model) => {
    anthropic.respond = () => ({ text: 'Hello.' });
    const before = anthropic.messageRequests.length;
    const ask = () =>
      client().messages.create({
        model,
        max_tokens: 4_000,
        thinking: { type: 'enabled', budget_tokens: 2_000 },
        messages: [question],
      });
    expect((await ask()).content.at(-1)).toEqual({ type: 'text', text: 'Hello.' });
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => [request.status, request.body.thinking])).toEqual([
      [400, { type: 'enabled', budget_tokens: 2_000 }],
      [200, { type: 'adaptive' }],
    ]);
    const again = anthropic.messageRequests.length;
    await ask();
    expect(anthropic.messageRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });

  it.each([
    ['Haiku 4.5, which takes a budget only', 'claude-haiku-4-5-20251001'],
    ['a MiniMax M3 that takes a budget only (anomalyco/opencode#35138)', 'MiniMax-M3-budget'],
  ])('adaptive thinking to %s: half of max_tokens after one refusal', async (_name, model) => {
    anthropic.respond = () => ({ text: 'Hello.' });
    const before = anthropic.messageRequests.length;
    await client().messages.create({
      model,
      max_tokens: 4_000,
      thinking: { type: 'adaptive' } as never,
      messages: [question],
    });
    expect(
      anthropic.messageRequests.slice(before).map((request) => [request.status, request.body.thinking]),
    ).toEqual([
      [400, { type: 'adaptive' }],
      [200, { type: 'enabled', budget_tokens: 2_000 }],
    ]);
  });

  it("Sonnet 4.5's request too long for it goes to its fallback, Opus 4.7, in the mode Opus takes: one refusal", async () => {
    anthropic.respond = () => ({ text: 'Read it all.' });
    const before = anthropic.messageRequests.length;
    const { data, response } = await client()
      .messages.create({
        model: 'claude-sonnet-4-5-20250929',
        max_tokens: 1_500,
        thinking: { type: 'enabled', budget_tokens: 1_024 },
        messages: [{ role: 'user', content: `Summarize this. ${prose(2_600, 7)}` }],
      })
      .withResponse();
    expect(data.content.at(-1)).toEqual({ type: 'text', text: 'Read it all.' });
    expect(response.headers.get('x-context-fallback')).toBe('claude-opus-4-7');
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => [request.body.model, request.status, request.body.thinking])).toEqual([
      ['claude-opus-4-7', 400, { type: 'enabled', budget_tokens: 1_024 }],
      ['claude-opus-4-7', 200, { type: 'adaptive' }],
    ]);
  });
});

describe("an effort the Claude model does not take, as GitHub Copilot's Messages endpoint serves Claude", () => {
  const ask = (model: string) =>
    client().messages.create({
      model,
      max_tokens: 1_000,
      output_config: { effort: 'high' },
      messages: [{ role: 'user', content: 'Hi?' }],
    } as never);

  it('an effort Opus 4.7 does not take there is asked as one it does, after one refusal', async () => {
    anthropic.respond = () => ({ text: 'Hello.' });
    const before = anthropic.messageRequests.length;
    await ask('claude-opus-4.7');
    expect(
      anthropic.messageRequests.slice(before).map((request) => [request.status, request.body.output_config]),
    ).toEqual([
      [400, { effort: 'high' }],
      [200, { effort: 'medium' }],
    ]);
    const again = anthropic.messageRequests.length;
    await ask('claude-opus-4.7');
    expect(anthropic.messageRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });

  it('Haiku 4.5, which takes no effort parameter (Anthropic): the effort left out, the rest of output_config kept', async () => {
    anthropic.respond = () => ({ text: 'Hello.' });
    const before = anthropic.messageRequests.length;
    await client().messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 1_000,
      output_config: {
        effort: 'high',
        format: { type: 'json_schema', schema: { type: 'object', additionalProperties: false } },
      },
      messages: [{ role: 'user', content: 'Hi?' }],
    } as never);
    expect(
      anthropic.messageRequests.slice(before).map((request) => [request.status, request.body.output_config]),
    ).toEqual([
      [
        400,
        {
          effort: 'high',
          format: { type: 'json_schema', schema: { type: 'object', additionalProperties: false } },
        },
      ],
      [200, { format: { type: 'json_schema', schema: { type: 'object', additionalProperties: false } } }],
    ]);
  });

  it('a model that takes no effort at all gets none, after one refusal', async () => {
    anthropic.respond = () => ({ text: 'Hello.' });
    const before = anthropic.messageRequests.length;
    await ask('claude-sonnet-4.5');
    expect(
      anthropic.messageRequests.slice(before).map((request) => [request.status, request.body.output_config]),
    ).toEqual([
      [400, { effort: 'high' }],
      [200, undefined],
    ]);
  });
});

describe("tools loaded on demand, to OpenRouter's Messages endpoint for a model not Anthropic's", () => {
  it('are sent whole, and the tool search tool left out, after one refusal', async () => {
    anthropic.respond = () => ({ text: 'Hello from GLM.' });
    const searchTool = { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' };
    const request = {
      model: 'z-ai/glm-5.3',
      max_tokens: 500,
      tools: [
        searchTool,
        weatherTool,
        Object.assign({}, weatherTool, { name: 'get_tide', defer_loading: true }),
      ],
      messages: [{ role: 'user' as const, content: 'Hi?' }],
    };
    const before = anthropic.messageRequests.length;
    await client().messages.create(request as never);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.status)).toEqual([400, 200]);
    expect(sent[1]?.body.tools).toEqual([weatherTool, Object.assign({}, weatherTool, { name: 'get_tide' })]);
    const again = anthropic.messageRequests.length;
    await client().messages.create(request as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

describe("context management, to OpenRouter's Messages endpoint for a model not Anthropic's", () => {
  // "No endpoints available that support Anthropic's context management features
  // (context-management-2025-06-27)": every request of Claude Code failed so (multica-ai/multica#450).
  it('is left out, member and flag, after one refusal; the next request at once', async () => {
    anthropic.respond = () => ({ text: 'Hello from GLM.' });
    const request = {
      model: 'z-ai/glm-5.3',
      max_tokens: 500,
      betas: ['context-management-2025-06-27', 'interleaved-thinking-2025-05-14'],
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      messages: [{ role: 'user' as const, content: 'Hi?' }],
    };
    const before = anthropic.messageRequests.length;
    const answer = await client().beta.messages.create(request as never);
    expect((answer as { content: unknown }).content).toEqual([{ type: 'text', text: 'Hello from GLM.' }]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.status)).toEqual([400, 200]);
    expect(sent[1]?.body.context_management).toBeUndefined();
    expect(sent[1]?.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    const again = anthropic.messageRequests.length;
    await client().beta.messages.create(request as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

describe("content blocks Volcano Engine's Ark does not take (Claude Code on its coding plan)", () => {
  it('are sent as text after one refusal: a PDF read, a web search, a tool search; the next request at once', async () => {
    anthropic.respond = () => ({ text: 'Summarized.' });
    const lookup = Object.assign({}, weatherTool, { name: 'mcp__inventory__lookup' });
    const request = {
      model: 'doubao-seed-2.0-code',
      max_tokens: 500,
      tools: [weatherTool, lookup],
      messages: [
        { role: 'user', content: 'Read report.pdf, search the release, find the inventory tool.' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_read', name: 'Read', input: { file_path: 'report.pdf' } }],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_read',
              content: [
                { type: 'text', text: 'PDF file read: report.pdf (1 page)' },
                {
                  type: 'document',
                  source: {
                    type: 'base64',
                    media_type: 'application/pdf',
                    data: pdf(['Q3 revenue']).toString('base64'),
                  },
                  title: 'report.pdf',
                },
              ],
            },
          ],
        },
        {
          role: 'assistant',
          content: [
            ...webSearchBlocks('srvtoolu_1', 'https://example.com/ctxgate-1.0'),
            { type: 'tool_use', id: 'toolu_search', name: 'ToolSearch', input: { query: 'inventory' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_search',
              content: [{ type: 'tool_reference', tool_name: 'mcp__inventory__lookup' }],
            },
          ],
        },
      ],
    };
    const before = anthropic.messageRequests.length;
    const answer = await client().messages.create(request as never);
    expect(answer.content).toEqual([{ type: 'text', text: 'Summarized.' }]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.status)).toEqual([400, 200]);
    // Each block Ark does not take is told as text where it stood: nothing of the conversation is lost.
    const said = JSON.stringify(sent[1]?.body.messages);
    expect(said).toContain('report.pdf');
    expect(said).toContain('https://example.com/ctxgate-1.0');
    expect(said).toContain('Tool found: mcp__inventory__lookup');
    expect(said).toContain('PDF file read: report.pdf (1 page)');
    const again = anthropic.messageRequests.length;
    await client().messages.create(request as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

describe("a PDF a tool read, to OpenCode Zen's Claude (a tool result of text and images only)", () => {
  it("is told as text after one refusal; the user's own PDF goes as it was; the next request at once", async () => {
    anthropic.respond = () => ({ text: 'Read both.' });
    const report = pdf(['Q3 revenue']);
    const document = {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: report.toString('base64') },
      title: 'report.pdf',
    };
    const request = {
      model: 'claude-sonnet-4-6-zen',
      max_tokens: 300,
      tools: [weatherTool],
      messages: [
        pdfMessage(report, 'Compare it with the one the tool reads.'),
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_r', name: 'get_weather', input: { city: 'a.pdf' } }],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_r',
              content: [{ type: 'text', text: 'PDF read.' }, document],
            },
          ],
        },
      ],
    };
    const before = anthropic.messageRequests.length;
    await client().messages.create(request as never);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.status)).toEqual([400, 200]);
    const messages = sent[1]?.body.messages as Array<{ content: Array<{ type: string; content?: unknown }> }>;
    expect(messages[0]?.content[0]?.type).toBe('document');
    expect(messages[2]?.content[0]?.content).toEqual([
      { type: 'text', text: 'PDF read.' },
      { type: 'text', text: '[document report.pdf: not shown, the model takes no documents]' },
    ]);
    const again = anthropic.messageRequests.length;
    await client().messages.create(request as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

describe('a system message in the conversation (Claude Code), to an endpoint that takes none there', () => {
  // (A relay of the Messages API before ChatGPT's Codex backend refuses it in its words.)
  it.each(['deepseek-v4-flash', 'glm-5.2', 'qwen3.8:27b', 'gpt-5.5-via-relay'])(
    '%s: answered after one refusal, the instruction a user text where it stood; the next request at once',
    async (model) => {
      anthropic.respond = () => ({ text: 'Concise.' });
      const request = {
        model,
        max_tokens: 300,
        system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: 'Explain the retry budget.' },
          { role: 'assistant', content: 'It caps retries per minute.' },
          { role: 'user', content: 'And the backoff?' },
          {
            role: 'system',
            content: [{ type: 'text', text: '<system-reminder>Be brief.</system-reminder>' }],
          },
        ],
      };
      const before = anthropic.messageRequests.length;
      const answer = await client().messages.create(request as never);
      expect(answer.content).toEqual([{ type: 'text', text: 'Concise.' }]);
      const sent = anthropic.messageRequests.slice(before);
      expect(sent.map((each) => each.status)).toEqual([
        model === 'glm-5.2' ? 422 : model === 'qwen3.8:27b' ? 500 : 400,
        200,
      ]);
      const messages = sent[1]?.body.messages as Array<{ role: string; content: unknown }>;
      expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
      expect(JSON.stringify(messages[2]?.content)).toContain('<system-reminder>Be brief.</system-reminder>');
      // The system prompt stays the system prompt (its cache breakpoint with it).
      expect(sent[1]?.body.system).toEqual(request.system);
      const again = anthropic.messageRequests.length;
      await client().messages.create(request as never);
      expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
    },
  );
});

describe('hour-long cache breakpoints (Claude Code asks them), to Claude on Bedrock before it had them', () => {
  it('are asked for the 5-minute cache after one refusal; the next request at once', async () => {
    anthropic.respond = () => ({ text: 'Cached.' });
    const hour = { type: 'ephemeral', ttl: '1h' };
    const request = {
      model: 'claude-sonnet-4-20250514',
      max_tokens: 300,
      tools: [Object.assign({}, weatherTool, { cache_control: hour })],
      system: [{ type: 'text', text: 'You are Claude Code.', cache_control: hour }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather?', cache_control: hour }] }],
    };
    const before = anthropic.messageRequests.length;
    const answer = await client().messages.create(request as never);
    expect(answer.content).toEqual([{ type: 'text', text: 'Cached.' }]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.refusal ?? each.status)).toEqual([
      'tools.0.custom.cache_control.ttl: Extra inputs are not permitted',
      200,
    ]);
    // Every breakpoint stays where the client put it, the 5-minute kind.
    const body = sent[1]?.body as {
      tools: Array<{ cache_control?: unknown }>;
      system: Array<{ cache_control?: unknown }>;
      messages: Array<{ content: Array<{ cache_control?: unknown }> }>;
    };
    expect(
      [body.tools[0], body.system[0], body.messages[0]?.content[0]].map((block) => block?.cache_control),
    ).toEqual([{ type: 'ephemeral' }, { type: 'ephemeral' }, { type: 'ephemeral' }]);
    const again = anthropic.messageRequests.length;
    await client().messages.create(request as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

// Strict tool use: LobeHub's structured output and pi's Anthropic provider send `strict` on tools, which
// Claude on Bedrock refuses for some models — Sonnet 5, Opus 4.7, 4.8 and 5.5 (BerriAI/litellm#33193,
// lobehub/lobehub#19876, earendil-works/pi#9261) — so every request with such tools failed.
describe('strict tool use, to Claude on Bedrock where the model refuses it', () => {
  it('every tool is sent without `strict` after one refusal; the next request at once', async () => {
    anthropic.respond = () => ({ toolUse: { name: 'get_weather', input: { city: 'Oslo' } } });
    const strictWeather = Object.assign({}, weatherTool, { strict: true });
    const listFiles = {
      name: 'list_files',
      description: 'Lists files.',
      input_schema: { type: 'object' as const },
    };
    const request = {
      model: 'claude-sonnet-5-bedrock',
      max_tokens: 300,
      tools: [listFiles, strictWeather, Object.assign({}, listFiles, { name: 'read_file', strict: false })],
      messages: [{ role: 'user' as const, content: 'Weather in Oslo?' }],
    };
    const before = anthropic.messageRequests.length;
    const answer = await client().messages.create(request as never);
    expect(answer.content).toEqual([
      expect.objectContaining({ type: 'tool_use', name: 'get_weather', input: { city: 'Oslo' } }),
    ]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.refusal ?? each.status)).toEqual([
      'tools.1.custom.strict: Extra inputs are not permitted',
      200,
    ]);
    // Each tool otherwise as the client wrote it, in its order.
    expect(sent[1]?.body.tools).toEqual([
      listFiles,
      weatherTool,
      Object.assign({}, listFiles, { name: 'read_file' }),
    ]);
    const again = anthropic.messageRequests.length;
    await client()
      .messages.stream(request as never)
      .finalMessage();
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

// Anthropic refuses a forced tool with thinking on ("Thinking may not be enabled when tool_choice forces
// tool use."): the AI SDK's structured output with thinking (mastra-ai/mastra#7507), oh-my-pi's todo tool
// (can1357/oh-my-pi#341) failed every such request.
describe('a forced tool with thinking on, natively to Claude', () => {
  it('is asked with the choice left to Claude, the forced tool alone, after one refusal; the next at once', async () => {
    anthropic.respond = () => ({ toolUse: { name: 'get_weather', input: { city: 'Oslo' } } });
    const listFiles = {
      name: 'list_files',
      description: 'Lists files.',
      input_schema: { type: 'object' as const },
    };
    const request = {
      model: 'claude-sonnet-4-6',
      max_tokens: 4_000,
      thinking: { type: 'enabled', budget_tokens: 2_000 },
      tools: [listFiles, weatherTool],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user' as const, content: 'Weather in Oslo?' }],
    };
    const before = anthropic.messageRequests.length;
    const answer = await client().messages.create(request as never);
    // Claude thought, then called the tool.
    expect(answer.content.map((block) => block.type)).toEqual(['thinking', 'tool_use']);
    expect(answer.content[1]).toMatchObject({ name: 'get_weather', input: { city: 'Oslo' } });
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.refusal ?? each.status)).toEqual([
      'Thinking may not be enabled when tool_choice forces tool use.',
      200,
    ]);
    expect(sent[1]?.body.tool_choice).toEqual({ type: 'auto' });
    expect(sent[1]?.body.tools).toEqual([weatherTool]);
    expect(sent[1]?.body.thinking).toEqual(request.thinking);
    const again = anthropic.messageRequests.length;
    await client().messages.create(request as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

// DeepSeek's Anthropic endpoint refuses three things Claude Code sends: a forced tool (its WebSearch's and
// WebFetch's side requests: "deepseek-reasoner does not support this tool_choice", even for V4 Pro), a
// sub-agent's thinking turned off beside the effort CLAUDE_CODE_EFFORT_LEVEL sets (deepseek-ai/DeepSeek-V3#1397),
// and its metadata's user id (a JSON text: deepseek-ai/awesome-deepseek-agent#67).
describe("DeepSeek's Anthropic endpoint and what Claude Code sends it", () => {
  it('each refusal learned once, the request then as the endpoint takes it; the next at once', async () => {
    anthropic.respond = () => ({ toolUse: { name: 'WebSearch', input: { query: 'ctxgate' } } });
    const webSearch = {
      name: 'WebSearch',
      description: 'Searches the web.',
      input_schema: { type: 'object' as const, properties: { query: { type: 'string' } } },
    };
    const request = {
      model: 'deepseek-v4-pro[1m]',
      max_tokens: 300,
      metadata: { user_id: JSON.stringify({ device_id: 'a1b2', session_id: 'c3d4' }) },
      thinking: { type: 'disabled' },
      output_config: { effort: 'max' },
      tools: [webSearch, weatherTool],
      tool_choice: { type: 'tool', name: 'WebSearch' },
      messages: [{ role: 'user' as const, content: 'Search for ctxgate.' }],
    };
    const before = anthropic.messageRequests.length;
    const answer = await client().beta.messages.create(request as never);
    expect((answer as { content: unknown[] }).content).toEqual([
      expect.objectContaining({ type: 'tool_use', name: 'WebSearch', input: { query: 'ctxgate' } }),
    ]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.refusal ?? each.status)).toEqual([
      "Invalid 'user_id': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
      'thinking options type cannot be disabled when reasoning_effort is set',
      'deepseek-reasoner does not support this tool_choice',
      200,
    ]);
    const body = sent[3]?.body as Record<string, unknown>;
    expect(body.metadata).toBeUndefined();
    expect(body.thinking).toBeUndefined();
    expect(body.output_config).toEqual({ effort: 'max' });
    expect(body.tool_choice).toEqual({ type: 'auto' });
    expect(body.tools).toEqual([webSearch]);
    const again = anthropic.messageRequests.length;
    await client().beta.messages.create(request as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

// Claude Code turns thinking off for its sub-agents (2.1.166 and later); a model that always thinks refuses
// that — GLM-5.3 on Volcengine's Anthropic endpoint (VicBilibily/GCMP#376) — and every sub-agent failed.
describe('thinking turned off, asked of a model that always thinks', () => {
  it('is left out after one refusal, the model thinking as it does; the next request at once', async () => {
    anthropic.respond = () => ({ text: 'Sub-task done.' });
    const ask = () =>
      client().messages.create({
        model: 'glm-5.3-ark',
        max_tokens: 300,
        thinking: { type: 'disabled' },
        messages: [{ role: 'user', content: 'List the files.' }],
      });
    const before = anthropic.messageRequests.length;
    const answer = await ask();
    expect(answer.content).toEqual([{ type: 'text', text: 'Sub-task done.' }]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.status)).toEqual([400, 200]);
    expect((sent[1]?.body as { thinking?: unknown }).thinking).toBeUndefined();
    const again = anthropic.messageRequests.length;
    await ask();
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });
});

// Kimi's Anthropic endpoint answers a request it does not take with one message, "Invalid request Error",
// naming nothing: Claude Code's tool search (a deferred tool, a tool_reference in a tool result) and its
// beta features failed every request (MoonshotAI/kimi-cli#1449, farion1231/cc-switch#2941).
describe("Kimi's refusal that names nothing ('Invalid request Error')", () => {
  const toolSearch = {
    name: 'ToolSearch',
    description: 'Searches the deferred tools.',
    input_schema: { type: 'object' as const, properties: { query: { type: 'string' } }, required: ['query'] },
  };
  /** What Claude Code sends once its ToolSearch found a deferred tool. */
  const afterToolSearch = (model: string, extra: Record<string, unknown> = {}) =>
    Object.assign(
      {
        model,
        max_tokens: 300,
        betas: ['context-management-2025-06-27', 'advanced-tool-use-2025-11-20'],
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        tools: [toolSearch, Object.assign({}, weatherTool, { defer_loading: true })],
        messages: [
          { role: 'user', content: 'Weather in Oslo?' },
          {
            role: 'assistant',
            content: [
              { type: 'tool_use', id: 'toolu_search', name: 'ToolSearch', input: { query: 'weather' } },
            ],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_search',
                content: [{ type: 'tool_reference', tool_name: 'get_weather' }],
              },
            ],
          },
        ],
      },
      extra,
    );

  it('is sent again once in the form every such endpoint takes, which is then kept: the next request at once', async () => {
    anthropic.respond = () => ({ toolUse: { name: 'get_weather', input: { city: 'Oslo' } } });
    const before = anthropic.messageRequests.length;
    const answer = await client().beta.messages.create(afterToolSearch('kimi-for-coding') as never);
    expect((answer as { content: unknown[] }).content).toEqual([
      expect.objectContaining({ type: 'tool_use', name: 'get_weather', input: { city: 'Oslo' } }),
    ]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.refusal ?? each.status)).toEqual(['Invalid request Error', 200]);
    const body = sent[1]?.body as {
      context_management?: unknown;
      tools: unknown[];
      messages: Array<{ content: unknown }>;
    };
    expect(sent[1]?.headers['anthropic-beta']).toBeUndefined();
    expect(body.context_management).toBeUndefined();
    // The deferred tool sent whole; the search's result told as the tool it found.
    expect(body.tools).toEqual([toolSearch, weatherTool]);
    expect(JSON.stringify(body.messages[2]?.content)).toContain('Tool found: get_weather');
    const again = anthropic.messageRequests.length;
    await client().beta.messages.create(afterToolSearch('kimi-for-coding') as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });

  it('more than the 128 tools it takes ("a max of 128 tools can be supported"): the first 128 after one refusal', async () => {
    anthropic.respond = () => ({ text: 'Done.' });
    const tools = Array.from({ length: 140 }, (_unused, index) =>
      Object.assign({}, weatherTool, { name: `mcp__server__tool_${index}` }),
    );
    const request = {
      model: 'kimi-for-coding',
      max_tokens: 100,
      tools,
      messages: [{ role: 'user', content: 'Hi?' }],
    };
    const before = anthropic.messageRequests.length;
    const answer = await client().messages.create(request as never);
    expect(answer.content).toEqual([{ type: 'text', text: 'Done.' }]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.refusal ?? each.status)).toEqual([
      'a max of 128 tools can be supported',
      200,
    ]);
    expect((sent[1]?.body.tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual(
      tools.slice(0, 128).map((tool) => tool.name),
    );
  });

  // Its validator of Moonshot Flavored JSON Schema holds an MCP tool's input_schema to it too (a type beside
  // anyOf: the Notion MCP server, MoonshotAI/kimi-code#2661), in the words its Chat Completions API uses.
  it("an MCP tool's schema its validator refuses: every tool written in its form after one refusal", async () => {
    anthropic.respond = () => ({
      toolUse: { name: 'notion-create-attachment', input: { filename: 'a.txt' } },
    });
    const notion = {
      name: 'notion-create-attachment',
      description: 'Attaches a file.',
      input_schema: {
        type: 'object' as const,
        anyOf: [
          { type: 'object', properties: { filename: { type: 'string' }, content: { type: 'string' } } },
          { type: 'object', properties: { filename: { type: 'string' }, source_url: { type: 'string' } } },
        ],
      },
    };
    const request = {
      model: 'kimi-for-coding',
      max_tokens: 300,
      tools: [weatherTool, notion],
      messages: [{ role: 'user' as const, content: 'Attach a.txt.' }],
    };
    const before = anthropic.messageRequests.length;
    const answer = await client().messages.create(request as never);
    expect(answer.content).toEqual([
      expect.objectContaining({ type: 'tool_use', name: 'notion-create-attachment' }),
    ]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((each) => each.status)).toEqual([400, 200]);
    expect(sent[0]?.refusal).toContain('is not a valid moonshot flavored json schema');
    const tools = sent[1]?.body.tools as Array<{ name: string; input_schema: Record<string, unknown> }>;
    expect(tools.map((tool) => tool.name)).toEqual(['get_weather', 'notion-create-attachment']);
    // The alternatives written so the validator takes them; each property still there.
    expect(JSON.stringify(tools[1]?.input_schema)).toContain('source_url');
    const again = anthropic.messageRequests.length;
    await client().messages.create(request as never);
    expect(anthropic.messageRequests.slice(again).map((each) => each.status)).toEqual([200]);
  });

  it('refused again in that form: the client gets the refusal, and nothing is learned', async () => {
    anthropic.respond = () => ({ text: 'Sunny.' });
    const before = anthropic.messageRequests.length;
    // A genuine fault the form does not touch (a temperature Kimi does not take).
    const refused = await client()
      .beta.messages.create(afterToolSearch('kimi-k3', { temperature: 1.5 }) as never)
      .then(
        () => undefined,
        (error: unknown) => error as { status?: number; message?: string },
      );
    expect(refused?.status).toBe(400);
    expect(refused?.message).toContain('Invalid request Error');
    expect(anthropic.messageRequests.slice(before).map((each) => each.refusal ?? each.status)).toEqual([
      'Invalid request Error',
      'Invalid request Error',
    ]);
    // Nothing was kept: the next request goes as the client wrote it, and is fixed on its own refusal.
    const next = anthropic.messageRequests.length;
    await client().beta.messages.create(afterToolSearch('kimi-k3') as never);
    const sent = anthropic.messageRequests.slice(next);
    expect(sent.map((each) => each.refusal ?? each.status)).toEqual(['Invalid request Error', 200]);
    expect(sent[0]?.body.context_management).toBeDefined();
  });
});

describe('a thinking budget, natively to Claude, when the gateway lowers max_tokens', () => {
  it('lowers the budget under the max_tokens it sends: the request is answered', async () => {
    catalogClaude.respond = () => ({ thinking: 'Weighing it.', text: 'Thought it through.' });
    const messages: Anthropic.MessageParam[] = [];
    for (let turn = 0; turn < 20; turn++)
      messages.push(
        { role: 'user', content: prose(500, 40 + turn) },
        { role: 'assistant', content: prose(200, 140 + turn) },
      );
    messages.push({ role: 'user', content: 'Think about it.' });
    // A Claude whose window the gateway learns from its first refusal, then keeps the whole conversation
    // and lowers max_tokens to what is left.
    const { data, response } = await client()
      .messages.create({
        model: 'claude-untold-1',
        max_tokens: 20_000,
        thinking: { type: 'enabled', budget_tokens: 12_000 },
        messages,
      })
      .withResponse();
    expect(data.content.at(-1)).toEqual({ type: 'text', text: 'Thought it through.' });
    expect(response.headers.get('x-context-dropped-messages')).toBe('0');
    const sent = catalogClaude.messageRequests.at(-1);
    expect(sent?.status).toBe(200);
    expect((sent?.body.messages as unknown[]).length).toBe(messages.length);
    const maxTokens = Number(sent?.body.max_tokens);
    const budget = Number((sent?.body.thinking as { budget_tokens?: unknown }).budget_tokens);
    // Lowered to what the window leaves, and the budget under it: the most it can be.
    expect(maxTokens).toBeLessThan(12_000);
    expect(budget).toBe(maxTokens - 1);
  });
});

/** A catalog tool, deferred behind tool search: some 250 tokens of description each. */
const catalogTool = (index: number) => ({
  name: `catalog_${index}`,
  description: `Catalog operation ${index}. ${prose(200, 500 + index)}`,
  input_schema: { type: 'object' as const, properties: { id: { type: 'string' } } },
  defer_loading: true,
});

// A catalog of tools behind Anthropic's tool search (`defer_loading`): Claude is shown a deferred tool
// only once a message references it, and counts it only then. Counted whole, 120 tools (some 33,000
// tokens) passed the window: the conversation, which fits, was cut (or the request refused).
describe('a catalog of deferred tools (tool search), natively to Claude', () => {
  it('counts a deferred tool only once a message references it: a conversation that fits is sent whole', async () => {
    catalogClaude.respond = () => ({ text: 'Found it.' });
    const tools = [
      { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' },
      weatherTool,
      ...Array.from({ length: 120 }, (_unused, index) => catalogTool(index)),
    ];
    const messages: Anthropic.MessageParam[] = [];
    for (let turn = 0; turn < 12; turn++)
      messages.push(
        { role: 'user', content: prose(500, turn) },
        { role: 'assistant', content: prose(200, 100 + turn) },
      );
    messages.push({ role: 'user', content: 'Find the catalog tool for refunds.' });
    const first = await client()
      .messages.create({ model: 'claude-catalog-1', max_tokens: 1_000, messages, tools } as never)
      .withResponse();
    expect(first.data.content).toEqual([{ type: 'text', text: 'Found it.' }]);
    expect(first.response.headers.get('x-context-dropped-messages')).toBe('0');
    const sent = catalogClaude.messageRequests.at(-1);
    expect(sent?.status).toBe(200);
    expect((sent?.body.messages as unknown[]).length).toBe(messages.length);
    expect((sent?.body.tools as unknown[]).length).toBe(tools.length);

    // Two tools a search found are referenced, and count from now on: still whole.
    const found = [
      ...messages,
      {
        role: 'assistant' as const,
        content: [{ type: 'tool_use' as const, id: 'toolu_s', name: 'tool_search_tool_regex', input: {} }],
      },
      {
        role: 'user' as const,
        content: [
          {
            type: 'tool_result' as const,
            tool_use_id: 'toolu_s',
            content: [
              { type: 'tool_reference', tool_name: 'catalog_7' },
              { type: 'tool_reference', tool_name: 'catalog_9' },
            ],
          },
        ],
      },
    ];
    const second = await client()
      .messages.create({ model: 'claude-catalog-1', max_tokens: 1_000, messages: found, tools } as never)
      .withResponse();
    expect(second.response.headers.get('x-context-dropped-messages')).toBe('0');
    // The two referenced tools (some 270 tokens each) count now, the 118 others still not.
    const counted = (response: Response) => Number(response.headers.get('x-context-input-tokens'));
    expect(counted(second.response) - counted(first.response)).toBeGreaterThan(400);
    expect(counted(second.response) - counted(first.response)).toBeLessThan(1_000);
    expect((catalogClaude.messageRequests.at(-1)?.body.messages as unknown[]).length).toBe(found.length);
  });
});

// Claude's compaction (`context_management` edit `compact_20260112`, as the AI SDK and the Anthropic SDK's
// tool runner ask for it): past the trigger Claude answers a `compaction` block, the client keeps its whole
// history and sends the block back in it, and Claude reads the conversation from its last summary on.
// Counted whole, a history twice the window was cut by the gateway (an omission notice, summaries) and
// every answer raised the truncation alarm, while Claude took each request whole; bridged to a Chat
// Completions model the summary was dropped and what it summarized sent again.
describe("Claude's compaction", () => {
  const compactEdit = {
    edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: 9_000 } }],
  };
  const code = (turn: number) => `R${(turn * 7919) % 10_007}`;

  // Asked on a Chat Completions model, an on-demand compaction (the AI SDK's `compaction` option) was
  // dropped and named: the model answered the conversation, the client got no summary and kept growing
  // its history.
  it.each([
    ['whole', false],
    ['streamed', true],
  ])(
    'answers a compaction asked on demand on a Chat Completions model with its summary, as Claude does (%s)',
    async (_name, stream) => {
      const summary = 'The user plans a trip to Lisbon in May on 1,800 euros.';
      openai.enqueue({ content: summary });
      const chatBefore = new Set(openai.chatRequests);
      const body = {
        model: 'local-model',
        max_tokens: 1_000,
        messages: [
          { role: 'user' as const, content: 'I want to go to Lisbon in May, on 1,800 euros.' },
          { role: 'assistant' as const, content: 'Noted.' },
        ],
        compaction: { type: 'summarize' },
      };
      const beta = client({ 'anthropic-beta': 'compact-2026-09-04' }).beta.messages;
      const message = stream
        ? await beta.stream(body as never).finalMessage()
        : await beta.create(body as never);
      expect(message.content).toEqual([{ type: 'compaction', content: summary }]);
      expect(message.stop_reason).toBe('compaction');
      const chat = openai.chatRequests.find((request) => !chatBefore.has(request));
      const sent = chat?.body as { messages: ChatMessage[]; stream?: boolean };
      expect(sent.messages.at(-1)?.role).toBe('user');
      expect(String(sent.messages.at(-1)?.content)).toMatch(/^Write a summary of this conversation/);
      expect(sent.stream).toBeUndefined();
    },
  );

  it('sends Claude the conversation from its last summary on: nothing cut, no alarm; a Chat Completions model continues from the summary', async () => {
    catalogClaude.respond = () => ({ text: 'Noted.' });
    const before = catalogClaude.messageRequests.length;
    const messages: Anthropic.MessageParam[] = [];
    for (let turn = 0; turn < 40; turn++) {
      messages.push({
        role: 'user',
        content: `Fact ${turn}: the code of room ${turn} is ${code(turn)}. ${prose(1_200, 700 + turn)}`,
      });
      const { data, response } = await client({ 'anthropic-beta': 'compact-2026-01-12' })
        .messages.create({
          model: 'claude-catalog-compact',
          max_tokens: 1_000,
          messages,
          context_management: compactEdit,
        } as never)
        .withResponse();
      expect(response.status).toBe(200);
      expect(response.headers.get('x-context-dropped-messages')).toBe('0');
      expect(response.headers.get('x-context-upstream-truncated')).toBeNull();
      messages.push({ role: 'assistant', content: data.content as never });
    }
    // The history is over the window (30,000) twice over, and Claude compacted it more than once.
    const sent = catalogClaude.messageRequests.slice(before);
    expect(sent.every((request) => request.status === 200)).toBe(true);
    const compactions = messages.filter(
      (message) =>
        Array.isArray(message.content) && (message.content[0] as { type: string }).type === 'compaction',
    );
    expect(compactions.length).toBeGreaterThan(1);
    // What Claude was sent after its first compaction starts at its last one, which holds every fact.
    const last = sent.at(-1)?.body.messages as Array<{
      role: string;
      content: Array<{ type: string; content?: string }>;
    }>;
    expect(last[0]?.content[0]?.type).toBe('compaction');
    expect(last[0]?.content[0]).toEqual((compactions.at(-1) as { content: unknown[] }).content[0]);
    expect(JSON.stringify(last)).not.toContain('omitted');

    // The conversation goes on on a Chat Completions model: it is given the summary, not what it replaced.
    const chatBefore = new Set(openai.chatRequests);
    messages.push({ role: 'user', content: 'What is the code of room 3?' });
    const bridged = await client()
      .messages.create({ model: 'local-model', max_tokens: 500, messages } as never)
      .withResponse();
    expect(bridged.response.headers.get('x-ctxgate-dropped')).toBeNull();
    const chat = openai.chatRequests.find((request) => !chatBefore.has(request));
    const chatMessages = (chat?.body as { messages: ChatMessage[] }).messages;
    expect(String(chatMessages[0]?.content)).toContain(`Fact 3: the code of room 3 is ${code(3)}`);
    expect(String(chatMessages[0]?.content)).toMatch(/^The conversation before this point was compacted/);
    expect(chatMessages.filter((message) => message.role === 'user').length).toBeLessThan(
      messages.length / 2 - 1,
    );
  });
});

// Natively Claude's answer went back to the client rebuilt from its chat form, which says only text,
// thinking and tool calls: a stream lost every other block — a web search's server_tool_use (its query
// became the arguments of a tool call of no name) and results, a compaction, redacted thinking — and,
// whole or streamed, a stop reason chat has no word for became end_turn (pause_turn, which asks the client
// to go on; compaction, which the AI SDK checks for) and the stop sequence that matched was lost.
describe("Claude's answer, natively, as Claude gave it", () => {
  const search = webSearchBlocks('srvtoolu_1', 'https://example.com/ctxgate');
  const asks = {
    model: 'claude-catalog-answers',
    max_tokens: 1_000,
    messages: [{ role: 'user', content: 'Search.' }],
  };
  const answer = async (stream: boolean) => {
    if (!stream) return client().messages.create(asks as never);
    return client()
      .messages.stream(asks as never)
      .finalMessage();
  };
  // A compaction is beta: its stream's `compaction_delta` is read by the SDK's beta stream.
  const betaAnswer = async (stream: boolean) => {
    if (!stream) return client().beta.messages.create(asks as never);
    return client()
      .beta.messages.stream(asks as never)
      .finalMessage();
  };

  it.each([
    ['streamed', true],
    ['whole', false],
  ])(
    'gives back a web search paused (pause_turn), redacted thinking and a tool call, %s',
    async (_name, stream) => {
      catalogClaude.respond = () => ({
        blocks: [{ type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' }, ...search],
        text: 'Searching further.',
        stopReason: 'pause_turn',
      });
      const message = await answer(stream);
      expect(message.content).toEqual([
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
        ...search,
        { type: 'text', text: 'Searching further.' },
      ]);
      expect(message.stop_reason).toBe('pause_turn');
    },
  );

  it.each([
    ['streamed', true],
    ['whole', false],
  ])(
    'gives back a compaction asked on demand (stop_reason compaction) and the stop sequence that matched, %s',
    async (_name, stream) => {
      catalogClaude.respond = () => ({
        blocks: [{ type: 'compaction', content: 'The user asked for a search.' }],
        stopReason: 'compaction',
      });
      const compacted = await betaAnswer(stream);
      // (A stream's compaction block starts with `encrypted_content: null`, which the SDK keeps.)
      expect(compacted.content).toHaveLength(1);
      expect(compacted.content[0]).toMatchObject({
        type: 'compaction',
        content: 'The user asked for a search.',
      });
      expect(compacted.stop_reason).toBe('compaction');
      catalogClaude.respond = () => ({
        text: 'One, two',
        stopReason: 'stop_sequence',
        stopSequence: 'three',
      });
      const stopped = await answer(stream);
      expect([stopped.stop_reason, stopped.stop_sequence]).toEqual(['stop_sequence', 'three']);
    },
  );
});

describe('a PDF a Chat Completions client attaches (OpenAI’s file part), to Claude', () => {
  it('reaches Claude as a document block, which it reads', async () => {
    const report = pdf(['Revenue grew.', 'The Lisbon office opens in May.']);
    anthropic.respond = (body) => {
      const pages = (body.messages as Array<{ content: unknown }>).flatMap((message) =>
        documentPages(message.content),
      );
      return {
        text: pages.length === 0 ? 'I see no document.' : `Page 2 says: ${pages[0]?.[1] ?? 'nothing'}`,
      };
    };
    const before = anthropic.messageRequests.length;
    const chat = await postChat({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What does page 2 say?' },
            {
              type: 'file',
              file: {
                filename: 'report.pdf',
                file_data: `data:application/pdf;base64,${report.toString('base64')}`,
              },
            },
          ],
        },
      ],
    });
    expect(chat.status).toBe(200);
    const answer = (await chat.json()) as { choices: Array<{ message: { content: string } }> };
    expect(answer.choices[0]?.message.content).toBe('Page 2 says: The Lisbon office opens in May.');
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([200]);
    expect((sent[0]?.body.messages as Array<{ content: unknown }>)[0]?.content).toEqual([
      { type: 'text', text: 'What does page 2 say?' },
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: report.toString('base64') },
        title: 'report.pdf',
      },
    ]);
  });
});

describe('a chat conversation with blank messages, to Claude', () => {
  it('answers: a message of only whitespace is not sent as a text block, which Anthropic refuses', async () => {
    // As chat clients store them: a tool-calling turn's content "\n\n", a user message that was only a newline.
    anthropic.respond = () => ({ text: 'Still here.' });
    const before = anthropic.messageRequests.length;
    const chat = await postChat({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: '\n\n',
          tool_calls: [
            {
              id: 'toolu_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'rain' },
        { role: 'assistant', content: 'It rains.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: ' ' },
            { type: 'text', text: 'And now?' },
          ],
        },
        { role: 'assistant', content: '  ' },
        { role: 'user', content: 'Hello?' },
      ],
    });
    expect(chat.status).toBe(200);
    expect(anthropic.messageRequests.slice(before).map((request) => request.status)).toEqual([200]);
  });
});

describe('a Messages request with blank text blocks, natively to Claude', () => {
  it('answers: the blank blocks Claude Code has sent are left out, which Anthropic refuses on every request', async () => {
    anthropic.respond = () => ({ text: 'It rains in Oslo.' });
    const before = anthropic.messageRequests.length;
    const message = await client().messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: '\n\n' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'rain' },
            { type: 'text', text: ' ' },
          ],
        },
      ],
    });
    expect(message.content).toEqual([expect.objectContaining({ text: 'It rains in Oslo.' })]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([200]);
    expect((sent[0]?.body.messages as Array<{ content: unknown }>).map((entry) => entry.content)).toEqual([
      [{ type: 'text', text: 'Weather in Oslo?' }],
      [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }],
      [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'rain' }],
    ]);
  });
});

describe('a tool result holding half an emoji, natively to Claude, in a session', () => {
  // A tool's output cut between the two halves of an emoji (a `slice` in the tool, a binary file read
  // as text) is a lone surrogate half: the SDK writes it as `\ud83d`, which Anthropic refuses ("The
  // request body is not valid JSON: no low surrogate in string"), and a session that stored it was
  // refused on every later request (anthropics/claude-code#5934: "Had to start a new session").
  it('answers, the half sent as the replacement character, and the session goes on', async () => {
    anthropic.respond = (body) => {
      const last = (body.messages as Array<{ role: string; content: unknown }>).at(-1);
      const result = Array.isArray(last?.content)
        ? (last.content as Array<{ type: string; content?: unknown }>).find(
            (block) => block.type === 'tool_result',
          )
        : undefined;
      return result === undefined ? { text: 'Noted.' } : { text: `Read: ${contentText(result.content)}` };
    };
    const sessionId = `halves-${randomUUID()}`;
    const session = client({ 'x-session-id': sessionId });
    const cut = 'launch 🚀 done'.slice(0, 8);
    const before = anthropic.messageRequests.length;
    const first = await session.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'Read the log.' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_log', name: 'get_weather', input: { city: 'log' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_log', content: cut }] },
      ],
    });
    expect(first.content).toEqual([expect.objectContaining({ text: 'Read: launch \uFFFD' })]);
    // The next turn sends the stored history, the tool result with it.
    const second = await session.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'Thanks. Anything else?' }],
    });
    expect(second.content).toEqual([expect.objectContaining({ text: 'Noted.' })]);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([200, 200]);
    expect(JSON.stringify(sent[1]?.body.messages)).toContain('launch \uFFFD');
  });
});

describe('temperature with top_p, which Claude Sonnet 4.5 and later refuse', () => {
  it('answers a Messages request and a chat request that set both: top_p left out once refused', async () => {
    const before = anthropic.messageRequests.length;
    const message = await client().messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      // Sampling settings as an older SDK's types allowed them (the newest SDK's no longer list them).
      ...({ temperature: 0.3, top_p: 0.9 } as object),
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(message.content[0]).toMatchObject({ type: 'text' });
    const chat = await postChat({
      model: 'claude-sonnet-4-5',
      temperature: 0.3,
      top_p: 0.9,
      messages: [{ role: 'user', content: 'Hi again' }],
    });
    expect(chat.status).toBe(200);
    const sent = anthropic.messageRequests
      .slice(before)
      .map((request) => request.body as Record<string, unknown>);
    // One refusal, then both requests without top_p, the temperature kept.
    expect(sent.map((body) => [body.temperature, body.top_p ?? null])).toEqual([
      [0.3, 0.9],
      [0.3, null],
      [0.3, null],
    ]);
  });
});

describe('POST /v1/messages bridged to a Chat Completions upstream', () => {
  it('sends the plain messages it keeps of a shortened conversation in the client’s own bytes', async () => {
    openai.setDefault({ content: 'Oui.' });
    const before = openai.chatRequests.length;
    // 60 messages of ~250 tokens (over the 8,192-token window) written as some clients write JSON:
    // indented, every é an escape.
    const messages = Array.from({ length: 60 }, (_unused, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: `Message ${index}, café: ${prose(200, index)}`,
    }));
    messages.push({ role: 'user', content: 'Et le café?' });
    const body = JSON.stringify({ model: 'local-model', max_tokens: 100, messages }, null, 2).replace(
      /é/g,
      '\\u00e9',
    );
    const response = await fetch(`${harness.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'gw-anthropic-test' },
      body,
    });
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('x-context-dropped-messages'))).toBeGreaterThan(0);
    const sent = openai.chatRequests[before];
    expect(sent?.rawBody).toContain('{\n      "role": "user",\n      "content": "Et le caf\\u00e9?"\n    }');
    expect(sent?.rawBody).toContain('earlier messages of this conversation were omitted');
    expect((sent?.body as { messages: ChatMessage[] }).messages.at(-1)).toEqual({
      role: 'user',
      content: 'Et le café?',
    });
  });

  it('a server tool alone, left out, takes parallel calls off with it (OpenAI refuses that with no tools)', async () => {
    openai.setDefault({ content: 'Bridged hello.' });
    const before = openai.chatRequests.length;
    const { data, response } = await client()
      .messages.create({
        model: 'local-model',
        max_tokens: 100,
        tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
        messages: [{ role: 'user', content: 'Hi?' }],
      })
      .withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'Bridged hello.' }]);
    expect(response.headers.get('x-ctxgate-dropped')).toBe('tools.0 (web_search_20250305)');
    expect(openai.chatRequests.length - before).toBe(1);
    const sent = openai.chatRequests[before]?.body as Record<string, unknown>;
    expect([sent.tools, sent.tool_choice, sent.parallel_tool_calls]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('answers whole and streamed, tools as function tools and tool results as tool messages', async () => {
    openai.setDefault({ content: 'Bridged hello.' });
    const before = openai.chatRequests.length;
    const whole = await client().messages.create({
      model: 'local-model',
      max_tokens: 100,
      system: [{ type: 'text', text: 'Be kind.' }],
      messages: [{ role: 'user', content: 'Hi?' }],
    });
    expect(whole.content).toEqual([{ type: 'text', text: 'Bridged hello.' }]);
    expect((openai.chatRequests[before]?.body as { messages: ChatMessage[] }).messages).toEqual([
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'Hi?' },
    ]);
    // The client's Anthropic key never reaches the OpenAI upstream as x-api-key.
    expect(openai.chatRequests[before]?.headers['x-api-key']).toBeUndefined();

    const streamed = await client()
      .messages.stream({
        model: 'local-model',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Stream?' }],
      })
      .finalMessage();
    expect(streamed.content).toEqual([{ type: 'text', text: 'Bridged hello.' }]);
    expect(streamed.usage.input_tokens).toBe(openai.chatRequests.at(-1)?.promptTokens);

    openai.enqueue({ toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] });
    const first = await client().messages.create({
      model: 'local-model',
      max_tokens: 100,
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'Weather?' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Oslo' } },
    ]);
    openai.setDefault({ content: 'It rains.' });
    const answer = await client().messages.create({
      model: 'local-model',
      max_tokens: 100,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: 'rain' }] },
            { type: 'text', text: 'Thanks.' },
          ],
        },
      ],
    });
    expect(answer.content).toEqual([{ type: 'text', text: 'It rains.' }]);
    const sent = openai.chatRequests.at(-1)?.body as { messages: ChatMessage[]; tools: unknown[] };
    // The text sent with the tool result joins it: a local model's template (Devstral's, Mistral's) takes
    // no user message between the results and the answer.
    expect(sent.messages.map((message) => [message.role, message.content])).toEqual([
      ['user', 'Weather?'],
      ['assistant', null],
      ['tool', 'rain\n\nThanks.'],
    ]);
    expect(sent.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city.',
          parameters: weatherTool.input_schema,
        },
      },
    ]);
  });

  it('sends a PDF (a document block, as Claude Code attaches one) as the file part a Chat Completions model reads', async () => {
    openai.setDefault({ content: 'Read.' });
    const report = pdf(['Revenue grew.', 'The Lisbon office opens in May.']);
    const before = openai.chatRequests.length;
    const { response } = await client()
      .messages.create({
        model: 'local-model',
        max_tokens: 300,
        messages: [pdfMessage(report, 'What does page 2 say?')],
      })
      .withResponse();
    expect(response.headers.get('x-ctxgate-dropped')).toBeNull();
    const sent = openai.chatRequests
      .slice(before)
      .map((request) => request.body as { messages: ChatMessage[] });
    expect(sent.map((body) => body.messages.at(-1)?.content)).toEqual([
      [
        {
          type: 'file',
          file: {
            filename: 'report.pdf',
            file_data: `data:application/pdf;base64,${report.toString('base64')}`,
          },
        },
        { type: 'text', text: 'What does page 2 say?' },
      ],
    ]);
  });

  it('names the PDF to a model that takes no files (DeepSeek’s API refuses the part), and goes on', async () => {
    openai.setDefault({ content: 'Noted.' });
    const report = pdf(['Revenue grew.']);
    const ask = () =>
      client()
        .messages.create({
          model: 'deepseek-chat',
          max_tokens: 300,
          messages: [pdfMessage(report, 'Summarize it.')],
        })
        .withResponse();
    const before = openai.chatRequests.length;
    const { data, response } = await ask();
    expect(data.content).toEqual([expect.objectContaining({ type: 'text', text: 'Noted.' })]);
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = openai.chatRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([400, 200]);
    expect((sent[1]?.body as { messages: ChatMessage[] }).messages.at(-1)?.content).toEqual([
      { type: 'text', text: '[file report.pdf: not shown, the model takes no files]' },
      { type: 'text', text: 'Summarize it.' },
    ]);
    // The next request of the conversation goes right the first time.
    const again = await ask();
    expect(again.response.headers.get('x-ctxgate-attempts')).toBe('1');
  });

  it('names what a Chat Completions model cannot take in X-Ctxgate-Dropped', async () => {
    openai.setDefault({ content: 'ok' });
    const { response } = await client()
      .messages.create({
        model: 'local-model',
        max_tokens: 2_000,
        // Adaptive thinking has no word in chat (a budget goes as the effort: below).
        thinking: { type: 'adaptive' },
        messages: [{ role: 'user', content: 'Hi' }],
      })
      .withResponse();
    expect(response.headers.get('x-ctxgate-dropped')).toBe('thinking');
  });

  it('sends Claude Code’s user id, longer than OpenAI takes, as the same 64-character id every time', async () => {
    openai.setDefault({ content: 'ok' });
    // Claude Code's metadata.user_id: user_<64 hex>_account_<uuid>_session_<uuid>.
    const userId = `user_${'5e1d'.repeat(16)}_account_${randomUUID()}_session_${randomUUID()}`;
    const before = openai.chatRequests.length;
    for (const content of ['Hi', 'And again'])
      await client().messages.create({
        model: 'local-model',
        max_tokens: 500,
        metadata: { user_id: userId },
        messages: [{ role: 'user', content }],
      });
    const users = openai.chatRequests
      .slice(before)
      .map((request) => (request.body as { user?: string }).user);
    expect(users).toHaveLength(2);
    expect(users[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(users[1]).toBe(users[0]);
    expect(users[0]).not.toContain('5e1d');
  });
});

describe('Messages errors and token counts', () => {
  it('refuses a request without max_tokens in Anthropic’s shape', async () => {
    const response = await fetch(`${harness.baseUrl}/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'gw-anthropic-test',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
    });
  });

  it('refuses a wrong key in Anthropic’s shape, and the SDK reads it as an authentication error', async () => {
    const bad = new Anthropic({
      baseURL: harness.baseUrl.replace(/\/v1$/, ''),
      apiKey: 'wrong',
      maxRetries: 0,
    });
    await expect(
      bad.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('answers a turn that cannot fit with Anthropic’s "prompt is too long" wording', async () => {
    const error = await client()
      .messages.create({
        model: 'local-model',
        max_tokens: 100,
        messages: [{ role: 'user', content: prose(9_000, 7) }],
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as { error: unknown }).error).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: expect.stringMatching(/^prompt is too long: \d+ tokens > 8192 maximum/),
      },
    });
  });

  it('counts the tokens of a request as it would be sent, by the provider’s own count', async () => {
    const body = {
      model: 'claude-sonnet-4-5',
      system: 'You count.',
      messages: [{ role: 'user' as const, content: prose(800, 3) }],
      tools: [weatherTool],
    };
    const counted = await client().messages.countTokens(body);
    const own = (await (
      await fetch(`${anthropicUrl}/messages/count_tokens`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': 'sk-ant-operator',
          'anthropic-version': '2023-06-01',
        },
        body: JSON.stringify(body),
      })
    ).json()) as { input_tokens: number };
    // The request fits: what would be sent is the request, and the provider counted it.
    expect(counted.input_tokens).toBe(own.input_tokens);
    // Bridged, the gateway's own estimate (no provider count to ask).
    const bridged = await client().messages.countTokens({ ...body, model: 'local-model' });
    expect(Math.abs(bridged.input_tokens - own.input_tokens)).toBeLessThan(own.input_tokens * 0.35);
  });
});

describe('budgets and metrics on Messages, as on chat completions', () => {
  it('refuses a request over a hard budget with 429 in Anthropic’s shape, and counts the route', async () => {
    const error = await client({ 'x-context-policy': 'tiny' })
      .messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'Hello there.' }],
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect((error as { error: unknown }).error).toMatchObject({
      type: 'error',
      error: { type: 'rate_limit_error' },
    });
    const metrics = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
    expect(metrics).toMatch(
      /ctxgate_http_requests_total\{[^}]*route="\/v1\/messages"[^}]*status="429"[^}]*\} [1-9]/,
    );
  });
});

describe('a Messages session', () => {
  it('keeps the history under X-Session-Id: the client sends only the new turn', async () => {
    anthropic.respond = (body) => ({ text: `I have seen ${(body.messages as unknown[]).length} messages.` });
    const sessionClient = client({ 'x-session-id': `messages-${randomUUID()}` });
    await sessionClient.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'One.' }],
    });
    const second = await sessionClient.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Two.' }],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'I have seen 3 messages.' }]);
  });

  // The session stored Claude's answer from its chat form: text, tool calls and unsigned reasoning. Its
  // thinking (signed) and server tool blocks were lost, and the next step of a tool loop with thinking on
  // was refused: "Expected `thinking` or `redacted_thinking`, but found `tool_use`".
  it.each([
    ['whole', false],
    ['streamed', true],
  ])(
    "goes on with Claude's tool loop with thinking on: its answer is stored as Claude gave it (%s)",
    async (_name, stream) => {
      const search = [
        { type: 'server_tool_use', id: 'srvtoolu_s', name: 'web_search', input: { query: 'Oslo weather' } },
        { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_s', content: [] },
      ];
      anthropic.respond = (body) =>
        JSON.stringify((body.messages as Array<{ content: unknown }>).at(-1)?.content).includes('tool_result')
          ? { text: 'Sunny in Oslo.' }
          : {
              thinking: 'The weather tool knows.',
              blocks: search,
              toolUse: { name: 'get_weather', input: { city: 'Oslo' } },
            };
      const sessionClient = client({ 'x-session-id': `messages-thinking-${randomUUID()}` });
      const ask = (messages: Anthropic.MessageParam[]) => {
        const body = {
          model: 'claude-sonnet-4-5',
          max_tokens: 2_000,
          thinking: { type: 'enabled' as const, budget_tokens: 1_024 },
          tools: [weatherTool],
          messages,
        };
        return stream
          ? sessionClient.messages.stream(body).finalMessage()
          : sessionClient.messages.create(body);
      };
      const first = await ask([{ role: 'user', content: 'Weather in Oslo?' }]);
      const use = first.content.find((block) => block.type === 'tool_use');
      expect(use?.type).toBe('tool_use');
      const before = anthropic.messageRequests.length;
      const second = await ask([
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: String(use?.type === 'tool_use' && use.id),
              content: 'Sunny',
            },
          ],
        },
      ]);
      expect(second.content.at(-1)).toEqual({ type: 'text', text: 'Sunny in Oslo.' });
      const sent = anthropic.messageRequests.slice(before);
      expect(sent.map((request) => request.status)).toEqual([200]);
      expect((sent[0]?.body.messages as Array<{ content: unknown }>)[1]?.content).toEqual(first.content);
    },
  );

  // A session stores Claude's blocks beside each message (what goes back to Claude as it came). When the
  // conversation went on on a Chat Completions model (Claude Code's /model, a fallback), they went to it
  // too — Claude's signed thinking, the client's blocks — in a field OpenAI refuses ("Additional
  // properties are not allowed ('ctxgate_anthropic' was unexpected) - 'messages.0'").
  it("goes on on a Chat Completions model without Claude's blocks or Claude's thinking", async () => {
    anthropic.respond = () => ({ thinking: 'Weighing the first question.', text: 'Noted.' });
    const sessionClient = client({ 'x-session-id': `messages-switch-${randomUUID()}` });
    await sessionClient.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 2_000,
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      messages: [{ role: 'user', content: 'One.' }],
    });
    const before = new Set(openai.chatRequests);
    await sessionClient.messages.create({
      model: 'local-model',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Two.' }],
    });
    const chat = openai.chatRequests.find((request) => !before.has(request));
    expect((chat?.body as { messages: ChatMessage[] }).messages).toEqual([
      { role: 'user', content: 'One.' },
      { role: 'assistant', content: 'Noted.' },
      { role: 'user', content: 'Two.' },
    ]);
  });

  // A client that marks its newest message for caching, as Anthropic's docs show and Claude Code does:
  // each stored message kept the breakpoint it came with, and from the fourth turn on Anthropic refused
  // every request ("A maximum of 4 blocks with cache_control may be provided. Found 5.").
  it('goes on past four turns of a client that marks its newest message for caching', async () => {
    anthropic.respond = () => ({ text: 'Noted.' });
    const sessionClient = client({ 'x-session-id': `messages-breakpoints-${randomUUID()}` });
    const before = anthropic.messageRequests.length;
    for (const turn of [1, 2, 3, 4, 5, 6])
      await sessionClient.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 50,
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
        messages: [
          {
            role: 'user',
            content: [{ type: 'text', text: `Turn ${turn}.`, cache_control: { type: 'ephemeral' } }],
          },
        ],
      });
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // The newest breakpoints are the ones kept: the system prompt's, this turn's and the two before.
    const last = sent.at(-1)?.body as { messages: Array<{ content: Array<Record<string, unknown>> }> };
    expect(last.messages.map((message) => message.content.some((block) => 'cache_control' in block))).toEqual(
      [false, false, false, false, false, false, true, false, true, false, true],
    );
  });

  // Claude Code asks for the hour's cache in its main loop and the 5 minutes' in a side question; a
  // stored message kept the 1-hour mark of the request it came in, after the side question's 5-minute
  // system mark: "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
  // (headroomlabs-ai/headroom#2939, a proxy that replays stored blocks).
  it("goes on when a request asks the 5 minutes' cache after requests that asked the hour's", async () => {
    anthropic.respond = () => ({ text: 'Noted.' });
    const sessionClient = client({ 'x-session-id': `messages-ttl-${randomUUID()}` });
    const before = anthropic.messageRequests.length;
    const ask = (text: string, ttl: '1h' | undefined) =>
      sessionClient.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 50,
        system: [
          { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ...(ttl && { ttl }) } },
        ],
        messages: [
          {
            role: 'user',
            content: [{ type: 'text', text, cache_control: { type: 'ephemeral', ...(ttl && { ttl }) } }],
          },
        ],
      });
    await ask('Main task.', '1h');
    await ask('A side question?', undefined);
    await ask('Back to the task.', '1h');
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([200, 200, 200]);
    // The side question's request: the stored 1-hour mark now a 5-minute one, its own as it asked.
    const side = sent[1]?.body as { messages: Array<{ content: Array<{ cache_control?: unknown }> }> };
    expect(side.messages.map((message) => message.content[0]?.cache_control)).toEqual([
      { type: 'ephemeral' },
      undefined,
      { type: 'ephemeral' },
    ]);
  });

  it('sends an agent’s stored steps, system blocks and breakpoints as they came, request after request', async () => {
    anthropic.respond = () => ({ text: 'Noted.' });
    const sessionClient = client({ 'x-session-id': `messages-agent-${randomUUID()}` });
    const system = [
      { type: 'text' as const, text: "You are Claude Code, Anthropic's official CLI for Claude." },
      { type: 'text' as const, text: 'Réponds brièvement.', cache_control: { type: 'ephemeral' as const } },
    ];
    const steps = [
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'Lis src/a.ts' }] },
      {
        role: 'assistant' as const,
        content: [
          { type: 'text' as const, text: 'Je lis.' },
          { type: 'tool_use' as const, id: 'toolu_s1', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'user' as const,
        content: [
          {
            type: 'tool_result' as const,
            tool_use_id: 'toolu_s1',
            content: 'export const café = 1;',
            cache_control: { type: 'ephemeral' as const },
          },
        ],
      },
    ];
    const before = anthropic.messageRequests.length;
    await sessionClient.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      system,
      messages: steps,
    });
    for (const text of ['Et ensuite?', 'Et enfin?'])
      await sessionClient.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 50,
        system,
        messages: [{ role: 'user', content: text }],
      });
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([200, 200, 200]);
    for (const request of sent.slice(1)) {
      const body = JSON.parse(request.rawBody) as { system: unknown; messages: unknown[] };
      expect(body.system).toEqual(system);
      expect(body.messages.slice(0, 4)).toEqual([
        ...steps,
        { role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] },
      ]);
    }
    expect((JSON.parse(sent[2]?.rawBody ?? '{}') as { messages: unknown[] }).messages.slice(4)).toEqual([
      // A string content is one text block as the bridge keeps it.
      { role: 'user', content: [{ type: 'text', text: 'Et ensuite?' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Et enfin?' }] },
    ]);
  });
});

// A chat client's reasoning effort (Codex's, through the Responses bridge; an OpenAI client's) was dropped on
// its way to Claude, which then spent as it would by default: it goes as Claude's output_config.effort, and
// a model that takes none, or not that one, is learned from its refusal as a Messages client's effort is.
describe("a chat client's reasoning effort, to Claude", () => {
  const openaiClient = () =>
    new OpenAI({ baseURL: harness.baseUrl, apiKey: 'gw-anthropic-test', maxRetries: 0 });
  const sentConfigs = (since: number) =>
    anthropic.messageRequests.slice(since).map((request) => [request.status, request.body.output_config]);

  it("a Codex-shaped Responses request's reasoning effort: Claude's effort, in one call", async () => {
    anthropic.respond = () => ({ text: 'Thought it through.' });
    const before = anthropic.messageRequests.length;
    const response = await openaiClient().responses.create({
      model: 'claude-opus-4-8',
      store: false,
      reasoning: { effort: 'high' },
      input: 'Plan the migration.',
    });
    expect(response.output_text).toBe('Thought it through.');
    expect(sentConfigs(before)).toEqual([[200, { effort: 'high' }]]);
  });

  it('an effort past what the model takes: the nearest it takes, after one refusal; the next at once', async () => {
    const ask = () =>
      openaiClient().chat.completions.create({
        model: 'claude-opus-4-7-copilot',
        reasoning_effort: 'xhigh',
        messages: [{ role: 'user', content: 'Plan the migration.' }],
      });
    const before = anthropic.messageRequests.length;
    expect((await ask()).choices).toHaveLength(1);
    expect(sentConfigs(before)).toEqual([
      [400, { effort: 'xhigh' }],
      [200, { effort: 'high' }],
    ]);
    const again = anthropic.messageRequests.length;
    await ask();
    expect(sentConfigs(again)).toEqual([[200, { effort: 'high' }]]);
  });

  it('a model that takes no effort: asked without, after one refusal; beside a schema, the schema stays', async () => {
    const before = anthropic.messageRequests.length;
    await openaiClient().chat.completions.create({
      model: 'claude-sonnet-4-5-effortless',
      reasoning_effort: 'minimal',
      messages: [{ role: 'user', content: 'Plan the migration.' }],
    });
    expect(sentConfigs(before)).toEqual([
      [400, { effort: 'low' }],
      [200, undefined],
    ]);
    const again = anthropic.messageRequests.length;
    const schema = { type: 'object', properties: { step: { type: 'string' } }, required: ['step'] };
    await openaiClient().chat.completions.create({
      model: 'claude-sonnet-4-5-effortless',
      reasoning_effort: 'high',
      response_format: { type: 'json_schema', json_schema: { name: 'plan', schema } },
      messages: [{ role: 'user', content: 'Plan the migration.' }],
    });
    expect(sentConfigs(again)).toEqual([
      [
        200,
        { format: { type: 'json_schema', schema: Object.assign({ additionalProperties: false }, schema) } },
      ],
    ]);
  });
});

// Claude Code's thinking budgets ("think" 4,000, "think hard" 10,000, "ultrathink" 31,999) were dropped on
// their way to a Chat Completions model, which then reasoned at its default: each goes as the effort.
describe("a Messages client's thinking budget, to a Chat Completions model", () => {
  it.each([
    [4_000, 'low'],
    [31_999, 'high'],
  ])(
    'a budget of %i as the reasoning effort %s, the thinking not named as dropped',
    async (budget, effort) => {
      // As Claude Code streams it.
      const stream = client().messages.stream({
        model: 'gpt-5.2',
        max_tokens: 40_000,
        thinking: { type: 'enabled', budget_tokens: budget },
        messages: [{ role: 'user', content: 'Plan the migration.' }],
      });
      const { response } = await stream.withResponse();
      await stream.finalMessage();
      expect((openai.chatRequests.at(-1)?.body as { reasoning_effort?: unknown }).reasoning_effort).toBe(
        effort,
      );
      expect(response.headers.get('x-ctxgate-dropped') ?? '').not.toContain('thinking');
    },
  );
});

describe('structured output across the wires', () => {
  const tripSchema = z.object({
    city: z.string().min(2),
    days: z.int().min(1).max(14),
    stops: z.array(z.string()).max(6),
  });

  it("the OpenAI SDK's parse on Claude: its schema goes as Claude's output_config.format, in the subset Claude takes", async () => {
    anthropic.respond = (body) => ({
      text: structuredAnswer((body.output_config as { format?: unknown } | undefined)?.format),
    });
    const before = anthropic.messageRequests.length;
    const openaiClient = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'gw-anthropic-test', maxRetries: 0 });
    const completion = await openaiClient.chat.completions.parse({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      messages: [{ role: 'user', content: 'Plan three days in Lisbon.' }],
      response_format: zodResponseFormat(tripSchema, 'trip'),
    });
    expect(completion.choices[0]?.message.parsed).toEqual(trip);
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([200]);
    const format = (sent[0]?.body.output_config as { format: { schema: Record<string, unknown> } }).format;
    expect(format.schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: { days: { type: 'integer', description: '{minimum: 1, maximum: 14}' } },
    });
  });

  it("the OpenAI SDK's Responses parse on Claude: text.format goes the same way", async () => {
    anthropic.respond = (body) => ({
      text: structuredAnswer((body.output_config as { format?: unknown } | undefined)?.format),
    });
    const openaiClient = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'gw-anthropic-test', maxRetries: 0 });
    const response = await openaiClient.responses.parse({
      model: 'claude-sonnet-4-5',
      max_output_tokens: 300,
      input: 'Plan three days in Lisbon.',
      text: { format: zodTextFormat(tripSchema, 'trip') },
    });
    expect(response.output_parsed).toEqual(trip);
  });

  it('a schema past what Claude compiles: told in the system prompt after one refusal; the next request at once', async () => {
    // Thirty optional answers: Claude compiles a grammar for 24 at most.
    const properties = Object.fromEntries(
      Array.from({ length: 30 }, (_, index) => [`q${index}`, { type: 'string' }]),
    );
    anthropic.respond = (body) => ({
      text: JSON.stringify(body.system).includes('follows this JSON Schema')
        ? '{"q0":"yes"}'
        : 'Yes to the first.',
    });
    const ask = () =>
      postChat({
        model: 'claude-opus-4-7',
        max_tokens: 300,
        messages: [{ role: 'user', content: 'Answer the survey.' }],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'survey', schema: { type: 'object', properties } },
        },
      });
    const before = anthropic.messageRequests.length;
    const first = await ask();
    expect(first.status).toBe(200);
    const answer = (await first.json()) as { choices: Array<{ message: { content: string } }> };
    expect(JSON.parse(answer.choices[0]?.message.content ?? '')).toEqual({ q0: 'yes' });
    const sent = anthropic.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([400, 200]);
    expect(sent[0]?.refusal).toMatch(/^Schemas contains too many optional parameters \(30\)/);
    expect(sent[1]?.body.output_config).toBeUndefined();
    expect(JSON.stringify(sent[1]?.body.system)).toContain('(survey) that follows this JSON Schema');
    expect((await ask()).status).toBe(200);
    expect(anthropic.messageRequests.slice(before).map((request) => request.status)).toEqual([400, 200, 200]);
  });

  it("the Anthropic SDK's parse on a Chat Completions model: output_config.format goes as response_format, its effort as reasoning_effort", async () => {
    const before = openai.requests.length;
    const message = await client().messages.parse({
      model: structuredChatModel,
      max_tokens: 300,
      messages: [{ role: 'user', content: 'Plan three days in Lisbon.' }],
      output_config: { format: zodOutputFormat(tripSchema), effort: 'max' },
    });
    expect(message.parsed_output).toEqual(trip);
    const sent = openai.requests.slice(before).map((request) => request.body as Record<string, unknown>);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      response_format: { type: 'json_schema', json_schema: { name: 'response' } },
      reasoning_effort: 'xhigh',
    });
  });
});
