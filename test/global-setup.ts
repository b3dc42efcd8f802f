// Vitest global setup: one real redis-server for the whole run, on a free loopback port; the newest
// client majors and the Node 22 they need, installed once before any test file runs (a no-op when their
// lockfiles have not changed); and one temporary directory for the run, removed at its end.
import './provided-context.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { installNewestClients } from './helpers/newest-clients.js';
import { startRedisServer, type RunningRedis } from './helpers/redis-server.js';

let redis: RunningRedis | undefined;
let runDirectory: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  installNewestClients();
  // Every file a test writes under os.tmpdir() (gateway configs, agents' homes and work trees, Redis
  // directories), and what the agents it runs write there, lands in this run's directory: the test
  // workers and their children inherit TMPDIR. Removed whole at teardown, so runs leave nothing behind.
  runDirectory = mkdtempSync(join(tmpdir(), 'ctxgate-test-run-'));
  process.env.TMPDIR = runDirectory;
  redis = await startRedisServer();
  project.provide('redisUrl', redis.url);
}

export async function teardown(): Promise<void> {
  await redis?.stop();
  if (runDirectory !== undefined) rmSync(runDirectory, { recursive: true, force: true });
}
