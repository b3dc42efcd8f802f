// Creates the ioredis client (standalone, Sentinel or Cluster) with fail-fast settings: no unbounded
// offline queue and a command timeout, so a request never waits on a Redis that is down or paused — and a
// timeout that a blocked event loop cannot fake (failUnanswered).
import { Cluster, Redis } from 'ioredis';
import type { RedisConfig } from '../config/gateway-config.js';

export type RedisConnection = Redis | Cluster;

export const redisCommandTimeoutMs = 500;

/** What the command timeout needs of an ioredis command. */
interface PendingCommand {
  isResolved: boolean;
  promise: Promise<unknown>;
  reject(error: Error): void;
}

/** Lateness of the timeout's timer below this is the loop's ordinary jitter, not a blocked loop. */
const blockedLoopMs = 20;

const watched = new WeakSet<PendingCommand>();

/**
 * Fails `command` once Redis has left it unanswered for `ms` of time in which this process was running.
 * ioredis's own commandTimeout fails a command when its timer fires; after the event loop was blocked past
 * it (a long GC pause, a CPU-throttled container), that timer runs before the loop reads the socket, and a
 * command Redis answered in a millisecond fails as timed out — every request in flight gets a 503. Here,
 * when the timer fires, the loop first reads what has arrived (setImmediate runs after the poll phase); and
 * the time the loop was blocked (the timer's lateness) is waited again, as Redis's silence was not seen
 * then: at most 4 × `ms` in all.
 */
function failUnanswered(command: PendingCommand, ms: number): void {
  if (watched.has(command)) return;
  watched.add(command);
  const giveUpAt = performance.now() + 4 * ms;
  let timer: NodeJS.Timeout | undefined;
  const arm = (wait: number): void => {
    const due = performance.now() + wait;
    timer = setTimeout(() => {
      const late = performance.now() - due;
      setImmediate(() => {
        if (command.isResolved) return;
        const owed = Math.min(late, giveUpAt - performance.now());
        if (owed > blockedLoopMs) arm(owed);
        else command.reject(new Error('Command timed out'));
      });
    }, wait);
  };
  arm(ms);
  const clear = (): void => clearTimeout(timer);
  command.promise.then(clear, clear);
}

/** Every command the connection sends (a cluster's included, wherever it is routed) gets failUnanswered. */
function withCommandTimeout<Connection extends RedisConnection>(
  connection: Connection,
  ms: number,
): Connection {
  const send = connection.sendCommand.bind(connection) as (
    command: PendingCommand,
    ...rest: unknown[]
  ) => unknown;
  (connection as unknown as { sendCommand: typeof send }).sendCommand = (command, ...rest) => {
    failUnanswered(command, ms);
    return send(command, ...rest);
  };
  return connection;
}

export function createRedisConnection(config: Exclude<RedisConfig, { mode: 'memory' }>): RedisConnection {
  return withCommandTimeout(connect(config), redisCommandTimeoutMs);
}

function connect(config: Exclude<RedisConfig, { mode: 'memory' }>): RedisConnection {
  // No commandTimeout here: ioredis's would fire after a blocked loop (see failUnanswered).
  const common = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 1_000,
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
