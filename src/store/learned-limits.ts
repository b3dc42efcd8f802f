// What the gateway learns about an upstream's real limits (SPEC §6), per upstream and model, shared by
// replicas through Redis (in-process without it). The rules are pure (context/learned-limit-rules.ts);
// this module keeps and moves their values.
//
// No request waits on Redis for them: every replica reads from its own copy, which a background loop
// refreshes from Redis once a second (one HGETALL of one hash) after writing what the replica learned
// since (estimate ratios aggregated per model, at most one write per model per second). What a replica
// observes itself applies to its next request at once, and still applies while Redis is unreachable.
import {
  limitOf,
  mergeBounds,
  nextRatio,
  nextToolTokens,
  successTeaches,
  withOverflow,
  type LearnedLimit,
  type LimitBounds,
  type RatioSample,
} from '../context/learned-limit-rules.js';
import type { RedisConnection } from './redis-client.js';
import { defineScripts, learnedLimitScripts } from './redis-scripts.js';

export type { LearnedLimit } from '../context/learned-limit-rules.js';

export interface LearnedLimits {
  /** This replica's view; never waits on a store. */
  get(upstream: string, model: string): LearnedLimit;
  /** An overflow: the upstream's stated window when it gave one, and the size that failed. */
  recordOverflow(upstream: string, model: string, observed: { window?: number; failedSize: number }): void;
  /** A request of this size went through. */
  recordSuccess(upstream: string, model: string, size: number): void;
  /** The upstream counted `reported` prompt tokens where the gateway estimated `estimated`. */
  recordRatio(upstream: string, model: string, sample: RatioSample): void;
  /** The tokens the upstream counts for a tool set (keyed by a hash of its definitions), once learned. */
  toolSetTokens(upstream: string, model: string, toolSet: string): number | undefined;
  /** A request with this tool set: the upstream's prompt tokens less the messages' estimate. */
  recordToolSetTokens(upstream: string, model: string, toolSet: string, tokens: number): void;
  /** True once the shared values have been read (at once in process). */
  loaded(): boolean;
  /** Writes what is pending (best effort) and stops the background refresh. */
  close(): Promise<void>;
}

const entryKey = (upstream: string, model: string): string => `${upstream}\u0000${model}\u0000`;
/** A tool set's entry: beside its model's, keyed by the hash of its definitions. */
const toolSetKey = (upstream: string, model: string, toolSet: string): string =>
  `${upstream}\u0000${model}\u0001tools:${toolSet}\u0000`;

/** The fields a replica averages in process and writes at most once a second. */
type AveragedField = 'ratio' | 'toolTokens';

/** Observations per entry, applied with the pure rules. */
function createBoundsTable(): {
  get(key: string): LimitBounds | undefined;
  overflow(key: string, observed: { window?: number; failedSize: number }): void;
  success(key: string, size: number): boolean;
  ratio(key: string, sample: RatioSample, base: number | undefined): number;
  toolTokens(key: string, sample: number, base: number | undefined): number;
  /** Forgets an averaged field once it has been written, unless a newer sample has moved it since. */
  clear(key: string, field: AveragedField, ifEquals: number): void;
} {
  const entries = new Map<string, LimitBounds>();
  return {
    get: (key) => entries.get(key),
    overflow(key, observed) {
      entries.set(key, withOverflow(entries.get(key) ?? {}, observed));
    },
    success(key, size) {
      const entry = entries.get(key) ?? {};
      if (!successTeaches(entry, size)) return false;
      entries.set(key, { ...entry, largestSucceeded: size });
      return true;
    },
    ratio(key, sample, base) {
      const entry = entries.get(key) ?? {};
      const ratio = nextRatio(entry.ratio ?? base, sample);
      entries.set(key, { ...entry, ratio });
      return ratio;
    },
    toolTokens(key, sample, base) {
      const entry = entries.get(key) ?? {};
      const toolTokens = nextToolTokens(entry.toolTokens ?? base, sample);
      entries.set(key, { ...entry, toolTokens });
      return toolTokens;
    },
    clear(key, field, ifEquals) {
      const entry = entries.get(key);
      if (entry?.[field] !== ifEquals) return;
      const rest = { ...entry };
      delete rest[field];
      entries.set(key, rest);
    },
  };
}

