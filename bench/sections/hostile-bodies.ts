// Section "hostile-bodies": the gateway's CPU for the worst bodies an attacker or a careless client can
// send within the limits (issue "Security and robustness II"): each sent once to a gateway process
// (pass-through mode, no Redis) in front of the fake provider, its CPU read from /proc before and after
// (all of its threads: the garbage collector's too), once to warm up and then BENCH_HOSTILE_ROUNDS times
// (median and highest printed). Printed with the status it got: an accepted body (2xx) should stay
// under 200 ms of CPU, a refused one should be refused before it costs much. Then the largest accepted
// chat bodies through the logging floor proxy (parse, re-serialize, forward, one access log line): what
// reading and forwarding such a body costs any proxy. Last, the largest Responses requests again with
// Redis configured, where a stored response's record is written too. Figures only.
import { deflateSync } from 'node:zlib';
import { Pool } from 'undici';
import { startRedisServer } from '../../test/helpers/redis-server.js';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { writeConfigFile } from '../../test/helpers/start-gateway.js';
import { png } from '../../test/helpers/png.js';
import { seeded } from '../../test/helpers/text.js';
import { benchConversation } from '../lib/bodies.js';
import { gatewayCommand, median, processCpuUs, tsx } from '../lib/load.js';

interface HostileCase {
  label: string;
  path: string;
  body: () => string;
  headers?: Record<string, string>;
  /** A new body every round (its first count is what costs: a body sent again is counted from the cache). */
  fresh?: boolean;
  /** Readies what the round's request goes to (a session of its own), not measured; its headers. */
  prepare?: (pool: Pool) => Promise<Record<string, string>>;
}

const user = (content: string) => ({ role: 'user', content });

/**
 * A field the gateway passes on and has no fix for (vLLM's `guided_json`, a schema for the answer), which
 * the fake provider refuses as Mistral refuses what it does not take: a 422 that quotes the value back,
 * every time.
 */
const quotedBackField = 'guided_json';

/**
 * A model that takes no stop sequences (the fake refuses them as OpenAI refuses its reasoning models') and
 * answers 200 KB in 2,000 chunks: the gateway holds the answer to the client's stops itself.
 */
const stoplessModel = 'gpt-5.2-bench';

/** Routed to the fake Anthropic (`kind: anthropic`): the request is written in its wire format. */
const anthropicModel = 'claude-bench';

/** N consecutive function calls (one assistant message when bridged), with their outputs or without. */
function functionCallItems(count: number, outputs: 'with_outputs' | 'without_outputs'): string {
  const input: unknown[] = [{ role: 'user', content: 'go' }];
  for (let index = 0; index < count; index++)
    input.push({ type: 'function_call', call_id: `c${index}`, name: 'f', arguments: '{}' });
  if (outputs === 'with_outputs')
    for (let index = 0; index < count; index++)
      input.push({ type: 'function_call_output', call_id: `c${index}`, output: 'ok' });
  return JSON.stringify({ model: 'gpt-4o-mini', input, store: false });
}

/** One assistant message with N parallel tool calls, with their results or without. */
function chatToolCalls(
  count: number,
  results: 'with_results' | 'without_results',
  model = 'gpt-4o-mini',
): string {
  const calls = Array.from({ length: count }, (_unused, index) => ({
    id: `c${index}`,
    type: 'function',
    function: { name: 'f', arguments: '{}' },
  }));
  const answers =
    results === 'with_results'
      ? calls.map((call) => ({ role: 'tool', tool_call_id: call.id, content: 'ok' }))
      : [user('and now?')];
  return JSON.stringify({
    model,
    messages: [user('go'), { role: 'assistant', content: null, tool_calls: calls }, ...answers],
  });
}

/**
 * Pinned turns (each "[pin] …" and its answer: all of them first turns, weighed apart from the rest),
 * then one task whose agent loop ran `steps` steps, too long for the window: the loop is replayed step
 * by step (its render alone is in `npm run bench -- render`).
 */
function pinnedTurnsAndLoop(pins: number, steps: number): string {
  const messages: unknown[] = [];
  for (let index = 0; index < pins; index++)
    messages.push(user(`[pin] note ${index} ${'w '.repeat(3)}`), { role: 'assistant', content: 'ok' });
  messages.push(user('go'));
  for (let index = 0; index < steps; index++)
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `c${index}`, type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: `c${index}`, content: 'r '.repeat(6) },
    );
  return JSON.stringify({ model: 'gpt-4o-mini', messages });
}

