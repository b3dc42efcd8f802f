// The recall tool's calls in an upstream answer (docs/budgeting.md#recall), before the client sees it:
// whether a stream leads with a recall call (the gateway answers it and asks again) or with something
// for the client (it is relayed, any later recall call taken out of it), and the same for a whole
// answer. The client never sees a call to the tool. Pure (Buffer is the only Node global it uses).
import { isRecallCall } from '../context/recall.js';
import { EventBoundaryBuffer, SseDecoder } from './sse.js';
import { saysFinish } from './tool-call-shape.js';

interface DeltaToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface StreamChunk {
  choices?: Array<{
    index?: number;
    delta?: { content?: unknown; refusal?: unknown; tool_calls?: DeltaToolCall[] };
    finish_reason?: string | null;
  }>;
}

/**
 * What a stream starts with, read as it arrives: a recall call before anything for the client
 * ('recall'), content, a refusal or a call of the client's own tools first ('client'), or neither yet
 * ('undecided'); reasoning and empty deltas decide nothing. A stream that ended, or is not a chat
 * stream, is the client's.
 */
export class StreamLead {
  private readonly decoder = new SseDecoder();
  private readonly text = new TextDecoder();
  lead: 'recall' | 'client' | 'undecided' = 'undecided';

  push(bytes: Uint8Array): StreamLead['lead'] {
    if (this.lead !== 'undecided') return this.lead;
    for (const event of this.decoder.push(this.text.decode(bytes, { stream: true }))) {
      this.lead = leadOf(event.data);
      if (this.lead !== 'undecided') break;
    }
    return this.lead;
  }
}

function leadOf(data: string): StreamLead['lead'] {
  if (data === '[DONE]') return 'client';
  let chunk: StreamChunk;
  try {
    chunk = JSON.parse(data) as StreamChunk;
  } catch {
    return 'client';
  }
  if (typeof chunk !== 'object' || chunk === null || !Array.isArray(chunk.choices)) return 'client';
  for (const choice of chunk.choices) {
    const delta = choice.delta ?? {};
    for (const call of delta.tool_calls ?? []) {
      if (call.function?.name === undefined || call.function.name === '') continue;
      return isRecallCall(call) ? 'recall' : 'client';
    }
    if ((typeof delta.content === 'string' && delta.content !== '') || typeof delta.refusal === 'string')
      return 'client';
    if (saysFinish(choice.finish_reason)) return 'client';
  }
  return 'undecided';
}

/**
 * Takes the recall calls out of a stream relayed to the client: their deltas go, the client's own calls
 * are numbered from 0 as if they were alone, and a finish by tool calls with none of the client's left
 * becomes a plain stop. Events without tool calls pass byte for byte.
 */
export class RecallDeltaFilter {
  private readonly boundaries = new EventBoundaryBuffer();
  /** The index each upstream tool call has for the client; undefined for a recall call. */
  private readonly indexes = new Map<number, number | undefined>();
  private clientCalls = 0;
  /** Recall calls taken out. */
  removed = 0;

  push(chunk: Buffer): Buffer | undefined {
    const complete = this.boundaries.push(chunk);
    return complete === undefined ? undefined : this.rewrite(complete);
  }

  end(): Buffer | undefined {
    const rest = this.boundaries.flush();
    return rest === undefined ? undefined : this.rewrite(rest);
  }

  private rewrite(events: Buffer): Buffer {
    const text = events.toString('utf8');
    if (!text.includes('"tool_calls"') && !(this.removed > 0 && text.includes('"finish_reason"')))
      return events;
    const parts = text.split(/(\r\n\r\n|\n\n|\r\r)/);
    let changed = false;
    for (let index = 0; index < parts.length; index += 2) {
      const event = parts[index] as string;
      const rewritten = this.rewriteEvent(event);
      if (rewritten !== event) {
        parts[index] = rewritten;
        changed = true;
      }
    }
    return changed ? Buffer.from(parts.join('')) : events;
  }

  private rewriteEvent(event: string): string {
    const lines = event.split(/\r\n|\n|\r/);
    const dataLines = lines.filter((line) => line.startsWith('data:'));
    if (dataLines.length === 0) return event;
    const data = dataLines.map((line) => line.slice(line.startsWith('data: ') ? 6 : 5)).join('\n');
    let chunk: StreamChunk;
    try {
      chunk = JSON.parse(data) as StreamChunk;
    } catch {
      return event;
    }
    if (typeof chunk !== 'object' || chunk === null || !Array.isArray(chunk.choices)) return event;
    let changed = false;
    for (const choice of chunk.choices) {
      const delta = choice.delta;
      if (delta?.tool_calls !== undefined) {
        const kept: DeltaToolCall[] = [];
        for (const call of delta.tool_calls) {
          const upstreamIndex = call.index ?? 0;
          if (!this.indexes.has(upstreamIndex)) {
            if (isRecallCall(call)) {
              this.indexes.set(upstreamIndex, undefined);
              this.removed++;
            } else this.indexes.set(upstreamIndex, this.clientCalls++);
          }
          const clientIndex = this.indexes.get(upstreamIndex);
          if (clientIndex === undefined) {
            changed = true;
            continue;
          }
          if (clientIndex !== upstreamIndex) changed = true;
          kept.push(call.index === undefined ? call : Object.assign({}, call, { index: clientIndex }));
        }
        if (kept.length > 0) delta.tool_calls = kept;
        else delete delta.tool_calls;
      }
      if (choice.finish_reason === 'tool_calls' && this.removed > 0 && this.clientCalls === 0) {
        choice.finish_reason = 'stop';
        changed = true;
      }
    }
    if (!changed) return event;
    const others = lines.filter((line) => !line.startsWith('data:'));
    return [...others, `data: ${JSON.stringify(chunk)}`].join('\n');
  }
}

/** A whole chat completion with the recall calls taken out of its message (its finish made a stop when none is left). */
export function completionWithoutRecallCalls(completion: Record<string, unknown>): Record<string, unknown> {
  const choices = completion.choices as
    Array<{ message?: { content?: unknown; tool_calls?: unknown[] }; finish_reason?: unknown }> | undefined;
  const hasRecallCall = (choice: { message?: { tool_calls?: unknown[] } }): boolean =>
    Array.isArray(choice.message?.tool_calls) &&
    choice.message.tool_calls.some((call) => isRecallCall(call as DeltaToolCall));
  if (!Array.isArray(choices) || !choices.some(hasRecallCall)) return completion;
  return Object.assign({}, completion, {
    choices: choices.map((choice) => {
      const calls = choice.message?.tool_calls;
      if (!Array.isArray(calls) || !hasRecallCall(choice)) return choice;
      const kept = calls.filter((call) => !isRecallCall(call as DeltaToolCall));
      const message: Record<string, unknown> = Object.assign({}, choice.message);
      if (kept.length > 0) message.tool_calls = kept;
      else {
        delete message.tool_calls;
        if (message.content === null || message.content === undefined) message.content = '';
      }
      return Object.assign({}, choice, {
        message,
        finish_reason:
          kept.length === 0 && choice.finish_reason === 'tool_calls' ? 'stop' : choice.finish_reason,
      });
    }),
  });
}
