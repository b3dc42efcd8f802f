// Learned limits in process, in a real Redis shared by two replicas, and in a real Redis Cluster: the
// same answers; one tenant's lesson kept to it until a second tenant agrees; shared within a refresh;
// replicas never overwrite each other's lessons (compare-and-set); bounded, the least recently used
// going first, with new lessons still shared when full; reset one or all; still applied while Redis
// is unreachable.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { OverflowObservation } from '../../src/context/learned-limit-rules.js';
import {
  createMemoryLearnedLimits,
  createPending,
  createRedisLearnedLimits,
  maxPendingOverflows,
  type LearnedChange,
  type LearnedLimits,
} from '../../src/store/learned-limits.js';
import { createRedisConnection, type RedisConnection } from '../../src/store/redis-client.js';
import { createFieldFixes } from '../../src/upstream/field-fixes.js';
import { startRedisCluster, type RunningCluster } from '../helpers/redis-cluster.js';
import { findFreePort, startRedisServer } from '../helpers/redis-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const settings = { windowTtlMs: 86_400_000, reprobeAfterMs: 3_600_000 };
const stated = (window: number): OverflowObservation => ({
  stated: window,
  failedSize: window + 500,
  status: 400,
  textClass: 'numbers',
});

interface Replicas {
  limits: LearnedLimits;
  replica: LearnedLimits;
  changes: LearnedChange[];
  close(): Promise<void>;
}

