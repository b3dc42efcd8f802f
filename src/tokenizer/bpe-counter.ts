// Exact BPE token counting on js-tiktoken's encodings (o200k_base, cl100k_base), built for a server:
// - js-tiktoken's own merge keys byte arrays as "1,2,3" strings and re-creates its regexes on every
//   call; its merge is quadratic with a large constant (10 KB of one letter takes ~18 s). This counter
//   keeps the same ranks and split pattern but holds the ranks off the heap (rank-table.ts), memoises
//   piece counts (off the heap too: piece-memo.ts), and caps a piece at 256 bytes (longer pieces —
//   runs of one letter, long base64 words — are counted in 256-byte slices, off by at most one token
//   per slice).
// - Texts over `exactLimitChars` are estimated from evenly spaced exact samples, so 1 MB of any text
//   costs a bounded amount of CPU; ordinary text stays within a fraction of a percent.
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import o200kBase from 'js-tiktoken/ranks/o200k_base';
import { PieceMemo } from './piece-memo.js';
import { RankTable } from './rank-table.js';

export type EncodingName = 'o200k_base' | 'cl100k_base';

interface RankSource {
  pat_str: string;
  bpe_ranks: string;
}

const maxPieceBytes = 256;
/** Pieces longer than this are merged with a heap (see heapMergeCount); shorter ones by a scan. */
const heapMergeFromBytes = 32;
/** A heap key is rank × span + start: a start is under maxPieceBytes. */
const heapKeySpan = 512;
const maxMemoEntries = 200_000;
/** About ten characters a piece remembered: 4 MB. */
const maxMemoChars = 2_000_000;
export const exactLimitChars = 48_000;

/**
 * What counting a byte of a multi-byte character costs, in bytes of ASCII: a run of uncommon Chinese
 * characters takes about 150 ms a megabyte to count exactly, English prose about 40
 * (`npm run bench -- hostile-bodies`). A body's size is weighed by it for the 4 MB threshold past which
 * it is counted from samples (json-body.ts countingBytesOf); counting itself is bounded by `workDone`.
 */
export const multiByteCountingWeight = 4;

/**
 * What counting costs, in units of about 6 ns of one core of the bench's machine (`workDone`): each
 * character scanned one, each piece the split pattern cuts 25, a piece not counted before 330 more and
 * 17 a byte of it, each lookup of a pair's rank 10. Fitted to the CPU time of counting 1 MB of each of
 * 14 kinds of text, from English prose (34 ns a character, almost every piece remembered) to random
 * base64, punctuation, letters without spaces, emoji and uncommon Chinese characters (up to 490 ns a
 * character, almost none remembered): every kind costs between 0.55 and 1.7 times what its units say,
 * where characters alone mispredict eightfold.
 */
const workPerPiece = 25;
const workPerNewPiece = 330;
const workPerNewPieceByte = 17;
const workPerLookup = 10;

const sampleCount = 24;
const sampleChars = 2_000;

export class BpeCounter {
  readonly encoding: EncodingName;
  private readonly ranks: RankTable;
  private readonly pattern: RegExp;
  private readonly memo = new PieceMemo(maxMemoEntries, maxMemoChars);
  private work = 0;
  /** heapMergeCount's arrays, sized for the longest slice: each pair is pushed at most three times. */
  private readonly scratch = {
    next: new Int32Array(maxPieceBytes + 2),
    previous: new Int32Array(maxPieceBytes + 2),
    pairRank: new Float64Array(maxPieceBytes + 2),
    heap: { keys: new Float64Array(4 * maxPieceBytes), size: 0 },
  };

  constructor(encoding: EncodingName) {
    this.encoding = encoding;
    const source: RankSource = encoding === 'o200k_base' ? o200kBase : cl100kBase;
    this.ranks = new RankTable(source.bpe_ranks);
    this.pattern = new RegExp(source.pat_str, 'gu');
  }

  /** Token count of `text`: exact up to exactLimitChars, a sampled estimate above. */
  count(text: string): number {
    if (text.length === 0) return 0;
    if (text.length <= exactLimitChars) return this.countExact(text);
    return this.estimate(text);
  }

  countExact(text: string): number {
    let total = 0;
    let pieces = 0;
    this.pattern.lastIndex = 0;
    for (const match of text.matchAll(this.pattern)) {
      total += this.countPiece(match[0]);
      pieces++;
    }
    this.work += text.length + pieces * workPerPiece;
    return total;
  }

