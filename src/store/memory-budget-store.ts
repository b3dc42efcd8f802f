// In-process BudgetStore: budgets without Redis (one process only; lost on restart). Same semantics as
// the Redis store, so the contract suite runs against both.
import { counterKey, type BudgetStore, type CounterUsage } from './budget-store.js';

interface MemoryCounter {
  used: number;
  estimated: number;
  warned: boolean;
  reservations: Map<string, { tokens: number; expiresAtMs: number }>;
}

export function createMemoryBudgetStore(): BudgetStore {
  const counters = new Map<string, MemoryCounter>();
  const counterFor = (key: string): MemoryCounter => {
    let counter = counters.get(key);
    if (counter === undefined) {
      counter = { used: 0, estimated: 0, warned: false, reservations: new Map() };
      counters.set(key, counter);
    }
    return counter;
  };
  const usageOf = (key: string, nowMs: number): CounterUsage => {
    const counter = counters.get(key);
    if (counter === undefined) return { used: 0, estimated: 0, reserved: 0 };
    let reserved = 0;
    for (const [id, reservation] of counter.reservations) {
      if (reservation.expiresAtMs <= nowMs) counter.reservations.delete(id);
      else reserved += reservation.tokens;
    }
    return { used: counter.used, estimated: counter.estimated, reserved };
  };

  return {
    async read(list, nowMs) {
      return list.map((counter) => usageOf(counterKey(counter), nowMs));
    },
    async reserve({ counters: list, limits, reservationId, tokens, expiresAtMs, nowMs }) {
      const keys = list.map(counterKey);
      const usage = keys.map((key) => usageOf(key, nowMs));
      const refused = usage.findIndex((entry, index) => {
        const limit = limits[index];
        return limit !== undefined && limit.hard && entry.used + entry.reserved >= limit.limit;
      });
      if (refused !== -1) return { ok: false, refused, usage };
      for (const key of keys) counterFor(key).reservations.set(reservationId, { tokens, expiresAtMs });
      return { ok: true, usage };
    },
    async settle({ counters: list, limits, reservationId, tokens, estimatedTokens, warnAt }) {
      const usage: number[] = [];
      const warned: boolean[] = [];
      list.forEach((entry, index) => {
        const counter = counterFor(counterKey(entry));
        counter.reservations.delete(reservationId);
        counter.used += tokens;
        counter.estimated += estimatedTokens;
        const limit = limits[index]?.limit ?? 0;
        const crossed = limit > 0 && counter.used >= warnAt * limit && !counter.warned;
        if (crossed) counter.warned = true;
        usage.push(counter.used);
        warned.push(crossed);
      });
      return { usage, warned };
    },
    async release(list, reservationId) {
      for (const entry of list) counters.get(counterKey(entry))?.reservations.delete(reservationId);
    },
    async reset(counter) {
      const key = counterKey(counter);
      const existing = counters.get(key);
      counters.delete(key);
      return existing !== undefined && (existing.used > 0 || existing.reservations.size > 0);
    },
  };
}
