// Learned limits in process and in a real Redis shared by two replicas: the same answers, shared within
// the refresh interval, still applied while Redis is unreachable, and ratio samples aggregated so that a
// busy model costs Redis at most one write per refresh.
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import {
  createMemoryLearnedLimits,
  createRedisLearnedLimits,
  type LearnedLimits,
} from '../../src/store/learned-limits.js';
import { createRedisConnection, type RedisConnection } from '../../src/store/redis-client.js';
import { findFreePort, startRedisServer } from '../helpers/redis-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function describeLearnedLimits(
  name: string,
  create: () => Promise<{ limits: LearnedLimits; replica: LearnedLimits; close(): Promise<void> }>,
): void {
  describe(`learned limits: ${name}`, () => {
    it('takes a stated window as it is, and otherwise bounds the window by failures and successes', async () => {
      const { limits, replica, close } = await create();
      try {
        const model = `model-${randomUUID()}`;
        expect(limits.get('default', model)).toEqual({});
        limits.recordOverflow('default', model, { failedSize: 10_000 });
        expect(limits.get('default', model)).toEqual({ window: 8_000 });
        limits.recordSuccess('default', model, 12_000); // above a failure: teaches nothing
        limits.recordSuccess('default', model, 7_500);
        expect(limits.get('default', model)).toEqual({ window: 7_500 });
        limits.recordOverflow('default', model, { failedSize: 9_000, window: 8_192 });
        expect(limits.get('default', model)).toEqual({ window: 8_192 });
        limits.recordRatio('default', model, { reported: 120, estimated: 100 });
        limits.recordRatio('default', model, { reported: 170, estimated: 100 });
        const calibrated = limits.get('default', model);
        expect(calibrated.window).toBe(8_192);
        expect(calibrated.ratio).toBeCloseTo(1.3, 6);

        // Per upstream: the same model elsewhere learned nothing.
        expect(limits.get('other', model)).toEqual({});
        // Shared by replicas where the store is shared (the in-process store is one replica).
        if (replica !== limits) {
          await expect
            .poll(() => replica.get('default', model).window, { timeout: 5_000, interval: 50 })
            .toBe(8_192);
          await expect
            .poll(() => replica.get('default', model).ratio ?? 0, { timeout: 5_000, interval: 50 })
            .toBeCloseTo(1.3, 6);
        }
      } finally {
        await close();
      }
    });
  });
}

describeLearnedLimits('in process', async () => {
  const limits = createMemoryLearnedLimits();
  return { limits, replica: limits, close: async () => undefined };
});

async function connected(url: string): Promise<RedisConnection> {
  const redis = createRedisConnection({ mode: 'standalone', url });
  for (let attempt = 0; attempt < 100 && redis.status !== 'ready'; attempt++) await sleep(20);
  return redis;
}

describeLearnedLimits('redis-server, two replicas', async () => {
  const connections = [await connected(inject('redisUrl')), await connected(inject('redisUrl'))];
  const [limits, replica] = connections.map((redis) => createRedisLearnedLimits({ redis, refreshMs: 200 }));
  return {
    limits: limits as LearnedLimits,
    replica: replica as LearnedLimits,
    async close() {
      await limits?.close();
      await replica?.close();
      for (const redis of connections) redis.disconnect();
    },
  };
});

describe('learned limits with Redis unreachable', () => {
  it('still applies what this replica learned, and is not loaded', async () => {
    const redis = createRedisConnection({
      mode: 'standalone',
      url: `redis://127.0.0.1:${await findFreePort()}`,
    });
    redis.on('error', () => undefined);
    const limits = createRedisLearnedLimits({ redis });
    try {
      limits.recordOverflow('default', 'm', { failedSize: 5_000, window: 4_096 });
      expect(limits.get('default', 'm')).toEqual({ window: 4_096 });
      expect(limits.loaded()).toBe(false);
    } finally {
      await limits.close();
      redis.disconnect();
    }
  });
});

async function scriptCalls(redis: RedisConnection): Promise<number> {
  const info = (await redis.info('commandstats')) as string;
  let calls = 0;
  for (const match of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(match[1]);
  return calls;
}

describe('learned limits in Redis under load', () => {
  it('writes a busy model’s ratio at most once per refresh, and the replicas agree on it', async () => {
    const server = await startRedisServer();
    const connections = [await connected(server.url), await connected(server.url)];
    const [first, second] = connections.map((redis) =>
      createRedisLearnedLimits({ redis, refreshMs: 250 }),
    ) as [LearnedLimits, LearnedLimits];
    try {
      const before = await scriptCalls(connections[0] as RedisConnection);
      const startedAt = Date.now();
      for (let index = 0; index < 2_000; index++) {
        first.recordRatio('default', 'busy', { reported: 130, estimated: 100 });
        if (index % 100 === 0) await sleep(50);
      }
      const elapsedMs = Date.now() - startedAt;
      await sleep(600);
      const writes = (await scriptCalls(connections[0] as RedisConnection)) - before;
      // 2 000 samples; one write per model per refresh (plus the one after the loop).
      expect(writes).toBeGreaterThanOrEqual(1);
      expect(writes).toBeLessThanOrEqual(Math.ceil((elapsedMs + 600) / 250) + 1);
      expect(first.get('default', 'busy').ratio).toBeCloseTo(1.3, 6);
      await expect
        .poll(() => second.get('default', 'busy').ratio ?? 0, { timeout: 3_000, interval: 50 })
        .toBeCloseTo(1.3, 6);
    } finally {
      await first.close();
      await second.close();
      for (const redis of connections) redis.disconnect();
      await server.stop();
    }
  });

  it('forgets an entry no replica wrote for the retention time', async () => {
    const server = await startRedisServer();
    const redis = await connected(server.url);
    let nowMs = Date.now();
    const limits = createRedisLearnedLimits({ redis, now: () => nowMs, refreshMs: 100, retentionMs: 60_000 });
    try {
      limits.recordOverflow('default', 'old', { failedSize: 9_000, window: 8_000 });
      await expect.poll(async () => (await redis.hlen('ctxgate:{learned-limits}')) > 0).toBe(true);
      nowMs += 61_000;
      await expect.poll(async () => redis.hlen('ctxgate:{learned-limits}'), { timeout: 3_000 }).toBe(0);
      const fresh = createRedisLearnedLimits({ redis, refreshMs: 100 });
      await expect.poll(() => fresh.loaded()).toBe(true);
      expect(fresh.get('default', 'old')).toEqual({});
      await fresh.close();
    } finally {
      await limits.close();
      redis.disconnect();
      await server.stop();
    }
  });
});
