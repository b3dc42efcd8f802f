// The OpenAI-compatible routes the gateway serves: chat completions (the gateway's main work) and the
// model list (forwarded as is).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ContextMessage } from '../context/types.js';
import { hashedSessionId, type SessionStore } from '../store/session-store.js';

import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { selectUpstream } from '../upstream/select-upstream.js';
import { isCalibrated } from '../config/model-table.js';
import type { Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';
import type { Upstream, UpstreamResponse } from '../upstream/upstream.js';
import { parseChatCompletionRequest, type ChatCompletionRequest } from './chat-request-schema.js';
import { cancelOnClientClose, type ClientCancellation } from './client-cancellation.js';
import { buildUpstreamHeaders } from './forward-headers.js';
import { serializeChatBody } from './chat-body.js';
import { contextResponseHeaders, countPrecisionFor, tokenizerFor } from './prepare-context.js';
import { minimumAnswerTokens } from '../upstream/classify-upstream-error.js';
import { beginSessionTurn, previewSessionTurn, sessionIdFrom, sessionKeyFor } from './session-turn.js';
import { anonymousTenantId } from './authenticate.js';
import { isEventStream, relayEventStream, relayWholeBody } from './relay-response.js';
import { inspectAnswer } from './inspect-answer.js';
import type { LearnedLimits } from '../store/learned-limits.js';
import type { UpstreamErrorClass } from '../upstream/classify-upstream-error.js';
import type { SessionSummarizer } from '../summarization/session-summarizer.js';
import type { BudgetReservation, BudgetService } from '../budget/budget-service.js';
import { countMessageTokens } from '../context/token-accounting.js';
import type { CompletedAnswer } from './relay-response.js';
import { createContextPlanner, firstAttempt, type AttemptState } from '../chat/context-planner.js';

export interface ProxyRouteDependencies {
  config: GatewayConfig;
  upstream: Upstream;
  metrics: GatewayMetrics;
  tokenizers: Tokenizers;
  sessionStore: SessionStore;
  learnedLimits: LearnedLimits;
  summarizer: SessionSummarizer;
  budgets: BudgetService;
  now: () => number;
  random?: () => number;
}

interface UpstreamCall {
  target: UpstreamConfig;
  method: 'GET' | 'POST';
  path: string;
  body?: string | Buffer;
  streaming: boolean;
  extraHeaders?: Record<string, string>;
  onReply?: (reply: Record<string, unknown> | undefined) => Promise<unknown>;
  onUsage?: (promptTokens: number) => Record<string, string> | undefined;
  onCompletion?: (result: CompletedAnswer) => void;
  recovery?: Recovery;
  /** A chat completion: a 2xx answer must be JSON (or an event stream when streaming), else 502. */
  expectCompletion?: boolean;
}

interface Recovery {
  /** The next, smaller request after an overflow, or undefined when there is none left to try. */
  onOverflow(
    overflow: Extract<UpstreamErrorClass, { kind: 'context_overflow' }>,
  ): Promise<{ body: string | Buffer; extraHeaders: Record<string, string> } | undefined>;
  /** The upstream accepted the request as sent. */
  onSuccess(): void;
  upstreamRetries: number;
  deadlineMs: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Fewer upstream prompt tokens than this share of the (calibrated) estimate: the prompt was cut. */
const truncationShare = 0.5;

/** The longest Retry-After the gateway waits out itself. */
const maxRetryWaitMs = 10_000;

export function registerProxyRoutes(app: FastifyInstance, deps: ProxyRouteDependencies): void {
  const { config, upstream, metrics, tokenizers, sessionStore, now, learnedLimits, summarizer, budgets } =
    deps;
  const random = deps.random ?? Math.random;
  const planner = createContextPlanner({ config, tokenizers, learnedLimits });
  const requestLimits = {
    maxMessages: config.server.max_messages,
    maxContentParts: config.server.max_content_parts,
  };

  /**
   * One upstream call relayed to the client; the time from sending to the end of the body counts as
   * upstream time. With `recovery`, what the upstream answers is looked at before any byte reaches the
   * client: a context overflow goes back to the caller for a smaller request, and 429, 5xx and
   * connection errors are retried with backoff (SPEC §6).
   */
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
    const recovery = call.recovery;
    let current = { body: call.body, extraHeaders: call.extraHeaders ?? {} };
    let upstreamRetries = 0;
    try {
      for (;;) {
        let response: UpstreamResponse;
        try {
          response = await upstream.send({
            upstream: call.target,
            method: call.method,
            path: call.path,
            headers: buildUpstreamHeaders(
              request.headers,
              call.target,
              state.credential ?? { mode: 'none', tenantId: anonymousTenantId, mayHoldSessions: false },
            ),
            ...(current.body === undefined ? {} : { body: current.body }),
            signal: cancellation,
          });
        } catch (error) {
          const retryable = isGatewayError(error) && error.code === 'upstream_unreachable';
          if (recovery !== undefined && retryable && !cancellation.aborted) {
            const waitMs = backoffMs(upstreamRetries, undefined, recovery, startedAtMs);
            if (waitMs !== undefined) {
              upstreamRetries++;
              metrics.upstreamRetries.inc({ upstream: call.target.name, reason: 'connection' });
              await sleep(waitMs);
              continue;
            }
          }
          throw error;
        }
        status = String(response.statusCode);
        state.upstreamStatus = response.statusCode;
        if (recovery !== undefined && (response.statusCode >= 300 || call.streaming)) {
          const inspected = await inspectAnswer(response, call.streaming);
          response = inspected.response;
          const verdict = inspected.classification;
          if (verdict.kind === 'context_overflow') {
            const next = await recovery.onOverflow(verdict);
            if (next !== undefined) {
              metrics.overflowRetries.inc({
                upstream: call.target.name,
                model: metrics.modelLabel(state.model),
                remedy: verdict.remedy,
              });
              response.discard();
              current = next;
              continue;
            }
          } else if (verdict.kind === 'rate_limited' || verdict.kind === 'server') {
            const waitMs = backoffMs(upstreamRetries, verdict.retryAfterMs, recovery, startedAtMs);
            if (waitMs !== undefined) {
              response.discard();
              upstreamRetries++;
              metrics.upstreamRetries.inc({ upstream: call.target.name, reason: verdict.kind });
              await sleep(waitMs);
              continue;
            }
          } else if (verdict.kind === 'none' && response.statusCode < 300) {
            recovery.onSuccess();
          }
        } else if (recovery !== undefined && response.statusCode < 300) {
          recovery.onSuccess();
        }
        const options = {
          reply,
          response,
          state,
          extraHeaders: current.extraHeaders,
          cancellation,
          onReply: call.onReply,
          onUsage: call.onUsage,
          onCompletion: call.onCompletion,
          expectJson: call.expectCompletion === true,
        };
        const eventStream = response.statusCode < 300 && isEventStream(response.headers);
        if (call.streaming && eventStream) return await relayEventStream(options);
        if (call.streaming && call.expectCompletion === true && response.statusCode < 300) {
          response.discard();
          throw new GatewayError(
            'upstream_bad_response',
            'The upstream answered a streaming request without an event stream.',
          );
        }
        return await relayWholeBody(options);
      }
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

  /** Full-jitter exponential backoff, at least the upstream's Retry-After; undefined when out of tries or time. */
  function backoffMs(
    attempt: number,
    retryAfterMs: number | undefined,
    recovery: Recovery,
    startedAtMs: number,
  ): number | undefined {
    if (attempt >= recovery.upstreamRetries) return undefined;
    // A long Retry-After goes back to the client, which can decide whether to wait that long.
    if ((retryAfterMs ?? 0) > maxRetryWaitMs) return undefined;

    const jittered = Math.floor(random() * Math.min(8_000, 250 * 2 ** attempt));
    const waitMs = Math.max(jittered, retryAfterMs ?? 0);
    if (now() + waitMs - startedAtMs > recovery.deadlineMs) return undefined;
    return waitMs;
  }

  /** What a session turn (or its preview) needs from a chat request. */
  function sessionInput(request: FastifyRequest, chatRequest: ChatCompletionRequest, sessionId: string) {
    return {
      store: sessionStore,
      key: sessionKeyFor(request.gateway.credential, sessionId),
      headers: request.headers,
      incoming: chatRequest.messages as ContextMessage[],
      tokenizer: tokenizerFor(
        config,
        tokenizers,
        chatRequest.model,
        countPrecisionFor(request.gateway.rawBody),
      ),
    };
  }

  app.post('/v1/chat/completions', async (request, reply) => {
    const state = request.gateway;
    const chatRequest = parseChatCompletionRequest(request.body, requestLimits);
    state.model = chatRequest.model;
    state.stream = chatRequest.stream === true;
    const sessionId = sessionIdFrom(request.headers);
    // SPEC §12: a used-up hard budget is refused and backpressure waits here, before the session is held.
    if (sessionId !== undefined) sessionKeyFor(state.credential, sessionId);
    const budgetPlan = budgets.plan({
      tenantId: state.credential?.tenantId ?? anonymousTenantId,
      sessionId,
      headers: request.headers,
    });
    const budgetHeaders: Record<string, string> = {};
    // A refusal by a budget says nothing is left of it.
    const refused = (error: unknown): never => {
      if (isGatewayError(error) && error.code === 'budget_exceeded') reply.header('x-budget-remaining', '0');
      throw error;
    };
    // A session request waits before its session is held; a stateless one waits after its reservation.
    if (budgetPlan !== undefined && sessionId !== undefined) {
      const admitted = await budgets.admit(budgetPlan).catch(refused);
      Object.assign(budgetHeaders, admitted.headers);
      reply.headers(budgetHeaders);
      if (admitted.delayMs > 0) await sleep(admitted.delayMs);
    }
    const turn =
      sessionId === undefined
        ? undefined
        : await beginSessionTurn({
            ...sessionInput(request, chatRequest, sessionId),
            holdMs: config.sessions.hold_ms,
            maxTurnMessages: config.sessions.max_active_messages,
          });
    if (turn !== undefined) state.session = hashedSessionId(turn.key);
    let releaseBudget: BudgetReservation | undefined;
    try {
      const target = selectUpstream(config.upstreams, chatRequest.model);
      // SPEC §6: the retry ladder's state; what the upstream taught is read with every plan.
      const ladder: AttemptState = { ...firstAttempt };
      let retries = 0;
      const precision = countPrecisionFor(state.rawBody);
      let learned = learnedLimits.get(target.name, chatRequest.model);
      const render = () => {
        const plan = planner.plan({
          chatRequest,
          headers: request.headers,
          session: turn,
          target,
          precision,
          attempt: ladder,
        });
        const { prepared, outgoing } = plan;
        learned = plan.learned;
        state.context = prepared.report;
        const extraHeaders = contextResponseHeaders(prepared);
        extraHeaders['x-context-retries'] = String(retries);
        Object.assign(extraHeaders, budgetHeaders);
        if (turn !== undefined) {
          extraHeaders['x-session-id'] = turn.sessionId;
          extraHeaders['x-session-messages'] = String(turn.messagesAfterCommit);
        }
        // Unchanged stateless conversations go upstream as the client's own bytes: no re-serialization.
        const unchanged =
          turn === undefined &&
          !prepared.report.modified &&
          outgoing === chatRequest &&
          state.rawBody !== undefined;
        const body = unchanged
          ? (state.rawBody as string)
          : serializeChatBody(outgoing, prepared.messages, turn?.knownBytes(prepared.messages));
        return { prepared, body, extraHeaders, toolSet: plan.toolSet };
      };
      let attempt = render();
      // The request's expected cost is reserved on its budgets before it is sent.
      const reservation =
        budgetPlan === undefined
          ? undefined
          : await budgets
              .reserve(budgetPlan, {
                promptTokens: attempt.prepared.report.inputTokens * (learned.ratio ?? 1),
                maxOutputTokens: attempt.prepared.settings.outputReserve,
                backpressure: turn === undefined,
              })
              .catch(refused);
      if (reservation !== undefined) {
        Object.assign(budgetHeaders, reservation.headers);
        Object.assign(attempt.extraHeaders, reservation.headers);
        reply.headers(reservation.headers);
        if (reservation.delayMs > 0) await sleep(reservation.delayMs);
      }
      releaseBudget = reservation;
      const sentSize = (): number =>
        attempt.prepared.report.inputTokens + attempt.prepared.settings.outputReserve;
      const recovery: Recovery = {
        upstreamRetries: attempt.prepared.settings.policy.upstream_retries,
        deadlineMs: config.timeouts.upstream_retry_deadline_ms,
        async onOverflow(overflow) {
          const { policy } = attempt.prepared.settings;
          if (retries >= policy.max_retries) return undefined;
          retries++;
          const { numbers } = overflow;
          const { model } = attempt.prepared.settings;
          if (
            numbers.promptTokens !== undefined &&
            numbers.promptTokensLowerBound !== true &&
            isCalibrated(model) &&
            attempt.toolSet === undefined
          ) {
            // The upstream's own count of what was sent calibrates the estimate at once.
            learnedLimits.recordRatio(target.name, chatRequest.model, {
              reported: numbers.promptTokens,
              estimated: attempt.prepared.report.inputTokens,
            });
          }

          learnedLimits.recordOverflow(target.name, chatRequest.model, {
            ...(numbers.maxContext === undefined ? {} : { window: numbers.maxContext }),
            failedSize: sentSize(),
          });
          const promptTokens = numbers.promptTokens ?? attempt.prepared.report.inputTokens;
          const room =
            numbers.maxContext === undefined
              ? 0
              : numbers.maxContext - promptTokens - Math.ceil(numbers.maxContext / 100);
          const askedMaxTokens =
            ladder.maxTokens ?? chatRequest.max_completion_tokens ?? chatRequest.max_tokens ?? undefined;
          if (overflow.remedy === 'reduce_max_tokens' && room >= minimumAnswerTokens) {
            // The prompt fits; the answer it asked for does not: ask for what is left (never more
            // than the client asked for).
            ladder.maxTokens = Math.min(room, askedMaxTokens ?? room);
          } else {
            // Re-render with the tighter window first, then drop the oldest half of the turns, then
            // keep only the system prompt, the summary and the current turn.
            ladder.reduction = retries === 1 ? 'none' : retries === 2 ? 'drop_oldest_half' : 'minimal';
          }
          try {
            attempt = render();
          } catch (error) {
            // Nothing smaller can be sent: the client gets the upstream's own answer.
            if (isGatewayError(error) && error.code === 'context_length_exceeded') return undefined;
            throw error;
          }
          return { body: attempt.body, extraHeaders: attempt.extraHeaders };
        },
        onSuccess() {
          // A success teaches something only below a known failure, and then a window was learned.
          if (learned.window === undefined) return;
          learnedLimits.recordSuccess(target.name, chatRequest.model, sentSize());
        },
      };
      return await forward(request, reply, {
        target,
        method: 'POST',
        path: '/chat/completions',
        body: attempt.body,
        streaming: state.stream,
        extraHeaders: attempt.extraHeaders,
        recovery,
        expectCompletion: true,
        ...(reservation === undefined
          ? {}
          : {
              onCompletion: (result: CompletedAnswer) => {
                // Counted from the upstream's usage; estimated (and marked so) when it reported none.
                const { prepared } = attempt;
                const promptEstimate = Math.ceil(prepared.report.inputTokens * (learned.ratio ?? 1));
                const estimated = result.promptTokens === undefined || result.completionTokens === undefined;
                const completion =
                  result.completionTokens ??
                  (result.reply === undefined
                    ? 0
                    : countMessageTokens(
                        result.reply as ContextMessage,
                        tokenizerFor(config, tokenizers, chatRequest.model),
                      ));
                void reservation.settle({
                  tokens: (result.promptTokens ?? promptEstimate) + completion,
                  estimated,
                });
              },
            }),
        onUsage: (promptTokens: number): Record<string, string> | undefined => {
          const { prepared, toolSet } = attempt;
          const estimated = prepared.report.inputTokens;
          const model = prepared.settings.model;
          const ratio = isCalibrated(model) ? (learned.ratio ?? 1) : 1;
          if (toolSet !== undefined) {
            // What the upstream counts for this tool set: its usage less the messages' estimate. Tool sets
            // never feed the model's ratio, which stays that of plain messages.
            const messagesEstimate = (estimated - prepared.report.regions.tools) * ratio;
            learnedLimits.recordToolSetTokens(
              target.name,
              chatRequest.model,
              toolSet,
              promptTokens - messagesEstimate,
            );
          } else if (isCalibrated(model)) {
            learnedLimits.recordRatio(target.name, chatRequest.model, { reported: promptTokens, estimated });
          }
          // Some servers cut an over-long prompt instead of refusing it (SPEC §6): far fewer prompt
          // tokens than were sent. Judged against the estimate scaled by what was learned so far.
          if (estimated >= 256 && promptTokens < estimated * (learned.ratio ?? 1) * truncationShare) {
            metrics.upstreamTruncations.inc({
              upstream: target.name,
              model: metrics.modelLabel(state.model),
            });
            request.log.warn(
              {
                upstream: target.name,
                model: state.model,
                sentTokensEstimate: estimated,
                upstreamPromptTokens: promptTokens,
              },
              'upstream reported far fewer prompt tokens than were sent: it may have truncated the prompt',
            );
            return { 'x-context-upstream-truncated': 'true' };
          }
          return undefined;
        },
        ...(turn === undefined
          ? {}
          : {
              onReply: async (assistant: Record<string, unknown> | undefined) => {
                const { prepared } = attempt;
                const { activeTokens } = await turn.commit(assistant, {
                  window: prepared.settings.window,
                  historyStartIndex: prepared.report.historyStartIndex,
                  keepFirstTurns: prepared.settings.policy.keep_first_turns,
                });
                // SPEC §7: a long session gets its oldest turns summarized in the background.
                summarizer.afterTurn({
                  key: turn.key,
                  model: chatRequest.model,
                  policy: prepared.settings.policy,
                  historyBudget: prepared.report.historyBudget,
                  window: prepared.settings.window,
                  activeTokens,
                  clientHeaders: request.headers,
                  credential: state.credential,
                });
              },
            }),
      });
    } finally {
      await releaseBudget?.release();
      await turn?.release();
    }
  });

  app.post('/v1/context/render', async (request, reply) => {
    const state = request.gateway;
    const chatRequest = parseChatCompletionRequest(request.body, requestLimits);
    state.model = chatRequest.model;
    const sessionId = sessionIdFrom(request.headers);
    // With X-Session-Id: the session as the next chat request would see it, read without holding or changing it.
    const view =
      sessionId === undefined
        ? undefined
        : await previewSessionTurn(sessionInput(request, chatRequest, sessionId));
    // The same plan a chat request would make at this moment: same learned state, same code path.
    const { prepared } = planner.plan({
      chatRequest,
      headers: request.headers,
      session: view,
      target: selectUpstream(config.upstreams, chatRequest.model),
      precision: countPrecisionFor(state.rawBody),
      attempt: firstAttempt,
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
