// Rebuilds the assistant message of a chat completion — from a whole JSON body, or from the deltas of
// an SSE stream (content, as a string or as chunks — content-chunks.ts —, reasoning, refusal, tool calls
// with their arguments) — so a session can store
// the reply it relayed. A thinking model's reasoning keeps the name the provider gave it
// (reasoning-field.ts), as it is sent back to that provider; a tool call keeps its `extra_content`, where
// Gemini gives the thought signature it refuses the call back without (docs/budgeting.md), and OpenRouter's
// `reasoning_details` (Claude's thinking with its signature, which Anthropic refuses a tool loop back
// without) are kept whole, and so are Claude's own blocks where its answer's chat form would not give them
// back (`ctxgate_anthropic`: its signed thinking, a server tool's use and results — anthropic-wire.ts).
// Pure.
import { flatText } from '../flat-string.js';
import { madeKey } from './anthropic-wire.js';
import { chunkTexts, thinkingChunks } from './content-chunks.js';
import { reasoningOf, type ReasoningField } from './reasoning-field.js';
import { SseDecoder } from './sse.js';
import { reportsError } from './upstream-error-body.js';
import {
  argumentsText,
  conformedToolCalls,
  isRecord,
  saysFinish,
  StreamedToolCalls,
  toolCallDelta,
} from './tool-call-shape.js';

export interface AssembledReply {
  message: Record<string, unknown>;
  finished: boolean;
  /** Data events that were neither JSON nor [DONE]: the stream is not what it claims. */
  malformedEvents: number;
  /**
   * The provider reported an error within the stream — an event with an `error` (OpenRouter's, vLLM's,
   * SGLang's, OpenAI's own mid-stream errors) or a `finish_reason` of "error": the answer failed,
   * whatever came after.
   */
  erred: boolean;
}

interface ChoiceDelta {
  role?: string;
  content?: string | unknown[] | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  refusal?: string | null;
  reasoning_details?: unknown;
  /** Claude's answer's blocks, at the end of its stream, when its chat form would not give them back. */
  ctxgate_anthropic_blocks?: unknown[];
  /** As the provider gave them: read through toolCallDelta. */
  tool_calls?: unknown;
}

/** The assistant message of a parsed chat completion, as a session stores it; undefined when it has none. */
export function replyFromCompletion(
  completion: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const choices = completion.choices as Array<{ message?: Record<string, unknown> }> | undefined;
  const message = Array.isArray(choices) ? choices[0]?.message : undefined;
  if (message === undefined || typeof message !== 'object' || message === null) return undefined;
  const reply: Record<string, unknown> = { role: 'assistant', content: message.content ?? null };
  const calls = conformedToolCalls(message.tool_calls, completion);
  if (calls !== undefined) reply.tool_calls = calls;
  const reasoning = reasoningOf(message);
  if (reasoning !== undefined) reply[reasoning.field] = reasoning.text;
  if (typeof message.refusal === 'string') reply.refusal = message.refusal;
  if (Array.isArray(message.reasoning_details) && message.reasoning_details.length > 0)
    reply.reasoning_details = message.reasoning_details;
  // Claude's answer as it gave it, sent back to Claude as it came (its `made` is this reply's).
  if (isAnthropicExtension(message.ctxgate_anthropic)) reply.ctxgate_anthropic = message.ctxgate_anthropic;
  return reply;
}

/**
 * The first choice (index 0) of a parsed chat stream chunk, its delta an object ({} when it has none);
 * undefined when the chunk holds no such choice — what is not shaped as one says nothing.
 */
export function firstChoice(
  chunk: unknown,
): { delta: Record<string, unknown>; finish_reason: unknown } | undefined {
  const choices = isRecord(chunk) && Array.isArray(chunk.choices) ? (chunk.choices as unknown[]) : [];
  const choice = choices.find((candidate) => isRecord(candidate) && (candidate.index ?? 0) === 0);
  if (!isRecord(choice)) return undefined;
  return { delta: isRecord(choice.delta) ? choice.delta : {}, finish_reason: choice.finish_reason };
}

function isAnthropicExtension(value: unknown): value is { blocks: unknown[]; made: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as { blocks?: unknown }).blocks) &&
    typeof (value as { made?: unknown }).made === 'string'
  );
}

/** How far past the entries held a reasoning detail's index may point. */
const maxIndexSkip = 8;

/**
 * OpenRouter's structured reasoning as a stream gives it: entries in pieces, a piece's `index` saying
 * which entry it continues (its text, summary or data added on, any other field taken as the latest).
 * An index a few past the entries (a provider numbering from 1) leaves holes, which readers skip; one
 * that is not a whole number, or far past them (a billion), starts the next entry instead: an array
 * indexed by whatever a provider says could hold a billion holes.
 */
