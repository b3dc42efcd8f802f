// The upstream body of a chat completion whose messages the gateway chose: the request's own fields in
// their order, with `messages` replaced. A message whose JSON bytes are already known (a stored session
// message) is copied as it is instead of being serialized and encoded again; the bytes equal
// JSON.stringify of the same object. Written into one buffer of the exact length: a session of
// thousands of messages is one copy of each, not a list of parts joined again.
import type { ContextMessage } from '../context/types.js';

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
  const bytes = messages.map((message, index) => knownBytes[index] ?? Buffer.from(JSON.stringify(message)));
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
