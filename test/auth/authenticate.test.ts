// Who a request is (authenticate.ts; README.md#authentication), as tables: with gateway keys, one of
// them in Authorization or x-api-key, or 401 (missing or wrong); without them, the client's own
// credential passes through and names its tenant — a digest, the same caller in any credential header,
// never the credential itself — and a caller with none is anonymous, holding sessions only when the
// config names an anonymous tenant.
import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createAuthenticator, presentedSecrets } from '../../src/auth/authenticate.js';
import { isGatewayError } from '../../src/errors.js';

const keyed = createAuthenticator({ gatewayApiKeys: ['gw-key-one', 'gw-key-two'], anonymousTenant: '' });
const open = createAuthenticator({ gatewayApiKeys: [], anonymousTenant: '' });
const openNamed = createAuthenticator({ gatewayApiKeys: [], anonymousTenant: 'public' });

const outcome = (authenticator: typeof keyed, headers: IncomingHttpHeaders) => {
  try {
    return authenticator.authenticate(headers);
  } catch (error) {
    return isGatewayError(error) ? { refused: error.code, status: error.status } : { thrown: String(error) };
  }
};

describe('with gateway keys', () => {
  it.each<[string, IncomingHttpHeaders, unknown]>([
    [
      'a key in Authorization',
      { authorization: 'Bearer gw-key-one' },
      { mode: 'gateway_key', mayHoldSessions: true },
    ],
    [
      'the other key, the scheme in any case',
      { authorization: 'bearer   gw-key-two ' },
      { mode: 'gateway_key' },
    ],
    ['a key in x-api-key (Anthropic’s clients)', { 'x-api-key': 'gw-key-one' }, { mode: 'gateway_key' }],
    ['no key', {}, { refused: 'missing_api_key', status: 401 }],
    ['an empty Authorization', { authorization: '  ' }, { refused: 'missing_api_key', status: 401 }],
    ['a wrong key', { authorization: 'Bearer gw-key-three' }, { refused: 'invalid_api_key', status: 401 }],
    [
      'a key without its scheme',
      { authorization: 'gw-key-one' },
      { refused: 'invalid_api_key', status: 401 },
    ],
    ['a prefix of a key', { authorization: 'Bearer gw-key' }, { refused: 'invalid_api_key', status: 401 }],
  ])('%s', (_name, headers, expected) => {
    expect(outcome(keyed, headers)).toMatchObject(expected as object);
  });

  it('names each key’s tenant apart, the same for the same key wherever it is sent, never by the key', () => {
    const one = keyed.authenticate({ authorization: 'Bearer gw-key-one' });
    const again = keyed.authenticate({ 'x-api-key': 'gw-key-one' });
    const two = keyed.authenticate({ authorization: 'Bearer gw-key-two' });
    expect(one.tenantId).toBe(again.tenantId);
    expect(one.tenantId).not.toBe(two.tenantId);
    expect(one.tenantId).toMatch(/^gk-[0-9a-f]{32}$/);
    expect(one.tenantId).not.toContain('gw-key');
  });
});

describe('passing the client’s credential through', () => {
  it.each<[string, IncomingHttpHeaders, string[]]>([
    ['a Bearer token', { authorization: 'Bearer sk-abc' }, ['sk-abc']],
    ['another scheme, whole', { authorization: 'Basic dXNlcjpwYXNz' }, ['Basic dXNlcjpwYXNz']],
    ['an Azure api-key', { 'api-key': 'az-1' }, ['az-1']],
    [
      'the same key in two headers, once',
      { authorization: 'Bearer sk-abc', 'x-api-key': 'sk-abc' },
      ['sk-abc'],
    ],
    ['two keys, sorted', { authorization: 'Bearer sk-b', 'x-api-key': 'sk-a' }, ['sk-a', 'sk-b']],
    ['empty headers', { authorization: '', 'x-api-key': ' ' }, []],
  ])('finds %s', (_name, headers, secrets) => {
    expect(presentedSecrets(headers)).toEqual(secrets);
  });

  it('names the caller by a digest of its secrets: the same key in any header is the same caller', () => {
    const bearer = open.authenticate({ authorization: 'Bearer sk-abc' });
    const apiKey = open.authenticate({ 'x-api-key': 'sk-abc' });
    const other = open.authenticate({ authorization: 'Bearer sk-abd' });
    expect(bearer).toEqual({ mode: 'pass_through', tenantId: apiKey.tenantId, mayHoldSessions: true });
    expect(other.tenantId).not.toBe(bearer.tenantId);
    expect(bearer.tenantId).toMatch(/^pt-[0-9a-f]{32}$/);
  });

  it.each<[string, typeof open, unknown]>([
    [
      'anonymous, holding no sessions, without a configured name',
      open,
      { mode: 'none', tenantId: 'anonymous', mayHoldSessions: false },
    ],
    [
      'the configured anonymous tenant, holding sessions',
      openNamed,
      { mode: 'none', tenantId: 'an-public', mayHoldSessions: true },
    ],
  ])('a caller with no credential is %s', (_name, authenticator, expected) => {
    expect(authenticator.authenticate({})).toEqual(expected);
  });
});
