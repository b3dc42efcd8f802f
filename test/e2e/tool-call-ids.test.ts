// End to end: tool call ids as providers give them and take them back (docs/budgeting.md#tool-call-ids).
// Some endpoints give calls an empty id (Gemini's OpenAI-compatible endpoint, LM Studio:
// openai/openai-dotnet#428, lmstudio-ai/lmstudio-bug-tracker#830), and the next request, with that id
// sent back, is refused ("Invalid 'messages[1].tool_calls[0].id': empty string"); OpenAI refuses an id
// of more than 40 characters (Portkey-AI/gateway#1062), Claude one of other characters than letters,
// digits, `_` and `-`, or given twice — Kimi's `functions.<name>:<n>`, after a switch to Claude
// (farion1231/cc-switch#1181). Through the official OpenAI and Anthropic clients, with strict fakes that
// refuse each as its provider does.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic, startGatewayWithClaude } from '../helpers/fake-anthropic.js';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import type { GatewayHarness } from '../helpers/start-gateway.js';

/** A model served by an endpoint that gives every tool call an empty id, and refuses one sent back. */
const idless = 'local-idless-model';
/** Claude behind an OpenAI-compatible endpoint (OpenRouter, LiteLLM): Anthropic's rule for ids. */
const routedClaude = 'anthropic/claude-sonnet-4.6';
/** Claude on Anthropic's own API. */
const claudeModel = 'claude-sonnet-4-6';

let fake: FakeUpstream;
let claude: FakeAnthropic;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({ emptyToolCallIds: [idless], claudeToolCallIds: [routedClaude] });
  claude = new FakeAnthropic();
  harness = await startGatewayWithClaude(fake, claude, inject('redisUrl'));
});
beforeEach(() => fake.clearQueue());
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await claude.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-ids', maxRetries: 0, defaultHeaders: headers });
const anthropic = () =>
  new Anthropic({ baseURL: harness.baseUrl.replace(/\/v1$/, ''), apiKey: 'sk-ids', maxRetries: 0 });

const paris = { id: 'call_paris', name: 'get_weather', arguments: '{"city":"Paris"}' };
const lyon = { id: 'call_lyon', name: 'get_weather', arguments: '{"city":"Lyon"}' };
const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
];
/** An id Claude, OpenAI and Bedrock all take back. */
const portable = /^[A-Za-z0-9_-]{1,40}$/;

/** The calls and the results (id and content) of the last request the provider was sent. */
function lastSent(requests: ReadonlyArray<{ body?: unknown }>) {
  const messages = (requests.at(-1)?.body as { messages: ChatMessage[] }).messages;
  return {
    calls: messages.flatMap((message) => message.tool_calls ?? []).map((call) => call.id),
    results: messages
      .filter((message) => message.role === 'tool')
      .map((message) => [message.tool_call_id, message.content]),
  };
}

