// What the gateway learns about an upstream's real limits (SPEC §6), per upstream and model, shared by
// replicas through Redis (in-process without it). A window parsed from an overflow error is taken as
// it is; without numbers, failed and succeeded request sizes bound it, and the learned window is the
// largest size known to succeed below the smallest known to fail. Sizes are prompt plus output
// reserve, in the gateway's own estimate.
import type { RedisConnection } from './redis-client.js';

export interface LearnedLimit {
  /** The window to use for this upstream and model, when anything was learned. */
  window?: number;
  /** Upstream-reported prompt tokens per estimated token (moving average, clamped), once measured. */
  ratio?: number;
}

export interface LearnedLimits {
  /** Answers at once when nothing needs fetching (the common case: no Redis round trip per request). */
  get(upstream: string, model: string): LearnedLimit | Promise<LearnedLimit>;
  /** An overflow: the upstream's stated window when it gave one, and the size that failed. */
  recordOverflow(
    upstream: string,
    model: string,
    observed: { window?: number; failedSize: number },
  ): Promise<void>;
  /** A request of this size went through. */
  recordSuccess(upstream: string, model: string, size: number): Promise<void>;
  /** The upstream counted `reported` prompt tokens where the gateway estimated `estimated`. */
  recordRatio(
    upstream: string,
    model: string,
    sample: { reported: number; estimated: number },
  ): Promise<void>;
}

/** The estimate ratio moves by this share of each new sample, and stays within these bounds. */
export const ratioSmoothing = 0.2;
export const ratioBounds = { min: 0.5, max: 2 } as const;

export function nextRatio(
  previous: number | undefined,
  sample: { reported: number; estimated: number },
): number {
  const measured = sample.reported / Math.max(1, sample.estimated);
  const blended = previous === undefined ? measured : previous + ratioSmoothing * (measured - previous);
  return Math.min(ratioBounds.max, Math.max(ratioBounds.min, blended));
}

interface Bounds {
  ratio?: number;
  stated?: number;
  smallestFailed?: number;
  largestSucceeded?: number;
}

/** Without a stated window and before any success below the failure, try this share of what failed. */
const unknownWindowShare = 0.8;

export function windowFromBounds(bounds: Bounds): number | undefined {
  if (bounds.stated !== undefined) return bounds.stated;
  if (bounds.smallestFailed === undefined) return undefined;
  if (bounds.largestSucceeded !== undefined && bounds.largestSucceeded < bounds.smallestFailed)
    return bounds.largestSucceeded;
  return Math.max(1, Math.floor(bounds.smallestFailed * unknownWindowShare));
}

const cacheMs = 2_000;
const noLimit: LearnedLimit = Object.freeze({});

function limitOf(bounds: Bounds): LearnedLimit {
  const window = windowFromBounds(bounds);
  if (window === undefined && bounds.ratio === undefined) return noLimit;
  return {
    ...(window === undefined ? {} : { window }),
    ...(bounds.ratio === undefined ? {} : { ratio: bounds.ratio }),
  };
}

/** Bounds kept per key in this process: the in-process store, and each Redis replica's own view. */
function createLocalBounds(): {
  get(key: string): Bounds | undefined;
  overflow(key: string, observed: { window?: number; failedSize: number }): void;
  /** False when the size teaches nothing (not below a known failure). */
  success(key: string, size: number): boolean;
  ratio(key: string, sample: { reported: number; estimated: number }): void;
} {
  const entries = new Map<string, Bounds>();
  const entryFor = (key: string): Bounds => {
    let entry = entries.get(key);
    if (entry === undefined) {
      entry = {};
      entries.set(key, entry);
    }
    return entry;
  };
  return {
    get: (key) => entries.get(key),
    overflow(key, observed) {
      const entry = entryFor(key);
      if (observed.window !== undefined) entry.stated = Math.min(entry.stated ?? Infinity, observed.window);
      entry.smallestFailed = Math.min(entry.smallestFailed ?? Infinity, observed.failedSize);
    },
    success(key, size) {
      const entry = entryFor(key);
      if (entry.smallestFailed === undefined || size >= entry.smallestFailed) return false;
      entry.largestSucceeded = Math.max(entry.largestSucceeded ?? 0, size);
      return true;
    },
    ratio(key, sample) {
      const entry = entryFor(key);
      entry.ratio = nextRatio(entry.ratio, sample);
    },
  };
}

/** In-process learned limits: one replica only. */
export function createMemoryLearnedLimits(): LearnedLimits {
  const local = createLocalBounds();
  const keyOf = (upstream: string, model: string): string => `${upstream}\u0000${model}`;
  return {
    get(upstream, model) {
      const entry = local.get(keyOf(upstream, model));
      return entry === undefined ? noLimit : limitOf(entry);
    },
    async recordRatio(upstream, model, sample) {
      local.ratio(keyOf(upstream, model), sample);
    },
    async recordOverflow(upstream, model, observed) {
      local.overflow(keyOf(upstream, model), observed);
    },
    async recordSuccess(upstream, model, size) {
      local.success(keyOf(upstream, model), size);
    },
  };
}

// ARGV: field ('stated' | 'smallestFailed' keep the minimum, 'largestSucceeded' the maximum below
// smallestFailed), value.
const learnScript = `
local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
local value = tonumber(ARGV[2])
if ARGV[1] == 'largestSucceeded' then
  local failed = tonumber(redis.call('HGET', KEYS[1], 'smallestFailed'))
  if failed == nil or value >= failed then return 0 end
  if current == nil or value > current then redis.call('HSET', KEYS[1], ARGV[1], value) end
elseif current == nil or value < current then
  redis.call('HSET', KEYS[1], ARGV[1], value)
end
redis.call('EXPIRE', KEYS[1], 2592000)
return 1`;

