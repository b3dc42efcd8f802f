// Token accounting against truth computed independently (test/fixtures/token-corpus: the cookbook
// method with js-tiktoken's reference encoder). Images: image-tokens.test.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { countPromptTokens } from '../../src/context/token-accounting.js';
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
