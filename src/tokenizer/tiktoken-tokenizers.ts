// The Tokenizer port on js-tiktoken's encodings, with an in-process count cache (bounded, least recently
// used out first), so a message is tokenized once however often a client resends it. Texts up to 4 KB
// are their own cache key (found by a sampled hash, see TextCache); longer ones are keyed by a SHA-1
// digest, so the cache does not hold them.
import { createHash } from 'node:crypto';
import type { Tokenizer } from '../context/types.js';
import { BpeCounter, type EncodingName } from './bpe-counter.js';
import { TextCache } from '../text-cache.js';

const directKeyMaxChars = 4_096;
/**
 * Long texts counted lately, keyed by the text itself: one request counts the same tool result or
 * message several times (fit, mask, report), and hashing it for the digest each time costs more than
 * the count. A string compared with itself is equal at once. At most this many, and at most
 * `recentLongChars` characters, in each of the cache's two generations.
 */
const recentLongTexts = 256;
const recentLongChars = 16_000_000;

/**
 * exact: counts as the provider does (long texts from samples, see BpeCounter). sampled: for requests
 * too large to count exactly within a bounded CPU time — texts over 2 048 characters are estimated from
 * three short slices.
 */
export type CountPrecision = 'exact' | 'sampled';

export interface Tokenizers {
  forEncoding(encoding: EncodingName, precision?: CountPrecision): Tokenizer;
}

export interface TokenizerCacheOptions {
  /** Most cached counts per encoding. */
  cacheEntries?: number;
  /** Most characters held by cache keys per encoding (about two bytes each). */
  cacheKeyChars?: number;
}

export function createTiktokenTokenizers({
  cacheEntries = 200_000,
  cacheKeyChars = 32_000_000,
}: TokenizerCacheOptions = {}): Tokenizers {
  const tokenizers = new Map<EncodingName, Tokenizer>();
  const sampledTokenizers = new Map<EncodingName, Tokenizer>();
  const counters = new Map<EncodingName, BpeCounter>();
  const counterFor = (encoding: EncodingName): BpeCounter => {
    let counter = counters.get(encoding);
    if (counter === undefined) {
      counter = new BpeCounter(encoding);
      counters.set(encoding, counter);
    }
    return counter;
  };
  return {
    forEncoding(encoding, precision = 'exact') {
      if (precision === 'sampled') {
        let sampled = sampledTokenizers.get(encoding);
        if (sampled === undefined) {
          const exact = this.forEncoding(encoding);
          const counter = counterFor(encoding);
          sampled = {
            encoding,
            count: (text) => (text.length <= 2_048 ? exact.count(text) : counter.estimateQuickly(text)),
            truncate: (text, maxTokens, keep) => counter.truncate(text, maxTokens, keep),
            workDone: () => counter.workDone,
          };
          sampledTokenizers.set(encoding, sampled);
        }
        return sampled;
      }
      let tokenizer = tokenizers.get(encoding);
      if (tokenizer === undefined) {
        const counter = counterFor(encoding);
        const cache = new TextCache<number>(cacheEntries, cacheKeyChars);
        const recent = new TextCache<number>(2 * recentLongTexts, 2 * recentLongChars);
        tokenizer = {
          encoding,
          count(text) {
            if (text.length === 0) return 0;
            if (text.length <= directKeyMaxChars) {
              const known = cache.get(text);
              if (known !== undefined) return known;
              const tokens = counter.count(text);
              cache.set(text, tokens);
              return tokens;
            }
            const seen = recent.get(text);
            if (seen !== undefined) return seen;
            const key = createHash('sha1').update(text).digest('base64');
            const tokens = cache.get(key) ?? counter.count(text);
            cache.set(key, tokens);
            recent.set(text, tokens);
            return tokens;
          },
          truncate: (text, maxTokens, keep) => counter.truncate(text, maxTokens, keep),
          workDone: () => counter.workDone,
        };
        tokenizers.set(encoding, tokenizer);
      }
      return tokenizer;
    },
  };
}
