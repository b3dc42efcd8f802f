// The off-heap rank table must hold exactly js-tiktoken's own ranks: every token its reference encoder
// loads, at that token's rank, looked up by any range of a longer string, and nothing else.
import fc from 'fast-check';
import { getEncoding } from 'js-tiktoken';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import o200kBase from 'js-tiktoken/ranks/o200k_base';
import { describe, expect, it } from 'vitest';
import { RankTable } from '../../src/tokenizer/rank-table.js';

/** The reference encoder's own tables (js-tiktoken parses the rank text itself, with its own base64). */
interface ReferenceTables {
  rankMap: Map<string, number>;
  textMap: Map<number, Uint8Array>;
}

describe.each([
  ['o200k_base', o200kBase],
  ['cl100k_base', cl100kBase],
] as const)('RankTable %s', (encoding, source) => {
  const table = new RankTable(source.bpe_ranks);
  const reference = getEncoding(encoding) as unknown as ReferenceTables;

  it("holds every token of the reference encoder at the reference's rank, and as many", () => {
    expect(table.size).toBe(reference.textMap.size);
    let wrong = 0;
    for (const [rank, bytes] of reference.textMap) {
      // Each token inside a longer string, at an offset: the table reads only the range it is given.
      const text = `\u00ff${Buffer.from(bytes).toString('latin1')}\u0000`;
      if (table.get(text, 1, text.length - 1) !== rank) wrong++;
    }
    expect(wrong).toBe(0);
  });

  it('finds no byte string the reference does not know', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 6 }), (bytes) => {
        const known = reference.rankMap.get(Array.from(bytes).join(',')) ?? -1;
        expect(table.get(Buffer.from(bytes).toString('latin1'), 0, bytes.length)).toBe(known);
      }),
      { numRuns: 20_000 },
    );
  });
});
