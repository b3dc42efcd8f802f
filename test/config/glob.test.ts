// Model-name globs as a table: `*` any run, `?` one character, case-insensitive, the whole name, and
// every other character literal (a dot or a plus in a model name is not a pattern).
import { describe, expect, it } from 'vitest';
import { globToRegExp } from '../../src/config/glob.js';

describe('globToRegExp', () => {
  it.each<[string | string[], string, boolean]>([
    ['gpt-4o*', 'gpt-4o-mini', true],
    ['gpt-4o*', 'GPT-4O', true],
    ['gpt-4o*', 'my-gpt-4o', false],
    ['*claude*', 'anthropic/claude-3.5-sonnet', true],
    ['gpt-4.1*', 'gpt-4x1-mini', false],
    ['gpt-4.1*', 'gpt-4.1-mini', true],
    ['llama-3?', 'llama-31', true],
    ['llama-3?', 'llama-3', false],
    ['c++model', 'c++model', true],
    ['c++model', 'cmodel', false],
    ['(x)|y', '(x)|y', true],
    ['(x)|y', 'y', false],
    [['a*', 'b*'], 'beta', true],
    [['a*', 'b*'], 'gamma', false],
    ['*', '', true],
    ['*', 'line\nbreak', true],
  ])('%j matches %j: %s', (glob, name, matches) => {
    expect(globToRegExp(glob).test(name)).toBe(matches);
  });
});
