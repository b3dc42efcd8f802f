// One turn of a session (docs/sessions.md): hold the session, load it, work out which incoming messages are new,
// hand the whole conversation to the context engine (stored messages keep their stored token counts),
// and after a successful answer append the new messages and the reply in one versioned write.
import {
  branchPoint,
  canonicalMessage,
  newMessagesStart,
  type HistoryMode,
  type StoredGap,
} from '../context/reconcile.js';
import { countingWorkLimitFor, countMessages, countMessageTokens } from '../context/token-accounting.js';
import type { CountPrecision } from '../tokenizer/tiktoken-tokenizers.js';
import { leadingSystemCount, messageText, sourcePositions, splitTurns } from '../context/turns.js';
import type { ContextMessage, Tokenizer } from '../context/types.js';
import { summaryMessage, turnSummaryMessage } from '../context/summary.js';
import type { SessionView } from '../context/session-view.js';

import { GatewayError } from '../errors.js';
import { inPreviousPart } from '../known-bytes.js';
import type {
  SessionHold,
  SessionKey,
  SessionSnapshot,
  SessionRequestReport,
  SessionStore,
  StoredMessage,
  TurnSummary,
} from '../store/session-store.js';
import { releaseEventually } from '../store/session-store.js';
import { storeUnavailable } from './session-keys.js';
import type { HoldQueue } from './hold-queue.js';

/**
 * The message a stored summary is shown as, and that message's JSON bytes, per summary object: a store
 * hands out the same object while a summary is unchanged, so a long session's summary (tens of KB) is
 * formatted and encoded once, not on every request. The chat service keeps one for its sessions.
 */
export type SummaryMessages = WeakMap<object, { message: ContextMessage; bytes: Buffer }>;

function summaryShown(
  memo: SummaryMessages | undefined,
  summary: object,
  format: () => ContextMessage,
): { message: ContextMessage; bytes: Buffer | undefined } {
  const known = memo?.get(summary);
  if (known !== undefined) return known;
  if (memo === undefined) return { message: format(), bytes: undefined };
  // Frozen: every request of the session shares it.
  const message = Object.freeze(format());
  const shown = { message, bytes: Buffer.from(JSON.stringify(message)) };
  memo.set(summary, shown);
  return shown;
}

/** Nesting deeper than this is not compared (nor is it in a system prompt): taken as different. */
const maxCompareDepth = 32;

/** What JSON.stringify writes of a value that says how (its toJSON: a bridged message's extension). */
function asJson(value: unknown): unknown {
  return typeof value === 'object' &&
    value !== null &&
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
    ? (value as { toJSON(): unknown }).toJSON()
    : value;
}

/**
 * Equal as JSON, key order included: JSON.stringify makes the same text of both, a value's toJSON
 * included. (A value JSON.stringify changes, as NaN to null, may count as different: the cost is one
 * write.)
 */
