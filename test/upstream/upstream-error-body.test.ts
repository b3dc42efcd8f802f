// An upstream's refusal in the client's shape (docs/budgeting.md#an-upstreams-error-body): the provider's
// words read from the shapes providers answer in, and OpenAI's shape left as it came.
import { describe, expect, it } from 'vitest';
import {
  streamedErrorOf,
  maxReshapedErrorBytes,
  upstreamErrorFacts,
  withOpenAIErrorShape,
} from '../../src/upstream/upstream-error-body.js';

const reshaped = (body: string) => JSON.parse(withOpenAIErrorShape(Buffer.from(body)).toString('utf8'));

describe('upstreamErrorFacts', () => {
  it.each([
    [
      'Cloudflare Workers AI (a list of errors)',
      {
        errors: [{ message: "AiError: Bad input: Error: oneOf at '/' not met", code: 5006 }],
        success: false,
      },
      { message: "AiError: Bad input: Error: oneOf at '/' not met", code: 5006 },
    ],
    [
      'Bedrock (its exception type)',
      { message: 'Malformed input request', __type: 'ValidationException' },
      { message: 'Malformed input request', type: 'ValidationException' },
    ],
    [
      'xinference (a FastAPI detail)',
      { detail: 'Model not found in the model list' },
      { message: 'Model not found in the model list' },
    ],
    [
      "Anthropic's own shape",
      { type: 'error', error: { type: 'invalid_request_error', message: 'x' } },
      { message: 'x', type: 'invalid_request_error' },
    ],
  ])('%s', (_name, body, facts) => {
    expect(upstreamErrorFacts(body)).toEqual(facts);
  });

  it.each([
    ['nothing readable', { ok: false }],
    ['an empty message', { message: '  ' }],
    ['an array of no object', ['x']],
    ['not an object', 'Bad Request'],
  ])('says nothing of %s', (_name, body) => {
    expect(upstreamErrorFacts(body)).toBeUndefined();
  });
});

describe('streamedErrorOf', () => {
  it.each([
    [{ error: { code: 400, message: 'Too long.' } }, { message: 'Too long.', code: 400 }],
    [
      { object: 'error', message: 'Too long.', type: 'BadRequestError', code: 400 },
      { message: 'Too long.', type: 'BadRequestError', code: 400 },
    ],
    [{ error: 'Input validation error' }, { message: 'Input validation error' }],
    [{ error: {} }, { message: 'The upstream failed.' }],
    [{ error: null, choices: [] }, undefined],
    [{ choices: [{ delta: { content: 'error' } }] }, undefined],
  ])('%j: %j', (chunk, facts) => {
    expect(streamedErrorOf(chunk)).toEqual(facts);
  });
});

describe('withOpenAIErrorShape', () => {
  it.each([
    [
      "OpenAI's own shape",
      '{"error":{"message":"Invalid value","type":"invalid_request_error","param":"x","code":null}}',
    ],
    ['a proxy page (not JSON)', '<html><body>502 Bad Gateway</body></html>'],
    ['JSON of nothing readable', '{"ok":false}'],
  ])('leaves %s as it came, byte for byte', (_name, body) => {
    const given = Buffer.from(body);
    expect(withOpenAIErrorShape(given)).toBe(given);
  });

  it("writes Google's array as OpenAI's error, its status as the type and the body beside", () => {
    const body =
      '[{"error":{"code":400,"message":"Corrupted thought signature.","status":"INVALID_ARGUMENT"}}]';
    expect(reshaped(body)).toEqual({
      error: {
        message: 'Corrupted thought signature.',
        type: 'INVALID_ARGUMENT',
        param: null,
        code: 400,
        upstream: JSON.parse(body),
      },
    });
  });

  it('leaves a body larger than it reads as it came, and a deeply nested one', () => {
    const large = Buffer.from(JSON.stringify({ message: 'x'.repeat(maxReshapedErrorBytes) }));
    expect(withOpenAIErrorShape(large)).toBe(large);
    const deep = Buffer.from('['.repeat(500_000) + ']'.repeat(500_000));
    expect(withOpenAIErrorShape(deep)).toBe(deep);
  });
});
