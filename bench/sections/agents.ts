// Section "agents": CPU per request of an agent's request, the gateway beside a floor that parses,
// re-serializes and forwards the same body (bench/servers/floor-proxy.ts, with its access log line): a
// Claude Code request (bench/lib/bodies.ts claudeCodeBody: its system prompt, tools and a tool loop of
// BENCH_AGENTS_STEPS steps, 60) sent natively to a `kind: anthropic` upstream, which answers at once
// (bench/servers/fixed-anthropic-server.ts). Then the same agent in a session (`X-Session-Id`,
// `X-Session-History: delta`, a redis-server of the section's own): each request sends the system
// prompt, the tools and the result of the tool the previous answer called, BENCH_AGENTS_STEPS steps to
// a session; the gateways only (the floor keeps no session). Requests go two at a time; each round
// sends BENCH_AGENTS_REQUESTS (200) to every target in turn, after BENCH_AGENTS_WARMUP (400) each; CPU
// is the process's own (user + system, /proc), the median of BENCH_AGENTS_ROUNDS (5) rounds printed
// with every round, and in sessions Redis's too (the median). BENCH_GATEWAY_DIR adds another checkout's build as a third target, for a
// before/after in one run. Figures only.
import { Pool } from 'undici';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { writeConfigFile } from '../../test/helpers/start-gateway.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';
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
  /** The session case's rounds (gateways only), and Redis's CPU per request in each. */
  sessionCpu: number[];
  redisCpu: number[];
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

/** One agent as the session case drives it: its session, the step it is at, the tool call to answer. */
interface AgentSession {
  name: string;
  /** How many sessions it began. */
  sessions: number;
  step: number;
  toolUseId: string;
}

/**
 * `count` requests of `agents` in sessions (each `steps` steps to a session, then a new one): the
 * target's CPU per request, and the CPU of Redis (`redisPid`) per request, in µs.
 */
async function sessionCpuPerRequest(
  target: Target,
  agents: AgentSession[],
  bodies: { first: Record<string, unknown>; result: string },
  count: number,
  redisPid: number,
): Promise<{ gateway: number; redis: number }> {
  const pid = target.server.child.pid as number;
  const base = new URL(target.server.url).pathname;
  const before = processCpuUs(pid);
  const redisBefore = processCpuUs(redisPid);
  let sent = 0;
  await Promise.all(
    agents.map(async (agent) => {
      while (sent++ < count) {
        if (agent.step === steps) Object.assign(agent, { sessions: agent.sessions + 1, step: 0 });
        const body =
          agent.step === 0
            ? bodies.first
            : Object.assign({}, bodies.first, {
                messages: [
                  {
                    role: 'user',
                    content: [{ type: 'tool_result', tool_use_id: agent.toolUseId, content: bodies.result }],
                  },
                ],
              });
        const response = await target.pool.request({
          method: 'POST',
          path: `${base}/messages`,
          headers: {
            'content-type': 'application/json',
            'x-api-key': 'sk-ant-bench',
            'anthropic-version': '2023-06-01',
            'x-session-id': `${agent.name}-${agent.sessions}`,
            'x-session-history': 'delta',
            'x-bench-tool-use': '1',
          },
          body: JSON.stringify(body),
        });
        const text = await response.body.text();
        if (response.statusCode !== 200)
          throw new Error(`${target.name}: ${response.statusCode} ${text.slice(0, 200)}`);
        const answer = JSON.parse(text) as { content: Array<{ type: string; id?: string }> };
        agent.toolUseId = answer.content.find((block) => block.type === 'tool_use')?.id ?? '';
        agent.step++;
      }
    }),
  );
  return {
    gateway: (processCpuUs(pid) - before) / count,
    redis: (processCpuUs(redisPid) - redisBefore) / count,
  };
}

function printRows(
  targets: Target[],
  cpu: (target: Target) => number[],
  ratio: string,
  redis?: (target: Target) => number[],
): void {
  console.log(
    row(['target', 'CPU µs/req', ratio, ...(redis === undefined ? [] : ['Redis µs']), 'each round']),
  );
  const floor = median(cpu(targets[0] as Target));
  for (const target of targets)
    console.log(
      row([
        target.name,
        median(cpu(target)).toFixed(0),
        (floor / median(cpu(target))).toFixed(2),
        ...(redis === undefined ? [] : [median(redis(target)).toFixed(0)]),
        cpu(target)
          .map((value) => value.toFixed(0))
          .join(' '),
      ]),
    );
}

export async function agentsSection(): Promise<void> {
  const servers: ServerProcess[] = [];
  const targets: Target[] = [];
  const redis = await startRedisServer();
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
      REDIS_URL: redis.url,
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
        sessionCpu: [],
        redisCpu: [],
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
    printRows(targets, (target) => target.cpu, 'floor ÷ it');

    const gateways = targets.filter((target) => !target.name.includes('floor'));
    const first = JSON.parse(claudeCodeBody(0, 'claude-sonnet-4-5')) as Record<string, unknown>;
    const result = (
      JSON.parse(claudeCodeBody(1, 'claude-sonnet-4-5')) as {
        messages: Array<{ content: Array<{ content?: string }> }>;
      }
    ).messages.at(-1)?.content[0]?.content as string;
    console.log(
      `-- the same agent in sessions (X-Session-Id, delta; Redis): ${steps} steps to a session, each request its tool's result (${Math.round(result.length / 1024)} KB)`,
    );
    const agentsOf = new Map(
      gateways.map((target, index) => [
        target,
        Array.from({ length: inFlight }, (_unused, agent) => ({
          name: `bench-${index}-${agent}`,
          sessions: 0,
          step: 0,
          toolUseId: '',
        })),
      ]),
    );
    const bodies = { first, result };
    const redisPid = redis.process.pid as number;
    for (const target of gateways)
      await sessionCpuPerRequest(target, agentsOf.get(target) as AgentSession[], bodies, warmup, redisPid);
    for (let round = 0; round < rounds; round++)
      for (const target of gateways) {
        const cpu = await sessionCpuPerRequest(
          target,
          agentsOf.get(target) as AgentSession[],
          bodies,
          requests,
          redisPid,
        );
        target.sessionCpu.push(cpu.gateway);
        target.redisCpu.push(cpu.redis);
      }
    printRows(
      gateways,
      (target) => target.sessionCpu,
      '(c) ÷ it',
      (target) => target.redisCpu,
    );
  } finally {
    for (const target of targets) await target.pool.close();
    for (const server of servers.reverse()) await server.stop();
    await redis.stop();
  }
}
