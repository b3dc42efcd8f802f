// Relays an upstream answer to the client: whole bodies at once, event streams chunk by chunk as they
// arrive, with backpressure. A stream that breaks off before its finish ends with an OpenAI-shaped
// error event, never with a clean [DONE], so the client can tell a cut-off answer from a complete one.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { GatewayError, isGatewayError, toOpenAIErrorBody } from '../errors.js';

import type { UpstreamResponse } from '../upstream/upstream.js';
import type { ClientCancellation } from './client-cancellation.js';
import { replyFromCompletion, StreamReplyAssembler } from '../upstream/reply-assembler.js';
import { buildClientHeaders } from './forward-headers.js';
import type { RequestState } from './request-state.js';

export function isEventStream(headers: UpstreamResponse['headers']): boolean {
  const contentType = headers['content-type'];
  return typeof contentType === 'string' && contentType.toLowerCase().startsWith('text/event-stream');
}

const doneMarker = Buffer.from('data: [DONE]');
// A non-null finish_reason, as compact JSON writes it and as some servers write it with a space.
const finishMarkers = [Buffer.from('"finish_reason":"'), Buffer.from('"finish_reason": "')];
// The end of a stream (finish chunk, optional usage chunk, [DONE]) fits well within this many bytes.
const tailBytes = 8192;

/**
 * Tells whether an OpenAI-style chat stream reached its end: `data: [DONE]`, or a non-null
 * finish_reason. Both sit at the end of a stream, so only the last few kilobytes are kept (as
 * references to the chunks, without copying) and scanned once when the upstream body ends: relaying
 * stays as cheap as a plain pipe.
 */
export class StreamCompletionTracker {
  private readonly tail: Buffer[] = [];
  private tailLength = 0;

  push(chunk: Buffer): void {
    this.tail.push(chunk);
    this.tailLength += chunk.length;
    while (this.tail.length > 1 && this.tailLength - (this.tail[0] as Buffer).length >= tailBytes) {
      this.tailLength -= (this.tail.shift() as Buffer).length;
    }
  }

  /** The last `usage.prompt_tokens` in the stream's tail (present with stream_options.include_usage). */
  promptTokens(): number | undefined {
    return promptTokensIn(Buffer.concat(this.tail));
  }

  /** The last `usage.completion_tokens` in the stream's tail. */
  completionTokens(): number | undefined {
    return usageNumberIn(Buffer.concat(this.tail), completionTokensKey);
  }

  /** Call once the upstream body has ended. */
  isComplete(): boolean {
    const end = Buffer.concat(this.tail);
    return end.includes(doneMarker) || finishMarkers.some((marker) => end.includes(marker));
  }
}

const promptTokensKey = Buffer.from('"prompt_tokens"');
const completionTokensKey = Buffer.from('"completion_tokens"');

/** `usage.prompt_tokens` near the end of an answer (where OpenAI-style bodies put usage), if any. */
export function promptTokensIn(body: Buffer): number | undefined {
  return usageNumberIn(body, promptTokensKey);
}

/** A usage number (`"key": 123`) near the end of an answer, if any. */
function usageNumberIn(body: Buffer, key: Buffer): number | undefined {
  const at = body.lastIndexOf(key);
  if (at < 0 || at < body.length - 4096) return undefined;
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

export function streamErrorEvent(error: GatewayError): string {
  return `data: ${JSON.stringify(toOpenAIErrorBody(error))}\n\n`;
}

/** Where a chunk's closing `data: [DONE]` event starts, when the chunk ends with one; else -1. */
function doneMarkerAt(chunk: Buffer): number {
  const tail = chunk.toString('latin1', Math.max(0, chunk.length - 24));
  const match = /data: ?\[DONE\](?:\r?\n){2}$/.exec(tail);
  return match === null ? -1 : chunk.length - tail.length + match.index;
}

function waitForDrain(raw: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    const drained = (): void => {
      raw.off('close', closed);
      resolve();
    };
    const closed = (): void => {
      raw.off('drain', drained);
      reject(new Error('client closed the connection'));
    };
    raw.once('drain', drained);
    raw.once('close', closed);
  });
}

