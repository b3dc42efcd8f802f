// Every Lua script the Redis stores run, in one place, with the one way they are defined: ioredis's
// defineCommand (EVALSHA, falling back to EVAL once per node). Each script touches keys of one hash tag
// only, so it is valid on a Cluster.
import type { RedisConnection } from './redis-client.js';

export interface ScriptDefinition {
  /** The command name ioredis adds (unique across the stores). */
  name: string;
  /** Keys the script takes; without it, the first argument says how many. */
  numberOfKeys?: number;
  lua: string;
}

/** Keys first, then arguments, as the script's KEYS and ARGV. */
export type ScriptRunner = (...keysAndArgs: Array<string | number>) => Promise<unknown>;

export function defineScripts<Scripts extends Record<string, ScriptDefinition>>(
  redis: RedisConnection,
  scripts: Scripts,
): { [Name in keyof Scripts]: ScriptRunner } {
  const runners = {} as { [Name in keyof Scripts]: ScriptRunner };
  for (const name of Object.keys(scripts) as Array<keyof Scripts>) {
    const { name: command, numberOfKeys, lua } = scripts[name] as ScriptDefinition;
    redis.defineCommand(command, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
    const run = (redis as unknown as Record<string, ScriptRunner>)[command] as ScriptRunner;
    runners[name] = (...keysAndArgs) => run.apply(redis, keysAndArgs);
  }
  return runners;
}

// ---- Sessions (redis-session-store.ts) ----

// Keeps the inspector's report of a request at the head of the session's requests list (newest first),
// bounded, expiring with the session: the record-request script and the commit share it.
const keepReportLua = (list: string, report: string, kept: string, ttl: string): string => `
redis.call('LPUSH', ${list}, ${report})
redis.call('LTRIM', ${list}, 0, tonumber(${kept}) - 1)
redis.call('EXPIRE', ${list}, ${ttl})`;

const sessionReleaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

// ARGV: token, holdMs.
const sessionRenewScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

// ARGV: the caller's cached epoch, total, archived count and head, and the marks ("revision:bytes") of
// the summary, the turn summary, the past turn summaries and the system prompt it holds ('' for none).
// Returns {meta, archived, 1, new items} when the cache is still this session's and only appended to (a
// delta), else {meta, archived, 0, all}. meta holds the fields a load reads: a field the caller holds —
// the session's revision of it, and as many bytes — is left out and not even read (an agent's
// instructions are tens of KB; its revision stays in). The length guards against one written by a
// build that kept no revision (a rolling upgrade): its revision stays the same while the field changes.
/**
 * The meta fields a load may leave out when the replica holds them (summaries, the system prompt), in
 * the order of their marks in the load's ARGV.
 */
export const sessionHeldFields = ['summary', 'turnSummary', 'pastTurnSummaries', 'systemPrompt'] as const;

const sessionLoadScript = `
local small = {'version', 'epoch', 'head', 'historyStart', 'updatedAtMs', 'lastTurnCount', 'lastTurnKey',
  'resent', 'summaryRev', 'turnSummaryRev', 'pastTurnSummariesRev', 'systemPromptRev'}
local values = redis.call('HMGET', KEYS[1], unpack(small))
local fields, meta = {}, {}
for index, field in ipairs(small) do
  if values[index] then
    fields[field] = values[index]
    meta[#meta + 1] = field
    meta[#meta + 1] = values[index]
  end
end
local epoch = fields.epoch
local current = epoch and epoch == ARGV[1]
local needed = {}
for index, field in ipairs({${sessionHeldFields.map((field) => `'${field}'`).join(', ')}}) do
  local mark, revision = ARGV[4 + index], fields[field .. 'Rev']
  if not (current and mark ~= '' and revision
    and revision .. ':' .. redis.call('HSTRLEN', KEYS[1], field) == mark) then
    needed[#needed + 1] = field
  end
end
if #needed > 0 then
  local large = redis.call('HMGET', KEYS[1], unpack(needed))
  for index, field in ipairs(needed) do
    if large[index] then
      meta[#meta + 1] = field
      meta[#meta + 1] = large[index]
    end
  end
end
local archived = redis.call('LLEN', KEYS[3])
local length = redis.call('LLEN', KEYS[2])
local head = tonumber(fields.head or '0')
local fresh = archived + length - tonumber(ARGV[2])
if current and head == tonumber(ARGV[4]) and fresh >= 0 and fresh <= length - head
  and archived >= tonumber(ARGV[3]) then
  return {meta, archived, 1, redis.call('LRANGE', KEYS[2], length - fresh, -1)}
end
return {meta, archived, 0, redis.call('LRANGE', KEYS[2], 0, -1)}`;

// The hold (KEYS[4]) taken and the session read in one step: 0 when another request holds it, else
// what the load script returns. ARGV: as the load script's, then the hold's token and holdMs.
const sessionAcquireLoadScript = `
if not redis.call('SET', KEYS[4], ARGV[9], 'PX', ARGV[10], 'NX') then return 0 end
${sessionLoadScript}`;

// KEYS: meta, active, archive, hold, requests, summarizing. ARGV: token, expectedVersion, maxActive,
// ttlSeconds, nowMs, historyStart, systemPrompt ('' = keep; a new one bumps systemPromptRev, so that loads
// can leave out the one a replica holds), activeTokenLimit, minActive, epoch (for a new session, or after a
// replacement), head (0 = keep), appended tokens, messages to take off the end first (a retried turn; -1:
// the client compacted its conversation, and everything stored of it comes off — its messages, archived
// ones, head and summaries, and the lock of a summary being made of it, which then is not stored), the turn's
// idempotency key, the request's report ('' = none; kept as the record-request script keeps it), reports
// kept, whether the request sent the stored messages again ('1' marks the session resent), items…
// Spilling moves the oldest whole turns after the protected head to the archive (see spillCount).
const sessionCommitScript = `
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return {0, 'hold_lost'} end
local state = redis.call('HMGET', KEYS[1], 'version', 'head', 'lastTurnStart', 'activeTokens')
local version = tonumber(state[1] or '0')
if version ~= tonumber(ARGV[2]) then return {0, 'version_conflict'} end
-- The meta fields this write sets, in one HSET at its end.
local set = {}
local function put(field, value)
  set[#set + 1] = field
  set[#set + 1] = value
end
local tokens = tonumber(state[4] or '0')
if version == 0 then
  put('epoch', ARGV[10])
  tokens = 0
end
if ARGV[13] == '-1' then
  redis.call('DEL', KEYS[2], KEYS[3], KEYS[6])
  redis.call('HDEL', KEYS[1], 'head', 'lastTurnStart', 'summary', 'summaryTo', 'summaryRev', 'turnSummary',
    'turnSummaryRev', 'pastTurnSummaries', 'pastTurnSummariesRev')
  state[2], state[3] = nil, nil
  put('epoch', ARGV[10])
  tokens = 0
end
local head = tonumber(state[2] or '0')
if head == 0 and tonumber(ARGV[11]) > 0 and redis.call('LLEN', KEYS[3]) == 0 then
  head = tonumber(ARGV[11])
  put('head', head)
end
local function startsTurn(item)
  return string.find(string.sub(item, 1, 64), ',"start":1,', 1, true) ~= nil
end
local function tokensOf(item)
  return tonumber(string.match(item, '^{"tokens":(%d+),')) or 0
end
-- Pushes items[from..to] onto a list, a thousand to a command (Lua's unpack has a limit).
local function pushAll(key, items, from, to)
  for first = from, to, 1000 do
    redis.call('RPUSH', key, unpack(items, first, math.min(to, first + 999)))
  end
end
-- Puts items back at the head of a list in their order: the last first, a thousand to a command.
local function unshiftAll(key, items)
  for last = #items, 1, -1000 do
    local chunk = {}
    for position = last, math.max(1, last - 999), -1 do chunk[#chunk + 1] = items[position] end
    redis.call('LPUSH', key, unpack(chunk))
  end
end
-- Where the last turn starts in the active list (-1: not known, a session stored before it was kept).
local lastStart = tonumber(state[3] or '-1')
local length = redis.call('LLEN', KEYS[2])
-- A retried turn: what the last commit appended comes off the end first. Replicas' cached copies hold
-- those messages: a new epoch makes them read the session whole again.
local replace = math.min(tonumber(ARGV[13]), length - head)
for _ = 1, replace do
  tokens = tokens - tokensOf(redis.call('RPOP', KEYS[2]))
end
if replace > 0 then
  put('epoch', ARGV[10])
  length = length - replace
end
if lastStart >= length then lastStart = -1 end
for index = 18, #ARGV do
  if startsTurn(ARGV[index]) then lastStart = length + index - 18 end
end
pushAll(KEYS[2], ARGV, 18, #ARGV)
length = length + #ARGV - 17
put('lastTurnCount', #ARGV - 17)
put('lastTurnKey', ARGV[14])
if ARGV[17] == '1' then put('resent', '1') end
tokens = tokens + tonumber(ARGV[12])
local maxActive, limit, minActive = tonumber(ARGV[3]), tonumber(ARGV[8]), tonumber(ARGV[9])
-- Whole turns move, oldest first after the head, never the last (current) one: see spillCount.
while length > head + 1 and (length > maxActive or (tokens > limit and length > minActive)) do
  -- Only the current turn is left after the head.
  if lastStart >= 0 and lastStart <= head then break end
  -- The turn right after the head: read in pages until the next turn starts (a chat turn is two
  -- messages, an agent's can be thousands: the pages grow from 16 items to 256).
  local turn = {}
  local turnTokens = 0
  local closed = false
  local from = head
  local pageSize = 16
  while not closed and from < length do
    local page = redis.call('LRANGE', KEYS[2], from, from + pageSize - 1)
    pageSize = math.min(pageSize * 2, 256)
    for position, item in ipairs(page) do
      if #turn > 0 and startsTurn(item) then closed = true break end
      table.insert(turn, item)
      turnTokens = turnTokens + tokensOf(item)
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
  pushAll(KEYS[3], turn, 1, #turn)
  unshiftAll(KEYS[2], kept)
  length = length - #turn
  tokens = tokens - turnTokens
  if lastStart >= 0 then lastStart = lastStart - #turn end
end
version = version + 1
put('activeTokens', tokens)
put('lastTurnStart', lastStart)
put('version', version)
put('updatedAtMs', ARGV[5])
put('historyStart', ARGV[6])
if ARGV[7] ~= '' then put('systemPrompt', ARGV[7]) end
redis.call('HSET', KEYS[1], unpack(set))
if ARGV[7] ~= '' then redis.call('HINCRBY', KEYS[1], 'systemPromptRev', 1) end
-- A key that does not exist (an archive not yet made) is left as it is.
for index = 1, 3 do redis.call('EXPIRE', KEYS[index], ARGV[4]) end
if ARGV[15] ~= '' then${keepReportLua('KEYS[5]', 'ARGV[15]', 'ARGV[16]', 'ARGV[4]')}
end
redis.call('DEL', KEYS[4])
return {1, version}`;

// ARGV: offset, limit. Returns {total, messages…} in conversation order: the active list's protected
// head, the archive, then the rest of the active list.
const sessionHistoryScript = `
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
const sessionSummaryLockScript = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0`;

// ARGV: lock token, expected summaryTo, summary JSON, its toMessage. Moves the active messages after
// the head that the summary covers to the archive, like a spill, in the same step as storing it.
const sessionStoreSummaryScript = `
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
redis.call('HINCRBY', KEYS[1], 'summaryRev', 1)
return {1, moved}`;

// ARGV: lock token, expected toMessage of the current turn summary (0: none), summary JSON, its turn
// start (a conversation position), most past turn summaries kept. The turn must still be the current
// one: its start the last turn start. The first summary of a turn moves the one of the turn before to
// pastTurnSummaries (a JSON array, oldest first), letting go of those whose turn is in the archive.
const sessionStoreTurnSummaryScript = `
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return {0, 'lock_lost'} end
local archived = redis.call('LLEN', KEYS[2])
local lastStart = tonumber(redis.call('HGET', KEYS[1], 'lastTurnStart') or '-1')
if lastStart < 0 or archived + lastStart ~= tonumber(ARGV[4]) then return {0, 'changed'} end
local current = redis.call('HGET', KEYS[1], 'turnSummary')
local currentTo = 0
local currentStart = nil
if current then
  local decoded = cjson.decode(current)
  currentStart = tonumber(decoded.turnStart)
  if currentStart == tonumber(ARGV[4]) then currentTo = tonumber(decoded.toMessage) end
end
if currentTo ~= tonumber(ARGV[2]) then return {0, 'changed'} end
if current and currentStart ~= tonumber(ARGV[4]) then
  local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
  local kept = {}
  local past = redis.call('HGET', KEYS[1], 'pastTurnSummaries')
  if past then
    for _, summary in ipairs(cjson.decode(past)) do
      local start = tonumber(summary.turnStart)
      if start < head or start >= head + archived then kept[#kept + 1] = summary end
    end
  end
  kept[#kept + 1] = cjson.decode(current)
  local from = math.max(1, #kept - tonumber(ARGV[5]) + 1)
  local newest = {}
  for index = from, #kept do newest[#newest + 1] = kept[index] end
  redis.call('HSET', KEYS[1], 'pastTurnSummaries', cjson.encode(newest))
  redis.call('HINCRBY', KEYS[1], 'pastTurnSummariesRev', 1)
end
redis.call('HSET', KEYS[1], 'turnSummary', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'turnSummaryRev', 1)
return {1, 0}`;

// The inspector's record of a request (KEYS[1], newest first) of a stored session (its meta, KEYS[2]):
// none for a session never stored or deleted meanwhile. ARGV: the report, most kept, ttlSeconds.
const sessionRecordRequestScript = `
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end${keepReportLua('KEYS[1]', 'ARGV[1]', 'ARGV[2]', 'ARGV[3]')}
return 1`;

// The tenant's index (KEYS[1]) takes each batch entry (ARGV: the oldest time kept, the TTL, then pairs of
// a time and a session id) unless it holds a newer time for the session, or the session was deleted at or
// after the entry's time (KEYS[2], forgetSession): another replica's batch can land after a delete.
const sessionTouchIndexScript = `
for index = 3, #ARGV - 1, 2 do
  local at, session = tonumber(ARGV[index]), ARGV[index + 1]
  local deleted = redis.call('ZSCORE', KEYS[2], session)
  local score = redis.call('ZSCORE', KEYS[1], session)
  if (not deleted or tonumber(deleted) < at) and (not score or tonumber(score) < at) then
    redis.call('ZADD', KEYS[1], at, session)
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1`;

// A deleted session leaves the tenant's index (KEYS[1]) and is remembered as deleted (KEYS[2]: session id
// by the time of the delete, ARGV[2]) for ARGV[3] ms, so that a batch still on its way does not list it.
const sessionForgetScript = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

export const sessionScripts = {
  release: { name: 'ctxgateRelease', numberOfKeys: 1, lua: sessionReleaseScript },
  renew: { name: 'ctxgateRenew', numberOfKeys: 1, lua: sessionRenewScript },
  load: { name: 'ctxgateLoad', numberOfKeys: 3, lua: sessionLoadScript },
  acquireLoad: { name: 'ctxgateAcquireLoad', numberOfKeys: 4, lua: sessionAcquireLoadScript },
  recordRequest: { name: 'ctxgateRecordRequest', numberOfKeys: 2, lua: sessionRecordRequestScript },
  touchIndex: { name: 'ctxgateTouchIndex', numberOfKeys: 2, lua: sessionTouchIndexScript },
  forgetSession: { name: 'ctxgateForgetSession', numberOfKeys: 2, lua: sessionForgetScript },
  commit: { name: 'ctxgateCommit', numberOfKeys: 6, lua: sessionCommitScript },
  history: { name: 'ctxgateHistory', numberOfKeys: 3, lua: sessionHistoryScript },
  summaryLock: { name: 'ctxgateSummaryLock', numberOfKeys: 2, lua: sessionSummaryLockScript },
  storeSummary: { name: 'ctxgateStoreSummary', numberOfKeys: 4, lua: sessionStoreSummaryScript },
  storeTurnSummary: { name: 'ctxgateStoreTurnSummary', numberOfKeys: 3, lua: sessionStoreTurnSummaryScript },
} satisfies Record<string, ScriptDefinition>;

// ---- Budgets (redis-budget-store.ts): a variable number of counter keys, so no numberOfKeys ----

// Sums the live reservations of each key (dropping expired ones). Used by read and reserve.
const budgetUsageLua = `
local function usage(key, now)
  local fields = redis.call('HGETALL', key)
  local used, estimated, reserved = 0, 0, 0
  for index = 1, #fields, 2 do
    local field, value = fields[index], fields[index + 1]
    if field == 'used' then used = tonumber(value)
    elseif field == 'estimated' then estimated = tonumber(value)
    elseif string.sub(field, 1, 2) == 'r:' then
      local tokens, expires = string.match(value, '^(%d+):(%d+)$')
      if tonumber(expires) <= now then redis.call('HDEL', key, field)
      else reserved = reserved + tonumber(tokens) end
    end
  end
  return used, estimated, reserved
end`;

// ARGV: now.
const budgetReadScript = `${budgetUsageLua}
local result = {}
for index = 1, #KEYS do
  local used, estimated, reserved = usage(KEYS[index], tonumber(ARGV[1]))
  table.insert(result, used) table.insert(result, estimated) table.insert(result, reserved)
end
return result`;

// ARGV: now, reservation id, tokens, expires at, then per key: limit, hard (1/0), ttl seconds.
const budgetReserveScript = `${budgetUsageLua}
local now = tonumber(ARGV[1])
local result = {1, 0}
for index = 1, #KEYS do
  local used, estimated, reserved = usage(KEYS[index], now)
  table.insert(result, used) table.insert(result, estimated) table.insert(result, reserved)
  local base = 4 + (index - 1) * 3
  if result[1] == 1 and ARGV[base + 2] == '1' and used + reserved >= tonumber(ARGV[base + 1]) then
    result[1] = 0
    result[2] = index
  end
end
if result[1] == 1 then
  for index = 1, #KEYS do
    redis.call('HSET', KEYS[index], 'r:' .. ARGV[2], ARGV[3] .. ':' .. ARGV[4])
    redis.call('EXPIRE', KEYS[index], ARGV[4 + (index - 1) * 3 + 3])
  end
end
return result`;

// ARGV: reservation id, tokens, estimated tokens, warn at, then per key: limit, ttl seconds.
const budgetSettleScript = `
local result = {}
for index = 1, #KEYS do
  local base = 4 + (index - 1) * 2
  redis.call('HDEL', KEYS[index], 'r:' .. ARGV[1])
  local used = redis.call('HINCRBY', KEYS[index], 'used', ARGV[2])
  if tonumber(ARGV[3]) > 0 then redis.call('HINCRBY', KEYS[index], 'estimated', ARGV[3]) end
  redis.call('EXPIRE', KEYS[index], ARGV[base + 2])
  local limit = tonumber(ARGV[base + 1])
  local warned = 0
  if limit > 0 and used >= tonumber(ARGV[4]) * limit then
    warned = redis.call('HSETNX', KEYS[index], 'warned', 1)
  end
  table.insert(result, used) table.insert(result, warned)
end
return result`;

// ARGV: reservation id.
const budgetReleaseScript = `
for index = 1, #KEYS do redis.call('HDEL', KEYS[index], 'r:' .. ARGV[1]) end
return 1`;

export const budgetScripts = {
  read: { name: 'ctxgateBudgetRead', lua: budgetReadScript },
  reserve: { name: 'ctxgateBudgetReserve', lua: budgetReserveScript },
  settle: { name: 'ctxgateBudgetSettle', lua: budgetSettleScript },
  release: { name: 'ctxgateBudgetRelease', lua: budgetReleaseScript },
} satisfies Record<string, ScriptDefinition>;

// ---- Learned limits (learned-limits.ts) ----
// KEYS: the entry, the index (a sorted set of entries by last use), the change log (a stream), the
// version counter, the entry's reset mark. Every change bumps the version and is logged with it, so a
// replica that reads the log knows when it missed some (a gap) and reads everything again.

// ARGV: the value the writer read ('' = none), the new value ('' = delete), now (ms), TTL (s: of the
// value, or of the reset mark), and for a write, when the oldest lesson in it was learned (ms; '' =
// unknown). A delete (a reset) marks the entry with its time; a write whose oldest lesson is not newer
// than the mark is refused, {2, current}: a lesson learned before the reset never makes the entry
// again, whichever replica holds it. Otherwise writes only when the entry is still what the writer
// read, else returns {0, current}.
const learnedWriteScript = `
if ARGV[2] ~= '' and ARGV[5] ~= '' then
  local reset = redis.call('GET', KEYS[5])
  if reset and tonumber(reset) >= tonumber(ARGV[5]) then return {2, redis.call('GET', KEYS[1]) or ''} end
end
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return {0, current} end
local version = redis.call('INCR', KEYS[4])
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], KEYS[1])
  redis.call('SET', KEYS[5], ARGV[3], 'EX', ARGV[4])
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'v', version, 'k', KEYS[1], 'd', '1')
else
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[4])
  redis.call('ZADD', KEYS[2], ARGV[3], KEYS[1])
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'v', version, 'k', KEYS[1])
end
return {1, redis.call('ZCARD', KEYS[2])}`;

// KEYS: index, log, version, then the entries to evict. ARGV: their scores as read. An entry used
// since (its score moved) stays.
const learnedEvictScript = `
local evicted = 0
for index = 4, #KEYS do
  local score = redis.call('ZSCORE', KEYS[1], KEYS[index])
  if score and tonumber(score) == tonumber(ARGV[index - 3]) then
    redis.call('ZREM', KEYS[1], KEYS[index])
    redis.call('DEL', KEYS[index])
    local version = redis.call('INCR', KEYS[3])
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', 10000, '*', 'v', version, 'k', KEYS[index], 'd', '1')
    evicted = evicted + 1
  end
end
return evicted`;

export const learnedLimitScripts = {
  write: { name: 'ctxgateLearnedWrite', numberOfKeys: 5, lua: learnedWriteScript },
  evict: { name: 'ctxgateLearnedEvict', lua: learnedEvictScript },
} satisfies Record<string, ScriptDefinition>;
