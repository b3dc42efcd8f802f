// Every other path under /v1 (embeddings, moderations, audio, images, files, responses…): forwarded
// untouched to the upstream the body's `model` routes to (the default upstream for bodies that are not
// JSON), with the same authentication, timeouts, cancellation and metrics as chat. Bodies cross as
// they are: a JSON body is read (within the body limit) only to find its model, anything else streams
// through; answers stream back as they arrive.
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { noCredential } from '../auth/authenticate.js';
import type { Forwarder } from '../chat/forward-request.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { GatewayError } from '../errors.js';
import { firstHeaderValue } from '../header-value.js';
import { selectUpstream } from '../upstream/select-upstream.js';
import type { UpstreamMethod } from '../upstream/upstream.js';
import { clientStreamFor } from './client-stream.js';

/** What the gateway manages itself: never forwarded, whatever the method. */
const managedPrefixes = ['sessions', 'admin', 'context'];

/** A path below /v1 as the client sent it; undefined when it could climb out of the upstream's base. */
function forwardedPath(request: FastifyRequest): string | undefined {
  const rest = (request.params as { '*'?: string })['*'] ?? '';
  const segments = rest.split('/');
  if (managedPrefixes.includes(segments[0] ?? '')) return undefined;
  const control = [...rest].some((character) => character.charCodeAt(0) < 0x20);
  if (control || segments.some((segment) => segment === '..' || segment === '.')) return undefined;
  const query = request.url.indexOf('?');
  return `/${segments.map(encodeURIComponent).join('/')}${query === -1 ? '' : request.url.slice(query)}`;
}

/** The model a JSON body names, if any (the body is forwarded as these bytes either way). */
function modelOf(body: Buffer): string | undefined {
  try {
    const model = (JSON.parse(body.toString('utf8')) as { model?: unknown } | null)?.model;
    return typeof model === 'string' ? model : undefined;
  } catch {
    return undefined;
  }
}

async function readBounded(stream: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > limit)
      throw new GatewayError('request_too_large', 'The request body is larger than the gateway accepts.');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function registerPassthroughRoutes(
  app: FastifyInstance,
  deps: { config: GatewayConfig; forwarder: Forwarder },
): void {
  // In this scope bodies are not parsed: the route gets the request stream as it arrives.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/v1/*',
    async handler(request, reply) {
      const path = forwardedPath(request);
      if (path === undefined)
        throw new GatewayError(
          'not_found',
          `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`,
        );
      const contentType = firstHeaderValue(request.headers['content-type']);
      const contentLength = firstHeaderValue(request.headers['content-length']);
      const stream = request.body as Readable | undefined;
      let body: Buffer | Readable | undefined = stream;
      let target = deps.config.defaultUpstream;
      if (stream !== undefined && contentType !== undefined && /^application\/json\b/i.test(contentType)) {
        body = await readBounded(stream, deps.config.server.body_limit_bytes);
        const model = modelOf(body);
        if (model !== undefined) {
          request.gateway.model = model;
          target = selectUpstream(deps.config.upstreams, model);
        }
      }
      const bodyHeaders: Record<string, string> = {};
      if (contentType !== undefined) bodyHeaders['content-type'] = contentType;
      if (Buffer.isBuffer(body)) bodyHeaders['content-length'] = String(body.length);
      else if (body !== undefined && contentLength !== undefined)
        bodyHeaders['content-length'] = contentLength;
      await deps.forwarder.forward(
        {
          target,
          method: request.method as UpstreamMethod,
          path,
          body: request.method === 'GET' || request.method === 'DELETE' ? undefined : body,
          bodyHeaders,
          streamBody: true,
          clientHeaders: request.headers,
          credential: request.gateway.credential ?? noCredential,
          record: request.gateway,
        },
        clientStreamFor(request, reply),
      );
      return reply;
    },
  });
}
