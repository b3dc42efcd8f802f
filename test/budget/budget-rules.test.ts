// The pure budget rules as tables: which budget applies (the credential's entry replaces the default, a
// preset only tightens, the header only lowers), UTC periods and their resets, and backpressure steps.
import { describe, expect, it } from 'vitest';
import { backpressureDelayMs, budgetPeriod, resolveBudgets } from '../../src/budget/budget-rules.js';

describe('resolveBudgets', () => {
  const defaults = {
    session_tokens: { limit: 1_000, mode: 'hard' as const },
    credential_daily_tokens: { limit: 50_000, mode: 'soft' as const },
  };
  const resolve = (overrides: Partial<Parameters<typeof resolveBudgets>[0]> = {}) =>
    resolveBudgets({
      defaults,
      credential: undefined,
      preset: undefined,
      sessionTokensHeader: undefined,
      sessionMode: true,
      ...overrides,
    });

  it('takes the defaults, and leaves the session budget out of stateless requests', () => {
    expect(resolve()).toEqual([
      { name: 'session_tokens', limit: 1_000, mode: 'hard' },
      { name: 'credential_daily_tokens', limit: 50_000, mode: 'soft' },
    ]);
    expect(resolve({ sessionMode: false }).map((budget) => budget.name)).toEqual(['credential_daily_tokens']);
  });

  it("lets a credential's entry replace a default, loosen it or turn it off", () => {
    expect(resolve({ credential: { credential_daily_tokens: { limit: 90_000, mode: 'hard' } } })[1]).toEqual({
      name: 'credential_daily_tokens',
      limit: 90_000,
      mode: 'hard',
    });
    expect(
      resolve({ credential: { session_tokens: { limit: 5, mode: 'off' } } }).map((budget) => budget.name),
    ).toEqual(['credential_daily_tokens']);
  });

  it('lets a preset only tighten (the tightest wins; hard wins a tie) and add budgets', () => {
    expect(resolve({ preset: { session_tokens: { limit: 2_000, mode: 'soft' } } })[0]).toEqual({
      name: 'session_tokens',
      limit: 1_000,
      mode: 'hard',
    });
    expect(resolve({ preset: { session_tokens: { limit: 400, mode: 'soft' } } })[0]).toEqual({
      name: 'session_tokens',
      limit: 400,
      mode: 'soft',
    });
    expect(resolve({ preset: { credential_daily_tokens: { limit: 50_000, mode: 'hard' } } })[1]?.mode).toBe(
      'hard',
    );
    expect(resolve({ preset: { max_request_tokens: { limit: 8_000, mode: 'hard' } } }).at(-1)).toEqual({
      name: 'max_request_tokens',
      limit: 8_000,
      mode: 'hard',
    });
  });

  it('lets X-Budget-Session-Tokens lower the session budget, set a hard one when there is none, never raise it', () => {
    expect(resolve({ sessionTokensHeader: 300 })[0]).toEqual({
      name: 'session_tokens',
      limit: 300,
      mode: 'hard',
    });
    expect(resolve({ sessionTokensHeader: 5_000 })[0]).toEqual({
      name: 'session_tokens',
      limit: 1_000,
      mode: 'hard',
    });
    expect(resolve({ defaults: {}, sessionTokensHeader: 0 })).toEqual([
      { name: 'session_tokens', limit: 0, mode: 'hard' },
    ]);
    expect(resolve({ defaults: {}, sessionTokensHeader: 10, sessionMode: false })).toEqual([]);
  });
});

describe('budgetPeriod', () => {
  it.each([
    [
      'credential_daily_tokens',
      Date.UTC(2026, 10, 22, 23, 59, 59, 999),
      '2026-11-22',
      '2026-11-23T00:00:00.000Z',
    ],
    ['credential_daily_tokens', Date.UTC(2026, 11, 31, 12), '2026-12-31', '2027-01-01T00:00:00.000Z'],
    ['credential_daily_tokens', Date.UTC(2028, 1, 28, 8), '2028-02-28', '2028-02-29T00:00:00.000Z'],
    ['credential_monthly_tokens', Date.UTC(2026, 11, 31, 23, 59), '2026-12', '2027-01-01T00:00:00.000Z'],
    ['credential_monthly_tokens', Date.UTC(2028, 1, 29), '2028-02', '2028-03-01T00:00:00.000Z'],
  ] as const)('%s at %s', (name, nowMs, id, resetsAt) => {
    const period = budgetPeriod(name, nowMs);
    expect(period.id).toBe(id);
    expect(new Date(period.resetsAtMs as number).toISOString()).toBe(resetsAt);
  });

  it('gives a session budget one lifetime period that never resets', () => {
    expect(budgetPeriod('session_tokens', Date.UTC(2026, 0, 1))).toEqual({
      id: 'lifetime',
      resetsAtMs: undefined,
    });
  });
});

describe('backpressureDelayMs', () => {
  const steps = [
    { at: 0.8, delayMs: 50 },
    { at: 0.85, delayMs: 300 },
    { at: 0.9, delayMs: 750 },
    { at: 0.95, delayMs: 1_500 },
  ];
  it.each([
    [0, 0],
    [0.7999, 0],
    [0.8, 50],
    [0.849, 50],
    [0.85, 300],
    [0.9, 750],
    [0.95, 1_500],
    [1.4, 1_500],
  ])('share %d waits %d ms', (share, delayMs) => {
    expect(backpressureDelayMs(share, steps)).toBe(delayMs);
  });
});
