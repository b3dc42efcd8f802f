// Strings handed to JSON.stringify in one piece. V8 (Node 24 and later) serializes a plain object on a
// fast path that gives up on any string joined from pieces (`a + b`, a template literal, `+=`) and then
// serializes the whole object again on its general path, at about twice the cost. Every id the gateway
// makes by joining a prefix to random digits lands in objects it serializes (the request's log record,
// the Responses and Messages answers and each of their stream events), so ids are made flat here once.

/**
 * `text`, the same characters, as one flat string. For ASCII only (ids): `normalize` returns a flat copy
 * and changes nothing in ASCII, while it could recompose other text.
 */
export function flatAscii(text: string): string {
  return text.normalize();
}
