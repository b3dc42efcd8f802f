// Prometheus metrics of one gateway instance, on registries of its own (no global state), so that two
// apps in one process, as in tests, never share counters.
//
// The per-request counters and histograms are a small in-house implementation: prom-client hashes and
// validates a label object on every observation, which showed up as a measurable share of the
// gateway's CPU per request under load; here a label set is resolved once to its series and kept.
// prom-client still provides the process metrics and the registry content type.
import { Registry, collectDefaultMetrics } from 'prom-client';

const latencyBucketsSeconds = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];
const overheadBucketsSeconds = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
];
const maxModelLabels = 200;

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function formatLabels(names: readonly string[], values: readonly string[], extra = ''): string {
  const pairs = names.map((name, index) => `${name}="${escapeLabelValue(values[index] ?? '')}"`);
  if (extra !== '') pairs.push(extra);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

interface Metric {
  render(): string;
}

/**
 * The key of a label set's series: its values in label order. Built without an intermediate array, as
 * every request looks up several series.
 */
function seriesKey<Label extends string>(names: readonly Label[], labels: Record<Label, string>): string {
  let key = '';
  for (let index = 0; index < names.length; index++)
    key += index === 0 ? labels[names[index] as Label] : `\u0000${labels[names[index] as Label]}`;
  return key;
}

const valuesOf = <Label extends string>(names: readonly Label[], labels: Record<Label, string>): string[] =>
  names.map((name) => labels[name]);

export class CounterMetric<Label extends string> implements Metric {
  private readonly series = new Map<string, { values: string[]; count: number }>();
  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly Label[],
  ) {}

  inc(labels: Record<Label, string>, amount = 1): void {
    const key = seriesKey(this.labelNames, labels);
    let entry = this.series.get(key);
    if (entry === undefined) {
      entry = { values: valuesOf(this.labelNames, labels), count: 0 };
      this.series.set(key, entry);
    }
    entry.count += amount;
  }

  render(): string {
    let text = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} counter\n`;
    for (const { values, count } of this.series.values())
      text += `${this.name}${formatLabels(this.labelNames, values)} ${count}\n`;
    return text;
  }
}

export class GaugeMetric<Label extends string> implements Metric {
  private readonly series = new Map<string, { values: string[]; value: number }>();
  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly Label[],
  ) {}

  set(labels: Record<Label, string>, value: number): void {
    this.series.set(seriesKey(this.labelNames, labels), { values: valuesOf(this.labelNames, labels), value });
  }

  remove(labels: Record<Label, string>): void {
    this.series.delete(seriesKey(this.labelNames, labels));
  }

  render(): string {
    let text = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} gauge\n`;
    for (const { values, value } of this.series.values())
      text += `${this.name}${formatLabels(this.labelNames, values)} ${value}\n`;
    return text;
  }
}

