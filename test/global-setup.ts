// Vitest global setup: one real redis-server for the whole run, on a free loopback port; the newest
// client majors and the Node 22 they need, installed once before any test file runs (a no-op when their
// lockfiles have not changed).
import './provided-context.js';
import type { TestProject } from 'vitest/node';
import { installNewestClients } from './helpers/newest-clients.js';
import { startRedisServer, type RunningRedis } from './helpers/redis-server.js';

let redis: RunningRedis | undefined;

export async function setup(project: TestProject): Promise<void> {
  installNewestClients();
  redis = await startRedisServer();
  project.provide('redisUrl', redis.url);
}

export async function teardown(): Promise<void> {
  await redis?.stop();
}
