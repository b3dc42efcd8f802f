// The recovery policy as a table (docs/budgeting.md#reactive-recovery): each row a verdict and a ladder state, the decision written
// out by hand from the spec — 250 ms × 2^n full-jitter backoff capped at 8 s, never shorter than
// Retry-After, none past the deadline; after an overflow, max_tokens lowered when the prompt fits and at
// least 1,024 tokens are left, else re-render with the learned window, then half the turns, then the
// minimum — every re-render capped at the refused prompt × what the provider says fits / what it says it
// got, less 3%, or 20% smaller when it gave no count, and never above the refused prompt less 3%.
import { describe, expect, it } from 'vitest';
import { decide, type RecoveryLimits, type RecoveryState } from '../../src/upstream/recovery-policy.js';
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
  fixedFields: [],
};

const overflow = (
  remedy: 'compress' | 'reduce_max_tokens',
  numbers: {
    maxContext?: number | undefined;
    promptTokens?: number | undefined;
    requested?: number | undefined;
    completionTokens?: number | undefined;
    excessTokens?: number | undefined;
    maxInputTokens?: number | undefined;
  } = {},
): UpstreamErrorClass => ({
  kind: 'context_overflow',
  remedy,
  // Only the numbers the provider gave: an absent one is not there at all.
  numbers: Object.fromEntries(Object.entries(numbers).filter(([, value]) => value !== undefined)),
  evidence: [],
});

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
    name: 'an upstream that says not to retry is not retried',
    verdict: { kind: 'server', noRetry: true },
    jitter: 0.5,
    expected: { action: 'give_up', reason: 'upstream_said_no' },
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
  // 4097 − 3120 − ceil(40.97) = 936 < 1024: lowering max_tokens leaves too little: compress. The
  // provider's numbers allow 3000 × 4097 / 3120 × 0.97 = 3821, more than was sent: 3000 × 0.97 = 2910.
  {
    name: 'prompt + max_tokens over, too little room left: re-render at least 3% smaller',
    verdict: overflow('reduce_max_tokens', { maxContext: 4_097, promptTokens: 3_120 }),
    expected: { action: 're_render', reduction: 'none', promptCap: 2_910 },
  },
  // 16385 − 3000 − 164 = 13,221 ≥ 1024; the client asked for 15,000: ask for 13,221.
  {
    name: 'prompt fits, answer does not: lower max_tokens to what is left',
    verdict: overflow('reduce_max_tokens', { maxContext: 16_385, promptTokens: 3_000 }),
    state: { askedMaxTokens: 15_000 },
    expected: { action: 'lower_max_tokens', maxTokens: 13_221 },
  },
  // The same for a model whose answers show thinking: 5,110 left of the 6,000 asked is under its floor
  // (the 6,000 asked: it thinks within max_tokens), so the prompt is re-rendered smaller instead.
  {
    name: "a thinking model's answer is not lowered below its floor: re-render instead",
    verdict: overflow('reduce_max_tokens', { maxContext: 8_192 }),
    state: { askedMaxTokens: 6_000, answerFloor: 6_000 },
    expected: { action: 're_render', reduction: 'none', promptCap: 2_400 },
  },
  // The numbers say 2,000 fit, yet the provider refused: never the same again, 20% less (2000 − 400).
  {
    name: 'numbers that say the answer fits: a fixed step below what was asked',
    verdict: overflow('reduce_max_tokens', { maxContext: 128_000, promptTokens: 3_000 }),
    state: { askedMaxTokens: 2_000 },
    expected: { action: 'lower_max_tokens', maxTokens: 1_600 },
  },
  // The upstream gave no prompt count: the gateway's estimate (3,000) stands in. 8192 − 3000 − 82 = 5,110.
  {
    name: 'the estimate stands in for a missing prompt count',
    verdict: overflow('reduce_max_tokens', { maxContext: 8_192 }),
    state: { askedMaxTokens: 6_000 },
    expected: { action: 'lower_max_tokens', maxTokens: 5_110 },
  },
  {
    name: 'no window known: re-render 20% smaller',
    verdict: overflow('reduce_max_tokens'),
    expected: { action: 're_render', reduction: 'none', promptCap: 2_400 },
  },
  {
    name: 'first overflow, limit but no count: the learned window, 20% smaller',
    verdict: overflow('compress', { maxContext: 8_192 }),
    expected: { action: 're_render', reduction: 'none', promptCap: 2_400 },
  },
  {
    name: 'second overflow: drop the oldest half',
    verdict: overflow('compress'),
    state: { overflowRetries: 1 },
    expected: { action: 're_render', reduction: 'drop_oldest_half', promptCap: 2_400 },
  },
  {
    name: 'third overflow: the minimum',
    verdict: overflow('compress'),
    state: { overflowRetries: 2 },
    expected: { action: 're_render', reduction: 'minimal', promptCap: 2_400 },
  },
  // Anthropic "prompt is too long: 210000 tokens > 200000 maximum" where the gateway counted 150,000:
  // 150000 × 200000 / 210000 × 0.97 = 138,571.
  {
    name: 'the provider counts more than the gateway: scaled by its own numbers',
    verdict: overflow('compress', { maxContext: 200_000, promptTokens: 210_000 }),
    state: { promptTokens: 150_000 },
    expected: { action: 're_render', reduction: 'none', promptCap: 138_571 },
  },
  // "199759 + 8192 > 200000": the prompt may use 200000 − 8192 = 191,808 of the provider's tokens;
  // 190000 × 191808 / 199759 × 0.97 = 176,964.
  {
    name: 'the answer the provider counted is left out of the prompt room',
    verdict: overflow('compress', { maxContext: 200_000, promptTokens: 199_759, completionTokens: 8_192 }),
    state: { promptTokens: 190_000 },
    expected: { action: 're_render', reduction: 'none', promptCap: 176_964 },
  },
  // "requested 4120 tokens (3120 in the messages …)": 1,000 for the answer; 3000 × 3097 / 3120 × 0.97.
  {
    name: 'the answer is what was requested beyond the prompt',
    verdict: overflow('compress', { maxContext: 4_097, promptTokens: 3_120, requested: 4_120 }),
    expected: { action: 're_render', reduction: 'none', promptCap: 2_888 },
  },
  // GPT-5: "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 289650
  // tokens": a cap on the prompt alone, whatever the answer asks for: 250000 × 272000 / 289650 × 0.97.
  {
    name: 'a cap on the input alone scales the prompt to it',
    verdict: overflow('compress', { maxInputTokens: 272_000, promptTokens: 289_650 }),
    state: { promptTokens: 250_000 },
    expected: { action: 're_render', reduction: 'none', promptCap: 227_723 },
  },
  // Cohere: "size limit exceeded by 105000 tokens … The limit for this model is 8992": the provider got
  // 113,992; 50000 × 8992 / 113992 × 0.97 = 3,825.
  {
    name: 'limit and excess give the provider count',
    verdict: overflow('compress', { maxContext: 8_992, excessTokens: 105_000 }),
    state: { promptTokens: 50_000 },
    expected: { action: 're_render', reduction: 'none', promptCap: 3_825 },
  },
  {
    name: 'out of overflow retries: the client gets the error',
    verdict: overflow('compress'),
    state: { overflowRetries: 3 },
    expected: { action: 'give_up', reason: 'out_of_retries' },
  },
  {
    name: 'a refused field: sent again with it renamed',
    verdict: { kind: 'refused_field', fixes: [{ field: 'max_tokens', renameTo: 'max_completion_tokens' }] },
    expected: { action: 'fix_fields', fixes: [{ field: 'max_tokens', renameTo: 'max_completion_tokens' }] },
  },
  {
    name: 'a refused field, out of every other retry: still fixed (the request was never taken)',
    verdict: { kind: 'refused_field', fixes: [{ field: 'temperature' }] },
    state: { overflowRetries: 3, upstreamRetries: 2, elapsedMs: 60_000 },
    expected: { action: 'fix_fields', fixes: [{ field: 'temperature' }] },
  },
  {
    name: 'two fields refused, one of them fixed already: the other is fixed',
    verdict: { kind: 'refused_field', fixes: [{ field: 'user' }, { field: 'stream_options' }] },
    state: { fixedFields: ['user'] },
    expected: { action: 'fix_fields', fixes: [{ field: 'stream_options' }] },
  },
  {
    name: 'a body refused for its bytes again: made smaller again, up to four times in a request',
    verdict: { kind: 'refused_field', fixes: [{ field: 'request.bytes' }] },
    state: { fixedFields: ['request.bytes', 'user', 'request.bytes', 'request.bytes'] },
    expected: { action: 'fix_fields', fixes: [{ field: 'request.bytes' }] },
  },
  {
    name: 'a body refused for its bytes a fifth time: the client gets the refusal',
    verdict: { kind: 'refused_field', fixes: [{ field: 'request.bytes' }] },
    state: { fixedFields: ['request.bytes', 'request.bytes', 'request.bytes', 'request.bytes'] },
    expected: { action: 'accept' },
  },
  {
    name: 'thinking another model signed, refused again after the first step: the second step is taken',
    verdict: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
    state: { fixedFields: ['messages[].thinking.signature'] },
    expected: { action: 'fix_fields', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    name: 'thinking another model signed, refused after both steps: the client gets the refusal',
    verdict: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
    state: { fixedFields: ['messages[].thinking.signature', 'messages[].thinking.signature'] },
    expected: { action: 'accept' },
  },
  {
    name: 'a field named as an object property is (a provider refusing "constructor"): fixed once',
    verdict: { kind: 'refused_field', fixes: [{ field: 'constructor' }] },
    expected: { action: 'fix_fields', fixes: [{ field: 'constructor' }] },
  },
  {
    name: 'anthropic-beta flags refused by name, then the header (Bedrock after a proxy): each is fixed once',
    verdict: { kind: 'refused_field', fixes: [{ field: 'anthropic-beta' }] },
    state: { fixedFields: ['anthropic-beta=effort-2025-11-24'] },
    expected: { action: 'fix_fields', fixes: [{ field: 'anthropic-beta' }] },
  },
  {
    name: 'an anthropic-beta flag refused again after it was left out: the client gets the refusal',
    verdict: { kind: 'refused_field', fixes: [{ field: 'anthropic-beta', value: 'effort-2025-11-24' }] },
    state: { fixedFields: ['anthropic-beta=effort-2025-11-24'] },
    expected: { action: 'accept' },
  },
  {
    name: 'a field refused again after it was fixed: the client gets the refusal',
    verdict: { kind: 'refused_field', fixes: [{ field: 'max_tokens', renameTo: 'max_completion_tokens' }] },
    state: { fixedFields: ['temperature', 'max_tokens'] },
    expected: { action: 'accept' },
  },
];

