// A header's value as the gateway reads it: the first of repeated headers.
import { describe, expect, it } from 'vitest';
import { firstHeaderValue } from '../src/header-value.js';

describe('firstHeaderValue', () => {
  it.each<[string | string[] | undefined, string | undefined]>([
    [undefined, undefined],
    ['one', 'one'],
    ['', ''],
    [['first', 'second'], 'first'],
    [[], undefined],
  ])('reads %j as %j', (value, expected) => {
    expect(firstHeaderValue(value)).toBe(expected);
  });
});
