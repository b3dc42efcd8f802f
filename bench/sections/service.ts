// Section "service": the chat service alone, in this process — `chat.complete` from a parsed body to the
// answer handed to the client, against an upstream that answers at once (usage counted from the body's
// length, as the bench's fake provider counts) and a client that takes the answer and drops it. No
// sockets and no waiting, so the figure moves far less from run to run than the proxy's: what a change to the request path
// costs or saves before the `proxy` section's throughput, which moves several microseconds from run to
// run, can tell. Beside it, in the same rounds, what any gateway does with the same body (JSON.parse and
// JSON.stringify). The build measured is dist/ (BENCH_GATEWAY_DIR: another checkout's, after its build).
import { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import { benchConversation, chatBody, uniqueChatBodies } from '../lib/bodies.js';
import { median, rounds, wideRow } from '../lib/load.js';

interface ChatService {
  complete(input: Record<string, unknown>, client: unknown): Promise<unknown>;
}

/** A module of the build measured: its dist/, loaded at run time (a fresh clone has no dist to type-check). */
async function fromBuild<T>(path: string): Promise<T> {
  const directory = resolve(process.env.BENCH_GATEWAY_DIR ?? '.');
  return (await import(`${directory}/dist/src/${path}`)) as T;
}

async function chatServiceOfBuild(): Promise<{
  chat: ChatService;
  overridesOf: (headers: Record<string, string>) => unknown;
}> {
  const { loadConfig } = await fromBuild<{ loadConfig: (options: unknown) => unknown }>(
    'config/load-config.js',
  );
  const { createServices } = await fromBuild<{ createServices: (parts: unknown) => { chat: ChatService } }>(
    'create-services.js',
  );
  const { createMetrics } = await fromBuild<{ createMetrics: (options: unknown) => unknown }>('metrics.js');
  const { createLogger } = await fromBuild<{ createLogger: (options: unknown) => unknown }>('logger.js');
  const { createMemorySessionStore } = await fromBuild<{
    createMemorySessionStore: (options: unknown) => unknown;
  }>('store/memory-session-store.js');
  const { createTiktokenTokenizers } = await fromBuild<{ createTiktokenTokenizers: () => unknown }>(
    'tokenizer/tiktoken-tokenizers.js',
  );
  const { parseRequestOverrides } = await fromBuild<{
    parseRequestOverrides: (headers: Record<string, string>) => unknown;
  }>('http/request-overrides.js');
  const config = loadConfig({ env: { UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', LOG_LEVEL: 'warn' } });
  const answerFor = (body: unknown): Buffer => {
    const promptTokens = Math.ceil(
      (Buffer.isBuffer(body) || typeof body === 'string' ? body.length : 2_000) / 4,
    );
    return Buffer.from(
      JSON.stringify({
        id: 'chatcmpl-bench',
        object: 'chat.completion',
        created: 1_795_756_803,
        model: 'gpt-4o-mini',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'word0 word1 word2', refusal: null },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: promptTokens, completion_tokens: 3, total_tokens: promptTokens + 3 },
      }),
    );
  };
  const upstream = {
    async send(request: { body?: unknown }) {
      const answer = answerFor(request.body);
      return {
        statusCode: 200,
        headers: { 'content-type': 'application/json' },
        readAll: async () => answer,
        forEachChunk: async () => undefined,
        peek: async () => answer,
        discard: () => undefined,
      };
    },
    close: async () => undefined,
  };
  const services = createServices({
    config,
    logger: createLogger({ level: 'warn', destination: { write: () => undefined } }),
    metrics: createMetrics({ collectProcessMetrics: false }),
    upstream,
    tokenizers: createTiktokenTokenizers(),
    sessionStore: createMemorySessionStore({
      limits: { maxActiveMessages: 1_000, minActiveMessages: 100, idleTtlSeconds: 60 },
    }),
  });
  return { chat: services.chat, overridesOf: parseRequestOverrides };
}

export async function serviceSection(): Promise<void> {
  const { chat, overridesOf } = await chatServiceOfBuild();
  const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-bench', host: '127.0.0.1' };
  const overrides = overridesOf(headers);
  const credential = { mode: 'pass_through', tenantId: 'bench', mayHoldSessions: true };
  const client = () => ({
    cancellation: Object.assign(new EventEmitter(), { aborted: false }),
    addHeaders: () => undefined,
    sendWhole: async () => undefined,
    openStream: () => undefined,
    write: () => undefined,
    end: () => undefined,
    destroy: () => undefined,
  });
  const serve = async (text: string): Promise<void> => {
    await chat.complete(
      {
        body: JSON.parse(text),
        rawBody: Buffer.from(text),
        overrides,
        credential,
        clientHeaders: headers,
        startedAtMs: performance.now(),
        warn: () => undefined,
        info: () => undefined,
      },
      client(),
    );
  };
  // What every gateway does with the body: parse it, write it out again.
  const floor = async (text: string): Promise<void> => {
    JSON.stringify(JSON.parse(text));
    Buffer.from(text);
  };
  const conversation = JSON.stringify({ model: 'gpt-4o-mini', messages: benchConversation(400, 480) });
  const cases: Array<[string, () => string, number]> = [
    ['2 KB, known model', () => chatBody(false), 20_000],
    ['2 KB, unknown model', () => chatBody(false, 'bench-unknown-model'), 20_000],
    ['2 KB, every body new', uniqueChatBodies(), 5_000],
    [`${Math.round(conversation.length / 1024)} KB conversation`, () => conversation, 300],
  ];
  /**
   * Microseconds per request over `count` requests, on the main thread: nothing here waits on I/O, so
   * the time the loop takes is the time it computes (what a second core does for the GC aside).
   */
  const perRequest = async (work: (text: string) => Promise<void>, body: () => string, count: number) => {
    const bodies = Array.from({ length: count }, body);
    const started = performance.now();
    for (const text of bodies) await work(text);
    return ((performance.now() - started) * 1_000) / count;
  };
  console.log(
    '\n== service: chat.complete in process, microseconds per request on the main thread (median of rounds) ==',
  );
  console.log(wideRow(['request', 'parse + stringify us', 'chat service us', 'service - floor us']));
  for (const [name, body, count] of cases) {
    // Warm: the JIT, the token-count cache (a repeated body is counted once) and learned ratios.
    await perRequest(serve, body, count);
    const service: number[] = [];
    const baseline: number[] = [];
    for (let round = 0; round < rounds; round++) {
      baseline.push(await perRequest(floor, body, count));
      service.push(await perRequest(serve, body, count));
    }
    const [floorUs, serviceUs] = [median(baseline), median(service)];
    console.log(wideRow([name, floorUs.toFixed(1), serviceUs.toFixed(1), (serviceUs - floorUs).toFixed(1)]));
  }
}
