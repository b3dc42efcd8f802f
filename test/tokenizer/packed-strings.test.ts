// Strings packed into a typed array are found again by any range of any string that spells them, and
// nothing else is: not a prefix, not a longer string, not what was cleared.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PackedStrings } from '../../src/tokenizer/packed-strings.js';

describe('PackedStrings', () => {
  it('finds exactly the strings added, by their numbers, against a Map', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'é', '中', '\ud83d', '\ude00'), maxLength: 5 });
    fc.assert(
      fc.property(
        fc.uniqueArray(text, { maxLength: 40 }),
        fc.array(text, { maxLength: 40 }),
        (added, probes) => {
          const strings = new PackedStrings(new Uint16Array(400), 40);
          const model = new Map<string, number>();
          for (const value of added) model.set(value, strings.add(`<${value}>`, 1, value.length + 1));
          expect(strings.size).toBe(added.length);
          for (const probe of [...added, ...probes]) {
            // Found inside a longer string too: only the range is read.
            expect(strings.find(`[${probe}]`, 1, probe.length + 1)).toBe(model.get(probe) ?? -1);
          }
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('takes units the caller wrote (bytes), and forgets them all when cleared', () => {
    const bytes = Buffer.alloc(16);
    const strings = new PackedStrings(bytes, 4);
    const first = strings.commit(bytes.write('abc', strings.end, 'latin1'));
    const second = strings.commit(bytes.write('ab', strings.end, 'latin1'));
    expect([strings.find('abc', 0, 3), strings.find('xab', 1, 3), strings.find('abcd', 0, 4)]).toEqual([
      first,
      second,
      -1,
    ]);
    strings.clear();
    expect([strings.size, strings.end, strings.find('abc', 0, 3)]).toEqual([0, 0, -1]);
  });
});
