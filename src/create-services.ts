// The gateway's application services, built once from its parts: the chat service (and the learned
// limits, budgets and summarizer it works with), the pass-through forwarder, and the stores the
// sessions and admin routes read. Part of the composition root: createGateway builds the parts from
// the config; tests bring their own.
import { createModelListService, type ModelListService } from './chat/model-list.js';
import { loggedFieldFixes } from './upstream/field-fixes.js';
import type { Logger } from 'pino';
import { createBudgetService, type BudgetService } from './budget/budget-service.js';
import { createChatService, type ChatService } from './chat/chat-turn.js';
import { createForwarder, type Forwarder } from './chat/forward-request.js';
import { createPassthroughService, type PassthroughService } from './chat/passthrough-service.js';
import type { GatewayConfig } from './config/gateway-config.js';
import type { GatewayMetrics } from './metrics.js';
import { createSessionSummarizer, type SessionSummarizer } from './sessions/session-summarizer.js';
import type { BudgetStore } from './store/budget-store.js';
import { createMemoryBudgetStore } from './store/memory-budget-store.js';
import {
  createMemoryLearnedLimits,
  type LearnedLimits,
  type LearnedLimitsOptions,
} from './store/learned-limits.js';
import type { SessionStore } from './store/session-store.js';
import { createMemoryResponseStore, type ResponseStore } from './store/response-store.js';
import { createResponsesService, type ResponsesService } from './responses/responses-service.js';
import { createMessagesService, type MessagesService } from './messages/messages-service.js';
import type { Tokenizers } from './tokenizer/tiktoken-tokenizers.js';
import { tokenizerFor } from './context/plan-send.js';
import { countingWorkLimitFor, countMessages } from './context/token-accounting.js';
import type { ContextMessage } from './context/types.js';
import type { Upstream } from './upstream/upstream.js';

export interface ServiceParts {
  config: GatewayConfig;
  logger: Logger;
  metrics: GatewayMetrics;
  upstream: Upstream;
  tokenizers: Tokenizers;
  sessionStore: SessionStore;
  /** Limits learned from the upstreams' answers; in-process when not given. */
  learnedLimits?: LearnedLimits;
  /** Token budget counters; in-process when not given. */
  budgetStore?: BudgetStore;
  /** Stored responses (the Responses API); in-process when not given. */
  responseStore?: ResponseStore;
  /** Wall-clock milliseconds (budget periods follow it); injected in tests. */
  clock?: () => number;
  /** Monotonic milliseconds: retry deadlines and upstream time. */
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface GatewayServices {
  chat: ChatService;
  forwarder: Forwarder;
  passthrough: PassthroughService;
  summarizer: SessionSummarizer;
  budgets: BudgetService;
  sessionStore: SessionStore;
  learnedLimits: LearnedLimits;
  responses: ResponsesService;
  messages: MessagesService;
  models: ModelListService;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The learned limits' settings from the config, their changes told to the log and the metrics. */
export function learnedLimitsOptions(
  config: GatewayConfig,
  logger: Logger,
  metrics: GatewayMetrics,
): LearnedLimitsOptions {
  return {
    settings: {
      windowTtlMs: config.learning.window_ttl_seconds * 1000,
      reprobeAfterMs: config.learning.reprobe_after_seconds * 1000,
    },
    maxEntries: config.learning.max_entries,
    upstreamUrls: new Map(config.upstreams.map((upstream) => [upstream.name, upstream.baseUrl])),
    onChange(change) {
      metrics.learnedChanges.inc({ kind: change.kind });
      const labels = { upstream: change.upstream, model: metrics.modelLabel(change.model) };
      if (change.sharedWindowAfter === undefined) metrics.learnedWindow.remove(labels);
      else metrics.learnedWindow.set(labels, change.sharedWindowAfter);
      logger.info(
        {
          kind: change.kind,
          upstream: change.upstream,
          model: change.model,
          sharedWindowBefore: change.sharedWindowBefore,
          sharedWindowAfter: change.sharedWindowAfter,
          tenantsWithEvidence: change.tenantsWithEvidence,
        },
        'learned limit changed',
      );
    },
  };
}

export function createServices(parts: ServiceParts): GatewayServices {
  const { config, logger, metrics, upstream, tokenizers, sessionStore } = parts;
  const now = parts.now ?? (() => performance.now());
  const learnedLimits =
    parts.learnedLimits ?? createMemoryLearnedLimits(learnedLimitsOptions(config, logger, metrics));
  // Kept with the learned limits, which replicas share through Redis: a model's refusal is paid for once.
  const fieldFixes = loggedFieldFixes(logger, learnedLimits);
  const budgetStore = parts.budgetStore ?? createMemoryBudgetStore();
  const budgets = createBudgetService({
    config,
    store: budgetStore,
    metrics,
    logger,
    ...(parts.clock === undefined ? {} : { clock: parts.clock }),
  });
  const summarizer = createSessionSummarizer({
    config,
    store: sessionStore,
    upstream,
    tokenizers,
    metrics,
    learnedLimits,
    fieldFixes,
    logger,
    budgets,
    ...(parts.random === undefined ? {} : { random: parts.random }),
    ...(parts.sleep === undefined ? {} : { sleep: parts.sleep }),
  });
  const chat = createChatService({
    config,
    upstream,
    metrics,
    tokenizers,
    sessionStore,
    learnedLimits,
    fieldFixes,
    summarizer,
    budgets,
    now,
    random: parts.random ?? Math.random,
    sleep: parts.sleep ?? sleep,
  });
  const forwarder = createForwarder({ upstream, metrics, now });
  return {
    chat,
    forwarder,
    passthrough: createPassthroughService({ config, forwarder, budgets, sleep: parts.sleep ?? sleep }),
    summarizer,
    budgets,
    sessionStore,
    learnedLimits,
    responses: createResponsesService({
      chat,
      config,
      store:
        parts.responseStore ??
        createMemoryResponseStore({
          ttlSeconds: config.sessions.ttl_seconds,
          maxBytes: config.responses.memory_mb * 1024 * 1024,
        }),
      // Only how far back a chain is read depends on it: what the prompt's counting left uncounted
      // is estimated after a sixth of its work (docs/budgeting.md).
      countTokens: (model, messages, precision) =>
        countMessages(
          messages as ContextMessage[],
          tokenizerFor(config, tokenizers, model, precision),
          countingWorkLimitFor(precision) / 6,
        ).tokens.reduce((sum, tokens) => sum + tokens, 0),
    }),
    messages: createMessagesService({ chat, config, upstream, fieldFixes }),
    models: createModelListService({ config, upstream, now }),
  };
}
