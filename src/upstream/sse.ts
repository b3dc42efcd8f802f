// Everything the gateway knows about text/event-stream, in one place: the incremental decoder (text in,
// whole events out), event boundaries in raw bytes (so what reaches a client always ends at an event),
// the end of an OpenAI-style chat stream and its usage, a stream's first data event, the error event the
// gateway writes itself, and an upstream's stream read through a rewriter of its events. Pure (Buffer is
// the only Node global it uses).
//
// The decoder is linear in what it is fed: each piece of text is scanned once, and a line that spans
// many pieces is collected as its pieces and joined once when it ends (a 16 MB event costs one pass,
// not one pass per chunk).

import type { UpstreamResponse } from './upstream.js';
import { isRecord } from './tool-call-shape.js';
import { reportsError } from './upstream-error-body.js';

export interface ServerSentEvent {
  event: string | undefined;
  data: string;
}

/**
 * The objects the complete events of `text` carry as JSON, read through `decoder` (which keeps an event
 * cut between two texts until it is whole); what is not a JSON object (`[DONE]`, a comment's empty data)
 * says nothing and is skipped.
 */
export function jsonEventsOf(decoder: SseDecoder, text: string): Array<Record<string, unknown>> {
  const events: Array<Record<string, unknown>> = [];
  for (const { data } of decoder.push(text)) {
    if (data === '') continue;
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      continue;
    }
    if (typeof event === 'object' && event !== null && !Array.isArray(event))
      events.push(event as Record<string, unknown>);
  }
  return events;
}

export class SseDecoder {
  /** The pieces of the line not yet ended. */
  private partial: string[] = [];
  /** The previous piece ended with CR: an LF at the start of the next one belongs to it. */
  private skipLeadingLineFeed = false;
  private dataLines: string[] = [];
  private eventName: string | undefined = undefined;

  /** Returns the events completed by this piece of text. */
  push(text: string): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    let start = 0;
    if (this.skipLeadingLineFeed && text.length > 0) {
      this.skipLeadingLineFeed = false;
      if (text.charCodeAt(0) === 10) start = 1;
    }
    // Line ends found by indexOf, not read character by character: a loop of charCodeAt cost about 40
    // instructions a character (callgrind), 0.5 ms of a Responses stream of 50 chunks (docs/operations.md).
    // A CR is searched for again only while one is ahead (most streams have none).
    let lineFeed = text.indexOf('\n', start);
    let carriageReturn = text.indexOf('\r', start);
    while (lineFeed !== -1 || carriageReturn !== -1) {
      const atReturn = carriageReturn !== -1 && (lineFeed === -1 || carriageReturn < lineFeed);
      const end = atReturn ? carriageReturn : lineFeed;
      this.takeLine(this.lineEndingAt(text, start, end), events);
      start = end + 1;
      if (atReturn) {
        if (start === text.length) this.skipLeadingLineFeed = true;
        else if (lineFeed === start) start++;
        carriageReturn = text.indexOf('\r', start);
      }
      if (lineFeed !== -1 && lineFeed < start) lineFeed = text.indexOf('\n', start);
    }
    if (start < text.length) this.partial.push(start === 0 ? text : text.slice(start));
    return events;
  }

  /** Flushes an event the stream ended without a blank line after. */
  end(): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    if (this.partial.length > 0) this.takeLine(this.lineEndingAt('', 0, 0), events);
    this.skipLeadingLineFeed = false;
    this.takeLine('', events);
    return events;
  }

  private lineEndingAt(text: string, start: number, end: number): string {
    const tail = text.slice(start, end);
    if (this.partial.length === 0) return tail;
    this.partial.push(tail);
    const line = this.partial.join('');
    this.partial = [];
    return line;
  }

  private takeLine(line: string, events: ServerSentEvent[]): void {
    if (line === '') {
      if (this.dataLines.length > 0) events.push({ event: this.eventName, data: this.dataLines.join('\n') });
      this.dataLines = [];
      this.eventName = undefined;
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' starts a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.eventName = value;
  }
}

export function isEventStream(headers: Record<string, string | string[] | undefined>): boolean {
  const contentType = headers['content-type'];
  return typeof contentType === 'string' && contentType.toLowerCase().startsWith('text/event-stream');
}