  /** The work this counter has done since it was made, in the units above (it only grows). */
  get workDone(): number {
    return this.work;
  }

  /**
   * The longest head or tail of `text` that fits in `maxTokens`, cut at a piece boundary (a piece is at
   * most a word or a short run of symbols, so the cut never splits a character).
   */
  truncate(text: string, maxTokens: number, keep: 'head' | 'tail'): { text: string; tokens: number } {
    if (maxTokens <= 0) return { text: '', tokens: 0 };
    // Only the side that is kept is tokenized: a window of about 6 characters per token holds the cut
    // for ordinary text and code; when all of it fits (very long tokens), the window doubles.
    let window = Math.min(text.length, Math.max(1_024, maxTokens * 6));
    for (;;) {
      const cut = this.truncateWithin(text, maxTokens, keep, window);
      if (!cut.windowFilled || window >= text.length) return { text: cut.text, tokens: cut.tokens };
      window = Math.min(text.length, window * 2);
    }
  }

  private truncateWithin(
    text: string,
    maxTokens: number,
    keep: 'head' | 'tail',
    window: number,
  ): { text: string; tokens: number; windowFilled: boolean } {
    const region = keep === 'head' ? text.slice(0, window) : text.slice(text.length - window);
    const pieces = Array.from(region.matchAll(this.pattern), (match) => match[0]);
    // A tail window may start inside a piece: drop its first piece, which may be a fragment.
    if (keep === 'tail' && window < text.length) pieces.shift();
    let tokens = 0;
    let kept = 0;
    const ordered = keep === 'head' ? pieces : pieces.reverse();
    let windowFilled = true;
    for (const piece of ordered) {
      const pieceTokens = this.countPiece(piece);
      if (tokens + pieceTokens > maxTokens) {
        windowFilled = false;
        break;
      }
      tokens += pieceTokens;
      kept += piece.length;
    }
    return {
      text: keep === 'head' ? text.slice(0, kept) : text.slice(text.length - kept),
      tokens,
      windowFilled,
    };
  }

  /**
   * A cheap estimate for requests too large to count exactly within a bounded CPU time: two slices of
   * 128 characters (head and middle, each from a word boundary) counted exactly, scaled by the text's
   * length. Texts up to 2 048 characters are counted exactly.
   */
  estimateQuickly(text: string): number {
    if (text.length <= 2_048) return this.count(text);
    const sliceChars = 128;
    let sampledChars = 0;
    let sampledTokens = 0;
    for (const at of [0, Math.floor(text.length / 2)]) {
      let start = at;
      const space = text.indexOf(' ', start);
      if (space !== -1 && space - start < 32 && space + sliceChars <= text.length) start = space;
      const sample = text.slice(start, start + sliceChars);
      sampledChars += sample.length;
      sampledTokens += this.countExact(sample);
    }
    return Math.max(1, Math.round((sampledTokens / sampledChars) * text.length));
  }

  private estimate(text: string): number {
    const stride = Math.floor(text.length / sampleCount);
    let sampledChars = 0;
    let sampledTokens = 0;
    for (let index = 0; index < sampleCount; index++) {
      let start = index * stride;
      // Start each sample at a word boundary so it tokenizes as it would in place.
      const space = text.indexOf(' ', start);
      if (space !== -1 && space - start < 64) start = space;
      const sample = text.slice(start, start + sampleChars);
      sampledChars += sample.length;
      sampledTokens += this.countExact(sample);
    }
    return Math.round((sampledTokens / sampledChars) * text.length);
  }

  private countPiece(piece: string): number {
    const known = this.memo.get(piece);
    if (known !== -1) return known;
    const bytes = Buffer.from(piece, 'utf8').toString('latin1');
    this.work += workPerNewPiece + workPerNewPieceByte * bytes.length;
    // A piece that is one token is found by mergeCount's first lookup (no token is over 256 bytes).
    let count = 0;
    for (let start = 0; start < bytes.length; start += maxPieceBytes)
      count += this.mergeCount(bytes.slice(start, start + maxPieceBytes));
    this.memo.set(piece, count);
    return count;
  }

  /** Byte-pair merge of one piece; returns the number of tokens it becomes. */
  private mergeCount(bytes: string): number {
    if (bytes.length <= 1) return bytes.length;
    if (this.ranks.get(bytes, 0, bytes.length) !== -1) return 1;
    return bytes.length > heapMergeFromBytes ? this.heapMergeCount(bytes) : this.scanMergeCount(bytes);
  }

