// Section "fuzz": what fuzzed requests cost the gateway (the fuzz test's arbitraries: chat, Responses,
// forwarded endpoints, the sessions API and spellings of all of them), one at a time, the gateway's
// CPU read from /proc around each (all its threads). Prints the percentiles, the highest, how many
// passed 200 ms, and the costliest requests with their status. Figures only.
import fc from 'fast-check';
import { FakeUpstream } from '../../test/helpers/fake-upstream.js';
import { forwardedAnswers, fuzzRequest, headers } from '../../test/helpers/fuzz-arbitraries.js';
import { rawRequest } from '../../test/helpers/raw-http.js';
import { startServerProcess } from '../../test/helpers/server-process.js';
import { writeConfigFile } from '../../test/helpers/start-gateway.js';
import { gatewayCommand, processCpuUs } from '../lib/load.js';

export async function fuzzSection(): Promise<void> {
  const runs = Number(process.env.BENCH_FUZZ_RUNS ?? '2000');
  const fake = new FakeUpstream({
    defaultWindow: 16_000,
    recordLimit: 10,
    tokenCounting: 'approximate',
    otherRoutes: forwardedAnswers,
  });
  const gateway = await startServerProcess(gatewayCommand(), {
    PORT: '0',
    UPSTREAM_BASE_URL: await fake.start(),
    CTXGATE_CONFIG: writeConfigFile('sessions:\n  anonymous_tenant: fuzz\n'),
    LOG_LEVEL: 'info',
    REDIS_URL: '',
    REDIS_CLUSTER_NODES: '',
  });
  try {
    const pid = gateway.child.pid as number;
    const port = Number(new URL(gateway.url).port);
    const samples = fc.sample(fc.tuple(fuzzRequest, headers, fc.boolean()), { numRuns: runs, seed: 42 });
    const costs: Array<{ ms: number; label: string }> = [];
    for (const [request, sent, withKey] of samples) {
      const before = processCpuUs(pid);
      const response = await rawRequest({
        port,
        method: request.method,
        target: request.target,
        headers: { ...sent, ...(withKey ? { authorization: 'Bearer sk-fuzz' } : {}) },
        ...(request.body === undefined ? {} : { body: request.body }),
      });
      costs.push({
        ms: (processCpuUs(pid) - before) / 1000,
        label: `${response.status} ${request.method} ${request.target} ${(request.body ?? '').length} bytes`,
      });
    }
    const sorted = [...costs].sort((a, b) => a.ms - b.ms);
    const at = (share: number) =>
      (sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]?.ms ?? 0).toFixed(0);
    console.log(`\n== fuzz: ${runs} fuzzed requests, gateway CPU per request (ms; /proc ticks are 10 ms) ==`);
    console.log(
      `p50 ${at(0.5)}  p99 ${at(0.99)}  highest ${sorted.at(-1)?.ms.toFixed(0)}  over 200 ms: ${costs.filter((cost) => cost.ms > 200).length}`,
    );
    for (const cost of sorted.slice(-5).reverse())
      console.log(`  ${cost.ms.toFixed(0).padStart(4)} ms  ${cost.label}`);
  } finally {
    await gateway.stop();
    await fake.stop();
  }
}
