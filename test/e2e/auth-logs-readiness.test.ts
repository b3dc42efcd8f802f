// End to end: both auth modes as the upstream sees them, credentials and message text kept out of the
// logs, readiness following a real Redis, and Prometheus counts after real traffic.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { findFreePort, startRedisServer } from '../helpers/redis-server.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

describe('pass-through auth (no UPSTREAM_API_KEY)', () => {
  let fake: FakeUpstream;
  let harness: GatewayHarness;
  beforeAll(async () => {
    fake = new FakeUpstream({ requiredApiKey: 'sk-client-own-key' });
    harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
  });
  afterAll(async () => {
    await harness.close();
    await fake.stop();
  });

  it("sends the client's own key upstream", async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-client-own-key', maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]?.message.role).toBe('assistant');
    expect(fake.chatRequests.at(-1)?.headers.authorization).toBe('Bearer sk-client-own-key');
  });

  it("passes the upstream's 401 through for a wrong client key", async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-wrong', maxRetries: 0 });
    const failure = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((failure as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
  });
});

describe('gateway keys with a configured upstream key', () => {
  let fake: FakeUpstream;
  let harness: GatewayHarness;
  const upstreamCanary = 'sk-UPSTREAM-CANARY-7f3a9c';
  const gatewayCanary = 'gk-GATEWAY-CANARY-41b2e8';
  const messageCanary = 'MESSAGE-TEXT-CANARY-93d1';

  beforeAll(async () => {
    fake = new FakeUpstream({ requiredApiKey: upstreamCanary });
    harness = await startGateway({
      env: {
        UPSTREAM_BASE_URL: await fake.start(),
        UPSTREAM_API_KEY: upstreamCanary,
        GATEWAY_API_KEYS: `gk-other,${gatewayCanary}`,
        LOG_LEVEL: 'trace',
      },
    });
  });
  afterAll(async () => {
    await harness.close();
    await fake.stop();
  });

  it('refuses a missing or wrong gateway key with 401 and never calls the upstream', async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'gk-wrong', maxRetries: 0 });
    const failure = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((failure as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
    const missing = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('missing_api_key');

    expect(fake.chatRequests).toHaveLength(0);
  });

  it('sends only the configured key upstream, never the gateway key', async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: gatewayCanary, maxRetries: 0 });
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: messageCanary }],
    });
    const sent = fake.chatRequests.at(-1);
    expect(sent?.headers.authorization).toBe(`Bearer ${upstreamCanary}`);
    expect(JSON.stringify(sent?.headers)).not.toContain(gatewayCanary);
  });

  it('keeps credentials and message text out of every log line', async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: gatewayCanary, maxRetries: 0 });
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: messageCanary }],
    });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: messageCanary }],
      stream: true,
    });
    for await (const _chunk of stream) {
      // drain
    }
    fake.enqueue({
      status: 400,
      body: JSON.stringify({
        error: { message: `echo ${messageCanary}`, type: 'invalid_request_error', param: null, code: null },
      }),
    });
    await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: messageCanary }] })
      .catch(() => undefined);
    await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gatewayCanary}` },
      body: `{"model":"${messageCanary}`,
    });
    await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${upstreamCanary}x` },
      body: '{}',
    });
    const logs = harness.logLines.join('\n');
    expect(harness.logLines.filter((line) => line.includes('"msg":"request"')).length).toBeGreaterThanOrEqual(
      5,
    );
    for (const secret of [upstreamCanary, gatewayCanary, messageCanary]) expect(logs).not.toContain(secret);
    // What log pipelines read without a mapping: level names and ISO times.
    for (const line of harness.logLines) {
      const entry = JSON.parse(line) as { level: unknown; time: unknown };
      expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).toContain(entry.level);
      expect(entry.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });
});

describe('readiness follows Redis', () => {
  it('is ready with a reachable Redis', async () => {
    const harness = await startGateway({ env: { REDIS_URL: inject('redisUrl') } });
    try {
      await expect
        .poll(async () => (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/readyz`)).status, {
          timeout: 5_000,
        })
        .toBe(200);
    } finally {
      await harness.close();
    }
  });

  it('is not ready while Redis is down, serves stateless requests anyway, and recovers without a restart', async () => {
    const port = await findFreePort();
    const fake = new FakeUpstream();
    const harness = await startGateway({
      env: { REDIS_URL: `redis://127.0.0.1:${port}`, UPSTREAM_BASE_URL: await fake.start() },
    });
    const root = harness.baseUrl.replace(/\/v1$/, '');
    try {
      const notReady = await fetch(`${root}/readyz`);
      expect(notReady.status).toBe(503);
      expect(await notReady.json()).toEqual({ status: 'not_ready', store: 'unreachable' });
      const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-x', maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(completion.choices).toHaveLength(1);
      const redis = await startRedisServer([], port);
      try {
        await expect
          .poll(async () => (await fetch(`${root}/readyz`)).status, { timeout: 10_000, interval: 100 })
          .toBe(200);
      } finally {
        await redis.stop();
      }
    } finally {
      await harness.close();
      await fake.stop();
    }
  });
});

