// What serving one request did, as the services return it: the model and whether it streamed, the
// session (hashed), what the context engine did, the fallback, what was dropped from the request, the
// upstream calls (where, how many, the last status, the time, the cause of a failure) and how a stream
// under way ended. The HTTP edge puts it on the request's log line and metrics once
// (http/plugins/request-context.ts). A request that fails carries what was done until then on its error.
import type { RenderReport } from '../context/types.js';

/** The upstream calls one request made (retries and fallbacks included). */
export interface UpstreamTally {
  /** The upstream of the last call. */
  name: string;
  /** The last call's status; undefined when no answer came. */
  status: number | undefined;
  /** Time spent on upstream calls, from the first send to the end of the relayed body. */
  ms: number;
  attempts: number;
  /** Why a call failed (the network error's code and text), when one did. */
  errorCause: string | undefined;
}

export interface RequestOutcome {
  model?: string | undefined;
  stream?: boolean | undefined;
  /** Session mode: the session, hashed (logs never carry the id itself). */
  session?: string | undefined;
  /** Another conversation under the session's id, served without it (docs/sessions.md#other-conversations). */
  otherConversation?: boolean | undefined;
  /** The conversation its client compacted, which started the session over (docs/sessions.md#compacted-conversations). */
  startedOver?: boolean | undefined;
  /** What the context engine did to the conversation last sent (or previewed). */
  context?: RenderReport | undefined;
  /** The larger model the request went to instead of its own (models[].fallbacks). */
  fallback?: string | undefined;
  /** What the gateway left out of the request rather than refuse it (X-Ctxgate-Dropped). */
  dropped?: string[] | undefined;
  upstream?: UpstreamTally | undefined;
  /** A stream already under way that ended with an error event (or a cut) instead of its finish. */
  streamErrorCode?: string | undefined;
  /** Calls of the recall tool the gateway answered (docs/budgeting.md#recall). */
  recallCalls?: number | undefined;
  /** Why the request failed where no upstream call did: the session store's own words (a streamed turn not stored). */
  errorCause?: string | undefined;
}

const outcomeKey = Symbol('ctxgate.requestOutcome');

/**
 * `error`, carrying what was done before it was thrown: `outcome` under what it already carried (an
 * inner step's own account wins over an outer one's).
 */
export function withOutcome(error: unknown, outcome: RequestOutcome): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const carried = (error as { [outcomeKey]?: RequestOutcome })[outcomeKey];
  Object.defineProperty(error, outcomeKey, {
    value: Object.assign({}, outcome, carried),
    configurable: true,
    enumerable: false,
  });
  return error;
}

/** What a failed request had done when `error` was thrown (empty when nothing was recorded). */
export function outcomeOf(error: unknown): RequestOutcome {
  if (typeof error !== 'object' || error === null) return {};
  return (error as { [outcomeKey]?: RequestOutcome })[outcomeKey] ?? {};
}

/**
 * A request of an API the gateway bridges onto chat (Responses, Messages), served: the `stream` its
 * client asked for and the fields the bridge dropped go on its outcome, also when it is refused before
 * it becomes a chat request; the dropped fields are named to the client (`X-Ctxgate-Dropped`).
 */
export async function servedAsBridged<Bridged extends { dropped: string[] }>(options: {
  body: unknown;
  addHeaders: (headers: Record<string, string>) => void;
  bridge: () => Bridged | Promise<Bridged>;
  serve: (bridged: Bridged) => Promise<RequestOutcome>;
}): Promise<RequestOutcome> {
  const stream = (options.body as { stream?: unknown } | null)?.stream === true;
  let asked: RequestOutcome = { stream };
  try {
    const bridged = await options.bridge();
    if (bridged.dropped.length > 0) {
      asked = { stream, dropped: bridged.dropped };
      options.addHeaders({ 'x-ctxgate-dropped': bridged.dropped.join(', ').slice(0, 2_000) });
    }
    return Object.assign({}, await options.serve(bridged), asked);
  } catch (error) {
    throw withOutcome(error, asked);
  }
}
