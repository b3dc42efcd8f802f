// Texts joined from pieces or cut from others are handed on in one piece, with the same characters.
import { describe, expect, it } from 'vitest';
import { flatText } from '../src/flat-string.js';

const digest = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';

describe('flatText', () => {
  it.each([
    ['a response id, joined', `resp_${digest.slice(0, 48)}`],
    ['a digest cut short', digest.slice(0, 16)],
    [
      'every printable ASCII character',
      Array.from({ length: 95 }, (_u, i) => String.fromCharCode(32 + i)).join(''),
    ],
    [
      'text added up from deltas, accents and an emoji among them',
      ['Hé', 'llo, ', 'wörld ', '🙂', ' done'].reduce((a, b) => a + b),
    ],
    ['a lone surrogate at the middle', `${'a'.repeat(10)}\ud800${'b'.repeat(10)}`],
    ['a short text', 'abc'],
    ['nothing', ''],
  ])('keeps %s as it was', (_name, text) => {
    const copy = Array.from(text, (character) => character).join('');
    expect(flatText(text)).toBe(copy);
    expect(flatText(text)).toHaveLength(text.length);
  });
});
