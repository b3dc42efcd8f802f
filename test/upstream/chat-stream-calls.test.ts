// A chat stream's tool calls given in OpenAI's shape (chat-stream-calls.ts), as tables of the dialects
// providers stream them in and what the client is given of each.
import { describe, expect, it } from 'vitest';
import { ChatStreamCallNormalizer } from '../../src/upstream/chat-stream-calls.js';
import { StreamReplyAssembler } from '../../src/upstream/reply-assembler.js';

/** One chat chunk's event, its first choice's delta carrying `calls`. */
const event = (calls: unknown[], choice = 0, newline = '\n'): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: choice, delta: { tool_calls: calls }, finish_reason: null }] })}${newline}${newline}`;
/** The tool calls of each event the client is given. */
const givenCalls = (events: Buffer): unknown[] =>
  events
    .toString()
    .split('\n')
    .filter((line) => line.startsWith('data: {') && line.includes('"tool_calls"'))
    .map(
      (line) =>
        (JSON.parse(line.slice(6)) as { choices: [{ delta: { tool_calls: unknown } }] }).choices[0].delta
          .tool_calls,
    );

const first = (index: number | undefined, id: string, name: string, args = '') => ({
  ...(index === undefined ? {} : { index }),
  id,
  type: 'function',
  function: { name, arguments: args },
});
const more = (index: number, args: string) => ({ index, function: { arguments: args } });

describe('ChatStreamCallNormalizer', () => {
  it("passes OpenAI's own deltas on byte for byte", () => {
    const normalizer = new ChatStreamCallNormalizer();
    for (const text of [
      event([first(0, 'a', 'f')]),
      event([more(0, '{"x":1}')]),
      event([first(1, 'b', 'g', '{}')]),
    ]) {
      const bytes = Buffer.from(text);
      expect(normalizer.rewrite(bytes)).toBe(bytes);
    }
  });

  it.each([
    [
      "Gemini's OpenAI-compatible endpoint: parallel calls all at index 0",
      [[first(0, 'a', 'f')], [more(0, '{"c":"P"}')], [first(0, 'b', 'f')], [more(0, '{"c":"L"}')]],
      [[first(0, 'a', 'f')], [more(0, '{"c":"P"}')], [first(1, 'b', 'f')], [more(1, '{"c":"L"}')]],
    ],
    [
      'MiniMax on NVIDIA NIM: the id, type and whole name on every delta',
      [[first(0, 'a', 'f', '{"c":')], [first(0, 'a', 'f', '"P"}')], [first(0, 'a', 'f')]],
      [[first(0, 'a', 'f', '{"c":')], [more(0, '"P"}')], [more(0, '')]],
    ],
    [
      'calls whole without an index',
      [[first(undefined, 'a', 'f', '{}')], [first(undefined, 'b', 'g', '{}')]],
      [[first(0, 'a', 'f', '{}')], [first(1, 'b', 'g', '{}')]],
    ],
    [
      "SGLang: a call's continuations repeat its id, type and name as null",
      [[first(0, 'a', 'f')], [{ index: 0, id: null, type: null, function: { name: null, arguments: '{}' } }]],
      [[first(0, 'a', 'f')], [more(0, '{}')]],
    ],
    [
      'DeepSeek and Baidu Qianfan in cumulative mode: each delta the arguments so far',
      [[first(0, 'a', 'f', '{"c":')], [more(0, '{"c":"P"')], [more(0, '{"c":"P", "u":{"d":1}}')]],
      [[first(0, 'a', 'f', '{"c":')], [more(0, '"P"')], [more(0, ', "u":{"d":1}}')]],
    ],
    [
      'a proxy that sends whole arguments again',
      [[first(0, 'a', 'f', '{"c":"P"}')], [more(0, '{"c":"P"}')], [first(0, 'a', 'f', '{"c":"P"}')]],
      [[first(0, 'a', 'f', '{"c":"P"}')], [more(0, '')], [more(0, '')]],
    ],
    [
      "OpenAI's, an object that nests one: as they came",
      [[first(0, 'a', 'f', '{"c":')], [more(0, '{"c":')], [more(0, '"P"}}')]],
      [[first(0, 'a', 'f', '{"c":')], [more(0, '{"c":')], [more(0, '"P"}}')]],
    ],
  ])('%s: each call at an index of its own, its id and name once', (_name, deltas, expected) => {
    const normalizer = new ChatStreamCallNormalizer();
    const given = deltas.flatMap((calls) => givenCalls(normalizer.rewrite(Buffer.from(event(calls)))));
    expect(given).toEqual(expected);
  });

  it('keeps each choice’s calls apart, the events without calls as they are, and CRLF lines', () => {
    const normalizer = new ChatStreamCallNormalizer();
    const text =
      'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\r\n\r\n' +
      event([first(0, 'a', 'f', '{}')], 0, '\r\n') +
      event([first(0, 'b', 'g', '{}')], 1, '\r\n') +
      event([first(0, 'c', 'h', '{}')], 0, '\r\n') +
      'data: not json "tool_calls"\r\n\r\n';
    const out = normalizer.rewrite(Buffer.from(text)).toString();
    expect(
      out.startsWith('data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\r\n\r\n'),
    ).toBe(true);
    expect(out.endsWith('data: not json "tool_calls"\r\n\r\n')).toBe(true);
    expect(out.split('\r\n\r\n')).toHaveLength(6);
    expect(givenCalls(Buffer.from(out.replaceAll('\r', '')))).toEqual([
      [first(0, 'a', 'f', '{}')],
      [first(0, 'b', 'g', '{}')],
      [first(1, 'c', 'h', '{}')],
    ]);
  });
});

describe("a stream whose chunks have no id (OpenVINO's model server)", () => {
  const idless = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({ object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const idsOf = (bytes: Buffer) =>
    bytes
      .toString()
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => (JSON.parse(line.slice(6)) as { id?: unknown }).id);

  it('gives every chunk one id, as OpenAI gives a stream one', () => {
    const normalizer = new ChatStreamCallNormalizer();
    const ids = [
      ...idsOf(normalizer.rewrite(Buffer.from(': keep-alive\n\n'))),
      ...idsOf(
        normalizer.rewrite(
          Buffer.from(idless({ role: 'assistant', content: '' }) + idless({ content: 'Hi' })),
        ),
      ),
      ...idsOf(normalizer.rewrite(Buffer.from(idless({}, 'stop')))),
    ];
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^chatcmpl-[\w-]{8,}$/);
  });

  it('a stream whose chunks have theirs goes as it came', () => {
    const normalizer = new ChatStreamCallNormalizer();
    const first = Buffer.from(
      `data: {"choices":[{"index":0,"delta":{"content":"Hi"}}],"created":7,"id":"x","model":"m"}\n\n`,
    );
    expect(normalizer.rewrite(first)).toBe(first);
    const later = Buffer.from(`data: {"id":"x","choices":[{"index":0,"delta":{"content":"there"}}]}\n\n`);
    expect(normalizer.rewrite(later)).toBe(later);
  });

  it("a later chunk without one (Zen's cost, anomalyco/opencode#39061) is given the stream's envelope", () => {
    const normalizer = new ChatStreamCallNormalizer();
    const first = Buffer.from(
      `data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"kimi-k2.6","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n`,
    );
    normalizer.rewrite(first);
    const later = normalizer.rewrite(
      Buffer.from(
        `data: {"choices":[{"index":0,"delta":{"content":"!"}}],"id":"chatcmpl-7"}\n\ndata: {"choices":[],"cost":"0"}\n\ndata: [DONE]\n\n`,
      ),
    );
    const lines = later.toString().split('\n');
    expect(lines[0]).toBe('data: {"choices":[{"index":0,"delta":{"content":"!"}}],"id":"chatcmpl-7"}');
    expect(JSON.parse(lines[2]?.slice(6) ?? '')).toEqual({
      id: 'chatcmpl-7',
      object: 'chat.completion.chunk',
      created: 1700000000,
      model: 'kimi-k2.6',
      choices: [],
      cost: '0',
    });
    expect(lines[4]).toBe('data: [DONE]');
  });
});

