// Looks at an upstream answer before any of it reaches the client (docs/budgeting.md#reactive-recovery): an error status's body
// is read whole (error bodies are small), and a stream's first event is read, since some servers
// report a context overflow as the first event of a 200 stream — waited for as long as `headWaitMs` at
// most: a model that thinks before its first chunk has its stream opened to the client then, and kept
// alive (docs/configuration.md#silent-streams). The returned response replays what was read.
import { classifyUpstreamError, type UpstreamErrorClass } from './classify-upstream-error.js';
import type { UpstreamResponse } from './upstream.js';
import { firstDataEvent, isEventStream } from './sse.js';

const firstEventLimitBytes = 64 * 1024;

/** A response whose body was read whole, replayed to whoever reads it next. */
export function replaying(response: UpstreamResponse, body: Buffer): UpstreamResponse {
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    readAll: async () => body,
    forEachChunk: async (onChunk) => {
      if (body.length > 0) await onChunk(body);
    },
    discard: () => undefined,
    peek: async () => body,
  };
}

export interface InspectOptions {
  /** The bytes of the request it answers: asked for a 413 only (what a bare one is about). */
  sentBytes?: (() => number) | undefined;
  /** How long a stream's first event is waited for (none: until it comes); past it, the answer is begun. */
  headWaitMs?: number | undefined;
}

export async function inspectAnswer(
  response: UpstreamResponse,
  streaming: boolean,
  options: InspectOptions = {},
): Promise<{ response: UpstreamResponse; classification: UpstreamErrorClass }> {
  const { sentBytes } = options;
  if (response.statusCode >= 300) {
    const body = await response.readAll();
    return {
      response: replaying(response, body),
      classification: classifyUpstreamError({
        status: response.statusCode,
        headers: response.headers,
        body: body.toString('utf8'),
        receivedAtMs: Date.now(),
        ...(response.statusCode === 413 && sentBytes !== undefined ? { sentBytes: sentBytes() } : {}),
      }),
    };
  }
  if (!streaming || !isEventStream(response.headers)) return { response, classification: { kind: 'none' } };
  let waitPassed = false;
  const { headWaitMs } = options;
  const head = await response.peek(
    (received) => firstDataEvent(received) !== undefined || received.length >= firstEventLimitBytes,
    headWaitMs === undefined ? undefined : { ms: headWaitMs, passed: () => (waitPassed = true) },
  );
  const firstEvent = firstDataEvent(head);
  // Nothing but comments (OpenRouter's processing) while the model thinks: the answer has begun.
  if (firstEvent === undefined && waitPassed) return { response, classification: { kind: 'none' } };
  return {
    response,
    classification: classifyUpstreamError({ status: 200, body: firstEvent ?? head.toString('utf8') }),
  };
}
