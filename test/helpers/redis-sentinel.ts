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
  // A replica syncs at once (the default waits 5 s for more replicas to share one transfer).
  const master = await startRedisServer(['--repl-diskless-sync-delay', '0']);
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
  // The Sentinel fails over only to a replica it has heard from itself (its own INFO of the replica,
  // not only the master's list) whose link to the master is up; until then SENTINEL FAILOVER answers
  // NOGOODSLAVE, which is what a loaded machine hits when the test asks too early.
  for (let attempt = 0; !replicaIsCandidate(sentinelPort, masterName, replica.port); attempt++) {
    if (attempt > 300) throw new Error('the Sentinel did not come to know the replica');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    master,
    replica,
    sentinelPort,
    masterName,
    async failover() {
      // redis-cli exits 0 on an error reply: the answer itself says whether the failover started.
      let answer = '';
      for (let attempt = 0; attempt < 300; attempt++) {
        if (answer === '' || answer.startsWith('NOGOODSLAVE'))
          answer = redisCli(sentinelPort, 'SENTINEL', 'FAILOVER', masterName);
        // The Sentinel names the promoted replica as soon as it is promoted, but announces the switch
        // (+switch-master, which clients follow) only when the failover ends: wait for that end.
        const [current] = sentinelRecords(sentinelPort, 'MASTER', masterName);
        if (current?.get('port') === String(replica.port) && current.get('flags') === 'master') return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`the failover did not happen (SENTINEL FAILOVER answered: ${answer})`);
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

/** SENTINEL REPLICAS names this replica, up, heard from by the Sentinel, linked to its master. */
function replicaIsCandidate(sentinelPort: number, masterName: string, replicaPort: number): boolean {
  const candidate = sentinelRecords(sentinelPort, 'REPLICAS', masterName).find(
    (record) => record.get('port') === String(replicaPort),
  );
  return (
    candidate?.get('flags') === 'slave' &&
    candidate.get('master-link-status') === 'ok' &&
    Number(candidate.get('info-refresh')) < 10_000
  );
}

/** A SENTINEL subcommand's instances, each printed by redis-cli as field and value lines from `name`. */
function sentinelRecords(sentinelPort: number, ...args: string[]): Array<Map<string, string>> {
  const lines = redisCli(sentinelPort, 'SENTINEL', ...args).split('\n');
  const records: Array<Map<string, string>> = [];
  for (let index = 0; index + 1 < lines.length; index += 2) {
    if (lines[index] === 'name') records.push(new Map());
    records.at(-1)?.set(lines[index] ?? '', lines[index + 1] ?? '');
  }
  return records;
}
