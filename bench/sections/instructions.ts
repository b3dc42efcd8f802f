// Section "instructions": the CPU work per request of the gateway and of the logging floor, counted in
// machine instructions by valgrind's callgrind rather than timed, so the figure does not move with the
// machine's other work: the `proxy` section's ratios swing by a third between identical runs on a busy
// or nested VM, and a change worth a few percent cannot be seen there. Each target runs under
// `valgrind --tool=callgrind` (every thread counted: the collector's and the compilers' helpers
// too), is warmed with BENCH_INSTRUCTIONS_WARMUP requests shared out among the cases (20,000: V8 goes on
// optimizing functions called once per request for the first few thousand, Node 26's for longer than
// Node 20's, and a window that counts its compilers or the collection of the warm-up's garbage counts
// up to twice as much), then the cases take turns for BENCH_INSTRUCTIONS_ROUNDS rounds (5) of
// BENCH_INSTRUCTIONS_REQUESTS requests each (400; four at a time). Each case prints its lowest round — the request path's own work, the figure a
// change of code moves — and its median, with every round beside them: a round in which a full
// collection or a late compilation falls counts tens of thousands more per request. BENCH_GATEWAY_DIR
// adds another checkout's build as a third target, for a before/after in one run;
// BENCH_INSTRUCTIONS_TOP=N prints where the gateway's instructions beyond the floor's go, per function
// (V8's code named from `--perf-basic-prof`; BENCH_INSTRUCTIONS_PROFILE_CASE=n for the n-th case's
// instead of the first's). BENCH_INSTRUCTIONS_CASES=apis counts a 2 KB prompt streamed as Chat
// Completions and asked whole and streamed through the Responses and Messages APIs instead of the
// three 2 KB chat cases: the floor relays only the chat stream. Needs valgrind (Debian's package `valgrind`); takes about
// half an hour on two cores, the targets counted side by side. Figures only.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { dumpTotal, readPerfMap, selfCosts } from '../lib/callgrind.js';
import { chatBody, uniqueChatBodies } from '../lib/bodies.js';
import { median, startArguments } from '../lib/load.js';
import { startProxyUpstream } from './proxy.js';

const warmupRequests = Number(process.env.BENCH_INSTRUCTIONS_WARMUP ?? '20000');
const measuredRequests = Number(process.env.BENCH_INSTRUCTIONS_REQUESTS ?? '400');
const rounds = Number(process.env.BENCH_INSTRUCTIONS_ROUNDS ?? '5');
const profileTop = Number(process.env.BENCH_INSTRUCTIONS_TOP ?? '0');
const inFlight = 4;

interface Case {
  label: string;
  /** The gateway's path under its base URL; the floor relays only `/chat/completions`. */
  path: '/chat/completions' | '/responses' | '/messages';
  /** A new generator per target: every target is sent the same bodies in the same order. */
  bodies: () => () => string;
  /** The floor ÷ gateway this case must reach, where the floor can be sent it. */
  target: number | undefined;
}

const responsesBody = (stream: boolean): string =>
  JSON.stringify({
    model: 'gpt-4o-mini',
    instructions: 'You are a helpful assistant.',
    input: (JSON.parse(chatBody(false)) as { messages: Array<{ content: string }> }).messages[1]?.content,
    store: false,
    stream,
  });

const messagesBody = (stream: boolean): string => {
  const chat = JSON.parse(chatBody(false)) as { messages: Array<{ content: string }> };
  return JSON.stringify({
    model: 'gpt-4o-mini',
    max_tokens: 256,
    system: chat.messages[0]?.content,
    messages: [{ role: 'user', content: chat.messages[1]?.content }],
    stream,
  });
};

/**
 * BENCH_INSTRUCTIONS_CASES picks the set: `chat` (the default: the three 2 KB cases of `proxy`, against
 * the floor) or `apis` (the same 2 KB prompt streamed as Chat Completions, and asked whole and streamed
 * through the Responses and Messages APIs, each translated to and from the Chat Completions upstream:
 * the floor takes only the chat stream, so the others compare builds, with BENCH_GATEWAY_DIR).
 */