const doneMarker = Buffer.from('data: [DONE]');
const dataPrefix = Buffer.from('data:');
// A non-null finish_reason, as compact JSON writes it and as some servers write it with a space.
const finishMarkers = [Buffer.from('"finish_reason":"'), Buffer.from('"finish_reason": "')];
// The end of a stream (finish chunk, optional usage chunk, [DONE]) fits well within this many bytes.
const tailBytes = 8192;

/**
 * Whether `bytes` hold `marker` (a finish_reason's opening) followed by a word: `""`, `"null"` and `"None"`
 * are not one (tool-call-shape.ts saysFinish), and a stream of them says them on every chunk, so the search
 * goes on back past them.
 */
function finishSaidIn(bytes: Buffer, marker: Buffer): boolean {
  for (let at = bytes.lastIndexOf(marker); at >= 0; at = at === 0 ? -1 : bytes.lastIndexOf(marker, at - 1)) {
    const value = at + marker.length;
    const word = bytes.subarray(value, value + 5);
    if (bytes[value] !== 0x22 && !word.equals(nullWord) && !word.equals(noneWord)) return true;
  }
  return false;
}
const nullWord = Buffer.from('null"');
const noneWord = Buffer.from('None"');

/**
 * Tells whether an OpenAI-style chat stream reached its end: `data: [DONE]`, or a non-null
 * finish_reason. Both sit at the end of a stream, so only the last few kilobytes are kept (as
 * references to the chunks, without copying) and scanned once when the upstream body ends: relaying
 * stays as cheap as a plain pipe.
 */
export class StreamCompletionTracker {
  private readonly tail: Buffer[] = [];
  private tailLength = 0;
  /** The tail in one buffer, once asked for (the three questions below are asked at the end). */
  private joined: Buffer | undefined;
  /** Whether the tail's last 4 KB hold `_tokens"`, the end of every usage key read here (once asked). */
  private usageKeys: boolean | undefined;

  push(chunk: Buffer): void {
    this.joined = undefined;
    this.usageKeys = undefined;
    this.tail.push(chunk);
    this.tailLength += chunk.length;
    while (this.tail.length > 1 && this.tailLength - (this.tail[0] as Buffer).length >= tailBytes) {
      this.tailLength -= (this.tail.shift() as Buffer).length;
    }
  }

  /** The last `usage.prompt_tokens` in the stream's tail (present with stream_options.include_usage). */
  promptTokens(): number | undefined {
    return this.usage(promptTokensKey);
  }

  /** The last `usage.completion_tokens` in the stream's tail. */
  completionTokens(): number | undefined {
    return this.usage(completionTokensKey);
  }

  /**
   * The tokens an answer of any endpoint reports in its tail: `total_tokens`, else the sum of its
   * prompt and completion (or input and output) tokens; undefined when it reports none.
   */
  totalTokens(): number | undefined {
    const total = this.usage(totalTokensKey);
    if (total !== undefined) return total;
    const prompt = this.usage(promptTokensKey) ?? this.usage(inputTokensKey);
    const completion = this.usage(completionTokensKey) ?? this.usage(outputTokensKey);
    return prompt === undefined && completion === undefined ? undefined : (prompt ?? 0) + (completion ?? 0);
  }

  /**
   * A usage number in the tail. A stream without usage (a chat stream without include_usage, the usual
   * case) is searched once for the keys' common end, not once per key.
   */
  private usage(key: Buffer): number | undefined {
    const end = this.end();
    this.usageKeys ??= end.subarray(Math.max(0, end.length - usageWindowBytes)).lastIndexOf(usageKeyEnd) >= 0;
    return this.usageKeys ? usageNumberIn(end, key) : undefined;
  }

  /**
   * Whether the stream's last data event is the provider's error (`{"error": …}`, vLLM's `"object": "error"`):
   * a stream that ended so was not cut off. Call once the upstream body has ended.
   */
  endedInError(): boolean {
    const end = this.end();
    let at = end.length;
    for (;;) {
      at = end.lastIndexOf(dataPrefix, at - 1);
      if (at <= 0) break;
      if (end[at - 1] === 10) break;
    }
    if (at < 0) return false;
    const text = end.subarray(at + dataPrefix.length).toString('utf8');
    const close = text.indexOf('\n\n');
    try {
      const last = JSON.parse(close < 0 ? text : text.slice(0, close)) as unknown;
      return isRecord(last) && reportsError(last);
    } catch {
      return false;
    }
  }

