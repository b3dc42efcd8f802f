// The HTTP edge's record of one request, read by its log line and metrics: what the edge saw itself (the
// route, the credential, the body's bytes, a refusal, a client that left) and what the service it ran
// returned (request-outcome.ts), put on it once by `applyOutcome`.
import type { RenderReport } from '../context/types.js';
import type { Credential } from '../auth/authenticate.js';
import { outcomeOf, type RequestOutcome } from '../chat/request-outcome.js';

export interface RequestState {
  startedAtMs: number;
  route: string;
  credential: Credential | undefined;
  model: string | undefined;
  /** The larger model the request went to instead of its own (models[].fallbacks). */
  fallback: string | undefined;
  upstreamName: string | undefined;
  stream: boolean;
  /** Time spent waiting on upstream calls (connect to end of body). */
  upstreamMs: number;
  upstreamStatus: number | undefined;
  errorCode: string | undefined;
  /** Why an upstream call failed (the network error's code and text), for the log line. */
  errorCause: string | undefined;
  /** Set when a stream already under way ended with an error event instead of its finish. */
  streamErrorCode: string | undefined;
  clientAborted: boolean;
  /** The body's bytes as received (an unchanged conversation is forwarded as these). */
  rawBody: Buffer | undefined;
  /** What the context engine did to this request's conversation. */
  context: RenderReport | undefined;
  /** Session mode: the session, hashed (logs never carry the id itself). */
  session: string | undefined;
  /** Another conversation under the session's id, served without it. */
  otherConversation: boolean | undefined;
  /** The conversation its client compacted, which started the session over. */
  startedOver: boolean | undefined;
  /** What the gateway left out of the request rather than refuse it (X-Ctxgate-Dropped). */
  dropped: string[] | undefined;
  /** The request field a refusal names (its `param`). */
  errorParam: string | undefined;
  /** Upstream calls made for this request (retries included). */
  attempts: number;
  /** Calls of the recall tool the gateway answered. */
  recallCalls: number | undefined;
  /** The service serving the request, while it runs: the log line waits for what it returns. */
  serving: Promise<void> | undefined;
}

export function createRequestState(startedAtMs: number): RequestState {
  return {
    startedAtMs,
    route: 'unknown',
    credential: undefined,
    model: undefined,
    fallback: undefined,
    upstreamName: undefined,
    stream: false,
    upstreamMs: 0,
    upstreamStatus: undefined,
    errorCode: undefined,
    errorCause: undefined,
    streamErrorCode: undefined,
    clientAborted: false,
    rawBody: undefined,
    context: undefined,
    session: undefined,
    otherConversation: undefined,
    startedOver: undefined,
    dropped: undefined,
    errorParam: undefined,
    attempts: 0,
    recallCalls: undefined,
    serving: undefined,
  };
}

/** Puts what a service did on the record (what it did not say stays as it was). */
export function applyOutcome(record: RequestState, outcome: RequestOutcome): void {
  if (outcome.model !== undefined) record.model = outcome.model;
  if (outcome.stream !== undefined) record.stream = outcome.stream;
  if (outcome.session !== undefined) record.session = outcome.session;
  if (outcome.otherConversation !== undefined) record.otherConversation = outcome.otherConversation;
  if (outcome.startedOver !== undefined) record.startedOver = outcome.startedOver;
  if (outcome.context !== undefined) record.context = outcome.context;
  if (outcome.fallback !== undefined) record.fallback = outcome.fallback;
  if (outcome.dropped !== undefined) record.dropped = outcome.dropped;
  if (outcome.streamErrorCode !== undefined) record.streamErrorCode = outcome.streamErrorCode;
  if (outcome.recallCalls !== undefined) record.recallCalls = outcome.recallCalls;
  if (outcome.errorCause !== undefined) record.errorCause = outcome.errorCause;
  const upstream = outcome.upstream;
  if (upstream === undefined) return;
  record.upstreamName = upstream.name;
  record.upstreamStatus = upstream.status;
  record.upstreamMs += upstream.ms;
  record.attempts += upstream.attempts;
  if (upstream.errorCause !== undefined) record.errorCause = upstream.errorCause;
}

/**
 * Runs the service serving `record`'s request and puts what it did on the record, on success or
 * failure (the error is passed on for the error handler); the request's log line waits for it.
 */
export function served(record: RequestState, work: () => Promise<RequestOutcome>): Promise<void> {
  // The service starts once `serving` is set: an answer it finishes at once (a 'finish' emitted while
  // it writes) finds the line waiting for it.
  const running = Promise.resolve()
    .then(work)
    .then(
      (outcome) => {
        applyOutcome(record, outcome);
        // Settled: a line written from now on needs no wait (nor a timer to bound one).
        record.serving = undefined;
      },
      (error: unknown) => {
        applyOutcome(record, outcomeOf(error));
        record.serving = undefined;
        throw error;
      },
    );
  record.serving = running.catch(() => undefined);
  return running;
}
