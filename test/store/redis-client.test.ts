// The Redis connection's fail-fast settings, on a redis-server of its own: a command to a server that is
// down or does not answer fails instead of waiting in a queue (a request must never wait on Redis), and
// the connection comes back by itself with the server. The commands of one turn of the event loop reach
// the server in one read. Sentinel failover and the cluster are exercised
// end to end (test/e2e/sessions-sentinel.test.ts, the stores' cluster contracts).
import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRedisConnection, type RedisConnection } from '../../src/store/redis-client.js';
import { startRedisCluster } from '../helpers/redis-cluster.js';
import { startRedisServer } from '../helpers/redis-server.js';

/**
 * Blocks this process's event loop, as a long GC pause or a CPU-throttled container does, well past the
 * command timeout (500 ms): Redis answers during it, but nothing here can read the answer until it ends.
 */
function stallEventLoop(): void {
  const until = Date.now() + 1_500;
  while (Date.now() < until) {
    // Busy: no timer, no socket read.
  }
}

/** Waits (bounded) until the connection is ready again. */
async function ready(redis: RedisConnection): Promise<void> {
  await expect.poll(() => redis.status, { timeout: 10_000, interval: 50 }).toBe('ready');
}

/**
 * The reads a redis-server has made from its clients' sockets so far (INFO stats), asked over a plain
 * connection of its own, which counts one read itself each time. Servers a test starts serve nothing else.
 */
async function readsProcessed(observer: Redis): Promise<number> {
  return Number(/total_reads_processed:(\d+)/.exec(await observer.info('stats'))?.[1]);
}

/** Commands sent in one turn of the event loop, the replies in their order. */
async function burst(redis: RedisConnection, keys: string[]): Promise<unknown[]> {
  return Promise.all(keys.map((key, index) => (index % 2 === 0 ? redis.incr(key) : redis.get(key))));
}

