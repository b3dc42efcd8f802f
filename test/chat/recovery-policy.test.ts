// The recovery policy as a table (SPEC §6): each row a verdict and a ladder state, the decision written
// out by hand from the spec — 250 ms × 2^n full-jitter backoff capped at 8 s, never shorter than
// Retry-After, none past the deadline; after an overflow, max_tokens lowered when the prompt fits and at
// least 1,024 tokens are left, else re-render with the learned window, then half the turns, then the
// minimum.
import { describe, expect, it } from 'vitest';
import { decide, type RecoveryLimits, type RecoveryState } from '../../src/chat/recovery-policy.js';
import type { UpstreamErrorClass } from '../../src/upstream/classify-upstream-error.js';

const limits: RecoveryLimits = {
  maxOverflowRetries: 3,
  maxUpstreamRetries: 2,
  deadlineMs: 30_000,
  maxRetryWaitMs: 10_000,
};
const start: RecoveryState = {
  overflowRetries: 0,
  upstreamRetries: 0,
  elapsedMs: 0,
  promptTokens: 3_000,
  askedMaxTokens: undefined,
};

const overflow = (
  remedy: 'compress' | 'reduce_max_tokens',
  numbers: { maxContext?: number; promptTokens?: number } = {},
): UpstreamErrorClass => ({ kind: 'context_overflow', remedy, numbers });

