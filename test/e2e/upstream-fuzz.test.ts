// Fuzzing what the provider answers, against the real gateway process (src/main.ts): a 2xx chat answer,
// whole or streamed, whose chunks, choices, deltas, messages and tool calls hold JSON of any type where
// the API puts a particular one — the shapes OpenAI-compatible servers were seen to send (null-padded
// tool-call deltas, decoded arguments, `tool_calls: null`, `role: null`) among them — relayed to a chat
// client in a session, to a Responses client and to a Messages client. Whatever the provider sends: every
// request gets an answer that ends (a stream its end or an error event: a stream left open is a client
// hung), no 5xx but the documented upstream ones, no stack trace, every tool call a session stores in the
// API's shape (text id, name and arguments), and the process still up at the end. (A chunk whose
// `choices` was an object once ended the process: an exception thrown inside the upstream body's 'data'
// event.) Bounded in runs; each answer has a generous bound only so that a hang fails rather than stalls.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const anyValue = fc.oneof(
  fc.constant(null),
  fc.integer({ min: -2, max: 1_000_000_000 }),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.string({ maxLength: 6 }),
  fc.array(fc.oneof(fc.integer(), fc.constant(null), fc.string({ maxLength: 3 })), { maxLength: 3 }),
  fc.dictionary(
    fc.constantFrom('a', 'text', 'type', 'index'),
    fc.oneof(fc.integer(), fc.string({ maxLength: 3 })),
    {
      maxKeys: 2,
    },
  ),
);
/** A field as the API types it, or anything else. */
const either = <T>(typed: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: typed }, { weight: 1, arbitrary: anyValue });
const text = fc.constantFrom('', 'Hi', ' there', '{"city":', '"Paris"}', 'x'.repeat(40));
const call = fc.record(
  {
    index: either(fc.nat(3)),
    id: either(fc.constantFrom('call_1', 'call_2')),
    type: either(fc.constant('function')),
    function: either(
      fc.record(
        {
          name: either(fc.constantFrom('read', 'get_weather')),
          arguments: either(fc.oneof(text, fc.constant('{}'))),
        },
        { requiredKeys: [] },
      ),
    ),
    extra_content: anyValue,
  },
  { requiredKeys: [] },
);
const part = either(
  fc.oneof(
    fc.record({ type: fc.constant('text'), text: either(text) }),
    fc.record({
      type: fc.constant('thinking'),
      thinking: either(fc.array(fc.record({ type: fc.constant('text'), text }))),
    }),
  ),
);
/** A delta, or a whole answer's message: each field typed as the API says, or not. */
const message = fc.record(
  {
    role: either(fc.constant('assistant')),
    content: either(fc.oneof(text, fc.array(part, { maxLength: 3 }))),
    reasoning_content: either(text),
    reasoning: either(text),
    refusal: either(text),
    tool_calls: either(fc.array(either(call), { maxLength: 3 })),
    reasoning_details: either(
      fc.array(either(fc.record({ type: fc.constant('reasoning.text'), text, index: either(fc.nat(2)) })), {
        maxLength: 2,
      }),
    ),
  },
  { requiredKeys: [] },
);
const finish = either(fc.constantFrom('stop', 'tool_calls', 'length'));
const chunk = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      choices: fc.tuple(
        fc.record(
          { index: either(fc.constant(0)), delta: either(message), finish_reason: fc.option(finish) },
          { requiredKeys: [] },
        ),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ choices: anyValue }) },
  {
    weight: 1,
    arbitrary: fc.record({
      choices: fc.constant([]),
      usage: either(fc.record({ prompt_tokens: either(fc.nat()), completion_tokens: either(fc.nat()) })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ error: anyValue }) },
  { weight: 1, arbitrary: anyValue },
);
const answer = fc.record({
  streamed: fc.boolean(),
  chunks: fc.array(chunk, { minLength: 1, maxLength: 6 }),
  whole: either(
    fc.record({
      choices: either(
        fc.tuple(
          fc.record(
            { index: either(fc.constant(0)), message: either(message), finish_reason: finish },
            { requiredKeys: [] },
          ),
        ),
      ),
    }),
  ),
  finished: fc.boolean(),
  route: fc.constantFrom('chat', 'responses', 'messages'),
});