function nested(depth: number): string {
  return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

function emptyArraysDeep(count: number): string {
  const open = '['.repeat(60);
  const close = ']'.repeat(60);
  return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"x":${open}${'[],'.repeat(count - 1)}[]${close}}`;
}

/** A tool whose parameter schema nests `levels` objects, each listing its type `repeats` times. */
function repeatedTypeSchema(levels: number, repeats: number): string {
  let schema: unknown = { type: 'string' };
  for (let level = 0; level < levels; level++)
    schema = { type: Array.from({ length: repeats }, () => 'object'), properties: { a: schema } };
  return chatWithTools([functionTool('f', { type: 'object', properties: { x: schema } })]);
}

/** A tool whose deepest property, `levels` objects down, has a description of `lines` empty lines. */
function deepDescription(levels: number, lines: number): string {
  let schema: unknown = { type: 'string', description: '\n'.repeat(lines) };
  for (let level = 0; level < levels; level++) schema = { type: 'object', properties: { a: schema } };
  return chatWithTools([functionTool('f', { type: 'object', properties: { x: schema } })]);
}

/** `count` tools of about 3 KB of prose each. */
function manyTools(count: number): string {
  const text = 'Looks up the committee’s estimates for a proposal and returns them. '.repeat(45);
  return chatWithTools(
    Array.from({ length: count }, (_unused, index) =>
      functionTool(`tool_${index}`, {
        type: 'object',
        properties: { id: { type: 'string', description: `${index} ${text}` } },
      }),
    ),
  );
}

/**
 * A Messages request of `count` mid-conversation tool changes, each a system message adding a tool of 3 KB
 * by value after a user message, every other one removing the tool the one before added.
 */
function toolChanges(count: number): string {
  const text = 'Looks up the committee’s estimates for a proposal and returns them. '.repeat(45);
  const messages: unknown[] = [];
  for (let index = 0; index < count; index++) {
    const definition = {
      name: `tool_${index}`,
      description: `${index} ${text}`,
      input_schema: { type: 'object', properties: { id: { type: 'string' } } },
    };
    const blocks: unknown[] = [{ type: 'tool_addition', tool: { type: 'tool_definition', definition } }];
    if (index % 2 === 1)
      blocks.push({ type: 'tool_removal', tool: { type: 'tool_reference', name: `tool_${index - 1}` } });
    messages.push({ role: 'user', content: `step ${index}` }, { role: 'system', content: blocks });
  }
  return JSON.stringify({ model: 'local-bench', max_tokens: 16, messages });
}

/**
 * A Responses request of a catalog of `count` deferred tools of 3 KB (`defer_loading`) beside the client's
 * tool search, and `searches` searches in its input, each finding one tool.
 */
function deferredCatalog(count: number, searches: number): string {
  const text = 'Looks up the committee’s estimates for a proposal and returns them. '.repeat(45);
  const tool = (index: number) => ({
    type: 'function',
    name: `tool_${index}`,
    description: `${index} ${text}`,
    parameters: { type: 'object', properties: { id: { type: 'string' } } },
    defer_loading: true,
  });
  const input: unknown[] = [{ role: 'user', content: 'hi' }];
  for (let index = 0; index < searches; index++)
    input.push(
      {
        type: 'tool_search_call',
        call_id: `s${index}`,
        execution: 'client',
        arguments: { paths: [`tool_${index}`] },
      },
      { type: 'tool_search_output', call_id: `s${index}`, execution: 'client', tools: [tool(index)] },
    );
  return JSON.stringify({
    model: 'gpt-4o-mini',
    input,
    tools: [
      { type: 'tool_search', execution: 'client' },
      ...Array.from({ length: count }, (_unused, index) => tool(index)),
    ],
  });
}

function functionTool(name: string, parameters: unknown): unknown {
  return { type: 'function', function: { name, description: 'A tool.', parameters } };
}

function chatWithTools(tools: unknown[]): string {
  return JSON.stringify({ model: 'gpt-4o-mini', messages: [user('hi')], tools });
}

/** One Messages assistant turn of N tool_use blocks, answered by as many tool_result blocks (of `resultContent`) or not. */
function messagesToolUses(
  count: number,
  results: 'with_results' | 'without_results',
  model = 'gpt-4o-mini',
  resultContent: unknown = 'ok',
): string {
  const uses = Array.from({ length: count }, (_unused, index) => ({
    type: 'tool_use',
    id: `toolu_${index}`,
    name: 'f',
    input: {},
  }));
  const answer =
    results === 'with_results'
      ? uses.map((use) => ({ type: 'tool_result', tool_use_id: use.id, content: resultContent }))
      : [{ type: 'text', text: 'and now?' }];
  return JSON.stringify({
    model,
    max_tokens: 16,
    messages: [user('go'), { role: 'assistant', content: uses }, { role: 'user', content: answer }],
  });
}

/** A chat request asking about the PDF of a data URL, as a file part. */
const askingAboutPdf = (fileData: string): string =>
  JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what does it say?' },
          { type: 'file', file: { filename: 'a.pdf', file_data: fileData } },
        ],
      },
    ],
  });

/** A PDF's data URL whose 200 object streams each inflate to 8 MB of spaces. */
const inflatingPdf = (): string => {
  const stream = Buffer.concat([
    Buffer.from('/Type /ObjStm /Filter /FlateDecode >>\nstream\n'),
    deflateSync(Buffer.alloc(8_000_000, 0x20)),
    Buffer.from('\nendstream\n'),
  ]);
  const file = Buffer.concat([Buffer.from('%PDF-1.5\n'), ...Array.from({ length: 200 }, () => stream)]);
  return `data:application/pdf;base64,${file.toString('base64')}`;
};

/** A PDF's data URL of 30 MB of base64 (22 MB): `/Type/Font ` over and over, as slow to read as a PDF is. */
const hostilePdf = (): string =>
  `data:application/pdf;base64,${Buffer.from(`%PDF-1.7\n${'/Type/Font '.repeat(2_000_000)}`).toString('base64')}`;

/** `count` alternating user and assistant messages of `text`, each numbered, then a last user message. */
function conversationOf(count: number, text: string): string {
  return JSON.stringify({
    model: 'gpt-4o-mini',
    messages: Array.from({ length: count - 1 }, (_unused, index) =>
      index % 2 === 0 ? user(`${index} ${text}`) : { role: 'assistant', content: `${index} ${text}` },
    ).concat([user('last')]),
  });
}

/** One user message of `count` parts (chat) or blocks (Messages), and the request's other fields. */
function oneMessageOf(count: number, part: (index: number) => unknown, fields: object = {}): string {
  return JSON.stringify({
    model: 'gpt-4o-mini',
    ...fields,
    messages: [{ role: 'user', content: Array.from({ length: count }, (_unused, index) => part(index)) }],
  });
}

/** Draws the uncommon characters: each body it makes is a new one. */
const uncommonRandom = seeded(5);

/** A conversation of `count` messages of 2,000 characters drawn from `alphabet`, new each call. */
function freshConversation(count: number, alphabet: string): string {
  const text = () =>
    Array.from({ length: 2_000 }, () => alphabet[Math.floor(uncommonRandom() * alphabet.length)]).join('');
  return JSON.stringify({
    model: 'gpt-4o-mini',
    messages: Array.from({ length: count }, (_unused, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: text(),
    })),
  });
}

const englishText = 'The committee reviewed the proposal and asked for estimates. '.repeat(50).slice(0, 3000);

/**
 * A carrier as the gateway writes it (src/upstream/carried-state.ts) of `count` call extras and as many
 * reasoning details, which a client can write too: base64 of JSON the gateway decodes and reads.
 */
function bigCarrier(count: number): string {
  const calls = Array.from({ length: count }, (_unused, index) => [
    `call_${index}`,
    { google: { thought_signature: 'Cq'.padEnd(40, String(index % 10)) } },
  ]);
  const details = Array.from({ length: count }, (_unused, index) => ({
    type: 'reasoning.text',
    text: `t${index}`,
  }));
  return `ctxgate.carried.v1:${Buffer.from(JSON.stringify({ calls, message: { reasoning_details: details } })).toString('base64url')}`;
}

/** A Responses step sent back after `carriers` reasoning items, each a carrier of `count` entries. */
function carriedStep(carriers: number, count: number): string {
  return JSON.stringify({
    model: 'bench-model',
    input: [
      { role: 'user', content: 'go' },
      ...Array.from({ length: carriers }, () => ({
        type: 'reasoning',
        summary: [],
        encrypted_content: bigCarrier(count),
      })),
      { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'ok' },
    ],
  });
}

/** A Responses request of 28 summaries of 0.72 MB, each the input item `item` makes of it. */
function summariesStep(item: (text: string) => Record<string, unknown>): string {
  return JSON.stringify({
    model: 'bench-model',
    input: [
      { role: 'user', content: 'go' },
      ...Array.from({ length: 28 }, (_unused, index) => item(`Summary ${index}. ${englishText}`.repeat(240))),
      { role: 'user', content: 'go on' },
    ],
  });
}

export const hostileCases: HostileCase[] = [
  {
    label: 'responses: 9,990 function calls + outputs',
    path: '/v1/responses',
    body: () => functionCallItems(4_995, 'with_outputs'),
  },
  {
    label: 'responses: 20,000 function calls (the cap), no outputs',
    path: '/v1/responses',
    body: () => functionCallItems(20_000, 'without_outputs'),
  },
  {
    label: 'responses: 40,000 function calls, no outputs',
    path: '/v1/responses',
    body: () => functionCallItems(40_000, 'without_outputs'),
  },
  {
    label: 'responses: 40,000 function calls + outputs',
    path: '/v1/responses',
    body: () => functionCallItems(40_000, 'with_outputs'),
  },
  {
    label: 'chat: 9,997 tool calls + results',
    path: '/v1/chat/completions',
    body: () => chatToolCalls(9_997, 'with_results'),
  },
  {
    label: 'chat: 40,000 tool calls, no results',
    path: '/v1/chat/completions',
    body: () => chatToolCalls(40_000, 'without_results'),
  },
  {
    label: 'chat: 200,000 tool calls, no results',
    path: '/v1/chat/completions',
    body: () => chatToolCalls(200_000, 'without_results'),
  },
  {
    label: 'chat: 1,000 pinned turns, a 3,999-step agent loop',
    path: '/v1/chat/completions',
    body: () => pinnedTurnsAndLoop(1_000, 3_999),
  },
  {
    label: 'chat: 2,000,000 empty arrays at depth 61',
    path: '/v1/chat/completions',
    body: () => emptyArraysDeep(2_000_000),
  },
  {
    label: 'chat: nested 8,000,000 deep (16 MB)',
    path: '/v1/chat/completions',
    body: () => nested(8_000_000),
  },
  {
    label: 'embeddings (pass-through): nested 8,000,000 deep',
    path: '/v1/embeddings',
    body: () => nested(8_000_000),
  },
  {
    label: 'embeddings (pass-through): 2,000,000 empty arrays',
    path: '/v1/embeddings',
    body: () => emptyArraysDeep(2_000_000),
  },
  {
    label: 'chat: 1,000,000 stop strings',
    path: '/v1/chat/completions',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [user('hi')],
        stop: Array.from({ length: 1_000_000 }, () => 'x'),
      }),
  },
  ...(['no stop', '256 stops of 256 characters'] as const).map((stops) => ({
    // Each stop begins as the answer does (250 q's): every character of the answer is a step of each.
    label: `chat → a model that takes no stops, 200 KB streamed: ${stops}`,
    path: '/v1/chat/completions',
    body: () =>
      JSON.stringify({
        model: stoplessModel,
        messages: [user('hi')],
        stream: true,
        ...(stops === 'no stop'
          ? {}
          : {
              stop: Array.from(
                { length: 256 },
                (_unused, index) => `${'q'.repeat(250)}${String(index).padStart(6, '0')}`,
              ),
            }),
      }),
  })),
  {
    label: 'chat: n = 1,000,000',
    path: '/v1/chat/completions',
    body: () => JSON.stringify({ model: 'gpt-4o-mini', messages: [user('hi')], n: 1_000_000, max_tokens: 1 }),
  },
  {
    label: 'chat: 10,000 messages of 3 KB',
    path: '/v1/chat/completions',
    body: () => conversationOf(10_000, englishText),
  },
  {
    label: 'chat: 10,000 messages of 3 KB, window 999,999,999',
    path: '/v1/chat/completions',
    body: () => conversationOf(10_000, englishText),
    headers: { 'x-context-window': '999999999' },
  },
  {
    // Messages of 2 KB are counted exactly, not from samples: varied words, as a real conversation's.
    label: 'chat: 10,000 messages of 2 KB of varied words, window 999,999,999',
    path: '/v1/chat/completions',
    body: () => JSON.stringify({ model: 'gpt-4o-mini', messages: benchConversation(10_000, 2_000) }),
    headers: { 'x-context-window': '999999999' },
  },
  {
    label: 'chat: one user message, 9,998 answers of 2 KB after it (one turn)',
    path: '/v1/chat/completions',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        messages: benchConversation(9_999, 2_000).map((message, index) =>
          Object.assign(message, { role: index === 0 ? 'user' : 'assistant' }),
        ),
      }),
  },
  {
    label: 'responses: 9,999 input messages of 2 KB, window 999,999,999',
    path: '/v1/responses',
    body: () => JSON.stringify({ model: 'gpt-4o-mini', input: benchConversation(9_999, 2_000) }),
    headers: { 'x-context-window': '999999999' },
  },
  {
    // As the AI SDK sends a user message: one input_text part.
    label: 'responses: 9,999 input messages of one 2 KB text part, window 999,999,999',
    path: '/v1/responses',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        input: benchConversation(9_999, 2_000).map(({ role, content }) =>
          role === 'user' ? { role, content: [{ type: 'input_text', text: content }] } : { role, content },
        ),
      }),
    headers: { 'x-context-window': '999999999' },
  },
  {
    // As Claude Code sends a message: one text block.
    label: 'messages: 9,999 messages of one 2 KB text block, window 999,999,999',
    path: '/v1/messages',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        max_tokens: 16,
        messages: benchConversation(9_999, 2_000).map(({ role, content }) => ({
          role,
          content: [{ type: 'text', text: content }],
        })),
      }),
    headers: { 'x-context-window': '999999999' },
  },
  {
    // To a model whose chat template takes one system message, first (any but OpenAI's): the run of user
    // messages is joined into one (notice-placement.ts forStrictTemplate).
    label: 'responses → local model: 9,999 user messages in a row of one 2 KB text part',
    path: '/v1/responses',
    body: () =>
      JSON.stringify({
        model: 'local-bench',
        input: benchConversation(9_999, 2_000).map(({ content }) => ({
          role: 'user',
          content: [{ type: 'input_text', text: content }],
        })),
      }),
    headers: { 'x-context-window': '999999999' },
  },
  {
    // Every other message a system message in the conversation, each folded into the user message next to it.
    label: 'messages → local model: 9,999 messages of 2 KB, every other one a system message',
    path: '/v1/messages',
    body: () =>
      JSON.stringify({
        model: 'local-bench',
        max_tokens: 16,
        messages: benchConversation(9_999, 2_000).map(({ role, content }) => ({
          role: role === 'assistant' ? 'system' : role,
          content,
        })),
      }),
    headers: { 'x-context-window': '999999999' },
  },
  {
    label: 'messages: 9,999 messages of 2 KB, window 999,999,999',
    path: '/v1/messages',
    body: () =>
      JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 16, messages: benchConversation(9_999, 2_000) }),
    headers: { 'x-context-window': '999999999' },
  },
  {
    // Under 4 MB, so counted exactly, and new each round: runs of uncommon characters are the slowest
    // text to merge.
    label: 'chat: 640 messages of 2,000 uncommon Chinese characters, new each time',
    path: '/v1/chat/completions',
    fresh: true,
    body: () => {
      const random = uncommonRandom;
      const text = () =>
        Array.from({ length: 2_000 }, () => String.fromCharCode(0x4e00 + Math.floor(random() * 20_000))).join(
          '',
        );
      return JSON.stringify({
        model: 'gpt-4o-mini',
        messages: Array.from({ length: 640 }, (_unused, index) => ({
          role: index % 2 === 0 ? 'user' : 'assistant',
          content: text(),
        })),
      });
    },
  },
  {
    // Under 4 MB, so counted exactly, and new each round: random base64 and letters without spaces
    // split into pieces never counted before.
    label: 'chat: 1,900 messages of 2,000 characters of random base64, new each time',
    path: '/v1/chat/completions',
    fresh: true,
    body: () => freshConversation(1_900, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'),
  },
  {
    label: 'chat: 6,000 messages of 2,000 random letters of both cases, new each time, window 999,999,999',
    path: '/v1/chat/completions',
    fresh: true,
    body: () => freshConversation(6_000, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'),
    headers: { 'x-context-window': '999999999' },
  },
  {
    label: 'chat: 10,000 messages of 3 KB in Chinese',
    path: '/v1/chat/completions',
    body: () =>
      conversationOf(10_000, '委员会审查了该提案并要求提供估算，下周再讨论。'.repeat(80).slice(0, 1_000)),
  },
  {
    label: 'chat: 5,000 messages of 3 KB',
    path: '/v1/chat/completions',
    body: () => conversationOf(5_000, englishText),
  },
  {
    label: 'chat: one 30 MB image (data URL)',
    path: '/v1/chat/completions',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(30_000_000)}` } },
            ],
          },
        ],
      }),
  },
  {
    // The page reader's worst: a `/Type` key every 11 bytes (none a page), no object stream, no count.
    label: 'chat: one 30 MB PDF (file part, a /Type key every 11 bytes)',
    path: '/v1/chat/completions',
    body: () => askingAboutPdf(hostilePdf()),
  },
  {
    // Object streams that inflate a thousandfold: read until 2 MB came out of them.
    label: 'chat: a PDF of 200 object streams of 8 MB of spaces each (1.6 MB)',
    path: '/v1/chat/completions',
    body: () => askingAboutPdf(inflatingPdf()),
  },
  {
    label: 'responses: one 30 MB PDF (input_file, a /Type key every 11 bytes)',
    path: '/v1/responses',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'what does it say?' },
              { type: 'input_file', filename: 'a.pdf', file_data: hostilePdf() },
            ],
          },
        ],
      }),
  },
  {
    label: 'chat: 20,000 content parts',
    path: '/v1/chat/completions',
    body: () => oneMessageOf(20_000, (index) => ({ type: 'text', text: `p${index}` })),
  },
  {
    label: 'chat: 1 KB tool schema, 22 levels each typed twice',
    path: '/v1/chat/completions',
    body: () => repeatedTypeSchema(22, 2),
  },
  {
    label: 'chat: tool description of 8,000,000 lines, 28 deep',
    path: '/v1/chat/completions',
    body: () => deepDescription(28, 8_000_000),
  },
  {
    label: 'chat: 10,000 tools of 3 KB',
    path: '/v1/chat/completions',
    body: () => manyTools(10_000),
  },
  {
    label: "responses: 10,000 deferred tools of 3 KB beside the client's tool search",
    path: '/v1/responses',
    body: () => deferredCatalog(10_000, 0),
  },
  {
    label:
      'messages → local model: 5,000 tool changes, each adding a tool of 3 KB, every other one removing one',
    path: '/v1/messages',
    body: () => toolChanges(5_000),
    headers: { 'x-context-window': '999999999' },
  },
  {
    label: 'responses: 4,500 tool searches, each finding one of 4,500 deferred tools of 3 KB',
    path: '/v1/responses',
    body: () => deferredCatalog(4_500, 4_500),
  },
  {
    label: 'responses: a reasoning item carrying 150,000 call extras and reasoning details',
    path: '/v1/responses',
    body: () => carriedStep(1, 150_000),
  },
  {
    label: 'responses: 6 reasoning items, each carrying 22,000 call extras and reasoning details',
    path: '/v1/responses',
    body: () => carriedStep(6, 22_000),
  },
  {
    label: 'responses: 28 user messages of 0.72 MB (the compaction case below, its summaries as text)',
    path: '/v1/responses',
    body: () => summariesStep((text) => ({ role: 'user', content: text })),
  },
  {
    label: 'responses: 28 compaction items, each a summary of 0.72 MB (a carrier just under 1 MB)',
    path: '/v1/responses',
    body: () =>
      summariesStep((text) => ({
        type: 'compaction',
        encrypted_content: `ctxgate.compaction.v1:${Buffer.from(text).toString('base64url')}`,
      })),
  },
  {
    label: 'messages: a thinking block carrying 150,000 call extras and reasoning details',
    path: '/v1/messages',
    body: () =>
      JSON.stringify({
        model: 'bench-model',
        max_tokens: 100,
        messages: [
          { role: 'user', content: 'go' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: '', signature: bigCarrier(150_000) },
              { type: 'tool_use', id: 'call_1', name: 'f', input: {} },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'ok' }] },
        ],
      }),
  },
  {
    label: 'messages: 9,998 tool_use blocks + results',
    path: '/v1/messages',
    body: () => messagesToolUses(9_998, 'with_results'),
  },
  {
    label: 'messages: 40,000 tool_use blocks, no results',
    path: '/v1/messages',
    body: () => messagesToolUses(40_000, 'without_results'),
  },
  {
    label: 'messages: 150,000 tool results in one message',
    path: '/v1/messages',
    body: () =>
      oneMessageOf(150_000, (index) => ({ type: 'tool_result', tool_use_id: `t${index}` }), {
        max_tokens: 16,
      }),
  },
  {
    // Each result long enough to be copied from the client's bytes: found once, however many.
    label: 'messages: 9,998 tool_use blocks + results of 2 KB',
    path: '/v1/messages',
    body: () => {
      const texts = benchConversation(9_998, 2_000);
      return JSON.stringify({
        model: 'gpt-4o-mini',
        max_tokens: 16,
        messages: [
          user('go'),
          {
            role: 'assistant',
            content: texts.map((_text, index) => ({
              type: 'tool_use',
              id: `t${index}`,
              name: 'f',
              input: {},
            })),
          },
          {
            role: 'user',
            content: texts.map(({ content }, index) => ({
              type: 'tool_result',
              tool_use_id: `t${index}`,
              content,
            })),
          },
        ],
      });
    },
    headers: { 'x-context-window': '999999999' },
  },
  {
    // Every result a picture, each sent on in a user message after the results (tool-media.ts).
    label: 'messages: 9,998 tool_use blocks + results, each a small PNG, window 999,999,999',
    path: '/v1/messages',
    body: () =>
      messagesToolUses(9_998, 'with_results', 'gpt-4o-mini', [
        { type: 'text', text: 'shot' },
        {
          type: 'image',
          source: { type: 'base64', media_type: 'image/png', data: png(4, 4).toString('base64') },
        },
      ]),
    headers: { 'x-context-window': '999999999' },
  },
  {
    label: 'responses: one message of 10,000 text parts of 2 KB',
    path: '/v1/responses',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        input: [
          {
            role: 'user',
            content: benchConversation(10_000, 2_000).map(({ content }) => ({
              type: 'input_text',
              text: content,
            })),
          },
        ],
      }),
    headers: { 'x-context-window': '999999999' },
  },
  {
    label: 'chat → anthropic: 9,997 tool calls + results',
    path: '/v1/chat/completions',
    body: () => chatToolCalls(9_997, 'with_results', anthropicModel),
  },
  {
    label: 'messages → anthropic: 9,998 tool_use + results',
    path: '/v1/messages',
    body: () => messagesToolUses(9_998, 'with_results', anthropicModel),
  },
  ...[20_000, 1_300_000].map((repeats) => ({
    label: `chat: ${repeats === 20_000 ? '300 KB' : '20 MB'} field the provider quotes back`,
    path: '/v1/chat/completions',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [user('hi')],
        [quotedBackField]: { type: 'object', description: 'context length '.repeat(repeats) },
      }),
  })),
  ...[4_900, 240_000].map((count) => ({
    // Written in the subset Claude's structured outputs take (src/upstream/output-format.ts), every
    // property's bounds told in its description, up to 5,000 schemas; one of more goes as it came.
    label: `chat → anthropic: a response schema of ${count.toLocaleString('en-US')} bounded properties`,
    path: '/v1/chat/completions',
    body: () =>
      JSON.stringify({
        model: anthropicModel,
        messages: [user('hi')],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'answer', schema: boundedSchema(count) },
        },
      }),
  })),
  {
    label: 'messages: 40,000 text blocks',
    path: '/v1/messages',
    body: () => oneMessageOf(40_000, (index) => ({ type: 'text', text: `p${index}` }), { max_tokens: 16 }),
  },
];

