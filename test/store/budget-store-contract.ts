// The BudgetStore contract, run against every store (memory-budget-store.test.ts, redis-budget-store.test.ts):
// hard limits refuse at used + reserved, reservations expire and are settled or given back, the warning
// flag is set once per counter, and concurrent reservations never pass a hard limit.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BudgetCounter, BudgetStore } from '../../src/store/budget-store.js';

export function describeBudgetStoreContract(name: string, factory: () => Promise<BudgetStore>): void {
  describe(`BudgetStore contract: ${name}`, () => {
    const counters = (): BudgetCounter[] => {
      const tenantId = `t-${randomUUID().slice(0, 8)}`;
      return [
        { name: 'session_tokens', tenantId, sessionId: 's-1', periodId: 'lifetime', ttlSeconds: 3_600 },
        { name: 'credential_daily_tokens', tenantId, periodId: '2026-11-22', ttlSeconds: 3_600 },
      ];
    };
    const now = Date.now();
    /** A reservation of `tokens` that expires at `expiresAtMs`, checked at `nowMs`. */
    const reserveOn = (
      store: BudgetStore,
      list: BudgetCounter[],
      limits: Array<{ limit: number; hard: boolean }>,
      reservationId: string,
      tokens: number,
      expiresAtMs = now + 60_000,
      nowMs = now,
    ) => store.reserve({ counters: list, limits, reservationId, tokens, expiresAtMs, nowMs });

    it('reserves, settles and reads; a hard counter refuses once used + reserved reach its limit', async () => {
      const store = await factory();
      const list = counters();
      const limits = [
        { limit: 1_000, hard: true },
        { limit: 100_000, hard: true },
      ];
      const first = await reserveOn(store, list, limits, 'a', 600, now + 60_000, now);
      expect(first).toEqual({
        ok: true,
        usage: [
          { used: 0, estimated: 0, reserved: 0 },
          { used: 0, estimated: 0, reserved: 0 },
        ],
      });
      const second = await reserveOn(store, list, limits, 'b', 600, now + 60_000, now);
      expect(second.ok).toBe(true);
      // 1 200 reserved ≥ 1 000: the session counter refuses, and the daily one keeps nothing of it.
      const third = await reserveOn(store, list, limits, 'c', 10, now + 60_000, now);
      expect(third).toMatchObject({ ok: false, refused: 0 });
      expect(await store.read(list, now)).toEqual([
        { used: 0, estimated: 0, reserved: 1_200 },
        { used: 0, estimated: 0, reserved: 1_200 },
      ]);
      expect(
        await store.settle({
          counters: list,
          limits,
          reservationId: 'a',
          tokens: 450,
          estimatedTokens: 0,
          warnAt: 0.8,
        }),
      ).toEqual({ usage: [450, 450], warned: [false, false] });
      expect(
        await store.settle({
          counters: list,
          limits,
          reservationId: 'b',
          tokens: 400,
          estimatedTokens: 400,
          warnAt: 0.8,
        }),
      ).toEqual({ usage: [850, 850], warned: [true, false] });
      expect(await store.read(list, now)).toEqual([
        { used: 850, estimated: 400, reserved: 0 },
        { used: 850, estimated: 400, reserved: 0 },
      ]);
      // The warning is given once per counter.
      await reserveOn(store, list, limits, 'd', 10, now + 60_000, now);
      expect(
        (
          await store.settle({
            counters: list,
            limits,
            reservationId: 'd',
            tokens: 10,
            estimatedTokens: 0,
            warnAt: 0.8,
          })
        ).warned,
      ).toEqual([false, false]);
      // A soft counter never refuses.
      const soft = await store.reserve({
        counters: list,
        limits: [
          { limit: 1, hard: false },
          { limit: 1, hard: false },
        ],
        reservationId: 'e',
        tokens: 10,
        expiresAtMs: now + 60_000,
        nowMs: now,
      });
      expect(soft.ok).toBe(true);
      await store.release(list, 'e');
      expect((await store.read(list, now))[0]).toEqual({ used: 860, estimated: 400, reserved: 0 });
      expect(await store.reset(list[0] as BudgetCounter)).toBe(true);
      expect((await store.read(list, now))[0]).toEqual({ used: 0, estimated: 0, reserved: 0 });
    });

    it('lets a reservation expire by itself (a replica died mid-request)', async () => {
      const store = await factory();
      const list = counters();
      const limits = [
        { limit: 100, hard: true },
        { limit: 100, hard: true },
      ];
      expect((await reserveOn(store, list, limits, 'x', 100, now + 1_000, now)).ok).toBe(true);
      expect((await reserveOn(store, list, limits, 'y', 1, now + 1_000, now + 500)).ok).toBe(false);
      expect((await reserveOn(store, list, limits, 'y', 1, now + 9_000, now + 1_001)).ok).toBe(true);
      expect(await store.read(list, now + 1_001)).toEqual([
        { used: 0, estimated: 0, reserved: 1 },
        { used: 0, estimated: 0, reserved: 1 },
      ]);
    });

    it('admits concurrent reservations only while used + reserved is under a hard limit', async () => {
      const store = await factory();
      const list = counters();
      const limits = [
        { limit: 1_000, hard: true },
        { limit: 1_000, hard: true },
      ];
      const outcomes = await Promise.all(
        Array.from({ length: 30 }, (_unused, index) =>
          reserveOn(store, list, limits, `r${index}`, 100, now + 60_000, now),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(10);
    });
  });
}
