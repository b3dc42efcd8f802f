// The composition root: buildApp wires fastify, routes, upstream, metrics and logger from what it is
// given. It never listens and never reads the environment; main.ts and tests do that.
import { createMemoryLearnedLimits, type LearnedLimits } from './store/learned-limits.js';
import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
} from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/gateway-config.js';
import { GatewayError } from './errors.js';
import { createAuthenticator } from './http/authenticate.js';
import { handleError } from './http/error-handler.js';
import { parseJsonBody } from './http/json-body.js';
import { registerOperationalRoutes, type ReadinessProbe } from './http/operational-routes.js';
import { registerProxyRoutes } from './http/proxy-routes.js';
import { createRequestState, type RequestState } from './http/request-state.js';
import type { GatewayMetrics } from './metrics.js';
import type { SessionStore } from './store/session-store.js';
import type { Tokenizers } from './tokenizer/tiktoken-tokenizers.js';
import { registerSessionRoutes } from './http/session-routes.js';
import type { Upstream } from './upstream/upstream.js';
import { createSessionSummarizer, type SessionSummarizer } from './summarization/session-summarizer.js';
import { createBudgetService } from './budget/budget-service.js';
import type { BudgetStore } from './store/budget-store.js';
import { createMemoryBudgetStore } from './store/memory-budget-store.js';
import { registerAdminRoutes } from './http/admin-routes.js';

export interface AppDependencies {
  config: GatewayConfig;
  logger: Logger;
  upstream: Upstream;
  metrics: GatewayMetrics;
  readiness: ReadinessProbe;
  tokenizers: Tokenizers;
  sessionStore: SessionStore;
  /** Limits learned from the upstreams' overflow errors; in-process when not given. */
  learnedLimits?: LearnedLimits;
  /** Token budget counters; in-process when not given. */
  budgetStore?: BudgetStore;
  /** Wall-clock milliseconds (budget periods follow it); injected in tests. */
  clock?: () => number;
  /** Monotonic milliseconds; injected so durations can be controlled in tests. */
  now?: () => number;
  generateRequestId?: () => string;
}

export interface GatewayApp {
  app: FastifyInstance;
  /** Marks the gateway as closing: /readyz fails and new requests get 503 while in-flight ones finish. */
  beginShutdown(): void;
  /** Background summarization of long sessions (SPEC §7). */
  summarizer: SessionSummarizer;
}

