// SessionStore on Redis (standalone, Sentinel or Cluster). Every key of one session shares a hash tag,
// so each multi-key update is one Lua script on one node: atomic, and valid on a Cluster.
//   ctxgate:{<tenant>:<session>}:meta     hash: version, systemPrompt, historyStart, updatedAtMs, resent
//   ctxgate:{<tenant>:<session>}:active   list of stored messages (JSON), oldest first, bounded
//   ctxgate:{<tenant>:<session>}:archive  list of older messages moved out of the active list
//   ctxgate:{<tenant>:<session>}:hold     the current holder's token, expiring by itself (PX)
//   ctxgate:{<tenant>:<session>}:summarizing  the running summarization job's token (PX)
// The summary lives in the meta hash (`summary` JSON, `summaryTo` its end, `summaryRev` its revision; the
// turn summary likewise, `turnSummary` and `turnSummaryRev`, and earlier turns' ones, `pastTurnSummaries`
// and `pastTurnSummariesRev`); a load leaves out one the replica holds. So with the system prompt
// (`systemPrompt`, `systemPromptRev`): an agent's instructions are tens of KB, sent with every request.
import { randomUUID } from 'node:crypto';
import type { RedisConnection } from './redis-client.js';
import { createActivityBatches, type Schedule } from './activity-batches.js';
import { appendMessageBytes, type ArenaMessages, type MessageArena } from './message-arena.js';
import { defineScripts, sessionHeldFields, sessionScripts } from './redis-scripts.js';
import {
  emptySnapshot,
  releaseEventually,
  startsTurn,
  type SessionKey,
  type SessionLimits,
  type SessionSnapshot,
  type SessionStore,
  type SessionSummary,
  type TurnSummary,
  type StoredMessage,
  maxPastTurnSummaries,
  maxRequestReports,
  type SessionListing,
  type SessionRequestReport,
} from './session-store.js';

export function sessionKeys({ tenantId, sessionId }: SessionKey): {
  meta: string;
  active: string;
  archive: string;
  hold: string;
  summarizing: string;
  requests: string;
} {
  const tag = `ctxgate:{${tenantId}:${sessionId}}`;
  return {
    meta: `${tag}:meta`,
    active: `${tag}:active`,
    archive: `${tag}:archive`,
    hold: `${tag}:hold`,
    summarizing: `${tag}:summarizing`,
    requests: `${tag}:requests`,
  };
}

/** A tenant's sessions by when each was last active (a sorted set; its own slot in a cluster). */
const tenantIndexKey = (tenantId: string): string => `ctxgate:{sessions-of:${tenantId}}:index`;

/** The tenant's sessions deleted lately, by when (in the index's slot): see forgetSession. */
const tenantDeletedKey = (tenantId: string): string => `ctxgate:{sessions-of:${tenantId}}:deleted`;

/**
 * How long a deletion is remembered against the index's batches: far longer than a batch takes to land
 * (activity-batches.ts: 100 ms), as a replica may be stalled or slow to reach Redis.
 */
const deletedKeepMs = 10 * 60 * 1000;

const messageField = ',"message":';

/**
 * A stored message as a list item: its token count first and a mark on the message that starts a turn,
 * so the commit script can read both cheaply and move whole turns.
 */
function serializeStored(stored: StoredMessage): string {
  const start = startsTurn(stored.message) ? ',"start":1' : '';
  return `{"tokens":${Math.max(0, Math.round(stored.tokens))}${start}${messageField}${JSON.stringify(stored.message)}}`;
}

/** A list item back: the message, its token count and the message's own JSON. */
function parseStored(item: string): { stored: StoredMessage; json: string } {
  const split = item.indexOf(messageField);
  const json = item.slice(split + messageField.length, -1);
  return {
    stored: {
      message: JSON.parse(json) as Record<string, unknown>,
      tokens: Number.parseInt(item.slice(10, split), 10),
    },
    json,
  };
}

