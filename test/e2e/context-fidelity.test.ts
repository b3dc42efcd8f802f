// Context fidelity, measured against the strict fake provider (o200k_base with OpenAI's framing for
// messages; tool definitions counted its own way, as a provider that counts differently would) with the
// official openai client:
// - 300-turn sessions, plain and with a tool call every turn, in an 8,192-token window: no failed request,
//   and after the first trimming step most consecutive requests share the whole previous prompt;
// - a tool set counted as the provider counts it from its second request on;
// - POST /v1/context/render shows exactly what the chat request then sends, 500 of 500;
// - the summarizer's own request fits the window the session's requests use, and recovers from its own
//   overflow.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, isSummaryRequest, type ChatMessage } from '../helpers/fake-upstream.js';
import { paraphrasingSummarizer } from '../helpers/fake-summarizers.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const model = 'fidelity-model';
const window = 8_192;
const words = ['river', 'stone', 'lamp', 'green', 'window', 'quiet', 'harbor', 'paper', 'silver', 'field'];
const filler = (count: number, offset = 0): string =>
  Array.from({ length: count }, (_unused, index) => words[(index * 7 + offset) % words.length]).join(' ');

const summarizer = paraphrasingSummarizer({
  find(sentence) {
    const match = /note (\d+) is ([A-Z]\d+)/.exec(sentence);
    return match === null ? undefined : { key: match[1] as string, value: match[2] as string };
  },
  restate: (key, value) => `Note ${key}: ${value}.`,
});

let fake: FakeUpstream;
let upstreamUrl: string;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    windows: { [model]: window },
    recordLimit: 2_000,
    summarizer,
    // Served with a chat template that takes a system message only first (the gateway carries its
    // notices in user messages for it: notice_placement user).
    systemOnlyFirst: [model],
    // A model whose provider counts 30% more than the gateway's estimate: a ratio is learned.
    promptTokenScale: { 'estimated-model': 1.3 },
  });
  upstreamUrl = await fake.start();
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
    configYaml: `models:\n  - match: ${model}\n    window: ${window}\n    output_reserve: 512\n    exact_tokenizer: true\n    notice_placement: user\npolicies:\n  nosummary:\n    summarization: 'off'\n`,
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const conversationRequests = (): Array<{ messages: ChatMessage[] }> =>
  fake.chatRequests
    .filter((request) => !isSummaryRequest(request.body))
    .map((request) => request.body as { messages: ChatMessage[] });

/** Of consecutive requests after the first trimming step, the share that begins with the whole previous one. */
function prefixKeptShare(requests: Array<{ messages: ChatMessage[] }>): { share: number; pairs: number } {
  const firstTrimmed = requests.findIndex((request) =>
    request.messages.some((message) => String(message.content).startsWith('[ctxgate] ')),
  );
  let kept = 0;
  let pairs = 0;
  for (let index = Math.max(1, firstTrimmed + 1); index < requests.length; index++) {
    const previous = JSON.stringify((requests[index - 1] as { messages: ChatMessage[] }).messages).slice(
      0,
      -1,
    );
    const current = JSON.stringify((requests[index] as { messages: ChatMessage[] }).messages);
    pairs++;
    if (current.startsWith(previous)) kept++;
  }
  return { share: kept / Math.max(1, pairs), pairs };
}

