// The probes and the scrape: liveness always ok, readiness following the store and the shutdown, and
// the metrics in Prometheus's text format; the hello Claude Code warms its connection with.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerOperationalRoutes } from '../../src/http/operational-routes.js';
import { createMetrics } from '../../src/metrics.js';

const state = { closing: false, store: 'ready' as 'ready' | 'down' | 'throws' };
const metrics = createMetrics({ collectProcessMetrics: false });
let app: FastifyInstance;

beforeAll(async () => {
  app = Fastify();
  registerOperationalRoutes(app, {
    metrics,
    isClosing: () => state.closing,
    readiness: {
      check: async () => {
        if (state.store === 'throws') throw new Error('connection refused');
        return state.store === 'ready';
      },
    },
  });
  await app.ready();
});
afterAll(() => app.close());

describe('the operational routes', () => {
  it.each<[string, boolean, 'ready' | 'down' | 'throws', number, unknown, number]>([
    ['ready', false, 'ready', 200, { status: 'ready', store: 'ok' }, 200],
    ['store down', false, 'down', 503, { status: 'not_ready', store: 'unreachable' }, 200],
    ['store check throwing', false, 'throws', 503, { status: 'not_ready', store: 'unreachable' }, 200],
    ['shutting down', true, 'ready', 503, { status: 'shutting_down' }, 200],
  ])(
    'when %s: /readyz answers as the state says, /healthz stays ok',
    async (_name, closing, store, status, body, health) => {
      Object.assign(state, { closing, store });
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(status);
      expect(ready.json()).toEqual(body);
      const live = await app.inject({ method: 'GET', url: '/healthz' });
      expect(live.statusCode).toBe(health);
      expect(live.json()).toEqual({ status: 'ok' });
    },
  );

  it.each(['GET', 'HEAD'] as const)(
    'answers %s /api/hello (Claude Code warms its connection so) with 200',
    async (method) => {
      const hello = await app.inject({ method, url: '/api/hello' });
      expect(hello.statusCode).toBe(200);
      if (method === 'GET') expect(hello.json()).toEqual({ status: 'ok' });
    },
  );

  it('serves the metrics as Prometheus text', async () => {
    metrics.budgetRefusals.inc({ budget: 'session_tokens' });
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(response.body).toMatch(/^ctxgate_budget_refusals_total\{budget="session_tokens"\} 1$/m);
  });
});
