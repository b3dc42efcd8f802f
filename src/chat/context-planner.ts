// Gathers what the decision of what is sent needs and is not in the request (context/plan-send.ts):
// the window and estimate ratio learned for its model and upstream (as its tenant may use them) and the
// tokens learned for its tool set — the same way for the request, each retry and the preview
// (POST /v1/context/render), so the preview equals what is sent.
import { createHash } from 'node:crypto';
import {
  maxToolDefinitionChars,
  oversizedToolTokens,
  toolDefinitionTokens,
  toolDefinitionsLongerThan,
} from '../context/token-accounting.js';
import { TextCache } from '../text-cache.js';
import { findModelEntry } from '../context/context-settings.js';
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import type { ChatCompletionRequest } from './chat-request-schema.js';
import { claudeLongContextWindow, type RequestOverrides } from '../context/request-overrides.js';
import { planSend, withMaxTokens, type AttemptState, type PreparedContext } from '../context/plan-send.js';
import type { SessionView } from '../context/session-view.js';
import type { LearnedLimit, LearnedLimits } from '../store/learned-limits.js';
import { anthropicBetaField, fixesForKey, longContextBetaFlag } from '../upstream/field-fixes.js';
import type { CountPrecision, Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';

export interface ContextPlan {
  prepared: PreparedContext;
  /** The request as sent: the client's, or with max_tokens lowered. */
  outgoing: ChatCompletionRequest;
  learned: LearnedLimit;
  /** The hash of the request's tool definitions, when it has any. */
  toolSet: string | undefined;
  /** The gateway's own count of those definitions (what a learned cost stays near). */
  toolFormula: number | undefined;
  /** The model's answers on this upstream showed thinking (this process saw it). */
  thinks: boolean;
}

/** A tool set as the planner knows it: its key and the gateway's own count of its definitions. */
interface KnownToolSet {
  key: string;
  /** Tokens of the definitions by the gateway's formula, per encoding. */
  formula: Map<string, number>;
}

export interface ContextPlanner {
  plan(input: {
    chatRequest: ChatCompletionRequest;
    overrides: RequestOverrides;
    session: SessionView | undefined;
    target: UpstreamConfig;
    precision: CountPrecision;
    attempt: AttemptState;
    /** Whose request it is: lessons one tenant taught apply to it before others agree. */
    tenant: string;
    /** A preview: shown what the next request would send, taking nothing from it (a probe). */
    preview?: boolean | undefined;
    /**
     * A text naming `chatRequest.tools` exactly, from the client's bytes (chat-body.ts toolsKeyOf):
     * the set is found by it, without writing the definitions out as JSON.
     */
    toolsKey?: string | undefined;
  }): ContextPlan;
}

export function createContextPlanner(deps: {
  config: GatewayConfig;
  tokenizers: Tokenizers;
  learnedLimits: LearnedLimits;
  /** Whether the model's answers on the upstream showed thinking (chat-turn.ts: this process's memory). */
  thinks?: (upstream: string, model: string) => boolean;
}): ContextPlanner {
  const { config, tokenizers, learnedLimits } = deps;
  // An agent sends the same definitions with every step: hashed and counted once, looked up after.
  // At most 2,048 tool sets and 16 M characters of definitions, the least recently used out first.
  const toolSets = new TextCache<KnownToolSet>(2_048, 16_000_000);
  // The same sets by the client's bytes they were made from (Claude Code's 40 tools: 28 KB written
  // out as JSON again for every request, ~0.1 ms), each the set its definitions name.
  const toolSetsByKey = new TextCache<KnownToolSet>(2_048, 16_000_000);
  const toolSetOf = (tools: unknown, toolsKey: string | undefined): KnownToolSet | undefined => {
    if (!Array.isArray(tools) || tools.length === 0) return undefined;
    const text = JSON.stringify(tools);
    let known = toolSets.get(text);
    if (known === undefined) {
      known = { key: createHash('sha256').update(text).digest('base64url').slice(0, 22), formula: new Map() };
      toolSets.set(text, known);
    }
    if (toolsKey !== undefined) toolSetsByKey.set(toolsKey, known);
    return known;
  };
  const formulaOf = (known: KnownToolSet, tools: unknown, model: string): number => {
    const entry = findModelEntry(config, model);
    const way = `${entry.tokenizer}\u0000${entry.toolFormat}`;
    let tokens = known.formula.get(way);
    if (tokens === undefined) {
      tokens = toolDefinitionTokens(tools, tokenizers.forEncoding(entry.tokenizer), entry.toolFormat);
      known.formula.set(way, tokens);
    }
    return tokens;
  };
  /**
   * Claude's 1M window, when the request flags it to an Anthropic upstream (another kind's model has its own)
   * and the model was not found to refuse the flag (withBetaFixes leaves it out then).
   */
  const askedWindowOf = (
    overrides: RequestOverrides,
    target: UpstreamConfig,
    model: string,
    tenant: string,
  ) =>
    overrides.longContextAsked === true &&
    target.kind === 'anthropic' &&
    !fixesForKey((upstream, named) => learnedLimits.fixesOf(upstream, named), target, tenant, model).some(
      (fix) => fix.field === anthropicBetaField && (fix.value ?? longContextBetaFlag) === longContextBetaFlag,
    )
      ? claudeLongContextWindow
      : undefined;
  return {
    plan({ chatRequest, overrides, session, target, precision, attempt, tenant, preview, toolsKey }) {
      const learned = learnedLimits.get(target.name, chatRequest.model, tenant, {
        preview: preview === true,
      });
      const byKey = toolsKey === undefined ? undefined : toolSetsByKey.get(toolsKey);
      // Definitions longer than any window are neither hashed nor counted: they count as too many (a
      // set found by its bytes was not).
      const oversized =
        byKey === undefined && toolDefinitionsLongerThan(chatRequest.tools, maxToolDefinitionChars);
      const known = oversized ? undefined : (byKey ?? toolSetOf(chatRequest.tools, toolsKey));
      const toolSet = known?.key;
      const toolFormula = oversized
        ? oversizedToolTokens
        : known === undefined
          ? undefined
          : formulaOf(known, chatRequest.tools, chatRequest.model);
      const toolTokens =
        known === undefined
          ? toolFormula
          : learnedLimits.toolSetTokens(
              target.name,
              chatRequest.model,
              known.key,
              tenant,
              toolFormula as number,
            );
      const thinks = deps.thinks?.(target.name, chatRequest.model) === true;
      const prepared = planSend({
        config,
        tokenizers,
        request: chatRequest,
        overrides,
        session,
        learned: {
          window: learned.window,
          probe: learned.probe,
          ratio: learned.ratio,
          toolTokens,
          thinks,
        },
        toolFormula,
        attempt,
        precision,
        askedWindow: askedWindowOf(overrides, target, chatRequest.model, tenant),
      });
      const outgoing = withMaxTokens(chatRequest, prepared.loweredMaxTokens);
      return { prepared, outgoing, learned, toolSet, toolFormula, thinks };
    },
  };
}
