// What to do after each upstream answer of a chat request (docs/budgeting.md#reactive-recovery), decided from values alone: the
// classifier's verdict, where the retry ladder stands and the limits it works within. The loop that
// acts on the decision (send-with-recovery.ts) owns time, randomness and I/O; this module owns none.
import type { ContextReduction } from '../context/plan-send.js';
import { foreignThinkingField, requestBytesField, type FieldFix } from './field-fixes.js';
import {
  minimumAnswerTokens,
  type OverflowNumbers,
  type UpstreamErrorClass,
} from './classify-upstream-error.js';

export interface RecoveryLimits {
  /** Smaller requests tried after a context overflow (the policy's max_retries). */
  maxOverflowRetries: number;
  /** Retries of 429, 5xx and connection errors (the policy's upstream_retries). */
  maxUpstreamRetries: number;
  /** No retry starts when waiting for it would end after this long since the first send. */
  deadlineMs: number;
  /** A longer Retry-After goes back to the client, which can decide whether to wait that long. */
  maxRetryWaitMs: number;
}

export interface RecoveryState {
  overflowRetries: number;
  upstreamRetries: number;
  /** Since the first send. */
  elapsedMs: number;
  /** The estimated prompt tokens of the request that was answered. */
  promptTokens: number;
  /** The max_tokens that request asked for (the ladder's, else the client's), if any. */
  askedMaxTokens: number | undefined;
  /** The least max_tokens to lower it to (classify-upstream-error.ts answerFloorOf); 1,024 when not given. */
  answerFloor?: number | undefined;
  /** The fields this request already went again without (renamed or left out): each is fixed once. */
  fixedFields: readonly string[];
}

export type RecoveryDecision =
  /** Relay the answer as it is: a success, or an error no retry can help. */
  | { action: 'accept' }
  /** Send the same request again after waiting. */
  | { action: 'retry_after'; waitMs: number; reason: 'rate_limited' | 'server' | 'connection' }
  /** Render the conversation again, smaller: at most `promptCap` prompt tokens (the gateway's count). */
  | { action: 're_render'; reduction: ContextReduction; promptCap: number }
  /** The prompt fits but the answer asked for does not: ask for what is left. */
  | { action: 'lower_max_tokens'; maxTokens: number }
  /** The provider refused fields: send the request again with them renamed or left out. */
  | { action: 'fix_fields'; fixes: FieldFix[] }
  /** Out of retries or time: the client gets the upstream's answer. */
  | {
      action: 'give_up';
      reason: 'out_of_retries' | 'retry_after_too_long' | 'deadline' | 'upstream_said_no';
    };

/**
 * Every retry and recovery default in one place (docs/budgeting.md#reactive-recovery). What a deployment
 * tunes is in the config — the policy's `max_retries` and `upstream_retries`, the config's
 * `timeouts.upstream_retry_deadline_ms` — and reaches the loops through `recoveryLimitsFor`; these are
 * the fixed parts. Chat completions, the Responses API (bridged onto the same engine) and the
 * summarizer all retry by them.
 */
export const retryDefaults = {
  /** The first backoff step and the ceiling of the full-jitter exponential backoff. */
  baseBackoffMs: 250,
  maxBackoffMs: 8_000,
  /** The longest Retry-After the gateway waits out itself; a longer one goes back to the client. */
  maxRetryWaitMs: 10_000,
  /** Smaller tries of a summary request the summarizer's model refused as too long. */
  summaryOverflowRetries: 2,
  /**
   * A body the provider refused as too many bytes (field-fixes.ts requestBytesField): the share of its
   * bytes the next may have, and how many times one request is made smaller so (each refusal lowers it
   * again; any other refused field is fixed once).
   */
  requestBytesShare: 0.9,
  requestBytesFixes: 4,
} as const;

/** The fields fixed more than once for one request, and how many times. */
const timesFixed: ReadonlyMap<string, number> = new Map([
  [requestBytesField, retryDefaults.requestBytesFixes],
  [foreignThinkingField, 2],
]);

/**
 * What a fix is fixed once as: its field, or one value of it (an `anthropic-beta` flag) — so a refusal of
 * the whole header after its named flags were left out is fixed too.
 */
export function fixedFieldOf(fix: FieldFix): string {
  return fix.value === undefined ? fix.field : `${fix.field}=${fix.value}`;
}

/** The limits a request's retry loop works within, from its policy and the config. */
export function recoveryLimitsFor(
  policy: { max_retries: number; upstream_retries: number },
  upstreamRetryDeadlineMs: number,
): RecoveryLimits {
  return {
    maxOverflowRetries: policy.max_retries,
    maxUpstreamRetries: policy.upstream_retries,
    deadlineMs: upstreamRetryDeadlineMs,
    maxRetryWaitMs: retryDefaults.maxRetryWaitMs,
  };
}

const { baseBackoffMs, maxBackoffMs } = retryDefaults;

/** The re-render steps, in order: the learned window first, then half the turns, then the minimum. */
const reductions: readonly ContextReduction[] = ['none', 'drop_oldest_half', 'minimal'];

/**
 * `jitter` is a number in [0, 1) (the loop's random draw): full-jitter exponential backoff, never
 * shorter than the upstream's Retry-After.
 */