describe('createRedisConnection (standalone)', () => {
  it('sends the commands of one turn of the event loop together, each answered in its order', async () => {
    const server = await startRedisServer();
    const redis = createRedisConnection({ mode: 'standalone', url: server.url });
    const observer = new Redis(server.port);
    try {
      await ready(redis);
      const before = await readsProcessed(observer);
      const keys = Array.from({ length: 40 }, (_unused, index) => `ctxgate:burst:${index >> 1}`);
      // Each key incremented, then read: the read sees the increment sent just before it.
      expect(await burst(redis, keys)).toEqual(keys.map((_key, index) => (index % 2 === 0 ? 1 : '1')));
      // The first command goes at once (none was outstanding), the other 39 in one write: one or two
      // reads, and one for the INFO that counts them.
      expect((await readsProcessed(observer)) - before).toBeLessThanOrEqual(3);
      // A command sent in a later turn is not held back.
      expect(await redis.get('ctxgate:burst:0')).toBe('1');
    } finally {
      redis.disconnect();
      observer.disconnect();
      await server.stop();
    }
  });

  it('fails a command while the server is down instead of queueing it, and reconnects when it is back', async () => {
    let server = await startRedisServer();
    const redis = createRedisConnection({ mode: 'standalone', url: server.url });
    try {
      await ready(redis);
      expect(await redis.set('ctxgate:test', 'before')).toBe('OK');
      await server.stop();
      // Queued, this would settle only once the server came back; it is refused now.
      await expect(redis.get('ctxgate:test')).rejects.toThrow();
      server = await startRedisServer([], server.port);
      await ready(redis);
      expect(await redis.set('ctxgate:test', 'after')).toBe('OK');
      expect(await redis.get('ctxgate:test')).toBe('after');
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('does not fail a command Redis answered while the event loop was blocked past the timeout', async () => {
    const server = await startRedisServer();
    const redis = createRedisConnection({ mode: 'standalone', url: server.url });
    try {
      await ready(redis);
      await redis.set('ctxgate:test', 'answered');
      const read = redis.get('ctxgate:test');
      const evaluated = redis.eval('return ARGV[1]', 0, 'scripted');
      stallEventLoop();
      // The answers arrived in the socket during the stall: the loop reads them before a timeout counts.
      expect(await read).toBe('answered');
      expect(await evaluated).toBe('scripted');
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('waits for a command Redis answers later than usual but within the timeout', async () => {
    const server = await startRedisServer();
    const redis = createRedisConnection({ mode: 'standalone', url: server.url });
    try {
      await ready(redis);
      await redis.set('ctxgate:test', 'late');
      // Redis is busy for 200 ms of its own clock on a script; the GET queued behind it on the same
      // connection is answered after it: both are slow, neither is past the 500 ms timeout.
      const busy = redis.eval(
        "local t = redis.call('TIME'); local start = t[1] * 1000000 + t[2]\n" +
          "repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start >= 200000\n" +
          'return 1',
        0,
      );
      const read = redis.get('ctxgate:test');
      expect(await busy).toBe(1);
      expect(await read).toBe('late');
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('fails every one of many commands a paused server leaves unanswered, and serves after it', async () => {
    const server = await startRedisServer();
    const redis = createRedisConnection({ mode: 'standalone', url: server.url });
    try {
      await ready(redis);
      // Long enough that both waves fail by the timeout (each waits at most 2 s), not by the pause ending.
      execFileSync('redis-cli', ['-p', String(server.port), 'CLIENT', 'PAUSE', '5000', 'ALL']);
      const wave = (first: number): Promise<Array<PromiseSettledResult<string | null>>> =>
        Promise.allSettled(
          Array.from({ length: 250 }, (_unused, index) => redis.get(`ctxgate:${first + index}`)),
        );
      // The second wave is sent behind the first, which is still unanswered in the connection's queue.
      const outcomes = [...(await wave(0)), ...(await wave(250))];
      expect(outcomes.filter((outcome) => outcome.status === 'rejected').length).toBe(500);
      await expect
        .poll(() => redis.set('ctxgate:test', 'served').catch(() => 'refused'), {
          timeout: 15_000,
          interval: 100,
        })
        .toBe('OK');
      expect(await redis.get('ctxgate:test')).toBe('served');
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('still fails a command a paused server does not answer when the loop was blocked meanwhile', async () => {
    const server = await startRedisServer();
    const redis = createRedisConnection({ mode: 'standalone', url: server.url });
    try {
      await ready(redis);
      execFileSync('redis-cli', ['-p', String(server.port), 'CLIENT', 'PAUSE', '30000', 'ALL']);
      const read = redis.get('ctxgate:test');
      stallEventLoop();
      // The blocked time is waited again, within a bound: the command fails long before the pause ends.
      await expect(read).rejects.toThrow(/timed out/i);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('fails a command the server does not answer (CLIENT PAUSE) instead of waiting out the pause', async () => {
    const server = await startRedisServer();
    const redis = createRedisConnection({ mode: 'standalone', url: server.url });
    try {
      await ready(redis);
      // The command timeout (500 ms) is far shorter than the pause: the GET is settled by it, not by
      // the pause ending. New connections are paused too, so the test waits the pause out after.
      execFileSync('redis-cli', ['-p', String(server.port), 'CLIENT', 'PAUSE', '3000', 'ALL']);
      await expect(redis.get('ctxgate:test')).rejects.toThrow(/timed out/i);
      await expect
        .poll(() => redis.set('ctxgate:test', 'served').catch(() => 'refused'), {
          timeout: 15_000,
          interval: 100,
        })
        .toBe('OK');
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});

describe('createRedisConnection (cluster)', () => {
  it('sends the commands of one turn to each node together', async () => {
    const cluster = await startRedisCluster();
    const redis = createRedisConnection({ mode: 'cluster', nodes: cluster.nodes });
    const observers = cluster.nodes.map((node) => new Redis(node.port));
    try {
      await ready(redis);
      // Keys on every node (the tags hash to different slots), each node's connection made and warmed.
      const keys = Array.from(
        { length: 60 },
        (_unused, index) => `ctxgate:{t${(index >> 1) % 12}}:${index >> 1}`,
      );
      await burst(
        redis,
        keys.map((key) => `${key}:warm`),
      );
      // The fewest reads each node made for one burst of three: the cluster client's own occasional
      // commands (its slots refreshed) may fall into one of them.
      const fewest = cluster.nodes.map(() => Number.POSITIVE_INFINITY);
      for (let round = 1; round <= 3; round++) {
        const before = await Promise.all(observers.map(readsProcessed));
        expect(await burst(redis, keys)).toEqual(
          keys.map((_key, index) => (index % 2 === 0 ? round : `${round}`)),
        );
        const after = await Promise.all(observers.map(readsProcessed));
        after.forEach((count, node) => {
          fewest[node] = Math.min(fewest[node] as number, count - (before[node] as number));
        });
      }
      // Every node was sent some of the commands: the first at once, the rest in one write (one or two
      // reads), and counted once more for the INFO.
      expect(fewest.every((reads) => reads <= 3)).toBe(true);
    } finally {
      redis.disconnect();
      for (const observer of observers) observer.disconnect();
      await cluster.stop();
    }
  });

  it('does not fail a command the cluster answered while the event loop was blocked past the timeout', async () => {
    const cluster = await startRedisCluster();
    const redis = createRedisConnection({ mode: 'cluster', nodes: cluster.nodes });
    try {
      await ready(redis);
      await redis.set('ctxgate:{a}:test', 'answered');
      const reads = [
        redis.get('ctxgate:{a}:test'),
        redis.get('ctxgate:{b}:test'),
        redis.get('ctxgate:{c}:test'),
      ];
      stallEventLoop();
      expect(await Promise.all(reads)).toEqual(['answered', null, null]);
    } finally {
      redis.disconnect();
      await cluster.stop();
    }
  });

  it('fails a command a paused node does not answer', async () => {
    const cluster = await startRedisCluster();
    const redis = createRedisConnection({ mode: 'cluster', nodes: cluster.nodes });
    try {
      await ready(redis);
      await redis.set('ctxgate:{a}:test', 'before');
      for (const node of cluster.nodes)
        execFileSync('redis-cli', ['-p', String(node.port), 'CLIENT', 'PAUSE', '3000', 'ALL']);
      await expect(redis.get('ctxgate:{a}:test')).rejects.toThrow(/timed out/i);
    } finally {
      redis.disconnect();
      await cluster.stop();
    }
  });
});