export function addReasoningDetails(into: Array<Record<string, unknown>>, pieces: unknown): void {
  if (!Array.isArray(pieces)) return;
  for (const piece of pieces as unknown[]) {
    if (typeof piece !== 'object' || piece === null || Array.isArray(piece)) continue;
    const fields = piece as Record<string, unknown>;
    const said = fields.index;
    const index =
      typeof said === 'number' && Number.isInteger(said) && said >= 0 && said <= into.length + maxIndexSkip
        ? said
        : into.length;
    const entry = into[index];
    if (entry === undefined) {
      into[index] = { ...fields };
      continue;
    }
    for (const [name, value] of Object.entries(fields))
      if ((name === 'text' || name === 'summary' || name === 'data') && typeof value === 'string')
        entry[name] = typeof entry[name] === 'string' ? entry[name] + value : value;
      else if (value !== undefined && value !== null) entry[name] = value;
  }
}

export class StreamReplyAssembler {
  private readonly decoder = new SseDecoder();
  private readonly textDecoder = new TextDecoder();
  private content = '';
  private sawContent = false;
  /** Thinking given as content chunks (Mistral's reasoning models): the reply keeps Mistral's form. */
  private thinking = '';
  private reasoning = '';
  private reasoningField: ReasoningField = 'reasoning_content';
  private refusal = '';
  /** OpenRouter's `reasoning_details`, by index (addReasoningDetails). */
  private readonly reasoningDetails: Array<Record<string, unknown>> = [];
  /** The calls, however the provider's deltas say them (tool-call-shape.ts). */
  private readonly toolCalls = new StreamedToolCalls();
  private finished = false;
  private malformedEvents = 0;
  private erred = false;
  /** Claude's blocks of the answer (ctxgate_anthropic_blocks), when its stream gave them. */
  private anthropicBlocks: unknown[] | undefined;

  push(chunk: Uint8Array): void {
    for (const event of this.decoder.push(this.textDecoder.decode(chunk, { stream: true })))
      this.take(event.data);
  }

  end(): AssembledReply {
    for (const event of this.decoder.push(this.textDecoder.decode())) this.take(event.data);
    for (const event of this.decoder.end()) this.take(event.data);
    // Each text in one piece (flat-string.ts): the session stores the reply and sends it again with every
    // later request.
    const message: Record<string, unknown> = {
      role: 'assistant',
      content:
        this.thinking !== ''
          ? thinkingChunks(flatText(this.thinking), flatText(this.content))
          : this.sawContent || this.toolCalls.calls.length === 0
            ? flatText(this.content)
            : null,
    };
    // In the order of the indexes the deltas said (any number: a call of index 1e9 makes no holes); a
    // provider whose indexes skip (starting at 1) leaves no hole.
    const toolCalls = [...this.toolCalls.calls]
      .sort((one, other) => one.index - other.index || one.position - other.position)
      .map(({ id, type, name, arguments: text, extraContent }) => ({
        id,
        type,
        function: { name, arguments: argumentsText(flatText(text)) },
        // Gemini's thought signature (`extra_content.google.thought_signature`), sent back with the call.
        ...(extraContent === undefined ? {} : { extra_content: extraContent }),
      }));
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (this.reasoning !== '') message[this.reasoningField] = flatText(this.reasoning);
    if (this.refusal !== '') message.refusal = flatText(this.refusal);
    const details = this.reasoningDetails.filter((entry) => entry !== undefined);
    if (details.length > 0) message.reasoning_details = details;
    if (this.anthropicBlocks !== undefined)
      message.ctxgate_anthropic = { blocks: this.anthropicBlocks, made: madeKey(message) };
    return { message, finished: this.finished, malformedEvents: this.malformedEvents, erred: this.erred };
  }

  private take(data: string): void {
    if (data === '[DONE]') {
      this.finished = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      this.malformedEvents++;
      return;
    }
    // An error in the stream: `{"error": {…}}` beside or instead of the choices, or vLLM's
    // `{"object": "error", …}`.
    if (isRecord(chunk) && reportsError(chunk)) this.erred = true;
    const choice = firstChoice(chunk);
    if (choice === undefined) return;
    if (choice.finish_reason === 'error') this.erred = true;
    else if (saysFinish(choice.finish_reason)) this.finished = true;
    const delta: ChoiceDelta = choice.delta;
    if (typeof delta.content === 'string') {
      this.content += delta.content;
      if (delta.content !== '') this.sawContent = true;
    } else if (Array.isArray(delta.content)) {
      const { text, thinking } = chunkTexts(delta.content);
      this.content += text;
      if (text !== '') this.sawContent = true;
      this.thinking += thinking;
    }
    const reasoning = reasoningOf(delta as Record<string, unknown>);
    if (reasoning !== undefined) {
      this.reasoning += reasoning.text;
      this.reasoningField = reasoning.field;
    }
    if (typeof delta.refusal === 'string') this.refusal += delta.refusal;
    if (delta.reasoning_details !== undefined)
      addReasoningDetails(this.reasoningDetails, delta.reasoning_details);
    if (Array.isArray(delta.ctxgate_anthropic_blocks)) this.anthropicBlocks = delta.ctxgate_anthropic_blocks;
    // What each delta says of a call, as text; a null is what it did not say (tool-call-shape.ts).
    for (const entry of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      const call = toolCallDelta(entry);
      if (call !== undefined) this.toolCalls.take(call, chunk);
    }
  }
}
