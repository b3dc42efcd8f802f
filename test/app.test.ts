// The fastify application's own decisions (src/app.ts), on a real gateway on loopback: which scope a
// route sits in (probes public, the API behind a client key, the admin endpoints behind the admin key
// only), and that what no route answers — an unknown URL, a target the router cannot decode, a request
// Node's HTTP parser refuses before fastify sees it — is answered in the OpenAI error shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from './helpers/fake-upstream.js';
import { rawRequest } from './helpers/raw-http.js';
import { startGateway, type GatewayHarness } from './helpers/start-gateway.js';

const clientKey = 'sk-app-client';
const adminKey = 'sk-app-admin';

let fake: FakeUpstream;
let harness: GatewayHarness;
let port: number;

beforeAll(async () => {
  fake = new FakeUpstream();
  harness = await startGateway({
    env: {
      UPSTREAM_BASE_URL: await fake.start(),
      UPSTREAM_API_KEY: 'sk-upstream',
      GATEWAY_API_KEYS: clientKey,
      ADMIN_API_KEY: adminKey,
    },
  });
  port = Number(new URL(harness.baseUrl).port);
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

interface ErrorBody {
  error: { type: string; code: string };
}

describe('scopes', () => {
  it.each([
    // [method, path, key sent, status, error code]
    ['GET', '/healthz', undefined, 200, undefined],
    ['GET', '/metrics', undefined, 200, undefined],
    ['HEAD', '/api/hello', undefined, 200, undefined],
    ['GET', '/v1/models', undefined, 401, 'missing_api_key'],
    ['GET', '/v1/models', 'sk-wrong', 401, 'invalid_api_key'],
    ['GET', '/v1/models', clientKey, 200, undefined],
    ['GET', '/v1/sessions', adminKey, 401, 'invalid_api_key'],
    ['GET', '/v1/admin/learned', undefined, 401, 'missing_api_key'],
    ['GET', '/v1/admin/learned', clientKey, 401, 'invalid_api_key'],
    ['GET', '/v1/admin/learned', adminKey, 200, undefined],
    ['GET', '/no-such-route', undefined, 404, 'not_found'],
    ['GET', '/v1/sessions/%E0%A4%A', clientKey, 400, 'invalid_request'],
  ] as const)('%s %s with key %s: %i %s', async (method, path, key, status, code) => {
    const response = await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}${path}`, {
      method,
      headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(status);
    const text = await response.text();
    if (code !== undefined) expect((JSON.parse(text) as ErrorBody).error.code).toBe(code);
    expect(response.headers.get('x-request-id')).toMatch(/\S/);
  });
});

describe('what the HTTP parser refuses', () => {
  it('answers a malformed request line and oversized headers in the OpenAI shape, and closes', async () => {
    const malformed = await rawRequest({ port, method: 'GET', target: '/v1/models\u0001x' });
    expect(malformed.status).toBe(400);
    expect((JSON.parse(malformed.body) as ErrorBody).error.type).toBe('invalid_request_error');
    expect(malformed.headers.connection).toBe('close');
    const hugeHeaders = await rawRequest({
      port,
      method: 'GET',
      target: '/healthz',
      headers: { 'x-filler': 'y'.repeat(40_000) },
    });
    expect(hugeHeaders.status).toBe(431);
    expect((JSON.parse(hugeHeaders.body) as ErrorBody).error.code).toBe('headers_too_large');
    expect(hugeHeaders.headers['x-request-id']).toMatch(/\S/);
  });
});
