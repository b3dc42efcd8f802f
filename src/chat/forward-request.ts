// Requests the gateway passes through untouched (the model list): sent once, relayed as they come —
// whole bodies at once, event streams as they arrive.
import type { IncomingHttpHeaders } from 'node:http';
import type { Credential } from '../auth/authenticate.js';
import type { UpstreamConfig } from '../config/gateway-config.js';
import { toOpenAIErrorBody } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { buildClientHeaders } from '../upstream/forward-headers.js';
import { errorEvent, isEventStream } from '../upstream/sse.js';
import type { Upstream } from '../upstream/upstream.js';
import { readWholeAnswer, relayStream, type ClientStream } from './relay.js';
import type { RequestState } from './request-state.js';
import { measuredExchange } from './upstream-call.js';

export interface ForwardInput {
  target: UpstreamConfig;
  method: 'GET' | 'POST';
  /** Below the upstream's base URL. */
  path: string;
  body?: string | Buffer | undefined;
  clientHeaders: IncomingHttpHeaders;
  credential: Credential;
  record: RequestState;
}

export interface Forwarder {
  forward(input: ForwardInput, client: ClientStream): Promise<void>;
}

export function createForwarder(deps: {
  upstream: Upstream;
  metrics: GatewayMetrics;
  now: () => number;
}): Forwarder {
  return {
    async forward(input, client) {
      await measuredExchange(deps, { ...input, client }, async (exchange) => {
        const response = await exchange.send(input);
        if (response.statusCode < 300 && isEventStream(response.headers)) {
          client.openStream(response.statusCode, {
            ...buildClientHeaders(response.headers),
            'cache-control': 'no-cache',
          });
          const outcome = await relayStream(response, client, {
            holdDone: false,
            assemble: false,
            expectFinish: false,
          });
          if (outcome.kind === 'client_left') return;
          if (outcome.failure !== undefined) input.record.streamErrorCode = outcome.failure.code;
          client.end(
            outcome.failure === undefined ? undefined : errorEvent(toOpenAIErrorBody(outcome.failure)),
          );
          return;
        }
        const answer = await readWholeAnswer(response, { expectCompletion: false });
        await client.sendWhole(answer.status, buildClientHeaders(response.headers), answer.body);
      });
    },
  };
}