export function sameJson(first: unknown, second: unknown, depth = 0): boolean {
  if (first === second) return true;
  const a = asJson(first);
  const b = asJson(second);
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (depth >= maxCompareDepth || Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  const otherKeys = Object.keys(b);
  if (keys.length !== otherKeys.length) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  return keys.every((key, index) => key === otherKeys[index] && sameJson(left[key], right[key], depth + 1));
}

/** A first turn longer than this is not protected from moving to the archive. */
const maxHeadMessages = 64;

/** What the context engine did with this turn's conversation, as the commit needs it. */
export interface RenderedTurn {
  /** The model's window: the active list keeps about this many tokens. */
  window: number;
  /** Index into `conversation` where the rendered sliding history started. */
  historyStartIndex: number;
  keepFirstTurns: number;
}

export interface SessionTurn extends SessionView {
  key: SessionKey;
  /** The request is the conversation its client compacted: it starts the session over. */
  startsOver: boolean;
  /**
   * Appends the new messages and the reply in one write, with the request's report for the inspector
   * when given; throws a GatewayError when it cannot. Returns the tokens of the active list with them
   * (before any move to the archive).
   */
  commit(
    reply: Record<string, unknown> | undefined,
    rendered: RenderedTurn,
    report?: SessionRequestReport,
  ): Promise<{ activeTokens: number }>;
  release(): Promise<void>;
}

/**
 * After a write whose outcome is unknown: true when the session now holds exactly this turn (its
 * version moved on by one and ends with the appended messages). Polls while Redis comes back, up to
 * `checkMs`: a write sent to a Redis that stalls is carried out when it resumes, and the client should
 * hear "stored" then, not be invited to send the turn again.
 */
async function wasCommitted(
  store: SessionStore,
  key: SessionKey,
  expectedVersion: number,
  append: readonly StoredMessage[],
  now: () => number,
  checkMs: number,
): Promise<boolean> {
  const deadline = now() + checkMs;
  for (;;) {
    try {
      const after = await store.load(key);
      if (after.version !== expectedVersion + 1 || after.messages.length < append.length) return false;
      const tail = after.messages.slice(after.messages.length - append.length);
      return tail.every(
        (stored, index) =>
          canonicalMessage(stored.message as ContextMessage) ===
          canonicalMessage(append[index]?.message as ContextMessage),
      );
    } catch {
      if (now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** How a request says it repeats an earlier one (docs/sessions.md#retries). */
export interface TurnRetry {
  /** X-Stainless-Retry-Count over 0. */
  retried: boolean;
  /** Its Idempotency-Key, when it sent one. */
  key: string | undefined;
}

export const noRetry: TurnRetry = Object.freeze({ retried: false, key: undefined });

/** Where the stored list leaves out the session's archive: after the head. */
const gapOf = (snapshot: SessionSnapshot): StoredGap => ({
  head: snapshot.headMessages,
  archived: snapshot.archivedCount,
});

/**
 * Whether an in-turn summary (the current turn's or an earlier one's) stands for a message at or after
 * `position` in the conversation: such messages stay, with the summary, and are not taken off the end.
 */
function turnSummaryCovers(snapshot: SessionSnapshot, position: number): boolean {
  const turnSummaries = [...(snapshot.pastTurnSummaries ?? []), snapshot.turnSummary];
  return turnSummaries.some((summary) => summary !== undefined && summary.toMessage > position);
}

/**
 * How many of the stored messages a retry of the last turn replaces: all the last commit appended,
 * when the request says it is a retry (a retry marker, or the turn's own Idempotency-Key) and its new
 * messages — found against the session as it was before that turn — are that turn's, its reply left
 * out. 0 otherwise: the request is a turn of its own (a client may well ask the same thing twice).
 */
export function retriedTurnLength(
  snapshot: SessionSnapshot,
  stored: readonly ContextMessage[],
  incomingHistory: readonly ContextMessage[],
  mode: HistoryMode,
  retry: TurnRetry,
): number {
  const last = snapshot.lastTurn;
  if (last === undefined || last.messages < 1) return 0;
  if (!retry.retried && (retry.key === undefined || retry.key !== last.key)) return 0;
  const from = stored.length - last.messages;
  // Only messages of the active list after the protected head, ending in the turn's reply.
  if (from < snapshot.headMessages || stored.at(-1)?.role !== 'assistant') return 0;
  // An in-turn summary standing for any of them keeps them.
  if (turnSummaryCovers(snapshot, snapshot.archivedCount + from)) return 0;
  const before = stored.slice(0, from);
  const asked = stored.slice(from, stored.length - 1);
  const fresh = incomingHistory.slice(newMessagesStart(before, incomingHistory, mode, gapOf(snapshot)));
  if (fresh.length !== asked.length) return 0;
  return fresh.every(
    (message, index) => canonicalMessage(message) === canonicalMessage(asked[index] as ContextMessage),
  )
    ? last.messages
    : 0;
}

/**
 * The stored bytes of each message sent (`positions`: where each is in the conversation), and the
 * system prompt's when it is sent first as stored. With `joinRuns`, a run of stored messages sent in
 * their order that lie one after the other in the store's memory is given whole at its first message,
 * `inPreviousPart` at the others (SessionView.knownBytes).
 */
function storedMessageBytes(
  snapshot: SessionSnapshot,
  sent: {
    positions: ArrayLike<number>;
    systemCount: number;
    storedCount: number;
    systemPromptBytes: Buffer | undefined;
    joinRuns: boolean;
  },
): Array<Buffer | undefined> {
  const { positions, systemCount, storedCount } = sent;
  const storedBytes = snapshot.messageBytes;
  const runs = sent.joinRuns ? snapshot.messageRuns : undefined;
  const known = new Array<Buffer | undefined>(positions.length);
  let runAt = -1;
  let runFirst = 0;
  let runLast = 0;
  const endRun = (): void => {
    if (runs !== undefined && runAt >= 0 && runLast > runFirst)
      known[runAt] = runs.memory.subarray(runs.starts[runFirst], runs.ends[runLast]);
    runAt = -1;
  };
  for (let at = 0; at < positions.length; at++) {
    const storedAt = (positions[at] as number) - systemCount;
    if (storedAt < 0 || storedAt >= storedCount) {
      endRun();
      known[at] = positions[at] === 0 && systemCount === 1 ? sent.systemPromptBytes : undefined;
      continue;
    }
    if (
      runs !== undefined &&
      runAt >= 0 &&
      storedAt === runLast + 1 &&
      runs.starts[storedAt] === (runs.ends[runLast] as number) + 1
    ) {
      runLast = storedAt;
      known[at] = inPreviousPart;
      continue;
    }
    endRun();
    known[at] = storedBytes?.[storedAt];
    if (runs !== undefined && known[at] !== undefined) {
      runAt = at;
      runFirst = storedAt;
      runLast = storedAt;
    }
  }
  endRun();
  return known;
}

/** The session's client sends its whole conversation: it says so (`full`), or the session saw it do so. */
const resendsWhole = (snapshot: Pick<SessionSnapshot, 'resent'>, mode: HistoryMode): boolean =>
  mode === 'full' || (mode === 'auto' && snapshot.resent === true);

/**
 * How many stored messages a whole conversation resent with its end rewritten keeps (branchPoint):
 * undefined when it is not this conversation's, or when an in-turn summary stands for a message it
 * would take off (the summary stays with its turn, as a retried turn's does).
 */
function keptOnRewrite(
  snapshot: SessionSnapshot,
  stored: readonly ContextMessage[],
  incomingHistory: readonly ContextMessage[],
): number | undefined {
  const kept = branchPoint(stored, incomingHistory, gapOf(snapshot));
  if (kept === undefined) return undefined;
  return turnSummaryCovers(snapshot, snapshot.archivedCount + kept) ? undefined : kept;
}

/**
 * Whether a request that does not continue the stored conversation is another conversation under the
 * same id (docs/sessions.md#other-conversations) rather than new messages of this one: its client
 * resends the whole conversation (`full`, or the session has seen it do so), so a request that does
 * not continue it is not new messages of it — a sub-agent's, a side request's; or the request brings
 * instructions of its own (a system prompt other than the stored one) and leaves unanswered the tool
 * calls the stored conversation ends in, which the next message of that conversation must answer (a
 * sub-agent started by one of them; a client that sends only its new messages and sets a call aside
 * keeps its instructions).
 */
export function isOtherConversation(
  snapshot: Pick<SessionSnapshot, 'resent'>,
  stored: readonly ContextMessage[],
  incomingHistory: readonly ContextMessage[],
  mode: HistoryMode,
  ownInstructions: boolean,
): boolean {
  if (mode === 'delta' || stored.length === 0 || incomingHistory.length === 0) return false;
  if (resendsWhole(snapshot, mode)) return true;
  if (!ownInstructions) return false;
  const calls = stored.at(-1)?.tool_calls ?? [];
  if (calls.length === 0) return false;
  const answered = new Set(incomingHistory.map((message) => message.tool_call_id));
  return !calls.some((call) => answered.has(call.id));
}

/**
 * Whether a request that neither goes on from the stored conversation nor rewrites its end is that
 * conversation compacted by its client (docs/sessions.md#compacted-conversations): it starts otherwise —
 * with a summary of its own — and keeps the stored conversation's end (endsAsStored). Only a client that
 * resends its whole conversation, with the session's own instructions, is asked (startsOverWith).
 */
export function isCompactedConversation(
  stored: readonly ContextMessage[],
  incomingHistory: readonly ContextMessage[],
): boolean {
  const [first] = incomingHistory;
  if (first === undefined || stored[0] === undefined) return false;
  return canonicalMessage(first) !== canonicalMessage(stored[0]) && endsAsStored(stored, incomingHistory);
}

/**
 * Whether a request that neither goes on from the stored conversation nor rewrites its end starts the
 * session over (docs/sessions.md#compacted-conversations): the conversation compacted by its client
 * (isCompactedConversation), or rewritten where the session cannot take its end off — inside what an
 * in-turn summary stands for (a rewind to an earlier step of a long task), or inside the archive — which
 * starts with the stored conversation's first message. The first messages are compared once.
 */
function startsOverWith(
  snapshot: SessionSnapshot,
  stored: readonly ContextMessage[],
  incomingHistory: readonly ContextMessage[],
): boolean {
  const [first] = incomingHistory;
  if (first === undefined || stored[0] === undefined) return false;
  if (canonicalMessage(first) !== canonicalMessage(stored[0])) return endsAsStored(stored, incomingHistory);
  // With nothing kept as the head, the conversation's first message may be in the archive.
  return snapshot.headMessages > 0 || snapshot.archivedCount === 0;
}

/**
 * Whether a conversation led by a message of its own keeps the stored conversation's end: its newest
 * message after that lead (pi keeps the newest messages as they were), or, the newest being an answer, a
 * passage of it in the lead (Claude Code asks the model for its summary through the session, as a last
 * turn, and starts the compacted conversation with it).
 */
function endsAsStored(
  stored: readonly ContextMessage[],
  incomingHistory: readonly ContextMessage[],
): boolean {
  const [first] = incomingHistory;
  const last = stored.at(-1);
  if (first === undefined || last === undefined) return false;
  // Compared whole only where role and text length agree: a long conversation is read once, cheaply.
  const lastKey = canonicalMessage(last);
  const lastLength = messageText(last).length;
  for (let at = 1; at < incomingHistory.length; at++) {
    const message = incomingHistory[at] as ContextMessage;
    if (message.role !== last.role || messageText(message).length !== lastLength) continue;
    if (canonicalMessage(message) === lastKey) return true;
  }
  return last.role === 'assistant' && carriesPassage(messageText(first), messageText(last));
}

/** Passages of an answer looked for (the first ones, its lines or tagged parts of 24 characters or more). */
const passagesLookedFor = 16;

/** Whether `text` holds a line, or a part between tags, of `answer` of 24 characters or more. */
function carriesPassage(text: string, answer: string): boolean {
  let looked = 0;
  for (const part of answer.split(/<[^<>\n]{1,64}>|\n/)) {
    const passage = part.trim();
    if (passage.length < 24) continue;
    if (text.includes(passage)) return true;
    if (++looked === passagesLookedFor) return false;
  }
  return false;
}

/**
 * The first line of Claude Code's system prompt (`x-anthropic-billing-header: cc_version=2.1.332.857;
 * …`), whose last part changes with the conversation's first message, as its compaction changes it: not
 * instructions.
 */
const billingHeader = 'x-anthropic-billing-header:';

/** A system prompt's instructions: its text, but the line of Claude Code's billing header it starts with. */
function instructionsText(prompt: Record<string, unknown>): string {
  const text = messageText(prompt as ContextMessage);
  return text.startsWith(billingHeader) ? text.slice(text.indexOf('\n') + 1) : text;
}

/**
 * Whether the request brings instructions of its own (a system prompt other than the stored one), the
 * session's own (the stored one, or one that differs from it only in Claude Code's billing header) or none.
 */
function instructionsOf(
  snapshot: SessionSnapshot,
  newSystemPrompt: Record<string, unknown> | undefined,
  sent: boolean,
): 'own' | 'same' | 'none' {
  if (newSystemPrompt === undefined) return sent ? 'same' : 'none';
  if (snapshot.systemPrompt === undefined) return 'own';
  return instructionsText(newSystemPrompt) === instructionsText(snapshot.systemPrompt) ? 'same' : 'own';
}

/** A session as it is once a compacted conversation starts it over: its version, nothing stored. */
function startedOver(snapshot: SessionSnapshot): SessionSnapshot {
  return {
    version: snapshot.version,
    systemPrompt: undefined,
    messages: [],
    archivedCount: 0,
    headMessages: 0,
    historyStart: 0,
    updatedAtMs: snapshot.updatedAtMs,
    resent: true,
  };
}

interface ViewParts extends SessionView {
  systemCount: number;
  stored: ContextMessage[];
  /** Stored messages the commit replaces (a retried last turn). */
  replaced: number;
  newMessages: ContextMessage[];
  newTokens: number[];
  /** The system prompt to store, when the request brought one. */
  newSystemPrompt: Record<string, unknown> | undefined;
  /** The request sent the stored messages again (SessionSnapshot.resent). */
  resends: boolean;
  /** The request is another conversation under the session's id: it is served without the session. */
  otherConversation: boolean;
  /** The request is the conversation compacted by its client: it starts the session over. */
  startsOver: boolean;
  /** The session this turn goes on from: as loaded, or as a compacted conversation starts it over. */
  basis: SessionSnapshot;
}

/**
 * The system prompt of this request's conversation: the last of the ones it starts with, else the
 * stored one. The stored one sent again (agents send their instructions, tens of KB, with every
 * request) is not written again, and is shown as the stored object, whose bytes the store has.
 */
function systemPromptOf(
  snapshot: SessionSnapshot,
  incoming: readonly ContextMessage[],
): {
  systemPrompt: Record<string, unknown> | undefined;
  /** The one to store; undefined keeps the stored one. */
  newSystemPrompt: Record<string, unknown> | undefined;
  systemPromptBytes: Buffer | undefined;
} {
  // The system messages a request starts with: one sent after the conversation began (a
  // mid-conversation system message, as Claude Code sends) is history.
  const sent = incoming[leadingSystemCount(incoming) - 1] as Record<string, unknown> | undefined;
  const stored = snapshot.systemPrompt;
  if (stored !== undefined && (sent === undefined || sameJson(sent, stored)))
    return {
      systemPrompt: stored,
      newSystemPrompt: undefined,
      systemPromptBytes: snapshot.systemPromptBytes,
    };
  return { systemPrompt: sent, newSystemPrompt: sent, systemPromptBytes: undefined };
}

/**
 * Which of the session's messages this request goes on from and which of its own are new: what the
 * stored conversation keeps (less a retried turn, or the end a rewrite takes off), the new messages,
 * whether the request resent stored ones, and whether it is another conversation under the id.
 */
function messagesOfTurn(
  snapshot: SessionSnapshot,
  incomingHistory: readonly ContextMessage[],
  mode: HistoryMode,
  retry: TurnRetry,
  instructions: 'own' | 'same' | 'none',
): {
  stored: ContextMessage[];
  replaced: number;
  newMessages: ContextMessage[];
  resends: boolean;
  otherConversation: boolean;
  startsOver: boolean;
} {
  const allStored = snapshot.messages.map((entry) => entry.message as ContextMessage);
  const retried = retriedTurnLength(snapshot, allStored, incomingHistory, mode, retry);
  const continuesAt = newMessagesStart(
    retried === 0 ? allStored : allStored.slice(0, allStored.length - retried),
    incomingHistory,
    mode,
    gapOf(snapshot),
  );
  // A whole-history client that rewrote the end of its conversation goes on from where it parted.
  const kept =
    continuesAt === 0 && retried === 0 && resendsWhole(snapshot, mode)
      ? keptOnRewrite(snapshot, allStored, incomingHistory)
      : undefined;
  // A retried turn, or the rewritten end, is answered again in place of the stored one.
  const replaced = kept === undefined ? retried : allStored.length - kept;
  const stored = replaced === 0 ? allStored : allStored.slice(0, allStored.length - replaced);
  const parted = continuesAt === 0 && replaced === 0;
  const startsOver =
    parted &&
    instructions === 'same' &&
    resendsWhole(snapshot, mode) &&
    startsOverWith(snapshot, allStored, incomingHistory);
  return {
    stored,
    replaced,
    newMessages: incomingHistory.slice(kept === undefined ? continuesAt : kept + snapshot.archivedCount),
    resends: continuesAt > 0 || kept !== undefined,
    otherConversation:
      parted &&
      !startsOver &&
      isOtherConversation(snapshot, stored, incomingHistory, mode, instructions === 'own'),
    startsOver,
  };
}

/** The summaries' bytes where they are sent as they were made (not merged into another message). */
function withSummaryBytes(
  known: Array<Buffer | undefined>,
  messages: readonly ContextMessage[],
  shownSummaries: ReadonlyArray<{ message: ContextMessage; bytes: Buffer | undefined } | undefined>,
): Array<Buffer | undefined> {
  for (const shown of shownSummaries)
    if (shown?.bytes !== undefined) {
      const at = messages.indexOf(shown.message);
      if (at >= 0) known[at] = shown.bytes;
    }
  return known;
}

function sessionView(
  sessionId: string,
  snapshot: SessionSnapshot,
  incoming: readonly ContextMessage[],
  mode: HistoryMode,
  tokenizer: Tokenizer,
  precision: CountPrecision,
  retry: TurnRetry,
  summaries: SummaryMessages | undefined,
): ViewParts {
  const incomingHistory = incoming.slice(leadingSystemCount(incoming));
  const { systemPrompt, newSystemPrompt, systemPromptBytes } = systemPromptOf(snapshot, incoming);
  const { stored, replaced, newMessages, resends, otherConversation, startsOver } = messagesOfTurn(
    snapshot,
    incomingHistory,
    mode,
    retry,
    instructionsOf(snapshot, newSystemPrompt, incomingHistory.length < incoming.length),
  );
  // The conversation its client compacted: the session starts over with it, as if nothing were stored.
  if (startsOver)
    return Object.assign(
      sessionView(sessionId, startedOver(snapshot), incoming, mode, tokenizer, precision, retry, summaries),
      { startsOver },
    );

  const systemCount = systemPrompt === undefined ? 0 : 1;
  const conversation = [
    ...(systemPrompt === undefined ? [] : [systemPrompt as ContextMessage]),
    ...stored,
    ...newMessages,
  ];
  const { tokens: newTokens, estimated } = countMessages(
    newMessages,
    tokenizer,
    countingWorkLimitFor(precision),
  );
  const conversationTokens = [
    ...(systemPrompt === undefined ? [] : [countMessageTokens(systemPrompt as ContextMessage, tokenizer)]),
    ...snapshot.messages.slice(0, stored.length).map((entry) => entry.tokens),
    ...newTokens,
  ];
  // Positions in the whole conversation (head, archive, rest) and in `conversation` (head, rest).
  const { headMessages: head, archivedCount: archived } = snapshot;
  const summarized =
    snapshot.summary === undefined ? 0 : snapshot.summary.toMessage - snapshot.summary.fromMessage;
  const storedSummary = snapshot.summary;
  const historySummary =
    storedSummary === undefined
      ? undefined
      : summaryShown(summaries, storedSummary, () => summaryMessage(storedSummary.text, summarized));
  // Each in-turn summary with a place in this conversation, as the context engine takes it.
  const turnSummaryView = (stored: TurnSummary | undefined) => {
    const coversUntil = stored === undefined ? undefined : turnSummaryEnd(snapshot, stored, systemCount);
    if (stored === undefined || coversUntil === undefined) return undefined;
    const shown = summaryShown(summaries, stored, () => turnSummaryMessage(stored.text));
    return { shown, view: { message: shown.message, coversUntil, tokens: stored.tokens } };
  };
  const turnSummary = turnSummaryView(snapshot.turnSummary);
  const pastTurnSummaries = (snapshot.pastTurnSummaries ?? []).flatMap((stored) => {
    const view = turnSummaryView(stored);
    return view === undefined ? [] : [view];
  });
  const localStart =
    snapshot.historyStart >= head + archived
      ? snapshot.historyStart - archived
      : Math.min(head, stored.length);
  return {
    sessionId,
    systemCount,
    stored,
    replaced,
    newMessages,
    newTokens,
    newSystemPrompt,
    resends,
    otherConversation,
    startsOver,
    basis: snapshot,
    conversation,
    conversationTokens,
    ...(estimated ? { estimatedCounts: true as const } : {}),
    knownBytes: (messages, joinRuns = false) =>
      withSummaryBytes(
        storedMessageBytes(snapshot, {
          positions: sourcePositions(conversation, messages),
          systemCount,
          storedCount: stored.length,
          systemPromptBytes,
          joinRuns,
        }),
        messages,
        [historySummary, turnSummary?.shown, ...pastTurnSummaries.map((past) => past.shown)],
      ),
    historyStartHint: systemCount + Math.min(localStart, stored.length),
    archivedMessages: archived,
    omittedBefore: Math.max(0, archived - summarized),
    summary:
      storedSummary === undefined || historySummary === undefined
        ? undefined
        : {
            message: historySummary.message,
            position: systemCount + Math.min(head, stored.length),
            tokens: storedSummary.tokens,
            covers: summarized,
          },

    turnSummary: turnSummary?.view,
    pastTurnSummaries:
      pastTurnSummaries.length === 0 ? undefined : pastTurnSummaries.map((past) => past.view),
    headMessages: Math.min(head, stored.length),
    summaryRange:
      snapshot.summary === undefined
        ? undefined
        : { from: snapshot.summary.fromMessage, to: snapshot.summary.toMessage },
    messagesAfterCommit: archived + stored.length + newMessages.length + 1,
  };
}

/**
 * Where a stored in-turn summary's cover ends, as an index into the conversation of this request;
 * undefined when the summary has no place in it.
 */
function turnSummaryEnd(
  snapshot: SessionSnapshot,
  turnSummary: TurnSummary,
  systemCount: number,
): number | undefined {
  const { headMessages: head, archivedCount: archived } = snapshot;
  // Positions in the archive are not in this conversation: a summary of that turn's messages has its
  // history summary to stand for it.
  const local = (position: number): number | undefined =>
    position < head ? position : position >= head + archived ? position - archived : undefined;
  const start = local(turnSummary.turnStart);
  const until = local(turnSummary.toMessage);
  if (start === undefined || until === undefined || until <= start) return undefined;
  return systemCount + until;
}

/**
 * The session as this request would see it, read without holding it (for /v1/context/render); undefined
 * when the request is another conversation under its id, which is served without it.
 */
export async function previewSessionTurn(options: {
  store: SessionStore;
  key: SessionKey;
  historyMode: HistoryMode;
  incoming: readonly ContextMessage[];
  tokenizer: Tokenizer;
  /** `sampled` for a body over 4 MB: its new messages are counted a quarter as far (countingWorkLimitFor). */
  precision?: CountPrecision;
  retry?: TurnRetry;
  /** The summaries' messages made so far (see SummaryMessages); without it each is made anew. */
  summaries?: SummaryMessages;
}): Promise<SessionView | undefined> {
  const mode = options.historyMode;
  let snapshot: SessionSnapshot;
  try {
    snapshot = await options.store.load(options.key);
  } catch (error) {
    throw storeUnavailable(error);
  }
  const view = sessionView(
    options.key.sessionId,
    snapshot,
    options.incoming,
    mode,
    options.tokenizer,
    options.precision ?? 'exact',
    options.retry ?? noRetry,
    options.summaries,
  );
  return view.otherConversation ? undefined : view;
}

/**
 * Takes the session's hold and reads it, in one step (one round trip to Redis), waiting its turn while
 * another request holds it (up to `busyWaitMs`).
 */
async function holdAndLoad(
  store: SessionStore,
  queue: HoldQueue,
  key: SessionKey,
  holdMs: number,
  busyWaitMs: number,
): Promise<{ hold: SessionHold; snapshot: SessionSnapshot }> {
  let held: { hold: SessionHold; snapshot: SessionSnapshot } | undefined;
  try {
    held = await queue.acquireInTurn(key, busyWaitMs, () => store.acquireAndLoad(key, holdMs));
  } catch (error) {
    throw storeUnavailable(error);
  }
  if (held === undefined) {
    throw new GatewayError(
      'session_busy',
      `Another request has held this session for longer than the gateway waits (${busyWaitMs} ms); retry when it has finished.`,
      // As OpenAI answers conversation_locked: the SDKs retry after Retry-After.
      { param: 'x-session-id', headers: { 'retry-after': '1', 'x-should-retry': 'true' } },
    );
  }
  return held;
}

/**
 * Messages of the turn this request ends in, its reply included: from its last new user message, or,
 * when it brings none (a tool result), from the stored turn's user message.
 */
export function currentTurnLength(
  stored: readonly ContextMessage[],
  newMessages: readonly ContextMessage[],
): number {
  const lastNewStart = newMessages.findLastIndex((message) => message.role === 'user');
  if (lastNewStart >= 0) return newMessages.length - lastNewStart + 1;
  const storedStart = Math.max(
    0,
    stored.findLastIndex((message) => message.role === 'user'),
  );
  return stored.length - storedStart + newMessages.length + 1;
}

/**
 * A turn may outlast the hold (a long generation): the hold is renewed while the turn runs, so it only
 * expires when this replica stops (dies, freezes, loses Redis).
 */
function keepHoldRenewed(options: {
  store: SessionStore;
  key: SessionKey;
  hold: SessionHold;
  holdMs: number;
  now: () => number;
}): { stop(): void; knownUntilMs(): number } {
  let knownUntilMs = options.hold.expiresAtMs;
  const renewal = setInterval(
    () => {
      void options.store
        .renew(options.key, options.hold, options.holdMs)
        .then((renewed) => {
          if (renewed) knownUntilMs = options.now() + options.holdMs;
          else clearInterval(renewal);
        })
        .catch(() => undefined);
    },
    Math.max(50, Math.floor(options.holdMs / 3)),
  );
  renewal.unref();
  return { stop: () => clearInterval(renewal), knownUntilMs: () => knownUntilMs };
}

/** The first turns are fixed as the protected head once a later turn exists and nothing is archived. */
function protectedHeadMessages(
  snapshot: SessionSnapshot,
  stored: readonly ContextMessage[],
  append: readonly StoredMessage[],
  keepFirstTurns: number,
): number {
  if (snapshot.headMessages !== 0 || snapshot.archivedCount !== 0 || keepFirstTurns <= 0) return 0;
  const after = [...stored, ...append.map((entry) => entry.message as ContextMessage)];
  const firstLater = splitTurns(after, 0)[keepFirstTurns]?.start ?? 0;
  return firstLater <= maxHeadMessages ? firstLater : 0;
}

/** Appends the turn in one write; resolves once it is stored (or found stored after an unknown outcome). */
async function writeTurn(
  store: SessionStore,
  key: SessionKey,
  write: Parameters<SessionStore['commit']>[1],
  now: () => number,
  checkMs: number,
): Promise<void> {
  let outcome: Awaited<ReturnType<SessionStore['commit']>>;
  try {
    outcome = await store.commit(key, write);
  } catch (error) {
    // The write may have been applied with its reply lost (Redis going down right after it): telling
    // the client to retry then would store the turn twice. Find out what happened first.
    if (await wasCommitted(store, key, write.expectedVersion, write.append, now, checkMs)) return;
    throw storeUnavailable(error);
  }
  // The hold was lost (this replica could not renew it in time) and the session may have moved on:
  // storing this turn now could duplicate or reorder messages, so it is not stored; the client retries.
  if (!outcome.ok)
    throw new GatewayError(
      'session_conflict',
      'The session changed while this request was running; the answer was not stored. Retry the request.',
      { param: 'x-session-id' },
    );
}

export async function beginSessionTurn(options: {
  store: SessionStore;
  /** This gateway's order of requests per session. */
  holdQueue: HoldQueue;
  key: SessionKey;
  historyMode: HistoryMode;
  incoming: readonly ContextMessage[];
  tokenizer: Tokenizer;
  /** `sampled` for a body over 4 MB: its new messages are counted a quarter as far (countingWorkLimitFor). */
  precision?: CountPrecision;
  /** How the request says it repeats the last one: a retried turn replaces that turn's reply. */
  retry?: TurnRetry;
  /** The summaries' messages made so far (see SummaryMessages); without it each is made anew. */
  summaries?: SummaryMessages;
  holdMs: number;
  /** How long a request waits, in order, for a session another request holds (0: not at all). */
  busyWaitMs?: number;
  /** Most messages one turn may append (its new messages and the reply): what one write can store. */
  maxTurnMessages: number;
  /** How long a write whose outcome is unknown is checked for before the client hears it failed. */
  commitCheckMs?: number;
  /** Wall-clock milliseconds (hold expiries). */
  now?: () => number;
}): Promise<SessionTurn | undefined> {
  const { store, key, tokenizer } = options;
  const now = options.now ?? Date.now;
  const { hold, snapshot: loaded } = await holdAndLoad(
    store,
    options.holdQueue,
    key,
    options.holdMs,
    options.busyWaitMs ?? 0,
  );
  const retry = options.retry ?? noRetry;
  const view = sessionView(
    key.sessionId,
    loaded,
    options.incoming,
    options.historyMode,
    tokenizer,
    options.precision ?? 'exact',
    retry,
    options.summaries,
  );
  /** Gives the hold back (retrying until `untilMs` while Redis is away) and wakes this replica's waiters. */
  const giveBack = async (untilMs: number): Promise<void> => {
    await releaseEventually(() => store.release(key, hold), untilMs);
    options.holdQueue.sessionReleased(key);
  };
  // Another conversation under this id (a sub-agent's, a side request's) is served without the session.
  if (view.otherConversation) {
    await giveBack(hold.expiresAtMs);
    return undefined;
  }
  const { systemCount, stored, newMessages, newTokens, basis: snapshot } = view;
  // The current turn never moves to the archive (its user message stays in view), so it is what bounds
  // the active list: a turn that would outgrow it is refused before the upstream is called (and billed).
  const turnLength = Math.max(currentTurnLength(stored, newMessages), newMessages.length + 1);
  if (turnLength > options.maxTurnMessages) {
    await giveBack(hold.expiresAtMs);
    throw new GatewayError(
      'session_turn_too_large',
      `This request would make one turn of the session ${turnLength} messages long; a turn may hold at most ${options.maxTurnMessages} (sessions.max_active_messages). Start a new turn with a user message, or send the conversation without X-Session-Id.`,
      { param: 'messages' },
    );
  }
  const { headMessages: head, archivedCount: archived } = snapshot;
  let released = false;
  const renewal = keepHoldRenewed({ store, key, hold, holdMs: options.holdMs, now });

  return Object.assign({}, view, {
    key,
    async commit(
      reply: Record<string, unknown> | undefined,
      rendered: RenderedTurn,
      report?: SessionRequestReport,
    ) {
      renewal.stop();
      const append: StoredMessage[] = newMessages.map((message, index) => ({
        message: message as Record<string, unknown>,
        tokens: newTokens[index] as number,
      }));
      if (reply !== undefined)
        append.push({ message: reply, tokens: countMessageTokens(reply as ContextMessage, tokenizer) });
      const startInList = Math.max(0, rendered.historyStartIndex - systemCount);
      let activeTokens = 0;
      for (const entry of snapshot.messages.slice(0, stored.length)) activeTokens += entry.tokens;
      for (const entry of append) activeTokens += entry.tokens;
      await writeTurn(
        store,
        key,
        {
          hold,
          expectedVersion: snapshot.version,
          append,
          systemPrompt: view.newSystemPrompt,
          historyStart: startInList >= head ? startInList + archived : startInList,
          activeTokenLimit: rendered.window,
          headMessages: protectedHeadMessages(snapshot, stored, append, rendered.keepFirstTurns),
          replaceLast: view.replaced,
          startOver: view.startsOver,
          turnKey: retry.key,
          resent: view.resends && snapshot.resent !== true,
          report,
        },
        now,
        options.commitCheckMs ?? 15_000,
      );
      released = true;
      options.holdQueue.sessionReleased(key);
      return { activeTokens };
    },
    async release() {
      renewal.stop();
      if (released) return;
      released = true;
      await giveBack(renewal.knownUntilMs());
    },
  });
}