/** The provider's body for an answer: an event stream of its chunks, or the whole answer. */
function bodyOf(drawn: { streamed: boolean; chunks: unknown[]; whole: unknown; finished: boolean }): {
  type: string;
  body: string;
} {
  if (!drawn.streamed) return { type: 'application/json', body: JSON.stringify(drawn.whole) };
  const events = drawn.chunks.map((value) => `data: ${JSON.stringify(value)}\n\n`);
  if (drawn.finished)
    events.push('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', 'data: [DONE]\n\n');
  return { type: 'text/event-stream', body: events.join('') };
}

describe('fuzzed provider answers against the gateway process', () => {
  let fake: FakeUpstream;
  let gateway: ServerProcess;
  const base = () => gateway.url.replace(/\/v1$/, '');

  beforeAll(async () => {
    fake = new FakeUpstream({ recordLimit: 20 });
    gateway = await startServerProcess([process.execPath, '--import', 'tsx', 'src/main.ts'], {
      PORT: '0',
      UPSTREAM_BASE_URL: await fake.start(),
      CTXGATE_CONFIG: writeConfigFile('{}\n'),
      LOG_LEVEL: 'info',
    });
  }, 60_000);
  afterAll(async () => {
    await gateway.stop();
    await fake.stop();
  });

  it('answers every request with an end, no undocumented 5xx, no stack, and stores calls in shape', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(answer, async (drawn) => {
        runs++;
        const sessionId = `fuzz-${runs}`;
        const { type, body } = bodyOf(drawn);
        fake.clearQueue();
        fake.enqueue({ status: 200, headers: { 'content-type': type }, body });
        const stream = drawn.streamed;
        const request =
          drawn.route === 'chat'
            ? {
                path: 'chat/completions',
                body: { model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'hi' }] },
              }
            : drawn.route === 'responses'
              ? { path: 'responses', body: { model: 'gpt-4o-mini', stream, store: false, input: 'hi' } }
              : {
                  path: 'messages',
                  body: {
                    model: 'gpt-4o-mini',
                    stream,
                    max_tokens: 64,
                    messages: [{ role: 'user', content: 'hi' }],
                  },
                };
        const label = `${drawn.route} ${body.slice(0, 1_500)}`;
        const response = await fetch(`${gateway.url}/${request.path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer sk-fuzz',
            ...(drawn.route === 'chat' ? { 'x-session-id': sessionId } : {}),
          },
          body: JSON.stringify(request.body),
          // Only so that a stream left open fails the property instead of stalling the run.
          signal: AbortSignal.timeout(30_000),
        }).catch((error: unknown) => {
          throw new Error(`no answer (${String(error)}): ${label}`);
        });
        const received = await response.text().catch((error: unknown) => {
          throw new Error(`an answer that never ended (${String(error)}): ${label}`);
        });
        if (![200, 502].includes(response.status))
          throw new Error(`status ${response.status}: ${label}\n${received.slice(0, 300)}`);
        if (/\bat [\w.<>]+ \(|node:internal|\.ts:\d+/.test(received))
          throw new Error(`stack in body: ${label}`);
        if (drawn.route !== 'chat') return;
        const history = await fetch(`${base()}/v1/sessions/${sessionId}/history`, {
          headers: { authorization: 'Bearer sk-fuzz' },
        });
        if (history.status === 404) return;
        const stored = (await history.json()) as { data: Array<{ tool_calls?: unknown[] }> };
        for (const entry of stored.data.flatMap((message) => message.tool_calls ?? [])) {
          const storedCall = entry as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
          if (
            typeof storedCall.id !== 'string' ||
            typeof storedCall.function?.name !== 'string' ||
            typeof storedCall.function.arguments !== 'string'
          )
            throw new Error(`a call stored out of shape ${JSON.stringify(entry)}: ${label}`);
        }
      }),
      { numRuns: 150, seed: 20261205, endOnFailure: true },
    );
    expect(runs).toBe(150);
    expect((await fetch(`${base()}/healthz`)).status).toBe(200);
    expect(gateway.child.exitCode).toBeNull();
  }, 300_000);
});
