// A BPE encoding's ranks (token bytes → rank) kept off the JavaScript heap: the tokens' bytes back to
// back in one Buffer and an open-addressing hash table in an Int32Array. Held in a Map, o200k_base's
// 200,000 tokens are 400,000 heap objects (19 MB) that every full garbage collection marks again —
// about 7 ms each time on a 2-core VM, paid by whichever request triggers it (a large body triggers one);
// here they are a handful of typed arrays the collector does not walk. A lookup takes a range of a
// latin1 string (one character a byte), so the byte-pair merge asks for a pair without slicing it.

/** The same hash for a range of a latin1 string and for a range of bytes: 32-bit FNV-1a. */
const fnvOffset = 0x811c9dc5;
const fnvPrime = 0x01000193;

export class RankTable {
  /** Each token's bytes, back to back. */
  private readonly bytes: Buffer;
  /** Where token i's bytes start in `bytes`; token i ends where token i + 1 starts. */
  private readonly starts: Int32Array;
  private readonly ranks: Int32Array;
  /** Token index + 1 per slot; 0 is an empty slot. */
  private readonly slots: Int32Array;
  private readonly mask: number;

  /** From tiktoken's rank text: lines of `! <first rank> <base64 token> <base64 token> …`. */
  constructor(bpeRanks: string) {
    const lines = bpeRanks.split('\n').filter((line) => line !== '');
    const tokenLines = lines.map((line) => line.split(' '));
    const count = tokenLines.reduce((sum, parts) => sum + parts.length - 2, 0);
    const base64Length = tokenLines.reduce(
      (sum, parts) => parts.slice(2).reduce((inner, token) => inner + token.length, sum),
      0,
    );
    const bytes = Buffer.alloc(Math.ceil((base64Length * 3) / 4));
    this.starts = new Int32Array(count + 1);
    this.ranks = new Int32Array(count);
    let token = 0;
    let offset = 0;
    for (const parts of tokenLines) {
      const first = Number.parseInt(parts[1] ?? '0', 10);
      for (let index = 2; index < parts.length; index++) {
        this.starts[token] = offset;
        this.ranks[token] = first + index - 2;
        offset += bytes.write(parts[index] as string, offset, 'base64');
        token++;
      }
    }
    this.starts[count] = offset;
    this.bytes = bytes.subarray(0, offset);
    // At most half full: a miss ends at an empty slot after a probe or two.
    let capacity = 1;
    while (capacity < count * 2) capacity *= 2;
    this.slots = new Int32Array(capacity);
    this.mask = capacity - 1;
    for (let index = 0; index < count; index++) {
      let slot = this.hashBytes(this.starts[index] as number, this.starts[index + 1] as number) & this.mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
      this.slots[slot] = index + 1;
    }
  }

  /** Tokens in the table. */
  get size(): number {
    return this.ranks.length;
  }

  /** The rank of the token whose bytes are `text`'s characters from `start` to `end` (latin1), or -1. */
  get(text: string, start: number, end: number): number {
    let hash = fnvOffset;
    for (let index = start; index < end; index++) hash = Math.imul(hash ^ text.charCodeAt(index), fnvPrime);
    const length = end - start;
    for (let slot = hash & this.mask; ; slot = (slot + 1) & this.mask) {
      const entry = this.slots[slot] as number;
      if (entry === 0) return -1;
      const from = this.starts[entry - 1] as number;
      if ((this.starts[entry] as number) - from !== length) continue;
      let index = 0;
      while (index < length && this.bytes[from + index] === text.charCodeAt(start + index)) index++;
      if (index === length) return this.ranks[entry - 1] as number;
    }
  }

  private hashBytes(start: number, end: number): number {
    let hash = fnvOffset;
    for (let index = start; index < end; index++)
      hash = Math.imul(hash ^ (this.bytes[index] as number), fnvPrime);
    return hash;
  }
}