/** What this replica last loaded of a session, so the next load fetches only what was appended. */
interface CachedSession {
  epoch: string;
  archivedCount: number;
  head: number;
  messages: StoredMessage[];
  /** Each message's JSON bytes, in `arena` (message-arena.ts), which they end at `end` of. */
  bytes: ArenaMessages;
  arena: MessageArena;
  end: number;
  /** The memory held: the arena's. */
  size: number;
  /**
   * The summaries and the system prompt last read, parsed, with the JSON they were parsed from and
   * their revisions: while one is unchanged, loads leave it out (the load script sends only its
   * revision) and hand out the same object (a summary of a long session, or an agent's instructions, is
   * tens of KB, and what is made of a summary — its message and that message's bytes — is kept per
   * object by the session's turn).
   */
  parsed: HeldFields;
}

interface HeldJson<Value> {
  json: string;
  /** The session's revision of it (summaryRev, systemPromptRev…); undefined for one stored before them. */
  revision: string | undefined;
  /** What the load script checks before leaving it out: "revision:bytes of its JSON". */
  mark: string | undefined;
  value: Value;
  /** Its JSON's UTF-8 bytes, made when first asked for (the system prompt's, for the upstream body). */
  bytes?: Buffer;
}

function heldMark(revision: string | undefined, json: string): string | undefined {
  return revision === undefined ? undefined : `${revision}:${Buffer.byteLength(json)}`;
}

interface HeldFields {
  summary?: HeldJson<SessionSummary>;
  turnSummary?: HeldJson<TurnSummary>;
  pastTurnSummaries?: HeldJson<readonly TurnSummary[]>;
  systemPrompt?: HeldJson<Record<string, unknown>>;
}

/**
 * A summary or the system prompt as meta gives it: parsed from its JSON, or the object held when the
 * JSON (or, left out by the load script, the revision) is the one held.
 */
function heldValue<Value>(
  held: HeldJson<Value> | undefined,
  json: string | undefined,
  revision: string | undefined,
  keep: (held: HeldJson<Value>) => void,
): Value | undefined {
  if (json === undefined)
    return revision !== undefined && held?.revision === revision ? held.value : undefined;
  if (held !== undefined && held.json === json) {
    if (held.revision !== revision)
      keep(Object.assign({}, held, { revision, mark: heldMark(revision, json) }));
    return held.value;
  }
  // Frozen: every load of the session shares it.
  const value = Object.freeze(JSON.parse(json)) as Value;
  keep({ json, revision, mark: heldMark(revision, json), value });
  return value;
}

/** Least recently used first; bounded by the bytes of JSON held. */
function createSessionCache(maxBytes: number): {
  get(name: string): CachedSession | undefined;
  set(name: string, entry: CachedSession): void;
  delete(name: string): void;
} {
  const entries = new Map<string, CachedSession>();
  let size = 0;
  const remove = (name: string): void => {
    const entry = entries.get(name);
    if (entry === undefined) return;
    size -= entry.size;
    entries.delete(name);
  };
  return {
    get(name) {
      const entry = entries.get(name);
      if (entry !== undefined) {
        entries.delete(name);
        entries.set(name, entry);
      }
      return entry;
    },
    set(name, entry) {
      remove(name);
      if (entry.size > maxBytes) return;
      entries.set(name, entry);
      size += entry.size;
      for (const [oldest] of entries) {
        if (size <= maxBytes) break;
        remove(oldest);
      }
    },
    delete: remove,
  };
}

type LoadReply = [string[], number, number, string[]];

/**
 * A loaded session as the port gives it. `meta` holds the fields the load script reads (its list in
 * redis-scripts.ts): a field added here is added there.
 */
