// The edges a careless client, a broken upstream or an attacker reach, over real HTTP: upstream answers
// that are not what they claim, streams cut inside an event, bodies refused before they were read,
// compressed bodies, byte-order marks, odd names and headers, oversize requests and session turns, and
// a request id on every answer.
import { request as httpRequest } from 'node:http';
import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { zstdCompress } from '../helpers/zstd.js';
import { Redis } from 'ioredis';
import { startRedisServer } from '../helpers/redis-server.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const chat = (content: string, model = 'gpt-4o-mini') => ({ model, messages: [{ role: 'user', content }] });

const functionTool = (schema: unknown) => ({
  type: 'function',
  function: { name: 'f', parameters: { type: 'object', properties: { x: schema } } },
});

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

async function post(
  harness: GatewayHarness,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${harness.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-edge', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function errorOf(text: string): ErrorBody['error'] {
  return (JSON.parse(text) as ErrorBody).error;
}

describe('upstream answers that are not what they claim', () => {
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

  it.each([
    ['cut-off JSON', 'application/json', '{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assis'],
    ['an HTML page', 'text/html', '<html><body>502 Bad Gateway</body></html>'],
    [
      'an event stream',
      'text/event-stream',
      'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
    ],
    ['a JSON array', 'application/json', '[1,2,3]'],
  ])('turns a 200 with %s into 502 upstream_bad_response and stores nothing', async (_name, type, body) => {
    const sessionId = `bad-body-${Math.random().toString(36).slice(2)}`;
    fake.enqueue({ status: 200, headers: { 'content-type': type }, body });
    const refused = await post(harness, chat('first question'), { 'x-session-id': sessionId });
    expect(refused.status).toBe(502);
    expect(errorOf(refused.text).code).toBe('upstream_bad_response');
    const session = await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
      headers: { authorization: 'Bearer sk-edge' },
    });
    expect(session.status).toBe(404);
    // The client retries: one user message, one reply, never two user messages in a row.
    expect((await post(harness, chat('first question'), { 'x-session-id': sessionId })).status).toBe(200);
    const stored = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
        headers: { authorization: 'Bearer sk-edge' },
      })
    ).json()) as { messages: Array<{ role: string }> };
    expect(stored.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
  });

  it('refuses a JSON answer to a streaming request with 502, as the openai client sees it', async () => {
    fake.enqueue({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"id":"x","object":"chat.completion","choices":[]}',
    });
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-edge', maxRetries: 0 });
    const failure = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.InternalServerError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
  });

  it('puts the error event of a stream cut inside an event on a line of its own', async () => {
    fake.enqueue({
      content: 'a fairly long answer cut short',
      chunks: 6,
      breakAfterChunks: 3,
      breakMidEvent: true,
    });
    const response = await post(harness, { ...chat('stream please'), stream: true });
    expect(response.status).toBe(200);
    const events = response.text.split(/\n\n/).filter((event) => event.trim() !== '');
    // Every event the client receives is whole JSON; the last one is the gateway's error.
    for (const event of events) {
      expect(event.startsWith('data: ')).toBe(true);
      expect(() => JSON.parse(event.slice('data: '.length))).not.toThrow();
    }
    const last = JSON.parse((events.at(-1) as string).slice('data: '.length)) as ErrorBody;
    expect(last.error.code).toBe('upstream_unreachable');
    expect(response.text.endsWith('\n\n')).toBe(true);
    expect(response.headers.get('x-request-id')).toMatch(/\S/);
  });
});

