// The SessionStore contract against the in-process store, a real redis-server, and a real local Redis
// Cluster of three masters.
import { afterAll, inject } from 'vitest';
import { createMemorySessionStore } from '../../src/store/memory-session-store.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { createRedisSessionStore } from '../../src/store/redis-session-store.js';
import { startRedisCluster, type RunningCluster } from '../helpers/redis-cluster.js';
import { describeSessionStoreContract } from './session-store-contract.js';

describeSessionStoreContract('memory', (limits) => createMemorySessionStore({ limits }));

describeSessionStoreContract('redis-server', (limits) =>
  createRedisSessionStore({
    redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
    limits,
  }),
);

let cluster: Promise<RunningCluster> | undefined;
afterAll(async () => {
  await (await cluster)?.stop();
});

describeSessionStoreContract('redis cluster (3 masters)', async (limits) => {
  cluster ??= startRedisCluster();
  const { nodes } = await cluster;
  return createRedisSessionStore({ redis: createRedisConnection({ mode: 'cluster', nodes }), limits });
});
