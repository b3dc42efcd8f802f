// Builds the real infrastructure named by a GatewayConfig (Redis connection, undici upstream, metrics)
// and hands it to buildApp. main.ts and the end-to-end tests both start the gateway through here.
import { createMemoryLearnedLimits, createRedisLearnedLimits } from './store/learned-limits.js';
import { learnedLimitsOptions } from './create-services.js';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { buildApp, type GatewayApp } from './app.js';
import { createServices } from './create-services.js';
import type { GatewayConfig } from './config/gateway-config.js';
import { createMetrics } from './metrics.js';
import { createRedisConnection, type RedisConnection } from './store/redis-client.js';
import { createTiktokenTokenizers } from './tokenizer/tiktoken-tokenizers.js';
import { createUndiciUpstream } from './upstream/undici-upstream.js';
import { withAnthropicUpstreams } from './upstream/anthropic-wire.js';
import { withResponsesWire } from './upstream/responses-wire.js';
import { createMemorySessionStore } from './store/memory-session-store.js';
import { createRedisSessionStore } from './store/redis-session-store.js';
import { createMemoryResponseStore, createRedisResponseStore } from './store/response-store.js';
import { minActiveMessages } from './store/session-store.js';
import { createMemoryBudgetStore } from './store/memory-budget-store.js';
import { createRedisBudgetStore } from './store/redis-budget-store.js';

export interface Gateway extends GatewayApp {
  /** Loads the tokenizers' encodings now rather than on the first request that needs them. */
  warmUp(): void;

  /** True once the session store answers, false when `waitMs` passes first. */
  untilStoreReady(waitMs: number): Promise<boolean>;

  /** Closes the app, then the upstream pools and the Redis connection. */
  close(): Promise<void>;
}

/**
 * Session keys carry a TTL, so every eviction policy but noeviction (allkeys-* and volatile-* alike)
 * may silently drop a live conversation under memory pressure. Managed Redis may refuse CONFIG: then
 * nothing is said.
 */
async function warnWhenKeysCanBeEvicted(redis: RedisConnection, logger: Logger): Promise<void> {
  try {
    const nodes = 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
    for (const node of nodes) {
      const reply = (await node.config('GET', 'maxmemory-policy')) as string[];
      const policy = reply[1];
      if (policy !== undefined && policy !== 'noeviction') {
        logger.warn(
          { maxmemoryPolicy: policy },
          'redis maxmemory-policy can evict session keys under memory pressure; set it to noeviction',
        );
        return;
      }
    }
  } catch {
    // CONFIG is often disabled on managed Redis.
  }
}

function connectRedis(config: GatewayConfig, logger: Logger): RedisConnection | undefined {
  if (config.redis.mode === 'memory') {
    logger.warn(
      'REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES are unset: sessions live in this process only and are lost on restart',
    );
    return undefined;
  }
  const redis = createRedisConnection(config.redis);
  let lastError = '';
  redis.on('error', (error: Error) => {
    // ioredis repeats the same error on every reconnect attempt: log each distinct one once.
    if (error.message !== lastError)
      logger.warn({ err: { message: error.message } }, 'redis connection error');
    lastError = error.message;
  });
  redis.on('ready', () => {
    lastError = '';
    logger.info('redis ready');
    void warnWhenKeysCanBeEvicted(redis, logger);
  });

  return redis;
}

