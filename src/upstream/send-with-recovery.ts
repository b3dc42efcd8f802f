// The send loop of a chat request (docs/budgeting.md#reactive-recovery): sends an attempt, has the answer classified before any byte
// reaches the client, asks the recovery policy what to do and does it — wait and resend, or send the
// smaller attempt the ladder makes. Time, randomness and sleeping are parameters, so every path of the
// loop runs in a unit test without a clock.
import { withPromptFromTotal, type UpstreamErrorClass } from './classify-upstream-error.js';
import { agreementBounds } from '../context/learned-limit-rules.js';
import { inspectAnswer } from './inspect-answer.js';
import type { UpstreamResponse } from './upstream.js';
import { isGatewayError } from '../errors.js';
import { decide, fixedFieldOf, type RecoveryDecision, type RecoveryLimits } from './recovery-policy.js';
import type { FieldFix } from './field-fixes.js';

/** One request as sent: what the policy needs to know of it. */
export interface SendAttempt {
  promptTokens: number;
  askedMaxTokens: number | undefined;
  /** The least max_tokens the policy lowers it to (recovery-policy.ts RecoveryState). */
  answerFloor?: number | undefined;
  /** The model it is sent to, when the loop may switch to another (a fallback) on the way. */
  model?: string;
}

/** What happened along the way, for learning and metrics. */
export type SendEvent<A> =
  | {
      type: 'overflow';
      verdict: Extract<UpstreamErrorClass, { kind: 'context_overflow' }>;
      attempt: A;
      /** The status the overflow came with (200 when it came inside a stream). */
      status: number;
    }
  | { type: 'retry'; reason: 'rate_limited' | 'server' | 'connection' }
  | { type: 'smaller_attempt'; decision: RecoveryDecision; attempt: A }
  /** The provider refused fields; `attempt` is the request sent again with them fixed. */
  | { type: 'fields_fixed'; fixes: FieldFix[]; attempt: A }
  | { type: 'accepted'; attempt: A };

export interface SendResult<A> {
  /** The answer to relay: a success, or the error the client gets. */
  response: UpstreamResponse;
  /** The attempt that answer belongs to. */
  attempt: A;
  overflowRetries: number;
  upstreamRetries: number;
  /** Sends again without a field the model refused (docs/budgeting.md#refused-fields). */
  fieldResends: number;
  /**
   * The gateway gave up retrying an error it retries (out of retries or time, or the upstream said not
   * to): the client is told not to retry it again (`x-should-retry: false`), so its own retries do not
   * multiply the gateway's.
   */
  exhausted?: true;
  /**
   * The wait the upstream asked for when it is longer than the gateway waits (the gateway gave up at
   * once): the client is told it (`retry-after`), read from the headers or the error's own words.
   */
  retryAfterMs?: number;
}

export interface SendWithRecoveryOptions<A extends SendAttempt> {
  first: A;
  /** Sends one attempt; rejects with a GatewayError (upstream_unreachable for a broken connection). */
  send(attempt: A): Promise<UpstreamResponse>;
  /** The smaller attempt a decision asks for, or undefined when nothing smaller can be sent. */
  smaller(
    decision: Extract<RecoveryDecision, { action: 're_render' | 'lower_max_tokens' }>,
    current: A,
  ): A | undefined;
  /**
   * The attempt again with the fields the provider refused renamed or left out
   * (docs/budgeting.md#refused-fields), or undefined when that changes nothing: the client then gets the refusal.
   */
  fixFields?: (fixes: FieldFix[], current: A) => A | undefined;
  streaming: boolean;
  /** How long a stream's first event is waited for before the answer is taken as begun (inspect-answer.ts). */
  headWaitMs?: number | undefined;
  /** The bytes of an attempt's body: what a bare 413 to it is about (classify-upstream-error.ts). */
  sentBytes?: (attempt: A) => number;
  limits: RecoveryLimits;
  clock: () => number;
  random: () => number;
  sleep: (ms: number) => Promise<void>;
  /** True once the client has gone: nothing is retried for it. */
  cancelled: () => boolean;
  observe?: (event: SendEvent<A>) => void;
}

