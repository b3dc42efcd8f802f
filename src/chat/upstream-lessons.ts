// What a chat request's upstream answers teach the gateway (docs/budgeting.md#what-the-gateway-learns),
// on evidence only: an overflow teaches a window when its numbers agree with the gateway's own count of
// what was sent and quote nothing the client sent (a provider echoing the input may quote numbers the
// client chose), or — without numbers — together with a smaller size that then went through; estimate
// ratios and tool-set costs move only with successful answers. Every lesson is the tenant's until a
// second tenant agrees (learned-limit-rules.ts). Recorded in the learned-limits store, which keeps what
// it learns in process first: nothing here touches Redis on the request's path.
import { countsAgree, statedWindow } from '../context/learned-limit-rules.js';
import { guessedParts } from '../context/token-accounting.js';
import { isCalibrated } from '../config/model-table.js';
import type { GatewayMetrics } from '../metrics.js';
import type { LearnedLimits } from '../store/learned-limits.js';
import type { UpstreamErrorClass } from '../upstream/classify-upstream-error.js';
import type { ChatAttempt } from './attempt-ladder.js';

/** A model counted exactly learns a ratio only when the upstream's count is further off than this. */
const exactDisagreement = 0.02;

/**
 * Only prompts of at least this many tokens (the gateway's count) teach a ratio or raise the truncation
 * alarm: on a shorter one the tokens a chat template adds to every prompt (Llama 3's date header, Qwen's
 * default system prompt: some 20–40) weigh as much as the text, and one "hi" would scale every later
 * count up to 4 times; on one of 256 they bend it by a sixth at most.
 */
const minJudgedPromptTokens = 256;

/**
 * A count under this share of the gateway's own is no tokenizer's: o200k counts about as few tokens as
 * any (another vocabulary counts at most some tens of percent fewer, most count more).
 */
const minPlausibleShare = 0.75;

/** Fewer upstream prompt tokens than this share of the (calibrated) estimate: the prompt was cut. */
const truncationShare = 0.5;

/** Passages shorter than this are too common to say the provider quoted the request. */
const minimumQuotedChars = 12;

export interface UpstreamLessons {
  overflow(
    verdict: Extract<UpstreamErrorClass, { kind: 'context_overflow' }>,
    attempt: ChatAttempt,
    status: number,
  ): void;
  /**
   * A successful answer's prompt tokens as the upstream counted them (undefined when it reported none).
   * Returns true when they are far fewer than were sent: some servers cut an over-long prompt instead of
   * refusing it.
   */
  usage(promptTokens: number | undefined, attempt: ChatAttempt): boolean;
}

/** True when the provider's text quotes the request: what it says was not said about the request. */
export function quotesRequest(evidence: readonly string[], body: string | Buffer): boolean {
  return evidence.some((passage) => passage.length >= minimumQuotedChars && body.includes(passage));
}

/** Whether the request's messages carry tool calls or results: their estimate is not the tool set's. */
function carriesToolMessages(attempt: ChatAttempt): boolean {
  return attempt.prepared.messages.some(
    (message) =>
      message.role === 'tool' || (Array.isArray(message.tool_calls) && message.tool_calls.length > 0),
  );
}

