// `npm run bench`: throughput and latency of ctxgate side by side with baselines measured in the same
// run, reported as ratios and percentiles. Nothing here asserts on time; it prints figures.
//
// Section "proxy": autocannon with 32 connections against (a) the fake upstream directly, (b) the floor
// (fastify + undici pass-through that parses and re-serializes the body) and (c) ctxgate, for a 2 KB
// non-streaming request and a 50-chunk streaming one; then sequential single-connection latency of
// (a) and (c) measured with hrtime, for ctxgate's added p50.
import { execFileSync } from 'node:child_process';
import autocannon from 'autocannon';
import { Pool, request } from 'undici';
import { FakeUpstream } from '../test/helpers/fake-upstream.js';
import { startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { memoryStoreSection, sseSection } from './sections/hardening.js';
import { fidelitySection } from './sections/fidelity.js';

const durationSeconds = Number(process.env.BENCH_DURATION_SECONDS ?? '8');
const rounds = Number(process.env.BENCH_ROUNDS ?? '3');
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? '5');
const connections = 32;
const tsx = [process.execPath, '--import', 'tsx'];

interface LoadResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

function chatBody(stream: boolean): string {
  const filler = 'The quick brown fox jumps over the lazy dog while the gateway counts every token. ';
  return JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: filler.repeat(24) },
    ],
    temperature: 0.2,
    stream,
  });
}

