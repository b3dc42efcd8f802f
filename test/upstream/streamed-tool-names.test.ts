// A chat stream's calls each opened with its whole name (streamed-tool-names.ts), as a table of the
// streams servers write: OpenAI's (passed byte for byte), a name in pieces (Gemini, Mistral), a name
// repeated on every delta (MiniMax on NVIDIA NIM), each read as the official client reads a stream.
import { describe, expect, it } from 'vitest';
import { StreamedToolNames } from '../../src/upstream/streamed-tool-names.js';
import { withAnswerToolNames } from '../../src/upstream/tool-names.js';
import type { UpstreamRequest } from '../../src/upstream/upstream.js';
import { scriptedUpstream } from '../helpers/port-fakes.js';

type Delta = Record<string, unknown>;
const event = (delta: Delta, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const calls = (...entries: Delta[]) => event({ tool_calls: entries });
const done = 'data: [DONE]\n\n';

interface ReadCall {
  id: string;
  name: string;
  arguments: string;
  /** How many deltas gave the call a name. */
  named: number;
}

/** A stream's calls as the official OpenAI client joins them (its last name given wins) and the AI SDK's reads them (its first). */
function readCalls(text: string): ReadCall[] {
  const read: ReadCall[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6)) as {
      choices: Array<{ delta: { tool_calls?: Array<{ index: number; id?: string; function?: Delta }> } }>;
    };
    for (const entry of chunk.choices[0]?.delta.tool_calls ?? []) {
      const call = (read[entry.index] ??= { id: '', name: '', arguments: '', named: 0 });
      if (entry.id) call.id = entry.id;
      const name = entry.function?.name;
      if (typeof name === 'string' && name !== '') {
        call.name = name;
        call.named++;
      }
      if (typeof entry.function?.arguments === 'string') call.arguments += entry.function.arguments;
    }
  }
  return read;
}

const through = (offered: string[], text: string, toClient?: Map<string, string>): string => {
  const names = new StreamedToolNames(new Set(offered), toClient);
  const out = names.rewrite(Buffer.from(text)).toString();
  return out + (names.end()?.toString() ?? '');
};

const opening = (index: number, id: string, name: string, extra: Delta = {}) =>
  Object.assign({ index, id, type: 'function', function: { name, arguments: '' } }, extra);
const piece = (index: number, fn: Delta) => ({ index, function: fn });

