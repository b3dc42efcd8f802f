// The attempts of one chat request (SPEC §6): the first, rendered with what the gateway has learned so
// far, and each smaller one the recovery policy asks for after an overflow — re-rendered with the
// tighter window the overflow taught, fewer turns, or a lower max_tokens. Each attempt is a value: its
// body as sent, its context headers, and the plan it came from.
import type { UpstreamConfig } from '../config/gateway-config.js';
import { isGatewayError } from '../errors.js';
import type { SessionView } from '../sessions/session-turn.js';
import type { LearnedLimit } from '../store/learned-limits.js';
import type { CountPrecision } from '../tokenizer/tiktoken-tokenizers.js';
import { serializeChatBody } from './chat-body.js';
import type { ChatCompletionRequest } from './chat-request-schema.js';
import { firstAttempt, type AttemptState, type ContextPlanner } from './context-planner.js';
import { contextResponseHeaders, type PreparedContext } from './prepare-context.js';
import type { RecoveryDecision } from './recovery-policy.js';
import type { RequestOverrides } from './request-overrides.js';
import type { SendAttempt } from './send-with-recovery.js';

export interface ChatAttempt extends SendAttempt {
  state: AttemptState;
  prepared: PreparedContext;
  /** The request body as sent. */
  body: string | Buffer;
  /** The context headers of this attempt (SPEC §3). */
  headers: Record<string, string>;
  /** The hash of the request's tool definitions, when it has any. */
  toolSet: string | undefined;
  /** What was learned for the model when this attempt was planned. */
  learned: LearnedLimit;
  /** Prompt and answer as sent: what an overflow says did not fit. */
  sentSize: number;
}

export interface AttemptLadder {
  readonly first: ChatAttempt;
  /** The attempt a decision asks for, or undefined when nothing smaller can be sent. */
  smaller(
    decision: Extract<RecoveryDecision, { action: 're_render' | 'lower_max_tokens' }>,
    current: ChatAttempt,
  ): ChatAttempt | undefined;
}

export function createAttemptLadder(input: {
  planner: ContextPlanner;
  chatRequest: ChatCompletionRequest;
  overrides: RequestOverrides;
  session: SessionView | undefined;
  target: UpstreamConfig;
  precision: CountPrecision;
  /** The client's own body: sent as is when nothing in it changes. */
  rawBody: string | undefined;
  /** The session's stored bytes of each message, reused instead of serializing them again. */
  knownBytes?: SessionView['knownBytes'] | undefined;
}): AttemptLadder {
  const { chatRequest } = input;
  const render = (state: AttemptState): ChatAttempt => {
    const plan = input.planner.plan({
      chatRequest,
      overrides: input.overrides,
      session: input.session,
      target: input.target,
      precision: input.precision,
      attempt: state,
    });
    const { prepared, outgoing } = plan;
    // Unchanged stateless conversations go upstream as the client's own bytes: no re-serialization.
    const unchanged =
      input.session === undefined &&
      !prepared.report.modified &&
      outgoing === chatRequest &&
      input.rawBody !== undefined;
    return {
      state,
      prepared,
      body: unchanged
        ? (input.rawBody as string)
        : serializeChatBody(outgoing, prepared.messages, input.knownBytes?.(prepared.messages)),
      headers: contextResponseHeaders(prepared),
      toolSet: plan.toolSet,
      learned: plan.learned,
      promptTokens: prepared.report.inputTokens,
      askedMaxTokens:
        state.maxTokens ?? chatRequest.max_completion_tokens ?? chatRequest.max_tokens ?? undefined,
      sentSize: prepared.report.inputTokens + prepared.settings.outputReserve,
    };
  };
  return {
    first: render(firstAttempt),
    smaller(decision, current) {
      const state: AttemptState =
        decision.action === 'lower_max_tokens'
          ? // A shorter answer leaves room in the window, but the prompt must not grow into it.
            { ...current.state, maxTokens: decision.maxTokens, promptCap: current.promptTokens }
          : { ...current.state, reduction: decision.reduction, promptCap: decision.promptCap };
      try {
        return render(state);
      } catch (error) {
        // Nothing smaller fits at all: the client gets the upstream's own answer.
        if (isGatewayError(error) && error.code === 'context_length_exceeded') return undefined;
        throw error;
      }
    },
  };
}