describe('an endpoint that gives parallel calls an empty id, and refuses one sent back (LM Studio, Gemini)', () => {
  it('a client that keeps the conversation is given an id for each call, and its results are answered', async () => {
    fake.enqueue({ toolCalls: [paris, lyon] }, { content: 'Paris 18 °C, Lyon 21 °C.' });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'The weather in Paris and in Lyon?' },
    ];
    const stream = await client().chat.completions.create({ model: idless, stream: true, tools, messages });
    // The official client joins a stream's deltas by their index and takes the id of a call's first.
    const calls: Array<{ id: string; arguments: string }> = [];
    for await (const chunk of stream)
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        calls[delta.index] ??= { id: '', arguments: '' };
        const call = calls[delta.index] as { id: string; arguments: string };
        if (delta.id) call.id = delta.id;
        call.arguments += delta.function?.arguments ?? '';
      }
    const ids = calls.map((call) => call.id);
    expect(ids).toHaveLength(2);
    expect(ids.every((id) => portable.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(2);
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          function: { name: 'get_weather', arguments: call.arguments },
        })),
      },
      { role: 'tool', tool_call_id: ids[0] as string, content: 'Paris: 18 °C' },
      { role: 'tool', tool_call_id: ids[1] as string, content: 'Lyon: 21 °C' },
    );
    const second = await client().chat.completions.create({ model: idless, tools, messages });
    expect(second.choices[0]?.message.content).toBe('Paris 18 °C, Lyon 21 °C.');
    expect(lastSent(fake.chatRequests)).toEqual({
      calls: ids,
      results: [
        [ids[0], 'Paris: 18 °C'],
        [ids[1], 'Lyon: 21 °C'],
      ],
    });
  });

  it("a session's loop: each call's id is the one the session stores, and the results are answered", async () => {
    const chat = client({ 'x-session-id': `idless-${randomUUID()}` });
    fake.enqueue({ toolCalls: [paris, lyon] }, { content: 'Paris 18 °C, Lyon 21 °C.' });
    const first = await chat.chat.completions.create({
      model: idless,
      tools,
      messages: [{ role: 'user', content: 'The weather in Paris and in Lyon?' }],
    });
    const ids = (first.choices[0]?.message.tool_calls ?? []).map((call) => call.id);
    expect(ids.every((id) => portable.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(2);
    const second = await chat.chat.completions.create({
      model: idless,
      tools,
      messages: [
        { role: 'tool', tool_call_id: ids[0] as string, content: 'Paris: 18 °C' },
        { role: 'tool', tool_call_id: ids[1] as string, content: 'Lyon: 21 °C' },
      ],
    });
    expect(second.choices[0]?.message.content).toBe('Paris 18 °C, Lyon 21 °C.');
    expect(lastSent(fake.chatRequests).results).toEqual([
      [ids[0], 'Paris: 18 °C'],
      [ids[1], 'Lyon: 21 °C'],
    ]);
  });

  it('a Responses stream gives each function_call a call_id of its own, and its outputs are answered', async () => {
    fake.enqueue({ toolCalls: [paris, lyon] }, { content: 'Paris 18 °C, Lyon 21 °C.' });
    const input: OpenAI.Responses.ResponseInputItem[] = [
      { role: 'user', content: 'The weather in Paris and in Lyon?' },
    ];
    const responsesTools: OpenAI.Responses.Tool[] = [
      { type: 'function', name: 'get_weather', parameters: null, strict: false },
    ];
    const stream = await client().responses.create({
      model: idless,
      stream: true,
      store: false,
      input,
      tools: responsesTools,
    });
    let output: OpenAI.Responses.ResponseOutputItem[] = [];
    for await (const event of stream) if (event.type === 'response.completed') output = event.response.output;
    const calls = output.filter((item) => item.type === 'function_call');
    const ids = calls.map((call) => call.call_id);
    expect(ids.every((id) => portable.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(2);
    input.push(
      ...calls,
      { type: 'function_call_output', call_id: ids[0] as string, output: 'Paris: 18 °C' },
      { type: 'function_call_output', call_id: ids[1] as string, output: 'Lyon: 21 °C' },
    );
    const second = await client().responses.create({
      model: idless,
      store: false,
      input,
      tools: responsesTools,
    });
    expect(second.output_text).toBe('Paris 18 °C, Lyon 21 °C.');
  });

  it('a Messages stream gives each tool_use an id of its own, and its results are answered', async () => {
    fake.enqueue({ toolCalls: [paris, lyon] }, { content: 'Paris 18 °C, Lyon 21 °C.' });
    const anthropicTools: Anthropic.Tool[] = [
      { name: 'get_weather', input_schema: { type: 'object', properties: {} } },
    ];
    const question: Anthropic.MessageParam = { role: 'user', content: 'The weather in Paris and in Lyon?' };
    const message = await anthropic()
      .messages.stream({ model: idless, max_tokens: 256, messages: [question], tools: anthropicTools })
      .finalMessage();
    const uses = message.content.filter((block) => block.type === 'tool_use');
    const ids = uses.map((use) => use.id);
    expect(ids.every((id) => /^[a-zA-Z0-9_-]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(2);
    const second = await anthropic().messages.create({
      model: idless,
      max_tokens: 256,
      tools: anthropicTools,
      messages: [
        question,
        { role: 'assistant', content: uses },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: ids[0] as string, content: 'Paris: 18 °C' },
            { type: 'tool_result', tool_use_id: ids[1] as string, content: 'Lyon: 21 °C' },
          ],
        },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'Paris 18 °C, Lyon 21 °C.' }]);
  });
});

/** A conversation of one tool call whose id is `id`, answered, then a question. */
function historyWith(...ids: string[]): OpenAI.ChatCompletionMessageParam[] {
  return [
    { role: 'user', content: 'The weather in Paris?' },
    ...ids.flatMap((id, turn): OpenAI.ChatCompletionMessageParam[] => [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: id, content: `Paris: ${18 + turn} °C` },
    ]),
    { role: 'user', content: 'And now?' },
  ];
}

describe('a history of ids another provider gave, sent on to one that refuses them', () => {
  it.each([
    ['empty ids (Gemini, LM Studio) to OpenAI', ['', ''], 'gpt-5.2'],
    ["Portkey's 44-character ids to OpenAI", ['portkey-6aa6db90-1b84-4155-9f32-f658c97d6b1b'], 'gpt-5.2'],
    [
      "Kimi K3's ids, one each turn, to Claude behind OpenRouter",
      ['functions.get_weather:0', 'functions.get_weather:0'],
      routedClaude,
    ],
  ])(
    '%s: each call goes with an id the provider takes, its result with it, and is answered',
    async (_name, ids, model) => {
      fake.enqueue({ content: 'Still 19 °C.' });
      const answer = await client().chat.completions.create({ model, tools, messages: historyWith(...ids) });
      expect(answer.choices[0]?.message.content).toBe('Still 19 °C.');
      const sent = lastSent(fake.chatRequests);
      expect(sent.calls.every((id) => portable.test(id))).toBe(true);
      expect(new Set(sent.calls).size).toBe(ids.length);
      expect(sent.results).toEqual(sent.calls.map((id, turn) => [id, `Paris: ${18 + turn} °C`]));
    },
  );

  it("Claude Code's history with Kimi's ids, after a switch to Claude: Claude is sent ids it takes, and answers", async () => {
    const before = claude.messageRequests.length;
    const turn = (id: string, degrees: number): Anthropic.MessageParam[] => [
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id, name: 'get_weather', input: { city: 'Paris' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: `Paris: ${degrees} °C` }] },
    ];
    const answer = await anthropic().messages.create({
      model: claudeModel,
      max_tokens: 256,
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: {} } }],
      messages: [
        { role: 'user', content: 'The weather in Paris?' },
        ...turn('functions.get_weather:0', 18),
        ...turn('functions.get_weather:0', 19),
      ],
    });
    expect(answer.content).toEqual([{ type: 'text', text: 'Hello from the fake Anthropic.' }]);
    expect(claude.messageRequests).toHaveLength(before + 1);
  });
});
