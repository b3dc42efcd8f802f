// The attempts of one chat request (docs/budgeting.md#reactive-recovery): the first, rendered with what the gateway has learned so
// far, and each smaller one the recovery policy asks for after an overflow — re-rendered with the
// tighter window the overflow taught, fewer turns, or a lower max_tokens. Each attempt is a value: its
// body as sent, its context headers, and the plan it came from.
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import { countingWorkLimitFor, countMessages } from '../context/token-accounting.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { ContextMessage } from '../context/types.js';
import type { SessionView } from '../context/session-view.js';
import type { LearnedLimit } from '../store/learned-limits.js';
import type { CountPrecision, Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';
import { serializeChatBody, type KnownBytes, type KnownMessageBytes } from './chat-body.js';
import type { ChatCompletionRequest } from './chat-request-schema.js';
import type { ContextPlanner } from './context-planner.js';
import { findModelEntry } from '../context/context-settings.js';
import {
  contextResponseHeaders,
  firstAttempt,
  tokenizerFor,
  withMaxTokens,
  type AttemptState,
  type PreparedContext,
} from '../context/plan-send.js';
import { answerFloorOf } from '../upstream/classify-upstream-error.js';
import type { RecoveryDecision } from '../upstream/recovery-policy.js';
import type { RequestOverrides } from '../context/request-overrides.js';
import type { SendAttempt } from '../upstream/send-with-recovery.js';
import { withToolSchemasAs } from '../upstream/tool-schemas.js';
import {
  answerToolNames,
  wireToolNames,
  withWireToolNames,
  type AnswerToolNames,
} from '../upstream/tool-names.js';
import { recallAllowed, recallTool } from '../context/recall.js';
import {
  applyFieldFixes,
  withAttemptFixes,
  toolCallIdsField,
  toolImagesField,
  imageCountField,
  imageSizeField,
  imageSideField,
  imageBytesField,
  requestBytesField,
  filesField,
  withMessageFixes,
  withCarriedStateAsTaken,
  withToolCallIdsAsKimiTakes,
  withToolCallIdsEveryProviderTakes,
  withoutEmptyToolCalls,
  withoutToolFieldsWhenNoTools,
  withToolDescriptionsWithin,
  toolDescriptionsField,
  toolSchemasField,
  toolSchemaKeywordsField,
  toolSchemaMfjsField,
  toolCountField,
  cacheMarksField,
  toolChoiceField,
  withToolChoiceUnforced,
  toolChoiceObjectField,
  withToolChoiceAsString,
  answerTokensField,
  withJsonModeTold,
  betaFixesOf,
  withAnthropicFixes,
  withResponseFormatAsTaken,
  formatsTakenWith,
  heldStopsOf,
  withStopsAtMost,
  jsonSchemaTold,
  withToolsAtMost,
  withToolCallIdsAsMistralTakes,
  billingAttributionField,
  temperatureRangeField,
  autoToolChoiceField,
  defaultToolChoiceField,
  type FieldFix,
  type FieldFixes,
  fixesForKey,
} from '../upstream/field-fixes.js';
import { toAnthropicRequest, withoutAnthropicBlocks } from '../upstream/anthropic-wire.js';
import { withEffortAsClaudes } from '../upstream/output-format.js';
import { isKimiModel } from '../upstream/model-family.js';
import { chatWithinCacheBreakpoints, chatWithoutCacheMarks } from '../upstream/cache-breakpoints.js';
import {
  withImagesAtMost,
  withImagesNoLargerThan,
  withImagesWithin,
  withImagesWithinBytes,
  withFilesNamed,
  withToolMediaAsText,
  withToolMediaInUserMessages,
} from '../upstream/tool-media.js';
import { callsReadFromText } from '../upstream/text-tool-calls.js';
import { responsesWireField } from '../upstream/responses-wire.js';
import { toolsAsTextField, withToolsAsText } from '../upstream/tools-as-text.js';

export interface ChatAttempt extends SendAttempt {
  state: AttemptState;
  prepared: PreparedContext;
  /**
   * The request body as sent: chat JSON, or for an `anthropic` upstream its Messages JSON, written
   * from the request at once (not written as chat, read back and written again).
   */
  body: string | Buffer;
  /** The format of `body` when it is not chat's: what the Upstream port is told (upstream.ts). */
  wire: 'anthropic' | 'responses' | undefined;
  /** What the answer's calls are read with (tool-names.ts); undefined when no tool was sent or renamed. */
  toolNames: AnswerToolNames | undefined;
  /** The client's stop sequences the answer is cut at by the gateway (answer-stops.ts); undefined: by the model. */
  heldStops: readonly string[] | undefined;
  /** The request as sent, in chat terms (its fitted messages in it): what a recall round adds to. */
  request: Readonly<Record<string, unknown>>;
  /** The context headers of this attempt (README.md). */
  headers: Record<string, string>;
  /** The `anthropic-beta` flags the model refused, left out of the upstream request's headers; undefined for none. */
  betaFixes: readonly FieldFix[] | undefined;
  /** The hash of the request's tool definitions, when it has any. */
  toolSet: string | undefined;
  /** The gateway's own count of those definitions. */
  toolFormula: number | undefined;
  /** What was learned for the model when this attempt was planned. */
  learned: LearnedLimit;
  /**
   * Prompt and answer as sent, in the provider's units (the estimate scaled by the learned ratio, plus
   * the max_tokens sent, none when the gateway sent none): what an overflow says did not fit.
   */
  sentSize: number;
  /** The max_tokens the request carried upstream; 0 when it carried none. */
  sentMaxTokens: number;
  /** Whose request it is. */
  tenant: string;
  /** Where it goes: the client's model on its upstream, or a fallback model on the fallback's. */
  target: UpstreamConfig;
  model: string;
  /** Set when the attempt goes to a fallback model instead of the client's (X-Context-Fallback). */
  fallback: string | undefined;
  /** The recall tool is offered (docs/budgeting.md#recall): its calls are the gateway's to answer. */
  recall: boolean;
  /**
   * How the prompt was counted: `sampled` for a body over 4 MB, or one whose counting reached its bound
   * (an estimate that teaches no ratio).
   */
  precision: CountPrecision;
}

export interface AttemptLadder {
  /** The first attempt: for the client's model, or its first fallback that fits when that does not. */
  readonly first: ChatAttempt;
  /**
   * The attempt a decision asks for, or undefined when nothing smaller can be sent. When the smaller
   * attempt cannot be made, or would drop more than the policy's `fallback_when_dropping` of the
   * conversation, the first of the model's fallbacks (after the current one) that fits takes its place.
   */
  smaller(
    decision: Extract<RecoveryDecision, { action: 're_render' | 'lower_max_tokens' }>,
    current: ChatAttempt,
  ): ChatAttempt | undefined;
  /**
   * The attempt made again as it was, with the fields its model is now known to refuse fixed
   * (docs/budgeting.md#refused-fields) — in `state` when that is given (what the conversation leaves out
   * after a refusal that is not learned: AttemptState foreignThinking); undefined when that changes nothing.
   */
  again(current: ChatAttempt, state?: AttemptState): ChatAttempt | undefined;
}

/** A model to render for: the client's own, or one of its fallbacks. */
interface Choice {
  model: string;
  target: UpstreamConfig;
  /** The request as that model is asked it. */
  chatRequest: ChatCompletionRequest;
  session: SessionView | undefined;
}

/** Whether a chat request offers the model tools. */
function offersTools(request: Record<string, unknown>): boolean {
  return Array.isArray(request.tools) && request.tools.length > 0;
}

/**
 * Structured output as the model takes it, told before the fixes of roles write the messages (so that a
 * model with no system role gets it in the first user message): what the client asked (`asked`: the
 * planned request's `response_format`, before the fixes left it out) in a form the model takes, or told
 * in the system message (withResponseFormatAsTaken), and JSON mode told "json" when no message says it
 * (withJsonModeTold).
 */
function withStructuredOutputAsTaken<R extends Record<string, unknown>>(
  request: R,
  asked: unknown,
  messages: ContextMessage[],
  fixes: readonly FieldFix[],
  toldOf: (responseFormat: unknown) => string | undefined,
): { request: R; messages: ContextMessage[] } {
  const taken =
    fixes.length === 0
      ? undefined
      : withResponseFormatAsTaken(asked, messages, formatsTakenWith(fixes, offersTools(request)), toldOf);
  if (taken === undefined) return { request, messages: withJsonModeTold(request.response_format, messages) };
  const sent: Record<string, unknown> = Object.assign({}, request, { response_format: taken.responseFormat });
  if (taken.responseFormat === undefined) delete sent.response_format;
  return { request: sent as R, messages: withJsonModeTold(sent.response_format, taken.messages) };
}

/**
 * The history's calls as the model takes them: of Mistral's kind of ids where it refused others; for Kimi K2
 * and later on Chat Completions, by name, Kimi's (another model's ids in its history make it end its turn
 * with nothing); any other id some provider refuses (empty, too long, another's kind, given twice) written
 * as one every provider takes, and no empty list of calls — Claude's wire does so itself (anthropic-wire.ts).
 */
function withToolCallsAsTaken(
  messages: ContextMessage[],
  fixes: readonly FieldFix[],
  choice: Pick<Choice, 'target' | 'model'>,
): ContextMessage[] {
  const mistral = fixes.some((fix) => fix.field === toolCallIdsField);
  if (!mistral && choice.target.kind === 'anthropic') return messages;
  const ids = mistral
    ? withToolCallIdsAsMistralTakes(messages)
    : isKimiModel(choice.model)
      ? withToolCallIdsAsKimiTakes(messages)
      : withToolCallIdsEveryProviderTakes(messages);
  return choice.target.kind === 'anthropic' ? ids : withoutEmptyToolCalls(ids);
}

/** Whether fitting left anything out that the recall tool could find: cut, masked, dropped or summarized. */
function hidSomething(attempt: ChatAttempt): boolean {
  const { report } = attempt.prepared;
  return leftOut(attempt) || report.summarizedMessages > 0 || report.summaryUsed;
}

/** Claude Code's billing line left out, as if refused (docs/anthropic.md#claude-codes-billing-line). */
const billingLineDropped: readonly FieldFix[] = [{ field: billingAttributionField }];

/**
 * The fixes learned for the model applied to the request as planned (docs/budgeting.md#refused-fields):
 * fields renamed or left out, tool descriptions cut, tool schemas repaired or in Gemini's subset, a forced
 * tool choice left to the model, and no more tools than it takes (the recall tool, when offered, among
 * them). To an `anthropic` upstream that is not Anthropic, Claude Code's billing line is left out too.
 */
function withFieldFixes(
  planned: ChatCompletionRequest,
  learned: readonly FieldFix[],
  messages: readonly ContextMessage[],
  recall: boolean,
  target: UpstreamConfig,
): ChatCompletionRequest {
  const anthropic = target.kind === 'anthropic';
  const fixes =
    anthropic && target.billingLine === 'drop'
      ? learned.length === 0
        ? billingLineDropped
        : [...learned, ...billingLineDropped]
      : learned;
  // Claude's effort where a chat client asked one (to Claude's wire), then the model's refusals of it.
  const asked = anthropic ? withEffortAsClaudes(planned) : planned;
  let outgoing = fixes.length === 0 ? asked : withAnthropicFixes(applyFieldFixes(asked, fixes), fixes);
  const described = fixes.find((fix) => fix.field === toolDescriptionsField)?.atMost;
  if (described !== undefined) outgoing = withToolDescriptionsWithin(outgoing, described);
  // Gemini's subset and Moonshot's hold what the repair gives as well.
  if (fixes.some((fix) => fix.field === toolSchemaKeywordsField))
    outgoing = withToolSchemasAs(outgoing, 'gemini');
  else if (fixes.some((fix) => fix.field === toolSchemaMfjsField))
    outgoing = withToolSchemasAs(outgoing, 'moonshot');
  else if (fixes.some((fix) => fix.field === toolSchemasField))
    outgoing = withToolSchemasAs(outgoing, 'repaired');
  if (fixes.some((fix) => fix.field === toolChoiceField)) outgoing = withToolChoiceUnforced(outgoing);
  else if (fixes.some((fix) => fix.field === toolChoiceObjectField))
    outgoing = withToolChoiceAsString(outgoing);
  outgoing = withStopsAtMost(outgoing, fixes);
  // A choice of tools left to a model whose server takes none (vLLM without its auto tool choice): "none",
  // the calls it writes as text read as calls.
  if (
    fixes.some((fix) => fix.field === autoToolChoiceField) &&
    offersTools(outgoing) &&
    (outgoing.tool_choice === undefined || outgoing.tool_choice === 'auto')
  )
    outgoing = Object.assign({}, outgoing, { tool_choice: 'none', [callsReadFromText]: true });
  if (fixes.some((fix) => fix.field === defaultToolChoiceField) && outgoing.tool_choice === 'auto') {
    const { tool_choice: _named, ...unnamed } = outgoing;
    outgoing = unnamed as typeof outgoing;
  }
  const hottest = fixes.find((fix) => fix.field === temperatureRangeField)?.atMost;
  if (hottest !== undefined && typeof outgoing.temperature === 'number' && outgoing.temperature > hottest)
    outgoing = Object.assign({}, outgoing, { temperature: hottest });
  const toolCount = fixes.find((fix) => fix.field === toolCountField)?.atMost;
  // The recall tool is the gateway's: kept, as what fitting hid is only found with it.
  if (toolCount !== undefined)
    outgoing = withToolsAtMost(outgoing, messages, toolCount, recall ? [recallTool.function.name] : []);
  return outgoing;
}

/**
 * The request asking for no longer an answer than the model gives (answerTokensField): planned so, its
 * prompt is given the room the answer does not take.
 */
function withAnswerTokensWithin(
  request: ChatCompletionRequest,
  fixes: readonly FieldFix[],
): ChatCompletionRequest {
  const cap = fixes.find((fix) => fix.field === answerTokensField)?.atMost;
  const asked = request.max_completion_tokens ?? request.max_tokens;
  return cap !== undefined && typeof asked === 'number' && asked > cap
    ? withMaxTokens(request, cap)
    : request;
}

/** The request with the recall tool added to its tools. */
function withRecallTool(request: ChatCompletionRequest): ChatCompletionRequest {
  const tools = Array.isArray(request.tools) ? (request.tools as unknown[]) : [];
  return Object.assign({}, request, { tools: [...tools, recallTool] }) as ChatCompletionRequest;
}

/**
 * The messages with no image the model refused (field-fixes.ts): none larger than it takes at all
 * (Anthropic's 8000 pixels a side and 5 MB) — named first, so that they count no more — then no more
 * than it takes in a request, the oldest named, then none larger than it takes in a request of many
 * (Anthropic's 2000 pixels past 20 images). On the wire only; the same array when none applies.
 */
function withImageFixes(messages: ContextMessage[], fixes: readonly FieldFix[]): ContextMessage[] {
  const limit = (field: string) => fixes.find((fix) => fix.field === field)?.atMost;
  let out = messages;
  const maxSide = limit(imageSideField);
  const maxBytes = limit(imageBytesField);
  if (maxSide !== undefined || maxBytes !== undefined)
    out = withImagesNoLargerThan(out, { maxSide, maxBytes });
  const count = limit(imageCountField);
  if (count !== undefined) out = withImagesAtMost(out, count);
  const manySide = limit(imageSizeField);
  if (manySide !== undefined) out = withImagesWithin(out, manySide);
  return out;
}

/** A body's size in bytes. */
export function byteLengthOf(body: string | Buffer): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.length;
}

