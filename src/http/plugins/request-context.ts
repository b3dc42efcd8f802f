// Per-request bookkeeping, for every route and every answer (refusals and 404s included): the request
// state the handlers fill in, the request id (the client's own `x-request-id` when it sent a usable one),
// and one log line and the request metrics when the answer is finished or the client has gone.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { randomUUID } from 'node:crypto';
import { firstHeaderValue } from '../../header-value.js';
import type { Logger } from 'pino';
import { infoLineWriter } from '../../logger.js';
import { flatText } from '../../flat-string.js';
import type { GatewayMetrics } from '../../metrics.js';
import { createRequestState, type RequestState } from '../request-record.js';
import type { RenderReport } from '../../context/types.js';

/** Routes whose requests are counted but not logged: probes, scrapes and connection warm-ups would drown the log. */
const quietRoutes = new Set(['/healthz', '/readyz', '/metrics', '/api/hello']);

/** A client's request id is taken when it is short printable ASCII; anything else gets a fresh one. */
const usableRequestId = /^[\x21-\x7e]{1,200}$/;

export function requestIdFrom(header: string | string[] | undefined, generate: () => string): string {
  const value = firstHeaderValue(header);
  return value !== undefined && usableRequestId.test(value) ? value : generate();
}

/**
 * A fresh request id, as `randomUUID()` makes it, in one piece (flat-string.ts): node joins a UUID from
 * 20 pieces, and with it the request's log record cost V8's general serializer about 12 thousand more
 * instructions per request on Node 26 (docs/operations.md).
 */
export function freshRequestId(): string {
  return flatText(randomUUID());
}

export interface RequestContextOptions {
  logger: Logger;
  metrics: GatewayMetrics;
  now: () => number;
  /**
   * How long a finished (or abandoned) request's line waits for its service to say what it did; past
   * it the line is written with what is known, so a service that never returns still leaves one.
   */
  outcomeWaitMs?: number;
}

const defaultOutcomeWaitMs = 30_000;

/** Resolves false once `serving` settles, or true when `waitMs` passes first. */
function unfinishedAfter(serving: Promise<void>, waitMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(true), waitMs);
    timer.unref();
    void serving.then(() => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}

function round(milliseconds: number): number {
  return Math.round(milliseconds * 1000) / 1000;
}

/** The path of a request without its query, cut short: a 404 line says what was asked for. */
function pathOf(request: FastifyRequest): string {
  const url = request.url;
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

/** What fitting the context did, by the action the metric names: read from the report, built once. */
const contextActions: ReadonlyArray<readonly [string, (report: RenderReport) => number]> = [
  ['dropped_messages', (report) => report.droppedMessages],
  ['dropped_iteration_groups', (report) => report.droppedIterationGroups],
  ['truncated_tool_results', (report) => report.truncatedToolResults],
  ['masked_tool_results', (report) => report.maskedToolResults],
  ['summary_used', (report) => (report.summaryUsed ? 1 : 0)],
  ['orphans_removed', (report) => report.orphansRemoved],
  ['oversize_truncated', (report) => (report.oversizeTruncated ? 1 : 0)],
];

function countContextActions(metrics: GatewayMetrics, report: RenderReport): void {
  for (const [action, countOf] of contextActions) {
    const count = countOf(report);
    if (count > 0) metrics.contextActions.inc({ action }, count);
  }
}

function logRequest(
  request: FastifyRequest,
  statusCode: number,
  ended: boolean,
  { metrics, now }: RequestContextOptions,
  writeLine: (record: object) => void,
  serviceUnfinished: boolean,
): void {
  const state = request.gateway;
  const totalMs = now() - state.startedAtMs;
  const overheadMs = Math.max(0, totalMs - state.upstreamMs);
  // 499, as nginx logs it: the client went away before the answer was complete.
  const status = ended && !state.clientAborted ? statusCode : 499;
  metrics.requests.inc({
    route: state.route,
    status: String(status),
    model: metrics.modelLabel(state.model),
    code: state.errorCode ?? state.streamErrorCode ?? '',
  });
  metrics.requestDuration.observe({ route: state.route }, totalMs / 1000);
  if (state.upstreamName !== undefined)
    metrics.gatewayOverhead.observe({ route: state.route }, overheadMs / 1000);
  if (quietRoutes.has(state.route)) return;
  const context = state.context;
  if (context !== undefined && state.upstreamName !== undefined) countContextActions(metrics, context);
  writeLine({
    reqId: request.id,
    method: request.method,
    route: state.route,
    path: state.route === 'unknown' ? pathOf(request) : undefined,
    status,
    model: state.model,
    fallback: state.fallback,
    stream: state.stream,
    upstream: state.upstreamName,
    upstreamStatus: state.upstreamStatus,
    tenant: state.credential?.tenantId,
    session: state.session,
    otherConversation: state.otherConversation,
    startedOver: state.startedOver,
    errorCode: state.errorCode,
    errorParam: state.errorParam,
    dropped: state.dropped,
    attempts: state.attempts > 1 ? state.attempts : undefined,
    recallCalls: state.recallCalls,
    errorCause: state.errorCause,
    streamErrorCode: state.streamErrorCode,
    context:
      context === undefined
        ? undefined
        : {
            window: context.window,
            inputTokens: context.inputTokens,
            modified: context.modified,
            droppedMessages: context.droppedMessages,
            summarizedMessages: context.summarizedMessages || undefined,
            droppedIterationGroups: context.droppedIterationGroups,
            truncatedToolResults: context.truncatedToolResults,
            maskedToolResults: context.maskedToolResults,
            summaryTokens: context.regions.summary || undefined,
            orphansRemoved: context.orphansRemoved || undefined,
          },
    clientAborted: state.clientAborted || undefined,
    // Written without the service's outcome: it had not returned within the bound.
    serviceUnfinished: serviceUnfinished || undefined,
    durations: {
      totalMs: round(totalMs),
      upstreamMs: round(state.upstreamMs),
      overheadMs: round(overheadMs),
    },
  });
}

function requestContext(app: FastifyInstance, options: RequestContextOptions): void {
  app.decorateRequest('gateway', null as unknown as RequestState);
  // Written as `logger.info(record, 'request')` would write it, at a third of its cost (logger.ts).
  const writeLine = infoLineWriter(options.logger, 'request');
  // Callback style, not async: this runs on every request and a promise per hook is measurable.
  app.addHook('onRequest', (request, reply, done) => {
    const state = createRequestState(options.now());
    state.route = request.routeOptions.url ?? 'unknown';
    request.gateway = state;
    reply.header('x-request-id', request.id);
    let logged = false;
    const logOnce = (ended: boolean): void => {
      if (logged) return;
      logged = true;
      const log = (unfinished: boolean): void =>
        logRequest(request, reply.raw.statusCode, ended, options, writeLine, unfinished);
      // The answer can be out before the service has returned what it did: the line waits for it, within
      // a bound.
      if (state.serving === undefined) log(false);
      else void unfinishedAfter(state.serving, options.outcomeWaitMs ?? defaultOutcomeWaitMs).then(log);
    };
    reply.raw.once('finish', () => logOnce(true));
    // 'close' without 'finish': the connection went away before the answer was complete.
    reply.raw.once('close', () => logOnce(reply.raw.writableFinished));
    done();
  });
}

export const requestContextPlugin = fastifyPlugin(requestContext, { name: 'ctxgate-request-context' });

declare module 'fastify' {
  interface FastifyRequest {
    gateway: RequestState;
  }
}
