// Between the request schema and the upstream call: fits the request's conversation into the model's
// window with the context engine and says what was done, in response headers and the request log.
import type { IncomingHttpHeaders } from 'node:http';
import type { GatewayConfig } from '../config/gateway-config.js';
import { renderContext } from '../context/render.js';
import type { ContextMessage, RenderReport } from '../context/types.js';
import { GatewayError } from '../errors.js';
import type { Tokenizers } from '../tokenizer/tiktoken-tokenizers.js';
import type { ChatCompletionRequest } from './chat-request-schema.js';
import type { SessionView } from './session-turn.js';
import { findModelEntry, resolveContextSettings, type ContextSettings } from './context-settings.js';

/** The retry ladder's later steps (SPEC §6): fewer turns than the window alone would allow. */
export type ContextReduction = 'none' | 'drop_oldest_half' | 'minimal';

export interface PreparedContext {
  messages: ContextMessage[];
  report: RenderReport;
  settings: ContextSettings;
}

export function tokenizerFor(
  config: GatewayConfig,
  tokenizers: Tokenizers,
  model: string,
): ReturnType<Tokenizers['forEncoding']> {
  return tokenizers.forEncoding(findModelEntry(config, model).tokenizer);
}

export function prepareContext(options: {
  config: GatewayConfig;
  tokenizers: Tokenizers;
  chatRequest: ChatCompletionRequest;
  headers: IncomingHttpHeaders;
  /** A session's conversation to fit instead of the request's own messages. */
  session?: SessionView | undefined;
  learnedWindow?: number | undefined;
  reduction?: ContextReduction;
}): PreparedContext {
  const { chatRequest, session } = options;
  const settings = resolveContextSettings({
    config: options.config,
    model: chatRequest.model,
    headers: options.headers,
    maxCompletionTokens: chatRequest.max_completion_tokens ?? chatRequest.max_tokens,
    learnedWindow: options.learnedWindow,
  });
  const conversation = session?.conversation ?? (chatRequest.messages as ContextMessage[]);
  if (options.reduction === 'drop_oldest_half') {
    const historyTurns = Math.max(0, conversation.filter((message) => message.role === 'user').length - 1);
    settings.policy.keep_first_turns = 0;
    settings.policy.max_history_turns = Math.max(1, Math.floor(historyTurns / 2));
    settings.policy.trim_to = 1;
  } else if (options.reduction === 'minimal') {
    settings.policy.keep_first_turns = 0;
    settings.policy.max_history_tokens = 1;
  }
  const outcome = renderContext({
    messages: conversation,

    ...(session === undefined
      ? {}
      : {
          messageTokens: session.conversationTokens,
          historyStartHint: session.historyStartHint,
          omittedBefore: session.archivedMessages,
        }),

    tools: chatRequest.tools,
    tokenizer: options.tokenizers.forEncoding(settings.model.tokenizer),
    window: settings.window,
    outputReserve: settings.outputReserve,
    safetyMarginTokens: settings.safetyMarginTokens,
    policy: settings.policy,
  });
  if (!outcome.ok) {
    throw new GatewayError(
      'context_length_exceeded',
      `The current turn needs about ${outcome.neededTokens} tokens, but only ${outcome.budgetTokens} fit in the ${outcome.window}-token context window ` +
        `after the system prompt, tools, output reserve (${settings.outputReserve}) and safety margin (${settings.safetyMarginTokens}). ` +
        'Shorten the last message, or lower max_tokens.',
      { param: 'messages' },
    );
  }
  return { messages: outcome.messages, report: outcome.report, settings };
}

export function contextResponseHeaders({ report, settings }: PreparedContext): Record<string, string> {
  return {
    'x-context-window': String(report.window),
    'x-context-input-tokens': String(report.inputTokens),
    'x-context-usage': ((report.inputTokens + settings.outputReserve) / report.window).toFixed(2),
    'x-context-dropped-messages': String(report.droppedMessages),
    'x-context-truncated-tool-results': String(report.truncatedToolResults),
    'x-context-masked-tool-results': String(report.maskedToolResults),
    'x-context-summary': report.summaryUsed ? 'used' : 'none',
    'x-context-retries': '0',
  };
}