/**
 * The messages sent within `maxBytes` (a provider's cap on a body's size: field-fixes.ts
 * requestBytesField), and their body: the oldest images and files sent as data named where they stood
 * until it is. Each pass names as many as the bytes over the cap (base64 weighs the same in either wire
 * format); a third pass is the last. The same messages when the body is within the cap, or holds none.
 */
function withinBytes(
  messages: ContextMessage[],
  maxBytes: number,
  sent: (messages: ContextMessage[]) => { messages: ContextMessage[]; body: string | Buffer },
): { messages: ContextMessage[]; body: string | Buffer } {
  let fixed = messages;
  let out = sent(fixed);
  for (let pass = 0; pass < 3; pass++) {
    const over = byteLengthOf(out.body) - maxBytes;
    if (over <= 0) break;
    const fewer = withImagesWithinBytes(fixed, over);
    if (fewer === fixed) break;
    fixed = fewer;
    out = sent(fixed);
  }
  return out;
}

/** Whether fitting the attempt left anything out or cut anything short. */
function leftOut({ prepared: { report } }: ChatAttempt): boolean {
  return (
    report.droppedMessages > 0 ||
    report.droppedIterationGroups > 0 ||
    report.truncatedToolResults > 0 ||
    report.maskedToolResults > 0 ||
    report.oversizeTruncated
  );
}

