// Section "responses-chains": what continuing a Responses chain costs the gateway as the chain grows.
// Chains of 10 to 3,000 turns are built through a gateway on a real redis-server (one request per
// turn), then each is continued BENCH_CHAIN_ROUNDS times; the gateway's CPU per continuation is read
// from /proc (all its threads) and printed per length, for a model with a 128k window and one with
// 8k, with the ratio to the 10-turn chain, and for chains of an agent's 1 KB turns (up to 300). A chain
// is read only as far as the window reaches, so the cost grows until the window is full and stays flat
// after. Then what Redis holds per stored turn of an
// agent (a tool call, the file it read, a question in a text part), against the bytes of its texts.
// Figures only.
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { prose } from '../../test/helpers/text.js';
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
    // One sentence a turn, on a 128k and an 8k window; then an agent's turns: a question of about 1 KB in a
    // text part, with the accents and typographic quotes real text has (records long enough for each
    // message to be sent in the bytes Redis holds, response-store.ts).
    const rows = [
      {
        label: 'gpt-4o-mini',
        model: 'gpt-4o-mini',
        input: (turn: number): unknown => `Turn ${turn}: ${sentence}`,
        lengths,
      },
      {
        label: 'small-8k',
        model: 'small-8k',
        input: (turn: number): unknown => `Turn ${turn}: ${sentence}`,
        lengths,
      },
      {
        label: '1 KB turns',
        model: 'gpt-4o-mini',
        input: (turn: number): unknown => [
          {
            role: 'user',
            content: [{ type: 'input_text', text: `Turn ${turn}: the “café” module — ${prose(220, turn)}` }],
          },
        ],
        lengths: lengths.filter((length) => length <= 300),
      },
    ];
    for (const { label, model, input, lengths: rowLengths } of rows) {
      const row: string[] = [];
      let base: number | undefined;
      let last: string | undefined;
      let built = 0;
      for (const length of rowLengths) {
        for (; built < length; built++)
          last = await create({
            model,
            input: input(built),
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
      console.log(`${label.padEnd(12)} ${row.join('   ')}`);
    }
    await storedTurnBytes(redis.url, create);
    await pool.close();
  } finally {
    for (const server of servers.reverse()) await server.stop();
    await redis.stop();
  }
}

/**
 * Redis's own count (MEMORY USAGE) of the keys of 30 stored agent turns, per turn, beside the bytes of
 * the texts each turn holds: the file a tool read (~3 KB), the question (~1 KB) and the answer.
 */
async function storedTurnBytes(
  redisUrl: string,
  create: (body: Record<string, unknown>) => Promise<string>,
): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    const turns = 30;
    let previous: string | undefined;
    let held = 0;
    let texts = 0;
    for (let turn = 0; turn < turns; turn++) {
      const file = `// src/module-${turn}.ts\n${prose(700, turn)}`;
      const question = `Turn ${turn}: ${prose(230, turns + turn)}`;
      const input = [
        {
          type: 'function_call',
          call_id: `call_${turn}`,
          name: 'read_file',
          arguments: '{"path":"src/a.ts"}',
        },
        { type: 'function_call_output', call_id: `call_${turn}`, output: file },
        { role: 'user', content: [{ type: 'input_text', text: question }] },
      ];
      previous = await create({
        model: 'gpt-4o-mini',
        input,
        ...(previous === undefined ? {} : { previous_response_id: previous }),
      });
      texts +=
        Buffer.byteLength(file) + Buffer.byteLength(question) + Buffer.byteLength(`Noted: ${sentence}`);
      for (const key of await redis.keys(`ctxgate:resp:*:${previous}*`))
        held += Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    }
    console.log(
      `Redis per stored agent turn (${turns} turns): ${Math.round(held / turns)} bytes held for ${Math.round(texts / turns)} bytes of text (${(held / texts).toFixed(2)}x)`,
    );
  } finally {
    redis.disconnect();
  }
}
