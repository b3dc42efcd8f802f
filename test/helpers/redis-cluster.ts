// Starts a real local Redis Cluster of three masters on free loopback ports (redis-server in cluster
// mode, joined with `redis-cli --cluster create`), and stops the servers by their own PIDs.
import { execFileSync } from 'node:child_process';
import { findFreeClusterPort, startRedisServer, type RunningRedis } from './redis-server.js';

const nodeArguments = [
  '--cluster-enabled',
  'yes',
  '--cluster-config-file',
  'nodes.conf',
  '--cluster-node-timeout',
  '2000',
  '--appendonly',
  'no',
];

/**
 * One cluster node on a port whose bus port is free; tried again on another port when it does not
 * start (a port taken between the check and redis-server's bind).
 */
async function startClusterNode(): Promise<RunningRedis> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRedisServer(nodeArguments, await findFreeClusterPort());
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}

export interface RunningCluster {
  nodes: Array<{ host: string; port: number }>;
  stop(): Promise<void>;
}

export async function startRedisCluster(masters = 3): Promise<RunningCluster> {
  const servers: RunningRedis[] = [];
  try {
    for (let index = 0; index < masters; index++) servers.push(await startClusterNode());
    const addresses = servers.map((server) => `127.0.0.1:${server.port}`);
    execFileSync(
      'redis-cli',
      ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'],
      { stdio: 'ignore', timeout: 30_000 },
    );
    // Wait until every node sees all slots assigned.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const states = servers.map((server) =>
        execFileSync('redis-cli', ['-p', String(server.port), 'cluster', 'info'], { encoding: 'utf8' }),
      );
      if (states.every((state) => state.includes('cluster_state:ok'))) break;
      if (Date.now() > deadline) throw new Error('redis cluster did not become ready');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await Promise.all(servers.map((server) => server.stop()));
    throw error;
  }
  return {
    nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })),
    stop: async () => {
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}