describe('long sessions keep a stable prefix and never fail', () => {
  it('300 plain turns in 8,192 tokens: every request answered, the prefix kept', async () => {
    fake.requests.length = 0;
    const client = new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: 'sk-fidelity',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': `plain-${randomUUID()}` },
    });
    for (let turn = 0; turn < 300; turn++) {
      const content =
        turn % 10 === 3 ? `${filler(80, turn)}. The note ${turn} is N${turn * 7}.` : filler(90, turn);
      const completion = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content }],
      });
      expect(completion.choices[0]?.message.role).toBe('assistant');
    }
    await harness.gateway.summarizer.idle();
    const { share, pairs } = prefixKeptShare(conversationRequests());
    console.log(`plain session: prefix kept ${Math.round(share * 100)}% of ${pairs} pairs`);
    expect(pairs).toBeGreaterThan(200);
    expect(share).toBeGreaterThanOrEqual(0.8);
  }, 120_000);

  it('300 turns with a tool call each in 8,192 tokens: every request answered, the prefix kept', async () => {
    fake.requests.length = 0;
    const client = new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: 'sk-fidelity',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': `tools-${randomUUID()}`, 'x-session-history': 'delta' },
    });
    for (let turn = 0; turn < 300; turn++) {
      const id = `call_${turn}`;
      fake.enqueue({ toolCalls: [{ id, name: 'lookup', arguments: `{"q":"${turn}"}` }] });
      const first = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: filler(40, turn) }],
      });
      expect(first.choices[0]?.message.tool_calls?.[0]?.id).toBe(id);
      const second = await client.chat.completions.create({
        model,
        messages: [{ role: 'tool', tool_call_id: id, content: filler(120, turn + 1) }],
      });
      expect(second.choices[0]?.message.role).toBe('assistant');
    }
    await harness.gateway.summarizer.idle();
    const { share, pairs } = prefixKeptShare(conversationRequests());
    console.log(`tool-call session: prefix kept ${Math.round(share * 100)}% of ${pairs} pairs`);
    expect(pairs).toBeGreaterThan(400);
    expect(share).toBeGreaterThanOrEqual(0.8);
  }, 180_000);
});

describe('counting as the provider counts', () => {
  it('counts a large nested tool set as the provider does from its second request on', async () => {
    const tools: OpenAI.ChatCompletionTool[] = Array.from({ length: 12 }, (_unused, index) => ({
      type: 'function',
      function: {
        name: `tool_${index}`,
        description: `Does thing ${index} to a record, with options.`,
        parameters: {
          type: 'object',
          required: ['record'],
          properties: {
            record: {
              type: 'object',
              properties: {
                id: { type: 'string', description: 'The record id' },
                tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] } },
                nested: { type: 'object', properties: { depth: { type: 'integer', default: 3 } } },
              },
            },
            mode: { anyOf: [{ type: 'string' }, { type: 'null' }], default: null },
          },
        },
      },
    }));
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-fidelity', maxRetries: 0 });
    const errors: number[] = [];
    for (const question of ['first question about records', 'a second, different question']) {
      const { response } = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: question }], tools })
        .withResponse();
      const estimate = Number(response.headers.get('x-context-input-tokens'));
      const counted = fake.chatRequests.at(-1)?.promptTokens as number;
      errors.push(Math.abs(estimate - counted) / counted);
    }
    console.log(
      `tool set estimate error: first ${((errors[0] as number) * 100).toFixed(1)}%, second ${((errors[1] as number) * 100).toFixed(1)}%`,
    );
    expect(errors[1]).toBeLessThanOrEqual(0.02);
  });
});

describe('the preview is the run', () => {
  it('shows exactly what the chat request then sends, for 500 generated conversations', async () => {
    const estimated = 'estimated-model';
    fake.setWindow(estimated, 8_192);
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-fidelity', maxRetries: 0 });
    const messageArbitrary = fc.oneof(
      fc.integer({ min: 1, max: 900 }).map((size) => ({ role: 'user', content: filler(size, size) })),
      fc
        .integer({ min: 1, max: 400 })
        .map((size) => ({ role: 'assistant', content: filler(size, size + 1) })),
    );
    const cases = fc.sample(
      fc.record({
        messages: fc.array(messageArbitrary, { minLength: 1, maxLength: 40 }),
        model: fc.constantFrom(model, estimated),
        maxTokens: fc.integer({ min: 16, max: 2_000 }),
        windowHeader: fc.option(fc.integer({ min: 3_000, max: 8_192 }), { nil: undefined }),
      }),
      { numRuns: 500, seed: 20_261_123 },
    );
    let equal = 0;
    for (const generated of cases) {
      const messages = [...generated.messages];
      if (messages.at(-1)?.role !== 'user') messages.push({ role: 'user', content: 'and now?' });
      const headers: Record<string, string> =
        generated.windowHeader === undefined ? {} : { 'x-context-window': String(generated.windowHeader) };
      const body = { model: generated.model, messages, max_tokens: generated.maxTokens };
      const preview = await fetch(`${harness.baseUrl}/context/render`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-fidelity', ...headers },
        body: JSON.stringify(body),
      });
      if (preview.status !== 200) {
        // A conversation that cannot fit is refused alike, and never sent.
        const before = fake.chatRequests.length;
        const refused = await client.chat.completions
          .create(body as OpenAI.ChatCompletionCreateParamsNonStreaming, { headers })
          .catch((error: unknown) => error as InstanceType<typeof OpenAI.APIError>);
        if ('status' in refused && refused.status === preview.status && fake.chatRequests.length === before)
          equal++;
        continue;
      }
      const shown = ((await preview.json()) as { messages: unknown[] }).messages;
      const before = fake.chatRequests.length;
      await client.chat.completions
        .create(body as OpenAI.ChatCompletionCreateParamsNonStreaming, { headers })
        .catch(() => undefined);
      // The request as first sent (a retry after the provider refused it is another request).
      const sent = (fake.chatRequests[before]?.body as { messages: unknown[] } | undefined)?.messages;
      if (JSON.stringify(sent) === JSON.stringify(shown)) equal++;
    }
    console.log(`render equals run: ${equal}/500`);
    expect(equal).toBe(500);
  }, 120_000);
});