function describeLearnedLimits(name: string, create: (maxEntries?: number) => Promise<Replicas>): void {
  describe(`learned limits: ${name}`, () => {
    it('keeps a tenant’s window to it until a second tenant agrees, and shares it then', async () => {
      const { limits, replica, changes, close } = await create();
      try {
        const model = `model-${randomUUID()}`;
        expect(limits.get('default', model, 'a')).toEqual({});
        limits.recordOverflow('default', model, 'a', stated(4_000));
        expect(limits.get('default', model, 'a')).toEqual({ window: 4_000 });
        expect(limits.get('default', model, 'b')).toEqual({});
        limits.recordOverflow('default', model, 'b', stated(6_000));
        expect(limits.get('default', model, 'c')).toEqual({ window: 6_000 });
        expect(limits.get('default', model, 'a')).toEqual({ window: 4_000 });
        expect(changes.some((change) => change.model === model && change.sharedWindowAfter === 6_000)).toBe(
          true,
        );
        // Per upstream: the same model elsewhere learned nothing.
        expect(limits.get('other', model, 'c')).toEqual({});
        if (replica !== limits)
          await expect
            .poll(() => replica.get('default', model, 'c').window, { timeout: 5_000, interval: 50 })
            .toBe(6_000);
        const [entry] = limits.list().filter((view) => view.model === model);
        expect(entry?.sharedWindow).toBe(6_000);
        expect(entry?.evidence?.map((item) => [item.tenant, item.window, item.textClass])).toEqual([
          ['a', 4_000, 'numbers'],
          ['b', 6_000, 'numbers'],
        ]);
      } finally {
        await close();
      }
    });

    it('tells of a change when a tenant first teaches a ratio, and not of each sample after', async () => {
      const { limits, changes, close } = await create();
      try {
        const model = `model-${randomUUID()}`;
        const of = () => changes.filter((change) => change.model === model).length;
        limits.recordRatio('default', model, 'a', { reported: 130, estimated: 100 });
        await expect.poll(of, { timeout: 5_000 }).toBe(1);
        for (let sample = 0; sample < 5; sample++)
          limits.recordRatio('default', model, 'a', { reported: 120 + sample, estimated: 100 });
        limits.recordRatio('default', model, 'b', { reported: 125, estimated: 100 });
        await expect.poll(of, { timeout: 5_000 }).toBe(2);
        limits.recordRatio('default', model, 'b', { reported: 126, estimated: 100 });
        await sleep(1_200);
        expect(of()).toBe(2);
      } finally {
        await close();
      }
    });

    it('writes what it learned as it learned it: the write moves nothing, and every replica gets the same', async () => {
      const { limits, replica, close } = await create();
      try {
        const model = `model-${randomUUID()}`;
        // Six samples within one write interval. Worked by hand: the first as measured (1.30), then a
        // fifth of the way to each next one (by at most a tenth): 1.248, 1.2984, 1.23472, 1.229776,
        // 1.2638208. One sample of their sums (743 / 600 = 1.2383) is another value.
        for (const reported of [130, 104, 150, 98, 121, 140])
          limits.recordRatio('default', model, 'a', { reported, estimated: 100 });
        const learned = limits.get('default', model, 'a').ratio;
        expect(learned).toBeCloseTo(1.2638208, 9);
        await expect.poll(() => replica.get('default', model, 'a').ratio, { timeout: 5_000 }).toBe(learned);
        // Written and read back (the change log brings this replica's own write back too).
        await sleep(replica === limits ? 0 : 300);
        expect(limits.get('default', model, 'a').ratio).toBe(learned);
      } finally {
        await close();
      }
    });

    it('forgets one entry, or all, on every replica', async () => {
      const { limits, replica, close } = await create();
      try {
        const [first, second] = [`model-${randomUUID()}`, `model-${randomUUID()}`];
        for (const model of [first, second]) {
          limits.recordOverflow('default', model, 'a', stated(5_000));
          limits.recordOverflow('default', model, 'b', stated(5_000));
        }
        if (replica !== limits)
          await expect.poll(() => replica.get('default', second, 'z').window, { timeout: 5_000 }).toBe(5_000);
        const id = limits.list().find((view) => view.model === first)?.id as string;
        expect(await replica.reset(id)).toBe(1);
        expect(replica.get('default', first, 'z')).toEqual({});
        await expect.poll(() => limits.get('default', first, 'z'), { timeout: 5_000 }).toEqual({});
        expect(limits.get('default', second, 'z')).toEqual({ window: 5_000 });
        await limits.reset();
        await expect.poll(() => replica.get('default', second, 'z'), { timeout: 5_000 }).toEqual({});
      } finally {
        await close();
      }
    });

    it('does not bring a forgotten entry back from lessons learned before it was forgotten', async () => {
      const { limits, replica, close } = await create();
      try {
        const [model, marker] = [`model-${randomUUID()}`, `marker-${randomUUID()}`];
        // Learned and forgotten at once: the lessons were still waiting to be written when reset came.
        limits.recordOverflow('default', model, 'a', stated(5_000));
        limits.recordOverflow('default', model, 'b', stated(5_000));
        const id = limits.list().find((view) => view.model === model)?.id as string;
        await limits.reset(id);
        expect(limits.get('default', model, 'z')).toEqual({});
        // Learned after the reset: once the other replica has it, what waited before it was written too.
        limits.recordOverflow('default', marker, 'a', stated(7_000));
        limits.recordOverflow('default', marker, 'b', stated(7_000));
        await expect.poll(() => replica.get('default', marker, 'z').window, { timeout: 5_000 }).toBe(7_000);
        for (const reader of [limits, replica]) {
          expect(reader.get('default', model, 'z')).toEqual({});
          expect(reader.list().some((view) => view.model === model)).toBe(false);
        }
        // A lesson after the reset is learned as usual.
        limits.recordOverflow('default', model, 'a', stated(6_000));
        limits.recordOverflow('default', model, 'b', stated(6_000));
        expect(limits.get('default', model, 'z')).toEqual({ window: 6_000 });
      } finally {
        await close();
      }
    });

    it('counts a use of the entry used last as a use: the one used least recently goes first', async () => {
      const { limits, close } = await create(2);
      try {
        const [first, second, third] = Array.from({ length: 3 }, () => `model-${randomUUID()}`) as [
          string,
          string,
          string,
        ];
        const learn = (model: string) => {
          limits.recordOverflow('default', model, 'a', stated(5_000));
          limits.recordOverflow('default', model, 'b', stated(5_000));
        };
        learn(first);
        expect(limits.get('default', first, 'z').window).toBe(5_000);
        // One lesson makes `second` an entry, the newest; `first`, used last before it came, used again
        // is the most recent once more.
        limits.recordOverflow('default', second, 'a', stated(5_000));
        expect(limits.get('default', first, 'z').window).toBe(5_000);
        learn(third);
        expect(limits.get('default', first, 'z').window).toBe(5_000);
        expect(limits.get('default', second, 'z')).toEqual({});
      } finally {
        await close();
      }
    });

    it('keeps the fields a model refused for every replica: each one learned, none overwritten, forgotten everywhere', async () => {
      const { limits, replica, changes, close } = await create();
      try {
        const model = `model-${randomUUID()}`;
        const here = createFieldFixes({ store: limits });
        const there = createFieldFixes({ store: replica });
        const renamed = { field: 'max_tokens', renameTo: 'max_completion_tokens' };
        const flag = { field: 'anthropic-beta', value: 'context-management-2025-06-27' };
        expect(here.remember('default', model, renamed)).toBe(true);
        expect(here.remember('default', model, renamed)).toBe(false);
        // The other replica learns another of the same model before or after the first write reaches it.
        expect(there.remember('default', model, flag)).toBe(true);
        const byField = (fixes: readonly object[]) =>
          [...fixes].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
        for (const each of [limits, replica])
          await expect
            .poll(() => byField(each.fixesOf('default', model)), { timeout: 5_000 })
            .toEqual(byField([renamed, flag]));
        // A cap learned lower by one replica is the lower on both.
        here.remember('default', model, { field: 'messages[].images', atMost: 10 });
        there.remember('default', model, { field: 'messages[].images', atMost: 4 });
        for (const each of [limits, replica])
          await expect
            .poll(
              () => each.fixesOf('default', model).find((fix) => fix.field === 'messages[].images')?.atMost,
              {
                timeout: 5_000,
              },
            )
            .toBe(4);
        there.forget('default', model, flag);
        await expect
          .poll(() => limits.fixesOf('default', model).some((fix) => fix.field === flag.field), {
            timeout: 5_000,
          })
          .toBe(false);
        // Listed with what was learned, forgotten with it on every replica; not told as a learned limit.
        const view = limits.list().find((each) => each.kind === 'field_fixes' && each.model === model);
        expect(view?.fieldFixes).toContainEqual(renamed);
        expect(changes.filter((change) => change.model === model)).toEqual([]);
        expect(await replica.reset(view?.id)).toBe(1);
        await expect.poll(() => limits.fixesOf('default', model), { timeout: 5_000 }).toEqual([]);
        expect(here.remember('default', model, renamed)).toBe(true);
      } finally {
        await close();
      }
    });

    it('keeps at most its entries, the least recently used going first, and still takes new lessons', async () => {
      const { limits, replica, close } = await create(4);
      try {
        const models = Array.from({ length: 7 }, () => `model-${randomUUID()}`);
        for (const model of models) {
          limits.recordOverflow('default', model, 'a', stated(5_000));
          limits.recordOverflow('default', model, 'b', stated(5_000));
          // Used: the entries written last are the most recently used.
          limits.get('default', model, 'z');
          await sleep(replica === limits ? 0 : 150);
        }
        const newest = models.at(-1) as string;
        await expect.poll(() => replica.get('default', newest, 'z').window, { timeout: 5_000 }).toBe(5_000);
        await expect.poll(() => replica.list().length, { timeout: 5_000 }).toBeLessThanOrEqual(4);
        expect(limits.list().length).toBeLessThanOrEqual(4);
        expect(limits.get('default', models[0] as string, 'z')).toEqual({});
      } finally {
        await close();
      }
    });
  });
}

