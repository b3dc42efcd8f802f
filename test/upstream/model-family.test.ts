// Which models take their answer's cap as max_completion_tokens and no temperature but 1
// (model-family.ts): OpenAI's reasoning models, by name, and no other.
import { describe, expect, it } from 'vitest';
import { isKimiModel, isOpenAIReasoningModel, outputCapField } from '../../src/upstream/model-family.js';

describe('isOpenAIReasoningModel', () => {
  it.each([
    ['o1', true],
    ['o3-mini', true],
    ['o4-mini-2025-04-16', true],
    ['gpt-5', true],
    ['gpt-5-mini', true],
    ['gpt-5.1-codex', true],
    ['GPT-5-nano', true],
    ['openai/gpt-5', true],
    ['gpt-6', true],
    ['gpt-4o', false],
    ['gpt-4o-mini', false],
    ['gpt-4.1', false],
    ['gpt-3.5-turbo', false],
    ['llama-3.1-8b-instruct', false],
    ['qwen2.5-coder:32b', false],
    ['claude-sonnet-4-5', false],
    ['omni-moderation-latest', false],
    ['mistral-large', false],
  ])('%s: %s', (model, reasoning) => {
    expect(isOpenAIReasoningModel(model)).toBe(reasoning);
    expect(outputCapField(model)).toBe(reasoning ? 'max_completion_tokens' : 'max_tokens');
  });
});

describe('isKimiModel', () => {
  it.each([
    ['kimi-k2-0905-preview', true],
    ['moonshotai/Kimi-K2-Instruct', true],
    ['kimi-k2.7', true],
    ['accounts/fireworks/models/kimi-k3', true],
    ['kimi-latest', false],
    ['moonshot-v1-8k', false],
    ['gpt-4o-mini', false],
  ])('%s: %s', (model, expected) => {
    expect(isKimiModel(model)).toBe(expected);
  });
});
