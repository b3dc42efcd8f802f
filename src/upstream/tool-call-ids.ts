// Tool call ids as providers take them back (docs/budgeting.md#tool-call-ids). An id is the provider's
// to give and the client's to send back with the call's result; providers refuse each other's:
// OpenAI an empty id or one of more than 40 characters ("Invalid 'messages[2].tool_calls[0].id': string
// too long. Expected a string with maximum length 40", Portkey-AI/gateway#1062), Anthropic and Bedrock
// one of anything but letters, digits, `_` and `-` ("tool_use.id: String should match pattern
// '^[a-zA-Z0-9_-]+$'", Kimi's ids after a switch to Claude: farion1231/cc-switch#1181) and one given
// twice, LM Studio and StepFun an empty one. And some providers give none: Gemini's OpenAI-compatible
// endpoint and LM Studio an empty id (openai/openai-dotnet#428, lmstudio-ai/lmstudio-bug-tracker#830),
// StepFun and SGLang past the first call none at all (sgl-project/sglang#7048) — which clients cannot
// send back either (two parallel calls of one id are one call to Codex and Claude Code).
// Pure.

/** An id every provider takes: 1 to 40 letters, digits, `_` and `-`. */
const portableId = /^[A-Za-z0-9_-]{1,40}$/;

/** True when every provider takes `id` as a tool call id. */
export function isPortableCallId(id: unknown): id is string {
  return typeof id === 'string' && portableId.test(id);
}

/** Letters and digits, for ids made of a hash. */
export const digits62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** FNV-1a of `text` from `seed` with multiplier `prime`, 32 bits. */
export function fnv1a(text: string, seed: number, prime = 0x01000193): number {
  let hash = seed >>> 0;
  for (let at = 0; at < text.length; at++) {
    hash ^= text.charCodeAt(at);
    hash = Math.imul(hash, prime) >>> 0;
  }
  return hash;
}

/** `count` letters and digits of `hash` (5 at most: 62^5 is under 2^32). */
export function hashDigits(hash: number, count: number): string {
  let out = '';
  for (let digit = 0; digit < count; digit++) {
    out += digits62[hash % 62];
    hash = (hash / 62) >>> 0;
  }
  return out;
}

/** Four FNV-1a hashes of another seed and multiplier each: 20 letters and digits, some 119 bits. */
const idHashes = [
  [0x811c9dc5, 0x01000193],
  [0x050c5d1f, 0x5bd1e995],
  [0x9e3779b9, 0x85ebca6b],
  [0x27d4eb2f, 0xc2b2ae35],
] as const;

/**
 * An id made from `seed`: `call_` and 20 letters and digits (the same seed, the same id), made in well
 * under a microsecond — a body may hold 100,000 calls.
 */
export function madeCallId(seed: string): string {
  let out = 'call_';
  for (let at = 0; at < idHashes.length; at++) {
    const [start, prime] = idHashes[at] as readonly [number, number];
    out += hashDigits(fnv1a(seed, start, prime), 5);
  }
  return out;
}

/**
 * The id a call of an answer is given when the provider gave it none: made from the answer's id (or
 * its `created`, when it has none), the choice and the call's place among the choice's calls — the same
 * for every reader of one answer (the session that stores it, the client's stream, a bridge).
 */
export function answerCallId(answer: unknown, choice: number, position: number): string {
  const record = typeof answer === 'object' && answer !== null ? (answer as Record<string, unknown>) : {};
  const key =
    typeof record.id === 'string' && record.id !== ''
      ? record.id
      : typeof record.created === 'number'
        ? String(record.created)
        : '';
  return madeCallId(`${key}\u0000${choice}\u0000${position}`);
}

