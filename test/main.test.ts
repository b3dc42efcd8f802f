// The real entry point (src/main.ts) as a child process: start-up refusal on bad configuration, and a
// graceful SIGTERM that lets in-flight streams finish while refusing new work.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from './helpers/fake-upstream.js';
import { findFreePort, startRedisServer } from './helpers/redis-server.js';
import { writeConfigFile } from './helpers/start-gateway.js';

function startMain(env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'pipe',
  });
}

function collect(child: ChildProcessWithoutNullStreams): {
  stdout: () => string;
  /** stdout's log lines, parsed. */
  lines: () => Array<Record<string, unknown>>;
  stderr: () => string;
  exit: Promise<number | null>;
} {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  return {
    stdout: () => stdout,
    lines: () =>
      stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    stderr: () => stderr,
    exit: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
}

/** src/main.ts on a free port, once it answers /healthz: the child, its output and its base URL. */
async function startedMain(env: Record<string, string>): Promise<{
  child: ChildProcessWithoutNullStreams;
  output: ReturnType<typeof collect>;
  base: string;
}> {
  const port = await findFreePort();
  const child = startMain({ PORT: String(port), ...env });
  const output = collect(child);
  const base = `http://127.0.0.1:${port}`;
  await untilHealthy(base, 20_000, 100);
  return { child, output, base };
}

/** Waits until the server at `base` answers /healthz with 200. */
async function untilHealthy(base: string, timeout: number, interval: number): Promise<void> {
  await expect
    .poll(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.status, { timeout, interval })
    .toBe(200);
}

describe('start-up with a bad configuration', () => {
  it('exits 1 with one line per problem, naming each key', async () => {
    const configPath = writeConfigFile(
      'server:\n  body_limit_bytes: "big"\n  colour: blue\ntimeouts:\n  upstream_idle_ms: -5\n',
    );
    const child = startMain({
      CTXGATE_CONFIG: configPath,
      PORT: 'eighty',
      LOG_LEVEL: 'loud',
      UPSTREAM_API_KEY: 'sk-secret-value',
    });
    const output = collect(child);
    expect(await output.exit).toBe(1);
    const lines = output.stderr().trim().split('\n');
    expect(lines).toEqual([
      `ctxgate: configuration error: ${configPath}: server.body_limit_bytes: Invalid input: expected number, received string`,
      `ctxgate: configuration error: ${configPath}: server.colour: unknown key`,
      `ctxgate: configuration error: ${configPath}: timeouts.upstream_idle_ms: Too small: expected number to be >0`,
      'ctxgate: configuration error: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
      'ctxgate: configuration error: GATEWAY_API_KEYS: required when an upstream key is configured (UPSTREAM_API_KEY)',
      'ctxgate: configuration error: PORT: must be an integer from 0 to 65535, got "eighty"',
    ]);
    expect(output.stderr()).not.toContain('sk-secret-value');
  });

  it('exits 1 when CTXGATE_CONFIG names a file that cannot be read', async () => {
    const child = startMain({ CTXGATE_CONFIG: '/nonexistent/ctxgate.yaml' });
    const output = collect(child);
    expect(await output.exit).toBe(1);
    expect(output.stderr().trim()).toBe(
      'ctxgate: configuration error: CTXGATE_CONFIG: cannot read /nonexistent/ctxgate.yaml: ENOENT',
    );
  });
});

describe('graceful shutdown on SIGTERM', () => {
  let fake: FakeUpstream;
  let upstreamUrl: string;
  beforeAll(async () => {
    fake = new FakeUpstream();
    upstreamUrl = await fake.start();
  });
  afterAll(() => fake.stop());

  it('finishes an in-flight stream, refuses new requests, then exits 0', async () => {
    const { child, output, base } = await startedMain({
      UPSTREAM_BASE_URL: upstreamUrl,
      CTXGATE_CONFIG: writeConfigFile('server:\n  shutdown_grace_ms: 10000\n'),
    });

    fake.enqueue({ content: 'a b c d e f g h i j', chunks: 10, chunkDelayMs: 150 });
    const streaming = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    });
    const reader = streaming.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    child.kill('SIGTERM');
    await expect
      .poll(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status ?? 'refused', {
        timeout: 5_000,
        interval: 50,
      })
      .not.toBe(200);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await output.exit).toBe(0);
    expect(output.stdout()).toContain('shutting down: draining in-flight requests');
  });

  it('writes each request line to stdout while it runs, and the last lines before it exits', async () => {
    const { child, output, base } = await startedMain({ UPSTREAM_BASE_URL: upstreamUrl });
    const requestIds = ['log-probe-1', 'log-probe-2', 'log-probe-3'];
    for (const requestId of requestIds) {
      const response = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': requestId },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(response.status).toBe(200);
      // A line a few hundred bytes long is on stdout within a moment, not when a buffer fills.
      await expect.poll(() => output.stdout(), { timeout: 2_000, interval: 20 }).toContain(`"${requestId}"`);
    }
    child.kill('SIGTERM');
    expect(await output.exit).toBe(0);
    const lines = output.lines();
    expect(lines.filter((line) => line.msg === 'request').map((line) => [line.reqId, line.status])).toEqual(
      requestIds.map((requestId) => [requestId, 200]),
    );
    // Logged right before process.exit: still written.
    expect(lines.at(-1)?.msg).toBe('stopped');
  });

  it('writes one start-up line: upstreams by name and host (never keys), auth mode, store and config file', async () => {
    const configPath = writeConfigFile('{}\n');
    const { child, output } = await startedMain({
      UPSTREAM_BASE_URL: upstreamUrl,
      UPSTREAM_API_KEY: 'sk-startup-secret-3f1',
      GATEWAY_API_KEYS: 'gk-startup-secret-9c2',
      CTXGATE_CONFIG: configPath,
    });
    child.kill('SIGTERM');
    expect(await output.exit).toBe(0);
    const lines = output.lines();
    const listening = lines.filter((line) => /listening/i.test(String(line.msg)));
    expect(listening).toHaveLength(1);
    expect(listening[0]).toMatchObject({
      msg: 'ctxgate listening',
      upstreams: [{ name: 'default', host: new URL(upstreamUrl).host, key: 'configured' }],
      auth: 'gateway_keys',
      store: 'memory',
      config: configPath,
    });
    expect(output.stdout()).not.toContain('startup-secret');
  });

  it('listens once Redis answers: a session request sent as the start-up line is written is served', async () => {
    const redis = await startRedisServer();
    const port = await findFreePort();
    const child = startMain({ PORT: String(port), UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: redis.url });
    const output = collect(child);
    try {
      await expect
        .poll(() => output.stdout().includes('ctxgate listening'), { timeout: 20_000, interval: 1 })
        .toBe(true);
      const answer = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-first',
          'x-session-id': 'first',
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(answer.status).toBe(200);
      expect(output.lines().find((line) => line.msg === 'ctxgate listening')).toMatchObject({
        store: 'standalone',
        storeReady: true,
      });
    } finally {
      child.kill('SIGTERM');
      await output.exit;
      await redis.stop();
    }
  });

  it('still starts when Redis cannot be reached, and serves requests without a session', async () => {
    const { child, output, base } = await startedMain({
      UPSTREAM_BASE_URL: upstreamUrl,
      REDIS_URL: `redis://127.0.0.1:${await findFreePort()}`,
    });
    try {
      const answer = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(answer.status).toBe(200);
      expect(output.stdout()).toMatch(/"msg":"ctxgate listening"/);
      expect(output.stdout()).toMatch(/"storeReady":false/);
    } finally {
      child.kill('SIGTERM');
      await output.exit;
    }
  });

  it('npm start forwards SIGTERM to the server (as a process manager sends it): it drains and exits', async () => {
    const port = await findFreePort();
    // npm itself, as a process manager runs it; `prestart` builds dist/ first when it is missing or stale.
    const npm = spawn('npm', ['start', '--silent'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: String(port),
        UPSTREAM_BASE_URL: upstreamUrl,
      },
      stdio: 'pipe',
    });
    const output = collect(npm);
    const base = `http://127.0.0.1:${port}`;
    await untilHealthy(base, 90_000, 200);
    npm.kill('SIGTERM');
    await output.exit;
    await expect
      .poll(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.status ?? 'gone', {
        timeout: 10_000,
        interval: 100,
      })
      .toBe('gone');
    expect(output.stdout()).toContain('shutting down: draining in-flight requests');
  }, 120_000);
});
