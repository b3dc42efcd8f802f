// The gateway's one error family (errors.ts): each code's status and OpenAI type from one table, the
// body a client receives in OpenAI's shape, and recognition by code — an error that crossed a module
// boundary still counts, an object that merely looks like one with an unknown code does not.
import { describe, expect, it } from 'vitest';
import { errorCodes, GatewayError, isGatewayError, toOpenAIErrorBody } from '../src/errors.js';

describe('gateway errors', () => {
  it.each([
    ['invalid_header', 400, 'invalid_request_error'],
    ['missing_api_key', 401, 'authentication_error'],
    ['provider_state_not_shared', 403, 'permission_error'],
    ['session_busy', 409, 'invalid_request_error'],
    ['budget_exceeded', 429, 'rate_limit_error'],
    ['upstream_bad_response', 502, 'server_error'],
    ['upstream_timeout', 504, 'server_error'],
  ] as const)('%s is a %i %s', (code, status, type) => {
    const error = new GatewayError(code, 'Something.', {
      param: 'x-session-id',
      headers: { 'retry-after': '1' },
    });
    expect(error.status).toBe(status);
    expect(toOpenAIErrorBody(error)).toEqual({
      error: { message: 'Something.', type, param: 'x-session-id', code },
    });
    expect(error.headers).toEqual({ 'retry-after': '1' });
  });

  it('has a param of null unless one is named, and keeps its cause', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new GatewayError('upstream_unreachable', 'The upstream could not be reached.', { cause });
    expect(toOpenAIErrorBody(error).error.param).toBeNull();
    expect(error.cause).toBe(cause);
  });

  it.each<[string, unknown, boolean]>([
    ['a GatewayError', new GatewayError('not_found', 'Nope.'), true],
    [
      'one that crossed a boundary (a plain copy)',
      { ...new GatewayError('not_found', 'Nope.'), name: 'GatewayError' },
      true,
    ],
    ['a look-alike with an unknown code', { name: 'GatewayError', code: 'toString' }, false],
    ['a plain Error', new Error('x'), false],
    ['null', null, false],
  ])('tells %s: %s', (_name, value, expected) => {
    expect(isGatewayError(value)).toBe(expected);
  });

  it('gives every code a 4xx or 5xx status', () => {
    for (const { status } of Object.values(errorCodes)) expect(status >= 400 && status < 600).toBe(true);
  });
});
