// End to end: what the pass-through must never do, tried as an attacker and a careless client would,
// over raw TCP so no client library tidies the request target first.
// - No spelling of one of the gateway's own routes (an encoded slash, a doubled slash, a dot segment,
//   another letter case) is forwarded: with the credential's daily budget spent, chat%2Fcompletions got
//   200 from the provider with no budget, fitting or session applied.
// - Forwarded calls spend tokens: they are admitted by the hard budgets and charged with their usage.
// - Under the operator's one upstream key, provider-side state (files, stored completions…) is every
//   tenant's: refused unless configured; `store: true` dropped; client organisation and forwarding
//   headers dropped.
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { gatewayKeyTenantId, sha256 } from '../../src/config/tenant-id.js';
import { FakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const clientKey = 'gk-guards-client';
const adminKey = 'adm-guards-admin';
const upstreamKey = 'sk-guards-upstream';
const tenantId = gatewayKeyTenantId(sha256(clientKey));

function answers(request: RecordedRequest) {
  if (request.path === '/v1/embeddings')
    return {
      status: 200,
      body: JSON.stringify({
        object: 'list',
        data: [{ object: 'embedding', index: 0, embedding: [0.25] }],
        model: 'text-embedding-3-small',
        usage: { prompt_tokens: 7, total_tokens: 7 },
      }),
    };
  if (request.path.startsWith('/v1/files') || request.path.startsWith('/v1/chat/completions/'))
    return { status: 200, body: JSON.stringify({ object: 'list', data: [{ id: 'file-of-tenant-a' }] }) };
  return undefined;
}

const chatBody = (content = 'hi', extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 20, ...extra });

/** Spellings of a path that a router or a provider may read as the same path. */
function spellings(path: string): string[] {
  const segments = path.split('/').slice(1);
  const below = segments.slice(1);
  const join = (parts: string[], separator: string) => `/v1/${parts.join(separator)}`;
  const targets = [
    join(below, '%2F'),
    join(below, '%2f'),
    `/v1//${below.join('//')}`,
    `/v1/./${below.join('/./')}`,
    `/v1/${below.map((segment) => segment.toUpperCase()).join('/')}`,
    `/v1/${below.map((segment) => segment.charAt(0).toUpperCase() + segment.slice(1)).join('/')}`,
    `/v1/%${(below[0] ?? 'x').charCodeAt(0).toString(16)}${below.join('/').slice(1)}`,
    `/v1/${below.join('/')}/`,
  ];
  return [...new Set(targets)].filter((target) => target !== path);
}

function concretePath(url: string): string {
  return url.replace(/:[A-Za-z]+/g, 'sample-1');
}

async function send(
  harness: GatewayHarness,
  method: string,
  target: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return rawRequest({
    port: Number(new URL(harness.baseUrl).port),
    method,
    target,
    headers: { authorization: `Bearer ${clientKey}`, ...headers },
    ...(body === undefined ? {} : { body }),
  });
}

async function usageOf(harness: GatewayHarness): Promise<number> {
  const response = await fetch(`${harness.baseUrl}/admin/budgets/credentials/${tenantId}`, {
    headers: { authorization: `Bearer ${adminKey}` },
  });
  const body = (await response.json()) as {
    budgets: Array<{ budget: string; used: number; reserved: number }>;
  };
  const daily = body.budgets.find((entry) => entry.budget === 'credential_daily_tokens');
  return (daily?.used ?? 0) + (daily?.reserved ?? 0);
}

let fake: FakeUpstream;
let upstreamUrl: string;
const harnesses: GatewayHarness[] = [];

beforeAll(async () => {
  fake = new FakeUpstream({ requiredApiKey: upstreamKey, otherRoutes: answers });
  upstreamUrl = await fake.start();
});
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.close();
});
afterAll(async () => {
  await fake.stop();
});

