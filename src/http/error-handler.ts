// Turns anything thrown while serving a request into an OpenAI-shaped error body with the right status.
// Gateway errors carry their own code; fastify's parser errors are mapped; anything else is a 500 whose
// details go to the log, never to the client.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { causeOf, GatewayError, isGatewayError, toOpenAIErrorBody } from '../errors.js';
import { anthropicErrorBody } from '../messages/answer.js';
import { isMessagesRoute } from './messages-routes.js';

const fastifyCodes: Record<string, () => GatewayError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () =>
    new GatewayError('request_too_large', 'The request body is larger than the gateway accepts.'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new GatewayError('invalid_request', 'The Content-Length header does not match the body.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () =>
    new GatewayError('invalid_json', 'The request body is empty; expected a JSON object.'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    new GatewayError('unsupported_media_type', 'Unsupported Content-Type; send application/json.'),
  FST_ERR_CTP_INVALID_CONTENT_TYPE: () =>
    new GatewayError('unsupported_media_type', 'Invalid Content-Type header.'),
};

export function toGatewayError(error: unknown): GatewayError {
  if (isGatewayError(error)) return error;
  const fastifyError = error as Partial<FastifyError> | null;
  const mapped = typeof fastifyError?.code === 'string' ? fastifyCodes[fastifyError.code] : undefined;
  if (mapped !== undefined) return mapped();
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new GatewayError('invalid_request', 'The request could not be read.', { cause: error });
  }
  return new GatewayError('internal_error', 'The gateway failed to process the request.', { cause: error });
}

export function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const gatewayError = toGatewayError(error);
  request.gateway.errorCode = gatewayError.code;
  // Why the session store failed, in Redis's own words (OOM past maxmemory, READONLY after a failover, a
  // refused connection), on the request's line: the client is told only to retry.
  if (gatewayError.code === 'session_store_unavailable') request.gateway.errorCause ??= causeOf(gatewayError);
  if (gatewayError.param !== null) request.gateway.errorParam = gatewayError.param;
  if (gatewayError.code === 'internal_error') {
    // The one place an unexpected error is logged, with its stack; the client gets only the code.
    request.log.error({ err: error }, 'unexpected error');
  }
  if (gatewayError.headers !== undefined) reply.headers(gatewayError.headers);
  // Anthropic's Messages routes answer in Anthropic's error shape (docs/anthropic.md#errors).
  const body = isMessagesRoute(request.url)
    ? anthropicErrorBody(gatewayError.status, gatewayError.message, undefined, gatewayError.details)
    : toOpenAIErrorBody(gatewayError);
  return reply.code(gatewayError.status).type('application/json').send(body);
}
