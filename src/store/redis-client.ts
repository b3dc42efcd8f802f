// Creates the ioredis client (standalone, Sentinel or Cluster) with fail-fast settings: no unbounded
// offline queue and a command timeout, so a request never waits on a Redis that is down or paused.
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
      {
        enableOfflineQueue: false,
        clusterRetryStrategy: common.retryStrategy,
        redisOptions:
          config.password === undefined ? common : Object.assign({}, common, { password: config.password }),
      },
    );
  }
  if (config.mode === 'sentinel') {
    return new Redis({
      sentinels: config.sentinels.map((node) => ({ host: node.host, port: node.port })),
      name: config.masterName,
      sentinelRetryStrategy: common.retryStrategy,
      // After a failover the old master answers READONLY until the client reconnects: reconnect at once,
      // and ask the Sentinels where the master is now.
      reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
      failoverDetector: true,
      ...common,
      ...(config.password === undefined ? {} : { password: config.password }),
      ...(config.sentinelPassword === undefined ? {} : { sentinelPassword: config.sentinelPassword }),
    });
  }
  return new Redis(config.url, common);
}
