// The Responses API (SPEC §3): POST /v1/responses bridged onto Chat Completions by the responses service,
// and the stored responses of the caller's tenant — read, deleted, their input items, and the token
// count of a request without sending it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { noCredential } from '../auth/authenticate.js';
import type { ResponsesInput, ResponsesService } from '../responses/responses-service.js';
import { chatInput } from './chat-routes.js';
import { clientStreamFor } from './client-stream.js';

/** The Responses service takes what the chat service takes; its body is a Responses request. */
const responsesInput = (request: FastifyRequest): ResponsesInput => ({
  ...chatInput(request),
  rawBody: undefined,
});

const tenantOf = (request: FastifyRequest): string => (request.gateway.credential ?? noCredential).tenantId;

export function registerResponsesRoutes(app: FastifyInstance, deps: { responses: ResponsesService }): void {
  const { responses } = deps;
  app.post('/v1/responses', async (request, reply) => {
    await responses.create(responsesInput(request), clientStreamFor(request, reply));
    return reply;
  });

  app.post('/v1/responses/input_tokens', async (request) => responses.inputTokens(responsesInput(request)));

  app.get<{ Params: { id: string } }>('/v1/responses/:id', async (request) =>
    responses.retrieve(tenantOf(request), request.params.id),
  );

  app.delete<{ Params: { id: string } }>('/v1/responses/:id', async (request) =>
    responses.remove(tenantOf(request), request.params.id),
  );

  app.get<{
    Params: { id: string };
    Querystring: { after?: string; limit?: string; order?: string };
  }>('/v1/responses/:id/input_items', async (request) => {
    const { after, limit, order } = request.query;
    return responses.inputItems(tenantOf(request), request.params.id, {
      after,
      limit: limit === undefined ? undefined : Number(limit) || undefined,
      order: order === 'asc' ? 'asc' : 'desc',
    });
  });
}
