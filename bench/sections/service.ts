// Section "service": the chat service alone — `chat.complete` from a parsed body to the answer handed to
// the client, against an upstream that answers at once (usage counted from the body's length, as the
// bench's fake provider counts) and a client that takes the answer and drops it. No sockets and no
// waiting, so the figure moves far less from run to run than the proxy's: what a change to the request
// path costs or saves, before the `proxy` section's throughput can tell. Beside it, in the same rounds,
// what any gateway does with the same body (JSON.parse and JSON.stringify). After the rounds, the bytes
// per request by which the old space grew: objects that outlive young collections (as Node 20 made of
// every `{ ...a, key }`, see eslint.config.js) show there long before they show in time. The build
// measured is dist/ (BENCH_GATEWAY_DIR: another checkout's, after its build), run by plain node with
// `npm start`'s flags (and --expose-gc) in a process of its own: under tsx, which this bench runs in,
// the build's code would be transformed again and run slower than it does in the gateway.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { benchConversation, chatBody, uniqueChatBodies } from '../lib/bodies.js';
import { rounds, startFlags, wideRow } from '../lib/load.js';

/** The measuring process: reads the cases, builds the chat service of the build, prints one JSON line a case. */
const measuringScript = `
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
const build = process.env.BENCH_BUILD_DIR + '/dist/src/';
const { loadConfig } = await import(build + 'config/load-config.js');
const { createServices } = await import(build + 'create-services.js');
const { createMetrics } = await import(build + 'metrics.js');
const { createLogger } = await import(build + 'logger.js');
const { createMemorySessionStore } = await import(build + 'store/memory-session-store.js');
const { createTiktokenTokenizers } = await import(build + 'tokenizer/tiktoken-tokenizers.js');
const { parseRequestOverrides } = await import(build + 'http/request-overrides.js');
const { cases, rounds } = JSON.parse(readFileSync(process.env.BENCH_CASES, 'utf8'));
const config = loadConfig({ env: { UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', LOG_LEVEL: 'warn' } });
const answerFor = (body) => {
  const promptTokens = Math.ceil((body?.length ?? 2000) / 4);
  return Buffer.from(JSON.stringify({
    id: 'chatcmpl-bench', object: 'chat.completion', created: 1795756803, model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'word0 word1 word2', refusal: null }, finish_reason: 'stop' }],
    usage: { prompt_tokens: promptTokens, completion_tokens: 3, total_tokens: promptTokens + 3 },
  }));
};
const upstream = {
  async send(request) {
    const answer = answerFor(request.body);
    return { statusCode: 200, headers: { 'content-type': 'application/json' }, readAll: async () => answer,
      forEachChunk: async () => undefined, peek: async () => answer, discard: () => undefined };
  },
  close: async () => undefined,
};
const { chat } = createServices({
  config,
  logger: createLogger({ level: 'warn', destination: { write: () => undefined } }),
  metrics: createMetrics({ collectProcessMetrics: false }),
  upstream,
  tokenizers: createTiktokenTokenizers(),
  sessionStore: createMemorySessionStore({ limits: { maxActiveMessages: 1000, minActiveMessages: 100, idleTtlSeconds: 60 } }),
});
const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-bench', host: '127.0.0.1' };
const overrides = parseRequestOverrides(headers);
const credential = { mode: 'pass_through', tenantId: 'bench', mayHoldSessions: true };
const client = () => ({ cancellation: Object.assign(new EventEmitter(), { aborted: false }), addHeaders: () => undefined,
  sendWhole: async () => undefined, openStream: () => undefined, write: () => undefined, end: () => undefined, destroy: () => undefined });
const serve = (text) => chat.complete({ body: JSON.parse(text), rawBody: Buffer.from(text), overrides, credential,
  clientHeaders: headers, startedAtMs: performance.now(), warn: () => undefined, info: () => undefined }, client());
// What every gateway does with the body: parse it, write it out again.
const floor = async (text) => { JSON.stringify(JSON.parse(text)); Buffer.from(text); };
// Microseconds a request on the main thread: nothing waits on I/O, so the loop's time is its computing.
const perRequest = async (work, bodies) => {
  const started = performance.now();
  for (const text of bodies) await work(text);
  return ((performance.now() - started) * 1000) / bodies.length;
};
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
// Bytes per request by which the old space grew: what outlived two young collections (objects too
// large for a page, such as a 200 KB prompt's text, are made in a space of their own and not counted).
// A full collection first, so that nothing before is counted (and none is due during the run).
const { getHeapSpaceStatistics } = await import('node:v8');
const oldGeneration = () => getHeapSpaceStatistics().find((space) => space.space_name === 'old_space').space_used_size;
const promotedPerRequest = async (work, bodies) => {
  globalThis.gc();
  const before = oldGeneration();
  for (const text of bodies) await work(text);
  return (oldGeneration() - before) / bodies.length;
};
// Promises made per request (async functions, awaits, then-chains): each costs an allocation and a turn
// of the microtask queue, the cost of a request's structure that no one function's time shows. Counted
// by an async hook, enabled for that pass only (it slows what it counts).
const { createHook } = await import('node:async_hooks');
let promises = 0;
const promiseCounter = createHook({ init: (_id, type) => { if (type === 'PROMISE') promises++; } });
const promisesPerRequest = async (work, bodies) => {
  promises = 0;
  promiseCounter.enable();
  for (const text of bodies) await work(text);
  promiseCounter.disable();
  return promises / bodies.length;
};
// Part 0 warms; part r + 1 is round r's. A case of one body repeats it.
const part = ({ count, bodies }, index) =>
  bodies.length === 1 ? new Array(count).fill(bodies[0]) : bodies.slice(index * count, (index + 1) * count);
// Every case warms before any is measured: the first one measured runs as settled code as the last.
for (const each of cases) await perRequest(serve, part(each, 0));
for (const each of cases) {
  const { name } = each;
  const floorUs = [], serviceUs = [];
  for (let round = 0; round < rounds; round++) {
    floorUs.push(await perRequest(floor, part(each, round + 1)));
    serviceUs.push(await perRequest(serve, part(each, round + 1)));
  }
  // Round 1's bodies again: texts seen for the first time (which the token cache keeps) are not counted.
  const promoted = {
    floor: await promotedPerRequest(floor, part(each, 1)),
    service: await promotedPerRequest(serve, part(each, 1)),
  };
  const promisesMade = {
    floor: await promisesPerRequest(floor, part(each, 1)),
    service: await promisesPerRequest(serve, part(each, 1)),
  };
  console.log(JSON.stringify({ name, floor: median(floorUs), service: median(serviceUs), promoted, promises: promisesMade }));
}
`;