export class HistogramMetric<Label extends string> implements Metric {
  private readonly series = new Map<
    string,
    { values: string[]; buckets: number[]; sum: number; count: number }
  >();
  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly Label[],
    private readonly upperBounds: readonly number[],
  ) {}

  observe(labels: Record<Label, string>, value: number): void {
    const key = seriesKey(this.labelNames, labels);
    let entry = this.series.get(key);
    if (entry === undefined) {
      entry = {
        values: valuesOf(this.labelNames, labels),
        buckets: new Array<number>(this.upperBounds.length).fill(0),
        sum: 0,
        count: 0,
      };
      this.series.set(key, entry);
    }
    const bounds = this.upperBounds;
    let index = 0;
    while (index < bounds.length && !(value <= (bounds[index] as number))) index++;
    if (index < bounds.length) entry.buckets[index] = (entry.buckets[index] ?? 0) + 1;
    entry.sum += value;
    entry.count += 1;
  }

  render(): string {
    let text = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} histogram\n`;
    for (const { values, buckets, sum, count } of this.series.values()) {
      let cumulative = 0;
      for (const [index, bound] of this.upperBounds.entries()) {
        cumulative += buckets[index] ?? 0;
        text += `${this.name}_bucket${formatLabels(this.labelNames, values, `le="${bound}"`)} ${cumulative}\n`;
      }
      text += `${this.name}_bucket${formatLabels(this.labelNames, values, 'le="+Inf"')} ${count}\n`;
      text += `${this.name}_sum${formatLabels(this.labelNames, values)} ${sum}\n`;
      text += `${this.name}_count${formatLabels(this.labelNames, values)} ${count}\n`;
    }
    return text;
  }
}

export interface GatewayMetrics {
  requests: CounterMetric<'route' | 'status' | 'model' | 'code'>;
  requestDuration: HistogramMetric<'route'>;
  upstreamDuration: HistogramMetric<'upstream' | 'status'>;
  gatewayOverhead: HistogramMetric<'route'>;
  upstreamErrors: CounterMetric<'upstream' | 'code'>;
  upstreamRetries: CounterMetric<'upstream' | 'reason'>;
  overflowRetries: CounterMetric<'upstream' | 'model' | 'remedy'>;
  recallCalls: CounterMetric<'model'>;
  upstreamTruncations: CounterMetric<'upstream' | 'model'>;
  summarizationRuns: CounterMetric<'outcome'>;
  summarizationRejections: CounterMetric<'reason'>;
  summarizationFailures: CounterMetric<'reason'>;
  summarizationTokensSaved: CounterMetric<never>;
  summarizationCompression: HistogramMetric<never>;
  summarizationDuration: HistogramMetric<'outcome'>;
  summarizationFactRecall: HistogramMetric<'stage'>;
  budgetRefusals: CounterMetric<'budget'>;
  budgetWarnings: CounterMetric<'budget'>;
  budgetSoftExceeded: CounterMetric<'budget'>;
  budgetDelays: CounterMetric<'delay_ms'>;
  budgetTokens: CounterMetric<'source'>;
  budgetStoreErrors: CounterMetric<never>;
  sessionsEvicted: CounterMetric<'reason'>;
  sessionWaits: CounterMetric<never>;
  contextActions: CounterMetric<'action'>;
  tokens: CounterMetric<'model' | 'kind' | 'source'>;
  learnedWindow: GaugeMetric<'upstream' | 'model'>;
  learnedChanges: CounterMetric<'kind'>;

  contentType: string;
  /** Bounds label cardinality: models beyond the first few hundred seen are counted as "other". */
  modelLabel(model: string | undefined): string;
  /** The Prometheus text exposition of every metric. */
  render(): Promise<string>;
}

/** How often the event-loop lag metrics take a sample. */
const eventLoopSampleMs = 100;

export function createMetrics({
  collectProcessMetrics = true,
}: { collectProcessMetrics?: boolean } = {}): GatewayMetrics {
  const processRegistry = new Registry();
  // The event-loop lag is sampled every 100 ms, not prom-client's default 10 ms: an idle replica then
  // wakes ~10 times a second instead of ~100 (docs/operations.md).
  if (collectProcessMetrics)
    collectDefaultMetrics({
      register: processRegistry,
      prefix: 'ctxgate_',
      eventLoopMonitoringPrecision: eventLoopSampleMs,
    });
  const seenModels = new Set<string>();
  const requests = new CounterMetric(
    'ctxgate_http_requests_total',
    "HTTP requests answered, by route, status, model and the gateway's error code (empty when none).",
    ['route', 'status', 'model', 'code'],
  );
  const requestDuration = new HistogramMetric(
    'ctxgate_http_request_duration_seconds',
    'Total time from request to the end of the response.',
    ['route'],
    latencyBucketsSeconds,
  );
  const upstreamDuration = new HistogramMetric(
    'ctxgate_upstream_duration_seconds',
    'Time spent on upstream calls, from sending to the end of the upstream body.',
    ['upstream', 'status'],
    latencyBucketsSeconds,
  );
  const gatewayOverhead = new HistogramMetric(
    'ctxgate_gateway_overhead_seconds',
    'Time the gateway itself added to a request: total minus time spent waiting on the upstream.',
    ['route'],
    overheadBucketsSeconds,
  );
  const upstreamErrors = new CounterMetric(
    'ctxgate_upstream_errors_total',
    'Upstream calls that failed without an HTTP answer (timeouts, refused or reset connections).',
    ['upstream', 'code'],
  );
  const upstreamRetries = new CounterMetric(
    'ctxgate_upstream_retries_total',
    'Upstream calls sent again before any byte reached the client, by reason (rate_limited, server, connection: after a backoff; refused_field: at once, without a field the model refused).',
    ['upstream', 'reason'],
  );
  const overflowRetries = new CounterMetric(
    'ctxgate_context_overflow_retries_total',
    'Requests sent again, smaller, after the upstream refused them as over its context window.',
    ['upstream', 'model', 'remedy'],
  );
  const recallCalls = new CounterMetric(
    'ctxgate_recall_calls_total',
    'Calls of the recall tool the gateway answered from what the model was not shown (docs/budgeting.md#recall).',
    ['model'],
  );
  const upstreamTruncations = new CounterMetric(
    'ctxgate_upstream_truncations_total',
    'Answers whose usage.prompt_tokens was far below what was sent: the upstream cut the prompt silently.',
    ['upstream', 'model'],
  );
  const summarizationRuns = new CounterMetric(
    'ctxgate_summarization_runs_total',
    'Background summarization jobs by outcome (stored, rejected, failed, conflict, skipped).',
    ['outcome'],
  );
  const summarizationRejections = new CounterMetric(
    'ctxgate_summarization_rejections_total',
    'Summaries refused by the guard, by reason (empty, error_text, truncated, lost_pinned).',
    ['reason'],
  );
  const summarizationFailures = new CounterMetric(
    'ctxgate_summarization_failures_total',
    'Summarization jobs that failed (upstream status or error, timeout, store), by reason.',
    ['reason'],
  );
  const summarizationTokensSaved = new CounterMetric(
    'ctxgate_summarization_tokens_saved_total',
    'Tokens of history (and previous summaries) replaced by stored summaries, less the summaries themselves.',
    [],
  );
  const summarizationCompression = new HistogramMetric(
    'ctxgate_summarization_compression_ratio',
    'Tokens a stored summary replaced per token of summary.',
    [],
    [1, 1.5, 2, 3, 5, 8, 13, 21, 34, 55, 100],
  );
  const summarizationDuration = new HistogramMetric(
    'ctxgate_summarization_duration_seconds',
    'Duration of summarization jobs, by outcome.',
    ['outcome'],
    latencyBucketsSeconds,
  );
  const summarizationFactRecall = new HistogramMetric(
    'ctxgate_summarization_fact_recall',
    "Share of the summarized messages' identifier-like facts a summary states, before and after its repair (stage).",
    ['stage'],
    [0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1],
  );
  const budgetRefusals = new CounterMetric(
    'ctxgate_budget_refusals_total',
    'Requests refused (429 budget_exceeded) by a hard token budget, by budget.',
    ['budget'],
  );
  const budgetWarnings = new CounterMetric(
    'ctxgate_budget_warnings_total',
    'Budgets that passed their warning share (budgets.warn_at), once per budget and period.',
    ['budget'],
  );
  const budgetSoftExceeded = new CounterMetric(
    'ctxgate_budget_soft_exceeded_total',
    'Requests served over a soft token budget, by budget.',
    ['budget'],
  );
  const budgetDelays = new CounterMetric(
    'ctxgate_budget_delays_total',
    'Requests delayed by budget backpressure, by delay.',
    ['delay_ms'],
  );
  const budgetTokens = new CounterMetric(
    'ctxgate_budget_tokens_total',
    'Tokens counted against budgets, by source (usage: reported by the upstream; estimate: it reported none).',
    ['source'],
  );
  const budgetStoreErrors = new CounterMetric(
    'ctxgate_budget_store_errors_total',
    'Budget checks or counts that failed because the store was unreachable (the request was not limited).',
    [],
  );
  const sessionsEvicted = new CounterMetric(
    'ctxgate_sessions_evicted_total',
    'Sessions dropped by the in-process store (no Redis): idle past their TTL (expired), or least recently used past sessions.memory_mb (memory).',
    ['reason'],
  );
  const sessionWaits = new CounterMetric(
    'ctxgate_session_waits_total',
    'Session requests that found their session held by another request and waited their turn (those still waiting past sessions.busy_wait_ms are answered 409 session_busy).',
    [],
  );
  const contextActions = new CounterMetric(
    'ctxgate_context_actions_total',
    'What the context engine did to requests it sent upstream, by action: messages dropped, tool results truncated or masked, iteration groups dropped, summaries used, orphans removed, oversize messages cut.',
    ['action'],
  );
  const tokens = new CounterMetric(
    'ctxgate_tokens_total',
    'Tokens of answered chat requests by the model that answered, kind (prompt, completion) and source (usage: the upstream reported it; estimate: counted by the gateway).',
    ['model', 'kind', 'source'],
  );
  const learnedWindow = new GaugeMetric(
    'ctxgate_learned_window_tokens',
    'The window every tenant uses for a model on an upstream, learned from overflows two tenants agree on (absent when none is).',
    ['upstream', 'model'],
  );
  const learnedChanges = new CounterMetric(
    'ctxgate_learned_changes_total',
    'Changes of what the gateway learned, by kind of entry (model, tool_set) or reset.',
    ['kind'],
  );
  const named = {
    tokens,
    learnedWindow,
    learnedChanges,
    sessionsEvicted,
    sessionWaits,
    contextActions,
    budgetRefusals,
    budgetWarnings,
    budgetSoftExceeded,
    budgetDelays,
    budgetTokens,
    budgetStoreErrors,
    requests,
    requestDuration,
    upstreamDuration,
    gatewayOverhead,
    upstreamErrors,
    upstreamRetries,
    overflowRetries,
    recallCalls,
    upstreamTruncations,
    summarizationRuns,
    summarizationRejections,
    summarizationFailures,
    summarizationTokensSaved,
    summarizationCompression,
    summarizationDuration,
    summarizationFactRecall,
  };
  const own: Metric[] = Object.values(named);
  return {
    ...named,
    contentType: processRegistry.contentType,
    modelLabel(model) {
      if (model === undefined) return '';
      if (seenModels.has(model)) return model;
      if (seenModels.size >= maxModelLabels || model.length > 100) return 'other';
      seenModels.add(model);
      return model;
    },
    async render() {
      return own.map((metric) => metric.render()).join('\n') + '\n' + (await processRegistry.metrics());
    },
  };
}
