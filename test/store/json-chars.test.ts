// jsonChars against JSON.stringify itself.
import { describe, expect, it } from 'vitest';
import { jsonChars } from '../../src/store/json-chars.js';

describe('jsonChars: what a value takes as JSON, without writing it', () => {
  it.each<[string, unknown]>([
    ['a string', 'hello'],
    ['numbers, booleans and null', [1, -2.5, 1e21, true, false, null]],
    ['empty containers', { a: [], b: {}, c: '' }],
    [
      'a stored response',
      {
        id: 'resp_1',
        messages: [
          { role: 'user', content: 'Where is the retry budget computed?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', function: { name: 'f', arguments: '{}' } }],
          },
        ],
        tokens: 42,
        previousId: undefined,
      },
    ],
    ['undefined elements and fields, as JSON writes them', { list: [1, undefined, 2], gone: undefined }],
    ['Japanese and emoji, which JSON does not escape', ['設定を確認', '🙂 done']],
  ])('%s: exactly the length JSON.stringify writes', (_name, value) => {
    expect(jsonChars(value)).toBe(JSON.stringify(value).length);
  });

  it('counts escaped characters as one each: short of what JSON writes by the escapes alone', () => {
    const value = { text: 'a "quoted" line\nand a tab\t' };
    expect(JSON.stringify(value).length - jsonChars(value)).toBe(4);
  });

  it('walks a value deeper than the stack without overflowing', () => {
    let deep: unknown = 'leaf';
    for (let level = 0; level < 100_000; level++) deep = [deep];
    expect(jsonChars(deep)).toBe(2 * 100_000 + 6);
  });
});
