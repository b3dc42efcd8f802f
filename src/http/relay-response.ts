// Relays an upstream answer to the client: whole bodies at once, event streams chunk by chunk as they
// arrive, with backpressure. A stream that breaks off before its finish ends with an OpenAI-shaped
// error event, never with a clean [DONE], so the client can tell a cut-off answer from a complete one.
import { once } from 'node:events';
import type { FastifyReply } from 'fastify';
import { GatewayError, isGatewayError } from '../errors.js';
import { SseDecoder } from '../upstream/sse-decoder.js';
import { isAbortError } from '../upstream/undici-upstream.js';
import type { UpstreamResponse } from '../upstream/upstream.js';
import { buildClientHeaders } from './forward-headers.js';
import type { RequestState } from './request-state.js';

export function isEventStream(headers: UpstreamResponse['headers']): boolean {
  const contentType = headers['content-type'];
  return typeof contentType === 'string' && contentType.toLowerCase().startsWith('text/event-stream');
}

export async function readWholeBody(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}

/** Tracks whether an OpenAI-style chat stream reached its end: `[DONE]`, or a finish_reason. */
export class StreamCompletionTracker {
  sawDone = false;
  sawFinishReason = false;
  private readonly decoder = new SseDecoder();
  private readonly textDecoder = new TextDecoder();

  push(chunk: Buffer): void {
    for (const event of this.decoder.push(this.textDecoder.decode(chunk, { stream: true })))
      this.take(event.data);
  }

  end(): void {
    for (const event of this.decoder.push(this.textDecoder.decode())) this.take(event.data);
    for (const event of this.decoder.end()) this.take(event.data);
  }

  get complete(): boolean {
    return this.sawDone || this.sawFinishReason;
  }

  private take(data: string): void {
    if (data === '[DONE]') {
      this.sawDone = true;
      return;
    }
    // Cheap test first: most chunks carry "finish_reason":null.
    if (!this.sawFinishReason && /"finish_reason"\s*:\s*"/.test(data)) this.sawFinishReason = true;
  }
}

export function streamErrorEvent(error: GatewayError): string {
  const body = { error: { message: error.message, type: 'server_error', param: null, code: error.code } };
  return `data: ${JSON.stringify(body)}\n\n`;
}

export interface RelayOptions {
  reply: FastifyReply;
  response: UpstreamResponse;
  state: RequestState;
  extraHeaders: Record<string, string>;
  signal: AbortSignal;
}

/** Sends a whole (non-streamed) upstream answer with its status and headers. */
export async function relayWholeBody({ reply, response, extraHeaders }: RelayOptions): Promise<FastifyReply> {
  const body = await readWholeBody(response.body);
  return reply
    .code(response.statusCode)
    .headers({ ...buildClientHeaders(response.headers), ...extraHeaders })
    .send(body);
}

/** Relays an event stream chunk by chunk; resolves when the client's stream has ended. */
export async function relayEventStream({
  reply,
  response,
  state,
  extraHeaders,
  signal,
}: RelayOptions): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(response.statusCode, {
    ...buildClientHeaders(response.headers),
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    ...extraHeaders,
  });
  const tracker = new StreamCompletionTracker();
  let failure: GatewayError | undefined;
  try {
    for await (const chunk of response.body) {
      tracker.push(chunk);
      if (!raw.write(chunk)) await once(raw, 'drain', { signal });
    }
    tracker.end();
    if (!tracker.complete) {
      failure = new GatewayError(
        'upstream_bad_response',
        'The upstream stream ended before the answer was finished.',
      );
    }
  } catch (error) {
    if (signal.aborted || isAbortError(error)) {
      raw.destroy();
      return;
    }
    failure = isGatewayError(error)
      ? error
      : new GatewayError('upstream_unreachable', 'The upstream stream broke off.', { cause: error });
  }
  if (failure !== undefined) {
    state.streamErrorCode = failure.code;
    if (!raw.destroyed) raw.write(streamErrorEvent(failure));
  }
  raw.end();
}