async function load(url: string, body: string, seconds: number): Promise<LoadResult> {
  const result = await autocannon({
    url: `${url}/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body,
    connections,
    duration: seconds,
  });
  return {
    rps: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Runs the targets in interleaved rounds (a b c a b c …) so drift on a shared machine hits all alike. */
async function compare(
  targets: ReadonlyArray<readonly [string, string]>,
  body: string,
): Promise<Map<string, LoadResult>> {
  const samples = new Map<string, LoadResult[]>(targets.map(([name]) => [name, []]));
  // Warm-up: JIT and connection pools. Short warm-ups were seen to favour whichever process was hot.
  for (const [, url] of targets) await load(url, body, warmupSeconds);
  for (let round = 0; round < rounds; round++) {
    for (const [name, url] of targets) samples.get(name)?.push(await load(url, body, durationSeconds));
  }
  const medians = new Map<string, LoadResult>();
  for (const [name, results] of samples) {
    medians.set(name, {
      rps: median(results.map((result) => result.rps)),
      p50Ms: median(results.map((result) => result.p50Ms)),
      p99Ms: median(results.map((result) => result.p99Ms)),
      non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
      errors: results.reduce((sum, result) => sum + result.errors, 0),
    });
  }
  return medians;
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

/** Sequential requests on one keep-alive connection, timed with hrtime: microsecond resolution. */
async function singleConnectionLatency(
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

function row(cells: Array<string | number>): string {
  return cells.map((cell, index) => String(cell).padEnd(index === 0 ? 42 : 12)).join('');
}

function wideRow(cells: Array<string | number>): string {
  return cells.map((cell, index) => String(cell).padEnd(index === 0 ? 28 : 22)).join('');
}

async function proxySection(): Promise<void> {
  const servers: ServerProcess[] = [];
  try {
    const words = Array.from({ length: 50 }, (_unused, index) => `word${index}`).join(' ');
    const fake = await startServerProcess([...tsx, 'bench/servers/fake-upstream-server.ts'], {
      FAKE_CONTENT: words,
      FAKE_CHUNKS: '50',
    });
    servers.push(fake);
    const floor = await startServerProcess([...tsx, 'bench/servers/floor-proxy.ts'], {
      UPSTREAM_BASE_URL: fake.url,
    });
    servers.push(floor);
    const gateway = await startServerProcess([process.execPath, 'dist/src/main.js'], {
      UPSTREAM_BASE_URL: fake.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: '',
    });
    servers.push(gateway);

    console.log(
      `\n== proxy: autocannon, ${connections} connections; median of ${rounds} interleaved ${durationSeconds} s runs after a ${warmupSeconds} s warm-up ==`,
    );

    const conversationBody = JSON.stringify({
      model: 'gpt-4o-mini',
      messages: benchConversation(600, 330),
      stream: false,
    });
    for (const [label, body] of [
      ['2 KB non-streaming', chatBody(false)],
      ['50-chunk streaming', chatBody(true)],
      [`${Math.round(conversationBody.length / 1024)} KB conversation, non-streaming`, conversationBody],
    ] as const) {
      console.log(`-- ${label}`);
      console.log(row(['target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors']));
      const results = await compare(
        [
          ['(a) fake upstream direct', fake.url],
          ['(b) floor: parse + re-serialize', floor.url],
          ['(c) ctxgate', gateway.url],
        ],
        body,
      );
      for (const [name, result] of results)
        console.log(
          row([name, result.rps.toFixed(0), result.p50Ms, result.p99Ms, result.non2xx, result.errors]),
        );
      const ratio =
        (results.get('(c) ctxgate')?.rps ?? 0) / (results.get('(b) floor: parse + re-serialize')?.rps ?? 1);
      console.log(
        `   ratio c/b req/s: ${ratio.toFixed(2)}  (target >= ${label.includes('conversation') ? '0.50' : '0.80'})`,
      );
    }

    const direct = await singleConnectionLatency(fake.url, chatBody(false), 3000);
    const viaGateway = await singleConnectionLatency(gateway.url, chatBody(false), 3000);
    console.log('\n== proxy: one connection, 3000 sequential 2 KB requests (hrtime) ==');
    console.log(row(['target', 'p50 us', 'p99 us']));
    console.log(row(['(a) fake upstream direct', direct.p50Us.toFixed(0), direct.p99Us.toFixed(0)]));
    console.log(row(['(c) ctxgate', viaGateway.p50Us.toFixed(0), viaGateway.p99Us.toFixed(0)]));
    console.log(
      `   ctxgate added p50: ${((viaGateway.p50Us - direct.p50Us) / 1000).toFixed(3)} ms  (target <= 1 ms)`,
    );
  } finally {
    for (const server of servers.reverse()) await server.stop();
  }
}

/**
 * How fast a client's abort reaches the upstream: the fake upstream (in this process, so it can
 * report when its connection closed) holds each request; the client aborts once the upstream has it.
 */
async function abortSection(): Promise<void> {
  const fake = new FakeUpstream({ recordLimit: 10, tokenCounting: 'approximate' });
  const upstreamUrl = await fake.start();
  const gateway = await startServerProcess([process.execPath, 'dist/src/main.js'], {
    UPSTREAM_BASE_URL: upstreamUrl,
    PORT: '0',
    LOG_LEVEL: 'info',
    REDIS_URL: '',
    REDIS_CLUSTER_NODES: '',
  });
  const latencies: Record<string, number[]> = {
    'before the first byte, non-streaming': [],
    'before the first byte, streaming': [],
    'mid-stream': [],
  };
  try {
    for (let index = 0; index < Number(process.env.BENCH_ABORTS ?? '60'); index++) {
      for (const phase of Object.keys(latencies)) {
        fake.requests.length = 0;
        const streaming = phase !== 'before the first byte, non-streaming';
        fake.enqueue(
          phase === 'mid-stream'
            ? { chunkDelayMs: 100, chunks: 100, content: 'x '.repeat(200) }
            : { delayBeforeHeadersMs: 10_000 },
        );
        const controller = new AbortController();
        const response = fetch(`${gateway.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'gpt-4o-mini',
            messages: [{ role: 'user', content: 'hi' }],
            stream: streaming,
          }),
          signal: controller.signal,
        });
        response.catch(() => undefined);
        if (phase === 'mid-stream') await (await response).body?.getReader().read();
        while (fake.requests[0] === undefined) await new Promise((resolve) => setTimeout(resolve, 1));
        const upstreamRequest = fake.requests[0];
        const abortedAt = performance.now();
        controller.abort();
        const closedAt = await upstreamRequest.closedEarly;
        latencies[phase]?.push(closedAt - abortedAt);
        if (process.env.BENCH_DEBUG) console.log(phase, closedAt - abortedAt);
      }
    }
  } finally {
    await gateway.stop();
    await fake.stop();
  }
  console.log('\n== abort: client abort to upstream connection closed, 60 aborts per phase ==');
  console.log(row(['phase', 'p50 ms', 'p99 ms', 'max ms']));
  for (const [phase, samples] of Object.entries(latencies)) {
    samples.sort((a, b) => a - b);
    console.log(
      row([
        phase,
        percentile(samples, 0.5).toFixed(2),
        percentile(samples, 0.99).toFixed(2),
        (samples.at(-1) ?? Number.NaN).toFixed(2),
      ]),
    );
  }
  console.log('   target: within 100 ms');
}

