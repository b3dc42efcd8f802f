// What a chat provider attaches to a tool call beside OpenAI's fields, carried through a bridge's client
// and back (docs/budgeting.md#refused-fields). Gemini 3 gives the first call of each answer a thought
// signature (`extra_content.google.thought_signature`) and refuses the call back without it; a Responses
// or Messages client keeps only its own API's fields of a call, but sends back, as it got them, the
// opaque fields its API has for a provider's state: a reasoning item's `encrypted_content`, a thinking
// block's `signature`. The gateway writes the calls' extras there (an id for the calls and their
// `extra_content`, base64 of JSON behind a prefix that says it is the gateway's) and reads them back onto
// the calls of the same ids. Nothing in it is secret: a client could write the same, and would only be
// sending its provider what it says its provider gave. Pure.

/** What a carrier starts with: no provider's own opaque state does. */
const carrierPrefix = 'ctxgate.call-extras.v1:';

/** A tool call's id and what its provider attached to it. */
export type CallExtras = ReadonlyArray<readonly [id: string, extraContent: Record<string, unknown>]>;

/** The calls of a chat reply that carry an `extra_content` object. */
export function callExtrasOf(calls: unknown): Array<[string, Record<string, unknown>]> {
  const found: Array<[string, Record<string, unknown>]> = [];
  if (!Array.isArray(calls)) return found;
  for (const call of calls as Array<{ id?: unknown; extra_content?: unknown } | null>) {
    const extra = call?.extra_content;
    if (typeof call?.id === 'string' && typeof extra === 'object' && extra !== null && !Array.isArray(extra))
      found.push([call.id, extra as Record<string, unknown>]);
  }
  return found;
}

/** The calls' extras as one opaque string for the client to send back. */
export function carrierOf(extras: CallExtras): string {
  return carrierPrefix + Buffer.from(JSON.stringify(extras)).toString('base64url');
}

/** True when an opaque field holds a carrier (the gateway's, not a provider's state). */
export function isCarrier(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(carrierPrefix);
}

/**
 * Adds what a carrier holds to `into`, by call id; a carrier that is not what `carrierOf` writes adds
 * nothing (a client's corruption is its provider's to refuse, as it would be without the gateway).
 */
export function readCarrier(value: string, into: Map<string, Record<string, unknown>>): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value.slice(carrierPrefix.length), 'base64url').toString('utf8'));
  } catch {
    return;
  }
  if (!Array.isArray(parsed)) return;
  for (const entry of parsed as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 2) continue;
    const [id, extra] = entry as [unknown, unknown];
    if (typeof id === 'string' && typeof extra === 'object' && extra !== null && !Array.isArray(extra))
      into.set(id, extra as Record<string, unknown>);
  }
}
