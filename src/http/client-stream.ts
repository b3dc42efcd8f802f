// The ClientStream port over a fastify reply: whole answers through fastify (its hooks and headers
// apply), streams on the raw response with backpressure. The client going away before its answer has
// ended cancels the upstream call, before or after the upstream's first byte, so nothing keeps
// generating and billing for an answer nobody will read.
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClientStream } from '../upstream/relay.js';

class ClientCancellation extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

function waitForDrain(raw: ServerResponse): Promise<void> {
  // A connection already gone drains and closes no more: waiting for either would never end.
  if (raw.destroyed) return Promise.reject(new Error('client closed the connection'));
  return new Promise((resolve, reject) => {
    const drained = (): void => {
      raw.off('close', closed);
      resolve();
    };
    const closed = (): void => {
      raw.off('drain', drained);
      reject(new Error('client closed the connection'));
    };
    raw.once('drain', drained);
    raw.once('close', closed);
  });
}

export function clientStreamFor(request: FastifyRequest, reply: FastifyReply): ClientStream {
  const cancellation = new ClientCancellation();
  const raw = reply.raw;
  raw.once('close', () => {
    if (!raw.writableEnded) {
      request.gateway.clientAborted = true;
      cancellation.abort();
    }
  });
  return {
    cancellation,
    addHeaders(headers) {
      reply.headers(headers);
    },
    async sendWhole(status, headers, body) {
      // Not awaited: a route's body is read before its handler runs, so the answer is handed to the
      // socket at once; awaiting the reply (a thenable) would only add promises to every request.
      reply.code(status).headers(headers).send(body);
    },
    openStream(status, headers) {
      reply.hijack();
      // What the reply already carries (the request id, budget headers) goes out too.
      raw.writeHead(status, Object.assign({}, reply.getHeaders() as Record<string, string>, headers));
    },
    write(bytes) {
      if (bytes.length > 0 && !raw.write(bytes)) return waitForDrain(raw);
      return undefined;
    },
    end(last) {
      if (last !== undefined) raw.write(last);
      raw.end();
    },
    destroy() {
      if (!reply.sent) reply.hijack();
      raw.destroy();
    },
  };
}
