// Tool calls a model wrote as text given as calls (text-tool-calls.ts): the tools a request offers, and
// answers whole and streamed however the stream is cut — calls in the text, calls that end a reasoning
// given under its own field, and answers that go as they came.
import { describe, expect, it } from 'vitest';
import { offeredTools, withTextToolCalls } from '../../src/upstream/text-tool-calls.js';
import type { UpstreamRequest } from '../../src/upstream/upstream.js';
import { scriptedUpstream } from '../helpers/port-fakes.js';
import { drafted, dsml, hermes, qwenCoder, tools } from '../helpers/text-call-fixtures.js';

describe('offeredTools', () => {
  it('is the tools a request offers, none when it offers none or lets the model call none', () => {
    expect([...(tools.keys() as Iterable<string>)]).toEqual(['edit', 'list']);
    expect(offeredTools({})).toBeUndefined();
    expect(offeredTools({ tools: [] })).toBeUndefined();
    expect(
      offeredTools({ tools: [{ type: 'function', function: { name: 'x' } }], tool_choice: 'none' }),
    ).toBeUndefined();
  });
});

/** A stream of `text`'s characters cut into `size`-long deltas. */
function streamOf(text: string, size: number): string {
  const deltas: string[] = [];
  for (let at = 0; at < text.length; at += size) deltas.push(text.slice(at, at + size));
  return streamOfDeltas(deltas);
}

