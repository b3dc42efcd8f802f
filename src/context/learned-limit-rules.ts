// The rules of learning an upstream's real limits (docs/budgeting.md#what-the-gateway-learns), pure.
// Learned state is shared by every replica and every tenant, so it is built on evidence, not trust:
// - A window is learned from an overflow whose numbers agree with the gateway's own count of the
//   refused prompt (the caller checks the agreement), or — when the text gives no numbers — from a
//   refused size and a smaller size that then went through; never from one request alone, never
//   below the largest size the model has taken, and it expires unless overflows keep confirming it.
// - What one tenant's requests taught applies to that tenant; other tenants get it only once a second
//   tenant's evidence agrees (it takes two tenants to pull a shared window down).
// - Estimate ratios and tool-set costs move only with successful answers, by bounded steps, per
//   tenant; other tenants use the median of the tenants that measured them.

/** What a request uses for one upstream and model. */
export interface LearnedLimit {
  /** The window to use, when anything was learned. */
  window?: number;
  /** Upstream-reported prompt tokens per estimated token, once measured. */
  ratio?: number;
  /**
   * The window was learned and no overflow has confirmed it for a while: this request may be fitted to
   * the configured window instead, to find out whether the limit is still there.
   */
  probe?: boolean;
}

/** What one tenant's requests showed about a model's window. */
export interface WindowEvidence {
  tenant: string;
  /** The window an overflow stated, its numbers agreeing with the gateway's count of what was sent. */
  stated?: number;
  /** The smallest size refused (prompt in the provider's units plus the max_tokens sent). */
  failed?: number;
  /** The largest size below `failed` that then went through. */
  succeeded?: number;
  /** The status of the overflow that taught it, and whether its text gave numbers. */
  status: number;
  textClass: 'numbers' | 'no_numbers';
  learnedAtMs: number;
  /** The last overflow that agreed with it: it expires, and is probed, counting from here. */
  confirmedAtMs: number;
}

/** A value one tenant measured (an estimate ratio, a tool set's tokens). */
export interface TenantValue {
  tenant: string;
  value: number;
  samples: number;
  updatedAtMs: number;
}

/** Everything learned about one upstream and model. */
export interface ModelLessons {
  evidence: WindowEvidence[];
  /** The largest size the model has taken (any tenant): no window is learned at or below it. */
  largestAccepted?: number;
  ratios: TenantValue[];
}

/** What the upstream counts for one tool set (its definitions as sent), per tenant. */
export interface ToolSetLessons {
  costs: TenantValue[];
}

export interface LearningSettings {
  /** Learned windows are forgotten this long after the last overflow confirming them. */
  windowTtlMs: number;
  /** A window unconfirmed for this long may be probed: a request fitted to the configured window. */
  reprobeAfterMs: number;
}

/** Tenants whose evidence or values one entry keeps (the most recent). */
export const tenantsPerEntry = 8;
/** A tenant's value counts towards what others use after this many samples. */
export const samplesToShare = 3;

// Wide enough for a tokenizer far from o200k (CJK text in an older Llama vocabulary counts ~3×).
export const ratioBounds = { min: 0.25, max: 4 } as const;
/** One sample moves a ratio (or a tool set's tokens) a fifth of the way, and by at most a tenth. */
export const stepShare = 0.2;
export const maxStep = 0.1;

/** A tool set's learned tokens stay within this factor of the gateway's own count of its definitions. */
export const toolCostBounds = { min: 0.5, max: 2 } as const;

/**
 * An overflow's count of the refused prompt agrees with the gateway's when their ratio lies within
 * these bounds (the gateway's count scaled by the ratio it has learned).
 */
export const agreementBounds = { min: 0.5, max: 2 } as const;

export function emptyModelLessons(): ModelLessons {
  return { evidence: [], ratios: [] };
}

/** The window one piece of evidence shows, if it shows one. */
export function evidenceWindow(evidence: WindowEvidence): number | undefined {
  if (evidence.stated !== undefined) return evidence.stated;
  if (
    evidence.failed !== undefined &&
    evidence.succeeded !== undefined &&
    evidence.succeeded < evidence.failed
  )
    return evidence.succeeded;
  return undefined;
}

function live(lessons: ModelLessons, nowMs: number, settings: LearningSettings): WindowEvidence[] {
  return lessons.evidence.filter((evidence) => evidence.confirmedAtMs + settings.windowTtlMs > nowMs);
}

