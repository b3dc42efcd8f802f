// Section "sessions": session-mode cost as stored history grows.
import { request } from 'undici';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { benchConversation } from '../lib/bodies.js';
import { prose } from '../../test/helpers/text.js';
import {
  connections,
  gatewayCommand,
  loadCount,
  median,
  percentile,
  processCpuUs,
  timeRequests,
  tsx,
  wideRow,
} from '../lib/load.js';

/**
 * Session-mode cost as stored history grows: sessions preloaded with 10, 1 000 and 10 000 messages in a
 * real redis-server (with their token counts), then one new message per request on one connection; p50
 * and p99 per request, the upstream's own time for the prompt the session sends, and that prompt's size.
 * Then the gateway's CPU per session request under load, beside a stateless request of as many messages.
 */
export async function sessionsSection(): Promise<void> {
  const { startRedisServer } = await import('../../test/helpers/redis-server.js');
  const { createRedisConnection } = await import('../../src/store/redis-client.js');
  const { createRedisSessionStore } = await import('../../src/store/redis-session-store.js');
  const { createAuthenticator } = await import('../../src/auth/authenticate.js');
  const { createTiktokenTokenizers } = await import('../../src/tokenizer/tiktoken-tokenizers.js');
  const { countMessageTokens } = await import('../../src/context/token-accounting.js');
  const tokenizer = createTiktokenTokenizers({}).forEncoding('o200k_base');
  const redis = await startRedisServer();
  const servers: ServerProcess[] = [];
  const connection = createRedisConnection({ mode: 'standalone', url: redis.url });
  try {
    const fake = await startServerProcess([...tsx, 'bench/servers/fake-upstream-server.ts'], {
      FAKE_CONTENT: 'Noted.',
    });
    servers.push(fake);
    const gateway = await startServerProcess(gatewayCommand(), {
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
      '\n== sessions: one new message per request on one connection, warmed, 3 interleaved rounds of 130 per size, 128k window (ms) ==',
    );
    console.log(
      wideRow([
        'stored (active) start -> end ',
        'session p50/p99',
        'upstream alone',
        'overhead p50',
        'prompt sent',
        'resend all p50/p99',
        'gateway CPU us/req',
        'Redis us/req',
      ]),
    );

    // Stored messages, and the system prompt every request sends: none, or a coding agent's instructions
    // (5,000 tokens, 34 KB, as Codex and Claude Code send theirs with every request; the session stores it).
    const shapes = [
      { name: '10', stored: 10, system: undefined },
      { name: '1000', stored: 1_000, system: undefined },
      { name: '10000', stored: 10_000, system: undefined },
      { name: '10-agent', stored: 10, system: { role: 'system', content: prose(5_000, 7) } },
    ];
    const sizes = shapes.map((_shape, index) => index);
    const shapeOf = (size: number) => shapes[size] ?? (shapes[0] as (typeof shapes)[number]);
    const conversations = new Map(sizes.map((size) => [size, benchConversation(shapeOf(size).stored, 200)]));
    // Each measured turn stores two messages; requests rotate over several sessions per size so that
    // the sizes stay close to what they are named (one 10 000-message session grows by 2.6% per round).
    const sessionsPerSize = (size: number): number => (shapeOf(size).stored >= 10_000 ? 3 : 39);
    /** Stores `messages` (with their token counts) as a session, 500 to a commit. */
    type BenchMessage = { role: string; content: string };
    const preload = async (sessionId: string, messages: BenchMessage[], system?: BenchMessage) => {
      const key = { tenantId, sessionId };
      for (let start = 0; start < messages.length; start += 500) {
        const hold = await store.acquire(key, 60_000);
        if (hold === undefined) throw new Error('bench session is busy');
        const snapshot = await store.load(key);
        await store.commit(key, {
          hold,
          expectedVersion: snapshot.version,
          append: messages
            .slice(start, start + 500)
            .map((message) => ({ message, tokens: countMessageTokens(message, tokenizer) })),
          systemPrompt: system,
          historyStart: 0,
          activeTokenLimit: 128_000,
        });
      }
    };
    for (const size of sizes)
      for (let copy = 0; copy < sessionsPerSize(size); copy++)
        await preload(
          `bench-${shapeOf(size).name}-${copy}`,
          conversations.get(size) ?? [],
          shapeOf(size).system,
        );
    const target = new URL(`${gateway.url}/chat/completions`);
    const upstreamTarget = new URL(`${fake.url}/chat/completions`);
    const sessionHeaders = (size: number) => (index: number) => ({
      'x-session-id': `bench-${shapeOf(size).name}-${index % sessionsPerSize(size)}`,
    });
    let question = 0;
    const systemOf = (size: number) => {
      const system = shapeOf(size).system;
      return system === undefined ? [] : [system];
    };
    const systemLabel = (size: number): string => {
      const system = shapeOf(size).system;
      return system === undefined ? '' : ` + ${Math.round(system.content.length / 1024)} KB system`;
    };
    const nextQuestion = (size: number) => () => ({
      model: 'gpt-4o-mini',
      messages: [...systemOf(size), { role: 'user', content: `Question ${question++}: what changed?` }],
    });
    // What each session's next request sends upstream (POST /v1/context/render with the session),
    // timed against the fake provider directly: the upstream's own share of a session request.
    const renderedPrompt = async (size: number): Promise<unknown[]> => {
      const response = await request(`${gateway.url}/context/render`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-bench',
          'x-session-id': `bench-${shapeOf(size).name}-0`,
        },
        body: JSON.stringify({
          model: 'gpt-4o-mini',
          messages: [...systemOf(size), { role: 'user', content: 'Question 0: what changed?' }],
        }),
      });
      return ((await response.body.json()) as { messages: unknown[] }).messages;
    };
    // Warmed, as a gateway that has served for a while is: the session path run until the compiler has
    // optimized it, on sessions of their own (a hundred per block, so that they stay small) so that the
    // measured ones keep their sizes; each measured size's data then seen a few times; and the
    // summarization the preloaded sessions call for done, so that the prompt measured against the
    // provider alone is the one the session then sends. V8 optimizes a function after it has run so much
    // bytecode, and most of a session request's functions run once per request: its p50 falls until about
    // the 4,000th request (2.1 ms in the first thousand, 1.2 in the third, under 1 from the fifth on the
    // bench's machine), so six thousand, each thousand's p50 printed below the table. The rows measure
    // more than that plateau: each round serves every size in turn, and waits between them.
    const warming: number[] = [];
    for (let block = 0; block < 6; block++) {
      const latencies = await timeRequests(target, 1_000, nextQuestion(0), (index) => ({
        'x-session-id': `warm-${block}-${index % 100}`,
      }));
      warming.push(percentile(latencies, 0.5));
    }
    for (const size of sizes) {
      await timeRequests(target, 60, nextQuestion(size), sessionHeaders(size));
      const prompt = await renderedPrompt(size);
      await timeRequests(upstreamTarget, 150, () => ({ model: 'gpt-4o-mini', messages: prompt }));
    }
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const rendered = new Map<number, unknown[]>();
    for (const size of sizes) rendered.set(size, await renderedPrompt(size));
    // Scripts Redis ran, to count them per request: everything the gateway sends Redis on a session
    // request is a script (Redis counts the commands inside one as calls of their own, so these are the
    // round trips).
    // with Redis's own time in them (usec).
    const redisCalls = async (): Promise<{ calls: number; usec: number }> =>
      [
        ...(await connection.info('commandstats')).matchAll(
          /cmdstat_(?:evalsha|eval):calls=(\d+),usec=(\d+)/g,
        ),
      ].reduce((sum, match) => ({ calls: sum.calls + Number(match[1]), usec: sum.usec + Number(match[2]) }), {
        calls: 0,
        usec: 0,
      });
    const callsBefore = await redisCalls();
    let sessionRequests = 0;
    // Three interleaved rounds, so that the machine's noise falls on every size and baseline alike.
    const samples = new Map(
      sizes.map((size) => [size, { session: [] as number[], upstream: [] as number[] }]),
    );
    // The gateway's CPU per session request, summed over the rounds (the process's ticks are 10 ms: 390
    // requests of about 1 ms each make it good to a few percent); the same for resending all, below.
    const gatewayPid = gateway.child.pid as number;
    const sessionCpuUs = new Map(sizes.map((size) => [size, 0]));
    // Redis's own time in the scripts of those requests (the commands inside included): what one Redis,
    // shared by every replica, spends per session request.
    const sessionRedisUs = new Map(sizes.map((size) => [size, 0]));
    // One Redis round trip at one connection, from this process, in the same rounds: back to back, and
    // each after 3 ms without one, as a session request's come (the hold and read after the previous
    // request's write, the write after the provider's answer): what waking a process that slept costs here.
    const redisTrips = { busy: [] as number[], rested: [] as number[] };
    const ping = async (samples: number[]): Promise<void> => {
      const started = process.hrtime.bigint();
      await connection.ping();
      samples.push(Number(process.hrtime.bigint() - started) / 1e6);
    };
    for (let round = 0; round < 3; round++) {
      for (let trip = 0; trip < 130; trip++) await ping(redisTrips.busy);
      for (let trip = 0; trip < 130; trip++) {
        await new Promise((resolve) => setTimeout(resolve, 3));
        await ping(redisTrips.rested);
      }
      for (const size of sizes) {
        const latencies = samples.get(size) ?? { session: [], upstream: [] };
        const cpuBefore = processCpuUs(gatewayPid);
        const redisBefore = (await redisCalls()).usec;
        latencies.session.push(
          ...(await timeRequests(target, 130, nextQuestion(size), sessionHeaders(size))),
        );
        sessionCpuUs.set(size, (sessionCpuUs.get(size) ?? 0) + processCpuUs(gatewayPid) - cpuBefore);
        sessionRedisUs.set(size, (sessionRedisUs.get(size) ?? 0) + (await redisCalls()).usec - redisBefore);
        sessionRequests += 130;
        // The session has grown since: its prompt as it is now, against the provider alone.
        rendered.set(size, await renderedPrompt(size));
        latencies.upstream.push(
          ...(await timeRequests(upstreamTarget, 130, () => ({
            model: 'gpt-4o-mini',
            messages: rendered.get(size),
          }))),
        );
      }
    }
    // The rounds' other scripts: a load per rendered prompt.
    const callsAfter = await redisCalls();
    const perRequest = (callsAfter.calls - callsBefore.calls - sizes.length * 3) / sessionRequests;
    const p50s: number[] = [];
    const overheads: number[] = [];
    for (const size of sizes) {
      const latencies = samples.get(size) ?? { session: [], upstream: [] };
      const session = latencies.session.sort((a, b) => a - b);
      const upstream = latencies.upstream.sort((a, b) => a - b);
      // Second baseline: the client keeps the history itself and resends all of it, no session.
      const resendCpuBefore = processCpuUs(gatewayPid);
      const resend = await timeRequests(target, 130, (index) => ({
        model: 'gpt-4o-mini',
        // At most 10 000 messages in one request (OpenAI's limit, and the gateway's).
        messages: [
          ...systemOf(size),
          ...(conversations.get(size) ?? []).slice(-9_997),
          { role: 'user', content: `Question ${index}: what changed?` },
        ],
      }));
      const resendCpu = (processCpuUs(gatewayPid) - resendCpuBefore) / 130;
      const sessionCpu = (sessionCpuUs.get(size) ?? 0) / (3 * 130);
      const overhead = percentile(session, 0.5) - percentile(upstream, 0.5);
      const prompt = rendered.get(size) ?? [];
      // Every measured turn stores two messages: the sessions grow while they are measured.
      const grown = await request(`${gateway.url}/sessions/bench-${shapeOf(size).name}-0`, {
        headers: { authorization: 'Bearer sk-bench' },
      });
      const { counts } = (await grown.body.json()) as { counts: { active: number; total: number } };
      p50s.push(percentile(session, 0.5));
      overheads.push(overhead);
      console.log(
        wideRow([
          `${shapeOf(size).stored}${systemLabel(size)} -> ${counts.total} (${counts.active})`,
          `${percentile(session, 0.5).toFixed(2)} / ${percentile(session, 0.99).toFixed(2)}`,
          `${percentile(upstream, 0.5).toFixed(2)} / ${percentile(upstream, 0.99).toFixed(2)}`,
          overhead.toFixed(2),
          `${prompt.length} msgs, ${Math.round(JSON.stringify(prompt).length / 1024)} KB`,
          `${percentile(resend, 0.5).toFixed(2)} / ${percentile(resend, 0.99).toFixed(2)}`,
          `${sessionCpu.toFixed(0)} (resend all ${resendCpu.toFixed(0)})`,
          ((sessionRedisUs.get(size) ?? 0) / (3 * 130)).toFixed(0),
        ]),
      );
    }
    const ratio = (values: number[], of: number, to: number): string =>
      ((values[of] ?? 0) / (values[to] ?? 1)).toFixed(2);
    console.log(
      `   10 000-message / 10-message: session p50 ${ratio(p50s, 2, 0)} (target <= 1.5), ` +
        `gateway overhead p50 ${ratio(overheads, 2, 0)}`,
    );
    console.log(
      `   Redis round trips (scripts) per session request: ${perRequest.toFixed(2)} (background summaries included)`,
    );
    console.log(
      `   warming (10-message sessions, before the rounds): session p50 of each thousand requests ` +
        `${warming.map((p50) => p50.toFixed(2)).join(', ')} ms`,
    );
    const rested = median(redisTrips.rested);
    console.log(
      `   one Redis round trip at one connection (PING from the bench, same rounds): p50 ${median(redisTrips.busy).toFixed(2)} ms back to back, ` +
        `${rested.toFixed(2)} ms each after 3 ms without one; overhead p50 beyond two of the latter: ` +
        `${overheads.map((overhead) => (overhead - 2 * rested).toFixed(2)).join(', ')} ms (rows above)`,
    );
    // Under load: CPU per session request at the bench's connections, many sessions at once, against
    // stateless requests that carry as many messages, in interleaved rounds. Each round adds a turn
    // (two messages) to every session; the stateless body grows with it.
    const loadedSessions = 2_000;
    const loadedStart = 20;
    const loadedRounds = 5;
    const loadedHistory = benchConversation(loadedStart + 2 * loadedRounds + 2, 200);
    for (let copy = 0; copy < loadedSessions; copy++)
      await preload(`bench-load-${copy}`, loadedHistory.slice(0, loadedStart));
    let turn = 0;
    /** A request for each session: `messages` (none in a session: it holds them), then a new question. */
    const loadedRound = async (messages: unknown[], session: boolean): Promise<number> => {
      const asked = turn;
      const result = await loadCount(
        gateway.url,
        loadedSessions,
        (index) => ({
          body: JSON.stringify({
            model: 'gpt-4o-mini',
            messages: [...messages, { role: 'user', content: `Question ${asked}.${index}: what changed?` }],
          }),
          headers: session ? { 'x-session-id': `bench-load-${index}` } : {},
        }),
        gatewayPid,
      );
      if (result.non2xx > 0) throw new Error(`${result.non2xx} requests failed under load`);
      return result.cpuUsPerRequest ?? 0;
    };
    const sessionTurn = async (): Promise<{ cpu: number; redis: number }> => {
      const redisBefore = (await redisCalls()).usec;
      const cpu = await loadedRound([], true);
      turn++;
      return { cpu, redis: ((await redisCalls()).usec - redisBefore) / loadedSessions };
    };
    // As many messages as the sessions held in the session round before.
    const statelessTurn = (): Promise<number> =>
      loadedRound(loadedHistory.slice(0, loadedStart + 2 * (turn - 1)), false);
    // Warmed: a round of each, not counted.
    await sessionTurn();
    await statelessTurn();
    const loaded = { session: [] as number[], stateless: [] as number[], redis: [] as number[] };
    for (let round = 0; round < loadedRounds; round++) {
      const session = await sessionTurn();
      loaded.session.push(session.cpu);
      loaded.redis.push(session.redis);
      loaded.stateless.push(await statelessTurn());
    }
    console.log(
      `   under load (${connections} connections, ${loadedSessions} sessions of ${loadedStart + 2}-${loadedStart + 2 * loadedRounds} ` +
        `messages, ${loadedRounds} interleaved rounds): gateway CPU per session request ${median(loaded.session).toFixed(0)} us ` +
        `(rounds ${loaded.session.map((value) => value.toFixed(0)).join(', ')}), per stateless request of as many ` +
        `messages ${median(loaded.stateless).toFixed(0)} us, ratio ${(median(loaded.session) / median(loaded.stateless)).toFixed(2)}; ` +
        `Redis us per session request ${median(loaded.redis).toFixed(0)}`,
    );
  } finally {
    connection.disconnect();
    for (const server of servers.reverse()) await server.stop();
    await redis.stop();
  }
}
