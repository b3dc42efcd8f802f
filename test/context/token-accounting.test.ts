// Token accounting against truth computed independently (test/fixtures/token-corpus: the cookbook
// method with js-tiktoken's reference encoder). Images: image-tokens.test.ts.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { getEncoding } from 'js-tiktoken';
import { pdfPageTokens } from '../../src/context/file-tokens.js';
import { describe, expect, it } from 'vitest';
import {
  countingWorkLimitFor,
  countNewestWithin,
  countPromptTokens,
  guessedParts,
} from '../../src/context/token-accounting.js';
import type { ContextMessage, Tokenizer } from '../../src/context/types.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { prose, seeded } from '../helpers/text.js';

interface CorpusEntry {
  id: string;
  model: string;
  encoding: 'o200k_base' | 'cl100k_base';
  messages: ContextMessage[];
  tools?: unknown[];
  expected_prompt_tokens: number;
}

const corpus = JSON.parse(
  readFileSync(new URL('../fixtures/token-corpus/token-corpus.json', import.meta.url), 'utf8'),
) as CorpusEntry[];
const tokenizers = createTiktokenTokenizers();

describe('prompt token estimates', () => {
  it('covers at least 50 varied conversations', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(50);
    expect(new Set(corpus.map((entry) => entry.encoding))).toEqual(new Set(['o200k_base', 'cl100k_base']));
  });

  // Tool definitions are counted as OpenAI renders them, checked against its published counts in
  // tool-tokens.test.ts; the cookbook's own function formula undercounts them.
  it.each(corpus.filter((entry) => entry.tools === undefined))(
    '$id ($model) is within 1 percent of the cookbook count',
    (entry) => {
      const estimate = countPromptTokens(entry.messages, entry.tools, tokenizers.forEncoding(entry.encoding));
      expect(Math.abs(estimate - entry.expected_prompt_tokens)).toBeLessThanOrEqual(
        entry.expected_prompt_tokens * 0.01,
      );
    },
  );
});

describe('guessedParts: what the provider sizes its own way', () => {
  // A 1x1 PNG: its header gives the size, so the tile formula applies (85 + 170 for one tile).
  const png =
    'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  it.each<[string, ContextMessage[], { parts: number; tokens: number }]>([
    ['plain text', [{ role: 'user', content: 'hello' }], { parts: 0, tokens: 0 }],
    [
      'text and refusal parts',
      [
        { role: 'user', content: [{ type: 'text', text: 'hello' }] },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] },
      ],
      { parts: 0, tokens: 0 },
    ],
    [
      'a remote image of unknown size',
      [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.test/a.png' } }] }],
      { parts: 1, tokens: 765 },
    ],
    [
      'a low-detail image and a sized one',
      [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'https://example.test/a.png', detail: 'low' } },
            { type: 'image_url', image_url: { url: png } },
          ],
        },
      ],
      { parts: 2, tokens: 85 + 255 },
    ],
    [
      'audio, which it does not size, and a PDF, by its pages',
      [
        {
          role: 'user',
          content: [
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0x' } },
          ],
        },
      ],
      // "%PDF-1", no page object: one page.
      { parts: 2, tokens: pdfPageTokens },
    ],
  ])('%s', (_name, messages, expected) => {
    expect(guessedParts(messages)).toEqual(expected);
  });
});