async function gatewayWith(configYaml: string, env: Record<string, string> = {}): Promise<GatewayHarness> {
  const harness = await startGateway({
    env: {
      UPSTREAM_BASE_URL: upstreamUrl,
      UPSTREAM_API_KEY: upstreamKey,
      GATEWAY_API_KEYS: clientKey,
      ADMIN_API_KEY: adminKey,
      REDIS_URL: inject('redisUrl'),
      ...env,
    },
    configYaml,
  });
  harnesses.push(harness);
  await waitUntilReady(harness);
  // Counters live in the shared Redis: each test starts from none spent.
  await fetch(`${harness.baseUrl}/admin/budgets/credentials/${tenantId}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${adminKey}` },
  });
  return harness;
}

describe('spellings of the gateway’s own routes', () => {
  it('are served by their route or refused, never forwarded, for every managed route', async () => {
    const harness = await gatewayWith('{}\n');
    const managed = harness.gateway.routes.filter(
      (route) =>
        route.url.startsWith('/v1/') &&
        route.url !== '/v1/*' &&
        route.url !== '/v1/models' &&
        !['HEAD', 'OPTIONS'].includes(route.method),
    );
    expect(managed.map((route) => route.url)).toEqual(
      expect.arrayContaining([
        '/v1/chat/completions',
        '/v1/responses',
        '/v1/sessions/:id',
        '/v1/context/render',
      ]),
    );
    const forwarded: string[] = [];
    let tried = 0;
    for (const route of managed) {
      for (const target of spellings(concretePath(route.url))) {
        const body = route.method === 'POST' ? chatBody() : undefined;
        const response = await send(harness, route.method, target, body);
        tried++;
        const line = harness.logLines
          .map((text) => JSON.parse(text) as { reqId?: string; route?: string })
          .find((entry) => entry.reqId === response.headers['x-request-id']);
        // The pass-through's route is /v1/*: anything it answered other than a refusal was forwarded.
        if (line?.route === '/v1/*' && response.status !== 404)
          forwarded.push(`${route.method} ${target} -> ${response.status}`);
      }
    }
    expect(tried).toBeGreaterThan(60);
    expect(forwarded).toEqual([]);
  });

  it('cannot skip a spent daily budget or max_request_tokens', async () => {
    const harness = await gatewayWith(
      'budgets:\n  defaults:\n    credential_daily_tokens: { limit: 40, mode: hard }\n    max_request_tokens: { limit: 1000, mode: hard }\n',
    );
    const spend = await send(harness, 'POST', '/v1/chat/completions', chatBody('spend '.repeat(60)));
    expect(spend.status).toBe(200);
    const refused = await send(harness, 'POST', '/v1/chat/completions', chatBody());
    expect(refused.status).toBe(429);
    const before = fake.chatRequests.length;
    const used = await usageOf(harness);
    const statuses: number[] = [];
    for (const target of [
      ...spellings('/v1/chat/completions'),
      '/v1//chat/completions',
      '/v1/chat/./completions',
    ]) {
      const response = await send(harness, 'POST', target, chatBody());
      statuses.push(response.status);
      // Over max_request_tokens as well: 7,000 tokens of prompt.
      const large = await send(harness, 'POST', target, chatBody('word '.repeat(7_000)));
      statuses.push(large.status);
    }
    expect(statuses.filter((status) => status < 400)).toEqual([]);
    expect(fake.chatRequests.length).toBe(before);
    expect(await usageOf(harness)).toBe(used);
  });
});

describe('forwarded calls against the token budgets', () => {
  it('charges a forwarded call with the usage its answer reports, and refuses it once the budget is spent', async () => {
    const harness = await gatewayWith(
      'budgets:\n  defaults:\n    credential_daily_tokens: { limit: 20, mode: hard }\n',
    );
    const embed = () =>
      send(
        harness,
        'POST',
        '/v1/embeddings',
        JSON.stringify({ model: 'text-embedding-3-small', input: 'hello' }),
      );
    const before = await usageOf(harness);
    const first = await embed();
    expect(first.status).toBe(200);
    expect(first.headers['x-budget-remaining']).toBeDefined();
    // The fake reports 7 tokens for each embedding: counted from the answer, not estimated.
    expect((await usageOf(harness)) - before).toBe(7);
    expect((await embed()).status).toBe(200);
    expect((await embed()).status).toBe(200);
    const sent = fake.requests.filter((request) => request.path === '/v1/embeddings').length;
    const refused = await embed();
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body).error.code).toBe('budget_exceeded');
    expect(fake.requests.filter((request) => request.path === '/v1/embeddings').length).toBe(sent);
  });
});

