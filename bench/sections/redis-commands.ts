// Section "redis-commands": what the gateway's Redis connection adds per command over plain ioredis.
import { Redis } from 'ioredis';
import { median, row } from '../lib/load.js';

const commandsPerRound = Number(process.env.BENCH_REDIS_COMMANDS ?? '20000');
const redisRounds = 5;

interface Client {
  get(key: string): Promise<unknown>;
}

/** Wall and CPU of this process per command, for `count` GETs with `inFlight` of them outstanding. */
async function timeCommands(
  client: Client,
  count: number,
  inFlight: number,
): Promise<{ wallUs: number; cpuUs: number }> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let sent = 0;
  const lane = async (): Promise<void> => {
    while (sent < count) {
      sent += 1;
      await client.get('bench:key');
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const wall = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  return { wallUs: (wall * 1000) / count, cpuUs: (cpu.user + cpu.system) / count };
}

/**
 * The gateway's connection (createRedisConnection: its own command timeout, and the commands of one turn
 * sent together while others are outstanding; see docs/sessions.md) against
 * ioredis with its commandTimeout (what the gateway used before) and ioredis with none, on one real
 * redis-server: fixed counts of GETs, one at a time and 32 in flight, the clients interleaved in each of
 * five rounds; medians of wall and CPU time per command in this process.
 */
export async function redisCommandsSection(): Promise<void> {
  const { startRedisServer } = await import('../../test/helpers/redis-server.js');
  const { createRedisConnection } = await import('../../src/store/redis-client.js');
  const redis = await startRedisServer();
  const clients: Record<string, Redis | ReturnType<typeof createRedisConnection>> = {
    'ioredis, no timeout': new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 }),
    'ioredis commandTimeout 500': new Redis(redis.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 500,
    }),
    gateway: createRedisConnection({ mode: 'standalone', url: redis.url }),
  };
  try {
    for (const client of Object.values(clients)) {
      while (client.status !== 'ready') await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await clients.gateway!.set('bench:key', 'x'.repeat(64));
    console.log(
      `\n== redis-commands: µs per GET in this process, ${commandsPerRound} per client per round, ${redisRounds} interleaved rounds (medians) ==`,
    );
    console.log(row(['client', 'in flight', 'wall µs', 'CPU µs', 'CPU ÷ baseline']));
    for (const inFlight of [1, 32]) {
      const figures: Record<string, { wall: number[]; cpu: number[] }> = {};
      for (const name of Object.keys(clients)) {
        await timeCommands(clients[name]!, commandsPerRound / 4, inFlight);
        figures[name] = { wall: [], cpu: [] };
      }
      for (let round = 0; round < redisRounds; round++) {
        for (const [name, client] of Object.entries(clients)) {
          const { wallUs, cpuUs } = await timeCommands(client, commandsPerRound, inFlight);
          figures[name]!.wall.push(wallUs);
          figures[name]!.cpu.push(cpuUs);
        }
      }
      const baseline = median(figures['ioredis commandTimeout 500']!.cpu);
      for (const [name, { wall, cpu }] of Object.entries(figures)) {
        const cpuUs = median(cpu);
        console.log(
          row([name, inFlight, median(wall).toFixed(1), cpuUs.toFixed(1), (cpuUs / baseline).toFixed(2)]),
        );
      }
    }
    console.log('   baseline: ioredis commandTimeout 500; target: the gateway within 1.05 of it');
  } finally {
    for (const client of Object.values(clients)) client.disconnect();
    await redis.stop();
  }
}
