// The process entry point: reads the environment, builds the app, listens, and drains on SIGTERM.
// The only module (with the config loader) that touches process.env, signals and the listening socket.
import { buildApp } from './app.js';
import type { GatewayConfig } from './config/gateway-config.js';
import { ConfigError, loadConfig } from './config/load-config.js';
import { createLogger } from './logger.js';
import { createMetrics } from './metrics.js';
import { createRedisConnection, pingRedis, type RedisConnection } from './store/redis-client.js';
import { createUndiciUpstream } from './upstream/undici-upstream.js';

function loadConfigOrExit(): GatewayConfig {
  try {
    return loadConfig({ env: process.env });
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const problem of error.problems)
        process.stderr.write(`ctxgate: configuration error: ${problem}\n`);
      process.exit(1);
    }
    throw error;
  }
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.logLevel });

  let redis: RedisConnection | undefined;
  if (config.redis.mode === 'memory') {
    logger.warn(
      'REDIS_URL and REDIS_CLUSTER_NODES are unset: sessions live in this process only and are lost on restart',
    );
  } else {
    redis = createRedisConnection(config.redis);
    let lastRedisError = '';
    redis.on('error', (error: Error) => {
      // ioredis repeats the same error on every reconnect attempt: log each distinct one once.
      if (error.message !== lastRedisError)
        logger.warn({ err: { message: error.message } }, 'redis connection error');
      lastRedisError = error.message;
    });
    redis.on('ready', () => {
      lastRedisError = '';
      logger.info('redis ready');
    });
  }

  const upstream = createUndiciUpstream({
    timeouts: {
      connectMs: config.timeouts.upstream_connect_ms,
      firstByteMs: config.timeouts.upstream_first_byte_ms,
      idleMs: config.timeouts.upstream_idle_ms,
    },
  });
  const connection = redis;
  const { app, beginShutdown } = buildApp({
    config,
    logger,
    upstream,
    metrics: createMetrics(),
    readiness: { check: async () => (connection === undefined ? true : pingRedis(connection)) },
  });

  let shuttingDown = false;
  async function shutdown(signal: string): Promise<void> {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info(
      { signal, graceMs: config.server.shutdown_grace_ms },
      'shutting down: draining in-flight requests',
    );
    beginShutdown();
    const force = setTimeout(() => {
      logger.warn('grace period over: closing remaining connections');
      app.server.closeAllConnections();
    }, config.server.shutdown_grace_ms);
    force.unref();
    await app.close();
    clearTimeout(force);
    await upstream.close();
    if (redis !== undefined) redis.disconnect();
    logger.info('stopped');
    process.exit(0);
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));

  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  logger.info(
    {
      address:
        typeof address === 'object' && address !== null ? `${address.address}:${address.port}` : address,
    },
    'ctxgate listening',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `ctxgate: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