const weather = { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' };

describe('StreamedToolNames over the streams servers write', () => {
  const cases: ReadonlyArray<{ name: string; offered: string[]; stream: string; calls: ReadCall[] }> = [
    {
      name: "OpenAI's: the whole name on the first delta",
      offered: ['get_weather'],
      stream:
        calls(opening(0, 'call_1', 'get_weather')) +
        calls(piece(0, { arguments: '{"city":' })) +
        calls(piece(0, { arguments: '"Paris"}' })) +
        event({}, 'tool_calls') +
        done,
      calls: [Object.assign({ named: 1 }, weather)],
    },
    {
      name: "Gemini's and Mistral's: the name in pieces, the last with the arguments' first",
      offered: ['get_weather'],
      stream:
        calls(opening(0, 'call_1', 'get_')) +
        calls(piece(0, { name: 'wea' })) +
        calls(piece(0, { name: 'ther', arguments: '{"city":' })) +
        calls(piece(0, { arguments: '"Paris"}' })) +
        event({}, 'tool_calls') +
        done,
      calls: [Object.assign({ named: 1 }, weather)],
    },
    {
      name: 'MiniMax on NVIDIA NIM: the whole name again on every delta, of a tool not sent',
      offered: [],
      stream:
        calls(opening(0, 'call_1', 'get_weather')) +
        calls({
          index: 0,
          id: 'call_1',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":' },
        }) +
        calls({
          index: 0,
          id: 'call_1',
          type: 'function',
          function: { name: 'get_weather', arguments: '"Paris"}' },
        }) +
        event({}, 'tool_calls') +
        done,
      // Held until its arguments begin, then as it came: the name said on each.
      calls: [Object.assign({}, weather, { named: 2 })],
    },
    {
      name: 'a name that is a tool sent and the beginning of another: held until the arguments say which',
      offered: ['read', 'read_file'],
      stream:
        calls(opening(0, 'call_1', 'read')) +
        calls(piece(0, { name: '_file', arguments: '{"path":"a"}' })) +
        calls(opening(1, 'call_2', 'read')) +
        calls(piece(1, { arguments: '{"path":"b"}' })) +
        done,
      calls: [
        { id: 'call_1', name: 'read_file', arguments: '{"path":"a"}', named: 1 },
        { id: 'call_2', name: 'read', arguments: '{"path":"b"}', named: 1 },
      ],
    },
    {
      name: 'two calls in pieces: the second beginning opens the first, which took no arguments',
      offered: ['list_files', 'get_weather'],
      stream:
        calls(opening(0, 'call_0', 'list_')) +
        calls(piece(0, { name: 'files' })) +
        calls(opening(1, 'call_1', 'get_wea')) +
        calls(piece(1, { name: 'ther', arguments: weather.arguments })) +
        event({}, 'tool_calls') +
        done,
      calls: [
        { id: 'call_0', name: 'list_files', arguments: '', named: 1 },
        Object.assign({ named: 1 }, weather),
      ],
    },
    {
      name: 'a call of no arguments held when the choice finishes: opened in the finishing chunk',
      offered: ['list_files'],
      stream:
        calls(opening(0, 'call_0', 'list_')) + calls(piece(0, { name: 'files' })) + event({}, 'tool_calls'),
      calls: [{ id: 'call_0', name: 'list_files', arguments: '', named: 1 }],
    },
    {
      name: 'a stream that says [DONE] with a call held: opened before it',
      offered: ['list_files'],
      stream: calls(opening(0, 'call_0', 'list_')) + calls(piece(0, { name: 'files' })) + done,
      calls: [{ id: 'call_0', name: 'list_files', arguments: '', named: 1 }],
    },
    {
      name: 'a stream that ends with a call held: opened in an event of its own',
      offered: ['list_files'],
      stream: calls(opening(0, 'call_0', 'list_')) + calls(piece(0, { name: 'files' })),
      calls: [{ id: 'call_0', name: 'list_files', arguments: '', named: 1 }],
    },
  ];

  it.each(cases)('$name', ({ offered, stream, calls: expected }) => {
    expect(readCalls(through(offered, stream))).toEqual(expected);
  });

  it("passes OpenAI's stream as the same bytes", () => {
    const stream = calls(opening(0, 'call_1', 'get_weather')) + calls(piece(0, { arguments: '{}' })) + done;
    const bytes = Buffer.from(stream);
    expect(new StreamedToolNames(new Set(['get_weather']), undefined).rewrite(bytes)).toBe(bytes);
  });

  it("keeps what the opening delta carried beside the name (Gemini's thought signature)", () => {
    const signature = { extra_content: { google: { thought_signature: 'c2ln' } } };
    const out = through(
      ['get_weather'],
      calls(opening(0, 'call_1', 'get_', signature)) +
        calls(piece(0, { name: 'weather', arguments: '{}' })) +
        done,
    );
    const first = out.split('\n').find((line) => line.includes('tool_calls')) ?? '';
    expect(JSON.parse(first.slice(6)).choices[0].delta.tool_calls[0]).toEqual({
      index: 0,
      id: 'call_1',
      type: 'function',
      function: { name: 'get_weather', arguments: '{}' },
      extra_content: signature.extra_content,
    });
  });

  it('leaves out an event that only held a piece of a name, blank line and all', () => {
    const out = through(
      ['get_weather'],
      calls(opening(0, 'call_1', 'get_')) + calls(piece(0, { name: 'wea' })),
    );
    // Held to the end: the one event is the call opened.
    expect(out.match(/^data: /gm)).toHaveLength(1);
    expect(out).not.toMatch(/\n\n\n/);
  });

  it('holds no more than 64 calls at once: a stream of a choice per chunk goes as it came past them', () => {
    const chunk = (choice: number) =>
      `data: ${JSON.stringify({ id: 'x', choices: [{ index: choice, delta: { tool_calls: [opening(0, `c${choice}`, 'get_')] }, finish_reason: null }] })}\n\n`;
    const names = new StreamedToolNames(new Set(['get_weather']), undefined);
    const out = names
      .rewrite(Buffer.from(Array.from({ length: 100 }, (_, choice) => chunk(choice)).join('')))
      .toString();
    // 64 held (their events left out), 36 as they came; the 64 opened at the end.
    expect(out.match(/^data: /gm)).toHaveLength(36);
    expect(
      names
        .end()
        ?.toString()
        .match(/^data: /gm),
    ).toHaveLength(64);
  });

  it("gives a name sent under another the client's, once whole", () => {
    const toClient = new Map([['calendar_read', 'calendar.read']]);
    const stream =
      calls(opening(0, 'c1', 'calendar_')) + calls(piece(0, { name: 'read', arguments: '{}' })) + done;
    expect(readCalls(through(['calendar_read'], stream, toClient))).toEqual([
      { id: 'c1', name: 'calendar.read', arguments: '{}', named: 1 },
    ]);
  });
});

describe('withAnswerToolNames over a stream in pieces', () => {
  const names = { offered: new Set(['get_weather']), toClient: undefined };
  const stream =
    calls(opening(0, 'call_1', 'get_')) +
    calls(piece(0, { name: 'weather', arguments: '{"city":' })) +
    calls(piece(0, { arguments: '"Paris"}' })) +
    event({}, 'tool_calls') +
    done;
  const upstream = (pieces: string[]) =>
    scriptedUpstream([
      { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: pieces },
    ]).send({} as UpstreamRequest);

  it('gives the same calls however the bytes are cut', async () => {
    for (const size of [1, 5, 64, stream.length]) {
      const pieces: string[] = [];
      for (let at = 0; at < stream.length; at += size) pieces.push(stream.slice(at, at + size));
      const out: Buffer[] = [];
      await withAnswerToolNames(await upstream(pieces), names).forEachChunk((bytes) => void out.push(bytes));
      expect(readCalls(Buffer.concat(out).toString()), `cut every ${size}`).toEqual([
        Object.assign({ named: 1 }, weather),
      ]);
    }
  });

  it('shows a look at the first events the call with its whole name', async () => {
    const response = withAnswerToolNames(await upstream([stream]), names);
    const head = await response.peek((received) => received.includes('"arguments":"{\\"city\\":"'));
    expect(readCalls(head.toString())[0]?.name).toBe('get_weather');
  });
});
