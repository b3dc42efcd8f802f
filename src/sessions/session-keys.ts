// Which session a request may use (docs/sessions.md): the session id's shape, and the key a caller's credential
// gives it. Sessions belong to a credential, so a caller that presented none (pass-through mode) holds
// none unless the config names an anonymous tenant.
import type { Credential } from '../auth/authenticate.js';
import { GatewayError } from '../errors.js';
import type { SessionKey } from '../store/session-store.js';

/** What a session id may be (README.md): the header and the sessions API path alike. */
export const sessionIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

export function sessionKeyFor(credential: Credential | undefined, sessionId: string): SessionKey {
  if (credential === undefined || !credential.mayHoldSessions) {
    throw new GatewayError(
      'session_requires_credential',
      'Sessions belong to a credential: send your API key (Authorization, api-key or x-api-key) with the request, or have the gateway configured with sessions.anonymous_tenant.',
      { param: 'x-session-id' },
    );
  }
  return { tenantId: credential.tenantId, sessionId };
}

export function storeUnavailable(cause: unknown): GatewayError {
  return new GatewayError(
    'session_store_unavailable',
    'The session store is unavailable; retry shortly. Requests without X-Session-Id are not affected.',
    { cause },
  );
}
