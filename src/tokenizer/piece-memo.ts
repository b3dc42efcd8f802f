// Token counts of the pieces the split pattern cuts text into, remembered off the JavaScript heap
// (packed-strings.ts: each piece's characters copied into one Uint16Array). A Map kept up to 200,000
// piece strings that every full garbage collection marked again, and a piece of 13 characters or more
// can be a V8 slice that keeps the whole text it was cut from alive (20 pieces cut from 3.6 MB texts kept
// 7 MB). Here a piece is copied, so nothing it came from stays. When it is full, it starts over.
import { PackedStrings } from './packed-strings.js';

export class PieceMemo {
  private readonly pieces: PackedStrings;
  /** The count of each piece, by its number in `pieces`. */
  private readonly counts: Int32Array;

  /** Holds up to `maxEntries` pieces of up to `maxChars` characters in all. */
  constructor(maxEntries: number, maxChars: number) {
    this.pieces = new PackedStrings(new Uint16Array(maxChars), maxEntries);
    this.counts = new Int32Array(maxEntries);
  }

  /** Pieces remembered. */
  get size(): number {
    return this.pieces.size;
  }

  /** The count remembered for `piece`, or -1. */
  get(piece: string): number {
    const entry = this.pieces.find(piece, 0, piece.length);
    return entry === -1 ? -1 : (this.counts[entry] as number);
  }

  /** Remembers `count` for a piece not yet remembered; one over a sixteenth of the memo is not. */
  set(piece: string, count: number): void {
    const { units, maxEntries } = this.pieces;
    if (piece.length > units.length / 16) return;
    if (this.pieces.size === maxEntries || this.pieces.end + piece.length > units.length) this.pieces.clear();
    this.counts[this.pieces.add(piece, 0, piece.length)] = count;
  }
}