export function decide(
  verdict: UpstreamErrorClass,
  state: RecoveryState,
  limits: RecoveryLimits,
  jitter: number,
): RecoveryDecision {
  switch (verdict.kind) {
    case 'context_overflow':
      return decideOverflow(verdict, state, limits);
    case 'rate_limited':
    case 'server':
    case 'connection':
      // The upstream's own word: `x-should-retry: false` is not retried.
      if ('noRetry' in verdict && verdict.noRetry === true)
        return { action: 'give_up', reason: 'upstream_said_no' };
      return decideRetry(
        verdict.kind,
        'retryAfterMs' in verdict ? verdict.retryAfterMs : undefined,
        state,
        limits,
        jitter,
      );
    case 'refused_field': {
      // Once per field (a byte cap up to requestBytesFixes times, thinking another model signed twice: its
      // two steps): a provider that refuses a field again after its fix gets its answer to the client.
      const fixes = verdict.fixes.filter((fix) => {
        const times = timesFixed.get(fix.field);
        return times === undefined
          ? !state.fixedFields.includes(fixedFieldOf(fix))
          : state.fixedFields.filter((field) => field === fix.field).length < times;
      });
      return fixes.length === 0 ? { action: 'accept' } : { action: 'fix_fields', fixes };
    }
    default:
      return { action: 'accept' };
  }
}

/**
 * The margin taken off what the provider's own numbers allow: the provider is right about its tokens,
 * but the gateway's count of the next attempt is an estimate of them.
 */
const overflowMargin = 0.03;
/** How much smaller an attempt is at least when the provider did not say by how much it was over. */
const blindStep = 0.2;

/**
 * The most prompt tokens (in the gateway's count) the next attempt may carry: the refused prompt scaled
 * by what the provider says fits over what it says it got, less the margin; a fixed step smaller when
 * it gave no count. Never more than the refused prompt less the margin, so no retry resends it.
 */
function promptCapAfter(numbers: OverflowNumbers, refusedPromptTokens: number): number {
  const { maxContext } = numbers;
  const providerPrompt =
    numbers.promptTokens ??
    (maxContext !== undefined && numbers.excessTokens !== undefined
      ? maxContext + numbers.excessTokens
      : undefined);
  const providerCompletion =
    numbers.completionTokens ??
    (numbers.requested !== undefined && providerPrompt !== undefined
      ? Math.max(0, numbers.requested - providerPrompt)
      : 0);
  const atMost = Math.floor(refusedPromptTokens * (1 - overflowMargin));
  // What the provider would take for the prompt: its window less the answer it counted, if that leaves
  // any; or the cap it states on the input alone (GPT-5's "configured limit").
  const promptRoom =
    maxContext === undefined
      ? numbers.maxInputTokens
      : maxContext - providerCompletion > 0
        ? maxContext - providerCompletion
        : maxContext;
  if (promptRoom === undefined || providerPrompt === undefined || providerPrompt <= 0)
    return Math.max(0, Math.min(atMost, Math.floor(refusedPromptTokens * (1 - blindStep))));
  const scaled = Math.floor(((refusedPromptTokens * promptRoom) / providerPrompt) * (1 - overflowMargin));
  return Math.max(0, Math.min(atMost, scaled));
}

function decideOverflow(
  verdict: Extract<UpstreamErrorClass, { kind: 'context_overflow' }>,
  state: RecoveryState,
  limits: RecoveryLimits,
): RecoveryDecision {
  if (state.overflowRetries >= limits.maxOverflowRetries)
    return { action: 'give_up', reason: 'out_of_retries' };
  const { numbers } = verdict;
  if (verdict.remedy === 'reduce_max_tokens') {
    const maxTokens = lowerMaxTokens(numbers, state);
    if (maxTokens !== undefined) return { action: 'lower_max_tokens', maxTokens };
  }
  const step = Math.min(state.overflowRetries, reductions.length - 1);
  return {
    action: 're_render',
    reduction: reductions[step] ?? 'minimal',
    promptCap: promptCapAfter(numbers, state.promptTokens),
  };
}

/**
 * The max_tokens to ask for when the prompt fits and the answer does not: what the window leaves (less
 * 1% of it for the two sides counting differently), and always less than was asked — when the numbers
 * say the asked answer fits, they are not the provider's whole story, and a fixed step down is taken.
 * Undefined when less than `minimumAnswerTokens` would be left: compress instead.
 */
function lowerMaxTokens(numbers: OverflowNumbers, state: RecoveryState): number | undefined {
  const { maxContext, promptTokens } = numbers;
  if (maxContext === undefined) return undefined;
  const room = maxContext - (promptTokens ?? state.promptTokens) - Math.ceil(maxContext / 100);
  const asked = state.askedMaxTokens;
  const maxTokens =
    asked === undefined || room < asked ? room : asked - Math.max(1, Math.ceil(asked * blindStep));
  return maxTokens >= (state.answerFloor ?? minimumAnswerTokens) ? maxTokens : undefined;
}

function decideRetry(
  reason: 'rate_limited' | 'server' | 'connection',
  retryAfterMs: number | undefined,
  state: RecoveryState,
  limits: RecoveryLimits,
  jitter: number,
): RecoveryDecision {
  if (state.upstreamRetries >= limits.maxUpstreamRetries)
    return { action: 'give_up', reason: 'out_of_retries' };
  if ((retryAfterMs ?? 0) > limits.maxRetryWaitMs)
    return { action: 'give_up', reason: 'retry_after_too_long' };
  const ceilingMs = Math.min(maxBackoffMs, baseBackoffMs * 2 ** state.upstreamRetries);
  const waitMs = Math.max(Math.floor(jitter * ceilingMs), retryAfterMs ?? 0);
  if (state.elapsedMs + waitMs > limits.deadlineMs) return { action: 'give_up', reason: 'deadline' };
  return { action: 'retry_after', waitMs, reason };
}
