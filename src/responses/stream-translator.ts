// A chat completion stream translated into the Responses event sequence as it arrives (no buffering):
// response.created and .in_progress first, then per output item .output_item.added, the text or the
// function call arguments as deltas, their .done events and .output_item.done, and at the end
// response.completed (or .incomplete) with the usage — each event with its sequence_number. The model's
// reasoning (`reasoning_content` or `reasoning`) is a reasoning item of reasoning_text, its text as
// .reasoning_text.delta and .done. A call of a custom tool (bridge.ts customAsFunction) is a
// custom_tool_call item whose input is known only once its arguments are whole: its
// .custom_tool_call_input.delta and .done come with the closing events; a call of the client's tool
// search is a tool_search_call item, its arguments given whole at its .output_item.done, and the first
// call of a deferred tool no search loaded comes after the search items that load it, each given whole;
// a call of a tool the client runs (shell, apply_patch: local-tools.ts) is added only with the closing
// events, whole, as its shell_call or apply_patch_call.
// What the provider gives to be sent back — a call's `extra_content` (Gemini's thought signature), the
// message's `reasoning_details` (OpenRouter's) — goes in a reasoning item of encrypted content only,
// opened where the first of it comes and whole at its .output_item.done (bridge.ts carrierItemOf), and
// stays in the stored reply.
import { StringDecoder } from 'node:string_decoder';
import { chunkTexts } from '../upstream/content-chunks.js';
import { reasoningOf, type ReasoningField } from '../upstream/reasoning-field.js';
import { addReasoningDetails, firstChoice } from '../upstream/reply-assembler.js';
import {
  isRecord,
  saysFinish,
  StreamedToolCalls,
  toolCallDelta,
  type ToolCallDelta,
} from '../upstream/tool-call-shape.js';
import { SseDecoder, typedEvent } from '../upstream/sse.js';
import { streamedErrorOf } from '../upstream/upstream-error-body.js';
import {
  callIdPrefix,
  callItemOf,
  carrierItemOf,
  customInput,
  newId,
  reasoningItemOf,
  responseObject,
  searchItemsOf,
  usageOf,
  responseUsageCounts,
  type ResponseUsageCounts,
  type InputItem,
  type ResponseMeta,
} from './bridge.js';

interface TextItem {
  kind: 'text';
  index: number;
  id: string;
  /** The text's deltas, joined into one when the text is first read whole (`joined`). */
  text: string[];
  /** What every delta event of the item writes between its sequence number and its delta (`deltaEvent`). */
  deltaHead: string;
}

/** The model's reasoning (a chat stream's `reasoning_content` or `reasoning`), as a reasoning item. */
interface ReasoningItem {
  kind: 'reasoning';
  index: number;
  id: string;
  text: string[];
  deltaHead: string;
}

interface CallItem {
  kind: 'call';
  index: number;
  id: string;
  callId: string;
  name: string;
  /** The arguments' deltas, as `text` above. */
  arguments: string[];
  deltaHead: string;
  /** A custom tool's call: its arguments are not relayed as they come (they wrap its input). */
  custom: boolean;
  /**
   * A call of the client's tool search, or of a tool it runs (shell, apply_patch): its arguments are
   * an object, given whole when it is done.
   */
  search: boolean;
  /**
   * A call of a tool the client runs (shell, apply_patch): added only when done, whole, as a client
   * reads the operation's path and type from the item it is added as.
   */
  local: boolean;
  /** What the provider attached to the call (`extra_content`: Gemini's thought signature). */
  extra?: unknown;
}

/** An item given whole as soon as it is known: a search that loads a deferred tool (bridge.ts searchItemsOf). */
interface WholeItem {
  kind: 'whole';
  index: number;
  item: InputItem;
}

/** The reasoning item that carries what the provider gave to be sent back (bridge.ts carrierItemOf). */
interface CarrierItem {
  kind: 'carrier';
  index: number;
  id: string;
}

