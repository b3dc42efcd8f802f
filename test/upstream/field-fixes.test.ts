// The fields a model refuses and what is sent instead (docs/budgeting.md#refused-fields): the rewrite
// as a table, and the memory that keeps each model's fixes.
import { describe, expect, it } from 'vitest';
import {
  applyFieldFixes,
  createFieldFixes,
  fixForUnknownField,
  fixForUnsupportedField,
  type FieldFix,
} from '../../src/upstream/field-fixes.js';

const rename: FieldFix = { field: 'max_tokens', renameTo: 'max_completion_tokens' };
const drop: FieldFix = { field: 'temperature' };

describe('applyFieldFixes', () => {
  it.each([
    [
      'renames a field, its value kept',
      { max_tokens: 50, n: 1 },
      [rename],
      { max_completion_tokens: 50, n: 1 },
    ],
    ['leaves a field out', { temperature: 0, n: 1 }, [drop], { n: 1 }],
    ['applies both', { max_tokens: 5, temperature: 0.3 }, [rename, drop], { max_completion_tokens: 5 }],
    [
      'keeps a value the body already has under the new name',
      { max_tokens: 50, max_completion_tokens: 80 },
      [rename],
      { max_completion_tokens: 80 },
    ],
    ['treats a null field as absent', { max_tokens: null, n: 1 }, [rename], { max_tokens: null, n: 1 }],
  ] as const)('%s', (_name, body, fixes, expected) => {
    const copy = structuredClone(body);
    expect(applyFieldFixes(body as object, fixes)).toEqual(expected);
    // The caller's body is not touched.
    expect(body).toEqual(copy);
  });

  it('returns the body itself when no fix changes it', () => {
    const body = { model: 'm', n: 2 };
    expect(applyFieldFixes(body, [rename, drop])).toBe(body);
    expect(applyFieldFixes(body, [])).toBe(body);
  });
});

describe('createFieldFixes', () => {
  it('keeps each fix once, per upstream and model', () => {
    const fixes = createFieldFixes({ maxEntries: 10 });
    expect(fixes.fixesFor('azure', 'prod-gpt5')).toEqual([]);
    expect(fixes.remember('azure', 'prod-gpt5', rename)).toBe(true);
    expect(fixes.remember('azure', 'prod-gpt5', rename)).toBe(false);
    expect(fixes.remember('azure', 'prod-gpt5', drop)).toBe(true);
    expect(fixes.fixesFor('azure', 'prod-gpt5')).toEqual([rename, drop]);
    expect(fixes.fixesFor('openai', 'prod-gpt5')).toEqual([]);
    expect(fixes.fixesFor('azure', 'prod-gpt4o')).toEqual([]);
  });

  it('forgets the least recently learned model beyond maxEntries', () => {
    const fixes = createFieldFixes({ maxEntries: 3 });
    for (const model of ['a', 'b', 'c']) fixes.remember('u', model, rename);
    // Learning more about `a` makes it the most recent.
    fixes.remember('u', 'a', drop);
    fixes.remember('u', 'd', rename);
    expect(['a', 'b', 'c', 'd'].map((model) => fixes.fixesFor('u', model).length)).toEqual([2, 0, 1, 1]);
  });
});

describe('what is sent instead of a refused field', () => {
  it.each([
    // The provider does not know the field.
    ['unknown', 'stream_options', undefined, { field: 'stream_options' }],
    ['unknown', 'user', undefined, { field: 'user' }],
    ['unknown', 'metadata', undefined, { field: 'metadata' }],
    ['unknown', 'reasoning_effort', undefined, { field: 'reasoning_effort' }],
    ['unknown', 'verbosity', undefined, { field: 'verbosity' }],
    ['unknown', 'parallel_tool_calls', undefined, { field: 'parallel_tool_calls' }],
    [
      'unknown',
      'max_completion_tokens',
      undefined,
      { field: 'max_completion_tokens', renameTo: 'max_tokens' },
    ],
    ['unknown', 'max_tokens', undefined, { field: 'max_tokens', renameTo: 'max_completion_tokens' }],
    // What shapes the answer is the client's to decide.
    ['unknown', 'frequency_penalty', undefined, undefined],
    ['unknown', 'tools', undefined, undefined],
    ['unknown', 'temperature', undefined, undefined],
    // The model does not support the field (OpenAI's reasoning models).
    [
      'unsupported',
      'max_tokens',
      'max_completion_tokens',
      { field: 'max_tokens', renameTo: 'max_completion_tokens' },
    ],
    ['unsupported', 'max_tokens', 'max_output_tokens', undefined],
    ['unsupported', 'temperature', undefined, { field: 'temperature' }],
    ['unsupported', 'top_p', undefined, { field: 'top_p' }],
    ['unsupported', 'logprobs', undefined, undefined],
    ['unsupported', 'stream_options', undefined, { field: 'stream_options' }],
    // gpt-4o given Codex's reasoning effort.
    ['unsupported', 'reasoning_effort', undefined, { field: 'reasoning_effort' }],
  ] as const)('%s %s (replacement %s)', (kind, field, replacement, expected) => {
    const fix = kind === 'unknown' ? fixForUnknownField(field) : fixForUnsupportedField(field, replacement);
    expect(fix).toEqual(expected);
  });
});
