// The rules of learning an upstream's real limits (SPEC §6), pure: how a window follows from the sizes
// that failed and succeeded, how the estimate ratio moves with each sample, and how what one replica
// saw itself combines with what all replicas share. The stores (store/learned-limits.ts) only keep and
// move these values.

/** What was learned for one upstream and model. */
export interface LearnedLimit {
  /** The window to use for this upstream and model, when anything was learned. */
  window?: number;
  /** Upstream-reported prompt tokens per estimated token (moving average, clamped), once measured. */
  ratio?: number;
}

/** The raw observations a learned limit is derived from. Sizes are prompt plus output reserve. */
export interface LimitBounds {
  ratio?: number;
  /** The smallest window an upstream stated in an overflow error. */
  stated?: number;
  smallestFailed?: number;
  largestSucceeded?: number;
  /** For a tool set's entry: the tokens the upstream counts for those tool definitions. */
  toolTokens?: number;
}

/** The estimate ratio moves by this share of each new sample, and stays within these bounds. */
export const ratioSmoothing = 0.2;
// Wide enough for a tokenizer far from o200k (CJK text in an older Llama vocabulary counts ~3×).
export const ratioBounds = { min: 0.25, max: 4 } as const;

function clampRatio(value: number): number {
  return Math.min(ratioBounds.max, Math.max(ratioBounds.min, value));
}

/** One comparison of the upstream's prompt count with the gateway's estimate of the same prompt. */
export interface RatioSample {
  reported: number;
  estimated: number;
  /** The upstream refused the prompt and said how many tokens it counted: taken as is, not averaged in. */
  atOnce?: boolean;
}

/**
 * The ratio after one more sample: the measured ratio at first (or when the sample is to be taken at
 * once), then a moving average.
 */
export function nextRatio(previous: number | undefined, sample: RatioSample): number {
  const measured = sample.reported / Math.max(1, sample.estimated);
  return clampRatio(
    previous === undefined || sample.atOnce === true
      ? measured
      : previous + ratioSmoothing * (measured - previous),
  );
}

/**
 * A tool set's tokens after one more sample of what the upstream counted for it (its usage less the
 * messages' estimate): the first sample, then halfway towards each new one.
 */
export function nextToolTokens(previous: number | undefined, sample: number): number {
  const value = Math.max(0, sample);
  return Math.round(previous === undefined ? value : previous + 0.5 * (value - previous));
}

/** Without a stated window and before any success below the failure, try this share of what failed. */
export const unknownWindowShare = 0.8;

export function windowFromBounds(bounds: LimitBounds): number | undefined {
  if (bounds.stated !== undefined) return bounds.stated;
  if (bounds.smallestFailed === undefined) return undefined;
  if (bounds.largestSucceeded !== undefined && bounds.largestSucceeded < bounds.smallestFailed)
    return bounds.largestSucceeded;
  return Math.max(1, Math.floor(bounds.smallestFailed * unknownWindowShare));
}

const nothingLearned: LearnedLimit = Object.freeze({});

export function limitOf(bounds: LimitBounds | undefined): LearnedLimit {
  if (bounds === undefined) return nothingLearned;
  const window = windowFromBounds(bounds);
  if (window === undefined && bounds.ratio === undefined) return nothingLearned;
  const limit: LearnedLimit = {};
  if (window !== undefined) limit.window = window;
  if (bounds.ratio !== undefined) limit.ratio = bounds.ratio;
  return limit;
}

function smallest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** An overflow seen: the stated window is the smallest ever stated, the failure the smallest failed. */
export function withOverflow(
  bounds: LimitBounds,
  observed: { window?: number; failedSize: number },
): LimitBounds {
  const next: LimitBounds = { ...bounds };
  const stated = smallest(bounds.stated, observed.window);
  if (stated !== undefined) next.stated = stated;
  next.smallestFailed = smallest(bounds.smallestFailed, observed.failedSize) as number;
  if (next.largestSucceeded !== undefined && next.largestSucceeded >= next.smallestFailed)
    delete next.largestSucceeded;
  return next;
}

/** True when a success of this size teaches something: below the smallest failure, above what is known. */
export function successTeaches(bounds: LimitBounds, size: number): boolean {
  if (bounds.stated !== undefined || bounds.smallestFailed === undefined) return false;
  if (size >= bounds.smallestFailed) return false;
  return bounds.largestSucceeded === undefined || size > bounds.largestSucceeded;
}

/**
 * What a replica uses: the shared bounds with what it observed itself (which may not have reached the
 * store yet, or the store may be unreachable) — the tighter of each, and its own ratio when it has
 * samples the store has not seen.
 */
export function mergeBounds(shared: LimitBounds | undefined, own: LimitBounds | undefined): LimitBounds {
  if (own === undefined) return shared ?? {};
  if (shared === undefined) return own;
  const result: LimitBounds = {};
  const stated = smallest(shared.stated, own.stated);
  const smallestFailed = smallest(shared.smallestFailed, own.smallestFailed);
  // The largest success that is still below the smallest failure.
  let largestSucceeded = 0;
  for (const size of [shared.largestSucceeded, own.largestSucceeded]) {
    if (size !== undefined && (smallestFailed === undefined || size < smallestFailed))
      largestSucceeded = Math.max(largestSucceeded, size);
  }
  if (stated !== undefined) result.stated = stated;
  if (smallestFailed !== undefined) result.smallestFailed = smallestFailed;
  if (largestSucceeded > 0) result.largestSucceeded = largestSucceeded;
  const ratio = own.ratio ?? shared.ratio;
  if (ratio !== undefined) result.ratio = ratio;
  const toolTokens = own.toolTokens ?? shared.toolTokens;
  if (toolTokens !== undefined) result.toolTokens = toolTokens;
  return result;
}
