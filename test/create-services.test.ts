// The composition of the application services: the learned limits as the config sets them (forgotten,
// re-probed and bounded when docs/configuration.md says), their changes told to the metrics and the log,
// and the in-process stores used where no shared one is given.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load-config.js';
import type { OverflowObservation } from '../src/context/learned-limit-rules.js';
import { createServices, learnedLimitsOptions } from '../src/create-services.js';
import { createMetrics } from '../src/metrics.js';
import { createMemorySessionStore } from '../src/store/memory-session-store.js';
import { createMemoryLearnedLimits } from '../src/store/learned-limits.js';
import { createTiktokenTokenizers } from '../src/tokenizer/tiktoken-tokenizers.js';
import { scriptedUpstream } from './helpers/port-fakes.js';
import { captureLogs, writeConfigFile } from './helpers/start-gateway.js';

const stated = (window: number): OverflowObservation => ({
  stated: window,
  failedSize: window + 500,
  status: 400,
  textClass: 'numbers',
});

function setup(learningYaml: string) {
  const config = loadConfig({
    env: {
      UPSTREAM_BASE_URL: 'http://provider.invalid/v1',
      CTXGATE_CONFIG: writeConfigFile(`learning:\n${learningYaml}`),
    },
  });
  const logs = captureLogs();
  const logger = pino({ level: 'info' }, logs.destination);
  const metrics = createMetrics({ collectProcessMetrics: false });
  let clock = 1_000_000;
  const limits = createMemoryLearnedLimits({
    ...learnedLimitsOptions(config, logger, metrics),
    now: () => clock,
  });
  /** Two tenants agree on a window for `model`: it becomes the one every tenant uses. */
  const agree = (model: string, window: number) => {
    limits.recordOverflow('default', model, 'a', stated(window));
    limits.recordOverflow('default', model, 'b', stated(window));
  };
  return {
    config,
    logs,
    logger,
    metrics,
    limits,
    agree,
    advance: (seconds: number) => (clock += seconds * 1000),
  };
}

describe('learned limits as the config sets them', () => {
  const cases = [
    {
      name: 'learning.window_ttl_seconds: a window is forgotten that long after the overflow confirming it',
      yaml: '  window_ttl_seconds: 600\n  reprobe_after_seconds: 100000\n',
      before: { seconds: 599, limit: { window: 6_000 } },
      after: { seconds: 601, limit: {} },
    },
    {
      name: 'learning.reprobe_after_seconds: a window unconfirmed that long is probed once per tenant',
      yaml: '  window_ttl_seconds: 100000\n  reprobe_after_seconds: 60\n',
      before: { seconds: 59, limit: { window: 6_000 } },
      after: { seconds: 61, limit: { window: 6_000, probe: true } },
    },
  ];
  for (const { name, yaml, before, after } of cases)
    it(name, () => {
      const { limits, agree, advance } = setup(yaml);
      agree('m', 6_000);
      advance(before.seconds);
      expect(limits.get('default', 'm', 'c', { preview: true })).toEqual(before.limit);
      advance(after.seconds - before.seconds);
      expect(limits.get('default', 'm', 'c', { preview: true })).toEqual(after.limit);
    });

  it('learning.max_entries: the least recently used entry goes past it', () => {
    const { limits, agree } = setup('  max_entries: 100\n');
    for (let index = 0; index <= 100; index++) agree(`model-${index}`, 5_000 + index);
    const kept = limits.list().map((entry) => entry.model);
    expect(kept).toHaveLength(100);
    expect(kept).not.toContain('model-0');
    expect(limits.get('default', 'model-0', 'c')).toEqual({});
    expect(limits.get('default', 'model-100', 'c')).toEqual({ window: 5_100 });
  });
});

describe('a learned limit’s change, told', () => {
  it('sets the shared window’s gauge, counts the change and writes one line saying what changed', async () => {
    const { agree, metrics, logs } = setup('  max_entries: 100\n');
    agree('acme-large', 6_000);
    const text = await metrics.render();
    expect(text).toContain('ctxgate_learned_window_tokens{upstream="default",model="acme-large"} 6000');
    expect(text).toMatch(/ctxgate_learned_changes_total\{kind="model"\} [1-9]/);
    const changed = logs.lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === 'learned limit changed' && line.sharedWindowAfter === 6_000);
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatchObject({
      kind: 'model',
      upstream: 'default',
      model: 'acme-large',
      tenantsWithEvidence: 2,
    });
    expect(changed[0]?.sharedWindowBefore).toBeUndefined();
  });

  it('removes the gauge when the entry is reset, and counts the reset', async () => {
    const { limits, agree, metrics } = setup('  max_entries: 100\n');
    agree('acme-large', 6_000);
    expect(await limits.reset()).toBe(1);
    const text = await metrics.render();
    expect(text).not.toContain('model="acme-large"} 6000');
    expect(text).toMatch(/ctxgate_learned_changes_total\{kind="reset"\} 1/);
  });
});

describe('services built from their parts', () => {
  it('uses the learned limits it is given, and otherwise its own, set by the config', () => {
    const { config, logger, metrics, limits } = setup('  max_entries: 100\n');
    const parts = {
      config,
      logger,
      metrics,
      upstream: scriptedUpstream([]),
      tokenizers: createTiktokenTokenizers(),
      sessionStore: createMemorySessionStore({
        limits: { maxActiveMessages: 100, minActiveMessages: 10, idleTtlSeconds: 60 },
      }),
    };
    expect(createServices({ ...parts, learnedLimits: limits }).learnedLimits).toBe(limits);
    const own = createServices(parts).learnedLimits;
    expect(own).not.toBe(limits);
    for (let index = 0; index <= 100; index++) {
      own.recordOverflow('default', `model-${index}`, 'a', stated(5_000));
      own.recordOverflow('default', `model-${index}`, 'b', stated(5_000));
    }
    const kept = own.list().map((entry) => entry.model);
    expect(kept).toHaveLength(100);
    expect(kept).not.toContain('model-0');
  });
});
