// The undici adapter (docs/operations.md): real HTTP on loopback to a scripted server. The base URL's
// path is kept; bodies are read whole, chunk by chunk or peeked and then replayed; transport failures
// become the gateway's codes — nothing listening, no first byte in time, a body that stalls, a body
// larger than it reads whole; what the reader of the chunks (or the judge of a peek) fails with is handed
// back as it is.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpstreamConfig } from '../../src/config/gateway-config.js';
import { isGatewayError } from '../../src/errors.js';
import { createUndiciUpstream } from '../../src/upstream/undici-upstream.js';
import { findFreePort } from '../helpers/redis-server.js';

let server: Server;
let baseUrl: string;
const seen: string[] = [];
/** Lets `/v1/processing` go on to its first event. */
let goOn = (): void => undefined;
const handlers: Record<string, (response: ServerResponse) => void> = {
  '/v1/whole': (response) => response.end('{"ok":true}'),
  '/v1/stream': (response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write('data: one\n\n');
    setImmediate(() => response.end('data: two\n\ndata: [DONE]\n\n'));
  },
  '/v1/silent': () => undefined,
  // 64 KB in 1 KB writes: an answer that arrives in many pieces.
  '/v1/large': (response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    for (let piece = 0; piece < 64; piece++) response.write('x'.repeat(1_024));
    response.end();
  },
  '/v1/stall': (response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write('data: one\n\n');
  },
  // A reasoning model's stream: its headers at once, its first chunk once it has thought (longer than the
  // idle time, shorter than the first byte's).
  '/v1/thinks': (response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.flushHeaders();
    setTimeout(() => response.end('data: thought\n\ndata: [DONE]\n\n'), 1_500);
  },
  // A relay's processing comment while the model thinks, its first event only once the test says so.
  '/v1/processing': (response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write(': OPENROUTER PROCESSING\n\n');
    goOn = () => response.end('data: thought\n\ndata: [DONE]\n\n');
  },
  // Ten events at once, then the end after as long a silence as the idle time.
  '/v1/burst': (response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let event = 0; event < 10; event++) response.write(`data: ${event}\n\n`);
    setTimeout(() => response.end('data: [DONE]\n\n'), 200);
  },
};

