// A BPE encoding's ranks (token bytes → rank) kept off the JavaScript heap (packed-strings.ts): the
// tokens' bytes back to back in one Buffer, their ranks in an Int32Array. Held in a Map, o200k_base's
// 200,000 tokens are 400,000 heap objects (19 MB) that every full garbage collection marks again —
// about 7 ms each time on a 2-core VM, paid by whichever request triggers it (a large body triggers one).
// A lookup takes a range of a latin1 string (one character a byte), so the byte-pair merge asks for a
// pair without slicing it.
import { PackedStrings } from './packed-strings.js';

export class RankTable {
  private readonly tokens: PackedStrings;
  /** The rank of each token, by its number in `tokens`. */
  private readonly ranks: Int32Array;

  /** From tiktoken's rank text: lines of `! <first rank> <base64 token> <base64 token> …`. */
  constructor(bpeRanks: string) {
    const lines = bpeRanks
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.split(' '));
    const count = lines.reduce((sum, parts) => sum + parts.length - 2, 0);
    const base64Length = lines.reduce(
      (sum, parts) => parts.slice(2).reduce((inner, token) => inner + token.length, sum),
      0,
    );
    const bytes = Buffer.alloc(Math.ceil((base64Length * 3) / 4));
    this.tokens = new PackedStrings(bytes, count);
    this.ranks = new Int32Array(count);
    for (const parts of lines) {
      const first = Number.parseInt(parts[1] ?? '0', 10);
      for (let index = 2; index < parts.length; index++) {
        const written = bytes.write(parts[index] as string, this.tokens.end, 'base64');
        this.ranks[this.tokens.commit(written)] = first + index - 2;
      }
    }
  }

  /** Tokens in the table. */
  get size(): number {
    return this.tokens.size;
  }

  /** The rank of the token whose bytes are `text`'s characters from `start` to `end` (latin1), or -1. */
  get(text: string, start: number, end: number): number {
    const token = this.tokens.find(text, start, end);
    return token === -1 ? -1 : (this.ranks[token] as number);
  }
}
