// A provider's tool calls in the shape the Chat Completions API gives them, as the gateway counts,
// stores, translates and passes them on. OpenAI-compatible servers depart from it in ways seen in the
// wild (docs/budgeting.md#tool-calls-as-providers-give-them): a call's continuation deltas that repeat
// `id`, `type` and `function.name` as null (SGLang, Cloudflare Workers AI, OpenCode's Zen gateway) where
// OpenAI leaves them out, and arguments as a decoded JSON object rather than its text (llama-server,
// ggml-org/llama.cpp#20198). A null is what was not said; arguments that are not text are written as
// JSON text; an id or name given as a number is its digits, a name not given is empty and an id not
// given is made (tool-call-ids.ts); anything else that is not a call is left out.
// Pure.

import { answerCallId } from './tool-call-ids.js';

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

/** A chat chunk's data read as a chunk with a list of choices; undefined when it is not one. */
export function chatChunkOf(data: string): (Record<string, unknown> & { choices: unknown[] }) | undefined {
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    return undefined;
  }
  return isRecord(chunk) && Array.isArray(chunk.choices)
    ? (chunk as Record<string, unknown> & { choices: unknown[] })
    : undefined;
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

/**
 * A call's arguments as OpenAI gives them: a call of none as `{}`, where OpenRouter's and Bedrock's Claude,
 * Ollama and vLLM give `""` (or nothing), which clients parse as JSON — the OpenAI Agents SDK told the model
 * "An error occurred while parsing tool arguments" and never ran the tool (openai/openai-agents-js#664;
 * simonw/llm#1164, sigoden/aichat#1213).
 */
export function argumentsText(text: string | undefined): string {
  return text === undefined || text.trim() === '' ? '{}' : text;
}

/** True when a whole message's call is already in the API's shape (the usual case: nothing made anew). */
function isConforming(call: unknown): boolean {
  if (!isRecord(call) || !isRecord(call.function)) return false;
  return (
    typeof call.id === 'string' &&
    call.id !== '' &&
    typeof call.type === 'string' &&
    typeof call.function.name === 'string' &&
    typeof call.function.arguments === 'string' &&
    call.function.arguments.trim() !== ''
  );
}

/**
 * A whole message's `tool_calls` in the API's shape: the same array when it is already (nothing
 * copied), a new one otherwise — entries that are not calls left out, a call's other fields (Gemini's
 * `extra_content`) kept, a call without an id given one made from `answer`, the completion, and the
 * choice (tool-call-ids.ts answerCallId); undefined when the value holds no call.
 */
export function conformedToolCalls(
  value: unknown,
  answer?: unknown,
  choice = 0,
): ToolCallShape[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  if (value.every(isConforming)) return value as ToolCallShape[];
  const calls: ToolCallShape[] = [];
  for (const entry of value as unknown[]) {
    const delta = toolCallDelta(entry);
    if (delta === undefined) continue;
    const { function: _function, id: _id, type: _type, ...rest } = entry as Record<string, unknown>;
    // A name not said is empty, as a stream's call without one is (reply-assembler.ts); arguments not
    // said, none.
    calls.push(
      Object.assign(rest, {
        id: nonEmpty(delta.id) ? delta.id : answerCallId(answer, choice, calls.length),
        type: delta.type ?? 'function',
        function: { name: delta.name ?? '', arguments: argumentsText(delta.arguments) },
      }),
    );
  }
  return calls.length === 0 ? undefined : calls;
}

/**
 * Whether a choice's `finish_reason` says it finished: a word, not null — nor `""`, which SGLang 0.4.3 and
 * Ollama's OpenAI-compatible endpoint of 2024 said on every chunk before the last (sgl-project/sglang#3912,
 * ollama/ollama#4357), nor the string `"null"`, KoboldCpp's (PowerShell/AIShell#350), nor `"None"`, SGLang's
 * of August 2024 (vercel/ai#2548). Every reader of a stream asks this, so that a stream of them that ended
 * early is not taken for a whole answer.
 */
export function saysFinish(finish: unknown): finish is string {
  return typeof finish === 'string' && finish !== '' && finish !== 'null' && finish !== 'None';
}

/**
 * The finish an answer's calls say (docs/budgeting.md#tool-calls-as-providers-give-them): calls that end as
 * `stop` end as `tool_calls` (Gemini's OpenAI-compatible endpoint, LiteLLM before Ollama: an agent that
 * reads the finish stopped after its first call, anomalyco/opencode#14972, #20719, vercel/workflow#1387),
 * and `tool_calls` with no call as `stop` (Claude behind a proxy: the agent called the model again and
 * again, mastra-ai/mastra#14187); undefined when the finish says what the calls do.
 */
export function finishOfCalls(finish: unknown, calls: boolean): string | undefined {
  const said = typeof finish === 'string' ? (otherFinishes.get(finish.toLowerCase()) ?? finish) : finish;
  const given = said === 'stop' && calls ? 'tool_calls' : said === 'tool_calls' && !calls ? 'stop' : said;
  return given === finish ? undefined : (given as string);
}

