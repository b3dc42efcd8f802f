// Looks at an upstream answer before any of it reaches the client (SPEC §6): an error status's body
// is read whole (error bodies are small), and a stream's first event is read, since some servers
// report a context overflow as the first event of a 200 stream. The returned response replays what
// was read.
import { classifyUpstreamError, type UpstreamErrorClass } from '../upstream/classify-upstream-error.js';
import type { UpstreamResponse } from '../upstream/upstream.js';
import { isEventStream } from './relay-response.js';

const firstEventLimitBytes = 64 * 1024;

/** A response whose body was read whole, replayed to whoever reads it next. */
function replaying(response: UpstreamResponse, body: Buffer): UpstreamResponse {
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

/** The first complete event that carries data (comments such as ": keep-alive" are skipped), if any. */
function firstDataEvent(received: Buffer): string | undefined {
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

export async function inspectAnswer(
  response: UpstreamResponse,
  streaming: boolean,
): Promise<{ response: UpstreamResponse; classification: UpstreamErrorClass }> {
  if (response.statusCode >= 300) {
    const body = await response.readAll();
    return {
      response: replaying(response, body),
      classification: classifyUpstreamError({
        status: response.statusCode,
        headers: response.headers,
        body: body.toString('utf8'),
      }),
    };
  }
  if (!streaming || !isEventStream(response.headers)) return { response, classification: { kind: 'none' } };
  const head = await response.peek(
    (received) => firstDataEvent(received) !== undefined || received.length >= firstEventLimitBytes,
  );
  const firstEvent = firstDataEvent(head) ?? head.toString('utf8');
  return { response, classification: classifyUpstreamError({ status: 200, body: firstEvent }) };
}
