// Fuzzing what the provider answers, against the real gateway process (src/main.ts): a 2xx chat answer,
// whole or streamed, whose chunks, choices, deltas, messages and tool calls hold JSON of any type where
// the API puts a particular one — the shapes OpenAI-compatible servers were seen to send (null-padded
// tool-call deltas, decoded arguments, `tool_calls: null`, `role: null`) among them — or Claude's answer
// (Anthropic's events and blocks, as loosely typed) from an upstream of kind anthropic — relayed to a chat
// client in a session, to a Responses client and to a Messages client. Whatever the provider sends: every
// request gets an answer that ends (a stream its end or an error event: a stream left open is a client
// hung), no 5xx but the documented upstream ones, no stack trace, every tool call a session stores in the
// API's shape (text id, name and arguments), nothing stored of an answer whose stream reported an error,
// and the process still up at the end. (A chunk whose
// `choices` was an object once ended the process, and so did a Claude event of `data: null`: exceptions
// thrown inside the upstream body's 'data' event.) Bounded in runs; each answer has a generous bound only so that a hang fails rather than stalls.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicUpstreamYaml } from '../helpers/fake-anthropic.js';
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
/** Claude's blocks and events (Anthropic's Messages API), each field typed as the API says, or not. */
const block = either(
  fc.oneof(
    fc.record({ type: fc.constant('text'), text: either(text) }),
    fc.record({ type: fc.constant('thinking'), thinking: either(text), signature: either(text) }),
    fc.record({
      type: fc.constantFrom('tool_use', 'server_tool_use'),
      id: either(fc.constantFrom('toolu_1', 'srvtoolu_1')),
      name: either(fc.constantFrom('read', 'web_search')),
      input: either(fc.constant({ path: 'a.ts' })),
    }),
    fc.record({ type: fc.constant('redacted_thinking'), data: either(text) }),
  ),
);
const blockDelta = either(
  fc.oneof(
    fc.record({ type: fc.constant('text_delta'), text: either(text) }),
    fc.record({ type: fc.constant('input_json_delta'), partial_json: either(text) }),
    fc.record({ type: fc.constant('thinking_delta'), thinking: either(text) }),
    fc.record({ type: fc.constant('signature_delta'), signature: either(text) }),
  ),
);
const usage = either(fc.record({ input_tokens: either(fc.nat()), output_tokens: either(fc.nat()) }));
const claudeEvent = fc.oneof(
  fc.record({
    type: fc.constant('message_start'),
    message: either(
      fc.record({ id: either(fc.constant('msg_1')), model: either(fc.constant('claude-x')), usage }),
    ),
  }),
  fc.record({ type: fc.constant('content_block_start'), index: either(fc.nat(3)), content_block: block }),
  fc.record({ type: fc.constant('content_block_delta'), index: either(fc.nat(3)), delta: blockDelta }),
  fc.record({ type: fc.constant('content_block_stop'), index: either(fc.nat(3)) }),
  fc.record({
    type: fc.constant('message_delta'),
    delta: either(fc.record({ stop_reason: either(fc.constantFrom('end_turn', 'tool_use', 'max_tokens')) })),
    usage,
  }),
  fc.record({ type: fc.constant('error'), error: anyValue }),
  anyValue,
);
const claudeWhole = either(
  fc.record(
    {
      id: fc.constant('msg_1'),
      type: fc.constant('message'),
      role: either(fc.constant('assistant')),
      content: either(fc.array(block, { maxLength: 3 })),
      stop_reason: either(fc.constantFrom('end_turn', 'tool_use')),
      usage,
    },
    { requiredKeys: [] },
  ),
);
const answer = fc.record({
  claude: fc.boolean(),
  events: fc.array(claudeEvent, { minLength: 1, maxLength: 6 }),
  claudeWhole,
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

/** A chat chunk that reports an error: an `error` beside or instead of its choices. */
const carriesError = (chunk: unknown): boolean =>
  typeof chunk === 'object' &&
  chunk !== null &&
  !Array.isArray(chunk) &&
  (chunk as { error?: unknown }).error !== undefined &&
  (chunk as { error?: unknown }).error !== null;

/** A chat chunk of choices and nothing else. */
const startsAsChunk = (chunk: unknown): boolean =>
  typeof chunk === 'object' &&
  chunk !== null &&
  Array.isArray((chunk as { choices?: unknown }).choices) &&
  !carriesError(chunk);

/** The provider's body for an answer: an event stream of its chunks (Claude's events), or the whole answer. */
function bodyOf(drawn: {
  claude: boolean;
  events: unknown[];
  claudeWhole: unknown;
  streamed: boolean;
  chunks: unknown[];
  whole: unknown;
  finished: boolean;
}): { type: string; body: string } {
  if (drawn.claude) {
    if (!drawn.streamed) return { type: 'application/json', body: JSON.stringify(drawn.claudeWhole) };
    const named = (value: unknown): string =>
      typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
        ? (value as { type: string }).type
        : 'message';
    const events = drawn.events.map((value) => `event: ${named(value)}\ndata: ${JSON.stringify(value)}\n\n`);
    if (drawn.finished) events.push('event: message_stop\ndata: {"type":"message_stop"}\n\n');
    return { type: 'text/event-stream', body: events.join('') };
  }
  if (!drawn.streamed) return { type: 'application/json', body: JSON.stringify(drawn.whole) };
  const events = drawn.chunks.map((value) => `data: ${JSON.stringify(value)}\n\n`);
  if (drawn.finished)
    events.push('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', 'data: [DONE]\n\n');
  return { type: 'text/event-stream', body: events.join('') };
}

describe('fuzzed provider answers against the gateway process', () => {
  let fake: FakeUpstream;
  let gateway: ServerProcess;
  /** Anthropic's API, as far as this test needs it: it answers every request with the drawn body. */
  let claude: Server;
  let claudeAnswer = { type: 'application/json', body: '{}' };
  const base = () => gateway.url.replace(/\/v1$/, '');

  beforeAll(async () => {
    fake = new FakeUpstream({ recordLimit: 20 });
    claude = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': claudeAnswer.type });
        response.end(claudeAnswer.body);
      });
    });
    await new Promise<void>((resolve) => claude.listen(0, '127.0.0.1', resolve));
    const claudeUrl = `http://127.0.0.1:${(claude.address() as AddressInfo).port}`;
    const config = ['upstreams:', ...anthropicUpstreamYaml('anthropic', claudeUrl, ['claude-*']), ''].join(
      '\n',
    );
    gateway = await startServerProcess([process.execPath, '--import', 'tsx', 'src/main.ts'], {
      PORT: '0',
      UPSTREAM_BASE_URL: await fake.start(),
      CTXGATE_CONFIG: writeConfigFile(config),
      LOG_LEVEL: 'info',
    });
  }, 60_000);
  afterAll(async () => {
    await gateway.stop();
    await fake.stop();
    claude.closeAllConnections();
    await new Promise((resolve) => claude.close(resolve));
  });

  it('answers every request with an end, no undocumented 5xx, no stack, and stores calls in shape', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(answer, async (drawn) => {
        runs++;
        const sessionId = `fuzz-${runs}`;
        const { type, body } = bodyOf(drawn);
        fake.clearQueue();
        if (drawn.claude) claudeAnswer = { type, body };
        else fake.enqueue({ status: 200, headers: { 'content-type': type }, body });
        const model = drawn.claude ? 'claude-fuzz' : 'gpt-4o-mini';
        const stream = drawn.streamed;
        const request =
          drawn.route === 'chat'
            ? {
                path: 'chat/completions',
                body: { model, stream, messages: [{ role: 'user', content: 'hi' }] },
              }
            : drawn.route === 'responses'
              ? { path: 'responses', body: { model, stream, store: false, input: 'hi' } }
              : {
                  path: 'messages',
                  body: {
                    model,
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
        // An answer whose stream carried an error of the provider's own is not stored (docs/sessions.md).
        // (A first event that is not a chunk of choices is judged before anything is relayed, and may
        // be retried: the answer stored is then the retry's.)
        if (
          drawn.streamed &&
          !drawn.claude &&
          startsAsChunk(drawn.chunks[0]) &&
          drawn.chunks.some(carriesError)
        )
          throw new Error(`an answer with an error event stored: ${label}`);
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
      { numRuns: 400, seed: 20261205, endOnFailure: true },
    );
    expect(runs).toBe(400);
    expect((await fetch(`${base()}/healthz`)).status).toBe(200);
    expect(gateway.child.exitCode).toBeNull();
  }, 300_000);
});