/**
 * A conversation of `count` messages, as a client would resend it: prose, identifiers, numbers and some
 * German and Japanese from a deterministic generator, so that the vocabulary is as varied as a real
 * conversation's (a few repeated phrases would make first-time counting unrealistically cheap).
 */
function benchConversation(count: number, charsPerMessage: number): Array<{ role: string; content: string }> {
  let seed = 42;
  const random = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const syllables = [
    'ka',
    'lo',
    'mi',
    'tren',
    'sto',
    'da',
    'vel',
    'qui',
    'ran',
    'po',
    'zu',
    'ber',
    'ex',
    'ion',
    'ter',
    'sha',
    'gr',
    'an',
  ];
  const common = [
    'the',
    'and',
    'deployment',
    'latency',
    'service',
    'queue',
    'error',
    'retry',
    'database',
    'migration',
    'we',
    'should',
    'check',
    'because',
    'über',
    'Datenbank',
    '設定',
    '確認',
    'タイムアウト',
  ];
  const word = (): string => {
    const roll = random();
    if (roll < 0.45) return common[Math.floor(random() * common.length)] as string;
    if (roll < 0.55) return String(Math.floor(random() * 100_000));
    if (roll < 0.62)
      return `${syllables[Math.floor(random() * syllables.length)]}_${syllables[Math.floor(random() * syllables.length)]}Id`;
    const length = 1 + Math.floor(random() * 3);
    return Array.from({ length }, () => syllables[Math.floor(random() * syllables.length)]).join('');
  };
  return Array.from({ length: count }, (_unused, index) => {
    let content = `Message ${index}:`;
    while (content.length < charsPerMessage) content += (random() < 0.08 ? '. ' : ' ') + word();
    return { role: index % 2 === 0 ? 'user' : 'assistant', content };
  });
}

