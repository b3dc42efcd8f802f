// Fuzzing the real gateway process (src/main.ts) over HTTP with fast-check: request bodies (random JSON,
// broken JSON, chat requests with random messages, parts, tool calls and fields) and headers (session,
// context and budget headers with random values, content types and encodings). Whatever arrives:
// no 5xx but the documented upstream ones, no stack trace in any body, every error OpenAI-shaped, no
// request costing the gateway over 200 ms of CPU (read from /proc for the gateway's own process), and
// the process still up at the end. Bounded in runs and in time.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

/** The gateway process's CPU time so far (user + system), in milliseconds. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks * 10; // USER_HZ is 100 on Linux
}

const roles = ['system', 'developer', 'user', 'assistant', 'tool', 'function', 'robot', ''];
const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('[pin] keep this', '', '\u0000', '\uFEFF', 'a\nb', '{"json":true}'),
  fc.integer({ min: 1, max: 4_000 }).map((length) => 'word '.repeat(length)),
);
const part = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record({ type: fc.constant('image_url'), image_url: fc.record({ url: fc.webUrl() }) }),
  fc.record({ type: fc.string({ maxLength: 10 }), text: fc.anything() }),
  fc.anything(),
);
const toolCall = fc.record(
  {
    id: fc.oneof(fc.constantFrom('call_1', 'call_2', 'call_3'), fc.string({ maxLength: 8 })),
    type: fc.constant('function'),
    function: fc.record({ name: fc.string({ maxLength: 12 }), arguments: fc.oneof(text, fc.anything()) }),
  },
  { requiredKeys: [] },
);
const message = fc.record(
  {
    role: fc.oneof(fc.constantFrom(...roles), fc.anything()),
    content: fc.oneof(text, fc.constant(null), fc.array(part, { maxLength: 4 }), fc.anything()),
    tool_calls: fc.oneof(fc.array(toolCall, { maxLength: 3 }), fc.constant(null), fc.anything()),
    tool_call_id: fc.oneof(fc.constantFrom('call_1', 'call_2', 'call_3'), fc.anything()),
    name: fc.string({ maxLength: 8 }),
  },
  { requiredKeys: ['role'] },
);
const chatBody = fc.record(
  {
    model: fc.oneof(
      fc.constantFrom('gpt-4o-mini', 'gpt-4', 'llama-3-70b', 'unknown-model', '', 'a\nb'),
      fc.anything(),
    ),
    messages: fc.oneof(fc.array(message, { maxLength: 12 }), fc.anything()),
    stream: fc.oneof(fc.boolean(), fc.anything()),
    max_tokens: fc.oneof(fc.integer({ min: -10, max: 300_000 }), fc.anything()),
    max_completion_tokens: fc.integer({ min: 0, max: 300_000 }),
    tools: fc.oneof(
      fc.array(
        fc.record({
          type: fc.constant('function'),
          function: fc.record({ name: fc.string({ maxLength: 10 }), parameters: fc.object({ maxDepth: 3 }) }),
        }),
        { maxLength: 3 },
      ),
      fc.anything(),
    ),
    stream_options: fc.oneof(fc.record({ include_usage: fc.boolean() }), fc.anything()),
    temperature: fc.double(),
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);
/** Requests that pass validation, so the context engine, sessions and the upstream are reached. */
const validMessage = fc.oneof(
  fc.record({ role: fc.constantFrom('user', 'system', 'developer'), content: text }),
  fc.record({
    role: fc.constant('user'),
    content: fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 3 }),
  }),
  fc.record({ role: fc.constant('assistant'), content: fc.oneof(text, fc.constant(null)) }),
  fc.record({
    role: fc.constant('assistant'),
    content: fc.constant(null),
    tool_calls: fc.array(
      fc.record({
        id: fc.constantFrom('call_1', 'call_2', 'call_3'),
        type: fc.constant('function'),
        function: fc.record({ name: fc.constantFrom('search', 'read'), arguments: text }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  }),
  fc.record({
    role: fc.constant('tool'),
    tool_call_id: fc.constantFrom('call_1', 'call_2', 'call_3'),
    content: text,
  }),
);
const validBody = fc.record(
  {
    model: fc.constantFrom('gpt-4o-mini', 'gpt-4', 'llama-3-70b', 'unknown-model'),
    messages: fc.array(validMessage, { minLength: 1, maxLength: 16 }),
    stream: fc.boolean(),
    max_tokens: fc.integer({ min: 1, max: 20_000 }),
    stream_options: fc.record({ include_usage: fc.boolean() }),
  },
  { requiredKeys: ['model', 'messages'] },
);
const body = fc.oneof(
  { weight: 6, arbitrary: validBody.map((value) => JSON.stringify(value)) },
  { weight: 4, arbitrary: chatBody.map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.json() },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.tuple(chatBody, fc.nat()).map(([value, cut]) => JSON.stringify(value).slice(0, cut % 200)),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 60, max: 80 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
  },
);
const headerValue = fc.oneof(
  fc.string({ maxLength: 20 }).filter((value) => /^[\x20-\x7e]*$/.test(value)),
  fc.integer({ min: -5, max: 2_000_000 }).map(String),
  fc.constantFrom('__proto__', 'constructor', 'auto', 'delta', 'full', 'agent', 'chat', '0', 'gzip'),
);
/** Mostly a value the gateway accepts, sometimes anything. */
const mostly = (valid: fc.Arbitrary<string>) =>
  fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: headerValue });
