// The SessionStore port (docs/sessions.md): one conversation per (tenant, session id), held by one request at a
// time, written once per successful turn with a version check so a holder whose hold expired can never
// write. Implementations: in-memory (memory-session-store.ts) and Redis (redis-session-store.ts); one
// contract test suite runs against both.

import { hash } from 'node:crypto';
import { flatText } from '../flat-string.js';

export interface StoredMessage {
  /** The message as the client sent it or the upstream answered (user, assistant or tool). */
  message: Record<string, unknown>;
  /** Its token count, so stored history is never re-tokenized. */
  tokens: number;
}

export interface SessionKey {
  tenantId: string;
  sessionId: string;
}

/**
 * How logs name a session: a hash of tenant and id, so neither appears in them. One-shot `hash`, not a
 * Hash object: it is made for every session request, and the object cost three times as much.
 */
export function hashedSessionId({ tenantId, sessionId }: SessionKey): string {
  // Flat (flat-string.ts): a slice of the digest would send the request's log record to the slow serializer.
  return flatText(hash('sha256', `${tenantId}\u0000${sessionId}`, 'hex').slice(0, 16));
}

export interface SessionSnapshot {
  /** 0 for a session that does not exist yet. */
  version: number;
  systemPrompt: Record<string, unknown> | undefined;
  /** The system prompt's JSON as UTF-8 bytes, when the store has them (copied into the upstream body). */
  systemPromptBytes?: Buffer | undefined;
  /** The active messages, oldest first: the protected head, then the recent ones. */
  messages: StoredMessage[];
  /** Each active message as UTF-8 JSON, when the store has it (saves serializing it again). */
  messageBytes?: readonly Buffer[];
  /**
   * Where messageBytes lie when the store keeps them in one buffer (redis-session-store.ts): each
   * message's start and end in `memory`. A message that starts one byte after the end of the one before
   * it was written right after it, a comma between them: a run of such messages is one view of `memory`.
   */
  messageRuns?: { memory: Buffer; starts: readonly number[]; ends: readonly number[] };

  /** Messages moved to the archive so far (they sit between the head and the recent ones). */
  archivedCount: number;
  /** Leading messages (the first turns) that never move to the archive; 0 until fixed. */
  headMessages: number;
  /**
   * The context engine's history start, as a position in the whole conversation (head, archive,
   * recent), stored so consecutive requests share their prefix.
   */
  historyStart: number;
  updatedAtMs: number;
  /** The summary of the oldest messages after the head (docs/sessions.md#summarization), when one was written. */
  summary?: SessionSummary | undefined;
  /** The summary of a long agent turn's older iteration groups (in-turn compaction), when one was written. */
  turnSummary?: TurnSummary | undefined;
  /**
   * In-turn summaries of earlier turns, oldest first: when a later turn gets its own, the one before stays
   * with its turn (at most `maxPastTurnSummaries`; one whose turn moved to the archive is let go).
   */
  pastTurnSummaries?: readonly TurnSummary[] | undefined;
  /**
   * What the last commit appended (the request's new messages, then the reply): a retry of that request
   * replaces them instead of appending them again (docs/sessions.md#retries).
   */
  lastTurn?: LastTurn | undefined;
  /**
   * The session's client has sent it again the messages it stores (it resends its whole conversation,
   * as agents do): a request that does not continue them is another conversation under the same id
   * (docs/sessions.md#other-conversations).
   */
  resent?: boolean | undefined;
}

export interface LastTurn {
  /** Messages the last commit appended, its reply included: the last ones of the active list. */
  messages: number;
  /** The Idempotency-Key of the request that appended them, when it sent one. */
  key: string | undefined;
}

/**
 * A summary of the first iteration groups of one turn: it stands, right after the turn's user message,
 * for the messages up to `toMessage` (conversation positions). The messages stay where they are.
 */
export interface TurnSummary {
  text: string;
  tokens: number;
  /** Conversation position of the turn's user message. */
  turnStart: number;
  /** Conversation position after the last message covered (the end of a whole iteration group). */
  toMessage: number;
  /** Iteration groups (steps) covered. */
  steps: number;
  coveredTokens: number;
  updatedAtMs: number;
}

/** In-turn summaries of earlier turns a session keeps (SessionSnapshot.pastTurnSummaries). */
export const maxPastTurnSummaries = 16;

export interface StoreTurnSummaryInput {
  lockToken: string;
  /** `toMessage` of the turn summary the job extended (0 when it started a new one). */
  expectedToMessage: number;
  summary: TurnSummary;
}

/** A summary of a range of a session's conversation; the messages it covers are in the archive. */
export interface SessionSummary {
  text: string;
  /** Its token count as a rendered message. */
  tokens: number;
  /** Conversation positions (head, archive, recent) of the first message covered and of the one after the last. */
  fromMessage: number;
  toMessage: number;
  /** Tokens of the messages it stands for (those it covers; the previous summary's included). */
  coveredTokens: number;
  updatedAtMs: number;
}

