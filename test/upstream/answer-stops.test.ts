// Stop sequences the gateway holds an answer to (answer-stops.ts): a whole completion and a stream cut
// where the first of them begins, as a provider cuts its answer, whatever the chunks the text came in.
import { describe, expect, it } from 'vitest';
import { withAnswerStops } from '../../src/upstream/answer-stops.js';
import type { UpstreamRequest } from '../../src/upstream/upstream.js';
import { scriptedUpstream } from '../helpers/port-fakes.js';

const request = {} as UpstreamRequest;
const stream = { 'content-type': 'text/event-stream' };

/** An event of one chunk of choice `index`: a delta, and its finish reason. */
const chunk = (delta: Record<string, unknown>, finish: string | null = null, index = 0): string =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-5.2', choices: [{ index, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
const usage = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-5.2', choices: [], usage: { prompt_tokens: 9, completion_tokens: 30, total_tokens: 39 } })}\n\n`;
const done = 'data: [DONE]\n\n';

/** What a client reads of a stream cut by `stops`: each choice's text and finish, the events in order. */
async function readCut(pieces: string[], stops: string[]) {
  const upstream = scriptedUpstream([{ status: 200, headers: stream, chunks: pieces }]);
  const body = (await withAnswerStops(await upstream.send(request), stops).readAll()).toString();
  const events = body.split('\n\n').filter((event) => event.trim() !== '');
  const texts = new Map<number, string>();
  const finishes = new Map<number, string>();
  const deltas: string[] = [];
  for (const event of events) {
    const data = event.replace(/^data: /, '');
    if (data === '[DONE]') continue;
    const parsed = JSON.parse(data) as {
      choices: Array<{ index: number; delta: { content?: string }; finish_reason: string | null }>;
    };
    for (const choice of parsed.choices) {
      const piece = choice.delta.content ?? '';
      deltas.push(piece);
      texts.set(choice.index, (texts.get(choice.index) ?? '') + piece);
      if (choice.finish_reason !== null) {
        expect(finishes.has(choice.index)).toBe(false);
        finishes.set(choice.index, choice.finish_reason);
      }
    }
  }
  return { body, events, texts, finishes, deltas };
}

/**
 * A text as a provider streams it: in pieces of `size` characters (whole characters, as a provider writes
 * them), then its finish, its usage, [DONE].
 */
const streamed = (text: string, size: number, finish = 'stop'): string[] => {
  const characters = Array.from(text);
  const pieces: string[] = [chunk({ role: 'assistant', content: '' })];
  for (let at = 0; at < characters.length; at += size)
    pieces.push(chunk({ content: characters.slice(at, at + size).join('') }));
  return [...pieces, chunk({}, finish), usage, done];
};

const react =
  'Thought: I should look it up.\nAction: search[capital of France]\nObservation: Paris is the capital.\nThought: done.';