export async function sendWithRecovery<A extends SendAttempt>(
  options: SendWithRecoveryOptions<A>,
): Promise<SendResult<A>> {
  const { limits, clock } = options;
  const startedAtMs = clock();
  let attempt = options.first;
  let overflowRetries = 0;
  let upstreamRetries = 0;
  const fixedFields: string[] = [];
  let fieldResends = 0;
  const stateOf = (current: A) => ({
    overflowRetries,
    upstreamRetries,
    elapsedMs: clock() - startedAtMs,
    promptTokens: current.promptTokens,
    askedMaxTokens: current.askedMaxTokens,
    answerFloor: current.answerFloor,
    fixedFields,
  });
  for (;;) {
    let answer: { response: UpstreamResponse; classification: UpstreamErrorClass };
    try {
      const current = attempt;
      const { sentBytes, headWaitMs } = options;
      answer = await inspectAnswer(await options.send(current), options.streaming, {
        sentBytes: sentBytes && (() => sentBytes(current)),
        headWaitMs,
      });
    } catch (error) {
      const connection = isGatewayError(error) && error.code === 'upstream_unreachable';
      if (!connection || options.cancelled()) throw error;
      const decision = decide({ kind: 'connection' }, stateOf(attempt), limits, options.random());
      if (decision.action !== 'retry_after') throw error;
      upstreamRetries++;
      options.observe?.({ type: 'retry', reason: 'connection' });
      await options.sleep(decision.waitMs);
      continue;
    }
    const { response } = answer;
    // A total the provider stated is read against the max_tokens this attempt asked for.
    const classification =
      answer.classification.kind === 'context_overflow'
        ? withPromptFromTotal(
            answer.classification,
            attempt.askedMaxTokens,
            attempt.promptTokens,
            agreementBounds,
          )
        : answer.classification;
    if (classification.kind === 'context_overflow')
      options.observe?.({ type: 'overflow', verdict: classification, attempt, status: response.statusCode });
    const decision = options.cancelled()
      ? ({ action: 'accept' } as const)
      : decide(classification, stateOf(attempt), limits, options.random());
    switch (decision.action) {
      case 'retry_after':
        response.discard();
        upstreamRetries++;
        options.observe?.({ type: 'retry', reason: decision.reason });
        await options.sleep(decision.waitMs);
        continue;
      case 're_render':
      case 'lower_max_tokens': {
        const next = options.smaller(decision, attempt);
        // Nothing smaller can be sent: the client gets the upstream's own answer. A refused request is
        // never sent again as it was: the provider would refuse it again.
        if (next === undefined || !isSmaller(next, attempt))
          return { response, attempt, overflowRetries, upstreamRetries, fieldResends };
        response.discard();
        overflowRetries++;
        attempt = next;
        options.observe?.({ type: 'smaller_attempt', decision, attempt });
        continue;
      }
      case 'fix_fields': {
        const next = options.fixFields?.(decision.fixes, attempt);
        if (next === undefined) return { response, attempt, overflowRetries, upstreamRetries, fieldResends };
        fixedFields.push(...decision.fixes.map(fixedFieldOf));
        fieldResends++;
        response.discard();
        attempt = next;
        options.observe?.({ type: 'fields_fixed', fixes: decision.fixes, attempt });
        continue;
      }
      default:
        if (classification.kind === 'none' && response.statusCode < 300)
          options.observe?.({ type: 'accepted', attempt });
        // Given up: the client told not to retry (exhausted), or the wait the upstream asked for.
        return Object.assign(
          { response, attempt, overflowRetries, upstreamRetries, fieldResends },
          decision.action !== 'give_up'
            ? {}
            : decision.reason !== 'retry_after_too_long'
              ? { exhausted: true as const }
              : 'retryAfterMs' in classification && classification.retryAfterMs !== undefined
                ? { retryAfterMs: classification.retryAfterMs }
                : {},
        );
    }
  }
}

/** Another model (a larger fallback), fewer prompt tokens, or the same prompt asking for a shorter answer. */
function isSmaller(next: SendAttempt, refused: SendAttempt): boolean {
  if (next.model !== refused.model) return true;
  if (next.promptTokens !== refused.promptTokens) return next.promptTokens < refused.promptTokens;
  return (
    next.askedMaxTokens !== undefined &&
    (refused.askedMaxTokens === undefined || next.askedMaxTokens < refused.askedMaxTokens)
  );
}

/** The upstream calls a result took: the first, and every one sent again. */
export function callsMade(result: SendResult<SendAttempt>): number {
  return 1 + result.overflowRetries + result.upstreamRetries + result.fieldResends;
}