const headers = fc
  .record(
    {
      'x-session-id': mostly(fc.constantFrom('fuzz-1', 'fuzz-2', 'fuzz-3')),
      'x-session-history': mostly(fc.constantFrom('auto', 'delta', 'full')),
      'x-context-window': mostly(fc.integer({ min: 200, max: 200_000 }).map(String)),
      'x-context-max-history-tokens': mostly(fc.integer({ min: 0, max: 50_000 }).map(String)),
      'x-context-policy': mostly(fc.constantFrom('chat', 'agent', 'economy')),
      'x-budget-session-tokens': mostly(fc.integer({ min: 0, max: 1_000_000 }).map(String)),
      'x-request-id': headerValue,
      'content-type': fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom('application/json', 'text/plain') },
        {
          weight: 1,
          arbitrary: fc.constantFrom('', 'application/json; charset=latin1', 'multipart/form-data'),
        },
      ),
      'content-encoding': fc.constantFrom('gzip', 'br', 'identity'),
    },
    { requiredKeys: [] },
  )
  .map((chosen) => {
    // Compressed bodies are refused before anything else: only now and then.
    if (chosen['content-encoding'] !== undefined && Math.abs(JSON.stringify(chosen).length % 7) !== 0)
      delete chosen['content-encoding'];
    return chosen;
  });
const target = fc.constantFrom(
  'POST /v1/chat/completions',
  'POST /v1/chat/completions',
  'POST /v1/chat/completions',
  'POST /v1/context/render',
  'GET /v1/sessions/fuzz-1',
  'GET /v1/sessions/fuzz-1/history?offset=1&limit=3',
  'DELETE /v1/sessions/fuzz-2',
);

/** 5xx answers the gateway may give, all about the upstream or the store, each with its own code. */
const documented5xx = new Set(['upstream_unreachable', 'upstream_bad_response', 'upstream_timeout']);

describe('fuzzed requests against the gateway process', () => {
  let fake: FakeUpstream;
  let gateway: ServerProcess;

  beforeAll(async () => {
    fake = new FakeUpstream({ defaultWindow: 16_000, recordLimit: 50 });
    gateway = await startServerProcess([process.execPath, '--import', 'tsx', 'src/main.ts'], {
      PORT: '0',
      UPSTREAM_BASE_URL: await fake.start(),
      CTXGATE_CONFIG: writeConfigFile('sessions:\n  anonymous_tenant: fuzz\n'),
      LOG_LEVEL: 'info',
    });
  }, 60_000);
  afterAll(async () => {
    await gateway.stop();
    await fake.stop();
  });

  it('never fails in an undocumented way, never leaks a stack, never costs a request over 200 ms of CPU', async () => {
    const pid = gateway.child.pid as number;
    const problems: string[] = [];
    let costliest = 0;
    let runs = 0;
    const statuses = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(target, body, headers, fc.boolean(), async (route, payload, sent, withKey) => {
        runs++;
        const [method, path] = route.split(' ') as [string, string];
        const before = cpuMs(pid);
        const response = await fetch(`${gateway.url.replace(/\/v1$/, '')}${path}`, {
          method,
          headers: { ...sent, ...(withKey ? { authorization: 'Bearer sk-fuzz' } : {}) },
          ...(method === 'POST' ? { body: payload } : {}),
        });
        const answer = await response.text();
        const tally = `${route.split(' ')[1]?.split('/')[2] ?? ''} ${response.status}`;
        statuses.set(tally, (statuses.get(tally) ?? 0) + 1);
        const cost = cpuMs(pid) - before;
        costliest = Math.max(costliest, cost);
        // A wrong answer throws, so fast-check shrinks it to a small case; the cost is only recorded.
        const label = `${route} ${JSON.stringify(sent)} ${payload.slice(0, 2_000)}`;
        const fail = (problem: string): never => {
          throw new Error(`${problem}: ${label}\n${answer.slice(0, 500)}`);
        };
        if (cost > 200) problems.push(`${cost} ms CPU: ${label}`);
        if (/\bat [\w.<>]+ \(|node:internal|\.ts:\d+/.test(answer)) fail('stack in body');
        if (response.headers.get('x-request-id') === null) fail('no x-request-id');
        if (response.status >= 400 && response.headers.get('content-type')?.includes('json')) {
          const parsed = JSON.parse(answer) as {
            error?: { message?: unknown; type?: unknown; code?: unknown };
          };
          if (typeof parsed.error?.message !== 'string' || typeof parsed.error.type !== 'string')
            fail(`not OpenAI-shaped (${response.status})`);
          if (response.status >= 500 && !documented5xx.has(String(parsed.error?.code)))
            fail(`${response.status} ${String(parsed.error?.code)}`);
        } else if (response.status >= 500) {
          fail(`${response.status} without a JSON error`);
        }
      }),
      { numRuns: 400, interruptAfterTimeLimit: 40_000, seed: Date.now() % 100_000 },
    );
    expect(problems).toEqual([]);
    expect(runs).toBeGreaterThanOrEqual(100);
    // Still up, still answering.
    expect((await fetch(`${gateway.url.replace(/\/v1$/, '')}/healthz`)).status).toBe(200);
    expect(gateway.child.exitCode).toBeNull();
    console.log(
      `fuzz: ${runs} requests, costliest ${costliest} ms of gateway CPU, statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
  }, 90_000);
});