export async function serviceSection(): Promise<void> {
  const directory = resolve(process.env.BENCH_GATEWAY_DIR ?? '.');
  const conversation = JSON.stringify({ model: 'gpt-4o-mini', messages: benchConversation(400, 480) });
  const overWindow = JSON.stringify({ model: 'gpt-4o-mini', messages: benchConversation(2_400, 480) });
  const next = uniqueChatBodies();
  // Every body made here, before anything is measured: one body repeated, or a new one for every request.
  const cases = [
    { name: '2 KB, known model', count: 20_000, bodies: [chatBody(false)] },
    { name: '2 KB, unknown model', count: 20_000, bodies: [chatBody(false, 'bench-unknown-model')] },
    {
      name: '2 KB, every body new',
      count: 5_000,
      bodies: Array.from({ length: 5_000 * (rounds + 1) }, () => next()),
    },
    { name: `${Math.round(conversation.length / 1024)} KB conversation`, count: 300, bodies: [conversation] },
    // Over gpt-4o-mini's window: shortened, so its body is written again (the kept messages copied).
    {
      name: `${Math.round(overWindow.length / 1024)} KB, shortened to fit`,
      count: 40,
      bodies: [overWindow],
    },
  ];
  const scratch = mkdtempSync(join(tmpdir(), 'ctxgate-bench-service-'));
  try {
    const casesFile = join(scratch, 'cases.json');
    writeFileSync(casesFile, JSON.stringify({ cases, rounds }));
    const output = execFileSync(
      process.execPath,
      [...startFlags(directory), '--expose-gc', '--input-type=module', '-e', measuringScript],
      {
        env: { ...process.env, BENCH_BUILD_DIR: directory, BENCH_CASES: casesFile },
        encoding: 'utf8',
        maxBuffer: 1024 * 1024,
      },
    );
    console.log(
      `\n== service (node ${process.version}): chat.complete in process, microseconds per request on the main thread ==`,
    );
    console.log(
      wideRow([
        'request',
        'parse + stringify us',
        'chat service us',
        'service - floor us',
        'promoted B/req',
        'promises/req',
      ]),
    );
    for (const line of output.trim().split('\n')) {
      const { name, floor, service, promoted, promises } = JSON.parse(line) as {
        name: string;
        floor: number;
        service: number;
        promoted: { floor: number; service: number };
        promises: { floor: number; service: number };
      };
      console.log(
        wideRow([
          name,
          floor.toFixed(1),
          service.toFixed(1),
          (service - floor).toFixed(1),
          `${Math.round(promoted.service)} (floor ${Math.round(promoted.floor)})`,
          `${promises.service.toFixed(1)} (floor ${promises.floor.toFixed(1)})`,
        ]),
      );
    }
    console.log(`   median of ${rounds} rounds; the service and the floor alternate on the same bodies`);
    console.log(
      '   promoted: bytes per request the old space grew by over one round, after a full collection: what\n' +
        '   outlived two young collections (copied now, collected by a full collection later), and what the\n' +
        "   gateway's caches kept (the token cache's texts: most of the conversation's figure)",
    );
    console.log(
      '   promises/req: promises made per request (async functions, awaits, then-chains), counted by an\n' +
        "   async hook over one round, this bench's upstream and client included; each costs an allocation\n" +
        '   and a turn of the microtask queue (about 0.1 us on a 2-core VM)',
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
