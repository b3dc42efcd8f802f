// Section "idle": what a replica costs while no request comes — how often it wakes and the CPU it spends.
import { readFileSync } from 'node:fs';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { gatewayCommand, processCpuUs, row, tsx } from '../lib/load.js';

const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? '10');
/**
 * Start-up work done before the idle time is measured: compiling, and V8 shrinking the heap once
 * allocation stops (a ~0.1 s burst some 20 s after start).
 */
const settleSeconds = 45;

/** Times the process has blocked waiting for something (each wake-up ends one), from /proc (Linux). */
function voluntarySwitches(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN);
}

/**
 * The gateway idle without Redis and with one (a redis-server it starts), beside the logging floor idle
 * (fastify + pino, no timers of its own): wake-ups per second and CPU milliseconds per idle minute, after
 * a settling pause, over BENCH_IDLE_SECONDS.
 */
export async function idleSection(): Promise<void> {
  const { startRedisServer } = await import('../../test/helpers/redis-server.js');
  const redis = await startRedisServer();
  const servers: ServerProcess[] = [];
  try {
    const upstream = { UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', PORT: '0', LOG_LEVEL: 'info' };
    const targets: Array<[string, ServerProcess]> = [
      [
        'logging floor',
        await startServerProcess([...tsx, 'bench/servers/floor-proxy.ts'], { ...upstream, FLOOR_LOG: '1' }),
      ],
      [
        'gateway, sessions in process',
        await startServerProcess(gatewayCommand(), { ...upstream, REDIS_URL: '', REDIS_CLUSTER_NODES: '' }),
      ],
      [
        'gateway, Redis',
        await startServerProcess(gatewayCommand(), {
          ...upstream,
          REDIS_URL: redis.url,
          REDIS_CLUSTER_NODES: '',
        }),
      ],
    ];
    servers.push(...targets.map(([, server]) => server));
    await new Promise((resolve) => setTimeout(resolve, settleSeconds * 1_000));
    const before = targets.map(([, server]) => {
      const pid = server.child.pid!;
      return { switches: voluntarySwitches(pid), cpu: processCpuUs(pid) };
    });
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1_000));
    console.log(`\n== idle: ${idleSeconds} s with no request, after ${settleSeconds} s of settling ==`);
    console.log(row(['process', 'wake-ups/s', 'CPU ms/min']));
    targets.forEach(([name, server], index) => {
      const pid = server.child.pid!;
      const woke = (voluntarySwitches(pid) - before[index]!.switches) / idleSeconds;
      const cpuMsPerMinute = ((processCpuUs(pid) - before[index]!.cpu) / 1000 / idleSeconds) * 60;
      console.log(row([name, woke.toFixed(0), cpuMsPerMinute.toFixed(0)]));
    });
  } finally {
    for (const server of servers) await server.stop();
    await redis.stop();
  }
}
