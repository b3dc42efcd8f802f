// Liveness, readiness and metrics endpoints for orchestrators and Prometheus, and the hello Claude Code
// warms its connection with.
import type { FastifyInstance } from 'fastify';
import type { GatewayMetrics } from '../metrics.js';

export interface ReadinessProbe {
  /** Resolves true when the session store answers. */
  check(): Promise<boolean>;
}

export interface OperationalRouteDependencies {
  metrics: GatewayMetrics;
  readiness: ReadinessProbe;
  isClosing: () => boolean;
}

export function registerOperationalRoutes(
  app: FastifyInstance,
  { metrics, readiness, isClosing }: OperationalRouteDependencies,
): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  // Claude Code warms its connection to ANTHROPIC_BASE_URL with `HEAD /api/hello` when it starts, as
  // Anthropic's API answers it: answered here too, so no start of Claude Code is a 404 (docs/anthropic.md).
  app.get('/api/hello', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    if (isClosing()) return reply.code(503).send({ status: 'shutting_down' });
    const storeReady = await readiness.check().catch(() => false);
    return reply
      .code(storeReady ? 200 : 503)
      .send({ status: storeReady ? 'ready' : 'not_ready', store: storeReady ? 'ok' : 'unreachable' });
  });

  app.get('/metrics', async (_request, reply) => {
    return reply.type(metrics.contentType).send(await metrics.render());
  });
}
