// The Redis connection's fail-fast settings, on a redis-server of its own: a command to a server that is
// down or does not answer fails instead of waiting in a queue (a request must never wait on Redis), and
// the connection comes back by itself with the server. Sentinel failover and the cluster are exercised
// end to end (test/e2e/sessions-sentinel.test.ts, the stores' cluster contracts).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createRedisConnection, type RedisConnection } from '../../src/store/redis-client.js';
import { startRedisServer } from '../helpers/redis-server.js';

/** Waits (bounded) until the connection is ready again. */
async function ready(redis: RedisConnection): Promise<void> {
  await expect.poll(() => redis.status, { timeout: 10_000, interval: 50 }).toBe('ready');
}

describe('createRedisConnection (standalone)', () => {
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