describeLearnedLimits('in process', async (maxEntries = 1_000) => {
  const changes: LearnedChange[] = [];
  const limits = createMemoryLearnedLimits({
    settings,
    maxEntries,
    onChange: (change) => changes.push(change),
  });
  return { limits, replica: limits, changes, close: async () => undefined };
});

async function connected(redis: RedisConnection): Promise<RedisConnection> {
  for (let attempt = 0; attempt < 200 && redis.status !== 'ready'; attempt++) await sleep(20);
  return redis;
}

async function replicasOn(connect: () => RedisConnection, maxEntries: number): Promise<Replicas> {
  const connections = [await connected(connect()), await connected(connect())];
  // Each run starts from nothing: the entries live in one shared key space.
  const cleaner = createRedisLearnedLimits({
    settings,
    maxEntries,
    redis: connections[0] as RedisConnection,
  });
  await expect.poll(() => cleaner.loaded(), { timeout: 5_000 }).toBe(true);
  await cleaner.reset();
  await cleaner.close();
  const changes: LearnedChange[] = [];
  const [limits, replica] = connections.map((redis, index) =>
    createRedisLearnedLimits({
      settings,
      maxEntries,
      redis,
      refreshMs: 100,
      ...(index === 0 ? { onChange: (change: LearnedChange) => changes.push(change) } : {}),
    }),
  ) as [LearnedLimits, LearnedLimits];
  await expect.poll(() => limits.loaded() && replica.loaded(), { timeout: 5_000 }).toBe(true);
  return {
    limits,
    replica,
    changes,
    async close() {
      await limits.close();
      await replica.close();
      for (const redis of connections) redis.disconnect();
    },
  };
}

