// Token accounting against truth computed independently (test/fixtures/token-corpus: the cookbook
// method with js-tiktoken's reference encoder), and the image tile formula against OpenAI's examples.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  dataUrlImageSize,
  imageTokens,
  tileFormulaTokens,
  unknownSizeImageTokens,
} from '../../src/context/image-tokens.js';
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

function pngHeader(width: number, height: number): string {
  const bytes = new Uint8Array(33);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  new DataView(bytes.buffer).setUint32(16, width);
  new DataView(bytes.buffer).setUint32(20, height);
  return `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`;
}

function gifHeader(width: number, height: number): string {
  const bytes = Buffer.alloc(13);
  bytes.write('GIF89a', 0, 'latin1');
  bytes.writeUInt16LE(width, 6);
  bytes.writeUInt16LE(height, 8);
  return `data:image/gif;base64,${bytes.toString('base64')}`;
}

function jpegHeader(width: number, height: number): string {
  // SOI, an APP0 segment of 16 bytes, then SOF0 with height and width.
  const bytes = Buffer.from([
    0xff,
    0xd8,
    0xff,
    0xe0,
    0x00,
    0x10,
    ...new Array<number>(14).fill(0),
    0xff,
    0xc0,
    0x00,
    0x11,
    0x08,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    0x03,
  ]);
  return `data:image/jpeg;base64,${bytes.toString('base64')}`;
}

function webpHeader(width: number, height: number): string {
  const bytes = Buffer.alloc(30);
  bytes.write('RIFF', 0, 'latin1');
  bytes.write('WEBPVP8X', 8, 'latin1');
  bytes.writeUIntLE(width - 1, 24, 3);
  bytes.writeUIntLE(height - 1, 27, 3);
  return `data:image/webp;base64,${bytes.toString('base64')}`;
}

describe('image tokens', () => {
  it("matches OpenAI's published examples of the tile formula", () => {
    // 1024×1024 high: 4 tiles → 765. 2048×4096 high: scaled to 768×1536, 6 tiles → 1105. Low: 85.
    expect(tileFormulaTokens({ width: 1024, height: 1024 }, 'high')).toBe(765);
    expect(tileFormulaTokens({ width: 2048, height: 4096 }, 'high')).toBe(1105);
    expect(tileFormulaTokens({ width: 4096, height: 8192 }, 'low')).toBe(85);
  });

  it.each([
    ['PNG', pngHeader(800, 600)],
    ['GIF', gifHeader(800, 600)],
    ['JPEG', jpegHeader(800, 600)],
    ['WebP', webpHeader(800, 600)],
  ])('reads the size of a %s data URL', (_format, url) => {
    expect(dataUrlImageSize(url)).toEqual({ width: 800, height: 600 });
  });

  it('uses a flat estimate for remote URLs and unreadable data', () => {
    expect(imageTokens('https://example.com/cat.png', 'high')).toBe(unknownSizeImageTokens);
    expect(imageTokens('data:image/png;base64,!!!!', 'auto')).toBe(unknownSizeImageTokens);
    expect(imageTokens('https://example.com/cat.png', 'low')).toBe(85);
  });
});
