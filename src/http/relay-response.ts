// Relays an upstream answer to the client: whole bodies at once, event streams chunk by chunk as they
// arrive, with backpressure. A stream that breaks off before its finish ends with an OpenAI-shaped
// error event, never with a clean [DONE], so the client can tell a cut-off answer from a complete one.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { GatewayError, isGatewayError, toOpenAIErrorBody } from '../errors.js';

import type { UpstreamResponse } from '../upstream/upstream.js';
import type { ClientCancellation } from './client-cancellation.js';
import { replyFromBody, StreamReplyAssembler } from '../upstream/reply-assembler.js';
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
}

export interface CompletedAnswer {
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  reply: Record<string, unknown> | undefined;
}

/** Sends a whole (non-streamed) upstream answer with its status and headers. */
export async function relayWholeBody({
  reply,
  response,
  extraHeaders,
  onReply,
  onUsage,
  onCompletion,
}: RelayOptions): Promise<FastifyReply> {
  const body = await response.readAll();
  // Counted first: the upstream's answer is billed even when storing the session's turn fails.
  if (onCompletion !== undefined && response.statusCode < 300) {
    const completionTokens = usageNumberIn(body, completionTokensKey);
    onCompletion({
      promptTokens: promptTokensIn(body),
      completionTokens,
      reply: completionTokens === undefined ? replyFromBody(body.toString('utf8')) : undefined,
    });
  }
  if (onReply !== undefined && response.statusCode < 300) await onReply(replyFromBody(body.toString('utf8')));
  let headers = extraHeaders;
  if (onUsage !== undefined && response.statusCode < 300) {
    const promptTokens = promptTokensIn(body);
    const added = promptTokens === undefined ? undefined : onUsage(promptTokens);
    if (added !== undefined) headers = { ...extraHeaders, ...added };
  }
  return reply.code(response.statusCode).headers(buildClientHeaders(response.headers, headers)).send(body);
}

/** Relays an event stream chunk by chunk; resolves when the client's stream has ended. */
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
  const assembler =
    onReply === undefined && onCompletion === undefined ? undefined : new StreamReplyAssembler();
  let failure: GatewayError | undefined;
  // With a session, the final `data: [DONE]` waits until the turn is stored, so that a client whose
  // turn could not be stored gets an error event instead of a [DONE] (when [DONE] ends a chunk).
  let heldDone: Buffer | undefined;
  try {
    await response.forEachChunk((chunk) => {
      tracker.push(chunk);
      assembler?.push(chunk);
      let toWrite = chunk;
      heldDone = undefined;
      if (onReply !== undefined) {
        const marker = doneMarkerAt(chunk);
        if (marker >= 0) {
          heldDone = chunk.subarray(marker);
          toWrite = chunk.subarray(0, marker);
        }
      }
      if (toWrite.length > 0 && !raw.write(toWrite)) return waitForDrain(raw);
    });
    if (!tracker.isComplete()) {
      failure = new GatewayError(
        'upstream_bad_response',
        'The upstream stream ended before the answer was finished.',
      );
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
  // The upstream's answer is complete (and billed) even when storing the session's turn fails below.
  const upstreamComplete = failure === undefined;
  const assembled = assembler?.end();
  if (upstreamComplete && assembled !== undefined && onReply !== undefined) {
    if (assembled.finished) {
      await onReply(assembled.message).catch((error: unknown) => {
        state.streamErrorCode = isGatewayError(error) ? error.code : 'internal_error';
        // The client has the answer but not its [DONE]: it learns the turn was not stored. Without a
        // held [DONE] (it did not end a chunk) the failure can only be logged.
        if (heldDone !== undefined) {
          failure = isGatewayError(error)
            ? error
            : new GatewayError('session_store_unavailable', 'The turn could not be stored.');
          heldDone = undefined;
        }
      });
    }
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
