// Which headers cross the gateway, as tables: upstream, credentials only as the auth mode allows, the
// gateway's own headers and hop-by-hop ones never, a client's organisation and forwarding headers never
// beside the operator's key; downstream, the upstream's request id renamed and the gateway's headers
// winning.
import { describe, expect, it } from 'vitest';
import type { Credential } from '../../src/auth/authenticate.js';
import type { UpstreamConfig } from '../../src/config/gateway-config.js';
import { buildClientHeaders, buildUpstreamHeaders } from '../../src/upstream/forward-headers.js';

const upstream = (apiKey: string | undefined): UpstreamConfig => ({
  name: 'default',
  baseUrl: 'https://api.example.com/v1',
  apiKey,
  modelGlobs: ['*'],
  maxConnections: 8,
  kind: 'openai',
  billingLine: 'drop',
});
const credential = (mode: Credential['mode']): Credential => ({ mode, tenantId: 't', mayHoldSessions: true });

const client = {
  host: 'gateway.local',
  'content-length': '123',
  connection: 'keep-alive',
  'transfer-encoding': 'chunked',
  'accept-encoding': 'gzip',
  cookie: 'a=b',
  authorization: 'Bearer sk-client',
  'x-api-key': 'sk-client-2',
  'openai-organization': 'org-client',
  'x-forwarded-for': '10.0.0.1',
  'x-session-id': 's1',
  'x-context-window': '8000',
  'x-budget-session-tokens': '100',
  'x-stainless-retry-count': '1',
  'user-agent': 'OpenAI/JS 7.57.0',
  'x-custom': ['a', 'b'],
};

describe('buildUpstreamHeaders', () => {
  it('passes the client’s own credential through, and what the provider may see', () => {
    const headers = buildUpstreamHeaders(client, upstream(undefined), credential('pass_through'));
    expect(headers).toEqual({
      'content-type': 'application/json',
      'accept-encoding': 'identity',
      authorization: 'Bearer sk-client',
      'x-api-key': 'sk-client-2',
      'openai-organization': 'org-client',
      'x-forwarded-for': '10.0.0.1',
      'x-stainless-retry-count': '1',
      'user-agent': 'OpenAI/JS 7.57.0',
      'x-custom': 'a, b',
    });
  });

  it('sends the operator’s key alone beside it: no client credential, organisation or forwarding header', () => {
    const headers = buildUpstreamHeaders(client, upstream('sk-operator'), credential('gateway_key'));
    expect(headers.authorization).toBe('Bearer sk-operator');
    for (const name of ['x-api-key', 'openai-organization', 'x-forwarded-for', 'cookie', 'x-session-id'])
      expect(headers[name]).toBeUndefined();
  });

  it('sends no credential for a gateway-key caller when the upstream has no key of its own', () => {
    const headers = buildUpstreamHeaders(client, upstream(undefined), credential('gateway_key'));
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-api-key']).toBeUndefined();
  });
});

describe('buildClientHeaders', () => {
  it('renames the upstream’s request id, drops hop-by-hop and cookies, and lets the gateway’s win', () => {
    expect(
      buildClientHeaders(
        {
          'x-request-id': 'req_up',
          'content-type': 'application/json',
          'set-cookie': ['a=b'],
          'transfer-encoding': 'chunked',
          server: 'upstream',
          'x-ratelimit-remaining-requests': '99',
          'x-should-retry': 'true',
        },
        { 'x-should-retry': 'false', 'x-context-window': '8192' },
      ),
    ).toEqual({
      'x-upstream-request-id': 'req_up',
      'content-type': 'application/json',
      'x-ratelimit-remaining-requests': '99',
      'x-should-retry': 'false',
      'x-context-window': '8192',
    });
  });
});