function snapshotOf(meta: Record<string, string>, entry: CachedSession | undefined): SessionSnapshot {
  if (entry === undefined) return Object.assign({}, emptySnapshot, { messages: [] });
  const systemPrompt = heldValue(
    entry.parsed.systemPrompt,
    meta.systemPrompt,
    meta.systemPromptRev,
    (prompt) => (entry.parsed.systemPrompt = prompt),
  );
  return {
    version: Number(meta.version),
    systemPrompt,
    systemPromptBytes:
      systemPrompt === undefined || entry.parsed.systemPrompt?.value !== systemPrompt
        ? undefined
        : (entry.parsed.systemPrompt.bytes ??= Buffer.from(entry.parsed.systemPrompt.json)),
    // Copies of the arrays: the cached entry's arrays are replaced, never changed, but callers may change theirs.
    messages: [...entry.messages],
    messageBytes: entry.bytes.views,
    messageRuns: { memory: entry.arena.memory, starts: entry.bytes.starts, ends: entry.bytes.ends },

    archivedCount: entry.archivedCount,
    headMessages: entry.head,
    historyStart: Number(meta.historyStart ?? '0'),
    updatedAtMs: Number(meta.updatedAtMs ?? '0'),
    summary: heldValue(
      entry.parsed.summary,
      meta.summary,
      meta.summaryRev,
      (summary) => (entry.parsed.summary = summary),
    ),
    turnSummary: heldValue(
      entry.parsed.turnSummary,
      meta.turnSummary,
      meta.turnSummaryRev,
      (summary) => (entry.parsed.turnSummary = summary),
    ),
    pastTurnSummaries: heldValue(
      entry.parsed.pastTurnSummaries,
      meta.pastTurnSummaries,
      meta.pastTurnSummariesRev,
      (summaries) => (entry.parsed.pastTurnSummaries = summaries),
    ),
    lastTurn:
      meta.lastTurnCount === undefined
        ? undefined
        : {
            messages: Number(meta.lastTurnCount),
            key: meta.lastTurnKey === undefined || meta.lastTurnKey === '' ? undefined : meta.lastTurnKey,
          },
    resent: meta.resent === '1',
  };
}

