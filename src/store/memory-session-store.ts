// In-process SessionStore: the default without Redis (one process only; lost on restart). Same
// semantics as the Redis store, so the contract suite runs against both. Bounded like Redis would be:
// sessions expire after the idle TTL (swept in the background, and on access), and past `maxBytes`
// the least recently used idle sessions are evicted.
import { randomUUID } from 'node:crypto';
import { jsonChars } from './json-chars.js';
import {
  emptySnapshot,
  spillCount,
  startsTurn,
  type SessionKey,
  type SessionLimits,
  type SessionSnapshot,
  type SessionStore,
  type SessionSummary,
  type TurnSummary,
  maxPastTurnSummaries,
  type StoredMessage,
  type LastTurn,
  maxRequestReports,
  type SessionListing,
  type SessionRequestReport,
} from './session-store.js';

interface MemorySession {
  version: number;
  systemPrompt: Record<string, unknown> | undefined;
  active: StoredMessage[];
  archive: StoredMessage[];
  head: number;
  historyStart: number;
  updatedAtMs: number;
  hold: { token: string; expiresAtMs: number } | undefined;
  summary: SessionSummary | undefined;
  turnSummary: TurnSummary | undefined;
  /** Earlier turns' in-turn summaries, oldest first (SessionSnapshot.pastTurnSummaries). */
  pastTurnSummaries: TurnSummary[];
  summaryLock: { token: string; expiresAtMs: number } | undefined;
  lastTurn: LastTurn | undefined;
  /** SessionSnapshot.resent. */
  resent: boolean;
  /** The inspector's reports of its requests, newest first (at most maxRequestReports). */
  reports: SessionRequestReport[];
  /** About the memory it holds: its messages as JSON, two bytes a character, plus bookkeeping. */
  bytes: number;
}

export interface EvictionEvent {
  reason: 'memory' | 'expired';
  sessions: number;
}

/** Bookkeeping per session and per message, beyond the text itself. */
const sessionOverheadBytes = 1_024;
const messageOverheadBytes = 256;

/** A request's report, newest first; the oldest beyond maxRequestReports go. */
function keepReport(session: MemorySession, report: SessionRequestReport): void {
  session.reports.unshift(report);
  if (session.reports.length > maxRequestReports) session.reports.length = maxRequestReports;
}

/**
 * A value as Redis holds it: its JSON read back. A message may carry what it writes out only in its JSON
 * (upstream/anthropic-wire.ts BridgedExtension), which a structured clone would leave out.
 */
function asStored<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function messageBytes(stored: StoredMessage): number {
  return jsonChars(stored.message) * 2 + messageOverheadBytes;
}