export interface StoreSummaryInput {
  /** The summarization lock this job holds (acquireSummaryLock). */
  lockToken: string;
  /** `toMessage` of the summary the job extended (0 when there was none): anything else is a conflict. */
  expectedToMessage: number;
  summary: SessionSummary;
}

export type StoreSummaryOutcome =
  { ok: true; archivedMessages: number } | { ok: false; reason: 'lock_lost' | 'changed' };

export interface SessionHold {
  token: string;
  expiresAtMs: number;
}

export interface CommitInput {
  hold: SessionHold;
  expectedVersion: number;
  append: StoredMessage[];
  systemPrompt?: Record<string, unknown> | undefined;
  historyStart: number;
  /** Tokens the active list may hold (the window): older messages beyond it move to the archive. */
  activeTokenLimit: number;
  /** Fixes the protected head (once, while nothing is archived yet); 0 leaves it as it is. */
  headMessages?: number;
  /**
   * A retry of the last turn: this many messages (what the last commit appended) are taken off the end
   * of the active list before `append` goes on.
   */
  replaceLast?: number;
  /**
   * The client compacted its conversation (docs/sessions.md#compacted-conversations): what the session
   * stored of the one before — its messages, archived ones included, its summaries and its head — comes
   * off first, and a summary being made of it is not stored; `append` starts the session's conversation
   * anew (`replaceLast` is not read).
   */
  startOver?: boolean | undefined;
  /** The request's Idempotency-Key, kept with the turn so a retry carrying it is known. */
  turnKey?: string | undefined;
  /** The request sent the stored messages again: marks the session `resent` (once marked, it stays). */
  resent?: boolean | undefined;
  /**
   * The request's report for the inspector, kept with the turn in the same atomic step (as
   * recordRequest keeps it): a turn refused is not reported as stored, one stored always is.
   */
  report?: SessionRequestReport | undefined;
}

export type CommitOutcome =
  { ok: true; version: number } | { ok: false; reason: 'hold_lost' | 'version_conflict' };

/** What happened to a run of the conversation's messages in one request (docs/inspector.md). */
export type MessageFate = 'sent' | 'truncated' | 'masked' | 'summarized' | 'dropped';

/**
 * One request of a session as the inspector draws it (docs/inspector.md): the window's regions, what was
 * done to each message (by position in the session's history, as runs), usage, retries, latency. Counts
 * and positions only: never message text.
 */
export interface SessionRequestReport {
  /** When the request ended (ms since the epoch). */
  at: number;
  model: string;
  /** The model that answered instead (models[].fallbacks). */
  fallback?: string | undefined;
  status: number;
  window: number;
  /** The gateway's estimate of the prompt, in the provider's units. */
  inputTokens: number;
  /** What the provider said the prompt was (usage), when it said. */
  providerPromptTokens?: number | undefined;
  outputReserve: number;
  safetyMargin: number;
  regions: { system: number; summary: number; tools: number; history: number; current: number };
  retries: number;
  durationMs: number;
  dropped: number;
  summarized: number;
  truncated: number;
  masked: number;
  /** Runs of history positions and their fate: [first position, count, fate]. */
  fates: Array<[number, number, MessageFate]>;
}

/** Reports kept per session (newest first); older ones go. */
export const maxRequestReports = 200;

export interface SessionListing {
  sessionId: string;
  lastActiveMs: number;
}

export interface SessionStore {
  /**
   * Keeps a request's report with the session (bounded, expiring with it) and lists the session as
   * active at the report's time; nothing for a session that is not stored (never, or deleted meanwhile).
   * A stored turn's report goes with its commit instead (CommitInput.report).
   */
  recordRequest(key: SessionKey, report: SessionRequestReport): Promise<void>;
  /** The session's request reports, newest first. */
  requestReports(key: SessionKey, limit: number): Promise<SessionRequestReport[]>;
  /**
   * A tenant's live sessions, most recently active first (by their newest report's time); `search` keeps
   * ids containing it. What this store recorded is listed at once; what another replica recorded, once
   * that replica has written its batch of the tenant index (docs/inspector.md: within 100 ms).
   */
  listSessions(
    tenantId: string,
    page: { offset: number; limit: number; search?: string | undefined },
  ): Promise<{ total: number; sessions: SessionListing[] }>;
  /** Takes the session's hold, or returns undefined when another request holds it. */
  acquire(key: SessionKey, holdMs: number): Promise<SessionHold | undefined>;
  release(key: SessionKey, hold: SessionHold): Promise<void>;
  /** Extends a hold still held to `holdMs` from now; false when it is no longer this holder's. */
  renew(key: SessionKey, hold: SessionHold, holdMs: number): Promise<boolean>;

