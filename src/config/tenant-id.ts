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

/** A passed-through credential's tenant id, from the whole Authorization header value. */
export function passThroughTenantId(authorization: string): string {
  return `pt-${sha256(authorization).toString('hex').slice(0, 32)}`;
}
