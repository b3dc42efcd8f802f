// An answer sent before the request body was read (413 for a body over the limit, 401 before the
// handler, a refusal while shutting down) would otherwise be followed by the server closing the
// connection while the client is still sending: the client then sees EPIPE or a reset instead of the
// answer. So the rest of the body is read and thrown away first — within a byte and a time bound, past
// which the connection is cut as before — and the answer goes out once the client has finished sending.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';

export interface DrainLimits {
  /** Bytes read and discarded at most; past them the connection is closed. */
  maxBytes: number;
  /** Time spent draining at most. */
  maxMs: number;
}

/** True when nothing of the request body is left to arrive. */
function bodyReceived(request: IncomingMessage): boolean {
  return request.complete || request.readableEnded || request.destroyed;
}

/** Resolves once the request body has ended (or the bounds are passed, or the client is gone). */
export function drainRequestBody(request: IncomingMessage, limits: DrainLimits): Promise<void> {
  if (bodyReceived(request)) return Promise.resolve();
  return new Promise((resolve) => {
    let received = 0;
    const finish = (): void => {
      clearTimeout(timer);
      request.off('data', onData);
      request.off('end', finish);
      request.off('close', finish);
      request.off('error', finish);
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limits.maxBytes) finish();
    };
    const timer = setTimeout(finish, limits.maxMs);
    timer.unref();
    request.on('data', onData);
    request.once('end', finish);
    request.once('close', finish);
    request.once('error', finish);
    request.resume();
  });
}

function earlyRefusalDrain(app: FastifyInstance, limits: DrainLimits): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    const raw = request.raw;
    if (bodyReceived(raw)) return done(null, payload);
    void drainRequestBody(raw, limits).then(() => {
      // Not all of it arrived within the bounds: this connection cannot carry another request.
      if (!bodyReceived(raw)) reply.header('connection', 'close');
      done(null, payload);
    });
  });
}

export const earlyRefusalDrainPlugin = fastifyPlugin(earlyRefusalDrain, {
  name: 'ctxgate-early-refusal-drain',
});
