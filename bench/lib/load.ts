// What every load section shares: autocannon runs in interleaved rounds, sequential single-connection
// timing with hrtime, percentiles and table rows, and the command that starts the gateway under test.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { Pool } from 'undici';

export const durationSeconds = Number(process.env.BENCH_DURATION_SECONDS ?? '8');
export const rounds = Number(process.env.BENCH_ROUNDS ?? '3');
export const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? '5');
/**
 * Load of the same case on the same target right before each measured window, where several cases take
 * turns (compareCases): a process that has just served a different case carries that case's state (the
 * 214 KB conversation leaves V8's young generation at its largest and its old one full of promoted
 * garbage), and the first seconds after it measured the change of case, not the case: a 2 KB request
 * cost 199–238 µs of the gateway's CPU after the 214 KB case and 168–212 after another 2 KB case, the
 * same with three seconds of the case before.
 */
export const caseWarmupSeconds = Number(process.env.BENCH_CASE_WARMUP_SECONDS ?? '2');
export const connections = 32;
export const tsx = [process.execPath, '--import', 'tsx'];

/** The node arguments `npm start` runs in a checkout (its package.json's `exec node …`), flags included. */
export function startArguments(directory: string): string[] {
  const manifest = JSON.parse(readFileSync(`${directory}/package.json`, 'utf8')) as {
    scripts: { start: string };
  };
  const match = /^(?:exec )?node (.+)$/.exec(manifest.scripts.start);
  if (match === null)
    throw new Error(`${directory}/package.json: start is not "exec node ...": ${manifest.scripts.start}`);
  return (match[1] as string).split(' ');
}

/** The node flags `npm start` runs the gateway with in a checkout (the heap settings), without its script. */
export function startFlags(directory: string): string[] {
  return startArguments(directory).filter((argument) => argument.startsWith('--'));
}

/**
 * The gateway's built entry point, started as `npm start` starts it. BENCH_GATEWAY_DIR points at another
 * checkout's build (after its `npm run build`) to measure an earlier version under exactly the same load.
 */
export function gatewayCommand(): string[] {
  const directory = process.env.BENCH_GATEWAY_DIR;
  if (directory === undefined) return [process.execPath, ...startArguments('.')];
  // Run from that checkout, so it reads its own config/ctxgate.yaml; exec keeps the PID the gateway's.
  return ['/bin/sh', '-c', 'cd "$0" && exec "$@"', directory, process.execPath, ...startArguments(directory)];
}

export interface LoadResult {
  rps: number;
  /** CPU time the target process spent per request (user + system), when its PID is known. */
  cpuUsPerRequest: number | undefined;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

/** A fixed body, or a generator: a new body for every request (so nothing can be cached by identity). */
export type BenchBody = string | (() => string);

/** A process's CPU time so far (user + system), in microseconds, from /proc (Linux). */
export function processCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksPerSecond = 100;
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / ticksPerSecond;
}

export async function load(
  url: string,
  body: BenchBody,
  seconds: number,
  pid?: number | undefined,
): Promise<LoadResult> {
  const cpuBefore = pid === undefined ? undefined : processCpuUs(pid);
  const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-bench' };
  const result = await autocannon({
    url: `${url}/chat/completions`,
    method: 'POST',
    headers,
    connections,
    duration: seconds,
    ...(typeof body === 'string'
      ? { body }
      : {
          requests: [
            {
              method: 'POST',
              headers,
              setupRequest: (request: autocannon.Request) => ({ ...request, body: body() }),
            },
          ],
        }),
  });
  const cpuUs = pid === undefined || cpuBefore === undefined ? undefined : processCpuUs(pid) - cpuBefore;
  return loadResult(result, cpuUs);
}

