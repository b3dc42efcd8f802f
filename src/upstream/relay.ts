// Relays an upstream answer to the client and says what came of it: a whole body is read and parsed
// once and handed back for the turn to act on before it is sent; an event stream is passed on event by
// event as it arrives, with backpressure, and its outcome (finished, broken off, client gone; usage;
// the assembled reply) is returned before the stream's last bytes are written, so the caller decides
// whether the client gets the [DONE] or an error event. The client is a port (ClientStream): no
// fastify here.
import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { GatewayError, isGatewayError, toOpenAIErrorBody } from '../errors.js';
import { ChatStreamCallNormalizer } from './chat-stream-calls.js';
import { CumulativeDeltas } from './cumulative-deltas.js';
import { replyFromCompletion, StreamReplyAssembler } from './reply-assembler.js';
import {
  completionTokensKey,
  countDataEvents,
  doneMarkerAt,
  errorEvent,
  EventBoundaryBuffer,
  isEventStream,
  promptTokensIn,
  StreamCompletionTracker,
  usageNumberIn,
} from './sse.js';
import { conformCompletion, isRecord } from './tool-call-shape.js';
import { isAbortError } from './undici-upstream.js';
import type { UpstreamResponse } from './upstream.js';

/** The client's side of a response. */
export interface ClientStream {
  /** Emits 'abort' when the client goes away before its answer has ended. */
  readonly cancellation: EventEmitter & { readonly aborted: boolean };
  /** Headers that go out with whatever answer is sent, an error included. */
  addHeaders(headers: Record<string, string>): void;
  /** Sends a whole answer: handed to the connection when the promise settles (written out later). */
  sendWhole(status: number, headers: Record<string, string | string[]>, body: Buffer): Promise<void>;
  /** Starts a streamed answer. */
  openStream(status: number, headers: Record<string, string | string[]>): void;
  /** Writes stream bytes; the promise (when there is one) settles once the client has taken them. */
  write(bytes: Buffer | string): Promise<void> | undefined;
  /** Ends the stream, after `last` when given. */
  end(last?: Buffer | string): void;
  /** Drops the connection: the client is gone or the stream cannot go on. */
  destroy(): void;
}

export interface Usage {
  promptTokens: number | undefined;
  completionTokens: number | undefined;
}

export interface WholeAnswer {
  status: number;
  body: Buffer;
  /** A successful chat completion, parsed (once). */
  completion: Record<string, unknown> | undefined;
  usage: Usage;
  /** The assistant's message of a successful completion. */
  reply: Record<string, unknown> | undefined;
  /**
   * A 2xx answer that reports an error of its own — an `error` beside or instead of its choices, or a
   * `finish_reason` of "error" (OpenRouter's errors during generation): a failed answer, whatever
   * it holds.
   */
  erred: boolean;
}

function badResponse(message: string): GatewayError {
  return new GatewayError('upstream_bad_response', message);
}

/**
 * Reads a whole (non-streamed) answer. With `expectCompletion`, a successful answer must be a JSON
 * object: anything else — cut-off JSON, an HTML page, an event stream — is a 502 upstream_bad_response.
 */
export async function readWholeAnswer(
  response: UpstreamResponse,
  options: { expectCompletion: boolean },
): Promise<WholeAnswer> {
  let body = await response.readAll();
  const success = response.statusCode < 300;
  let completion: Record<string, unknown> | undefined;
  if (success && options.expectCompletion) {
    if (isEventStream(response.headers))
      throw badResponse('The upstream answered with an event stream to a request that did not ask for one.');
    try {
      const value: unknown = JSON.parse(body.toString('utf8'));
      if (typeof value === 'object' && value !== null && !Array.isArray(value))
        completion = value as Record<string, unknown>;
    } catch {
      // Not JSON: refused below.
    }
    if (completion === undefined)
      throw badResponse('The upstream answered 2xx with a body that is not a JSON object.');
    // Tool calls not in the API's shape (tool-call-shape.ts), an answer without its id: the client is given
    // them as the session stores them, written anew only then.
    const conformed = conformCompletion(completion);
    if (withEnvelope(completion) || conformed) body = Buffer.from(JSON.stringify(completion));
  }
  const usage = completion === undefined ? undefined : usageOf(completion);
  return {
    status: response.statusCode,
    body,
    completion,
    usage: {
      promptTokens: success ? (usage?.promptTokens ?? promptTokensIn(body)) : undefined,
      completionTokens: success
        ? (usage?.completionTokens ?? usageNumberIn(body, completionTokensKey))
        : undefined,
    },
    reply: completion === undefined ? undefined : replyFromCompletion(completion),
    erred: completion !== undefined && answerErred(completion),
  };
}

