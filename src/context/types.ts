// Plain data types of the context engine (the pure core). Nothing here knows about HTTP, Redis or a
// particular tokenizer library; the tokenizer reaches the core through the Tokenizer port below.

/** A chat message as the OpenAI API defines it; unknown fields are carried along untouched. */
export interface ContextMessage {
  role: string;
  content?: unknown;
  name?: string;
  tool_calls?: ReadonlyArray<ToolCall> | null;
  tool_call_id?: string;
  [field: string]: unknown;
}

export interface ToolCall {
  id: string;
  type?: string;
  function?: { name: string; arguments: string };
  [field: string]: unknown;
}

/** The tokenizer port: counts and cuts text in one encoding. */
export interface Tokenizer {
  readonly encoding: string;
  count(text: string): number;
  /** The longest head or tail of `text` within `maxTokens`, and its token count. */
  truncate(text: string, maxTokens: number, keep: 'head' | 'tail'): { text: string; tokens: number };
  /**
   * The counting work done so far by what counts for this tokenizer (bpe-counter.ts's units; it only
   * grows): a request's counting is bounded by it (token-accounting.ts countingWorkLimit).
   */
  workDone?(): number;
}

export type ToolResultTruncation = 'head' | 'tail' | 'both';
export type OversizePolicy = 'reject' | 'truncate_middle';

/** Every knob of docs/budgeting.md by its name there. A budget or cap of 0 means "none" only where docs/budgeting.md says so. */
export interface ContextPolicy {
  keep_first_turns: number;
  trim_to: number;
  max_history_tokens: number;
  max_history_turns: number;
  max_tool_result_tokens: number;
  tool_result_truncation: ToolResultTruncation;
  /** The current turn's first tool results masked last (like exclude_tools); 0 = none. */
  keep_first: number;
  /** The newest tool results of the current turn kept whole while anything else can be masked. */
  keep_last: number;
  /** Masking (and dropping) advances in steps that free at least this many tokens (cache-stable). */
  clear_at_least: number;
  /** Tool names whose results are masked last. */
  exclude_tools: readonly string[];
  oversize: OversizePolicy;
  pin_prefix: string;
}

export interface RegionTokens {
  system: number;
  summary: number;
  history: number;
  currentTurn: number;
  tools: number;
  notice: number;
  outputReserve: number;
  safetyMargin: number;
}

export interface RenderReport {
  window: number;
  /** Estimated prompt tokens of what is sent: every message, the framing and the tool definitions. */
  inputTokens: number;
  historyBudget: number;
  regions: RegionTokens;
  /** Messages of the conversation neither sent nor stood for by a summary (whole turns, dropped groups). */
  droppedMessages: number;
  /** Messages not sent that a summary sent in their place stands for (a session's, a turn's). */
  summarizedMessages: number;
  droppedTurns: number;
  droppedIterationGroups: number;
  truncatedToolResults: number;
  maskedToolResults: number;
  /** Index (into the input messages) of the first message of the sliding history window. */
  historyStartIndex: number;
  summaryUsed: boolean;
  oversizeTruncated: boolean;
  /**
   * Tool messages and tool calls the final pairing check removed (docs/budgeting.md): a conversation the
   * provider would refuse is repaired, never sent. 0 unless the input itself was broken.
   */
  orphansRemoved: number;
  /**
   * Whole messages that check removed (tool messages, and assistant messages left with neither calls
   * nor text): not sent, so counted with the dropped ones in X-Context-Dropped-Messages.
   */
  orphanMessagesRemoved: number;
  /** False when the rendered messages are exactly the input messages. */
  modified: boolean;
}

export interface RenderResult {
  messages: ContextMessage[];
  report: RenderReport;
}
