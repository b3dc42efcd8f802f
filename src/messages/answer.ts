// The chat engine's answer as Anthropic's Messages API answers (docs/anthropic.md): a whole chat
// completion as a `message` object, a chat stream as Anthropic's event sequence one for one as it
// arrives (message_start, ping, content_block_start/delta/stop per block, message_delta with the stop
// reason and usage, message_stop), and any error in Anthropic's shape with Anthropic's wording for a
// prompt over the window ("prompt is too long: N tokens > M maximum"), which Claude Code acts on. What a
// chat provider gives to be sent back — a tool call's `extra_content` (Gemini 3's thought signature), the
// message's `reasoning_details` (OpenRouter's) — goes to the client as the signature of a thinking block
// of no text before the calls (carried-state.ts), which it sends back as it got it and the bridge puts
// back on the message and its calls.
import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { toolInputOf, type AnthropicExtension } from '../upstream/anthropic-wire.js';
import { carriedStateOf, carrierOf } from '../upstream/carried-state.js';
import { chunkTexts } from '../upstream/content-chunks.js';
import { addReasoningDetails, firstChoice } from '../upstream/reply-assembler.js';
import { isRecord, saysFinish, StreamedToolCalls, toolCallDelta } from '../upstream/tool-call-shape.js';
import { reasoningOf, type ReasoningField } from '../upstream/reasoning-field.js';
import { SseDecoder, typedEvent } from '../upstream/sse.js';
import { streamedErrorOf, upstreamErrorFacts } from '../upstream/upstream-error-body.js';
import { flatText } from '../flat-string.js';
import { withoutThinking } from '../context/summary.js';
import { cacheWriteTokensOf, cachedTokensOf } from '../upstream/usage-details.js';

type Json = Record<string, unknown>;

export const newMessageId = (): string => flatText(`msg_${randomBytes(12).toString('base64url')}`);

const stopReasons: Record<string, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

/**
 * Claude's stop reason for a chat finish: an answer that ends in tool calls stops for `tool_use`, as Claude
 * says it, also when the provider said `stop` (vLLM with a named tool_choice, OpenVINO's server, mlx-vlm,
 * OpenAI's own named tool_choice: vllm-project/vllm#25054, openvinotoolkit/model_server#3927), and one that
 * calls nothing never does (a proxy's "tool_use" with no call: mastra-ai/mastra#14187).
 */
function stopReasonOf(finish: string, calls: boolean): string {
  const reason = stopReasons[finish] ?? 'end_turn';
  if (reason === 'tool_use' && !calls) return 'end_turn';
  return calls && reason === 'end_turn' ? 'tool_use' : reason;
}

/** Anthropic's error type for a status. */
export function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'billing_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 504 || status === 408) return 'timeout_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/**
 * An overflow in OpenAI's words ("maximum context length is M tokens … N tokens") in Anthropic's:
 * "prompt is too long: N tokens > M maximum", the rest kept after it. Other messages unchanged.
 */
