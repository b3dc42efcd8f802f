// Strings handed to JSON.stringify in one piece. V8 (Node 24 and later) serializes a plain object on a
// fast path that gives up on any string joined from pieces (`a + b`, a template literal, `+=`) or cut
// from another (`slice` of 13 characters or more), and then serializes the whole object again on its
// general path, at about twice the cost. Ids made by joining a prefix to random digits, a digest cut
// short, a streamed reply added up from its deltas: each lands in objects the gateway serializes (the
// request's log record, the Responses and Messages answers and their stream events, what a session
// stores), so they are made flat here once.

/**
 * `text`, the same characters, as one flat string: copied once into a new string (`join` of its two
 * halves writes a flat one; `normalize` or `toLowerCase` hand back a cut string as it is). Short texts
 * are returned as they are: V8 makes strings of under 13 characters flat already.
 */
export function flatText(text: string): string {
  if (text.length < 13) return text;
  const middle = text.length >> 1;
  return [text.slice(0, middle), text.slice(middle)].join('');
}
