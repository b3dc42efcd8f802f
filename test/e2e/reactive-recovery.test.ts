// End to end (docs/budgeting.md#reactive-recovery): a strict fake upstream that refuses over its own window with the real bodies and
// statuses of the captured sample, the gateway not told that window. The first request recovers
// without the client seeing the failure; the next one fits first time (on another replica too); the
// look-alikes never cause a compressed retry; an exhausted ladder returns the upstream's own error.
import OpenAI from 'openai';
import {
  contextErrorFixtures,
  fixtureAnswer,
  surveyFixtures,
  type ContextErrorFixture,
} from '../fixtures/context-errors.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type OverflowFacts } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';
import { createRedisLearnedLimits } from '../../src/store/learned-limits.js';
import { createRedisConnection } from '../../src/store/redis-client.js';

type FixtureCase = ContextErrorFixture;
const fixtures = contextErrorFixtures;

const window = 6_000;
let fake: FakeUpstream;
let harness: GatewayHarness;
let upstreamUrl: string;
let answerOverflowWith: (facts: OverflowFacts) => { status: number; body: string };

beforeAll(async () => {
  fake = new FakeUpstream({
    defaultWindow: window,
    overflowAnswer: (facts) => answerOverflowWith(facts),
    // A model whose tokenizer counts 1.4 times the gateway's estimate, and a server that truncates.
    promptTokenScale: { 'scaled-model': 1.4, 'far-counting-model': 2.6, 'gpt-4.1-mini': 1.3 },
    truncateSilently: ['truncating-model'],
  });
  upstreamUrl = await fake.start();
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
    // The gateway knows this model's window but not that its tokenizer counts differently.
    configYaml:
      `models:\n  - match: scaled-model\n    window: ${window}\n    output_reserve: 400\n` +
      `  - match: far-counting-model\n    window: ${window}\n    output_reserve: 400\n`,
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const words = (seed: number, count: number): string =>
  Array.from({ length: count }, (_unused, index) => `term${(seed * 31 + index) % 211}`).join(' ');

/** About 110 tokens per turn: 90 turns are far over the fake's 6 000-token window. */
function conversation(turns: number): OpenAI.ChatCompletionMessageParam[] {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are terse.' }];
  for (let turn = 0; turn < turns; turn++) {
    messages.push({ role: 'user', content: `Question ${turn}: ${words(turn, 25)}` });
    messages.push({ role: 'assistant', content: `Answer ${turn}: ${words(turn + 7, 25)}` });
  }
  messages.push({ role: 'user', content: `Last question: ${words(999, 10)}` });
  return messages;
}

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-recovery', maxRetries: 0 });

async function send(
  model: string,
  messages: OpenAI.ChatCompletionMessageParam[],
  options: { stream: boolean; maxTokens: number },
): Promise<{ content: string; retries: string | null }> {
  if (options.stream) {
    const { data, response } = await client()
      .chat.completions.create({ model, messages, max_tokens: options.maxTokens, stream: true })
      .withResponse();
    let content = '';
    for await (const chunk of data) content += chunk.choices[0]?.delta.content ?? '';
    return { content, retries: response.headers.get('x-context-retries') };
  }
  const { data, response } = await client()
    .chat.completions.create({ model, messages, max_tokens: options.maxTokens })
    .withResponse();
  return {
    content: data.choices[0]?.message.content ?? '',
    retries: response.headers.get('x-context-retries'),
  };
}

const overflowCases = fixtures.filter((fixture) => fixture.expect !== 'not_overflow');
const surveyOverflows = surveyFixtures.filter((fixture) => fixture.expect !== 'not_overflow');
/** Calls per replayed body, reported once the replay is done (the closing note's figures). */
const replayed: Array<{ id: string; calls: number }> = [];
afterAll(() => {
  const oneRetry = replayed.filter((entry) => entry.calls === 2).length;
  console.log(
    `replayed ${replayed.length} overflow bodies: ${oneRetry} recovered with exactly one extra call; ` +
      `more: ${replayed
        .filter((entry) => entry.calls > 2)
        .map((entry) => `${entry.id}×${entry.calls - 1}`)
        .join(' ')}`,
  );
});

describe('reactive recovery against every overflow shape of the sample and the survey', () => {
  it.each([...overflowCases, ...surveyOverflows].map((fixture) => [fixture.id, fixture] as const))(
    '%s: recovers on the first request with one smaller retry; the next fits first time',
    async (id, fixture) => {
      answerOverflowWith = (facts) => fixtureAnswer(fixture, facts);
      const model = `hidden-${id.toLowerCase()}`;
      // A prompt-plus-max_tokens overflow needs a prompt that fits and an answer that does not.
      const maxTokensFirst = fixture.expect === 'reduce_max_tokens';
      const messages = maxTokensFirst ? conversation(5) : conversation(90);
      const maxTokens = maxTokensFirst ? window : 400;
      const stream = fixture.status === 200;

      const before = fake.chatRequests.length;
      fake.setDefault({ content: 'recovered' });
      const first = await send(model, messages, { stream, maxTokens });
      expect(first.content).toBe('recovered');
      const calls = fake.chatRequests.slice(before);
      expect(Number(first.retries)).toBe(calls.length - 1);
      // Every retry is smaller than the call refused before it: fewer prompt tokens, or the same
      // prompt asking for a shorter answer.
      const sizes = calls.map((call) => ({
        prompt: call.promptTokens ?? Infinity,
        maxTokens: (call.body as { max_tokens?: number }).max_tokens ?? Infinity,
      }));
      for (let index = 1; index < sizes.length; index++) {
        const [refused, retry] = [sizes[index - 1], sizes[index]];
        expect(
          (retry?.prompt ?? Infinity) < (refused?.prompt ?? 0) ||
            ((retry?.prompt ?? Infinity) <= (refused?.prompt ?? 0) &&
              (retry?.maxTokens ?? Infinity) < (refused?.maxTokens ?? 0)),
        ).toBe(true);
      }
      // A body that states the window and the provider's own count needs one retry only.
      const { max_context: limit, prompt_tokens: count, requested, excess_tokens: excess } = fixture.parsed;
      const countStated = count !== undefined && count !== limit;
      if (typeof limit === 'number' && (countStated || requested !== undefined || excess !== undefined))
        expect(calls).toHaveLength(2);
      replayed.push({ id, calls: calls.length });
      // Each retry counted, for this model, in the remedy it took.
      const counted = (await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text())
        .split('\n')
        .filter((line) =>
          line.startsWith(
            `ctxgate_context_overflow_retries_total{upstream="default",model="${model}",remedy=`,
          ),
        )
        .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
      expect(counted).toBe(calls.length - 1);
      const last = calls.at(-1)?.body as { messages: Array<{ content: string }>; max_tokens?: number };
      // The current turn always goes; the prompt and answer now fit the window the gateway was not told.
      expect(last.messages.at(-1)?.content).toBe(messages.at(-1)?.content);
      expect((calls.at(-1)?.promptTokens ?? Infinity) + (last.max_tokens ?? 0)).toBeLessThanOrEqual(window);
      if (maxTokensFirst) expect(last.max_tokens).toBeLessThan(maxTokens);

      // The next request (one more turn) fits first time: what was learned is used.
      const next = [
        ...messages,
        { role: 'assistant' as const, content: 'recovered' },
        { role: 'user' as const, content: 'And then?' },
      ];
      const beforeNext = fake.chatRequests.length;
      fake.setDefault({ content: 'first time' });
      const second = await send(model, next, { stream, maxTokens });
      expect(second.content).toBe('first time');
      expect(second.retries).toBe('0');
      expect(fake.chatRequests.length - beforeNext).toBe(1);
    },
  );

  it('shares what it learned with another replica on the same Redis', async () => {
    const fixture = overflowCases.find((entry) => entry.id === 'T10') as FixtureCase;
    answerOverflowWith = (facts) => fixtureAnswer(fixture, facts);
    const model = 'hidden-shared';
    fake.setDefault({ content: 'recovered' });
    expect((await send(model, conversation(90), { stream: false, maxTokens: 400 })).retries).toBe('1');
    // What was learned is logged, numbers only: the window T10 states (the fake's own).
    const learned = harness.logLines
      .map((line) => JSON.parse(line) as { msg: string; model?: string; window?: number })
      .find((entry) => entry.msg === 'learned from an overflow' && entry.model === model);
    expect(learned?.window).toBe(window);
    // Shared within a write interval (docs/budgeting.md): once Redis holds it, a replica that starts gets it.
    const redis = createRedisConnection({ mode: 'standalone', url: inject('redisUrl') });
    const reader = createRedisLearnedLimits({
      settings: { windowTtlMs: 86_400_000, reprobeAfterMs: 3_600_000 },
      maxEntries: 1_000,
      redis,
      refreshMs: 50,
    });
    try {
      await expect
        .poll(() => reader.list().some((entry) => entry.model === model), { timeout: 5_000, interval: 20 })
        .toBe(true);
    } finally {
      await reader.close();
      redis.disconnect();
    }
    const other = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
    });
    try {
      await waitUntilReady(other);
      const before = fake.chatRequests.length;
      fake.setDefault({ content: 'first time' });
      const response = await new OpenAI({
        baseURL: other.baseUrl,
        apiKey: 'sk-recovery',
        maxRetries: 0,
      }).chat.completions
        .create({ model, messages: conversation(91), max_tokens: 400 })
        .withResponse();
      expect(response.response.headers.get('x-context-retries')).toBe('0');
      expect(fake.chatRequests.length - before).toBe(1);
    } finally {
      await other.close();
    }
  });

  it('returns the upstream’s own error unchanged when the ladder is exhausted', async () => {
    // An upstream that refuses everything, without numbers: each retry tries smaller, then gives up.
    const fixture = overflowCases.find((entry) => entry.id === 'T23') as FixtureCase;
    fake.setWindow('hidden-exhausted', 5);
    answerOverflowWith = (facts) => fixtureAnswer(fixture, facts);
    const before = fake.chatRequests.length;
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-recovery' },
      body: JSON.stringify({ model: 'hidden-exhausted', messages: conversation(90), max_tokens: 400 }),
    });
    // 1 + max_retries (3) calls, each smaller than the one before, then the upstream's answer as it was.
    const calls = fake.chatRequests.slice(before);
    expect(calls).toHaveLength(4);
    const sizes = calls.map((call) => call.promptTokens ?? 0);
    expect(sizes).toEqual([...sizes].sort((a, b) => b - a));
    expect(new Set(sizes).size).toBe(4);
    expect(response.status).toBe(400);
    expectRelayed(await response.text(), fixture.body, 400);
  });
});