let cluster: Promise<RunningCluster> | undefined;
afterAll(async () => {
  await (await cluster)?.stop();
});

describeLearnedLimits('redis-server, two replicas', async (maxEntries = 1_000) =>
  replicasOn(() => createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }), maxEntries),
);

describeLearnedLimits('Redis Cluster, two replicas', async (maxEntries = 1_000) => {
  cluster ??= startRedisCluster();
  const { nodes } = await cluster;
  return replicasOn(() => createRedisConnection({ mode: 'cluster', nodes }), maxEntries);
});

describe('learned limits in Redis, written by two replicas at once', () => {
  it('keeps both replicas’ lessons: neither overwrites the other', async () => {
    const server = await startRedisServer();
    const connections = [
      await connected(createRedisConnection({ mode: 'standalone', url: server.url })),
      await connected(createRedisConnection({ mode: 'standalone', url: server.url })),
    ];
    const [first, second] = connections.map((redis) =>
      createRedisLearnedLimits({ settings, maxEntries: 1_000, redis, refreshMs: 100 }),
    ) as [LearnedLimits, LearnedLimits];
    try {
      await expect.poll(() => first.loaded() && second.loaded(), { timeout: 5_000 }).toBe(true);
      for (let round = 0; round < 20; round++) {
        const model = `contended-${round}`;
        first.recordOverflow('default', model, 'a', stated(7_000 + round));
        second.recordOverflow('default', model, 'b', stated(7_000 + round));
      }
      for (let round = 0; round < 20; round++)
        for (const replica of [first, second])
          await expect
            .poll(() => replica.get('default', `contended-${round}`, 'z').window, { timeout: 5_000 })
            .toBe(7_000 + round);
    } finally {
      await first.close();
      await second.close();
      for (const redis of connections) redis.disconnect();
      await server.stop();
    }
  });
});

describe('field fixes in Redis, of an upstream name at two URLs', () => {
  it('are kept to the upstream at its URL: another provider under the same name does not take them', async () => {
    const server = await startRedisServer();
    const connections = [
      await connected(createRedisConnection({ mode: 'standalone', url: server.url })),
      await connected(createRedisConnection({ mode: 'standalone', url: server.url })),
      await connected(createRedisConnection({ mode: 'standalone', url: server.url })),
    ];
    const [azure, azureReplica, mistral] = connections.map((redis, index) =>
      createRedisLearnedLimits({
        settings,
        maxEntries: 1_000,
        redis,
        refreshMs: 100,
        upstreamUrls: new Map([
          ['default', index < 2 ? 'https://azure.example/v1' : 'https://mistral.example/v1'],
        ]),
      }),
    ) as [LearnedLimits, LearnedLimits, LearnedLimits];
    try {
      await expect
        .poll(() => azure.loaded() && azureReplica.loaded() && mistral.loaded(), { timeout: 5_000 })
        .toBe(true);
      createFieldFixes({ store: azure }).remember('default', 'gpt-5', {
        field: 'max_tokens',
        renameTo: 'max_completion_tokens',
      });
      await expect.poll(() => azureReplica.fixesOf('default', 'gpt-5').length, { timeout: 5_000 }).toBe(1);
      // Once it has read that write, the other deployment's upstream of the same name still has none.
      await expect
        .poll(() => mistral.list().some((entry) => entry.kind === 'field_fixes'), { timeout: 5_000 })
        .toBe(true);
      expect(mistral.fixesOf('default', 'gpt-5')).toEqual([]);
    } finally {
      for (const each of [azure, azureReplica, mistral]) await each.close();
      for (const redis of connections) redis.disconnect();
      await server.stop();
    }
  });
});

