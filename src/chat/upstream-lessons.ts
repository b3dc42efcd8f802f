// What a chat request's upstream answers teach the gateway (SPEC §6): an overflow's numbers (the real
// window, the provider's own count of the prompt), a success below a known failure, and the usage of
// every answer (the estimate's ratio to the provider's count, or a tool set's tokens). Recorded in the
// learned-limits store, which aggregates in process: nothing here touches Redis on the request's path.
import { isCalibrated } from '../config/model-table.js';
import type { GatewayMetrics } from '../metrics.js';
import type { LearnedLimits } from '../store/learned-limits.js';
import type { UpstreamErrorClass } from '../upstream/classify-upstream-error.js';
import type { ChatAttempt } from './attempt-ladder.js';

/** A model counted exactly learns a ratio only when the upstream's count is further off than this. */
const exactDisagreement = 0.02;

/** Fewer upstream prompt tokens than this share of the (calibrated) estimate: the prompt was cut. */
const truncationShare = 0.5;

export interface UpstreamLessons {
  overflow(verdict: Extract<UpstreamErrorClass, { kind: 'context_overflow' }>, attempt: ChatAttempt): void;
  accepted(attempt: ChatAttempt): void;
  /**
   * The upstream's prompt tokens for a successful answer. Returns true when they are far fewer than
   * were sent: some servers cut an over-long prompt instead of refusing it.
   */
  usage(promptTokens: number, attempt: ChatAttempt): boolean;
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
    overflow(verdict, attempt) {
      const { upstream, model } = whereOf(attempt);
      const { numbers } = verdict;
      const estimated = attempt.prepared.report.inputTokens * (attempt.learned.ratio ?? 1);
      if (
        numbers.promptTokens !== undefined &&
        numbers.promptTokensLowerBound !== true &&
        attempt.toolSet === undefined &&
        (isCalibrated(attempt.prepared.settings.model) ||
          Math.abs(numbers.promptTokens / Math.max(1, estimated) - 1) > exactDisagreement)
      ) {
        // The upstream's own count of what was sent calibrates the estimate at once — for a model
        // counted exactly too, when the upstream counts what the gateway cannot see (a system prompt
        // it adds, images it sizes its own way).
        learnedLimits.recordRatio(upstream, model, {
          reported: numbers.promptTokens,
          estimated: attempt.prepared.report.inputTokens,
          atOnce: true,
        });
      }
      learnedLimits.recordOverflow(upstream, model, {
        ...(numbers.maxContext === undefined ? {} : { window: numbers.maxContext }),
        failedSize: attempt.sentSize,
      });
      // Numbers only: what was learned and from what.
      deps.info(
        {
          upstream,
          model,
          window: numbers.maxContext,
          failedSize: attempt.sentSize,
          upstreamPromptTokens: numbers.promptTokens,
          sentTokensEstimate: attempt.prepared.report.inputTokens,
          remedy: verdict.remedy,
        },
        'learned from an overflow',
      );
    },

    accepted(attempt) {
      const { upstream, model } = whereOf(attempt);
      // A success teaches something only below a known failure, and then a window was learned.
      if (attempt.learned.window !== undefined)
        learnedLimits.recordSuccess(upstream, model, attempt.sentSize);
    },

    usage(promptTokens, attempt) {
      const { upstream, model } = whereOf(attempt);
      const { prepared, toolSet, learned } = attempt;
      const estimated = prepared.report.inputTokens;
      const calibrated = isCalibrated(prepared.settings.model);
      if (toolSet !== undefined) {
        // What the upstream counts for this tool set: its usage less the messages' estimate. Tool sets
        // never feed the model's ratio, which stays that of plain messages.
        const ratio = calibrated ? (learned.ratio ?? 1) : 1;
        const messagesEstimate = (estimated - prepared.report.regions.tools) * ratio;
        learnedLimits.recordToolSetTokens(upstream, model, toolSet, promptTokens - messagesEstimate);
      } else if (calibrated || learned.ratio !== undefined) {
        // An exactly counted model keeps a ratio once an overflow taught one, and its usage keeps it true.
        learnedLimits.recordRatio(upstream, model, { reported: promptTokens, estimated });
      }
      // Judged against the estimate scaled by what was learned so far.
      if (estimated < 256 || promptTokens >= estimated * (learned.ratio ?? 1) * truncationShare) return false;
      deps.metrics.upstreamTruncations.inc({ upstream, model: deps.metrics.modelLabel(model) });
      deps.warn(
        { upstream, model, sentTokensEstimate: estimated, upstreamPromptTokens: promptTokens },
        'upstream reported far fewer prompt tokens than were sent: it may have truncated the prompt',
      );
      return true;
    },
  };
}
