// The Responses API (README.md): POST /v1/responses bridged onto Chat Completions by the responses service,
// and the stored responses of the caller's tenant — read, deleted, their input items, and the token
// count of a request without sending it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { noCredential } from '../auth/authenticate.js';
import { GatewayError } from '../errors.js';
import type { ResponsesInput, ResponsesService } from '../responses/responses-service.js';
import { chatInput } from './chat-routes.js';
import { clientStreamFor, sseKeepalive } from './client-stream.js';
import { applyOutcome, served } from './request-record.js';

/** The Responses service takes what the chat service takes; its body is a Responses request. */
const responsesInput = (request: FastifyRequest): ResponsesInput => chatInput(request);

const tenantOf = (request: FastifyRequest): string => (request.gateway.credential ?? noCredential).tenantId;

/** A response id as the gateway makes them (`resp_…`), at most 128 characters: anything else is a 400. */
const responseIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

function idOf(request: FastifyRequest<{ Params: { id: string } }>): string {
  const { id } = request.params;
  if (!responseIdPattern.test(id))
    throw new GatewayError('invalid_request', 'Invalid response id.', { param: 'response_id' });
  return id;
}

export function registerResponsesRoutes(
  app: FastifyInstance,
  deps: { responses: ResponsesService; streamKeepaliveMs?: number },
): void {
  const { responses } = deps;
  const keepalive = { everyMs: deps.streamKeepaliveMs ?? 0, bytes: sseKeepalive };
  app.post('/v1/responses', async (request, reply) => {
    await served(request.gateway, () =>
      responses.create(responsesInput(request), clientStreamFor(request, reply, keepalive)),
    );
    return reply;
  });

  // The Responses API's WebSocket mode is not served: a client that opens one (Codex with its own OpenAI
  // provider) is answered 426, on which Codex goes over HTTP at once instead of retrying the socket five
  // times (docs/responses.md#websocket-mode). Any other GET of this path is the unknown URL it always was.
  app.get('/v1/responses', async (request) => {
    if (String(request.headers.upgrade ?? '').toLowerCase() !== 'websocket')
      throw new GatewayError('not_found', 'Unknown request URL: GET /v1/responses.');
    throw new GatewayError(
      'websocket_not_supported',
      'ctxgate serves the Responses API over HTTP only: send the request as POST /v1/responses.',
    );
  });

  app.post('/v1/responses/compact', async (request, reply) => {
    await served(request.gateway, () =>
      responses.compact(responsesInput(request), clientStreamFor(request, reply, keepalive)),
    );
    return reply;
  });

  app.post('/v1/responses/input_tokens', async (request) => {
    const { body, outcome } = await responses.inputTokens(responsesInput(request));
    applyOutcome(request.gateway, outcome);
    return body;
  });

  // The tenant's chains for the inspector (docs/inspector.md); a static path, matched before an id.
  app.get<{ Querystring: { offset?: string; limit?: string } }>('/v1/responses/chains', async (request) => {
    const offset = Math.max(0, Number(request.query.offset) || 0);
    const limit = Math.min(100, Math.max(1, Number(request.query.limit) || 20));
    return responses.chains(tenantOf(request), { offset, limit });
  });

  app.get<{ Params: { id: string } }>('/v1/responses/:id', async (request) =>
    responses.retrieve(tenantOf(request), idOf(request)),
  );

  app.delete<{ Params: { id: string } }>('/v1/responses/:id', async (request) =>
    responses.remove(tenantOf(request), idOf(request)),
  );

  app.get<{
    Params: { id: string };
    Querystring: { after?: string; limit?: string; order?: string };
  }>('/v1/responses/:id/input_items', async (request) => {
    const { after, limit, order } = request.query;
    return responses.inputItems(tenantOf(request), idOf(request), {
      after,
      limit: limit === undefined ? undefined : Number(limit) || undefined,
      order: order === 'asc' ? 'asc' : 'desc',
    });
  });
}
