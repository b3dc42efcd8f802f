// What the gateway learns about one request while serving it; read by the request log line and metrics.
import type { RenderReport } from '../context/types.js';
import type { Credential } from '../auth/authenticate.js';

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
  /** What the gateway left out of the request rather than refuse it (X-Ctxgate-Dropped). */
  dropped: string[] | undefined;
  /** The request field a refusal names (its `param`). */
  errorParam: string | undefined;
  /** Upstream calls made for this request (retries included). */
  attempts: number;
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
    dropped: undefined,
    errorParam: undefined,
    attempts: 0,
  };
}
