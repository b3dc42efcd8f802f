// SessionStore on Redis (standalone, Sentinel or Cluster). Every key of one session shares a hash tag,
// so each multi-key update is one Lua script on one node: atomic, and valid on a Cluster.
//   ctxgate:{<tenant>:<session>}:meta     hash: version, systemPrompt, historyStart, updatedAtMs
//   ctxgate:{<tenant>:<session>}:active   list of stored messages (JSON), oldest first, bounded
//   ctxgate:{<tenant>:<session>}:archive  list of older messages moved out of the active list
//   ctxgate:{<tenant>:<session>}:hold     the current holder's token, expiring by itself (PX)
//   ctxgate:{<tenant>:<session>}:summarizing  the running summarization job's token (PX)
// The summary lives in the meta hash (`summary` JSON, `summaryTo` its end) and comes with every load.
import { randomUUID } from 'node:crypto';
import type { RedisConnection } from './redis-client.js';
import {
  emptySnapshot,
  releaseEventually,
  startsTurn,
  type SessionKey,
  type SessionLimits,
  type SessionSnapshot,
  type SessionStore,
  type StoredMessage,
} from './session-store.js';

type ScriptRunner = (...keysAndArgs: Array<string | number>) => Promise<unknown>;

const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

// ARGV: token, holdMs.
const renewScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

// ARGV: the caller's cached epoch, total, archived count and head. Returns {meta, archived, 1, new items}
// when the cache is still this session's and only appended to (a delta), else {meta, archived, 0, all}.
const loadScript = `
local meta = redis.call('HGETALL', KEYS[1])
local archived = redis.call('LLEN', KEYS[3])
local length = redis.call('LLEN', KEYS[2])
local epoch = redis.call('HGET', KEYS[1], 'epoch')
local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
local fresh = archived + length - tonumber(ARGV[2])
if epoch and epoch == ARGV[1] and head == tonumber(ARGV[4]) and fresh >= 0 and fresh <= length - head
  and archived >= tonumber(ARGV[3]) then
  return {meta, archived, 1, redis.call('LRANGE', KEYS[2], length - fresh, -1)}
end
return {meta, archived, 0, redis.call('LRANGE', KEYS[2], 0, -1)}`;

