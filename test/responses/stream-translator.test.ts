// A chat completion stream as the Responses event sequence (docs/responses.md): the same events however
// the bytes are split, sequence numbers in order, text and function calls as items, the completed
// response with usage; an error event fails the response. A response made whole (a compaction) as the
// events of its items, all at once.
import { describe, expect, it } from 'vitest';
import {
  bridgeRequest,
  compactionItemOf,
  responseObject,
  usageOf,
  type ResponseMeta,
} from '../../src/responses/bridge.js';
import { ResponsesStreamTranslator, wholeResponseEvents } from '../../src/responses/stream-translator.js';
import { eventsWrittenAsJson, idlessCallsStream, sseEventData } from '../helpers/sse-events.js';

const meta = { id: 'resp_1', createdAt: 1, model: 'm', echo: {} };
const chunks = [
  { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
  { choices: [{ index: 0, delta: { content: 'Hé' } }] },
  { choices: [{ index: 0, delta: { content: 'llo' } }] },
  {
    choices: [
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, id: 'c1', function: { name: 'w', arguments: '{"a"' } }] },
      },
    ],
  },
  { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }] },
  { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
  { choices: [], usage: { prompt_tokens: 40, completion_tokens: 6 } },
];
const wire = Buffer.from(
  `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`,
);

function translate(size: number) {
  const translator = new ResponsesStreamTranslator(meta);
  let out = translator.start();
  for (let at = 0; at < wire.length; at += size) out += translator.push(wire.subarray(at, at + size));
  const { events, response } = translator.finish();
  return { events: sseEventData(out + events), response, reply: translator.reply() };
}

/**
 * A chat stream of tool call deltas (each `[index, fields]`), ending in tool_calls, through a translator
 * that knows `tools`: its events as JSON, its response and the translator.
 */
