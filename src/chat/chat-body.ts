// The upstream body of a chat completion whose messages the gateway chose: the request's own fields in
// their order, with `messages` replaced. A message whose JSON bytes are already known — a stored session
// message, or a message of a stateless request sent as the client wrote it — is copied as it is instead
// of being serialized and encoded again; those bytes are JSON of the same object (a client's own, with
// its spacing and escapes, which parse to it). Written into one buffer of the exact length: a
// conversation of thousands of messages is one copy of each, and a run of the client's messages sent
// one after the other one copy.
import type { ContextMessage } from '../context/types.js';
import { sourcePositions } from '../context/turns.js';
import { arrayElementSpans } from '../json-spans.js';

const comma = 0x2c;

/**
 * In `knownBytes`: this message's bytes are in the part before it (clientMessageBytes joins neighbours
 * of the client's body into one part, the bytes between them included).
 */
export const inPreviousPart: Buffer = Buffer.alloc(0);

export function serializeChatBody(
  request: Readonly<Record<string, unknown>>,
  messages: readonly ContextMessage[],
  /** The JSON bytes of `messages[i]` when known (or inPreviousPart), aligned with `messages`. */
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
  const bytes: Buffer[] = [];
  messages.forEach((message, index) => {
    const known = knownBytes[index];
    if (known !== inPreviousPart) bytes.push(known ?? Buffer.from(JSON.stringify(message)));
  });
  let length = head.length + tail.length + Math.max(0, bytes.length - 1);
  for (const part of bytes) length += part.length;
  const body = Buffer.allocUnsafe(length);
  let at = head.copy(body, 0);
  bytes.forEach((part, index) => {
    if (index > 0) body[at++] = comma;
    at += part.copy(body, at);
  });
  tail.copy(body, at);
  return body;
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
    const known = new Array<Buffer | undefined>(positions.length);
    // A run of the client's messages sent one after the other: one part, from the first one's start to
    // the last one's end (the commas and spaces between them are the client's).
    let runAt = -1;
    positions.forEach((position, at) => {
      if (position < 0) {
        runAt = -1;
        return;
      }
      const end = found[2 * position + 1] as number;
      if (runAt >= 0 && positions[at - 1] === position - 1) {
        const start = found[2 * (positions[runAt] as number)] as number;
        known[runAt] = raw.subarray(start, end);
        known[at] = inPreviousPart;
        return;
      }
      runAt = at;
      known[at] = raw.subarray(found[2 * position] as number, end);
    });
    return known;
  };
}