/** In-process learned limits: one replica only. */
export function createMemoryLearnedLimits(): LearnedLimits {
  const table = createBoundsTable();
  return {
    get: (upstream, model) => limitOf(table.get(entryKey(upstream, model))),
    recordOverflow(upstream, model, observed) {
      table.overflow(entryKey(upstream, model), observed);
    },
    recordSuccess(upstream, model, size) {
      table.success(entryKey(upstream, model), size);
    },
    recordRatio(upstream, model, sample) {
      table.ratio(entryKey(upstream, model), sample, undefined);
    },
    toolSetTokens: (upstream, model, toolSet) => table.get(toolSetKey(upstream, model, toolSet))?.toolTokens,
    recordToolSetTokens(upstream, model, toolSet, tokens) {
      table.toolTokens(toolSetKey(upstream, model, toolSet), tokens, undefined);
    },
    loaded: () => true,
    close: async () => undefined,
  };
}

/** The one hash all learned limits live in (one slot on a Cluster). */
export const learnedLimitsKey = 'ctxgate:{learned-limits}';

type LearnCommand = (
  key: string,
  prefix: string,
  field: string,
  mode: 'min' | 'below_failed' | 'set',
  value: number,
  nowSeconds: number,
  maxFields: number,
) => Promise<number>;

const boundFields = ['stated', 'smallestFailed', 'largestSucceeded', 'ratio', 'toolTokens'] as const;

/** Parses the hash into entries; entries not written for `retentionMs` are listed for removal. */
function parseTable(
  fields: Record<string, string>,
  nowMs: number,
  retentionMs: number,
): { entries: Map<string, LimitBounds>; expiredFields: string[] } {
  const entries = new Map<string, LimitBounds>();
  const touched = new Map<string, number>();
  for (const [field, value] of Object.entries(fields)) {
    const cut = field.lastIndexOf('\u0000');
    if (cut < 0) continue;
    const prefix = field.slice(0, cut + 1);
    const name = field.slice(cut + 1);
    const number = Number(value);
    if (!Number.isFinite(number)) continue;
    if (name === 'touched') {
      touched.set(prefix, number);
      continue;
    }
    if (!(boundFields as readonly string[]).includes(name)) continue;
    const entry = entries.get(prefix) ?? {};
    entry[name as (typeof boundFields)[number]] = number;
    entries.set(prefix, entry);
  }
  const expiredFields: string[] = [];
  for (const prefix of new Set([...entries.keys(), ...touched.keys()])) {
    if ((touched.get(prefix) ?? 0) * 1000 >= nowMs - retentionMs) continue;
    entries.delete(prefix);
    for (const name of [...boundFields, 'touched']) expiredFields.push(prefix + name);
  }
  return { entries, expiredFields };
}

/**
 * Learned limits in Redis, in one hash. Each replica keeps a copy refreshed every `refreshMs`; ratios
 * it measured are written at the next refresh (aggregated), window bounds at once (they are rare).
 */
