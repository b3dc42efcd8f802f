// The upstream body of a chat completion whose messages the gateway chose: the request's own fields in
// their order, with `messages` replaced. A message whose JSON bytes are already known — a stored session
// message, or a message of a stateless request sent as the client wrote it — is copied as it is instead
// of being serialized and encoded again; those bytes are JSON of the same object (a client's own, with
// its spacing and escapes, which parse to it). Written into one buffer of the exact length: a
// conversation of thousands of messages is one copy of each, and a run of the client's messages sent
// one after the other one copy.
import type { ContextMessage } from '../context/types.js';
import { sourcePositions } from '../context/turns.js';
import { arrayElementSpans, objectMemberCount } from '../json-spans.js';

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

/** The JSON bytes of each message sent, where known (serializeChatBody's `knownBytes`). */
export type KnownMessageBytes = (messages: readonly ContextMessage[]) => ReadonlyArray<Buffer | undefined>;

/**
 * The client's own bytes of the messages of `body` (parsed from `raw`) that are sent as they came — the
 * same objects — for serializeChatBody. Found once, the first time they are asked for; none when the
 * bytes cannot say for sure which message is which (json-spans.ts).
 */
export function clientMessageBytes(raw: Buffer | undefined, body: unknown): KnownMessageBytes | undefined {
  const original = (body as { messages?: unknown } | null | undefined)?.messages;
  if (raw === undefined || !Array.isArray(original)) return undefined;
  return elementBytes(raw, 'messages', original.length, original as ContextMessage[], (position) => position);
}

/**
 * For a bridged request (a Responses or Messages body made into chat messages): the client's bytes of
 * the messages that are elements of its array `key` written as chat messages already — an object of
 * exactly `role` and `content`, a string, and the same in the message made of it (`{"role":"user",
 * "content":"…"}` is all three APIs' plain message). `origins[i]` is the element message `i` of
 * `bridged` was made from (-1: none); `messages` the chat request's messages, `bridged` among them from
 * `offset` on. An element whose bytes hold a key twice is not copied.
 */
export function bridgedMessageBytes(
  raw: Buffer | undefined,
  key: 'input' | 'messages',
  body: unknown,
  messages: readonly unknown[],
  offset: number,
  origins: Int32Array,
): KnownMessageBytes | undefined {
  const elements = (body as Record<string, unknown> | null | undefined)?.[key];
  if (raw === undefined || !Array.isArray(elements)) return undefined;
  const elementOf = (position: number): number => {
    const origin = position < offset ? -1 : (origins[position - offset] ?? -1);
    if (origin < 0) return -1;
    const element = elements[origin] as Record<string, unknown> | undefined;
    const message = messages[position] as Record<string, unknown>;
    const plain =
      element !== undefined &&
      typeof element.content === 'string' &&
      element.content === message.content &&
      element.role === message.role &&
      Object.keys(element).length === 2 &&
      Object.keys(message).length === 2;
    return plain ? origin : -1;
  };
  return elementBytes(raw, key, elements.length, messages as ContextMessage[], elementOf, 2);
}

/**
 * The bytes of the messages sent that are elements of the client's array `key` (of `count` elements):
 * message `position` of `original` is element `elementOf(position)` (-1: none). With `members`, an
 * element is copied only when its bytes hold that many members (none given twice).
 */
function elementBytes(
  raw: Buffer,
  key: string,
  count: number,
  original: readonly ContextMessage[],
  elementOf: (position: number) => number,
  members?: number,
): KnownMessageBytes {
  let spans: Int32Array | null | undefined = null;
  return (messages) => {
    const positions = sourcePositions(original, messages);
    const elements = Array.from(positions, (position) => (position < 0 ? -1 : elementOf(position)));
    // None sent as it came (a conversation rewritten whole): the body need not be read for them.
    if (!elements.some((element) => element >= 0)) return [];
    if (spans === null) spans = arrayElementSpans(raw, key);
    if (spans === undefined || spans.length !== 2 * count) return [];
    const found = spans;
    const known = new Array<Buffer | undefined>(positions.length);
    // A run of the client's elements sent one after the other: one part, from the first one's start to
    // the last one's end (the commas and spaces between them are the client's).
    let runAt = -1;
    elements.forEach((element, at) => {
      const start = found[2 * element] as number;
      if (element < 0 || (members !== undefined && objectMemberCount(raw, start) !== members)) {
        runAt = -1;
        return;
      }
      const end = found[2 * element + 1] as number;
      if (runAt >= 0 && elements[at - 1] === element - 1) {
        known[runAt] = raw.subarray(found[2 * (elements[runAt] as number)] as number, end);
        known[at] = inPreviousPart;
        return;
      }
      runAt = at;
      known[at] = raw.subarray(start, end);
    });
    return known;
  };
}
