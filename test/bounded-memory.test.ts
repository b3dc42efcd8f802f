// A process's bounded memory per model: never more than its bound, the oldest out first.
import { describe, expect, it } from 'vitest';
import { setWithin } from '../src/bounded-memory.js';

describe('setWithin', () => {
  it('keeps at most `max` entries, letting the oldest go, and replaces a known key in place', () => {
    const memory = new Map<string, number>();
    for (let index = 0; index < 5; index++) setWithin(memory, `model-${index}`, index, 3);
    expect([...memory.entries()]).toEqual([
      ['model-2', 2],
      ['model-3', 3],
      ['model-4', 4],
    ]);
    setWithin(memory, 'model-2', 20, 3);
    expect([...memory.keys()]).toEqual(['model-2', 'model-3', 'model-4']);
    expect(memory.get('model-2')).toBe(20);
  });
});
