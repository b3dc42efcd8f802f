// Section "learned": what the learned limits cost a replica when their table is full. Two replicas (in
// this process) on a redis-server it starts fill the table to learning.max_entries (10,000 entries,
// each from two tenants), then sit idle for BENCH_LEARNED_IDLE_SECONDS: the CPU this process spends per
// idle second, and whether a new lesson is still shared when the table is full. Figures only.
import { createRedisConnection } from '../../src/store/redis-client.js';
import { createRedisLearnedLimits, type LearnedLimits } from '../../src/store/learned-limits.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

export async function learnedSection(): Promise<void> {
  const entries = Number(process.env.BENCH_LEARNED_ENTRIES ?? '10000');
  const idleSeconds = Number(process.env.BENCH_LEARNED_IDLE_SECONDS ?? '10');
  const redis = await startRedisServer();
  const connections = [
    createRedisConnection({ mode: 'standalone', url: redis.url }),
    createRedisConnection({ mode: 'standalone', url: redis.url }),
  ];
  const settings = { windowTtlMs: 86_400_000, reprobeAfterMs: 3_600_000 };
  const [first, second] = connections.map((connection) =>
    createRedisLearnedLimits({ settings, maxEntries: entries, redis: connection }),
  ) as [LearnedLimits, LearnedLimits];
  try {
    while (!first.loaded() || !second.loaded()) await sleep(50);
    const idleCpu = async (): Promise<number> => {
      const before = cpuMs();
      await sleep(idleSeconds * 1_000);
      return (cpuMs() - before) / idleSeconds;
    };

    const stated = (window: number) => ({
      stated: window,
      failedSize: window + 100,
      status: 400,
      textClass: 'numbers' as const,
    });
    for (let index = 0; index < entries; index++) {
      first.recordOverflow('default', `model-${index}`, 'tenant-a', stated(8_000 + (index % 1_000)));
      first.recordOverflow('default', `model-${index}`, 'tenant-b', stated(8_000 + (index % 1_000)));
      if (index % 500 === 499) await sleep(1_100);
    }
    // Settled: the last lesson (two tenants) shared, and the garbage of filling collected.
    while (second.get('default', `model-${entries - 1}`, 'tenant-z').window === undefined) await sleep(200);
    await sleep(20_000);
    const full = await idleCpu();
    console.log(`\n== learned: ${entries} entries shared by two replicas on one Redis ==`);
    console.log(
      `CPU of this process (both replicas) while idle, the table full: ${full.toFixed(1)} ms per second`,
    );
    // Full: a new lesson still reaches the other replica.
    const startedAt = Date.now();
    first.recordOverflow('default', 'model-new', 'tenant-a', stated(12_345));
    first.recordOverflow('default', 'model-new', 'tenant-b', stated(12_345));
    while (second.get('default', 'model-new', 'tenant-z').window !== 12_345) {
      if (Date.now() - startedAt > 10_000) break;
      await sleep(50);
    }
    const shared = second.get('default', 'model-new', 'tenant-z').window === 12_345;
    console.log(
      `a new lesson with the table full: ${shared ? `shared after ${Date.now() - startedAt} ms` : 'not shared within 10 s'}; entries kept: ${second.list().length}`,
    );
  } finally {
    await first.close();
    await second.close();
    for (const connection of connections) connection.disconnect();
    await redis.stop();
  }
}
