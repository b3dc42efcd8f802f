// The count cache finds texts by a sampled hash: texts that share it (same length, same sampled
// characters, different elsewhere — tool results that differ in a few digits look like this) must each
// get their own count, against js-tiktoken's reference encoder, however often and in whatever order
// they are counted, and when more of them share a hash than a bucket holds.
import { getEncoding } from 'js-tiktoken';
import { describe, expect, it } from 'vitest';
import { sampledHash } from '../../src/text-cache.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { seeded } from '../helpers/text.js';

const reference = getEncoding('o200k_base');

/** Texts of one length that differ only at `position`, with different token counts for some. */
function variants(base: string, position: number, replacements: string[]): string[] {
  return replacements.map((replacement) => base.slice(0, position) + replacement + base.slice(position + 1));
}

describe('the count cache', () => {
  const base = 'word '.repeat(400);
  // Characters 33 to 61 of a 2 000-character text are never sampled.
  const colliding = variants(base, 40, [' ', 'x', '7', '!', '\n', 'é', '-', 'Q']);

  it('tells apart texts that share a sampled hash', () => {
    expect(new Set(colliding.map(sampledHash)).size).toBe(1);
    expect(new Set(colliding).size).toBe(colliding.length);
    const expected = colliding.map((text) => reference.encode(text).length);
    // The counts really differ, so a mix-up would show.
    expect(new Set(expected).size).toBeGreaterThan(1);
    const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');
    const random = seeded(3);
    for (let round = 0; round < 200; round++) {
      const index = Math.floor(random() * colliding.length);
      // A copy, not the same string object: as a text parsed afresh from each request.
      const text = ` ${colliding[index] as string}`.slice(1);
      expect(tokenizer.count(text)).toBe(expected[index]);
    }
  });

  it('counts right across generations, for short, long and digest-keyed texts', () => {
    const tokenizer = createTiktokenTokenizers({ cacheEntries: 16, cacheKeyChars: 1_000_000 }).forEncoding(
      'o200k_base',
    );
    const random = seeded(5);
    const texts = [
      ...Array.from({ length: 40 }, (_unused, index) => `message ${index}: ${'abc '.repeat(index)}`),
      ...variants('ab cd '.repeat(1_000), 100, ['a', 'b', 'c', 'd', 'e', 'f']),
      ...variants('y '.repeat(1_000), 50, ['1', '2', '3', '4', '5', '6']),
    ];
    const expected = texts.map((text) => reference.encode(text).length);
    for (let round = 0; round < 600; round++) {
      const index = Math.floor(random() * texts.length);
      expect(tokenizer.count(` ${texts[index] as string}`.slice(1))).toBe(expected[index]);
    }
  });
});
