// End to end: token budgets through the openai client and real HTTP, counted in a real Redis — hard,
// soft and off budgets, max_request_tokens, backpressure thresholds (without holding the session),
// period resets with an injected clock, the admin endpoints, usage estimated when an answer reports
// none, and nothing lost across a Redis restart with AOF.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { gatewayKeyTenantId, sha256 } from '../../src/config/tenant-id.js';
import { createRedisBudgetStore } from '../../src/store/redis-budget-store.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startRedisServer } from '../helpers/redis-server.js';
import {
  counterValue,
  metricsText,
  startGateway,
  waitUntilReady,
  type GatewayHarness,
} from '../helpers/start-gateway.js';

const clientKey = 'gk-budget-client';
const adminKey = 'admin-secret-key';
const tenantId = gatewayKeyTenantId(sha256(clientKey));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let fake: FakeUpstream;
let upstreamUrl: string;
beforeAll(async () => {
  fake = new FakeUpstream();
  fake.setDefault({ content: 'Short answer from the model.' });
  upstreamUrl = await fake.start();
});
afterAll(async () => {
  await fake.stop();
});

async function gatewayWith(
  budgetsYaml: string,
  options: { clock?: () => number; redisUrl?: string; env?: Record<string, string> } = {},
): Promise<GatewayHarness> {
  const harness = await startGateway({
    env: {
      UPSTREAM_BASE_URL: upstreamUrl,
      REDIS_URL: options.redisUrl ?? inject('redisUrl'),
      GATEWAY_API_KEYS: clientKey,
      ADMIN_API_KEY: adminKey,
      ...options.env,
    },
    configYaml: budgetsYaml,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  await waitUntilReady(harness);
  return harness;
}

/** One chat request by fetch: status, headers and body. */
async function chat(
  harness: GatewayHarness,
  content: string,
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): Promise<{
  status: number;
  headers: Headers;
  body: Record<string, unknown> & { usage?: { total_tokens: number } };
}> {
  const response = await fetch(`${harness.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${clientKey}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content }],
      max_tokens: 50,
      ...extra,
    }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as never };
}

/** Tokens this gateway has stored on budgets so far, from both sources. */
async function countedTokens(harness: GatewayHarness): Promise<number> {
  const text = await metricsText(harness);
  return (
    counterValue(text, 'ctxgate_budget_tokens_total{source="usage"}') +
    counterValue(text, 'ctxgate_budget_tokens_total{source="estimate"}')
  );
}

/** Waits until this gateway has stored more tokens than `before`: an answer is counted just after it. */
async function countedPast(harness: GatewayHarness, before: number): Promise<void> {
  await expect.poll(() => countedTokens(harness)).toBeGreaterThan(before);
}

/** `chat`, and when answered, until what the answer cost is on the budgets. */
async function chatCounted(
  harness: GatewayHarness,
  ...args: Parameters<typeof chat> extends [unknown, ...infer Rest] ? Rest : never
): ReturnType<typeof chat> {
  const before = await countedTokens(harness);
  const answer = await chat(harness, ...args);
  if (answer.status === 200) await countedPast(harness, before);
  return answer;
}

async function admin(harness: GatewayHarness, path: string, method = 'GET', key = adminKey) {
  const response = await fetch(`${harness.baseUrl}/admin/budgets/${path}`, {
    method,
    headers: { authorization: `Bearer ${key}` },
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown> & { budgets: Array<Record<string, unknown>> },
  };
}

describe('hard, soft and off budgets', () => {
  let harness: GatewayHarness;
  const sessionLimit = 600;
  beforeAll(async () => {
    harness = await gatewayWith(
      [
        'budgets:',
        '  defaults:',
        `    session_tokens: { limit: ${sessionLimit}, mode: hard }`,
        '    credential_daily_tokens: { limit: 1000000000, mode: soft }',
        '    max_request_tokens: { limit: 5000, mode: hard }',
        'policies:',
        '  lenient:',
        '    budgets:',
        '      max_request_tokens: { limit: 6000, mode: soft }',
        '',
      ].join('\n'),
    );
  });
  afterAll(() => harness.close());

  it('counts a session from the upstream usage and refuses it, before calling upstream, once used up', async () => {
    const sessionId = `hard-${randomUUID()}`;
    let used = 0;
    const remainingSeen: string[] = [];
    for (let turn = 0; turn < 40; turn++) {
      const before = fake.chatRequests.length;
      const answer = await chatCounted(harness, `Turn ${turn}: tell me something about budgets.`, {
        'x-session-id': sessionId,
      });
      remainingSeen.push(answer.headers.get('x-budget-remaining') ?? 'missing');
      if (answer.status === 429) {
        expect(fake.chatRequests.length).toBe(before);
        expect(answer.headers.get('x-budget-remaining')).toBe('0');
        expect(answer.body).toEqual({
          error: {
            message: `Token budget session_tokens exceeded: ${used} of ${sessionLimit} tokens used; it does not reset (it counts the whole session).`,
            type: 'rate_limit_error',
            param: 'session_tokens',
            code: 'budget_exceeded',
          },
        });
        break;
      }
      expect(answer.status).toBe(200);
      // What was left before this request, from the upstream's own usage numbers.
      expect(answer.headers.get('x-budget-remaining')).toBe(String(sessionLimit - used));
      used += answer.body.usage?.total_tokens ?? Number.NaN;
    }
    expect(used).toBeGreaterThanOrEqual(sessionLimit);
    // Never more than one request over the limit.
    expect(used - sessionLimit).toBeLessThan(200);
    expect(remainingSeen.at(-1)).toBe('0');
    const read = await admin(harness, `sessions/${tenantId}/${sessionId}`);
    expect(read.body.budgets[0]).toMatchObject({
      budget: 'session_tokens',
      limit: sessionLimit,
      used,
      estimated: 0,
      reserved: 0,
      remaining: 0,
    });
  });

  it('lets a request lower its session budget by header, never raise it', async () => {
    const lowered = await chat(harness, 'Hello there.', {
      'x-session-id': `low-${randomUUID()}`,
      'x-budget-session-tokens': '5',
    });
    expect(lowered.headers.get('x-budget-remaining')).toBe('5');
    const raised = await chat(harness, 'Hello there.', {
      'x-session-id': `high-${randomUUID()}`,
      'x-budget-session-tokens': '999999',
    });
    expect(raised.headers.get('x-budget-remaining')).toBe(String(sessionLimit));
    const bad = await chat(harness, 'Hello there.', { 'x-budget-session-tokens': 'lots' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { code: 'invalid_header', param: 'x-budget-session-tokens' } });
  });

  it('refuses a request whose prompt and max_tokens pass max_request_tokens, and a soft preset only warns', async () => {
    const before = fake.chatRequests.length;
    const refused = await chat(harness, 'A small prompt.', {}, { max_tokens: 6000 });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: { code: 'budget_exceeded', param: 'max_request_tokens' } });
    expect(String((refused.body.error as { message: string }).message)).toMatch(
      /needs about 60\d\d tokens.*limit of 5000/,
    );
    expect(fake.chatRequests.length).toBe(before);
    // A preset may only make a budget tighter: here 6000 soft is not tighter than 5000 hard.
    const preset = await chat(
      harness,
      'A small prompt.',
      { 'x-context-policy': 'lenient' },
      { max_tokens: 6000 },
    );
    expect(preset.status).toBe(429);
  });

  it('serves a soft budget past its limit with a warning, and sends no budget headers where none applies', async () => {
    const soft = await gatewayWith(
      ['budgets:', '  defaults:', '    credential_daily_tokens: { limit: 1, mode: soft }', ''].join('\n'),
      {
        redisUrl: inject('redisUrl'),
      },
    );
    try {
      await soft.gateway.app.inject({
        method: 'DELETE',
        url: `/v1/admin/budgets/credentials/${tenantId}`,
        headers: { authorization: `Bearer ${adminKey}` },
      });
      await chatCounted(soft, 'First.');
      const over = await chat(soft, 'Second.');
      expect(over.status).toBe(200);
      expect(over.headers.get('x-budget-warning')).toMatch(
        /^credential_daily_tokens: \d+ of 1 tokens used \(soft\)$/,
      );
      expect(over.headers.get('x-budget-remaining')).toBe('0');
      const metrics = await (await fetch(`${soft.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
      expect(metrics).toContain('ctxgate_budget_soft_exceeded_total{budget="credential_daily_tokens"} ');
      expect(metrics).toContain('ctxgate_budget_warnings_total{budget="credential_daily_tokens"} 1');
    } finally {
      await soft.close();
    }
    const off = await gatewayWith(
      ['budgets:', '  defaults:', '    credential_daily_tokens: { limit: 1, mode: "off" }', ''].join('\n'),
    );
    try {
      const answer = await chat(off, 'Anything.');
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-budget-remaining')).toBeNull();
      expect(answer.headers.get('x-budget-delay-ms')).toBeNull();
    } finally {
      await off.close();
    }
  });
});