  /** Call once the upstream body has ended. */
  isComplete(): boolean {
    const end = this.end();
    // Searched from the end, where both markers stand: a forward search would read the whole tail.
    return end.lastIndexOf(doneMarker) >= 0 || finishMarkers.some((marker) => finishSaidIn(end, marker));
  }

  private end(): Buffer {
    this.joined ??= Buffer.concat(this.tail);
    return this.joined;
  }
}

const promptTokensKey = Buffer.from('"prompt_tokens"');
const totalTokensKey = Buffer.from('"total_tokens"');
const inputTokensKey = Buffer.from('"input_tokens"');
const outputTokensKey = Buffer.from('"output_tokens"');
export const completionTokensKey = Buffer.from('"completion_tokens"');
/** How every usage key above ends. */
const usageKeyEnd = Buffer.from('_tokens"');
/** Usage counts only in an answer's last bytes: further back it is not the answer's own. */
const usageWindowBytes = 4096;

/** `usage.prompt_tokens` near the end of an answer (where OpenAI-style bodies put usage), if any. */
export function promptTokensIn(body: Buffer): number | undefined {
  return usageNumberIn(body, promptTokensKey);
}

/** A usage number (`"key": 123`) near the end of an answer, if any. */
export function usageNumberIn(body: Buffer, key: Buffer): number | undefined {
  // Only the last 4 KB are searched: a usage further back is not the answer's own.
  const from = Math.max(0, body.length - usageWindowBytes);
  const found = body.subarray(from).lastIndexOf(key);
  if (found < 0) return undefined;
  const at = from + found;
  let index = at + key.length;
  while (index < body.length && (body[index] === 0x20 || body[index] === 0x3a)) index++;
  let value = 0;
  let digits = 0;
  for (; index < body.length && digits < 12; index++, digits++) {
    const byte = body[index] as number;
    if (byte < 0x30 || byte > 0x39) break;
    value = value * 10 + (byte - 0x30);
  }
  return digits === 0 ? undefined : value;
}

/**
 * Holds back the bytes after the last complete event of a stream, so that what reaches the client
 * always ends at an event boundary: an error event written after an upstream cut then stands on its
 * own, never glued onto half an event. An event ends at a blank line (LF LF, CR LF CR LF or CR CR).
 */
export class EventBoundaryBuffer {
  private pending: Buffer[] = [];
  private pendingLength = 0;

  /** The bytes from the start of what is pending through the last complete event; undefined if none. */
  push(chunk: Buffer): Buffer | undefined {
    const end = lastBoundaryEnd(chunk);
    if (end === -1) {
      // A boundary can straddle the cut: look at the last bytes held with the new chunk's first ones.
      const straddle = this.straddlingBoundaryEnd(chunk);
      if (straddle === -1) {
        this.pending.push(chunk);
        this.pendingLength += chunk.length;
        return undefined;
      }
      return this.take(chunk, straddle);
    }
    return this.take(chunk, end);
  }

  /** Bytes held back when the stream ended: an unfinished event. */
  get heldBytes(): number {
    return this.pendingLength;
  }

  /** What is held, for a stream that ended cleanly without a final blank line. */
  flush(): Buffer | undefined {
    if (this.pendingLength === 0) return undefined;
    const rest = Buffer.concat(this.pending);
    this.pending = [];
    this.pendingLength = 0;
    return rest;
  }

  private take(chunk: Buffer, end: number): Buffer {
    // The usual chunk: whole events and nothing held before them, passed on as it is.
    if (this.pendingLength === 0 && end === chunk.length) return chunk;
    const head = chunk.subarray(0, end);
    const out = this.pendingLength === 0 ? head : Buffer.concat([...this.pending, head]);
    const rest = chunk.subarray(end);
    this.pending = rest.length === 0 ? [] : [rest];
    this.pendingLength = rest.length;
    return out;
  }

  private straddlingBoundaryEnd(chunk: Buffer): number {
    if (this.pendingLength === 0) return -1;
    const last = this.pending[this.pending.length - 1] as Buffer;
    const tail = last.subarray(Math.max(0, last.length - 3));
    const joined = Buffer.concat([tail, chunk.subarray(0, 3)]);
    const end = lastBoundaryEnd(joined);
    // Only a boundary that ends inside the new chunk counts (one inside `tail` was seen before).
    return end > tail.length ? end - tail.length : -1;
  }
}

/**
 * Where the last blank line of `bytes` ends (the index after it), or -1: a line terminator (LF, CR LF
 * or CR) right after another one.
 */
