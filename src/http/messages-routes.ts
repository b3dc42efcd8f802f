// Anthropic's Messages API (docs/anthropic.md): POST /v1/messages and /v1/messages/count_tokens, bridged
// onto the chat engine by the messages service. Errors on these routes are in Anthropic's shape
// (error-handler.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { MessagesInput, MessagesService } from '../messages/messages-service.js';
import { chatInput } from './chat-routes.js';
import { clientStreamFor, messagesKeepalive } from './client-stream.js';
import { applyOutcome, served } from './request-record.js';

const messagesInput = (request: FastifyRequest): MessagesInput => chatInput(request);

/** True for the routes that answer in Anthropic's wire format, errors included. */
export function isMessagesRoute(url: string): boolean {
  return url === '/v1/messages' || url.startsWith('/v1/messages?') || url.startsWith('/v1/messages/');
}

export function registerMessagesRoutes(
  app: FastifyInstance,
  deps: { messages: MessagesService; streamKeepaliveMs?: number },
): void {
  const keepalive = { everyMs: deps.streamKeepaliveMs ?? 0, bytes: messagesKeepalive };
  app.post('/v1/messages', async (request, reply) => {
    await served(request.gateway, () =>
      deps.messages.create(messagesInput(request), clientStreamFor(request, reply, keepalive)),
    );
    return reply;
  });
  app.post('/v1/messages/count_tokens', async (request) => {
    const { body, outcome } = await deps.messages.countTokens(messagesInput(request));
    applyOutcome(request.gateway, outcome);
    return body;
  });
}