/** An object schema of `count` integer properties, each bounded (what Claude's structured outputs do not constrain). */
function boundedSchema(count: number): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let index = 0; index < count; index++)
    properties[`p${index}`] = { type: 'integer', minimum: 0, maximum: index, description: 'A count.' };
  return { type: 'object', properties, required: ['p0'] };
}

/** The chat bodies the floor proxy is given too: the largest accepted ones. */
/** A session's instructions, and what the fake provider answers every request (its default content). */
const agentSystem = { role: 'system', content: 'You are a coding agent.' };
const fakeAnswer = { role: 'assistant', content: 'ok' };

/**
 * A new session of a client that resends its whole conversation: two turns, the second resending the
 * first (the session learns that its client resends). Its id, as the measured request's header.
 */
async function resentSession(pool: Pool): Promise<Record<string, string>> {
  const headers = {
    'content-type': 'application/json',
    authorization: 'Bearer sk-bench',
    'x-session-id': `hostile-${Math.random().toString(36).slice(2)}`,
  };
  const turns = [
    [agentSystem, user('the task')],
    [agentSystem, user('the task'), fakeAnswer, user('go on')],
  ];
  for (const messages of turns) {
    const response = await pool.request({
      method: 'POST',
      path: '/v1/chat/completions',
      headers,
      body: JSON.stringify({ model: 'gpt-4o-mini', messages }),
    });
    await response.body.text();
    if (response.statusCode !== 200) throw new Error(`a session turn answered ${response.statusCode}`);
  }
  return { 'x-session-id': headers['x-session-id'] };
}

