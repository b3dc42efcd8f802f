// Section "abort": how fast a client's abort reaches the upstream.
import { FakeUpstream } from '../../test/helpers/fake-upstream.js';
import { startServerProcess } from '../../test/helpers/server-process.js';
import { gatewayCommand, percentile, row } from '../lib/load.js';

/**
 * How fast a client's abort reaches the upstream: the fake upstream (in this process, so it can
 * report when its connection closed) holds each request; the client aborts once the upstream has it.
 */
export async function abortSection(): Promise<void> {
  const fake = new FakeUpstream({ recordLimit: 10, tokenCounting: 'approximate' });
  const upstreamUrl = await fake.start();
  const gateway = await startServerProcess(gatewayCommand(), {
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