/**
 * Other servers' words for OpenAI's finishes: Together's `eos` (vespa-engine/vespa#33327), TGI's
 * `eos_token` (huggingface/text-generation-inference#2296), Claude's and Gemini's own words as relays
 * pass them on (aws-samples/bedrock-access-gateway#11). Strongly typed clients refuse a finish they do
 * not know (async-openai, Spring AI: spring-projects/spring-ai#4900), and the AI SDK reads it as `other`,
 * which ended an agent's loop (vercel/workflow#1387). A word not among them goes as it came.
 */
const otherFinishes: ReadonlyMap<string, string> = new Map([
  // OpenAI's own, in capitals (Gemini's `STOP`, `MAX_TOKENS`).
  ['stop', 'stop'],
  ['length', 'length'],
  ['eos', 'stop'],
  ['eos_token', 'stop'],
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['max_tokens', 'length'],
  ['tool_use', 'tool_calls'],
  ['safety', 'content_filter'],
]);

/**
 * Puts each choice's message of a parsed completion in the API's shape, in place, its finish as its calls
 * say it (finishOfCalls); true when anything changed (the caller then writes the body anew, so the client
 * is given what the session stores).
 */
export function conformCompletion(completion: Record<string, unknown>): boolean {
  const choices = completion.choices;
  if (!Array.isArray(choices)) return false;
  let changed = false;
  for (const [place, choice] of (choices as unknown[]).entries()) {
    const message = isRecord(choice) ? choice.message : undefined;
    if (!isRecord(message)) continue;
    const calls = message.tool_calls;
    // No call at all: OpenAI's own answers say `tool_calls` only when there are some, or leave it out.
    if (calls !== undefined && calls !== null && !(Array.isArray(calls) && calls.length === 0)) {
      const conformed = conformedToolCalls(calls, completion, place);
      if (conformed !== calls) {
        changed = true;
        if (conformed === undefined) delete message.tool_calls;
        else message.tool_calls = conformed;
      }
    }
    const said = (choice as Record<string, unknown>).finish_reason;
    const calling = Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
    // A whole answer that says no finish (KoboldCpp's) finishes as OpenAI's always say: strongly typed
    // clients refuse one without (openai/openai-dotnet reads it as an error).
    const finish = saysFinish(said) ? finishOfCalls(said, calling) : calling ? 'tool_calls' : 'stop';
    if (finish === undefined) continue;
    (choice as Record<string, unknown>).finish_reason = finish;
    changed = true;
  }
  return changed;
}

/** One call of a streamed answer, as its deltas have said it so far. */
export interface StreamedCall {
  /** Its place among the answer's calls, in the order they began. */
  readonly position: number;
  /** The index its first delta said (its position when the delta said none): the order of a whole answer. */
  readonly index: number;
  /**
   * The provider's, as the delta that began the call (or a delta before it) said it; one made from the
   * answer when none did (tool-call-ids.ts answerCallId), and a later one not taken.
   */
  id: string;
  type: string;
  name: string;
  arguments: string;
  /** Gemini's thought signature (`extra_content`), as the last delta that gave it gave it. */
  extraContent?: unknown;
}

/** What a delta added: the call it belongs to, whether the call began with it, the arguments it added. */
export interface StreamedCallStep {
  call: StreamedCall;
  began: boolean;
  arguments: string;
}

/** A streamed call with where the JSON value of its arguments stands (StreamedToolCalls's scan). */
interface ScannedCall extends StreamedCall {
  depth: number;
  inString: boolean;
  escaped: boolean;
  /** 1: an object or array opened; -1: the arguments do not start as one (never whole to the scan). */
  opened: 0 | 1 | -1;
  /** A name (and id) a delta said once the arguments were whole: the next call's, when its arguments come. */
  nameAfter: string | undefined;
  idAfter: string | undefined;
  /** The id was made (the provider said none): what a delta says of an id is not this call's. */
  made: boolean;
}

const nonEmpty = (text: string | undefined): text is string => text !== undefined && text !== '';

/**
 * The calls of a streamed answer, from its deltas. OpenAI gives each call an `index`, and its id, type
 * and name on the first delta only; providers depart from it (docs/budgeting.md#tool-calls-as-providers-
 * give-them), and a reader that follows the index alone merges calls and doubles names:
 * - parallel calls all at index 0, each beginning with its own id and name (Gemini's OpenAI-compatible
 *   endpoint, NousResearch/hermes-agent#62937; SGLang, sgl-project/sglang#6310), or as whole calls
 *   without an index (a gateway that translates Gemini's or Bedrock's: QuantumNous/new-api#672,
 *   envoyproxy/ai-gateway#1468): a delta with an id other than its call's begins another call when it
 *   names a tool or the call's arguments already make a whole JSON object or array, and so do arguments
 *   that come after whole ones, under a name said for them;
 * - the id, type and name repeated on every delta (MiniMax on NVIDIA NIM, NousResearch/hermes-agent#8259;
 *   Fireworks, SillyTavern/SillyTavern#5948): a name the call already has is not added again; a name
 *   given in pieces (continuedev/continue#5849) is joined;
 * - the arguments so far on every delta, or whole arguments given again (addedArguments).
 * A delta without an index belongs to the last call unless it begins another.
 */