describe('backpressure', () => {
  it('delays requests by the configured step for their usage share, without holding the session', async () => {
    const harness = await gatewayWith('{}\n');
    const redis = createRedisConnection({ mode: 'standalone', url: inject('redisUrl') });
    const raw = new Redis(inject('redisUrl'));
    try {
      while (redis.status !== 'ready') await sleep(20);
      const store = createRedisBudgetStore({ redis });
      const cases: Array<[number, string]> = [
        [0.5, '0'],
        [0.8, '50'],
        [0.85, '300'],
        [0.9, '750'],
        [0.95, '1500'],
      ];
      for (const [share, delay] of cases) {
        const sessionId = `pressure-${randomUUID()}`;
        const counter = {
          name: 'session_tokens' as const,
          tenantId,
          sessionId,
          periodId: 'lifetime',
          ttlSeconds: 3_600,
        };
        await store.settle({
          counters: [counter],
          limits: [{ limit: 0, hard: true }],
          reservationId: 'seed',
          tokens: share * 10_000,
          estimatedTokens: 0,
          warnAt: 1,
        });
        const holdKey = `ctxgate:{${tenantId}:${sessionId}}:hold`;
        let heldDuringDelay = false;
        let polling = true;
        // Polled only within the first second: a 1.5 s delay is still running then.
        const pollUntil = Date.now() + 1_000;
        const poll = (async () => {
          while (polling && Date.now() < pollUntil) {
            if ((await raw.exists(holdKey)) === 1) heldDuringDelay = true;
            await sleep(25);
          }
        })();
        const startedAt = Date.now();
        const answer = await chat(harness, 'Under pressure.', {
          'x-session-id': sessionId,
          'x-budget-session-tokens': '10000',
        });
        polling = false;
        await poll;
        expect(answer.status).toBe(200);
        expect(answer.headers.get('x-budget-delay-ms')).toBe(delay);
        // The hold is taken after the wait: polled during a 1.5 s delay, it was never seen.
        if (delay === '1500') {
          expect(Date.now() - startedAt).toBeGreaterThan(1_000);
          expect(heldDuringDelay).toBe(false);
        }
      }
      // Each wait counted by its step; a request under the first step waited for nothing.
      const delays = (await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text())
        .split('\n')
        .filter((line) => line.startsWith('ctxgate_budget_delays_total{'));
      expect(delays.sort()).toEqual(
        ['1500', '300', '50', '750'].map((step) => `ctxgate_budget_delays_total{delay_ms="${step}"} 1`),
      );
      // A stateless request holds nothing: it waits after its reservation, by the same steps.
      const clockMs = Date.UTC(2034, 3, 4, 5);
      const daily = await gatewayWith(
        ['budgets:', '  defaults:', '    credential_daily_tokens: { limit: 10000, mode: hard }', ''].join(
          '\n',
        ),
        { clock: () => clockMs },
      );
      try {
        const counter = {
          name: 'credential_daily_tokens' as const,
          tenantId,
          periodId: '2034-04-04',
          ttlSeconds: 3_600,
        };
        await store.settle({
          counters: [counter],
          limits: [{ limit: 0, hard: true }],
          reservationId: 'seed',
          tokens: 8_600,
          estimatedTokens: 0,
          warnAt: 1,
        });
        const answer = await chat(daily, 'Stateless under pressure.');
        expect(answer.status).toBe(200);
        expect(answer.headers.get('x-budget-delay-ms')).toBe('300');
        expect(answer.headers.get('x-budget-remaining')).toBe('1400');
      } finally {
        await daily.close();
      }
    } finally {
      redis.disconnect();
      raw.disconnect();
      await harness.close();
    }
  });
});

