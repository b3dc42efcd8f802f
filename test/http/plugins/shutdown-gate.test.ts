// While the gateway drains for shutdown: new requests are refused with 503 (the probes still answer,
// so an orchestrator sees /readyz fail), and every answer asks the client to reconnect elsewhere.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownGatePlugin } from '../../../src/http/plugins/shutdown-gate.js';
import { pluginApp } from '../../helpers/plugin-app.js';

let closing = false;
let app: FastifyInstance;

beforeAll(async () => {
  ({ app } = pluginApp((scope) => {
    scope.register(shutdownGatePlugin, { isClosing: () => closing });
    for (const url of ['/healthz', '/readyz', '/v1/models']) scope.get(url, async () => ({ reached: url }));
  }));
  await app.ready();
});
afterAll(() => app.close());

describe('the shutdown gate', () => {
  it.each<[string]>([['/healthz'], ['/readyz'], ['/v1/models']])(
    'lets %s through while open',
    async (url) => {
      closing = false;
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode).toBe(200);
      expect(response.headers.connection).not.toBe('close');
    },
  );

  it.each<[string, string]>([
    ['/healthz', '/healthz'],
    ['/readyz', '/readyz'],
    // The route matched decides, not the URL's text.
    ['/readyz?verbose=1', '/readyz'],
  ])('lets the probe %s through while closing, asking to reconnect', async (url, route) => {
    closing = true;
    const response = await app.inject({ method: 'GET', url });
    expect(response.json()).toEqual({ reached: route });
    expect(response.headers.connection).toBe('close');
  });

  it.each<[string]>([['/v1/models'], ['/v1/unknown'], ['/healthz/x']])(
    'refuses %s with 503 while closing',
    async (url) => {
      closing = true;
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode).toBe(503);
      expect(response.json().error).toMatchObject({ code: 'shutting_down', type: 'server_error' });
      expect(response.headers.connection).toBe('close');
    },
  );
});