// ARGV: token, expectedVersion, maxActive, ttlSeconds, nowMs, historyStart, systemPrompt ('' = keep),
// activeTokenLimit, minActive, epoch (for a new session), head (0 = keep), appended tokens, items…
// Spilling moves the oldest whole turns after the protected head to the archive (see spillCount).
const commitScript = `
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return {0, 'hold_lost'} end
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if version ~= tonumber(ARGV[2]) then return {0, 'version_conflict'} end
if version == 0 then redis.call('HSET', KEYS[1], 'epoch', ARGV[10], 'activeTokens', 0) end
local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
if head == 0 and tonumber(ARGV[11]) > 0 and redis.call('LLEN', KEYS[3]) == 0 then
  head = tonumber(ARGV[11])
  redis.call('HSET', KEYS[1], 'head', head)
end
local function startsTurn(item)
  return string.find(string.sub(item, 1, 64), ',"start":1,', 1, true) ~= nil
end
-- Where the last turn starts in the active list (-1: not known, a session stored before it was kept).
local lastStart = tonumber(redis.call('HGET', KEYS[1], 'lastTurnStart') or '-1')
local before = redis.call('LLEN', KEYS[2])
for index = 13, #ARGV do
  redis.call('RPUSH', KEYS[2], ARGV[index])
  if startsTurn(ARGV[index]) then lastStart = before + index - 13 end
end
local tokens = tonumber(redis.call('HINCRBY', KEYS[1], 'activeTokens', ARGV[12]))
local length = redis.call('LLEN', KEYS[2])
local maxActive, limit, minActive = tonumber(ARGV[3]), tonumber(ARGV[8]), tonumber(ARGV[9])
-- Whole turns move, oldest first after the head, never the last (current) one: see spillCount.
local moved = false
while length > head + 1 and (length > maxActive or (tokens > limit and length > minActive)) do
  -- Only the current turn is left after the head.
  if lastStart >= 0 and lastStart <= head then break end
  -- The turn right after the head: read in pages until the next turn starts.
  local turn = {}
  local turnTokens = 0
  local closed = false
  local from = head
  while not closed and from < length do
    local page = redis.call('LRANGE', KEYS[2], from, from + 255)
    for position, item in ipairs(page) do
      if #turn > 0 and startsTurn(item) then closed = true break end
      table.insert(turn, item)
      turnTokens = turnTokens + (tonumber(string.match(item, '^{"tokens":(%d+),')) or 0)
    end
    from = from + #page
    if #page == 0 then break end
  end
  if not closed then break end
  local overCount = length > maxActive
  local overTokens = tokens > limit and length - #turn >= minActive
  if not overCount and not overTokens then break end
  -- Take the turn out from behind the head, then put the head back.
  local kept = {}
  if head > 0 then kept = redis.call('LPOP', KEYS[2], head) end
  redis.call('LPOP', KEYS[2], #turn)
  for _, item in ipairs(turn) do redis.call('RPUSH', KEYS[3], item) end
  for position = #kept, 1, -1 do redis.call('LPUSH', KEYS[2], kept[position]) end
  length = length - #turn
  tokens = tokens - turnTokens
  if lastStart >= 0 then lastStart = lastStart - #turn end
  moved = true
end
if moved then redis.call('HSET', KEYS[1], 'activeTokens', tokens) end
redis.call('HSET', KEYS[1], 'lastTurnStart', lastStart)
version = version + 1
redis.call('HSET', KEYS[1], 'version', version, 'updatedAtMs', ARGV[5], 'historyStart', ARGV[6])
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'systemPrompt', ARGV[7]) end
for index = 1, 3 do
  if redis.call('EXISTS', KEYS[index]) == 1 then redis.call('EXPIRE', KEYS[index], ARGV[4]) end
end
redis.call('DEL', KEYS[4])
return {1, version}`;

// ARGV: offset, limit. Returns {total, messages…} in conversation order: the active list's protected
// head, the archive, then the rest of the active list.
const historyScript = `
local head = tonumber(redis.call('HGET', KEYS[3], 'head') or '0')
local archived = redis.call('LLEN', KEYS[1])
local length = redis.call('LLEN', KEYS[2])
local first = tonumber(ARGV[1])
local last = first + tonumber(ARGV[2]) - 1
local result = {archived + length}
local function take(key, from, to, base)
  local lo, hi = math.max(first, base), math.min(last, base + to - from)
  if lo > hi then return end
  for _, item in ipairs(redis.call('LRANGE', key, from + lo - base, from + hi - base)) do table.insert(result, item) end
end
take(KEYS[2], 0, head - 1, 0)
take(KEYS[1], 0, archived - 1, head)
take(KEYS[2], head, length - 1, head + archived)
return result`;

// ARGV: token, ttlMs. Only an existing session can be summarized.
const summaryLockScript = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0`;

// ARGV: lock token, expected summaryTo, summary JSON, its toMessage. Moves the active messages after
// the head that the summary covers to the archive, like a spill, in the same step as storing it.
const storeSummaryScript = `
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return {0, 'lock_lost'} end
local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
local archived = redis.call('LLEN', KEYS[3])
local length = redis.call('LLEN', KEYS[2])
local target = tonumber(ARGV[4])
if tonumber(redis.call('HGET', KEYS[1], 'summaryTo') or '0') ~= tonumber(ARGV[2])
  or target > archived + length then return {0, 'changed'} end