describe('countNewestWithin: counting a conversation within a bounded CPU time', () => {
  // Messages of 2,000 characters, prose and identifiers by turns, 3.2 million characters in all; the
  // truth is js-tiktoken's reference encoder with the cookbook's framing (3 tokens a message, and its role).
  const reference = getEncoding('o200k_base');
  const random = seeded(41);
  const identifiers = (chars: number): string => {
    let text = '';
    while (text.length < chars)
      text += `item_${Math.floor(random() * 1e6).toString(36)}.value = ${Math.floor(random() * 1e5)}; `;
    return text.slice(0, chars);
  };
  const messages: ContextMessage[] = [
    { role: 'system', content: 'You are a careful assistant.' },
    { role: 'user', content: prose(40, 1) },
    ...Array.from({ length: 1_600 }, (_unused, index): ContextMessage => {
      const content = index % 2 === 0 ? prose(400, index).slice(0, 2_000) : identifiers(2_000);
      return { role: index % 2 === 0 ? 'assistant' : 'user', content };
    }),
  ];
  const truth = messages.map(
    (message) => 3 + reference.encode(message.role).length + reference.encode(String(message.content)).length,
  );
  const totalChars = messages.reduce((total, message) => total + String(message.content).length, 0);
  /**
   * The gateway's tokenizer (its own: nothing counted by another test is remembered), with the
   * characters of texts (not roles: over 64 characters) it was given tallied.
   */
  const spied = (
    precision: 'exact' | 'sampled' = 'sampled',
    tokenizers = createTiktokenTokenizers(),
  ): { tokenizer: Tokenizer; chars: () => number } => {
    const tokenizer = tokenizers.forEncoding('o200k_base', precision);
    let chars = 0;
    return {
      tokenizer: {
        encoding: tokenizer.encoding,
        count: (text) => {
          if (text.length > 64) chars += text.length;
          return tokenizer.count(text);
        },
        truncate: (text, maxTokens, keep) => tokenizer.truncate(text, maxTokens, keep),
        workDone: () => tokenizer.workDone?.() ?? 0,
      },
      chars: () => chars,
    };
  };
  const sum = (counts: readonly number[], from = 0, to = counts.length) =>
    counts.slice(from, to).reduce((total, count) => total + count, 0);

  it('counts the newest messages one by one until its bound, and what may be sent before them at their ratio', () => {
    const { tokenizer, chars } = spied();
    // A window that holds it all (a model of millions of tokens, or a client's X-Context-Window).
    const { tokens: counts, estimated } = countNewestWithin(messages, tokenizer, 1e9);
    expect(estimated).toBe(true);
    expect(chars()).toBeLessThan(totalChars / 2);
    expect(Math.abs(sum(counts) - sum(truth)) / sum(truth)).toBeLessThan(0.03);
    // The older third, estimated at the ratio: as close in sum as the counted part.
    const older = Math.floor(messages.length / 3);
    expect(Math.abs(sum(counts, 2, older) - sum(truth, 2, older)) / sum(truth, 2, older)).toBeLessThan(0.03);
    // The first turn is counted whatever its place.
    expect(counts.slice(0, 2)).toEqual(truth.slice(0, 2));
  });

  it('bounds a body counted exactly as it bounds one counted from samples', () => {
    const { tokenizer, chars } = spied('exact');
    const { tokens: counts, estimated } = countNewestWithin(messages, tokenizer, Number.POSITIVE_INFINITY);
    expect(estimated).toBe(true);
    expect(chars()).toBeLessThan(totalChars / 2);
    expect(Math.abs(sum(counts) - sum(truth)) / sum(truth)).toBeLessThan(0.03);
    // Newest first: the messages nearest the question are exact.
    expect(counts.slice(-200)).toEqual(truth.slice(-200));
  });

  it('counts a body over 4 MB (counted from samples) a quarter as far as one counted exactly', () => {
    const far = (precision: 'exact' | 'sampled') => {
      const { tokenizer, chars } = spied('exact');
      countNewestWithin(messages, tokenizer, Number.POSITIVE_INFINITY, countingWorkLimitFor(precision));
      return chars();
    };
    const exact = far('exact');
    const sampled = far('sampled');
    expect(sampled).toBeGreaterThan(exact / 6);
    expect(sampled).toBeLessThan(exact / 3);
  });

  it('estimates at the ratio of texts like those it stands for, not of roles and ids', () => {
    // 4,000 messages of 1,000 characters of identifiers: past the bound, each of the messages' roles is
    // still counted (a token of 4–9 characters); its ratio must not bend the estimate of their texts.
    const many = Array.from({ length: 4_000 }, (_unused, index): ContextMessage => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: identifiers(1_000),
    }));
    const { tokenizer } = spied();
    const { tokens: counts, estimated } = countNewestWithin(
      many,
      tokenizer,
      Number.POSITIVE_INFINITY,
      countingWorkLimitFor('sampled'),
    );
    expect(estimated).toBe(true);
    const exact = createTiktokenTokenizers().forEncoding('o200k_base');
    const whole = many.map((message) => 3 + exact.count(message.role) + exact.count(String(message.content)));
    expect(Math.abs(sum(counts) - sum(whole)) / sum(whole)).toBeLessThan(0.02);
  });

  it('estimates each kind of text at its own ratio: base64 behind newer prose is not taken for prose', () => {
    // 600 older messages of random base64 (1.4 characters a token), then 300 of prose (over 4).
    const mixed: ContextMessage[] = [
      ...Array.from({ length: 600 }, (): ContextMessage => ({
        role: 'user',
        content: randomBytes(1_500).toString('base64'),
      })),
      ...Array.from({ length: 300 }, (_unused, index): ContextMessage => ({
        role: 'assistant',
        content: `${index} ${'The committee reviewed the proposal and asked for estimates. '.repeat(33)}`,
      })),
    ];
    const { tokenizer } = spied('exact');
    const { tokens: counts, estimated } = countNewestWithin(mixed, tokenizer, Number.POSITIVE_INFINITY);
    expect(estimated).toBe(true);
    const exact = createTiktokenTokenizers().forEncoding('o200k_base');
    const whole = mixed.map(
      (message) => 3 + exact.count(message.role) + exact.count(String(message.content)),
    );
    // The base64 messages, most of them estimated, as close in sum as the whole.
    expect(Math.abs(sum(counts, 0, 600) - sum(whole, 0, 600)) / sum(whole, 0, 600)).toBeLessThan(0.03);
    expect(Math.abs(sum(counts) - sum(whole)) / sum(whole)).toBeLessThan(0.03);
  });

  it('counts again for a lookup what it counted before: a long conversation sent again is counted exactly', () => {
    const tokenizers = createTiktokenTokenizers();
    const count = (conversation: ContextMessage[]) =>
      countNewestWithin(conversation, spied('exact', tokenizers).tokenizer, Number.POSITIVE_INFINITY);
    const head = messages.slice(0, 2);
    const whole = messages.slice(0, 802);
    // Counted cold, 800 messages of 2,000 characters reach the bound.
    expect(countNewestWithin(whole, spied('exact').tokenizer, Number.POSITIVE_INFINITY).estimated).toBe(true);
    // Counted in four parts (each within the bound), then whole: every message is exact.
    for (let from = 2; from < 802; from += 200)
      expect(count([...head, ...messages.slice(from, from + 200)]).estimated).toBe(false);
    const again = count(whole);
    expect(again.estimated).toBe(false);
    expect(again.tokens).toEqual(truth.slice(0, 802));
  });

  it('estimates by length, four characters a token, what cannot be sent: older than twice the window holds', () => {
    const { tokenizer, chars } = spied();
    const { tokens: counts, estimated } = countNewestWithin(messages, tokenizer, 20_000);
    expect(estimated).toBe(true);
    expect(chars()).toBeLessThan(200_000);
    // Past the first turn (its user message and the answer) and the newest 20,000 tokens, each
    // message is its framing and a quarter of its role's and its text's characters.
    for (const index of [3, 4, 800]) {
      const { role, content } = messages[index] as ContextMessage;
      expect(counts[index]).toBe(3 + Math.ceil(role.length / 4) + Math.ceil(String(content).length / 4));
    }
    expect(counts.at(-1)).toBe(truth.at(-1));
  });

  it('bounds the first turn too: one user message and thousands of steps after it, all of them the first turn', () => {
    const { tokenizer, chars } = spied();
    const oneTurn = messages.map((message, index) =>
      index < 2 ? message : Object.assign({}, message, { role: 'assistant' }),
    );
    const { tokens: counts } = countNewestWithin(oneTurn, tokenizer, 2 * 128_000);
    expect(chars()).toBeLessThan(totalChars / 2);
    // Newest first: what can be sent is what was counted.
    expect(counts.slice(-100)).toEqual(
      oneTurn.slice(-100).map((message) => 3 + 1 + reference.encode(String(message.content)).length),
    );
    expect(Math.abs(sum(counts) - sum(truth)) / sum(truth)).toBeLessThan(0.03);
  });

  it('bounds one message of thousands of text parts as it bounds thousands of messages', () => {
    const { tokenizer, chars } = spied();
    const parts = messages.slice(2).map((message) => ({ type: 'text', text: String(message.content) }));
    const { tokens: counts } = countNewestWithin([{ role: 'user', content: parts }], tokenizer, 2 * 128_000);
    expect(chars()).toBeLessThan(totalChars / 2);
    const exact = parts.reduce((total, part) => total + reference.encode(part.text).length, 0);
    expect(Math.abs((counts[0] as number) - exact) / exact).toBeLessThan(0.03);
  });

  it('counts text that is slow to count less far: uncommon Chinese characters and base64 stop sooner than prose', () => {
    // 400 messages of 2,000 characters of each kind. Chinese has a space after every 39 characters.
    const kinds = {
      prose: () => {
        let text = '';
        while (text.length < 2_000)
          text += `The committee reviewed proposal ${Math.floor(random() * 1e6)} and asked for estimates. `;
        return text.slice(0, 2_000);
      },
      chinese: () =>
        Array.from({ length: 2_000 }, (_unused, index) =>
          index % 40 === 39 ? ' ' : String.fromCharCode(0x4e00 + Math.floor(random() * 20_000)),
        ).join(''),
      base64: () => randomBytes(1_500).toString('base64'),
    };
    const counted: Record<string, number> = {};
    for (const [kind, text] of Object.entries(kinds)) {
      const conversation = Array.from({ length: 400 }, (): ContextMessage => ({
        role: 'user',
        content: text(),
      }));
      const { tokenizer, chars } = spied('exact');
      const { tokens: counts } = countNewestWithin(conversation, tokenizer, 1e9);
      counted[kind] = chars();
      // Each message counted whole by a tokenizer of its own (exact: checked against js-tiktoken above).
      const exact = createTiktokenTokenizers().forEncoding('o200k_base');
      const whole = conversation.reduce(
        (total, message) => total + 4 + exact.count(String(message.content)),
        0,
      );
      expect(Math.abs(sum(counts) - whole) / whole, kind).toBeLessThan(0.03);
    }
    // Prose of words counted before is some ten times faster to count than either: it is all counted.
    expect(counted.prose).toBe(800_000);
    expect(counted.chinese).toBeLessThan(800_000 / 4);
    expect(counted.base64).toBeLessThan(800_000 / 4);
  });
});