/** The window other tenants may use: the second smallest of distinct tenants' windows (two must agree). */
export function sharedWindow(
  lessons: ModelLessons,
  nowMs: number,
  settings: LearningSettings,
): { window: number; confirmedAtMs: number } | undefined {
  const windows = live(lessons, nowMs, settings)
    .map((evidence) => ({ window: evidenceWindow(evidence), confirmedAtMs: evidence.confirmedAtMs }))
    .filter((entry): entry is { window: number; confirmedAtMs: number } => entry.window !== undefined)
    .sort((a, b) => a.window - b.window);
  const second = windows[1];
  if (second === undefined) return undefined;
  return {
    window: second.window,
    confirmedAtMs: Math.max(windows[0]?.confirmedAtMs ?? 0, second.confirmedAtMs),
  };
}

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** A tenant's own value, else the median of other tenants' well-sampled values when two or more have one. */
export function valueFor(values: readonly TenantValue[], tenant: string): number | undefined {
  const own = values.find((entry) => entry.tenant === tenant);
  if (own !== undefined) return own.value;
  const shared = values.filter((entry) => entry.samples >= samplesToShare);
  return shared.length >= 2 ? median(shared.map((entry) => entry.value)) : undefined;
}

/** What a tenant's request uses for a model: its own evidence, or what two tenants agree on. */
export function limitFor(
  lessons: ModelLessons | undefined,
  tenant: string,
  nowMs: number,
  settings: LearningSettings,
): LearnedLimit {
  if (lessons === undefined) return {};
  const limit: LearnedLimit = {};
  const own = live(lessons, nowMs, settings).find((evidence) => evidence.tenant === tenant);
  const ownWindow = own === undefined ? undefined : evidenceWindow(own);
  const shared = sharedWindow(lessons, nowMs, settings);
  let confirmedAtMs: number | undefined;
  if (ownWindow !== undefined && (shared === undefined || ownWindow <= shared.window)) {
    limit.window = ownWindow;
    confirmedAtMs = own?.confirmedAtMs;
  } else if (shared !== undefined) {
    limit.window = shared.window;
    confirmedAtMs = shared.confirmedAtMs;
  }
  if (confirmedAtMs !== undefined && confirmedAtMs + settings.reprobeAfterMs <= nowMs) limit.probe = true;
  const ratio = valueFor(lessons.ratios, tenant);
  if (ratio !== undefined) limit.ratio = ratio;
  return limit;
}

function keepRecent<T extends { updatedAtMs?: number; confirmedAtMs?: number }>(entries: T[]): T[] {
  if (entries.length <= tenantsPerEntry) return entries;
  const time = (entry: T) => entry.updatedAtMs ?? entry.confirmedAtMs ?? 0;
  return [...entries].sort((a, b) => time(b) - time(a)).slice(0, tenantsPerEntry);
}

/** An overflow one tenant saw (its numbers already checked against the gateway's own count). */
export interface OverflowObservation {
  /** The window the provider stated, when its numbers agreed with what was sent. */
  stated?: number;
  /** The size refused. */
  failedSize: number;
  status: number;
  textClass: 'numbers' | 'no_numbers';
}

/**
 * The lessons after an overflow: the tenant's evidence gains the smallest stated window and the smallest
 * failure (a window or failure at or below the largest size the model has taken contradicts it, and is
 * not kept), and is confirmed now.
 */
export function withOverflow(
  lessons: ModelLessons,
  tenant: string,
  observation: OverflowObservation,
  nowMs: number,
): ModelLessons {
  const floor = lessons.largestAccepted ?? 0;
  const stated =
    observation.stated !== undefined && observation.stated > floor ? observation.stated : undefined;
  const failed = observation.failedSize > floor ? observation.failedSize : undefined;
  const previous = lessons.evidence.find((evidence) => evidence.tenant === tenant);
  if (stated === undefined && failed === undefined) return lessons;
  const next: WindowEvidence =
    previous === undefined
      ? {
          tenant,
          status: observation.status,
          textClass: observation.textClass,
          learnedAtMs: nowMs,
          confirmedAtMs: nowMs,
        }
      : Object.assign({}, previous, {
          status: observation.status,
          textClass: observation.textClass,
          confirmedAtMs: nowMs,
        });
  if (stated !== undefined) next.stated = Math.min(next.stated ?? stated, stated);
  if (failed !== undefined) next.failed = Math.min(next.failed ?? failed, failed);
  if (next.succeeded !== undefined && next.failed !== undefined && next.succeeded >= next.failed)
    delete next.succeeded;
  const others = lessons.evidence.filter((evidence) => evidence.tenant !== tenant);
  return Object.assign({}, lessons, { evidence: keepRecent([...others, next]) });
}

/**
 * The lessons after a success of `size`: the largest size taken grows; the tenant's evidence gains a
 * success below its failure (a window without numbers is learned from the pair); any evidence whose
 * window it passes is contradicted and dropped. Returns the same object when nothing changed.
 */