describe('periods, admin endpoints and estimates', () => {
  it('resets a daily budget at midnight UTC and a monthly one at the month boundary (injected clock)', async () => {
    let nowMs = Date.UTC(2031, 0, 31, 23, 59, 0);
    const harness = await gatewayWith(
      [
        'budgets:',
        '  defaults:',
        '    credential_daily_tokens: { limit: 150, mode: hard }',
        '    credential_monthly_tokens: { limit: 1000000, mode: hard }',
        '',
      ].join('\n'),
      { clock: () => nowMs },
    );
    try {
      let status = 200;
      for (let index = 0; index < 20 && status === 200; index++) {
        const answer = await chatCounted(harness, 'Count me.');
        status = answer.status;
        if (status === 429)
          expect((answer.body.error as { message: string }).message).toContain(
            'it resets at 2031-02-01T00:00:00.000Z',
          );
      }
      expect(status).toBe(429);
      const january = await admin(harness, `credentials/${tenantId}`);
      const monthlyUsed = january.body.budgets[1]?.used as number;
      expect(january.body.budgets.map((budget) => budget.period)).toEqual(['2031-01-31', '2031-01']);
      nowMs = Date.UTC(2031, 1, 1, 0, 0, 1);
      const next = await chatCounted(harness, 'A new day.');
      expect(next.status).toBe(200);
      const february = await admin(harness, `credentials/${tenantId}`);
      expect(february.body.budgets.map((budget) => budget.period)).toEqual(['2031-02-01', '2031-02']);
      expect(february.body.budgets[0]).toMatchObject({
        used: next.body.usage?.total_tokens,
        resets_at: '2031-02-02T00:00:00.000Z',
      });
      // January's month still holds what it counted.
      expect(monthlyUsed).toBeGreaterThanOrEqual(150);
    } finally {
      await harness.close();
    }
  });

  it('keeps the admin endpoints behind their own key; reads and resets usage', async () => {
    const harness = await gatewayWith(
      ['budgets:', '  defaults:', '    credential_daily_tokens: { limit: 100, mode: hard }', ''].join('\n'),
      {
        clock: () => Date.UTC(2032, 5, 1, 12),
      },
    );
    const without = await gatewayWith('{}\n', { env: { ADMIN_API_KEY: '' } });
    try {
      expect((await admin(without, `credentials/${tenantId}`)).status).toBe(404);
      expect((await admin(harness, `credentials/${tenantId}`, 'GET', clientKey)).body).toMatchObject({
        error: { code: 'invalid_api_key' },
      });
      const missing = await fetch(`${harness.baseUrl}/admin/budgets/credentials/${tenantId}`);
      expect(missing.status).toBe(401);
      let status = 200;
      for (let index = 0; index < 10 && status === 200; index++)
        status = (await chatCounted(harness, 'Use it up.')).status;
      expect((await chat(harness, 'Refused.')).status).toBe(429);
      const read = await admin(harness, `credentials/${tenantId}`);
      expect(read.body.budgets[0]).toMatchObject({
        budget: 'credential_daily_tokens',
        mode: 'hard',
        limit: 100,
        remaining: 0,
        resets_at: '2032-06-02T00:00:00.000Z',
      });
      expect(
        await admin(harness, `credentials/${tenantId}?budget=credential_daily_tokens`, 'DELETE'),
      ).toEqual({
        status: 200,
        body: { object: 'budget.reset', tenant: tenantId, reset: ['credential_daily_tokens'] },
      });
      expect((await admin(harness, `credentials/${tenantId}`)).body.budgets[0]).toMatchObject({
        used: 0,
        remaining: 100,
      });
      expect((await chat(harness, 'Served again.')).status).toBe(200);
      expect((await admin(harness, `credentials/${tenantId}?budget=weekly`, 'DELETE')).status).toBe(400);
    } finally {
      await harness.close();
      await without.close();
    }
  });

  it('counts an answer that reports no usage by its estimate, marked as such', async () => {
    const harness = await gatewayWith(
      ['budgets:', '  defaults:', '    credential_daily_tokens: { limit: 1000000, mode: hard }', ''].join(
        '\n',
      ),
      {
        clock: () => Date.UTC(2033, 2, 3, 3),
      },
    );
    try {
      const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: clientKey, maxRetries: 0 });
      const before = await countedTokens(harness);
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Stream me an answer without usage.' }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('Short answer from the model.');
      await countedPast(harness, before);
      const read = await admin(harness, `credentials/${tenantId}`);
      const daily = read.body.budgets[0] as { used: number; estimated: number };
      expect(daily.estimated).toBe(daily.used);
      // The estimate: the prompt as sent (the fake's own count) plus the answer's tokens.
      const prompt = fake.chatRequests.at(-1)?.promptTokens ?? 0;
      expect(daily.used).toBeGreaterThanOrEqual(prompt + 5);
      expect(daily.used).toBeLessThanOrEqual(prompt + 15);
      const metrics = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
      expect(metrics).toContain(`ctxgate_budget_tokens_total{source="estimate"} ${daily.used}`);
    } finally {
      await harness.close();
    }
  });
});

