// The upstream body of a chat completion whose messages the gateway chose: the request's own fields in
// their order, with `messages` replaced. A message whose JSON bytes are already known — a stored session
// message, or a message of a stateless request sent as the client wrote it — is copied as it is instead
// of being serialized and encoded again; those bytes are JSON of the same object (a client's own, with
// its spacing and escapes, which parse to it). Written into one buffer of the exact length: a
// conversation of thousands of messages is one copy of each, and messages that lie next to each other
// in the client's body (separated by a comma) one copy together.
import type { ContextMessage } from '../context/types.js';
import { sourcePositions } from '../context/turns.js';
import { arrayElementSpans, isJsonSpace } from '../json-spans.js';

const comma = 0x2c;

export function serializeChatBody(
  request: Readonly<Record<string, unknown>>,
  messages: readonly ContextMessage[],
  /** The JSON bytes of `messages[i]` when known, aligned with `messages`. */
  knownBytes: readonly (Buffer | undefined)[] = [],
): Buffer {
  // The request's other fields, before and after where `messages` stands (at the end when it has none).
  const before: string[] = [];
  const after: string[] = [];
  let placed = false;
  for (const [name, value] of Object.entries(request)) {
    if (name === 'messages') {
      placed = true;
      continue;
    }
    const json = JSON.stringify(value) as string | undefined;
    if (json !== undefined) (placed ? after : before).push(`${JSON.stringify(name)}:${json}`);
  }
  const head = Buffer.from(`{${before.map((field) => `${field},`).join('')}"messages":[`);
  const tail = Buffer.from(`]${after.map((field) => `,${field}`).join('')}}`);
  const bytes = joinAdjacent(
    messages.map((message, index) => knownBytes[index] ?? Buffer.from(JSON.stringify(message))),
  );
  let length = head.length + tail.length + Math.max(0, bytes.length - 1);
  for (const part of bytes) length += part.length;
  const body = Buffer.allocUnsafe(length);
  let at = head.copy(body, 0);
  bytes.forEach((part, index) => {
    if (index > 0) body[at++] = comma;
    body.set(part, at);
    at += part.length;
  });
  tail.copy(body, at);
  return body;
}

/** The most bytes between two messages that joinAdjacent reads: a comma and some indentation. */
const maxGap = 64;

/**
 * Parts that follow each other in the same memory with only a comma (and spaces) between them, as the
 * messages of a client's body do, joined into one view: one copy instead of one per message. What lies
 * between them is copied too: the comma the parts need, and spacing JSON allows.
 */
function joinAdjacent(parts: readonly Buffer[]): Buffer[] {
  const joined: Buffer[] = [];
  let run: Buffer | undefined;
  for (const part of parts) {
    const gapStart = run === undefined ? 0 : run.byteOffset + run.length;
    const gapLength = part.byteOffset - gapStart;
    if (run !== undefined && run.buffer === part.buffer && gapLength > 0 && gapLength <= maxGap) {
      if (onlyComma(new Uint8Array(part.buffer, gapStart, gapLength))) {
        run = Buffer.from(run.buffer, run.byteOffset, part.byteOffset + part.length - run.byteOffset);
        continue;
      }
    }
    if (run !== undefined) joined.push(run);
    run = part;
  }
  if (run !== undefined) joined.push(run);
  return joined;
}

/** Exactly one comma, and nothing else but JSON's spaces. */
function onlyComma(gap: Uint8Array): boolean {
  let commas = 0;
  for (const byte of gap) {
    if (byte === comma) commas++;
    else if (!isJsonSpace(byte)) return false;
  }
  return commas === 1;
}

/**
 * The client's own bytes of the messages of `body` (parsed from `raw`) that are sent as they came — the
 * same objects — for serializeChatBody. Found once, the first time they are asked for; none when the
 * bytes cannot say for sure which message is which (json-spans.ts).
 */
export function clientMessageBytes(
  raw: Buffer | undefined,
  body: unknown,
): ((messages: readonly ContextMessage[]) => ReadonlyArray<Buffer | undefined>) | undefined {
  const original = (body as { messages?: unknown } | null | undefined)?.messages;
  if (raw === undefined || !Array.isArray(original)) return undefined;
  let spans: Int32Array | null | undefined = null;
  return (messages) => {
    const positions = sourcePositions(original as ContextMessage[], messages);
    // None sent as it came (a conversation rewritten whole): the body need not be read for them.
    if (!positions.some((position) => position >= 0)) return [];
    if (spans === null) spans = arrayElementSpans(raw, 'messages');
    if (spans === undefined || spans.length !== 2 * original.length) return [];
    const found = spans;
    return Array.from(positions, (position) =>
      position < 0
        ? undefined
        : raw.subarray(found[2 * position] as number, found[2 * position + 1] as number),
    );
  };
}