/** Rendering a long conversation cold, then again (as the next request) with one more message. */
async function renderSection(): Promise<void> {
  const { renderContext } = await import('../src/context/render.js');
  const { createTiktokenTokenizers } = await import('../src/tokenizer/tiktoken-tokenizers.js');
  const { builtInPolicy } = await import('../src/config/policy-defaults.js');
  const tokenizers = createTiktokenTokenizers();
  const tokenizer = tokenizers.forEncoding('o200k_base');
  const conversation = benchConversation(2_000, 480);
  const render = (messages: Array<{ role: string; content: string }>) =>
    renderContext({
      messages,
      tokenizer,
      window: 128_000,
      outputReserve: 4_096,
      safetyMarginTokens: 6_400,
      policy: builtInPolicy,
    });
  // Each request parses its own body: fresh string objects, as the gateway sees them.
  const asRequest = (messages: unknown): Array<{ role: string; content: string }> =>
    JSON.parse(JSON.stringify(messages)) as Array<{ role: string; content: string }>;
  const time = (run: () => unknown): number => {
    const started = process.hrtime.bigint();
    run();
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  const first = asRequest(conversation);
  let totalTokens = 0;
  const coldMs = time(() => {
    const outcome = render(first);
    if (outcome.ok) totalTokens = outcome.report.historyBudget;
  });
  const fullTokens = (await import('../src/context/token-accounting.js')).countPromptTokens(
    first,
    undefined,
    tokenizer,
  );
  const warm: number[] = [];
  for (let index = 0; index < 20; index++) {
    const next = asRequest([
      ...conversation,
      { role: 'user', content: `One more question, number ${index}?` },
    ]);
    warm.push(time(() => render(next)));
  }
  warm.sort((a, b) => a - b);
  const warmP50 = percentile(warm, 0.5);
  console.log(
    `\n== render: 2,000 messages (${fullTokens} tokens) into a 128k window (history budget ${totalTokens}) ==`,
  );
  console.log(row(['run', 'ms']));
  console.log(row(['first (nothing cached)', coldMs.toFixed(1)]));
  console.log(row(['again + 1 message, p50 of 20', warmP50.toFixed(2)]));
  console.log(row(['again + 1 message, max of 20', (warm.at(-1) ?? Number.NaN).toFixed(2)]));
  console.log(`   speed-up: ${(coldMs / warmP50).toFixed(1)}x  (target >= 20x)`);
}

/** CPU to count 1 MB of each kind of text with a cold tokenizer (no cache, no memo). */
async function tokenizerSection(): Promise<void> {
  const { BpeCounter } = await import('../src/tokenizer/bpe-counter.js');
  const megabyte = 1_000_000;
  const fill = (unit: string): string => unit.repeat(Math.ceil(megabyte / unit.length)).slice(0, megabyte);
  const kinds: Record<string, string> = {
    english: fill('The committee reviewed the proposal in detail and asked for revised cost estimates. '),
    code: fill(
      'export async function load(path: string): Promise<Config> { return parse(await readFile(path, "utf8")); }\n',
    ),
    cjk: fill('会議では新しい提案について詳しく検討し、費用の見積もりを修正するよう求めました。'),
    emoji: fill('😀🎉👍🏽 👩‍💻 '),
    base64: Buffer.from(
      Array.from({ length: 750_000 }, (_unused, index) => (index * 7_919 + (index >> 3)) % 256),
    )
      .toString('base64')
      .slice(0, megabyte),
    'one repeated character': 'a'.repeat(megabyte),
  };
  console.log('\n== tokenizer: CPU to count 1 MB (1,000,000 characters) with a cold counter ==');
  console.log(row(['text', 'tokens', 'CPU ms']));
  for (const [kind, text] of Object.entries(kinds)) {
    const counter = new BpeCounter('o200k_base');
    const before = process.cpuUsage();
    const tokens = counter.count(text);
    const used = process.cpuUsage(before);
    console.log(row([kind, tokens, ((used.user + used.system) / 1000).toFixed(1)]));
  }
  console.log('   target: <= 200 ms each');
}

/** Sequential requests on one connection; the latencies after the first 30, sorted. */
async function timeRequests(
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
      await response.body.text();
      if (response.statusCode !== 200) throw new Error(`bench request answered ${response.statusCode}`);
      if (index >= 30) samples.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  } finally {
    await pool.close();
  }
  return samples.sort((a, b) => a - b);
}

/**
 * Session-mode cost as stored history grows
: sessions preloaded with 10, 1 000 and 10 000 messages in a
 * real redis-server, then one new message per request on one connection; p50 and p99 per request.
 */
