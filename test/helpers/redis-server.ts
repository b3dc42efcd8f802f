// Starts a real redis-server on a free loopback port for tests, and stops it by its own PID.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RunningRedis {
  port: number;
  url: string;
  process: ChildProcess;
  directory: string;
  stop(): Promise<void>;
}

export async function findFreePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

export function assertRedisInstalled(): void {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      'redis-server was not found on PATH. The tests run against a real Redis: install it with ' +
        '`sudo apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS), then run `npm test` again.',
    );
  }
}

/** Whether a listener can take `port` on loopback now. */
export async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (listening) await new Promise<void>((resolve) => server.close(() => resolve()));
  return listening;
}

/**
 * A free port for a cluster node: its cluster bus (the port + 10,000) must be a port, and free, too.
 * An ephemeral port from the system may be above 55,535, or its bus port taken by another connection.
 */
export async function findFreeClusterPort(): Promise<number> {
  for (;;) {
    const port = await findFreePort();
    if (port + 10_000 <= 65_535 && (await portIsFree(port + 10_000))) return port;
  }
}

export async function waitForPort(
  port: number,
  timeoutMs: number,
  /** The server's process: when it exits first, the wait ends at once. */
  child?: ChildProcess,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child !== undefined && (child.exitCode !== null || child.signalCode !== null))
      throw new Error(
        `redis-server on port ${port} exited (${child.exitCode ?? child.signalCode}) before it was ready`,
      );
    const ok = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.once('error', () => resolve(false));
      socket.connect(port, '127.0.0.1', () => {
        socket.write('PING\r\n');
        socket.once('data', (data) => {
          socket.destroy();
          resolve(data.toString().startsWith('+PONG'));
        });
      });
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A redis-server on `fixedPort`, or on a free port — another one when it does not start there (a port
 * taken between the check and redis-server's bind).
 */
export async function startRedisServer(
  extraArgs: string[] = [],
  fixedPort?: number,
  directory?: string,
): Promise<RunningRedis> {
  assertRedisInstalled();
  if (fixedPort !== undefined) return launchRedisServer(extraArgs, fixedPort, directory);
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchRedisServer(extraArgs, await findFreePort(), directory);
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}

async function launchRedisServer(
  extraArgs: string[],
  port: number,
  directory: string | undefined,
): Promise<RunningRedis> {
  const dir = directory ?? mkdtempSync(join(tmpdir(), 'ctxgate-redis-'));
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--dir',
      dir,
      '--protected-mode',
      'no',
      ...extraArgs,
    ],
    {
      stdio: 'ignore',
    },
  );
  await waitForPort(port, 10_000, child).catch((error: unknown) => {
    child.kill('SIGKILL');
    if (directory === undefined) rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    process: child,
    directory: dir,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      if (directory === undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}