/** An autocannon run's figures, with the target's CPU over it (µs) spread over its requests. */
function loadResult(result: autocannon.Result, cpuUs: number | undefined): LoadResult {
  return {
    rps: result.requests.average,
    cpuUsPerRequest:
      cpuUs === undefined || result.requests.total === 0 ? undefined : cpuUs / result.requests.total,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/**
 * A fixed number of requests at `connections`, each body and its headers made for it (`index` counts
 * from 0), with the target process's CPU per request.
 */
export async function loadCount(
  url: string,
  count: number,
  requestFor: (index: number) => { body: string; headers?: Record<string, string> },
  pid: number,
): Promise<LoadResult> {
  const cpuBefore = processCpuUs(pid);
  let index = 0;
  const result = await autocannon({
    url: `${url}/chat/completions`,
    method: 'POST',
    connections,
    amount: count,
    requests: [
      {
        method: 'POST',
        setupRequest: (request: autocannon.Request) => {
          const { body, headers } = requestFor(index++);
          return {
            ...request,
            headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench', ...headers },
            body,
          };
        },
      },
    ],
  });
  return loadResult(result, processCpuUs(pid) - cpuBefore);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** A target: its name, its base URL and (to measure its CPU per request) its PID. */
export type BenchTarget = readonly [name: string, url: string, pid?: number | undefined];

export type ComparedResults = Map<string, LoadResult & { rounds: readonly LoadResult[] }>;

/** Runs the targets in interleaved rounds (a b c a b c …) so drift on a shared machine hits all alike. */
export async function compare(
  targets: ReadonlyArray<BenchTarget>,
  body: BenchBody,
): Promise<ComparedResults> {
  return (await compareCases(targets, [body]))[0] as ComparedResults;
}

/**
 * Several request bodies against the same targets, every body's runs interleaved with every other's in
 * each round (round 1: body 1 a b c, body 2 a b c …; round 2: …): a process that keeps warming up, or a
 * machine that drifts, moves every body's ratio alike instead of favouring the body measured last.
 */
export async function compareCases(
  targets: ReadonlyArray<BenchTarget>,
  bodies: readonly BenchBody[],
): Promise<ComparedResults[]> {
  const samples = bodies.map(() => new Map<string, LoadResult[]>(targets.map(([name]) => [name, []])));
  // Warm-up: JIT and connection pools. Short warm-ups were seen to favour whichever process was hot.
  for (const body of bodies) for (const [, url] of targets) await load(url, body, warmupSeconds);
  for (let round = 0; round < rounds; round++)
    for (const [index, body] of bodies.entries())
      for (const [name, url, pid] of targets) {
        if (bodies.length > 1 && caseWarmupSeconds > 0) await load(url, body, caseWarmupSeconds);
        samples[index]?.get(name)?.push(await load(url, body, durationSeconds, pid));
      }
  return samples.map((byTarget) => {
    const medians: ComparedResults = new Map();
    for (const [name, results] of byTarget) {
      const cpu = results.map((result) => result.cpuUsPerRequest).filter((value) => value !== undefined);
      medians.set(name, {
        rps: median(results.map((result) => result.rps)),
        cpuUsPerRequest: cpu.length === 0 ? undefined : median(cpu),
        p50Ms: median(results.map((result) => result.p50Ms)),
        p99Ms: median(results.map((result) => result.p99Ms)),
        non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
        errors: results.reduce((sum, result) => sum + result.errors, 0),
        rounds: results,
      });
    }
    return medians;
  });
}

export function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

/** Sequential requests on one keep-alive connection, timed with hrtime: microsecond resolution. */
export async function singleConnectionLatency(
  url: string,
  body: string,
  count: number,
): Promise<{ p50Us: number; p99Us: number }> {
  const target = new URL(`${url}/chat/completions`);
  const pool = new Pool(target.origin, { connections: 1 });
  const samples: number[] = [];
  try {
    for (let index = 0; index < count + 200; index++) {
      const started = process.hrtime.bigint();
      const response = await pool.request({
        method: 'POST',
        path: target.pathname,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
        body,
      });
      await response.body.text();
      if (index >= 200) samples.push(Number(process.hrtime.bigint() - started) / 1000);
    }
  } finally {
    await pool.close();
  }
  samples.sort((a, b) => a - b);
  return { p50Us: percentile(samples, 0.5), p99Us: percentile(samples, 0.99) };
}

/** Sequential requests on one connection; the latencies after the first 30, sorted. */
export async function timeRequests(
  target: URL,
  count: number,
  body: (index: number) => unknown,
  headersFor: (index: number) => Record<string, string> = () => ({}),
): Promise<number[]> {
  const pool = new Pool(target.origin, { connections: 1 });
  const samples: number[] = [];
  try {
    for (let index = 0; index < count; index++) {
      const payload = JSON.stringify(body(index));
      const started = process.hrtime.bigint();
      const response = await pool.request({
        method: 'POST',
        path: target.pathname,
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-bench',
          ...headersFor(index),
        },
        body: payload,
      });
      const text = await response.body.text();
      if (response.statusCode !== 200)
        throw new Error(`bench request answered ${response.statusCode}: ${text.slice(0, 300)}`);
      if (index >= 30) samples.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  } finally {
    await pool.close();
  }
  return samples.sort((a, b) => a - b);
}

export function row(cells: Array<string | number>): string {
  return cells.map((cell, index) => String(cell).padEnd(index === 0 ? 42 : 12)).join('');
}

export function wideRow(cells: Array<string | number>): string {
  return cells.map((cell, index) => String(cell).padEnd(index === 0 ? 32 : 22)).join('');
}
