// What a request's own headers ask of the gateway (README.md), as the application sees them: parsed and
// checked once at the edge (http/request-overrides.ts).
import type { HistoryMode } from './reconcile.js';

export interface RequestOverrides {
  /** X-Session-Id: session mode. */
  sessionId?: string;
  /** X-Session-History. */
  historyMode: HistoryMode;
  /** X-Context-Window, used exactly as given. */
  contextWindow?: number;
  /** X-Context-Max-History-Tokens (0 = no cap). */
  maxHistoryTokens?: number;
  /** X-Context-Policy: a preset's name (checked against the config where it is used). */
  policyName?: string;
  /** X-Budget-Session-Tokens: lowers the session budget. */
  budgetSessionTokens?: number;
  /**
   * The Responses API's `truncation: "disabled"`: the conversation is sent whole or not at all (400
   * context_length_exceeded), never fitted and never compressed on a retry.
   */
  noTruncation?: boolean;
  /**
   * Messages of the conversation left out before it reached the gateway's engine (the older links of a
   * long Responses chain): counted in the omission notice and the dropped-messages header.
   */
  omittedBefore?: number;
  /** X-Stainless-Retry-Count over 0: the client's own retry of a request it sent before. */
  retried?: boolean;
  /** Idempotency-Key: a retry of the last turn carries the same key. */
  idempotencyKey?: string;
  /**
   * `anthropic-beta` holds `context-1m-…`: Claude's 1M window asked (Claude Code's `[1m]` models), which an
   * Anthropic upstream gives Sonnet 4 and 4.5 with it (docs/budgeting.md#claudes-1m-window).
   */
  longContextAsked?: boolean;
}

/** The window Claude's `context-1m-…` flag asks of an Anthropic upstream. */
export const claudeLongContextWindow = 1_000_000;

export const noOverrides: RequestOverrides = Object.freeze({ historyMode: 'auto' });
