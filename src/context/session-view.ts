// A session's view of its conversation for one request (docs/sessions.md): what the context engine
// renders instead of the request's own messages. Made by the session turn (src/sessions/), read by the
// decision of what is sent (plan-send.ts); neither imports the other.
import type { RenderInput } from './render.js';
import type { ContextMessage } from './types.js';

/** A session's conversation with this request's new messages: what the context engine renders. */
export interface SessionView {
  sessionId: string;
  /** System prompt, stored messages, then the new ones. */
  conversation: ContextMessage[];
  /** Token count of each message of `conversation`: stored counts for stored messages. */
  conversationTokens: readonly number[];
  /** Some of this request's new messages were estimated rather than counted (past the counting bound). */
  estimatedCounts?: true;
  /**
   * The stored UTF-8 JSON of each of `messages` (a render of `conversation`) that is a stored message.
   * With `joinRuns`, stored messages sent in their order that the store keeps one after the other are
   * given as one run: its bytes at the first, `inPreviousPart` (known-bytes.ts) at the others.
   */
  knownBytes(messages: readonly ContextMessage[], joinRuns?: boolean): ReadonlyArray<Buffer | undefined>;
  /** Index into `conversation` where the previous request's sliding history started. */
  historyStartHint: number;
  /** Messages in the session's archive: part of the conversation, no longer in `conversation`. */
  archivedMessages: number;
  /** Archived messages no summary stands for: what the omission notice counts. */
  omittedBefore: number;
  /** The session's summary, placed after the protected head (docs/sessions.md#summarization). */
  summary: RenderInput['summary'];
  /** The in-turn summary of a long agent turn, placed after that turn's user message. */
  turnSummary: RenderInput['turnSummary'];
  /** Earlier turns' in-turn summaries still in the conversation, each placed after its turn's user message. */
  pastTurnSummaries?: RenderInput['pastTurnSummaries'];
  /** Messages of the protected first turn: history positions before the archive's. */
  headMessages?: number;
  /** The history positions the session's summary stands for, [from, to). */
  summaryRange?: { from: number; to: number } | undefined;
  /** Messages the session will hold once this turn is committed (reply included). */
  messagesAfterCommit: number;
}