  /**
   * The session as stored. Calls take effect in the order they are made: a load called right after an
   * acquire, before its answer, reads the session as it is once the hold is taken (Redis runs a
   * connection's commands in order; the keys of a session share one hash slot, so one node's).
   */
  load(key: SessionKey): Promise<SessionSnapshot>;
  /**
   * acquire and, only when the hold was taken, load, as one step (one round trip to Redis): undefined
   * when another request holds the session. A failure may have taken the hold; it is given back.
   */
  acquireAndLoad(
    key: SessionKey,
    holdMs: number,
  ): Promise<{ hold: SessionHold; snapshot: SessionSnapshot } | undefined>;
  /** Appends atomically, only while `hold` is still this session's hold and the version matches. */
  commit(key: SessionKey, input: CommitInput): Promise<CommitOutcome>;
  /** Archived then active messages, oldest first. */
  history(
    key: SessionKey,
    offset: number,
    limit: number,
  ): Promise<{ total: number; messages: StoredMessage[] }>;
  /** True when something was deleted. */
  delete(key: SessionKey): Promise<boolean>;

  /** One summarization job per session across replicas: a token, or undefined when another job runs. */
  acquireSummaryLock(key: SessionKey, ttlMs: number): Promise<string | undefined>;
  releaseSummaryLock(key: SessionKey, token: string): Promise<void>;
  /**
   * Stores the summary and, in the same atomic step, moves the active messages it covers to the
   * archive; refused when the lock is no longer this job's or the summary it extended was replaced.
   * Turns keep committing meanwhile: positions in the conversation never change.
   */
  storeSummary(key: SessionKey, input: StoreSummaryInput): Promise<StoreSummaryOutcome>;
  /**
   * Stores an in-turn summary (nothing moves); refused when the lock is no longer this job's, the turn is
   * no longer the session's current one, or the turn summary it extended was replaced. The first summary
   * of a turn moves the one of the turn before to `pastTurnSummaries`.
   */
  storeTurnSummary(key: SessionKey, input: StoreTurnSummaryInput): Promise<StoreSummaryOutcome>;

  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface SessionLimits {
  /** Most messages kept in the active list, whatever their tokens; older ones move to the archive. */
  maxActiveMessages: number;
  /** The active list keeps at least this many messages, whatever their tokens. */
  minActiveMessages: number;
  /** Sessions expire after this long without a write. */
  idleTtlSeconds: number;
}

/** docs/sessions.md: the active list holds at least this many messages, whatever their tokens. */
export const minActiveMessages = 100;

export const emptySnapshot: SessionSnapshot = {
  version: 0,
  systemPrompt: undefined,
  messages: [],
  archivedCount: 0,
  headMessages: 0,
  historyStart: 0,
  updatedAtMs: 0,
};

/**
 * How many of the active messages move to the archive after a commit: whole turns only (a turn starts
 * at a user message), the oldest after the protected head, never the last turn — the current one, whose
 * user message stays however long its agent loop grows. Turns move while the list is over
 * `maxActiveMessages`, or over `tokenLimit` tokens when what stays is still at least
 * `minActiveMessages` long. The Redis store's commit script does the same.
 */
export function spillCount(
  activeTokens: readonly number[],
  turnStarts: readonly boolean[],
  head: number,
  tokenLimit: number,
  limits: SessionLimits,
): number {
  let length = activeTokens.length;
  let tokens = activeTokens.reduce((sum, value) => sum + value, 0);
  let spilled = 0;
  for (;;) {
    const from = head + spilled;
    let end = from + 1;
    while (end < activeTokens.length && turnStarts[end] !== true) end++;
    // The turn from `from` runs to the end of the list: it is the current turn.
    if (end >= activeTokens.length) return spilled;
    const turnLength = end - from;
    let turnTokens = 0;
    for (let index = from; index < end; index++) turnTokens += activeTokens[index] as number;
    const overCount = length > limits.maxActiveMessages;
    const overTokens = tokens > tokenLimit && length - turnLength >= limits.minActiveMessages;
    if (!overCount && !overTokens) return spilled;
    spilled += turnLength;
    length -= turnLength;
    tokens -= turnTokens;
  }
}

/** Whether a stored message starts a turn. */
export function startsTurn(message: Record<string, unknown>): boolean {
  return message.role === 'user';
}

/**
 * Releases a hold
, and when the store is unreachable keeps trying in the background until the hold
 * would have expired anyway: a hold left behind blocks its session until it expires by itself.
 */
export async function releaseEventually(
  release: () => Promise<void>,
  expiresAtMs: number,
  now: () => number = Date.now,
): Promise<void> {
  const attempt = async (count: number): Promise<void> => {
    try {
      await release();
    } catch {
      if (count < 60 && now() < expiresAtMs) {
        const timer = setTimeout(
          () => void attempt(count + 1),
          Math.min(250 * 2 ** Math.min(count, 4), 4_000),
        );
        timer.unref();
      }
    }
  };
  await attempt(0);
}
