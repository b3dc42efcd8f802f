// BudgetStore on Redis (standalone, Sentinel or Cluster). Each counter is a hash: `used`, `estimated`,
// `warned`, and one `r:<reservation id>` field per request in flight (`<tokens>:<expires at ms>`).
// Counters sharing a hash tag (a credential's day and month; a session's) are checked and reserved in
// one Lua script; a request counting in two tags reserves tag by tag and gives back what it took when a
// later tag refuses. Time comes from the caller, so periods and expiries follow an injected clock.
import type { RedisConnection } from './redis-client.js';
import { budgetScripts, defineScripts } from './redis-scripts.js';
import { counterKey, type BudgetCounter, type BudgetStore, type CounterUsage } from './budget-store.js';

/** One counter's used, estimated and reserved tokens, as the scripts return them from `offset`. */
function usageAt(reply: readonly number[], offset: number): CounterUsage {
  return {
    used: Number(reply[offset]),
    estimated: Number(reply[offset + 1]),
    reserved: Number(reply[offset + 2]),
  };
}

/** Indices of `counters` grouped by hash tag, in first-seen order. */
function byTag(counters: readonly BudgetCounter[]): number[][] {
  const groups = new Map<string, number[]>();
  counters.forEach((counter, index) => {
    const key = counterKey(counter);
    const tag = key.slice(key.indexOf('{'), key.indexOf('}') + 1);
    const group = groups.get(tag) ?? [];
    group.push(index);
    groups.set(tag, group);
  });
  return [...groups.values()];
}

export function createRedisBudgetStore({ redis }: { redis: RedisConnection }): BudgetStore {
  const { read, reserve, settle, release } = defineScripts(redis, budgetScripts);

  const releaseGroup = async (counters: readonly BudgetCounter[], reservationId: string): Promise<void> => {
    await release(counters.length, ...counters.map(counterKey), reservationId);
  };

  return {
    async read(counters, nowMs) {
      const usage: CounterUsage[] = new Array<CounterUsage>(counters.length);
      for (const group of byTag(counters)) {
        const reply = (await read(
          group.length,
          ...group.map((index) => counterKey(counters[index] as BudgetCounter)),
          nowMs,
        )) as number[];
        group.forEach((index, position) => (usage[index] = usageAt(reply, position * 3)));
      }
      return usage;
    },
    async reserve({ counters, limits, reservationId, tokens, expiresAtMs, nowMs }) {
      const usage: CounterUsage[] = new Array<CounterUsage>(counters.length);
      const taken: BudgetCounter[][] = [];
      let refused = -1;
      for (const group of byTag(counters)) {
        const perKey: Array<string | number> = [];
        for (const index of group) {
          const limit = limits[index];
          perKey.push(
            limit?.limit ?? 0,
            limit?.hard === true ? 1 : 0,
            (counters[index] as BudgetCounter).ttlSeconds,
          );
        }
        const reply = (await reserve(
          group.length,
          ...group.map((index) => counterKey(counters[index] as BudgetCounter)),
          nowMs,
          reservationId,
          Math.max(0, Math.round(tokens)),
          Math.round(expiresAtMs),
          ...perKey,
        )) as number[];
        // After the verdict and the refused index.
        group.forEach((index, position) => (usage[index] = usageAt(reply, 2 + position * 3)));
        if (Number(reply[0]) !== 1) {
          refused = group[Number(reply[1]) - 1] as number;
          break;
        }
        taken.push(group.map((index) => counters[index] as BudgetCounter));
      }
      if (refused === -1) return { ok: true, usage };
      // Another tag refused: give back what the earlier tags reserved.
      for (const group of taken) await releaseGroup(group, reservationId);
      for (let index = 0; index < usage.length; index++)
        usage[index] ??= { used: 0, estimated: 0, reserved: 0 };
      return { ok: false, refused, usage };
    },
    async settle({ counters, limits, reservationId, tokens, estimatedTokens, warnAt }) {
      const usage: number[] = new Array<number>(counters.length).fill(0);
      const warned: boolean[] = new Array<boolean>(counters.length).fill(false);
      for (const group of byTag(counters)) {
        const perKey: Array<string | number> = [];
        for (const index of group)
          perKey.push(limits[index]?.limit ?? 0, (counters[index] as BudgetCounter).ttlSeconds);
        const reply = (await settle(
          group.length,
          ...group.map((index) => counterKey(counters[index] as BudgetCounter)),
          reservationId,
          Math.max(0, Math.round(tokens)),
          Math.max(0, Math.round(estimatedTokens)),
          warnAt,
          ...perKey,
        )) as number[];
        group.forEach((index, position) => {
          usage[index] = Number(reply[position * 2]);
          warned[index] = Number(reply[position * 2 + 1]) === 1;
        });
      }
      return { usage, warned };
    },
    async release(counters, reservationId) {
      for (const group of byTag(counters))
        await releaseGroup(
          group.map((index) => counters[index] as BudgetCounter),
          reservationId,
        );
    },
    async reset(counter) {
      return (await redis.del(counterKey(counter))) > 0;
    },
  };
}