function lastBoundaryEnd(bytes: Buffer): number {
  for (let index = bytes.length - 1; index >= 1; index--) {
    const code = bytes[index] as number;
    if (code !== 10 && code !== 13) continue;
    // The terminator ending here starts one byte earlier when it is CR LF.
    const start = code === 10 && bytes[index - 1] === 13 ? index - 1 : index;
    const before = bytes[start - 1];
    if (before === 10 || before === 13) return index + 1;
    index = start;
  }
  return -1;
}

/**
 * Whether `bytes` end at an event boundary, by lastBoundaryEnd's rule (a line terminator right after
 * another), looking at their last bytes only: where a keep-alive may be written between two events.
 */
export function endsAtEventBoundary(bytes: Buffer | string): boolean {
  const end = bytes.length - 1;
  const last = codeAt(bytes, end);
  if (last !== 10 && last !== 13) return false;
  const start = last === 10 && codeAt(bytes, end - 1) === 13 ? end - 1 : end;
  const before = codeAt(bytes, start - 1);
  return before === 10 || before === 13;
}

/** The code of the character or byte at `index` of `bytes`; -1 before their start. */
function codeAt(bytes: Buffer | string, index: number): number {
  if (index < 0) return -1;
  return typeof bytes === 'string' ? bytes.charCodeAt(index) : (bytes[index] as number);
}

/**
 * An event named `type` whose data is a JSON object: `"type"` first, then `leading` (members already
 * written as JSON, such as `"sequence_number":3`, or ''), then `fields`' own members — what
 * `JSON.stringify({ type, ...fields })` writes (with `leading` after `type`), without building the
 * spread object: copying the fields into it cost more than serializing them (callgrind, Node 26). The
 * fields must not hold `type` or a leading member again.
 */
export function typedEvent(type: string, leading: string, fields: object): string {
  const members = JSON.stringify(fields);
  const head = `{"type":${JSON.stringify(type)}${leading === '' ? '' : `,${leading}`}`;
  return `event: ${type}\ndata: ${head}${members.length > 2 ? `,${members.slice(1)}` : '}'}\n\n`;
}

/** An error event as the gateway writes it into a stream: the OpenAI error body as the event's data. */
export function errorEvent(body: unknown): string {
  return `data: ${JSON.stringify(body)}\n\n`;
}

/**
 * The usage chunk a chat stream ends with when its client asked for one (`stream_options.include_usage`),
 * as OpenAI writes it: no choices, the tokens counted. For a provider that reports none
 * (docs/budgeting.md#usage-a-provider-does-not-report), of the gateway's count.
 */
export function usageEvent(
  id: string,
  model: string,
  createdSeconds: number,
  tokens: { prompt: number; completion: number },
): string {
  const usage = {
    prompt_tokens: tokens.prompt,
    completion_tokens: tokens.completion,
    total_tokens: tokens.prompt + tokens.completion,
  };
  return chatChunkEvent(id, createdSeconds, model, [], usage);
}

/**
 * One chat completion chunk as an event: `choices` (one with its delta and finish, or none beside the
 * usage), with the stream's id, creation time and model. What another wire's stream is read back as.
 */
export function chatChunkEvent(
  id: string,
  createdSeconds: number,
  model: unknown,
  choices: unknown[],
  usage?: Record<string, unknown>,
): string {
  const chunk = { id, object: 'chat.completion.chunk', created: createdSeconds, model, choices };
  return `data: ${JSON.stringify(usage === undefined ? chunk : Object.assign(chunk, { usage }))}\n\n`;
}

/**
 * Data events in whole events' bytes, counted without decoding them: the number of lines that start
 * with `data:` (one per event in every chat stream the gateway has met), `[DONE]` included.
 */
export function countDataEvents(bytes: Buffer): number {
  // Line starts found with indexOf of the newline byte (memchr): a stream's events are small, and a
  // native search for a longer needle costs more per call than the whole event's bytes.
  let count = dataFieldAt(bytes, 0) ? 1 : 0;
  // A newline with fewer than five bytes after it starts no data field: the search stops there.
  const lastStart = bytes.length - 5;
  for (
    let newline = bytes.indexOf(0x0a);
    newline >= 0 && newline < lastStart;
    newline = bytes.indexOf(0x0a, newline + 1)
  )
    if (dataFieldAt(bytes, newline + 1)) count++;
  return count;
}

