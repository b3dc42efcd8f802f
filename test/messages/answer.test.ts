// The chat engine's answers in Anthropic's format (docs/anthropic.md): a whole completion as a message,
// a chat stream as Anthropic's events (split at every byte), errors in Anthropic's shape and words.
import { describe, expect, it } from 'vitest';
import {
  anthropicErrorType,
  compactionMessageOf,
  messageEvents,
  messageOf,
  MessagesStreamTranslator,
  toAnthropicErrorBody,
} from '../../src/messages/answer.js';
import { eventsWrittenAsJson, idlessCallsStream, sseEventData } from '../helpers/sse-events.js';

const meta = { id: 'msg_1', model: 'm' };

describe('a whole chat completion as a message', () => {
  it.each(['reasoning_content', 'reasoning'])(
    'answers reasoning given as `%s` as a thinking block',
    (field) => {
      const message = messageOf(
        {
          choices: [
            { message: { role: 'assistant', content: 'Sure.', [field]: 'thinking…' }, finish_reason: 'stop' },
          ],
        },
        meta,
      );
      expect(message.content).toEqual([
        { type: 'thinking', thinking: 'thinking…', signature: '' },
        { type: 'text', text: 'Sure.' },
      ]);
    },
  );

  it('maps text, tool calls, reasoning, the finish reason and usage', () => {
    const message = messageOf(
      {
        choices: [
          {
            message: {
              role: 'assistant',
              content: 'Sure.',
              reasoning_content: 'thinking…',
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{"a":1}' } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 120, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 100 } },
      },
      meta,
    );
    expect(message).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [
        { type: 'thinking', thinking: 'thinking…', signature: '' },
        { type: 'text', text: 'Sure.' },
        { type: 'tool_use', id: 'c1', name: 'w', input: { a: 1 } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 20,
        output_tokens: 7,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 0,
      },
    });
  });
});

describe("a provider's cache writes as Anthropic's usage says them", () => {
  // OpenRouter's usage of Claude behind it: what the request wrote to the cache, what it read, the rest.
  it('counts what was written to the cache apart from the input, as Claude does', () => {
    const message = messageOf(
      {
        choices: [{ message: { role: 'assistant', content: 'Done.' }, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: 9_000,
          completion_tokens: 12,
          prompt_tokens_details: { cached_tokens: 400, cache_write_tokens: 8_500 },
        },
      },
      meta,
    );
    expect(message.usage).toEqual({
      input_tokens: 100,
      output_tokens: 12,
      cache_read_input_tokens: 400,
      cache_creation_input_tokens: 8_500,
    });
  });
});

describe("Claude's stop reason for an answer that ends in tool calls", () => {
  // vLLM with a named tool_choice, OpenVINO's model server and mlx-vlm say `stop` (vllm-project/vllm#25054,
  // openvinotoolkit/model_server#3927); Claude says `tool_use` whenever the answer ends in a call.
  const call = { id: 'c1', type: 'function', function: { name: 'w', arguments: '{}' } };

  it.each([
    ['stop', [call], 'tool_use'],
    ['tool_calls', [call], 'tool_use'],
    ['length', [call], 'max_tokens'],
    ['stop', [], 'end_turn'],
    // Claude behind a proxy: "tool_use" and no call (mastra-ai/mastra#14187); Claude Code would wait on none.
    ['tool_calls', [], 'end_turn'],
  ])('finish %s with %j calls: %s, whole and streamed', (finish, calls, expected) => {
    const message = messageOf(
      {
        choices: [
          {
            message: { role: 'assistant', content: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
            finish_reason: finish,
          },
        ],
      },
      meta,
    );
    expect(message.stop_reason).toBe(expected);
    const translator = new MessagesStreamTranslator(meta, 0);
    const choices = [
      ...calls.map((entry, index) => ({ delta: { tool_calls: [{ index, ...entry }] }, finish_reason: null })),
      { delta: {}, finish_reason: finish },
    ];
    let out = translator.start();
    for (const choice of choices)
      out += translator.push(
        Buffer.from(`data: ${JSON.stringify({ choices: [{ index: 0, ...choice }] })}\n\n`),
      );
    out += translator.push(Buffer.from('data: [DONE]\n\n')) + translator.end();
    const stop = sseEventData(out).find((event) => event.type === 'message_delta') as
      { delta: { stop_reason: string } } | undefined;
    expect(stop?.delta.stop_reason).toBe(expected);
  });
});

describe('a chat stream as Anthropic events', () => {
  const chunks = [
    { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
    { choices: [{ index: 0, delta: { content: 'Hel' } }] },
    { choices: [{ index: 0, delta: { content: 'lo' } }] },
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
    { choices: [], usage: { prompt_tokens: 50, completion_tokens: 9 } },
  ];
  const wire = `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`;

  it.each([1, 7, wire.length])('gives the same events however the bytes are split (every %i)', (size) => {
    const translator = new MessagesStreamTranslator(meta, 50);
    let out = translator.start();
    const bytes = Buffer.from(wire);
    for (let at = 0; at < bytes.length; at += size) out += translator.push(bytes.subarray(at, at + size));
    out += translator.end();
    const events = sseEventData(out);
    expect(events.map((event) => event.type)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[6]).toMatchObject({
      index: 1,
      content_block: { type: 'tool_use', id: 'c1', name: 'w', input: {} },
    });
    expect(events[10]).toMatchObject({
      delta: { stop_reason: 'tool_use' },
      usage: { output_tokens: 9, input_tokens: 50 },
    });
  });

  it.each(['reasoning_content', 'reasoning'])(
    'streams reasoning given as `%s` as a thinking block, and says its name',
    (field) => {
      const translator = new MessagesStreamTranslator(meta, 0);
      let text = translator.start();
      expect(translator.reasoningField).toBeUndefined();
      text += translator.push(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { [field]: 'Hmm.' } }] })}\n\n`,
      );
      expect(eventsWrittenAsJson(text).find((event) => event.type === 'content_block_delta')).toEqual({
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'thinking_delta', thinking: 'Hmm.' },
      });
      expect(translator.reasoningField).toBe(field);
    },
  );

  it("streams an answer given as chunks (Mistral's reasoning models) as a thinking block, then a text block", () => {
    const translator = new MessagesStreamTranslator(meta, 0);
    const text =
      translator.start() +
      translator.push(
        [
          {
            choices: [
              {
                index: 0,
                delta: { content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'Hm.' }] }] },
              },
            ],
          },
          { choices: [{ index: 0, delta: { content: [{ type: 'text', text: 'Done.' }] } }] },
          { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
        ]
          .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
          .join('') + 'data: [DONE]\n\n',
      );
    const deltas = eventsWrittenAsJson(text).filter((event) => event.type === 'content_block_delta');
    expect(deltas.map((event) => event.delta)).toEqual([
      { type: 'thinking_delta', thinking: 'Hm.' },
      { type: 'text_delta', text: 'Done.' },
    ]);
    expect(
      messageOf(
        {
          choices: [
            {
              message: {
                role: 'assistant',
                content: [
                  { type: 'thinking', thinking: [{ type: 'text', text: 'Hm.' }] },
                  { type: 'text', text: 'Done.' },
                ],
              },
              finish_reason: 'stop',
            },
          ],
        },
        meta,
      ).content,
    ).toEqual([
      { type: 'thinking', thinking: 'Hm.', signature: '' },
      { type: 'text', text: 'Done.' },
    ]);
  });

  it('writes each delta event as JSON.stringify writes its object', () => {
    const awkward = [
      'plain',
      'quote " and \\ back',
      'line\nbreak \u0001',
      'é ☃ 😀',
      '\ud800 alone',
      '\u2028',
    ];
    const translator = new MessagesStreamTranslator(meta, 0);
    let text = translator.start();
    const send = (delta: Record<string, unknown>) =>
      translator.push(`data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`);
    for (const value of awkward) text += send({ reasoning_content: value });
    text += send({ ctxgate_anthropic_signature: 'sig"1' });
    for (const value of awkward) text += send({ content: value });
    text += send({ tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{"p":"a\\b"}' } }] });
    const deltas = eventsWrittenAsJson(text).filter((event) => event.type === 'content_block_delta');
    expect(deltas).toEqual([
      ...awkward.map((thinking) => ({
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'thinking_delta', thinking },
      })),
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig"1' } },
      ...awkward.map((value) => ({
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'text_delta', text: value },
      })),
      {
        type: 'content_block_delta',
        index: 2,
        delta: { type: 'input_json_delta', partial_json: '{"p":"a\\b"}' },
      },
    ]);
    expect(Object.keys(deltas[0] as object)).toEqual(['type', 'index', 'delta']);
  });

  it("writes Claude's events chat has no word for at its own block indexes, and its stop chat cannot say", () => {
    const translator = new MessagesStreamTranslator(meta, 0);
    const send = (delta: Record<string, unknown>, finish: string | null = null) =>
      translator.push(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
      );
    const upstream = (event: Record<string, unknown>) => send({ ctxgate_anthropic_event: event });
    let text = translator.start() + send({ reasoning_content: 'Look it up.' });
    // Claude's block 3 (its index counts blocks this stream leaves out): this stream's second.
    text += upstream({
      type: 'content_block_start',
      index: 3,
      content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} },
    });
    text += upstream({
      type: 'content_block_delta',
      index: 3,
      delta: { type: 'input_json_delta', partial_json: '{"query":"x"}' },
    });
    text += upstream({ type: 'content_block_stop', index: 3 });
    text += send({ content: 'Found.' });
    text += upstream({
      type: 'content_block_delta',
      index: 4,
      delta: { type: 'citations_delta', citation: { type: 'web_search_result_location', url: 'u' } },
    });
    text += send({ ctxgate_anthropic_stop: { stop_reason: 'pause_turn', stop_sequence: null } }, 'stop');
    text += translator.push('data: [DONE]\n\n');
    const events = sseEventData(text).filter(
      (event) => event.type !== 'ping' && event.type !== 'message_start',
    );
    expect(events.map((event) => [event.type, event.index ?? null])).toEqual([
      ['content_block_start', 0],
      ['content_block_delta', 0],
      ['content_block_stop', 0],
      ['content_block_start', 1],
      ['content_block_delta', 1],
      ['content_block_stop', 1],
      ['content_block_start', 2],
      ['content_block_delta', 2],
      ['content_block_delta', 2],
      ['content_block_stop', 2],
      ['message_delta', null],
      ['message_stop', null],
    ]);
    expect(events[3]?.content_block).toEqual({
      type: 'server_tool_use',
      id: 'srvtoolu_1',
      name: 'web_search',
      input: {},
    });
    expect(events[8]?.delta).toEqual({
      type: 'citations_delta',
      citation: { type: 'web_search_result_location', url: 'u' },
    });
    expect(events[10]?.delta).toEqual({ stop_reason: 'pause_turn', stop_sequence: null });
  });

  it('keeps the gateway’s count of the prompt when the stream reports no usage', () => {
    const translator = new MessagesStreamTranslator(meta, 812);
    const withoutUsage = chunks.slice(0, -1);
    const out =
      translator.start() +
      translator.push(
        `${withoutUsage.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`,
      ) +
      translator.end();
    const delta = sseEventData(out).find((event) => event.type === 'message_delta');
    expect(delta).toMatchObject({ usage: { input_tokens: 812, output_tokens: 0 } });
  });

  // Claude Code takes a turn's usage from message_delta (BerriAI/litellm#24850): the cache read and written
  // go there, as Anthropic's own stream gives them, apart from the input.
  it('says in message_delta what the prompt cache held and was written, apart from the input', () => {
    const translator = new MessagesStreamTranslator(meta, 812);
    const usage = {
      prompt_tokens: 9_000,
      completion_tokens: 40,
      prompt_tokens_details: { cached_tokens: 7_000, cache_write_tokens: 1_500 },
    };
    const out =
      translator.start() +
      translator.push(
        `${[...chunks.slice(0, -1), { choices: [], usage }].map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`,
      ) +
      translator.end();
    const delta = sseEventData(out).find((event) => event.type === 'message_delta');
    expect(delta).toMatchObject({
      usage: {
        input_tokens: 500,
        output_tokens: 40,
        cache_read_input_tokens: 7_000,
        cache_creation_input_tokens: 1_500,
      },
    });
  });

  it('ends with an error event, and no message_stop, when the chat stream carries an error', () => {
    const translator = new MessagesStreamTranslator(meta, 0);
    translator.start();
    const out = translator.push(
      'data: {"error":{"message":"This model\'s maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error"}}\n\n',
    );
    expect(sseEventData(out + translator.end())).toEqual([
      {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: expect.stringMatching(/^prompt is too long: 9000 tokens > 8192 maximum\. /),
        },
      },
    ]);
  });

  // vLLM's error object, OpenRouter's numbered error, TGI's string: each the provider's words, as Anthropic's
  // error event; a chunk that says `"error": null` beside its choices is the answer's.
  it.each([
    ['data: {"object":"error","message":"Too long.","type":"BadRequestError","code":400}\n\n', 'Too long.'],
    ['data: {"error":{"code":502,"message":"Provider returned error"}}\n\n', 'Provider returned error'],
    ['data: {"error":"Input validation error"}\n\n', 'Input validation error'],
  ])('ends with the provider’s words for %j', (event, words) => {
    const translator = new MessagesStreamTranslator(meta, 0);
    translator.start();
    expect(sseEventData(translator.push(event) + translator.end())).toEqual([
      { type: 'error', error: { type: 'api_error', message: words } },
    ]);
  });

  it('reads a chunk with `"error": null` as the answer’s', () => {
    const translator = new MessagesStreamTranslator(meta, 0);
    translator.start();
    const out = translator.push(
      'data: {"error":null,"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}\n\n',
    );
    expect(sseEventData(out + translator.end()).map((event) => event.type)).not.toContain('error');
  });
});

describe('errors in Anthropic’s shape', () => {
  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'request_too_large'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [503, 'api_error'],
    [504, 'timeout_error'],
    [529, 'overloaded_error'],
  ])('%i is %s', (status, type) => {
    expect(anthropicErrorType(status)).toBe(type);
  });

  it('relays an Anthropic body as it is, and an OpenAI body in Anthropic’s shape', () => {
    const anthropic = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    expect(toAnthropicErrorBody(529, Buffer.from(JSON.stringify(anthropic)))).toEqual(anthropic);
    expect(
      toAnthropicErrorBody(429, Buffer.from('{"error":{"message":"Rate limit reached","type":"requests"}}')),
    ).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit reached' } });
    expect(toAnthropicErrorBody(502, Buffer.from('<html>bad gateway</html>'))).toEqual({
      type: 'error',
      error: { type: 'api_error', message: 'The upstream answered 502.' },
    });
  });

  it("reads the provider's words in its own shape: Google's array, TGI's string", () => {
    const google =
      '[{"error":{"code":400,"message":"Corrupted thought signature.","status":"INVALID_ARGUMENT"}}]';
    expect(toAnthropicErrorBody(400, Buffer.from(google))).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'Corrupted thought signature.' },
    });
    expect(
      toAnthropicErrorBody(422, Buffer.from('{"error":"Input validation error","error_type":"validation"}')),
    ).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'Input validation error' } });
  });
});

describe("a bridged compaction's answer (compaction: {type: summarize})", () => {
  const answered = (content: string | null, finish = 'stop') =>
    messageOf({ choices: [{ message: { role: 'assistant', content }, finish_reason: finish }] }, meta);

  it('is the summary the model wrote, after its thinking, as one compaction block', () => {
    const message = compactionMessageOf(answered('<think>What matters?</think>\nLisbon in May.'));
    expect(message.content).toEqual([{ type: 'compaction', content: 'Lisbon in May.' }]);
    expect(message.stop_reason).toBe('compaction');
    // Streamed as Anthropic streams an on-demand compaction: the block whole at its start.
    const events = sseEventData(messageEvents(message));
    expect(events.map((event) => event.type)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[1]?.content_block).toEqual({ type: 'compaction', content: 'Lisbon in May.' });
    expect(events[3]?.delta).toEqual({ stop_reason: 'compaction', stop_sequence: null });
  });

  it('is no summary when the answer was cut short or says nothing: it goes as it came', () => {
    for (const message of [answered('Lisbon in', 'length'), answered('  '), answered(null)])
      expect(compactionMessageOf(message)).toBe(message);
  });
});

describe('calls the provider gave no id', () => {
  it("each tool_use's id is its own, the one a session stores of the same stream", () => {
    const { events, stored } = idlessCallsStream();
    const translator = new MessagesStreamTranslator(meta, 0);
    const out =
      translator.start() + translator.push(Buffer.from(`${events}data: [DONE]\n\n`)) + translator.end();
    const given = sseEventData(out)
      .filter((event) => event.type === 'content_block_start')
      .map((event) => (event as { content_block: { type: string; id?: string } }).content_block)
      .filter((block) => block.type === 'tool_use')
      .map((block) => block.id);
    expect(given).toEqual(stored);
    expect(new Set(stored).size).toBe(2);
    expect(stored.every((id) => /^[a-zA-Z0-9_-]+$/.test(id))).toBe(true);
  });
});
