// Ids joined from pieces are handed on in one piece, with the same characters.
import { describe, expect, it } from 'vitest';
import { flatAscii } from '../src/flat-string.js';

describe('flatAscii', () => {
  it.each([
    ['a response id', 'resp_', '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c'],
    ['a message id', 'msg_', 'AbC-dEf_012345678xYz'],
    [
      'every printable ASCII character',
      '',
      Array.from({ length: 95 }, (_u, i) => String.fromCharCode(32 + i)).join(''),
    ],
    ['control characters and DEL', 'id', '\u0000\t\n\u001f\u007f'],
    ['nothing', '', ''],
  ])('keeps %s as it was joined', (_name, prefix, rest) => {
    const joined = `${prefix}${rest}`;
    expect(flatAscii(joined)).toBe(prefix + rest);
    expect(flatAscii(joined)).toHaveLength(prefix.length + rest.length);
  });
});
