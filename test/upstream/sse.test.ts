// Server-sent events as the gateway reads and relays them (sse.ts): the decoder must give the same events
// however the byte stream is cut; the stream tracker decides whether a relayed stream reached its end — it
// must see the end markers however the bytes are cut, and must not mistake an unfinished stream for a
// finished one.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  endsAtEventBoundary,
  completionTokensKey,
  countDataEvents,
  EventBoundaryBuffer,
  promptTokensIn,
  jsonEventsOf,
  SseDecoder,
  StreamCompletionTracker,
  typedEvent,
  usageEvent,
  usageNumberIn,
  withDataRewritten,
} from '../../src/upstream/sse.js';

const sample =
  'data: {"a":1}\n\n: keep-alive comment\n\nevent: error\ndata: {"b":\ndata: 2}\n\ndata:no-space\r\n\r\ndata: [DONE]\n\n';
const expected = [
  { event: undefined, data: '{"a":1}' },
  { event: 'error', data: '{"b":\n2}' },
  { event: undefined, data: 'no-space' },
  { event: undefined, data: '[DONE]' },
];

function decodeInPieces(text: string, cuts: number[]): Array<{ event: string | undefined; data: string }> {
  const decoder = new SseDecoder();
  const events = [];
  let start = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    events.push(...decoder.push(text.slice(start, cut)));
    start = cut;
  }
  events.push(...decoder.push(text.slice(start)), ...decoder.end());
  return events;
}

describe('SseDecoder', () => {
  it('decodes data, multi-line data, named events, comments, CRLF and LF', () => {
    expect(decodeInPieces(sample, [])).toEqual(expected);
  });

  it('gives the same events for any split of the stream', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: sample.length }), { maxLength: 12 }), (cuts) => {
        expect(decodeInPieces(sample, cuts)).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('flushes a final event that has no blank line after it', () => {
    expect(decodeInPieces('data: last', [])).toEqual([{ event: undefined, data: 'last' }]);
  });
});

describe('jsonEventsOf', () => {
  it('gives the JSON objects of whole events, an event cut between texts once whole, and skips the rest', () => {
    const decoder = new SseDecoder();
    const first = jsonEventsOf(
      decoder,
      'event: a\ndata: {"type":"a"}\n\ndata: [DONE]\n\n: ping\n\ndata: {"ty',
    );
    expect(first).toEqual([{ type: 'a' }]);
    expect(jsonEventsOf(decoder, 'pe":"b"}\n\ndata: [1,2]\n\ndata: "text"\n\ndata: {broken\n\n')).toEqual([
      { type: 'b' },
    ]);
  });
});

describe('SseDecoder on large events', () => {
  it('decodes a 4 MB event fed in 1 KB pieces, with CR LF split across pieces', () => {
    const payload = 'x'.repeat(4 * 1024 * 1024);
    const text = `data: ${payload}\r\n\r\ndata: [DONE]\r\n\r\n`;
    const pieces: string[] = [];
    for (let start = 0; start < text.length; start += 1_024) pieces.push(text.slice(start, start + 1_024));
    const decoder = new SseDecoder();
    const events = pieces.flatMap((piece) => decoder.push(piece));
    events.push(...decoder.end());
    expect(events.map((event) => event.data.length)).toEqual([payload.length, 6]);
    expect(events[0]?.data).toBe(payload);
  });

  it('splits on a lone CR, a lone LF and CR LF alike, whatever the cut', () => {
    const text = 'data: a\rdata: b\n\rdata: c\r\n\r\n';
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: text.length }), { maxLength: 6 }), (cuts) => {
        expect(decodeInPieces(text, cuts)).toEqual([
          { event: undefined, data: 'a\nb' },
          { event: undefined, data: 'c' },
        ]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('countDataEvents', () => {
  it('counts the lines that start with data:, the first one included, nothing else', () => {
    const stream = Buffer.from(
      'data: {"a":1}\n\nevent: x\ndata: {"b":"data: inside"}\n\n: comment data:\n\ndata: [DONE]\n\n',
    );
    expect(countDataEvents(stream)).toBe(3);
    expect(countDataEvents(Buffer.from(': keep-alive\n\n'))).toBe(0);
    expect(countDataEvents(Buffer.from('data:x\n\n'))).toBe(1);
    expect(countDataEvents(Buffer.from('data'))).toBe(0);
    expect(countDataEvents(Buffer.alloc(0))).toBe(0);
  });

  it('counts as many as the lines split at newlines that start with data: (property)', () => {
    const piece = fc.constantFrom('data:', 'data', 'dat', 'ata:', ':', '\n', '\r\n', '\n\n', ' ', 'x', 'é');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        const lines = text.split('\n').filter((line) => line.startsWith('data:')).length;
        expect(countDataEvents(Buffer.from(text))).toBe(lines);
      }),
      { numRuns: 2_000, seed: 28 },
    );
  });
});

