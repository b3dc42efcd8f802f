// Creates the ioredis client (standalone, Sentinel or Cluster) with fail-fast settings: no unbounded
// offline queue and a command timeout, so a request never waits on a Redis that is down or paused — and a
// timeout that a blocked event loop cannot fake (UnansweredWatch). Under load, the commands of one turn of
// the event loop leave in one write (writeTogetherUnderLoad).
import type { Socket } from 'node:net';
import { Cluster, Redis } from 'ioredis';
import type { RedisConfig } from '../config/gateway-config.js';

export type RedisConnection = Redis | Cluster;

export const redisCommandTimeoutMs = 500;

/** What the command timeout needs of an ioredis command, and the times it is stamped with when sent. */
interface WatchedCommand {
  isResolved: boolean;
  reject(error: Error): void;
  [sentAt]?: number;
  [sentRunning]?: number;
  [timedOut]?: true;
}

/** ioredis's queue of commands written and not yet answered, oldest first (a Denque). */
interface CommandQueue {
  length: number;
  peekAt(index: number): { command: WatchedCommand } | undefined;
}

/** What the watch reads of an ioredis connection: its queues (the one before a reconnect too). */
interface QueueHolder {
  commandQueue?: CommandQueue;
  prevCommandQueue?: CommandQueue | null;
}

const sentAt = Symbol('sentAt');
const sentRunning = Symbol('sentRunning');
const timedOut = Symbol('timedOut');

/** Lateness of the watch's tick above this is a blocked loop, not the loop's ordinary jitter. */
const blockedLoopMs = 20;

/**
 * Fails a command once Redis has left it unanswered for `ms` of time in which this process was running.
 * ioredis's own commandTimeout fails a command when its timer fires; after the event loop was blocked past
 * it (a long GC pause, a CPU-throttled container), that timer runs before the loop reads the socket, and a
 * command Redis answered in a millisecond fails as timed out — every request in flight gets a 503.
 *
 * Here one timer per connection ticks every `ms / 5` while commands are unanswered. A tick that comes late
 * by more than the loop's jitter means the loop was blocked: that time does not count, as Redis's silence
 * was not observed then (but no command waits over 4 × `ms` in all). Deadlines are checked only after the
 * loop has read what arrived (setImmediate runs after the poll phase). A command therefore fails between
 * `ms` and `ms + ms / 5` after it was sent. The watch keeps no reference to a command: it stamps two times
 * on it and reads ioredis's own queue of unanswered ones, so an answered command is garbage at once (a
 * list of our own kept each one alive until the next tick, and cost ~1.5 µs per command in GC).
 */
class UnansweredWatch {
  /** Time the loop was seen blocked while the watch ticked; the running clock is real time minus it. */
  private blocked = 0;
  private tickDue = 0;
  private ticking = false;
  private readonly tickMs: number;

  constructor(
    private readonly ms: number,
    private readonly holders: () => Iterable<QueueHolder>,
  ) {
    this.tickMs = Math.max(1, Math.round(ms / 5));
  }

  /** Called as the command is sent (again, for a cluster's MOVED or ASK: it keeps its first times). */
  watch(command: WatchedCommand): void {
    if (command[sentAt] !== undefined) return;
    const now = performance.now();
    command[sentAt] = now;
    command[sentRunning] = now - this.blocked;
    if (!this.ticking) this.arm(now);
  }

  private arm(now: number): void {
    this.ticking = true;
    this.tickDue = now + this.tickMs;
    setTimeout(() => this.tick(), this.tickMs).unref();
  }

  private tick(): void {
    const late = performance.now() - this.tickDue;
    if (late > blockedLoopMs) this.blocked += late;
    setImmediate(() => this.sweep());
  }

  private sweep(): void {
    const now = performance.now();
    let unanswered = false;
    for (const holder of this.holders()) {
      for (const queue of [holder.commandQueue, holder.prevCommandQueue]) {
        if (queue === undefined || queue === null || queue.length === 0) continue;
        unanswered = true;
        this.failExpired(queue, now);
      }
    }
    if (unanswered) this.arm(now);
    else this.ticking = false;
  }

  /** Queued commands are oldest first, so the first one not yet due ends the walk. */
  private failExpired(queue: CommandQueue, now: number): void {
    for (let index = 0; index < queue.length; index++) {
      const command = queue.peekAt(index)?.command;
      const sent = command?.[sentAt];
      if (command === undefined || sent === undefined || command[timedOut] === true) continue;
      const running = now - this.blocked - (command[sentRunning] ?? sent);
      if (running < this.ms && now - sent < 4 * this.ms) return;
      command[timedOut] = true;
      // The answer may still come; ioredis then resolves a promise already rejected, which does nothing.
      if (!command.isResolved) command.reject(new Error('Command timed out'));
    }
  }
}

/** Every command the connection sends (a cluster's included, wherever it is routed) is watched. */
function withCommandTimeout<Connection extends RedisConnection>(
  connection: Connection,
  ms: number,
): Connection {
  const send = connection.sendCommand.bind(connection) as (
    command: WatchedCommand,
    ...rest: unknown[]
  ) => unknown;
  const holders = (): Iterable<QueueHolder> =>
    (connection instanceof Cluster ? connection.nodes('all') : [connection]) as Iterable<QueueHolder>;
  const watch = new UnansweredWatch(ms, holders);
  (connection as unknown as { sendCommand: typeof send }).sendCommand = (command, ...rest) => {
    watch.watch(command);
    return send(command, ...rest);
  };
  return connection;
}

/**
 * Sends the commands a connection is given in one turn of the event loop while others await their
 * answers in one write(2), at the turn's end (as node-redis does: cork the socket, uncork it in
 * setImmediate, which runs right after the poll phase). ioredis writes each command at once: under load a
 * session request's two scripts, and those of every other request served in the same turn, each cost a
 * system call and a wake-up of Redis, the largest part of the CPU a session request adds. A command sent
 * while none is outstanding goes at once, as before: a lone command gains nothing from waiting, and the
 * turn's end would cost it a few microseconds. Only the socket's writes are grouped: every command is
 * still answered on its own, in order.
 */
function writeTogetherUnderLoad(redis: Redis): void {
  const send = redis.sendCommand.bind(redis);
  const outstanding = redis as unknown as QueueHolder;
  let corked: Socket | undefined;
  const uncork = (): void => {
    corked?.uncork();
    corked = undefined;
  };
  redis.sendCommand = (...args: Parameters<Redis['sendCommand']>) => {
    const socket = redis.stream as Socket | undefined;
    if (corked === undefined && (outstanding.commandQueue?.length ?? 0) > 0 && socket?.writable === true) {
      corked = socket;
      socket.cork();
      setImmediate(uncork);
    }
    return send(...args);
  };
}

export function createRedisConnection(config: Exclude<RedisConfig, { mode: 'memory' }>): RedisConnection {
  const connection = connect(config);
  if (connection instanceof Cluster) connection.on('+node', writeTogetherUnderLoad);
  else writeTogetherUnderLoad(connection);
  return withCommandTimeout(connection, redisCommandTimeoutMs);
}

function connect(config: Exclude<RedisConfig, { mode: 'memory' }>): RedisConnection {
  // No commandTimeout here: ioredis's would fire after a blocked loop (see UnansweredWatch).
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
