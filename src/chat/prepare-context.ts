// Between the request schema and the upstream call: fits the request's conversation into the model's
// window with the context engine and says what was done, in response headers and the request log.
import type { GatewayConfig } from '../config/gateway-config.js';
import { renderContext, type RenderInput } from '../context/render.js';
import { countNewestWithin } from '../context/token-accounting.js';
import type { ContextMessage, RenderReport } from '../context/types.js';
import { GatewayError } from '../errors.js';
import type { CountPrecision, Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';
import type { ChatCompletionRequest } from './chat-request-schema.js';
import type { RequestOverrides } from './request-overrides.js';
import type { SessionView } from '../sessions/session-turn.js';
import { isSystemRole } from '../context/turns.js';
import { minimumAnswerTokens } from '../upstream/classify-upstream-error.js';
import { findModelEntry, resolveContextSettings, type ContextSettings } from './context-settings.js';

/** The retry ladder's later steps (docs/budgeting.md#reactive-recovery): fewer turns than the window alone would allow. */
export type ContextReduction = 'none' | 'drop_oldest_half' | 'minimal';

export interface PreparedContext {
  messages: ContextMessage[];
  report: RenderReport;
  settings: ContextSettings;
  /** max_tokens to send instead of the client's (lowerMaxTokensToFit). */
  loweredMaxTokens?: number;
  /** The learned ratio the estimate was scaled by (estimated models): the report counts in estimate units. */
  estimateRatio?: number;
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
 * Bodies larger than this are counted from samples: their text is several times any model's window, so
 * most of it is left out anyway, and counting it exactly would cost the gateway seconds of CPU.
 */
export const sampledCountingBodyChars = 4 * 1024 * 1024;

export function countPrecisionFor(rawBody: Buffer | undefined): CountPrecision {
  return rawBody !== undefined && rawBody.length > sampledCountingBodyChars ? 'sampled' : 'exact';
}

export function prepareContext(options: {
  config: GatewayConfig;
  tokenizers: Tokenizers;
  chatRequest: ChatCompletionRequest;
  overrides: RequestOverrides;
  /** A session's conversation to fit instead of the request's own messages. */
  session?: SessionView | undefined;
  learnedWindow?: number | undefined;
  reduction?: ContextReduction;
  /** At most this many prompt tokens (a retry after an overflow): the window shrinks to match. */
  promptCap?: number | undefined;
  /**
   * With a learned window: when the whole conversation fits but not with the max_tokens the client
   * asked for, ask for what is left instead (docs/budgeting.md#reactive-recovery's remedy, applied before the upstream refuses).
   */
  lowerMaxTokensToFit?: boolean;
  /** Upstream-reported prompt tokens per estimated token, learned for this model and upstream. */
  estimateRatio?: number | undefined;
  /** The tokens the upstream counts for this request's tool set, once learned (upstream units). */
  learnedToolTokens?: number | undefined;
  precision?: CountPrecision;
}): PreparedContext {
  const { chatRequest, session } = options;
  const settings = resolveContextSettings({
    config: options.config,
    model: chatRequest.model,
    overrides: options.overrides,
    maxCompletionTokens: chatRequest.max_completion_tokens ?? chatRequest.max_tokens,
    choices: chatRequest.n,
    learnedWindow: options.learnedWindow,
  });
  // An estimated model with a learned ratio counts as calibrated: the smaller margin, and a window
  // scaled into estimate units (the prompt's real size is the estimate times the ratio).
  // A model counted exactly has a ratio only after the upstream showed it counts more than the gateway.
  const ratio = options.estimateRatio;
  if (ratio !== undefined)
    settings.safetyMarginTokens = Math.ceil(settings.window * settings.policy.safety_margin);
  const windowFor = (reserve: number): number => {
    if (ratio === undefined) return settings.window;
    const fixed = reserve + settings.safetyMarginTokens;
    return fixed + Math.max(0, Math.floor((settings.window - fixed) / ratio));
  };
  const { conversation, messageTokens, historyStartHint, omittedBefore } = reducedConversation(
    options.reduction,
    session,
    chatRequest.messages as ContextMessage[],
    settings,
    options.overrides.omittedBefore ?? 0,
  );
  const toolTokens =
    options.learnedToolTokens === undefined ? undefined : Math.ceil(options.learnedToolTokens / (ratio ?? 1));
  const tokenizer = options.tokenizers.forEncoding(settings.model.tokenizer, options.precision);
  const loweredMaxTokens =
    options.lowerMaxTokensToFit === true
      ? maxTokensThatFit({
          chatRequest,
          settings,
          ratio,
          probe: {
            ...(toolTokens === undefined ? {} : { toolTokens }),
            messages: conversation,
            ...(messageTokens === undefined ? {} : { messageTokens }),
            tools: chatRequest.tools,
            toolFormat: settings.model.toolFormat,
            tokenizer,
            window: windowFor(settings.outputReserve),
            outputReserve: 0,
            safetyMarginTokens: settings.safetyMarginTokens,
            policy: settings.policy,
            ...(session?.summary === undefined ? {} : { summary: session.summary }),
          },
        })
      : undefined;
  if (loweredMaxTokens !== undefined) settings.outputReserve = loweredMaxTokens * (chatRequest.n ?? 1);
  // The cap bounds the prompt itself, so it is applied after max_tokens was fitted: a retry after an
  // overflow sends fewer prompt tokens, not the same prompt with a shorter answer.
  const renderWindowFor = (reserve: number): number =>
    options.promptCap === undefined
      ? windowFor(reserve)
      : Math.min(windowFor(reserve), options.promptCap + reserve + settings.safetyMarginTokens);
  const renderWindow = renderWindowFor(settings.outputReserve);
  // Built without object spreads: this runs on every request.
  const input: RenderInput = {
    messages: conversation,
    tools: chatRequest.tools,
    toolFormat: settings.model.toolFormat,
    noticePlacement: settings.model.noticePlacement,
    tokenizer,
    window: renderWindow,
    outputReserve: settings.outputReserve,
    safetyMarginTokens: settings.safetyMarginTokens,
    policy: settings.policy,
  };
  if (messageTokens !== undefined) input.messageTokens = messageTokens;
  // A body too large to count whole: only what can be sent is counted (twice the window, to be sure).
  else if (options.precision === 'sampled')
    input.messageTokens = countNewestWithin(conversation, tokenizer, 2 * renderWindow);
  // A learned tool set size is in the upstream's units; the render counts in estimate units.
  if (toolTokens !== undefined) input.toolTokens = toolTokens;
  if (historyStartHint !== undefined) input.historyStartHint = historyStartHint;
  if (omittedBefore !== 0) input.omittedBefore = omittedBefore;
  if (session?.summary !== undefined) input.summary = session.summary;
  if (session?.turnSummary !== undefined && options.reduction !== 'minimal')
    input.turnSummary = session.turnSummary;

  const outcome = renderGivingWay(input, settings, chatRequest.n ?? 1, renderWindowFor);
  if (!outcome.ok) throw doesNotFit(outcome, settings, ratio ?? 1);
  const prepared: PreparedContext = {
    messages: outcome.messages,
    report: outcome.report,
    settings,
  };
  if (ratio !== undefined) prepared.report = { ...outcome.report, window: settings.window };
  if (loweredMaxTokens !== undefined) prepared.loweredMaxTokens = loweredMaxTokens;
  if (ratio !== undefined) prepared.estimateRatio = ratio;
  return prepared;
}

/**
 * Renders; a reserve the client did not ask for gives way before the request is refused, once, down to
 * an eighth of the window (an agent's fixed prompt can take most of a small model's window; its answers
 * are short). `settings.outputReserve` says the reserve the outcome was rendered with.
 */
function renderGivingWay(
  input: RenderInput,
  settings: ContextSettings,
  choices: number,
  windowFor: (reserve: number) => number,
): ReturnType<typeof renderContext> {
  const outcome = renderContext(input);
  const floor = Math.min(settings.outputReserve, Math.floor(settings.window / 8) * choices);
  if (outcome.ok || settings.outputReserveRequested || floor >= settings.outputReserve) return outcome;
  settings.outputReserve = floor;
  input.outputReserve = floor;
  input.window = windowFor(floor);
  return renderContext(input);
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
): GatewayError {
  const { window, outputReserve: reserve, safetyMarginTokens: margin } = settings;
  const needed = Math.ceil(outcome.neededTokens * scale);
  const left = Math.floor(outcome.budgetTokens * scale);
  // The system prompt, tools and summary, plus the turn: all of the prompt (the fixed parts counted in
  // full even when they alone exceed the room).
  const prompt = Math.max(
    needed,
    window - reserve - margin - Math.floor(outcome.rawBudgetTokens * scale) + needed,
  );
  // OpenAI's two wordings: with the completion the client asked for, or the messages alone. A reserve
  // the gateway keeps by default is not the client's request and is not quoted as one.
  const openAIWords = settings.outputReserveRequested
    ? `However, you requested ${prompt + reserve} tokens (${prompt} in the messages, ${reserve} in the completion). ` +
      'Please reduce the length of the messages or completion.'
    : `However, your messages resulted in ${prompt} tokens. Please reduce the length of the messages.`;
  const reserveWords = settings.outputReserveRequested
    ? `the max_tokens asked for (${reserve})`
    : `room kept for the answer (${reserve}; send max_tokens to choose it)`;
  return new GatewayError(
    'context_length_exceeded',
    `This model's maximum context length is ${window} tokens. ${openAIWords} ` +
      `ctxgate: the current turn alone needs about ${needed} tokens, but after the system prompt, tools, ${reserveWords} ` +
      `and safety margin (${margin}) only ${left} are left for it. Shorten the last message${settings.outputReserveRequested ? ', or lower max_tokens' : ''}.`,
    { param: 'messages' },
  );
}

/**
 * The retry ladder's later steps (docs/budgeting.md#reactive-recovery): half the history turns (and no protected first turns), or
 * only the system prompt, the summary and the current turn. Mutates only `settings.policy`, the
 * request's own copy.
 */
function reducedConversation(
  reduction: ContextReduction | undefined,
  session: SessionView | undefined,
  messages: readonly ContextMessage[],
  settings: ContextSettings,
  /** Left out of a stateless conversation before it arrived (a long Responses chain's older links). */
  omittedUpstream: number,
): {
  conversation: readonly ContextMessage[];
  messageTokens: readonly number[] | undefined;
  historyStartHint: number | undefined;
  omittedBefore: number;
} {
  const conversation = session?.conversation ?? messages;
  const unchanged = {
    conversation,
    messageTokens: session?.conversationTokens,
    historyStartHint: session?.historyStartHint,
    omittedBefore: session?.omittedBefore ?? omittedUpstream,
  };
  if (reduction === 'drop_oldest_half') {
    const historyTurns = Math.max(0, conversation.filter((message) => message.role === 'user').length - 1);
    settings.policy.keep_first_turns = 0;
    settings.policy.max_history_turns = Math.max(1, Math.floor(historyTurns / 2));
    settings.policy.trim_to = 1;
    return unchanged;
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
  };
}

/**
 * With a learned window: when the whole conversation fits but not with the max_tokens the client asked
 * for, what is left (docs/budgeting.md#reactive-recovery's remedy, applied before the upstream refuses); else undefined.
 */
function maxTokensThatFit(options: {
  chatRequest: ChatCompletionRequest;
  settings: ContextSettings;
  ratio: number | undefined;
  probe: RenderInput;
}): number | undefined {
  const { chatRequest, settings, ratio } = options;
  const requestedMaxTokens = chatRequest.max_completion_tokens ?? chatRequest.max_tokens;
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
  return left < requestedMaxTokens && left >= minimumAnswerTokens ? left : undefined;
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
    'x-context-dropped-messages': String(report.droppedMessages),
    'x-context-summarized-messages': String(report.summarizedMessages),
    'x-context-truncated-tool-results': String(report.truncatedToolResults),
    'x-context-masked-tool-results': String(report.maskedToolResults),
    'x-context-summary': report.summaryUsed ? 'used' : 'none',
    'x-context-retries': '0',
  };
}
