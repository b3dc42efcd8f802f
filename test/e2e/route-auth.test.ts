// Authentication is decided on the route the router matched, never on the URL text. Every registered
// route is tried with request targets that routers decode or normalize (percent-encoding, absolute
// form, dot segments, duplicate slashes, a trailing slash, a semicolon) over raw TCP, so that no client
// library tidies them first. The list of routes comes from the gateway itself: a new route is tested
// the moment it is registered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

// The inspector's static page is public too: it holds no data and signs in against the API; and so is
// the hello Claude Code warms its connection with, as Anthropic's API answers it without a key.
const publicRoutes = new Set(['/healthz', '/readyz', '/metrics', '/api/hello', '/ui', '/ui/', '/ui/:file']);

/** A concrete path for a route template: parameters filled in, a wildcard given a path. */
function concretePath(url: string): string {
  return url.replace(/:[A-Za-z]+/g, 'sample-1').replace(/\*$/, 'embeddings');
}

/** Targets that reach `path` through a router that decodes and normalizes, or that look like it. */
function disguisedTargets(path: string): string[] {
  const rest = path.slice('/v1'.length);
  const firstSegmentChar = rest.charAt(1);
  return [
    path,
    `/%761${rest}`,
    `/%76%31${rest}`,
    `/%56%31${rest}`,
    `/v%31${rest}`,
    `/v1/%${firstSegmentChar.charCodeAt(0).toString(16)}${rest.slice(2)}`,
    `http://attacker.example${path}`,
    `http://attacker.example/%761${rest}`,
    `/x/..${path}`,
    `/v1/.${rest}`,
    `/v1/x/..${rest}`,
    `/%2e%2e${path}`,
    `//v1${rest}`,
    `/v1/${rest}`,
    `${path}/`,
    `${path};x=1`,
    `${path}?a=1`,
    `/V1${rest}`,
  ];
}

const chatBody = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

function bodyFor(method: string): string | undefined {
  return method === 'POST' ? chatBody : undefined;
}

describe('every route but health, readiness, metrics and the hello needs the key (gateway-key mode)', () => {
  let fake: FakeUpstream;
  let harness: GatewayHarness;
  let port: number;
  const gatewayKey = 'gk-route-auth-1';
  const adminKey = 'adm-route-auth-1';

  beforeAll(async () => {
    fake = new FakeUpstream({ requiredApiKey: 'sk-upstream-route-auth' });
    harness = await startGateway({
      env: {
        UPSTREAM_BASE_URL: await fake.start(),
        UPSTREAM_API_KEY: 'sk-upstream-route-auth',
        GATEWAY_API_KEYS: gatewayKey,
        ADMIN_API_KEY: adminKey,
      },
    });
    port = Number(new URL(harness.baseUrl).port);
  });
  afterAll(async () => {
    await harness.close();
    await fake.stop();
  });

  it('lists its routes, the public ones among them', () => {
    const urls = harness.gateway.routes.map((route) => route.url);
    for (const url of [...publicRoutes, '/v1/chat/completions', '/v1/sessions/:id'])
      expect(urls).toContain(url);
  });

  it('answers a protected route with the key (so refusals below are the key check, not routing)', async () => {
    const response = await rawRequest({
      port,
      method: 'POST',
      target: '/v1/chat/completions',
      headers: { authorization: `Bearer ${gatewayKey}` },
      body: chatBody,
    });
    expect(response.status).toBe(200);
  });

  it('refuses every protected route under every disguise without a key, and never calls the upstream', async () => {
    const routes = harness.gateway.routes.filter(
      (route) => !publicRoutes.has(route.url) && route.method !== 'HEAD' && route.method !== 'OPTIONS',
    );
    expect(routes.length).toBeGreaterThanOrEqual(8);
    const before = fake.requests.length;
    const leaks: string[] = [];
    for (const route of routes) {
      for (const target of disguisedTargets(concretePath(route.url))) {
        for (const headers of [{}, { authorization: 'Bearer wrong-key' }]) {
          const body = bodyFor(route.method);
          const response = await rawRequest({
            port,
            method: route.method,
            target,
            headers,
            ...(body === undefined ? {} : { body }),
          });
          if (response.status < 400 || ![400, 401, 404].includes(response.status))
            leaks.push(`${route.method} ${target} -> ${response.status}`);
        }
      }
    }
    expect(leaks).toEqual([]);
    expect(fake.requests.length).toBe(before);
  });

  it('refuses the admin routes to a client key under every disguise', async () => {
    const adminRoutes = harness.gateway.routes.filter((route) => route.url.startsWith('/v1/admin/'));
    expect(adminRoutes.length).toBeGreaterThan(0);
    const leaks: string[] = [];
    for (const route of adminRoutes) {
      for (const target of disguisedTargets(concretePath(route.url))) {
        const response = await rawRequest({
          port,
          method: route.method,
          target,
          headers: { authorization: `Bearer ${gatewayKey}` },
        });
        if (response.status < 400) leaks.push(`${route.method} ${target} -> ${response.status}`);
      }
    }
    expect(leaks).toEqual([]);
    const admitted = await rawRequest({
      port,
      method: 'GET',
      target: '/v1/admin/budgets/credentials/some-tenant',
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(admitted.status).toBe(200);
  });

  it('answers the public routes without a key', async () => {
    for (const url of publicRoutes) {
      const target = url === '/ui/:file' ? '/ui/app.js' : url;
      const response = await rawRequest({ port, method: 'GET', target });
      // `/ui` sends the browser on to `/ui/`.
      expect(response.status, url).toBe(url === '/ui' ? 308 : 200);
    }
  });
});

describe('pass-through mode: no credential, no sessions, under every disguise', () => {
  let fake: FakeUpstream;
  let harness: GatewayHarness;
  let port: number;

  beforeAll(async () => {
    fake = new FakeUpstream();
    harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
    port = Number(new URL(harness.baseUrl).port);
  });
  afterAll(async () => {
    await harness.close();
    await fake.stop();
  });

  it('refuses session routes and session requests to a caller with no credential', async () => {
    // A session another caller owns.
    const owner = await rawRequest({
      port,
      method: 'POST',
      target: '/v1/chat/completions',
      headers: { 'api-key': 'azure-key-owner', 'x-session-id': 'sample-1' },
      body: chatBody,
    });
    expect(owner.status).toBe(200);
    const sessionRoutes = harness.gateway.routes.filter((route) => route.url.startsWith('/v1/sessions/'));
    expect(sessionRoutes.length).toBeGreaterThanOrEqual(3);
    const leaks: string[] = [];
    for (const route of sessionRoutes) {
      for (const target of disguisedTargets(concretePath(route.url))) {
        const response = await rawRequest({ port, method: route.method, target });
        if (response.status < 400 || response.body.includes('"messages"'))
          leaks.push(`${route.method} ${target} -> ${response.status}`);
      }
    }
    expect(leaks).toEqual([]);
    const direct = await rawRequest({ port, method: 'GET', target: '/v1/sessions/sample-1' });
    expect(direct.status).toBe(400);
    expect(JSON.parse(direct.body).error.code).toBe('session_requires_credential');
    const ownerView = await rawRequest({
      port,
      method: 'GET',
      target: '/v1/sessions/sample-1',
      headers: { 'api-key': 'azure-key-owner' },
    });
    expect(ownerView.status).toBe(200);
  });
});