export interface RelayOptions {
  reply: FastifyReply;
  response: UpstreamResponse;
  state: RequestState;
  extraHeaders: Record<string, string>;
  cancellation: ClientCancellation;
  /**
   * Called with the assistant's reply once a successful answer is complete: before a whole body is
   * sent, after a stream has finished. Sessions store the turn here.
   */
  onReply?: ((reply: Record<string, unknown> | undefined) => Promise<unknown>) | undefined;
  /**
   * Called with the upstream's `usage.prompt_tokens` of a successful answer; the headers it returns
   * are added to a whole body's answer (a stream's headers are already sent).
   */
  onUsage?: ((promptTokens: number) => Record<string, string> | undefined) | undefined;
  /**
   * Called once a successful (2xx) answer has ended — complete, broken off, or left by the client — with
   * the usage it reported (either number may be missing) and the assistant's reply (whole or partial)
   * to estimate from.
   */
  onCompletion?: ((result: CompletedAnswer) => void) | undefined;
  /** A successful whole answer must be a JSON object (a chat completion), else 502. */
  expectJson?: boolean;
}

export interface CompletedAnswer {
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  reply: Record<string, unknown> | undefined;
}

function badResponse(message: string): GatewayError {
  return new GatewayError('upstream_bad_response', message);
}

/**
 * Sends a whole (non-streamed) upstream answer with its status and headers. With `expectJson`, a
 * successful answer must be a JSON object (parsed once, here): anything else — cut-off JSON, an HTML
 * page, an event stream — is a 502 upstream_bad_response, and nothing is stored or counted as a reply.
 */
export async function relayWholeBody({
  reply,
  response,
  extraHeaders,
  expectJson,
  onReply,
  onUsage,
  onCompletion,
}: RelayOptions): Promise<FastifyReply> {
  const body = await response.readAll();
  const success = response.statusCode < 300;
  let parsed: Record<string, unknown> | undefined;
  if (success && expectJson === true) {
    if (isEventStream(response.headers))
      throw badResponse('The upstream answered with an event stream to a request that did not ask for one.');
    try {
      const value: unknown = JSON.parse(body.toString('utf8'));
      if (typeof value === 'object' && value !== null && !Array.isArray(value))
        parsed = value as Record<string, unknown>;
    } catch {
      // Not JSON: refused below.
    }
    if (parsed === undefined)
      throw badResponse('The upstream answered 2xx with a body that is not a JSON object.');
  }
  const usage = parsed === undefined ? undefined : usageOf(parsed);
  // Counted first: the upstream's answer is billed even when storing the session's turn fails.
  if (onCompletion !== undefined && success) {
    onCompletion({
      promptTokens: usage?.promptTokens ?? promptTokensIn(body),
      completionTokens: usage?.completionTokens ?? usageNumberIn(body, completionTokensKey),
      reply: parsed === undefined ? undefined : replyFromCompletion(parsed),
    });
  }
  if (onReply !== undefined && success) {
    const assistant = parsed === undefined ? undefined : replyFromCompletion(parsed);
    if (assistant === undefined)
      throw badResponse('The upstream answer holds no assistant message (choices[0].message).');
    await onReply(assistant);
  }
  let headers = extraHeaders;
  if (onUsage !== undefined && success) {
    const promptTokens = usage?.promptTokens ?? promptTokensIn(body);
    const added = promptTokens === undefined ? undefined : onUsage(promptTokens);
    if (added !== undefined) headers = { ...extraHeaders, ...added };
  }
  return reply.code(response.statusCode).headers(buildClientHeaders(response.headers, headers)).send(body);
}

function usageOf(
  completion: Record<string, unknown>,
): { promptTokens: number | undefined; completionTokens: number | undefined } | undefined {
  const usage = completion.usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | undefined;
  if (typeof usage !== 'object' || usage === null) return undefined;
  return {
    promptTokens: typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : undefined,
    completionTokens: typeof usage.completion_tokens === 'number' ? usage.completion_tokens : undefined,
  };
}

async function writeOrWait(raw: ServerResponse, bytes: Buffer | string): Promise<void> {
  if (bytes.length > 0 && !raw.write(bytes)) await waitForDrain(raw);
}

