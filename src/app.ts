// The fastify application: plugins and routes only, wired from what it is given. It never listens and
// never reads the environment; main.ts and tests do that.
//
// Scopes: the probes (/healthz, /readyz, /metrics, /api/hello) are public; every route of the API scope
// is behind client authentication, decided on the route the router matched; the admin routes sit in a
// scope of their own behind the admin key.
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
} from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/gateway-config.js';
import { GatewayError, toOpenAIErrorBody } from './errors.js';
import { createAuthenticator } from './auth/authenticate.js';
import { handleError } from './http/error-handler.js';
import { registerOperationalRoutes, type ReadinessProbe } from './http/operational-routes.js';
import type { GatewayMetrics } from './metrics.js';
import { registerSessionRoutes } from './http/session-routes.js';
import { registerChatRoutes } from './http/chat-routes.js';
import { registerPassthroughRoutes } from './http/passthrough-routes.js';
import { registerResponsesRoutes } from './http/responses-routes.js';
import { registerMessagesRoutes } from './http/messages-routes.js';
import { registerUiRoutes } from './http/ui-routes.js';
import type { GatewayServices } from './create-services.js';
import type { SessionSummarizer } from './sessions/session-summarizer.js';
import { registerAdminRoutes } from './http/admin-routes.js';
import { freshRequestId, requestContextPlugin, requestIdFrom } from './http/plugins/request-context.js';
import { jsonBodyParserPlugin } from './http/plugins/json-body-parser.js';
import { jsonShapeLimits } from './json-body.js';
import { earlyRefusalDrainPlugin } from './http/plugins/early-refusal-drain.js';
import { corsPlugin } from './http/plugins/cors.js';
import { shutdownGatePlugin } from './http/plugins/shutdown-gate.js';
import { addClientAuthentication } from './http/plugins/client-auth.js';

export interface AppDependencies {
  config: GatewayConfig;
  logger: Logger;
  metrics: GatewayMetrics;
  readiness: ReadinessProbe;
  /** The application, built once by the composition root (create-services.ts). */
  services: GatewayServices;
  /** Monotonic milliseconds; injected so durations can be controlled in tests. */
  now?: () => number;
  generateRequestId?: () => string;
}

export interface GatewayApp {
  app: FastifyInstance;
  /** Marks the gateway as closing: /readyz fails and new requests get 503 while in-flight ones finish. */
  beginShutdown(): void;
  /** Background summarization of long sessions (docs/sessions.md#summarization). */
  summarizer: SessionSummarizer;
  /** Every route registered, as the router matches it (filled in once the app is ready). */
  routes: ReadonlyArray<{ method: string; url: string }>;
}

/**
 * Node's HTTP parser refuses some requests before fastify sees them (a malformed request line, headers
 * over the size limit): they get an OpenAI-shaped body too, and the connection is closed.
 */
function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, gatewayError] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ([
          431,
          'Request Header Fields Too Large',
          new GatewayError('headers_too_large', 'The request headers are larger than the gateway accepts.'),
        ] as const)
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ([
            408,
            'Request Timeout',
            new GatewayError('request_timeout', 'The request was not received in time.'),
          ] as const)
        : ([
            400,
            'Bad Request',
            new GatewayError('invalid_request', 'The HTTP request could not be parsed.'),
          ] as const);
  const body = JSON.stringify(toOpenAIErrorBody(gatewayError));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** The client API's routes: chat, sessions, the Responses and Messages APIs, the pass-through. */
function registerClientRoutes(api: FastifyInstance, config: GatewayConfig, services: GatewayServices): void {
  const streamKeepaliveMs = config.server.stream_keepalive_ms;
  registerChatRoutes(api, {
    chat: services.chat,
    forwarder: services.forwarder,
    models: services.models,
    defaultUpstream: config.defaultUpstream,
    upstreamCount: config.upstreams.length,
    streamKeepaliveMs,
  });
  registerSessionRoutes(api, { sessionStore: services.sessionStore });
  registerResponsesRoutes(api, { responses: services.responses, streamKeepaliveMs });
  registerMessagesRoutes(api, { messages: services.messages, streamKeepaliveMs });
  // Its own scope: bodies there are forwarded as they arrive, not parsed.
  api.register(async (passthrough) => {
    registerPassthroughRoutes(passthrough, { passthrough: services.passthrough, streamKeepaliveMs });
  });
}

