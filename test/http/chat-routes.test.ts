// The chat routes between the edge and the services (stand-ins that record what they were asked): the
// request's headers read into overrides once (a malformed one refused before any service runs), the
// caller's credential or none, the preview's headers and body answered as the service gives them, and
// the model list forwarded to the one upstream, or gathered by the model list service from several.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatInput, ChatService } from '../../src/chat/chat-turn.js';
import type { ForwardInput, Forwarder } from '../../src/chat/forward-request.js';
import type { ModelListInput, ModelListService } from '../../src/chat/model-list.js';
import { registerChatRoutes } from '../../src/http/chat-routes.js';
import { pluginApp } from '../helpers/plugin-app.js';
import { upstreamConfig } from '../helpers/port-fakes.js';

const asked: ChatInput[] = [];
const forwarded: ForwardInput[] = [];

const chat: ChatService = {
  async complete(input, client) {
    asked.push(input);
    await client.sendWhole(
      200,
      { 'x-context-input-tokens': '9' },
      Buffer.from('{"object":"chat.completion"}'),
    );
    return { model: 'gpt-4o-mini' };
  },
  async preview(input) {
    asked.push({ ...input, warn: () => undefined, info: () => undefined });
    return {
      headers: { 'x-context-input-tokens': '7', 'x-context-dropped-messages': '2' },
      body: { model: 'gpt-4o-mini', messages: [] },
      outcome: { model: 'gpt-4o-mini' },
    };
  },
};

const forwarder: Forwarder = {
  async forward(input, client) {
    forwarded.push(input);
    await client.sendWhole(200, {}, Buffer.from('{"object":"list","data":[]}'));
    return {
      answered: true,
      totalTokens: undefined,
      streamErrorCode: undefined,
      upstream: { name: input.target.name, status: 200, ms: 1, attempts: 1, errorCause: undefined },
    };
  },
};

const listed: ModelListInput[] = [];
const retrieved: Array<ModelListInput & { target: string }> = [];
const models: ModelListService = {
  async list(input, client) {
    listed.push(input);
    await client.sendWhole(200, {}, Buffer.from('{"object":"list","data":[{"id":"gathered"}]}'));
    return { upstream: { name: 'a,b', status: 200, ms: 1, attempts: 2, errorCause: undefined } };
  },
  async retrieve(input, client) {
    retrieved.push(input);
    await client.sendWhole(200, {}, Buffer.from('{"id":"found","object":"model"}'));
    return { upstream: { name: 'b', status: 200, ms: 1, attempts: 1, errorCause: undefined } };
  },
};

let app: FastifyInstance;
/** The same routes in front of two upstreams. */
let routed: FastifyInstance;
let logLines: string[];

beforeAll(async () => {
  ({ app, logLines } = pluginApp((scope) => {
    scope.addHook('onRequest', (request, _reply, done) => {
      if (request.headers['x-tenant'] === 'acme')
        request.gateway.credential = { mode: 'gateway_key', tenantId: 'acme', mayHoldSessions: true };
      done();
    });
    registerChatRoutes(scope, {
      chat,
      forwarder,
      models,
      defaultUpstream: upstreamConfig('default'),
      upstreamCount: 1,
    });
  }));
  ({ app: routed } = pluginApp((scope) =>
    registerChatRoutes(scope, {
      chat,
      forwarder,
      models,
      defaultUpstream: upstreamConfig('default'),
      upstreamCount: 2,
    }),
  ));
  await app.ready();
  await routed.ready();
});
afterAll(async () => {
  await app.close();
  await routed.close();
});

const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const post = (url: string, headers: Record<string, string> = {}) => {
  asked.length = 0;
  return app.inject({ method: 'POST', url, payload: body, headers: { 'x-tenant': 'acme', ...headers } });
};