describe('early refusals reach the client', () => {
  let harness: GatewayHarness;
  let port: number;
  const limit = 1024 * 1024;
  const oversize = Buffer.alloc(16 * limit, 0x61);

  beforeAll(async () => {
    harness = await startGateway({
      env: { UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', GATEWAY_API_KEYS: 'gk-edge' },
      configYaml: `server:\n  body_limit_bytes: ${limit}\n`,
    });
    port = Number(new URL(harness.baseUrl).port);
  });
  afterAll(() => harness.close());

  /** One request with http.request; an error at any point (EPIPE while still sending) is the outcome. */
  function nodeRequest(headers: Record<string, string>): Promise<{ status: number; body: string } | Error> {
    return new Promise((resolve) => {
      let failure: Error | undefined;
      let answer: { status: number; body: string } | undefined;
      const request = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', 'content-length': oversize.length, ...headers },
      });
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          answer = { status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() };
        });
      });
      request.on('error', (error) => (failure ??= error));
      // 'close' comes after the whole exchange, sending included.
      request.on('close', () => resolve(failure ?? answer ?? new Error('no answer')));
      request.end(oversize);
    });
  }

  it('answers 413 to 100 oversize bodies from http.request and 100 from fetch, none of them EPIPE', async () => {
    const failures: string[] = [];
    for (let attempt = 0; attempt < 100; attempt++) {
      const outcome = await nodeRequest({ authorization: 'Bearer gk-edge' });
      if (outcome instanceof Error) failures.push(`http.request: ${outcome.message}`);
      else if (outcome.status !== 413 || errorOf(outcome.body).code !== 'request_too_large')
        failures.push(`http.request: ${outcome.status}`);
      const response = await fetch(`${harness.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer gk-edge' },
        body: oversize,
      }).catch((error: unknown) => error as Error);
      if (response instanceof Error) failures.push(`fetch: ${response.message}`);
      else if (response.status !== 413) failures.push(`fetch: ${response.status}`);
      else await response.text();
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it('answers 401 to a wrong key sent with a large body, without EPIPE', async () => {
    const failures: string[] = [];
    for (let attempt = 0; attempt < 20; attempt++) {
      const outcome = await nodeRequest({ authorization: 'Bearer wrong' });
      if (outcome instanceof Error) failures.push(outcome.message);
      else if (outcome.status !== 401) failures.push(String(outcome.status));
    }
    expect(failures).toEqual([]);
  });
});

// Also an answer larger than the gateway reads whole (server.max_upstream_answer_bytes).
describe('what a client sends', () => {
  let fake: FakeUpstream;
  let harness: GatewayHarness;
  beforeAll(async () => {
    fake = new FakeUpstream();
    harness = await startGateway({
      env: { UPSTREAM_BASE_URL: await fake.start() },
      configYaml: 'sessions:\n  max_active_messages: 100\nserver:\n  max_upstream_answer_bytes: 100000\n',
    });
  });
  afterAll(async () => {
    await harness.close();
    await fake.stop();
  });

  it.each([
    // Codex signed in with ChatGPT sends its requests zstd-compressed at level 3.
    ['zstd', zstdCompress],
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ])('reads a %s body and forwards it uncompressed', async (encoding, compress) => {
    const before = fake.chatRequests.length;
    const response = await post(harness, compress(Buffer.from(JSON.stringify(chat(`hi in ${encoding}`)))), {
      'content-encoding': encoding,
    });
    expect(response.status).toBe(200);
    const forwarded = fake.chatRequests.slice(before);
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]?.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(forwarded[0]?.rawBody ?? '')).toMatchObject({
      messages: [{ role: 'user', content: `hi in ${encoding}` }],
    });
  });

  it('refuses a body of a coding it does not read with 415 unsupported_media_type, and forwards nothing', async () => {
    const before = fake.chatRequests.length;
    const response = await post(harness, JSON.stringify(chat('hi')), { 'content-encoding': 'compress' });
    expect(response.status).toBe(415);
    expect(errorOf(response.text).code).toBe('unsupported_media_type');
    expect(fake.chatRequests.length).toBe(before);
  });

  it('reads a body that starts with a byte-order mark, and forwards it without one', async () => {
    const response = await post(harness, `\uFEFF${JSON.stringify(chat('bom'))}`);
    expect(response.status).toBe(200);
    expect(fake.chatRequests.at(-1)?.rawBody.charCodeAt(0)).toBe('{'.charCodeAt(0));
  });

  it('answers DELETE and GET sent with a JSON Content-Type and no body like any other', async () => {
    for (const method of ['DELETE', 'GET']) {
      const response = await fetch(`${harness.baseUrl}/sessions/never-created`, {
        method,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-edge' },
      });
      expect(response.status).toBe(404);
      expect(errorOf(await response.text()).code).toBe('not_found');
    }
  });

  it.each([['a\nb'], ['a\u0000b'], ['tab\there'], ['x'.repeat(257)]])(
    'refuses the model name %j with 400 naming the parameter',
    async (model) => {
      const response = await post(harness, chat('hi', model));
      expect(response.status).toBe(400);
      expect(errorOf(response.text).param).toBe('model');
    },
  );

  it.each([['__proto__'], ['constructor'], ['toString'], ['hasOwnProperty']])(
    'refuses X-Context-Policy: %s as unknown',
    async (name) => {
      const response = await post(harness, chat('hi'), { 'x-context-policy': name });
      expect(response.status).toBe(400);
      expect(errorOf(response.text)).toMatchObject({ code: 'invalid_header', param: 'x-context-policy' });
    },
  );

  it.each([
    ['/chat/completions', (schema: unknown) => ({ ...chat('hi'), tools: [functionTool(schema)] })],
    [
      '/messages',
      (schema: unknown) => ({
        ...chat('hi'),
        max_tokens: 16,
        tools: [{ name: 'f', input_schema: { type: 'object', properties: { x: schema } } }],
      }),
    ],
  ])(
    'answers %s with a 2 KB tool schema 27 levels deep that lists every type twice, tools forwarded',
    async (path, bodyWith) => {
      let schema: unknown = { type: 'string' };
      for (let level = 0; level < 27; level++)
        schema = { type: ['object', 'object'], properties: { a: schema } };
      const body = JSON.stringify(bodyWith(schema));
      expect(body.length).toBeLessThan(2_048);
      const response = await fetch(`${harness.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-edge' },
        body,
      });
      expect(response.status).toBe(200);
      const sent = fake.chatRequests.at(-1)?.body as { tools: Array<{ function: { parameters: unknown } }> };
      expect(sent.tools[0]?.function.parameters).toEqual({ type: 'object', properties: { x: schema } });
    },
  );

  it('refuses a 2 MB tool description written 30 times longer as too long, without calling the upstream', async () => {
    // A million empty lines 28 objects deep: each written as 56 spaces of indentation and "// ".
    let schema: unknown = { type: 'string', description: '\n'.repeat(1_000_000) };
    for (let level = 0; level < 27; level++) schema = { type: 'object', properties: { a: schema } };
    const before = fake.chatRequests.length;
    const response = await post(harness, { ...chat('hi'), tools: [functionTool(schema)] });
    expect(response.status).toBe(400);
    expect(errorOf(response.text).code).toBe('context_length_exceeded');
    expect(fake.chatRequests.length).toBe(before);
  });

  it('refuses a Messages request of 150,000 tool results in one message as too many messages, in Anthropic’s shape', async () => {
    const before = fake.chatRequests.length;
    const response = await fetch(`${harness.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-edge' },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        max_tokens: 16,
        messages: [
          {
            role: 'user',
            content: Array.from({ length: 150_000 }, (_unused, index) => ({
              type: 'tool_result',
              tool_use_id: `t${index}`,
            })),
          },
        ],
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(/at most 10000 messages/);
    expect(fake.chatRequests.length).toBe(before);
  });

  it('answers 502 upstream_bad_response to an answer past the limit, and relays one within it', async () => {
    // Words, not one repeated letter: the fake counts the answer's tokens with js-tiktoken, whose encoder
    // takes minutes over 200,000 of one letter.
    fake.enqueue({ content: 'long '.repeat(40_000) }, { content: 'short '.repeat(8_000) });
    const over = await post(harness, chat('a long answer'));
    expect(over.status).toBe(502);
    expect(errorOf(over.text)).toMatchObject({ code: 'upstream_bad_response' });
    expect(errorOf(over.text).message).toMatch(/100000 bytes/);
    const within = await post(harness, chat('a shorter one'));
    expect(within.status).toBe(200);
    expect(JSON.parse(within.text).choices[0].message.content).toBe('short '.repeat(8_000));
  });

  it('answers 502 upstream_bad_response to an error body past the limit, without retrying it', async () => {
    const before = fake.chatRequests.length;
    fake.enqueue({ status: 400, body: JSON.stringify({ error: { message: 'bad '.repeat(50_000) } }) });
    const response = await post(harness, chat('a bad one'));
    expect(response.status).toBe(502);
    expect(errorOf(response.text)).toMatchObject({ code: 'upstream_bad_response' });
    expect(fake.chatRequests.length).toBe(before + 1);
  });

  it('refuses more messages or content parts than one request may hold, before any work', async () => {
    const before = fake.chatRequests.length;
    const manyMessages = {
      model: 'gpt-4o-mini',
      messages: Array.from({ length: 10_001 }, () => ({ role: 'user', content: 'x' })),
    };
    const tooMany = await post(harness, manyMessages);
    expect(tooMany.status).toBe(400);
    expect(errorOf(tooMany.text)).toMatchObject({ code: 'invalid_request', param: 'messages' });
    const manyParts = {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'user', content: Array.from({ length: 20_001 }, () => ({ type: 'text', text: 'x' })) },
      ],
    };
    const tooManyParts = await post(harness, manyParts);
    expect(tooManyParts.status).toBe(400);
    expect(errorOf(tooManyParts.text).message).toMatch(/content parts/);
    expect(fake.chatRequests.length).toBe(before);
    // At the limit it is served.
    const atLimit = await post(harness, { ...manyMessages, messages: manyMessages.messages.slice(1) });
    expect(atLimit.status).toBe(200);
  });

  it('refuses a session turn too large to store before calling the upstream', async () => {
    const before = fake.chatRequests.length;
    const conversation = Array.from({ length: 150 }, (_, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: `message ${index}`,
    }));
    const response = await post(
      harness,
      { model: 'gpt-4o-mini', messages: [...conversation, { role: 'user', content: 'last' }] },
      { 'x-session-id': 'too-large-turn' },
    );
    expect(response.status).toBe(400);
    expect(errorOf(response.text).code).toBe('session_turn_too_large');
    expect(fake.chatRequests.length).toBe(before);
    // The session is not left held: a smaller turn goes through at once.
    const next = await post(harness, chat('small'), { 'x-session-id': 'too-large-turn' });
    expect(next.status).toBe(200);
  });

  it('answers with x-request-id everywhere: its own for a client that sent one, streams and 404s too', async () => {
    const own = await post(harness, chat('hi'), { 'x-request-id': 'client-chosen-42' });
    expect(own.headers.get('x-request-id')).toBe('client-chosen-42');
    const stream = await post(harness, { ...chat('hi'), stream: true });
    expect(stream.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const missing = await fetch(`${harness.baseUrl}/nothing`);
    expect(missing.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const unusable = await post(harness, chat('hi'), { 'x-request-id': 'x'.repeat(300) });
    expect(unusable.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

/**
 * The commands the gateway's own connections send, as MONITOR sees them: what a Lua script runs inside
 * itself (the learned-limits scripts' writes) is not the gateway's sending and is left out.
 */
async function watchCommands(url: string): Promise<{ counts: Map<string, number>; stop(): void }> {
  const counts = new Map<string, number>();
  const monitor = await new Redis(url).monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') return;
    const name = String(args[0]).toLowerCase();
    if (name === 'monitor') return;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  });
  // Seen before anything is counted: a command of our own, then a clean count.
  const own = new Redis(url);
  await own.set('test:monitor-probe', '1');
  own.disconnect();
  for (let wait = 0; wait < 100 && !counts.has('set'); wait++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  if (!counts.has('set')) throw new Error('MONITOR saw nothing');
  counts.clear();
  return { counts, stop: () => monitor.disconnect() };
}

describe('stateless requests and Redis', () => {
  it('send no Redis command on the request path; learned ratios are written at most once a second', async () => {
    const server = await startRedisServer();
    const fake = new FakeUpstream({ promptTokenScale: { 'local-model-x': 1.3 } });
    const harness = await startGateway({
      env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: server.url },
    });
    try {
      await waitUntilReady(harness);
      const watched = await watchCommands(server.url);
      const startedAt = Date.now();
      // An estimated model: every answer's usage is a ratio sample.
      for (let index = 0; index < 200; index++)
        expect((await post(harness, chat(`question ${index}`, 'local-model-x'))).status).toBe(200);
      const seconds = (Date.now() - startedAt) / 1000;
      watched.stop();
      // Nothing per request: each command at most once per second of the run — the learned table's
      // once-a-second work (its LRU index, following the change log, writing ratios back in a script).
      // A command sent per request would be sent 200 times.
      const ticks = Math.ceil(seconds) + 2;
      for (const [name, count] of watched.counts)
        expect(`${name}: ${count <= ticks ? 'at most once a second' : count}`).toBe(
          `${name}: at most once a second`,
        );
    } finally {
      await harness.close();
      await fake.stop();
      await server.stop();
    }
  });

  it('answer while Redis is paused', async () => {
    const server = await startRedisServer();
    const fake = new FakeUpstream();
    const harness = await startGateway({
      env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: server.url },
    });
    try {
      await waitUntilReady(harness);
      server.process.kill('SIGSTOP');
      for (let index = 0; index < 5; index++)
        expect((await post(harness, chat(`paused ${index}`, 'local-model-y'))).status).toBe(200);
      const session = await post(harness, chat('session'), { 'x-session-id': 'paused' });
      expect(session.status).toBe(503);
      expect(errorOf(session.text).code).toBe('session_store_unavailable');
    } finally {
      server.process.kill('SIGCONT');
      await harness.close();
      await fake.stop();
      await server.stop();
    }
  });
});
