// Strings kept off the JavaScript heap: their code units back to back in one typed array (bytes, or
// UTF-16 units), found through an open-addressing table in an Int32Array (32-bit FNV-1a over the code
// units). The garbage collector sees a handful of typed arrays however many strings there are, and a
// string added is copied, so nothing it was cut from stays alive. Entries are numbered in the order they
// were added; the tables built on it (rank-table.ts, piece-memo.ts) keep their values by that number.

const fnvOffset = 0x811c9dc5;
const fnvPrime = 0x01000193;

export class PackedStrings {
  /** Where entry i's units start; entry i ends where entry i + 1 starts. */
  private readonly starts: Int32Array;
  /** Entry index + 1 per slot; 0 is an empty slot. */
  private readonly slots: Int32Array;
  private readonly mask: number;
  private entries = 0;

  /** Up to `maxEntries` strings whose code units fit in `units` (each unit one character). */
  constructor(
    readonly units: Uint8Array | Uint16Array,
    readonly maxEntries: number,
  ) {
    this.starts = new Int32Array(maxEntries + 1);
    // At most half full: a miss ends at an empty slot after a probe or two.
    let capacity = 1;
    while (capacity < maxEntries * 2) capacity *= 2;
    this.slots = new Int32Array(capacity);
    this.mask = capacity - 1;
  }

  get size(): number {
    return this.entries;
  }

  /** Where the next entry's units go: `units` from here on are free. */
  get end(): number {
    return this.starts[this.entries] as number;
  }

  /** The entry spelled by `text`'s characters from `start` to `end`, or -1. */
  find(text: string, start: number, end: number): number {
    let hash = fnvOffset;
    for (let index = start; index < end; index++) hash = Math.imul(hash ^ text.charCodeAt(index), fnvPrime);
    const length = end - start;
    for (let slot = hash & this.mask; ; slot = (slot + 1) & this.mask) {
      const entry = this.slots[slot] as number;
      if (entry === 0) return -1;
      const from = this.starts[entry - 1] as number;
      if ((this.starts[entry] as number) - from !== length) continue;
      let index = 0;
      while (index < length && this.units[from + index] === text.charCodeAt(start + index)) index++;
      if (index === length) return entry - 1;
    }
  }

  /** Adds `text`'s characters from `start` to `end` (not yet present; the caller checked the room). */
  add(text: string, start: number, end: number): number {
    const from = this.end;
    for (let index = start; index < end; index++) this.units[from + index - start] = text.charCodeAt(index);
    return this.commit(end - start);
  }

  /** Adds the `length` units the caller wrote from `end` on as the next entry; returns its number. */
  commit(length: number): number {
    const from = this.end;
    let hash = fnvOffset;
    for (let index = from; index < from + length; index++)
      hash = Math.imul(hash ^ (this.units[index] as number), fnvPrime);
    let slot = hash & this.mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
    this.entries++;
    this.slots[slot] = this.entries;
    this.starts[this.entries] = from + length;
    return this.entries - 1;
  }

  /** Forgets every entry. */
  clear(): void {
    this.slots.fill(0);
    this.entries = 0;
  }
}
