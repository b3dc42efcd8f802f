// The JSON bytes of a value the gateway sends as they are, when known (chat/chat-body.ts writes a body
// around them): a client's own bytes, a stored message's, a summary's as it was made.

/**
 * A value's JSON bytes: one buffer, or pieces written one after the other (a string copied between
 * fields): bytes, or text written as UTF-8 where it goes (the short JSON around a copied string, which
 * would cost a buffer of its own each).
 */
export type KnownBytes = Buffer | readonly (Buffer | string)[];

/**
 * In a list of known bytes: this value's bytes are in the part given for the one before it (neighbours
 * that lie one after the other, the bytes between them included, are given as one part and copied once).
 */
export const inPreviousPart: Buffer = Buffer.alloc(0);