const caseSets: Record<string, Case[]> = {
  chat: [
    {
      label: '2 KB, known model (gpt-4o-mini)',
      path: '/chat/completions',
      bodies: () => fixed(chatBody(false)),
      target: 0.85,
    },
    {
      label: '2 KB, unknown model (acme-large-2)',
      path: '/chat/completions',
      bodies: () => fixed(chatBody(false, 'acme-large-2')),
      target: 0.85,
    },
    {
      label: '2 KB, every body new (counted each time)',
      path: '/chat/completions',
      bodies: () => uniqueChatBodies(),
      target: 0.85,
    },
  ],
  apis: [
    {
      label: '2 KB chat, 50-chunk stream',
      path: '/chat/completions',
      bodies: () => fixed(chatBody(true)),
      target: undefined,
    },
    {
      label: '2 KB Responses, whole',
      path: '/responses',
      bodies: () => fixed(responsesBody(false)),
      target: undefined,
    },
    {
      label: '2 KB Responses, 50-chunk stream',
      path: '/responses',
      bodies: () => fixed(responsesBody(true)),
      target: undefined,
    },
    {
      label: '2 KB Messages, whole',
      path: '/messages',
      bodies: () => fixed(messagesBody(false)),
      target: undefined,
    },
    {
      label: '2 KB Messages, 50-chunk stream',
      path: '/messages',
      bodies: () => fixed(messagesBody(true)),
      target: undefined,
    },
  ],
};

const caseSet = process.env.BENCH_INSTRUCTIONS_CASES ?? 'chat';
const cases: Case[] = caseSets[caseSet] ?? [];
/** BENCH_INSTRUCTIONS_PROFILE_CASE=n (1 by default): the case whose profile BENCH_INSTRUCTIONS_TOP prints. */
const profiled = cases[Number(process.env.BENCH_INSTRUCTIONS_PROFILE_CASE ?? '1') - 1];

/** A table row whose cells fit this section's labels and figures. */
function wideRow(cells: Array<string | number>): string {
  return cells.map((cell, index) => String(cell).padEnd(index === 0 ? 44 : 26)).join('');
}

function fixed(body: string): () => string {
  return () => body;
}

interface Target {
  name: string;
  /** The logging floor: sent only the Chat Completions cases. */
  floor: boolean;
  server: ServerProcess;
  outputDirectory: string;
}

interface Counted {
  /** Per case, the instructions per request of each round's window. */
  perRequest: number[][];
  profile: Map<string, number> | undefined;
}

function valgrind(outputDirectory: string): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    '--quiet',
    `--callgrind-out-file=${join(outputDirectory, 'callgrind.%p')}`,
    `--dump-instr=${profileTop > 0 ? 'yes' : 'no'}`,
  ];
}

function nodeFlags(): string[] {
  return profileTop > 0 ? ['--perf-basic-prof'] : [];
}