async function sessionsSection(): Promise<void> {
  const { startRedisServer } = await import('../test/helpers/redis-server.js');
  const { createRedisConnection } = await import('../src/store/redis-client.js');
  const { createRedisSessionStore } = await import('../src/store/redis-session-store.js');
  const { createAuthenticator } = await import('../src/auth/authenticate.js');
  const redis = await startRedisServer();
  const servers: ServerProcess[] = [];
  const connection = createRedisConnection({ mode: 'standalone', url: redis.url });
  try {
    const fake = await startServerProcess([...tsx, 'bench/servers/fake-upstream-server.ts'], {
      FAKE_CONTENT: 'Noted.',
    });
    servers.push(fake);
    const gateway = await startServerProcess([process.execPath, 'dist/src/main.js'], {
      UPSTREAM_BASE_URL: fake.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: redis.url,
      REDIS_CLUSTER_NODES: '',
    });
    servers.push(gateway);
    while (connection.status !== 'ready') await new Promise((resolve) => setTimeout(resolve, 20));
    const store = createRedisSessionStore({
      redis: connection,
      limits: { maxActiveMessages: 10_000, minActiveMessages: 100, idleTtlSeconds: 3_600 },
    });
    const tenantId = createAuthenticator({ gatewayApiKeys: [], anonymousTenant: '' }).authenticate({
      authorization: 'Bearer sk-bench',
    }).tenantId;
    console.log(
      '\n== sessions: one new message per request on one connection, 3 interleaved rounds of 100 per size, 128k window (ms) ==',
    );
    console.log(
      wideRow([
        'stored (active) start -> end',
        'session p50/p99',
        'upstream alone',
        'overhead p50',
        'resend all p50/p99',
      ]),
    );

    const sizes = [10, 1_000, 10_000];
    const conversations = new Map(sizes.map((size) => [size, benchConversation(size, 200)]));
    // Each measured turn stores two messages; requests rotate over several sessions per size so that
    // the sizes stay close to what they are named (one 10 000-message session grows by 2.6% per round).
    const sessionsPerSize = (size: number): number => (size >= 10_000 ? 3 : 39);
    for (const size of sizes)
      for (let copy = 0; copy < sessionsPerSize(size); copy++) {
        const key = { tenantId, sessionId: `bench-${size}-${copy}` };
        const messages = conversations.get(size) ?? [];
        for (let start = 0; start < messages.length; start += 500) {
          const hold = await store.acquire(key, 60_000);
          if (hold === undefined) throw new Error('bench session is busy');
          const snapshot = await store.load(key);
          await store.commit(key, {
            hold,
            expectedVersion: snapshot.version,
            append: messages.slice(start, start + 500).map((message) => ({ message, tokens: 60 })),
            historyStart: 0,
            activeTokenLimit: 128_000,
          });
        }
      }
    const target = new URL(`${gateway.url}/chat/completions`);
    const upstreamTarget = new URL(`${fake.url}/chat/completions`);
    // What each session's next request sends upstream (POST /v1/context/render with the session),
    // timed against the fake provider directly: the upstream's own share of a session request.
    const rendered = new Map<number, unknown[]>();
    for (const size of sizes) {
      const response = await request(`${gateway.url}/context/render`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-bench',
          'x-session-id': `bench-${size}-0`,
        },
        body: JSON.stringify({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'Question 0: what changed?' }],
        }),
      });
      rendered.set(size, ((await response.body.json()) as { messages: unknown[] }).messages);
    }
    // Three interleaved rounds, so that the machine's noise falls on every size and baseline alike.
    const samples = new Map(
      sizes.map((size) => [size, { session: [] as number[], upstream: [] as number[] }]),
    );
    let question = 0;
    for (let round = 0; round < 3; round++) {
      for (const size of sizes) {
        const latencies = samples.get(size) ?? { session: [], upstream: [] };
        latencies.session.push(
          ...(await timeRequests(
            target,
            130,
            () => ({
              model: 'gpt-4o-mini',
              messages: [{ role: 'user', content: `Question ${question++}: what changed?` }],
            }),
            (index) => ({ 'x-session-id': `bench-${size}-${index % sessionsPerSize(size)}` }),
          )),
        );
        latencies.upstream.push(
          ...(await timeRequests(upstreamTarget, 130, () => ({
            model: 'gpt-4o-mini',
            messages: rendered.get(size),
          }))),
        );
      }
    }
    const p50s: number[] = [];
    const overheads: number[] = [];
    for (const size of sizes) {
      const latencies = samples.get(size) ?? { session: [], upstream: [] };
      const session = latencies.session.sort((a, b) => a - b);
      const upstream = latencies.upstream.sort((a, b) => a - b);
      // Second baseline: the client keeps the history itself and resends all of it, no session.
      const resend = await timeRequests(target, 130, (index) => ({
        model: 'gpt-4o-mini',
        messages: [
          ...(conversations.get(size) ?? []),
          { role: 'user', content: `Question ${index}: what changed?` },
        ],
      }));
      const overhead = percentile(session, 0.5) - percentile(upstream, 0.5);
      // Every measured turn stores two messages: the sessions grow while they are measured.
      const grown = await request(`${gateway.url}/sessions/bench-${size}-0`, {
        headers: { authorization: 'Bearer sk-bench' },
      });
      const { counts } = (await grown.body.json()) as { counts: { active: number; total: number } };
      p50s.push(percentile(session, 0.5));
      overheads.push(overhead);
      console.log(
        wideRow([
          `${size} -> ${counts.total} (${counts.active})`,
          `${percentile(session, 0.5).toFixed(2)} / ${percentile(session, 0.99).toFixed(2)}`,
          `${percentile(upstream, 0.5).toFixed(2)} / ${percentile(upstream, 0.99).toFixed(2)}`,
          overhead.toFixed(2),
          `${percentile(resend, 0.5).toFixed(2)} / ${percentile(resend, 0.99).toFixed(2)}`,
        ]),
      );
    }
    console.log(
      `   10 000-message / 10-message: session p50 ${((p50s[2] ?? 0) / (p50s[0] ?? 1)).toFixed(2)}, ` +
        `gateway overhead p50 ${((overheads[2] ?? 0) / (overheads[0] ?? 1)).toFixed(2)}  (target <= 2)`,
    );
  } finally {
    connection.disconnect();
    for (const server of servers.reverse()) await server.stop();
    await redis.stop();
  }
}

