// Section "budgets": what budgets cost a request.
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { chatBody } from '../lib/bodies.js';
import {
  compare,
  connections,
  durationSeconds,
  gatewayCommand,
  median,
  row,
  rounds,
  singleConnectionLatency,
  tsx,
} from '../lib/load.js';

/**
 * What budgets cost a request: the same gateway build on the same Redis without budgets and with a
 * daily and a monthly hard budget (never reached), 2 KB non-streaming requests; autocannon throughput
 * (interleaved rounds) and one connection's sequential p50/p99. BENCH_BUDGETS_MEMORY=1 runs both
 * without Redis (in-process counters), which leaves the gateway's own share of the cost.
 */
export async function budgetsSection(): Promise<void> {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { startRedisServer } = await import('../../test/helpers/redis-server.js');
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
    const plain = await startServerProcess(gatewayCommand(), common);
    servers.push(plain);
    const budgeted = await startServerProcess(gatewayCommand(), {
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
