// Reading what a KnownBytes holds: its pieces, bytes or text, as one UTF-8 text.
import type { KnownBytes } from '../../src/known-bytes.js';

export function knownBytesText(bytes: KnownBytes | undefined): string | undefined {
  if (bytes === undefined) return undefined;
  const pieces = Buffer.isBuffer(bytes) ? [bytes] : bytes;
  return Buffer.concat(pieces.map((piece) => Buffer.from(piece))).toString('utf8');
}
