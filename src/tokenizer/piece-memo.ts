// Token counts of the pieces the split pattern cuts text into, remembered off the JavaScript heap: each
// piece's characters copied into one Uint16Array, an open-addressing table in an Int32Array. A Map kept
// up to 200,000 piece strings that every full garbage collection marked again, and a piece of 13
// characters or more can be a V8 slice that keeps the whole text it was cut from alive (20 pieces cut
// from 3.6 MB texts kept 7 MB). Here a piece is copied, so nothing it came from stays, and the memo is a
// handful of typed arrays. When either is full, it starts over.

const fnvOffset = 0x811c9dc5;
const fnvPrime = 0x01000193;

export class PieceMemo {
  private readonly chars: Uint16Array;
  /** Where entry i's characters start in `chars`; entry i ends where entry i + 1 starts. */
  private readonly starts: Int32Array;
  private readonly counts: Int32Array;
  /** Entry index + 1 per slot; 0 is an empty slot. */
  private readonly slots: Int32Array;
  private readonly mask: number;
  private entries = 0;

  /** Holds up to `maxEntries` pieces of up to `maxChars` characters in all. */
  constructor(
    private readonly maxEntries: number,
    maxChars: number,
  ) {
    this.chars = new Uint16Array(maxChars);
    this.starts = new Int32Array(maxEntries + 1);
    this.counts = new Int32Array(maxEntries);
    let capacity = 1;
    while (capacity < maxEntries * 2) capacity *= 2;
    this.slots = new Int32Array(capacity);
    this.mask = capacity - 1;
  }

  /** Pieces remembered. */
  get size(): number {
    return this.entries;
  }

  /** The count remembered for `piece`, or -1. */
  get(piece: string): number {
    const length = piece.length;
    for (let slot = hashOf(piece) & this.mask; ; slot = (slot + 1) & this.mask) {
      const entry = this.slots[slot] as number;
      if (entry === 0) return -1;
      const from = this.starts[entry - 1] as number;
      if ((this.starts[entry] as number) - from !== length) continue;
      let index = 0;
      while (index < length && this.chars[from + index] === piece.charCodeAt(index)) index++;
      if (index === length) return this.counts[entry - 1] as number;
    }
  }

  /** Remembers `count` for a piece not yet remembered; one over a sixteenth of the memo is not. */
  set(piece: string, count: number): void {
    const length = piece.length;
    if (length > this.chars.length / 16) return;
    let from = this.starts[this.entries] as number;
    if (this.entries === this.maxEntries || from + length > this.chars.length) {
      this.clear();
      from = 0;
    }
    for (let index = 0; index < length; index++) this.chars[from + index] = piece.charCodeAt(index);
    this.counts[this.entries] = count;
    this.starts[this.entries + 1] = from + length;
    let slot = hashOf(piece) & this.mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
    this.entries++;
    this.slots[slot] = this.entries;
  }

  private clear(): void {
    this.slots.fill(0);
    this.entries = 0;
    this.starts[0] = 0;
  }
}

function hashOf(piece: string): number {
  let hash = fnvOffset;
  for (let index = 0; index < piece.length; index++)
    hash = Math.imul(hash ^ piece.charCodeAt(index), fnvPrime);
  return hash;
}