/**
 * A chat completion given the `id`, `object` and `created` OpenAI gives every one where its server gave
 * none — some OpenAI-compatible servers give no id (dongri/openai-api-rs#146), GitHub Copilot's API and
 * Azure-flavored endpoints no `object` or `created` (0xPlaygrounds/rig#1451, spring-projects/spring-ai#6010)
 * — which strict clients refuse (64bit/async-openai#408); true when it was given any. Only a body shaped as
 * a completion (its `choices`): another server's goes as it came.
 */
function withEnvelope(completion: Record<string, unknown>): boolean {
  if (!Array.isArray(completion.choices)) return false;
  const given =
    typeof completion.id !== 'string' ||
    completion.object === undefined ||
    typeof completion.created !== 'number';
  if (typeof completion.id !== 'string') completion.id = `chatcmpl-${randomUUID()}`;
  if (completion.object === undefined) completion.object = 'chat.completion';
  if (typeof completion.created !== 'number') completion.created = Math.floor(Date.now() / 1000);
  return given;
}

/**
 * What a bridged client is told of a 2xx answer that reports an error of its own (WholeAnswer.erred):
 * a 502 `upstream_bad_response` in its API's shape, with the provider's words when it gave some;
 * undefined for an answer that does not.
 */
export function reportedFailureOf(completion: Record<string, unknown>): GatewayError | undefined {
  if (!answerErred(completion)) return undefined;
  const said = (completion.error as { message?: unknown } | null | undefined)?.message;
  return badResponse(
    typeof said === 'string' && said !== ''
      ? `The upstream answer reported an error: ${said.slice(0, 500)}`
      : 'The upstream answer reported an error.',
  );
}

function answerErred(completion: Record<string, unknown>): boolean {
  if (completion.error !== undefined && completion.error !== null) return true;
  const choices = completion.choices;
  return (
    Array.isArray(choices) &&
    choices.some((choice: unknown) => isRecord(choice) && choice.finish_reason === 'error')
  );
}

function usageOf(completion: Record<string, unknown>): Usage | undefined {
  const usage = completion.usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | undefined;
  if (typeof usage !== 'object' || usage === null) return undefined;
  return {
    promptTokens: typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : undefined,
    completionTokens: typeof usage.completion_tokens === 'number' ? usage.completion_tokens : undefined,
  };
}

/**
 * Ends a stream the gateway opened when the gateway itself failed while serving it: the client gets an
 * error event — a gateway error's code, else `internal_error` and nothing of the failure — instead of
 * waiting for an end that would not come; a stream that cannot take one is dropped.
 */
export function endWithFailure(client: ClientStream, error: unknown): void {
  const told = isGatewayError(error)
    ? error
    : new GatewayError('internal_error', 'The gateway failed to process the request.');
  try {
    client.end(errorEvent(toOpenAIErrorBody(told)));
  } catch {
    client.destroy();
  }
}

export type StreamOutcome =
  /** The client left: the connection is dropped; usage and reply are what had arrived. */
  | { kind: 'client_left'; usage: Usage; reply: Record<string, unknown> | undefined; dataEvents: number }
  | {
      kind: 'ended';
      /** Why the stream cannot end cleanly, if it cannot: the client gets an error event. */
      failure: GatewayError | undefined;
      usage: Usage;
      /** The assistant's reply, assembled from the deltas (when asked for). */
      reply: Record<string, unknown> | undefined;
      /** The reply was finished (a finish_reason arrived), every event was JSON, and none was an error. */
      replyComplete: boolean;
      /** The provider reported an error within the stream (assembled, or its last event without assembling). */
      upstreamErred: boolean;
      /** The `data: [DONE]` held back (with `holdDone`): the caller writes it, or an error instead. */
      heldDone: Buffer | undefined;
      /** Data events relayed: about one token each, the completion's estimate when there is no usage. */
      dataEvents: number;
    };

