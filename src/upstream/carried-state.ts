// What a chat provider gives with an answer beside OpenAI's fields and refuses the next request without,
// carried through a bridge's client and back (docs/budgeting.md#refused-fields): Gemini 3's thought
// signature on a tool call (`extra_content.google.thought_signature`), OpenRouter's `reasoning_details`
// on the message (Claude's thinking with its signature). A Responses or Messages client keeps only its
// own API's fields, but sends back, as it got them, the opaque fields its API has for a provider's state:
// a reasoning item's `encrypted_content`, a thinking block's `signature`. The gateway writes that state
// there (base64 of JSON behind a prefix that says it is the gateway's) and reads it back onto the message
// and its calls. Nothing in it is secret: a client could write the same, and would only be sending its
// provider what it says its provider gave. Pure.

/** What a carrier starts with: no provider's own opaque state does. */
const carrierPrefix = 'ctxgate.carried.v1:';

/**
 * The longest carrier read. What a provider gives is small — a thought signature is a few KB, Claude's
 * longest thinking some hundreds — and a client's 25 MB one cost 1 s of CPU to decode and read
 * (`npm run bench -- hostile-bodies`): a longer one is not taken for the gateway's (another provider's
 * opaque state, dropped and named).
 */
const maxCarrierChars = 4 * 1024 * 1024;

/** The fields of an assistant message a provider needs back, beside its text, reasoning and calls. */
const messageFields = ['reasoning_details'] as const;

export interface CarriedState {
  /** Each tool call's id and what its provider attached to it (`extra_content`). */
  calls: Array<[string, Record<string, unknown>]>;
  /** The message's own fields of `messageFields` (OpenRouter's `reasoning_details`). */
  message?: Record<string, unknown>;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What of a chat reply (or its calls) a provider needs back; undefined when it holds nothing such. */
export function carriedStateOf(reply: {
  tool_calls?: unknown;
  reasoning_details?: unknown;
}): CarriedState | undefined {
  const calls: Array<[string, Record<string, unknown>]> = [];
  if (Array.isArray(reply.tool_calls))
    for (const call of reply.tool_calls as Array<{ id?: unknown; extra_content?: unknown } | null>)
      if (typeof call?.id === 'string' && isRecord(call.extra_content))
        calls.push([call.id, call.extra_content]);
  const details = reply.reasoning_details;
  const message = Array.isArray(details) && details.length > 0 ? { reasoning_details: details } : undefined;
  if (calls.length === 0 && message === undefined) return undefined;
  return message === undefined ? { calls } : { calls, message };
}

/** The state as one opaque string for the client to send back. */
export function carrierOf(state: CarriedState): string {
  return carrierPrefix + Buffer.from(JSON.stringify(state)).toString('base64url');
}

/** True when an opaque field holds a carrier (the gateway's, not a provider's state) of a length read. */
export function isCarrier(value: unknown): value is string {
  return typeof value === 'string' && value.length <= maxCarrierChars && value.startsWith(carrierPrefix);
}

/**
 * What a carrier holds; of one that is not what `carrierOf` writes, only the entries of the right shape
 * (a client's corruption is its provider's to refuse, as it would be without the gateway).
 */
export function readCarrier(value: string): CarriedState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value.slice(carrierPrefix.length), 'base64url').toString('utf8'));
  } catch {
    return { calls: [] };
  }
  const state: CarriedState = { calls: [] };
  if (!isRecord(parsed)) return state;
  if (Array.isArray(parsed.calls))
    for (const entry of parsed.calls as unknown[]) {
      if (!Array.isArray(entry) || entry.length !== 2) continue;
      const [id, extra] = entry as [unknown, unknown];
      if (typeof id === 'string' && isRecord(extra)) state.calls.push([id, extra]);
    }
  if (isRecord(parsed.message)) {
    const message: Record<string, unknown> = {};
    for (const name of messageFields)
      if (parsed.message[name] !== undefined) message[name] = parsed.message[name];
    if (Object.keys(message).length > 0) state.message = message;
  }
  return state;
}

/**
 * A thinking block the gateway made: of no signature (a chat model's reasoning), or of its own (what a
 * provider gave to be sent back: a carrier). Any other is Claude's, signed, which Claude alone reads.
 */
export function isGatewayThinking(block: { type?: unknown; signature?: unknown }): boolean {
  return (
    block.type === 'thinking' &&
    (typeof block.signature !== 'string' || block.signature === '' || isCarrier(block.signature))
  );
}

/**
 * What a compaction's summary is introduced with when a client sends it back and it goes to a model as
 * text: the gateway's own (a Responses `compaction` item), or Claude's (a Messages `compaction` block).
 */
export const compactedHistory =
  'The conversation before this point was compacted; this summary of it was written then:\n\n';

/**
 * The request for a summary that a compaction gives back in place of the conversation it summarizes: what
 * replaces a Responses `compaction_trigger` item, and ends a Messages request that asks for a compaction
 * (`compaction: {"type": "summarize"}`) bridged to a Chat Completions model.
 */
export const compactionRequest =
  'Write a summary of this conversation so far, to be read in its place: whoever goes on from here will ' +
  "see the summary instead of the messages above. Keep what is needed to continue: the task, the user's " +
  "requests, constraints and preferences (in the user's words where they matter), what has been done " +
  'and found (files, commands, results, decisions, errors), where the work stands, and what remains to ' +
  'be done. Keep names, paths, identifiers and values exact. Answer with the summary only.';

/** What a compaction carrier starts with (a Responses `compaction` item's `encrypted_content`). */
const compactionPrefix = 'ctxgate.compaction.v1:';

/**
 * A summary the gateway wrote when a client asked it to compact a conversation (docs/responses.md#compaction),
 * as the opaque string a `compaction` item holds: the client sends it back in place of the history it
 * summarized, and the gateway reads it as the summary. Nothing in it is secret, as above.
 */
export function compactionCarrierOf(summary: string): string {
  return compactionPrefix + Buffer.from(summary).toString('base64url');
}

/**
 * The longest compaction carrier read: a summary is one answer of a model, at most some 128,000 tokens
 * (about 500 KB of text, 700 KB written so). A longer one is not the gateway's: dropped and named, as
 * another provider's compaction (six of 4 MB cost 60 ms of CPU more than their text sent as messages,
 * `npm run bench -- hostile-bodies`).
 */
const maxCompactionChars = 1024 * 1024;

/** True when an opaque field holds a compaction carrier of a length read. */
export function isCompactionCarrier(value: unknown): value is string {
  return (
    typeof value === 'string' && value.length <= maxCompactionChars && value.startsWith(compactionPrefix)
  );
}

/** The summary a compaction carrier holds; undefined when the value is not one. */
export function readCompactionCarrier(value: unknown): string | undefined {
  if (!isCompactionCarrier(value)) return undefined;
  return Buffer.from(value.slice(compactionPrefix.length), 'base64url').toString('utf8');
}
