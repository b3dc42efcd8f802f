// Section "agents": CPU per request of an agent's request, the gateway beside a floor that parses,
// re-serializes and forwards the same body (bench/servers/floor-proxy.ts, with its access log line): a
// Claude Code request (bench/lib/bodies.ts claudeCodeBody: its system prompt, tools and a tool loop of
// BENCH_AGENTS_STEPS steps, 60) sent natively to a `kind: anthropic` upstream, which answers at once
// (bench/servers/fixed-anthropic-server.ts). Requests go two at a time; each round sends
// BENCH_AGENTS_REQUESTS (200) to every target in turn, after BENCH_AGENTS_WARMUP (400) each; CPU is
// the process's own (user + system, /proc), the median of BENCH_AGENTS_ROUNDS (5) rounds printed with
// every round. BENCH_GATEWAY_DIR adds another checkout's build as a third target, for a before/after in
// one run. Figures only.
import { Pool } from 'undici';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { writeConfigFile } from '../../test/helpers/start-gateway.js';
import { claudeCodeBody } from '../lib/bodies.js';
import { median, processCpuUs, row, startArguments, tsx } from '../lib/load.js';

const steps = Number(process.env.BENCH_AGENTS_STEPS ?? '60');
const warmup = Number(process.env.BENCH_AGENTS_WARMUP ?? '400');
const requests = Number(process.env.BENCH_AGENTS_REQUESTS ?? '200');
const rounds = Number(process.env.BENCH_AGENTS_ROUNDS ?? '5');
const inFlight = 2;

interface Target {
  name: string;
  server: ServerProcess;
  pool: Pool;
  cpu: number[];
}

/** `count` requests of `body` to `path` under the target's base URL: the target's CPU per request, in µs. */
async function cpuPerRequest(target: Target, path: string, body: string, count: number): Promise<number> {
  const pid = target.server.child.pid as number;
  const base = new URL(target.server.url).pathname;
  const before = processCpuUs(pid);
  let sent = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (sent++ < count) {
        const response = await target.pool.request({
          method: 'POST',
          path: `${base}${path}`,
          headers: {
            'content-type': 'application/json',
            'x-api-key': 'sk-ant-bench',
            'anthropic-version': '2023-06-01',
          },
          body,
        });
        const text = await response.body.text();
        if (response.statusCode !== 200)
          throw new Error(`${target.name}: ${response.statusCode} ${text.slice(0, 200)}`);
      }
    }),
  );
  return (processCpuUs(pid) - before) / count;
}

export async function agentsSection(): Promise<void> {
  const servers: ServerProcess[] = [];
  const targets: Target[] = [];
  try {
    const anthropic = await startServerProcess([...tsx, 'bench/servers/fixed-anthropic-server.ts'], {});
    servers.push(anthropic);
    const config = writeConfigFile(
      [
        'upstreams:',
        '  - name: anthropic',
        `    base_url: ${anthropic.url}`,
        '    kind: anthropic',
        '    models: ["claude-*"]',
        '',
      ].join('\n'),
    );
    const gatewayEnv = {
      CTXGATE_CONFIG: config,
      UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1',
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: '',
    };
    const inDirectory = (directory: string) => [
      '/bin/sh',
      '-c',
      'cd "$0" && exec "$@"',
      directory,
      process.execPath,
      ...startArguments(directory),
    ];
    const started: Array<[string, Promise<ServerProcess>]> = [
      [
        '(b2) floor + one access log line',
        startServerProcess([...tsx, 'bench/servers/floor-proxy.ts'], {
          UPSTREAM_BASE_URL: anthropic.url,
          FLOOR_LOG: '1',
        }),
      ],
      ['(c) ctxgate', startServerProcess(inDirectory('.'), gatewayEnv)],
    ];
    const other = process.env.BENCH_GATEWAY_DIR;
    if (other !== undefined)
      started.push([`(d) ctxgate at ${other}`, startServerProcess(inDirectory(other), gatewayEnv)]);
    for (const [name, starting] of started) {
      const server = await starting;
      servers.push(server);
      targets.push({
        name,
        server,
        pool: new Pool(new URL(server.url).origin, { connections: inFlight }),
        cpu: [],
      });
    }
    const body = claudeCodeBody(steps, 'claude-sonnet-4-5');
    console.log(
      `\n== agents (node ${process.version}): CPU µs per request, median of ${rounds} rounds of ${requests} (${inFlight} in flight) after ${warmup} each ==`,
    );
    console.log(
      `-- Claude Code request natively to an anthropic upstream: ${Math.round(body.length / 1024)} KB, ${steps} tool steps`,
    );
    for (const target of targets) await cpuPerRequest(target, '/messages', body, warmup);
    for (let round = 0; round < rounds; round++)
      for (const target of targets) target.cpu.push(await cpuPerRequest(target, '/messages', body, requests));
    console.log(row(['target', 'CPU µs/req', 'floor ÷ it', 'each round']));
    const floor = median(targets[0]?.cpu ?? []);
    for (const target of targets)
      console.log(
        row([
          target.name,
          median(target.cpu).toFixed(0),
          (floor / median(target.cpu)).toFixed(2),
          target.cpu.map((cpu) => cpu.toFixed(0)).join(' '),
        ]),
      );
  } finally {
    for (const target of targets) await target.pool.close();
    for (const server of servers.reverse()) await server.stop();
  }
}