function doesNotFitWhole({ prepared: { report, settings } }: ChatAttempt): GatewayError {
  return new GatewayError(
    'context_length_exceeded',
    `This model's maximum context length is ${settings.window} tokens, and the input does not fit it whole ` +
      `(ctxgate would leave out ${report.droppedMessages} messages and cut ${report.truncatedToolResults + report.maskedToolResults} tool results). ` +
      'Send truncation: "auto" to let ctxgate fit it, or shorten the input.',
    { param: 'input' },
  );
}

function fitsNowhere(error: unknown): boolean {
  return isGatewayError(error) && error.code === 'context_length_exceeded';
}

/**
 * How an attempt goes on the wire: an `anthropic` upstream's Messages format, the Responses API for a
 * model served there alone (learned: responses-wire.ts), else the chat body as it is.
 */
function wireOf(target: UpstreamConfig, fixes: readonly FieldFix[]): ChatAttempt['wire'] {
  if (target.kind === 'anthropic') return 'anthropic';
  return fixes.some((fix) => fix.field === responsesWireField) ? 'responses' : undefined;
}

export function createAttemptLadder(input: {
  planner: ContextPlanner;
  config: GatewayConfig;
  tokenizers: Tokenizers;
  chatRequest: ChatCompletionRequest;
  overrides: RequestOverrides;
  session: SessionView | undefined;
  target: UpstreamConfig;
  precision: CountPrecision;
  /** The client's own body: sent as is when nothing in it changes. */
  rawBody: Buffer | undefined;
  /** The session's stored bytes of each message, reused instead of serializing them again. */
  knownBytes?: KnownMessageBytes | undefined;
  /** A Messages request's body for an `anthropic` upstream, the client's own parts copied (chat-turn.ts). */
  anthropicBody?:
    ((chat: Record<string, unknown>, stored?: ReadonlyArray<KnownBytes | undefined>) => Buffer) | undefined;
  /** A session's stored bytes of each message it sends (its anthropicBody copies their blocks). */
  storedBytes?: KnownMessageBytes | undefined;
  /** A text naming the client's tools exactly (chat-turn.ts ChatInput). */
  toolsKey?: string | undefined;
  /** Whose request it is: what one tenant taught applies to it before others agree. */
  tenant: string;
  /** A preview's ladder: it takes nothing the next request would get (a probe of a learned window). */
  preview?: boolean;
  /** The request fields each model is known to refuse, and what is sent instead. */
  fieldFixes: FieldFixes;
}): AttemptLadder {
  const { chatRequest, config } = input;
  const own: Choice = {
    model: chatRequest.model,
    target: input.target,
    chatRequest,
    session: input.session,
  };
  const fallbacks = findModelEntry(config, chatRequest.model).fallbacks ?? [];
  const conversationLength = input.session?.conversation.length ?? chatRequest.messages.length;

  /** Set by the first attempt: whether this request's attempts offer the recall tool. */
  let recall = false;
  /** Prompt tokens an attempt that offers the tool keeps free for its calls and their results. */
  let recallRoom = 0;
  // A schema told in JSON mode (withStructuredOutputAsTaken), written once for every attempt of the request.
  let told: { format: unknown; text: string | undefined } | undefined;
  const toldSchema = (format: unknown): string | undefined => {
    const known =
      told !== undefined && told.format === format ? told : { format, text: jsonSchemaTold(format) };
    told = known;
    return known.text;
  };
  const fixesOf = (upstream: string, model: string) => input.fieldFixes.fixesFor(upstream, model);
  const render = (state: AttemptState, choice: Choice): ChatAttempt => {
    const fixes = withAttemptFixes(fixesForKey(fixesOf, choice.target, input.tenant, choice.model), state);
    const asked = withAnswerTokensWithin(choice.chatRequest, fixes);
    const plan = input.planner.plan({
      chatRequest: recall ? withRecallTool(asked) : asked,
      attempt: recall ? Object.assign({}, state, { keepFreeTokens: recallRoom }) : state,
      overrides: input.overrides,
      session: choice.session,
      target: choice.target,
      precision: input.precision,
      tenant: input.tenant,
      preview: input.preview,
      // The recall tool is not the client's: that tool set is known by its definitions.
      toolsKey: recall ? undefined : input.toolsKey,
    });
    let outgoing = withFieldFixes(plan.outgoing, fixes, plan.prepared.messages, recall, choice.target);
    // No word of tools in a request of none, which OpenAI and others refuse (Claude's wire writes its own).
    if (choice.target.kind !== 'anthropic') outgoing = withoutToolFieldsWhenNoTools(outgoing);
    const { prepared } = plan;
    // On the wire only (what was sent of the conversation is still the rendered messages): a provider
    // that refuses another answer's leftovers in messages (Mistral) gets them left out, a model that takes
    // only its own kind of tool call ids (Mistral) gets the others written so, and Gemini 3 a stand-in
    // signature on calls of none (another model's, a client's that dropped it) or another backend's; the
    // messages the model's other learned fixes write (field-fixes.ts withMessageFixes).
    const jsonMode = withStructuredOutputAsTaken(
      outgoing,
      plan.outgoing.response_format,
      prepared.messages,
      fixes,
      toldSchema,
    );
    outgoing = jsonMode.request;
    let messages = withMessageFixes(jsonMode.messages, fixes, offersTools(outgoing));
    // A tool name some provider refuses (MCP's `calendar.read`) as one they take (before the ids: Kimi's
    // name the call); the answer's calls are given their names back (tool-names.ts).
    const toolNames = wireToolNames(outgoing.tools, messages);
    if (toolNames !== undefined)
      ({ request: outgoing, messages } = withWireToolNames(outgoing, messages, toolNames));
    messages = withToolCallsAsTaken(messages, fixes, choice);
    messages = withCarriedStateAsTaken(messages, fixes);
    if (fixes.some((fix) => fix.field === filesField)) messages = withFilesNamed(messages);
    messages = withImageFixes(messages, fixes);
    const wire = wireOf(choice.target, fixes);
    // Tools told in the prompt, to a model whose server takes none (tools-as-text.ts).
    if (wire === undefined && fixes.some((fix) => fix.field === toolsAsTextField))
      ({ request: outgoing, messages } = withToolsAsText(outgoing, messages));
    const uncached = fixes.some((fix) => fix.field === cacheMarksField);
    /** The body of `fixed` messages as sent, and those messages in chat terms. */
    const sent = (fixed: ContextMessage[]): { messages: ContextMessage[]; body: string | Buffer } => {
      // A tool result's images in a user message after it (a chat provider's tool message takes text
      // only), or named in it for a model that refused an image.
      // Claude's blocks (a Messages client's, a session's copy of Claude's answers) go to Claude alone.
      const chatOnly = wire === 'anthropic' ? fixed : withoutAnthropicBlocks(fixed);
      // At most 4 cache breakpoints, which a Chat Completions endpoint in front of Claude sends on; none
      // to a model that takes none (OpenRouter's 404).
      const onWire =
        wire === 'anthropic'
          ? fixed
          : (uncached ? chatWithoutCacheMarks : chatWithinCacheBreakpoints)(
              fixes.some((fix) => fix.field === toolImagesField)
                ? withToolMediaAsText(chatOnly)
                : withToolMediaInUserMessages(chatOnly, prepared.settings.model.noticePlacement !== 'inline'),
            );
      // Unchanged stateless conversations go upstream as the client's own bytes: no re-serialization.
      const unchanged =
        choice.session === undefined &&
        !prepared.report.modified &&
        onWire === prepared.messages &&
        outgoing === chatRequest &&
        !recall &&
        input.rawBody !== undefined;
      const body =
        wire === 'anthropic'
          ? (input.anthropicBody?.(
              Object.assign({}, outgoing, { messages: onWire }),
              input.storedBytes?.(prepared.messages),
            ) ?? JSON.stringify(toAnthropicRequest(Object.assign({}, outgoing, { messages: onWire }))))
          : unchanged
            ? (input.rawBody as Buffer)
            : serializeChatBody(outgoing, onWire, input.knownBytes?.(onWire));
      return { messages: onWire, body };
    };
    const maxBytes = fixes.find((fix) => fix.field === requestBytesField)?.atMost;
    const { messages: sentMessages, body } =
      maxBytes === undefined ? sent(messages) : withinBytes(messages, maxBytes, sent);
    messages = sentMessages;
    const fallback = choice === own ? undefined : choice.model;
    const headers = contextResponseHeaders(prepared);
    if (fallback !== undefined) headers['x-context-fallback'] = fallback;
    if (recall) headers['x-ctxgate-recall'] = '0';
    // What this attempt asks for: the client's, under the model's longest answer once known.
    const askedMaxTokens = state.maxTokens ?? asked.max_completion_tokens ?? asked.max_tokens ?? undefined;
    const sentMaxTokens = prepared.loweredMaxTokens ?? askedMaxTokens ?? 0;
    const request = Object.assign({}, outgoing, { messages });
    return {
      state,
      prepared,
      body,
      wire,
      request,
      headers,
      toolSet: plan.toolSet,
      toolFormula: plan.toolFormula,
      learned: plan.learned,
      promptTokens: prepared.report.inputTokens,
      askedMaxTokens,
      answerFloor: answerFloorOf(askedMaxTokens, plan.thinks),
      sentSize: Math.ceil(prepared.report.inputTokens * (plan.learned.ratio ?? 1)) + sentMaxTokens,
      sentMaxTokens,
      tenant: input.tenant,
      model: choice.model,
      target: choice.target,
      fallback,
      recall,
      precision: prepared.estimated === true ? 'sampled' : input.precision,
      toolNames: answerToolNames(outgoing.tools, toolNames?.toClient),
      heldStops: heldStopsOf(plan.outgoing.stop, fixes, wire),
      betaFixes: betaFixesOf(fixes),
    };
  };

  /**
   * docs/budgeting.md#recall: when the policy offers the tool and fitting hid something, the attempt is
   * made again with the tool among the request's (its definition counted like the client's tools).
   */
  const offeringRecall = (attempt: ChatAttempt, choice: Choice): ChatAttempt => {
    if (
      recall ||
      attempt.prepared.settings.policy.recall !== 'on' ||
      !hidSomething(attempt) ||
      !recallAllowed(chatRequest)
    )
      return attempt;
    recall = true;
    // One call with its result, and the framing of both.
    recallRoom = attempt.prepared.settings.policy.recall_result_tokens + 120;
    try {
      return render(attempt.state, choice);
    } catch (error) {
      // The turn fits only without that room: sent as it fitted, without the tool.
      if (!fitsNowhere(error)) throw error;
      recall = false;
      return attempt;
    }
  };

  /** A session's conversation counted in another model's encoding, within a bounded CPU time. */
  const recounted = (session: SessionView, model: string): SessionView => {
    const { tokens, estimated } = countMessages(
      session.conversation,
      tokenizerFor(config, input.tokenizers, model, input.precision),
      countingWorkLimitFor(input.precision),
    );
    const view = Object.assign({}, session, { conversationTokens: tokens });
    if (estimated) view.estimatedCounts = true;
    return view;
  };
  /** The request as a fallback model is asked it; a session's stored counts kept when it counts alike. */
  const choiceFor = (model: string): Choice => {
    const session = input.session;
    const sameEncoding =
      findModelEntry(config, model).tokenizer === findModelEntry(config, own.model).tokenizer;
    return {
      model,
      target: config.routing.upstreamFor(model),
      chatRequest: Object.assign({}, chatRequest, { model }),
      session: session === undefined || sameEncoding ? session : recounted(session, model),
    };
  };

  const dropsTooMuch = (attempt: ChatAttempt): boolean =>
    attempt.prepared.report.droppedMessages >
    conversationLength * attempt.prepared.settings.policy.fallback_when_dropping;

  /** The first fallback after `after` whose fresh render fits without dropping too much. */
  const fallbackAfter = (after: string | undefined): ChatAttempt | undefined => {
    const start = after === undefined ? 0 : fallbacks.indexOf(after) + 1;
    for (const model of fallbacks.slice(start)) {
      try {
        const choice = choiceFor(model);
        const attempt = offeringRecall(render(firstAttempt, choice), choice);
        if (!dropsTooMuch(attempt)) return attempt;
      } catch (error) {
        if (!fitsNowhere(error)) throw error;
      }
    }
    return undefined;
  };

  const first = ((): ChatAttempt => {
    try {
      const attempt = render(firstAttempt, own);
      if (input.overrides.noTruncation === true && leftOut(attempt)) throw doesNotFitWhole(attempt);
      return offeringRecall(attempt, own);
    } catch (error) {
      // The current turn cannot fit the client's model: a larger one, if the model names any.
      const fallback = fitsNowhere(error) ? fallbackAfter(undefined) : undefined;
      if (fallback === undefined) throw error;
      return fallback;
    }
  })();

  return {
    first,
    again(current, state = current.state) {
      const next = render(state, current.fallback === undefined ? own : choiceFor(current.fallback));
      // The same request again is refused again: a fix changes its body, the flags of its headers or its wire.
      return next.body.length === current.body.length &&
        next.body.toString() === current.body.toString() &&
        next.betaFixes?.length === current.betaFixes?.length &&
        next.wire === current.wire
        ? undefined
        : next;
    },
    smaller(decision, current) {
      // Sent whole or not at all: the upstream's own refusal goes back to the client.
      if (input.overrides.noTruncation === true) return undefined;
      const state: AttemptState =
        decision.action === 'lower_max_tokens'
          ? // A shorter answer leaves room in the window, but the prompt must not grow into it.
            Object.assign({}, current.state, {
              maxTokens: decision.maxTokens,
              promptCap: current.promptTokens,
            })
          : Object.assign({}, current.state, {
              reduction: decision.reduction,
              promptCap: decision.promptCap,
            });
      const choice = current.fallback === undefined ? own : choiceFor(current.fallback);
      let next: ChatAttempt | undefined;
      try {
        next = render(state, choice);
      } catch (error) {
        // Nothing smaller fits at all: a fallback, else the client gets the upstream's own answer.
        if (!fitsNowhere(error)) throw error;
      }
      if (next !== undefined && !dropsTooMuch(next)) return next;
      return fallbackAfter(current.fallback) ?? next;
    },
  };
}