  /**
   * The merge of a long piece (a run of CJK characters, base64): the same merges in the same order —
   * the lowest rank first, the leftmost of equal ranks — found with a heap instead of a scan of every
   * pair per merge, which made 1 MB of uncommon Chinese characters cost a second.
   */
  private heapMergeCount(bytes: string): number {
    const length = bytes.length;
    // Parts are linked by where they start; a pair is keyed by its rank, then by where it starts.
    // The arrays are the counter's own, reused: a long text has thousands of such slices.
    const { next, previous, pairRank, heap } = this.scratch;
    heap.size = 0;
    for (let start = 0; start <= length; start++) {
      next[start] = start + 1;
      previous[start] = start - 1;
    }
    for (let start = 0; start < length - 1; start++) this.pushPair(bytes, start);
    let parts = length;
    while (heap.size > 0) {
      const key = heapPop(heap);
      const start = key % heapKeySpan;
      // A pair changed since it was pushed (a neighbour merged, or it merged itself) is skipped.
      if (pairRank[start] !== (key - start) / heapKeySpan) continue;
      const second = next[start] as number;
      const after = next[second] as number;
      next[start] = after;
      if (after <= length) previous[after] = start;
      pairRank[second] = Number.POSITIVE_INFINITY;
      parts--;
      this.pushPair(bytes, start);
      const before = previous[start] as number;
      if (before >= 0) this.pushPair(bytes, before);
    }
    return parts;
  }

  /** Ranks the pair of parts starting at `start` and pushes it, when it is a token. */
  private pushPair(bytes: string, start: number): void {
    const { next, pairRank, heap } = this.scratch;
    const second = next[start] as number;
    let rank = Number.POSITIVE_INFINITY;
    if (second < bytes.length) {
      this.work += workPerLookup;
      const found = this.ranks.get(bytes, start, next[second] as number);
      if (found !== -1) rank = found;
    }
    pairRank[start] = rank;
    if (rank !== Number.POSITIVE_INFINITY) heapPush(heap, rank * heapKeySpan + start);
  }

  private scanMergeCount(bytes: string): number {
    const starts: number[] = [];
    for (let index = 0; index <= bytes.length; index++) starts.push(index);
    const pairRank = (index: number): number => {
      if (index < 0 || index + 2 >= starts.length) return Number.POSITIVE_INFINITY;
      this.work += workPerLookup;
      const rank = this.ranks.get(bytes, starts[index] as number, starts[index + 2] as number);
      return rank === -1 ? Number.POSITIVE_INFINITY : rank;
    };
    const ranks: number[] = [];
    for (let index = 0; index < starts.length - 2; index++) ranks.push(pairRank(index));
    for (;;) {
      let best = Number.POSITIVE_INFINITY;
      let at = -1;
      for (let index = 0; index < ranks.length; index++) {
        const rank = ranks[index] as number;
        if (rank < best) {
          best = rank;
          at = index;
        }
      }
      if (at === -1) break;
      // Merge parts at and at+1: drop the boundary between them, then re-rank the neighbours.
      starts.splice(at + 1, 1);
      ranks.splice(at + 1, 1);
      ranks[at] = pairRank(at);
      if (at > 0) ranks[at - 1] = pairRank(at - 1);
    }
    return starts.length - 1;
  }
}

interface Heap {
  keys: Float64Array;
  size: number;
}

/** Pushes `key` onto the binary min-heap `heap`. */
function heapPush(heap: Heap, key: number): void {
  const keys = heap.keys;
  let index = heap.size++;
  while (index > 0) {
    const parent = (index - 1) >> 1;
    const above = keys[parent] as number;
    if (above <= key) break;
    keys[index] = above;
    index = parent;
  }
  keys[index] = key;
}

/** Removes and returns the smallest key of the binary min-heap `heap` (not empty). */
function heapPop(heap: Heap): number {
  const keys = heap.keys;
  const top = keys[0] as number;
  const size = --heap.size;
  if (size === 0) return top;
  const last = keys[size] as number;
  let index = 0;
  for (;;) {
    const left = 2 * index + 1;
    if (left >= size) break;
    const right = left + 1;
    const child = right < size && (keys[right] as number) < (keys[left] as number) ? right : left;
    if ((keys[child] as number) >= last) break;
    keys[index] = keys[child] as number;
    index = child;
  }
  keys[index] = last;
  return top;
}
