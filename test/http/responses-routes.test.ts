// The Responses routes between the edge and the service (a stand-in that records what it was asked):
// the caller's tenant on every stored-response call, ids checked before the service sees them, paging
// parameters read leniently and clamped, and the request's outcome put on its record.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerResponsesRoutes } from '../../src/http/responses-routes.js';
import type { ResponsesService } from '../../src/responses/responses-service.js';
import { pluginApp } from '../helpers/plugin-app.js';

interface Call {
  method: string;
  args: unknown[];
}

const calls: Call[] = [];
const record = (method: string, ...args: unknown[]) => {
  calls.push({ method, args });
  return { object: method };
};

const service: ResponsesService = {
  async create(input, client) {
    record('create', input.body);
    await client.sendWhole(200, {}, Buffer.from('{"object":"response"}'));
    return { model: 'gpt-4o-mini', stream: false };
  },
  async compact(input, client) {
    record('compact', input.body);
    await client.sendWhole(200, {}, Buffer.from('{"object":"response.compaction"}'));
    return { model: 'gpt-4o-mini', stream: false };
  },
  retrieve: async (tenantId, id) => record('retrieve', tenantId, id),
  remove: async (tenantId, id) => record('remove', tenantId, id),
  inputItems: async (tenantId, id, page) => record('inputItems', tenantId, id, page),
  inputTokens: async (input) => {
    record('inputTokens', input.body);
    return { body: { object: 'response.input_tokens', input_tokens: 12 }, outcome: { model: 'gpt-4o-mini' } };
  },
  chains: async (tenantId, page) => record('chains', tenantId, page),
};

let app: FastifyInstance;
let logLines: string[];

beforeAll(async () => {
  ({ app, logLines } = pluginApp((scope) => {
    // The tenant as client authentication would set it.
    scope.addHook('onRequest', (request, _reply, done) => {
      const tenant = request.headers['x-tenant'];
      if (typeof tenant === 'string')
        request.gateway.credential = { mode: 'gateway_key', tenantId: tenant, mayHoldSessions: true };
      done();
    });
    registerResponsesRoutes(scope, { responses: service });
  }));
  await app.ready();
});
afterAll(() => app.close());

const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) => {
  calls.length = 0;
  const response = await app.inject({
    method,
    url,
    headers: { 'x-tenant': 'acme', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { response, calls: [...calls] };
};

describe('the Responses routes', () => {
  it.each<[string, 'GET' | 'DELETE', string, Call]>([
    ['a response read', 'GET', '/v1/responses/resp_123', { method: 'retrieve', args: ['acme', 'resp_123'] }],
    [
      'a response deleted',
      'DELETE',
      '/v1/responses/resp_123',
      { method: 'remove', args: ['acme', 'resp_123'] },
    ],
    [
      'input items with no paging',
      'GET',
      '/v1/responses/resp_1/input_items',
      {
        method: 'inputItems',
        args: ['acme', 'resp_1', { after: undefined, limit: undefined, order: 'desc' }],
      },
    ],
    [
      'input items paged ascending',
      'GET',
      '/v1/responses/resp_1/input_items?after=msg_9&limit=5&order=asc',
      { method: 'inputItems', args: ['acme', 'resp_1', { after: 'msg_9', limit: 5, order: 'asc' }] },
    ],
    [
      'input items with a junk limit and order',
      'GET',
      '/v1/responses/resp_1/input_items?limit=lots&order=sideways',
      {
        method: 'inputItems',
        args: ['acme', 'resp_1', { after: undefined, limit: undefined, order: 'desc' }],
      },
    ],
    [
      'chains by default',
      'GET',
      '/v1/responses/chains',
      { method: 'chains', args: ['acme', { offset: 0, limit: 20 }] },
    ],
    [
      'chains paged',
      'GET',
      '/v1/responses/chains?offset=40&limit=10',
      { method: 'chains', args: ['acme', { offset: 40, limit: 10 }] },
    ],
    [
      'chains with limits out of range',
      'GET',
      '/v1/responses/chains?offset=-5&limit=5000',
      { method: 'chains', args: ['acme', { offset: 0, limit: 100 }] },
    ],
    [
      'chains with junk paging',
      'GET',
      '/v1/responses/chains?offset=x&limit=0',
      { method: 'chains', args: ['acme', { offset: 0, limit: 20 }] },
    ],
  ])('hand the service %s for the caller’s tenant', async (_name, method, url, expected) => {
    const { response, calls: made } = await call(method, url);
    expect(response.statusCode).toBe(200);
    expect(made).toEqual([expected]);
  });

  it.each<[string, 'GET' | 'DELETE', string]>([
    ['an id with a space', 'GET', '/v1/responses/resp%201'],
    ['an id over 128 characters', 'DELETE', `/v1/responses/resp_${'x'.repeat(124)}`],
    ['an id with a slash inside', 'GET', '/v1/responses/resp%2F1/input_items'],
    ['an id of other characters', 'GET', '/v1/responses/resp_%E2%9C%93'],
  ])('refuse %s with 400 before the service is asked', async (_name, method, url) => {
    const { response, calls: made } = await call(method, url);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ code: 'invalid_request', param: 'response_id' });
    expect(made).toEqual([]);
  });

  it('create, compact and count a request body, and log each with its model', async () => {
    const body = { model: 'gpt-4o-mini', input: 'hi' };
    const created = await call('POST', '/v1/responses', body);
    expect(created.response.json()).toEqual({ object: 'response' });
    expect(created.calls).toEqual([{ method: 'create', args: [body] }]);
    const compacted = await call('POST', '/v1/responses/compact', body);
    expect(compacted.response.json()).toEqual({ object: 'response.compaction' });
    expect(compacted.calls).toEqual([{ method: 'compact', args: [body] }]);
    const counted = await call('POST', '/v1/responses/input_tokens', body);
    expect(counted.response.json()).toEqual({ object: 'response.input_tokens', input_tokens: 12 });
    const lines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const route of ['/v1/responses', '/v1/responses/compact', '/v1/responses/input_tokens']) {
      expect(lines.find((line) => line.route === route)).toMatchObject({ status: 200, model: 'gpt-4o-mini' });
    }
  });

  it.each<[string, Record<string, string>, number, string]>([
    // As Codex opens it (its own OpenAI provider): on a 426 it goes over HTTP at once.
    [
      'a WebSocket opened on the path',
      { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13' },
      426,
      'websocket_not_supported',
    ],
    [
      'the same, its header in capitals',
      { connection: 'Upgrade', upgrade: 'WebSocket' },
      426,
      'websocket_not_supported',
    ],
    ['a plain GET of the path', {}, 404, 'not_found'],
    ['an upgrade to another protocol', { connection: 'Upgrade', upgrade: 'h2c' }, 404, 'not_found'],
  ])(
    'answer %s in the API’s error shape, asking the service nothing',
    async (_name, headers, status, code) => {
      calls.length = 0;
      const response = await app.inject({ method: 'GET', url: '/v1/responses', headers });
      expect(response.statusCode).toBe(status);
      expect(response.json().error).toMatchObject({ code, type: 'invalid_request_error' });
      expect(calls).toEqual([]);
    },
  );
});
