// Client authentication. With gateway keys configured, a client must present one of them and the
// upstream only ever sees its configured key; without them, the client's own Authorization passes
// through. Either way the request gets a tenant id derived from the credential, never the credential.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { gatewayKeyTenantId, passThroughTenantId, sha256 as digest } from '../config/tenant-id.js';
import { GatewayError } from '../errors.js';

export interface Credential {
  mode: 'gateway_key' | 'pass_through';
  /** Stable, non-reversible id used to namespace sessions and budgets per caller. */
  tenantId: string;
}

/**
 * The digest of the key an `Authorization: Bearer <key>` header presents when it is one of
 * `keyDigests`, else undefined. Digests are compared in constant time, so response timing reveals
 * nothing about the keys.
 */
export function presentedKey(keyDigests: readonly Buffer[], authorization: string): Buffer | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
  const presented = digest(match?.[1]?.trim() ?? '');
  return keyDigests.some((candidate) => timingSafeEqual(candidate, presented)) ? presented : undefined;
}

export interface Authenticator {
  authenticate(headers: IncomingHttpHeaders): Credential;
}

export function createAuthenticator({
  gatewayApiKeys,
}: {
  gatewayApiKeys: readonly string[];
}): Authenticator {
  const keyDigests = gatewayApiKeys.map(digest);
  return {
    authenticate(headers) {
      const authorization = headers.authorization;
      if (keyDigests.length === 0) {
        const tenantId = authorization === undefined ? 'anonymous' : passThroughTenantId(authorization);
        return { mode: 'pass_through', tenantId };
      }
      if (authorization === undefined || authorization.trim() === '') {
        throw new GatewayError(
          'missing_api_key',
          "You didn't provide an API key. Send your gateway key in an Authorization header: 'Authorization: Bearer YOUR_KEY'.",
        );
      }
      const presented = presentedKey(keyDigests, authorization);
      if (presented === undefined) throw new GatewayError('invalid_api_key', 'Incorrect API key provided.');
      return { mode: 'gateway_key', tenantId: gatewayKeyTenantId(presented) };
    },
  };
}
