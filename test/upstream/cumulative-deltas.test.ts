// A chat stream's deltas given as what each adds (cumulative-deltas.ts), as tables of the streams
// providers give — whole-so-far (DashScope's Coding Plan paths, QwenLM's chat API) and OpenAI's own,
// whose deltas may begin as the text before them did — and what a client that joins deltas reads of each.
import { describe, expect, it } from 'vitest';
import { CumulativeDeltas } from '../../src/upstream/cumulative-deltas.js';

type Delta = Record<string, string>;

/** One chat chunk's event, its choice's delta `delta`, written compact (or as Python writes JSON). */
const event = (delta: Delta, spaced = false, newline = '\n'): string => {
  const chunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta }] };
  return `data: ${spaced ? JSON.stringify(chunk).replace(/":/g, '": ') : JSON.stringify(chunk)}${newline}${newline}`;
};

/** Each event through one stream's normalizer, one by one; what a client joins of each channel. */
function joined(deltas: Delta[], spaced = false, newline = '\n'): { given: string[]; texts: Delta } {
  const normalizer = new CumulativeDeltas();
  const given: string[] = [];
  const texts: Delta = {};
  for (const delta of deltas) {
    const out = normalizer.rewrite(Buffer.from(event(delta, spaced, newline))).toString();
    given.push(out);
    const data = out.split(newline).find((line) => line.startsWith('data:')) ?? '';
    const read = (JSON.parse(data.slice(5)) as { choices: [{ delta: Delta }] }).choices[0].delta;
    for (const [channel, text] of Object.entries(read)) texts[channel] = (texts[channel] ?? '') + text;
  }
  return { given, texts };
}

/** A text's deltas as a cumulative provider gives them: each the whole of it up to there. */
const snapshots = (pieces: string[], channel = 'content'): Delta[] =>
  pieces.map((_piece, at) => ({ [channel]: pieces.slice(0, at + 1).join('') }));
/** A text's deltas as OpenAI gives them. */
const pieces = (texts: string[], channel = 'content'): Delta[] => texts.map((text) => ({ [channel]: text }));

const tablePieces = [
  'Here',
  ' is a Flowchart Syntax Reference:',
  '\n| `flowchart TD` | Direction |',
  '\n| `A` |',
];

describe('CumulativeDeltas', () => {
  it.each([
    ['a table, each delta the whole of it so far (DashScope)', snapshots(tablePieces)],
    ['one letter first (QwenLM\'s "1", "1+", "1+1")', snapshots(['1', '+', '1', '等于', '2。'])],
    [
      'quotes, newlines and escapes in the text',
      snapshots(['Say "hi"', '\n\tthen \\ leave', ' — ok \u2028 done', ' 🙂']),
    ],
  ])('%s: a client joins the text once (compact, spaced as Python writes JSON, CRLF)', (_name, deltas) => {
    const whole = deltas.at(-1)?.content;
    expect(joined(deltas).texts.content).toBe(whole);
    expect(joined(deltas, true).texts.content).toBe(whole);
    expect(joined(deltas, false, '\r\n').texts.content).toBe(whole);
  });

  it('reasoning first, then the answer, each whole so far: each channel joins once', () => {
    const deltas = [
      ...snapshots(['Let me think', ' about the table.'], 'reasoning_content'),
      ...snapshots(['Here', ' it is.']),
    ];
    expect(joined(deltas).texts).toEqual({
      reasoning_content: 'Let me think about the table.',
      content: 'Here it is.',
    });
  });

  it('a repeat of the whole text so far, long: nothing more; a provider that goes on as OpenAI does: as it came', () => {
    const long = 'The following section starts with more than enough text to be a stream.';
    expect(joined([{ content: long }, { content: long }, { content: `${long} More.` }]).texts.content).toBe(
      `${long} More.`,
    );
    expect(
      joined([...snapshots(['One', ' two']), { content: ' three' }, { content: ' four' }]).texts.content,
    ).toBe('One two three four');
  });

  it('found late, its first delta of no letter: given as OpenAI streams from its third', () => {
    expect(joined(snapshots(['|', ' Syntax |', ' Meaning |', '\n|---|'])).texts.content).toBe(
      '|| Syntax | Meaning |\n|---|',
    );
  });

  it.each([
    ['a short delta repeated', ['ha', 'ha', 'ha']],
    ['a newline, then more newlines and text', ['\n', '\n\nHello', ' there']],
    ['markup, then more of it', ['**', '**Summary**', ':']],
    ['dashes growing', ['-', '--', '---x']],
    ['a long repeat under 64 characters', ['import os\n', 'import os\n', 'import sys\n']],
  ])("OpenAI's deltas, %s: byte for byte", (_name, texts) => {
    const normalizer = new CumulativeDeltas();
    for (const delta of pieces(texts)) {
      const bytes = Buffer.from(event(delta));
      expect(normalizer.rewrite(bytes)).toBe(bytes);
    }
  });

  it('once three deltas of text came as OpenAI streams, the stream is no longer read', () => {
    const normalizer = new CumulativeDeltas();
    for (const text of ['word0', ' word1', ' word2'])
      normalizer.rewrite(Buffer.from(event({ content: text })));
    const bytes = Buffer.from(event({ content: 'word0 word1 word2 and more' }));
    expect(normalizer.rewrite(bytes)).toBe(bytes);
  });

  it('a stream of two choices is not read', () => {
    const normalizer = new CumulativeDeltas();
    const two = (text: string) =>
      Buffer.from(
        `data: ${JSON.stringify({ choices: [0, 1].map((index) => ({ index, delta: { content: text } })) })}\n\n`,
      );
    for (const text of ['Here', 'Here it is', 'Here it is.']) {
      const bytes = two(text);
      expect(normalizer.rewrite(bytes)).toBe(bytes);
    }
  });

  it('events other than text deltas go as they came', () => {
    const normalizer = new CumulativeDeltas();
    normalizer.rewrite(Buffer.from(event({ content: 'Here' })));
    normalizer.rewrite(Buffer.from(event({ content: 'Here it' })));
    for (const text of [
      'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n',
      ': keep-alive\n\n',
      'data: [DONE]\n\n',
    ]) {
      const bytes = Buffer.from(text);
      expect(normalizer.rewrite(bytes)).toBe(bytes);
    }
  });
});
