// Prometheus metrics of one gateway instance, on a registry of its own (no global state), so that two
// apps in one process, as in tests, never share counters.
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const latencyBucketsSeconds = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];
const maxModelLabels = 200;

export interface GatewayMetrics {
  registry: Registry;
  requests: Counter<'route' | 'status' | 'model'>;
  requestDuration: Histogram<'route'>;
  upstreamDuration: Histogram<'upstream' | 'status'>;
  gatewayOverhead: Histogram<'route'>;
  upstreamErrors: Counter<'upstream' | 'code'>;
  /** Bounds label cardinality: models beyond the first few hundred seen are counted as "other". */
  modelLabel(model: string | undefined): string;
}

export function createMetrics({
  collectProcessMetrics = true,
}: { collectProcessMetrics?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  if (collectProcessMetrics) collectDefaultMetrics({ register: registry, prefix: 'ctxgate_' });
  const seenModels = new Set<string>();
  return {
    registry,
    requests: new Counter({
      name: 'ctxgate_http_requests_total',
      help: 'HTTP requests answered, by route, status and model.',
      labelNames: ['route', 'status', 'model'],
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'ctxgate_http_request_duration_seconds',
      help: 'Total time from request to the end of the response.',
      labelNames: ['route'],
      buckets: latencyBucketsSeconds,
      registers: [registry],
    }),
    upstreamDuration: new Histogram({
      name: 'ctxgate_upstream_duration_seconds',
      help: 'Time spent on upstream calls, from sending to the end of the upstream body.',
      labelNames: ['upstream', 'status'],
      buckets: latencyBucketsSeconds,
      registers: [registry],
    }),
    gatewayOverhead: new Histogram({
      name: 'ctxgate_gateway_overhead_seconds',
      help: 'Time the gateway itself added to a request: total minus time spent waiting on the upstream.',
      labelNames: ['route'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: 'ctxgate_upstream_errors_total',
      help: 'Upstream calls that failed without an HTTP answer (timeouts, refused or reset connections).',
      labelNames: ['upstream', 'code'],
      registers: [registry],
    }),
    modelLabel(model) {
      if (model === undefined) return '';
      if (seenModels.has(model)) return model;
      if (seenModels.size >= maxModelLabels || model.length > 100) return 'other';
      seenModels.add(model);
      return model;
    },
  };
}