describe('provider-side state under the operator’s key', () => {
  it('refuses files and stored completions, drops store: true and the client’s organisation', async () => {
    const harness = await gatewayWith('{}\n');
    const before = fake.requests.length;
    for (const [method, target] of [
      ['GET', '/v1/files'],
      ['GET', '/v1/files/file-of-tenant-a/content'],
      ['DELETE', '/v1/files/file-of-tenant-a'],
      ['GET', '/v1/chat/completions'],
      ['GET', '/v1/chat/completions/chatcmpl-1/messages'],
      ['POST', '/v1/batches'],
      ['GET', '/v1/vector_stores'],
      ['POST', '/v1/realtime/client_secrets'],
      ['DELETE', '/v1/models/ft:gpt-4o-mini:acme'],
    ] as const) {
      const response = await send(harness, method, target, method === 'POST' ? '{}' : undefined);
      expect(response.status, target).toBe(403);
      expect(JSON.parse(response.body).error.code, target).toBe('provider_state_not_shared');
    }
    expect(fake.requests.length).toBe(before);

    const stored = await send(
      harness,
      'POST',
      '/v1/chat/completions',
      chatBody('keep this', { store: true }),
      {
        'openai-organization': 'org-of-the-client',
        'openai-project': 'proj-of-the-client',
        'x-forwarded-host': 'attacker.example',
      },
    );
    expect(stored.status).toBe(200);
    expect(stored.headers['x-ctxgate-dropped']).toBe('store');
    const upstreamRequest = fake.chatRequests.at(-1) as RecordedRequest;
    expect((upstreamRequest.body as { store?: unknown }).store).toBeUndefined();
    expect(upstreamRequest.headers['openai-organization']).toBeUndefined();
    expect(upstreamRequest.headers['openai-project']).toBeUndefined();
    expect(upstreamRequest.headers['x-forwarded-host']).toBeUndefined();
    expect(upstreamRequest.headers.authorization).toBe(`Bearer ${upstreamKey}`);
  });

  it('forwards what the configuration allows for a deployment with one tenant', async () => {
    const harness = await gatewayWith(
      'passthrough:\n  provider_state_endpoints: [files, chat/completions]\n',
    );
    const listed = await send(harness, 'GET', '/v1/files?purpose=batch');
    expect(listed.status).toBe(200);
    expect(fake.requests.at(-1)?.query).toBe('purpose=batch');
    const stored = await send(
      harness,
      'POST',
      '/v1/chat/completions',
      chatBody('keep this', { store: true }),
    );
    expect(stored.headers['x-ctxgate-dropped']).toBeUndefined();
    expect((fake.chatRequests.at(-1)?.body as { store?: unknown }).store).toBe(true);
    expect((await send(harness, 'GET', '/v1/batches')).status).toBe(403);
  });

  it('forwards them in pass-through mode, where each client’s own key reaches the provider', async () => {
    const open = new FakeUpstream({ otherRoutes: answers });
    const harness = await startGateway({ env: { UPSTREAM_BASE_URL: await open.start() } });
    harnesses.push(harness);
    try {
      const response = await rawRequest({
        port: Number(new URL(harness.baseUrl).port),
        method: 'GET',
        target: '/v1/files',
        headers: { authorization: 'Bearer sk-own-key', 'openai-organization': 'org-own' },
      });
      expect(response.status).toBe(200);
      expect(open.requests.at(-1)?.headers['openai-organization']).toBe('org-own');
      expect(open.requests.at(-1)?.headers.authorization).toBe('Bearer sk-own-key');
    } finally {
      await open.stop();
    }
  });
});
