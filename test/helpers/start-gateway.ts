// Starts the real gateway in-process on a free loopback port, with its logs captured line by line.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll } from 'vitest';
import type { GatewayConfig } from '../../src/config/gateway-config.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createGateway, type Gateway } from '../../src/create-gateway.js';
import { createLogger } from '../../src/logger.js';

export interface GatewayHarness {
  baseUrl: string;
  gateway: Gateway;
  config: GatewayConfig;
  logLines: string[];
  close(): Promise<void>;
}

export function writeConfigFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ctxgate-config-')), 'ctxgate.yaml');
  writeFileSync(path, yaml);
  return path;
}

export function captureLogs(): { lines: string[]; destination: Writable } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(line);
      callback();
    },
  });
  return { lines, destination };
}

export async function startGateway(
  options: { env?: Record<string, string>; configYaml?: string; clock?: () => number } = {},
): Promise<GatewayHarness> {
  const env: Record<string, string> = { LOG_LEVEL: 'info', ...options.env };
  env.CTXGATE_CONFIG = writeConfigFile(options.configYaml ?? '{}\n');
  const config = loadConfig({ env });
  const { lines, destination } = captureLogs();
  const logger = createLogger({ level: config.logLevel, destination });
  const gateway = createGateway({
    config,
    logger,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const address = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  return {
    baseUrl: `${address}/v1`,
    gateway,
    config,
    logLines: lines,
    close: () => gateway.close(),
  };
}

/** A gateway in front of one upstream (a fake, started here) and a Redis, ready (its Redis connection up). */
export async function startGatewayOn(
  upstream: { start(): Promise<string> },
  redisUrl: string,
): Promise<GatewayHarness> {
  const harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await upstream.start(), REDIS_URL: redisUrl },
  });
  await waitUntilReady(harness);
  return harness;
}

/** Waits until the gateway's /readyz answers 200 (its Redis connection is up); throws after 5 s. */
export async function waitUntilReady(gateway: GatewayHarness): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if ((await fetch(`${gateway.baseUrl.replace(/\/v1$/, '')}/readyz`)).status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('gateway not ready');
}

/** The gateway's /metrics page. */
export async function metricsText(gateway: GatewayHarness): Promise<string> {
  return (await fetch(`${gateway.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
}

/** One series' value on a metrics page (0 while the series has not appeared). */
export function counterValue(text: string, series: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/**
 * A gateway in front of `fake` (started here) with `configYaml`, started before the enclosing describe's
 * tests and stopped after them, the fake with it: `harness` is read once the tests run.
 */
export function gatewayBefore(
  fake: { start(): Promise<string>; stop(): Promise<void> },
  configYaml?: string,
): { readonly harness: GatewayHarness } {
  const started = {} as { harness: GatewayHarness };
  beforeAll(async () => {
    started.harness = await startGateway({
      env: { UPSTREAM_BASE_URL: await fake.start() },
      ...(configYaml === undefined ? {} : { configYaml }),
    });
  });
  afterAll(async () => {
    await started.harness.close();
    await fake.stop();
  });
  return started;
}
