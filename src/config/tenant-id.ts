// The tenant id of a credential: sessions and budgets are namespaced by it, logs name callers by it, and
// the config file's per-credential budgets are matched by it. A hash, never the credential itself.
import { createHash } from 'node:crypto';

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** A gateway key's tenant id, from the key's SHA-256 digest. */
export function gatewayKeyTenantId(keyDigest: Buffer): string {
  return `gk-${keyDigest.toString('hex').slice(0, 32)}`;
}

/**
 * A passed-through caller's tenant id, from the secrets it presents (a Bearer token, an api-key), sorted:
 * the same key in any of the credential headers is the same caller.
 */
export function passThroughTenantId(secrets: readonly string[]): string {
  return `pt-${sha256(secrets.join('\n')).toString('hex').slice(0, 32)}`;
}
