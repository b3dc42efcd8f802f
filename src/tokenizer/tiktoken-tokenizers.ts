// The Tokenizer port on js-tiktoken's encodings, with an in-process count cache (bounded, least recently
// used out first), so a message is tokenized once however often a client resends it. Texts up to 4 KB
// are their own cache key (found by a sampled hash, see TextCache); longer ones are keyed by a SHA-1
// digest, so the cache does not hold them.
import { createHash } from 'node:crypto';
import type { Tokenizer } from '../context/types.js';
import { BpeCounter, type EncodingName } from './bpe-counter.js';

const directKeyMaxChars = 4_096;
/**
 * Long texts counted lately, keyed by the text itself: one request counts the same tool result or
 * message several times (fit, mask, report), and hashing it for the digest each time costs more than
 * the count. A string compared with itself is equal at once. At most this many, and at most
 * `recentLongChars` characters in all.
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

/**
 * A 32-bit hash of a text's length, its first and last 32 characters and 64 spread over the rest. A
 * text used as a Map key is hashed whole (every character, ~1.4 ns each: 2.8 µs for a 2 KB message
 * parsed afresh from each request); this reads at most 128. Texts that share it are told apart by
 * comparing them, which stops at the first difference.
 */
export function sampledHash(text: string): number {
  const length = text.length;
  let hash = Math.imul(length, 0x9e3779b1);
  const mix = (index: number): void => {
    hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  };
  if (length <= 128) {
    for (let index = 0; index < length; index++) mix(index);
    return hash >>> 0;
  }
  for (let index = 0; index < 32; index++) mix(index);
  const step = (length - 64) / 64;
  for (let sample = 0; sample < 64; sample++) mix(32 + Math.floor(sample * step));
  for (let index = length - 32; index < length; index++) mix(index);
  return hash >>> 0;
}

/** Texts sharing one sampled hash; more than this and the oldest is dropped (counts stay right). */
const maxBucket = 4;

/**
 * A bounded cache from texts to numbers, least recently used out in two generations: hits in the old
 * generation move to the new one, and when the new one is full the old one is dropped whole (a Map
 * refreshed by delete + set on every hit was measured to cost more than the counting it saved).
 * Keyed by `sampledHash`, confirmed by comparing the texts.
 */
class TextCache {
  private current = new Map<number, Array<[string, number]>>();
  private previous = new Map<number, Array<[string, number]>>();
  private currentEntries = 0;
  private currentKeyChars = 0;
  constructor(
    private readonly maxEntries: number,
    private readonly maxKeyChars: number,
  ) {}

  get(text: string): number | undefined {
    const hash = sampledHash(text);
    const value = find(this.current.get(hash), text);
    if (value !== undefined) return value;
    const old = find(this.previous.get(hash), text);
    if (old !== undefined) this.add(hash, text, old);
    return old;
  }

  set(text: string, value: number): void {
    this.add(sampledHash(text), text, value);
  }

  private add(hash: number, text: string, value: number): void {
    if (
      this.currentEntries >= this.maxEntries / 2 ||
      this.currentKeyChars + text.length > this.maxKeyChars / 2
    ) {
      this.previous = this.current;
      this.current = new Map();
      this.currentEntries = 0;
      this.currentKeyChars = 0;
    }
    const bucket = this.current.get(hash);
    if (bucket === undefined) this.current.set(hash, [[text, value]]);
    else {
      const at = bucket.findIndex(([known]) => known === text);
      if (at >= 0) {
        (bucket[at] as [string, number])[1] = value;
        return;
      }
      bucket.push([text, value]);
      if (bucket.length > maxBucket) bucket.shift();
    }
    this.currentEntries++;
    this.currentKeyChars += text.length;
  }
}

function find(bucket: Array<[string, number]> | undefined, text: string): number | undefined {
  if (bucket === undefined) return undefined;
  for (const [known, value] of bucket) if (known === text) return value;
  return undefined;
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
          };
          sampledTokenizers.set(encoding, sampled);
        }
        return sampled;
      }
      let tokenizer = tokenizers.get(encoding);
      if (tokenizer === undefined) {
        const counter = counterFor(encoding);
        const cache = new TextCache(cacheEntries, cacheKeyChars);
        const recent = new TextCache(2 * recentLongTexts, 2 * recentLongChars);
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
        };
        tokenizers.set(encoding, tokenizer);
      }
      return tokenizer;
    },
  };
}