async function send(url: string, path: Case['path'], next: () => string, count: number): Promise<void> {
  const target = new URL(`${url}${path}`);
  const pool = new Pool(target.origin, { connections: inFlight });
  let sent = 0;
  const worker = async (): Promise<void> => {
    while (sent < count) {
      sent++;
      const response = await pool.request({
        method: 'POST',
        path: target.pathname,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
        body: next(),
      });
      const text = await response.body.text();
      if (response.statusCode !== 200)
        throw new Error(`${url}: ${response.statusCode} ${text.slice(0, 200)}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: inFlight }, worker));
  } finally {
    await pool.close();
  }
}

function control(pid: number, command: '-z' | '-d'): void {
  execFileSync('callgrind_control', [command, String(pid)], { stdio: 'ignore' });
}

/** The dump numbered `part`, once callgrind has written it whole (its totals line comes last). */
async function readDump(name: string, path: string): Promise<string> {
  for (let attempt = 0; attempt < 600; attempt++) {
    if (existsSync(path)) {
      const text = readFileSync(path, 'utf8');
      if (/^totals: \d+/m.test(text)) return text;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${name}: callgrind wrote no ${path}`);
}

/** The cases a target can be sent: the floor relays only Chat Completions. */
function casesFor(target: Target): Case[] {
  return target.floor ? cases.filter((entry) => entry.path === '/chat/completions') : cases;
}

async function count(target: Target): Promise<Counted> {
  const pid = target.server.child.pid as number;
  const own = casesFor(target);
  // The warm-up sends each case in turn (one send per case, requests shared out evenly).
  await Promise.all(
    own.map((entry) =>
      send(target.server.url, entry.path, entry.bodies(), Math.ceil(warmupRequests / own.length)),
    ),
  );
  const bodies = own.map((entry) => entry.bodies());
  const perRequest: number[][] = cases.map(() => []);
  const profiledDumps: Array<{ total: number; text: string }> = [];
  let part = 0;
  for (let round = 0; round < rounds; round++)
    for (const [index, next] of bodies.entries()) {
      const entry = own[index] as Case;
      control(pid, '-z');
      await send(target.server.url, entry.path, next, measuredRequests);
      control(pid, '-d');
      const path = join(target.outputDirectory, `callgrind.${pid}.${++part}`);
      const dump = await readDump(target.name, path);
      rmSync(path);
      const total = dumpTotal(dump);
      (perRequest[cases.indexOf(entry)] as number[]).push(total / measuredRequests);
      if (entry === profiled && profileTop > 0) profiledDumps.push({ total, text: dump });
    }
  // The profile of the profiled case's median round: not one where a full collection fell.
  profiledDumps.sort((left, right) => left.total - right.total);
  const median = profiledDumps[Math.floor(profiledDumps.length / 2)];
  const profile =
    median === undefined ? undefined : selfCosts(median.text, readPerfMap(`/tmp/perf-${pid}.map`));
  return { perRequest, profile };
}

/** V8's names carry the tier they were compiled for (*, ~, ^, +, '): one function under any of them. */
function withoutTier(name: string): string {
  return name.replace(/^JS (JS:|RegExp:)?[*~^+']?/, 'JS $1');
}

function printProfile(gateway: Target, counted: Counted, floor: Counted): void {
  const own = new Map<string, number>();
  const floors = new Map<string, number>();
  for (const [name, cost] of counted.profile ?? [])
    own.set(withoutTier(name), (own.get(withoutTier(name)) ?? 0) + cost);
  for (const [name, cost] of floor.profile ?? [])
    floors.set(withoutTier(name), (floors.get(withoutTier(name)) ?? 0) + cost);
  const names = new Set([...own.keys(), ...floors.keys()]);
  const rows = [...names]
    .map((name) => ({ name, own: own.get(name) ?? 0, floor: floors.get(name) ?? 0 }))
    .sort((left, right) => right.own - right.floor - (left.own - left.floor));
  const against =
    floor.profile === undefined
      ? 'its whole self cost (the floor is not sent this case)'
      : "where its instructions beyond the floor's go";
  console.log(
    `\n-- ${gateway.name}, ${profiled?.label}: ${against} (the case's median round, self cost per request, top ${profileTop})`,
  );
  console.log(wideRow(['beyond the floor', 'gateway', 'floor', 'function']));
  for (const entry of rows.slice(0, profileTop))
    console.log(
      wideRow([
        Math.round((entry.own - entry.floor) / measuredRequests),
        Math.round(entry.own / measuredRequests),
        Math.round(entry.floor / measuredRequests),
        entry.name.slice(0, 120),
      ]),
    );
}

export async function instructionsSection(): Promise<void> {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    console.log('\n== instructions: skipped, valgrind is not installed (apt-get install -y valgrind) ==');
    return;
  }
  if (cases.length === 0)
    throw new Error(
      `BENCH_INSTRUCTIONS_CASES=${caseSet}: not a set of cases (${Object.keys(caseSets).join(', ')})`,
    );
  const servers: ServerProcess[] = [];
  let targets: Target[] = [];
  const directories: string[] = [];
  try {
    const fake = await startProxyUpstream();
    servers.push(fake);
    const start = async (
      name: string,
      floor: boolean,
      command: (outputDirectory: string) => string[],
      env: Record<string, string>,
    ): Promise<Target> => {
      const outputDirectory = mkdtempSync(join(tmpdir(), 'ctxgate-callgrind-'));
      directories.push(outputDirectory);
      const server = await startServerProcess(command(outputDirectory), {
        UPSTREAM_BASE_URL: fake.url,
        ...env,
      });
      servers.push(server);
      return { name, floor, server, outputDirectory };
    };
    const gatewayEnv = { PORT: '0', LOG_LEVEL: 'info', REDIS_URL: '', REDIS_CLUSTER_NODES: '' };
    const inDirectory = (directory: string) => (outputDirectory: string) => [
      '/bin/sh',
      '-c',
      'cd "$0" && exec "$@"',
      directory,
      ...valgrind(outputDirectory),
      process.execPath,
      ...nodeFlags(),
      ...startArguments(directory),
    ];
    const other = process.env.BENCH_GATEWAY_DIR;
    targets = await Promise.all([
      start(
        '(b2) floor + one access log line',
        true,
        (outputDirectory) => [
          ...valgrind(outputDirectory),
          process.execPath,
          ...nodeFlags(),
          '--import',
          'tsx',
          'bench/servers/floor-proxy.ts',
        ],
        { FLOOR_LOG: '1' },
      ),
      start('(c) ctxgate', false, inDirectory('.'), gatewayEnv),
      ...(other === undefined
        ? []
        : [start(`(d) ctxgate at ${other}`, false, inDirectory(other), gatewayEnv)]),
    ]);
    console.log(
      `\n== instructions (node ${process.version}, callgrind): per request, lowest and median of ${rounds} rounds of ${measuredRequests} requests of each case (${inFlight} in flight), after ${warmupRequests} shared out among the cases ==`,
    );
    const counted = await Promise.all(targets.map((target) => count(target)));
    const floor = counted[0] as Counted;
    console.log(
      wideRow([
        'case',
        ...targets.map((target) => target.name),
        'floor ÷ ctxgate, lowest',
        'floor ÷ ctxgate, median',
        'target',
      ]),
    );
    for (const [index, entry] of cases.entries()) {
      const windows = counted.map((result) => result.perRequest[index] as number[]);
      const lowest = windows.map((values) => (values.length === 0 ? undefined : Math.min(...values)));
      const medians = windows.map((values) => (values.length === 0 ? undefined : median(values)));
      const ratios = (figures: Array<number | undefined>): string =>
        figures[0] === undefined
          ? '—'
          : figures
              .slice(1)
              .map((value) => ((figures[0] as number) / (value as number)).toFixed(3))
              .join(' / ');
      console.log(
        wideRow([
          entry.label,
          ...lowest.map((value, target) =>
            value === undefined ? '—' : `${Math.round(value)} (${Math.round(medians[target] as number)})`,
          ),
          ratios(lowest),
          ratios(medians),
          entry.target === undefined ? '—' : `>= ${entry.target}`,
        ]),
      );
      console.log(
        wideRow([
          '  each round (thousands)',
          ...windows.map((values) => values.map((value) => Math.round(value / 1000)).join(' ')),
        ]),
      );
    }
    if (profileTop > 0)
      for (const [index, target] of targets.entries())
        if (index > 0) printProfile(target, counted[index] as Counted, floor);
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
    for (const server of servers) rmSync(`/tmp/perf-${server.child.pid}.map`, { force: true });
  }
}