describe('decide', () => {
  it.each(rows)('$name', ({ verdict, state, jitter, expected }) => {
    expect(decide(verdict, { ...start, ...state }, limits, jitter ?? 0)).toEqual(expected);
  });

  it('never resends what was refused, whatever the numbers say', () => {
    const counts = [undefined, 1, 900, 3_000, 8_000, 8_193, 250_000];
    let decisions = 0;
    for (const remedy of ['compress', 'reduce_max_tokens'] as const)
      for (const maxContext of [undefined, 4_096, 8_192, 128_000])
        for (const promptTokens of counts)
          for (const completionTokens of [undefined, 0, 1_000, 200_000])
            for (const refused of [1, 7, 2_999, 3_000, 100_000])
              for (const asked of [undefined, 1, 1_024, 1_500, 16_000])
                for (const overflowRetries of [0, 1, 2]) {
                  const numbers = { maxContext, promptTokens, completionTokens };
                  const state = { ...start, overflowRetries, promptTokens: refused, askedMaxTokens: asked };
                  const decision = decide(overflow(remedy, numbers), state, limits, 0.5);
                  decisions++;
                  if (decision.action === 're_render') expect(decision.promptCap).toBeLessThan(refused);
                  else if (decision.action === 'lower_max_tokens') {
                    if (asked !== undefined) expect(decision.maxTokens).toBeLessThan(asked);
                    expect(decision.maxTokens).toBeGreaterThanOrEqual(1_024);
                  } else throw new Error(`unexpected ${decision.action}`);
                }
    expect(decisions).toBe(2 * 4 * 7 * 4 * 5 * 5 * 3);
  });

  it('backs off within 0 .. min(8 s, 250 ms × 2^n) for every draw', () => {
    const generous = { ...limits, maxUpstreamRetries: 10 };
    for (let retries = 0; retries < 10; retries++) {
      const ceiling = Math.min(8_000, 250 * 2 ** retries);
      for (const jitter of [0, 0.25, 0.5, 0.999999]) {
        const decision = decide({ kind: 'server' }, { ...start, upstreamRetries: retries }, generous, jitter);
        expect(decision.action).toBe('retry_after');
        const waitMs = (decision as { waitMs: number }).waitMs;
        // Full jitter: the draw's share of the ceiling, whole milliseconds.
        expect(waitMs).toBe(Math.floor(jitter * ceiling));
        expect(waitMs).toBeLessThan(ceiling);
      }
    }
  });
});
