// What a chat usage says beyond its two counts, under each provider's name for it (usage-details.ts).
import { describe, expect, it } from 'vitest';
import { cacheWriteTokensOf, cachedTokensOf, reasoningTokensOf } from '../../src/upstream/usage-details.js';

describe('cachedTokensOf and reasoningTokensOf', () => {
  it.each([
    ["OpenAI's", { prompt_tokens: 900, prompt_tokens_details: { cached_tokens: 768 } }, 768],
    // DeepSeek's own name (it gives OpenAI's too).
    ["DeepSeek's", { prompt_tokens: 900, prompt_cache_hit_tokens: 640, prompt_cache_miss_tokens: 260 }, 640],
    ['none said', { prompt_tokens: 900 }, undefined],
    ['not a count', { prompt_tokens_details: { cached_tokens: '12' } }, undefined],
    ['a negative', { prompt_tokens_details: { cached_tokens: -1 } }, undefined],
    ['no usage', null, undefined],
  ])('cached tokens, %s', (_name, usage, cached) => {
    expect(cachedTokensOf(usage)).toBe(cached);
  });

  it.each([
    // OpenRouter's, of Claude behind it: a first request writes what later ones read.
    [
      "OpenRouter's",
      { prompt_tokens: 9_000, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 8_500 } },
      8_500,
    ],
    ["a relay's, in Anthropic's word", { prompt_tokens_details: { cache_creation_tokens: 300 } }, 300],
    ['none said', { prompt_tokens_details: { cached_tokens: 768 } }, undefined],
    ['not a count', { prompt_tokens_details: { cache_write_tokens: '8500' } }, undefined],
  ])('cache writes, %s', (_name, usage, written) => {
    expect(cacheWriteTokensOf(usage)).toBe(written);
  });

  it.each([
    ["OpenAI's", { completion_tokens_details: { reasoning_tokens: 120 } }, 120],
    ['none said', { completion_tokens: 40 }, undefined],
    ['details of another shape', { completion_tokens_details: [120] }, undefined],
  ])('reasoning tokens, %s', (_name, usage, reasoning) => {
    expect(reasoningTokensOf(usage)).toBe(reasoning);
  });
});
