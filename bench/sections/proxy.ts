// Section "proxy": the gateway's throughput against a parse-and-forward floor (fastify + undici that
// parses the body, re-serializes it and relays the answer), in one run, interleaved rounds: a 2 KB
// request for a known model, the same for a model name the gateway has no tokenizer for (its estimate
// is calibrated from the upstream's usage), 2 KB requests that are all different (the gateway counts
// every one), a 50-chunk stream and a 200 KB conversation; then one connection's sequential latency,
// for the gateway's added p50 beside the logging floor's. BENCH_GATEWAY_DIR measures another checkout's
// build under the same load.
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { benchConversation, chatBody, uniqueChatBodies } from '../lib/bodies.js';
import {
  caseWarmupSeconds,
  compareCases,
  connections,
  durationSeconds,
  gatewayCommand,
  median,
  row,
  rounds,
  singleConnectionLatency,
  tsx,
  warmupSeconds,
  type BenchBody,
  type LoadResult,
} from '../lib/load.js';

const floorName = '(b) floor: parse + re-serialize';
const loggingFloorName = '(b2) floor + one access log line';
const gatewayName = '(c) ctxgate';

/** The fake provider of the proxy cases: 50 words, streamed in 50 chunks when asked to stream. */
export function startProxyUpstream(): Promise<ServerProcess> {
  const words = Array.from({ length: 50 }, (_unused, index) => `word${index}`).join(' ');
  return startServerProcess([...tsx, 'bench/servers/fake-upstream-server.ts'], {
    FAKE_CONTENT: words,
    FAKE_CHUNKS: '50',
  });
}

