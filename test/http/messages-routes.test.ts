// The Messages routes: which URLs answer in Anthropic's wire format (errors included), what the service
// is handed (never the client's bytes: they are Anthropic's, not a chat body), and count_tokens logged
// with its model.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import { isMessagesRoute, registerMessagesRoutes } from '../../src/http/messages-routes.js';
import { jsonBodyParserPlugin } from '../../src/http/plugins/json-body-parser.js';
import type { MessagesInput, MessagesService } from '../../src/messages/messages-service.js';
import { pluginApp } from '../helpers/plugin-app.js';

describe('isMessagesRoute', () => {
  it.each<[string, boolean]>([
    ['/v1/messages', true],
    ['/v1/messages?beta=true', true],
    ['/v1/messages/count_tokens', true],
    ['/v1/messages/batches/b1', true],
    ['/v1/messagesX', false],
    ['/v1/chat/completions', false],
    ['/messages', false],
    ['/v1/threads/t1/messages', false],
  ])('%s: %s', (url, expected) => {
    expect(isMessagesRoute(url)).toBe(expected);
  });
});

const asked: Array<MessagesInput | Omit<MessagesInput, 'warn' | 'info'>> = [];
const service: MessagesService = {
  async create(input, client) {
    asked.push(input);
    if ((input.body as { model?: string }).model === 'refused')
      throw new GatewayError('invalid_request', 'max_tokens: Field required', { param: 'max_tokens' });
    await client.sendWhole(200, {}, Buffer.from('{"type":"message"}'));
    return { model: 'claude-sonnet-4-5' };
  },
  async countTokens(input) {
    asked.push(input);
    return { body: { input_tokens: 31 }, outcome: { model: 'claude-sonnet-4-5' } };
  },
};

let app: FastifyInstance;
let logLines: string[];
beforeAll(async () => {
  ({ app, logLines } = pluginApp((scope) => {
    // As the gateway's app reads bodies: parsed, with the client's bytes kept beside them.
    scope.register(jsonBodyParserPlugin, {
      bodyLimitBytes: 1_000_000,
      shape: { maxDepth: 64, maxContainers: 10_000 },
    });
    scope.register(async (routes) => registerMessagesRoutes(routes, { messages: service }));
  }));
  await app.ready();
});
afterAll(() => app.close());

describe('the Messages routes', () => {
  it('hand the service the parsed body and the client’s bytes (which the service never forwards as they are)', async () => {
    asked.length = 0;
    const body = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] };
    const response = await app.inject({ method: 'POST', url: '/v1/messages', payload: body });
    expect(response.json()).toEqual({ type: 'message' });
    expect(asked[0]?.body).toEqual(body);
    expect(asked[0]?.rawBody?.toString()).toBe(JSON.stringify(body));
  });

  it("answer the service's refusal in Anthropic's error shape", async () => {
    const response = await app.inject({ method: 'POST', url: '/v1/messages', payload: { model: 'refused' } });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
    });
  });

  it('answer count_tokens and log it with its model', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/messages/count_tokens',
      payload: { model: 'claude-sonnet-4-5', messages: [] },
    });
    expect(response.json()).toEqual({ input_tokens: 31 });
    const line = logLines
      .map((text) => JSON.parse(text))
      .findLast((entry) => entry.route === '/v1/messages/count_tokens');
    expect(line).toMatchObject({ status: 200, model: 'claude-sonnet-4-5' });
  });
});
