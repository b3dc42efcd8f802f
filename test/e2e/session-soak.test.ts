// Soak (bounded): 50 sessions × 40 turns from 8 concurrent clients spread over 2 gateway processes on
// one redis-server with AOF (everysec), restarted twice during the run. Clients retry what the gateway
// refuses (503 while Redis is away, 409 while a session is held). Afterwards every session is read back
// and compared with what the clients were answered: nothing lost, nothing duplicated.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { findFreePort, startRedisServer, type RunningRedis } from '../helpers/redis-server.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

const sessions = 50;
const turns = 40;
const workers = 8;
const aof = ['--appendonly', 'yes', '--appendfsync', 'everysec'];

let fake: FakeUpstream;
let redis: RunningRedis;
let redisPort: number;
let directory: string;
const gateways: GatewayHarness[] = [];

beforeAll(async () => {
  fake = new FakeUpstream({ tokenCounting: 'approximate', recordLimit: 10 });
  const upstreamUrl = await fake.start();
  redisPort = await findFreePort();
  directory = mkdtempSync(join(tmpdir(), 'ctxgate-soak-'));
  redis = await startRedisServer(aof, redisPort, directory);
  for (let index = 0; index < 2; index++) {
    gateways.push(
      await startGateway({
        env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: redis.url, LOG_LEVEL: 'warn' },
      }),
    );
  }
});

afterAll(async () => {
  for (const gateway of gateways) await gateway.close();
  await redis.stop();
  await fake.stop();
  rmSync(directory, { recursive: true, force: true });
});

describe('session soak', () => {
  it('loses and duplicates nothing across two Redis restarts', async () => {
    const answered = new Map<string, string[]>();
    let completed = 0;
    let retries = 0;
    const restarts: Promise<void>[] = [];
    const restartAt = new Set([Math.floor((sessions * turns) / 3), Math.floor((2 * sessions * turns) / 3)]);

    const send = async (sessionId: string, turn: number): Promise<void> => {
      const gateway = gateways[turn % gateways.length] as GatewayHarness;
      const client = new OpenAI({
        baseURL: gateway.baseUrl,
        apiKey: 'sk-soak',
        maxRetries: 0,
        timeout: 10_000,
        defaultHeaders: { 'x-session-id': sessionId },
      });
      for (let attempt = 0; ; attempt++) {
        try {
          const completion = await client.chat.completions.create({
            model: 'gpt-4o-mini',
            messages: [{ role: 'user', content: `${sessionId} turn ${turn}` }],
          });
          answered
            .get(sessionId)
            ?.push(`${sessionId} turn ${turn}`, completion.choices[0]?.message.content ?? '');
          return;
        } catch (error) {
          const status = (error as { status?: number }).status;
          if (attempt > 200 || (status !== 503 && status !== 409)) throw error;
          retries++;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };

    const ids = Array.from({ length: sessions }, (_unused, index) => `soak-${index}`);
    for (const id of ids) answered.set(id, []);
    await Promise.all(
      Array.from({ length: workers }, async (_unused, worker) => {
        const mine = ids.filter((_id, index) => index % workers === worker);
        for (let turn = 0; turn < turns; turn++) {
          for (const id of mine) {
            await send(id, turn);
            completed++;
            if (restartAt.has(completed)) {
              restartAt.delete(completed);
              restarts.push(
                (async () => {
                  await redis.stop();
                  await new Promise((resolve) => setTimeout(resolve, 300));
                  redis = await startRedisServer(aof, redisPort, directory);
                })(),
              );
            }
          }
        }
      }),
    );
    await Promise.all(restarts);

    let lost = 0;
    let duplicated = 0;
    for (const id of ids) {
      const response = await fetch(`${gateways[0]?.baseUrl}/sessions/${id}/history?limit=1000`, {
        headers: { authorization: 'Bearer sk-soak' },
      });
      const stored = ((await response.json()) as { data: Array<{ content: string }> }).data.map(
        (message) => message.content,
      );
      const expected = answered.get(id) ?? [];
      lost += expected.filter((content) => !stored.includes(content)).length;
      duplicated += stored.length - new Set(stored).size;
      expect(stored).toEqual(expected);
    }
    console.log(
      `soak: ${sessions} sessions × ${turns} turns, ${workers} clients, 2 gateways, 2 Redis restarts: ${completed} turns, ${retries} retries, ${lost} lost, ${duplicated} duplicated`,
    );
    expect(completed).toBe(sessions * turns);
    expect(lost).toBe(0);
    expect(duplicated).toBe(0);
  }, 240_000);
});