describe('every retry makes progress', () => {
  // Anthropic's wording: the provider states its count and its limit, and counts far more than the
  // gateway does. The gateway already knows the window, so learning it changes nothing: only the
  // provider's own numbers can make the retry smaller.
  const tooLong = (facts: OverflowFacts) => ({
    status: 400,
    body: JSON.stringify({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: `prompt is too long: ${facts.promptTokens} tokens > ${facts.window} maximum`,
      },
    }),
  });

  it.each([
    ['a model the gateway estimates', 'far-counting-model'],
    ['a model the gateway counts exactly, whose provider counts more', 'gpt-4.1-mini'],
  ])('%s: one smaller retry, then the next request fits first time', async (_name, model) => {
    answerOverflowWith = tooLong;
    fake.setWindow(model, window);
    fake.setDefault({ content: 'recovered' });
    const before = fake.chatRequests.length;
    const first = await send(model, conversation(90), { stream: false, maxTokens: 400 });
    expect(first.content).toBe('recovered');
    const calls = fake.chatRequests.slice(before);
    expect(calls).toHaveLength(2);
    const [refused, retry] = calls.map((call) => call.promptTokens ?? Infinity);
    expect(retry).toBeLessThan(refused ?? 0);
    expect((retry ?? Infinity) + 400).toBeLessThanOrEqual(window);

    for (let turns = 91; turns < 94; turns++) {
      const beforeNext = fake.chatRequests.length;
      const next = await send(model, conversation(turns), { stream: false, maxTokens: 400 });
      expect(next.retries).toBe('0');
      expect(fake.chatRequests.length - beforeNext).toBe(1);
    }
  });

  // An agent that asks a long answer of a model the gateway was not told (OpenCode asks 32,000 tokens)
  // is refused though its prompt fits. The retry asks for what the window leaves and sends the prompt
  // whole: it was cut to the current turn, to make room for the safety margin beside that answer. Some
  // texts state only the total (the prompt and the answer asked for) and the window — Cerebras's
  // (cline/cline#5140) and Cloudflare Workers AI's AiError, as a 400 (5021) and a 413 (3010): the total
  // less the max_tokens the attempt asked is the provider's count of the prompt (it was compressed
  // blindly, or, on Cloudflare, refused until the client got the error).
  const totalOnly: ReadonlyArray<
    readonly [string, (facts: OverflowFacts) => { status: number; body: string }]
  > = [
    [
      'Cerebras',
      (facts) => ({
        status: 400,
        body: JSON.stringify({
          message: `Please reduce the length of the messages or completion. Current length is ${facts.promptTokens + facts.completionTokens} while limit is ${facts.window}`,
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        }),
      }),
    ],
    [
      'OpenAI, stating the prompt too',
      (facts) => ({
        status: 400,
        body: JSON.stringify({
          error: {
            message: `This model's maximum context length is ${facts.window} tokens. However, you requested ${facts.promptTokens + facts.completionTokens} tokens (${facts.promptTokens} in the messages, ${facts.completionTokens} in the completion). Please reduce the length of the messages or completion.`,
            type: 'invalid_request_error',
            param: 'messages',
            code: 'context_length_exceeded',
          },
        }),
      }),
    ],
    [
      'Cloudflare Workers AI (5021)',
      (facts) => ({
        status: 400,
        body: JSON.stringify({
          errors: [
            {
              message: `AiError: The estimated number of input and maximum output tokens (${facts.promptTokens + facts.completionTokens}) exceeded this model context window limit (${facts.window}).`,
              code: 5021,
            },
          ],
          success: false,
          result: {},
          messages: [],
        }),
      }),
    ],
    [
      'Cloudflare Workers AI (3010, a 413)',
      (facts) => ({
        status: 413,
        body: JSON.stringify({
          errors: [
            {
              message: `3010: AiError: The estimated number of input and maximum output tokens (${facts.promptTokens + facts.completionTokens}) exceeded this model context window limit (${facts.window})`,
              code: 3010,
            },
          ],
          success: false,
          result: {},
          messages: [],
        }),
      }),
    ],
  ];
  it.each(totalOnly)(
    '%s, stating the prompt and the answer together: a fitting prompt is kept whole, the answer shortened',
    async (name, answer) => {
      answerOverflowWith = answer;
      const model = `hidden-total-${name.replace(/\W+/g, '-').toLowerCase()}`;
      fake.setWindow(model, window);
      fake.setDefault({ content: 'recovered' });
      const messages = conversation(5);
      const before = fake.chatRequests.length;
      const first = await send(model, messages, { stream: false, maxTokens: 32_000 });
      expect(first.content).toBe('recovered');
      const calls = fake.chatRequests.slice(before);
      expect(calls).toHaveLength(2);
      const [refused, retry] = calls.map((call) => call.body as { messages: unknown[]; max_tokens?: number });
      expect(retry?.messages).toEqual(refused?.messages);
      expect(retry?.max_tokens).toBeLessThanOrEqual(window - (calls[1]?.promptTokens ?? window));
      expect(retry?.max_tokens).toBeGreaterThan(window / 2);
    },
  );

  it('never sends a refused request again, even when the provider gives no numbers', async () => {
    // Bedrock's "Input is too long for requested model." on a window far below the gateway's belief.
    answerOverflowWith = () => ({
      status: 400,
      body: '{"message":"Input is too long for requested model."}',
    });
    fake.setWindow('hidden-blind', 3_000);
    fake.setDefault({ content: 'recovered' });
    const before = fake.chatRequests.length;
    const answer = await send('hidden-blind', conversation(40), { stream: false, maxTokens: 400 });
    expect(answer.content).toBe('recovered');
    const calls = fake.chatRequests.slice(before);
    const bodies = calls.map((call) => call.rawBody);
    expect(new Set(bodies).size).toBe(bodies.length);
    const sizes = calls.map((call) => call.promptTokens ?? 0);
    for (let index = 1; index < sizes.length; index++)
      expect(sizes[index]).toBeLessThan(sizes[index - 1] ?? 0);
  });
});

