// The pure rules of learning limits, as tables: numbers worked out by hand.
import { describe, expect, it } from 'vitest';
import {
  limitOf,
  mergeBounds,
  nextRatio,
  successTeaches,
  windowFromBounds,
  withOverflow,
} from '../../src/context/learned-limit-rules.js';

describe('nextRatio', () => {
  it('starts at the measured ratio, moves a fifth of the way per sample, and stays within 0.25–4', () => {
    expect(nextRatio(undefined, { reported: 150, estimated: 100 })).toBe(1.5);
    expect(nextRatio(1.5, { reported: 100, estimated: 100 })).toBeCloseTo(1.4, 10);
    expect(nextRatio(undefined, { reported: 1_000, estimated: 100 })).toBe(4);
    expect(nextRatio(undefined, { reported: 10, estimated: 100 })).toBe(0.25);
    expect(nextRatio(undefined, { reported: 10, estimated: 0 })).toBe(4);
  });

  it('takes a refused prompt’s count at once instead of averaging it in', () => {
    expect(nextRatio(1.1, { reported: 260, estimated: 100, atOnce: true })).toBeCloseTo(2.6, 10);
    expect(nextRatio(1.1, { reported: 260, estimated: 100 })).toBeCloseTo(1.4, 10);
  });
});

describe('windowFromBounds', () => {
  it.each([
    [{}, undefined],
    [{ stated: 8_192, smallestFailed: 9_000 }, 8_192],
    [{ smallestFailed: 10_000 }, 8_000],
    [{ smallestFailed: 10_000, largestSucceeded: 7_000 }, 7_000],
    [{ smallestFailed: 10_000, largestSucceeded: 12_000 }, 8_000],
  ])('%j → %s', (bounds, expected) => {
    expect(windowFromBounds(bounds)).toBe(expected);
  });
});

describe('withOverflow and successTeaches', () => {
  it('keeps the smallest stated window and failure, and forgets a success at or above a new failure', () => {
    expect(withOverflow({}, { failedSize: 10_000 })).toEqual({ smallestFailed: 10_000 });
    expect(withOverflow({ smallestFailed: 10_000 }, { failedSize: 12_000, window: 9_000 })).toEqual({
      smallestFailed: 10_000,
      stated: 9_000,
    });
    expect(withOverflow({ smallestFailed: 10_000, largestSucceeded: 8_000 }, { failedSize: 7_000 })).toEqual({
      smallestFailed: 7_000,
    });
  });

  it.each([
    [{}, 5_000, false],
    [{ smallestFailed: 10_000 }, 10_000, false],
    [{ smallestFailed: 10_000 }, 9_999, true],
    [{ smallestFailed: 10_000, largestSucceeded: 9_000 }, 8_000, false],
    [{ smallestFailed: 10_000, largestSucceeded: 9_000 }, 9_500, true],
    [{ smallestFailed: 10_000, stated: 8_192 }, 8_000, false],
  ])('%j, success of %i teaches: %s', (bounds, size, expected) => {
    expect(successTeaches(bounds, size)).toBe(expected);
  });
});

describe('mergeBounds', () => {
  it('takes the tighter of shared and own bounds, and the own ratio while it has one', () => {
    expect(mergeBounds(undefined, undefined)).toEqual({});
    expect(
      mergeBounds(
        { stated: 8_192, smallestFailed: 9_000, ratio: 1.2 },
        { stated: 4_096, smallestFailed: 12_000, ratio: 1.5 },
      ),
    ).toEqual({ stated: 4_096, smallestFailed: 9_000, ratio: 1.5 });
    expect(
      mergeBounds({ smallestFailed: 9_000, largestSucceeded: 8_000 }, { largestSucceeded: 9_500 }),
    ).toEqual({
      smallestFailed: 9_000,
      largestSucceeded: 8_000,
    });
    expect(mergeBounds({ ratio: 1.2 }, { smallestFailed: 5_000 })).toEqual({
      smallestFailed: 5_000,
      ratio: 1.2,
    });
  });

  it('gives the limit to use', () => {
    expect(limitOf(undefined)).toEqual({});
    expect(limitOf({ smallestFailed: 10_000, ratio: 1.25 })).toEqual({ window: 8_000, ratio: 1.25 });
  });
});
