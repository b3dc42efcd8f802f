// The gateway's metrics (metrics.ts) in the Prometheus text exposition: every sample line well formed
// whatever a client put in a label (the model name is the client's text: quotes, backslashes and line
// breaks are escaped, so no client can write a sample of its own), the model label bounded (200 names,
// then "other"), histograms cumulative with +Inf equal to the count.
import { describe, expect, it } from 'vitest';
import { CounterMetric, createMetrics, HistogramMetric } from '../src/metrics.js';

/** A sample line: a name, optional labels with escaped values, a number. */
const sampleLine =
  /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*",?)*\})? -?[0-9.e+-]+$/;

function samples(text: string): string[] {
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}

describe('metrics', () => {
  it.each([
    ['a quote and a brace', 'gpt"} 1\nctxgate_fake_total 1'],
    ['a backslash', 'C:\\models\\llama'],
    ['a line break', 'model\nname'],
    ['unicode', 'modèle-日本'],
  ])('keep every sample line well formed with %s in a label', async (_name, model) => {
    const metrics = createMetrics({ collectProcessMetrics: false });
    const label = metrics.modelLabel(model);
    metrics.upstreamTruncations.inc({ upstream: 'default', model: label });
    const text = await metrics.render();
    for (const line of samples(text)) expect(line).toMatch(sampleLine);
    expect(text).not.toMatch(/^ctxgate_fake_total/m);
    const truncations = samples(text).filter((line) => line.startsWith('ctxgate_upstream_truncations_total'));
    expect(truncations).toHaveLength(1);
  });

  it('names at most 200 models, then "other"; a name over 100 characters is "other"', () => {
    const metrics = createMetrics({ collectProcessMetrics: false });
    const labels = Array.from({ length: 205 }, (_model, index) => metrics.modelLabel(`model-${index}`));
    expect(labels.slice(0, 200)).toEqual(Array.from({ length: 200 }, (_model, index) => `model-${index}`));
    expect(labels.slice(200)).toEqual(Array(5).fill('other'));
    // A model already named stays named.
    expect(metrics.modelLabel('model-7')).toBe('model-7');
    expect(createMetrics({ collectProcessMetrics: false }).modelLabel('m'.repeat(101))).toBe('other');
    expect(metrics.modelLabel(undefined)).toBe('');
  });

  it('counts per label set', () => {
    const counter = new CounterMetric('t_total', 'Test.', ['kind']);
    counter.inc({ kind: 'a' });
    counter.inc({ kind: 'b' }, 3);
    counter.inc({ kind: 'a' }, 2);
    expect(samples(counter.render())).toEqual(['t_total{kind="a"} 3', 't_total{kind="b"} 3']);
  });

  it('keeps label sets apart that share values in other places', () => {
    const counter = new CounterMetric('t_total', 'Test.', ['model', 'kind']);
    counter.inc({ model: 'm', kind: 'prompt' }, 5);
    counter.inc({ model: 'm', kind: 'completion' });
    counter.inc({ model: 'prompt', kind: 'm' }, 2);
    counter.inc({ model: 'm', kind: 'prompt' });
    expect(samples(counter.render())).toEqual([
      't_total{model="m",kind="prompt"} 6',
      't_total{model="m",kind="completion"} 1',
      't_total{model="prompt",kind="m"} 2',
    ]);
  });

  it('renders histogram buckets cumulative, +Inf equal to the count', () => {
    const histogram = new HistogramMetric('t_seconds', 'Test.', ['route'], [0.1, 1]);
    for (const value of [0.05, 0.1, 0.5, 2, 30]) histogram.observe({ route: '/x' }, value);
    expect(samples(histogram.render())).toEqual([
      't_seconds_bucket{route="/x",le="0.1"} 2',
      't_seconds_bucket{route="/x",le="1"} 3',
      't_seconds_bucket{route="/x",le="+Inf"} 5',
      't_seconds_sum{route="/x"} 32.65',
      't_seconds_count{route="/x"} 5',
    ]);
  });
});
