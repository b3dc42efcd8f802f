// Routing and error bodies through app.inject(): every status the gateway produces itself, with the
// exact OpenAI-shaped body a client receives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { createServices } from '../../src/create-services.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createMemorySessionStore } from '../../src/store/memory-session-store.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import type { Upstream } from '../../src/upstream/upstream.js';
import { badInputBodyLimitBytes, badInputCases, openAIError as error } from '../fixtures/bad-input-cases.js';
import { captureLogs, writeConfigFile } from '../helpers/start-gateway.js';

/** An upstream that must never be reached: these tests are about what the gateway refuses itself. */
const unreachableUpstream: Upstream = {
  send: () => Promise.reject(new Error('the upstream must not be called')),
  close: async () => {},
};

function build(env: Record<string, string>, configYaml = '{}\n', ready = true): FastifyInstance {
  const config = loadConfig({ env: { ...env, CTXGATE_CONFIG: writeConfigFile(configYaml) } });
  const { destination } = captureLogs();
  const logger = createLogger({ level: 'info', destination });
  const metrics = createMetrics({ collectProcessMetrics: false });
  const services = createServices({
    config,
    logger,
    metrics,
    upstream: unreachableUpstream,
    tokenizers: createTiktokenTokenizers(),
    sessionStore: createMemorySessionStore({
      limits: { maxActiveMessages: 100, minActiveMessages: 100, idleTtlSeconds: 60 },
    }),
  });
  return buildApp({ config, logger, metrics, readiness: { check: async () => ready }, services }).app;
}

const validBody = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

describe('bad input', () => {
  let app: FastifyInstance;
  beforeAll(() => {
    app = build({}, `server:\n  body_limit_bytes: ${badInputBodyLimitBytes}\n`);
  });
  afterAll(() => app.close());

  const post = (payload: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload, headers });

  it.each(badInputCases)('answers $status to $name', async ({ payload, status, body }) => {
    const response = await post(payload);
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual(body);
  });

  it('accepts JSON nested exactly 64 levels deep as far as parsing goes', async () => {
    // The body is valid at depth 64, so the request reaches the upstream (which this test app refuses).
    const payload = `{"model":"m","messages":[{"role":"user","content":"x"}],"x":${'['.repeat(63)}${']'.repeat(63)}}`;
    const response = await post(payload);
    expect(response.json().error.code).toBe('internal_error');
  });

  it('does not pollute Object.prototype', async () => {
    await post('{"__proto__":{"polluted":true}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads a body sent with a form Content-Type as JSON (curl -d)', async () => {
    const response = await post('{"model":"m"}', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(response.json()).toEqual(
      error("Missing required parameter: 'messages'.", 'invalid_request', 'messages'),
    );
  });

  it('answers 404 not_found for an unknown path outside /v1 (every /v1 path is forwarded)', async () => {
    const response = await app.inject({ method: 'GET', url: '/nothing-here?x=1' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual(error('Unknown request URL: GET /nothing-here.', 'not_found'));
  });

  it('never leaks a stack trace for an unexpected failure', async () => {
    const response = await post(JSON.stringify(validBody));
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual(
      error('The gateway failed to process the request.', 'internal_error', null, 'server_error'),
    );
    expect(response.body).not.toMatch(/at .*\.ts:\d+/);
  });
});

describe('gateway keys', () => {
  let app: FastifyInstance;
  beforeAll(() => {
    app = build({ GATEWAY_API_KEYS: 'gk-one, gk-two', UPSTREAM_API_KEY: 'sk-upstream' });
  });
  afterAll(() => app.close());

  it('answers 401 missing_api_key without an Authorization header', async () => {
    const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: validBody });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual(
      error(
        "You didn't provide an API key. Send your gateway key in an Authorization header: 'Authorization: Bearer YOUR_KEY'.",
        'missing_api_key',
        null,
        'authentication_error',
      ),
    );
  });

  it('answers 401 invalid_api_key for a wrong key, before reading the body', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: '{not json',
      headers: { authorization: 'Bearer gk-wrong' },
    });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual(
      error('Incorrect API key provided.', 'invalid_api_key', null, 'authentication_error'),
    );
  });

  it('accepts every configured key', async () => {
    for (const key of ['gk-one', 'gk-two']) {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        payload: '{}',
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.statusCode).toBe(400);
    }
  });

  it('keeps health endpoints open', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});

describe('operational endpoints', () => {
  it('reports ready when the store answers and not ready when it does not', async () => {
    const ready = build({}, '{}\n', true);
    const notReady = build({}, '{}\n', false);
    expect((await ready.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
      status: 'ready',
      store: 'ok',
    });
    const response = await notReady.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ status: 'not_ready', store: 'unreachable' });
    await ready.close();
    await notReady.close();
  });

  it('serves Prometheus text that counts requests by route, status and model', async () => {
    const app = build({});
    await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: '{"model":"gpt-x","messages":[]}',
    });
    await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: '{"model":"gpt-x","messages":[]}',
    });
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toContain(
      'ctxgate_http_requests_total{route="/v1/chat/completions",status="400",model="",code="invalid_request"} 2',
    );
    expect(response.body).toContain('# TYPE ctxgate_gateway_overhead_seconds histogram');
    expect(response.body).toContain('# TYPE ctxgate_upstream_duration_seconds histogram');
    await app.close();
  });
});
