// A session belongs to a credential: its key is the caller's tenant and the session id; a caller that
// may hold no sessions is refused in the OpenAI shape, naming the header.
import { describe, expect, it } from 'vitest';
import { sessionKeyFor } from '../../src/sessions/session-keys.js';
import { isGatewayError } from '../../src/errors.js';

describe('sessionKeyFor', () => {
  it('is the tenant and the session id', () => {
    expect(sessionKeyFor({ mode: 'gateway_key', tenantId: 'gk-1', mayHoldSessions: true }, 's-1')).toEqual({
      tenantId: 'gk-1',
      sessionId: 's-1',
    });
  });

  it.each([
    ['no credential at all', undefined],
    [
      'a caller with no credential and no anonymous tenant',
      { mode: 'none' as const, tenantId: 'anonymous', mayHoldSessions: false },
    ],
  ])('refuses %s with 400 session_requires_credential', (_name, credential) => {
    let error: unknown;
    try {
      sessionKeyFor(credential, 's-1');
    } catch (caught) {
      error = caught;
    }
    expect(isGatewayError(error) && [error.status, error.code, error.param]).toEqual([
      400,
      'session_requires_credential',
      'x-session-id',
    ]);
  });
});
