// The Lua scripts of the Redis stores, as a set: each compiles on a real redis-server, takes every key it
// touches through KEYS (a key built inside a script is refused by a Cluster, or lands in another slot),
// declares as many keys as it reads, and has a command name of its own. What each script does is checked
// through its store (the session, budget and learned-limit contracts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisConnection, type RedisConnection } from '../../src/store/redis-client.js';
import {
  budgetScripts,
  defineScripts,
  learnedLimitScripts,
  sessionScripts,
  type ScriptDefinition,
} from '../../src/store/redis-scripts.js';
import { startRedisServer, type RunningRedis } from '../helpers/redis-server.js';

const all: Array<[string, ScriptDefinition]> = Object.entries({
  ...Object.fromEntries(Object.entries(sessionScripts).map(([name, script]) => [`session ${name}`, script])),
  ...Object.fromEntries(Object.entries(budgetScripts).map(([name, script]) => [`budget ${name}`, script])),
  ...Object.fromEntries(
    Object.entries(learnedLimitScripts).map(([name, script]) => [`learned ${name}`, script]),
  ),
});

/** The KEYS[n] a script names with a literal index. */
const literalKeyIndices = (lua: string): number[] =>
  [...lua.matchAll(/KEYS\[(\d+)\]/g)].map((match) => Number(match[1]));

describe('the Redis stores’ Lua scripts', () => {
  let server: RunningRedis;
  let redis: RedisConnection;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = createRedisConnection({ mode: 'standalone', url: server.url });
    // The connection fails fast rather than queueing (redis-client.ts): commands wait until it is up.
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it.each(all)('%s compiles on redis-server', async (_name, script) => {
    const sha = await redis.script('LOAD', script.lua);
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
  });

  it.each(all)('%s reads no key it was not given', (_name, script) => {
    // Key names are built by the stores and passed in; a script never spells one.
    expect(script.lua).not.toMatch(/ctxgate:/);
    const indices = literalKeyIndices(script.lua);
    if (script.numberOfKeys === undefined) {
      // Variadic: the caller says how many; the script walks them with #KEYS.
      expect(script.lua).toMatch(/#KEYS/);
      return;
    }
    expect(Math.max(0, ...indices)).toBeLessThanOrEqual(script.numberOfKeys);
    // A declared key the script never reads would be an argument passed in the wrong place.
    for (let index = 1; index <= script.numberOfKeys; index++) expect(indices).toContain(index);
  });

  it('gives every script a command name of its own', () => {
    const names = all.map(([, script]) => script.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('runs a defined script with its keys first, then its arguments', async () => {
    const { release, renew } = defineScripts(redis, sessionScripts);
    await redis.set('hold-a', 'token-1');
    expect(await renew('hold-a', 'token-1', 60_000)).toBe(1);
    expect(await redis.pttl('hold-a')).toBeGreaterThan(50_000);
    expect(await release('hold-a', 'token-2')).toBe(0);
    expect(await redis.get('hold-a')).toBe('token-1');
    expect(await release('hold-a', 'token-1')).toBe(1);
    expect(await redis.exists('hold-a')).toBe(0);
    // Variadic: the number of keys comes first.
    const budget = defineScripts(redis, budgetScripts);
    await redis.hset('counter-a', 'r:res-1', '10:0', 'used', '5');
    await redis.hset('counter-b', 'r:res-1', '10:0');
    expect(await budget.release(2, 'counter-a', 'counter-b', 'res-1')).toBe(1);
    expect(await redis.hgetall('counter-a')).toEqual({ used: '5' });
    expect(await redis.exists('counter-b')).toBe(0);
  });
});