describe('withAnswerStops, a stream', () => {
  it.each([1, 3, 7, 12, 200])(
    'cuts a ReAct answer where its Observation begins, the text given in pieces of %i',
    async (size) => {
      const { texts, finishes, events } = await readCut(streamed(react, size), ['Observation:']);
      expect(texts.get(0)).toBe('Thought: I should look it up.\nAction: search[capital of France]\n');
      expect(finishes.get(0)).toBe('stop');
      // The usage and the end of the stream pass as they came.
      expect(events.at(-2)).toBe(usage.trim());
      expect(events.at(-1)).toBe('data: [DONE]');
    },
  );

  it('gives every character of an answer with no stop in it, in order, and its own finish', async () => {
    for (const size of [1, 4, 50]) {
      const { texts, finishes } = await readCut(streamed(react, size, 'length'), ['Final Answer:', '\n\n\n']);
      expect(texts.get(0)).toBe(react);
      expect(finishes.get(0)).toBe('length');
    }
  });

  it('holds back only what a stop may begin in: the rest is given as it comes', async () => {
    // No stop begins with any of these letters: nothing waits.
    expect((await readCut(streamed('abcdefghij', 5), ['XYZ'])).deltas).toEqual(['', 'abcde', 'fghij', '']);
    // `XY` may begin `XYZ`: it waits for the next piece, and goes with it when that does not end the stop.
    const { deltas, texts, finishes } = await readCut(streamed('abcXYabcXYZ tail', 5), ['XYZ']);
    expect(deltas).toEqual(['', 'abc', 'XYabc', '']);
    expect(texts.get(0)).toBe('abcXYabc');
    expect(finishes.get(0)).toBe('stop');
  });

  it('stops at the first stop to end, as a provider writing token by token does', async () => {
    // `bc` ends before `abcd` does: the provider would have stopped there.
    expect((await readCut(streamed('xxabcd', 1), ['abcd', 'bc'])).texts.get(0)).toBe('xxa');
    // Ending at once, the longer begins first.
    expect((await readCut(streamed('xxabcd', 1), ['abcd', 'cd'])).texts.get(0)).toBe('xx');
  });

  it('cuts at the first of several stops', async () => {
    const { texts } = await readCut(streamed('one two three four', 3), ['four', 'two t']);
    expect(texts.get(0)).toBe('one ');
  });

  it('finds the one of 256 long stops that all begin alike', async () => {
    const stops = Array.from(
      { length: 256 },
      (_unused, index) => `${'q'.repeat(250)}${String(index).padStart(6, '0')}`,
    );
    const { texts } = await readCut(streamed(`${'q'.repeat(300)}000042 and on`, 7), stops);
    expect(texts.get(0)).toBe('q'.repeat(50));
  });

  it('never splits a character written as two UTF-16 units', async () => {
    const text = 'ok 😀😀😀 ok 🎉 end';
    const halves = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    for (const size of [1, 2, 3, 5])
      for (const stops of [['😀X'], ['🎉 stop'], ['ZZZZ']]) {
        const { texts, deltas } = await readCut(streamed(text, size), stops);
        expect(texts.get(0)).toBe(text);
        for (const delta of deltas) expect(delta).not.toMatch(halves);
      }
    expect((await readCut(streamed(text, 1), ['🎉 e'])).texts.get(0)).toBe('ok 😀😀😀 ok ');
  });

  it('gives the text held before the calls that follow it, and drops the calls after a stop', async () => {
    const call = {
      tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    };
    const held = await readCut(
      [
        chunk({ content: 'Let me chec' }),
        chunk({ content: 'k.' }),
        chunk(call),
        chunk({}, 'tool_calls'),
        done,
      ],
      ['STOP'],
    );
    expect(held.texts.get(0)).toBe('Let me check.');
    expect(held.finishes.get(0)).toBe('tool_calls');
    expect(held.body).toContain('"call_1"');
    const stopped = await readCut(
      [chunk({ content: 'Let me STOP here.' }), chunk(call), chunk({}, 'tool_calls'), done],
      ['STOP'],
    );
    expect(stopped.texts.get(0)).toBe('Let me ');
    expect(stopped.finishes.get(0)).toBe('stop');
    expect(stopped.body).not.toContain('call_1');
  });

  it('cuts each choice of n on its own', async () => {
    const { texts, finishes } = await readCut(
      [
        chunk({ content: 'A1 A2 ' }, null, 0),
        chunk({ content: 'B1 B2 ' }, null, 1),
        chunk({ content: 'END A3' }, null, 0),
        chunk({ content: 'B3' }, null, 1),
        chunk({}, 'stop', 0),
        chunk({}, 'length', 1),
        done,
      ],
      ['END'],
    );
    expect(texts.get(0)).toBe('A1 A2 ');
    expect(texts.get(1)).toBe('B1 B2 B3');
    expect([finishes.get(0), finishes.get(1)]).toEqual(['stop', 'length']);
  });

  it('gives the text still held of a stream that ended without finishing or [DONE]', async () => {
    const { texts, finishes } = await readCut(
      [chunk({ content: 'unfinished answ' }), chunk({ content: 'er' })],
      ['XYZW'],
    );
    expect(texts.get(0)).toBe('unfinished answer');
    expect(finishes.size).toBe(0);
  });

  it("passes an answer of parts (Mistral's thinking chunks) as it came", async () => {
    const parts = chunk({ content: [{ type: 'text', text: 'STOP here' }] });
    const { body } = await readCut([parts, done], ['STOP']);
    expect(body).toBe(parts + done);
  });
});

describe('withAnswerStops, a whole completion', () => {
  const completion = (content: string | null, extra: Record<string, unknown> = {}) => ({
    id: 'c1',
    object: 'chat.completion',
    choices: [
      { index: 0, message: Object.assign({ role: 'assistant', content }, extra), finish_reason: 'length' },
    ],
    usage: { prompt_tokens: 9, completion_tokens: 30, total_tokens: 39 },
  });
  const read = async (body: unknown, stops: string[], status = 200) => {
    const upstream = scriptedUpstream([{ status, chunks: [JSON.stringify(body)] }]);
    return (await withAnswerStops(await upstream.send(request), stops).readAll()).toString();
  };

  it('cuts each choice at its first stop, drops what came after it, and finishes it there', async () => {
    const calls = {
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    };
    const out = JSON.parse(await read(completion(react, calls), ['Observation:'])) as ReturnType<
      typeof completion
    >;
    expect(out.choices[0]?.message).toEqual({
      role: 'assistant',
      content: 'Thought: I should look it up.\nAction: search[capital of France]\n',
    });
    expect(out.choices[0]?.finish_reason).toBe('stop');
    // A Messages client is told the stop as Claude tells it (messages/answer.ts).
    expect((out.choices[0] as Record<string, unknown>).ctxgate_anthropic_stop).toEqual({
      stop_reason: 'stop_sequence',
      stop_sequence: 'Observation:',
    });
    expect(out.usage.completion_tokens).toBe(30);
  });

  it('gives an answer with no stop in it, a refusal and a body that is not JSON as they came', async () => {
    const body = completion(react);
    expect(await read(body, ['Final Answer:'])).toBe(JSON.stringify(body));
    expect(await read(completion(null), ['x'])).toBe(JSON.stringify(completion(null)));
    const refusal = { error: { message: 'Observation: no', type: 'invalid_request_error' } };
    expect(await read(refusal, ['Observation:'], 400)).toBe(JSON.stringify(refusal));
    const upstream = scriptedUpstream([{ status: 200, chunks: ['Observation: not json'] }]);
    expect((await withAnswerStops(await upstream.send(request), ['Observation:']).readAll()).toString()).toBe(
      'Observation: not json',
    );
  });
});
