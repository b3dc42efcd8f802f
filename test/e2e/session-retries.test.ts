// End to end (docs/sessions.md#retries): a retried request never stores its turn twice. A request
// marked as a retry (X-Stainless-Retry-Count > 0, as the OpenAI SDKs send it) or carrying the last
// turn's Idempotency-Key, whose new messages are that turn's, is answered afresh and its reply
// replaces the stored one; the same question asked again without a mark is a turn of its own. A write
// whose acknowledgement Redis held back is found stored before the client hears anything, and the
// SDK's own retry after a refusal replaces instead of appending. An answer the provider ends with an
// error of its own is not stored, so the client's retry of it is the turn's only answer.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, gate } from '../helpers/fake-upstream.js';
import { startRedisServer } from '../helpers/redis-server.js';
import {
  counterValue,
  metricsText,
  startGateway,
  waitUntilReady,
  type GatewayHarness,
} from '../helpers/start-gateway.js';

const run = promisify(execFile);
const key = 'sk-retries';

let fake: FakeUpstream;
let upstreamUrl: string;
let harness: GatewayHarness;
let answers = 0;

beforeAll(async () => {
  // Every answer differs, so a stored reply tells which call it came from.
  fake = new FakeUpstream({ answer: () => `answer number ${++answers}` });
  upstreamUrl = await fake.start();
  harness = await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') } });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

type Message = { role: string; content: string };

async function chat(
  sessionId: string,
  messages: Message[],
  headers: Record<string, string> = {},
  gateway = harness,
): Promise<{ status: number; content: string | undefined }> {
  const response = await fetch(`${gateway.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'x-session-id': sessionId,
      ...headers,
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages }),
  });
  const body = (await response.json()) as { choices?: Array<{ message: { content: string } }> };
  return { status: response.status, content: body.choices?.[0]?.message.content };
}

async function history(sessionId: string, gateway = harness): Promise<Message[]> {
  const response = await fetch(`${gateway.baseUrl}/sessions/${sessionId}/history`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const body = (await response.json()) as { data: Array<Message & { tokens: number }> };
  return body.data.map(({ role, content }) => ({ role, content }));
}

const retry = { 'x-stainless-retry-count': '1' };
const user = (content: string): Message => ({ role: 'user', content });

describe('a retried turn replaces the stored one', () => {
  it.each([
    ['auto', {}],
    ['delta', { 'x-session-history': 'delta' }],
  ])('in %s mode, marked by X-Stainless-Retry-Count', async (_mode, modeHeaders) => {
    const sessionId = `retry-${_mode}-${answers}`;
    const first = await chat(sessionId, [user('What is 2+2?')], modeHeaders);
    const upstreamBefore = fake.chatRequests.length;
    const again = await chat(sessionId, [user('What is 2+2?')], { ...modeHeaders, ...retry });
    expect(again.status).toBe(200);
    expect(again.content).not.toBe(first.content);
    // Answered afresh, from the session as it was before the turn.
    expect(fake.chatRequests.length).toBe(upstreamBefore + 1);
    expect((fake.chatRequests.at(-1)?.body as { messages: Message[] }).messages).toEqual([
      user('What is 2+2?'),
    ]);
    expect(await history(sessionId)).toEqual([
      user('What is 2+2?'),
      { role: 'assistant', content: again.content },
    ]);
  });

  it('is a turn of its own when the same question comes without a mark', async () => {
    const sessionId = `ask-twice-${answers}`;
    const first = await chat(sessionId, [user('Tell me a joke.')], { 'x-session-history': 'delta' });
    const second = await chat(sessionId, [user('Tell me a joke.')], { 'x-session-history': 'delta' });
    expect(await history(sessionId)).toEqual([
      user('Tell me a joke.'),
      { role: 'assistant', content: first.content },
      user('Tell me a joke.'),
      { role: 'assistant', content: second.content },
    ]);
  });

  it('is known by the turn’s own Idempotency-Key, and another key is another turn', async () => {
    const sessionId = `idempotency-${answers}`;
    await chat(sessionId, [user('Plan my week.')], { 'idempotency-key': 'turn-a' });
    const replaced = await chat(sessionId, [user('Plan my week.')], { 'idempotency-key': 'turn-a' });
    expect(await history(sessionId)).toEqual([
      user('Plan my week.'),
      { role: 'assistant', content: replaced.content },
    ]);
    await chat(sessionId, [user('Plan my week.')], {
      'x-session-history': 'delta',
      'idempotency-key': 'turn-b',
    });
    expect(await history(sessionId)).toHaveLength(4);
  });

  it('replaces only the last turn of a longer conversation resent whole', async () => {
    const sessionId = `long-${answers}`;
    const one = await chat(sessionId, [user('one')]);
    const two = await chat(sessionId, [
      user('one'),
      { role: 'assistant', content: one.content as string },
      user('two'),
    ]);
    const conversation = [user('one'), { role: 'assistant', content: one.content as string }, user('two')];
    const again = await chat(sessionId, conversation, retry);
    expect(again.content).not.toBe(two.content);
    expect(await history(sessionId)).toEqual([
      ...conversation,
      { role: 'assistant', content: again.content },
    ]);
  });

  it('stores once when the retry arrives while the first request still holds the session', async () => {
    const sessionId = `concurrent-${answers}`;
    const answerFirst = gate();
    fake.enqueue({ answerWhen: answerFirst.opened });
    const first = chat(sessionId, [user('Slow question?')]);
    // The first holds the session until its upstream answers, which the test allows once the retry
    // waits for the session.
    await fake.chatRequestHolding('Slow question?');
    const waits = 'ctxgate_session_waits_total';
    const waitsBefore = counterValue(await metricsText(harness), waits);
    const second = chat(sessionId, [user('Slow question?')], retry);
    await expect.poll(async () => counterValue(await metricsText(harness), waits)).toBe(waitsBefore + 1);
    answerFirst.open();
    const secondAnswer = await second;
    expect((await first).status).toBe(200);
    expect(secondAnswer.status).toBe(200);
    expect(await history(sessionId)).toEqual([
      user('Slow question?'),
      { role: 'assistant', content: secondAnswer.content },
    ]);
  });
});

describe('a commit whose acknowledgement Redis held back', () => {
  async function pausedGateway(commitCheckMs: number) {
    const redis = await startRedisServer();
    const upstream = new FakeUpstream({ answer: () => `answer number ${++answers}` });
    const gateway = await startGateway({
      env: { UPSTREAM_BASE_URL: await upstream.start(), REDIS_URL: redis.url },
      configYaml: `sessions:\n  commit_check_ms: ${commitCheckMs}\n`,
    });
    await waitUntilReady(gateway);
    return {
      redis,
      upstream,
      gateway,
      async close() {
        await gateway.close();
        await upstream.stop();
        await redis.stop();
      },
    };
  }

  it('is found stored once Redis resumes: the client hears 200 and the turn is there once', async () => {
    const setup = await pausedGateway(15_000);
    try {
      // Redis stops taking writes while the provider answers: the turn's write waits in Redis, and its
      // acknowledgement comes after the gateway's command timeout.
      // The provider answers once Redis is paused: the hold was taken and the session read before.
      const answerNow = gate();
      setup.upstream.setDefault({ answerWhen: answerNow.opened });
      const client = new OpenAI({
        baseURL: setup.gateway.baseUrl,
        apiKey: key,
        maxRetries: 0,
        defaultHeaders: { 'x-session-id': 'stalled' },
      });
      const answer = client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Stall?' }],
      });
      await setup.upstream.chatRequestHolding('Stall?');
      await run('redis-cli', ['-p', String(setup.redis.port), 'CLIENT', 'PAUSE', '6000', 'WRITE']);
      answerNow.open();
      const completion = await answer;
      expect(completion.choices[0]?.message.content).toMatch(/^answer number/);
      expect(await history('stalled', setup.gateway)).toEqual([
        user('Stall?'),
        { role: 'assistant', content: completion.choices[0]?.message.content },
      ]);
    } finally {
      await setup.close();
    }
  }, 30_000);

  it('past the check, the SDK’s own retry of the refused turn replaces it instead of storing it twice', async () => {
    const setup = await pausedGateway(500);
    try {
      // The provider answers once Redis is paused: the hold was taken and the session read before.
      const answerNow = gate();
      setup.upstream.setDefault({ answerWhen: answerNow.opened });
      const client = new OpenAI({
        baseURL: setup.gateway.baseUrl,
        apiKey: key,
        maxRetries: 4,
        defaultHeaders: { 'x-session-id': 'refused' },
      });
      const answer = client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Twice?' }],
      });
      await setup.upstream.chatRequestHolding('Twice?');
      await run('redis-cli', ['-p', String(setup.redis.port), 'CLIENT', 'PAUSE', '2500', 'WRITE']);
      answerNow.open();
      const completion = await answer;
      // The first answer was stored when Redis resumed, after the client was told 503: its retry replaced it.
      expect(setup.upstream.chatRequests.length).toBeGreaterThanOrEqual(2);
      expect(await history('refused', setup.gateway)).toEqual([
        user('Twice?'),
        { role: 'assistant', content: completion.choices[0]?.message.content },
      ]);
    } finally {
      await setup.close();
    }
  }, 30_000);
});

describe('an answer the provider ends with an error of its own (OpenRouter during generation)', () => {
  // As OpenRouter documents its errors during generation: a 200 whose stream carries, after what was
  // generated, a chunk with `error` and `finish_reason: "error"` (or a whole answer saying so).
  const cut = (id: string) =>
    [
      {
        id,
        object: 'chat.completion.chunk',
        model: 'openai/gpt-4o',
        choices: [{ index: 0, delta: { role: 'assistant', content: 'The answer beg' }, finish_reason: null }],
      },
      {
        id,
        object: 'chat.completion.chunk',
        model: 'openai/gpt-4o',
        provider: 'OpenAI',
        error: { code: 'server_error', message: 'Provider disconnected unexpectedly' },
        choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }],
      },
    ]
      .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
      .join('');

  /** A whole answer saying so, cut text and all. */
  const erredWhole = (id: string) =>
    JSON.stringify({
      id,
      object: 'chat.completion',
      model: 'openai/gpt-4o',
      error: { code: 502, message: 'Provider returned error' },
      choices: [{ index: 0, message: { role: 'assistant', content: 'Half an ans' }, finish_reason: 'error' }],
    });

  it('is not stored: the client sees the error, and its retry leaves the turn there once', async () => {
    const sessionId = `errored-stream-${answers}`;
    const client = new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': sessionId },
    });
    fake.enqueue({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: `${cut('gen-1')}data: [DONE]\n\n`,
    });
    const ask = async () => {
      let text = '';
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        stream: true,
        messages: [{ role: 'user', content: 'Explain the retry budget.' }],
      });
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    const failed = await ask().catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect((failed as Error).message).toContain('Provider disconnected unexpectedly');
    const retried = await ask();
    expect(await history(sessionId)).toEqual([
      user('Explain the retry budget.'),
      { role: 'assistant', content: retried },
    ]);
  });

  it('whole, bridged to a Responses or a Messages client, is an error in its API, not a finished answer', async () => {
    const body = erredWhole('gen-3');
    fake.enqueue({ status: 200, headers: { 'content-type': 'application/json' }, body });
    const responses = new OpenAI({ baseURL: harness.baseUrl, apiKey: key, maxRetries: 0 });
    const failed = await responses.responses
      .create({ model: 'gpt-4o-mini', store: false, input: 'Explain the retry budget.' })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((failed as Error).message).toContain('Provider returned error');
    fake.enqueue({ status: 200, headers: { 'content-type': 'application/json' }, body });
    const anthropic = new Anthropic({
      baseURL: harness.baseUrl.replace(/\/v1$/, ''),
      apiKey: key,
      maxRetries: 0,
    });
    const refused = await anthropic.messages
      .create({
        model: 'gpt-4o-mini',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Explain the retry budget.' }],
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.APIError);
    expect((refused as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
    expect((refused as Error).message).toContain('Provider returned error');
    // The request lines name the code.
    const codes = harness.logLines
      .filter((line) => line.includes('"msg":"request"') && line.includes('"status":502'))
      .map((line) => JSON.parse(line) as { errorCode?: string; route?: string })
      .filter((line) => line.route === '/v1/responses' || line.route === '/v1/messages')
      .map((line) => line.errorCode);
    expect(codes.slice(-2)).toEqual(['upstream_bad_response', 'upstream_bad_response']);
  });

  it('whole, is passed on as it came and not stored', async () => {
    const sessionId = `errored-whole-${answers}`;
    const body = erredWhole('gen-2');
    fake.enqueue({ status: 200, headers: { 'content-type': 'application/json' }, body });
    const failed = await chat(sessionId, [user('Explain the retry budget.')]);
    expect(failed).toEqual({ status: 200, content: 'Half an ans' });
    const retried = await chat(sessionId, [user('Explain the retry budget.')]);
    expect(await history(sessionId)).toEqual([
      user('Explain the retry budget.'),
      { role: 'assistant', content: retried.content },
    ]);
  });
});