/** Where a conversation's messages hold the ids of calls and of their results. */
export interface CallIdSlots<M> {
  /** The ids of a message's calls, in order; undefined (or none) when it makes none. */
  callIds(message: M): readonly unknown[] | undefined;
  /** The call ids a message's results answer, in order; undefined (or none) when it holds none. */
  resultIds(message: M): readonly unknown[] | undefined;
  /** The message with these ids of its calls, or of its results: a copy. */
  withCallIds(message: M, ids: readonly unknown[]): M;
  withResultIds(message: M, ids: readonly unknown[]): M;
}

/** The ids given to a message's calls of one id of theirs, in order, and how many results took one. */
interface GivenIds {
  ids: unknown[];
  taken: number;
}

/**
 * A conversation with call ids given anew: `idFor` gives a call its id (undefined: it keeps its own),
 * from its id, its place among the conversation's calls, and its message and place in it; each result
 * after the calls' message takes the id its call was given, the calls of one id in their order. The
 * messages that change are copies, the others the same objects; the same array when nothing changes.
 * Linear in the ids, however many share one.
 */
export function withCallIdsGiven<M>(
  messages: readonly M[],
  slots: CallIdSlots<M>,
  idFor: (id: unknown, ordinal: number, message: M, at: number) => string | undefined,
): readonly M[] {
  let out: M[] | undefined;
  let ordinal = 0;
  // The ids the last message of calls was given, by its own ids; undefined when it kept them all.
  let given: Map<unknown, GivenIds> | undefined;
  messages.forEach((message, index) => {
    const calls = slots.callIds(message);
    if (calls !== undefined && calls.length > 0) {
      given = undefined;
      let ids: unknown[] | undefined;
      calls.forEach((id, at) => {
        const next = idFor(id, ordinal++, message, at);
        if (next === undefined) return;
        ids ??= [...calls];
        ids[at] = next;
      });
      if (ids === undefined) return;
      const made = new Map<unknown, GivenIds>();
      calls.forEach((own, at) => {
        const entry = made.get(own);
        if (entry === undefined) made.set(own, { ids: [(ids as unknown[])[at]], taken: 0 });
        else entry.ids.push((ids as unknown[])[at]);
      });
      given = made;
      out ??= [...messages];
      out[index] = slots.withCallIds(message, ids);
      return;
    }
    const results = given === undefined ? undefined : slots.resultIds(message);
    let ids: unknown[] | undefined;
    results?.forEach((own, at) => {
      const entry = given?.get(own);
      const next = entry === undefined ? undefined : entry.ids[entry.taken++];
      if (next === undefined || next === own) return;
      ids ??= [...results];
      ids[at] = next;
    });
    if (ids === undefined) return;
    out ??= [...messages];
    out[index] = slots.withResultIds(message, ids);
  });
  return out ?? messages;
}

/**
 * A conversation with every call id some provider refuses — empty, of more than 40 characters, of
 * anything but letters, digits, `_` and `-`, or given to an earlier call — given one every provider
 * takes (portableIds), each result following its call; the same array when every id is one, given once
 * (the usual history, read without copying anything).
 */
export function withPortableCallIds<M>(messages: readonly M[], slots: CallIdSlots<M>): readonly M[] {
  const seen = new Set<unknown>();
  for (const message of messages) {
    const ids = slots.callIds(message);
    if (ids === undefined) continue;
    for (const id of ids) {
      if (!isPortableCallId(id) || seen.has(id)) return withCallIdsGiven(messages, slots, portableIds());
      seen.add(id);
    }
  }
  return messages;
}

/**
 * A rule for `withCallIdsGiven` that keeps every id every provider takes, the first time it is given,
 * and makes one for any other (empty, too long, of other characters, given before) from its place.
 */
export function portableIds(): (id: unknown, ordinal: number) => string | undefined {
  const seen = new Set<unknown>();
  return (id, ordinal) => {
    if (isPortableCallId(id) && !seen.has(id)) {
      seen.add(id);
      return undefined;
    }
    const made = madeCallId(`${ordinal}\u0000${String(id)}`);
    seen.add(made);
    return made;
  };
}