describe('learned limits in Redis, learned while a write is on the way', () => {
  it('never loses a lesson this replica learned while its last one was being written or read back', async () => {
    const redis = await connected(createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }));
    const limits = createRedisLearnedLimits({ settings, maxEntries: 1_000, redis, refreshMs: 5 });
    const model = `in-flight-${randomUUID()}`;
    try {
      await expect.poll(() => limits.loaded(), { timeout: 5_000 }).toBe(true);
      // Each lesson is a smaller window than the one before: the newest is what the next request needs.
      // Writes go every 5 ms; a lesson recorded while one is on its way must outlive its read-back.
      const lost: number[] = [];
      for (let lesson = 0; lesson < 1_500; lesson++) {
        const window = 60_000 - lesson * 10;
        limits.recordOverflow('default', model, 'a', stated(window));
        await new Promise((resolve) => setImmediate(resolve));
        const seen = limits.get('default', model, 'a').window;
        if (seen !== window) lost.push(seen ?? 0);
      }
      expect(lost).toEqual([]);
    } finally {
      await limits.close();
      redis.disconnect();
    }
  });
});

describe('learned limits in Redis, forgotten by a replica that has not read the latest write', () => {
  it('deletes the entry as Redis holds it, not only as this replica last read it', async () => {
    const connect = () => connected(createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }));
    const connections = [await connect(), await connect(), await connect()];
    // A follows the others' writes only once a minute: it has not read B's when it forgets the entry.
    const [a, b] = connections.map((redis, index) =>
      createRedisLearnedLimits({ settings, maxEntries: 1_000, redis, refreshMs: index === 0 ? 60_000 : 100 }),
    ) as [LearnedLimits, LearnedLimits];
    let reader: LearnedLimits | undefined;
    const model = `stale-reset-${randomUUID()}`;
    try {
      await expect.poll(() => a.loaded() && b.loaded(), { timeout: 5_000 }).toBe(true);
      a.recordOverflow('default', model, 'a', stated(5_000));
      a.recordOverflow('default', model, 'b', stated(5_000));
      b.recordOverflow('default', model, 'c', stated(6_000));
      b.recordOverflow('default', model, 'd', stated(6_000));
      reader = createRedisLearnedLimits({
        settings,
        maxEntries: 1_000,
        redis: connections[2] as RedisConnection,
        refreshMs: 100,
      });
      await expect.poll(() => reader?.get('default', model, 'z').window, { timeout: 5_000 }).toBe(6_000);
      const id = a.list().find((view) => view.model === model)?.id as string;
      expect(await a.reset(id)).toBe(1);
      await expect.poll(() => reader?.get('default', model, 'z'), { timeout: 5_000 }).toEqual({});
      await expect.poll(() => b.get('default', model, 'z'), { timeout: 5_000 }).toEqual({});
    } finally {
      for (const limits of [a, b, reader]) await limits?.close();
      for (const redis of connections) redis.disconnect();
    }
  });
});

