// Section "summarization": what summarization costs and keeps.
import { Pool } from 'undici';
import { FakeUpstream } from '../../test/helpers/fake-upstream.js';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { gatewayCommand, percentile, wideRow } from '../lib/load.js';

/**
 * Summarization's cost to the conversation (issue #6): the 300-turn, 8,192-token conversation of the
 * end-to-end test (a fact every 10 turns, then a question per fact) through the gateway process, with
 * summarization on and, as the baseline, off (a policy preset), whole conversations alternating for
 * three rounds; percentiles of every request's latency, the p99 ratio, and the facts answered.
 */
export async function summarizationSection(): Promise<void> {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { startRedisServer } = await import('../../test/helpers/redis-server.js');
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
    const gateway = await startServerProcess(gatewayCommand(), {
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
    await factExtractionFigures();
  } finally {
    for (const server of servers.reverse()) await server.stop();
    await fake.stop();
    await redis.stop();
  }
}

/**
 * The CPU a summarization job spends finding the facts of 1 MB of covered text (it runs on the
 * requests' event loop): ordinary tool output beside output that is one long word — digits, colons, a
 * digit and dashes, a path — which patterns tried again at every position of the word once made cost
 * seconds. Median of 5 in this process.
 */
async function factExtractionFigures(): Promise<void> {
  const { identifierFacts } = await import('../../src/context/summary.js');
  const megabyte = 1_000_000;
  const line = 'Deployed build 2024-05-01 to db-staging-04 (port 5433) from src/app/main.ts; see K3-12345.\n';
  const texts: Array<[string, string]> = [
    ['ordinary tool output (baseline)', line.repeat(Math.ceil(megabyte / line.length)).slice(0, megabyte)],
    ['one word of digits', '1'.repeat(megabyte)],
    ['one word of colons', `${':'.repeat(megabyte)}x`],
    ['a digit and dashes', `1${'-'.repeat(megabyte)}`],
    ['one path', `src${'/a'.repeat(megabyte / 2)}.ts`],
  ];
  console.log('   facts of 1 MB of covered text, CPU ms (median of 5):');
  let baseline = 0;
  for (const [label, text] of texts) {
    const samples: number[] = [];
    for (let round = 0; round < 5; round++) {
      const before = process.cpuUsage();
      identifierFacts(text);
      const used = process.cpuUsage(before);
      samples.push((used.user + used.system) / 1000);
    }
    const cpu = samples.sort((a, b) => a - b)[2] as number;
    if (baseline === 0) baseline = cpu;
    console.log(
      `     ${label.padEnd(34)} ${cpu.toFixed(1).padStart(7)} ms  (${(cpu / baseline).toFixed(2)}x)`,
    );
  }
}
