// The OpenAI-compatible routes the gateway serves: chat completions (the gateway's main work) and the
// model list (forwarded as is).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import { isGatewayError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { selectUpstream } from '../upstream/select-upstream.js';
import { isAbortError } from '../upstream/undici-upstream.js';
import type { Upstream, UpstreamResponse } from '../upstream/upstream.js';
import { parseChatCompletionRequest } from './chat-request-schema.js';
import { buildUpstreamHeaders } from './forward-headers.js';
import { isEventStream, relayEventStream, relayWholeBody } from './relay-response.js';

export interface ProxyRouteDependencies {
  config: GatewayConfig;
  upstream: Upstream;
  metrics: GatewayMetrics;
  now: () => number;
}

/** Aborts the upstream call as soon as the client goes away, so nothing keeps generating and billing. */
function abortOnClientClose(request: FastifyRequest, reply: FastifyReply): AbortController {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) {
      request.gateway.clientAborted = true;
      controller.abort();
    }
  });
  return controller;
}

export function registerProxyRoutes(app: FastifyInstance, deps: ProxyRouteDependencies): void {
  const { config, upstream, metrics, now } = deps;

  async function callUpstream(
    request: FastifyRequest,
    target: UpstreamConfig,
    call: { method: 'GET' | 'POST'; path: string; body?: string; signal: AbortSignal },
  ): Promise<UpstreamResponse> {
    const state = request.gateway;
    const credential = state.credential ?? { mode: 'pass_through', tenantId: 'anonymous' };
    const startedAtMs = now();
    state.upstreamName = target.name;
    try {
      const response = await upstream.send({
        upstream: target,
        method: call.method,
        path: call.path,
        headers: buildUpstreamHeaders(request.headers, target, credential),
        ...(call.body === undefined ? {} : { body: call.body }),
        signal: call.signal,
      });
      state.upstreamStatus = response.statusCode;
      return timed(response, () => {
        const elapsedMs = now() - startedAtMs;
        state.upstreamMs += elapsedMs;
        metrics.upstreamDuration.observe(
          { upstream: target.name, status: String(response.statusCode) },
          elapsedMs / 1000,
        );
      });
    } catch (error) {
      state.upstreamMs += now() - startedAtMs;
      if (isGatewayError(error)) metrics.upstreamErrors.inc({ upstream: target.name, code: error.code });
      throw error;
    }
  }

  async function relay(
    request: FastifyRequest,
    reply: FastifyReply,
    response: UpstreamResponse,
    signal: AbortSignal,
    streaming: boolean,
  ): Promise<FastifyReply | void> {
    const options = { reply, response, state: request.gateway, extraHeaders: {}, signal };
    try {
      if (streaming && response.statusCode < 300 && isEventStream(response.headers))
        return await relayEventStream(options);
      return await relayWholeBody(options);
    } catch (error) {
      if (signal.aborted || isAbortError(error)) return void reply.hijack();
      throw error;
    }
  }

  app.post('/v1/chat/completions', async (request, reply) => {
    const state = request.gateway;
    const chatRequest = parseChatCompletionRequest(request.body);
    state.model = chatRequest.model;
    state.stream = chatRequest.stream === true;
    const target = selectUpstream(config.upstreams, chatRequest.model);
    const controller = abortOnClientClose(request, reply);
    let response: UpstreamResponse;
    try {
      // Nothing was changed yet, so the client's own bytes go upstream: byte-identical and no re-serialization.
      response = await callUpstream(request, target, {
        method: 'POST',
        path: '/chat/completions',
        body: state.rawBody ?? JSON.stringify(chatRequest),
        signal: controller.signal,
      });
    } catch (error) {
      if (controller.signal.aborted || isAbortError(error)) return void reply.hijack();
      throw error;
    }
    return relay(request, reply, response, controller.signal, state.stream);
  });

  app.get('/v1/models', async (request, reply) => {
    const controller = abortOnClientClose(request, reply);
    let response: UpstreamResponse;
    try {
      response = await callUpstream(request, config.defaultUpstream, {
        method: 'GET',
        path: '/models',
        signal: controller.signal,
      });
    } catch (error) {
      if (controller.signal.aborted || isAbortError(error)) return void reply.hijack();
      throw error;
    }
    return relay(request, reply, response, controller.signal, false);
  });
}

/** Wraps a response so that `onDone` runs once when its body has been read to the end or failed. */
function timed(response: UpstreamResponse, onDone: () => void): UpstreamResponse {
  let done = false;
  const finish = (): void => {
    if (!done) {
      done = true;
      onDone();
    }
  };
  const source = response.body;
  return {
    ...response,
    body: (async function* timedBody(): AsyncGenerator<Buffer> {
      try {
        yield* source;
      } finally {
        finish();
      }
    })(),
    discard: () => {
      finish();
      response.discard();
    },
  };
}