describe('learned limits in Redis, forgotten while another replica has lessons of it to write', () => {
  it('does not let the other replica write the entry back', async () => {
    const connect = () => connected(createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }));
    const connections = [await connect(), await connect(), await connect()];
    const open = (redis: RedisConnection, refreshMs: number) =>
      createRedisLearnedLimits({ settings, maxEntries: 1_000, redis, refreshMs });
    const model = `busy-reset-${randomUUID()}`;
    const b = open(connections[0] as RedisConnection, 100);
    let a: LearnedLimits | undefined;
    let reader: LearnedLimits | undefined;
    try {
      await expect.poll(() => b.loaded(), { timeout: 5_000 }).toBe(true);
      b.recordOverflow('default', model, 'a', stated(5_000));
      b.recordOverflow('default', model, 'b', stated(5_000));
      // Once B's write is in Redis (a replica that loads it sees it), A loads the shared entry, then
      // learns more of it; it writes only when closed.
      reader = open(connections[2] as RedisConnection, 100);
      await expect.poll(() => reader?.get('default', model, 'z').window, { timeout: 5_000 }).toBe(5_000);
      await reader.close();
      a = open(connections[1] as RedisConnection, 60_000);
      await expect.poll(() => a?.loaded(), { timeout: 5_000 }).toBe(true);
      expect(a.get('default', model, 'z').window).toBe(5_000);
      a?.recordOverflow('default', model, 'c', stated(4_000));
      const id = b.list().find((view) => view.model === model)?.id as string;
      expect(await b.reset(id)).toBe(1);
      await a?.close();
      a = undefined;
      // What Redis holds once A has written all it had.
      reader = open(connections[2] as RedisConnection, 100);
      await expect.poll(() => reader?.loaded(), { timeout: 5_000 }).toBe(true);
      expect(reader.get('default', model, 'z')).toEqual({});
      expect(reader.list().some((view) => view.model === model)).toBe(false);
    } finally {
      for (const limits of [a, b, reader]) await limits?.close();
      for (const redis of connections) redis.disconnect();
    }
  });
});

describe('learned limits in Redis, forgotten while a replica that never read the entry has lessons of it', () => {
  const open = (redis: RedisConnection, refreshMs: number) =>
    createRedisLearnedLimits({ settings, maxEntries: 1_000, redis, refreshMs });
  const connect = () => connected(createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }));

  it('does not let lessons learned before the reset make the entry again, and writes those learned after', async () => {
    const connections = [await connect(), await connect(), await connect()];
    const model = `unseen-reset-${randomUUID()}`;
    // A loads before B writes and follows only once a minute: it never reads the entry.
    const a = open(connections[1] as RedisConnection, 60_000);
    const b = open(connections[0] as RedisConnection, 100);
    let reader: LearnedLimits | undefined;
    try {
      await expect.poll(() => a.loaded() && b.loaded(), { timeout: 5_000 }).toBe(true);
      b.recordOverflow('default', model, 'a', stated(5_000));
      b.recordOverflow('default', model, 'b', stated(5_000));
      reader = open(connections[2] as RedisConnection, 100);
      await expect.poll(() => reader?.get('default', model, 'z').window, { timeout: 5_000 }).toBe(5_000);
      await reader.close();
      // A learns of the same model, from its own requests, before the reset; it writes only when closed.
      a.recordOverflow('default', model, 'c', stated(4_000));
      a.recordOverflow('default', model, 'd', stated(4_000));
      expect(a.get('default', model, 'z').window).toBe(4_000);
      const id = b.list().find((view) => view.model === model)?.id as string;
      await sleep(5);
      expect(await b.reset(id)).toBe(1);
      await a.close();
      reader = open(connections[2] as RedisConnection, 100);
      await expect.poll(() => reader?.loaded(), { timeout: 5_000 }).toBe(true);
      expect(reader.list().some((view) => view.model === model)).toBe(false);
      // A lesson learned after the reset is written as usual.
      await sleep(5);
      b.recordOverflow('default', model, 'e', stated(3_000));
      b.recordOverflow('default', model, 'f', stated(3_000));
      await expect.poll(() => reader?.get('default', model, 'z').window, { timeout: 5_000 }).toBe(3_000);
    } finally {
      for (const limits of [a, b, reader]) await limits?.close();
      for (const redis of connections) redis.disconnect();
    }
  });

  it('forgets an entry the answering replica has not read yet, one by its id or all', async () => {
    const connections = [await connect(), await connect(), await connect()];
    const [first, second] = [`unread-reset-${randomUUID()}`, `unread-reset-${randomUUID()}`];
    const a = open(connections[1] as RedisConnection, 60_000);
    const b = open(connections[0] as RedisConnection, 100);
    let reader: LearnedLimits | undefined;
    try {
      await expect.poll(() => a.loaded() && b.loaded(), { timeout: 5_000 }).toBe(true);
      for (const model of [first, second]) {
        b.recordOverflow('default', model, 'a', stated(5_000));
        b.recordOverflow('default', model, 'b', stated(5_000));
      }
      reader = open(connections[2] as RedisConnection, 100);
      await expect.poll(() => reader?.get('default', second, 'z').window, { timeout: 5_000 }).toBe(5_000);
      expect(a.list().some((view) => view.model === first || view.model === second)).toBe(false);
      const id = b.list().find((view) => view.model === first)?.id as string;
      expect(await a.reset(id)).toBe(1);
      await expect.poll(() => reader?.get('default', first, 'z'), { timeout: 5_000 }).toEqual({});
      expect(reader.get('default', second, 'z').window).toBe(5_000);
      expect(await a.reset()).toBeGreaterThanOrEqual(1);
      await expect.poll(() => reader?.get('default', second, 'z'), { timeout: 5_000 }).toEqual({});
      await expect.poll(() => b.get('default', second, 'z'), { timeout: 5_000 }).toEqual({});
    } finally {
      for (const limits of [a, b, reader]) await limits?.close();
      for (const redis of connections) redis.disconnect();
    }
  });
});

