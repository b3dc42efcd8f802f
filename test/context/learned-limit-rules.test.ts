// The pure rules of learning limits, as tables: numbers worked out by hand.
import { describe, expect, it } from 'vitest';
import {
  countsAgree,
  statedWindow,
  emptyModelLessons,
  evidenceWindow,
  limitFor,
  nextValue,
  sharedWindow,
  toolTokensFor,
  withOverflow,
  withRatioSample,
  withSuccess,
  withToolSample,
  type ModelLessons,
  type OverflowObservation,
} from '../../src/context/learned-limit-rules.js';

const settings = { windowTtlMs: 86_400_000, reprobeAfterMs: 3_600_000 };
const hour = 3_600_000;
const stated = (window: number, failedSize = window + 500): OverflowObservation => ({
  stated: window,
  failedSize,
  status: 400,
  textClass: 'numbers',
});
const failure = (failedSize: number): OverflowObservation => ({
  failedSize,
  status: 400,
  textClass: 'no_numbers',
});

describe('a window needs evidence', () => {
  it('is learned from a stated window, and without numbers only from a refusal and a smaller success', () => {
    let lessons = withOverflow(emptyModelLessons(), 'a', failure(10_000), 0);
    // One refusal alone teaches no window.
    expect(limitFor(lessons, 'a', 0, settings).window).toBeUndefined();
    lessons = withSuccess(lessons, 'a', 12_000);
    // Above the refusal: the refusal is contradicted, so is the evidence it was.
    expect(lessons.evidence).toEqual([]);
    lessons = withOverflow(lessons, 'a', failure(16_000), 0);
    lessons = withSuccess(lessons, 'a', 14_000);
    expect(limitFor(lessons, 'a', 0, settings).window).toBe(14_000);
    lessons = withOverflow(lessons, 'a', stated(15_000), 0);
    expect(limitFor(lessons, 'a', 0, settings).window).toBe(15_000);
  });

  it('is never below the largest size the model has taken, from any tenant', () => {
    let lessons = withSuccess(emptyModelLessons(), 'b', 9_000);
    lessons = withOverflow(lessons, 'a', stated(755, 1_000), 0);
    expect(lessons.evidence).toEqual([]);
    lessons = withOverflow(lessons, 'a', stated(9_500), 0);
    expect(limitFor(lessons, 'a', 0, settings).window).toBe(9_500);
    // A later success above a window drops it.
    lessons = withSuccess(lessons, 'c', 9_800);
    expect(limitFor(lessons, 'a', 0, settings).window).toBeUndefined();
  });

  it('expires a day after the last overflow confirming it, and may be probed after an hour', () => {
    let lessons = withOverflow(emptyModelLessons(), 'a', stated(8_000), 0);
    expect(limitFor(lessons, 'a', hour - 1, settings)).toEqual({ window: 8_000 });
    expect(limitFor(lessons, 'a', hour, settings)).toEqual({ window: 8_000, probe: true });
    lessons = withOverflow(lessons, 'a', stated(8_000), 2 * hour);
    expect(limitFor(lessons, 'a', 2 * hour + 1, settings)).toEqual({ window: 8_000 });
    expect(limitFor(lessons, 'a', 26 * hour, settings)).toEqual({});
  });
});

describe('blast radius', () => {
  it('keeps one tenant’s window to that tenant until a second tenant’s evidence agrees', () => {
    let lessons: ModelLessons = withOverflow(emptyModelLessons(), 'a', stated(4_000), 0);
    expect(limitFor(lessons, 'a', 0, settings).window).toBe(4_000);
    expect(limitFor(lessons, 'b', 0, settings).window).toBeUndefined();
    expect(sharedWindow(lessons, 0, settings)).toBeUndefined();
    lessons = withOverflow(lessons, 'b', stated(6_000), 0);
    // Two tenants: the larger of the two smallest windows is everyone's; a's own stays a's.
    expect(sharedWindow(lessons, 0, settings)?.window).toBe(6_000);
    expect(limitFor(lessons, 'c', 0, settings).window).toBe(6_000);
    expect(limitFor(lessons, 'a', 0, settings).window).toBe(4_000);
    lessons = withOverflow(lessons, 'c', stated(5_000), 0);
    expect(limitFor(lessons, 'd', 0, settings).window).toBe(5_000);
  });

  it('keeps a tenant’s ratio its own until two tenants have sampled enough, then shares their median', () => {
    let lessons = emptyModelLessons();
    for (let sample = 0; sample < 30; sample++)
      lessons = withRatioSample(lessons, 'a', { reported: 400, estimated: 100 }, sample);
    expect(limitFor(lessons, 'a', 0, settings).ratio).toBe(4);
    expect(limitFor(lessons, 'z', 0, settings).ratio).toBeUndefined();
    for (let sample = 0; sample < 3; sample++)
      lessons = withRatioSample(lessons, 'b', { reported: 110, estimated: 100 }, sample);
    expect(limitFor(lessons, 'z', 0, settings).ratio).toBeCloseTo((4 + 1.1) / 2, 6);
    for (let sample = 0; sample < 3; sample++)
      lessons = withRatioSample(lessons, 'c', { reported: 120, estimated: 100 }, sample);
    expect(limitFor(lessons, 'z', 0, settings).ratio).toBeCloseTo(1.2, 6);
  });
});

