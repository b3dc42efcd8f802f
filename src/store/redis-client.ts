// Creates the ioredis client (standalone or Cluster) with fail-fast settings: no unbounded offline
// queue and a command timeout, so a request never waits on a Redis that is down or paused.
import { Cluster, Redis } from 'ioredis';
import type { RedisConfig } from '../config/gateway-config.js';

export type RedisConnection = Redis | Cluster;

export const redisCommandTimeoutMs = 500;

export function createRedisConnection(config: Exclude<RedisConfig, { mode: 'memory' }>): RedisConnection {
  const common = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 1_000,
    commandTimeout: redisCommandTimeoutMs,
    retryStrategy: (attempt: number) => Math.min(attempt * 200, 2_000),
  };
  if (config.mode === 'cluster') {
    return new Cluster(
      config.nodes.map((node) => ({ host: node.host, port: node.port })),
      { enableOfflineQueue: false, clusterRetryStrategy: common.retryStrategy, redisOptions: common },
    );
  }
  return new Redis(config.url, common);
}