export function anthropicMessageText(message: string): string {
  const window = /maximum context length is (\d+) tokens/.exec(message)?.[1];
  const prompt =
    /\((\d+) in the messages/.exec(message)?.[1] ??
    /messages resulted in (\d+) tokens/.exec(message)?.[1] ??
    /requested (\d+) tokens/.exec(message)?.[1];
  if (window === undefined || prompt === undefined) return message;
  return `prompt is too long: ${prompt} tokens > ${window} maximum. ${message}`;
}

export function anthropicErrorBody(
  status: number,
  message: string,
  type?: string,
  details?: Readonly<Record<string, unknown>>,
): Json {
  const error: Json = { type: type ?? anthropicErrorType(status), message: anthropicMessageText(message) };
  // Anthropic's machine-readable detail (`error_code`), which its SDK acts on (a Thread not found: replayed).
  if (details !== undefined) error.details = details;
  return { type: 'error', error };
}

/** An error body the engine relays (the gateway's, or the upstream's in either shape) in Anthropic's shape. */
export function toAnthropicErrorBody(status: number, body: Buffer): Json {
  let parsed: Json | undefined;
  try {
    parsed = JSON.parse(body.toString('utf8')) as Json;
  } catch {
    parsed = undefined;
  }
  if (parsed?.type === 'error' && typeof parsed.error === 'object' && parsed.error !== null) return parsed;
  // The provider's words in whatever shape it answered (upstream-error-body.ts).
  return anthropicErrorBody(
    status,
    upstreamErrorFacts(parsed)?.message ?? `The upstream answered ${status}.`,
  );
}

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** Anthropic usage of a chat usage (the upstream's own, when it was an Anthropic upstream). */
export function usageOf(usage: Json | undefined): AnthropicUsage {
  const own = usage?.ctxgate_anthropic as AnthropicUsage | undefined;
  if (own !== undefined) return own;
  const prompt = Number(usage?.prompt_tokens ?? 0);
  const cached = cachedTokensOf(usage) ?? 0;
  // What the provider wrote to its cache (Claude behind OpenRouter): Anthropic counts it apart from the input.
  const written = Math.min(cacheWriteTokensOf(usage) ?? 0, Math.max(0, prompt - cached));
  return {
    input_tokens: Math.max(0, prompt - cached - written),
    output_tokens: Number(usage?.completion_tokens ?? 0),
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: written,
  };
}

/** A chat reply's content as Anthropic blocks: its original blocks when it came from Anthropic. */
export function blocksOfReply(reply: Json): unknown[] {
  const own = reply.ctxgate_anthropic as AnthropicExtension | undefined;
  if (own !== undefined && Array.isArray(own.blocks)) return own.blocks;
  const blocks: Json[] = [];
  // The content as a string, or as chunks of text and thinking (Mistral's reasoning models).
  const { text, thinking } = chunkTexts(reply.content);
  const reasoning = reasoningOf(reply)?.text ?? thinking;
  if (reasoning !== '') blocks.push({ type: 'thinking', thinking: reasoning, signature: '' });
  // Where a stream has it: reasoning details come before the text (never after it: a client takes an
  // answer's last block for its text, as Claude Code does), a call's extras with the call.
  const carried = carriedStateOf(reply);
  const carrier = carried && { type: 'thinking', thinking: '', signature: carrierOf(carried) };
  if (carrier !== undefined && carried?.message !== undefined) blocks.push(carrier);
  if (text !== '') blocks.push({ type: 'text', text });
  if (carrier !== undefined && carried?.message === undefined) blocks.push(carrier);
  for (const call of (reply.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function ?? {}) as Json;
    blocks.push({ type: 'tool_use', id: call.id, name: fn.name, input: toolInputOf(fn.arguments) });
  }
  return blocks;
}

/** A whole chat completion as an Anthropic message. */
export function messageOf(completion: Json, meta: { id: string; model: string }): Json {
  const choice = ((completion.choices as Json[] | undefined) ?? [])[0] ?? {};
  const reply = (choice.message ?? { role: 'assistant', content: '' }) as Json;
  const finish = typeof choice.finish_reason === 'string' ? choice.finish_reason : 'stop';
  // Claude's own stop where chat has no word for it (anthropic-wire.ts): pause_turn, compaction…
  const unsaid = choice.ctxgate_anthropic_stop as Json | undefined;
  return {
    id: meta.id,
    type: 'message',
    role: 'assistant',
    model: meta.model,
    content: blocksOfReply(reply),
    stop_reason:
      unsaid?.stop_reason ??
      stopReasonOf(finish, Array.isArray(reply.tool_calls) && reply.tool_calls.length > 0),
    stop_sequence: unsaid?.stop_sequence ?? null,
    usage: usageOf(completion.usage as Json | undefined),
  };
}

/**
 * A bridged compaction's answer (bridge.ts BridgedMessages.compaction) as Claude answers one: the summary
 * the model wrote (after any thinking) as one `compaction` block, stop reason `compaction`. An answer cut
 * short or of no text is no summary: it goes as it is, and the client keeps its history (as Anthropic's
 * own compaction that ends another way).
 */
export function compactionMessageOf(message: Json): Json {
  const blocks = (message.content as Json[] | undefined) ?? [];
  const summary = withoutThinking(
    blocks
      .filter((block) => block.type === 'text')
      .map((block) => String(block.text))
      .join(''),
  ).trim();
  if (summary === '' || message.stop_reason !== 'end_turn') return message;
  return Object.assign({}, message, {
    content: [{ type: 'compaction', content: summary }],
    stop_reason: 'compaction',
  });
}

/** A whole message as Anthropic streams one (a compaction asked for as a stream, read whole): its events. */
export function messageEvents(message: Json): string {
  const usage = (message.usage ?? {}) as Json;
  let out = typedEvent('message_start', '', {
    message: Object.assign({}, message, {
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: Object.assign({}, usage, { output_tokens: 0 }),
    }),
  });
  ((message.content as Json[] | undefined) ?? []).forEach((block, index) => {
    out += typedEvent('content_block_start', '', { index, content_block: block });
    out += typedEvent('content_block_stop', '', { index });
  });
  return (
    out +
    typedEvent('message_delta', '', {
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence ?? null },
      usage: Object.assign({ input_tokens: 0, output_tokens: 0 }, usage),
    }) +
    typedEvent('message_stop', '', {})
  );
}

type OpenBlock = { kind: 'text' | 'thinking' | 'tool' | 'unsaid'; index: number; call?: number };

/**
 * A chat completion stream as Anthropic's event sequence, event by event. From Claude, what chat has no
 * word for comes as the events it was (`ctxgate_anthropic_event`: a server tool's use and result, a
 * compaction, redacted thinking, a text's citations) and goes as it came, at this stream's block index;
 * a stop chat cannot say (`ctxgate_anthropic_stop`: pause_turn, compaction, the stop sequence that matched)
 * ends the message.
 */
export class MessagesStreamTranslator {
  private readonly utf8 = new StringDecoder('utf8');
  private readonly sse = new SseDecoder();
  private open: OpenBlock | undefined;
  private nextIndex = 0;
  private finish: string | undefined;
  /** Claude's own stop, when chat has no word for it. */
  private unsaidStop: Json | undefined;
  private usage: Json | undefined;
  private ended = false;
  /** True once an error event was sent: the stream ends without message_stop. */
  failed = false;
  /** The name the provider gave its reasoning, once some came. */
  reasoningField: ReasoningField | undefined;
  /** The provider's calls, however its deltas say them (tool-call-shape.ts). */
  private readonly calls = new StreamedToolCalls();
  /** OpenRouter's `reasoning_details`, joined as they come (reply-assembler.ts); true while some came since last carried. */
  private readonly reasoningDetails: Json[] = [];
  private detailsPending = false;

  constructor(
    private readonly meta: { id: string; model: string },
    private readonly inputTokens: number,
  ) {}

  private event(type: string, fields: Json): string {
    return typedEvent(type, '', fields);
  }

  /**
   * A content_block_delta of the open block, as `event` writes it, with only the delta's value
   * serialized: a stream has one per chunk (callgrind, `npm run bench -- instructions`, docs/operations.md).
   */
  private blockDelta(deltaType: string, key: string, value: string): string {
    return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${this.open?.index ?? 0},"delta":{"type":"${deltaType}","${key}":${JSON.stringify(value)}}}\n\n`;
  }

  start(): string {
    return (
      this.event('message_start', {
        message: {
          id: this.meta.id,
          type: 'message',
          role: 'assistant',
          model: this.meta.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: this.inputTokens, output_tokens: 0 },
        },
      }) + this.event('ping', {})
    );
  }

  push(bytes: Buffer | string): string {
    const text = typeof bytes === 'string' ? bytes : this.utf8.write(bytes);
    let out = '';
    for (const { data } of this.sse.push(text)) {
      if (data === '') continue;
      if (data === '[DONE]') {
        out += this.finishEvents();
        continue;
      }
      let chunk: Json;
      try {
        chunk = JSON.parse(data) as Json;
      } catch {
        continue;
      }
      if (isRecord(chunk)) out += this.translate(chunk);
    }
    return out;
  }

  private close(): string {
    if (this.open === undefined) return '';
    const index = this.open.index;
    this.open = undefined;
    return this.event('content_block_stop', { index });
  }

  private openBlock(kind: OpenBlock['kind'], block: Json, call?: number): string {
    let out = this.close();
    this.open = { kind, index: this.nextIndex++, ...(call === undefined ? {} : { call }) };
    out += this.event('content_block_start', { index: this.open.index, content_block: block });
    return out;
  }

  private translate(chunk: Json): string {
    const error = streamedErrorOf(chunk);
    if (error !== undefined) {
      if (this.failed || this.ended) return '';
      this.failed = true;
      const type = error.type !== undefined && error.type.endsWith('_error') ? error.type : 'api_error';
      return this.event('error', { error: { type, message: anthropicMessageText(error.message) } });
    }
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage as Json;
    const choice = firstChoice(chunk);
    if (choice === undefined) return '';
    if (saysFinish(choice.finish_reason)) this.finish = choice.finish_reason;
    const delta = choice.delta as Json;
    if (delta.ctxgate_anthropic_stop !== undefined) this.unsaidStop = delta.ctxgate_anthropic_stop as Json;
    if (delta.ctxgate_anthropic_event !== undefined)
      return this.unsaidEvent(delta.ctxgate_anthropic_event as Json);
    let out = '';
    const reasoning = reasoningOf(delta);
    if (reasoning !== undefined) {
      this.reasoningField = reasoning.field;
      if (this.open?.kind !== 'thinking')
        out += this.openBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
      out += this.blockDelta('thinking_delta', 'thinking', reasoning.text);
    }
    if (delta.reasoning_details !== undefined) {
      addReasoningDetails(this.reasoningDetails, delta.reasoning_details);
      this.detailsPending = true;
    }
    if (typeof delta.ctxgate_anthropic_signature === 'string' && this.open?.kind === 'thinking')
      out += this.blockDelta('signature_delta', 'signature', delta.ctxgate_anthropic_signature);
    // Content as a string, or as chunks (Mistral's reasoning models): their thinking as thinking.
    const { text, thinking } = chunkTexts(delta.content);
    if (thinking !== '') {
      if (this.open?.kind !== 'thinking')
        out += this.openBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
      out += this.blockDelta('thinking_delta', 'thinking', thinking);
    }
    if (text !== '') {
      // The reasoning details that came before the text, before it (a client takes the last block for it).
      if (this.open?.kind !== 'text')
        out += this.carrierBlock([]) + this.openBlock('text', { type: 'text', text: '' });
      out += this.blockDelta('text_delta', 'text', text);
    }
    // What each delta says of a call, as text; a null is what it did not say (tool-call-shape.ts).
    for (const entry of Array.isArray(delta.tool_calls) ? (delta.tool_calls as unknown[]) : []) {
      const said = toolCallDelta(entry);
      if (said === undefined) continue;
      const { call, arguments: added } = this.calls.take(said, chunk);
      const { position, id } = call;
      // What the provider gave to be sent back, in a block of its own before the call's: its extras come
      // with its first delta, the reasoning details came before it.
      out += this.carrierBlock([{ id, extra_content: said.extraContent }]);
      if (this.open?.kind !== 'tool' || this.open.call !== position)
        out += this.openBlock('tool', { type: 'tool_use', id, name: call.name, input: {} }, position);
      if (added !== '') out += this.blockDelta('input_json_delta', 'partial_json', added);
    }
    return out;
  }

  /**
   * An event of Claude's stream as it came, at this stream's index: a block's start opens one of its own,
   * its deltas and stop go to it; a delta of a block this stream opened (a text's citations) goes to that.
   */
  private unsaidEvent(event: Json): string {
    if (event.type === 'content_block_start') return this.openBlock('unsaid', event.content_block as Json);
    if (this.open === undefined) return '';
    if (event.type === 'content_block_stop') return this.open.kind === 'unsaid' ? this.close() : '';
    return this.event(String(event.type), { index: this.open.index, delta: event.delta });
  }

  /**
   * A thinking block of no text whose signature carries `calls`' extras and the reasoning details not
   * carried yet; '' when there is nothing to carry.
   */
  private carrierBlock(calls: Json[]): string {
    const carried = carriedStateOf({
      tool_calls: calls,
      reasoning_details: this.detailsPending
        ? this.reasoningDetails.filter((entry) => entry !== undefined)
        : undefined,
    });
    if (carried === undefined) return '';
    this.detailsPending = false;
    return (
      this.openBlock('thinking', { type: 'thinking', thinking: '', signature: '' }) +
      this.blockDelta('signature_delta', 'signature', carrierOf(carried)) +
      this.close()
    );
  }

  private finishEvents(): string {
    if (this.ended || this.failed) return '';
    this.ended = true;
    // A stream that reported no usage (a provider that takes no stream_options) keeps the gateway's
    // count of the prompt that message_start gave: the SDKs take the last input_tokens they see. One that
    // did says what the prompt cache held and was written here, as Anthropic's does: Claude Code takes a
    // turn's usage from this event, and counted no cache read at all without them (BerriAI/litellm#24850).
    const usage =
      this.usage === undefined ? { input_tokens: this.inputTokens, output_tokens: 0 } : usageOf(this.usage);
    return (
      this.close() +
      // Reasoning details that came after the text and the calls.
      this.carrierBlock([]) +
      this.event('message_delta', {
        delta: {
          stop_reason:
            this.unsaidStop?.stop_reason ?? stopReasonOf(this.finish ?? 'stop', this.calls.calls.length > 0),
          stop_sequence: this.unsaidStop?.stop_sequence ?? null,
        },
        usage,
      }) +
      this.event('message_stop', {})
    );
  }

  /** What ends the stream when the chat stream ended without [DONE] (nothing after an error). */
  end(): string {
    return this.finishEvents();
  }
}
