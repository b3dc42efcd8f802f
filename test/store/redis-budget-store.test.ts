// The Redis budget store against the BudgetStore contract, on a real redis-server and a real local Redis
// Cluster (counters sharing a hash tag are reserved in one script; a request spanning tags, tag by tag).
import { afterAll, inject } from 'vitest';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { createRedisBudgetStore } from '../../src/store/redis-budget-store.js';
import { startRedisCluster, type RunningCluster } from '../helpers/redis-cluster.js';
import { describeBudgetStoreContract } from './budget-store-contract.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const connections: Array<ReturnType<typeof createRedisConnection>> = [];
const connected = async (connection: ReturnType<typeof createRedisConnection>) => {
  connections.push(connection);
  for (let attempt = 0; attempt < 100 && connection.status !== 'ready'; attempt++) await sleep(50);
  return createRedisBudgetStore({ redis: connection });
};
describeBudgetStoreContract('redis-server', () =>
  connected(createRedisConnection({ mode: 'standalone', url: inject('redisUrl') })),
);

let cluster: Promise<RunningCluster> | undefined;
describeBudgetStoreContract('redis cluster (3 masters)', async () => {
  cluster ??= startRedisCluster();
  const { nodes } = await cluster;
  return connected(createRedisConnection({ mode: 'cluster', nodes }));
});

afterAll(async () => {
  for (const connection of connections) connection.disconnect();
  await (await cluster)?.stop();
});