describe('EventBoundaryBuffer', () => {
  const terminators = ['\n', '\r\n', '\r'];
  const eventArbitrary = fc.tuple(
    fc.string({ minLength: 1, maxLength: 30 }).map((data) => data.replace(/[\r\n]/g, ' ')),
    fc.constantFrom(...terminators),
  );
  const decode = (text: string) => new SseDecoder().push(text).map((event) => event.data);

  it('passes every byte on once, in order, and an event written after any piece stands on its own', () => {
    fc.assert(
      fc.property(
        fc.array(eventArbitrary, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (events, rawCuts) => {
          const stream = Buffer.from(events.map(([data, end]) => `data: ${data}${end}${end}`).join(''));
          const datas = events.map(([data]) => data);
          const cuts = [...new Set(rawCuts.map((cut) => cut % stream.length))].sort((a, b) => a - b);
          const buffer = new EventBoundaryBuffer();
          const out: Buffer[] = [];
          let start = 0;
          for (const end of [...cuts, stream.length]) {
            const piece = buffer.push(stream.subarray(start, end));
            start = end;
            if (piece === undefined) continue;
            out.push(piece);
            // What the client has so far, then an error event: whole events, then the error intact.
            const seen = decode(`${Buffer.concat(out).toString('utf8')}data: {"error":1}\n\n`);
            expect(seen.at(-1)).toBe('{"error":1}');
            expect(seen.slice(0, -1)).toEqual(datas.slice(0, seen.length - 1));
          }
          const rest = buffer.flush();
          if (rest !== undefined) out.push(rest);
          expect(Buffer.concat(out).equals(stream)).toBe(true);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('hands back a chunk of whole events as it came, not a copy', () => {
    const buffer = new EventBoundaryBuffer();
    const chunk = Buffer.from('data: {"a":1}\n\ndata: {"b":2}\n\n');
    expect(buffer.push(chunk)).toBe(chunk);
  });
});

const chunk = (delta: string, finish: string | null) =>
  `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"${delta}"},"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;

function track(text: string, cuts: number[]): StreamCompletionTracker {
  const tracker = new StreamCompletionTracker();
  const bytes = Buffer.from(text);
  let start = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    tracker.push(bytes.subarray(start, cut));
    start = cut;
  }
  tracker.push(bytes.subarray(start));
  return tracker;
}

const unfinished = chunk('Hel', null) + chunk('lo', null);
const finished = unfinished + chunk('', 'stop');
const doneWithoutFinish = unfinished + 'data: [DONE]\n\n';

describe('endsAtEventBoundary', () => {
  it.each([
    ['data: 1\n\n', true],
    ['data: 1\r\n\r\n', true],
    ['data: 1\r\r', true],
    ['data: 1\n\r\n', true],
    ['data: 1\n', false],
    ['data: 1\r\n', false],
    ['data: {"half":', false],
    ['\n', false],
  ])('%j: %s, as a string and as bytes', (text, expected) => {
    expect(endsAtEventBoundary(text)).toBe(expected);
    expect(endsAtEventBoundary(Buffer.from(text))).toBe(expected);
  });

  it('agrees with where EventBoundaryBuffer cuts: a chunk it passes whole ends at a boundary', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z:\n\r ]{1,20}$/), (text) => {
        const chunk = Buffer.from(text);
        const passed = new EventBoundaryBuffer().push(chunk);
        expect(endsAtEventBoundary(chunk)).toBe(passed?.length === chunk.length);
      }),
    );
  });
});

describe('StreamCompletionTracker', () => {
  it('sees [DONE] wherever the chunks are cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: Buffer.byteLength(doneWithoutFinish) }), { maxLength: 20 }),
        (cuts) => {
          expect(track(doneWithoutFinish, cuts).isComplete()).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('sees a finish_reason wherever the chunks are cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: Buffer.byteLength(finished) }), { maxLength: 20 }),
        (cuts) => {
          expect(track(finished, cuts).isComplete()).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it.each(['', 'null'])(
    'does not take "%s" on every chunk (SGLang 0.4.3, KoboldCpp) for a finish; the last chunk\'s word is one',
    (blank) => {
      const blanks = chunk('Hel', blank) + chunk('lo', blank);
      expect(track(blanks, [40]).isComplete()).toBe(false);
      expect(track(blanks + chunk('', 'stop'), [40]).isComplete()).toBe(true);
      expect(track(chunk('Hel', 'stop') + chunk('lo', blank), []).isComplete()).toBe(true);
    },
  );

  it('calls a stream with a finish_reason but no [DONE] complete', () => {
    expect(track(finished, [17, 90]).isComplete()).toBe(true);
  });

  it('does not call a stream complete without either marker', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: Buffer.byteLength(unfinished) }), { maxLength: 20 }),
        (cuts) => {
          expect(track(unfinished, cuts).isComplete()).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('judges a long stream by its end, however it is chunked', () => {
    const long = chunk('x'.repeat(200), null).repeat(300);
    const everyByte = (text: string) =>
      Array.from({ length: Buffer.byteLength(text) }, (_unused, index) => index);
    expect(track(long + 'data: [DONE]\n\n', [100, 5000, 30_000]).isComplete()).toBe(true);
    expect(
      track(
        long + chunk('', 'stop'),
        everyByte(long).filter((index) => index % 97 === 0),
      ).isComplete(),
    ).toBe(true);
    expect(track(long, [100, 5000, 30_000]).isComplete()).toBe(false);
  });

  it('reads the usage at the stream’s end however it is cut, and none when there is none', () => {
    const usage =
      'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}\n\n';
    const responses =
      'data: {"type":"response.completed","response":{"usage":{"input_tokens":7,"output_tokens":5}}}\n\n';
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 400 }), { maxLength: 10 }), (cuts) => {
        const withUsage = track(finished + usage + 'data: [DONE]\n\n', cuts);
        expect([withUsage.promptTokens(), withUsage.completionTokens(), withUsage.totalTokens()]).toEqual([
          12, 34, 46,
        ]);
        // The Responses API's names: input and output tokens, added up.
        expect(track(responses, cuts).totalTokens()).toBe(12);
        const without = track(finished + 'data: [DONE]\n\n', cuts);
        expect([without.promptTokens(), without.completionTokens(), without.totalTokens()]).toEqual([
          undefined,
          undefined,
          undefined,
        ]);
      }),
      { numRuns: 200, seed: 28 },
    );
  });

  it('answers again after more of the stream arrived', () => {
    const tracker = track(finished, []);
    expect(tracker.promptTokens()).toBeUndefined();
    tracker.push(Buffer.from('data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34}}\n\n'));
    expect(tracker.promptTokens()).toBe(12);
  });

  it('accepts a space after the colon, as some servers write it', () => {
    expect(track('data: {"choices":[{"finish_reason": "length"}]}\n\n', []).isComplete()).toBe(true);
  });
});

describe('usage numbers near the end of an answer', () => {
  // A usage object at `at` bytes before the end of a body padded to 10,000 bytes.
  const bodyWithUsageAt = (fromEnd: number): Buffer => {
    const usage = '"prompt_tokens":123,"completion_tokens":45}';
    return Buffer.from('x'.repeat(10_000 - fromEnd) + usage + ' '.repeat(fromEnd - usage.length));
  };

  it.each([
    { name: 'at the very end', fromEnd: 43, prompt: 123 },
    { name: 'starting exactly 4,096 bytes before the end', fromEnd: 4_096, prompt: 123 },
    { name: 'starting 4,097 bytes before the end (not the answer’s own)', fromEnd: 4_097, prompt: undefined },
  ])('reads prompt_tokens $name', ({ fromEnd, prompt }) => {
    expect(promptTokensIn(bodyWithUsageAt(fromEnd))).toBe(prompt);
  });

  it('reads the last one, with spaces after the colon, and nothing from a key without digits', () => {
    const body = Buffer.from('{"usage":{"completion_tokens":1}} {"usage":{"completion_tokens": 77}}');
    expect(usageNumberIn(body, completionTokensKey)).toBe(77);
    expect(usageNumberIn(Buffer.from('"completion_tokens":null'), completionTokensKey)).toBeUndefined();
    expect(promptTokensIn(Buffer.from('{"choices":[]}'))).toBeUndefined();
  });
});

describe('typedEvent', () => {
  it.each<[string, string, Record<string, unknown>, Record<string, unknown>]>([
    ['no fields', '', {}, {}],
    ['no fields, a leading member', '"sequence_number":0', {}, { sequence_number: 0 }],
    [
      'nested fields and a leading member',
      '"sequence_number":41',
      { item_id: 'msg_1', delta: 'Hé "quoted"\n', logprobs: [] },
      { sequence_number: 41 },
    ],
    ['undefined fields left out', '', { index: 0, stop: undefined, usage: { output_tokens: 3 } }, {}],
    ['a lone surrogate', '', { delta: '\ud800x' }, {}],
  ])('writes %s as the spread object would be written', (_name, leading, fields, leadingFields) => {
    const type = 'content_block_delta';
    expect(typedEvent(type, leading, fields)).toBe(
      `event: ${type}\ndata: ${JSON.stringify({ type, ...leadingFields, ...fields })}\n\n`,
    );
  });
});

describe('withDataRewritten', () => {
  const events = Buffer.from(
    'event: x\ndata: {"a":1}\n\ndata: {"b":2}\r\n\r\ndata: {"c":3}\n\ndata: [DONE]\n\n',
  );

  it('writes each data anew, leaves out an event with its blank line, and puts lines before [DONE]', () => {
    const out = withDataRewritten(
      events,
      (data) => (data.includes('"a"') ? '{"a":9}' : data.includes('"c"') ? null : undefined),
      () => ['data: {"held":true}', ''],
    );
    expect(out.toString()).toBe(
      'event: x\ndata: {"a":9}\n\ndata: {"b":2}\r\n\r\ndata: {"held":true}\n\ndata: [DONE]\n\n',
    );
  });

  it('keeps a line ending in CR as it ended, and gives the same buffer back when nothing changed', () => {
    const crlf = withDataRewritten(
      events,
      (data) => (data.includes('"b"') ? '{"b":0}' : undefined),
      () => [],
    );
    expect(crlf.toString()).toContain('data: {"b":0}\r\n\r\n');
    expect(
      withDataRewritten(
        events,
        () => undefined,
        () => [],
      ),
    ).toBe(events);
  });
});

describe('usageEvent', () => {
  it("is OpenAI's last chunk of a stream that asked for usage: no choices, the counts and their sum", () => {
    const event = usageEvent('chatcmpl-1', 'qwen3', 1_700_000_000, { prompt: 555, completion: 12 });
    expect(event.endsWith('\n\n')).toBe(true);
    expect(JSON.parse(event.slice('data: '.length))).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'qwen3',
      choices: [],
      usage: { prompt_tokens: 555, completion_tokens: 12, total_tokens: 567 },
    });
    // What the gateway reads of a stream's usage reads it too.
    const tracker = new StreamCompletionTracker();
    tracker.push(Buffer.from(event));
    expect(tracker.promptTokens()).toBe(555);
  });
});
