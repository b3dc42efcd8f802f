// Requests the gateway passes through untouched (the model list, and every /v1 path it does not manage):
// sent once, relayed as they come — event streams event by event, other bodies byte for byte as they
// arrive (audio, files), or whole (the model list) — and what the answer says it cost (its usage), so
// budgets count forwarded calls too.
import type { IncomingHttpHeaders } from 'node:http';
import type { Credential } from '../auth/authenticate.js';
import type { UpstreamConfig } from '../config/gateway-config.js';
import { isGatewayError, toOpenAIErrorBody } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { buildClientHeaders } from '../upstream/forward-headers.js';
import { errorEvent, isEventStream, StreamCompletionTracker } from '../upstream/sse.js';
import type { Readable } from 'node:stream';
import type { Upstream, UpstreamMethod, UpstreamResponse } from '../upstream/upstream.js';
import { endWithFailure, readWholeAnswer, relayStream, type ClientStream } from '../upstream/relay.js';
import type { UpstreamTally } from './request-outcome.js';
import { measuredExchange } from './upstream-call.js';

export interface ForwardInput {
  target: UpstreamConfig;
  method: UpstreamMethod;
  /** Below the upstream's base URL, with its query string. */
  path: string;
  body?: string | Buffer | Readable | undefined;
  /** The client's own Content-Type (and Content-Length) for a body forwarded as it was sent. */
  bodyHeaders?: Record<string, string>;
  /** Relay a body that is not an event stream chunk by chunk instead of reading it whole. */
  streamBody?: boolean;
  clientHeaders: IncomingHttpHeaders;
  credential: Credential;
}

/** What a forwarded call did, and what it cost as its answer reports it. */
export interface ForwardOutcome {
  /** The upstream answered (any status); false when no answer came or the client left first. */
  answered: boolean;
  /** The tokens the answer reports using (its `usage`), when it is a success that reports them. */
  totalTokens: number | undefined;
  upstream: UpstreamTally;
  /** An answer under way that ended with an error event or a cut instead of its end. */
  streamErrorCode: string | undefined;
}

type Relayed = Omit<ForwardOutcome, 'upstream' | 'answered'>;

export interface Forwarder {
  forward(input: ForwardInput, client: ClientStream): Promise<ForwardOutcome>;
}

export function createForwarder(deps: {
  upstream: Upstream;
  metrics: GatewayMetrics;
  now: () => number;
}): Forwarder {
  return {
    async forward(input, client) {
      const { value, tally } = await measuredExchange(
        deps,
        Object.assign({}, input, { client }),
        async (exchange): Promise<Relayed> => {
          const response = await exchange.send(input);
          const success = response.statusCode < 300;
          if (success && isEventStream(response.headers)) {
            client.openStream(
              response.statusCode,
              Object.assign({}, buildClientHeaders(response.headers), { 'cache-control': 'no-cache' }),
            );
            const relayed = await relayStream(response, client, {
              holdDone: false,
              assemble: false,
              expectFinish: false,
            }).catch((error: unknown) => {
              // A failure of the gateway's own once the stream is open: the edge logs it.
              endWithFailure(client, error);
              throw error;
            });
            const { promptTokens, completionTokens } = relayed.usage;
            const totalTokens =
              promptTokens !== undefined || completionTokens !== undefined
                ? (promptTokens ?? 0) + (completionTokens ?? 0)
                : undefined;
            if (relayed.kind === 'client_left') return { totalTokens, streamErrorCode: undefined };
            const failure = relayed.failure;
            client.end(failure === undefined ? undefined : errorEvent(toOpenAIErrorBody(failure)));
            return { totalTokens, streamErrorCode: failure?.code };
          }
          if (input.streamBody === true) return relayChunks(response, client, success);
          const answer = await readWholeAnswer(response, { expectCompletion: false });
          await client.sendWhole(answer.status, buildClientHeaders(response.headers), answer.body);
          return { totalTokens: undefined, streamErrorCode: undefined };
        },
      );
      return {
        answered: tally.status !== undefined,
        totalTokens: value?.totalTokens,
        streamErrorCode: value?.streamErrorCode,
        upstream: tally,
      };
    },
  };
}

/**
 * A body that is not an event stream, relayed chunk by chunk as it arrives (audio, files). Usage sits at
 * the end of an answer: only its tail is kept to read it.
 */
async function relayChunks(
  response: UpstreamResponse,
  client: ClientStream,
  success: boolean,
): Promise<Relayed> {
  client.openStream(response.statusCode, buildClientHeaders(response.headers));
  const tail = success ? new StreamCompletionTracker() : undefined;
  try {
    await response.forEachChunk((chunk) => {
      tail?.push(chunk);
      return client.write(chunk);
    });
  } catch (error) {
    // The answer is under way: a cut connection is all the client can be told.
    client.destroy();
    return { totalTokens: undefined, streamErrorCode: isGatewayError(error) ? error.code : 'internal_error' };
  }
  client.end();
  return { totalTokens: tail?.totalTokens(), streamErrorCode: undefined };
}
