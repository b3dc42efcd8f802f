// A chat stream's tool calls given to the client in OpenAI's shape, whatever dialect the provider streams
// them in (docs/budgeting.md#tool-calls-as-providers-give-them): each call at an index of its own, its
// id, type and name on its first delta only, its arguments on the rest. Gemini's OpenAI-compatible
// endpoint puts parallel calls all at index 0 and MiniMax on NVIDIA NIM repeats the whole name on every
// delta: the official clients join the one and double the other, so an agent on such a provider ran one
// call with arguments that are not JSON, or a tool it does not have. A call the provider gave no id is
// given the one the session stores (tool-call-ids.ts answerCallId). Only events that carry `tool_calls`
// are read; one already in OpenAI's shape is passed on byte for byte.

import { ChunkEnvelope } from './chunk-envelope.js';
import {
  argumentsText,
  chatChunkOf,
  finishOfCalls,
  isRecord,
  saysFinish,
  StreamedToolCalls,
  toolCallDelta,
} from './tool-call-shape.js';

const toolCallsKey = Buffer.from('"tool_calls"');
const finishKey = Buffer.from('"finish_reason":');

/** Whether whole events say a finish (not null), as compact JSON writes it or with a space. */
function saysAnyFinish(events: Buffer): boolean {
  for (let at = events.indexOf(finishKey); at !== -1; at = events.indexOf(finishKey, at + finishKey.length)) {
    const next = at + finishKey.length;
    if (events[next] === 0x22 || (events[next] === 0x20 && events[next + 1] === 0x22)) return true;
  }
  return false;
}
const finishNamed = /"finish_reason":\s?"(\w{0,40})"/;

/** How OpenAI begins the first choice's delta of one call's arguments, up to the call's index. */
const continuationHead = '"choices":[{"index":0,"delta":{"tool_calls":[{"index":';
/**
 * The first choice's delta of one call's arguments, as OpenAI writes it (most events of a call): read
 * without parsing the chunk. Groups: the call's index, the arguments' JSON string.
 */
const openAIContinuation = new RegExp(
  `${continuationHead.replace(/[[\]{}]/g, '\\$&')}(\\d{1,9}),"function":\\{"arguments":("(?:[^"\\\\]|\\\\.)*")\\}\\}\\]`,
);

/** Rewrites the tool calls of a chat stream's events, event by event, keeping each choice's calls. */
export class ChatStreamCallNormalizer {
  /** Each choice's calls so far, by the choice's index. */
  private readonly choices = new Map<number, StreamedToolCalls>();
  /** Each chunk's envelope (id, `object`, role, `choices`) as strict clients take it. */
  private readonly envelope = new ChunkEnvelope();

  /**
   * `events`: whole events (relay.ts's EventBoundaryBuffer), their calls in OpenAI's shape, each
   * choice's finish as its calls say it (tool-call-shape.ts finishOfCalls) and each chunk in the envelope
   * strict clients take (chunk-envelope.ts). The same buffer when nothing changed.
   */
  rewrite(events: Buffer): Buffer {
    this.envelope.see(events);
    const finishes = saysAnyFinish(events);
    if (finishes) this.envelope.finish();
    if (events.indexOf(toolCallsKey) === -1 && !finishes && this.envelope.fits(events)) return events;
    const lines = events.toString('utf8').split('\n');
    let changed = false;
    for (let position = 0; position < lines.length; position++) {
      const line = lines[position] as string;
      if (!line.startsWith('data:') || line.slice(5).trim() === '[DONE]') continue;
      const shaped = this.rewriteLine(line);
      const rewritten = this.envelope.conform(shaped ?? line) ?? shaped;
      if (rewritten === undefined) continue;
      lines[position] = rewritten;
      changed = true;
    }
    return changed ? Buffer.from(lines.join('\n')) : events;
  }

  /** One event's line written anew: its calls, then its finish; undefined when it stays as it is. */
  private rewriteLine(line: string): string | undefined {
    let out: string | undefined;
    if (line.includes('"tool_calls"')) {
      const continued = this.rewriteContinuation(line);
      if (continued !== null) out = continued;
      else {
        const rewritten = this.rewriteData(line.slice(5).trim());
        if (rewritten !== undefined) out = `data: ${rewritten}${line.endsWith('\r') ? '\r' : ''}`;
      }
    }
    const current = out ?? line;
    const said = finishNamed.exec(current)?.[1];
    // OpenAI's own (a text that stops, an answer cut or filtered) is not read again.
    if (
      said === undefined ||
      said === 'length' ||
      said === 'content_filter' ||
      (said === 'stop' && this.choices.size === 0)
    )
      return out;
    return this.rewriteFinish(current) ?? out;
  }

