// The piece memo may forget (it starts over when full) but never answers wrong: whatever it returns for
// a piece is the count last remembered for exactly that piece.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PieceMemo } from '../../src/tokenizer/piece-memo.js';

describe('PieceMemo', () => {
  it('answers a piece with the count remembered for it, or not at all, across starting over', () => {
    const piece = fc.string({
      unit: fc.constantFrom('a', 'b', ' ', '\u00e9', '\ud83d', '\ude00', '中'),
      maxLength: 6,
    });
    fc.assert(
      fc.property(fc.array(fc.tuple(piece, fc.nat(1_000)), { maxLength: 60 }), (operations) => {
        const memo = new PieceMemo(8, 64);
        const remembered = new Map<string, number>();
        for (const [text, count] of operations) {
          const known = memo.get(text);
          if (known !== -1) expect(known).toBe(remembered.get(text));
          else {
            memo.set(text, count);
            remembered.set(text, count);
            // Pieces up to a sixteenth of the memo's characters are remembered.
            expect(memo.get(text)).toBe(text.length <= 4 ? count : -1);
          }
          expect(memo.size).toBeLessThanOrEqual(8);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('keeps every piece while it has room', () => {
    const memo = new PieceMemo(1_000, 100_000);
    const pieces = Array.from({ length: 1_000 }, (_unused, index) => ` w${index.toString(36)}`);
    pieces.forEach((text, index) => memo.set(text, index));
    expect(pieces.map((text) => memo.get(text))).toEqual(pieces.map((_text, index) => index));
    expect(memo.get(' other')).toBe(-1);
  });
});