export function withSuccess(lessons: ModelLessons, tenant: string, size: number): ModelLessons {
  let changed = false;
  const evidence: WindowEvidence[] = [];
  for (const entry of lessons.evidence) {
    const window = evidenceWindow(entry);
    // A success past what the evidence says (its window, or its failure when it has no window yet)
    // contradicts it: the refusal was about something else.
    const contradicted =
      window !== undefined ? size > window : entry.failed !== undefined && size >= entry.failed;
    if (contradicted) {
      changed = true;
      continue;
    }
    if (
      entry.tenant === tenant &&
      entry.stated === undefined &&
      entry.failed !== undefined &&
      size < entry.failed &&
      (entry.succeeded === undefined || size > entry.succeeded)
    ) {
      evidence.push(Object.assign({}, entry, { succeeded: size }));
      changed = true;
      continue;
    }
    evidence.push(entry);
  }
  const grows = size > (lessons.largestAccepted ?? 0);
  if (!changed && !grows) return lessons;
  return Object.assign({}, lessons, {
    evidence,
    largestAccepted: Math.max(lessons.largestAccepted ?? 0, size),
  });
}

/** Whether a success of `size` would change anything (most do not: nothing is written for them). */
export function successTeaches(lessons: ModelLessons | undefined, tenant: string, size: number): boolean {
  if (lessons === undefined) return true;
  return withSuccess(lessons, tenant, size) !== lessons;
}

/** A value moved towards a sample: a fifth of the way, by at most a tenth, within `bounds`. */
export function nextValue(
  previous: number | undefined,
  sample: number,
  bounds: { min: number; max: number },
): number {
  const clamped = Math.min(bounds.max, Math.max(bounds.min, sample));
  if (previous === undefined) return clamped;
  const step = stepShare * (clamped - previous);
  const limit = maxStep * previous;
  return Math.min(bounds.max, Math.max(bounds.min, previous + Math.max(-limit, Math.min(limit, step))));
}

/**
 * A tenant's value after one more sample: its first as measured (within bounds), or one bounded step
 * from `firstFrom` when that is given; then bounded steps.
 */
export function withSample(
  values: readonly TenantValue[],
  tenant: string,
  sample: number,
  bounds: { min: number; max: number },
  nowMs: number,
  firstFrom?: number,
): TenantValue[] {
  const own = values.find((entry) => entry.tenant === tenant);
  const next: TenantValue = {
    tenant,
    value: nextValue(own?.value ?? firstFrom, sample, bounds),
    samples: (own?.samples ?? 0) + 1,
    updatedAtMs: nowMs,
  };
  return keepRecent([...values.filter((entry) => entry.tenant !== tenant), next]);
}

/** One comparison of the upstream's count of a successful prompt with the gateway's estimate of it. */
export interface RatioSample {
  reported: number;
  estimated: number;
}

export function withRatioSample(
  lessons: ModelLessons,
  tenant: string,
  sample: RatioSample,
  nowMs: number,
): ModelLessons {
  const measured = sample.reported / Math.max(1, sample.estimated);
  // Counting low is the dangerous way to be wrong (prompts sent past the window): a first sample below 1
  // is a step down from 1, not taken as measured; a first one above is (fewer turns kept is the cost).
  return Object.assign({}, lessons, {
    ratios: withSample(lessons.ratios, tenant, measured, ratioBounds, nowMs, measured < 1 ? 1 : undefined),
  });
}

/**
 * A tool set's tokens for a tenant, within `toolCostBounds` of the gateway's own count of the
 * definitions (`formula`): a learned cost can correct the count, never run away from it.
 */
export function toolTokensFor(
  lessons: ToolSetLessons | undefined,
  tenant: string,
  formula: number,
): number | undefined {
  if (lessons === undefined) return undefined;
  const value = valueFor(lessons.costs, tenant);
  if (value === undefined) return undefined;
  return Math.round(Math.min(formula * toolCostBounds.max, Math.max(formula * toolCostBounds.min, value)));
}

export function withToolSample(
  lessons: ToolSetLessons,
  tenant: string,
  sample: number,
  formula: number,
  nowMs: number,
): ToolSetLessons {
  const bounds = { min: formula * toolCostBounds.min, max: Math.max(1, formula * toolCostBounds.max) };
  return { costs: withSample(lessons.costs, tenant, sample, bounds, nowMs) };
}

/**
 * The window an overflow states, in sizes (prompt plus the max_tokens sent): the window itself, or a cap
 * on the input alone (GPT-5's "configured limit") plus the answer the refused request asked for.
 */
export function statedWindow(
  numbers: { maxContext?: number; maxInputTokens?: number },
  sentMaxTokens: number,
): number | undefined {
  if (numbers.maxContext !== undefined) return numbers.maxContext;
  return numbers.maxInputTokens === undefined ? undefined : numbers.maxInputTokens + sentMaxTokens;
}

/** Whether an overflow's count of the refused prompt agrees with the gateway's (scaled by its ratio). */
export function countsAgree(reported: number, estimated: number, ratio: number | undefined): boolean {
  const share = reported / Math.max(1, estimated * (ratio ?? 1));
  return share >= agreementBounds.min && share <= agreementBounds.max;
}