describe('learned limits on a connection still being made', () => {
  it('reads what Redis holds as soon as the connection is up, not at the next refresh', async () => {
    // Created with the connection: its first read fails (no offline queue), and the next refresh is a
    // minute away.
    const redis = createRedisConnection({ mode: 'standalone', url: inject('redisUrl') });
    const limits = createRedisLearnedLimits({ settings, maxEntries: 100, redis, refreshMs: 60_000 });
    try {
      expect(limits.loaded()).toBe(false);
      await expect.poll(() => limits.loaded(), { timeout: 10_000, interval: 20 }).toBe(true);
    } finally {
      await limits.close();
      redis.disconnect();
    }
  });
});

describe('learned limits with Redis unreachable', () => {
  it('still applies what this replica learned, and is not loaded', async () => {
    const redis = createRedisConnection({
      mode: 'standalone',
      url: `redis://127.0.0.1:${await findFreePort()}`,
    });
    redis.on('error', () => undefined);
    const limits = createRedisLearnedLimits({ settings, maxEntries: 100, redis });
    try {
      limits.recordOverflow('default', 'm', 'a', stated(4_096));
      expect(limits.get('default', 'm', 'a')).toEqual({ window: 4_096 });
      expect(limits.loaded()).toBe(false);
    } finally {
      await limits.close();
      redis.disconnect();
    }
  });
});

describe('re-probing a learned window', () => {
  it('lets one request per tenant and interval try the configured window once the lesson goes unconfirmed', () => {
    let nowMs = 1_000_000;
    const limits = createMemoryLearnedLimits({ settings, maxEntries: 100, now: () => nowMs });
    limits.recordOverflow('default', 'm', 'a', stated(4_000));
    expect(limits.get('default', 'm', 'a')).toEqual({ window: 4_000 });
    nowMs += settings.reprobeAfterMs;
    expect(limits.get('default', 'm', 'a')).toEqual({ window: 4_000, probe: true });
    // The next request of the interval keeps the lesson; so does everyone else's.
    expect(limits.get('default', 'm', 'a')).toEqual({ window: 4_000 });
    // The probe went through above the learned window: the lesson is dropped.
    limits.recordSuccess('default', 'm', 'a', 5_000);
    expect(limits.get('default', 'm', 'a')).toEqual({});
  });

  it('shows a preview the probe the next request will get, without taking it from that request', () => {
    let nowMs = 1_000_000;
    const limits = createMemoryLearnedLimits({ settings, maxEntries: 100, now: () => nowMs });
    limits.recordOverflow('default', 'm', 'a', stated(4_000));
    nowMs += settings.reprobeAfterMs;
    expect(limits.get('default', 'm', 'a', { preview: true })).toEqual({ window: 4_000, probe: true });
    expect(limits.get('default', 'm', 'a', { preview: true })).toEqual({ window: 4_000, probe: true });
    expect(limits.get('default', 'm', 'a')).toEqual({ window: 4_000, probe: true });
    // Taken: a preview now shows what the next request gets, the lesson.
    expect(limits.get('default', 'm', 'a', { preview: true })).toEqual({ window: 4_000 });
    expect(limits.get('default', 'm', 'a')).toEqual({ window: 4_000 });
  });
});

