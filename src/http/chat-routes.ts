// The OpenAI-compatible routes (README.md): chat completions and their preview (the gateway's work, done
// by the chat service), and the model list (one upstream's forwarded as is; several upstreams' gathered
// by the model list service). A route reads the request's headers into
// typed overrides once, hands the chat service a ClientStream, and nothing more.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { noCredential } from '../auth/authenticate.js';
import type { ChatInput, ChatService } from '../chat/chat-turn.js';
import type { Forwarder } from '../chat/forward-request.js';
import type { ModelListService } from '../chat/model-list.js';
import type { UpstreamConfig } from '../config/gateway-config.js';
import { countingBytesOf } from '../json-body.js';
import { clientStreamFor, sseKeepalive } from './client-stream.js';
import { applyOutcome, served } from './request-record.js';
import { parseRequestOverrides } from './request-overrides.js';

export interface ChatRouteDependencies {
  chat: ChatService;
  forwarder: Forwarder;
  models: ModelListService;
  defaultUpstream: UpstreamConfig;
  /** The upstreams the gateway routes to, the default one included. */
  upstreamCount: number;
  /** server.stream_keepalive_ms (none when not given). */
  streamKeepaliveMs?: number;
}

/** What a chat (or Responses) route hands its service: the request's body, headers and state. */
export function chatInput(request: FastifyRequest): ChatInput {
  return {
    body: request.body,
    rawBody: request.gateway.rawBody,
    countingBytes: countingBytesOf(request.gateway.rawBody),
    overrides: parseRequestOverrides(request.headers),
    credential: request.gateway.credential ?? noCredential,
    clientHeaders: request.headers,
    startedAtMs: request.gateway.startedAtMs,
    warn: (fields, message) => request.log.warn(fields, message),
    info: (fields, message) => request.log.info(fields, message),
  };
}

export function registerChatRoutes(app: FastifyInstance, deps: ChatRouteDependencies): void {
  app.post('/v1/chat/completions', async (request, reply) => {
    const input = chatInput(request);
    const client = clientStreamFor(request, reply, {
      everyMs: deps.streamKeepaliveMs ?? 0,
      bytes: sseKeepalive,
    });
    await served(request.gateway, () => deps.chat.complete(input, client));
    return reply;
  });

  app.post('/v1/context/render', async (request, reply) => {
    const { headers, body, outcome } = await deps.chat.preview(chatInput(request));
    applyOutcome(request.gateway, outcome);
    return reply.headers(headers).send(body);
  });

  const listInput = (request: FastifyRequest) => ({
    headers: request.headers,
    credential: request.gateway.credential ?? noCredential,
    warn: (fields: Record<string, unknown>, message: string) => request.log.warn(fields, message),
  });
  // One model, of several upstreams: asked of the one its name is routed to (with one, the pass-through
  // forwards it to the default upstream, as the list).
  if (deps.upstreamCount > 1)
    app.get('/v1/models/*', async (request, reply) => {
      const input = Object.assign(listInput(request), { target: request.url });
      await served(request.gateway, () => deps.models.retrieve(input, clientStreamFor(request, reply)));
      return reply;
    });

  app.get('/v1/models', async (request, reply) => {
    if (deps.upstreamCount > 1) {
      const input = listInput(request);
      await served(request.gateway, () => deps.models.list(input, clientStreamFor(request, reply)));
      return reply;
    }
    await served(request.gateway, async () => {
      const forwarded = await deps.forwarder.forward(
        {
          target: deps.defaultUpstream,
          method: 'GET',
          path: '/models',
          clientHeaders: request.headers,
          credential: request.gateway.credential ?? noCredential,
        },
        clientStreamFor(request, reply),
      );
      return { upstream: forwarded.upstream, streamErrorCode: forwarded.streamErrorCode };
    });
    return reply;
  });
}