/** `data:` at `at` (never read past the end: that is slow in V8, and no match anyway). */
function dataFieldAt(bytes: Buffer, at: number): boolean {
  return (
    at + 5 <= bytes.length &&
    bytes[at] === 0x64 && // d
    bytes[at + 1] === 0x61 && // a
    bytes[at + 2] === 0x74 && // t
    bytes[at + 3] === 0x61 && // a
    bytes[at + 4] === 0x3a // :
  );
}

/** Where a chunk's closing `data: [DONE]` event starts, when the chunk ends with one; else -1. */
export function doneMarkerAt(chunk: Buffer): number {
  const tail = chunk.toString('latin1', Math.max(0, chunk.length - 24));
  const match = /data: ?\[DONE\](?:\r?\n){2}$/.exec(tail);
  return match === null ? -1 : chunk.length - tail.length + match.index;
}

/** The first complete event that carries data (comments such as ": keep-alive" are skipped), if any. */
export function firstDataEvent(received: Buffer): string | undefined {
  const text = received.toString('utf8');
  const separator = /\r?\n\r?\n/g;
  let start = 0;
  for (let match = separator.exec(text); match !== null; match = separator.exec(text)) {
    const event = text.slice(start, match.index);
    if (/^(?:data|error):/m.test(event)) return event;
    start = match.index + match[0].length;
  }
  return undefined;
}

/**
 * Whole events with the data of each `data:` line written anew by `rewrite` (given the data and its line;
 * undefined: as it was; null: the event left out, the blank line that ended it with it), and the lines
 * `beforeDone` gives put before a `data: [DONE]`. The same buffer when nothing changed.
 */
export function withDataRewritten(
  events: Buffer,
  rewrite: (data: string, line: string) => string | null | undefined,
  beforeDone: () => string[],
): Buffer {
  const out: string[] = [];
  let changed = false;
  let dropped = false;
  for (const line of events.toString('utf8').split('\n')) {
    if (dropped && (line === '' || line === '\r')) {
      dropped = false;
      continue;
    }
    dropped = false;
    const data = line.startsWith('data:') ? line.slice(5).trim() : undefined;
    if (data === '[DONE]') {
      const before = beforeDone();
      out.push(...before, line);
      changed ||= before.length > 0;
      continue;
    }
    const rewritten = data === undefined ? undefined : rewrite(data, line);
    if (rewritten === undefined) out.push(line);
    else if (rewritten === null) dropped = true;
    else out.push(`data: ${rewritten}${line.endsWith('\r') ? '\r' : ''}`);
    changed ||= rewritten !== undefined;
  }
  return changed ? Buffer.from(out.join('\n')) : events;
}

/** Rewrites a chat stream's whole events as they come, and gives what it still holds at the stream's end. */
export interface EventRewriter {
  /** `events`: whole events. */
  rewrite(events: Buffer): Buffer;
  end(): Buffer | undefined;
}

/**
 * An event stream read through a rewriter (`fresh`, one per reading): each chunk's whole events rewritten
 * as they arrive (an event split across chunks is held until whole), what is left at the end after them.
 * `peek` looks at the first events as the caller wants them seen (as the upstream gave them, by default).
 */
export function withEventsRewritten(
  response: UpstreamResponse,
  fresh: () => EventRewriter,
  peek: UpstreamResponse['peek'] = (enough, wait) => response.peek(enough, wait),
): UpstreamResponse {
  const forEachChunk = async (onChunk: (chunk: Buffer) => void | Promise<void>): Promise<void> => {
    const events = new EventBoundaryBuffer();
    const rewriter = fresh();
    await response.forEachChunk((chunk) => {
      const complete = events.push(chunk);
      if (complete === undefined) return undefined;
      const rewritten = rewriter.rewrite(complete);
      return rewritten.length === 0 ? undefined : onChunk(rewritten);
    });
    const rest = events.flush();
    const last = Buffer.concat([
      rewriter.rewrite(rest ?? Buffer.alloc(0)),
      rewriter.end() ?? Buffer.alloc(0),
    ]);
    if (last.length > 0) await onChunk(last);
  };
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    async readAll() {
      const parts: Buffer[] = [];
      await forEachChunk((chunk) => void parts.push(chunk));
      return Buffer.concat(parts);
    },
    forEachChunk,
    discard: () => response.discard(),
    peek,
  };
}
