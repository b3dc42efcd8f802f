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

export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
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

export async function startRedisServer(
  extraArgs: string[] = [],
  fixedPort?: number,
  directory?: string,
): Promise<RunningRedis> {
  assertRedisInstalled();
  const port = fixedPort ?? (await findFreePort());
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
  await waitForPort(port, 10_000);
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