/**
 * Session requests, with Redis: a new session's first request of 9,999 messages of 2 KB (the whole
 * conversation written in one commit), and the same conversation sent by a client that compacted its
 * own (a summary, the messages after it, the stored newest kept): the session starts over with it, its
 * messages compared with the stored ones first (docs/sessions.md#compacted-conversations).
 */
const sessionCases: HostileCase[] = [
  {
    label: 'chat, a new session: 9,999 messages of 2 KB',
    path: '/v1/chat/completions',
    body: () => conversationOf(9_999, 'x'.repeat(2_000)),
    prepare: async () => ({ 'x-session-id': `hostile-${Math.random().toString(36).slice(2)}` }),
  },
  {
    label: 'chat, a session started over: 9,999 messages of 2 KB',
    path: '/v1/chat/completions',
    body: () =>
      JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [
          agentSystem,
          user('Summary: the task so far.'),
          ...Array.from({ length: 9_995 }, (_unused, index) =>
            index % 2 === 0
              ? { role: 'assistant', content: `${index} ${'x'.repeat(2_000)}` }
              : user(`${index} ${'x'.repeat(2_000)}`),
          ),
          fakeAnswer,
          user('go on'),
        ],
      }),
    prepare: resentSession,
  },
];

/** Responses requests (stored by default) measured again with Redis configured: the record is written too. */
const storedCases = [
  'responses: 9,990 function calls + outputs',
  'responses: 9,999 input messages of 2 KB, window 999,999,999',
  'responses: 9,999 input messages of one 2 KB text part, window 999,999,999',
];