/**
 * The upstream's answer as the client got it (docs/budgeting.md#an-upstreams-error-body): as it came when
 * it is no error, OpenAI's shape or not JSON; else an OpenAI error whose message is the provider's words, its body
 * beside as it came.
 */
function expectRelayed(text: string, upstream: string, status: number): void {
  if (status < 400) {
    expect(text).toBe(upstream);
    return;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(upstream);
  } catch {
    expect(text).toBe(upstream);
    return;
  }
  const error = (parsed as { error?: { message?: unknown } } | null)?.error;
  if (typeof error?.message === 'string') {
    expect(text).toBe(upstream);
    return;
  }
  const relayed = JSON.parse(text) as { error: { message: string; upstream: unknown } };
  expect(relayed.error.upstream).toEqual(parsed);
  expect(relayed.error.message.length).toBeGreaterThan(3);
  expect(JSON.stringify(parsed)).toContain(JSON.stringify(relayed.error.message).slice(1, -1));
}

describe('look-alikes never cause a compressed retry', () => {
  const lookAlikes = fixtures.filter((fixture) => fixture.expect === 'not_overflow');
  it.each(lookAlikes.map((fixture) => [fixture.id, fixture] as const))('%s', async (_id, fixture) => {
    const status = fixture.status ?? 400;
    for (let copy = 0; copy < 3; copy++) fake.enqueue({ status, body: fixture.body });
    const before = fake.chatRequests.length;
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-recovery' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: conversation(3) }),
    });
    expect(response.status).toBe(status);
    expectRelayed(await response.text(), fixture.body, status);
    const calls = fake.chatRequests.slice(before);
    // 429s and 5xx may be retried as they were (upstream retries), never with a smaller prompt.
    expect(new Set(calls.map((call) => call.rawBody)).size).toBe(1);
    expect(response.headers.get('x-context-retries') ?? '0').toBe('0');
    fake.clearQueue();
  });
});