export function createUpstreamLessons(deps: {
  learnedLimits: LearnedLimits;
  metrics: GatewayMetrics;
  warn: (fields: Record<string, unknown>, message: string) => void;
  info: (fields: Record<string, unknown>, message: string) => void;
}): UpstreamLessons {
  const { learnedLimits } = deps;
  // Learned for the model and upstream the attempt went to (a fallback learns for itself).
  const whereOf = (attempt: ChatAttempt) => ({ upstream: attempt.target.name, model: attempt.model });
  return {
    overflow(verdict, attempt, status) {
      const { upstream, model } = whereOf(attempt);
      const { numbers } = verdict;
      const estimated = attempt.prepared.report.inputTokens;
      const quoted = quotesRequest(verdict.evidence, attempt.body);
      // The window a provider states is taken when its count of the refused prompt agrees with the
      // gateway's (or, given without a count, when what was sent could be over it); a count far from
      // the gateway's (content the gateway sizes low, such as images) says something else went on.
      const reported = numbers.promptTokensLowerBound === true ? undefined : numbers.promptTokens;
      const window = statedWindow(numbers, attempt.sentMaxTokens);
      const agrees =
        reported !== undefined
          ? countsAgree(reported, estimated, attempt.learned.ratio)
          : window !== undefined && attempt.sentSize >= 0.8 * window;
      const stated = !quoted && agrees ? window : undefined;
      const hasNumbers = window !== undefined || reported !== undefined;
      const lesson = quoted
        ? 'quoted'
        : stated !== undefined
          ? 'window'
          : hasNumbers
            ? 'disagreeing'
            : 'failure';
      // Numbers that quote the request or disagree with it teach nothing; a failure without numbers
      // waits for a smaller size to go through.
      if (lesson === 'window' || lesson === 'failure')
        learnedLimits.recordOverflow(upstream, model, attempt.tenant, {
          failedSize: reported !== undefined && agrees ? reported + attempt.sentMaxTokens : attempt.sentSize,
          status,
          textClass: hasNumbers ? 'numbers' : 'no_numbers',
          ...(stated === undefined ? {} : { stated }),
        });
      // Numbers only: what was learned and from what.
      deps.info(
        {
          upstream,
          model,
          lesson,
          window,
          failedSize: attempt.sentSize,
          upstreamPromptTokens: numbers.promptTokens,
          sentTokensEstimate: estimated,
          remedy: verdict.remedy,
        },
        'learned from an overflow',
      );
    },

    usage(reportedTokens, attempt) {
      const { upstream, model } = whereOf(attempt);
      const { prepared, toolSet, learned, tenant } = attempt;
      // A count of 0 is no count: Ollama reports it for a prompt its cache held.
      const promptTokens = reportedTokens === 0 ? undefined : reportedTokens;
      // Images, audio and files, which the provider sizes its own way: a prompt with any teaches neither
      // the model's ratio nor a tool set's cost (either would bend every later count of plain text), the
      // size it took is the smaller of the two counts (gpt-4o-mini's usage counts an image for its
      // price, past what its window holds), and the alarm below is judged on the rest of what was sent.
      const guessed = guessedParts(prepared.messages);
      // The size that went through, in the provider's own count when it gave one.
      const counted = Math.ceil(prepared.report.inputTokens * (learned.ratio ?? 1));
      const taken =
        promptTokens === undefined
          ? counted
          : guessed.parts === 0
            ? promptTokens
            : Math.min(promptTokens, counted);
      learnedLimits.recordSuccess(upstream, model, tenant, taken + attempt.sentMaxTokens);
      if (promptTokens === undefined) return false;
      const estimated = prepared.report.inputTokens;
      const calibrated = isCalibrated(prepared.settings.model);
      const ratio = calibrated ? (learned.ratio ?? 1) : 1;
      const toolRegion = prepared.report.regions.tools;
      // The alarm is judged against the estimate with the tool set as the gateway's formula counts it
      // (a learned tool-set cost never raises it by itself) and without its guess of images (a provider
      // that sizes an image smaller than the guess cut nothing).
      const formulaEstimate = estimated - guessed.tokens - toolRegion + (attempt.toolFormula ?? toolRegion);
      const cut =
        formulaEstimate >= minJudgedPromptTokens &&
        promptTokens < formulaEstimate * (learned.ratio ?? 1) * truncationShare;
      // A cut prompt, or one counted only past the provider's prompt cache (Ollama 0.30's was), says
      // nothing about how the provider counts: nothing is learned from it. Nor from a prompt the gateway
      // counted from samples (a body over 4 MB): its estimate is off by more than the 2% an exactly
      // counted model learns from, and one such request would bend every later count.
      const plain = guessed.parts === 0 && !cut && attempt.precision === 'exact';
      if (plain && toolSet !== undefined) {
        // What the upstream counts for the tool set: its usage less the messages' estimate — learned
        // only from requests whose messages carry no tool calls or results, whose own estimate would
        // otherwise be taken for the tool set's.
        if (!carriesToolMessages(attempt))
          learnedLimits.recordToolSetTokens(
            upstream,
            model,
            toolSet,
            tenant,
            promptTokens - (estimated - toolRegion) * ratio,
            attempt.toolFormula ?? toolRegion,
          );
      } else if (
        plain &&
        toolSet === undefined &&
        estimated >= minJudgedPromptTokens &&
        // Well under the gateway's count is no tokenizer's difference: cut or cached, as above.
        promptTokens >= estimated * minPlausibleShare &&
        (calibrated ||
          learned.ratio !== undefined ||
          Math.abs(promptTokens / Math.max(1, estimated) - 1) > exactDisagreement)
      ) {
        // An exactly counted model learns a ratio only when the upstream counts what the gateway
        // cannot see (a system prompt it adds).
        learnedLimits.recordRatio(upstream, model, tenant, { reported: promptTokens, estimated });
      }
      if (!cut) return false;
      deps.metrics.upstreamTruncations.inc({ upstream, model: deps.metrics.modelLabel(model) });
      deps.warn(
        { upstream, model, sentTokensEstimate: formulaEstimate, upstreamPromptTokens: promptTokens },
        'upstream reported far fewer prompt tokens than were sent: it may have truncated the prompt',
      );
      return true;
    },
  };
}
