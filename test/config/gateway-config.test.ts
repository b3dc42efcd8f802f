// A config table's entry by a name the request chose (a policy, a model's settings): only the table's own
// entries are found, never what every object inherits, whatever the client names.
import { describe, expect, it } from 'vitest';
import { ownEntry } from '../../src/config/gateway-config.js';

describe('ownEntry', () => {
  const table: Record<string, { maxHistoryTokens: number }> = {
    agent: { maxHistoryTokens: 8_000 },
    economy: { maxHistoryTokens: 4_000 },
  };

  it.each<[string, number | undefined]>([
    ['agent', 8_000],
    ['economy', 4_000],
    ['Agent', undefined],
    ['', undefined],
    ['__proto__', undefined],
    ['constructor', undefined],
    ['toString', undefined],
    ['hasOwnProperty', undefined],
    ['valueOf', undefined],
  ])('%j finds %s', (name, expected) => {
    const entry = ownEntry(table, name);
    // The entry itself: Object.prototype or a function found by a plain lookup would not be undefined.
    expect(entry).toEqual(expected === undefined ? undefined : { maxHistoryTokens: expected });
  });

  it('finds an entry named like an inherited property when the table has one', () => {
    const withOwn: Record<string, string> = JSON.parse('{"constructor":"own","__proto__":"own too"}');
    expect(ownEntry(withOwn, 'constructor')).toBe('own');
    expect(ownEntry(withOwn, '__proto__')).toBe('own too');
  });

  it('finds nothing in a table without a prototype of its own', () => {
    const bare = Object.assign(Object.create(null) as Record<string, number>, { a: 1 });
    expect(ownEntry(bare, 'a')).toBe(1);
    expect(ownEntry(bare, 'toString')).toBeUndefined();
  });
});