describe('calibration and silent truncation', () => {
  it('learns the ratio between the upstream’s counts and its own estimate, so later requests fit first time', async () => {
    const fixture = overflowCases.find((entry) => entry.id === 'T10') as FixtureCase;
    answerOverflowWith = (facts) => fixtureAnswer(fixture, facts);
    fake.setDefault({ content: 'ok' });
    const first = await send('scaled-model', conversation(90), { stream: false, maxTokens: 400 });
    expect(Number(first.retries)).toBeGreaterThan(0);
    // From then on the estimate is scaled: a growing conversation keeps fitting first time.
    for (let turns = 91; turns < 94; turns++) {
      const before = fake.chatRequests.length;
      const next = await send('scaled-model', conversation(turns), { stream: false, maxTokens: 400 });
      expect(next.retries).toBe('0');
      expect(fake.chatRequests.length - before).toBe(1);
      expect((fake.chatRequests.at(-1)?.promptTokens ?? Infinity) + 400).toBeLessThanOrEqual(window);
    }
  });

  it('marks an answer whose usage shows the upstream cut the prompt, and counts it', async () => {
    fake.setDefault({ content: 'cut' });
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-recovery' },
      body: JSON.stringify({ model: 'truncating-model', messages: conversation(200), max_tokens: 400 }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-context-upstream-truncated')).toBe('true');
    const fits = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-recovery' },
      body: JSON.stringify({ model: 'truncating-model', messages: conversation(3), max_tokens: 400 }),
    });
    expect(fits.headers.get('x-context-upstream-truncated')).toBeNull();
    const metrics = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
    expect(metrics).toContain(
      'ctxgate_upstream_truncations_total{upstream="default",model="truncating-model"} 1',
    );
    expect(harness.logLines.some((line) => line.includes('may have truncated the prompt'))).toBe(true);
  });
});

