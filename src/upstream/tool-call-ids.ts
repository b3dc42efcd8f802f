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

import { createHash } from 'node:crypto';

/** An id every provider takes: 1 to 40 letters, digits, `_` and `-`. */
const portableId = /^[A-Za-z0-9_-]{1,40}$/;

/** True when every provider takes `id` as a tool call id. */
export function isPortableCallId(id: unknown): id is string {
  return typeof id === 'string' && portableId.test(id);
}

/** An id made from `seed`: `call_` and 24 letters, digits, `_` and `-` (the same seed, the same id). */
export function madeCallId(seed: string): string {
  return `call_${createHash('sha256').update(seed).digest('base64url').slice(0, 24)}`;
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
  /** How many calls a message makes (0: none). */
  callCount(message: M): number;
  callId(message: M, at: number): unknown;
  /** How many results a message holds (0: none). */
  resultCount(message: M): number;
  resultId(message: M, at: number): unknown;
  /** The message with these ids of its calls, or of its results: a copy. */
  withCallIds(message: M, ids: readonly unknown[]): M;
  withResultIds(message: M, ids: readonly unknown[]): M;
}

/**
 * A conversation with call ids given anew: `idFor` gives a call its id (undefined: it keeps its own),
 * from its id, its place among the conversation's calls, and its message and place in it; each result after the calls' message takes
 * the id its call was given, the calls of one id in their order. The messages that change are copies,
 * the others the same objects; the same array when nothing changes.
 */
export function withCallIdsGiven<M>(
  messages: readonly M[],
  slots: CallIdSlots<M>,
  idFor: (id: unknown, ordinal: number, message: M, at: number) => string | undefined,
): readonly M[] {
  let out: M[] | undefined;
  let ordinal = 0;
  // The ids the last message of calls was given, by its own ids; undefined when it kept them all.
  let given: Map<unknown, unknown[]> | undefined;
  messages.forEach((message, index) => {
    const calls = slots.callCount(message);
    if (calls > 0) {
      given = undefined;
      let ids: unknown[] | undefined;
      for (let at = 0; at < calls; at++) {
        const next = idFor(slots.callId(message, at), ordinal++, message, at);
        if (next === undefined) continue;
        ids ??= Array.from({ length: calls }, (_, position) => slots.callId(message, position));
        ids[at] = next;
      }
      if (ids === undefined) return;
      const made = new Map<unknown, unknown[]>();
      ids.forEach((id, at) => {
        const own = slots.callId(message, at);
        made.set(own, [...(made.get(own) ?? []), id]);
      });
      given = made;
      out ??= [...messages];
      out[index] = slots.withCallIds(message, ids);
      return;
    }
    const results = given === undefined ? 0 : slots.resultCount(message);
    let ids: unknown[] | undefined;
    for (let at = 0; at < results; at++) {
      const own = slots.resultId(message, at);
      const next = given?.get(own)?.shift();
      if (next === undefined || next === own) continue;
      ids ??= Array.from({ length: results }, (_, position) => slots.resultId(message, position));
      ids[at] = next;
    }
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
    const count = slots.callCount(message);
    for (let at = 0; at < count; at++) {
      const id = slots.callId(message, at);
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
