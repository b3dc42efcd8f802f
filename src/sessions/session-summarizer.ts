// Background summarization of long sessions (docs/sessions.md#summarization). After a committed turn whose history passed
// `summarize_at` of its budget, one job per session (a lock in the store, so across replicas) asks the
// summary model to extend the session's summary with its oldest turns — or, when the current agent turn
// itself has outgrown the budget, the turn's summary with its oldest iteration groups — checks the
// answer with the guard (repairing dropped facts), and stores it atomically (a history summary with
// moving the covered messages to the archive; an in-turn summary moves nothing). The request
// that triggered it is never delayed; a job that fails or is refused changes nothing and the session
// is tried again at a later turn.
import { chunkTexts } from '../upstream/content-chunks.js';
import { setWithin } from '../bounded-memory.js';
import { reasoningOf } from '../upstream/reasoning-field.js';
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import type { ResolvedPolicy } from '../config/policy-defaults.js';
import {
  buildSummaryRequest,
  factSourceTexts,
  judgeSummary,
  buildRepairRequest,
  maxRepairFacts,
  repairSummary,
  sentenceStating,
  statesFact,
  planSummary,
  planTurnSummary,
  summaryMessage,
  turnSummaryMessage,
  startsThinking,
  withoutThinking,
  type SummaryPlan,
  type TurnSummaryPlan,
} from '../context/summary.js';
import {
  callStatements,
  formatTurnSegment,
  joinSummaryText,
  mergeNotes,
  notesHeading,
  parseTurnSegments,
  splitSummaryText,
  userStatements,
} from '../context/summary-notes.js';
import { messageText } from '../context/turns.js';
import { factsInSlices } from './facts-in-slices.js';
import { countMessageTokens } from '../context/token-accounting.js';
import type { ContextMessage, Tokenizer } from '../context/types.js';
import { isGatewayError } from '../errors.js';
import type { OverflowNumbers } from '../upstream/classify-upstream-error.js';
import { noCredential, passThroughCredentialHeaders, type Credential } from '../auth/authenticate.js';
import { resolveContextSettings } from '../context/context-settings.js';
import { recoveryLimitsFor, retryDefaults } from '../upstream/recovery-policy.js';
import { readWholeAnswer } from '../upstream/relay.js';
import {
  sendWithRecovery,
  type SendAttempt,
  type SendWithRecoveryOptions,
} from '../upstream/send-with-recovery.js';
import { noOverrides } from '../context/request-overrides.js';
import { buildUpstreamHeaders } from '../upstream/forward-headers.js';
import { tokenizerFor } from '../context/plan-send.js';
import { isCalibrated } from '../config/model-table.js';

