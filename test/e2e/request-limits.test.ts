// End to end: the limits a careless client or an attacker runs into, each as the client sees it — an
// OpenAI-shaped 400 naming the field, with x-request-id, and nothing sent upstream or stored:
// Responses metadata past OpenAI's bounds; fields the API does not define dropped before storing; ids
// over 128 characters on every route, while 101-128 work; bad percent-encoding; `n` multiplying what
// a request may cost; stop sequences, tool calls; store: true while Redis is down.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
let harness: GatewayHarness;
const key = 'sk-limits-client';

beforeAll(async () => {
  fake = new FakeUpstream();
  fake.setDefault({ content: 'ok' });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    configYaml:
      'server:\n  max_tool_calls: 50\npolicies:\n  capped:\n    budgets:\n      max_request_tokens: { limit: 1000, mode: hard }\n',
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(`${harness.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as never };
}

function expectRefusal(
  answer: { status: number; headers: Headers; body: Record<string, unknown> },
  status: number,
  code: string,
  param?: string,
): void {
  expect(answer.status).toBe(status);
  expect(answer.headers.get('x-request-id')).toBeTruthy();
  const error = answer.body.error as { code: string; param: string | null; type: string; message: string };
  expect(error.code).toBe(code);
  expect(typeof error.message).toBe('string');
  if (param !== undefined) expect(error.param).toBe(param);
}

describe('Responses: what is stored is bounded', () => {
  it.each([
    [
      '17 pairs',
      Object.fromEntries(Array.from({ length: 17 }, (_unused, index) => [`k${index}`, 'v'])),
      'metadata',
    ],
    ['a 65-character key', { ['k'.repeat(65)]: 'v' }, 'metadata'],
    ['a 513-character value', { note: 'v'.repeat(513) }, 'metadata.note'],
    ['a value that is not a string', { count: 3 }, 'metadata.count'],
  ])('refuses metadata with %s before calling the provider', async (_label, metadata, param) => {
    const before = fake.requests.length;
    expectRefusal(
      await call('POST', '/responses', { model: 'gpt-4o-mini', input: 'hi', metadata }),
      400,
      'invalid_request',
      param,
    );
    expect(fake.requests.length).toBe(before);
  });

  it('keeps metadata within the bounds, and drops the fields an input item does not define', async () => {
    const metadata = Object.fromEntries(
      Array.from({ length: 16 }, (_unused, index) => [`k${index}`.padEnd(64, 'x'), 'v'.repeat(512)]),
    );
    const created = await call('POST', '/responses', {
      model: 'gpt-4o-mini',
      metadata,
      input: [
        {
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: 'hi', padding: 'p'.repeat(100_000) }],
          padding: 'p'.repeat(100_000),
        },
      ],
    });
    expect(created.status).toBe(200);
    expect(created.body.metadata).toEqual(metadata);
    const id = created.body.id as string;
    const items = await call('GET', `/responses/${id}/input_items`);
    expect(items.body.data).toEqual([
      {
        id: expect.any(String),
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'hi' }],
      },
    ]);
    // Not in the stored record either.
    const redis = new Redis(inject('redisUrl'));
    try {
      const stored = await redis.keys(`ctxgate:resp:*:${id}`);
      expect(stored).toHaveLength(1);
      expect(await redis.get(stored[0] as string)).not.toContain('ppppp');
    } finally {
      redis.disconnect();
    }
  });
});

describe('ids of every length', () => {
  it('serves session ids of 101 to 128 characters on every sessions route', async () => {
    for (const length of [101, 128]) {
      const sessionId = 's'.repeat(length - 6) + randomUUID().slice(0, 6);
      const chat = await call(
        'POST',
        '/chat/completions',
        { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
        { 'x-session-id': sessionId },
      );
      expect(chat.status).toBe(200);
      expect((await call('GET', `/sessions/${sessionId}`)).status).toBe(200);
      expect((await call('GET', `/sessions/${sessionId}/history`)).body.total).toBe(2);
      expect((await call('DELETE', `/sessions/${sessionId}`)).body.deleted).toBe(true);
      expect((await call('GET', `/sessions/${sessionId}`)).status).toBe(404);
    }
  });

  it('refuses longer ids with a 400 before anything is forwarded', async () => {
    const before = fake.requests.length;
    const long = 'x'.repeat(129);
    for (const [method, path] of [
      ['GET', `/sessions/${long}`],
      ['GET', `/sessions/${long}/history`],
      ['DELETE', `/sessions/${long}`],
      ['GET', `/responses/resp_${'a'.repeat(200)}`],
      ['DELETE', `/responses/resp_${'a'.repeat(200)}`],
      ['GET', `/responses/resp_${'a'.repeat(200)}/input_items`],
    ] as const) {
      const answer = await call(method, path);
      expect(answer.status, path).toBe(400);
      expect((answer.body.error as { code: string }).code).toBe('invalid_request');
    }
    expectRefusal(
      await call(
        'POST',
        '/chat/completions',
        { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
        { 'x-session-id': long },
      ),
      400,
      'invalid_header',
    );
    expect(fake.requests.length).toBe(before);
  });

  it('answers a request target with bad percent-encoding as every error is answered', async () => {
    const response = await rawRequest({
      port: Number(new URL(harness.baseUrl).port),
      method: 'GET',
      target: '/v1/sessions/%E0%A4%A',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(400);
    expect(response.headers['x-request-id']).toBeTruthy();
    expect(JSON.parse(response.body)).toEqual({
      error: {
        message: expect.any(String),
        type: 'invalid_request_error',
        param: 'url',
        code: 'invalid_request',
      },
    });
  });
});

describe('chat requests', () => {
  const chat = (extra: Record<string, unknown>, headers: Record<string, string> = {}) =>
    call(
      'POST',
      '/chat/completions',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra },
      headers,
    );

  it('counts every choice of n against max_request_tokens', async () => {
    const before = fake.requests.length;
    expect((await chat({ max_tokens: 900 }, { 'x-context-policy': 'capped' })).status).toBe(200);
    expectRefusal(
      await chat({ max_tokens: 900, n: 2 }, { 'x-context-policy': 'capped' }),
      429,
      'budget_exceeded',
      'max_request_tokens',
    );
    expectRefusal(
      await chat({ max_tokens: 9, n: 128 }, { 'x-context-policy': 'capped' }),
      429,
      'budget_exceeded',
    );
    expect(fake.requests.length).toBe(before + 1);
  });

  it.each([
    ['n over 128', { n: 129 }, 'n'],
    ['n of 0', { n: 0 }, 'n'],
    ['257 stop sequences', { stop: Array.from({ length: 257 }, () => 'x') }, 'stop'],
  ])('refuses %s', async (_label, extra, param) => {
    expectRefusal(await chat(extra), 400, 'invalid_request', param);
  });

  it('refuses more tool calls than server.max_tool_calls', async () => {
    const calls = Array.from({ length: 51 }, (_unused, index) => ({
      id: `c${index}`,
      type: 'function',
      function: { name: 'f', arguments: '{}' },
    }));
    const answer = await call('POST', '/chat/completions', {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: calls },
        ...calls.map((toolCall) => ({ role: 'tool', tool_call_id: toolCall.id, content: 'ok' })),
      ],
    });
    expectRefusal(answer, 400, 'invalid_request', 'messages');
    expect((answer.body.error as { message: string }).message).toContain('at most 50');
  });
});

describe('store: true while Redis is down', () => {
  it('is refused with 503 before the provider is called; store: false still works', async () => {
    const redis = await startRedisServer();
    const upstream = new FakeUpstream();
    const gateway = await startGateway({
      env: { UPSTREAM_BASE_URL: await upstream.start(), REDIS_URL: redis.url },
    });
    try {
      await waitUntilReady(gateway);
      await redis.stop();
      const refused = await fetch(`${gateway.baseUrl}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', input: 'keep this' }),
      });
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
        'session_store_unavailable',
      );
      expect(upstream.requests).toHaveLength(0);
      const unstored = await fetch(`${gateway.baseUrl}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', input: 'do not keep this', store: false }),
      });
      expect(unstored.status).toBe(200);
    } finally {
      await gateway.close();
      await upstream.stop();
    }
  });
});
