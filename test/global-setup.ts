// Vitest global setup: one real redis-server for the whole run, on a free loopback port.
import './provided-context.js';
import type { TestProject } from 'vitest/node';
import { startRedisServer, type RunningRedis } from './helpers/redis-server.js';

let redis: RunningRedis | undefined;

export async function setup(project: TestProject): Promise<void> {
  redis = await startRedisServer();
  project.provide('redisUrl', redis.url);
}

export async function teardown(): Promise<void> {
  await redis?.stop();
}
