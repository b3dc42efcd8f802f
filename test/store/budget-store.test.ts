// Which counter a request counts in (docs/budgets.md) and what it is called in a store: a session's
// lifetime, a credential's UTC day and month, each kept a while after its last change; on a Redis
// Cluster, the counters one script touches together share a hash tag, and a session's counter sits in
// its session's slot. The stores' behaviour is the contract's (budget-store-contract.ts).
import { describe, expect, it } from 'vitest';
import { budgetCounter, counterKey } from '../../src/store/budget-store.js';
import { sessionKeys } from '../../src/store/redis-session-store.js';

const day = 86_400;

/** The part of a key Redis Cluster hashes: what is inside the first `{…}`, when not empty. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  if (open === -1 || close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

const counterAt = (name: Parameters<typeof budgetCounter>[0]['name'], nowMs: number, tenantId = 't1') =>
  budgetCounter({ name, tenantId, sessionId: 's1', nowMs, sessionTtlSeconds: 7 * day });

describe('budgetCounter', () => {
  const lastMomentOfNovember = Date.UTC(2026, 10, 30, 23, 59, 59, 999);

  it.each([
    ['credential_daily_tokens', lastMomentOfNovember, '2026-11-30', 40 * day],
    ['credential_daily_tokens', lastMomentOfNovember + 1, '2026-12-01', 40 * day],
    ['credential_monthly_tokens', lastMomentOfNovember, '2026-11', 400 * day],
    ['credential_monthly_tokens', lastMomentOfNovember + 1, '2026-12', 400 * day],
    ['session_tokens', lastMomentOfNovember, 'lifetime', 7 * day],
  ] as const)('%s at %d counts in period %s, kept %d s', (name, nowMs, periodId, ttlSeconds) => {
    const counter = counterAt(name, nowMs);
    expect(counter).toMatchObject({ name, tenantId: 't1', periodId, ttlSeconds });
    // Only a session's counter names its session.
    expect(counter.sessionId).toBe(name === 'session_tokens' ? 's1' : undefined);
  });
});

describe('counterKey', () => {
  const nowMs = Date.UTC(2026, 10, 27, 12);

  it('gives each tenant, budget and period a key of its own', () => {
    const keys = [
      counterKey(counterAt('credential_daily_tokens', nowMs)),
      counterKey(counterAt('credential_daily_tokens', nowMs + day * 1_000)),
      counterKey(counterAt('credential_monthly_tokens', nowMs)),
      counterKey(counterAt('credential_daily_tokens', nowMs, 't2')),
      counterKey(counterAt('session_tokens', nowMs)),
      counterKey(
        budgetCounter({
          name: 'session_tokens',
          tenantId: 't1',
          sessionId: 's2',
          nowMs,
          sessionTtlSeconds: day,
        }),
      ),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys) expect(key.startsWith('ctxgate:')).toBe(true);
  });

  it("puts a credential's day and month in one slot, apart from other tenants'", () => {
    const daily = hashTagOf(counterKey(counterAt('credential_daily_tokens', nowMs)));
    expect(hashTagOf(counterKey(counterAt('credential_monthly_tokens', nowMs)))).toBe(daily);
    expect(hashTagOf(counterKey(counterAt('credential_monthly_tokens', nowMs, 't2')))).not.toBe(daily);
  });

  it("puts a session's counter in the slot of the session's own keys", () => {
    const tag = hashTagOf(counterKey(counterAt('session_tokens', nowMs)));
    for (const key of Object.values(sessionKeys({ tenantId: 't1', sessionId: 's1' })))
      expect(hashTagOf(key)).toBe(tag);
    expect(tag).not.toBe(hashTagOf(counterKey(counterAt('credential_daily_tokens', nowMs))));
  });
});
