// One chat request's story (chat-turn.ts), between the two ports: a scripted upstream that answers as
// providers do and a client that records what it received. As tables: what reaches the upstream and the
// client, how many calls it took and how long the gateway waited (its sleep is recorded, not slept),
// and the outcome the service returns for the edge's log line — for answers that go through, overflows
// retried smaller, 429/5xx retried within their bounds (Retry-After in seconds or as an HTTP date,
// x-should-retry honoured), bad input refused before any call, streams relayed, sessions stored, and a
// preview that sends what the request would.
import { describe, expect, it } from 'vitest';
import type { ChatInput } from '../../src/chat/chat-turn.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { RequestOverrides } from '../../src/context/request-overrides.js';
import { createServices } from '../../src/create-services.js';
import { isGatewayError } from '../../src/errors.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createMemorySessionStore } from '../../src/store/memory-session-store.js';
import { createTiktokenTokenizers, type Tokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { chat } from '../helpers/chat-attempts.js';
import { recordingClient, scriptedUpstream, type ScriptedAnswer } from '../helpers/port-fakes.js';
import { captureLogs, writeConfigFile } from '../helpers/start-gateway.js';
import { prose } from '../helpers/text.js';

const tokenizers = createTiktokenTokenizers();

function chatService(script: ScriptedAnswer[], configYaml = '', counting: Tokenizers = tokenizers) {
  const config = loadConfig({
    env: {
      CTXGATE_CONFIG: writeConfigFile(
        `models:\n  - { match: small-model, window: 4096, output_reserve: 256 }\n${configYaml}`,
      ),
    },
  });
  const { destination, lines } = captureLogs();
  const upstream = scriptedUpstream(script);
  const slept: number[] = [];
  const services = createServices({
    config,
    logger: createLogger({ level: 'info', destination }),
    metrics: createMetrics({ collectProcessMetrics: false }),
    upstream,
    tokenizers: counting,
    sessionStore: createMemorySessionStore({
      limits: { maxActiveMessages: 1_000, minActiveMessages: 100, idleTtlSeconds: 600 },
    }),
    random: () => 0.5,
    sleep: async (ms) => {
      slept.push(ms);
    },
  });
  return { chat: services.chat, upstream, slept, lines };
}

function input(body: unknown, overrides: Partial<RequestOverrides> = {}): ChatInput {
  return {
    body,
    rawBody: Buffer.from(JSON.stringify(body)),
    countingBytes: Buffer.byteLength(JSON.stringify(body)),
    overrides: { historyMode: 'auto', ...overrides },
    credential: { mode: 'gateway_key', tenantId: 'tenant-a', mayHoldSessions: true },
    clientHeaders: {},
    startedAtMs: performance.now(),
    warn: () => undefined,
    info: () => undefined,
  };
}

const json = { 'content-type': 'application/json' };
/** A completion; with `promptTokens`, its usage (else none: the gateway keeps its own count). */
const completion = (content: string, promptTokens?: number): ScriptedAnswer => ({
  status: 200,
  headers: json,
  chunks: [
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'small-model',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      ...(promptTokens === undefined
        ? {}
        : { usage: { prompt_tokens: promptTokens, completion_tokens: 3, total_tokens: promptTokens + 3 } }),
    }),
  ],
});
const error = (status: number, message: string, headers: Record<string, string> = {}): ScriptedAnswer => ({
  status,
  headers: { ...json, ...headers },
  chunks: [JSON.stringify({ error: { message, type: 'server_error', code: null } })],
});
const overflow = (window: number): ScriptedAnswer => ({
  status: 400,
  headers: json,
  chunks: [
    JSON.stringify({
      error: {
        message: `This model's maximum context length is ${window} tokens. Please reduce the length of the messages.`,
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
      },
    }),
  ],
});

const short = { model: 'small-model', messages: [{ role: 'user', content: 'Say hi.' }] };

const sentMessages = (request: { body?: unknown }) =>
  (JSON.parse(Buffer.from(request.body as Buffer | string).toString()) as { messages: unknown[] }).messages;