  /** An event's line with each choice's finish as its calls say it; undefined when none changes. */
  private rewriteFinish(line: string): string | undefined {
    const chunk = chatChunkOf(line.slice(5).trim());
    if (chunk === undefined) return undefined;
    let changed = false;
    for (const choice of chunk.choices) {
      if (!isRecord(choice)) continue;
      // `""` or `"null"` before the last chunk (tool-call-shape.ts saysFinish): null, as OpenAI says it.
      if (!saysFinish(choice.finish_reason)) {
        if (typeof choice.finish_reason !== 'string') continue;
        choice.finish_reason = null;
        changed = true;
        continue;
      }
      const calls = this.choices.get(typeof choice.index === 'number' ? choice.index : 0);
      // A call of no arguments is given them as OpenAI gives them, `{}` (tool-call-shape.ts argumentsText),
      // in the event that finishes its choice.
      const blank = (calls?.calls ?? []).filter((call) => call.arguments.trim() === '');
      if (blank.length > 0) {
        const delta = isRecord(choice.delta) ? choice.delta : (choice.delta = {});
        const given = Array.isArray(delta.tool_calls) ? (delta.tool_calls as unknown[]) : [];
        const none = argumentsText(undefined);
        delta.tool_calls = [
          ...given,
          ...blank.map((call) => ({ index: call.position, function: { arguments: none } })),
        ];
        for (const call of blank) call.arguments += none;
        changed = true;
      }
      const finish = finishOfCalls(choice.finish_reason, (calls?.calls.length ?? 0) > 0);
      if (finish === undefined) continue;
      choice.finish_reason = finish;
      changed = true;
    }
    return changed ? `data: ${JSON.stringify(chunk)}${line.endsWith('\r') ? '\r' : ''}` : undefined;
  }

  /**
   * An event of OpenAI's shape that carries a piece of one call's arguments, taken without parsing the
   * chunk: undefined when its index is the call's (the line stays as it is), the line with the call's
   * index otherwise; null when the event is not of that shape (rewriteData reads it).
   */
  private rewriteContinuation(line: string): string | undefined | null {
    const match = openAIContinuation.exec(line);
    if (match === null || line.indexOf('"tool_calls"', match.index + continuationHead.length) !== -1)
      return null;
    const said = match[1] as string;
    let added: string;
    try {
      added = JSON.parse(match[2] as string) as string;
    } catch {
      return null;
    }
    const delta = {
      index: Number(said),
      id: undefined,
      type: undefined,
      name: undefined,
      arguments: added,
      extraContent: undefined,
    };
    const calls = this.callsOf(0);
    // A call it begins is given an id made from the chunk: read whole.
    if (calls.wouldBegin(delta)) return null;
    const step = calls.take(delta);
    const { position } = step.call;
    if (position === Number(said) && step.arguments === added) return undefined;
    const at = match.index + continuationHead.length;
    // The arguments as they add to the call's (tool-call-shape.ts addedArguments): the group's place.
    const argumentsEnd = match.index + match[0].length - '}}]'.length;
    const argumentsAt = argumentsEnd - (match[2] as string).length;
    return (
      line.slice(0, at) +
      String(position) +
      line.slice(at + said.length, argumentsAt) +
      JSON.stringify(step.arguments) +
      line.slice(argumentsEnd)
    );
  }

  private callsOf(choice: number): StreamedToolCalls {
    let calls = this.choices.get(choice);
    if (calls === undefined) {
      calls = new StreamedToolCalls(choice);
      this.choices.set(choice, calls);
    }
    return calls;
  }

  /** One event's data written anew, or undefined when its calls are in OpenAI's shape already. */
  private rewriteData(data: string): string | undefined {
    const chunk = chatChunkOf(data);
    if (chunk === undefined) return undefined;
    let changed = false;
    for (const choice of chunk.choices) {
      if (!isRecord(choice) || !isRecord(choice.delta) || !Array.isArray(choice.delta.tool_calls)) continue;
      const calls = this.callsOf(typeof choice.index === 'number' ? choice.index : 0);
      const given = choice.delta.tool_calls as unknown[];
      const shaped: unknown[] = [];
      for (const entry of given) {
        const said = toolCallDelta(entry);
        if (said === undefined) continue;
        const step = calls.take(said, chunk);
        const {
          index: _index,
          id: _id,
          type: _type,
          function: _function,
          ...rest
        } = entry as Record<string, unknown>;
        const { call } = step;
        const openAI: Record<string, unknown> = { index: call.position };
        if (step.began) {
          openAI.id = call.id;
          openAI.type = call.type;
          openAI.function = { name: call.name, arguments: step.arguments };
        } else openAI.function = { arguments: step.arguments };
        shaped.push(Object.assign(openAI, rest));
      }
      if (JSON.stringify(shaped) === JSON.stringify(given)) continue;
      choice.delta.tool_calls = shaped;
      changed = true;
    }
    return changed ? JSON.stringify(chunk) : undefined;
  }
}