describe('streams that do not finish', () => {
  it('counts what a stream produced before its client left, as an estimate', async () => {
    const harness = await gatewayWith(
      ['budgets:', '  defaults:', '    credential_daily_tokens: { limit: 1000000, mode: hard }', ''].join(
        '\n',
      ),
      { clock: () => Date.UTC(2035, 4, 5, 6) },
    );
    try {
      fake.enqueue({ content: 'word '.repeat(200), chunks: 40, chunkDelayMs: 20 });
      const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: clientKey, maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Stream a long answer, I will leave early.' }],
        stream: true,
      });
      let received = 0;
      for await (const chunk of stream) {
        received += chunk.choices[0]?.delta.content?.length ?? 0;
        if (received > 100) break; // leaving: the SDK aborts the request
      }
      const prompt = fake.chatRequests.at(-1)?.promptTokens ?? 0;
      const read = async () =>
        (await admin(harness, `credentials/${tenantId}`)).body.budgets[0] as {
          used: number;
          estimated: number;
          reserved: number;
        };
      // Settled once the gateway sees the client gone: asked until nothing is left reserved.
      await expect.poll(async () => (await read()).reserved).toBe(0);
      const daily = await read();
      // The prompt and the part that was streamed, estimated.
      expect(daily.estimated).toBe(daily.used);
      expect(daily.used).toBeGreaterThan(prompt + 15);
      expect(daily.used).toBeLessThan(prompt + 200);
    } finally {
      fake.clearQueue();
      await harness.close();
    }
  });
});