/** A small request the gateway answers with the upstream's rate limit: the client's error. */
async function rateLimited(): Promise<InstanceType<typeof OpenAI.RateLimitError>> {
  const refused = await client()
    .chat.completions.create({ model: 'gpt-4o-mini', messages: conversation(2), max_tokens: 50 })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
  return refused as InstanceType<typeof OpenAI.RateLimitError>;
}

describe('upstream retries', () => {
  it('retries a 429 after its retry-after-ms, before any byte reached the client, and answers', async () => {
    fake.setDefault({ content: 'after the wait' });
    fake.enqueue({
      status: 429,
      headers: { 'retry-after-ms': '400' },
      body: '{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}',
    });
    const before = fake.chatRequests.length;
    const answer = await send('gpt-4o-mini', conversation(2), { stream: true, maxTokens: 50 });
    expect(answer.content).toBe('after the wait');
    const calls = fake.chatRequests.slice(before);
    expect(calls).toHaveLength(2);
    // The retry reached the provider no sooner than it asked (a lower bound: a loaded machine only
    // makes it later).
    expect((calls[1]?.receivedAtMs ?? 0) - (calls[0]?.receivedAtMs ?? 0)).toBeGreaterThanOrEqual(399);
    expect(calls[1]?.rawBody).toBe(calls[0]?.rawBody);
    expect(answer.retries).toBe('0');
  });

  it('does not wait out a day limit stated only in words, and tells the client the wait', async () => {
    // Groq's tokens-per-day refusal as a relay passes it on: the wait in the text, no retry-after header.
    fake.enqueue({
      status: 429,
      body: JSON.stringify({
        error: {
          message:
            'Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01kjh7p9n8f1qs6nz2bz77vy6b` service tier `on_demand` on tokens per day (TPD): Limit 100000, Used 97050, Requested 3619. Please try again in 9m38.016s. Need more tokens%3F Upgrade to Dev Tier today at https://console.groq.com/settings/billing',
          type: 'tokens',
          code: 'rate_limit_exceeded',
        },
      }),
    });
    const before = fake.chatRequests.length;
    const refused = await rateLimited();
    // One call: a wait of minutes is the client's to decide on, not the gateway's to sit through.
    expect(fake.chatRequests.length - before).toBe(1);
    expect(refused.headers?.get('retry-after')).toBe('579');
  });

  it("does not retry OpenRouter's spent day of free requests, and tells the client when it resets", async () => {
    const resetAt = Date.now() + 6 * 3_600_000;
    fake.enqueue({
      status: 429,
      body: JSON.stringify({
        error: {
          message:
            'Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day',
          code: 429,
          metadata: {
            headers: {
              'X-RateLimit-Limit': '50',
              'X-RateLimit-Remaining': '0',
              'X-RateLimit-Reset': `${resetAt}`,
            },
            provider_name: null,
          },
        },
      }),
    });
    const before = fake.chatRequests.length;
    const refused = await rateLimited();
    expect(fake.chatRequests.length - before).toBe(1);
    // Six hours, less the moments the call took.
    const seconds = Number(refused.headers?.get('retry-after'));
    expect(seconds).toBeGreaterThan(6 * 3600 - 120);
    expect(seconds).toBeLessThanOrEqual(6 * 3600);
  });
});

