// SessionStore on Redis (standalone, Sentinel or Cluster). Every key of one session shares a hash tag,
// so each multi-key update is one Lua script on one node: atomic, and valid on a Cluster.
//   ctxgate:{<tenant>:<session>}:meta     hash: version, systemPrompt, historyStart, updatedAtMs
//   ctxgate:{<tenant>:<session>}:active   list of stored messages (JSON), oldest first, bounded
//   ctxgate:{<tenant>:<session>}:archive  list of older messages moved out of the active list
//   ctxgate:{<tenant>:<session>}:hold     the current holder's token, expiring by itself (PX)
import { randomUUID } from 'node:crypto';
import type { RedisConnection } from './redis-client.js';
import {
  emptySnapshot,
  releaseEventually,
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

const loadScript = `
return {redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1), redis.call('LLEN', KEYS[3])}`;

// ARGV: token, expectedVersion, maxActive, ttlSeconds, nowMs, historyStart, systemPrompt ('' = keep), messages…
const commitScript = `
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return {0, 'hold_lost'} end
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if version ~= tonumber(ARGV[2]) then return {0, 'version_conflict'} end
for index = 8, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[index]) end
local overflow = redis.call('LLEN', KEYS[2]) - tonumber(ARGV[3])
while overflow > 0 do
  redis.call('RPUSH', KEYS[3], redis.call('LPOP', KEYS[2]))
  overflow = overflow - 1
end
version = version + 1
redis.call('HSET', KEYS[1], 'version', version, 'updatedAtMs', ARGV[5], 'historyStart', ARGV[6])
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'systemPrompt', ARGV[7]) end
for index = 1, 3 do
  if redis.call('EXISTS', KEYS[index]) == 1 then redis.call('EXPIRE', KEYS[index], ARGV[4]) end
end
redis.call('DEL', KEYS[4])
return {1, version}`;

// ARGV: offset, limit. Returns {total, messages…} over archive then active.
const historyScript = `
local archived = redis.call('LLEN', KEYS[1])
local active = redis.call('LLEN', KEYS[2])
local first = tonumber(ARGV[1])
local last = first + tonumber(ARGV[2]) - 1
local result = {archived + active}
if first < archived then
  for _, item in ipairs(redis.call('LRANGE', KEYS[1], first, math.min(last, archived - 1))) do table.insert(result, item) end
end
if last >= archived then
  for _, item in ipairs(redis.call('LRANGE', KEYS[2], math.max(first - archived, 0), last - archived)) do table.insert(result, item) end
end
return result`;

function sessionKeys({ tenantId, sessionId }: SessionKey): {
  meta: string;
  active: string;
  archive: string;
  hold: string;
} {
  const tag = `ctxgate:{${tenantId}:${sessionId}}`;
  return { meta: `${tag}:meta`, active: `${tag}:active`, archive: `${tag}:archive`, hold: `${tag}:hold` };
}

function defineScript(redis: RedisConnection, name: string, numberOfKeys: number, lua: string): ScriptRunner {
  redis.defineCommand(name, { numberOfKeys, lua });
  // defineCommand adds the method at run time (EVALSHA, falling back to EVAL once per node).
  const command = (redis as unknown as Record<string, ScriptRunner>)[name] as ScriptRunner;
  return (...keysAndArgs) => command.apply(redis, keysAndArgs);
}

function parseStored(items: unknown[]): StoredMessage[] {
  return items.map((item) => JSON.parse(String(item)) as StoredMessage);
}

export function createRedisSessionStore({
  redis,
  limits,
  now = () => Date.now(),
}: {
  redis: RedisConnection;
  limits: SessionLimits;
  now?: () => number;
}): SessionStore {
  const release = defineScript(redis, 'ctxgateRelease', 1, releaseScript);
  const load = defineScript(redis, 'ctxgateLoad', 3, loadScript);
  const commit = defineScript(redis, 'ctxgateCommit', 4, commitScript);
  const history = defineScript(redis, 'ctxgateHistory', 2, historyScript);

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
    async load(key): Promise<SessionSnapshot> {
      const keys = sessionKeys(key);
      const [metaPairs, active, archivedCount] = (await load(keys.meta, keys.active, keys.archive)) as [
        string[],
        string[],
        number,
      ];
      const meta: Record<string, string> = {};
      for (let index = 0; index + 1 < metaPairs.length; index += 2)
        meta[metaPairs[index] as string] = metaPairs[index + 1] as string;
      if (meta.version === undefined) return { ...emptySnapshot, messages: [] };
      return {
        version: Number(meta.version),
        systemPrompt:
          meta.systemPrompt === undefined
            ? undefined
            : (JSON.parse(meta.systemPrompt) as Record<string, unknown>),
        messages: parseStored(active),
        archivedCount: Number(archivedCount),
        historyStart: Number(meta.historyStart ?? '0'),
        updatedAtMs: Number(meta.updatedAtMs ?? '0'),
      };
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
        ...input.append.map((stored) => JSON.stringify(stored)),
      )) as [number, number | string];
      if (result[0] === 1) return { ok: true, version: Number(result[1]) };
      return { ok: false, reason: result[1] === 'hold_lost' ? 'hold_lost' : 'version_conflict' };
    },
    async history(key, offset, limit) {
      const keys = sessionKeys(key);
      const [total, ...items] = (await history(
        keys.archive,
        keys.active,
        Math.max(0, offset),
        Math.max(0, limit),
      )) as [number, ...string[]];
      return { total: Number(total), messages: limit > 0 ? parseStored(items) : [] };
    },
    async delete(key) {
      const keys = sessionKeys(key);
      return (await redis.del(keys.meta, keys.active, keys.archive, keys.hold)) > 0;
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
