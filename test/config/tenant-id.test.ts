// Tenant ids as docs/budgets.md tells an operator to compute them (`printf %s "$KEY" | sha256sum | cut
// -c1-32`): `gk-` for a gateway key, `pt-` for the secrets a passed-through caller presents, sorted and
// joined by newlines. An operator names a credential by it on the admin endpoints, so it must match.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { gatewayKeyTenantId, passThroughTenantId, sha256 } from '../../src/config/tenant-id.js';

/** What `sha256sum | cut -c1-32` prints for a text. */
const shellDigest = (text: string): string =>
  createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32);

describe('tenant ids', () => {
  it.each([['sk-gateway-1'], ['sk-ünïcode-ключ'], ['a key with spaces and a trailing newline\n']])(
    'names gateway key %j as gk- and the first 32 hex digits of its SHA-256',
    (key) => {
      expect(gatewayKeyTenantId(sha256(key))).toBe(`gk-${shellDigest(key)}`);
    },
  );

  it.each([
    [['sk-provider'], 'sk-provider'],
    [['sk-a', 'sk-b'], 'sk-a\nsk-b'],
  ])('names passed-through secrets %j as pt- and the digest of %j', (secrets, joined) => {
    expect(passThroughTenantId(secrets)).toBe(`pt-${shellDigest(joined)}`);
  });

  it('keeps two secrets apart from their concatenation and a gateway key from the same key passed through', () => {
    const pair = passThroughTenantId(['sk-a', 'sk-b']);
    expect(pair).not.toBe(passThroughTenantId(['sk-ask-b']));
    expect(pair).not.toBe(passThroughTenantId(['sk-a']));
    expect(pair).not.toContain('sk-');
    // The same key as a gateway key and passed through is two tenants.
    expect(gatewayKeyTenantId(sha256('sk-a'))).not.toBe(passThroughTenantId(['sk-a']));
  });
});