describe('durability', () => {
  it('loses no budget usage across a Redis restart with AOF', async () => {
    let redis = await startRedisServer(['--appendonly', 'yes', '--appendfsync', 'always']);
    const { port, directory } = redis;
    const harness = await gatewayWith(
      ['budgets:', '  defaults:', '    credential_monthly_tokens: { limit: 100000000, mode: hard }', ''].join(
        '\n',
      ),
      {
        redisUrl: redis.url,
      },
    );
    try {
      let used = 0;
      for (let index = 0; index < 5; index++)
        used += (await chatCounted(harness, `Request ${index}.`)).body.usage?.total_tokens ?? 0;
      expect((await admin(harness, `credentials/${tenantId}`)).body.budgets[1]).toMatchObject({ used });
      // Killed outright (no shutdown save) and started again on the same port and directory: the
      // append-only file, synced at every write, brings every count back.
      redis.process.kill('SIGKILL');
      await new Promise((resolve) => redis.process.once('exit', resolve));
      // Meanwhile a request is served without its budgets, and that is counted and logged.
      const during = await chat(harness, 'While Redis is down.');
      expect(during.status).toBe(200);
      const metrics = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
      expect(metrics).toMatch(/^ctxgate_budget_store_errors_total [1-9]\d*$/m);
      expect(harness.logLines.some((line) => line.includes('budgets not enforced for this request'))).toBe(
        true,
      );
      redis = await startRedisServer(['--appendonly', 'yes', '--appendfsync', 'always'], port, directory);
      await waitUntilReady(harness);
      expect((await admin(harness, `credentials/${tenantId}`)).body.budgets[1]).toMatchObject({ used });
      const after = await chat(harness, 'After the restart.');
      expect(after.status).toBe(200);
    } finally {
      await harness.close();
      await redis.stop();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
