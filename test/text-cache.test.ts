// The bounded text cache (text-cache.ts), as a model check: whatever is set and looked up, a value found
// is the one last set for exactly that text — texts that share a sampled hash (same length, same
// sampled characters) included — and the cache never holds more than its bounds allow.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sampledHash, TextCache } from '../src/text-cache.js';

/** A 1,000-character text that differs from its siblings only at a position the hash does not sample. */
const sibling = (mark: string): string => `${'a'.repeat(33)}${mark}${'b'.repeat(966)}`;

describe('the sampled hash', () => {
  it('reads every character of a short text and only samples of a long one', () => {
    expect(sampledHash('abc')).not.toBe(sampledHash('abd'));
    // Position 33 of 1,000 is not among the 128 sampled (32 and 46 are): siblings share a hash (what the cache must survive).
    const marks = ['x', 'y', 'z', 'w', 'v', 'u'];
    expect(new Set(marks.map((mark) => sampledHash(sibling(mark)))).size).toBe(1);
    expect(sampledHash(sibling('x'))).not.toBe(sampledHash(`${sibling('x')}!`));
  });
});

describe('the text cache', () => {
  it('finds each of many texts sharing one hash by its own value, more of them than a bucket holds', () => {
    const cache = new TextCache<number>(1_000, 1_000_000);
    const marks = 'abcdefgh'.split('');
    marks.forEach((mark, index) => cache.set(sibling(mark), index));
    // A bucket holds four: the oldest four are gone, never answered with a sibling's value.
    marks.forEach((mark, index) => expect(cache.get(sibling(mark))).toBe(index < 4 ? undefined : index));
  });

  it('agrees with a map of what was set last, and keeps within its bounds (model check)', () => {
    const texts = fc.oneof(
      fc.constantFrom('x', 'y', 'z').map(sibling),
      fc.string({ maxLength: 6 }),
      fc.constantFrom('alpha', 'beta', 'gamma'),
    );
    const operation = fc.oneof(fc.record({ set: texts, value: fc.integer() }), fc.record({ get: texts }));
    fc.assert(
      fc.property(
        fc.array(operation, { maxLength: 60 }),
        fc.integer({ min: 2, max: 10 }),
        (operations, maxEntries) => {
          const cache = new TextCache<number>(maxEntries, 1_000_000);
          const model = new Map<string, number>();
          for (const step of operations) {
            if ('set' in step) {
              cache.set(step.set, step.value);
              model.set(step.set, step.value);
            } else {
              const found = cache.get(step.get);
              // A cache may forget; it never answers wrong.
              if (found !== undefined) expect(found).toBe(model.get(step.get));
            }
          }
          // Bounded: at most maxEntries texts are found.
          const held = [...model.keys()].filter((text) => cache.get(text) !== undefined);
          expect(held.length).toBeLessThanOrEqual(maxEntries);
        },
      ),
      { numRuns: 400, seed: 5 },
    );
  });

  it('finds what was set last while it is within its bounds', () => {
    const cache = new TextCache<string>(8, 1_000_000);
    cache.set('alpha', 'one');
    cache.set('alpha', 'two');
    expect(cache.get('alpha')).toBe('two');
    for (let index = 0; index < 3; index++) cache.set(`text ${index}`, `value ${index}`);
    expect(cache.get('alpha')).toBe('two');
  });

  it('drops the least recently used generation when its characters run out', () => {
    const cache = new TextCache<number>(1_000, 100);
    cache.set('a'.repeat(40), 1);
    cache.set('b'.repeat(40), 2);
    // 40 + 40 > 50 (half the characters): the first generation is kept as the old one, then dropped.
    cache.set('c'.repeat(40), 3);
    cache.set('d'.repeat(40), 4);
    expect(cache.get('a'.repeat(40))).toBeUndefined();
    expect(cache.get('d'.repeat(40))).toBe(4);
  });
});