export function createRedisLearnedLimits({
  redis,
  now = () => Date.now(),
  refreshMs = 1_000,
  retentionMs = 30 * 24 * 3_600_000,
  maxFields = 50_000,
}: {
  redis: RedisConnection;
  now?: () => number;
  refreshMs?: number;
  retentionMs?: number;
  maxFields?: number;
}): LearnedLimits {
  const learnCommand = defineScripts(redis, learnedLimitScripts).learn as LearnCommand;
  const learn = (prefix: string, field: string, mode: 'min' | 'below_failed' | 'set', value: number) =>
    learnCommand(learnedLimitsKey, prefix, field, mode, value, Math.floor(now() / 1000), maxFields);

  let shared = new Map<string, LimitBounds>();
  /** What this replica observed itself; its ratio only while not yet written. */
  const own = createBoundsTable();
  const pendingRatios = new Set<string>();
  const pendingToolSets = new Set<string>();
  let hasLoaded = false;
  let closed = false;
  let refreshing: Promise<void> | undefined;

  /** Writes what this replica averaged of one field; what fails stays pending for the next refresh. */
  async function flushPending(pending: Set<string>, field: AveragedField): Promise<void> {
    for (const prefix of [...pending]) {
      const value = own.get(prefix)?.[field];
      pending.delete(prefix);
      if (value === undefined) continue;
      try {
        await learn(prefix, field, 'set', value);
        // Written: from now on the shared value (which the next refresh brings) is the one to use.
        shared.set(prefix, { ...shared.get(prefix), [field]: value });
        own.clear(prefix, field, value);
      } catch {
        pending.add(prefix);
        return;
      }
    }
  }

  async function refresh(): Promise<void> {
    await flushPending(pendingRatios, 'ratio');
    await flushPending(pendingToolSets, 'toolTokens');
    try {
      const parsed = parseTable(await redis.hgetall(learnedLimitsKey), now(), retentionMs);
      shared = parsed.entries;
      hasLoaded = true;
      if (parsed.expiredFields.length > 0)
        await redis.hdel(learnedLimitsKey, ...parsed.expiredFields).catch(() => undefined);
    } catch {
      // Redis unreachable: keep the copy; requests go on with it and what this replica saw.
    }
  }

  const tick = (): void => {
    if (refreshing !== undefined || closed) return;
    refreshing = refresh().finally(() => {
      refreshing = undefined;
    });
  };
  const timer = setInterval(tick, refreshMs);
  timer.unref();
  tick();

  const writeThrough = (write: Promise<unknown>): void => {
    write.catch(() => undefined);
  };

  return {
    get(upstream, model) {
      const prefix = entryKey(upstream, model);
      return limitOf(mergeBounds(shared.get(prefix), own.get(prefix)));
    },
    recordOverflow(upstream, model, observed) {
      const prefix = entryKey(upstream, model);
      own.overflow(prefix, observed);
      writeThrough(
        (async () => {
          if (observed.window !== undefined) await learn(prefix, 'stated', 'min', observed.window);
          await learn(prefix, 'smallestFailed', 'min', observed.failedSize);
        })(),
      );
    },
    recordSuccess(upstream, model, size) {
      const prefix = entryKey(upstream, model);
      // Only a success below a known failure teaches anything; most requests write nothing.
      if (!successTeaches(mergeBounds(shared.get(prefix), own.get(prefix)), size)) return;
      own.success(prefix, size);
      writeThrough(learn(prefix, 'largestSucceeded', 'below_failed', size));
    },
    recordRatio(upstream, model, sample) {
      const prefix = entryKey(upstream, model);
      own.ratio(prefix, sample, shared.get(prefix)?.ratio);
      pendingRatios.add(prefix);
    },
    toolSetTokens(upstream, model, toolSet) {
      const prefix = toolSetKey(upstream, model, toolSet);
      return own.get(prefix)?.toolTokens ?? shared.get(prefix)?.toolTokens;
    },
    recordToolSetTokens(upstream, model, toolSet, tokens) {
      const prefix = toolSetKey(upstream, model, toolSet);
      own.toolTokens(prefix, tokens, shared.get(prefix)?.toolTokens);
      pendingToolSets.add(prefix);
    },
    loaded: () => hasLoaded,
    async close() {
      clearInterval(timer);
      await refreshing;
      closed = true;
      await flushPending(pendingRatios, 'ratio').catch(() => undefined);
      await flushPending(pendingToolSets, 'toolTokens').catch(() => undefined);
    },
  };
}