/** A stream of these deltas (text, or `{ reasoning }` under `field`), then its finish and [DONE]. */
function streamOfDeltas(
  deltas: Array<string | { reasoning: string }>,
  field: 'reasoning' | 'reasoning_content' = 'reasoning',
): string {
  const events = deltas.map(
    (given) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: typeof given === 'string' ? { content: given } : { [field]: given.reasoning }, finish_reason: null }] })}\n\n`,
  );
  events.push(
    `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`,
  );
  return `${events.join('')}data: [DONE]\n\n`;
}

/** A whole answer of this message, read through withTextToolCalls: its first choice. */
async function readWhole(message: Record<string, unknown>) {
  const upstream = scriptedUpstream([
    {
      status: 200,
      headers: { 'content-type': 'application/json' },
      chunks: [JSON.stringify({ id: 'c', choices: [{ index: 0, message, finish_reason: 'stop' }] })],
    },
  ]);
  const out = await withTextToolCalls(await upstream.send({} as UpstreamRequest), tools).readAll();
  const answer = JSON.parse(out.toString()) as {
    choices: [{ message: Record<string, unknown>; finish_reason: string }];
  };
  return answer.choices[0];
}

/** What a client joins of a stream read through withTextToolCalls: its text, its calls, its finish. */
async function readStream(body: string, cut: number) {
  const chunks: string[] = [];
  for (let at = 0; at < body.length; at += cut) chunks.push(body.slice(at, at + cut));
  const upstream = scriptedUpstream([
    { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks },
  ]);
  const out = (
    await withTextToolCalls(await upstream.send({} as UpstreamRequest), tools).readAll()
  ).toString();
  let text = '';
  let reasoning = '';
  let finish: unknown;
  const calls: Array<[string, unknown]> = [];
  for (const event of out.split('\n\n')) {
    const data = event.replace(/^data: /, '');
    if (data === '' || data === '[DONE]') continue;
    const choice = (JSON.parse(data) as { choices: Array<Record<string, never>> }).choices[0];
    const delta = (choice?.delta ?? {}) as {
      content?: string;
      reasoning?: string;
      reasoning_content?: string;
      tool_calls?: Array<{ function: { name: string; arguments: string } }>;
    };
    text += delta.content ?? '';
    reasoning += delta.reasoning ?? delta.reasoning_content ?? '';
    for (const call of delta.tool_calls ?? [])
      calls.push([call.function.name, JSON.parse(call.function.arguments)]);
    finish = choice?.finish_reason ?? finish;
  }
  expect(out.trimEnd().endsWith('data: [DONE]')).toBe(true);
  return reasoning === '' ? { text, calls, finish } : { text, calls, finish, reasoning };
}

describe('withTextToolCalls, streamed', () => {
  it.each([1, 3, 11])(
    'a sentence and a block, in deltas of %i characters: the sentence, then the call',
    async (size) => {
      for (const cut of [7, 64, 100_000]) {
        const read = await readStream(streamOf(`Let me edit.\n${qwenCoder}`, size), cut);
        expect(read.text.trim()).toBe('Let me edit.');
        expect(read.calls).toEqual([['edit', { path: 'src/a b.ts', line: 3, flags: ['x'] }]]);
        expect(read.finish).toBe('tool_calls');
      }
    },
  );

  it.each(drafted)(
    'a call drafted in the reasoning, then made (%s): made once, however the stream is cut',
    async (_name, text, rest) => {
      for (const size of [1, 5, 40]) {
        const read = await readStream(streamOf(text, size), 70);
        expect(read.calls).toEqual([['edit', { path: 'a.ts', line: 3 }]]);
        expect(read.text.trim()).toBe(rest);
        expect(read.finish).toBe('tool_calls');
      }
    },
  );

  it.each([
    [
      'a rehearsal in the reasoning, then an answer of text',
      `<think>Run ${hermes}? No need.</think>It is fine.`,
    ],
    ['the same, its template opened the reasoning', `Run ${hermes}? No need.</think>It is fine.`],
  ])('%s: as it came', async (_name, text) => {
    for (const size of [1, 6])
      expect(await readStream(streamOf(text, size), 50)).toEqual({ text, calls: [], finish: 'stop' });
  });

  it.each([
    [
      "a reasoning that ends in the answer's call",
      `<think>Need it.\n${hermes}\n</think>`,
      '<think>Need it.\n</think>',
    ],
    [
      "the JSON alone after the model's reasoning",
      '<think>A list.</think>\n\n{"name": "edit", "arguments": {"path": "a.ts", "line": 3}}',
      '<think>A list.</think>',
    ],
  ])('%s: the call', async (_name, text, rest) => {
    for (const size of [1, 7]) {
      const read = await readStream(streamOf(text, size), 45);
      expect(read.calls).toEqual([['edit', { path: 'a.ts', line: 3 }]]);
      expect(read.text.trim()).toBe(rest);
    }
  });

  it("a sentence and a block, its JSON escaped as Go escapes it (Ollama's `\\u003c`): the call", async () => {
    // Go's encoding/json writes <, > and & as \u003c, \u003e and \u0026 (Ollama's OpenAI endpoint).
    const goJson = (body: string) =>
      body.replaceAll('<', '\\u003c').replaceAll('>', '\\u003e').replaceAll('&', '\\u0026');
    const kimi = ['Let me edit.', '<|tool_calls_section_begin|>', '<|tool_call_begin|>', 'edit:0'];
    kimi.push('<|tool_call_argument_begin|>', '{"path": "a.ts", "line": 3}', '<|tool_call_end|>');
    for (const stream of [streamOf(`Let me edit.\n${hermes}`, 4), streamOfDeltas(kimi)]) {
      const body = goJson(stream);
      expect(body).not.toContain('<');
      const read = await readStream(body, 90);
      expect(read.calls).toEqual([['edit', { path: 'a.ts', line: 3 }]]);
      expect(read.text.trim()).toBe('Let me edit.');
    }
  });

  // Each form's markers are tokens of its model's: each a delta of its own.
  it.each<[string, string[], string, Array<[string, unknown]>]>([
    [
      "Mistral's",
      ['List', 'ing.', '[TOOL_CALLS]', 'list', '[ARGS]', '{}', '[TOOL_CALLS]', 'list', '[ARGS]', '{', '}'],
      'Listing.',
      [
        ['list', {}],
        ['list', {}],
      ],
    ],
    [
      "Kimi K2's section",
      [
        'Edit',
        'ing.',
        '<|tool_calls_section_begin|>',
        '<|tool_call_begin|>',
        'functions',
        '.edit',
        ':',
        '0',
        '<|tool_call_argument_begin|>',
        '{"path',
        '": "a.ts"}',
        '<|tool_call_end|>',
        '<|tool_call_begin|>',
        'functions.list:1',
        '<|tool_call_argument_begin|>',
        '{}',
        '<|tool_call_end|>',
        '<|tool_calls_section_end|>',
      ],
      'Editing.',
      [
        ['edit', { path: 'a.ts' }],
        ['list', {}],
      ],
    ],
    [
      "LFM2's Python calls",
      [
        'Listing',
        ' first.',
        '<|tool_call_start|>',
        '[list',
        '(),',
        ' edit(line',
        '=7)]',
        '<|tool_call_end|>',
      ],
      'Listing first.',
      [
        ['list', {}],
        ['edit', { line: 7 }],
      ],
    ],
    [
      "MiniMax-M2's block",
      [
        'Listing',
        ' twice.\n',
        '<minimax:tool_call>',
        '\n<invoke name="',
        'list',
        '">\n</invoke>',
        '\n<invoke name="edit">\n<parameter name="line">',
        '7',
        '</parameter>\n</invoke>\n',
        '</minimax:tool_call>',
      ],
      'Listing twice.\n',
      [
        ['list', {}],
        ['edit', { line: 7 }],
      ],
    ],
  ])(
    '%s, in its tokens, a sentence first: the sentence, then the calls',
    async (_name, deltas, text, calls) => {
      for (const cut of [25, 40, 4_000])
        expect(await readStream(streamOfDeltas(deltas), cut)).toEqual({ text, calls, finish: 'tool_calls' });
    },
  );

  it.each([1, 4, 13])(
    "DeepSeek V4's block of attributes after a sentence, in deltas of %i characters: the sentence, then the call",
    async (size) => {
      const text =
        'Checking.\n<tool_call id="call_00_ab12" name="edit">\n{"path": "a.ts", "line": 3}\n</tool_call>';
      for (const cut of [40, 100_000])
        expect(await readStream(streamOf(text, size), cut)).toEqual({
          text: 'Checking.\n',
          calls: [['edit', { path: 'a.ts', line: 3 }]],
          finish: 'tool_calls',
        });
    },
  );

  it.each([1, 3, 10])(
    'DSML after a sentence, in deltas of %i characters: the sentence, then the calls',
    async (size) => {
      const text = dsml(
        'Editing.\n<D|tool_calls>\n<D|invoke name="edit">\n<D|parameter name="line" string="false">3</D|parameter>\n</D|invoke>\n</D|tool_calls>',
      );
      for (const cut of [33, 100_000])
        expect(await readStream(streamOf(text, size), cut)).toEqual({
          text: 'Editing.\n',
          calls: [['edit', { line: 3 }]],
          finish: 'tool_calls',
        });
    },
  );

  it.each([1, 4])(
    "Llama's forms, `<function=` in deltas of %i characters: the sentence, then the call",
    async (size) => {
      const text = 'Editing.\n<function=edit>{"path": "a.ts", "line": 3}</function>';
      for (const cut of [50, 100_000])
        expect(await readStream(streamOf(text, size), cut)).toEqual({
          text: 'Editing.\n',
          calls: [['edit', { path: 'a.ts', line: 3 }]],
          finish: 'tool_calls',
        });
      const tokens = [
        'Looking.',
        '<|python_start|>',
        '{"name": "edit", ',
        '"parameters": {"line": 3}}',
        '<|python_end|>',
      ];
      expect(await readStream(streamOfDeltas(tokens), 40)).toEqual({
        text: 'Looking.',
        calls: [['edit', { line: 3 }]],
        finish: 'tool_calls',
      });
    },
  );

  it("GPT-OSS's Harmony markup, in its tokens: the call, no markup", async () => {
    const deltas = [
      '<|channel|>',
      'analysis',
      '<|message|>',
      'Need',
      ' to list.',
      '<|end|>',
      '<|start|>',
      'assistant',
    ];
    deltas.push(
      '<|channel|>',
      'commentary to=functions.list',
      ' <|constrain|>',
      'json',
      '<|message|>',
      '{',
      '}',
      '<|call|>',
    );
    const read = await readStream(streamOfDeltas(deltas), 60);
    expect(read).toEqual({ text: '', calls: [['list', {}]], finish: 'tool_calls' });
  });

  it('a block that is no call of an offered tool: the text after it goes on as it comes', async () => {
    const deltas = ['Models write ', '<tool_call>', '{"name": "rm"}', '</tool_call>', ' blocks.', ' More.'];
    const upstream = scriptedUpstream([
      { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [streamOfDeltas(deltas)] },
    ]);
    const out = (
      await withTextToolCalls(await upstream.send({} as UpstreamRequest), tools).readAll()
    ).toString();
    const contents = out
      .split('\n\n')
      .filter((event) => event.startsWith('data: {'))
      .map((event) => JSON.parse(event.slice(6)) as { choices: Array<{ delta: { content?: string } }> })
      .map((chunk) => chunk.choices[0]?.delta.content ?? '');
    // The sentence's end in its own event, not held to the finish.
    expect(contents).toContain(' More.');
    expect(contents.join('')).toBe(deltas.join(''));
  });

  it.each([2, 9])('the JSON alone, in deltas of %i characters: the call', async (size) => {
    const read = await readStream(streamOf('{"name": "list", "arguments": {}}', size), 50);
    expect(read).toEqual({ text: '', calls: [['list', {}]], finish: 'tool_calls' });
  });

  it.each([
    ['prose that names the marker', 'Models write <tool_call> blocks, and <tool_ too.'],
    ['a block of a tool not offered', '<tool_call>{"name": "rm", "arguments": {}}</tool_call>'],
    ['JSON that is not a call', '{"path": "a.ts"}'],
    ['text ending as the marker begins', 'a <tool_'],
  ])('%s: as it came', async (_name, text) => {
    for (const size of [1, 4])
      expect(await readStream(streamOf(text, size), 33)).toEqual({ text, calls: [], finish: 'stop' });
  });
});

describe('withTextToolCalls, to a request that asked for a JSON answer', () => {
  it('a text of JSON alone is the answer: not held, and not a call, streamed and whole', async () => {
    const json = '{"name": "list", "arguments": {}}';
    const asked = { response_format: { type: 'json_object' } };
    const streamed = scriptedUpstream([
      { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [streamOf(json, 8)] },
    ]);
    const events: string[] = [];
    await withTextToolCalls(await streamed.send({} as UpstreamRequest), tools, asked).forEachChunk(
      (chunk) => {
        events.push(chunk.toString());
      },
    );
    const first = JSON.parse(events.join('').split('\n\n')[0]?.slice(6) ?? '{}') as {
      choices: [{ delta: { content: string } }];
    };
    expect(first.choices[0].delta.content).toBe(json.slice(0, 8));
    expect(events.join('')).not.toContain('"tool_calls"');
    const whole = scriptedUpstream([
      {
        status: 200,
        headers: { 'content-type': 'application/json' },
        chunks: [JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: json } }] })],
      },
    ]);
    const body = (
      await withTextToolCalls(await whole.send({} as UpstreamRequest), tools, asked).readAll()
    ).toString();
    expect(body).not.toContain('"tool_calls"');
  });
});

/**
 * A reasoning model's calls written in its reasoning, which its server gives under its reasoning field with
 * no content and no call: vLLM 0.19 with Qwen3.5 and both parsers (vllm-project/vllm#39056), Kimi K2
 * Thinking's section (vybestack/llxprt-code#749).
 */
describe('withTextToolCalls, calls that end the reasoning', () => {
  const tokens = (text: string) =>
    text
      .split(/(<tool_call>|<\/tool_call>|<\/?minimax:tool_call>|<\/?｜DSML｜[a-z_]+>|<\|tool_call[a-z_]*\|>)/)
      .filter((token) => token !== '')
      .map((reasoning) => ({ reasoning }));
  const kimiSection =
    '<|tool_calls_section_begin|><|tool_call_begin|>functions.list:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>';

  it.each([
    [
      'Qwen3.5 on vLLM 0.19',
      `Need line 3.\n${qwenCoder}\n`,
      [['edit', { path: 'src/a b.ts', line: 3, flags: ['x'] }]],
    ],
    ['Kimi K2 Thinking', `Listing first. ${kimiSection}`, [['list', {}]]],
    [
      'MiniMax-M2.1 on vllm-mlx with its reasoning parser',
      'Line 2.\n<minimax:tool_call>\n<invoke name="edit">\n<parameter name="line">2</parameter>\n</invoke>\n</minimax:tool_call>',
      [['edit', { line: 2 }]],
    ],
    [
      'DeepSeek V4 in DSML',
      dsml(
        'Line 5.\n\n<D|tool_calls>\n<D|invoke name="edit">\n<D|parameter name="line" string="false">5</D|parameter>\n</D|invoke>\n</D|tool_calls>',
      ),
      [['edit', { line: 5 }]],
    ],
  ])(
    '%s, streamed under either name: the calls, the reasoning before them',
    async (_name, thought, calls) => {
      for (const field of ['reasoning', 'reasoning_content'] as const) {
        const read = await readStream(streamOfDeltas([...tokens(thought), '\n\n'], field), 60);
        expect(read.calls).toEqual(calls);
        expect(read.reasoning?.trim()).toBe(thought.slice(0, thought.indexOf('<')).trim());
        expect(read.finish).toBe('tool_calls');
      }
    },
  );

  it('a call drafted in the reasoning, then an answer of text: as it came, the reasoning whole', async () => {
    const thought = `Maybe ${hermes} — no, it is fine.`;
    const read = await readStream(streamOfDeltas([...tokens(thought), 'It is fine.']), 50);
    expect(read).toEqual({ text: 'It is fine.', calls: [], finish: 'stop', reasoning: thought });
  });

  it('a call drafted in the reasoning, then more reasoning: the reasoning as it came, in order', async () => {
    const deltas = [
      'Need it.\n<tool_call>',
      '\n{"name": "list", "arguments": {}}\n',
      '</tool_call>\nMore',
      ' thought.',
    ];
    const thought = deltas.join('');
    for (const field of ['reasoning', 'reasoning_content'] as const) {
      const stream = streamOfDeltas([...deltas.map((reasoning) => ({ reasoning })), 'Done.'], field);
      expect(await readStream(stream, 45)).toEqual({
        text: 'Done.',
        calls: [],
        finish: 'stop',
        reasoning: thought,
      });
    }
  });

  it('whole: the calls, the reasoning before them; with text said, as it came', async () => {
    for (const content of [null, '', '\n\n']) {
      const given = await readWhole({ role: 'assistant', content, reasoning: `Need it.\n${hermes}` });
      expect(given.finish_reason).toBe('tool_calls');
      expect(given.message.reasoning).toBe('Need it.');
      expect((given.message.tool_calls as Array<{ function: unknown }>).map((call) => call.function)).toEqual(
        [{ name: 'edit', arguments: '{"path":"a.ts","line":3}' }],
      );
    }
    const answered = { role: 'assistant', content: 'Done.', reasoning_content: `Need it.\n${hermes}` };
    expect((await readWhole(answered)).message).toEqual(answered);
  });
});

describe('withTextToolCalls, whole', () => {
  it('an answer of a block: the call, no text, finishing tool_calls; one of calls already: as it came', async () => {
    const given = await readWhole({ role: 'assistant', content: hermes });
    expect(given.finish_reason).toBe('tool_calls');
    expect(given.message.content).toBeNull();
    expect(given.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_\w+$/),
        type: 'function',
        function: { name: 'edit', arguments: '{"path":"a.ts","line":3}' },
      },
    ]);
    const native = {
      role: 'assistant',
      content: hermes,
      tool_calls: [{ id: 'x', type: 'function', function: { name: 'list', arguments: '{}' } }],
    };
    expect((await readWhole(native)).message).toEqual(native);
  });
});
