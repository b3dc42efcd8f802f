// Client authentication. With gateway keys configured, a client must present one of them and the
// upstream only ever sees its configured key; without them, the client's own credential passes through
// (Authorization, or Azure-style api-key / x-api-key). Either way the request gets a tenant id derived
// from the credential, never the credential itself: sessions and budgets are namespaced by it.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { gatewayKeyTenantId, passThroughTenantId, sha256 as digest } from '../config/tenant-id.js';
import { GatewayError } from '../errors.js';
import { firstHeaderValue } from '../header-value.js';

/** The headers a client may carry its upstream credential in, as providers accept them. */
export const passThroughCredentialHeaders = ['authorization', 'api-key', 'x-api-key'] as const;

export interface Credential {
  /**
   * gateway_key: one of the gateway's keys was checked. pass_through: the client's own upstream
   * credential goes upstream unchecked. none: a pass-through caller that presented no credential.
   */
  mode: 'gateway_key' | 'pass_through' | 'none';
  /** Stable, non-reversible id used to namespace sessions and budgets per caller. */
  tenantId: string;
  /** False for a caller with no credential unless the config names an anonymous tenant. */
  mayHoldSessions: boolean;
}

/** The tenant id of callers with no credential: budgets count them together; sessions need a name. */
export const anonymousTenantId = 'anonymous';

/** The credential of a request that reached no authentication (none is needed to hold it). */
export const noCredential: Credential = Object.freeze({
  mode: 'none',
  tenantId: anonymousTenantId,
  mayHoldSessions: false,
});

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

function firstValue(value: string | string[] | undefined): string | undefined {
  const text = firstHeaderValue(value)?.trim();
  return text === undefined || text === '' ? undefined : text;
}

/**
 * The secrets a pass-through caller presents, each once: the token of a Bearer Authorization (the whole
 * value of any other scheme) and the api-key / x-api-key values. The same key sent in another header is
 * the same caller.
 */
export function presentedSecrets(headers: IncomingHttpHeaders): string[] {
  const secrets = new Set<string>();
  for (const name of passThroughCredentialHeaders) {
    const value = firstValue(headers[name]);
    if (value === undefined) continue;
    const bearer = name === 'authorization' ? /^Bearer\s+(.+)$/i.exec(value)?.[1]?.trim() : undefined;
    secrets.add(bearer ?? value);
  }
  return [...secrets].sort();
}

export interface Authenticator {
  /** The caller's credential; throws 401 in gateway-key mode when the key is missing or wrong. */
  authenticate(headers: IncomingHttpHeaders): Credential;
}

export function createAuthenticator({
  gatewayApiKeys,
  anonymousTenant,
}: {
  gatewayApiKeys: readonly string[];
  /** The config's name for callers with no credential; empty: such callers hold no sessions. */
  anonymousTenant: string;
}): Authenticator {
  const keyDigests = gatewayApiKeys.map(digest);
  // A pass-through caller's tenant id is a digest of its secrets: computed once per caller, not per
  // request. Bounded, and held only in this process (like the secrets while a request is served).
  const tenantIds = new Map<string, string>();
  const tenantIdOf = (secrets: readonly string[]): string => {
    const joined = secrets.join('\n');
    let tenantId = tenantIds.get(joined);
    if (tenantId === undefined) {
      if (tenantIds.size >= 1_024) tenantIds.clear();
      tenantId = passThroughTenantId(secrets);
      tenantIds.set(joined, tenantId);
    }
    return tenantId;
  };
  const anonymous: Credential =
    anonymousTenant === ''
      ? noCredential
      : { mode: 'none', tenantId: `an-${anonymousTenant}`, mayHoldSessions: true };
  return {
    authenticate(headers) {
      if (keyDigests.length === 0) {
        const secrets = presentedSecrets(headers);
        if (secrets.length === 0) return anonymous;
        return { mode: 'pass_through', tenantId: tenantIdOf(secrets), mayHoldSessions: true };
      }
      // Anthropic's clients send their key as x-api-key (ANTHROPIC_API_KEY): a gateway key there counts.
      const apiKey = firstValue(headers['x-api-key']);
      const authorization =
        firstValue(headers.authorization) ?? (apiKey === undefined ? undefined : `Bearer ${apiKey}`);
      if (authorization === undefined) {
        throw new GatewayError(
          'missing_api_key',
          "You didn't provide an API key. Send your gateway key in an Authorization header: 'Authorization: Bearer YOUR_KEY'.",
        );
      }
      const presented = presentedKey(keyDigests, authorization);
      if (presented === undefined) throw new GatewayError('invalid_api_key', 'Incorrect API key provided.');
      return { mode: 'gateway_key', tenantId: gatewayKeyTenantId(presented), mayHoldSessions: true };
    },
  };
}
