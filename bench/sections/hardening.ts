// Bench sections of the security and robustness work (issue "Security and robustness"):
// - sse: CPU to relay one 16 MB event of a session stream (decode, assemble the reply, find event
//   boundaries, track completion), beside JSON.parse of the same event as the floor.
// - memory-store: the gateway without Redis, 100 000 one-turn sessions (BENCH_SESSIONS), its RSS every
//   tenth of the way with sessions.memory_mb = 64 beside the same run with no practical bound.
// Figures only; nothing here asserts on time.
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { EventBoundaryBuffer, StreamCompletionTracker } from '../../src/upstream/sse.js';
import { StreamReplyAssembler } from '../../src/upstream/reply-assembler.js';
import { startServerProcess } from '../../test/helpers/server-process.js';
import { gatewayCommand } from '../lib/load.js';

const tsx = [process.execPath, '--import', 'tsx'];

function cpuMsOf(run: () => void): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

export async function sseSection(): Promise<void> {
  const content = 'y'.repeat(16 * 1024 * 1024);
  const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;
  const bytes = Buffer.from(event);
  const chunkBytes = 64 * 1024;
  const relayRounds: number[] = [];
  const floorRounds: number[] = [];
  for (let round = 0; round < 5; round++) {
    relayRounds.push(
      cpuMsOf(() => {
        const assembler = new StreamReplyAssembler();
        const events = new EventBoundaryBuffer();
        const tracker = new StreamCompletionTracker();
        for (let start = 0; start < bytes.length; start += chunkBytes) {
          const chunk = bytes.subarray(start, start + chunkBytes);
          tracker.push(chunk);
          assembler.push(chunk);
          events.push(chunk);
        }
        const reply = assembler.end();
        if ((reply.message.content as string).length !== content.length || !tracker.isComplete())
          throw new Error('relay lost the event');
      }),
    );
    floorRounds.push(cpuMsOf(() => JSON.parse(event.slice(6, event.indexOf('\n')))));
  }
  console.log('\n== sse: one 16 MB event in 64 KB chunks, session relay path (CPU ms, median of 5) ==');
  console.log(`relay (decode + assemble + boundaries + completion): ${median(relayRounds).toFixed(1)} ms`);
  console.log(`floor (JSON.parse of the event alone):               ${median(floorRounds).toFixed(1)} ms`);
  console.log(`ratio relay / floor: ${(median(relayRounds) / median(floorRounds)).toFixed(2)}`);
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function sessionsRun(memoryMb: number, sessions: number): Promise<number[]> {
  const fake = await startServerProcess([...tsx, 'bench/servers/fake-upstream-server.ts'], {});
  const configPath = join(mkdtempSync(join(tmpdir(), 'ctxgate-bench-')), 'ctxgate.yaml');
  writeFileSync(configPath, `sessions:\n  memory_mb: ${memoryMb}\n`);
  const gateway = await startServerProcess(gatewayCommand(), {
    PORT: '0',
    UPSTREAM_BASE_URL: fake.url,
    CTXGATE_CONFIG: configPath,
    LOG_LEVEL: 'info',
    REDIS_URL: '',
  });
  const pid = gateway.child.pid as number;
  const url = new URL(gateway.url);
  const pool = new Pool(url.origin, { connections: 16 });
  const samples: number[] = [];
  const heapSamples: number[] = [];
  const text = 'The committee reviewed the proposal and asked for revised estimates. '.repeat(14);
  let next = 0;
  const step = Math.max(1, Math.floor(sessions / 10));
  try {
    const worker = async (): Promise<void> => {
      for (;;) {
        const index = next++;
        if (index >= sessions) return;
        const response = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer sk-bench',
            'x-session-id': `bench-${index}`,
          },
          body: JSON.stringify({
            model: 'gpt-4o-mini',
            messages: [{ role: 'user', content: `${index} ${text}` }],
          }),
        });
        await response.body.dump();
        if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
        if ((index + 1) % step === 0) {
          const metrics = await pool.request({ method: 'GET', path: '/metrics' });
          const text = await metrics.body.text();
          const heap = Number(/ctxgate_nodejs_heap_size_used_bytes (\d+)/.exec(text)?.[1] ?? 0) / 1024 / 1024;
          samples.push(rssMb(pid));
          heapSamples.push(heap);
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const metrics = await (await pool.request({ method: 'GET', path: '/metrics' })).body.text();
    const evicted = /ctxgate_sessions_evicted_total\{reason="memory"\} (\d+)/.exec(metrics)?.[1] ?? '0';
    console.log(
      `   memory_mb ${memoryMb}: heap used (MB, garbage included) ${heapSamples.map((value) => value.toFixed(0)).join(' ')}; sessions evicted ${evicted}, kept ${sessions - Number(evicted)}`,
    );
    return samples;
  } finally {
    await pool.close();
    await gateway.stop();
    await fake.stop();
  }
}

export async function memoryStoreSection(): Promise<void> {
  const sessions = Number(process.env.BENCH_SESSIONS ?? '100000');
  console.log(
    `\n== memory-store: ${sessions} one-turn sessions (~1 KB each) on a gateway without Redis; RSS (MB) every tenth ==`,
  );
  const bounded = await sessionsRun(64, sessions);
  const unbounded = await sessionsRun(100_000, sessions);
  console.log(`memory_mb 64:     ${bounded.map((value) => value.toFixed(0)).join(' ')}`);
  console.log(`memory_mb 100000: ${unbounded.map((value) => value.toFixed(0)).join(' ')}`);
  const growth = (values: number[]): number =>
    (values.at(-1) ?? 0) - (values[Math.floor(values.length / 2)] ?? 0);
  console.log(
    `RSS growth over the second half: bounded ${growth(bounded).toFixed(0)} MB, unbounded ${growth(unbounded).toFixed(0)} MB`,
  );
}
