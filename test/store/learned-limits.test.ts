// Learned limits: the bounds rule, and the same behaviour in process and in a real Redis shared by
// two replicas (and still learned locally while Redis is unreachable).
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import {
  createMemoryLearnedLimits,
  createRedisLearnedLimits,
  nextRatio,
  windowFromBounds,
  type LearnedLimits,
} from '../../src/store/learned-limits.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { findFreePort } from '../helpers/redis-server.js';

describe('nextRatio', () => {
  it('starts at the measured ratio, moves a fifth of the way per sample, and stays within 0.5–2', () => {
    expect(nextRatio(undefined, { reported: 150, estimated: 100 })).toBe(1.5);
    expect(nextRatio(1.5, { reported: 100, estimated: 100 })).toBeCloseTo(1.4, 10);
    expect(nextRatio(undefined, { reported: 1_000, estimated: 100 })).toBe(2);
    expect(nextRatio(undefined, { reported: 10, estimated: 100 })).toBe(0.5);
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function describeLearnedLimits(name: string, create: () => Promise<[LearnedLimits, LearnedLimits]>): void {
  describe(`learned limits: ${name}`, () => {
    it('takes a stated window as it is, and otherwise bounds the window by failures and successes', async () => {
      const [limits, replica] = await create();
      const model = `model-${randomUUID()}`;
      expect(await limits.get('default', model)).toEqual({});
      await limits.recordOverflow('default', model, { failedSize: 10_000 });
      expect(await limits.get('default', model)).toEqual({ window: 8_000 });
      await limits.recordSuccess('default', model, 12_000); // above a failure: teaches nothing
      await limits.recordSuccess('default', model, 7_500);
      expect(await limits.get('default', model)).toEqual({ window: 7_500 });
      await limits.recordOverflow('default', model, { failedSize: 9_000, window: 8_192 });
      expect(await limits.get('default', model)).toEqual({ window: 8_192 });
      await limits.recordRatio('default', model, { reported: 120, estimated: 100 });
      await limits.recordRatio('default', model, { reported: 170, estimated: 100 });
      const calibrated = await limits.get('default', model);
      expect(calibrated.window).toBe(8_192);
      expect(calibrated.ratio).toBeCloseTo(1.3, 6);

      // Per upstream: the same model elsewhere learned nothing.
      expect(await limits.get('other', model)).toEqual({});
      // Shared by replicas where the store is shared (the in-process store is one replica).
      if (replica !== limits) {
        await sleep(2_100);
        const shared = await replica.get('default', model);
        expect(shared.window).toBe(8_192);
        expect(shared.ratio).toBeCloseTo(1.3, 6);
      }
    });
  });
}

describeLearnedLimits('in process', async () => {
  const limits = createMemoryLearnedLimits();
  return [limits, limits];
});

async function connected(url: string) {
  const redis = createRedisConnection({ mode: 'standalone', url });
  for (let attempt = 0; attempt < 100 && redis.status !== 'ready'; attempt++) await sleep(20);
  return redis;
}

describeLearnedLimits('redis-server, two replicas', async () => [
  createRedisLearnedLimits({ redis: await connected(inject('redisUrl')) }),
  createRedisLearnedLimits({ redis: await connected(inject('redisUrl')) }),
]);

describe('learned limits with Redis unreachable', () => {
  it('still applies what this replica learned', async () => {
    const redis = createRedisConnection({
      mode: 'standalone',
      url: `redis://127.0.0.1:${await findFreePort()}`,
    });
    redis.on('error', () => undefined);
    try {
      const limits = createRedisLearnedLimits({ redis });
      await limits.recordOverflow('default', 'm', { failedSize: 5_000, window: 4_096 });
      expect(await limits.get('default', 'm')).toEqual({ window: 4_096 });
    } finally {
      redis.disconnect();
    }
  });
});