describe("the summarizer's own request", () => {
  const turnsOf = async (
    gateway: GatewayHarness,
    sessionId: string,
    headers: Record<string, string>,
    count: number,
  ) => {
    const client = new OpenAI({
      baseURL: gateway.baseUrl,
      apiKey: 'sk-fidelity',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': sessionId, ...headers },
    });
    for (let turn = 0; turn < count; turn++) {
      const content = `${filler(150, turn)}. The note ${turn} is N${turn * 7}.`;
      await client.chat.completions.create({
        model: 'unlisted-model',
        messages: [{ role: 'user', content }],
        max_tokens: 256,
      });
    }
    await gateway.gateway.summarizer.idle();
  };
  const summaryOf = async (gateway: GatewayHarness, sessionId: string) =>
    (
      (await (
        await fetch(`${gateway.baseUrl}/sessions/${sessionId}`, {
          headers: { authorization: 'Bearer sk-fidelity' },
        })
      ).json()) as { summary: { text: string } | null }
    ).summary;

  it('fits the window the session’s requests use (X-Context-Window), not the model’s default', async () => {
    // A model the gateway does not know (128,000 assumed) behind a server with 4,096 tokens.
    fake.setWindow('unlisted-model', 4_096);
    fake.requests.length = 0;
    const sessionId = `window-${randomUUID()}`;
    // First without summaries, so a long stretch of the conversation waits to be summarized; then with.
    await turnsOf(harness, sessionId, { 'x-context-window': '4096', 'x-context-policy': 'nosummary' }, 60);
    await turnsOf(harness, sessionId, { 'x-context-window': '4096' }, 5);
    const summaries = fake.summaryRequests;
    expect(summaries.length).toBeGreaterThan(0);
    for (const request of summaries) {
      const maxTokens = (request.body as { max_tokens?: number }).max_tokens ?? 0;
      expect((request.promptTokens ?? Infinity) + maxTokens).toBeLessThanOrEqual(4_096);
    }
    expect((await summaryOf(harness, sessionId))?.text).toMatch(/Note \d+: N\d+\./);
  }, 60_000);

  it('recovers from its own overflow: learns the window and tries smaller', async () => {
    // A summary model the gateway believes has 16,000 tokens; its server has 3,000.
    fake.setWindow('tiny-summarizer', 3_000);
    const gateway = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
      configYaml: [
        'models:',
        '  - { match: unlisted-model, window: 8192, output_reserve: 512 }',
        '  - { match: tiny-summarizer, window: 16000, output_reserve: 512 }',
        'context:',
        '  summary_model: tiny-summarizer',
        '  summary_max_tokens: 512',
        '',
      ].join('\n'),
    });
    try {
      await waitUntilReady(gateway);
      fake.setWindow('unlisted-model', 8_192);
      fake.requests.length = 0;
      const sessionId = `overflow-${randomUUID()}`;
      await turnsOf(gateway, sessionId, {}, 40);
      const summaries = fake.chatRequests.filter(
        (request) => (request.body as { model?: string }).model === 'tiny-summarizer',
      );
      const refused = summaries.filter((request) => (request.promptTokens ?? 0) + 512 > 3_000);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      // The next try fitted, and the summary was stored.
      expect(summaries.length).toBeGreaterThan(refused.length);
      expect((await summaryOf(gateway, sessionId))?.text).toMatch(/Note \d+: N\d+\./);
    } finally {
      await gateway.close();
    }
  }, 60_000);
});