/**
 * Summarization's cost to the conversation (issue #6): the 300-turn, 8,192-token conversation of the
 * end-to-end test (a fact every 10 turns, then a question per fact) through the gateway process, with
 * summarization on and, as the baseline, off (a policy preset), whole conversations alternating for
 * three rounds; percentiles of every request's latency, the p99 ratio, and the facts answered.
 */
async function summarizationSection(): Promise<void> {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { startRedisServer } = await import('../test/helpers/redis-server.js');
  const window = 8_192;
  const factPattern = /^Fact \d+: the access code for vault \d+ is K\d+-\d+\.$/;
  const words = ['river', 'stone', 'lamp', 'green', 'window', 'quiet', 'harbor', 'paper', 'silver', 'field'];
  const filler = (count: number, offset: number): string =>
    Array.from({ length: count }, (_unused, index) => words[(index * 7 + offset) % words.length]).join(' ');
  const codeFor = (fact: number): string => `K${fact}-${((fact * 7_919 + 104_729) % 90_000) + 10_000}`;
  const textOf = (content: unknown): string => (typeof content === 'string' ? content : '');
  const fake = new FakeUpstream({
    windows: { 'small-model': window },
    extractiveSummaries: factPattern,
    recordLimit: 100,
    answer(messages) {
      const question = /What is the access code for vault (\d+)\?/.exec(textOf(messages.at(-1)?.content));
      if (question === null) return `Understood. ${filler(40, messages.length)}`;
      const fact = new RegExp(`access code for vault ${question[1]} is (K\\d+-\\d+)\\.`);
      for (const message of messages) {
        const found = fact.exec(textOf(message.content));
        if (found !== null) return `The access code is ${found[1]}.`;
      }
      return 'I do not know that code.';
    },
  });
  const redis = await startRedisServer();
  const servers: ServerProcess[] = [];
  try {
    const fakeUrl = await fake.start();
    const configPath = join(mkdtempSync(join(tmpdir(), 'ctxgate-bench-')), 'ctxgate.yaml');
    writeFileSync(
      configPath,
      "models:\n  - match: small-model\n    window: 8192\n    output_reserve: 512\npolicies:\n  nosummary:\n    summarization: 'off'\n",
    );
    const gateway = await startServerProcess([process.execPath, 'dist/src/main.js'], {
      UPSTREAM_BASE_URL: fakeUrl,
      PORT: '0',
      // info: the bench waits for the "ctxgate listening" line.
      LOG_LEVEL: 'info',

      REDIS_URL: redis.url,
      REDIS_CLUSTER_NODES: '',
      CTXGATE_CONFIG: configPath,
    });
    servers.push(gateway);
    const pool = new Pool(new URL(gateway.url).origin, { connections: 1 });
    const path = `${new URL(gateway.url).pathname}/chat/completions`;
    const conversation = async (
      sessionId: string,
      policy: string | undefined,
    ): Promise<{ latencies: number[]; answered: number; summaries: number }> => {
      const latencies: number[] = [];
      let answered = 0;
      let summaries = 0;
      const send = async (content: string): Promise<string> => {
        const started = process.hrtime.bigint();
        const response = await pool.request({
          method: 'POST',
          path,
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer sk-bench',
            'x-session-id': sessionId,
            ...(policy === undefined ? {} : { 'x-context-policy': policy }),
          },
          body: JSON.stringify({ model: 'small-model', messages: [{ role: 'user', content }] }),
        });
        const body = (await response.body.json()) as { choices: Array<{ message: { content: string } }> };
        latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
        if (response.statusCode !== 200 || response.headers['x-context-retries'] !== '0')
          throw new Error(
            `bench turn answered ${response.statusCode}, retries ${String(response.headers['x-context-retries'])}`,
          );
        if (response.headers['x-context-summary'] === 'used') summaries++;
        return body.choices[0]?.message.content ?? '';
      };
      for (let index = 0; index < 300; index++) {
        const fact = index % 10 === 5 ? (index - 5) / 10 + 1 : undefined;
        await send(
          fact === undefined
            ? filler(90, index)
            : `${filler(60, index)}\nFact ${fact}: the access code for vault ${fact} is ${codeFor(fact)}.\n${filler(30, index)}`,
        );
      }
      for (let fact = 1; fact <= 30; fact++) {
        if ((await send(`What is the access code for vault ${fact}?`)).includes(codeFor(fact))) answered++;
      }
      return { latencies, answered, summaries };
    };
    console.log(
      '\n== summarization: 300 turns + 30 questions, 8,192-token window, one connection, 3 alternating rounds (ms) ==',
    );
    console.log(wideRow(['summarization', 'p50 / p90 / p99', 'facts answered', 'summary sent']));
    const results = { on: [] as number[], off: [] as number[] };
    const answered = { on: 0, off: 0 };
    const sent = { on: 0, off: 0 };
    // A warm-up conversation of each kind first (JIT, pools, the tokenizer's caches).
    await conversation('bench-warm-on', undefined);
    await conversation('bench-warm-off', 'nosummary');
    for (let round = 0; round < 3; round++) {
      for (const mode of ['on', 'off'] as const) {
        const result = await conversation(`bench-${mode}-${round}`, mode === 'on' ? undefined : 'nosummary');
        results[mode].push(...result.latencies);
        answered[mode] += result.answered;
        sent[mode] += result.summaries;
      }
    }
    await pool.close();
    for (const mode of ['on', 'off'] as const) {
      const sorted = results[mode].sort((a, b) => a - b);
      console.log(
        wideRow([
          mode,
          `${percentile(sorted, 0.5).toFixed(2)} / ${percentile(sorted, 0.9).toFixed(2)} / ${percentile(sorted, 0.99).toFixed(2)}`,
          `${answered[mode]} / 90`,
          `${sent[mode]} of ${sorted.length} requests`,
        ]),
      );
    }
    const ratio = percentile(results.on, 0.99) / percentile(results.off, 0.99);
    const ratio50 = percentile(results.on, 0.5) / percentile(results.off, 0.5);
    console.log(`   on / off: p99 ${ratio.toFixed(2)} (target <= 1.2), p50 ${ratio50.toFixed(2)}`);
  } finally {
    for (const server of servers.reverse()) await server.stop();
    await fake.stop();
    await redis.stop();
  }
}

