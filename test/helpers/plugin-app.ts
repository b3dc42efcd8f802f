// A bare fastify app for testing one plugin or one group of routes: the gateway's request context (the
// request record, the log line) and its error handler, and nothing else — so a test sees what its own
// part does, answered in the gateway's error shape.
import Fastify, { type FastifyInstance } from 'fastify';
import { handleError } from '../../src/http/error-handler.js';
import { requestContextPlugin } from '../../src/http/plugins/request-context.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { captureLogs } from './start-gateway.js';

export interface PluginApp {
  app: FastifyInstance;
  /** The JSON log lines the app wrote. */
  logLines: string[];
}

export function pluginApp(
  register: (app: FastifyInstance) => void,
  options: { bodyLimit?: number; outcomeWaitMs?: number } = {},
): PluginApp {
  const { lines, destination } = captureLogs();
  const logger = createLogger({ level: 'info', destination });
  const app = Fastify({
    // As the gateway's own app: ids of any length reach their route, which says what is wrong with them.
    routerOptions: { maxParamLength: 16_384 },
    ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }),
  });
  app.register(requestContextPlugin, {
    logger,
    metrics: createMetrics({ collectProcessMetrics: false }),
    now: () => performance.now(),
    ...(options.outcomeWaitMs === undefined ? {} : { outcomeWaitMs: options.outcomeWaitMs }),
  });
  app.setErrorHandler((error, request, reply) => handleError(error, request, reply));
  register(app);
  return { app, logLines: lines };
}