describe('what a retry keeps', () => {
  it('sends every part of the kept messages as they were, images included', async () => {
    const fixture = overflowCases.find((entry) => entry.id === 'T10') as FixtureCase;
    answerOverflowWith = (facts) => fixtureAnswer(fixture, facts);
    fake.setDefault({ content: 'seen' });
    const pixel =
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const last: OpenAI.ChatCompletionMessageParam = {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image_url', image_url: { url: pixel, detail: 'low' } },
      ],
    };
    const messages = [...conversation(90).slice(0, -1), last];
    const answer = await send('hidden-images', messages, { stream: false, maxTokens: 400 });
    expect(answer.content).toBe('seen');
    expect(Number(answer.retries)).toBeGreaterThan(0);
    const sent = (fake.chatRequests.at(-1)?.body as { messages: unknown[] }).messages;
    expect(sent.at(-1)).toEqual(last);
    expect(sent[0]).toEqual(messages[0]);
  });
});

// A thinking model counts its thinking in max_tokens (DeepSeek, Kimi, Qwen on vLLM). Under the window it
// learned, the gateway kept a conversation whole by lowering max_tokens to what was left — and the model,
// thinking 2,500 tokens, answered nothing, cut at length, turn after turn until the history gave way.
describe('a thinking model near the window the gateway learned', () => {
  // One that shows its thinking (DeepSeek's reasoning_content), one of OpenAI's, which never does, and one
  // served without a reasoning parser, its thinking between <think> tags in its text (QwQ on llama.cpp).
  it.each(['thinking-16k', 'gpt-5.5-16k', 'qwq-16k'])(
    '%s keeps the max_tokens asked (the oldest turns give way): no answer comes back empty',
    async (model) => {
      const thinking = new FakeUpstream({
        windows: { [model]: 16_384 },
        thinkingSpends: { [model]: 2_500 },
        thinkTags: ['qwq-16k'],
        respond: () => ({ content: 'The answer.' }),
      });
      const gateway = await startGateway({ env: { UPSTREAM_BASE_URL: await thinking.start() } });
      try {
        const client = new OpenAI({ baseURL: gateway.baseUrl, apiKey: 'sk-test', maxRetries: 0 });
        const messages: OpenAI.ChatCompletionMessageParam[] = [];
        const answers: Array<{ content: string | null; finish: string | undefined }> = [];
        for (let turn = 0; turn < 30; turn++) {
          messages.push({ role: 'user', content: `Turn ${turn}: ${words(turn, 300)}` });
          const completion = await client.chat.completions.create({ model, max_tokens: 4_000, messages });
          const choice = completion.choices[0];
          answers.push({ content: choice?.message.content ?? null, finish: choice?.finish_reason });
          messages.push({
            role: 'assistant',
            content: `${choice?.message.content ?? ''} ${words(turn + 50, 150)}`,
          });
        }
        expect(
          answers.filter(
            (answer) => answer.finish !== 'stop' || !String(answer.content).endsWith('The answer.'),
          ),
        ).toEqual([]);
        const sent = thinking.chatRequests.filter((request) => request.status === 200);
        // Past the window: the oldest turns were left out, and the answer kept its room to think.
        expect(sent.every((request) => (request.body as { max_tokens?: number }).max_tokens === 4_000)).toBe(
          true,
        );
        expect((sent.at(-1)?.body as { messages: unknown[] }).messages.length).toBeLessThan(messages.length);
      } finally {
        await gateway.close();
        await thinking.stop();
      }
    },
  );
});