/**
 * Deltas joined once into one flat string, kept for the next read. Added up with `+=`, the text would be
 * a string of pieces, and each closing event and the stored response that holds it would go to V8's
 * slow JSON.stringify (flat-string.ts); `join` makes it flat.
 */
function joined(parts: string[]): string {
  if (parts.length > 1) parts.splice(0, parts.length, parts.join(''));
  return parts[0] ?? '';
}

export class ResponsesStreamTranslator {
  private readonly utf8 = new StringDecoder('utf8');
  private readonly sse = new SseDecoder();
  private sequence = 0;
  private readonly items: Array<TextItem | CallItem | ReasoningItem | CarrierItem | WholeItem> = [];
  private text: TextItem | undefined;
  private reasoning: ReasoningItem | undefined;
  /** The name the provider gives its reasoning: the stored reply keeps it, for the chain's next request. */
  private reasoningField: ReasoningField = 'reasoning_content';
  /** The deferred tools this answer loaded (bridge.ts searchItemsOf): once each. */
  private readonly loading = new Set<string>();
  /** The provider's calls, however its deltas say them (tool-call-shape.ts). */
  private readonly streamedCalls = new StreamedToolCalls();
  /** Each call's item, by the call's position among them. */
  private readonly calls = new Map<number, CallItem>();
  /** OpenRouter's `reasoning_details`, joined as they come (reply-assembler.ts). */
  private readonly reasoningDetails: Array<Record<string, unknown>> = [];
  private carrier: CarrierItem | undefined;
  private finishReason: unknown;
  private usage: ResponseUsageCounts = {};
  /** The gateway's count of the prompt sent: the usage's input where the provider reports none. */
  countedPrompt: number | undefined;
  private failed = false;
  /** The error the provider's stream reported, as the Responses API words one (`code` a string or null). */
  private upstreamError: { code: string | null; message: string } | undefined;

  constructor(private readonly meta: ResponseMeta) {}

  private event(type: string, fields: Record<string, unknown>): string {
    return typedEvent(type, `"sequence_number":${this.sequence++}`, fields);
  }

  /**
   * A delta event, as `event` writes it with the item's fields and `delta` (then `tail`), with only the
   * delta serialized: a stream has one per chunk, and serializing the same item fields into each cost
   * more than the rest of the event (callgrind, `npm run bench -- instructions`, docs/operations.md).
   */
  private deltaEvent(
    type: string,
    item: TextItem | CallItem | ReasoningItem,
    delta: string,
    tail: string,
  ): string {
    return `event: ${type}\ndata: {"type":"${type}","sequence_number":${this.sequence++}${item.deltaHead}${JSON.stringify(delta)}${tail}}\n\n`;
  }

  /** The events a stream opens with. */
  start(): string {
    const response = responseObject(this.meta, [], undefined, null, 'in_progress');
    return this.event('response.created', { response }) + this.event('response.in_progress', { response });
  }

  /** The events the chat stream's bytes complete. */
  push(bytes: Buffer | string): string {
    const text = typeof bytes === 'string' ? bytes : this.utf8.write(bytes);
    let out = '';
    for (const { data } of this.sse.push(text)) {
      if (data === '[DONE]' || data === '') continue;
      let chunk: unknown;
      try {
        chunk = JSON.parse(data);
      } catch {
        continue;
      }
      if (isRecord(chunk)) out += this.translate(chunk);
    }
    return out;
  }