/** Relays an event stream event by event as it arrives; resolves when the client's stream has ended. */
export async function relayEventStream({
  reply,
  response,
  state,
  extraHeaders,
  cancellation,
  onReply,
  onUsage,
  onCompletion,
}: RelayOptions): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  // What the reply already carries (the request id, budget headers) goes out too: the stream is written
  // on the raw response.
  const headers = {
    ...(reply.getHeaders() as Record<string, string>),
    ...buildClientHeaders(response.headers, extraHeaders),
  };
  headers['cache-control'] = 'no-cache';
  headers['x-accel-buffering'] = 'no';
  raw.writeHead(response.statusCode, headers);
  const tracker = new StreamCompletionTracker();
  const events = new EventBoundaryBuffer();
  const assembler =
    onReply === undefined && onCompletion === undefined ? undefined : new StreamReplyAssembler();
  let failure: GatewayError | undefined;
  // With a session, the final `data: [DONE]` waits until the turn is stored, so that a client whose
  // turn could not be stored gets an error event instead of a [DONE].
  let heldDone: Buffer | undefined;
  const relay = (complete: Buffer): Promise<void> | undefined => {
    let toWrite = complete;
    if (onReply !== undefined) {
      const marker = doneMarkerAt(complete);
      if (marker >= 0) {
        heldDone = complete.subarray(marker);
        toWrite = complete.subarray(0, marker);
      }
    }
    if (toWrite.length > 0 && !raw.write(toWrite)) return waitForDrain(raw);
    return undefined;
  };
  try {
    await response.forEachChunk((chunk) => {
      tracker.push(chunk);
      assembler?.push(chunk);
      const complete = events.push(chunk);
      return complete === undefined ? undefined : relay(complete);
    });
    if (!tracker.isComplete()) {
      failure = badResponse('The upstream stream ended before the answer was finished.');
    } else if (events.heldBytes > 0) {
      // A complete answer whose last event had no blank line after it: send it as it came.
      await writeOrWait(raw, events.flush() as Buffer);
    }
  } catch (error) {
    if (cancellation.aborted || raw.destroyed) {
      raw.destroy();
      // The upstream generated (and bills) what was streamed before the client left.
      onCompletion?.({
        promptTokens: tracker.promptTokens(),
        completionTokens: tracker.completionTokens(),
        reply: assembler?.end().message,
      });
      return;
    }
    failure = isGatewayError(error)
      ? error
      : new GatewayError('upstream_unreachable', 'The upstream stream broke off.', { cause: error });
  }
  const assembled = assembler?.end();
  if (
    failure === undefined &&
    assembled !== undefined &&
    assembled.malformedEvents > 0 &&
    onReply !== undefined
  )
    failure = badResponse('The upstream stream carried events that are not JSON.');
  // The upstream's answer is complete (and billed) even when storing the session's turn fails below.
  if (failure === undefined && assembled !== undefined && onReply !== undefined && assembled.finished) {
    await onReply(assembled.message).catch((error: unknown) => {
      state.streamErrorCode = isGatewayError(error) ? error.code : 'internal_error';
      // The client has the answer but not its [DONE]: it learns the turn was not stored. Without a
      // held [DONE] (the stream had none) the failure can only be logged.
      if (heldDone !== undefined) {
        failure = isGatewayError(error)
          ? error
          : new GatewayError('session_store_unavailable', 'The turn could not be stored.');
        heldDone = undefined;
      }
    });
  }
  if (failure === undefined && onUsage !== undefined) {
    const promptTokens = tracker.promptTokens();
    if (promptTokens !== undefined) onUsage(promptTokens);
  }
  // A stream that broke off was billed for what it produced too: counted (as an estimate) either way.
  if (onCompletion !== undefined) {
    onCompletion({
      promptTokens: tracker.promptTokens(),
      completionTokens: tracker.completionTokens(),
      reply: assembled?.message,
    });
  }
  if (heldDone !== undefined && failure === undefined) raw.write(heldDone);
  if (failure !== undefined) {
    state.streamErrorCode = failure.code;
    raw.write(streamErrorEvent(failure));
  }
  raw.end();
}