export function buildApp(deps: AppDependencies): GatewayApp {
  const { config, logger, metrics } = deps;
  const now = deps.now ?? (() => performance.now());
  const generateRequestId = deps.generateRequestId ?? randomUUID;
  const authenticator = createAuthenticator({ gatewayApiKeys: config.gatewayApiKeys });
  let closing = false;

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.server.body_limit_bytes,
    requestTimeout: config.server.request_timeout_ms,
    keepAliveTimeout: config.server.keep_alive_timeout_ms,
    // A connection may sit silent while the upstream thinks; let the gateway's own timeouts fire first.
    connectionTimeout:
      Math.max(config.timeouts.upstream_first_byte_ms, config.timeouts.upstream_idle_ms) + 15_000,
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    requestIdHeader: false,
    genReqId: () => generateRequestId(),
  });

  app.decorateRequest('gateway', null as unknown as RequestState);

  app.removeAllContentTypeParsers();
  const parseBody = (
    request: FastifyRequest,
    body: string | Buffer,
    done: (error: Error | null, value?: unknown) => void,
  ): void => {
    try {
      request.gateway.rawBody = body as string;
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  };
  const parserOptions = { parseAs: 'string' as const, bodyLimit: config.server.body_limit_bytes };
  // application/json by exact match (fastify caches that lookup), and every other Content-Type as JSON
  // too: `curl -d` sends form encoding by default.
  app.addContentTypeParser('application/json', parserOptions, parseBody);
  app.addContentTypeParser('*', parserOptions, parseBody);

  // Callback style, not async: this runs on every request and a promise per hook is measurable.
  app.addHook('onRequest', (request, reply, done) => {
    const state = createRequestState(now());
    state.route = request.routeOptions.url ?? 'unknown';
    request.gateway = state;
    reply.header('x-ctxgate-request-id', request.id);
    let logged = false;
    const logOnce = (ended: boolean): void => {
      if (logged) return;
      logged = true;
      logRequest(request.id, state, reply.raw.statusCode, ended);
    };
    reply.raw.once('finish', () => logOnce(true));
    // 'close' without 'finish': the connection went away before the answer was complete.
    reply.raw.once('close', () => logOnce(reply.raw.writableFinished));
    try {
      if (closing) {
        reply.header('connection', 'close');
        if (state.route !== '/healthz' && state.route !== '/readyz') {
          throw new GatewayError('shutting_down', 'The gateway is shutting down; retry on another instance.');
        }
      }
      // The admin endpoints check their own key (admin-routes.ts); a client key never opens them.
      if (request.url.startsWith('/v1/') && !request.url.startsWith('/v1/admin/'))
        state.credential = authenticator.authenticate(request.headers);
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  });

  function logRequest(requestId: string, state: RequestState, statusCode: number, ended: boolean): void {
    const totalMs = now() - state.startedAtMs;
    const overheadMs = Math.max(0, totalMs - state.upstreamMs);
    // 499, as nginx logs it: the client went away before the answer was complete.
    const status = ended && !state.clientAborted ? statusCode : 499;
    metrics.requests.inc({
      route: state.route,
      status: String(status),
      model: metrics.modelLabel(state.model),
    });
    metrics.requestDuration.observe({ route: state.route }, totalMs / 1000);
    if (state.upstreamName !== undefined)
      metrics.gatewayOverhead.observe({ route: state.route }, overheadMs / 1000);
    if (state.route === '/healthz' || state.route === '/readyz' || state.route === '/metrics') return;
    logger.info(
      {
        reqId: requestId,
        route: state.route,
        status,
        model: state.model,
        stream: state.stream,
        upstream: state.upstreamName,
        upstreamStatus: state.upstreamStatus,
        tenant: state.credential?.tenantId,
        session: state.session,
        errorCode: state.errorCode,
        streamErrorCode: state.streamErrorCode,
        context:
          state.context === undefined
            ? undefined
            : {
                window: state.context.window,
                inputTokens: state.context.inputTokens,
                modified: state.context.modified,
                droppedMessages: state.context.droppedMessages,
                droppedIterationGroups: state.context.droppedIterationGroups,
                truncatedToolResults: state.context.truncatedToolResults,
                maskedToolResults: state.context.maskedToolResults,
                summaryTokens: state.context.regions.summary || undefined,
              },

        clientAborted: state.clientAborted || undefined,
        durations: {
          totalMs: round(totalMs),
          upstreamMs: round(state.upstreamMs),
          overheadMs: round(overheadMs),
        },
      },
      'request',
    );
  }

  app.setErrorHandler((error, request, reply) => handleError(error, request, reply));
  app.setNotFoundHandler((request, reply) =>
    handleError(
      new GatewayError('not_found', `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`),
      request,
      reply,
    ),
  );

  registerOperationalRoutes(app, { metrics, readiness: deps.readiness, isClosing: () => closing });
  const learnedLimits = deps.learnedLimits ?? createMemoryLearnedLimits();
  const budgetStore = deps.budgetStore ?? createMemoryBudgetStore();
  const budgets = createBudgetService({
    config,
    store: budgetStore,
    metrics,
    logger,
    ...(deps.clock === undefined ? {} : { clock: deps.clock }),
  });
  const summarizer = createSessionSummarizer({
    config,
    store: deps.sessionStore,
    upstream: deps.upstream,
    tokenizers: deps.tokenizers,
    metrics,
    learnedLimits,
    logger,
    budgets,
  });
  // Running summarization jobs are abandoned on close: nothing half-stored, retried after a restart.
  app.addHook('onClose', async () => summarizer.close());
  registerProxyRoutes(app, {
    budgets,
    config,
    upstream: deps.upstream,
    metrics,
    tokenizers: deps.tokenizers,
    sessionStore: deps.sessionStore,
    learnedLimits,
    summarizer,
    now,
  });

  registerSessionRoutes(app, { sessionStore: deps.sessionStore });
  registerAdminRoutes(app, {
    config,
    budgetStore,
    ...(deps.clock === undefined ? {} : { clock: deps.clock }),
  });

  return {
    app,
    summarizer,
    beginShutdown() {
      closing = true;
    },
  };
}

function round(milliseconds: number): number {
  return Math.round(milliseconds * 1000) / 1000;
}