  private translate(chunk: Record<string, unknown>): string {
    const error = streamedErrorOf(chunk);
    if (error !== undefined) {
      this.failed = true;
      // OpenRouter numbers its codes (`"code": 400`): a Responses client (the AI SDK) reads a string or null.
      const reported = { code: error.code === undefined ? null : String(error.code), message: error.message };
      this.upstreamError ??= reported;
      return this.event('error', Object.assign({}, reported, { param: null }));
    }
    const usage = chunk.usage as { prompt_tokens?: number; completion_tokens?: number } | undefined | null;
    if (usage) this.usage = responseUsageCounts(usage);
    const choice = firstChoice(chunk);
    if (choice === undefined) return '';
    if (saysFinish(choice.finish_reason)) this.finishReason = choice.finish_reason;
    const delta = choice.delta as {
      content?: unknown;
      tool_calls?: unknown;
      reasoning_details?: unknown;
    };
    let out = '';
    const reasoning = reasoningOf(delta);
    if (reasoning !== undefined) {
      this.reasoningField = reasoning.field;
      out += this.reasoningDelta(reasoning.text);
    }
    if (Array.isArray(delta.reasoning_details) && delta.reasoning_details.length > 0) {
      addReasoningDetails(this.reasoningDetails, delta.reasoning_details);
      out += this.openCarrier();
    }
    if (typeof delta.content === 'string' && delta.content !== '') out += this.textDelta(delta.content);
    else if (Array.isArray(delta.content)) {
      // Content as chunks (Mistral's reasoning models): its thinking as reasoning, its text as text.
      const { text, thinking } = chunkTexts(delta.content);
      if (thinking !== '') out += this.reasoningDelta(thinking);
      if (text !== '') out += this.textDelta(text);
    }
    if (Array.isArray(delta.tool_calls))
      for (const entry of delta.tool_calls as unknown[]) {
        const call = toolCallDelta(entry);
        if (call !== undefined) out += this.callDelta(call, chunk);
      }
    return out;
  }

  private reasoningDelta(delta: string): string {
    let out = '';
    if (this.reasoning === undefined) {
      const index = this.items.length;
      const id = newId('rs');
      const deltaHead = `,"item_id":${JSON.stringify(id)},"output_index":${index},"content_index":0,"delta":`;
      this.reasoning = { kind: 'reasoning', index, id, text: [], deltaHead };
      this.items.push(this.reasoning);
      out += this.event('response.output_item.added', {
        output_index: index,
        item: { id, type: 'reasoning', summary: [], content: [] },
      });
    }
    this.reasoning.text.push(delta);
    return out + this.deltaEvent('response.reasoning_text.delta', this.reasoning, delta, '');
  }

