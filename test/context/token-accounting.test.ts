// Token accounting against truth computed independently (test/fixtures/token-corpus: the cookbook
// method with js-tiktoken's reference encoder). Images: image-tokens.test.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { countPromptTokens, guessedParts } from '../../src/context/token-accounting.js';
import type { ContextMessage } from '../../src/context/types.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';

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
      'audio and a file, which it does not size at all',
      [
        {
          role: 'user',
          content: [
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0x' } },
          ],
        },
      ],
      { parts: 2, tokens: 0 },
    ],
  ])('%s', (_name, messages, expected) => {
    expect(guessedParts(messages)).toEqual(expected);
  });
});
