// In-process SessionStore: the default without Redis (one process only; lost on restart). Same
// semantics as the Redis store, so the contract suite runs against both.
import { randomUUID } from 'node:crypto';
import {
  emptySnapshot,
  spillCount,
  type SessionKey,
  type SessionLimits,
  type SessionSnapshot,
  type SessionStore,
  type SessionSummary,
  type StoredMessage,
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
  summaryLock: { token: string; expiresAtMs: number } | undefined;
}

export function createMemorySessionStore({
  limits,
  now = () => Date.now(),
}: {
  limits: SessionLimits;
  now?: () => number;
}): SessionStore {
  const sessions = new Map<string, MemorySession>();
  const keyOf = ({ tenantId, sessionId }: SessionKey): string => `${tenantId}\u0000${sessionId}`;

  function live(key: SessionKey): MemorySession | undefined {
    const session = sessions.get(keyOf(key));
    if (
      session !== undefined &&
      session.updatedAtMs > 0 &&
      now() - session.updatedAtMs > limits.idleTtlSeconds * 1000
    ) {
      sessions.delete(keyOf(key));
      return undefined;
    }
    return session;
  }

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
        summaryLock: undefined,
      };
      sessions.set(keyOf(key), session);
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
      if (session !== undefined && session.version === 0 && session.hold === undefined)
        sessions.delete(keyOf(key));
    },
    async renew(key, hold, holdMs) {
      const session = live(key);
      if (session?.hold?.token !== hold.token || session.hold.expiresAtMs <= now()) return false;
      session.hold.expiresAtMs = now() + holdMs;
      return true;
    },
    async load(key): Promise<SessionSnapshot> {
      const session = live(key);
      if (session === undefined || session.version === 0) return { ...emptySnapshot, messages: [] };
      return {
        version: session.version,
        systemPrompt: session.systemPrompt,
        messages: session.active.map((stored) => structuredClone(stored)),
        archivedCount: session.archive.length,
        headMessages: session.head,
        historyStart: session.historyStart,
        updatedAtMs: session.updatedAtMs,
        summary: session.summary === undefined ? undefined : { ...session.summary },
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
      if (
        session?.summaryLock === undefined ||
        session.summaryLock.token !== lockToken ||
        session.summaryLock.expiresAtMs <= now()
      ) {
        return { ok: false, reason: 'lock_lost' };
      }
      const total = session.archive.length + session.active.length;
      if ((session.summary?.toMessage ?? 0) !== expectedToMessage || summary.toMessage > total)
        return { ok: false, reason: 'changed' };
      let moved = 0;
      while (
        session.head + session.archive.length < summary.toMessage &&
        session.active.length > session.head + 1
      ) {
        session.archive.push(...session.active.splice(session.head, 1));
        moved++;
      }
      session.summary = { ...summary };
      return { ok: true, archivedMessages: moved };
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
      if (session.head === 0 && session.archive.length === 0 && (input.headMessages ?? 0) > 0)
        session.head = input.headMessages ?? 0;
      session.active.push(...input.append.map((stored) => structuredClone(stored)));
      const spilled = spillCount(
        session.active.map((stored) => stored.tokens),
        session.head,
        input.activeTokenLimit,
        limits,
      );
      if (spilled > 0) session.archive.push(...session.active.splice(session.head, spilled));
      if (input.systemPrompt !== undefined) session.systemPrompt = structuredClone(input.systemPrompt);
      session.historyStart = input.historyStart;
      session.version += 1;
      session.updatedAtMs = now();
      session.hold = undefined;
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
    async delete(key) {
      const existed = (live(key)?.version ?? 0) > 0;
      sessions.delete(keyOf(key));
      return existed;
    },
    async ping() {
      return true;
    },
    async close() {
      sessions.clear();
    },
  };
}