import type { GatewayMetrics } from '../metrics.js';
import type { LearnedLimits } from '../store/learned-limits.js';
import { countsAgree, statedWindow } from '../context/learned-limit-rules.js';
import {
  hashedSessionId,
  type SessionKey,
  type SessionStore,
  type StoredMessage,
  type StoreSummaryOutcome,
} from '../store/session-store.js';
import type { Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';
import type { Upstream } from '../upstream/upstream.js';
import type { BudgetService } from '../budget/budget-service.js';
import { isOpenAIReasoningModel, outputCapField } from '../upstream/model-family.js';
import {
  applyFieldFixes,
  loggedFieldFixes,
  requestBytesField,
  unexplainedRefusalField,
  type FieldFix,
  type FieldFixes,
} from '../upstream/field-fixes.js';

export interface AfterTurnInput {
  key: SessionKey;
  /** The conversation's model: the summary is rendered into its prompts and counted with its tokenizer. */
  model: string;
  policy: ResolvedPolicy;
  /** The turn's history budget (docs/budgeting.md, in the units the session's token counts are in). */
  historyBudget: number;
  /** The session's active tokens once the turn is stored (before any spill): the cheap first check. */
  activeTokens: number;
  /** The window the session's own request used (its X-Context-Window, learned limits): the summary of
   * that conversation by the same model never asks for more. */
  window: number;
  /** The client's headers, for its credential when the upstream key is passed through. */
  clientHeaders: IncomingHttpHeaders;
  credential: Credential | undefined;
}

export interface SessionSummarizer {
  /** Starts a background job when the session's history calls for one; never waits, never throws. */
  afterTurn(input: AfterTurnInput): void;
  /** Resolves once no job is running (tests and benchmarks). */
  idle(): Promise<void>;
  /** Abandons running jobs (nothing is stored) and waits for them to end. */
  close(): Promise<void>;
}

type JobOutcome =
  | { outcome: 'stored' }
  | { outcome: 'skipped'; reason: string }
  | { outcome: 'rejected'; reason: string }
  | { outcome: 'failed'; reason: string }
  | { outcome: 'conflict'; reason: string };

/** What one job summarizes: the oldest turns of the history, or the first steps of a long agent turn. */
type SummaryJob =
  | {
      kind: 'history';
      range: StoredMessage[];
      /** The previous summary's prose (what the summarizer extends) and its notes (kept by the gateway). */
      previousText: string | undefined;
      previousNotes: string[];
      fromMessage: number;
      expectedToMessage: number;
      historyTokens: number;
    }
  | {
      kind: 'turn';
      range: StoredMessage[];
      /**
       * What the summarizer extends and the calls kept: nothing when the job appends a segment (it
       * summarizes its steps alone), all the segments' prose and calls when it merges them into one.
       */
      previousText: string | undefined;
      previousNotes: string[];
      /** The turn's stored summary, kept as it is when a segment is appended to it. */
      appendTo: string | undefined;
      task: string;
      turnStart: number;
      fromMessage: number;
      expectedToMessage: number;
      previousSteps: number;
      previousCoveredTokens: number;
      previousTokens: number;
      historyTokens: number;
    };

/** One try of a summary request: its messages, and the window they were built for. */
interface SummaryAttempt extends SendAttempt {
  messages: ContextMessage[];
  request: NonNullable<ReturnType<typeof buildSummaryRequest>>;
  window: number;
}

/** Messages one job reads at most (an archive no summary covered yet can be long). */
const maxMessagesPerJob = 2_000;
/**
 * A turn's summary takes segments while it is under this share of the history budget (and under
 * summary_max_tokens); past it the next job merges them into one.
 */
const turnSegmentsShare = 0.15;

/**
 * A turn's summary once a job has summarized `covered`: a segment appended to the stored text as it
 * was, or — when the job merged the segments — one segment for every step so far.
 */
function turnSummaryText(
  job: Extract<SummaryJob, { kind: 'turn' }>,
  written: { prose: string; calls: readonly string[]; covered: readonly StoredMessage[] },
): string {
  const steps = written.covered.filter((entry) => entry.message.role === 'assistant').length;
  const segment = formatTurnSegment({
    fromStep: job.appendTo === undefined ? 1 : job.previousSteps + 1,
    toStep: job.previousSteps + steps,
    messages:
      job.appendTo === undefined
        ? job.fromMessage + written.covered.length - job.turnStart - 1
        : written.covered.length,
    prose: written.prose,
    calls: written.calls,
  });
  return job.appendTo === undefined ? segment : `${job.appendTo}\n\n${segment}`;
}

/**
 * The most a thinking model's summary call may take, thinking included: the default 1,024 four times
 * over, twice (within half the model's window, requestSummary).
 */
const maxThinkingCap = 16_384;
/**
 * What a summarizer's refusal teaches about its model: not a body too large for the provider (a summary
 * request is text), nor a refusal that names nothing.
 */
const isSummaryLesson = (fix: FieldFix): boolean =>
  fix.field !== requestBytesField && fix.field !== unexplainedRefusalField;

/** Summarizer models learned to think past their answer's cap, per replica (as field fixes are). */
const maxThinkingModels = 1_000;

/**
 * Whether an answer shows thinking: its reasoning (`reasoning_content`, `reasoning`, Mistral's thinking
 * chunks, a `<think>` block in its text) or reasoning tokens in its usage (OpenAI's reasoning models,
 * which give none of their thinking). An answer cut at its length with nothing after such thinking spent
 * its cap thinking: DeepSeek, Kimi, GLM and Gemini think by default and count it in `max_tokens`.
 */
function thoughtOf(
  message: Record<string, unknown> | undefined,
  whole: { completion?: Record<string, unknown> | undefined },
): boolean {
  if (reasoningOf(message) !== undefined) return true;
  if (chunkTexts(message?.content).thinking !== '') return true;
  if (typeof message?.content === 'string' && startsThinking(message.content)) return true;
  const usage = whole.completion?.usage as
    { completion_tokens_details?: { reasoning_tokens?: unknown } } | undefined;
  const tokens = usage?.completion_tokens_details?.reasoning_tokens;
  return typeof tokens === 'number' && tokens > 0;
}

/**
 * A summarizer's answer: what it wrote after any thinking (Magistral's text chunks, or what follows a
 * <think> block), why it ended, and whether it spent its cap thinking (cut at its length with nothing
 * written after thinking).
 */
function summaryAnswerOf(whole: { completion?: Record<string, unknown> | undefined }): {
  text: string;
  finishReason: string | undefined;
  spentThinking: boolean;
} {
  const choices = whole.completion?.choices;
  const choice = (Array.isArray(choices) ? choices[0] : undefined) as
    { message?: Record<string, unknown>; finish_reason?: unknown } | undefined;
  const text = withoutThinking(chunkTexts(choice?.message?.content).text);
  const finishReason = typeof choice?.finish_reason === 'string' ? choice.finish_reason : undefined;
  return {
    text,
    finishReason,
    spentThinking: finishReason === 'length' && text.trim() === '' && thoughtOf(choice?.message, whole),
  };
}

/** Sessions whose last job failed, remembered per replica to space out retries. */

const maxRememberedFailures = 10_000;

export function createSessionSummarizer(deps: {
  config: GatewayConfig;
  store: SessionStore;
  upstream: Upstream;
  tokenizers: Tokenizers;
  metrics: GatewayMetrics;
  learnedLimits: LearnedLimits;
  /** The request fields each model is known to refuse (docs/budgeting.md#refused-fields); its own when not given. */
  fieldFixes?: FieldFixes;
  logger: Logger;
  /** Summaries are paid like any request: counted against the session's and its credential's budgets. */
  budgets?: BudgetService;
  now?: () => number;
  /** The send loop's randomness and waiting (backoff between retries): parameters, as a request's are. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}): SessionSummarizer {
  const { config, store, upstream, tokenizers, metrics, logger } = deps;
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  const fieldFixes = deps.fieldFixes ?? loggedFieldFixes(logger);
  const sleep =
    deps.sleep ?? ((ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref()));
  const running = new Map<string, Promise<void>>();
  const abort = new EventEmitter();
  abort.setMaxListeners(0);
  let closed = false;
  // After a failure the session waits 0, 1, 3, 7, 15 turns before the next try (each later turn counts).
  const failures = new Map<string, { count: number; turnsToSkip: number }>();
  /** The answer cap each summarizer model that thinks past its cap was found to need (upstream, model). */
  const thinkingCaps = new Map<string, number>();
  const answerCapOf = (upstreamName: string, model: string, policy: { summary_max_tokens: number }): number =>
    Math.max(policy.summary_max_tokens, thinkingCaps.get(`${upstreamName}\u0000${model}`) ?? 0);
  const rememberThinkingCap = (upstreamName: string, model: string, asked: number): void => {
    const key = `${upstreamName}\u0000${model}`;
    setWithin(thinkingCaps, key, Math.min(asked * 4, maxThinkingCap), maxThinkingModels);
  };

  function remember(name: string, failed: boolean): void {
    if (!failed) {
      failures.delete(name);
      return;
    }
    const count = (failures.get(name)?.count ?? 0) + 1;
    failures.delete(name);
    failures.set(name, { count, turnsToSkip: Math.min(15, 2 ** (count - 1) - 1) });
    for (const [oldest] of failures) {
      if (failures.size <= maxRememberedFailures) break;
      failures.delete(oldest);
    }
  }

  async function run(input: AfterTurnInput, name: string): Promise<void> {
    const startedAtMs = now();
    const summaryModel = input.policy.summary_model === '' ? input.model : input.policy.summary_model;
    const details: Record<string, unknown> = {};
    let result: JobOutcome;
    try {
      result = await summarize(input, summaryModel, details);
    } catch (error) {
      result = {
        outcome: 'failed',
        reason: isGatewayError(error) ? error.code : 'store_unavailable',
      };
    }
    const durationMs = now() - startedAtMs;
    metrics.summarizationRuns.inc({ outcome: result.outcome });
    metrics.summarizationDuration.observe({ outcome: result.outcome }, durationMs / 1000);
    if (result.outcome === 'rejected') metrics.summarizationRejections.inc({ reason: result.reason });
    if (result.outcome === 'failed') metrics.summarizationFailures.inc({ reason: result.reason });
    if (result.outcome === 'stored') remember(name, false);
    else if (result.outcome === 'rejected' || result.outcome === 'failed') remember(name, true);
    if (result.outcome === 'skipped') return;
    const line = {
      session: hashedSessionId(input.key),
      model: input.model,
      summaryModel,
      outcome: result.outcome,
      reason: 'reason' in result ? result.reason : undefined,
      ...details,
      durationMs: Math.round(durationMs),
    };
    if (result.outcome === 'stored' || result.outcome === 'conflict') logger.info(line, 'summarization');
    else logger.warn(line, 'summarization');
  }

  /** A summarizer call is paid like any request: its usage, else an estimate, on the session's budgets. */
  async function charge(
    budgetKey: SessionKey,
    answer: { text: string; promptTokens: number | undefined; completionTokens: number | undefined },
    promptEstimate: number,
    completionEstimate: number,
  ): Promise<void> {
    if (deps.budgets === undefined) return;
    const reported =
      answer.promptTokens !== undefined && answer.completionTokens !== undefined
        ? answer.promptTokens + answer.completionTokens
        : undefined;
    await deps.budgets.charge(budgetKey, {
      tokens: reported ?? promptEstimate + completionEstimate,
      estimated: reported === undefined,
    });
  }

  /** What the session calls for: a long agent turn's first steps (in-turn compaction), else its oldest turns. */
  async function planJob(
    input: AfterTurnInput,
    snapshot: Awaited<ReturnType<SessionStore['load']>>,
  ): Promise<SummaryJob | undefined> {
    const { key, policy } = input;
    const { headMessages: head, archivedCount: archived, summary: previous } = snapshot;
    const previousParts = splitSummaryText(previous?.text);
    const positionOf = (activeIndex: number): number =>
      activeIndex < head ? activeIndex : activeIndex + archived;
    const roles = snapshot.messages.map((entry) => String(entry.message.role));
    const lastTurnStart = roles.lastIndexOf('user');
    const previousTurn =
      snapshot.turnSummary !== undefined &&
      lastTurnStart >= 0 &&
      snapshot.turnSummary.turnStart === positionOf(lastTurnStart)
        ? snapshot.turnSummary
        : undefined;
    const activeTokens = snapshot.messages.map((entry) => entry.tokens);
    const turnPlan: TurnSummaryPlan = planTurnSummary({
      activeTokens,
      roles,
      coveredUntil: previousTurn === undefined ? 0 : previousTurn.toMessage - archived,
      summaryTokens: previousTurn?.tokens ?? 0,
      historyBudget: input.historyBudget,
      summarizeAt: policy.summarize_at,
      summarizeTo: policy.summarize_to,
    });
    if (turnPlan.kind === 'summarize_turn') {
      // Segments are appended while the summary is small, then merged into one (docs/sessions.md).
      const append =
        previousTurn !== undefined &&
        previousTurn.tokens <
          Math.floor(input.window * policy.summary_notes_share) +
            Math.min(policy.summary_max_tokens, Math.floor(input.historyBudget * turnSegmentsShare));
      const segments = append ? [] : parseTurnSegments(previousTurn?.text);
      return {
        kind: 'turn',
        range: snapshot.messages.slice(turnPlan.from, turnPlan.to),
        previousText: segments.length === 0 ? undefined : segments.map((segment) => segment.prose).join('\n'),
        previousNotes: segments.flatMap((segment) => segment.calls),
        appendTo: append ? previousTurn?.text : undefined,
        task: messageText(snapshot.messages[turnPlan.turnStart]?.message as ContextMessage),
        turnStart: positionOf(turnPlan.turnStart),
        fromMessage: positionOf(turnPlan.from),
        expectedToMessage: previousTurn?.toMessage ?? 0,
        previousSteps: previousTurn?.steps ?? 0,
        previousCoveredTokens: previousTurn?.coveredTokens ?? 0,
        previousTokens: previousTurn?.tokens ?? 0,
        historyTokens: turnPlan.turnTokens,
      };
    }
    const plan: SummaryPlan = planSummary({
      activeTokens,
      turnStarts: roles.map((role) => role === 'user'),
      head,
      archived,
      summaryTo: previous?.toMessage ?? head,
      historyBudget: input.historyBudget,
      summarizeAt: policy.summarize_at,
      summarizeTo: policy.summarize_to,
    });
    if (plan.kind === 'none') return undefined;
    // One call covers what fits the summarizer's window; reading more than that is never needed.
    const wanted = plan.toMessage - plan.fromMessage;
    const range = await store.history(key, plan.fromMessage, Math.min(wanted, maxMessagesPerJob));
    if (range.messages.length < wanted) {
      // Cut short: end at the last whole turn read.
      const lastTurn = range.messages.findLastIndex((entry) => entry.message.role === 'user');
      if (lastTurn > 0) range.messages.length = lastTurn;
    }
    return {
      kind: 'history',
      range: range.messages,
      previousText: previousParts.prose,
      previousNotes: previousParts.notes,
      fromMessage: plan.fromMessage,
      expectedToMessage: previous?.toMessage ?? 0,
      historyTokens: plan.historyTokens,
    };
  }

  /**
   * The summarizer's request and answer. Like any request, the summary recovers from its own overflow:
   * the limit is learned, and the next try is smaller (by the provider's numbers when it gives them).
   */
  async function requestSummary(input: AfterTurnInput, job: SummaryJob, summaryModel: string) {
    const { policy } = input;
    const target = config.routing.upstreamFor(summaryModel);
    const tenant = input.key.tenantId;
    const learned = deps.learnedLimits.get(target.name, summaryModel, tenant);
    const modelSettings = (maxCompletionTokens: number) =>
      resolveContextSettings({
        config,
        model: summaryModel,
        overrides: noOverrides,
        maxCompletionTokens,
        learnedWindow: learned.window,
      });
    // A model found to think before it answers gets room for its thinking, within half its window.
    const cap = Math.max(
      policy.summary_max_tokens,
      Math.min(
        answerCapOf(target.name, summaryModel, policy),
        Math.floor(modelSettings(policy.summary_max_tokens).window / 2),
      ),
    );
    const settings = modelSettings(cap);
    const tokenizer = tokenizers.forEncoding(settings.model.tokenizer);
    // An estimated model's counts are scaled by its learned ratio, as a request's are.
    const ratio = isCalibrated(settings.model) ? (learned.ratio ?? 1) : 1;
    const messages = job.range.map((entry) => entry.message as ContextMessage);
    const attemptFor = (window: number): SummaryAttempt | undefined => {
      const request = buildSummaryRequest({
        previousSummary: job.previousText,
        messages,
        ...(job.kind === 'turn' ? { unit: 'steps' as const, task: job.task } : {}),
        tokenizer,
        window: Math.floor(window / ratio),
        safetyMarginTokens: Math.ceil(window * (settings.safetyMarginTokens / settings.window)),
        maxSummaryTokens: policy.summary_max_tokens,
        answerCapTokens: cap,
        policy,
      });
      return request === undefined
        ? undefined
        : {
            messages: request.messages,
            request,
            window,
            promptTokens: request.inputTokens,
            askedMaxTokens: cap,
          };
    };
    // The session's own requests by the same model show the window that works: never more than that.
    const first = attemptFor(
      summaryModel === input.model ? Math.min(settings.window, input.window) : settings.window,
    );
    if (first === undefined) return { failure: 'summarizer_window_too_small' } as const;
    if (deps.budgets !== undefined && !(await deps.budgets.allowsBackgroundWork(input.key)))
      return { skipped: 'budget_exhausted' } as const;
    const answer = await callSummarizer(input, target, summaryModel, first, {
      // The next try fits what the overflow left room for (the gateway's count), in a smaller window.
      smaller: (decision, current) =>
        decision.action === 're_render'
          ? attemptFor(
              Math.min(
                current.window - 1,
                Math.floor(decision.promptCap * ratio) +
                  cap +
                  Math.ceil(current.window * (settings.safetyMarginTokens / settings.window)),
              ),
            )
          : undefined,
      // As a request's overflow teaches (upstream-lessons.ts): a stated window when the counts agree.
      overflowed: (numbers, attempt) => {
        const sent = Math.ceil(attempt.promptTokens * ratio) + cap;
        const agrees =
          numbers.promptTokens !== undefined && numbers.promptTokensLowerBound !== true
            ? countsAgree(numbers.promptTokens, attempt.promptTokens, ratio)
            : false;
        const stated = statedWindow(numbers, cap);
        deps.learnedLimits.recordOverflow(target.name, summaryModel, tenant, {
          failedSize: sent,
          status: 400,
          textClass: stated === undefined ? 'no_numbers' : 'numbers',
          ...(stated === undefined || !agrees ? {} : { stated }),
        });
      },
    });
    if ('failure' in answer) return { failure: answer.failure } as const;
    return { request: answer.attempt.request, answer, target, tokenizer };
  }

  /**
   * Facts the summary dropped are repaired, not vetoed: one more call restates them, and what is still
   * missing is appended verbatim within a cap. Returns the summary's text, repaired when it had to be.
   */
  async function repairSummaryFacts(options: {
    input: AfterTurnInput;
    job: SummaryJob;
    text: string;
    missingFacts: readonly string[];
    covered: readonly ContextMessage[];
    target: UpstreamConfig;
    summaryModel: string;
    tokenizer: Tokenizer;
    /** The answer's cap the summary was asked with (room to think included, within the window). */
    answerCap: number;
  }): Promise<{ text: string; stillMissing: number }> {
    const { input, job, covered, tokenizer } = options;
    const statements = new Map<string, string>();
    for (const fact of options.missingFacts.slice(0, maxRepairFacts)) {
      const statement = sentenceStating(fact, covered, job.previousText);
      if (statement !== undefined) statements.set(fact, statement);
    }
    let repairAnswer: string | undefined;
    if (statements.size > 0) {
      const repairMessages = buildRepairRequest([...new Set(statements.values())]);
      const repair = await callSummarizer(input, options.target, options.summaryModel, {
        messages: repairMessages,
        promptTokens: repairMessages.reduce(
          (sum, message) => sum + countMessageTokens(message, tokenizer),
          0,
        ),
        askedMaxTokens: options.answerCap,
      });
      if ('failure' in repair) metrics.summarizationFailures.inc({ reason: `repair_${repair.failure}` });
      else {
        repairAnswer = repair.text;
        await charge(
          input.key,
          repair,
          tokenizer.count([...statements.values()].join('\n')) + 100,
          tokenizer.count(repair.text),
        );
      }
    }
    const repaired = repairSummary({
      text: options.text,
      repairAnswer,
      missingFacts: options.missingFacts,
      statementFor: (fact) => statements.get(fact) ?? sentenceStating(fact, covered, job.previousText),
      tokenizer,
      capTokens: Math.max(128, Math.floor(input.policy.summary_max_tokens / 2)),
    });
    return { text: repaired.text, stillMissing: repaired.stillMissing.length };
  }

  /** Stores the summary in the same step as archiving what it covers; conflicts when the session moved on. */
  async function storeJobSummary(options: {
    input: AfterTurnInput;
    job: SummaryJob;
    lock: string;
    text: string;
    covered: readonly StoredMessage[];
    previous: Awaited<ReturnType<SessionStore['load']>>['summary'];
    head: number;
  }): Promise<{ stored: StoreSummaryOutcome; tokens: number; replaced: number }> {
    const { input, job, text, covered, previous } = options;
    const { key } = input;
    const coveredTokens = covered.reduce((sum, entry) => sum + entry.tokens, 0);
    const toMessage = job.fromMessage + covered.length;
    const conversationTokenizer = tokenizerFor(config, tokenizers, input.model);
    if (job.kind === 'turn') {
      const steps = job.previousSteps + covered.filter((entry) => entry.message.role === 'assistant').length;
      const tokens = countMessageTokens(turnSummaryMessage(text), conversationTokenizer);
      const stored = await store.storeTurnSummary(key, {
        lockToken: options.lock,
        expectedToMessage: job.expectedToMessage,
        summary: {
          text,
          tokens,
          turnStart: job.turnStart,
          toMessage,
          steps,
          coveredTokens: job.previousCoveredTokens + coveredTokens,
          updatedAtMs: now(),
        },
      });
      return { stored, tokens, replaced: coveredTokens + job.previousTokens };
    }
    const fromMessage = previous?.fromMessage ?? options.head;
    const tokens = countMessageTokens(summaryMessage(text, toMessage - fromMessage), conversationTokenizer);
    const stored = await store.storeSummary(key, {
      lockToken: options.lock,
      expectedToMessage: job.expectedToMessage,
      summary: {
        text,
        tokens,
        fromMessage,
        toMessage,
        coveredTokens: (previous?.coveredTokens ?? 0) + coveredTokens,
        updatedAtMs: now(),
      },
    });
    return { stored, tokens, replaced: coveredTokens + (previous?.tokens ?? 0) };
  }

  async function summarize(
    input: AfterTurnInput,
    summaryModel: string,
    details: Record<string, unknown>,
  ): Promise<JobOutcome> {
    const { key, policy } = input;
    const lock = await store.acquireSummaryLock(key, config.timeouts.summary_ms + 10_000);
    if (lock === undefined) return { outcome: 'skipped', reason: 'another_job' };
    try {
      const snapshot = await store.load(key);
      const job = await planJob(input, snapshot);
      if (job === undefined) return { outcome: 'skipped', reason: 'under_threshold' };
      const call = await requestSummary(input, job, summaryModel);
      if ('skipped' in call) return { outcome: 'skipped', reason: call.skipped };
      if ('failure' in call) return { outcome: 'failed', reason: call.failure };
      const { request, answer, tokenizer } = call;
      const covered = job.range.slice(0, request.coveredMessages);
      Object.assign(details, {
        kind: job.kind,
        fromMessage: job.fromMessage,
        toMessage: job.fromMessage + request.coveredMessages,
        coveredMessages: request.coveredMessages,
        coveredTokens: covered.reduce((sum, entry) => sum + entry.tokens, 0),
        historyTokens: job.historyTokens,
        summarizerInputTokens: request.inputTokens,
      });
      // The call was billed whatever the guard decides: counted from its usage, else estimated.
      await charge(key, answer, request.inputTokens, tokenizer.count(answer.text));
      const coveredMessages = covered.map((entry) => entry.message as ContextMessage);
      const withToolResults = job.kind === 'turn';
      const sourceFacts = await factsInSlices(factSourceTexts(coveredMessages, withToolResults));
      const verdict = judgeSummary({
        text: answer.text,
        finishReason: answer.finishReason,
        previousSummary: job.previousText,
        covered: coveredMessages,
        pinPrefix: policy.pin_prefix,
        withToolResults,
        sourceFacts,
      });
      // The user's own statements of facts (a turn's steps: the agent's calls) are kept verbatim beside
      // the prose (the notes): what they state is kept whatever the summarizer wrote, and is not repaired.
      const notes = mergeNotes(
        job.previousNotes,
        job.kind === 'history' ? userStatements(coveredMessages) : callStatements(coveredMessages),
        Math.floor(input.window * policy.summary_notes_share),
        tokenizerFor(config, tokenizers, input.model),
      );
      const notesText = notes.join('\n');
      const missingFacts = verdict.missingFacts.filter((fact) => !statesFact(notesText, fact));
      const factsKept = verdict.factsTotal - missingFacts.length;
      const recallBefore = verdict.factsTotal === 0 ? 1 : factsKept / verdict.factsTotal;
      Object.assign(details, { factsKept, factsTotal: verdict.factsTotal, notes: notes.length });
      if (!verdict.ok) return { outcome: 'rejected', reason: verdict.reason };
      metrics.summarizationFactRecall.observe({ stage: 'before_repair' }, recallBefore);
      let text = answer.text.trim();
      if (missingFacts.length > 0 && recallBefore < policy.summary_min_fact_recall) {
        const repaired = await repairSummaryFacts({
          input,
          job,
          text,
          missingFacts,
          covered: coveredMessages,
          target: call.target,
          summaryModel,
          tokenizer,
          answerCap: call.answer.attempt.askedMaxTokens ?? policy.summary_max_tokens,
        });
        text = repaired.text;
        Object.assign(details, {
          repaired: true,
          factsKeptAfterRepair: verdict.factsTotal - repaired.stillMissing,
        });
      }
      const stillMissing = missingFacts.filter((fact) => !statesFact(text, fact)).length;
      metrics.summarizationFactRecall.observe(
        { stage: 'after_repair' },
        verdict.factsTotal === 0 ? 1 : (verdict.factsTotal - stillMissing) / verdict.factsTotal,
      );
      const { stored, tokens, replaced } = await storeJobSummary({
        input,
        job,
        lock,
        text:
          job.kind === 'history'
            ? joinSummaryText(text, notes, notesHeading)
            : turnSummaryText(job, { prose: text, calls: notes, covered }),
        covered,
        previous: snapshot.summary,
        head: snapshot.headMessages,
      });
      if (!stored.ok) return { outcome: 'conflict', reason: stored.reason };
      const saved = Math.max(0, replaced - tokens);
      metrics.summarizationTokensSaved.inc({}, saved);
      metrics.summarizationCompression.observe({}, replaced / Math.max(1, tokens));
      Object.assign(details, {
        summaryTokens: tokens,
        compressionRatio: Math.round((replaced / Math.max(1, tokens)) * 100) / 100,
        tokensSaved: saved,
        archivedMessages: stored.archivedMessages,
      });
      return { outcome: 'stored' };
    } finally {
      await store.releaseSummaryLock(key, lock).catch(() => undefined);
    }
  }

  /**
   * One summarizer call, through the chat engine's send loop (upstream/send-with-recovery.ts) and answer
   * reader (upstream/relay.ts): the same classifier, retry policy and parser as a client's request. A
   * 429 or 5xx is retried as a request's is; an overflow is retried smaller only when `smaller` says how.
   */
  async function callSummarizer<A extends SendAttempt & { messages: ContextMessage[] }>(
    input: AfterTurnInput,
    target: UpstreamConfig,
    summaryModel: string,
    first: A,
    recovery?: {
      smaller: SendWithRecoveryOptions<A>['smaller'];
      overflowed: (numbers: OverflowNumbers, attempt: A) => void;
    },
  ): Promise<
    | {
        attempt: A;
        text: string;
        finishReason: string | undefined;
        promptTokens: number | undefined;
        completionTokens: number | undefined;
      }
    | { failure: string }
  > {
    const credentialHeaders: IncomingHttpHeaders = {};
    for (const name of passThroughCredentialHeaders) {
      const value = input.clientHeaders[name];
      if (typeof value === 'string') credentialHeaders[name] = value;
    }
    const headers = buildUpstreamHeaders(credentialHeaders, target, input.credential ?? noCredential);
    const signal = new EventEmitter();
    const onAbort = (): void => void signal.emit('abort');
    abort.once('abort', onAbort);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      signal.emit('abort');
    }, config.timeouts.summary_ms);
    timer.unref();
    try {
      // A reasoning model takes its cap under its own name and no temperature but 1; one known only by
      // its refusal of them gets the fields it was found to take.
      const settingsNow = (attempt: A): Record<string, unknown> =>
        applyFieldFixes(
          {
            [outputCapField(summaryModel)]: attempt.askedMaxTokens ?? input.policy.summary_max_tokens,
            ...(isOpenAIReasoningModel(summaryModel) ? {} : { temperature: 0 }),
          },
          fieldFixes.fixesFor(target.name, summaryModel),
        );
      const sent = await sendWithRecovery<A>({
        first,
        send: (attempt) =>
          upstream.send({
            upstream: target,
            method: 'POST',
            path: '/chat/completions',
            headers,
            body: JSON.stringify({
              model: summaryModel,
              messages: attempt.messages,
              ...settingsNow(attempt),
              stream: false,
            }),
            signal,
          }),
        fixFields: (fixes, current) => {
          const before = JSON.stringify(settingsNow(current));
          for (const fix of fixes.filter(isSummaryLesson))
            fieldFixes.remember(target.name, summaryModel, fix);
          return JSON.stringify(settingsNow(current)) === before ? undefined : Object.assign({}, current);
        },
        smaller: recovery?.smaller ?? (() => undefined),
        streaming: false,
        limits: recoveryLimitsFor(
          {
            max_retries: recovery === undefined ? 0 : retryDefaults.summaryOverflowRetries,
            upstream_retries: input.policy.upstream_retries,
          },
          config.timeouts.upstream_retry_deadline_ms,
        ),
        clock: now,
        random,
        sleep,
        cancelled: () => closed || timedOut,
        observe: (event) => {
          if (event.type === 'overflow') recovery?.overflowed(event.verdict.numbers, event.attempt);
          if (event.type === 'smaller_attempt')
            metrics.summarizationFailures.inc({ reason: 'overflow_retried' });
        },
      });
      if (sent.response.statusCode !== 200) {
        sent.response.discard();
        return { failure: `upstream_status_${sent.response.statusCode}` };
      }
      const whole = await readWholeAnswer(sent.response, { expectCompletion: true });
      const { text, finishReason, spentThinking } = summaryAnswerOf(whole);
      if (spentThinking) {
        // It spent the answer's cap on its thinking: its next summary calls get four times the room.
        rememberThinkingCap(
          target.name,
          summaryModel,
          sent.attempt.askedMaxTokens ?? input.policy.summary_max_tokens,
        );
        return { failure: 'thinking_spent_cap' };
      }
      return {
        attempt: sent.attempt,
        text,
        finishReason,
        promptTokens: whole.usage.promptTokens,
        completionTokens: whole.usage.completionTokens,
      };
    } catch (error) {
      if (timedOut) return { failure: 'timeout' };
      if (closed) return { failure: 'shutting_down' };
      if (isGatewayError(error) && error.code === 'upstream_bad_response')
        return { failure: 'invalid_answer' };
      return { failure: isGatewayError(error) ? error.code : 'upstream_error' };
    } finally {
      clearTimeout(timer);
      abort.off('abort', onAbort);
    }
  }

  return {
    afterTurn(input) {
      if (closed || input.policy.summarization !== 'on') return;
      if (input.activeTokens <= input.policy.summarize_at * input.historyBudget) return;
      const name = `${input.key.tenantId}\u0000${input.key.sessionId}`;
      if (running.has(name)) return;
      const failure = failures.get(name);
      if (failure !== undefined && failure.turnsToSkip > 0) {
        failure.turnsToSkip--;
        return;
      }
      const job = run(input, name).finally(() => running.delete(name));
      running.set(name, job);
    },
    async idle() {
      while (running.size > 0) await Promise.all(running.values());
    },
    async close() {
      closed = true;
      abort.emit('abort');
      await Promise.all(running.values());
    },
  };
}