local moved = 0
-- Summaries cover whole older turns: the current turn (from the last turn start on) never moves.
local lastStart = tonumber(redis.call('HGET', KEYS[1], 'lastTurnStart') or '-1')
if lastStart >= 0 and target > archived + lastStart then return {0, 'changed'} end
if head + archived < target and length > head + 1 then
  local kept = {}
  if head > 0 then kept = redis.call('LPOP', KEYS[2], head) end
  local tokens = tonumber(redis.call('HGET', KEYS[1], 'activeTokens') or '0')
  while head + archived < target and length > head + 1 do
    local item = redis.call('LPOP', KEYS[2])
    tokens = tokens - (tonumber(string.match(item, '^{"tokens":(%d+),')) or 0)
    redis.call('RPUSH', KEYS[3], item)
    archived = archived + 1
    length = length - 1
    moved = moved + 1
  end
  for index = #kept, 1, -1 do redis.call('LPUSH', KEYS[2], kept[index]) end
  redis.call('HSET', KEYS[1], 'activeTokens', tokens)
  if lastStart >= 0 then redis.call('HSET', KEYS[1], 'lastTurnStart', lastStart - moved) end
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
end
redis.call('HSET', KEYS[1], 'summary', ARGV[3], 'summaryTo', target)
return {1, moved}`;

// ARGV: lock token, expected toMessage of the current turn summary (0: none), summary JSON, its turn
// start (a conversation position). The turn must still be the current one: its start the last turn start.
const storeTurnSummaryScript = `
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return {0, 'lock_lost'} end
local archived = redis.call('LLEN', KEYS[2])
local lastStart = tonumber(redis.call('HGET', KEYS[1], 'lastTurnStart') or '-1')
if lastStart < 0 or archived + lastStart ~= tonumber(ARGV[4]) then return {0, 'changed'} end
local current = redis.call('HGET', KEYS[1], 'turnSummary')
local currentTo = 0
if current then
  local decoded = cjson.decode(current)
  if tonumber(decoded.turnStart) == tonumber(ARGV[4]) then currentTo = tonumber(decoded.toMessage) end
