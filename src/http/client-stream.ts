// The ClientStream port over a fastify reply: whole answers through fastify (its hooks and headers
// apply), streams on the raw response with backpressure. The client going away before its answer has
// ended cancels the upstream call, before or after the upstream's first byte, so nothing keeps
// generating and billing for an answer nobody will read. An open event stream never stays silent longer
// than `server.stream_keepalive_ms`: a keep-alive in the client's dialect is written at an event boundary,
// so that a load balancer or proxy in front (AWS's ALB and nginx cut a connection silent for 60 s) does not
// cut an answer the upstream is still thinking, or the gateway still holding (docs/configuration.md).
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClientStream } from '../upstream/relay.js';
import { endsAtEventBoundary, isEventStream } from '../upstream/sse.js';

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

/** What a Chat Completions or Responses client (and any other SSE reader) skips: a comment. */
export const sseKeepalive = ': keepalive\n\n';
/** What Anthropic itself sends a Messages client while it works, and its SDKs skip. */
export const messagesKeepalive = 'event: ping\ndata: {"type":"ping"}\n\n';

/** How an open event stream is kept from going silent: at most `everyMs` of silence (0: never), then `bytes`. */
export interface StreamKeepalive {
  everyMs: number;
  bytes: string;
}

/**
 * Writes `keepalive.bytes` whenever the stream was silent for half of `everyMs` to `everyMs` — checked on a
 * timer at half the period, each write only setting a flag — unless the last bytes written left an event
 * open or the client is not taking what it was sent (backpressure). Returns what marks a write, and the stop.
 */
function keepingAlive(
  raw: ServerResponse,
  keepalive: StreamKeepalive,
): { wrote(bytes: Buffer | string): void; stop(): void } {
  let silent = true;
  let atBoundary = true;
  const timer = setInterval(
    () => {
      if (!silent) silent = true;
      else if (atBoundary && !raw.writableNeedDrain && !raw.writableEnded && !raw.destroyed)
        raw.write(keepalive.bytes);
    },
    Math.max(1, Math.floor(keepalive.everyMs / 2)),
  );
  timer.unref();
  return {
    wrote(bytes) {
      silent = false;
      atBoundary = endsAtEventBoundary(bytes);
    },
    stop: () => clearInterval(timer),
  };
}

export function clientStreamFor(
  request: FastifyRequest,
  reply: FastifyReply,
  keepalive: StreamKeepalive = { everyMs: 0, bytes: sseKeepalive },
): ClientStream {
  const cancellation = new ClientCancellation();
  const raw = reply.raw;
  let alive: ReturnType<typeof keepingAlive> | undefined;
  raw.once('close', () => {
    alive?.stop();
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
      const sent = Object.assign({}, reply.getHeaders() as Record<string, string>, headers);
      raw.writeHead(status, sent);
      if (keepalive.everyMs > 0 && isEventStream(sent)) alive = keepingAlive(raw, keepalive);
    },
    write(bytes) {
      if (bytes.length === 0) return undefined;
      alive?.wrote(bytes);
      return raw.write(bytes) ? undefined : waitForDrain(raw);
    },
    end(last) {
      alive?.stop();
      if (last !== undefined) raw.write(last);
      raw.end();
    },
    destroy() {
      alive?.stop();
      if (!reply.sent) reply.hijack();
      raw.destroy();
    },
  };
}