export function createRedisSessionStore({
  redis,
  limits,
  cacheBytes = 64 * 1024 * 1024,
  now = () => Date.now(),
  activitySchedule,
}: {
  redis: RedisConnection;
  limits: SessionLimits;
  /** Bytes of loaded sessions' JSON this replica keeps, to load only what was appended since. */
  cacheBytes?: number;
  now?: () => number;
  /** When the tenant index's batches are written (activity-batches.ts; every 100 ms by default). */
  activitySchedule?: Schedule;
}): SessionStore {
  const {
    release,
    renew,
    load,
    acquireLoad,
    recordRequest: recordReport,
    touchIndex,
    forgetSession,
    commit,
    history,
    summaryLock,
    storeSummary,
    storeTurnSummary,
  } = defineScripts(redis, sessionScripts);
  const cache = createSessionCache(cacheBytes);
  // Two keys in two slots (a cluster runs them on their own nodes): the report goes with the session's
  // keys, the activity with the tenant's index, in batches.
  const activity = createActivityBatches((tenantId, entries) => {
    const ttl = limits.idleTtlSeconds;
    return touchIndex(
      tenantIndexKey(tenantId),
      tenantDeletedKey(tenantId),
      now() - ttl * 1000,
      ttl,
      ...entries.flat(),
    );
  }, activitySchedule);

  /**
   * The session's meta and active list, only what was appended since fetched when this replica has it
   * cached. With `hold`, the hold is taken in the same step and 'busy' comes back when another request
   * has it.
   */
  async function loadActive(
    key: SessionKey,
    name: string,
    hold?: { token: string; holdMs: number },
  ): Promise<{ meta: Record<string, string>; entry: CachedSession | undefined } | 'busy'> {
    const keys = sessionKeys(key);
    const cached = cache.get(name);
    const cacheArguments = [
      cached?.epoch ?? '',
      cached === undefined ? 0 : cached.archivedCount + cached.messages.length,
      cached?.archivedCount ?? 0,
      cached?.head ?? 0,
      ...sessionHeldFields.map((field) => cached?.parsed[field]?.mark ?? ''),
    ];
    const reply = (
      hold === undefined
        ? await load(keys.meta, keys.active, keys.archive, ...cacheArguments)
        : await acquireLoad(
            keys.meta,
            keys.active,
            keys.archive,
            keys.hold,
            ...cacheArguments,
            hold.token,
            hold.holdMs,
          )
    ) as LoadReply | 0;
    if (reply === 0) return 'busy';
    const [metaPairs, archived, delta, items] = reply;
    const meta: Record<string, string> = {};
    for (let index = 0; index + 1 < metaPairs.length; index += 2)
      meta[metaPairs[index] as string] = metaPairs[index + 1] as string;
    if (meta.version === undefined) {
      cache.delete(name);
      return { meta, entry: undefined };
    }
    // A summary or system prompt left out is one this replica held when it asked; replies come in the
    // order asked, so it still does. Should it not, the session is read whole.
    const isHeld = (field: keyof HeldFields): boolean =>
      meta[field] !== undefined ||
      meta[`${field}Rev`] === undefined ||
      cached?.parsed[field]?.revision === meta[`${field}Rev`];
    if (!sessionHeldFields.every(isHeld)) {
      cache.delete(name);
      return loadActive(key, name);
    }
    const head = Number(meta.head ?? '0');
    const archivedCount = Number(archived);
    let messages: StoredMessage[];
    let bytes: ArenaMessages;
    const reused = delta === 1 ? cached : undefined;
    if (reused !== undefined) {
      // Messages that moved to the archive since were the oldest after the head.
      const spilled = archivedCount - reused.archivedCount;
      if (spilled > reused.messages.length - head) {
        cache.delete(name);
        return loadActive(key, name);
      }
      const kept = <Item>(items: Item[]): Item[] => [...items.slice(0, head), ...items.slice(head + spilled)];
      messages = kept(reused.messages);
      bytes = {
        views: kept(reused.bytes.views),
        starts: kept(reused.bytes.starts),
        ends: kept(reused.bytes.ends),
      };
    } else {
      messages = [];
      bytes = { views: [], starts: [], ends: [] };
    }
    const jsons: string[] = [];
    for (const item of items) {
      const parsed = parseStored(item);
      messages.push(parsed.stored);
      jsons.push(parsed.json);
    }
    const { arena, end } = appendMessageBytes(reused?.arena, reused?.end ?? 0, bytes, jsons);
    const entry: CachedSession = {
      epoch: meta.epoch ?? '',
      archivedCount,
      head,
      messages,
      bytes,
      arena,
      end,
      size: arena.memory.length,
      parsed: cached?.parsed ?? {},
    };
    cache.set(name, entry);
    return { meta, entry };
  }

  return {
    async recordRequest(key, report) {
      const keys = sessionKeys(key);
      const kept = await recordReport(
        keys.requests,
        keys.meta,
        JSON.stringify(report),
        maxRequestReports,
        limits.idleTtlSeconds,
      );
      if (Number(kept) === 1) activity.mark(key.tenantId, key.sessionId, report.at);
    },
    async requestReports(key, limit) {
      if (limit <= 0) return [];
      const items = await redis.lrange(sessionKeys(key).requests, 0, limit - 1);
      return items.map((item) => JSON.parse(item) as SessionRequestReport);
    },
    async listSessions(tenantId, { offset, limit, search }) {
      const index = tenantIndexKey(tenantId);
      await activity.flush(tenantId);
      const since = now() - limits.idleTtlSeconds * 1000;
      const ids = (await redis.zrevrangebyscore(index, '+inf', since, 'WITHSCORES')) as string[];
      const found: SessionListing[] = [];
      for (let at = 0; at < ids.length; at += 2) {
        const sessionId = ids[at] as string;
        if (search !== undefined && search !== '' && !sessionId.includes(search)) continue;
        found.push({ sessionId, lastActiveMs: Number(ids[at + 1]) });
      }
      return { total: found.length, sessions: found.slice(offset, offset + limit) };
    },
    async acquire(key, holdMs) {
      const token = randomUUID();
      const holdKey = sessionKeys(key).hold;
      try {
        const taken = await redis.set(holdKey, token, 'PX', holdMs, 'NX');
        return taken === 'OK' ? { token, expiresAtMs: now() + holdMs } : undefined;
      } catch (error) {
        // Redis may have taken the hold before the connection failed: give it back once reachable.
        void releaseEventually(async () => void (await release(holdKey, token)), now() + holdMs, now);
        throw error;
      }
    },
    async release(key, hold) {
      await release(sessionKeys(key).hold, hold.token);
    },
    async renew(key, hold, holdMs) {
      return Number(await renew(sessionKeys(key).hold, hold.token, holdMs)) === 1;
    },
    async load(key): Promise<SessionSnapshot> {
      const loaded = await loadActive(key, `${key.tenantId}\u0000${key.sessionId}`);
      // Without a hold to take, the load is never refused.
      if (loaded === 'busy') throw new Error('session load refused');
      return snapshotOf(loaded.meta, loaded.entry);
    },
    async acquireAndLoad(key, holdMs) {
      const token = randomUUID();
      const holdKey = sessionKeys(key).hold;
      let loaded: Awaited<ReturnType<typeof loadActive>>;
      try {
        loaded = await loadActive(key, `${key.tenantId}\u0000${key.sessionId}`, { token, holdMs });
        if (loaded === 'busy') return undefined;
        return {
          hold: { token, expiresAtMs: now() + holdMs },
          snapshot: snapshotOf(loaded.meta, loaded.entry),
        };
      } catch (error) {
        // Redis may have taken the hold before the connection failed (or the read failed after it):
        // give it back once reachable.
        void releaseEventually(async () => void (await release(holdKey, token)), now() + holdMs, now);
        throw error;
      }
    },
    async acquireSummaryLock(key, ttlMs) {
      const keys = sessionKeys(key);
      const token = randomUUID();
      return Number(await summaryLock(keys.meta, keys.summarizing, token, ttlMs)) === 1 ? token : undefined;
    },
    async releaseSummaryLock(key, token) {
      await release(sessionKeys(key).summarizing, token);
    },
    async storeSummary(key, { lockToken, expectedToMessage, summary }) {
      const keys = sessionKeys(key);
      const result = (await storeSummary(
        keys.meta,
        keys.active,
        keys.archive,
        keys.summarizing,
        lockToken,
        expectedToMessage,
        JSON.stringify(summary),
        summary.toMessage,
      )) as [number, number | string];
      if (result[0] === 1) return { ok: true, archivedMessages: Number(result[1]) };
      return { ok: false, reason: result[1] === 'lock_lost' ? 'lock_lost' : 'changed' };
    },
    async storeTurnSummary(key, { lockToken, expectedToMessage, summary }) {
      const keys = sessionKeys(key);
      const result = (await storeTurnSummary(
        keys.meta,
        keys.archive,
        keys.summarizing,
        lockToken,
        expectedToMessage,
        JSON.stringify(summary),
        summary.turnStart,
        maxPastTurnSummaries,
      )) as [number, number | string];
      if (result[0] === 1) return { ok: true, archivedMessages: 0 };
      return { ok: false, reason: result[1] === 'lock_lost' ? 'lock_lost' : 'changed' };
    },
    async commit(key, input) {
      const keys = sessionKeys(key);
      const result = (await commit(
        keys.meta,
        keys.active,
        keys.archive,
        keys.hold,
        keys.requests,
        keys.summarizing,
        input.hold.token,
        input.expectedVersion,
        limits.maxActiveMessages,
        limits.idleTtlSeconds,
        now(),
        input.historyStart,
        input.systemPrompt === undefined ? '' : JSON.stringify(input.systemPrompt),
        input.activeTokenLimit,
        limits.minActiveMessages,
        randomUUID(),
        input.headMessages ?? 0,
        input.append.reduce((sum, stored) => sum + Math.max(0, Math.round(stored.tokens)), 0),
        input.startOver === true ? -1 : (input.replaceLast ?? 0),
        input.turnKey ?? '',
        input.report === undefined ? '' : JSON.stringify(input.report),
        maxRequestReports,
        input.resent === true ? '1' : '',
        ...input.append.map(serializeStored),
      )) as [number, number | string];
      if (result[0] !== 1)
        return { ok: false, reason: result[1] === 'hold_lost' ? 'hold_lost' : 'version_conflict' };
      if (input.report !== undefined) activity.mark(key.tenantId, key.sessionId, input.report.at);
      return { ok: true, version: Number(result[1]) };
    },
    async history(key, offset, limit) {
      const keys = sessionKeys(key);
      const [total, ...items] = (await history(
        keys.archive,
        keys.active,
        keys.meta,
        Math.max(0, offset),
        Math.max(0, limit),
      )) as [number, ...string[]];
      return {
        total: Number(total),
        messages: limit > 0 ? items.map((item) => parseStored(item).stored) : [],
      };
    },
    async delete(key) {
      const keys = sessionKeys(key);
      cache.delete(`${key.tenantId}\u0000${key.sessionId}`);
      activity.forget(key.tenantId, key.sessionId);
      await forgetSession(
        tenantIndexKey(key.tenantId),
        tenantDeletedKey(key.tenantId),
        key.sessionId,
        now(),
        deletedKeepMs,
      ).catch(() => 0);
      return (
        (await redis.del(keys.meta, keys.active, keys.archive, keys.hold, keys.summarizing, keys.requests)) >
        0
      );
    },
    async ping() {
      try {
        return (await redis.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    async close() {
      await activity.flush();
      redis.disconnect();
    },
  };
}