export function createMemorySessionStore({
  limits,
  now = () => Date.now(),
  maxBytes = Number.POSITIVE_INFINITY,
  sweepIntervalMs = 60_000,
  onEvict,
}: {
  limits: SessionLimits;
  now?: () => number;
  /** Memory the sessions may hold (about); past it the least recently used idle ones are evicted. */
  maxBytes?: number;
  /** How often expired sessions are looked for (they are also dropped when touched). */
  sweepIntervalMs?: number;
  onEvict?: (event: EvictionEvent) => void;
}): SessionStore {
  // Insertion order is use order: a session is moved to the end whenever it is touched.
  const sessions = new Map<string, MemorySession>();
  let totalBytes = 0;
  const keyOf = ({ tenantId, sessionId }: SessionKey): string => `${tenantId}\u0000${sessionId}`;
  const expired = (session: MemorySession): boolean =>
    session.updatedAtMs > 0 && now() - session.updatedAtMs > limits.idleTtlSeconds * 1000;

  function remove(mapKey: string): void {
    const session = sessions.get(mapKey);
    if (session === undefined) return;
    totalBytes -= session.bytes;
    sessions.delete(mapKey);
  }

  function live(key: SessionKey): MemorySession | undefined {
    const mapKey = keyOf(key);
    const session = sessions.get(mapKey);
    if (session === undefined) return undefined;
    if (expired(session)) {
      remove(mapKey);
      return undefined;
    }
    // Most recently used last.
    sessions.delete(mapKey);
    sessions.set(mapKey, session);
    return session;
  }

  /** The summarization lock is this job's, and has not expired. */
  function holdsSummaryLock(session: MemorySession, token: string): boolean {
    const lock = session.summaryLock;
    return lock !== undefined && lock.token === token && lock.expiresAtMs > now();
  }

  /** What a session stored of a conversation its client compacted comes off (CommitInput.startOver). */
  function forgetConversation(session: MemorySession): void {
    let freed = 0;
    for (const stored of [...session.active, ...session.archive]) freed += messageBytes(stored);
    for (const summary of [session.summary, session.turnSummary, ...session.pastTurnSummaries])
      freed += (summary?.text.length ?? 0) * 2;
    Object.assign(session, {
      active: [],
      archive: [],
      head: 0,
      summary: undefined,
      turnSummary: undefined,
      pastTurnSummaries: [],
      summaryLock: undefined,
    });
    resize(session, session.bytes - freed);
  }

  function resize(session: MemorySession, bytes: number): void {
    totalBytes += bytes - session.bytes;
    session.bytes = bytes;
  }

  /** Evicts the least recently used sessions nobody holds until the store is within its bound. */
  function evictOverBound(keep: MemorySession): void {
    if (totalBytes <= maxBytes) return;
    let evicted = 0;
    for (const [mapKey, session] of sessions) {
      if (totalBytes <= maxBytes) break;
      const held =
        (session.hold !== undefined && session.hold.expiresAtMs > now()) ||
        (session.summaryLock !== undefined && session.summaryLock.expiresAtMs > now());
      if (session === keep || held) continue;
      remove(mapKey);
      evicted++;
    }
    if (evicted > 0) onEvict?.({ reason: 'memory', sessions: evicted });
  }

  const sweep = setInterval(() => {
    let dropped = 0;
    for (const [mapKey, session] of sessions) {
      if (!expired(session)) continue;
      remove(mapKey);
      dropped++;
    }
    if (dropped > 0) onEvict?.({ reason: 'expired', sessions: dropped });
  }, sweepIntervalMs);
  sweep.unref();

  function sessionFor(key: SessionKey): MemorySession {
    let session = live(key);
    if (session === undefined) {
      session = {
        version: 0,
        systemPrompt: undefined,
        active: [],
        archive: [],
        head: 0,
        historyStart: 0,
        updatedAtMs: 0,
        hold: undefined,
        summary: undefined,
        turnSummary: undefined,
        pastTurnSummaries: [],
        summaryLock: undefined,
        lastTurn: undefined,
        resent: false,
        reports: [],
        bytes: 0,
      };
      sessions.set(keyOf(key), session);
      resize(session, sessionOverheadBytes);
    }
    return session;
  }

  return {
    async acquire(key, holdMs) {
      const session = sessionFor(key);
      if (session.hold !== undefined && session.hold.expiresAtMs > now()) return undefined;
      session.hold = { token: randomUUID(), expiresAtMs: now() + holdMs };
      return { ...session.hold };
    },
    async release(key, hold) {
      const session = live(key);
      if (session?.hold?.token === hold.token) session.hold = undefined;
      if (session !== undefined && session.version === 0 && session.hold === undefined) remove(keyOf(key));
    },
    async renew(key, hold, holdMs) {
      const session = live(key);
      if (session?.hold?.token !== hold.token || session.hold.expiresAtMs <= now()) return false;
      session.hold.expiresAtMs = now() + holdMs;
      return true;
    },
    async acquireAndLoad(key, holdMs) {
      const hold = await this.acquire(key, holdMs);
      return hold === undefined ? undefined : { hold, snapshot: await this.load(key) };
    },
    async load(key): Promise<SessionSnapshot> {
      const session = live(key);
      if (session === undefined || session.version === 0)
        return Object.assign({}, emptySnapshot, { messages: [] });
      return {
        version: session.version,
        systemPrompt: session.systemPrompt,
        messages: session.active.map((stored) => structuredClone(stored)),
        archivedCount: session.archive.length,
        headMessages: session.head,
        historyStart: session.historyStart,
        updatedAtMs: session.updatedAtMs,
        summary: session.summary === undefined ? undefined : { ...session.summary },
        turnSummary: session.turnSummary === undefined ? undefined : { ...session.turnSummary },
        pastTurnSummaries:
          session.pastTurnSummaries.length === 0
            ? undefined
            : session.pastTurnSummaries.map((summary) => ({ ...summary })),
        lastTurn: session.lastTurn === undefined ? undefined : { ...session.lastTurn },
        resent: session.resent,
      };
    },
    async acquireSummaryLock(key, ttlMs) {
      const session = live(key);
      if (session === undefined || session.version === 0) return undefined;
      if (session.summaryLock !== undefined && session.summaryLock.expiresAtMs > now()) return undefined;
      session.summaryLock = { token: randomUUID(), expiresAtMs: now() + ttlMs };
      return session.summaryLock.token;
    },
    async releaseSummaryLock(key, token) {
      const session = live(key);
      if (session?.summaryLock?.token === token) session.summaryLock = undefined;
    },
    async storeSummary(key, { lockToken, expectedToMessage, summary }) {
      const session = live(key);
      if (session === undefined || !holdsSummaryLock(session, lockToken))
        return { ok: false, reason: 'lock_lost' };
      const total = session.archive.length + session.active.length;
      if ((session.summary?.toMessage ?? 0) !== expectedToMessage || summary.toMessage > total)
        return { ok: false, reason: 'changed' };
      // Summaries cover whole older turns: the current turn (from the last turn start on) never moves.
      const lastTurnStart = session.active.findLastIndex((stored) => startsTurn(stored.message));
      if (lastTurnStart >= 0 && summary.toMessage > session.archive.length + lastTurnStart)
        return { ok: false, reason: 'changed' };
      let moved = 0;
      while (
        session.head + session.archive.length < summary.toMessage &&
        session.active.length > session.head + 1
      ) {
        session.archive.push(...session.active.splice(session.head, 1));
        moved++;
      }
      resize(session, session.bytes - (session.summary?.text.length ?? 0) * 2 + summary.text.length * 2);
      session.summary = { ...summary };
      return { ok: true, archivedMessages: moved };
    },

    async storeTurnSummary(key, { lockToken, expectedToMessage, summary }) {
      const session = live(key);
      if (session === undefined || !holdsSummaryLock(session, lockToken))
        return { ok: false, reason: 'lock_lost' };
      const lastTurnStart = session.active.findLastIndex((stored) => startsTurn(stored.message));
      if (lastTurnStart < 0 || session.archive.length + lastTurnStart !== summary.turnStart)
        return { ok: false, reason: 'changed' };
      const currentTo =
        session.turnSummary?.turnStart === summary.turnStart ? session.turnSummary.toMessage : 0;
      if (currentTo !== expectedToMessage) return { ok: false, reason: 'changed' };
      const before = session.turnSummary;
      let past = session.pastTurnSummaries;
      if (before !== undefined && before.turnStart !== summary.turnStart) {
        // The turn before keeps its summary; those of turns now in the archive are let go.
        const archived = (turnStart: number) =>
          turnStart >= session.head && turnStart < session.head + session.archive.length;
        past = [...past, before].filter((kept) => !archived(kept.turnStart)).slice(-maxPastTurnSummaries);
      }
      const textBytes = (summaries: readonly TurnSummary[]) =>
        summaries.reduce((sum, kept) => sum + kept.text.length * 2, 0);
      resize(
        session,
        session.bytes -
          (before?.text.length ?? 0) * 2 -
          textBytes(session.pastTurnSummaries) +
          summary.text.length * 2 +
          textBytes(past),
      );
      session.pastTurnSummaries = past;
      session.turnSummary = { ...summary };
      return { ok: true, archivedMessages: 0 };
    },
    async commit(key, input) {
      const session = live(key);
      if (
        session?.hold === undefined ||
        session.hold.token !== input.hold.token ||
        session.hold.expiresAtMs <= now()
      ) {
        return { ok: false, reason: 'hold_lost' };
      }
      if (session.version !== input.expectedVersion) return { ok: false, reason: 'version_conflict' };
      if (input.startOver === true) forgetConversation(session);
      if (session.head === 0 && session.archive.length === 0 && (input.headMessages ?? 0) > 0)
        session.head = input.headMessages ?? 0;
      let added = 0;
      const replaced = Math.min(input.replaceLast ?? 0, session.active.length - session.head);
      for (const stored of session.active.splice(session.active.length - replaced, replaced))
        added -= messageBytes(stored);
      session.active.push(...input.append.map((stored) => asStored(stored)));
      for (const stored of input.append) added += messageBytes(stored);
      if (input.systemPrompt !== undefined) {
        added += jsonChars(input.systemPrompt) * 2;
        if (session.systemPrompt !== undefined) added -= jsonChars(session.systemPrompt) * 2;
      }
      resize(session, session.bytes + added);
      const spilled = spillCount(
        session.active.map((stored) => stored.tokens),
        session.active.map((stored) => startsTurn(stored.message)),
        session.head,
        input.activeTokenLimit,
        limits,
      );
      if (spilled > 0) session.archive.push(...session.active.splice(session.head, spilled));
      if (input.systemPrompt !== undefined) session.systemPrompt = asStored(input.systemPrompt);
      session.historyStart = input.historyStart;
      session.lastTurn = { messages: input.append.length, key: input.turnKey };
      if (input.resent === true) session.resent = true;
      session.version += 1;
      session.updatedAtMs = now();
      session.hold = undefined;
      if (input.report !== undefined) keepReport(session, input.report);
      evictOverBound(session);
      return { ok: true, version: session.version };
    },
    async history(key, offset, limit) {
      const session = live(key);
      const all =
        session === undefined
          ? []
          : [
              ...session.active.slice(0, session.head),
              ...session.archive,
              ...session.active.slice(session.head),
            ];

      return {
        total: all.length,
        messages: all.slice(offset, offset + limit).map((stored) => structuredClone(stored)),
      };
    },
    async recordRequest(key, report) {
      const session = live(key);
      if (session === undefined || session.version === 0) return;
      keepReport(session, report);
    },
    async requestReports(key, limit) {
      return (live(key)?.reports ?? []).slice(0, Math.max(0, limit));
    },
    async listSessions(tenantId, { offset, limit, search }) {
      const prefix = `${tenantId}\u0000`;
      const found: SessionListing[] = [];
      for (const [mapKey, session] of sessions) {
        // As in Redis: a session is listed from its first recorded request, by the newest one's time.
        const newest = session.reports[0];
        if (!mapKey.startsWith(prefix) || newest === undefined || expired(session)) continue;
        const sessionId = mapKey.slice(prefix.length);
        if (search !== undefined && search !== '' && !sessionId.includes(search)) continue;
        found.push({ sessionId, lastActiveMs: newest.at });
      }
      found.sort((a, b) => b.lastActiveMs - a.lastActiveMs);
      return { total: found.length, sessions: found.slice(offset, offset + limit) };
    },
    async delete(key) {
      const existed = (live(key)?.version ?? 0) > 0;
      remove(keyOf(key));
      return existed;
    },
    async ping() {
      return true;
    },
    async close() {
      clearInterval(sweep);
      sessions.clear();
      totalBytes = 0;
    },
  };
}