const floorCases = [
  'chat: 10,000 messages of 3 KB',
  'chat: 10,000 messages of 2 KB of varied words, window 999,999,999',
];

/** One connection to `url` that waits as long as the largest body takes. */
function slowPool(url: string): Pool {
  return new Pool(new URL(url).origin, { connections: 1, bodyTimeout: 600_000, headersTimeout: 600_000 });
}

interface Measured {
  samples: number[];
  status: number;
  code: string;
  message: string;
}

/** CPU of process `pid` for `hostile`, sent once to warm up and then `rounds` times. */
async function measure(pool: Pool, pid: number, hostile: HostileCase, rounds: number): Promise<Measured> {
  const same = hostile.fresh === true ? undefined : hostile.body();
  const measured: Measured = { samples: [], status: 0, code: '', message: '' };
  for (let round = -1; round < rounds; round++) {
    const body = same ?? hostile.body();
    const prepared = hostile.prepare === undefined ? {} : await hostile.prepare(pool);
    const before = processCpuUs(pid);
    const response = await pool.request({
      method: 'POST',
      path: hostile.path,
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-bench',
        ...hostile.headers,
        ...prepared,
      },
      body,
    });
    const text = await response.body.text();
    // Let the request's log line and garbage collection land in this request's count.
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (round >= 0) measured.samples.push((processCpuUs(pid) - before) / 1000);
    measured.status = response.statusCode;
    const error =
      measured.status >= 400
        ? (JSON.parse(text) as { error?: { code?: string; type?: string; message?: string } }).error
        : undefined;
    // A Messages error has its type where a chat error has its code.
    measured.code = String(error?.code ?? error?.type ?? '');
    measured.message = String(error?.message ?? '').slice(0, 100);
  }
  return measured;
}

