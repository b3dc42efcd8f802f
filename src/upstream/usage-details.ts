// What a chat answer's usage says beyond its two counts: the prompt tokens the provider's cache held and
// the answer's reasoning tokens, under each provider's name for them — OpenAI's
// `prompt_tokens_details.cached_tokens` and `completion_tokens_details.reasoning_tokens`, which DeepSeek,
// vLLM and Gemini's OpenAI-compatible endpoint give too, and DeepSeek's `prompt_cache_hit_tokens`. The
// bridges give them in their API's words (docs/budgeting.md#usage-a-provider-does-not-report). Pure.

type Json = Record<string, unknown>;

const isJson = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const countOf = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;

/** The prompt tokens the provider's cache held, as its usage says them; undefined when it says none. */
export function cachedTokensOf(usage: unknown): number | undefined {
  if (!isJson(usage)) return undefined;
  const details = isJson(usage.prompt_tokens_details) ? usage.prompt_tokens_details : undefined;
  return countOf(details?.cached_tokens) ?? countOf(usage.prompt_cache_hit_tokens);
}

/**
 * The prompt tokens written to the provider's cache, as its usage says them — OpenRouter's
 * `prompt_tokens_details.cache_write_tokens` (Claude and Gemini behind it), `cache_creation_tokens` where a
 * relay names it after Anthropic's; undefined when it says none.
 */
export function cacheWriteTokensOf(usage: unknown): number | undefined {
  if (!isJson(usage)) return undefined;
  const details = isJson(usage.prompt_tokens_details) ? usage.prompt_tokens_details : undefined;
  return countOf(details?.cache_write_tokens) ?? countOf(details?.cache_creation_tokens);
}

/** The answer's reasoning tokens, as its usage says them; undefined when it says none. */
export function reasoningTokensOf(usage: unknown): number | undefined {
  if (!isJson(usage)) return undefined;
  const details = isJson(usage.completion_tokens_details) ? usage.completion_tokens_details : undefined;
  return countOf(details?.reasoning_tokens);
}
