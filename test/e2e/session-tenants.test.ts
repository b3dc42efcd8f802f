// Pass-through mode: a session belongs to the credential that created it, whichever header carried it
// (Authorization, Azure-style api-key, Anthropic-style x-api-key); a caller with no credential gets no
// sessions unless the config names an anonymous tenant. Real Redis, real HTTP.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const sessionId = `tenants-${Date.now()}`;

async function chat(
  harness: GatewayHarness,
  headers: Record<string, string>,
  content: string,
): Promise<Response> {
  return fetch(`${harness.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': sessionId, ...headers },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
  });
}

async function sessionMessages(harness: GatewayHarness, headers: Record<string, string>) {
  const response = await fetch(`${harness.baseUrl}/sessions/${sessionId}`, { headers });
  return {
    status: response.status,
    body: (await response.json()) as {
      messages?: Array<{ role: string; content: string }>;
      error?: { code: string };
    },
  };
}

describe('pass-through tenants', () => {
  let fake: FakeUpstream;
  let harness: GatewayHarness;
  beforeAll(async () => {
    fake = new FakeUpstream();
    harness = await startGateway({
      env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    });
    await waitUntilReady(harness);
  });
  afterAll(async () => {
    await harness.close();
    await fake.stop();
  });

  it('keeps each credential in its own session, whatever header carries it', async () => {
    const alice = { 'api-key': 'azure-key-alice' };
    const bob = { 'api-key': 'azure-key-bob' };
    const carol = { 'x-api-key': 'anthropic-key-carol' };
    for (const [headers, text] of [
      [alice, 'alice secret plan'],
      [bob, 'bob secret plan'],
      [carol, 'carol secret plan'],
    ] as const) {
      expect((await chat(harness, headers, text)).status).toBe(200);
    }
    for (const [headers, own] of [
      [alice, 'alice'],
      [bob, 'bob'],
      [carol, 'carol'],
    ] as const) {
      const { status, body } = await sessionMessages(harness, headers);
      expect(status).toBe(200);
      const users = body.messages?.filter((message) => message.role === 'user').map((m) => m.content);
      expect(users).toEqual([`${own} secret plan`]);
    }
    // The same key sent as a Bearer token is the same caller.
    const viaBearer = await sessionMessages(harness, { authorization: 'Bearer azure-key-alice' });
    expect(viaBearer.body.messages?.[0]?.content).toBe('alice secret plan');
  });

  it('gives a caller with no credential no sessions: 400 session_requires_credential, nothing stored', async () => {
    const before = fake.chatRequests.length;
    const refused = await chat(harness, {}, 'anonymous words');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
      'session_requires_credential',
    );
    expect(fake.chatRequests.length).toBe(before);
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(`${harness.baseUrl}/sessions/${sessionId}`, { method });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
        'session_requires_credential',
      );
    }
    // Alice's session is still there after the anonymous DELETE.
    const alice = await sessionMessages(harness, { 'api-key': 'azure-key-alice' });
    expect(alice.status).toBe(200);
  });

  it('serves stateless requests without a credential (the upstream decides)', async () => {
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
  });
});

describe('an anonymous tenant named in the config', () => {
  it('lets callers with no credential share that one tenant, apart from every keyed caller', async () => {
    const fake = new FakeUpstream();
    const harness = await startGateway({
      env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
      configYaml: 'sessions:\n  anonymous_tenant: lab\n',
    });
    try {
      await waitUntilReady(harness);
      expect((await chat(harness, {}, 'shared lab note')).status).toBe(200);
      const anonymous = await sessionMessages(harness, {});
      expect(anonymous.body.messages?.[0]?.content).toBe('shared lab note');
      const keyed = await sessionMessages(harness, { authorization: 'Bearer sk-someone' });
      expect(keyed.status).toBe(404);
    } finally {
      await harness.close();
      await fake.stop();
    }
  });
});
