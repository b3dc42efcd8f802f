// A tokenizer of one token per word, and a context policy written out whole, for tests whose expected
// numbers are worked out by hand.
import type { ContextPolicy, Tokenizer } from '../../src/context/types.js';

export const words: Tokenizer = {
  encoding: 'words',
  count: (text) => text.split(/\s+/).filter(Boolean).length,
  truncate(text, maxTokens, keep) {
    const list = text.split(/\s+/).filter(Boolean);
    const kept =
      keep === 'head' ? list.slice(0, maxTokens) : list.slice(Math.max(0, list.length - maxTokens));
    return { text: kept.join(' '), tokens: kept.length };
  },
};

/** `count` words, each `word`: `count` tokens to the word tokenizer. */
export const wordsText = (count: number, word = 'w'): string =>
  Array.from({ length: count }, () => word).join(' ');

/** Every knob stated (not the built-in defaults, which may change): these, with `overrides`. */
export function statedPolicy(overrides: Partial<ContextPolicy> = {}): ContextPolicy {
  return {
    keep_first_turns: 1,
    trim_to: 0.7,
    max_history_tokens: 0,
    max_history_turns: 0,
    max_tool_result_tokens: 8_000,
    tool_result_truncation: 'both',
    keep_first: 0,
    keep_last: 5,
    clear_at_least: 0,
    exclude_tools: [],
    oversize: 'reject',
    pin_prefix: '[pin]',
    ...overrides,
  };
}
