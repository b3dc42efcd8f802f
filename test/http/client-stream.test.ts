// The ClientStream over a real fastify reply on loopback: a whole answer with the headers added before
// it, a stream that carries them too and its bytes in order, a slow reader's backpressure, and a client
// that leaves mid-stream — cancelled, and told to the request's record; an event stream kept from going
// silent between its events only.
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { clientStreamFor, sseKeepalive, type StreamKeepalive } from '../../src/http/client-stream.js';
import { createRequestState, type RequestState } from '../../src/http/request-record.js';
import type { ClientStream } from '../../src/upstream/relay.js';
import { gate } from '../helpers/fake-upstream.js';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** A server whose one route hands `serve` a ClientStream; the request's record is kept to look at. */
async function serving(
  serve: (client: ClientStream) => Promise<void>,
  keepalive?: StreamKeepalive,
): Promise<{ url: string; records: RequestState[] }> {
  const records: RequestState[] = [];
  app = Fastify();
  app.decorateRequest('gateway', null as unknown as RequestState);
  app.addHook('onRequest', (request, _reply, done) => {
    request.gateway = createRequestState(0);
    records.push(request.gateway);
    done();
  });
  app.get('/answer', async (request, reply) => {
    await serve(clientStreamFor(request, reply, keepalive));
    return reply;
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url: `${url}/answer`, records };
}

describe('the client stream', () => {
  it('sends a whole answer with the headers added before it', async () => {
    const { url } = await serving(async (client) => {
      client.addHeaders({ 'x-budget-remaining': '42' });
      await client.sendWhole(
        201,
        { 'content-type': 'application/json', 'x-upstream': 'yes' },
        Buffer.from('{"ok":1}'),
      );
    });
    const response = await fetch(url);
    expect(response.status).toBe(201);
    expect(response.headers.get('x-budget-remaining')).toBe('42');
    expect(response.headers.get('x-upstream')).toBe('yes');
    expect(await response.text()).toBe('{"ok":1}');
  });

  it('streams with the headers added before it, every byte in order, then the last ones', async () => {
    const { url } = await serving(async (client) => {
      client.addHeaders({ 'x-request-id': 'r-1' });
      client.openStream(200, { 'content-type': 'text/event-stream' });
      for (let index = 0; index < 50; index++) await client.write(`data: ${index}\n\n`);
      await client.write('');
      client.end('data: [DONE]\n\n');
    });
    const response = await fetch(url);
    expect(response.headers.get('x-request-id')).toBe('r-1');
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const expected =
      Array.from({ length: 50 }, (_unused, index) => `data: ${index}\n\n`).join('') + 'data: [DONE]\n\n';
    expect(await response.text()).toBe(expected);
  });

  it('makes a writer wait while a client does not read, and go on when it does', async () => {
    const chunk = 'x'.repeat(64 * 1024);
    let waited = 0;
    const { url } = await serving(async (client) => {
      client.openStream(200, { 'content-type': 'application/octet-stream' });
      for (let index = 0; index < 64; index++) {
        const pending = client.write(chunk);
        if (pending !== undefined) {
          waited++;
          await pending;
        }
      }
      client.end();
    });
    const response = await fetch(url);
    const body = await response.arrayBuffer();
    expect(body.byteLength).toBe(64 * chunk.length);
    expect(waited).toBeGreaterThan(0);
  });

  it('writes a keep-alive into a silent event stream, never inside an event, and none once it ended', async () => {
    const seen = gate();
    const { url } = await serving(
      async (client) => {
        client.openStream(200, { 'content-type': 'text/event-stream' });
        // Half an event, left silent for many keep-alive periods: nothing may cut it in two.
        await client.write('data: {"half":');
        await sleep(200);
        await client.write('1}\n\n');
        await seen.opened;
        client.end('data: [DONE]\n\n');
      },
      { everyMs: 20, bytes: sseKeepalive },
    );
    const response = await fetch(url);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.endsWith(sseKeepalive)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    seen.open();
    for (let read = await reader.read(); !read.done; read = await reader.read())
      text += decoder.decode(read.value, { stream: true });
    expect(text).toMatch(/^data: \{"half":1\}\n\n(?:: keepalive\n\n)+data: \[DONE\]\n\n$/);
  });

  it('writes none into a stream that is not an event stream, or with none asked for', async () => {
    for (const [contentType, everyMs] of [
      ['application/octet-stream', 20],
      ['text/event-stream', 0],
    ] as const) {
      const { url } = await serving(
        async (client) => {
          client.openStream(200, { 'content-type': contentType });
          await client.write('data: 1\n\n');
          await sleep(200);
          client.end('data: 2\n\n');
        },
        { everyMs, bytes: sseKeepalive },
      );
      expect(await (await fetch(url)).text()).toBe('data: 1\n\ndata: 2\n\n');
      await app?.close();
    }
  });

  it('is cancelled when the client leaves mid-stream, and the record says so', async () => {
    let cancelled = false;
    let writeFailed = false;
    const { url, records } = await serving(async (client) => {
      client.cancellation.once('abort', () => (cancelled = true));
      client.openStream(200, { 'content-type': 'text/event-stream' });
      await client.write('data: first\n\n');
      await once(client.cancellation, 'abort');
      await client.write('x'.repeat(1024 * 1024))?.catch(() => (writeFailed = true));
    });
    await new Promise<void>((resolve, reject) => {
      const outgoing = httpRequest(url, (response) => {
        response.once('data', () => {
          outgoing.destroy();
          resolve();
        });
      });
      outgoing.on('error', (error) => (error.message === 'socket hang up' ? resolve() : reject(error)));
      outgoing.end();
    });
    await expect.poll(() => cancelled).toBe(true);
    expect(records[0]?.clientAborted).toBe(true);
    await expect.poll(() => writeFailed).toBe(true);
  });
});
