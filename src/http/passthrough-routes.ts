// Every other path under /v1 (embeddings, moderations, audio, images, files…): handed to the
// pass-through service as it arrives — bodies are not parsed in this scope, so uploads stream through —
// with the same authentication, timeouts, cancellation and metrics as chat.
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { noCredential } from '../auth/authenticate.js';
import type { PassthroughService } from '../chat/passthrough-service.js';
import type { UpstreamMethod } from '../upstream/upstream.js';
import { clientStreamFor, sseKeepalive } from './client-stream.js';
import { served } from './request-record.js';

export function registerPassthroughRoutes(
  app: FastifyInstance,
  deps: { passthrough: PassthroughService; streamKeepaliveMs?: number },
): void {
  const keepalive = { everyMs: deps.streamKeepaliveMs ?? 0, bytes: sseKeepalive };
  // In this scope bodies are not parsed: the service gets the request stream as it arrives.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/v1/*',
    async handler(request, reply) {
      await served(request.gateway, () =>
        deps.passthrough.forward(
          {
            method: request.method as UpstreamMethod,
            target: request.url,
            headers: request.headers,
            body: request.body as Readable | undefined,
            credential: request.gateway.credential ?? noCredential,
          },
          clientStreamFor(request, reply, keepalive),
        ),
      );
      return reply;
    },
  });
}
