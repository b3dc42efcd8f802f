// The upstream body of a chat completion whose messages the gateway chose: the request's own fields in
// their order, with `messages` replaced. A message whose JSON bytes are already known (a stored session
// message) is copied as it is instead of being serialized and encoded again; the bytes equal
// JSON.stringify of the same object.
import type { ContextMessage } from '../context/types.js';

const comma = Buffer.from(',');

export function serializeChatBody(
  request: Readonly<Record<string, unknown>>,
  messages: readonly ContextMessage[],
  /** The JSON bytes of `messages[i]` when known, aligned with `messages`. */
  knownBytes: readonly (Buffer | undefined)[] = [],
): Buffer {
  const parts: Buffer[] = [];
  const text = (value: string): void => void parts.push(Buffer.from(value));
  const messageList = (): void => {
    text('"messages":[');
    messages.forEach((message, index) => {
      if (index > 0) parts.push(comma);
      const known = knownBytes[index];

      if (known === undefined) text(JSON.stringify(message));
      else parts.push(known);
    });
    text(']');
  };
  text('{');
  let fields = 0;
  let placed = false;
  for (const [name, value] of Object.entries(request)) {
    const json = name === 'messages' ? '' : (JSON.stringify(value) as string | undefined);
    if (json === undefined) continue;
    if (fields++ > 0) parts.push(comma);
    if (name === 'messages') {
      messageList();
      placed = true;
    } else text(`${JSON.stringify(name)}:${json}`);
  }
  if (!placed) {
    if (fields > 0) parts.push(comma);
    messageList();
  }
  text('}');
  return Buffer.concat(parts);
}