type Update = NonNullable<
  ReturnType<ReturnType<typeof createPending>['take']> extends Map<string, infer U> ? U : never
>[number];
type Entry = Parameters<Update>[0];

describe('what waits to be written to Redis', () => {
  const applied = (list: readonly Update[], entry: Entry): Entry =>
    list.reduce((current, update) => update(current), entry);

  it('says when the oldest lesson waiting for each entry was learned, through failed writes too', () => {
    const pending = createPending();
    const make = () => {
      throw new Error('not made here');
    };
    const learn = (id: string, atMs: number): void => {
      pending.made(id, make, atMs);
      pending.overflow(id, (entry) => entry);
    };
    learn('m:1', 1_000);
    learn('m:1', 2_000);
    learn('m:2', 1_500);
    expect([...pending.learnedSince()]).toEqual([
      ['m:1', 1_000],
      ['m:2', 1_500],
    ]);
    const taken = pending.take(2_500);
    expect(pending.learnedSince().size).toBe(0);
    // Learned while the write was under way, then the write failed: the older time stands.
    learn('m:1', 3_000);
    pending.putBack(taken, new Map([['m:1', 1_000]]));
    learn('m:2', 4_000);
    expect([...pending.learnedSince()]).toEqual([
      ['m:1', 1_000],
      ['m:2', 4_000],
    ]);
    pending.drop('m:1');
    expect([...pending.learnedSince().keys()]).toEqual(['m:2']);
  });

  it('stays one sample per tenant of a tool set however many requests it saw', () => {
    const pending = createPending();
    for (let sample = 0; sample < 10_000; sample++)
      pending.toolSample('t:1', 'a', sample % 2 === 0 ? 90 : 110, 100);
    pending.toolSample('t:1', 'b', 150, 100);
    const list = pending.take(5_000).get('t:1') ?? [];
    expect(list.length).toBe(2);
    const entry = applied(list, {
      kind: 'tool_set',
      upstream: 'default',
      model: 'm',
      toolSet: '1',
      lessons: { costs: [] },
      updatedAtMs: 0,
    });
    const costs = entry.kind === 'tool_set' ? entry.lessons.costs : [];
    // The mean of 90 and 110, as one sample; b's own.
    expect(costs.map(({ tenant, value, samples }) => [tenant, value, samples])).toEqual([
      ['a', 100, 1],
      ['b', 150, 1],
    ]);
    expect(pending.take(6_000).size).toBe(0);
  });

  it(`keeps the newest ${maxPendingOverflows} overflows of an entry, and no more through failed writes`, () => {
    const pending = createPending();
    const model: Entry = {
      kind: 'model',
      upstream: 'default',
      model: 'm',
      lessons: { evidence: [], ratios: [] },
      updatedAtMs: 0,
    };
    // Each one a smaller window than the one before: the newest is the one the others must not crowd out.
    const overflow =
      (window: number): Update =>
      (entry) =>
        entry.kind === 'model'
          ? {
              ...entry,
              lessons: { ...entry.lessons, evidence: [{ ...stated(window), tenant: 'a' } as never] },
            }
          : entry;
    for (let lesson = 0; lesson < 1_000; lesson++) pending.overflow('m:1', overflow(10_000 - lesson));
    const taken = pending.take(1_000).get('m:1') ?? [];
    expect(taken.length).toBe(maxPendingOverflows);
    expect(applied(taken, model)).toMatchObject({ lessons: { evidence: [{ stated: 9_001 }] } });
    for (let failure = 0; failure < 100; failure++) {
      pending.overflow('m:1', overflow(5_000 - failure));
      pending.putBack(pending.take(2_000));
    }
    const after = pending.take(3_000).get('m:1') ?? [];
    expect(after.length).toBe(maxPendingOverflows);
    expect(applied(after, model)).toMatchObject({ lessons: { evidence: [{ stated: 4_901 }] } });
  });
});