const rows: Array<{
  name: string;
  verdict: UpstreamErrorClass;
  state?: Partial<RecoveryState>;
  jitter?: number;
  expected: unknown;
}> = [
  { name: 'a success is relayed', verdict: { kind: 'none' }, expected: { action: 'accept' } },
  { name: 'an auth error is relayed', verdict: { kind: 'auth' }, expected: { action: 'accept' } },
  { name: 'a bad request is relayed', verdict: { kind: 'bad_request' }, expected: { action: 'accept' } },
  {
    name: 'a timeout is relayed (the request may have run)',
    verdict: { kind: 'timeout' },
    expected: { action: 'accept' },
  },
  // 250 × 2^0 = 250; jitter 0.5 → 125.
  {
    name: 'first 429 waits half of 250 ms at jitter 0.5',
    verdict: { kind: 'rate_limited' },
    jitter: 0.5,
    expected: { action: 'retry_after', waitMs: 125, reason: 'rate_limited' },
  },
  // 250 × 2^1 = 500; jitter 0.999 → 499.
  {
    name: 'second 503 backs off up to 500 ms',
    verdict: { kind: 'server' },
    state: { upstreamRetries: 1 },
    jitter: 0.999,
    expected: { action: 'retry_after', waitMs: 499, reason: 'server' },
  },
  {
    name: 'a retry past upstream_retries is not made',
    verdict: { kind: 'server' },
    state: { upstreamRetries: 6 },
    jitter: 0.5,
    expected: { action: 'give_up', reason: 'out_of_retries' },
  },
  {
    name: 'Retry-After is a floor',
    verdict: { kind: 'rate_limited', retryAfterMs: 2_000 },
    jitter: 0.1,
    expected: { action: 'retry_after', waitMs: 2_000, reason: 'rate_limited' },
  },
  {
    name: 'a Retry-After over 10 s goes back to the client',
    verdict: { kind: 'rate_limited', retryAfterMs: 10_001 },
    expected: { action: 'give_up', reason: 'retry_after_too_long' },
  },
  {
    name: 'out of upstream retries',
    verdict: { kind: 'server' },
    state: { upstreamRetries: 2 },
    expected: { action: 'give_up', reason: 'out_of_retries' },
  },
  {
    name: 'no wait that ends past the deadline',
    verdict: { kind: 'rate_limited', retryAfterMs: 3_000 },
    state: { elapsedMs: 27_001 },
    expected: { action: 'give_up', reason: 'deadline' },
  },
  {
    name: 'a wait that ends exactly at the deadline',
    verdict: { kind: 'rate_limited', retryAfterMs: 3_000 },
    state: { elapsedMs: 27_000 },
    jitter: 0,
    expected: { action: 'retry_after', waitMs: 3_000, reason: 'rate_limited' },
  },
  {
    name: 'a broken connection is retried',
    verdict: { kind: 'connection' },
    jitter: 0,
    expected: { action: 'retry_after', waitMs: 0, reason: 'connection' },
  },
  // 4097 − 3120 − ceil(40.97) = 936 < 1024: lowering max_tokens leaves too little: compress.
  {
    name: 'prompt + max_tokens over, too little room left: re-render',
    verdict: overflow('reduce_max_tokens', { maxContext: 4_097, promptTokens: 3_120 }),
    expected: { action: 're_render', reduction: 'none' },
  },
  // 16385 − 3000 − 164 = 13,221 ≥ 1024; the client asked for 15,000: ask for 13,221.
  {
    name: 'prompt fits, answer does not: lower max_tokens to what is left',
    verdict: overflow('reduce_max_tokens', { maxContext: 16_385, promptTokens: 3_000 }),
    state: { askedMaxTokens: 15_000 },
    expected: { action: 'lower_max_tokens', maxTokens: 13_221 },
  },
  // Never more than the client asked for.
  {
    name: 'never more max_tokens than asked',
    verdict: overflow('reduce_max_tokens', { maxContext: 128_000, promptTokens: 3_000 }),
    state: { askedMaxTokens: 2_000 },
    expected: { action: 'lower_max_tokens', maxTokens: 2_000 },
  },
  // The upstream gave no prompt count: the gateway's estimate (3,000) stands in. 8192 − 3000 − 82 = 5,110.
  {
    name: 'the estimate stands in for a missing prompt count',
    verdict: overflow('reduce_max_tokens', { maxContext: 8_192 }),
    state: { askedMaxTokens: 6_000 },
    expected: { action: 'lower_max_tokens', maxTokens: 5_110 },
  },
  {
    name: 'no window known: re-render',
    verdict: overflow('reduce_max_tokens'),
    expected: { action: 're_render', reduction: 'none' },
  },
  {
    name: 'first overflow: re-render with the learned window',
    verdict: overflow('compress', { maxContext: 8_192 }),
    expected: { action: 're_render', reduction: 'none' },
  },
  {
    name: 'second overflow: drop the oldest half',
    verdict: overflow('compress'),
    state: { overflowRetries: 1 },
    expected: { action: 're_render', reduction: 'drop_oldest_half' },
  },
  {
    name: 'third overflow: the minimum',
    verdict: overflow('compress'),
    state: { overflowRetries: 2 },
    expected: { action: 're_render', reduction: 'minimal' },
  },
  {
    name: 'out of overflow retries: the client gets the error',
    verdict: overflow('compress'),
    state: { overflowRetries: 3 },
    expected: { action: 'give_up', reason: 'out_of_retries' },
  },
];

describe('decide', () => {
  it.each(rows)('$name', ({ verdict, state, jitter, expected }) => {
    expect(decide(verdict, { ...start, ...state }, limits, jitter ?? 0)).toEqual(expected);
  });

  it('backs off within 0 .. min(8 s, 250 ms × 2^n) for every draw', () => {
    const generous = { ...limits, maxUpstreamRetries: 10 };
    for (let retries = 0; retries < 10; retries++) {
      const ceiling = Math.min(8_000, 250 * 2 ** retries);
      for (const jitter of [0, 0.25, 0.5, 0.999999]) {
        const decision = decide({ kind: 'server' }, { ...start, upstreamRetries: retries }, generous, jitter);
        expect(decision.action).toBe('retry_after');
        const waitMs = (decision as { waitMs: number }).waitMs;
        expect(waitMs).toBeGreaterThanOrEqual(0);
        expect(waitMs).toBeLessThan(ceiling);
      }
    }
  });
});
