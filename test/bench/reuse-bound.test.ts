import { describe, expect, it } from 'vitest';
import { oldestFirstReuseBound } from '../../bench/lib/reuse-bound.js';

const step = (call: number, ...results: Array<[number, number]>) => ({
  call,
  results: results.map(([whole, masked]) => ({ whole, masked })),
});

describe('oldestFirstReuseBound', () => {
  it('is each prompt over the next when the loop never has to shorten', () => {
    // Request 2 holds 10 + 5 + 20 = 35 tokens, of which request 1's 10 repeat; request 3 holds 70, 35 repeat.
    const bound = oldestFirstReuseBound({
      base: 10,
      usable: 1_000,
      steps: [step(5, [20, 2]), step(5, [30, 2])],
    });
    expect(bound).toBeCloseTo((10 / 35 + 35 / 70) / 2, 12);
  });

  it('takes the best schedule of masking and dropping, worked out by hand', () => {
    // Request 3 cannot hold both 50-token results: mask the first (72 tokens, 15 repeat) or drop its step
    // (65 tokens, the base repeats). Request 4 after the drop holds 10 + 5 + 50 + 5 + 30 = 100 tokens and
    // repeats request 3's 65; after the masking it must mask again (59 tokens, 22 repeat): the drop wins.
    const bound = oldestFirstReuseBound({
      base: 10,
      usable: 100,
      steps: [step(5, [50, 2]), step(5, [50, 2]), step(5, [30, 2])],
    });
    expect(bound).toBeCloseTo((10 / 65 + 10 / 65 + 65 / 100) / 3, 12);
  });

  it('repeats a prompt up to the first result it masks', () => {
    // Request 3 fills the window exactly (100); request 4 must mask both older results (69 tokens), and
    // repeats only what stands before the first one: base and its call, 15. Masking one step earlier
    // (request 3: 62 tokens, 15 repeat; request 4: 22 repeat) sums less.
    const bound = oldestFirstReuseBound({
      base: 10,
      usable: 100,
      steps: [step(5, [40, 2]), step(5, [40, 2]), step(5, [40, 2])],
    });
    expect(bound).toBeCloseTo((10 / 55 + 55 / 100 + 15 / 69) / 3, 12);
  });

  it('keeps only the newest result, and cuts one bigger than the window to fit it', () => {
    // Request 3 holds the second step's two 100-token results, neither of which fits 100 beside the rest:
    // the first step goes, the older result is masked (2) and the newest cut to 100 − 10 − 5 − 2 = 83, a
    // prompt of 100 whose only repeat is the base. Masking the first step's result instead leaves 107.
    const bound = oldestFirstReuseBound({
      base: 10,
      usable: 100,
      steps: [step(5, [20, 2]), step(5, [100, 2], [100, 2])],
    });
    expect(bound).toBeCloseTo((10 / 35 + 10 / 100) / 2, 12);
  });

  it('masks none of the newest step when asked to send it whole, while it fits', () => {
    // Request 3 (120 tokens whole) must shorten. Free, the best also masks the newest step's first
    // result (54 tokens, 15 repeat); with the newest step whole, only the first step's result (82, 15).
    const loop = {
      base: 10,
      usable: 100,
      steps: [step(5, [40, 2]), step(5, [30, 2], [30, 2])],
    };
    expect(oldestFirstReuseBound(loop)).toBeCloseTo((10 / 55 + 15 / 54) / 2, 12);
    expect(oldestFirstReuseBound(loop, { newestStepWhole: true })).toBeCloseTo((10 / 55 + 15 / 82) / 2, 12);
  });

  it('masks within the newest step when even it alone does not fit', () => {
    // Request 3's newest step is 10 + 5 + 60 + 60 = 135 whole beside the base: its first result is masked
    // whatever the rule (10 + 5 + 2 + 5 + 2 + 60 = 84 tokens, 15 repeat).
    const loop = {
      base: 10,
      usable: 100,
      steps: [step(5, [40, 2]), step(5, [60, 2], [60, 2])],
    };
    expect(oldestFirstReuseBound(loop, { newestStepWhole: true })).toBeCloseTo((10 / 55 + 15 / 84) / 2, 12);
  });
});