/**
 * What budgets cost a request: the same gateway build on the same Redis without budgets and with a
 * daily and a monthly hard budget (never reached), 2 KB non-streaming requests; autocannon throughput
 * (interleaved rounds) and one connection's sequential p50/p99. BENCH_BUDGETS_MEMORY=1 runs both
 * without Redis (in-process counters), which leaves the gateway's own share of the cost.
 */
async function budgetsSection(): Promise<void> {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { startRedisServer } = await import('../test/helpers/redis-server.js');
  const redis = await startRedisServer();
  const servers: ServerProcess[] = [];
  try {
    const fake = await startServerProcess([...tsx, 'bench/servers/fake-upstream-server.ts'], {
      FAKE_CONTENT: 'Noted.',
    });
    servers.push(fake);
    const configPath = join(mkdtempSync(join(tmpdir(), 'ctxgate-bench-')), 'ctxgate.yaml');
    writeFileSync(
      configPath,
      'budgets:\n  defaults:\n    credential_daily_tokens: { limit: 1000000000000, mode: hard }\n    credential_monthly_tokens: { limit: 1000000000000, mode: hard }\n',
    );
    const common = {
      UPSTREAM_BASE_URL: fake.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: process.env.BENCH_BUDGETS_MEMORY === '1' ? '' : redis.url,
      REDIS_CLUSTER_NODES: '',
    };
    const plain = await startServerProcess([process.execPath, 'dist/src/main.js'], common);
    servers.push(plain);
    const budgeted = await startServerProcess([process.execPath, 'dist/src/main.js'], {
      ...common,
      CTXGATE_CONFIG: configPath,
    });
    servers.push(budgeted);
    console.log(
      `\n== budgets: 2 KB non-streaming, ${connections} connections, median of ${rounds} interleaved ${durationSeconds} s runs ==`,
    );
    console.log(row(['target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors']));
    const results = await compare(
      [
        ['(a) no budgets', plain.url],
        ['(b) daily + monthly hard', budgeted.url],
      ],
      chatBody(false),
    );
    for (const [name, result] of results)
      console.log(
        row([name, result.rps.toFixed(0), result.p50Ms, result.p99Ms, result.non2xx, result.errors]),
      );
    const ratio =
      (results.get('(b) daily + monthly hard')?.rps ?? 0) / (results.get('(a) no budgets')?.rps ?? 1);
    console.log(`   ratio b/a req/s: ${ratio.toFixed(2)}`);
    // Interleaved rounds: the machine's drift falls on both alike; medians of the rounds' percentiles.
    const rounds50 = { without: [] as number[], with: [] as number[] };
    const rounds99 = { without: [] as number[], with: [] as number[] };
    for (let round = 0; round < 5; round++) {
      const a = await singleConnectionLatency(plain.url, chatBody(false), 1000);
      const b = await singleConnectionLatency(budgeted.url, chatBody(false), 1000);
      rounds50.without.push(a.p50Us);
      rounds99.without.push(a.p99Us);
      rounds50.with.push(b.p50Us);
      rounds99.with.push(b.p99Us);
    }
    const without = { p50Us: median(rounds50.without), p99Us: median(rounds99.without) };
    const withBudgets = { p50Us: median(rounds50.with), p99Us: median(rounds99.with) };
    console.log('-- one connection, 5 interleaved rounds of 1000 sequential requests (hrtime; medians)');
    console.log(row(['target', 'p50 us', 'p99 us']));
    console.log(row(['(a) no budgets', without.p50Us.toFixed(0), without.p99Us.toFixed(0)]));
    console.log(
      row(['(b) daily + monthly hard', withBudgets.p50Us.toFixed(0), withBudgets.p99Us.toFixed(0)]),
    );
    console.log(`   budgets added p50: ${((withBudgets.p50Us - without.p50Us) / 1000).toFixed(3)} ms`);
  } finally {
    for (const server of servers.reverse()) await server.stop();
    await redis.stop();
  }
}

const sections: Record<string, () => Promise<void>> = {
  budgets: budgetsSection,

  sessions: sessionsSection,
  summarization: summarizationSection,

  proxy: proxySection,
  abort: abortSection,
  render: renderSection,
  tokenizer: tokenizerSection,
  sse: sseSection,
  'memory-store': memoryStoreSection,
  fidelity: fidelitySection,
};

const selected = process.argv.slice(2);
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
  stdio: 'inherit',
});
for (const [name, section] of Object.entries(sections)) {
  if (selected.length === 0 || selected.includes(name)) await section();
}
