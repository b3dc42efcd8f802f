// What a failed request had done travels on its error: each step that passes the error on adds its own
// account under what an inner step already said (the upstream tally of the exchange wins over nothing,
// the turn's context over the request's).
import { describe, expect, it } from 'vitest';
import { outcomeOf, withOutcome } from '../../src/chat/request-outcome.js';
import { GatewayError } from '../../src/errors.js';

const tally = { name: 'primary', status: 503, ms: 12, attempts: 3, errorCause: 'ECONNRESET: socket hang up' };

describe('an outcome on an error', () => {
  it('is empty on an error no step annotated, and on what is not an object', () => {
    expect(outcomeOf(new Error('plain'))).toEqual({});
    expect(outcomeOf('a string')).toEqual({});
    expect(outcomeOf(undefined)).toEqual({});
    expect(withOutcome('a string', { model: 'm' })).toBe('a string');
  });

  it('keeps what inner steps said when outer ones add theirs, on the same error', () => {
    const error = new GatewayError('upstream_unreachable', 'The upstream could not be reached.');
    expect(withOutcome(error, { upstream: tally })).toBe(error);
    withOutcome(error, { context: undefined, fallback: 'big-model', upstream: undefined });
    withOutcome(error, { model: 'small-model', stream: true, session: 'abc', fallback: 'other' });
    expect(outcomeOf(error)).toEqual({
      model: 'small-model',
      stream: true,
      session: 'abc',
      context: undefined,
      fallback: 'big-model',
      upstream: tally,
    });
  });

  it('is not part of what the error shows: not enumerable, not serialized', () => {
    const error = withOutcome(new GatewayError('invalid_request', 'Bad.'), { model: 'm' }) as object;
    expect(Object.keys(error)).not.toContain('model');
    expect(JSON.stringify(error)).not.toContain('"m"');
  });
});
