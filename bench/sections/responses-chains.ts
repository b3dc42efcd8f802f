// Section "responses-chains": what continuing a Responses chain costs the gateway as the chain grows.
// Chains of 10 to 3,000 turns are built through a gateway on a real redis-server (one request per
// turn), then each is continued BENCH_CHAIN_ROUNDS times; the gateway's CPU per continuation is read
// from /proc (all its threads) and printed per length, for a model with a 128k window and one with
// 8k, with the ratio to the 10-turn chain. A chain is read only as far as the window reaches, so the
// cost grows until the window is full and stays flat after. Figures only.
import { Pool } from 'undici';
import { startRedisServer } from '../../test/helpers/redis-server.js';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { writeConfigFile } from '../../test/helpers/start-gateway.js';
import { gatewayCommand, processCpuUs, tsx } from '../lib/load.js';

const lengths = [10, 100, 300, 1_000, 3_000];
const sentence = 'The release notes list the fixed defects and the open questions for review.';

export async function responsesChainsSection(): Promise<void> {
  const rounds = Number(process.env.BENCH_CHAIN_ROUNDS ?? '20');
  const redis = await startRedisServer();
  const servers: ServerProcess[] = [];
  try {
    const fake = await startServerProcess([...tsx, 'bench/servers/fake-upstream-server.ts'], {
      FAKE_CONTENT: `Noted: ${sentence}`,
      FAKE_WINDOW: '200000',
    });
    servers.push(fake);
    const gateway = await startServerProcess(gatewayCommand(), {
      UPSTREAM_BASE_URL: fake.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: redis.url,
      REDIS_CLUSTER_NODES: '',
      CTXGATE_CONFIG: writeConfigFile(
        'models:\n  - { match: small-8k, window: 8192, output_reserve: 512 }\n',
      ),
    });
    servers.push(gateway);
    const pid = gateway.child.pid as number;
    const pool = new Pool(new URL(gateway.url).origin, { connections: 1 });
    const create = async (body: Record<string, unknown>): Promise<string> => {
      const response = await pool.request({
        method: 'POST',
        path: '/v1/responses',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
        body: JSON.stringify({ truncation: 'auto', ...body }),
      });
      const answer = (await response.body.json()) as { id?: string; error?: unknown };
      if (response.statusCode !== 200 || answer.id === undefined)
        throw new Error(`status ${response.statusCode}: ${JSON.stringify(answer).slice(0, 200)}`);
      return answer.id;
    };
    console.log(
      `\n== responses-chains: gateway CPU per continuation of a chain (ms, mean of ${rounds}; ratio to 10 turns) ==`,
    );
    for (const model of ['gpt-4o-mini', 'small-8k']) {
      const row: string[] = [];
      let base: number | undefined;
      let last: string | undefined;
      let built = 0;
      for (const length of lengths) {
        for (; built < length; built++)
          last = await create({
            model,
            input: `Turn ${built}: ${sentence}`,
            ...(last === undefined ? {} : { previous_response_id: last }),
          });
        // Warmed, then the CPU of all rounds together over their number: /proc counts in 10 ms ticks.
        for (let round = 0; round < 2; round++)
          await create({ model, input: 'And now?', previous_response_id: last, store: false });
        const before = processCpuUs(pid);
        for (let round = 0; round < rounds; round++)
          await create({ model, input: 'And now?', previous_response_id: last, store: false });
        const cost = (processCpuUs(pid) - before) / 1000 / rounds;
        base ??= cost;
        row.push(`${length}: ${cost.toFixed(1)} (${(cost / Math.max(base, 0.01)).toFixed(1)}x)`);
      }
      console.log(`${model.padEnd(12)} ${row.join('   ')}`);
    }
    await pool.close();
  } finally {
    for (const server of servers.reverse()) await server.stop();
    await redis.stop();
  }
}
