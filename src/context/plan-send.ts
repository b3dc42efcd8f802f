// What a chat request sends, decided in one place (docs/architecture.md#what-gets-sent): a pure
// function of the request, the session's view of the conversation, what the gateway has learned of the
// model (window, estimate ratio, tool-set size) and the attempt the retry ladder stands at (its
// reduction, prompt cap and max_tokens). It returns the messages, the max_tokens to send and the report;
// nothing it is given is changed, and no setting is overwritten on the way — the preview
// (POST /v1/context/render), the request and each of its retries all come from here.
import type { GatewayConfig } from '../config/gateway-config.js';
import { renderContext, type RenderInput } from './render.js';
import { countingWorkLimitFor, countNewestWithin, type MessageCounts } from './token-accounting.js';
import type { ContextMessage, RenderReport } from './types.js';
import { GatewayError } from '../errors.js';
import type { CountPrecision, Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';
import type { RequestOverrides } from './request-overrides.js';
import type { SessionView } from './session-view.js';
import { isSystemRole } from './turns.js';
import { answerFloorOf } from '../upstream/classify-upstream-error.js';
import type { ForeignThinkingStep } from '../upstream/anthropic-wire.js';
import {
  findModelEntry,
  resolveContextSettings,
  withPolicy,
  type ContextSettings,
} from './context-settings.js';

/** The retry ladder's later steps (docs/budgeting.md#reactive-recovery): fewer turns than the window alone would allow. */
export type ContextReduction = 'none' | 'drop_oldest_half' | 'minimal';

/** Where the retry ladder stands (docs/budgeting.md#reactive-recovery): nothing yet for a first attempt. */
export interface AttemptState {
  reduction: ContextReduction;
  /** max_tokens to send instead of the client's. */
  maxTokens: number | undefined;
  /** At most this many prompt tokens (the gateway's count): what an overflow left room for. */
  promptCap?: number | undefined;
  /**
   * Prompt tokens kept free below the window (the gateway's count): room for the recall tool's calls
   * and results (docs/budgeting.md#recall).
   */
  keepFreeTokens?: number | undefined;
  /**
   * Thinking blocks left out of an `anthropic` upstream's request after it refused a signature it did not
   * give (another provider's model thought in the conversation: docs/anthropic.md): `earlier`, all but
   * those of a tool loop's call being answered; `all`, those too, with thinking off for that request.
   */
  foreignThinking?: ForeignThinkingStep | undefined;
}

export const firstAttempt: AttemptState = { reduction: 'none', maxTokens: undefined };

/** What the gateway has learned of the model on this upstream, as this request's tenant may use it. */
export interface LearnedInputs {
  /** The window the upstream showed, when smaller than the configured one. */
  window?: number | undefined;
  /** The learned window has not been confirmed for a while: a first attempt tries the configured one. */
  probe?: boolean | undefined;
  /** Upstream-reported prompt tokens per estimated token. */
  ratio?: number | undefined;
  /** The tokens the upstream counts for this request's tool set, once learned (upstream units). */
  toolTokens?: number | undefined;
  /** The model's answers show thinking, counted in max_tokens: max_tokens is lowered less far (answerFloorOf). */
  thinks?: boolean | undefined;
}

/** The parts of a chat request that decide what is sent. */
export interface SendRequest {
  model: string;
  messages: readonly unknown[];
  tools?: unknown;
  max_tokens?: number | null | undefined;
  max_completion_tokens?: number | null | undefined;
  n?: number | null | undefined;
}

export interface PreparedContext {
  messages: ContextMessage[];
  report: RenderReport;
  settings: ContextSettings;
  /** max_tokens to send instead of the client's: the attempt's, or what is left once the prompt fits a learned window. */
  loweredMaxTokens?: number;
  /** The learned ratio the estimate was scaled by (estimated models): the report counts in estimate units. */
  estimateRatio?: number;
  /** Some of the messages were estimated rather than counted (past the counting bound): nothing is learned from it. */
  estimated?: true;
}

export function tokenizerFor(
  config: GatewayConfig,
  tokenizers: Tokenizers,
  model: string,
  precision: CountPrecision = 'exact',
): ReturnType<Tokenizers['forEncoding']> {
  return tokenizers.forEncoding(findModelEntry(config, model).tokenizer, precision);
}

/**
 * Bodies larger than this, as counting weighs them (json-body.ts countingBytesOf: a multi-byte
 * character's bytes four times each), are counted from samples: their text is several times most
 * models' windows, so much of it is left out anyway, and counting it exactly would cost the gateway
 * seconds of CPU.
 */
export const sampledCountingBodyChars = 4 * 1024 * 1024;

export function countPrecisionFor(countingBytes: number): CountPrecision {
  return countingBytes > sampledCountingBodyChars ? 'sampled' : 'exact';
}

export interface PlanSendInput {
  config: GatewayConfig;
  tokenizers: Tokenizers;
  request: SendRequest;
  overrides: RequestOverrides;
  /** A session's conversation to fit instead of the request's own messages. */
  session?: SessionView | undefined;
  learned?: LearnedInputs | undefined;
  /**
   * The request's tool definitions' own tokens (token-accounting.ts toolDefinitionTokens, in the
   * model's tool format and tokenizer), when counted already: the planner counts each tool set once.
   */
  toolFormula?: number | undefined;
  attempt?: AttemptState | undefined;
  precision?: CountPrecision;
  /** A window the request asks of its provider beyond the configured one (resolveContextSettings). */
  askedWindow?: number | undefined;
}

/** An attempt that changes nothing the client asked: no reduction, no cap on the prompt, its max_tokens. */
const isFirstTry = (attempt: AttemptState): boolean =>
  attempt.reduction === 'none' && attempt.promptCap === undefined && attempt.maxTokens === undefined;

export function planSend(input: PlanSendInput): PreparedContext {
  const { session, overrides } = input;
  const attempt = input.attempt ?? firstAttempt;
  const learned = input.learned ?? {};
  const request =
    attempt.maxTokens === undefined ? input.request : withMaxTokens(input.request, attempt.maxTokens);
  // A learned window nobody has confirmed for a while: a first attempt tries the configured one (an
  // overflow confirms the lesson, and the retry fits the learned window).
  const learnedWindow = learned.probe === true && isFirstTry(attempt) ? undefined : learned.window;
  const resolved = resolveContextSettings({
    config: input.config,
    model: request.model,
    overrides,
    maxCompletionTokens: request.max_completion_tokens ?? request.max_tokens,
    choices: request.n,
    learnedWindow,
    askedWindow: input.askedWindow,
  });
  // An estimated model with a learned ratio counts as calibrated: the smaller margin, and a window
  // scaled into estimate units (the prompt's real size is the estimate times the ratio).
  // A model counted exactly has a ratio only after the upstream showed it counts more than the gateway.
  const ratio = learned.ratio;
  const reduced = reducedConversation(
    attempt.reduction,
    session,
    request.messages as ContextMessage[],
    resolved.policy,
    overrides.omittedBefore ?? 0,
  );
  const { conversation } = reduced;
  const baseSettings = withPolicy(
    resolved,
    reduced.policy,
    ratio === undefined
      ? resolved.safetyMarginTokens
      : Math.ceil(resolved.window * resolved.policy.safety_margin),
  );
  const windowFor = (reserve: number): number => {
    if (ratio === undefined) return baseSettings.window;
    const fixed = reserve + baseSettings.safetyMarginTokens;
    return fixed + Math.max(0, Math.floor((baseSettings.window - fixed) / ratio));
  };
  const toolTokens =
    learned.toolTokens === undefined ? undefined : Math.ceil(learned.toolTokens / (ratio ?? 1));
  const tokenizer = input.tokenizers.forEncoding(baseSettings.model.tokenizer, input.precision);
  const counted =
    reduced.messageTokens === undefined
      ? conversationCounts(conversation, tokenizer, input.precision ?? 'exact', windowFor(0))
      : undefined;
  const messageTokens = counted?.tokens ?? reduced.messageTokens;
  // With a learned window, when the whole conversation fits but not with the max_tokens asked for,
  // what is left is asked for instead (before the upstream refuses) — on a retry that lowered max_tokens
  // too (nothing compressed), whose answer would otherwise take the margin's room from the prompt the
  // provider has just taken.
  const loweredMaxTokens =
    learnedWindow !== undefined && attempt.reduction === 'none'
      ? maxTokensThatFit({
          request,
          settings: baseSettings,
          learned,
          probe: probeFor(
            conversation,
            request,
            baseSettings,
            tokenizer,
            windowFor(baseSettings.outputReserve),
            {
              toolTokens,
              toolFormula: input.toolFormula,
              messageTokens,
              summary: session?.summary,
            },
          ),
        })
      : undefined;
  const settings =
    loweredMaxTokens === undefined
      ? baseSettings
      : Object.assign({}, baseSettings, { outputReserve: loweredMaxTokens * (request.n ?? 1) });
  // The cap bounds the prompt itself, so it is applied after max_tokens was fitted: a retry after an
  // overflow sends fewer prompt tokens, not the same prompt with a shorter answer. So does the model's
  // own cap on its input (GPT-5's 272,000), whatever the answer's reserve; a refusal quotes that cap
  // when it, not the window less the answer, left the turn no room.
  const inputRoom = inputRoomOf(settings, ratio ?? 1);
  const promptCap = Math.min(attempt.promptCap ?? Infinity, inputRoom ?? Infinity);
  const { capBinds, renderWindowFor } = renderWindows(promptCap, settings, windowFor, attempt);
  const render = renderInputFor({
    request,
    settings,
    tokenizer,
    window: renderWindowFor(settings.outputReserve),
    reduced,
    messageTokens,
    toolTokens,
    toolFormula: input.toolFormula,
    session,
    attempt,
  });
  const {
    outcome,
    outputReserve,
    maxTokens: leftForAnswer,
  } = renderGivingWay(render, settings, request.n ?? 1, renderWindowFor, ratio ?? 1, {
    margin: promptCap === Infinity && attempt.reduction === 'none',
  });
  const final =
    outputReserve === settings.outputReserve ? settings : Object.assign({}, settings, { outputReserve });
  if (!outcome.ok)
    throw doesNotFit(outcome, final, ratio ?? 1, inputRoom === promptCap && capBinds(final.outputReserve));
  // The report is this render's own (renderContext makes a new one every call): it states the window as
  // configured, not scaled into an estimated model's units nor narrowed to a model's cap on its input.
  if (ratio !== undefined || inputRoom === promptCap) outcome.report.window = final.window;
  const prepared: PreparedContext = { messages: outcome.messages, report: outcome.report, settings: final };
  const maxTokens = leftForAnswer ?? loweredMaxTokens ?? attempt.maxTokens;
  if (maxTokens !== undefined) prepared.loweredMaxTokens = maxTokens;
  if (ratio !== undefined) prepared.estimateRatio = ratio;
  if (counted?.estimated === true || session?.estimatedCounts === true) prepared.estimated = true;
  return prepared;
}

/**
 * The window an attempt renders in for a reserve: the window (scaled for an estimated model), or where a
 * cap on the prompt binds, the cap plus the reserve and margin; less what the attempt keeps free.
 */
function renderWindows(
  promptCap: number,
  settings: ContextSettings,
  windowFor: (reserve: number) => number,
  attempt: AttemptState,
): { capBinds: (reserve: number) => boolean; renderWindowFor: (reserve: number) => number } {
  const capBinds = (reserve: number): boolean =>
    promptCap + reserve + settings.safetyMarginTokens < windowFor(reserve);
  const renderWindowFor = (reserve: number): number =>
    (capBinds(reserve) ? promptCap + reserve + settings.safetyMarginTokens : windowFor(reserve)) -
    (attempt.keepFreeTokens ?? 0);
  return { capBinds, renderWindowFor };
}

/**
 * The prompt tokens (in the gateway's count) a model with a cap on its input takes: the cap less its
 * share of the safety margin (the margin's share of the window, of the cap), in estimate units for an
 * estimated model.
 */
function inputRoomOf(settings: ContextSettings, ratio: number): number | undefined {
  const { maxInput } = settings.model;
  if (maxInput === undefined) return undefined;
  const margin = Math.ceil((settings.safetyMarginTokens * maxInput) / settings.window);
  return Math.max(0, Math.floor((maxInput - margin) / ratio));
}

/** The prompt tokens (in the gateway's count) a request with these settings may carry in all. */
export function promptRoomOf(settings: ContextSettings, ratio: number): number {
  const windowRoom = Math.floor(
    (settings.window - settings.outputReserve - settings.safetyMarginTokens) / ratio,
  );
  return Math.min(windowRoom, inputRoomOf(settings, ratio) ?? Infinity);
}

/** What maxTokensThatFit renders: the whole conversation in the window, no room kept for the answer. */
function probeFor(
  conversation: RenderInput['messages'],
  request: SendRequest,
  settings: ContextSettings,
  tokenizer: RenderInput['tokenizer'],
  window: number,
  known: {
    toolTokens: number | undefined;
    toolFormula: number | undefined;
    messageTokens: readonly number[] | undefined;
    summary: RenderInput['summary'];
  },
): RenderInput {
  const probe: RenderInput = {
    messages: conversation,
    tools: request.tools,
    toolFormat: settings.model.toolFormat,
    tokenizer,
    window,
    outputReserve: 0,
    safetyMarginTokens: settings.safetyMarginTokens,
    policy: settings.policy,
  };
  if (known.toolTokens !== undefined) probe.toolTokens = known.toolTokens;
  if (known.toolFormula !== undefined) probe.toolFormula = known.toolFormula;
  if (known.messageTokens !== undefined) probe.messageTokens = known.messageTokens;
  if (known.summary !== undefined) probe.summary = known.summary;
  return probe;
}

/**
 * Each message's tokens, counted once for every render of an attempt within a bounded CPU time
 * (docs/budgeting.md): a body over 4 MB only as far as it can be sent (twice the window, to be sure).
 */
function conversationCounts(
  conversation: readonly ContextMessage[],
  tokenizer: RenderInput['tokenizer'],
  precision: CountPrecision,
  window: number,
): MessageCounts {
  return countNewestWithin(
    conversation,
    tokenizer,
    precision === 'sampled' ? 2 * window : Number.POSITIVE_INFINITY,
    countingWorkLimitFor(precision),
  );
}

/** What the render is given for one attempt. Built without object spreads: this runs on every request. */
function renderInputFor(options: {
  request: SendRequest;
  settings: ContextSettings;
  tokenizer: RenderInput['tokenizer'];
  window: number;
  reduced: ReturnType<typeof reducedConversation>;
  toolTokens: number | undefined;
  toolFormula: number | undefined;
  session: SessionView | undefined;
  attempt: AttemptState;
  messageTokens: readonly number[] | undefined;
}): RenderInput {
  const { settings, tokenizer, window, reduced, session, attempt, messageTokens } = options;
  const { conversation, historyStartHint, omittedBefore } = reduced;
  const render: RenderInput = {
    messages: conversation,
    tools: options.request.tools,
    toolFormat: settings.model.toolFormat,
    noticePlacement: settings.model.noticePlacement,
    tokenizer,
    window,
    outputReserve: settings.outputReserve,
    safetyMarginTokens: settings.safetyMarginTokens,
    policy: settings.policy,
  };
  if (messageTokens !== undefined) render.messageTokens = messageTokens;
  // A learned tool set size is in the upstream's units; the render counts in estimate units.
  if (options.toolTokens !== undefined) render.toolTokens = options.toolTokens;
  if (options.toolFormula !== undefined) render.toolFormula = options.toolFormula;
  if (historyStartHint !== undefined) render.historyStartHint = historyStartHint;
  if (omittedBefore !== 0) render.omittedBefore = omittedBefore;
  if (session?.summary !== undefined) render.summary = session.summary;
  if (session?.turnSummary !== undefined && attempt.reduction !== 'minimal')
    render.turnSummary = session.turnSummary;
  if (session?.pastTurnSummaries !== undefined && attempt.reduction !== 'minimal')
    render.pastTurnSummaries = session.pastTurnSummaries;
  return render;
}

/** The request with max_tokens (or max_completion_tokens, whichever it uses) set to `value`. */
export function withMaxTokens<R extends SendRequest>(request: R, value: number | undefined): R {
  if (value === undefined) return request;
  return request.max_completion_tokens !== undefined && request.max_completion_tokens !== null
    ? Object.assign({}, request, { max_completion_tokens: value })
    : Object.assign({}, request, { max_tokens: value });
}

/**
 * Renders; a reserve gives way before the request is refused, once. One the client did not ask for goes
 * down to an eighth of the window (an agent's fixed prompt can take most of a small model's window; its
 * answers are short). A max_tokens the client asked for that takes more than half the window (an agent
 * asking for its model's longest answer, on a window smaller than it knows) leaves the prompt a quarter
 * of the window's room for the answer, and the answer then gets what the fitted prompt leaves
 * (`maxTokens`, never more than asked). Then the safety margin gives way, as far as the current turn
 * needs (whole, or all of the margin), where `givesWay.margin` — not past a cap on the prompt (the
 * model's own on its input, or what an overflow left room for), nor on a retry, where the provider has
 * judged: a prompt and answer that fit the window by the gateway's count are sent, nothing of the
 * history beside them, and the provider judges (an overflow is recovered from as any other).
 * Returns the outcome and the reserve it was rendered with.
 */
function renderGivingWay(
  input: RenderInput,
  settings: ContextSettings,
  choices: number,
  windowFor: (reserve: number) => number,
  ratio: number,
  givesWay: { margin: boolean },
): { outcome: ReturnType<typeof renderContext>; outputReserve: number; maxTokens?: number } {
  const rendered = renderGivingReserve(input, settings, choices, windowFor, ratio);
  const failed = rendered.outcome;
  if (failed.ok || !givesWay.margin) return rendered;
  // As far as the whole turn needs, or all of it: the turn then fitted as it would be (its older
  // results masked, its oldest steps left out) in what the window leaves.
  if (failed.neededTokens - failed.rawBudgetTokens > input.safetyMarginTokens) return rendered;
  const wanted = Math.max(failed.neededTokens, failed.wholeTurnTokens) - failed.rawBudgetTokens;
  input.safetyMarginTokens -= Math.min(input.safetyMarginTokens, wanted);
  const outcome = renderContext(input);
  return outcome.ok ? Object.assign({}, rendered, { outcome }) : rendered;
}

/** Renders; the reserve gives way before the request is refused, once (renderGivingWay). */
function renderGivingReserve(
  input: RenderInput,
  settings: ContextSettings,
  choices: number,
  windowFor: (reserve: number) => number,
  ratio: number,
): { outcome: ReturnType<typeof renderContext>; outputReserve: number; maxTokens?: number } {
  const outcome = renderContext(input);
  const asked = settings.outputReserve;
  const floor = settings.outputReserveRequested
    ? asked > settings.window / 2
      ? Math.floor(settings.window / 4) * choices
      : asked
    : Math.min(asked, Math.floor(settings.window / 8) * choices);
  if (outcome.ok || floor >= asked) return { outcome, outputReserve: asked };
  input.outputReserve = floor;
  input.window = windowFor(floor);
  const retried = renderContext(input);
  if (!settings.outputReserveRequested || !retried.ok) return { outcome: retried, outputReserve: floor };
  const left = Math.floor(
    (settings.window - settings.safetyMarginTokens - Math.ceil(retried.report.inputTokens * ratio)) / choices,
  );
  const maxTokens = Math.min(Math.floor(asked / choices), Math.max(Math.floor(floor / choices), left));
  return { outcome: retried, outputReserve: maxTokens * choices, maxTokens };
}

/**
 * The gateway's own "does not fit", in OpenAI's words (clients and frameworks recognise an overflow by
 * "maximum context length" and the code) and then ctxgate's detail. Counts are in the provider's units
 * (an estimated model's counts scaled by its ratio) against the window as configured or stated.
 */
function doesNotFit(
  outcome: Extract<ReturnType<typeof renderContext>, { ok: false }>,
  settings: ContextSettings,
  scale: number,
  inputCapped: boolean,
): GatewayError {
  const { window, outputReserve: reserve } = settings;
  const needed = Math.ceil(outcome.neededTokens * scale);
  const left = Math.floor(outcome.budgetTokens * scale);
  // The room the prompt had: the window less the answer and the margin, or the model's cap on its input
  // less the cap's share of the margin (inputRoomOf).
  const room = inputCapped ? (settings.model.maxInput ?? window) : window - reserve;
  const margin = inputCapped ? room - (inputRoomOf(settings, 1) ?? room) : settings.safetyMarginTokens;
  // The system prompt, tools and summary, plus the turn: all of the prompt (the fixed parts counted in
  // full even when they alone exceed the room).
  const prompt = Math.max(needed, room - margin - Math.floor(outcome.rawBudgetTokens * scale) + needed);
  // OpenAI's wordings: its input cap (GPT-5's), or the window with the completion the client asked for,
  // or the messages alone. A reserve the gateway keeps by default is not the client's request and is
  // not quoted as one.
  const openAIWords = inputCapped
    ? `Input tokens exceed the configured limit of ${room} tokens. Your messages resulted in ${prompt} tokens. ` +
      'Please reduce the length of the messages.'
    : settings.outputReserveRequested
      ? `This model's maximum context length is ${window} tokens. However, you requested ${prompt + reserve} tokens (${prompt} in the messages, ${reserve} in the completion). ` +
        'Please reduce the length of the messages or completion.'
      : `This model's maximum context length is ${window} tokens. However, your messages resulted in ${prompt} tokens. Please reduce the length of the messages.`;
  const within = inputCapped
    ? `within the model's cap on its input (${room}), after the system prompt, tools `
    : settings.outputReserveRequested
      ? `after the system prompt, tools, the max_tokens asked for (${reserve}) `
      : `after the system prompt, tools, room kept for the answer (${reserve}; send max_tokens to choose it) `;
  const lowerMaxTokens = settings.outputReserveRequested && !inputCapped ? ', or lower max_tokens' : '';
  return new GatewayError(
    'context_length_exceeded',
    `${openAIWords} ` +
      `ctxgate: the current turn alone needs about ${needed} tokens, but ${within}` +
      `and safety margin (${margin}) only ${left} are left for it. Shorten the last message${lowerMaxTokens}.`,
    { param: 'messages' },
  );
}

/**
 * The retry ladder's later steps (docs/budgeting.md#reactive-recovery): half the history turns (and no
 * protected first turns), or only the system prompt, the summary and the current turn. Returns the
 * conversation to render and the policy to render it with (the given one, or a copy).
 */
function reducedConversation(
  reduction: ContextReduction | undefined,
  session: SessionView | undefined,
  messages: readonly ContextMessage[],
  policy: ContextSettings['policy'],
  /** Left out of a stateless conversation before it arrived (a long Responses chain's older links). */
  omittedUpstream: number,
): {
  conversation: readonly ContextMessage[];
  messageTokens: readonly number[] | undefined;
  historyStartHint: number | undefined;
  omittedBefore: number;
  policy: ContextSettings['policy'];
} {
  const conversation = session?.conversation ?? messages;
  const unchanged = {
    conversation,
    messageTokens: session?.conversationTokens,
    historyStartHint: session?.historyStartHint,
    omittedBefore: session?.omittedBefore ?? omittedUpstream,
    policy,
  };
  if (reduction === 'drop_oldest_half') {
    const historyTurns = Math.max(0, conversation.filter((message) => message.role === 'user').length - 1);
    return Object.assign({}, unchanged, {
      policy: Object.assign({}, policy, {
        keep_first_turns: 0,
        max_history_turns: Math.max(1, Math.floor(historyTurns / 2)),
        trim_to: 1,
      }),
    });
  }
  if (reduction !== 'minimal') return unchanged;
  const systemCount = conversation.findIndex((message) => !isSystemRole(message.role));
  const lastUser = conversation.findLastIndex((message) => message.role === 'user');
  if (systemCount < 0 || lastUser <= systemCount) return unchanged;
  const tokens = unchanged.messageTokens;
  return {
    conversation: [...conversation.slice(0, systemCount), ...conversation.slice(lastUser)],
    messageTokens:
      tokens === undefined ? undefined : [...tokens.slice(0, systemCount), ...tokens.slice(lastUser)],
    historyStartHint: undefined,
    omittedBefore: unchanged.omittedBefore + lastUser - systemCount,
    policy,
  };
}

/**
 * With a learned window: when the whole conversation fits but not with the max_tokens the client asked
 * for, what is left (docs/budgeting.md#reactive-recovery's remedy, applied before the upstream refuses); else undefined.
 */
function maxTokensThatFit(options: {
  request: SendRequest;
  settings: ContextSettings;
  /** Its ratio scales the count; that the model thinks keeps more room for the answer (answerFloorOf). */
  learned: LearnedInputs;
  probe: RenderInput;
}): number | undefined {
  const { request, settings } = options;
  const { ratio, thinks } = options.learned;
  const requestedMaxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (requestedMaxTokens === undefined || requestedMaxTokens === null) return undefined;
  const probe = renderContext(options.probe);
  // Everything fits when nothing had to be left out or cut (a summary is always added).
  if (!probe.ok) return undefined;
  const { report } = probe;
  if (
    report.droppedMessages !== 0 ||
    report.truncatedToolResults !== 0 ||
    report.maskedToolResults !== 0 ||
    report.oversizeTruncated
  )
    return undefined;
  const left = Math.floor(settings.window - settings.safetyMarginTokens - report.inputTokens * (ratio ?? 1));
  return left < requestedMaxTokens && left >= answerFloorOf(requestedMaxTokens, thinks === true)
    ? left
    : undefined;
}

export function contextResponseHeaders({
  report,
  settings,
  estimateRatio,
}: PreparedContext): Record<string, string> {
  // In the provider's units: an estimated model's count scaled by its learned ratio.
  const inputTokens = Math.ceil(report.inputTokens * (estimateRatio ?? 1));
  return {
    'x-context-window': String(report.window),
    'x-context-input-tokens': String(inputTokens),
    'x-context-usage': ((inputTokens + settings.outputReserve) / report.window).toFixed(2),
    'x-context-dropped-messages': String(report.droppedMessages + report.orphanMessagesRemoved),
    'x-context-summarized-messages': String(report.summarizedMessages),
    'x-context-truncated-tool-results': String(report.truncatedToolResults),
    'x-context-masked-tool-results': String(report.maskedToolResults),
    'x-context-summary': report.summaryUsed ? 'used' : 'none',
    'x-context-retries': '0',
  };
}
