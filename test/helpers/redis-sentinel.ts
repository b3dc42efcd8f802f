// Starts a real Redis Sentinel setup for tests: a master, one replica and one Sentinel watching them,
// each a redis-server process of its own on a free loopback port, stopped by its own PID.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFreePort, startRedisServer, waitForPort, type RunningRedis } from './redis-server.js';

export interface RunningSentinel {
  master: RunningRedis;
  replica: RunningRedis;
  sentinelPort: number;
  masterName: string;
  /** Asks the Sentinel for a failover and waits until it names the replica as the master. */
  failover(): Promise<void>;
  stop(): Promise<void>;
}

export const redisCli = (port: number, ...args: string[]): string =>
  execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' }).trim();

export async function startRedisSentinel(): Promise<RunningSentinel> {
  const masterName = 'ctxgate-test';
  const master = await startRedisServer();
  const replica = await startRedisServer(['--replicaof', '127.0.0.1', String(master.port)]);
  const sentinelPort = await findFreePort();
  const directory = mkdtempSync(join(tmpdir(), 'ctxgate-sentinel-'));
  const configPath = join(directory, 'sentinel.conf');
  writeFileSync(
    configPath,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${directory}`,
      `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 1`,
      `sentinel down-after-milliseconds ${masterName} 2000`,
      `sentinel failover-timeout ${masterName} 10000`,
      '',
    ].join('\n'),
  );
  const sentinel = spawn('redis-server', [configPath, '--sentinel'], { stdio: 'ignore' });
  await waitForPort(sentinelPort, 10_000);
  // The Sentinel must know the replica before it can fail over to it.
  for (let attempt = 0; ; attempt++) {
    const replicas = redisCli(sentinelPort, 'SENTINEL', 'REPLICAS', masterName);
    if (replicas.includes(String(replica.port))) break;
    if (attempt > 200) throw new Error('the Sentinel did not discover the replica');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    master,
    replica,
    sentinelPort,
    masterName,
    async failover() {
      redisCli(sentinelPort, 'SENTINEL', 'FAILOVER', masterName);
      for (let attempt = 0; attempt < 300; attempt++) {
        const address = redisCli(sentinelPort, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName);
        if (address.split('\n')[1] === String(replica.port)) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error('the failover did not happen');
    },
    async stop() {
      if (sentinel.exitCode === null && sentinel.signalCode === null) {
        const exited = new Promise((resolve) => sentinel.once('exit', resolve));
        sentinel.kill('SIGTERM');
        await exited;
      }
      await replica.stop();
      await master.stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