describe("a stream's finish as its calls say it", () => {
  const finish = (reason: string, choice = 0, spaced = false): string => {
    const json = JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      choices: [{ index: choice, delta: {}, finish_reason: reason }],
    });
    return `data: ${spaced ? json.replace('"finish_reason":', '"finish_reason": ') : json}\n\n`;
  };
  const finishOf = (bytes: Buffer): unknown =>
    (JSON.parse(bytes.toString().slice(6)) as { choices: [{ finish_reason: unknown }] }).choices[0]
      .finish_reason;

  it.each([false, true])(
    'calls that finish as "stop" (Gemini, LiteLLM: anomalyco/opencode#14972) finish as "tool_calls" (spaced: %s)',
    (spaced) => {
      const normalizer = new ChatStreamCallNormalizer();
      normalizer.rewrite(Buffer.from(event([first(0, 'a', 'f', '{}')])));
      expect(finishOf(normalizer.rewrite(Buffer.from(finish('stop', 0, spaced))))).toBe('tool_calls');
    },
  );

  it('a call and its finish in one event', () => {
    const normalizer = new ChatStreamCallNormalizer();
    const chunk = {
      id: 'chatcmpl-1',
      choices: [{ index: 0, delta: { tool_calls: [first(0, 'a', 'f', '{}')] }, finish_reason: 'stop' }],
    };
    const out = normalizer.rewrite(Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`));
    expect(finishOf(out)).toBe('tool_calls');
    expect(givenCalls(out)).toEqual([[first(0, 'a', 'f', '{}')]]);
  });

  it('a call of no arguments ("" from OpenRouter\'s Claude, Ollama) is given "{}" in its finishing event', () => {
    const normalizer = new ChatStreamCallNormalizer();
    normalizer.rewrite(Buffer.from(event([first(0, 'a', 'list')])));
    normalizer.rewrite(Buffer.from(event([first(1, 'b', 'read', '{"path":')])));
    normalizer.rewrite(Buffer.from(event([more(1, '"a.ts"}')])));
    const out = normalizer.rewrite(Buffer.from(finish('tool_calls')));
    expect(finishOf(out)).toBe('tool_calls');
    expect(givenCalls(out)).toEqual([[{ index: 0, function: { arguments: '{}' } }]]);
    const assembler = new StreamReplyAssembler();
    for (const text of [
      event([first(0, 'a', 'list')]),
      event([first(1, 'b', 'read', '{"path":"a.ts"}')]),
      finish('tool_calls'),
    ])
      assembler.push(Buffer.from(text));
    expect(
      (assembler.end().message.tool_calls as Array<{ function: { arguments: string } }>).map(
        (call) => call.function.arguments,
      ),
    ).toEqual(['{}', '{"path":"a.ts"}']);
  });

  it.each(['', 'null'])(
    'a finish of "%s" before the last chunk (SGLang 0.4.3, KoboldCpp) is null, and a call is not given "{}" there',
    (blank) => {
      const normalizer = new ChatStreamCallNormalizer();
      const withBlank = (text: string) => text.replace('"finish_reason":null', `"finish_reason":"${blank}"`);
      const opened = normalizer.rewrite(Buffer.from(withBlank(event([first(0, 'a', 'read')]))));
      expect(finishOf(opened)).toBeNull();
      expect(givenCalls(opened)).toEqual([[first(0, 'a', 'read')]]);
      normalizer.rewrite(Buffer.from(withBlank(event([more(0, '{"path":"a.ts"}')]))));
      const out = normalizer.rewrite(Buffer.from(finish('tool_calls')));
      expect(finishOf(out)).toBe('tool_calls');
      expect(out.toString()).not.toContain('"arguments"');
    },
  );

  it('"tool_calls" with no call (mastra-ai/mastra#14187) finishes as "stop"', () => {
    const normalizer = new ChatStreamCallNormalizer();
    expect(finishOf(normalizer.rewrite(Buffer.from(finish('tool_calls'))))).toBe('stop');
  });

  it.each([
    ['eos', 'stop'],
    ['end_turn', 'stop'],
    ['MAX_TOKENS', 'length'],
    ['tool_use', 'stop'],
  ])('a finish of "%s" (another server\'s word) is given as "%s"', (said, given) => {
    const normalizer = new ChatStreamCallNormalizer();
    expect(finishOf(normalizer.rewrite(Buffer.from(finish(said))))).toBe(given);
  });

  it("each choice by its own calls; OpenAI's own finishes byte for byte", () => {
    const normalizer = new ChatStreamCallNormalizer();
    const text = Buffer.from(finish('stop'));
    expect(normalizer.rewrite(text)).toBe(text);
    normalizer.rewrite(Buffer.from(event([first(0, 'a', 'f', '{}')], 1)));
    const other = Buffer.from(finish('stop', 0));
    expect(normalizer.rewrite(other)).toBe(other);
    const calls = Buffer.from(finish('tool_calls', 1));
    expect(normalizer.rewrite(calls)).toBe(calls);
    const cut = Buffer.from(finish('length', 1));
    expect(normalizer.rewrite(cut)).toBe(cut);
  });
});

describe('calls the provider gave no id (Gemini, LM Studio, StepFun)', () => {
  /** A stream's events: two parallel calls, the first's id empty, the second's not said, then a late id. */
  const stream = [
    event([{ index: 0, id: '', type: 'function', function: { name: 'f', arguments: '' } }]),
    event([more(0, '{"x":1}')]),
    event([{ index: 1, type: 'function', function: { name: 'g', arguments: '{}' } }]),
    event([{ index: 1, id: 'late', function: { arguments: '' } }]),
  ];

  it('gives each an id of its own on its first delta: the one the session stores', () => {
    const normalizer = new ChatStreamCallNormalizer();
    const assembler = new StreamReplyAssembler();
    const given: Array<{ index: number; id?: string }> = [];
    for (const text of stream) {
      assembler.push(Buffer.from(text));
      for (const calls of givenCalls(normalizer.rewrite(Buffer.from(text))))
        for (const call of calls as Array<{ index: number; id?: string }>) given.push(call);
    }
    const stored = (assembler.end().message.tool_calls as Array<{ id: string }>).map((call) => call.id);
    // The client (the official one keeps a call's id from the delta that says one) is given each once.
    const ids = given.filter((call) => call.id !== undefined).map((call) => [call.index, call.id]);
    expect(ids).toEqual([
      [0, stored[0]],
      [1, stored[1]],
    ]);
    expect(new Set(stored).size).toBe(2);
    expect(stored.every((id) => /^[A-Za-z0-9_-]{1,40}$/.test(id))).toBe(true);
  });
});