// ARGV: reported, estimated, smoothing, min, max. The same moving average as nextRatio.
const ratioScript = `
local measured = tonumber(ARGV[1]) / tonumber(ARGV[2])
local previous = tonumber(redis.call('HGET', KEYS[1], 'ratio'))
local value = measured
if previous ~= nil then value = previous + tonumber(ARGV[3]) * (measured - previous) end
value = math.min(tonumber(ARGV[5]), math.max(tonumber(ARGV[4]), value))
redis.call('HSET', KEYS[1], 'ratio', tostring(value))
redis.call('EXPIRE', KEYS[1], 2592000)
return tostring(value)`;

/**
 * Learned limits in Redis: one hash per upstream and model. Reads are cached for two seconds per
 * replica (a request must not wait on Redis for this); what this replica learns applies at once.
 */
export function createRedisLearnedLimits({
  redis,
  now = () => Date.now(),
}: {
  redis: RedisConnection;
  now?: () => number;
}): LearnedLimits {
  redis.defineCommand('ctxgateLearn', { numberOfKeys: 1, lua: learnScript });
  const learn = (key: string, field: string, value: number): Promise<unknown> =>
    (
      redis as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>
    ).ctxgateLearn!.call(redis, key, field, value);
  redis.defineCommand('ctxgateRatio', { numberOfKeys: 1, lua: ratioScript });
  const ratio = (key: string, reported: number, estimated: number): Promise<unknown> =>
    (
      redis as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>
    ).ctxgateRatio!.call(redis, key, reported, estimated, ratioSmoothing, ratioBounds.min, ratioBounds.max);
  const cache = new Map<string, { bounds: Bounds; atMs: number }>();
  // What this replica observed itself: applies even while Redis is unreachable.
  const local = createLocalBounds();
  const keyOf = (upstream: string, model: string): string => `ctxgate:limits:{${upstream}}:${model}`;
  const merged = (key: string, shared: Bounds): Bounds => {
    const own = local.get(key);
    if (own === undefined) return shared;
    const smallest = (a?: number, b?: number): number | undefined =>
      a === undefined ? b : b === undefined ? a : Math.min(a, b);
    const result: Bounds = {};
    const stated = smallest(shared.stated, own.stated);
    const smallestFailed = smallest(shared.smallestFailed, own.smallestFailed);
    const largestSucceeded = Math.max(shared.largestSucceeded ?? 0, own.largestSucceeded ?? 0);
    if (stated !== undefined) result.stated = stated;
    if (smallestFailed !== undefined) result.smallestFailed = smallestFailed;
    if (largestSucceeded > 0 && (smallestFailed === undefined || largestSucceeded < smallestFailed))
      result.largestSucceeded = largestSucceeded;
    const ratio = shared.ratio ?? own.ratio;
    if (ratio !== undefined) result.ratio = ratio;
    return result;
  };

  async function bounds(upstream: string, model: string, fresh: boolean): Promise<Bounds> {
    const key = keyOf(upstream, model);
    const cached = cache.get(key);
    if (!fresh && cached !== undefined && now() - cached.atMs < cacheMs) return merged(key, cached.bounds);
    let read: Bounds = cached?.bounds ?? {};
    try {
      const fields = await redis.hgetall(key);
      read = {};
      if (fields.stated !== undefined) read.stated = Number(fields.stated);
      if (fields.smallestFailed !== undefined) read.smallestFailed = Number(fields.smallestFailed);
      if (fields.largestSucceeded !== undefined) read.largestSucceeded = Number(fields.largestSucceeded);
      if (fields.ratio !== undefined) read.ratio = Number(fields.ratio);
    } catch {
      // Redis unreachable: keep what this replica knew; requests go on with the configured window.
    }
    cache.set(key, { bounds: read, atMs: now() });
    return merged(key, read);
  }

  return {
    get(upstream, model) {
      const key = keyOf(upstream, model);
      const cached = cache.get(key);
      if (cached !== undefined && now() - cached.atMs < cacheMs) return limitOf(merged(key, cached.bounds));
      return bounds(upstream, model, false).then(limitOf);
    },
    async recordOverflow(upstream, model, observed) {
      const key = keyOf(upstream, model);
      local.overflow(key, observed);
      try {
        if (observed.window !== undefined) await learn(key, 'stated', observed.window);
        await learn(key, 'smallestFailed', observed.failedSize);
      } catch {
        // Learning is an optimisation; the retry goes on with what this request found out.
      }
      await bounds(upstream, model, true);
    },
    async recordRatio(upstream, model, sample) {
      const key = keyOf(upstream, model);
      local.ratio(key, sample);
      try {
        // The script answers the shared ratio it stored: kept in the cache without reading the hash again.
        const shared = Number(await ratio(key, sample.reported, Math.max(1, sample.estimated)));
        const cached = cache.get(key);
        if (cached !== undefined && Number.isFinite(shared)) cached.bounds.ratio = shared;
      } catch {
        // The local ratio still applies on this replica.
      }
    },
    async recordSuccess(upstream, model, size) {
      const key = keyOf(upstream, model);
      const known = await bounds(upstream, model, false);
      // Only a success below a known failure teaches anything; most requests skip Redis entirely.
      if (known.stated !== undefined || known.smallestFailed === undefined || size >= known.smallestFailed)
        return;
      if (known.largestSucceeded !== undefined && size <= known.largestSucceeded) return;
      local.success(key, size);
      try {
        await learn(key, 'largestSucceeded', size);
      } catch {
        return;
      }
      await bounds(upstream, model, true);
    },
  };
}