/**
 * Relays an event stream as it arrives. The client's stream is left open: the caller ends it with
 * `heldDone` or an error event. With `holdDone`, the final `data: [DONE]` is held back so that a turn
 * that could not be stored ends with an error event instead. With `expectFinish` (a chat completion), a
 * stream that ends without its finish is a failure, so the client can tell a cut-off answer.
 */
export async function relayStream(
  response: UpstreamResponse,
  client: ClientStream,
  options: {
    holdDone: boolean;
    assemble: boolean;
    expectFinish: boolean;
    /** A chat stream: its tool calls are given in OpenAI's shape (chat-stream-calls.ts). */
    shapeCalls?: boolean;
  },
): Promise<StreamOutcome> {
  const tracker = new StreamCompletionTracker();
  const events = new EventBoundaryBuffer();
  const calls = options.shapeCalls === true ? new ChatStreamCallNormalizer() : undefined;
  const deltas = options.shapeCalls === true ? new CumulativeDeltas() : undefined;
  const assembler = options.assemble ? new StreamReplyAssembler() : undefined;
  let failure: GatewayError | undefined;
  let heldDone: Buffer | undefined;
  let dataEvents = 0;
  let endedInError = false;
  const usage = (): Usage => ({
    promptTokens: tracker.promptTokens(),
    completionTokens: tracker.completionTokens(),
  });
  // Whole events as the client is given them: each delta as what it adds (cumulative-deltas.ts) — what the
  // session keeps — then their calls in OpenAI's shape.
  const shaped = (complete: Buffer): Buffer => {
    const added = deltas === undefined ? complete : deltas.rewrite(complete);
    assembler?.push(added);
    return calls === undefined ? added : calls.rewrite(added);
  };
  const pass = (complete: Buffer): Promise<void> | undefined => {
    let toWrite = shaped(complete);
    if (options.holdDone) {
      const marker = doneMarkerAt(toWrite);
      if (marker >= 0) {
        heldDone = toWrite.subarray(marker);
        toWrite = toWrite.subarray(0, marker);
      }
    }
    return toWrite.length > 0 ? client.write(toWrite) : undefined;
  };
  try {
    await response.forEachChunk((chunk) => {
      tracker.push(chunk);
      const complete = events.push(chunk);
      if (complete === undefined) return undefined;
      dataEvents += countDataEvents(complete);
      return pass(complete);
    });
    const unfinished = options.expectFinish && !tracker.isComplete();
    // A stream that ended with the provider's own error was not cut off: that error is the client's.
    endedInError = unfinished && tracker.endedInError();
    if (unfinished && !endedInError)
      failure = badResponse('The upstream stream ended before the answer was finished.');
    // A complete answer whose last event had no blank line after it: sent as it came (its calls shaped).
    else if (events.heldBytes > 0) {
      await client.write(shaped(events.flush() as Buffer));
    }
  } catch (error) {
    if (client.cancellation.aborted) {
      client.destroy();
      return { kind: 'client_left', usage: usage(), reply: assembler?.end().message, dataEvents };
    }
    // A failure of the gateway's own reading (not the upstream's, not a cancelled call): the caller's to
    // end the stream with (endWithFailure) and the edge's to log.
    if (!isGatewayError(error) && !isAbortError(error)) throw error;
    failure = isGatewayError(error)
      ? error
      : new GatewayError('upstream_unreachable', 'The upstream stream broke off.', { cause: error });
  }
  const assembled = assembler?.end();
  if (failure === undefined && assembled !== undefined && assembled.malformedEvents > 0 && options.holdDone)
    failure = badResponse('The upstream stream carried events that are not JSON.');
  return {
    kind: 'ended',
    failure,
    usage: usage(),
    reply: assembled?.message,
    replyComplete:
      assembled !== undefined && assembled.finished && assembled.malformedEvents === 0 && !assembled.erred,
    upstreamErred: assembled !== undefined ? assembled.erred : endedInError,
    heldDone,
    dataEvents,
  };
}
