// What a chat request sends upstream, decided the same way for the request itself and for its preview
// (POST /v1/context/render): the window and estimate ratio learned for its model and upstream, the
// tokens learned for its tool set, then the context engine — so the preview equals what is sent.
import { createHash } from 'node:crypto';
import { TextCache } from '../text-cache.js';
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import type { ChatCompletionRequest } from './chat-request-schema.js';
import type { RequestOverrides } from './request-overrides.js';
import { prepareContext, type ContextReduction, type PreparedContext } from './prepare-context.js';
import type { SessionView } from '../sessions/session-turn.js';
import type { LearnedLimit, LearnedLimits } from '../store/learned-limits.js';
import type { CountPrecision, Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';

/** Where the retry ladder stands (SPEC §6): nothing yet for a first attempt. */
export interface AttemptState {
  reduction: ContextReduction;
  /** max_tokens to send instead of the client's. */
  maxTokens: number | undefined;
  /** At most this many prompt tokens (the gateway's count): what an overflow left room for. */
  promptCap?: number | undefined;
}

export const firstAttempt: AttemptState = { reduction: 'none', maxTokens: undefined };

export interface ContextPlan {
  prepared: PreparedContext;
  /** The request as sent: the client's, or with max_tokens lowered. */
  outgoing: ChatCompletionRequest;
  learned: LearnedLimit;
  /** The hash of the request's tool definitions, when it has any. */
  toolSet: string | undefined;
}

/** A tool set's key: a hash of its definitions as sent. */
export function toolSetOf(tools: unknown): string | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  // An agent sends the same definitions with every step: hashed once per process, looked up after.
  const text = JSON.stringify(tools);
  let key = toolSetKeys.get(text);
  if (key === undefined) {
    key = createHash('sha256').update(text).digest('base64url').slice(0, 22);
    toolSetKeys.set(text, key);
  }
  return key;
}

/** At most 2,048 tool sets and 16 M characters of definitions, the least recently used out first. */
const toolSetKeys = new TextCache<string>(2_048, 16_000_000);

export function withMaxTokens(
  request: ChatCompletionRequest,
  value: number | undefined,
): ChatCompletionRequest {
  if (value === undefined) return request;
  return request.max_completion_tokens !== undefined && request.max_completion_tokens !== null
    ? { ...request, max_completion_tokens: value }
    : { ...request, max_tokens: value };
}

export interface ContextPlanner {
  plan(input: {
    chatRequest: ChatCompletionRequest;
    overrides: RequestOverrides;
    session: SessionView | undefined;
    target: UpstreamConfig;
    precision: CountPrecision;
    attempt: AttemptState;
  }): ContextPlan;
}

export function createContextPlanner(deps: {
  config: GatewayConfig;
  tokenizers: Tokenizers;
  learnedLimits: LearnedLimits;
}): ContextPlanner {
  const { config, tokenizers, learnedLimits } = deps;
  return {
    plan({ chatRequest, overrides, session, target, precision, attempt }) {
      const learned = learnedLimits.get(target.name, chatRequest.model);
      const toolSet = toolSetOf(chatRequest.tools);
      const toolTokens =
        toolSet === undefined
          ? undefined
          : learnedLimits.toolSetTokens(target.name, chatRequest.model, toolSet);
      let outgoing = withMaxTokens(chatRequest, attempt.maxTokens);
      const prepared = prepareContext({
        config,
        tokenizers,
        chatRequest: outgoing,
        overrides,
        session,
        learnedWindow: learned.window,
        reduction: attempt.reduction,
        promptCap: attempt.promptCap,
        lowerMaxTokensToFit: learned.window !== undefined && attempt.maxTokens === undefined,
        estimateRatio: learned.ratio,
        learnedToolTokens: toolTokens,
        precision,
      });
      if (prepared.loweredMaxTokens !== undefined)
        outgoing = withMaxTokens(chatRequest, prepared.loweredMaxTokens);
      return { prepared, outgoing, learned, toolSet };
    },
  };
}
