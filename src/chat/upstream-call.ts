// One upstream exchange as the request log and the metrics see it: the time from the first send to the
// end of the relayed body, the calls made, the last status, and the error it ended with — returned as a
// tally (on the error, when it failed). A client that left is not an error: the exchange is dropped quietly.
import type { Credential } from '../auth/authenticate.js';
import type { UpstreamConfig } from '../config/gateway-config.js';
import { causeOf, isGatewayError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { buildUpstreamHeaders } from '../upstream/forward-headers.js';
import { withBetaFixes, type FieldFix } from '../upstream/field-fixes.js';
import type { Readable } from 'node:stream';
import type { Upstream, UpstreamMethod, UpstreamResponse } from '../upstream/upstream.js';
import type { ClientStream } from '../upstream/relay.js';
import { withOutcome, type UpstreamTally } from './request-outcome.js';

export interface UpstreamExchange {
  /**
   * Sends a request to the exchange's upstream (or `target`, a fallback model's) with the client's
   * forwarded headers.
   */
  send(request: {
    method: UpstreamMethod;
    path: string;
    body?: string | Buffer | Readable | undefined;
    target?: UpstreamConfig;
    /** Replaces the JSON content type (and adds a length) for a body forwarded as the client sent it. */
    bodyHeaders?: Record<string, string>;
    /** The body's wire format when it is not chat's (UpstreamRequest). */
    wire?: 'anthropic' | 'responses' | undefined;
    /** The `anthropic-beta` flags the model refused: left out of the forwarded headers (field-fixes.ts). */
    betaFixes?: readonly FieldFix[] | undefined;
  }): Promise<UpstreamResponse>;
}

/**
 * Runs `exchange` against `target`, measured: its value (undefined when the client left before the
 * answer ended — nothing more can be sent to it) and the tally of its calls. Rejects with the
 * exchange's error otherwise, the tally on it (request-outcome.ts).
 */
export async function measuredExchange<T>(
  deps: { upstream: Upstream; metrics: GatewayMetrics; now: () => number },
  context: {
    target: UpstreamConfig;
    client: ClientStream;
    clientHeaders: Record<string, string | string[] | undefined>;
    credential: Credential;
  },
  exchange: (upstream: UpstreamExchange) => Promise<T>,
): Promise<{ value: T | undefined; tally: UpstreamTally }> {
  const { target, client } = context;
  const startedAtMs = deps.now();
  const tally: UpstreamTally = {
    name: target.name,
    status: undefined,
    ms: 0,
    attempts: 0,
    errorCause: undefined,
  };
  // The time runs from the first send to the end of the last call's body: what the exchange does after
  // it (a session's turn stored, the client written) is the gateway's own, not the upstream's.
  let bodyEndedAtMs: number | undefined;
  const bodyEnded = (): void => {
    bodyEndedAtMs = deps.now();
  };
  const headersFor = new Map<string, Record<string, string>>();
  const upstream: UpstreamExchange = {
    async send({ method, path, body, target: to = target, bodyHeaders, wire, betaFixes }) {
      let headers = headersFor.get(to.name);
      if (headers === undefined) {
        headers = buildUpstreamHeaders(context.clientHeaders, to, context.credential);
        headersFor.set(to.name, headers);
      }
      if (betaFixes !== undefined) headers = withBetaFixes(headers, betaFixes);
      if (bodyHeaders !== undefined) {
        const { 'content-type': _json, ...rest } = headers;
        headers = Object.assign({}, rest, bodyHeaders);
      }
      tally.name = to.name;
      tally.attempts++;
      bodyEndedAtMs = undefined;
      const response = await deps.upstream.send({
        upstream: to,
        method,
        path,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(wire === undefined ? {} : { wire }),
        signal: client.cancellation,
        onBodyEnd: bodyEnded,
      });
      tally.status = response.statusCode;
      return response;
    },
  };
  try {
    const value = await exchange(upstream);
    return { value, tally };
  } catch (error) {
    if (client.cancellation.aborted) {
      client.destroy();
      return { value: undefined, tally };
    }
    if (isGatewayError(error)) {
      deps.metrics.upstreamErrors.inc({ upstream: tally.name, code: error.code });
      tally.errorCause = causeOf(error);
    }
    throw withOutcome(error, { upstream: tally });
  } finally {
    const elapsedMs = (bodyEndedAtMs ?? deps.now()) - startedAtMs;
    tally.ms = elapsedMs;
    const status = tally.status === undefined ? 'error' : String(tally.status);
    deps.metrics.upstreamDuration.observe({ upstream: target.name, status }, elapsedMs / 1000);
  }
}