  private textDelta(delta: string): string {
    let out = '';
    if (this.text === undefined) {
      const index = this.items.length;
      const id = newId('msg');
      const deltaHead = `,"item_id":${JSON.stringify(id)},"output_index":${index},"content_index":0,"delta":`;
      this.text = { kind: 'text', index, id, text: [], deltaHead };
      this.items.push(this.text);
      out += this.event('response.output_item.added', {
        output_index: this.text.index,
        item: { id: this.text.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] },
      });
      out += this.event('response.content_part.added', {
        item_id: this.text.id,
        output_index: this.text.index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
    }
    this.text.text.push(delta);
    return out + this.deltaEvent('response.output_text.delta', this.text, delta, ',"logprobs":[]');
  }

  private callDelta(delta: ToolCallDelta, chunk: Record<string, unknown>): string {
    const { call, arguments: added } = this.streamedCalls.take(delta, chunk);
    let item = this.calls.get(call.position);
    let out = '';
    // A call's extras come with its first delta: the item that carries them opens before the call's.
    if (delta.extraContent !== undefined) out += this.openCarrier();
    if (item === undefined) {
      const name = call.name;
      const tool = this.meta.tools?.get(name);
      if (tool?.loads !== undefined && !this.loading.has(name)) {
        this.loading.add(name);
        for (const whole of searchItemsOf(tool)) out += this.wholeItem(whole);
      }
      const index = this.items.length;
      const id = newId(callIdPrefix(tool));
      item = {
        kind: 'call',
        index,
        id,
        callId: call.id,
        name,
        arguments: [],
        deltaHead: `,"item_id":${JSON.stringify(id)},"output_index":${index},"delta":`,
        custom: tool?.custom === true,
        search: tool?.search === true || tool?.local !== undefined,
        local: tool?.local !== undefined,
      };
      this.calls.set(call.position, item);
      this.items.push(item);
      if (!item.local)
        out += this.event('response.output_item.added', {
          output_index: item.index,
          item: this.callObject(item, 'in_progress'),
        });
    }
    // A name given in pieces (tool-call-shape.ts) is whole by the item's end.
    item.name = call.name;
    if (delta.extraContent !== undefined) item.extra = delta.extraContent;
    if (added !== '') {
      item.arguments.push(added);
      if (!item.custom && !item.search)
        out += this.deltaEvent('response.function_call_arguments.delta', item, added, '');
    }
    return out;
  }

  /** An item given whole: added and done at once. */
  private wholeItem(item: InputItem): string {
    const index = this.items.length;
    this.items.push({ kind: 'whole', index, item });
    return (
      this.event('response.output_item.added', { output_index: index, item }) +
      this.event('response.output_item.done', { output_index: index, item })
    );
  }

  /** Opens the item that carries what the provider gave to be sent back, once. */
  private openCarrier(): string {
    if (this.carrier !== undefined) return '';
    this.carrier = { kind: 'carrier', index: this.items.length, id: newId('rs') };
    this.items.push(this.carrier);
    return this.event('response.output_item.added', {
      output_index: this.carrier.index,
      item: { id: this.carrier.id, type: 'reasoning', summary: [] },
    });
  }

  private callObject(item: CallItem, status: string): InputItem {
    // In progress, a custom tool's call has no input yet: its arguments are not whole.
    const args = item.custom && status !== 'completed' ? '' : joined(item.arguments);
    const object = callItemOf(item.id, item.callId, item.name, args, status, this.meta.tools);
    if (item.custom && status !== 'completed') object.input = '';
    return object;
  }

  /** What was produced, as Response output items. */
  output(): InputItem[] {
    return this.items.map((item) =>
      item.kind === 'whole'
        ? item.item
        : item.kind === 'call'
          ? this.callObject(item, 'completed')
          : item.kind === 'reasoning'
            ? reasoningItemOf(item.id, joined(item.text))
            : item.kind === 'carrier'
              ? (carrierItemOf(item.id, {
                  tool_calls: this.toolCalls(),
                  reasoning_details: this.details(),
                }) as InputItem)
              : {
                  id: item.id,
                  type: 'message',
                  status: 'completed',
                  role: 'assistant',
                  content: [{ type: 'output_text', text: joined(item.text), annotations: [] }],
                },
    );
  }

  /** The assistant's chat message for what was produced (stored with the response). */
  reply(): Record<string, unknown> {
    const calls = this.toolCalls();
    const details = this.details();
    return {
      role: 'assistant',
      content: this.text === undefined ? (calls.length > 0 ? null : '') : joined(this.text.text),
      ...(this.reasoning === undefined ? {} : { [this.reasoningField]: joined(this.reasoning.text) }),
      ...(calls.length === 0 ? {} : { tool_calls: calls }),
      ...(details === undefined ? {} : { reasoning_details: details }),
    };
  }

  /** OpenRouter's `reasoning_details` of the answer; undefined when it gave none. */
  private details(): Array<Record<string, unknown>> | undefined {
    const details = this.reasoningDetails.filter((entry) => entry !== undefined);
    return details.length === 0 ? undefined : details;
  }

  /** The calls produced, as a chat reply's tool calls (with what the provider attached to them). */
  private toolCalls(): Array<Record<string, unknown>> {
    return this.items
      .filter((item): item is CallItem => item.kind === 'call')
      .map((call) => ({
        id: call.callId,
        type: 'function',
        function: { name: call.name, arguments: joined(call.arguments) },
        ...(call.extra === undefined ? {} : { extra_content: call.extra }),
      }));
  }

  get succeeded(): boolean {
    return !this.failed && this.finishReason !== undefined;
  }

  /** The closing events of an answer that cannot be kept (it could not be stored): an error, then response.failed. */
  fail(code: string, message: string): string {
    const failed = Object.assign(
      {},
      responseObject(this.meta, this.output(), this.finishReason, usageOf(this.reportedUsage())),
      { status: 'failed', error: { code, message } },
    );
    return (
      this.event('error', { code, message, param: null }) +
      this.event('response.failed', { response: failed })
    );
  }

  /** The usage the provider reported, its prompt counted by the gateway when it reported none. */
  private reportedUsage(): ResponseUsageCounts {
    return this.usage.promptTokens === undefined
      ? Object.assign({}, this.usage, { promptTokens: this.countedPrompt })
      : this.usage;
  }

  /** The closing events: every item done, then response.completed (or .incomplete / .failed). */
  finish(): { events: string; response: Record<string, unknown> } {
    let out = '';
    // A function call of no arguments is given them as OpenAI gives them, `{}` (tool-call-shape.ts
    // argumentsText).
    for (const item of this.items)
      if (
        item.kind === 'call' &&
        !item.custom &&
        !item.search &&
        !item.local &&
        joined(item.arguments).trim() === ''
      ) {
        item.arguments.push('{}');
        out += this.deltaEvent('response.function_call_arguments.delta', item, '{}', '');
      }
    const output = this.output();
    for (const item of this.items) {
      if (item.kind === 'whole') continue;
      if (item.kind === 'carrier') {
        // Nothing streamed: its content is whole only now.
      } else if (item.kind === 'reasoning') {
        out += this.event('response.reasoning_text.done', {
          item_id: item.id,
          output_index: item.index,
          content_index: 0,
          text: joined(item.text),
        });
      } else if (item.kind === 'text') {
        const text = joined(item.text);
        const part = { type: 'output_text', text, annotations: [] };
        out += this.event('response.output_text.done', {
          item_id: item.id,
          output_index: item.index,
          content_index: 0,
          text,
          logprobs: [],
        });
        out += this.event('response.content_part.done', {
          item_id: item.id,
          output_index: item.index,
          content_index: 0,
          part,
        });
      } else if (item.local) {
        out += this.event('response.output_item.added', {
          output_index: item.index,
          item: output[item.index],
        });
      } else if (item.custom) {
        const input = customInput(joined(item.arguments));
        out += this.deltaEvent('response.custom_tool_call_input.delta', item, input, '');
        out += this.event('response.custom_tool_call_input.done', {
          item_id: item.id,
          output_index: item.index,
          input,
        });
      } else if (!item.search) {
        out += this.event('response.function_call_arguments.done', {
          item_id: item.id,
          output_index: item.index,
          arguments: joined(item.arguments),
        });
      }
      out += this.event('response.output_item.done', {
        output_index: item.index,
        item: output[item.index],
      });
    }
    const response = responseObject(this.meta, output, this.finishReason, usageOf(this.reportedUsage()));
    if (this.failed || this.finishReason === undefined) {
      const failed = Object.assign({}, response, {
        status: 'failed',
        error: this.upstreamError ?? { code: 'server_error', message: 'The answer was cut off.' },
      });
      return { events: out + this.event('response.failed', { response: failed }), response: failed };
    }
    const type = response.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    return { events: out + this.event(type, { response }), response };
  }
}

/**
 * The event sequence of a response made whole before its first event (a compaction, asked for as a
 * stream): created and in progress, each output item added and done, then completed (or incomplete).
 */
export function wholeResponseEvents(meta: ResponseMeta, response: Record<string, unknown>): string {
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>): string =>
    typedEvent(type, `"sequence_number":${sequence++}`, fields);
  const opened = responseObject(meta, [], undefined, null, 'in_progress');
  let out =
    event('response.created', { response: opened }) + event('response.in_progress', { response: opened });
  (response.output as InputItem[]).forEach((item, index) => {
    out += event('response.output_item.added', { output_index: index, item });
    out += event('response.output_item.done', { output_index: index, item });
  });
  const type = response.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
  return out + event(type, { response });
}