describe('the chat routes', () => {
  it('hand the chat service the body, the overrides read from the headers and the credential', async () => {
    const response = await post('/v1/chat/completions', {
      'x-session-id': 'sess-1',
      'x-context-window': '8192',
      'x-context-policy': 'agent',
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-context-input-tokens']).toBe('9');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      body,
      overrides: { sessionId: 'sess-1', contextWindow: 8192, policyName: 'agent', historyMode: 'auto' },
      credential: { tenantId: 'acme' },
    });
    expect(asked[0]?.clientHeaders['x-session-id']).toBe('sess-1');
  });

  it('hand an unauthenticated request no credential at all', async () => {
    asked.length = 0;
    await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: body });
    expect(asked[0]?.credential).toMatchObject({ mode: 'none', mayHoldSessions: false });
  });

  it.each<[string, Record<string, string>, string]>([
    ['a malformed session id', { 'x-session-id': 'has space' }, 'x-session-id'],
    ['a window that is not a number', { 'x-context-window': 'big' }, 'x-context-window'],
    ['an unknown history mode', { 'x-session-history': 'some' }, 'x-session-history'],
  ])('refuse %s with 400 before the service runs', async (_name, headers, param) => {
    for (const url of ['/v1/chat/completions', '/v1/context/render']) {
      const response = await post(url, headers);
      expect(response.statusCode).toBe(400);
      expect(response.json().error.param).toBe(param);
      expect(asked).toEqual([]);
    }
  });

  it("answer a preview with the service's headers and body, and log it with its model", async () => {
    const response = await post('/v1/context/render');
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-context-input-tokens']).toBe('7');
    expect(response.headers['x-context-dropped-messages']).toBe('2');
    expect(response.json()).toEqual({ model: 'gpt-4o-mini', messages: [] });
    const line = logLines
      .map((text) => JSON.parse(text))
      .findLast((entry) => entry.route === '/v1/context/render');
    expect(line).toMatchObject({ status: 200, model: 'gpt-4o-mini', tenant: 'acme' });
  });

  it('forward the model list to the default upstream with the caller’s headers and credential', async () => {
    forwarded.length = 0;
    const response = await app.inject({ method: 'GET', url: '/v1/models', headers: { 'x-tenant': 'acme' } });
    expect(response.json()).toEqual({ object: 'list', data: [] });
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]).toMatchObject({ method: 'GET', path: '/models', target: { name: 'default' } });
    expect(forwarded[0]?.credential).toMatchObject({ tenantId: 'acme' });
    const line = logLines.map((text) => JSON.parse(text)).findLast((entry) => entry.route === '/v1/models');
    expect(line).toMatchObject({ status: 200, upstream: 'default' });
    expect(listed).toEqual([]);
  });

  it('ask the model list service for the list of several upstreams, with the caller’s headers', async () => {
    forwarded.length = 0;
    const response = await routed.inject({
      method: 'GET',
      url: '/v1/models?limit=1000',
      headers: { 'anthropic-version': '2023-06-01' },
    });
    expect(response.json()).toEqual({ object: 'list', data: [{ id: 'gathered' }] });
    expect(forwarded).toEqual([]);
    expect(listed).toHaveLength(1);
    expect(listed[0]?.headers['anthropic-version']).toBe('2023-06-01');
  });

  it('ask the model list service for one model of several upstreams, by the target as it came', async () => {
    forwarded.length = 0;
    retrieved.length = 0;
    const response = await routed.inject({
      method: 'GET',
      url: '/v1/models/mistralai%2Fmistral-7b-instruct?x=1',
      headers: { 'x-tenant': 'acme' },
    });
    expect(response.json()).toEqual({ id: 'found', object: 'model' });
    expect(retrieved.map((input) => input.target)).toEqual([
      '/v1/models/mistralai%2Fmistral-7b-instruct?x=1',
    ]);
    expect(forwarded).toEqual([]);
    // With one upstream the route is not the gateway's: the pass-through forwards it (not registered here).
    retrieved.length = 0;
    expect((await app.inject({ method: 'GET', url: '/v1/models/gpt-4o-mini' })).statusCode).toBe(404);
    expect(retrieved).toEqual([]);
  });
});