end
if currentTo ~= tonumber(ARGV[2]) then return {0, 'changed'} end
redis.call('HSET', KEYS[1], 'turnSummary', ARGV[3])
return {1, 0}`;

function sessionKeys({ tenantId, sessionId }: SessionKey): {
  meta: string;
  active: string;
  archive: string;
  hold: string;
  summarizing: string;
} {
  const tag = `ctxgate:{${tenantId}:${sessionId}}`;
  return {
    meta: `${tag}:meta`,
    active: `${tag}:active`,
    archive: `${tag}:archive`,
    hold: `${tag}:hold`,
    summarizing: `${tag}:summarizing`,
  };
}

function defineScript(redis: RedisConnection, name: string, numberOfKeys: number, lua: string): ScriptRunner {
  redis.defineCommand(name, { numberOfKeys, lua });
  // defineCommand adds the method at run time (EVALSHA, falling back to EVAL once per node).
  const command = (redis as unknown as Record<string, ScriptRunner>)[name] as ScriptRunner;
  return (...keysAndArgs) => command.apply(redis, keysAndArgs);
}

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
  bytes: Buffer[];
  size: number;
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

export function createRedisSessionStore({
  redis,
  limits,
  cacheBytes = 64 * 1024 * 1024,
  now = () => Date.now(),
}: {
  redis: RedisConnection;
  limits: SessionLimits;
  /** Bytes of loaded sessions' JSON this replica keeps, to load only what was appended since. */
  cacheBytes?: number;
  now?: () => number;
}): SessionStore {
  const release = defineScript(redis, 'ctxgateRelease', 1, releaseScript);
  const renew = defineScript(redis, 'ctxgateRenew', 1, renewScript);
  const load = defineScript(redis, 'ctxgateLoad', 3, loadScript);
  const commit = defineScript(redis, 'ctxgateCommit', 4, commitScript);
  const history = defineScript(redis, 'ctxgateHistory', 3, historyScript);
  const summaryLock = defineScript(redis, 'ctxgateSummaryLock', 2, summaryLockScript);
  const storeSummary = defineScript(redis, 'ctxgateStoreSummary', 4, storeSummaryScript);
  const storeTurnSummary = defineScript(redis, 'ctxgateStoreTurnSummary', 3, storeTurnSummaryScript);
  const cache = createSessionCache(cacheBytes);

  async function loadActive(
    key: SessionKey,
    name: string,
  ): Promise<{ meta: Record<string, string>; entry: CachedSession | undefined }> {
    const keys = sessionKeys(key);
    const cached = cache.get(name);
    const [metaPairs, archived, delta, items] = (await load(
      keys.meta,
      keys.active,
      keys.archive,
      cached?.epoch ?? '',
      cached === undefined ? 0 : cached.archivedCount + cached.messages.length,
      cached?.archivedCount ?? 0,
      cached?.head ?? 0,
    )) as LoadReply;
    const meta: Record<string, string> = {};
    for (let index = 0; index + 1 < metaPairs.length; index += 2)
      meta[metaPairs[index] as string] = metaPairs[index + 1] as string;
    if (meta.version === undefined) {
      cache.delete(name);
      return { meta, entry: undefined };
    }
    const head = Number(meta.head ?? '0');
    const archivedCount = Number(archived);
    let messages: StoredMessage[];
    let bytes: Buffer[];
    if (delta === 1 && cached !== undefined) {
      // Messages that moved to the archive since were the oldest after the head.
      const spilled = archivedCount - cached.archivedCount;
      if (spilled > cached.messages.length - head) {
        cache.delete(name);
        return loadActive(key, name);
      }
      messages = [...cached.messages.slice(0, head), ...cached.messages.slice(head + spilled)];
      bytes = [...cached.bytes.slice(0, head), ...cached.bytes.slice(head + spilled)];
    } else {
      messages = [];
      bytes = [];
    }
    for (const item of items) {
      const parsed = parseStored(item);
      messages.push(parsed.stored);
      bytes.push(Buffer.from(parsed.json));
    }
    const entry: CachedSession = {
      epoch: meta.epoch ?? '',
      archivedCount,
      head,
      messages,
      bytes,
      size: bytes.reduce((sum, item) => sum + item.length, 0),
    };
    cache.set(name, entry);
    return { meta, entry };
  }

  return {
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
      const { meta, entry } = await loadActive(key, `${key.tenantId}\u0000${key.sessionId}`);
      if (entry === undefined) return { ...emptySnapshot, messages: [] };
      return {
        version: Number(meta.version),
        systemPrompt:
          meta.systemPrompt === undefined
            ? undefined
            : (JSON.parse(meta.systemPrompt) as Record<string, unknown>),
        // Copies of the arrays: the cached entry's arrays are replaced, never changed, but callers may change theirs.
        messages: [...entry.messages],
        messageBytes: entry.bytes,

        archivedCount: entry.archivedCount,
        headMessages: entry.head,
        historyStart: Number(meta.historyStart ?? '0'),
        updatedAtMs: Number(meta.updatedAtMs ?? '0'),
        summary:
          meta.summary === undefined ? undefined : (JSON.parse(meta.summary) as SessionSnapshot['summary']),
        turnSummary:
          meta.turnSummary === undefined
            ? undefined
            : (JSON.parse(meta.turnSummary) as SessionSnapshot['turnSummary']),
      };
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
        ...input.append.map(serializeStored),
      )) as [number, number | string];
      if (result[0] === 1) return { ok: true, version: Number(result[1]) };
      return { ok: false, reason: result[1] === 'hold_lost' ? 'hold_lost' : 'version_conflict' };
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
      return (await redis.del(keys.meta, keys.active, keys.archive, keys.hold, keys.summarizing)) > 0;
    },
    async ping() {
      try {
        return (await redis.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}
