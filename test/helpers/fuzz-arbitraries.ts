// What the fuzz test and the fuzz bench send: fast-check arbitraries of request bodies (chat completions,
// Responses, Anthropic Messages, forwarded JSON, broken JSON, deep nesting), headers and request targets (the gateway's own
// routes, forwarded paths, and spellings of both a router or a provider may read alike).
import fc from 'fast-check';
import type { RecordedRequest } from './fake-upstream.js';

/** Forwarded endpoints answer as the provider does, usage included. */
export function forwardedAnswers(request: RecordedRequest) {
  if (['/v1/embeddings', '/v1/moderations', '/v1/completions'].includes(request.path))
    return { status: 200, body: '{"object":"list","data":[],"usage":{"prompt_tokens":2,"total_tokens":2}}' };
  return undefined;
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
export const body = fc.oneof(
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
export const headers = fc
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
/** Responses API bodies: items of every kind, tools the bridge cannot run, metadata past its bounds. */
const inputItem = fc.oneof(
  fc.record(
    {
      type: fc.constant('message'),
      role: fc.constantFrom('user', 'assistant', 'system', 'developer', 'tool'),
      content: fc.oneof(
        text,
        fc.array(
          fc.oneof(
            fc.record({ type: fc.constantFrom('input_text', 'output_text'), text }),
            fc.record({ type: fc.constant('input_image'), image_url: fc.webUrl() }),
            fc.anything(),
          ),
          { maxLength: 3 },
        ),
      ),
      padding: fc.string({ maxLength: 20 }),
    },
    { requiredKeys: ['role'] },
  ),
  fc.record({
    type: fc.constant('function_call'),
    call_id: fc.constantFrom('c1', 'c2'),
    name: fc.string({ maxLength: 8 }),
    arguments: text,
  }),
  fc.record({
    type: fc.constant('function_call_output'),
    call_id: fc.constantFrom('c1', 'c2', ''),
    output: fc.oneof(text, fc.anything()),
  }),
  fc.record({ type: fc.constantFrom('reasoning', 'item_reference', 'web_search_call'), id: fc.string() }),
  fc.anything(),
);
const responsesBody = fc.record(
  {
    model: fc.oneof(fc.constantFrom('gpt-4o-mini', 'unknown-model'), fc.anything()),
    input: fc.oneof(text, fc.array(inputItem, { maxLength: 8 }), fc.anything()),
    instructions: fc.oneof(text, fc.anything()),
    tools: fc.oneof(
      fc.array(
        fc.record({
          type: fc.constantFrom('function', 'web_search', 'namespace'),
          name: fc.string({ maxLength: 8 }),
          parameters: fc.object({ maxDepth: 2 }),
        }),
        { maxLength: 3 },
      ),
      fc.anything(),
    ),
    metadata: fc.oneof(
      fc.dictionary(fc.string({ maxLength: 70 }), fc.string({ maxLength: 600 }), { maxKeys: 20 }),
      fc.anything(),
    ),
    previous_response_id: fc.oneof(fc.constant('resp_missing'), fc.string({ maxLength: 140 }), fc.anything()),
    truncation: fc.constantFrom('auto', 'disabled', 'middle'),
    store: fc.boolean(),
    stream: fc.boolean(),
    max_output_tokens: fc.integer({ min: -5, max: 300_000 }),
    include: fc.oneof(fc.constant(['reasoning.encrypted_content']), fc.anything()),
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);
/** Responses requests that pass validation, so the bridge, the chain and the engine are reached. */
const validResponsesBody = fc.record(
  {
    model: fc.constantFrom('gpt-4o-mini', 'unknown-model'),
    input: fc.oneof(
      text,
      fc.array(
        fc.oneof(
          fc.record({ role: fc.constantFrom('user', 'assistant', 'developer'), content: text }),
          fc.record({
            type: fc.constant('message'),
            role: fc.constant('user'),
            content: fc.array(fc.record({ type: fc.constant('input_text'), text }), { maxLength: 3 }),
          }),
        ),
        { minLength: 1, maxLength: 6 },
      ),
    ),
    instructions: text,
    truncation: fc.constantFrom('auto', 'disabled'),
    store: fc.boolean(),
    stream: fc.boolean(),
    max_output_tokens: fc.integer({ min: 16, max: 20_000 }),
    metadata: fc.dictionary(fc.string({ maxLength: 64 }), fc.string({ maxLength: 512 }), { maxKeys: 16 }),
  },
  { requiredKeys: ['model', 'input'] },
);
/** Anthropic Messages bodies: blocks of every kind (tool_use, tool_result, thinking, images), tools, anything. */
const anthropicBlock = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record({
    type: fc.constant('image'),
    source: fc.oneof(
      fc.record({
        type: fc.constant('base64'),
        media_type: fc.constantFrom('image/png', 'image/jpeg'),
        data: fc.base64String({ maxLength: 40 }),
      }),
      fc.record({ type: fc.constant('url'), url: fc.webUrl() }),
      fc.anything(),
    ),
  }),
  fc.record(
    {
      type: fc.constant('tool_use'),
      id: fc.oneof(fc.constantFrom('toolu_1', 'toolu_2'), fc.anything()),
      name: fc.oneof(fc.string({ maxLength: 8 }), fc.anything()),
      input: fc.oneof(fc.object({ maxDepth: 2 }), fc.anything()),
    },
    { requiredKeys: ['type'] },
  ),
  fc.record(
    {
      type: fc.constant('tool_result'),
      tool_use_id: fc.oneof(fc.constantFrom('toolu_1', 'toolu_2'), fc.anything()),
      content: fc.oneof(
        text,
        fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 2 }),
        fc.anything(),
      ),
      is_error: fc.boolean(),
    },
    { requiredKeys: ['type'] },
  ),
  fc.record({
    type: fc.constantFrom('thinking', 'redacted_thinking', 'document', 'server_tool_use'),
    thinking: text,
    signature: fc.string({ maxLength: 10 }),
    source: fc.anything(),
  }),
  fc.anything(),
);
const anthropicMessage = fc.record(
  {
    role: fc.oneof(fc.constantFrom('user', 'assistant'), fc.anything()),
    content: fc.oneof(text, fc.array(anthropicBlock, { maxLength: 4 }), fc.anything()),
  },
  { requiredKeys: ['role'] },
);
const messagesBody = fc.record(
  {
    model: fc.oneof(fc.constantFrom('gpt-4o-mini', 'claude-sonnet-4-5', 'unknown-model'), fc.anything()),
    max_tokens: fc.oneof(fc.integer({ min: -5, max: 300_000 }), fc.anything()),
    messages: fc.oneof(fc.array(anthropicMessage, { maxLength: 8 }), fc.anything()),
    system: fc.oneof(
      text,
      fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 2 }),
      fc.anything(),
    ),
    tools: fc.oneof(
      fc.array(
        fc.record(
          {
            name: fc.oneof(fc.string({ maxLength: 8 }), fc.anything()),
            input_schema: fc.oneof(fc.object({ maxDepth: 3 }), fc.anything()),
            type: fc.constantFrom('custom', 'web_search_20250305'),
          },
          { requiredKeys: ['name'] },
        ),
        { maxLength: 3 },
      ),
      fc.anything(),
    ),
    tool_choice: fc.oneof(
      fc.record({ type: fc.constantFrom('auto', 'any', 'tool', 'none'), name: fc.string({ maxLength: 8 }) }),
      fc.anything(),
    ),
    metadata: fc.oneof(fc.record({ user_id: fc.string({ maxLength: 200 }) }), fc.anything()),
    stream: fc.oneof(fc.boolean(), fc.anything()),
    stop_sequences: fc.oneof(fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }), fc.anything()),
    temperature: fc.double(),
    top_p: fc.double(),
    top_k: fc.integer(),
    thinking: fc.anything(),
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);
/** Messages requests that pass validation, natively to the fake Anthropic or bridged. */
const validMessagesBody = fc.record({
  model: fc.constantFrom('gpt-4o-mini', 'claude-sonnet-4-5'),
  max_tokens: fc.integer({ min: 1, max: 4_000 }),
  messages: fc.oneof(
    fc.tuple(text).map(([question]) => [{ role: 'user', content: question }]),
    fc.tuple(text, text, text).map(([question, answer, next]) => [
      { role: 'user', content: question },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'look', input: { q: answer } }],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: answer },
          { type: 'text', text: next },
        ],
      },
    ]),
  ),
  system: text,
  stream: fc.boolean(),
});
/** Bodies of forwarded endpoints (embeddings and the like). */
const forwardedBody = fc.record(
  {
    model: fc.oneof(fc.constantFrom('text-embedding-3-small', 'omni-moderation-latest'), fc.anything()),
    input: fc.oneof(
      text,
      fc.array(text, { maxLength: 4 }),
      fc.array(fc.array(fc.integer(), { maxLength: 5 }), { maxLength: 3 }),
      fc.anything(),
    ),
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);
const asText = (arbitrary: fc.Arbitrary<unknown>) => arbitrary.map((value) => JSON.stringify(value));
const brokenJson = fc.oneof(
  fc.json(),
  fc.string({ maxLength: 200 }),
  fc.integer({ min: 60, max: 80 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
);

/** Spellings of the gateway's own routes and of forwarded ones that a router or a provider may read alike. */
const disguisedTargets = [
  '/v1/chat%2Fcompletions',
  '/v1/chat%2fcompletions',
  '/v1//chat/completions',
  '/v1/./chat/completions',
  '/v1/Chat/Completions',
  '/v1//responses',
  '/v1/responses%2Fresp_1',
  '/v1//context/render',
  '/v1//sessions/fuzz-1',
  '/v1/sessions/%2e%2e',
  '/v1/%2e%2e/admin/budgets',
  '/v1/files%2F..%2F..%2Fsecret',
  '/v1//embeddings',
  '/v1/embeddings/',
  '/v1/embed%dings',
  '/v1//messages',
  '/v1/messages%2Fcount_tokens',
];

export interface FuzzRequest {
  method: string;
  target: string;
  body: string | undefined;
}

const request = (method: string, targets: fc.Arbitrary<string>, bodies?: fc.Arbitrary<string>) =>
  fc.record({
    method: fc.constant(method),
    target: targets,
    body: bodies === undefined ? fc.constant(undefined) : bodies,
  }) as fc.Arbitrary<FuzzRequest>;

/** A POST to an API's route: as often a valid body as a random one of its kind, now and then broken JSON. */
const apiRequest = (target: string, valid: fc.Arbitrary<unknown>, random: fc.Arbitrary<unknown>) =>
  request(
    'POST',
    fc.constant(target),
    fc.oneof(
      { weight: 3, arbitrary: asText(valid) },
      { weight: 3, arbitrary: asText(random) },
      { weight: 1, arbitrary: brokenJson },
    ),
  );

/** A request target with a body of its kind (now and then another kind's, or broken). */
export const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  { weight: 6, arbitrary: request('POST', fc.constant('/v1/chat/completions'), body) },
  { weight: 1, arbitrary: request('POST', fc.constant('/v1/context/render'), body) },
  { weight: 4, arbitrary: apiRequest('/v1/responses', validResponsesBody, responsesBody) },
  {
    weight: 1,
    arbitrary: request('POST', fc.constant('/v1/responses/input_tokens'), asText(responsesBody)),
  },
  { weight: 4, arbitrary: apiRequest('/v1/messages', validMessagesBody, messagesBody) },
  {
    weight: 1,
    arbitrary: request('POST', fc.constant('/v1/messages/count_tokens'), asText(messagesBody)),
  },
  {
    weight: 1,
    arbitrary: request(
      'GET',
      fc.oneof(
        fc.constantFrom('/v1/responses/resp_missing', '/v1/responses/resp_missing/input_items?limit=3'),
        fc.string({ minLength: 1, maxLength: 200 }).map((id) => `/v1/responses/${encodeURIComponent(id)}`),
      ),
    ),
  },
  {
    weight: 2,
    arbitrary: request(
      'POST',
      fc.constantFrom('/v1/embeddings', '/v1/moderations', '/v1/completions'),
      fc.oneof(asText(forwardedBody), brokenJson),
    ),
  },
  { weight: 1, arbitrary: request('GET', fc.constantFrom('/v1/models', '/v1/files', '/v1/batches/b1')) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('GET', 'POST', 'DELETE', 'PUT'), fc.constantFrom(...disguisedTargets), body)
      .map(([method, target, payload]) => ({
        method,
        target,
        body: method === 'POST' ? payload : undefined,
      })),
  },
  {
    weight: 1,
    arbitrary: request(
      'GET',
      fc.constantFrom('/v1/sessions/fuzz-1', '/v1/sessions/fuzz-1/history?offset=1&limit=3'),
    ),
  },
  { weight: 1, arbitrary: request('DELETE', fc.constant('/v1/sessions/fuzz-2')) },
);
