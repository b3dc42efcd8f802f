// The OpenAI-compatible routes the gateway serves: chat completions (the gateway's main work) and the
// model list (forwarded as is).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ContextMessage } from '../context/types.js';
import type { SessionStore } from '../store/session-store.js';
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import { isGatewayError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { selectUpstream } from '../upstream/select-upstream.js';
import type { Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';
import type { Upstream, UpstreamResponse } from '../upstream/upstream.js';
import { parseChatCompletionRequest } from './chat-request-schema.js';
import { cancelOnClientClose, type ClientCancellation } from './client-cancellation.js';
import { buildUpstreamHeaders } from './forward-headers.js';
import { serializeChatBody } from './chat-body.js';
import { contextResponseHeaders, prepareContext, tokenizerFor } from './prepare-context.js';
import { beginSessionTurn, previewSessionTurn, sessionIdFrom } from './session-turn.js';
import { isEventStream, relayEventStream, relayWholeBody } from './relay-response.js';

export interface ProxyRouteDependencies {
  config: GatewayConfig;
  upstream: Upstream;
  metrics: GatewayMetrics;
  tokenizers: Tokenizers;
  sessionStore: SessionStore;
  now: () => number;
}

interface UpstreamCall {
  target: UpstreamConfig;
  method: 'GET' | 'POST';
  path: string;
  body?: string | Buffer;
  streaming: boolean;
  extraHeaders?: Record<string, string>;
  onReply?: (reply: Record<string, unknown> | undefined) => Promise<unknown>;
}

export function registerProxyRoutes(app: FastifyInstance, deps: ProxyRouteDependencies): void {
  const { config, upstream, metrics, tokenizers, sessionStore, now } = deps;

  /** One upstream call relayed to the client; the time from sending to the end of the body counts as upstream time. */
  async function forward(
    request: FastifyRequest,
    reply: FastifyReply,
    call: UpstreamCall,
  ): Promise<FastifyReply | void> {
    const state = request.gateway;
    const cancellation: ClientCancellation = cancelOnClientClose(request, reply);
    const startedAtMs = now();
    let status = 'error';
    state.upstreamName = call.target.name;
    try {
      const response: UpstreamResponse = await upstream.send({
        upstream: call.target,
        method: call.method,
        path: call.path,
        headers: buildUpstreamHeaders(
          request.headers,
          call.target,
          state.credential ?? { mode: 'pass_through', tenantId: 'anonymous' },
        ),
        ...(call.body === undefined ? {} : { body: call.body }),
        signal: cancellation,
      });
      status = String(response.statusCode);
      state.upstreamStatus = response.statusCode;
      const options = {
        reply,
        response,
        state,
        extraHeaders: call.extraHeaders ?? {},
        cancellation,
        onReply: call.onReply,
      };
      if (call.streaming && response.statusCode < 300 && isEventStream(response.headers))
        return await relayEventStream(options);
      return await relayWholeBody(options);
    } catch (error) {
      if (cancellation.aborted) return void reply.hijack();
      if (isGatewayError(error)) metrics.upstreamErrors.inc({ upstream: call.target.name, code: error.code });
      throw error;
    } finally {
      const elapsedMs = now() - startedAtMs;
      state.upstreamMs += elapsedMs;
      metrics.upstreamDuration.observe({ upstream: call.target.name, status }, elapsedMs / 1000);
    }
  }

  app.post('/v1/chat/completions', async (request, reply) => {
    const state = request.gateway;
    const chatRequest = parseChatCompletionRequest(request.body);
    state.model = chatRequest.model;
    state.stream = chatRequest.stream === true;
    const sessionId = sessionIdFrom(request.headers);
    const turn =
      sessionId === undefined
        ? undefined
        : await beginSessionTurn({
            store: sessionStore,
            key: { tenantId: state.credential?.tenantId ?? 'anonymous', sessionId },
            headers: request.headers,
            incoming: chatRequest.messages as ContextMessage[],
            tokenizer: tokenizerFor(config, tokenizers, chatRequest.model),
            holdMs: config.sessions.hold_ms,
          });
    try {
      const prepared = prepareContext({
        config,
        tokenizers,
        chatRequest,
        headers: request.headers,
        session: turn,
      });

      state.context = prepared.report;
      const extraHeaders = contextResponseHeaders(prepared);
      if (turn !== undefined) {
        extraHeaders['x-session-id'] = turn.sessionId;
        extraHeaders['x-session-messages'] = String(turn.messagesAfterCommit);
      }
      // Unchanged stateless conversations go upstream as the client's own bytes: no re-serialization.
      const unchanged = turn === undefined && !prepared.report.modified && state.rawBody !== undefined;
      return await forward(request, reply, {
        target: selectUpstream(config.upstreams, chatRequest.model),
        method: 'POST',
        path: '/chat/completions',
        body: unchanged
          ? (state.rawBody as string)
          : serializeChatBody(chatRequest, prepared.messages, turn?.knownBytes(prepared.messages)),

        streaming: state.stream,
        extraHeaders,
        ...(turn === undefined
          ? {}
          : {
              onReply: (assistant: Record<string, unknown> | undefined) =>
                turn.commit(assistant, {
                  window: prepared.settings.window,
                  historyStartIndex: prepared.report.historyStartIndex,
                  keepFirstTurns: prepared.settings.policy.keep_first_turns,
                }),
            }),
      });
    } finally {
      await turn?.release();
    }
  });

  app.post('/v1/context/render', async (request, reply) => {
    const state = request.gateway;
    const chatRequest = parseChatCompletionRequest(request.body);
    state.model = chatRequest.model;
    const sessionId = sessionIdFrom(request.headers);
    // With X-Session-Id: the session as the next chat request would see it, read without holding or changing it.
    const view =
      sessionId === undefined
        ? undefined
        : await previewSessionTurn({
            store: sessionStore,
            key: { tenantId: state.credential?.tenantId ?? 'anonymous', sessionId },
            headers: request.headers,
            incoming: chatRequest.messages as ContextMessage[],
            tokenizer: tokenizerFor(config, tokenizers, chatRequest.model),
          });
    const prepared = prepareContext({
      config,
      tokenizers,
      chatRequest,
      headers: request.headers,
      session: view,
    });
    state.context = prepared.report;
    const headers = contextResponseHeaders(prepared);
    if (view !== undefined) headers['x-session-id'] = view.sessionId;
    return reply.headers(headers).send({
      object: 'context.render',
      model: chatRequest.model,
      window: prepared.settings.window,
      output_reserve: prepared.settings.outputReserve,
      safety_margin: prepared.settings.safetyMarginTokens,
      policy: prepared.settings.policyName ?? 'default',
      tokenizer: prepared.settings.model.tokenizer,
      messages: prepared.messages,
      report: prepared.report,
    });
  });

  app.get('/v1/models', async (request, reply) =>
    forward(request, reply, {
      target: config.defaultUpstream,
      method: 'GET',
      path: '/models',
      streaming: false,
    }),
  );
}