export async function proxySection(): Promise<void> {
  const servers: ServerProcess[] = [];
  try {
    const fake = await startProxyUpstream();
    servers.push(fake);
    const floor = await startServerProcess([...tsx, 'bench/servers/floor-proxy.ts'], {
      UPSTREAM_BASE_URL: fake.url,
    });
    servers.push(floor);
    const loggingFloor = await startServerProcess([...tsx, 'bench/servers/floor-proxy.ts'], {
      UPSTREAM_BASE_URL: fake.url,
      FLOOR_LOG: '1',
    });
    servers.push(loggingFloor);
    const gateway = await startServerProcess(gatewayCommand(), {
      UPSTREAM_BASE_URL: fake.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: '',
    });
    servers.push(gateway);

    console.log(
      `\n== proxy (node ${process.version}): autocannon, ${connections} connections; median of ${rounds} rounds, each running every case on every target for ${durationSeconds} s (after ${caseWarmupSeconds} s of the same case), after a ${warmupSeconds} s warm-up of each ==`,
    );
    const conversationBody = JSON.stringify({
      model: 'gpt-4o-mini',
      messages: benchConversation(600, 330),
      stream: false,
    });
    const cases: Array<{ label: string; body: BenchBody; target: number | undefined }> = [
      { label: '2 KB, known model (gpt-4o-mini)', body: chatBody(false), target: 0.85 },
      { label: '2 KB, unknown model (acme-large-2)', body: chatBody(false, 'acme-large-2'), target: 0.85 },
      { label: '2 KB, every body new (counted each time)', body: uniqueChatBodies(), target: 0.85 },
      { label: '50-chunk streaming', body: chatBody(true), target: undefined },
      {
        label: `${Math.round(conversationBody.length / 1024)} KB conversation`,
        body: conversationBody,
        target: 0.9,
      },
    ];
    const summary: string[] = [];
    // Every case in every round: the rows share the machine's drift and the processes' warming alike.
    const compared = await compareCases(
      [
        ['(a) fake upstream direct', fake.url],
        [floorName, floor.url, floor.child.pid],
        [loggingFloorName, loggingFloor.url, loggingFloor.child.pid],
        [gatewayName, gateway.url, gateway.child.pid],
      ],
      cases.map((entry) => entry.body),
    );
    for (const [index, { label, target }] of cases.entries()) {
      console.log(`-- ${label}`);
      console.log(row(['target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'CPU us/req']));
      const results = compared[index] as (typeof compared)[number];
      for (const [name, result] of results)
        console.log(
          row([
            name,
            result.rps.toFixed(0),
            result.p50Ms,
            result.p99Ms,
            result.non2xx,
            result.errors,
            result.cpuUsPerRequest?.toFixed(0) ?? '-',
          ]),
        );
      const ratio = (results.get(gatewayName)?.rps ?? 0) / (results.get(floorName)?.rps ?? 1);
      const loggedRatio = (results.get(gatewayName)?.rps ?? 0) / (results.get(loggingFloorName)?.rps ?? 1);
      // What a request costs each process: the throughput ratio each would reach on a core of its own.
      // The load generator shares the cores: where it is the bottleneck (a new body built for every
      // request), requests per second bunch together and only the CPU ratios tell the processes apart.
      const gatewayCpu = results.get(gatewayName)?.cpuUsPerRequest ?? 1;
      const cpuRatio = (results.get(floorName)?.cpuUsPerRequest ?? 0) / gatewayCpu;
      const loggedCpuRatio = (results.get(loggingFloorName)?.cpuUsPerRequest ?? 0) / gatewayCpu;
      const goal = target === undefined ? '' : `  (target >= ${target.toFixed(2)})`;
      console.log(
        `   ratio c/b2 req/s: ${loggedRatio.toFixed(2)}${goal}; c/b: ${ratio.toFixed(2)}; CPU per request b2/c: ${loggedCpuRatio.toFixed(2)}, b/c: ${cpuRatio.toFixed(2)}`,
      );
      // Each round's ratio of neighbours in time: drift of a shared machine between rounds cancels out, so
      // the spread says how far one run's medians can be trusted.
      const perRound = (ratio: (gateway: LoadResult, floor: LoadResult) => number) =>
        (results.get(gatewayName)?.rounds ?? [])
          .map((gateway, index) => {
            const floorRound = results.get(loggingFloorName)?.rounds[index];
            return floorRound === undefined ? '-' : ratio(gateway, floorRound).toFixed(2);
          })
          .join(' ');
      console.log(
        `   each round, c/b2 req/s: ${perRound((c, b2) => c.rps / b2.rps)}; b2/c CPU: ${perRound((c, b2) => (b2.cpuUsPerRequest ?? 0) / (c.cpuUsPerRequest ?? 1))}`,
      );
      summary.push(
        row([
          label,
          loggedRatio.toFixed(2),
          ratio.toFixed(2),
          loggedCpuRatio.toFixed(2),
          cpuRatio.toFixed(2),
          target === undefined ? '-' : `>= ${target.toFixed(2)}`,
        ]),
      );
    }

    // Interleaved rounds of sequential requests: medians of each round's percentiles. The logging floor
    // says what one more process on the way costs any proxy on this machine (two loopback hops, a
    // process woken twice): where waking a process is slow, most of the added p50 is that.
    const directP50: number[] = [];
    const floorP50: number[] = [];
    const floorP99: number[] = [];
    const gatewayP50: number[] = [];
    const gatewayP99: number[] = [];
    for (let round = 0; round < 5; round++) {
      directP50.push((await singleConnectionLatency(fake.url, chatBody(false), 1000)).p50Us);
      const viaFloor = await singleConnectionLatency(loggingFloor.url, chatBody(false), 1000);
      floorP50.push(viaFloor.p50Us);
      floorP99.push(viaFloor.p99Us);
      const via = await singleConnectionLatency(gateway.url, chatBody(false), 1000);
      gatewayP50.push(via.p50Us);
      gatewayP99.push(via.p99Us);
    }
    console.log(
      '\n== proxy: one connection, 5 interleaved rounds of 1000 sequential 2 KB requests (hrtime; medians) ==',
    );
    console.log(row(['target', 'p50 us', 'p99 us']));
    console.log(row(['(a) fake upstream direct', median(directP50).toFixed(0), '']));
    console.log(row([loggingFloorName, median(floorP50).toFixed(0), median(floorP99).toFixed(0)]));
    console.log(row([gatewayName, median(gatewayP50).toFixed(0), median(gatewayP99).toFixed(0)]));
    const addedMs = (median(gatewayP50) - median(directP50)) / 1000;
    const floorAddedMs = (median(floorP50) - median(directP50)) / 1000;
    console.log(
      `   ctxgate added p50: ${addedMs.toFixed(3)} ms  (target <= 0.5 ms); the logging floor added ${floorAddedMs.toFixed(3)} ms, ctxgate beyond it ${(addedMs - floorAddedMs).toFixed(3)} ms`,
    );
    console.log('\n== proxy: ratios to the floor ==');
    console.log(row(['request', 'c/b2 req/s', 'c/b req/s', 'b2/c CPU', 'b/c CPU', 'target (c/b2)']));
    for (const line of summary) console.log(line);
    console.log(row(['added single-connection p50 (ms)', addedMs.toFixed(3), '', '', '', '<= 0.5']));
    console.log(row(['  the logging floor added (ms)', floorAddedMs.toFixed(3), '', '', '', '-']));
  } finally {
    for (const server of servers.reverse()) await server.stop();
  }
}