function streamCalls(
  tools: NonNullable<ResponseMeta['tools']>,
  deltas: Array<[number, Record<string, unknown>]>,
) {
  const translator = new ResponsesStreamTranslator({ ...meta, tools });
  let text = translator.start();
  for (const [index, fields] of deltas)
    text += translator.push(
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index, ...fields }] } }] })}\n\n`,
    );
  text += translator.push('data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n');
  const { events: closing, response } = translator.finish();
  return { events: eventsWrittenAsJson(text + closing), response, translator };
}

describe('a chat stream as Responses events', () => {
  it.each([1, 5, wire.length])('gives the same events however the bytes are split (every %i)', (size) => {
    const { events, response, reply } = translate(size);
    // Item ids are made afresh for each response: compared without them.
    const withoutIds = (value: unknown) =>
      JSON.stringify(value).replace(/"(?:msg|fc)_[A-Za-z0-9_-]+"/g, '"id"');
    expect(withoutIds(events)).toBe(withoutIds(translate(wire.length).events));
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_event, index) => index));
    expect(events[0]?.type).toBe('response.created');
    expect(events.at(-1)?.type).toBe('response.completed');
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta)
      .join('');
    expect(text).toBe('Héllo');
    // The closing events carry the deltas joined whole.
    expect(events.find((event) => event.type === 'response.output_text.done')).toMatchObject({
      text: 'Héllo',
    });
    expect(events.find((event) => event.type === 'response.content_part.done')).toMatchObject({
      part: { text: 'Héllo' },
    });
    expect(events.find((event) => event.type === 'response.function_call_arguments.done')).toMatchObject({
      arguments: '{"a":1}',
    });
    expect(response).toMatchObject({
      status: 'completed',
      usage: { input_tokens: 40, output_tokens: 6 },
      output: [
        { type: 'message', content: [{ type: 'output_text', text: 'Héllo' }] },
        { type: 'function_call', call_id: 'c1', name: 'w', arguments: '{"a":1}' },
      ],
    });
    expect(reply).toMatchObject({
      role: 'assistant',
      content: 'Héllo',
      tool_calls: [{ id: 'c1', function: { name: 'w', arguments: '{"a":1}' } }],
    });
  });

  it('gives a call of no arguments ("" from OpenRouter\'s Claude, Ollama) its arguments as "{}"', () => {
    // openai/openai-agents-js#664: the Agents SDK parses them as JSON.
    const { events, response, translator } = streamCalls(new Map(), [
      [0, { id: 'c1', type: 'function', function: { name: 'list_files', arguments: '' } }],
      [1, { id: 'c2', type: 'function', function: { name: 'read', arguments: '{"p":1}' } }],
    ]);
    const added = events
      .filter((event) => event.type === 'response.function_call_arguments.delta')
      .map((event) => [event.output_index, event.delta]);
    expect(added).toContainEqual([0, '{}']);
    expect(
      events
        .filter((event) => event.type === 'response.function_call_arguments.done')
        .map((event) => event.arguments),
    ).toEqual(['{}', '{"p":1}']);
    expect((response.output as Array<{ arguments?: unknown }>).map((item) => item.arguments)).toEqual([
      '{}',
      '{"p":1}',
    ]);
    expect(translator.reply()).toMatchObject({
      tool_calls: [{ function: { arguments: '{}' } }, { function: { arguments: '{"p":1}' } }],
    });
  });

  it.each(['reasoning_content', 'reasoning'])(
    "gives a thinking model's %s as a reasoning item, its text as reasoning_text events",
    (field) => {
      const thinking = [
        { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
        { choices: [{ index: 0, delta: { [field]: 'Run ' } }] },
        { choices: [{ index: 0, delta: { [field]: 'it.' } }] },
        { choices: [{ index: 0, delta: { content: 'Done.' } }] },
        { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      ];
      const translator = new ResponsesStreamTranslator(meta);
      let out = translator.start();
      out += translator.push(thinking.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join(''));
      const { events: closing, response } = translator.finish();
      const events = sseEventData(out + closing);
      expect(
        events.filter((event) => String(event.type).includes('reasoning')).map((event) => event.type),
      ).toEqual([
        'response.reasoning_text.delta',
        'response.reasoning_text.delta',
        'response.reasoning_text.done',
      ]);
      expect(events.find((event) => event.type === 'response.reasoning_text.done')).toMatchObject({
        output_index: 0,
        text: 'Run it.',
      });
      const added = events.filter((event) => event.type === 'response.output_item.added');
      expect(added.map((event) => (event.item as { type: string }).type)).toEqual(['reasoning', 'message']);
      expect(response.output).toMatchObject([
        { type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Run it.' }] },
        { type: 'message', content: [{ type: 'output_text', text: 'Done.' }] },
      ]);
      // Stored under the provider's own name: it goes back to that provider.
      expect(translator.reply()).toMatchObject({ content: 'Done.', [field]: 'Run it.' });
    },
  );

  it("carries what the provider attached to a call (Gemini's thought signature) in a reasoning item before it", () => {
    const signature = { google: { thought_signature: 'CrICAdHtim827fQ==' } };
    const gemini = [
      { choices: [{ index: 0, delta: { role: 'assistant', content: 'Reading.' } }] },
      {
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [
                {
                  index: 0,
                  id: 'function-call-1',
                  type: 'function',
                  function: { name: 'w', arguments: '{"a":1}' },
                  extra_content: signature,
                },
              ],
            },
          },
        ],
      },
      {
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [{ index: 1, id: 'function-call-2', function: { name: 'w', arguments: '{}' } }],
            },
          },
        ],
      },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ];
    const translator = new ResponsesStreamTranslator(meta);
    let out = translator.start();
    out += translator.push(gemini.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join(''));
    const { events: closing, response } = translator.finish();
    const events = sseEventData(out + closing);
    const added = events.filter((event) => event.type === 'response.output_item.added');
    expect(added.map((event) => (event.item as { type: string }).type)).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call',
    ]);
    const done = events.filter((event) => event.type === 'response.output_item.done');
    expect(done.map((event) => event.item)).toEqual(response.output);
    const carrier = (response.output as Array<Record<string, unknown>>)[1];
    expect(carrier).toEqual({
      id: expect.stringMatching(/^rs_/),
      type: 'reasoning',
      summary: [],
      encrypted_content: expect.any(String),
    });
    // Sent back, the calls have it again; the chain's stored reply keeps it on the call.
    const bridged = bridgeRequest({ model: 'm', input: response.output as unknown[] });
    expect(bridged.messages.at(-1)?.tool_calls).toEqual([
      {
        id: 'function-call-1',
        type: 'function',
        function: { name: 'w', arguments: '{"a":1}' },
        extra_content: signature,
      },
      { id: 'function-call-2', type: 'function', function: { name: 'w', arguments: '{}' } },
    ]);
    expect(translator.reply()).toMatchObject({
      content: 'Reading.',
      tool_calls: [{ id: 'function-call-1', extra_content: signature }, { id: 'function-call-2' }],
    });
    expect((translator.reply().tool_calls as unknown[])[1]).not.toHaveProperty('extra_content');
  });

  it("carries OpenRouter's reasoning_details, given in pieces, in the item before the answer's text", () => {
    const piece = (fields: Record<string, unknown>) => ({
      choices: [
        { index: 0, delta: { reasoning_details: [{ type: 'reasoning.text', index: 0, ...fields }] } },
      ],
    });
    const openrouter = [
      {
        choices: [{ index: 0, delta: { reasoning: 'Read ', ...piece({ text: 'Read ' }).choices[0]?.delta } }],
      },
      piece({ text: 'it.' }),
      piece({ signature: 'EqQB' }),
      { choices: [{ index: 0, delta: { content: 'Done.' } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
    ];
    const translator = new ResponsesStreamTranslator(meta);
    translator.start();
    translator.push(openrouter.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join(''));
    const { response } = translator.finish();
    const details = [{ type: 'reasoning.text', index: 0, text: 'Read it.', signature: 'EqQB' }];
    expect((response.output as Array<{ type: string }>).map((item) => item.type)).toEqual([
      'reasoning',
      'reasoning',
      'message',
    ]);
    // Sent back, the assistant message has them again; the chain's stored reply keeps them.
    const bridged = bridgeRequest({ model: 'm', input: response.output as unknown[] });
    expect(bridged.messages.at(-1)).toMatchObject({ role: 'assistant', reasoning_details: details });
    expect(translator.reply()).toMatchObject({ content: 'Done.', reasoning_details: details });
  });

  it("gives an answer streamed as chunks (Mistral's reasoning models) as reasoning, then text", () => {
    const magistral = [
      {
        choices: [
          {
            index: 0,
            delta: { content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'Think.' }] }] },
          },
        ],
      },
      { choices: [{ index: 0, delta: { content: [{ type: 'text', text: 'Done.' }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
    ];
    const translator = new ResponsesStreamTranslator(meta);
    translator.start();
    translator.push(magistral.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join(''));
    expect(translator.finish().response.output).toMatchObject([
      { type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Think.' }] },
      { type: 'message', content: [{ type: 'output_text', text: 'Done.' }] },
    ]);
  });

  it('writes each event as JSON.stringify writes its object, the delta events included', () => {
    const translator = new ResponsesStreamTranslator(meta);
    const deltas = ['plain', 'quote " and \\ back', 'line\nbreak\ttab \u0001', 'é ☃ 😀', '\ud800 alone'];
    const calls = ['{"path":"a\\b"}', '\u2028'];
    let text = translator.start();
    for (const content of deltas)
      text += translator.push(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`);
    for (const [at, args] of calls.entries())
      text += translator.push(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...(at === 0 ? { id: 'c', function: { name: 'f', arguments: args } } : { function: { arguments: args } }) }] } }] })}\n\n`,
      );
    // Every event's data line is the compact JSON of its own object, members in the documented order.
    const events = eventsWrittenAsJson(text);
    const textDeltas = events.filter((event) => event.type === 'response.output_text.delta');
    expect(textDeltas.map((event) => event.delta)).toEqual(deltas);
    expect(Object.keys(textDeltas[0] as object)).toEqual([
      'type',
      'sequence_number',
      'item_id',
      'output_index',
      'content_index',
      'delta',
      'logprobs',
    ]);
    const argumentDeltas = events.filter((event) => event.type === 'response.function_call_arguments.delta');
    expect(argumentDeltas.map((event) => event.delta)).toEqual(calls);
    expect(argumentDeltas[1]).toMatchObject({ output_index: 1 });
    expect(Object.keys(argumentDeltas[0] as object)).toEqual([
      'type',
      'sequence_number',
      'item_id',
      'output_index',
      'delta',
    ]);
  });

  it("turns a custom tool's call into a custom_tool_call whose input comes whole with the closing events", () => {
    const tools = new Map([
      ['functions__exec', { name: 'exec', namespace: 'functions', custom: true }],
      ['collaboration__spawn_agent', { name: 'spawn_agent', namespace: 'collaboration', custom: false }],
    ]);
    const { events, response, translator } = streamCalls(tools, [
      [0, { id: 'c1', function: { name: 'functions__exec', arguments: '{"input":"tex' } }],
      [0, { function: { arguments: 't(\\"hi\\")"}' } }],
      [1, { id: 'c2', function: { name: 'collaboration__spawn_agent', arguments: '{}' } }],
    ]);
    expect(events.map((event) => `${String(event.type)} ${String(event.output_index ?? '')}`)).toEqual([
      'response.created ',
      'response.in_progress ',
      'response.output_item.added 0',
      'response.output_item.added 1',
      'response.function_call_arguments.delta 1',
      'response.custom_tool_call_input.delta 0',
      'response.custom_tool_call_input.done 0',
      'response.output_item.done 0',
      'response.function_call_arguments.done 1',
      'response.output_item.done 1',
      'response.completed ',
    ]);
    expect(events[2]).toMatchObject({
      item: {
        type: 'custom_tool_call',
        status: 'in_progress',
        call_id: 'c1',
        namespace: 'functions',
        name: 'exec',
        input: '',
      },
    });
    expect(events[5]).toMatchObject({ delta: 'text("hi")' });
    expect(events[6]).toMatchObject({ input: 'text("hi")' });
    expect(response.output).toEqual([
      expect.objectContaining({
        type: 'custom_tool_call',
        call_id: 'c1',
        namespace: 'functions',
        name: 'exec',
        input: 'text("hi")',
      }),
      expect.objectContaining({
        type: 'function_call',
        call_id: 'c2',
        namespace: 'collaboration',
        name: 'spawn_agent',
        arguments: '{}',
      }),
    ]);
    // The stored reply is the chat message the model wrote, under the chat names.
    expect(translator.reply()).toMatchObject({
      tool_calls: [
        { id: 'c1', function: { name: 'functions__exec', arguments: '{"input":"text(\\"hi\\")"}' } },
        { id: 'c2', function: { name: 'collaboration__spawn_agent', arguments: '{}' } },
      ],
    });
  });

  it("turns a call of the client's tool search into a tool_search_call whose arguments come whole when it is done", () => {
    const tools = new Map([['tool_search', { name: 'tool_search', custom: false, search: true }]]);
    const { events, response, translator } = streamCalls(tools, [
      [0, { id: 'c1', function: { name: 'tool_search', arguments: '{"query":"inv' } }],
      [0, { function: { arguments: 'entory","limit":3}' } }],
    ]);
    // No argument deltas: Codex reads a search's arguments, an object, from the item when it is done.
    expect(events.map((event) => String(event.type))).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[2]).toMatchObject({
      item: {
        type: 'tool_search_call',
        status: 'in_progress',
        call_id: 'c1',
        execution: 'client',
        arguments: {},
      },
    });
    const done = { type: 'tool_search_call', status: 'completed', call_id: 'c1', execution: 'client' };
    expect(events[3]).toMatchObject({
      item: { ...done, id: expect.stringMatching(/^tsc_/), arguments: { query: 'inventory', limit: 3 } },
    });
    expect(response.output).toEqual([(events[3] as { item: unknown }).item]);
    expect(translator.reply()).toMatchObject({
      tool_calls: [
        { id: 'c1', function: { name: 'tool_search', arguments: '{"query":"inventory","limit":3}' } },
      ],
    });
  });

  it('adds a call of a tool the client runs only when it is done, whole (the AI SDK reads its path and type from the added item)', () => {
    const tools = new Map([
      ['apply_patch', { name: 'apply_patch', custom: false, local: 'apply_patch' as const }],
      ['shell', { name: 'shell', custom: false, local: 'shell' as const }],
    ]);
    const { events, response } = streamCalls(tools, [
      [0, { id: 'c1', function: { name: 'apply_patch', arguments: '{"type":"create_file",' } }],
      [0, { function: { arguments: '"path":"a.txt","diff":"+hi"}' } }],
      [1, { id: 'c2', function: { name: 'shell', arguments: '{"commands":["ls"]}' } }],
    ]);
    expect(events.map((event) => `${String(event.type)} ${String(event.output_index ?? '')}`)).toEqual([
      'response.created ',
      'response.in_progress ',
      'response.output_item.added 0',
      'response.output_item.done 0',
      'response.output_item.added 1',
      'response.output_item.done 1',
      'response.completed ',
    ]);
    const patch = {
      type: 'apply_patch_call',
      status: 'completed',
      call_id: 'c1',
      operation: { type: 'create_file', path: 'a.txt', diff: '+hi' },
    };
    expect(events[2]).toMatchObject({ item: patch });
    expect(events[3]).toMatchObject({ item: patch });
    expect(events[4]).toMatchObject({
      item: { type: 'shell_call', call_id: 'c2', action: { commands: ['ls'] } },
    });
    expect(response.output).toEqual([
      (events[3] as { item: unknown }).item,
      (events[5] as { item: unknown }).item,
    ]);
  });

  it('gives the search items that load a deferred tool, whole, before its first call', () => {
    const definition = { type: 'function', name: 'lookup_1', defer_loading: true };
    const tools = new Map([['lookup_1', { name: 'lookup_1', custom: false, loads: definition }]]);
    const { events, response, translator } = streamCalls(tools, [
      [0, { id: 'c1', function: { name: 'lookup_1', arguments: '{"id":"X1"}' } }],
      [1, { id: 'c2', function: { name: 'lookup_1', arguments: '{"id":"X2"}' } }],
    ]);
    expect(events.map((event) => `${String(event.type)} ${String(event.output_index ?? '')}`)).toEqual([
      'response.created ',
      'response.in_progress ',
      'response.output_item.added 0',
      'response.output_item.done 0',
      'response.output_item.added 1',
      'response.output_item.done 1',
      'response.output_item.added 2',
      'response.function_call_arguments.delta 2',
      'response.output_item.added 3',
      'response.function_call_arguments.delta 3',
      'response.function_call_arguments.done 2',
      'response.output_item.done 2',
      'response.function_call_arguments.done 3',
      'response.output_item.done 3',
      'response.completed ',
    ]);
    expect((response.output as Array<Record<string, unknown>>).map((item) => item.type)).toEqual([
      'tool_search_call',
      'tool_search_output',
      'function_call',
      'function_call',
    ]);
    expect((response.output as Array<Record<string, unknown>>)[1]).toMatchObject({ tools: [definition] });
    // The stored reply is the model's: its two calls.
    expect((translator.reply().tool_calls as unknown[]).length).toBe(2);
  });

  it('fails the response on an error event', () => {
    const translator = new ResponsesStreamTranslator(meta);
    translator.start();
    const out = translator.push('data: {"error":{"code":"server_error","message":"boom"}}\n\n');
    expect(translator.succeeded).toBe(false);
    expect(sseEventData(out)).toEqual([
      expect.objectContaining({ type: 'error', code: 'server_error', message: 'boom' }),
    ]);
  });

  it('reads vLLM’s error object as an error, with its words', () => {
    const translator = new ResponsesStreamTranslator(meta);
    translator.start();
    const out = translator.push(
      'data: {"object":"error","message":"Too long.","type":"BadRequestError","code":400}\n\n',
    );
    expect(sseEventData(out)).toEqual([
      expect.objectContaining({ type: 'error', code: '400', message: 'Too long.' }),
    ]);
    expect(translator.succeeded).toBe(false);
  });

  // OpenRouter's codes are numbers; the Responses API's (and the AI SDK's schema of it) a string or null.
  it.each([
    [400, '400'],
    [null, null],
    [undefined, null],
    ['context_length_exceeded', 'context_length_exceeded'],
  ])(
    'words an error whose code is %j as the Responses API does, and fails the response with it',
    (code, said) => {
      const translator = new ResponsesStreamTranslator(meta);
      translator.start();
      const out = translator.push(`data: ${JSON.stringify({ error: { code, message: 'Too long.' } })}\n\n`);
      expect(sseEventData(out)).toEqual([
        { type: 'error', sequence_number: 2, code: said, message: 'Too long.', param: null },
      ]);
      const failed = sseEventData(translator.finish().events).at(-1) as { response: { error: unknown } };
      expect(failed.response.error).toEqual({ code: said, message: 'Too long.' });
    },
  );
});

describe('a response made whole as Responses events (a compaction asked for as a stream)', () => {
  const item = compactionItemOf('cmp_1', 'Pages 1 to 4 were read.');
  it.each([
    ['stop', 'response.completed', 'completed'],
    ['length', 'response.incomplete', 'incomplete'],
  ])('gives each item added and done, then the response (finish %s: %s)', (finish, last, status) => {
    const response = responseObject(
      meta,
      [item],
      finish,
      usageOf({ promptTokens: 900, completionTokens: 40 }),
    );
    const events = sseEventData(wholeResponseEvents(meta, response));
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      last,
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual([0, 1, 2, 3, 4]);
    expect(events[0]).toMatchObject({ response: { id: 'resp_1', status: 'in_progress', output: [] } });
    expect(events[2]).toMatchObject({ output_index: 0, item });
    expect(events[3]).toMatchObject({ output_index: 0, item });
    expect(events[4]).toMatchObject({
      response: { status, output: [item], usage: { input_tokens: 900, output_tokens: 40 } },
    });
  });
});

describe('calls the provider gave no id', () => {
  it("each function_call's call_id is its own, the one a session stores of the same stream", () => {
    const { events, stored } = idlessCallsStream();
    const translator = new ResponsesStreamTranslator(meta);
    translator.start();
    translator.push(events);
    const { response } = translator.finish();
    const given = (response.output as Array<{ type: string; call_id?: string }>)
      .filter((item) => item.type === 'function_call')
      .map((item) => item.call_id);
    expect(given).toEqual(stored);
    expect(new Set(stored).size).toBe(2);
    expect(stored.every((id) => /^[A-Za-z0-9_-]{1,40}$/.test(id))).toBe(true);
  });
});