describe('a tenant’s first ratio sample', () => {
  it.each([
    // Counting more than the gateway: taken as measured (fewer turns kept is all it can cost).
    ['counts twice the gateway’s', 200, 2],
    ['counts nine times the gateway’s', 900, 4],
    // Counting less: one step down from 1 (prompts sent past the window is what a wrong one costs).
    ['counts half the gateway’s', 50, 0.9],
    ['counts 95% of the gateway’s', 95, 0.99],
  ])('that %s (%s where the gateway counts 100) gives %s', (_name, reported, ratio) => {
    const lessons = withRatioSample(emptyModelLessons(), 'a', { reported, estimated: 100 }, 0);
    expect(limitFor(lessons, 'a', 0, settings).ratio).toBeCloseTo(ratio, 10);
  });
});

describe('bounded steps', () => {
  it.each([
    [undefined, 9, 4],
    [undefined, 0.1, 0.25],
    [1, 1.5, 1.1],
    [1, 1.3, 1.06],
    [2, 1, 1.8],
    [1, 1, 1],
  ])('from %s towards %s: %s', (previous, sample, expected) => {
    expect(nextValue(previous, sample, { min: 0.25, max: 4 })).toBeCloseTo(expected, 10);
  });

  it('keeps a tool set’s tokens within half and twice the gateway’s own count', () => {
    let lessons = {
      costs: [] as Array<{ tenant: string; value: number; samples: number; updatedAtMs: number }>,
    };
    lessons = withToolSample(lessons, 'a', 16_359, 5_054, 0);
    expect(toolTokensFor(lessons, 'a', 5_054)).toBe(10_108);
    expect(toolTokensFor(withToolSample({ costs: [] }, 'a', 10, 473, 0), 'a', 473)).toBe(237);
  });
});

describe('countsAgree', () => {
  it.each([
    [1_000, 1_000, undefined, true],
    [1_900, 1_000, undefined, true],
    [2_100, 1_000, undefined, false],
    // Eleven low-detail images: 85 tokens each by the tile formula, 765 by the provider.
    [8_415, 935, undefined, false],
    [2_600, 1_000, 1.5, true],
    [400, 1_000, undefined, false],
  ])('%s reported for %s estimated (ratio %s): %s', (reported, estimated, ratio, agrees) => {
    expect(countsAgree(reported, estimated, ratio)).toBe(agrees);
  });
});

describe('statedWindow', () => {
  it.each<[string, { maxContext?: number; maxInputTokens?: number }, number, number | undefined]>([
    ['a window, whatever was asked for', { maxContext: 128_000 }, 4_096, 128_000],
    ['a window and an input cap: the window', { maxContext: 32_768, maxInputTokens: 28_672 }, 4_096, 32_768],
    // GPT-5: "configured limit of 272000 tokens" with 16,384 asked for: sizes up to 288,384 go through.
    ['a cap on the input alone, plus the answer asked for', { maxInputTokens: 272_000 }, 16_384, 288_384],
    ['a cap on the input alone, no answer asked for', { maxInputTokens: 272_000 }, 0, 272_000],
    ['neither', {}, 4_096, undefined],
  ])('%s', (_name, numbers, sentMaxTokens, expected) => {
    expect(statedWindow(numbers, sentMaxTokens)).toBe(expected);
  });
});

describe('evidenceWindow', () => {
  it.each([
    [{ stated: 8_192, failed: 9_000 }, 8_192],
    [{ failed: 10_000 }, undefined],
    [{ failed: 10_000, succeeded: 7_000 }, 7_000],
    [{ failed: 10_000, succeeded: 12_000 }, undefined],
  ])('%j → %s', (fields, expected) => {
    expect(
      evidenceWindow({
        tenant: 't',
        status: 400,
        textClass: 'numbers',
        learnedAtMs: 0,
        confirmedAtMs: 0,
        ...fields,
      }),
    ).toBe(expected);
  });
});