export function buildApp(deps: AppDependencies): GatewayApp {
  const { config, logger, metrics } = deps;
  const now = deps.now ?? (() => performance.now());
  const generateRequestId = deps.generateRequestId ?? freshRequestId;
  const authenticator = createAuthenticator({
    gatewayApiKeys: config.gatewayApiKeys,
    anonymousTenant: config.sessions.anonymous_tenant,
  });
  let closing = false;

  const app = Fastify({
    // A child: fastify's own start-up line is silenced in main.ts (the gateway writes one of its own).
    loggerInstance: logger.child({}) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.server.body_limit_bytes,
    requestTimeout: config.server.request_timeout_ms,
    keepAliveTimeout: config.server.keep_alive_timeout_ms,
    // A connection may sit silent while the upstream thinks — until its headers, then until its answer's
    // first chunk (undici-upstream.ts firstChunkMs) — let the gateway's own timeouts fire first.
    connectionTimeout:
      config.timeouts.upstream_first_byte_ms +
      Math.max(config.timeouts.upstream_first_byte_ms, config.timeouts.upstream_idle_ms) +
      15_000,
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    requestIdHeader: false,
    genReqId: (request) => requestIdFrom(request.headers['x-request-id'], generateRequestId),
    clientErrorHandler,
    // Ids of any length reach their route, which says what is wrong with them (a session id is at most
    // 128 characters): past the router's default of 100 a route would not match and the request would
    // fall through to the pass-through.
    routerOptions: { maxParamLength: 16_384 },
    // A request target the router cannot decode (bad percent-encoding) is answered like every error.
    frameworkErrors: (error, request, reply) => {
      logger.info({ reqId: request.id, method: request.method, code: error.code }, 'request refused');
      const body = toOpenAIErrorBody(
        new GatewayError('invalid_request', 'The request URL is not valid (bad percent-encoding).', {
          param: 'url',
        }),
      );
      void (reply as FastifyReply)
        .code(400)
        .header('x-request-id', request.id)
        .type('application/json')
        .send(body);
    },
  });

  const routes: Array<{ method: string; url: string }> = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url });
  });
  app.register(requestContextPlugin, { logger, metrics, now });
  app.register(corsPlugin, { origins: config.server.cors_origins });
  app.register(shutdownGatePlugin, { isClosing: () => closing });
  app.register(jsonBodyParserPlugin, {
    bodyLimitBytes: config.server.body_limit_bytes,
    shape: jsonShapeLimits(config),
  });
  app.register(earlyRefusalDrainPlugin, {
    // Discarding is cheap (a few ms of CPU per MiB); a client past this is cut off as before.
    maxBytes: Math.max(64 * 1024 * 1024, 2 * config.server.body_limit_bytes),
    maxMs: 10_000,
  });

  app.setErrorHandler((error, request, reply) => handleError(error, request, reply));
  app.setNotFoundHandler((request, reply) =>
    handleError(
      new GatewayError('not_found', `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`),
      request,
      reply,
    ),
  );

  const { services } = deps;
  const summarizer = services.summarizer;
  // Running summarization jobs are abandoned on close: nothing half-stored, retried after a restart.
  app.addHook('onClose', async () => summarizer.close());

  app.register(async (probes) => {
    registerOperationalRoutes(probes, { metrics, readiness: deps.readiness, isClosing: () => closing });
  });
  // The inspector's page: static, no key (it signs in against the API).
  app.register(async (ui) => registerUiRoutes(ui));
  app.register(async (api) => {
    addClientAuthentication(api, authenticator);
    registerClientRoutes(api, config, services);
  });
  // The admin endpoints check their own key (admin-routes.ts); a client key never opens them.
  app.register(async (admin) => {
    registerAdminRoutes(admin, {
      config,
      budgets: services.budgets,
      learned: services.learnedLimits,
    });
  });

  return {
    app,
    summarizer,
    routes,
    beginShutdown() {
      closing = true;
    },
  };
}
