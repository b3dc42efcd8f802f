// Cross-origin requests (docs/configuration.md#browser-apps), as a browser makes them: a preflight
// (OPTIONS, no credential) answered before any key check for an origin `server.cors_origins` names, the
// origin allowed and the gateway's headers readable on the request itself — and nothing of it for an
// origin not named, or when no origin is.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { corsPlugin } from '../../../src/http/plugins/cors.js';
import { pluginApp } from '../../helpers/plugin-app.js';

const page = 'http://127.0.0.1:5173';
const apps: FastifyInstance[] = [];

/** An app behind the plugin: a route that, as the gateway's /v1 routes do, wants a key. */
function appWith(origins: readonly string[]): FastifyInstance {
  const { app } = pluginApp((scope) => {
    scope.register(corsPlugin, { origins });
    scope.register(async (api) => {
      api.addHook('onRequest', async (request, reply) => {
        if (request.headers.authorization !== 'Bearer sk-key')
          await reply.code(401).send({ error: 'no key' });
      });
      api.post('/v1/chat/completions', async (_request, reply) =>
        reply.header('x-context-input-tokens', '12').send({ ok: true }),
      );
    });
  });
  apps.push(app);
  return app;
}

const preflight = (
  app: FastifyInstance,
  origin: string,
  requested = 'authorization,content-type,x-session-id',
) =>
  app.inject({
    method: 'OPTIONS',
    url: '/v1/chat/completions',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': requested,
    },
  });

let named: FastifyInstance;
let any: FastifyInstance;
let none: FastifyInstance;

beforeAll(async () => {
  named = appWith([page, 'app://obsidian.md']);
  any = appWith(['*']);
  none = appWith([]);
  await Promise.all(apps.map((app) => app.ready()));
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
});

describe('corsPlugin', () => {
  it('answers a named origin’s preflight without a key: its origin, the methods, the headers it asked for', async () => {
    const response = await preflight(named, page);
    expect(response.statusCode).toBe(204);
    expect(response.headers).toMatchObject({
      'access-control-allow-origin': page,
      'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
      'access-control-allow-headers': 'authorization,content-type,x-session-id',
      'access-control-max-age': '600',
      vary: 'Origin',
    });
    expect((await preflight(named, 'app://obsidian.md')).headers['access-control-allow-origin']).toBe(
      'app://obsidian.md',
    );
  });

  it('lets the page read the answer and the gateway’s headers; the key is still checked', async () => {
    const asked = (authorization: string) =>
      named.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { origin: page, authorization, 'content-type': 'application/json' },
        payload: '{}',
      });
    const answered = await asked('Bearer sk-key');
    expect(answered.statusCode).toBe(200);
    expect(answered.headers).toMatchObject({
      'access-control-allow-origin': page,
      'access-control-expose-headers': '*',
      'x-context-input-tokens': '12',
    });
    expect(answered.headers['access-control-allow-methods']).toBeUndefined();
    // A refusal is readable too (the page shows why), and still a refusal.
    const refused = await asked('Bearer sk-other');
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe(page);
  });

  it('answers any origin with * when configured so, and tells caches nothing depends on it', async () => {
    const response = await preflight(any, 'https://somewhere.example');
    expect(response.statusCode).toBe(204);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(response.headers.vary).toBeUndefined();
  });

  it.each([
    ['an origin not named', () => preflight(named, 'https://evil.example')],
    ['any origin when none is configured', () => preflight(none, page)],
    ['a request with no origin', () => named.inject({ method: 'OPTIONS', url: '/v1/chat/completions' })],
  ])('gives %s nothing: no preflight answer, no CORS header', async (_name, send) => {
    const response = await send();
    expect(response.statusCode).toBe(404);
    expect(Object.keys(response.headers).filter((name) => name.startsWith('access-control-'))).toEqual([]);
  });

  it.each([
    ['not a list of header names', 'authorization, <script>'],
    ['longer than 4 KB', Array.from({ length: 900 }, (_unused, index) => `x-h${index}`).join(',')],
  ])('does not echo requested headers %s', async (_name, requested) => {
    const response = await preflight(named, page, requested);
    expect(response.statusCode).toBe(204);
    expect(response.headers['access-control-allow-headers']).toBeUndefined();
  });
});
