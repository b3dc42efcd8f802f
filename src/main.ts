// The process entry point: reads the environment, starts the gateway, listens, and drains on SIGTERM.
// With the config loader, the only module that touches process.env, signals and the listening socket.
import type { GatewayConfig } from './config/gateway-config.js';
import { ConfigError, loadConfig } from './config/load-config.js';
import { createGateway } from './create-gateway.js';
import { createLogger } from './logger.js';

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

/** What an operator checks first: where requests go (names and hosts, never keys), who may send them, where state lives. */
function startupFacts(config: GatewayConfig): Record<string, unknown> {
  const host = (url: string): string => {
    try {
      return new URL(url).host;
    } catch {
      return 'invalid';
    }
  };
  return {
    upstreams: config.upstreams.map((upstream) => ({
      name: upstream.name,
      host: host(upstream.baseUrl),
      key: upstream.apiKey === undefined ? 'client' : 'configured',
    })),
    auth: config.gatewayApiKeys.length > 0 ? 'gateway_keys' : 'pass_through',
    store: config.redis.mode,
    config: config.configPath,
  };
}

/** How long start-up waits for Redis before listening anyway (docs/operations.md). */
const startupStoreWaitMs = 1_000;

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.logLevel });
  const gateway = createGateway({ config, logger });
  const { app } = gateway;

  let shuttingDown = false;
  async function shutdown(signal: string): Promise<void> {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info(
      { signal, graceMs: config.server.shutdown_grace_ms },
      'shutting down: draining in-flight requests',
    );
    gateway.beginShutdown();
    const force = setTimeout(() => {
      logger.warn('grace period over: closing remaining connections');
      app.server.closeAllConnections();
    }, config.server.shutdown_grace_ms);
    force.unref();
    // Should closing itself hang (a log write that never completes, a connection that never ends),
    // the process still stops: an orchestrator's SIGKILL should not be what ends it.
    const hardStop = setTimeout(() => {
      process.stderr.write('ctxgate: shutdown did not finish; exiting\n');
      process.exit(1);
    }, config.server.shutdown_grace_ms + 5_000);
    hardStop.unref();
    await gateway.close();
    clearTimeout(force);

    logger.info('stopped');
    process.exit(0);
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));

  gateway.warmUp();
  // Listening only once Redis answers (bounded: without it the gateway still serves requests without a
  // session), so a session request sent the moment the gateway is up is not refused for a connection
  // still being made.
  const storeReady = await gateway.untilStoreReady(startupStoreWaitMs);
  // One start-up line, the gateway's: fastify's own "Server listening at" is not written.
  const level = app.log.level;
  app.log.level = 'warn';
  try {
    await app.listen({ port: config.port, host: config.host });
  } finally {
    app.log.level = level;
  }

  const address = app.server.address();
  logger.info(
    {
      address:
        typeof address === 'object' && address !== null ? `${address.address}:${address.port}` : address,
      ...startupFacts(config),
      storeReady,
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