describe('metrics after real traffic', () => {
  it('logs a 404 with its method and path (never its query)', async () => {
    const harness = await startGateway({ env: {} });
    try {
      const response = await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/no/such/thing?token=abc`, {
        method: 'PUT',
      });
      expect(response.status).toBe(404);
      const line = harness.logLines
        .map((entry) => JSON.parse(entry) as Record<string, unknown>)
        .find((entry) => entry.msg === 'request' && entry.status === 404);
      expect(line).toMatchObject({ method: 'PUT', path: '/no/such/thing', errorCode: 'not_found' });
      expect(JSON.stringify(line)).not.toContain('token=abc');
    } finally {
      await harness.close();
    }
  });

  it('puts on one request line what each service did: chat streamed in a session, pass-through, Messages, an unreachable upstream', async () => {
    const fake = new FakeUpstream();
    const harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
    const requestLine = (id: string) =>
      harness.logLines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line.reqId === id && line.msg === 'request');
    const post = (path: string, id: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${harness.baseUrl}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-request-id': id,
          authorization: 'Bearer sk-x',
          ...headers,
        },
        body: JSON.stringify(body),
      });
    try {
      const streamed = await post(
        '/chat/completions',
        'line-chat',
        { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Hello there.' }] },
        { 'x-session-id': 'line-session' },
      );
      expect(streamed.status).toBe(200);
      await streamed.text();
      const embeddings = await post('/embeddings', 'line-passthrough', {
        model: 'text-embedding-3-small',
        input: 'hi',
      });
      await embeddings.text();
      const messages = await post('/messages', 'line-messages', {
        model: 'gpt-4o-mini',
        max_tokens: 64,
        top_k: 5,
        messages: [{ role: 'user', content: 'Hello.' }],
      });
      expect(messages.status).toBe(200);
      await messages.text();
      const rendered = await post('/context/render', 'line-render', {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'What would be sent?' }],
      });
      expect(rendered.status).toBe(200);
      await rendered.text();
      const counted = await post('/messages/count_tokens', 'line-count', {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'How many tokens?' }],
      });
      expect(counted.status).toBe(200);
      await counted.text();
      await fake.stop();
      const unreachable = await post('/chat/completions', 'line-unreachable', {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Anyone?' }],
      });
      expect(unreachable.status).toBe(502);
      await unreachable.text();

      await expect.poll(() => requestLine('line-unreachable')).toBeDefined();
      expect(requestLine('line-chat')).toMatchObject({
        route: '/v1/chat/completions',
        status: 200,
        model: 'gpt-4o-mini',
        stream: true,
        session: expect.stringMatching(/^[0-9a-f]{16}$/),
        upstreamStatus: 200,
        context: { modified: false, droppedMessages: 0 },
      });
      expect(typeof requestLine('line-chat')?.upstream).toBe('string');
      // The fake serves no embeddings: its 404 is relayed as it came.
      expect(requestLine('line-passthrough')).toMatchObject({
        status: 404,
        model: 'text-embedding-3-small',
        upstreamStatus: 404,
      });
      expect(requestLine('line-messages')).toMatchObject({
        route: '/v1/messages',
        status: 200,
        model: 'gpt-4o-mini',
        stream: false,
        dropped: ['top_k'],
        upstreamStatus: 200,
      });
      // A preview and a count send nothing, and say what the engine would do.
      for (const id of ['line-render', 'line-count'])
        expect(requestLine(id)).toMatchObject({
          status: 200,
          model: 'gpt-4o-mini',
          stream: false,
          context: { window: expect.any(Number), modified: false },
        });
      expect(requestLine('line-unreachable')).toMatchObject({
        status: 502,
        model: 'gpt-4o-mini',
        errorCode: 'upstream_unreachable',
        attempts: 3,
        errorCause: expect.stringMatching(/ECONNREFUSED/),
      });
      expect(requestLine('line-unreachable')?.upstreamStatus).toBeUndefined();
    } finally {
      await harness.close();
      await fake.stop().catch(() => undefined);
    }
  });

  it('logs an upstream error that ends a request at warn, with its attempts and the provider wording only, and answers X-Ctxgate-Attempts', async () => {
    const fake = new FakeUpstream();
    const harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
    try {
      // A provider that echoes part of the input in its error, unquoted.
      const failing = {
        status: 500,
        body: '{"error":{"message":"The server had an error processing Quillfeather-42 ledger","type":"server_error","param":null,"code":"internal"}}',
      };
      fake.enqueue(failing, failing, failing);
      const answer = await fetch(`${harness.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'persistent-500' },
        body: JSON.stringify({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'Reconcile the Quillfeather-42 ledger' }],
        }),
      });
      expect(answer.status).toBe(500);
      // Tried three times (once and upstream_retries: 2), as the client is told.
      expect(answer.headers.get('x-ctxgate-attempts')).toBe('3');
      const lines = harness.logLines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.reqId === 'persistent-500');
      expect(lines.find((line) => line.level === 'warn')).toMatchObject({
        msg: 'upstream error ends the request',
        upstreamStatus: 500,
        attempts: 3,
        upstreamError: {
          type: 'server_error',
          code: 'internal',
          message: 'The server had an error processing … …',
        },
      });
      expect(lines.find((line) => line.msg === 'request')).toMatchObject({ status: 500, attempts: 3 });
      expect(harness.logLines.join('\n')).not.toContain('Quillfeather');

      // The client is told not to retry what the gateway retried already: the OpenAI SDK, with its own
      // two retries, makes one request, and the provider sees three calls, not nine.
      expect(answer.headers.get('x-should-retry')).toBe('false');
      const before = fake.chatRequests.length;
      fake.enqueue(failing, failing, failing, failing, failing, failing, failing, failing, failing);
      const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-x', maxRetries: 2 });
      const failure = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Again.' }] })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(OpenAI.InternalServerError);
      expect(fake.chatRequests.length - before).toBe(3);
    } finally {
      await harness.close();
      await fake.stop();
    }
  });

  it('counts completed requests by route, status and model, and observes upstream latency and overhead', async () => {
    const fake = new FakeUpstream();
    const harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
    try {
      const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-x', maxRetries: 0 });
      for (let index = 0; index < 3; index++)
        await client.chat.completions.create({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'hi' }],
        });
      // A stream without include_usage: its completion is estimated from its events (one token each).
      fake.enqueue({ content: 'a b c d e', chunks: 5 });
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      for await (const _chunk of stream) void _chunk;
      // Retried twice (upstream_retries), then passed through.
      const overloaded = {
        status: 503,
        body: '{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}',
      };
      fake.enqueue(overloaded, overloaded, overloaded);

      await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        .catch(() => undefined);
      const text = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
      expect(text).toContain(
        'ctxgate_http_requests_total{route="/v1/chat/completions",status="200",model="gpt-4o-mini",code=""} 4',
      );
      // The upstream's own 503, passed through: not one of the gateway's codes.
      expect(text).toContain(
        'ctxgate_http_requests_total{route="/v1/chat/completions",status="503",model="gpt-4o-mini",code=""} 1',
      );
      // Prompt tokens as the provider reported them (the fake counts each prompt its own way).
      const reported = fake.chatRequests
        .slice(0, 3)
        .reduce((sum, request) => sum + (request.promptTokens ?? 0), 0);
      expect(text).toContain(
        `ctxgate_tokens_total{model="gpt-4o-mini",kind="prompt",source="usage"} ${reported}`,
      );
      expect(text).toContain(
        'ctxgate_tokens_total{model="gpt-4o-mini",kind="completion",source="estimate"} 5',
      );
      expect(text).toContain('ctxgate_upstream_duration_seconds_count{upstream="default",status="200"} 4');
      expect(text).toContain('ctxgate_gateway_overhead_seconds_count{route="/v1/chat/completions"} 5');
      expect(text).toContain('ctxgate_http_request_duration_seconds_count{route="/v1/chat/completions"} 5');
      expect(text).toContain('ctxgate_upstream_retries_total{upstream="default",reason="server"} 2');
    } finally {
      await harness.close();
      await fake.stop();
    }
  });

  it('keeps a stored response larger than the whole in-process bound, and answers for its id', async () => {
    const fake = new FakeUpstream();
    const harness = await startGateway({
      env: { UPSTREAM_BASE_URL: await fake.start() },
      // About 20 KB, and a response of about 80 KB as memory holds it.
      configYaml: 'responses:\n  memory_mb: 0.02\n',
    });
    const call = (body: unknown) =>
      fetch(`${harness.baseUrl}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-large' },
        body: JSON.stringify(body),
      });
    try {
      const created = await call({
        model: 'gpt-4o-mini',
        input: 'words to keep in the response '.repeat(1_300),
      });
      expect(created.status).toBe(200);
      const { id } = (await created.json()) as { id: string };
      const read = await fetch(`${harness.baseUrl}/responses/${id}`, {
        headers: { authorization: 'Bearer sk-large' },
      });
      expect(read.status).toBe(200);
      const continued = await call({ model: 'gpt-4o-mini', previous_response_id: id, input: 'And then?' });
      expect(continued.status).toBe(200);
    } finally {
      await harness.close();
      await fake.stop();
    }
  });

  it('counts the sessions the in-process store evicted when full, as many as are gone', async () => {
    const fake = new FakeUpstream();
    const harness = await startGateway({
      env: { UPSTREAM_BASE_URL: await fake.start() },
      // About 20 KB: a few of the sessions below fit, the rest push the oldest out.
      configYaml: 'sessions:\n  anonymous_tenant: lab\n  memory_mb: 0.02\n',
    });
    try {
      const sessionIds = Array.from({ length: 12 }, (_unused, index) => `evict-${index}`);
      for (const sessionId of sessionIds) {
        const response = await fetch(`${harness.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-session-id': sessionId },
          body: JSON.stringify({
            model: 'gpt-4o-mini',
            messages: [
              { role: 'user', content: `${sessionId}: ${'words to keep in the session '.repeat(100)}` },
            ],
          }),
        });
        expect(response.status).toBe(200);
      }
      let gone = 0;
      for (const sessionId of sessionIds) {
        const response = await fetch(`${harness.baseUrl}/sessions/${sessionId}/history`);
        if (response.status === 404) gone++;
        else expect(response.status).toBe(200);
      }
      expect(gone).toBeGreaterThan(0);
      expect(gone).toBeLessThan(sessionIds.length);
      const metrics = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
      expect(metrics).toContain(`ctxgate_sessions_evicted_total{reason="memory"} ${gone}`);
    } finally {
      await harness.close();
      await fake.stop();
    }
  });

  it('counts what fitting the context did, by action, as the responses reported it', async () => {
    const fake = new FakeUpstream();
    const harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
    try {
      const metrics = async () =>
        (await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text())
          .split('\n')
          .filter((line) => line.startsWith('ctxgate_context_actions_total{'));
      const send = (messages: Array<{ role: string; content: string }>, window?: number) =>
        fetch(`${harness.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(window === undefined ? {} : { 'x-context-window': String(window) }),
          },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages, max_tokens: 100 }),
        });
      expect((await send([{ role: 'user', content: 'hi' }])).status).toBe(200);
      // A request that fits as it is counts nothing.
      expect(await metrics()).toEqual([]);
      const long = Array.from({ length: 40 }, (_unused, index) => ({
        role: index % 2 === 0 ? 'user' : 'assistant',
        content: `turn ${index}: ${'a few words about the deployment and its latency '.repeat(8)}`,
      }));
      let dropped = 0;
      for (let index = 0; index < 2; index++) {
        const response = await send(long, 1_500);
        expect(response.status).toBe(200);
        dropped += Number(response.headers.get('x-context-dropped-messages'));
      }
      expect(dropped).toBeGreaterThan(0);
      expect(await metrics()).toEqual([
        `ctxgate_context_actions_total{action="dropped_messages"} ${dropped}`,
      ]);
    } finally {
      await harness.close();
      await fake.stop();
    }
  });
});
