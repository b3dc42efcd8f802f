// One upstream exchange as the request log and the metrics see it: the time from the first send to the
// end of the relayed body, the last status, and the error it ended with. A client that left is not an
// error: the exchange is dropped quietly.
import type { Credential } from '../auth/authenticate.js';
import type { UpstreamConfig } from '../config/gateway-config.js';
import { isGatewayError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { buildUpstreamHeaders } from '../upstream/forward-headers.js';
import type { Readable } from 'node:stream';
import type { Upstream, UpstreamMethod, UpstreamResponse } from '../upstream/upstream.js';
import type { ClientStream } from '../upstream/relay.js';
import type { RequestState } from './request-state.js';

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
  }): Promise<UpstreamResponse>;
}

/**
 * Runs `exchange` against `target`, measured. Resolves without a value when the client left before the
 * answer ended (nothing more can be sent to it); rejects with the exchange's error otherwise.
 */
export async function measuredExchange(
  deps: { upstream: Upstream; metrics: GatewayMetrics; now: () => number },
  context: {
    target: UpstreamConfig;
    record: RequestState;
    client: ClientStream;
    clientHeaders: Record<string, string | string[] | undefined>;
    credential: Credential;
  },
  exchange: (upstream: UpstreamExchange) => Promise<void>,
): Promise<void> {
  const { target, record, client } = context;
  const startedAtMs = deps.now();
  record.upstreamName = target.name;
  const headersFor = new Map<string, Record<string, string>>();
  const upstream: UpstreamExchange = {
    async send({ method, path, body, target: to = target, bodyHeaders }) {
      let headers = headersFor.get(to.name);
      if (headers === undefined) {
        headers = buildUpstreamHeaders(context.clientHeaders, to, context.credential);
        headersFor.set(to.name, headers);
      }
      if (bodyHeaders !== undefined) {
        const { 'content-type': _json, ...rest } = headers;
        headers = { ...rest, ...bodyHeaders };
      }
      record.upstreamName = to.name;
      record.attempts++;
      const response = await deps.upstream.send({
        upstream: to,
        method,
        path,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: client.cancellation,
      });
      record.upstreamStatus = response.statusCode;
      return response;
    },
  };
  try {
    await exchange(upstream);
  } catch (error) {
    if (client.cancellation.aborted) return client.destroy();
    if (isGatewayError(error)) {
      deps.metrics.upstreamErrors.inc({ upstream: record.upstreamName ?? target.name, code: error.code });
      record.errorCause = causeOf(error);
    }
    throw error;
  } finally {
    const elapsedMs = deps.now() - startedAtMs;
    record.upstreamMs += elapsedMs;
    const status = record.upstreamStatus === undefined ? 'error' : String(record.upstreamStatus);
    deps.metrics.upstreamDuration.observe({ upstream: target.name, status }, elapsedMs / 1000);
  }
}

/** The innermost cause of a failed call, as "CODE: message" (a network error's own words, cut short). */
function causeOf(error: Error): string | undefined {
  let inner: unknown = error.cause;
  while (inner instanceof Error && inner.cause instanceof Error) inner = inner.cause;
  if (!(inner instanceof Error)) return undefined;
  const code = (inner as { code?: unknown }).code;
  const text = typeof code === 'string' ? `${code}: ${inner.message}` : inner.message;
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
