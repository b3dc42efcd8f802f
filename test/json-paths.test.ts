// Values inside parsed JSON by where they stand, and copies with other values put in.
import { describe, expect, it } from 'vitest';
import { valueAt, withValuesAt } from '../src/json-paths.js';

const value = () => ({
  items: [
    {
      id: 'a',
      content: [
        { type: 'text', text: 'one' },
        { type: 'text', text: 'two' },
      ],
    },
    { id: 'b', content: 'three' },
  ],
  other: { kept: true },
});

describe('valueAt', () => {
  it.each([
    [['items', 0, 'content', 1, 'text'], 'two'],
    [['items', 1, 'content'], 'three'],
    [['items', 2, 'content'], undefined],
    [['other', 'kept', 'deeper'], undefined],
    [[], value()],
  ])('reads %j', (path, expected) => {
    expect(valueAt(value(), path)).toEqual(expected);
  });
});

describe('withValuesAt', () => {
  it('puts each value at its path, copying only what lies on the way, and leaves the value as it was', () => {
    const original = value();
    const copy = withValuesAt(
      original,
      [
        ['items', 0, 'content', 0, 'text'],
        ['items', 0, 'content', 1, 'text'],
        ['items', 1, 'content'],
      ],
      (index) => `#${index}`,
    ) as ReturnType<typeof value>;
    expect(copy).toEqual({
      items: [
        {
          id: 'a',
          content: [
            { type: 'text', text: '#0' },
            { type: 'text', text: '#1' },
          ],
        },
        { id: 'b', content: '#2' },
      ],
      other: { kept: true },
    });
    expect(original).toEqual(value());
    // What no path passes through is shared (two paths through one array kept both values above).
    expect(copy.other).toBe(original.other);
    expect(copy.items[0]).not.toBe(original.items[0]);
  });
});
