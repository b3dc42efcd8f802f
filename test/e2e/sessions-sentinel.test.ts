// End to end: sessions on Redis found through Sentinel (REDIS_SENTINELS), through a failover to the
// replica: the conversation carries on without losing or duplicating a message.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { redisCli, startRedisSentinel, type RunningSentinel } from '../helpers/redis-sentinel.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
let sentinel: RunningSentinel;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream();
  const upstreamUrl = await fake.start();
  sentinel = await startRedisSentinel();
  harness = await startGateway({
    env: {
      UPSTREAM_BASE_URL: upstreamUrl,
      REDIS_SENTINELS: `127.0.0.1:${sentinel.sentinelPort}`,
      REDIS_SENTINEL_MASTER: sentinel.masterName,
    },
  });
  await waitUntilReady(harness);
}, 60_000);

afterAll(async () => {
  await harness?.close();
  await sentinel?.stop();
  await fake?.stop();
});

describe('sessions through Redis Sentinel', () => {
  it('stores sessions on the master the Sentinel names, and carries on after a failover', async () => {
    const sessionId = `sentinel-${randomUUID()}`;
    const client = new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: 'sk-sentinel',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': sessionId },
    });
    fake.enqueue({ content: 'first answer' });
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'first question' }],
    });
    expect(redisCli(sentinel.master.port, '--scan', '--pattern', `ctxgate:*${sessionId}*`)).toContain(
      sessionId,
    );
    // Let the replica catch up, then fail over to it.
    expect(redisCli(sentinel.master.port, 'WAIT', '1', '5000')).toBe('1');
    await sentinel.failover();

    // While clients learn the new master a request may get 503 (nothing stored), or 409 session_busy
    // while a hold taken as the connection broke is given back; the client retries both.
    fake.enqueue({ content: 'second answer' });
    let answered = false;
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 100 && !answered; attempt++) {
      const outcome = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'second question' }] })
        .then(() => true)
        .catch((error: unknown) => {
          if (!(error instanceof OpenAI.APIError) || (error.status !== 503 && error.code !== 'session_busy'))
            throw error;

          statuses.push(error.status);
          return false;
        });
      answered = outcome;
      if (!answered) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(answered).toBe(true);
    // The second request upstream carried the first turn, read from the new master.
    expect((fake.chatRequests.at(-1)?.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'second question' },
    ]);
    const history = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}/history`, {
        headers: { authorization: 'Bearer sk-sentinel' },
      })
    ).json()) as { data: Array<{ role: string; content: string }> };
    expect(history.data.map(({ role, content }) => `${role}: ${content}`)).toEqual([
      'user: first question',
      'assistant: first answer',
      'user: second question',
      'assistant: second answer',
    ]);
    expect(redisCli(sentinel.replica.port, 'ROLE').split('\n')[0]).toBe('master');
  });
});
