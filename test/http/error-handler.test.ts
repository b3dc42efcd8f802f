// Anything thrown while serving a request, as the gateway error the client is answered with: the
// gateway's own errors as they are, fastify's parser errors mapped to their codes, other client errors
// as invalid_request, and everything else as internal_error — whose details never reach the client.
import { describe, expect, it } from 'vitest';
import { GatewayError, toOpenAIErrorBody } from '../../src/errors.js';
import { toGatewayError } from '../../src/http/error-handler.js';

const fastifyError = (code: string, statusCode: number) =>
  Object.assign(new Error(`fastify says ${code}`), { code, statusCode });

describe('toGatewayError', () => {
  it('keeps a gateway error as it is', () => {
    const error = new GatewayError('session_busy', 'The session is busy.');
    expect(toGatewayError(error)).toBe(error);
  });

  it.each<[string, unknown, string, number]>([
    ['a body over the limit', fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413), 'request_too_large', 413],
    [
      'a Content-Length that lies',
      fastifyError('FST_ERR_CTP_INVALID_CONTENT_LENGTH', 400),
      'invalid_request',
      400,
    ],
    ['an empty JSON body', fastifyError('FST_ERR_CTP_EMPTY_JSON_BODY', 400), 'invalid_json', 400],
    [
      'a media type nobody parses',
      fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415),
      'unsupported_media_type',
      415,
    ],
    [
      'a malformed Content-Type',
      fastifyError('FST_ERR_CTP_INVALID_CONTENT_TYPE', 415),
      'unsupported_media_type',
      415,
    ],
    ['another client error', fastifyError('FST_ERR_SOMETHING_NEW', 422), 'invalid_request', 400],
    [
      'a programming error',
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      'internal_error',
      500,
    ],
    ['a server-side fastify error', fastifyError('FST_ERR_SOMETHING_ELSE', 500), 'internal_error', 500],
    ['something that is not an error', 'a string', 'internal_error', 500],
    ['nothing at all', null, 'internal_error', 500],
  ])('answers %s as %s (%i)', (_name, thrown, code, status) => {
    const mapped = toGatewayError(thrown);
    expect(mapped.code).toBe(code);
    expect(mapped.status).toBe(status);
    // What the client reads says nothing of the original error.
    const body = JSON.stringify(toOpenAIErrorBody(mapped));
    expect(body).not.toContain('fastify says');
    expect(body).not.toContain('Cannot read properties');
  });
});
