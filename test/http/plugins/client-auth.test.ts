// Client authentication of the API scope: decided for every route of the scope the router matched — a
// wrong or missing key refused before the handler, a right one setting the caller's credential — and
// for no route outside it.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../../src/auth/authenticate.js';
import { addClientAuthentication } from '../../../src/http/plugins/client-auth.js';
import { pluginApp } from '../../helpers/plugin-app.js';

let app: FastifyInstance;
const reached: string[] = [];

beforeAll(async () => {
  ({ app } = pluginApp((root) => {
    root.get('/healthz', async () => ({ status: 'ok' }));
    root.register(async (api) => {
      addClientAuthentication(
        api,
        createAuthenticator({ gatewayApiKeys: ['gk-right'], anonymousTenant: '' }),
      );
      api.get('/v1/models', async (request) => {
        reached.push('/v1/models');
        return { tenant: request.gateway.credential?.tenantId, mode: request.gateway.credential?.mode };
      });
    });
  }));
  await app.ready();
});
afterAll(() => app.close());

describe('client authentication', () => {
  it.each<[string, Record<string, string>, string]>([
    ['no key', {}, 'missing_api_key'],
    ['a wrong key', { authorization: 'Bearer gk-wrong' }, 'invalid_api_key'],
    ['a key without its scheme', { authorization: 'gk-right-not' }, 'invalid_api_key'],
  ])('refuses %s before the handler runs', async (_name, headers, code) => {
    reached.length = 0;
    const response = await app.inject({ method: 'GET', url: '/v1/models', headers });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe(code);
    expect(reached).toEqual([]);
  });

  it.each<[string, string]>([
    ['the matched route, spelled plainly', '/v1/models'],
    ['the matched route, percent-encoded', '/v1/%6Dodels'],
  ])('authenticates %s and hands the handler the credential', async (_name, url) => {
    const response = await app.inject({ method: 'GET', url, headers: { authorization: 'Bearer gk-right' } });
    expect(response.statusCode).toBe(200);
    expect(response.json().mode).toBe('gateway_key');
    expect(response.json().tenant).toMatch(/\S/);
  });

  it('refuses a percent-encoded route without a key too', async () => {
    const response = await app.inject({ method: 'GET', url: '/v1/%6Dodels' });
    expect(response.statusCode).toBe(401);
  });

  it('leaves routes outside the scope alone', async () => {
    const response = await app.inject({ method: 'GET', url: '/healthz' });
    expect(response.statusCode).toBe(200);
  });
});