export function createGateway(options: {
  config: GatewayConfig;
  logger: Logger;
  /** Wall-clock milliseconds for budget periods (tests move it across a day or month boundary). */
  clock?: () => number;
}): Gateway {
  const { config, logger } = options;
  const redis = connectRedis(config, logger);
  // Chat bodies to an `anthropic` upstream go in its own wire format (docs/anthropic.md).
  // A model served by the Responses API alone is asked there (responses-wire.ts).
  const upstream = withResponsesWire(
    withAnthropicUpstreams(
      createUndiciUpstream({
        timeouts: {
          connectMs: config.timeouts.upstream_connect_ms,
          firstByteMs: config.timeouts.upstream_first_byte_ms,
          idleMs: config.timeouts.upstream_idle_ms,
        },
        maxAnswerBytes: config.server.max_upstream_answer_bytes,
      }),
    ),
  );
  const tokenizers = createTiktokenTokenizers();
  const limits = {
    maxActiveMessages: config.sessions.max_active_messages,
    minActiveMessages,

    idleTtlSeconds: config.sessions.ttl_seconds,
  };
  const metrics = createMetrics();
  const sessionStore =
    redis === undefined
      ? createMemorySessionStore({
          limits,
          maxBytes: config.sessions.memory_mb * 1024 * 1024,
          onEvict({ reason, sessions }) {
            metrics.sessionsEvicted.inc({ reason }, sessions);
            if (reason === 'memory')
              logger.warn(
                { sessions, memoryMb: config.sessions.memory_mb },
                'in-process session store full: least recently used idle sessions evicted',
              );
            else logger.info({ sessions }, 'expired sessions removed from the in-process store');
          },
        })
      : createRedisSessionStore({ redis, limits, cacheBytes: config.sessions.cache_mb * 1024 * 1024 });

  const learnedOptions = learnedLimitsOptions(config, logger, metrics);
  const learnedLimits =
    redis === undefined
      ? createMemoryLearnedLimits(learnedOptions)
      : createRedisLearnedLimits(Object.assign({}, learnedOptions, { redis }));
  const services = createServices({
    config,
    logger,
    metrics,
    upstream,
    tokenizers,
    sessionStore,
    learnedLimits,
    budgetStore: redis === undefined ? createMemoryBudgetStore() : createRedisBudgetStore({ redis }),
    responseStore:
      redis === undefined
        ? createMemoryResponseStore({
            ttlSeconds: config.sessions.ttl_seconds,
            maxBytes: config.responses.memory_mb * 1024 * 1024,
            onEvict: (records) =>
              logger.warn(
                { records, memoryMb: config.responses.memory_mb },
                'in-process response store full: least recently used responses evicted',
              ),
          })
        : createRedisResponseStore({ redis, ttlSeconds: config.sessions.ttl_seconds }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const gatewayApp = buildApp({
    config,
    logger,
    metrics,
    // Ready once the store answers and the limits the replicas learned have been read.
    readiness: { check: async () => (await sessionStore.ping()) && learnedLimits.loaded() },
    services,
  });
  // Connections that never sent a byte (a client's pool may open one ahead of use) are not "idle" to
  // Node's closeIdleConnections, and would hold server.close() until the request timeout. They are told
  // apart by bytesRead, not by listening for 'data': that listener would take the socket from Node's
  // HTTP parser, which would then read every request through JavaScript streams instead of natively.
  const openSockets = new Set<Socket>();
  gatewayApp.app.server.on('connection', (socket: Socket) => {
    openSockets.add(socket);
    socket.once('close', () => openSockets.delete(socket));
  });
  return Object.assign({}, gatewayApp, {
    // Checked every 10 ms: main.ts listens after it, so a session request sent as the gateway starts
    // finds Redis connected.
    async untilStoreReady(waitMs: number): Promise<boolean> {
      const deadline = Date.now() + waitMs;
      for (;;) {
        if (await sessionStore.ping().catch(() => false)) return true;
        if (Date.now() >= deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    warmUp() {
      // Loading an encoding's ranks (and its split pattern) takes tens of milliseconds: not on a request.
      tokenizers.forEncoding('o200k_base');
      tokenizers.forEncoding('cl100k_base');
    },
    async close() {
      // server.close() drops only the connections idle at that moment; a connection whose last stream
      // finishes during the drain would otherwise stay open until its keep-alive timeout.
      const sweep = setInterval(() => {
        gatewayApp.app.server.closeIdleConnections();
        for (const socket of openSockets) if (socket.bytesRead === 0) socket.destroy();
      }, 100);
      try {
        await gatewayApp.app.close();
      } finally {
        clearInterval(sweep);
      }

      await upstream.close();
      await learnedLimits.close();
      await sessionStore.close();
      redis?.disconnect();
    },
  });
}