function printRow(hostile: HostileCase, { samples, status, code, message }: Measured): void {
  const size = (Buffer.byteLength(hostile.body()) / 1024 / 1024).toFixed(1);
  const cpu = median(samples);
  const highest = Math.max(...samples);
  const flag = status < 300 && cpu > 200 ? '  <-- over 200 ms' : '';
  console.log(
    `${hostile.label.padEnd(52)} ${size.padStart(5)} MB  ${String(status)} ${code.padEnd(22)} ${cpu.toFixed(0).padStart(6)} ms (highest ${highest.toFixed(0)})${flag}`,
  );
  if (process.env.BENCH_HOSTILE_VERBOSE !== undefined && message !== '') console.log(`    ${message}`);
}

export async function hostileBodiesSection(): Promise<void> {
  const rounds = Number(process.env.BENCH_HOSTILE_ROUNDS ?? '5');
  const only = process.env.BENCH_HOSTILE_ONLY;
  const servers: Array<Pick<ServerProcess, 'stop'>> = [];
  /** Measures the cases of `labels` on `server`, each printed under the label `labelOf` gives it. */
  const measureCases = async (
    server: ServerProcess,
    labels: readonly string[],
    labelOf: (label: string) => string,
  ): Promise<void> => {
    const pool = slowPool(server.url);
    for (const hostile of hostileCases.filter((entry) => labels.includes(entry.label))) {
      if (only !== undefined && !hostile.label.includes(only)) continue;
      const measured = await measure(pool, server.child.pid as number, hostile, rounds);
      printRow({ ...hostile, label: labelOf(hostile.label) }, measured);
    }
    await pool.close();
  };
  try {
    // A provider with a window no body here reaches: what is measured is the gateway's own work.
    const fake = await startServerProcess([...tsx, 'bench/servers/fake-upstream-server.ts'], {
      FAKE_WINDOW: '100000000',
      FAKE_FORBIDDEN_FIELDS: quotedBackField,
      FAKE_NO_STOP: stoplessModel,
    });
    servers.push(fake);
    const anthropic = await startServerProcess([...tsx, 'bench/servers/fake-anthropic-server.ts'], {
      FAKE_WINDOW: '100000000',
    });
    servers.push(anthropic);
    const configPath = writeConfigFile(
      [
        'upstreams:',
        '  - name: anthropic',
        `    base_url: ${anthropic.url}`,
        '    kind: anthropic',
        `    models: ["${anthropicModel}"]`,
        '',
      ].join('\n'),
    );
    const gateway = await startServerProcess(gatewayCommand(), {
      CTXGATE_CONFIG: configPath,
      UPSTREAM_BASE_URL: fake.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: '',
    });
    servers.push(gateway);
    const pid = gateway.child.pid as number;
    const pool = slowPool(gateway.url);
    console.log(
      `\n== hostile-bodies: gateway CPU per body (ms, median of ${rounds} after a warm-up), status it got ==`,
    );
    for (const hostile of hostileCases) {
      if (only !== undefined && !hostile.label.includes(only)) continue;
      printRow(hostile, await measure(pool, pid, hostile, rounds));
    }
    await pool.close();
    // What parsing, re-serializing and forwarding alone cost (bench/servers/floor-proxy.ts, with its
    // access log line): the largest accepted bodies cost any proxy that reads them about this much.
    const floor = await startServerProcess([...tsx, 'bench/servers/floor-proxy.ts'], {
      UPSTREAM_BASE_URL: fake.url,
      FLOOR_LOG: '1',
    });
    servers.push(floor);
    await measureCases(floor, floorCases, (label) => `floor proxy, ${label}`);
    // Stored responses as a deployment keeps them, in Redis: the record written as well.
    const redis = await startRedisServer();
    servers.push(redis);
    const stored = await startServerProcess(gatewayCommand(), {
      CTXGATE_CONFIG: configPath,
      UPSTREAM_BASE_URL: fake.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: redis.url,
      REDIS_CLUSTER_NODES: '',
    });
    servers.push(stored);
    await measureCases(stored, storedCases, (label) => `${label}, stored in Redis`);
    const sessionPool = slowPool(stored.url);
    for (const hostile of sessionCases) {
      if (only !== undefined && !hostile.label.includes(only)) continue;
      printRow(hostile, await measure(sessionPool, stored.child.pid as number, hostile, rounds));
    }
    await sessionPool.close();
  } finally {
    for (const server of servers.reverse()) await server.stop();
  }
}
