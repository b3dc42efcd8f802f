// A provider's tool calls in the shape the Chat Completions API gives them, as the gateway counts,
// stores, translates and passes them on. OpenAI-compatible servers depart from it in ways seen in the
// wild (docs/budgeting.md#tool-calls-as-providers-give-them): a call's continuation deltas that repeat
// `id`, `type` and `function.name` as null (SGLang, Cloudflare Workers AI, OpenCode's Zen gateway) where
// OpenAI leaves them out, and arguments as a decoded JSON object rather than its text (llama-server,
// ggml-org/llama.cpp#20198). A null is what was not said; arguments that are not text are written as
// JSON text; an id or name given as a number is its digits, one not given is empty; anything else that
// is not a call is left out.
// Pure.

export interface ToolCallShape {
  id: string;
  type: string;
  function: { name: string; arguments: string };
  [field: string]: unknown;
}

/** What one streamed delta says of a call: only what it says, each field as text. */
export interface ToolCallDelta {
  index: number | undefined;
  id: string | undefined;
  type: string | undefined;
  name: string | undefined;
  arguments: string | undefined;
  extraContent: unknown;
}

/** A JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A name or id: text as it is, a number or boolean as its digits; null and anything else unsaid. */
function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
}

/** Arguments: text as it is; a decoded value (an object, a number…) as its JSON text; null unsaid. */
function argumentsOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  return value === null || value === undefined ? undefined : JSON.stringify(value);
}

/** One streamed delta's call, or undefined when the entry is not a call at all. */
export function toolCallDelta(call: unknown): ToolCallDelta | undefined {
  if (!isRecord(call)) return undefined;
  const fn = isRecord(call.function) ? call.function : undefined;
  return {
    index: typeof call.index === 'number' ? call.index : undefined,
    id: textOf(call.id),
    type: typeof call.type === 'string' ? call.type : undefined,
    name: textOf(fn?.name),
    arguments: argumentsOf(fn?.arguments),
    extraContent: call.extra_content,
  };
}

/** True when a whole message's call is already in the API's shape (the usual case: nothing made anew). */
function isConforming(call: unknown): boolean {
  if (!isRecord(call) || !isRecord(call.function)) return false;
  return (
    typeof call.id === 'string' &&
    typeof call.type === 'string' &&
    typeof call.function.name === 'string' &&
    typeof call.function.arguments === 'string'
  );
}

/**
 * A whole message's `tool_calls` in the API's shape: the same array when it is already (nothing
 * copied), a new one otherwise — entries that are not calls left out, a call's other fields (Gemini's
 * `extra_content`) kept; undefined when the value holds no call.
 */
export function conformedToolCalls(value: unknown): ToolCallShape[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  if (value.every(isConforming)) return value as ToolCallShape[];
  const calls: ToolCallShape[] = [];
  for (const entry of value as unknown[]) {
    const delta = toolCallDelta(entry);
    if (delta === undefined) continue;
    const { function: _function, id: _id, type: _type, ...rest } = entry as Record<string, unknown>;
    // What was not said is empty, as a stream's call without it is (reply-assembler.ts).
    calls.push(
      Object.assign(rest, {
        id: delta.id ?? '',
        type: delta.type ?? 'function',
        function: { name: delta.name ?? '', arguments: delta.arguments ?? '' },
      }),
    );
  }
  return calls.length === 0 ? undefined : calls;
}

/**
 * Puts each choice's message of a parsed completion in the API's shape, in place; true when anything
 * changed (the caller then writes the body anew, so the client is given what the session stores).
 */
export function conformCompletion(completion: Record<string, unknown>): boolean {
  const choices = completion.choices;
  if (!Array.isArray(choices)) return false;
  let changed = false;
  for (const choice of choices as unknown[]) {
    const message = isRecord(choice) ? choice.message : undefined;
    if (!isRecord(message) || !('tool_calls' in message)) continue;
    const calls = message.tool_calls;
    // No call at all: OpenAI's own answers say `tool_calls` only when there are some, or leave it out.
    if (calls === null || (Array.isArray(calls) && calls.length === 0)) continue;
    const conformed = conformedToolCalls(calls);
    if (conformed === calls) continue;
    changed = true;
    if (conformed === undefined) delete message.tool_calls;
    else message.tool_calls = conformed;
  }
  return changed;
}
