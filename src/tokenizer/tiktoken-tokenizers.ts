// The Tokenizer port on js-tiktoken's encodings, with an in-process count cache keyed by a hash of the
// content (bounded LRU): a message is tokenized once however often a client resends it.
import { createHash } from 'node:crypto';
import type { Tokenizer } from '../context/types.js';
import { BpeCounter, type EncodingName } from './bpe-counter.js';

const cacheMinChars = 64;

export interface Tokenizers {
  forEncoding(encoding: EncodingName): Tokenizer;
}

export function createTiktokenTokenizers({
  cacheEntries = 100_000,
}: { cacheEntries?: number } = {}): Tokenizers {
  const counters = new Map<EncodingName, BpeCounter>();
  const tokenizers = new Map<EncodingName, Tokenizer>();
  const cache = new Map<string, number>();

  function counterFor(encoding: EncodingName): BpeCounter {
    let counter = counters.get(encoding);
    if (counter === undefined) {
      counter = new BpeCounter(encoding);
      counters.set(encoding, counter);
    }
    return counter;
  }

  return {
    forEncoding(encoding) {
      let tokenizer = tokenizers.get(encoding);
      if (tokenizer === undefined) {
        const counter = counterFor(encoding);
        tokenizer = {
          encoding,
          count(text) {
            if (text.length < cacheMinChars) return counter.count(text);
            const key = `${encoding}:${createHash('sha1').update(text).digest('base64')}`;
            const known = cache.get(key);
            if (known !== undefined) {
              // Refresh its place in the LRU order.
              cache.delete(key);
              cache.set(key, known);
              return known;
            }
            const tokens = counter.count(text);
            if (cache.size >= cacheEntries) cache.delete(cache.keys().next().value as string);
            cache.set(key, tokens);
            return tokens;
          },
          truncate: (text, maxTokens, keep) => counter.truncate(text, maxTokens, keep),
        };
        tokenizers.set(encoding, tokenizer);
      }
      return tokenizer;
    },
  };
}
