// A thinking model's reasoning under either name a chat provider gives it, sent back under the name the
// model's answers use, remembered per model.
import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../../src/context/types.js';
import {
  createReasoningNames,
  reasoningNamed,
  reasoningOf,
  type ReasoningField,
} from '../../src/upstream/reasoning-field.js';

describe('reasoningOf', () => {
  it.each<[string, Record<string, unknown> | undefined, ReturnType<typeof reasoningOf>]>([
    [
      'DeepSeek, Kimi: reasoning_content',
      { reasoning_content: 'r' },
      { field: 'reasoning_content', text: 'r' },
    ],
    ['vLLM 0.17, OpenRouter: reasoning', { reasoning: 'r' }, { field: 'reasoning', text: 'r' }],
    [
      'both (vLLM while it sent both): reasoning_content',
      { reasoning_content: 'a', reasoning: 'a' },
      { field: 'reasoning_content', text: 'a' },
    ],
    ['empty: none', { reasoning_content: '' }, undefined],
    ['not a string (OpenRouter request option): none', { reasoning: { effort: 'high' } }, undefined],
    ['no message', undefined, undefined],
  ])('%s', (_name, message, expected) => {
    expect(reasoningOf(message)).toEqual(expected);
  });
});

describe('reasoningNamed', () => {
  const user: ContextMessage = { role: 'user', content: 'Go.' };
  const call = (field: ReasoningField): ContextMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    [field]: 'I should call f.',
  });

  it('renames the reasoning of assistant messages to the name given, the rest the same objects', () => {
    const messages = [user, call('reasoning_content')];
    const named = reasoningNamed(messages, 'reasoning');
    expect(named[0]).toBe(user);
    expect(named[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      reasoning: 'I should call f.',
    });
    expect(reasoningNamed([user, call('reasoning')], 'reasoning_content')[1]).toHaveProperty(
      'reasoning_content',
      'I should call f.',
    );
  });

  it('gives back the same array when nothing is to be renamed', () => {
    const messages = [user, call('reasoning')];
    expect(reasoningNamed(messages, 'reasoning')).toBe(messages);
  });
});

describe('createReasoningNames', () => {
  it('says reasoning_content until a model answers under another name, per model', () => {
    const names = createReasoningNames();
    expect(names.of('qwen3.5')).toBe('reasoning_content');
    names.saw('qwen3.5', 'reasoning');
    names.saw('qwen3.5', undefined);
    expect(names.of('qwen3.5')).toBe('reasoning');
    expect(names.of('deepseek-v4')).toBe('reasoning_content');
    names.saw('qwen3.5', 'reasoning_content');
    expect(names.of('qwen3.5')).toBe('reasoning_content');
  });

  it('keeps at most 1,000 models, the oldest forgotten first', () => {
    const names = createReasoningNames();
    for (let index = 0; index <= 1_000; index++) names.saw(`model-${index}`, 'reasoning');
    expect(names.of('model-0')).toBe('reasoning_content');
    expect(names.of('model-1')).toBe('reasoning');
    expect(names.of('model-1000')).toBe('reasoning');
  });
});
