// Cuts of text that never leave half a character: every slice of any text, at any indices, is the
// plain slice or one code unit shorter at an end that fell inside a pair, and well-formed text stays so.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sliceWhole } from '../src/text-slices.js';

describe('sliceWhole', () => {
  it.each([
    ['an emoji cut after its first half', 'launch 🚀 done', 0, 8, 'launch '],
    ['an emoji cut before its second half', 'launch 🚀 done', 8, 14, ' done'],
    ['a cut outside any pair', 'launch 🚀 done', 0, 9, 'launch 🚀'],
    ['a negative start inside a pair', 'ab😀', -1, undefined, ''],
    ['a negative start before a pair', 'ab😀', -2, undefined, '😀'],
    ['an end past the text', 'ab😀', 1, 99, 'b😀'],
    ['a lone half the text already had', 'a\ud83db', 0, 2, 'a\ud83d'],
  ])('%s', (_case, text, start, end, expected) => {
    expect(sliceWhole(text, start, end)).toBe(expected);
  });

  it('is the plain slice or one code unit shorter at an end inside a pair, and well-formed text stays well-formed', () => {
    const unit = fc.constantFrom('a', ' ', 'é', '中', '😀', '🚀', '\u{10FFFF}');
    fc.assert(
      fc.property(
        fc.array(unit, { maxLength: 20 }),
        fc.integer({ min: -45, max: 45 }),
        fc.integer({ min: -45, max: 45 }),
        (units, start, end) => {
          const text = units.join('');
          const cut = sliceWhole(text, start, end);
          expect(cut.isWellFormed()).toBe(true);
          const plain = text.slice(start, end);
          // The plain slice, less at most one unit at either end.
          expect(plain.length - cut.length).toBeLessThanOrEqual(2);
          expect(plain.includes(cut)).toBe(true);
          if (plain.isWellFormed()) expect(cut).toBe(plain);
        },
      ),
      { numRuns: 500 },
    );
  });
});