beforeAll(async () => {
  server = createServer((request, response) => {
    seen.push(request.url ?? '');
    (handlers[request.url ?? ''] ?? ((reply: ServerResponse) => reply.writeHead(404).end()))(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const upstreamAt = (url: string, name = 'u'): UpstreamConfig => ({
  name,
  baseUrl: url,
  apiKey: undefined,
  modelGlobs: ['*'],
  maxConnections: 4,
  kind: 'openai',
  billingLine: 'drop',
});
const timeouts = { connectMs: 1_000, firstByteMs: 300, idleMs: 300 };
const send = (path: string, url = baseUrl, name = 'u', onBodyEnd?: () => void) =>
  createUndiciUpstream({ timeouts }).send({
    upstream: upstreamAt(url, name),
    method: 'GET',
    path,
    headers: {},
    signal: new EventEmitter(),
    ...(onBodyEnd === undefined ? {} : { onBodyEnd }),
  });

async function codeOf(action: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await action();
    return undefined;
  } catch (error) {
    return isGatewayError(error) ? error.code : String(error);
  }
}

describe('the undici upstream', () => {
  it('reads a whole body up to maxAnswerBytes, and gives up one larger', async () => {
    const capped = (maxAnswerBytes: number) =>
      createUndiciUpstream({ timeouts, maxAnswerBytes }).send({
        upstream: upstreamAt(baseUrl),
        method: 'GET',
        path: '/large',
        headers: {},
        signal: new EventEmitter(),
      });
    expect((await (await capped(65_536)).readAll()).length).toBe(65_536);
    const over = await capped(65_535);
    expect(await codeOf(() => over.readAll())).toBe('upstream_bad_response');
  });

  it('sends below the base URL’s path and reads a whole body', async () => {
    const response = await send('/whole');
    expect(response.statusCode).toBe(200);
    expect((await response.readAll()).toString()).toBe('{"ok":true}');
    expect(seen).toContain('/v1/whole');
  });

  it('replays what a peek read, then the rest, in order', async () => {
    const response = await send('/stream');
    const head = await response.peek((received) => received.includes('\n\n'));
    expect(head.toString()).toBe('data: one\n\n');
    let all = '';
    await response.forEachChunk((chunk) => void (all += chunk.toString()));
    expect(all).toBe('data: one\n\ndata: two\n\ndata: [DONE]\n\n');
  });

  it.each([
    [
      'throws',
      (): undefined => {
        throw new TypeError('the reader failed');
      },
    ],
    ['rejects', () => Promise.reject(new TypeError('the reader failed'))],
  ])('hands back what the chunk reader %s with, as it is, and drops the body', async (_name, onChunk) => {
    // The stream that stalls after its first event: only dropping it ends the read. (A reader that
    // threw inside the body's 'data' event was no one's to catch, and the process ended.)
    const stalled = await send('/stall');
    const failed = await stalled.forEachChunk(onChunk).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(TypeError);
    expect((failed as Error).message).toBe('the reader failed');
  });

  it('ends a peek when its wait has passed, says so, and replays what it read before the rest', async () => {
    const response = await send('/processing');
    let passed = 0;
    const head = await response.peek((received) => received.includes('data: '), {
      ms: 20,
      passed: () => passed++,
    });
    expect(head.toString()).toBe(': OPENROUTER PROCESSING\n\n');
    expect(passed).toBe(1);
    goOn();
    let all = '';
    await response.forEachChunk((chunk) => void (all += chunk.toString()));
    expect(all).toBe(': OPENROUTER PROCESSING\n\ndata: thought\n\ndata: [DONE]\n\n');
    expect(passed).toBe(1);
  });

  it('does not say a wait passed when the peek had enough first', async () => {
    const response = await send('/stream');
    let passed = 0;
    const head = await response.peek((received) => received.includes('\n\n'), {
      ms: 20,
      passed: () => passed++,
    });
    expect(head.toString()).toBe('data: one\n\n');
    // Past the wait, the body read to its end: the wait's timer went with the peek.
    await new Promise((resolve) => setTimeout(resolve, 60));
    await response.readAll();
    expect(passed).toBe(0);
  });

  it('hands back what the judge of a peek throws, as it is, and drops the body', async () => {
    const stalled = await send('/stall');
    const failed = await stalled
      .peek(() => {
        throw new TypeError('the judge failed');
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failed).toBeInstanceOf(TypeError);
    expect((failed as Error).message).toBe('the judge failed');
  });

  it('says when a body has been read to its end, and not for one that stalls', async () => {
    const ends: string[] = [];
    const whole = await send('/whole', baseUrl, 'u', () => ends.push('whole'));
    expect(ends).toEqual([]);
    await whole.readAll();
    const stream = await send('/stream', baseUrl, 'u', () => ends.push('stream'));
    await stream.peek((received) => received.includes('\n\n'));
    expect(ends).toEqual(['whole']);
    await stream.forEachChunk(() => undefined);
    expect(ends).toEqual(['whole', 'stream']);
    const stalled = await send('/stall', baseUrl, 'u', () => ends.push('stall'));
    expect(await codeOf(() => stalled.readAll())).toBe('upstream_timeout');
    expect(ends).toEqual(['whole', 'stream']);
  });

  it("waits for a body's first chunk as long as for its first byte, not the idle time", async () => {
    const thinker = createUndiciUpstream({ timeouts: { connectMs: 1_000, firstByteMs: 5_000, idleMs: 300 } });
    const response = await thinker.send({
      upstream: upstreamAt(baseUrl),
      method: 'GET',
      path: '/thinks',
      headers: {},
      signal: new EventEmitter(),
    });
    expect((await response.readAll()).toString()).toBe('data: thought\n\ndata: [DONE]\n\n');
    // The same silence after a chunk is a stall (the default timeouts: 300 ms each).
    expect(await codeOf(async () => (await send('/stall')).readAll())).toBe('upstream_timeout');
  });

  it('does not count as silence the time its own reader holds the body', async () => {
    const response = await send('/burst');
    const events: string[] = [];
    // A slow client: each chunk written takes longer than the idle time (300 ms) in all.
    await response.forEachChunk(async (chunk) => {
      events.push(chunk.toString());
      await new Promise((resolve) => setTimeout(resolve, 400));
    });
    expect(events.join('')).toContain('data: [DONE]');
  });

  it.each([
    [
      'nothing listens',
      'upstream_unreachable',
      async () => send('/whole', `http://127.0.0.1:${await findFreePort()}/v1`, 'closed'),
    ],
    ['no first byte in time', 'upstream_timeout', async () => send('/silent')],
    ['a body that stalls', 'upstream_timeout', async () => (await send('/stall')).readAll()],
  ] as const)('turns %s into %s', async (_name, code, action) => {
    expect(await codeOf(action)).toBe(code);
  });
});