export class StreamedToolCalls {
  /** In the order they began. */
  readonly calls: StreamedCall[] = [];
  /** The call each index said last went to. */
  private readonly byIndex = new Map<number, ScannedCall>();

  /** `choice`: the index of the choice whose calls these are. */
  constructor(private readonly choice = 0) {}

  /** True when `delta` would begin a call (take it with the chunk it came in, for the call's id). */
  wouldBegin(delta: ToolCallDelta): boolean {
    const call = this.callOf(delta);
    return call === undefined || this.beginsAnother(call, delta);
  }

  private callOf(delta: ToolCallDelta): ScannedCall | undefined {
    return (delta.index === undefined ? this.calls.at(-1) : this.byIndex.get(delta.index)) as
      ScannedCall | undefined;
  }

  /**
   * What `delta` says, from `chunk`, the stream's event it came in: a call it begins without an id is
   * given one made from the chunk (every reader of the stream makes the same).
   */
  take(delta: ToolCallDelta, chunk?: unknown): StreamedCallStep {
    const said = delta.index;
    let call = this.callOf(delta);
    let began = false;
    if (call === undefined || this.beginsAnother(call, delta)) {
      const name = nonEmpty(delta.name) ? delta.name : (call?.nameAfter ?? '');
      const id = nonEmpty(delta.name) ? undefined : call?.idAfter;
      if (call !== undefined) call.nameAfter = call.idAfter = undefined;
      const position = this.calls.length;
      call = {
        position,
        index: said ?? position,
        id: id ?? '',
        type: 'function',
        name,
        arguments: '',
        depth: 0,
        inString: false,
        escaped: false,
        opened: 0,
        nameAfter: undefined,
        idAfter: undefined,
        made: false,
      };
      this.calls.push(call);
      began = true;
    }
    if (said !== undefined) this.byIndex.set(said, call);
    if (nonEmpty(delta.name) && !began && whole(call)) {
      call.nameAfter = delta.name;
      call.idAfter = delta.id;
    } else {
      if (delta.id !== undefined && !nonEmpty(call.id)) call.id = delta.id;
      if (nonEmpty(delta.name) && delta.name !== call.name) call.name += delta.name;
    }
    if (began && !nonEmpty(call.id)) {
      call.id = answerCallId(chunk, this.choice, call.position);
      call.made = true;
    }
    if (nonEmpty(delta.type)) call.type = delta.type;
    if (delta.extraContent !== undefined) call.extraContent = delta.extraContent;
    const added = began ? (delta.arguments ?? '') : addedArguments(call, delta.arguments ?? '');
    if (added !== '') {
      call.arguments += added;
      scan(call, added);
    }
    return { call, began, arguments: added };
  }

  private beginsAnother(call: ScannedCall, delta: ToolCallDelta): boolean {
    if (nonEmpty(delta.id) && !call.made && nonEmpty(call.id))
      return delta.id !== call.id && (nonEmpty(delta.name) || whole(call));
    return (
      whole(call) &&
      (nonEmpty(delta.name) || call.nameAfter !== undefined) &&
      delta.arguments !== undefined &&
      delta.arguments.trim() !== ''
    );
  }
}

/**
 * What a delta's arguments add to its call's: all of them, as OpenAI streams them; what follows the
 * call's arguments so far when the delta begins with them and goes on — DeepSeek and Baidu Qianfan in
 * cumulative mode, and some llama.cpp builds, give each delta as the whole so far
 * (NousResearch/hermes-agent#35718, openclaw/openclaw#89070) — and nothing when it repeats them once
 * whole, as a proxy before Claude or Gemini re-sends them (mudler/cogito#66). Arguments that open an
 * object or array followed by themselves are JSON only where an object nests one that begins as it does,
 * cut just there: not a stream met.
 */
function addedArguments(call: ScannedCall, said: string): string {
  const before = call.arguments;
  if (call.opened !== 1 || said.length < before.length || !said.startsWith(before)) return said;
  return said.length > before.length || whole(call) ? said.slice(before.length) : said;
}

/** True when a call's arguments so far are one whole JSON object or array. */
function whole(call: ScannedCall): boolean {
  return call.opened === 1 && call.depth === 0 && !call.inString;
}

/** Follows the JSON value of a call's arguments through `added`: strings, escapes and nesting. */
function scan(call: ScannedCall, added: string): void {
  if (call.opened === -1) return;
  for (let position = 0; position < added.length; position++) {
    const code = added.charCodeAt(position);
    if (call.inString) {
      if (call.escaped) call.escaped = false;
      else if (code === 0x5c) call.escaped = true;
      else if (code === 0x22) call.inString = false;
    } else if (code === 0x22) call.inString = true;
    else if (code === 0x7b || code === 0x5b) {
      call.depth++;
      call.opened = 1;
    } else if (code === 0x7d || code === 0x5d) call.depth--;
    else if (call.opened === 0 && code > 0x20) {
      call.opened = -1;
      return;
    }
  }
}
