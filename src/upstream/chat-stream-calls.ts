// A chat stream's tool calls given to the client in OpenAI's shape, whatever dialect the provider streams
// them in (docs/budgeting.md#tool-calls-as-providers-give-them): each call at an index of its own, its
// id, type and name on its first delta only, its arguments on the rest. Gemini's OpenAI-compatible
// endpoint puts parallel calls all at index 0 and MiniMax on NVIDIA NIM repeats the whole name on every
// delta: the official clients join the one and double the other, so an agent on such a provider ran one
// call with arguments that are not JSON, or a tool it does not have. A call the provider gave no id is
// given the one the session stores (tool-call-ids.ts answerCallId). Only events that carry `tool_calls`
// are read; one already in OpenAI's shape is passed on byte for byte.

import { randomUUID } from 'node:crypto';
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
/** A finish said (not null), as compact JSON writes it and as some servers write it with a space. */
const finishSaid = [Buffer.from('"finish_reason":"'), Buffer.from('"finish_reason": "')];
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
  /**
   * The id the stream's chunks are given when its first chunk has none (OpenVINO's model server:
   * openvinotoolkit/model_server#3553), which strict clients refuse (64bit/async-openai#408,
   * spring-projects/spring-ai#6928); '' when it has its own, undefined until its first chunk came.
   */
  private madeId: string | undefined;
  /**
   * The first chunk's line when it has its own id: what a later chunk without one is given (its id,
   * `object`, `created` and `model`), read only then — OpenCode's Zen ends its streams with an event of
   * its cost alone, `{"choices":[],"cost":"0"}` (anomalyco/opencode#39061).
   */
  private firstLine: string | undefined;

  /**
   * `events`: whole events (relay.ts's EventBoundaryBuffer), their calls in OpenAI's shape and each
   * choice's finish as its calls say it (tool-call-shape.ts finishOfCalls). The same buffer when nothing
   * changed.
   */
  rewrite(events: Buffer): Buffer {
    if (this.madeId === undefined) {
      this.madeId = madeIdFor(events);
      if (this.madeId === '') this.firstLine = firstDataLine(events);
    }
    const madeId = this.madeId ?? '';
    if (
      madeId === '' &&
      events.indexOf(toolCallsKey) === -1 &&
      finishSaid.every((key) => events.indexOf(key) === -1) &&
      everyChunkSaysId(events)
    )
      return events;
    const lines = events.toString('utf8').split('\n');
    let changed = false;
    for (let position = 0; position < lines.length; position++) {
      const line = lines[position] as string;
      if (!line.startsWith('data:') || line.slice(5).trim() === '[DONE]') continue;
      const shaped = this.rewriteLine(line);
      const current = shaped ?? line;
      const rewritten =
        madeId === '' && current.includes('"id"')
          ? shaped
          : (withIdGiven(current, () => (madeId === '' ? envelopeOf(this.firstLine) : { id: madeId })) ??
            shaped);
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

/**
 * The id to give a stream's chunks, decided on its first chunk: '' when it says one (the usual case: the
 * line is not parsed), a made one when it says none, undefined while no chunk has come.
 */
function madeIdFor(events: Buffer): string | undefined {
  const at = events.indexOf('data: {');
  if (at === -1) return undefined;
  const end = events.indexOf('\n', at);
  const line = events.toString('utf8', at, end === -1 ? events.length : end);
  return line.includes('"id"') ? '' : `chatcmpl-${randomUUID()}`;
}

const dataField = Buffer.from('data:');
const lineDataField = Buffer.from('\ndata:');
const idKey = Buffer.from('"id"');
const doneKey = Buffer.from('[DONE]');

/**
 * Whether every chunk of whole events says `"id"` on its line (a chunk without one names no id at all):
 * a few indexOf per event, no parse; `[DONE]` is no chunk.
 */
function everyChunkSaysId(events: Buffer): boolean {
  // Most often one event, its id first (OpenAI, vLLM, SGLang): read without a search.
  const end = events.indexOf(0x0a);
  if (end !== -1 && events.length - end <= 4 && startsWithId(events)) return true;
  for (let at = events.indexOf(dataField) === 0 ? 0 : nextDataLine(events, 0); at !== -1;) {
    const end = events.indexOf(0x0a, at);
    const id = events.indexOf(idKey, at);
    const saysId = id !== -1 && (end === -1 || id < end);
    if (!saysId && !events.subarray(at, at + 16).includes(doneKey)) return false;
    if (end === -1) return true;
    at = nextDataLine(events, end);
  }
  return true;
}

const idFirst = Buffer.from('data: {"id"');

/** Whether whole events begin with a chunk whose first member is its id (`data:` and a space or not). */
function startsWithId(events: Buffer): boolean {
  const skip = events[5] === 0x20 ? 0 : 1;
  if (events.length < idFirst.length - skip) return false;
  for (let at = 0; at < idFirst.length; at++) {
    if (at === 5 && skip === 1) continue;
    if (events[at - (at > 5 ? skip : 0)] !== idFirst[at]) return false;
  }
  return true;
}

/** Where the next `data:` line of whole events begins, from `from` on; -1 when none does. */
function nextDataLine(events: Buffer, from: number): number {
  const at = events.indexOf(lineDataField, from);
  return at === -1 ? -1 : at + 1;
}

/** The first `data:` line of whole events. */
function firstDataLine(events: Buffer): string | undefined {
  const at = events.indexOf('data: {');
  if (at === -1) return undefined;
  const end = events.indexOf('\n', at);
  return events.toString('utf8', at, end === -1 ? events.length : end);
}

/** What every chunk of a stream says as its first chunk said it: its id, `object`, `created` and `model`. */
function envelopeOf(firstLine: string | undefined): Record<string, unknown> {
  const first = chatChunkOf(firstLine?.slice(5).trim() ?? '');
  const envelope: Record<string, unknown> = { object: 'chat.completion.chunk' };
  for (const key of ['id', 'object', 'created', 'model'])
    if (first?.[key] !== undefined && first[key] !== null) envelope[key] = first[key];
  return envelope;
}

/**
 * An event's line with the stream's envelope (its id, OpenAI's `object`, and `created` and `model` when
 * known) where its chunk says no id; the chunk's own members are kept. Undefined when it says one.
 */
function withIdGiven(line: string, envelopeOfStream: () => Record<string, unknown>): string | undefined {
  const chunk = chatChunkOf(line.slice(5).trim());
  if (chunk === undefined || typeof chunk.id === 'string') return undefined;
  const envelope = envelopeOfStream();
  if (typeof envelope.id !== 'string') return undefined;
  const given = Object.assign({ id: envelope.id, object: 'chat.completion.chunk' }, envelope, chunk, {
    id: envelope.id,
  });
  return `data: ${JSON.stringify(given)}${line.endsWith('\r') ? '\r' : ''}`;
}