describe('a chat request', () => {
  it.each<{
    name: string;
    body: unknown;
    /** Made when the test runs (an HTTP date is read against the clock then). */
    script: () => ScriptedAnswer[];
    status: number;
    calls: number;
    slept: (waits: number[]) => boolean;
    headers: Record<string, string>;
  }>([
    {
      name: 'that goes through is one call, answered as it came',
      body: short,
      script: () => [completion('Hi!')],
      status: 200,
      calls: 1,
      slept: (waits) => waits.length === 0,
      headers: { 'x-context-dropped-messages': '0', 'x-ctxgate-attempts': '1' },
    },
    {
      name: 'refused as too long is sent again smaller before the client sees anything',
      body: chat(12),
      script: () => [overflow(3_000), completion('Done.')],
      status: 200,
      calls: 2,
      slept: (waits) => waits.length === 0,
      headers: { 'x-context-retries': '1' },
    },
    {
      name: 'answered 429 with Retry-After in seconds waits at least that long, then goes through',
      body: short,
      script: () => [error(429, 'Rate limit reached.', { 'retry-after': '2' }), completion('Hi!')],
      status: 200,
      calls: 2,
      slept: (waits) => waits.length === 1 && (waits[0] as number) >= 2_000 && (waits[0] as number) <= 8_000,
      headers: { 'x-ctxgate-attempts': '2' },
    },
    {
      name: 'answered 429 with Retry-After as an HTTP date waits until then',
      body: short,
      script: () => [
        error(429, 'Rate limit reached.', { 'retry-after': new Date(Date.now() + 9_000).toUTCString() }),
        completion('Hi!'),
      ],
      status: 200,
      calls: 2,
      // The date has whole seconds: 8 to 9 s from now (less whatever time the machine took to get there).
      slept: (waits) => waits.length === 1 && (waits[0] as number) >= 5_000 && (waits[0] as number) <= 10_000,
      headers: { 'x-ctxgate-attempts': '2' },
    },
    {
      name: 'answered 429 with a Retry-After over 10 s is left to the client',
      body: short,
      script: () => [error(429, 'Rate limit reached.', { 'retry-after': '30' })],
      status: 429,
      calls: 1,
      slept: (waits) => waits.length === 0,
      headers: { 'retry-after': '30' },
    },
    {
      name: 'answered 503 twice goes through on the third call, after backoff',
      body: short,
      script: () => [error(503, 'Overloaded.'), error(503, 'Overloaded.'), completion('Hi!')],
      status: 200,
      calls: 3,
      slept: (waits) => waits.length === 2 && waits.every((wait) => wait > 0 && wait <= 8_000),
      headers: { 'x-ctxgate-attempts': '3' },
    },
    {
      name: 'answered 500 with x-should-retry: false is not retried, and the client is told not to',
      body: short,
      script: () => [error(500, 'The server had an error.', { 'x-should-retry': 'false' })],
      status: 500,
      calls: 1,
      slept: (waits) => waits.length === 0,
      headers: { 'x-should-retry': 'false' },
    },
    {
      name: 'answered 409 with x-should-retry: true is retried',
      body: short,
      script: () => [error(409, 'The server had an error.', { 'x-should-retry': 'true' }), completion('Hi!')],
      status: 200,
      calls: 2,
      slept: (waits) => waits.length === 1,
      headers: { 'x-ctxgate-attempts': '2' },
    },
    {
      name: 'answered 503 past the upstream retries relays the last answer, not to be retried again',
      body: short,
      script: () => [error(503, 'Overloaded.'), error(503, 'Overloaded.'), error(503, 'Overloaded.')],
      status: 503,
      calls: 3,
      slept: (waits) => waits.length === 2,
      headers: { 'x-should-retry': 'false', 'x-ctxgate-attempts': '3' },
    },
  ])('$name', async ({ body, script, status, calls, slept, headers }) => {
    const service = chatService(script());
    const client = recordingClient();
    const outcome = await service.chat.complete(input(body), client);
    expect(client.statuses).toEqual([status]);
    expect(service.upstream.sent.length).toBe(calls);
    expect(slept(service.slept)).toBe(true);
    expect(client.headers).toMatchObject(headers);
    expect(outcome.upstream?.attempts).toBe(calls);
    expect(outcome.upstream?.status).toBe(status);
    // Every call carried the client's last message.
    for (const sent of service.upstream.sent)
      expect(sentMessages(sent).at(-1)).toEqual((body as { messages: unknown[] }).messages.at(-1));
  });

  it('sends the client’s own bytes when nothing in the conversation changes', async () => {
    const service = chatService([completion('Hi!')]);
    const request = input(short);
    await service.chat.complete(request, recordingClient());
    expect(Buffer.from(service.upstream.sent[0]?.body as Buffer).equals(request.rawBody as Buffer)).toBe(
      true,
    );
  });

  it('sends the messages it keeps of a shortened conversation in the client’s own bytes', async () => {
    // Written as some clients write JSON: indented, and every é as an escape.
    const body = chat(40, 'Café?');
    const rawBody = Buffer.from(JSON.stringify(body, null, 2).replace(/é/g, '\\u00e9'));
    const parsed = JSON.parse(rawBody.toString()) as typeof body;
    const service = chatService([completion('Oui.')]);
    const client = recordingClient();
    await service.chat.complete(Object.assign(input(parsed), { rawBody }), client);
    const sent = Buffer.from(service.upstream.sent[0]?.body as Buffer).toString();
    // Shortened: old turns left out, a notice in their place.
    expect(Number(client.headers['x-context-dropped-messages'])).toBeGreaterThan(0);
    expect(sentMessages({ body: sent })).toContainEqual(parsed.messages.at(-1));
    // The system prompt and the last question went as the client wrote them; the notice is the gateway's.
    expect(sent).toContain('{\n      "role": "system",\n      "content": "Be brief."\n    }');
    expect(sent).toContain('"content": "Caf\\u00e9?"');
    expect(sent).toContain('earlier messages of this conversation were omitted');
  });

  it('retried smaller, sends fewer messages, the learned window kept for the next request', async () => {
    const service = chatService([overflow(3_000), completion('Done.'), completion('Again.')]);
    await service.chat.complete(input(chat(12)), recordingClient());
    const [first, second] = service.upstream.sent.map(sentMessages);
    expect(second?.length).toBeLessThan(first?.length ?? 0);
    // The next request is fitted to the window learned: one call, within 3,000 with the output reserve.
    const client = recordingClient();
    await service.chat.complete(input(chat(12)), client);
    expect(service.upstream.sent.length).toBe(3);
    expect(sentMessages(service.upstream.sent[2] as { body?: unknown }).length).toBeLessThan(
      first?.length ?? 0,
    );
    expect(Number(client.headers['x-context-input-tokens'])).toBeLessThanOrEqual(3_000 - 256);
    expect(client.headers['x-context-retries']).toBe('0');
  });

  it.each<{ name: string; body: unknown; code: string }>([
    { name: 'a body that is not an object', body: [1, 2], code: 'invalid_request' },
    { name: 'no messages', body: { model: 'small-model', messages: [] }, code: 'invalid_request' },
    {
      name: 'no model',
      body: { messages: [{ role: 'user', content: 'hi' }] },
      code: 'invalid_request',
    },
    {
      name: 'a user message alone over the window',
      body: { model: 'small-model', messages: [{ role: 'user', content: prose(6_000, 1) }] },
      code: 'context_length_exceeded',
    },
  ])('with $name is refused in the client’s API shape before any call', async ({ body, code }) => {
    const service = chatService([]);
    let refused: unknown;
    try {
      await service.chat.complete(input(body), recordingClient());
    } catch (caught) {
      refused = caught;
    }
    expect(isGatewayError(refused)).toBe(true);
    if (!isGatewayError(refused)) return;
    expect(refused.code).toBe(code);
    expect(refused.status).toBe(400);
    expect(service.upstream.sent).toEqual([]);
  });

  it('relays a stream as it came and ends it with [DONE]', async () => {
    const events = [
      'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n',
      'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}\n\n',
      'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
      'data: [DONE]\n\n',
    ];
    const service = chatService([
      { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events },
    ]);
    const client = recordingClient();
    const outcome = await service.chat.complete(input({ ...short, stream: true }), client);
    expect(client.statuses).toEqual([200]);
    expect(client.received).toBe(events.join(''));
    expect(client.ended).toBe(true);
    expect(outcome.stream).toBe(true);
  });

  it('ends a stream it opened with an error event when the gateway itself fails after opening it', async () => {
    // A fault of the gateway's own once the stream is open — here counting the answer's text — must not
    // leave the client waiting for an end that never comes: it gets an error event, and the stream ends.
    const faulty: Tokenizers = {
      forEncoding(encoding, precision) {
        const tokenizer = tokenizers.forEncoding(encoding, precision);
        return Object.assign(Object.create(tokenizer) as typeof tokenizer, {
          count: (text: string) => {
            if (text.includes('unlucky')) throw new TypeError('a fault in counting');
            return tokenizer.count(text);
          },
        });
      },
    };
    const events = [
      'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"An unlucky answer"},"finish_reason":null}]}\n\n',
      'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
      'data: [DONE]\n\n',
    ];
    const service = chatService(
      [{ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events }],
      '',
      faulty,
    );
    const client = recordingClient();
    const failed = await service.chat
      .complete(
        input({ ...short, stream: true }, { sessionId: 'unlucky-turn', historyMode: 'delta' }),
        client,
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failed).toBeInstanceOf(TypeError);
    expect(client.ended).toBe(true);
    const last = client.received.trimEnd().split('\n\n').at(-1) ?? '';
    expect(JSON.parse(last.replace(/^data: /, ''))).toMatchObject({
      error: { code: 'internal_error', message: 'The gateway failed to process the request.' },
    });
    expect(client.received).not.toContain('[DONE]');
    expect(client.received).not.toContain('a fault in counting');
  });

  it('in a session, stores the turn: the next request sends the stored history and the new message', async () => {
    const service = chatService([completion('Paris.'), completion('About 2.1 million.')]);
    const session = { sessionId: 'trip', historyMode: 'delta' as const };
    await service.chat.complete(
      input({ model: 'small-model', messages: [{ role: 'user', content: 'Capital of France?' }] }, session),
      recordingClient(),
    );
    const client = recordingClient();
    await service.chat.complete(
      input({ model: 'small-model', messages: [{ role: 'user', content: 'Its population?' }] }, session),
      client,
    );
    expect(sentMessages(service.upstream.sent[1] as { body?: unknown })).toEqual([
      { role: 'user', content: 'Capital of France?' },
      { role: 'assistant', content: 'Paris.' },
      { role: 'user', content: 'Its population?' },
    ]);
    expect(client.statuses).toEqual([200]);
  });

  it('previews what it would send, without a call', async () => {
    const service = chatService([completion('Done.')]);
    const preview = await service.chat.preview(input(chat(20)));
    expect(service.upstream.sent).toEqual([]);
    await service.chat.complete(input(chat(20)), recordingClient());
    expect(preview.body.messages).toEqual(sentMessages(service.upstream.sent[0] as { body?: unknown }));
    expect(Number(preview.headers['x-context-dropped-messages'])).toBeGreaterThan(0);
  });

  it('previews the re-probe of the configured window a request is due, and the request sends it', async () => {
    const service = chatService(
      [overflow(3_000), completion('Done.'), overflow(3_000), completion('Again.')],
      'learning: { reprobe_after_seconds: 1 }\n',
    );
    await service.chat.complete(input(chat(12)), recordingClient());
    const [whole] = service.upstream.sent.map(sentMessages);
    // The lesson goes unconfirmed for the re-probe interval (a wait, not a measure: later is as good).
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const previews = [
      await service.chat.preview(input(chat(12))),
      await service.chat.preview(input(chat(12))),
    ];
    await service.chat.complete(input(chat(12)), recordingClient());
    expect(previews.map((preview) => preview.body.messages)).toEqual([whole, whole]);
    expect(sentMessages(service.upstream.sent[2] as { body?: unknown })).toEqual(whole);
  });
});
