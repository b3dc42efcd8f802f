// A chat completion, start to end (docs/architecture.md, "A chat request's path"): parse → plan budgets
// → open the session turn → render → send with recovery → relay → commit → settle. Each step is a
// function below; this module knows no fastify: the client is a ClientStream, the request's own headers
// arrive as RequestOverrides.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Credential } from '../auth/authenticate.js';
import type { BudgetPlan, BudgetReservation, BudgetService } from '../budget/budget-service.js';
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import { fallbackModelEntry } from '../config/model-table.js';
import { countMessageTokens } from '../context/token-accounting.js';
import type { ContextMessage } from '../context/types.js';
import { causeOf, GatewayError, isGatewayError, toOpenAIErrorBody } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { createHoldQueue } from '../sessions/hold-queue.js';
import { sessionKeyFor } from '../sessions/session-keys.js';
import type { SessionKey, SessionRequestReport } from '../store/session-store.js';
import { recoveryLimitsFor, retryDefaults } from '../upstream/recovery-policy.js';
import { isOpenAIReasoningModel } from '../upstream/model-family.js';
import { reasoningOf } from '../upstream/reasoning-field.js';
import { startsThinking } from '../context/summary.js';
import { setWithin } from '../bounded-memory.js';
import type { SessionSummarizer } from '../sessions/session-summarizer.js';
import {
  beginSessionTurn,
  previewSessionTurn,
  type SessionTurn,
  type SummaryMessages,
} from '../sessions/session-turn.js';
import { buildRequestReport, historyFates } from '../sessions/request-report.js';
import type { SessionView } from '../context/session-view.js';
import type { LearnedLimits } from '../store/learned-limits.js';
import { hashedSessionId, type SessionStore } from '../store/session-store.js';
import type { Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';
import { buildClientHeaders } from '../upstream/forward-headers.js';
import { errorEvent, isEventStream, usageEvent } from '../upstream/sse.js';
import { chatTextsOf, upstreamMessageForLog } from '../upstream/upstream-message.js';
import type { Upstream, UpstreamResponse } from '../upstream/upstream.js';
import { byteLengthOf, createAttemptLadder, type ChatAttempt } from './attempt-ladder.js';
import { parseChatCompletionRequest, type ChatCompletionRequest } from './chat-request-schema.js';
import { createContextPlanner } from './context-planner.js';
import { isUnknownModel } from '../context/context-settings.js';
import { countPrecisionFor, promptRoomOf, tokenizerFor } from '../context/plan-send.js';
import {
  endWithFailure,
  readWholeAnswer,
  relayStream,
  type ClientStream,
  type Usage,
} from '../upstream/relay.js';
import type { RequestOverrides } from '../context/request-overrides.js';
import { withOutcome, type RequestOutcome, type UpstreamTally } from './request-outcome.js';
import {
  callsMade,
  sendWithRecovery,
  type SendEvent,
  type SendResult,
} from '../upstream/send-with-recovery.js';
import { withAnswerToolNames } from '../upstream/tool-names.js';
import { withAnswerStops } from '../upstream/answer-stops.js';
import { offeredTools, withTextToolCalls } from '../upstream/text-tool-calls.js';
import { measuredExchange, type UpstreamExchange } from './upstream-call.js';
import { withOpenAIErrorShape } from '../upstream/upstream-error-body.js';
import type { ForeignThinkingStep } from '../upstream/anthropic-wire.js';
import { createUpstreamLessons, type UpstreamLessons } from './upstream-lessons.js';
import { answerRecallCalls, type RecallRoundsOutcome } from './recall-rounds.js';
import { maxSearchedChars, omittedSources, searchRecall, type RecallSource } from '../context/recall.js';
import { isSystemRole } from '../context/turns.js';
import { clientMessageBytes, type KnownBytes, type KnownMessageBytes } from './chat-body.js';
import {
  conservativeAnthropicFixes,
  foreignThinkingField,
  requestBytesField,
  unexplainedRefusalField,
  type FieldFix,
  type FieldFixes,
  keyScopeOf,
} from '../upstream/field-fixes.js';

/** A fix tried for a model on a refusal that named nothing (chat-turn.ts fixingFields). */
interface TriedFix {
  upstream: string;
  model: string;
  fix: FieldFix;
}

export interface ChatServiceDependencies {
  config: GatewayConfig;
  upstream: Upstream;
  metrics: GatewayMetrics;
  tokenizers: Tokenizers;
  sessionStore: SessionStore;
  learnedLimits: LearnedLimits;
  /** The request fields each model is known to refuse (docs/budgeting.md#refused-fields). */
  fieldFixes: FieldFixes;
  summarizer: SessionSummarizer;
  budgets: BudgetService;
  /** Monotonic milliseconds: retry deadlines and upstream time. */
  now: () => number;
  random: () => number;
  sleep: (ms: number) => Promise<void>;
}

/** A chat request as the HTTP edge hands it over. */
export interface ChatInput {
  body: unknown;
  /** The body's text, when the edge kept it: an unchanged conversation is forwarded as these bytes. */
  rawBody: Buffer | undefined;
  /**
   * A bridged request's messages that are the client's own elements as they are, in its bytes
   * (chat-body.ts bridgedMessageBytes): copied, not written again, when they are sent.
   */
  messageBytes?: KnownMessageBytes | undefined;
  /**
   * A Messages request's body for an `anthropic` upstream, written with what is still the client's
   * copied from its bytes, and a session's stored messages from `stored`, their stored bytes aligned
   * with the request's messages (messages/native-body.ts); else the engine's request is translated
   * and serialized whole.
   */
  anthropicBody?:
    ((chat: Record<string, unknown>, stored?: ReadonlyArray<KnownBytes | undefined>) => Buffer) | undefined;
  /**
   * A text naming the request's tools exactly, read from the client's bytes (chat-body.ts toolsKeyOf):
   * the planner knows a tool set by it without writing the definitions out.
   */
  toolsKey?: string | undefined;
  /**
   * The body the client sent (its Responses or Messages body when bridged, which has no `rawBody`) in
   * the bytes counting weighs (json-body.ts countingBytesOf): over 4 MB it is counted from samples
   * (docs/budgeting.md).
   */
  countingBytes: number;
  overrides: RequestOverrides;
  credential: Credential;
  /** Forwarded upstream (less hop-by-hop and the gateway's own headers). */
  clientHeaders: IncomingHttpHeaders;
  /** When the request arrived, on the gateway's monotonic clock (`now`). */
  startedAtMs: number;
  warn: (fields: Record<string, unknown>, message: string) => void;
  info: (fields: Record<string, unknown>, message: string) => void;
}

export interface ContextPreview {
  headers: Record<string, string>;
  body: Record<string, unknown>;
  /** The model, stream and what the context engine would do: for the request's log line. */
  outcome: RequestOutcome;
}

export interface ChatService {
  /**
   * Serves one chat completion to `client` and returns what was done (request-outcome.ts); rejects with
   * a GatewayError the edge renders, what was done until then on it.
   */
  complete(input: ChatInput, client: ClientStream): Promise<RequestOutcome>;
  /** What `complete` would send for the same request now (POST /v1/context/render): same code path. */
  preview(input: Omit<ChatInput, 'warn' | 'info'>): Promise<ContextPreview>;
}

/** The state one chat request carries from step to step. */
interface Turn {
  input: ChatInput;
  client: ClientStream;
  chatRequest: ChatCompletionRequest;
  target: UpstreamConfig;
  session: SessionTurn | undefined;
  reservation: BudgetReservation | undefined;
  lessons: UpstreamLessons;
  /** The client's own body, when it may go upstream as it is (nothing in it was changed). */
  rawBody: Buffer | undefined;
  /** The attempt that was answered and the prompt tokens the upstream reported: the inspector's report. */
  answered?: { attempt: ChatAttempt; promptTokens: number | undefined };
  /** The attempt sent last (or about to be sent): what the engine did, and the fallback. */
  lastAttempt?: ChatAttempt;
  /** The upstream calls, once the exchange is over. */
  upstream?: UpstreamTally;
  /** The inspector's report went with the stored turn. */
  reportStored?: boolean;
  /** What an attempt did to the session's messages (the report's costly part), found while it was upstream. */
  fates?: { attempt: ChatAttempt; runs: SessionRequestReport['fates'] };
  /** The recall tool's calls the gateway answered, and what those rounds cost (docs/budgeting.md#recall). */
  recall?: RecallRoundsOutcome['usage'] & { calls: number };
  /** Why a streamed turn could not be stored, in the store's words (Redis's OOM…): the log line's cause. */
  storeErrorCause?: string | undefined;
}

/** The largest upstream error body whose type, code and message the request's log line tells. */
const maxLoggedErrorBytes = 1_048_576;

/**
 * An attempt's answer read as the client asked it: calls the model wrote as text given as calls
 * (text-tool-calls.ts), each call opened with its whole name, the client's (tool-names.ts), and its text
 * cut at the stop sequences the model was not sent (answer-stops.ts).
 */
function asAsked(response: UpstreamResponse, attempt: ChatAttempt): UpstreamResponse {
  // An `anthropic` upstream's answer comes back as chat too (anthropic-wire.ts): MiniMax's Anthropic
  // endpoint writes its calls as text in it (MiniMax-AI/MiniMax-M2.5#10).
  const readsText = attempt.prepared.settings.model.textToolCalls !== 'off';
  const tools = readsText ? offeredTools(attempt.request) : undefined;
  const called = tools === undefined ? response : withTextToolCalls(response, tools, attempt.request);
  const named = attempt.toolNames === undefined ? called : withAnswerToolNames(called, attempt.toolNames);
  return attempt.heldStops === undefined ? named : withAnswerStops(named, attempt.heldStops);
}

/** What a turn did, as far as it went. */
function outcomeOfTurn(turn: Turn): RequestOutcome {
  return {
    context: turn.lastAttempt?.prepared.report,
    fallback: turn.lastAttempt?.fallback,
    upstream: turn.upstream,
    recallCalls: turn.recall?.calls,
  };
}

/** The characters of text the recall sources hold (a search reads up to maxSearchedChars). */
const charsOf = (sources: readonly RecallSource[]): number =>
  sources.reduce((sum, source) => sum + source.text.length, 0);

/** The most models whose thinking a process keeps in mind. */
const maxThinkingModels = 1_000;

/** The archive is read for the recall tool this many messages at a time, from its newest end. */
const recallArchivePage = 250;

const errorCodeOf = (error: unknown): string => (isGatewayError(error) ? error.code : 'internal_error');

export function createChatService(deps: ChatServiceDependencies): ChatService {
  const { config, metrics, budgets, learnedLimits } = deps;
  // The models whose answers showed thinking (by upstream), this process's memory: their max_tokens is
  // lowered less far (classify-upstream-error.ts answerFloorOf). At most 1,000, the oldest out first.
  const thinkingModels = new Map<string, true>();
  const thinkingKey = (upstream: string, model: string): string => `${upstream}\u0000${model}`;
  const planner = createContextPlanner({
    config,
    tokenizers: deps.tokenizers,
    learnedLimits,
    // OpenAI's reasoning models think without showing it (their usage counts it): known by name.
    thinks: (upstream, model) =>
      isOpenAIReasoningModel(model) || thinkingModels.has(thinkingKey(upstream, model)),
  });
  /** This gateway's requests for a busy session, in the order they came. */
  const holdQueue = createHoldQueue(() => metrics.sessionWaits.inc({}));
  const summaries: SummaryMessages = new WeakMap();
  const requestLimits = {
    maxMessages: config.server.max_messages,
    maxContentParts: config.server.max_content_parts,
    maxToolCalls: config.server.max_tool_calls,
  };

  /** Unknown model names already logged (bounded: a client cycling through names cannot grow it). */
  const unknownModelsLogged = new Set<string>();

  function parse(input: Omit<ChatInput, 'warn' | 'info'>, warn?: ChatInput['warn']): ChatCompletionRequest {
    const chatRequest = parseChatCompletionRequest(input.body, requestLimits);
    const { model } = chatRequest;
    // A window the client states makes any model name usable; else an unknown one's window is a guess.
    if (input.overrides.contextWindow === undefined && isUnknownModel(config, model)) {
      if (config.unknownModels === 'reject')
        throw new GatewayError(
          'unknown_model',
          `ctxgate does not know the context window of model "${model}": add it to the config's models, or send X-Context-Window.`,
          { param: 'model' },
        );
      if (warn !== undefined && !unknownModelsLogged.has(model) && unknownModelsLogged.size < 1_024) {
        unknownModelsLogged.add(model);
        warn(
          { model, assumedWindow: fallbackModelEntry.window },
          "unknown model: its context window is assumed (add it to the config's models, or set unknown_models: reject)",
        );
      }
    }
    return chatRequest;
  }

  /** A refusal by a budget says nothing is left of it. */
  function refusedBy(client: ClientStream) {
    return (error: unknown): never => {
      if (isGatewayError(error) && error.code === 'budget_exceeded')
        client.addHeaders({ 'x-budget-remaining': '0' });
      throw error;
    };
  }

  /** The budgets a request counts against (docs/budgets.md); undefined when none is configured. */
  function budgetPlanOf(input: ChatInput): BudgetPlan | undefined {
    const { overrides, credential } = input;
    return budgets.plan({
      tenantId: credential.tenantId,
      sessionId: overrides.sessionId,
      policyName: overrides.policyName,
      sessionTokens: overrides.budgetSessionTokens,
    });
  }

  /** docs/budgets.md: a used-up hard budget is refused and a session request waits here, before its hold. */
  async function admitBudgets(plan: BudgetPlan, client: ClientStream): Promise<BudgetPlan> {
    const admitted = await budgets.admit(plan).catch(refusedBy(client));
    client.addHeaders(admitted.headers);
    if (admitted.delayMs > 0) await deps.sleep(admitted.delayMs);
    return admitted.plan;
  }

  function sessionInput(
    input: Omit<ChatInput, 'warn' | 'info'>,
    chatRequest: ChatCompletionRequest,
    key: SessionKey,
  ) {
    const precision = countPrecisionFor(input.countingBytes);
    return {
      store: deps.sessionStore,
      key,
      historyMode: input.overrides.historyMode,
      incoming: chatRequest.messages as ContextMessage[],
      retry: { retried: input.overrides.retried === true, key: input.overrides.idempotencyKey },
      tokenizer: tokenizerFor(config, deps.tokenizers, chatRequest.model, precision),
      precision,
      summaries,
    };
  }

  /** The session's turn; undefined for another conversation under its id, served without it. */
  function openSession(
    input: ChatInput,
    chatRequest: ChatCompletionRequest,
    key: SessionKey,
  ): Promise<SessionTurn | undefined> {
    return beginSessionTurn(
      Object.assign({}, sessionInput(input, chatRequest, key), {
        holdQueue,
        holdMs: config.sessions.hold_ms,
        busyWaitMs: config.sessions.busy_wait_ms,
        commitCheckMs: config.sessions.commit_check_ms,
        maxTurnMessages: config.sessions.max_active_messages,
      }),
    );
  }

  /** The request's expected cost, reserved on its budgets before it is sent. */
  async function reserve(turn: Turn, plan: BudgetPlan, first: ChatAttempt): Promise<BudgetReservation> {
    const reservation = await budgets
      .reserve(plan, {
        promptTokens: first.prepared.report.inputTokens * (first.learned.ratio ?? 1),
        maxOutputTokens: first.prepared.settings.outputReserve,
        // A stateless request holds nothing, so it may wait now.
        backpressure: turn.session === undefined,
      })
      .catch(refusedBy(turn.client));
    turn.client.addHeaders(reservation.headers);
    if (reservation.delayMs > 0) await deps.sleep(reservation.delayMs);
    return reservation;
  }

  function observe(turn: Turn) {
    const upstream = turn.target.name;
    return (event: SendEvent<ChatAttempt>): void => {
      if (event.type === 'overflow') turn.lessons.overflow(event.verdict, event.attempt, event.status);
      else if (event.type === 'accepted') return;
      else if (event.type === 'retry') metrics.upstreamRetries.inc({ upstream, reason: event.reason });
      else if (event.type === 'fields_fixed')
        metrics.upstreamRetries.inc({ upstream, reason: 'refused_field' });
      else
        metrics.overflowRetries.inc({
          upstream,
          model: metrics.modelLabel(turn.chatRequest.model),
          remedy: event.decision.action === 'lower_max_tokens' ? 'reduce_max_tokens' : 'compress',
        });
    };
  }

  /** The request's report for the inspector (docs/inspector.md): what the answered attempt sent. */
  function inspectorReport(
    turn: Turn,
    session: SessionTurn,
    answered: { attempt: ChatAttempt; promptTokens: number | undefined; status: number; retries: number },
  ): SessionRequestReport {
    const { attempt } = answered;
    const { prepared } = attempt;
    return buildRequestReport({
      fates: fatesOf(turn, session, attempt),
      at: Date.now(),
      model: turn.chatRequest.model,
      fallback: attempt.fallback,
      status: answered.status,
      session,
      rendered: prepared.messages,
      report: prepared.report,
      outputReserve: prepared.settings.outputReserve,
      safetyMargin: prepared.settings.safetyMarginTokens,
      ratio: attempt.learned.ratio ?? 1,
      providerPromptTokens: answered.promptTokens,
      retries: answered.retries,
      durationMs: deps.now() - turn.input.startedAtMs,
    });
  }

  /** Runs `work` in the background, where what it throws has no one to catch it: dropped. */
  function attemptQuietly(work: () => unknown): void {
    try {
      work();
    } catch {
      // Found again, and handled, where the request needs it.
    }
  }

  /** What the attempt did to the session's messages, found once per attempt. */
  function fatesOf(turn: Turn, session: SessionTurn, attempt: ChatAttempt): SessionRequestReport['fates'] {
    if (turn.fates?.attempt !== attempt)
      turn.fates = { attempt, runs: historyFates(session, attempt.prepared.messages) };
    return turn.fates.runs;
  }

  /**
   * An answered request whose turn was not stored (the report of one stored went with it): its report
   * kept for the inspector in the background, where it costs the request nothing.
   */
  function recordForInspector(turn: Turn, session: SessionTurn): void {
    const answered = turn.answered;
    if (answered === undefined || turn.reportStored === true) return;
    const report = inspectorReport(turn, session, {
      attempt: answered.attempt,
      promptTokens: answered.promptTokens,
      status: turn.upstream?.status ?? 200,
      retries: Math.max(0, (turn.upstream?.attempts ?? 1) - 1),
    });
    void deps.sessionStore.recordRequest(session.key, report).catch(() => undefined);
  }

  /**
   * What an answer cost, in the token metrics and on the budgets: the upstream's usage, or the
   * gateway's own count (marked estimated) where it reported none — counted for the model that
   * answered (a fallback counts its own way).
   */
  function settle(
    turn: Turn,
    attempt: ChatAttempt,
    usage: Usage,
    reply: Record<string, unknown> | undefined,
    /** A relayed stream's data events: the estimate when neither usage nor the reply is at hand. */
    dataEvents = 0,
  ): { prompt: number; completion: number } {
    turn.answered = { attempt, promptTokens: usage.promptTokens };
    // Its reasoning, or its thinking between tags at the start of its text (a server without a
    // reasoning parser): a model that thinks.
    if (
      reply !== undefined &&
      ((reasoningOf(reply)?.text ?? '') !== '' ||
        (typeof reply.content === 'string' && startsThinking(reply.content)))
    ) {
      setWithin(thinkingModels, thinkingKey(attempt.target.name, attempt.model), true, maxThinkingModels);
    }
    // The recall rounds the client never saw are paid like the answer it got.
    const recall = turn.recall;
    const prompt =
      (usage.promptTokens ?? Math.ceil(attempt.prepared.report.inputTokens * (attempt.learned.ratio ?? 1))) +
      (recall?.promptTokens ?? 0);
    const completion =
      (usage.completionTokens ??
        (reply === undefined
          ? // Less the role's first event, the finish event and [DONE]: about one token an event.
            Math.max(0, dataEvents - 3)
          : countMessageTokens(
              reply as ContextMessage,
              tokenizerFor(config, deps.tokenizers, attempt.model),
            ))) + (recall?.completionTokens ?? 0);
    const model = metrics.modelLabel(attempt.model);
    const sourceOf = (reported: number | undefined) => (reported === undefined ? 'estimate' : 'usage');
    metrics.tokens.inc({ model, kind: 'prompt', source: sourceOf(usage.promptTokens) }, prompt);
    metrics.tokens.inc({ model, kind: 'completion', source: sourceOf(usage.completionTokens) }, completion);
    void turn.reservation?.settle({
      tokens: prompt + completion,
      estimated:
        usage.promptTokens === undefined ||
        usage.completionTokens === undefined ||
        recall?.estimated === true,
    });
    return { prompt, completion };
  }

  /**
   * Stores the turn with its reply and the request's report (one write); docs/sessions.md#summarization:
   * a long session gets its oldest turns summarized after.
   */
  async function commit(
    turn: Turn,
    session: SessionTurn,
    sent: SendResult<ChatAttempt>,
    reply: Record<string, unknown> | undefined,
    promptTokens: number | undefined,
  ) {
    const { prepared } = sent.attempt;
    const report = inspectorReport(turn, session, {
      attempt: sent.attempt,
      promptTokens,
      status: sent.response.statusCode,
      retries: callsMade(sent) - 1,
    });
    const { activeTokens } = await session.commit(
      reply,
      {
        window: prepared.settings.window,
        historyStartIndex: prepared.report.historyStartIndex,
        keepFirstTurns: prepared.settings.policy.keep_first_turns,
      },
      report,
    );
    turn.reportStored = true;
    deps.summarizer.afterTurn({
      key: session.key,
      model: turn.chatRequest.model,
      policy: prepared.settings.policy,
      historyBudget: prepared.report.historyBudget,
      window: prepared.settings.window,
      activeTokens,
      clientHeaders: turn.input.clientHeaders,
      credential: turn.input.credential,
    });
  }

  function answerHeaders(turn: Turn, sent: SendResult<ChatAttempt>): Record<string, string> {
    const headers: Record<string, string> = Object.assign({}, sent.attempt.headers);
    headers['x-context-retries'] = String(sent.overflowRetries);
    headers['x-ctxgate-attempts'] = String(callsMade(sent));
    if (sent.exhausted === true) headers['x-should-retry'] = 'false';
    // A wait the upstream stated only in its words (a relay that drops its headers): in the header the
    // client's SDK reads before it retries.
    if (sent.retryAfterMs !== undefined && sent.response.headers['retry-after'] === undefined)
      headers['retry-after'] = String(Math.ceil(sent.retryAfterMs / 1000));
    if (turn.recall !== undefined) headers['x-ctxgate-recall'] = String(turn.recall.calls);
    if (turn.session !== undefined) {
      headers['x-session-id'] = turn.session.sessionId;
      headers['x-session-messages'] = String(turn.session.messagesAfterCommit);
    }
    return headers;
  }

  /**
   * An upstream error that ends the request (after every retry): a warning with the attempts it took and
   * what the upstream said — its type, code and message, without what it quotes of the request.
   */
  function upstreamRefused(turn: Turn, sent: SendResult<ChatAttempt>, body: Buffer): void {
    let error: { type?: unknown; code?: unknown; message?: unknown } | undefined;
    // A provider's error is short; one of megabytes is the request quoted back, not read again for the log.
    if (body.length <= maxLoggedErrorBytes)
      try {
        error = (JSON.parse(body.toString('utf8')) as { error?: typeof error }).error;
      } catch {
        // Not JSON: only the status is told.
      }
    turn.input.warn(
      {
        upstream: sent.attempt.target.name,
        upstreamStatus: sent.response.statusCode,
        attempts: callsMade(sent),
        upstreamError: {
          type: typeof error?.type === 'string' ? error.type : undefined,
          code: typeof error?.code === 'string' || typeof error?.code === 'number' ? error.code : undefined,
          message:
            typeof error?.message === 'string'
              ? upstreamMessageForLog(error.message, chatTextsOf(sent.attempt.prepared.messages))
              : undefined,
        },
      },
      'upstream error ends the request',
    );
  }

  /** A whole answer: settled and committed before the client sees it. */
  async function deliverWhole(turn: Turn, sent: SendResult<ChatAttempt>): Promise<undefined> {
    const { response, attempt } = sent;
    const answer = await readWholeAnswer(response, { expectCompletion: true });
    const headers = answerHeaders(turn, sent);
    let body = answer.body;
    if (answer.status < 300) {
      // Counted first: the upstream's answer is billed even when storing the session's turn fails.
      const counted = settle(turn, attempt, answer.usage, answer.reply);
      // An answer with no usage (a provider that reports none) is given the gateway's count, as OpenAI
      // gives every answer one (docs/budgeting.md#usage-a-provider-does-not-report).
      if (
        answer.completion !== undefined &&
        Array.isArray(answer.completion.choices) &&
        answer.completion.usage == null &&
        !answer.erred
      ) {
        answer.completion.usage = {
          prompt_tokens: counted.prompt,
          completion_tokens: counted.completion,
          total_tokens: counted.prompt + counted.completion,
        };
        body = Buffer.from(JSON.stringify(answer.completion));
      }
      // An answer that reports an error of its own is passed on as it came, and not stored.
      if (turn.session !== undefined && !answer.erred) {
        if (answer.reply === undefined)
          throw new GatewayError(
            'upstream_bad_response',
            'The upstream answer holds no assistant message (choices[0].message).',
          );
        await commit(turn, turn.session, sent, answer.reply, answer.usage.promptTokens);
      }
      // After recall rounds the prompt answered is not the attempt's: nothing to learn from its count.
      if (turn.recall === undefined && turn.lessons.usage(answer.usage.promptTokens, attempt))
        headers['x-context-upstream-truncated'] = 'true';
    } else {
      upstreamRefused(turn, sent, answer.body);
      // In the client's shape, the provider's words kept (Google's array, TGI's string, Bedrock's message).
      body = withOpenAIErrorShape(answer.body);
    }
    await turn.client.sendWhole(answer.status, buildClientHeaders(response.headers, headers), body);
    return undefined;
  }

  /**
   * A stream, relayed as it arrives. With a session, the final `data: [DONE]` waits until the turn is
   * stored, so that a client whose turn could not be stored gets an error event instead. Returns the
   * code a stream under way ended with, when it did not finish well.
   */
  async function deliverStream(turn: Turn, sent: SendResult<ChatAttempt>): Promise<string | undefined> {
    const { response } = sent;
    const { client } = turn;
    const headers = buildClientHeaders(response.headers, answerHeaders(turn, sent));
    headers['cache-control'] = 'no-cache';
    headers['x-accel-buffering'] = 'no';
    client.openStream(response.statusCode, headers);
    try {
      return await relayAndStore(turn, sent);
    } catch (error) {
      // A failure of the gateway's own once the stream is open: the edge logs it.
      endWithFailure(client, error);
      throw error;
    }
  }

  /** deliverStream's relay, once the client's stream is open: the code it ended with, if not well. */
  async function relayAndStore(turn: Turn, sent: SendResult<ChatAttempt>): Promise<string | undefined> {
    const { response, attempt } = sent;
    const { client, session } = turn;
    // A client that asked for usage gets it when the provider gives none: the [DONE] held to write it.
    const asksUsage =
      (turn.chatRequest.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const outcome = await relayStream(response, client, {
      holdDone: session !== undefined || asksUsage,
      assemble: session !== undefined || turn.reservation !== undefined,
      expectFinish: true,
      shapeCalls: true,
    });
    // The upstream generated (and bills) what was streamed, finished or not.
    if (outcome.kind === 'client_left') {
      settle(turn, attempt, outcome.usage, outcome.reply, outcome.dataEvents);
      return undefined;
    }
    const commitError =
      outcome.failure === undefined && session !== undefined && outcome.replyComplete
        ? await commit(turn, session, sent, outcome.reply, outcome.usage.promptTokens).then(
            () => undefined,
            (error: unknown) => error ?? new Error('commit failed'),
          )
        : undefined;
    if (commitError instanceof Error) turn.storeErrorCause = causeOf(commitError);
    // A turn that could not be stored: the client has the answer but not its [DONE], and learns it
    // from an error event instead. Without a held [DONE] (the stream had none) it can only be logged.
    const failure =
      outcome.failure ??
      (commitError === undefined || outcome.heldDone === undefined
        ? undefined
        : isGatewayError(commitError)
          ? commitError
          : new GatewayError('session_store_unavailable', 'The turn could not be stored.'));
    if (failure === undefined && turn.recall === undefined)
      turn.lessons.usage(outcome.usage.promptTokens, attempt);
    const counted = settle(turn, attempt, outcome.usage, outcome.reply, outcome.dataEvents);
    const unreported =
      asksUsage && outcome.usage.promptTokens === undefined && outcome.usage.completionTokens === undefined;
    client.end(
      failure !== undefined
        ? errorEvent(toOpenAIErrorBody(failure))
        : unreported
          ? Buffer.concat([
              Buffer.from(
                usageEvent(`chatcmpl-${randomUUID()}`, attempt.model, Math.floor(Date.now() / 1000), counted),
              ),
              outcome.heldDone ?? Buffer.alloc(0),
            ])
          : outcome.heldDone,
    );
    // A stream the provider ended with an error of its own reached the client as it came; nothing of it
    // was stored (docs/sessions.md).
    return (
      failure?.code ??
      (commitError === undefined ? undefined : errorCodeOf(commitError)) ??
      (outcome.upstreamErred ? 'upstream_stream_error' : undefined)
    );
  }

  async function deliver(turn: Turn, sent: SendResult<ChatAttempt>): Promise<string | undefined> {
    const { response } = sent;
    const success = response.statusCode < 300;
    if (turn.chatRequest.stream === true && success) {
      if (isEventStream(response.headers)) return deliverStream(turn, sent);
      response.discard();
      throw new GatewayError(
        'upstream_bad_response',
        'The upstream answered a streaming request without an event stream.',
      );
    }
    return deliverWhole(turn, sent);
  }

  function ladderFor(
    input: Omit<ChatInput, 'warn' | 'info'>,
    chatRequest: ChatCompletionRequest,
    session: SessionView | undefined,
    /** The client's bytes, when they may be sent as they are. */
    rawBody: Buffer | undefined,
    target: UpstreamConfig,
    preview = false,
  ) {
    return createAttemptLadder({
      planner,
      config,
      tokenizers: deps.tokenizers,
      chatRequest,
      overrides: input.overrides,
      session,
      target,
      precision: countPrecisionFor(input.countingBytes),
      rawBody,
      knownBytes:
        session !== undefined
          ? (messages) => session.knownBytes(messages, true)
          : (input.messageBytes ?? clientMessageBytes(input.rawBody, input.body)),
      anthropicBody: input.anthropicBody,
      storedBytes: session?.knownBytes.bind(session),
      toolsKey: input.toolsKey,
      tenant: input.credential.tenantId,
      preview,
      fieldFixes: deps.fieldFixes,
    });
  }

  /** Fields the attempt's model refused: kept for its later requests, and this one made again fixed. */
  /**
   * The attempt again with the fixes of a refusal learned for its model. A refusal that names nothing
   * (field-fixes.ts unexplainedRefusalField) is tried in the form every Anthropic-compatible endpoint
   * takes: the fixes that adds are noted in `tried`, to be forgotten if that is refused too.
   */
  function fixingFields(ladder: ReturnType<typeof ladderFor>, tried: TriedFix[], tenant: string) {
    return (fixes: FieldFix[], current: ChatAttempt): ChatAttempt | undefined => {
      const { name } = current.target;
      for (const fix of fixes)
        if (fix.field === foreignThinkingField) continue;
        else if (fix.field !== unexplainedRefusalField)
          deps.fieldFixes.remember(
            // What a client's own key was refused for (its credits) is no lesson for the next client's.
            fix.ofKey === true ? keyScopeOf(current.target, tenant) : name,
            current.model,
            // A refusal of the body's size gives no number: a share of the body refused.
            fix.field === requestBytesField && fix.atMost === undefined
              ? Object.assign({}, fix, {
                  atMost: Math.floor(byteLengthOf(current.body) * retryDefaults.requestBytesShare),
                })
              : fix,
          );
        else if (current.target.kind === 'anthropic')
          for (const each of conservativeAnthropicFixes)
            if (deps.fieldFixes.remember(name, current.model, each))
              tried.push({ upstream: name, model: current.model, fix: each });
      return fixes.some((fix) => fix.field === foreignThinkingField)
        ? withoutForeignThinking(ladder, current)
        : ladder.again(current);
    };
  }

  /**
   * The attempt again without the thinking another model signed (field-fixes.ts foreignThinkingField), a
   * step further than the last: first all but a tool loop's being answered — or, when that changes nothing,
   * all of it (to Claude, thinking then off) — and undefined once all of it went.
   */
  function withoutForeignThinking(ladder: ReturnType<typeof ladderFor>, current: ChatAttempt) {
    if (current.state.foreignThinking === 'all') return undefined;
    const stage = (foreignThinking: ForeignThinkingStep) =>
      ladder.again(current, Object.assign({}, current.state, { foreignThinking }));
    return (current.state.foreignThinking === undefined ? stage('earlier') : undefined) ?? stage('all');
  }

  /**
   * What the recall tool searches (docs/budgeting.md#recall): the messages of the conversation the model
   * was not shown whole, and in a session its archive (the newest messages of it, up to a bound),
   * numbered as the session's history numbers them.
   */
  async function recallSources(turn: Turn, rendered: readonly ContextMessage[]): Promise<RecallSource[]> {
    const session = turn.session;
    const conversation = session?.conversation ?? (turn.chatRequest.messages as ContextMessage[]);
    const systemCount = Math.max(
      0,
      conversation.findIndex((message) => !isSystemRole(message.role)),
    );
    const head = session?.headMessages ?? 0;
    const archived = session?.archivedMessages ?? 0;
    const local = omittedSources(conversation, rendered, (index) =>
      index - systemCount < head ? index - systemCount : index - systemCount + archived,
    );
    if (session === undefined || archived === 0) return local;
    // The archive from its newest end, a page at a time, until the search has all it reads.
    let chars = charsOf(local);
    const pages: RecallSource[][] = [];
    for (let end = head + archived; end > head && chars < maxSearchedChars;) {
      const offset = Math.max(head, end - recallArchivePage);
      const page = await deps.sessionStore.history(session.key, offset, end - offset).catch(() => undefined);
      if (page === undefined) break;
      const sources = omittedSources(
        page.messages.map((entry) => entry.message as ContextMessage),
        [],
        (index) => offset + index,
      );
      pages.unshift(sources);
      chars += charsOf(sources);
      end = offset;
    }
    return [...pages.flat(), ...local];
  }

  /**
   * docs/budgeting.md#recall: the answer to an attempt that offers the recall tool (the caller asks only
   * for those), with the tool's calls answered by the gateway until the model answers the client; the
   * rounds' count and cost go on the turn. An error answer is handed on as it came.
   */
  async function withRecallAnswered(
    turn: Turn,
    sent: SendResult<ChatAttempt>,
    exchange: UpstreamExchange,
  ): Promise<SendResult<ChatAttempt>> {
    const { attempt } = sent;
    if (sent.response.statusCode >= 300) return sent;
    const { prepared } = attempt;
    const { settings } = prepared;
    const ratio = attempt.learned.ratio ?? 1;
    const tokenizer = tokenizerFor(config, deps.tokenizers, attempt.model);
    let sources: Promise<RecallSource[]> | undefined;
    const outcome = await answerRecallCalls({
      response: sent.response,
      request: attempt.request,
      streaming: turn.chatRequest.stream === true,
      maxCalls: settings.policy.recall_max_calls,
      resultTokens: settings.policy.recall_result_tokens,
      room: promptRoomOf(settings, ratio) - prepared.report.inputTokens,
      count: (message) => countMessageTokens(message, tokenizer),
      promptTokens: Math.ceil(prepared.report.inputTokens * ratio),
      search: async (query, maxTokens) =>
        searchRecall({
          query,
          sources: await (sources ??= recallSources(turn, prepared.messages)),
          tokenizer,
          maxTokens,
        }).text,
      send: async (body) =>
        asAsked(
          await exchange.send({
            method: 'POST',
            path: '/chat/completions',
            body,
            target: attempt.target,
            betaFixes: attempt.betaFixes,
          }),
          attempt,
        ),
    });
    turn.recall = Object.assign({}, outcome.usage, { calls: outcome.calls });
    if (outcome.calls > 0)
      metrics.recallCalls.inc({ model: metrics.modelLabel(attempt.model) }, outcome.calls);
    return Object.assign({}, sent, { response: outcome.response });
  }

  /** Sends the request, recovering as it must, and answers the client: the code a stream ended with, if any. */
  async function sendAndDeliver(turn: Turn, plan: BudgetPlan | undefined): Promise<string | undefined> {
    const { input, client, chatRequest, target } = turn;
    const ladder = ladderFor(input, chatRequest, turn.session, turn.rawBody, turn.target);
    turn.lastAttempt = ladder.first;
    if (plan !== undefined) turn.reservation = await reserve(turn, plan, ladder.first);
    const { policy } = ladder.first.prepared.settings;
    const keepalive = config.server.stream_keepalive_ms;
    // The fixes tried on a refusal that named nothing: kept only if an attempt with them is answered.
    const tried: TriedFix[] = [];
    const { value, tally } = await measuredExchange(
      deps,
      {
        target,
        client,
        clientHeaders: input.clientHeaders,
        credential: input.credential,
      },
      async (exchange) => {
        const sent = await sendWithRecovery<ChatAttempt>({
          first: ladder.first,
          send: (attempt) => {
            turn.lastAttempt = attempt;
            const sent = exchange.send({
              method: 'POST',
              path: '/chat/completions',
              body: attempt.body,
              wire: attempt.wire,
              target: attempt.target,
              betaFixes: attempt.betaFixes,
            });
            const answer = sent.then((response) => asAsked(response, attempt));
            // The report's costly part, found while the upstream works rather than before the commit.
            // Nothing thrown here may escape (it would end the process): should it fail, the commit
            // finds it again where the request's own failure is handled.
            const { session } = turn;
            if (session !== undefined)
              setImmediate(() => attemptQuietly(() => fatesOf(turn, session, attempt)));
            return answer;
          },
          smaller: (decision, current) => ladder.smaller(decision, current),
          fixFields: fixingFields(ladder, tried, input.credential.tenantId),
          streaming: chatRequest.stream === true,
          // A model that thinks before its first chunk: the client's stream opened and kept alive meanwhile.
          headWaitMs: keepalive > 0 && chatRequest.stream === true ? keepalive / 2 : undefined,
          sentBytes: (attempt) => byteLengthOf(attempt.body),
          limits: recoveryLimitsFor(policy, config.timeouts.upstream_retry_deadline_ms),
          clock: deps.now,
          random: deps.random,
          sleep: deps.sleep,
          cancelled: () => client.cancellation.aborted,
          observe: observe(turn),
        });
        if (tried.length > 0 && sent.response.statusCode >= 300)
          for (const { upstream, model, fix } of tried) deps.fieldFixes.forget(upstream, model, fix);
        const answered = sent.attempt.recall ? await withRecallAnswered(turn, sent, exchange) : sent;
        return deliver(turn, answered);
      },
    );
    turn.upstream = tally;
    return value;
  }

  /**
   * `store: true` asks the provider to keep the completion under the key that sent it: under the
   * operator's one key every tenant could list and read it, so it is dropped unless configured
   * (passthrough.provider_state_endpoints), and the answer says so. The client's own bytes then no
   * longer go upstream as they are (`rawBody` undefined).
   */
  function withoutSharedStore(
    input: ChatInput,
    chatRequest: ChatCompletionRequest,
    target: UpstreamConfig,
    client: ClientStream,
  ): { chatRequest: ChatCompletionRequest; rawBody: Buffer | undefined } {
    const unchanged = { chatRequest, rawBody: input.rawBody };
    if ((chatRequest as { store?: unknown }).store !== true) return unchanged;
    if (input.credential.mode !== 'gateway_key' || target.apiKey === undefined) return unchanged;
    if (config.passthrough.provider_state_endpoints.includes('chat/completions')) return unchanged;
    const { store: _dropped, ...kept } = chatRequest as ChatCompletionRequest & { store?: unknown };
    client.addHeaders({ 'x-ctxgate-dropped': 'store' });
    return { chatRequest: kept, rawBody: undefined };
  }

  return {
    async complete(input, client) {
      const parsed = parse(input, input.warn);
      const target = config.routing.upstreamFor(parsed.model);
      const { chatRequest, rawBody } = withoutSharedStore(input, parsed, target, client);
      // Checked before anything is spent: a session needs a credential.
      const { sessionId } = input.overrides;
      const sessionKey = sessionId === undefined ? undefined : sessionKeyFor(input.credential, sessionId);
      const asked: RequestOutcome = {
        model: chatRequest.model,
        stream: chatRequest.stream === true,
        session: sessionKey === undefined ? undefined : hashedSessionId(sessionKey),
      };
      try {
        // Awaited only when there is something to wait for: a stateless request without budgets (the
        // usual one) goes on at once (each await costs a promise and a turn of the microtask queue).
        const planned = budgetPlanOf(input);
        const plan =
          planned === undefined || input.overrides.sessionId === undefined
            ? planned
            : await admitBudgets(planned, client);
        const session =
          sessionKey === undefined ? undefined : await openSession(input, chatRequest, sessionKey);
        if (sessionKey !== undefined && session === undefined) asked.otherConversation = true;
        if (session?.startsOver === true) asked.startedOver = true;
        const turn: Turn = {
          input,
          client,
          chatRequest,
          target,
          session,
          reservation: undefined,
          rawBody,
          lessons: createUpstreamLessons({ learnedLimits, metrics, warn: input.warn, info: input.info }),
        };
        try {
          const streamErrorCode = await sendAndDeliver(turn, plan);
          const done = outcomeOfTurn(turn);
          // Written out rather than merged with Object.assign: this runs on every request.
          return {
            model: asked.model,
            stream: asked.stream,
            session: asked.session,
            otherConversation: asked.otherConversation,
            startedOver: asked.startedOver,
            context: done.context,
            fallback: done.fallback,
            upstream: done.upstream,
            recallCalls: done.recallCalls,
            streamErrorCode,
            errorCause: turn.storeErrorCause,
          };
        } catch (error) {
          throw withOutcome(error, outcomeOfTurn(turn));
        } finally {
          if (turn.reservation !== undefined) await turn.reservation.release();
          if (session !== undefined) {
            await session.release();
            recordForInspector(turn, session);
          }
        }
      } catch (error) {
        throw withOutcome(error, asked);
      }
    },

    async preview(input) {
      const chatRequest = parse(input);
      const { sessionId } = input.overrides;
      // The session as the next chat request would see it, read without holding or changing it.
      const view =
        sessionId === undefined
          ? undefined
          : await previewSessionTurn(
              sessionInput(input, chatRequest, sessionKeyFor(input.credential, sessionId)),
            );
      // The first attempt the request would send: the client's model, or the fallback it would go to.
      const target = config.routing.upstreamFor(chatRequest.model);
      const { prepared, headers, request } = ladderFor(
        input,
        chatRequest,
        view,
        input.rawBody,
        target,
        true,
      ).first;
      if (view !== undefined) headers['x-session-id'] = view.sessionId;
      return {
        outcome: { model: chatRequest.model, stream: chatRequest.stream === true, context: prepared.report },
        headers,
        body: {
          object: 'context.render',
          model: chatRequest.model,
          window: prepared.settings.window,
          output_reserve: prepared.settings.outputReserve,
          safety_margin: prepared.settings.safetyMarginTokens,
          policy: prepared.settings.policyName ?? 'default',
          tokenizer: prepared.settings.model.tokenizer,
          // As they go on the wire (a tool result's images in a user message after it: tool-media.ts).
          messages: request.messages,
          report: prepared.report,
        },
      };
    },
  };
}
