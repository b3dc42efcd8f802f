// End to end: one hard daily budget shared by two gateway processes (the real main.ts) on one Redis,
// spent by eight concurrent openai clients. Together they never pass the limit by more than one
// request's tokens, and the count equals the usage the upstream reported to the clients exactly.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { gatewayKeyTenantId, sha256 } from '../../src/config/tenant-id.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const clientKey = 'gk-concurrency-client';
const adminKey = 'admin-concurrency-key';
const limit = 20_000;

let fake: FakeUpstream;
const gateways: ServerProcess[] = [];

beforeAll(async () => {
  fake = new FakeUpstream({ recordLimit: 1_000 });
  // A little latency so that requests of different clients overlap in flight.
  fake.setDefault({ content: 'A short answer.', delayBeforeHeadersMs: 100 });
  const upstreamUrl = await fake.start();
  const configPath = writeConfigFile(
    `budgets:\n  defaults:\n    credential_daily_tokens: { limit: ${limit}, mode: hard }\n`,
  );
  for (let index = 0; index < 2; index++) {
    gateways.push(
      await startServerProcess([process.execPath, '--import', 'tsx', 'src/main.ts'], {
        UPSTREAM_BASE_URL: upstreamUrl,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        REDIS_URL: inject('redisUrl'),
        REDIS_CLUSTER_NODES: '',
        REDIS_SENTINELS: '',
        GATEWAY_API_KEYS: clientKey,
        ADMIN_API_KEY: adminKey,
        CTXGATE_CONFIG: configPath,
      }),
    );
  }
}, 60_000);

afterAll(async () => {
  for (const gateway of gateways) await gateway.stop();
  await fake.stop();
});

describe('a hard budget under concurrency', () => {
  it('is never overshot by more than one request across two gateway processes and eight clients', async () => {
    const tenantId = gatewayKeyTenantId(sha256(clientKey));
    // Start from zero: the shared redis-server may hold this tenant's count from an earlier run today.
    await fetch(`${gateways[0]?.url}/admin/budgets/credentials/${tenantId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${adminKey}` },
    });
    const served: number[] = [];
    const prompt = 'Please summarize the quarterly numbers for the northern region. '.repeat(12);
    const clientLoop = async (clientIndex: number): Promise<void> => {
      for (let attempt = 0; attempt < 400; attempt++) {
        const gateway = gateways[(clientIndex + attempt) % 2] as ServerProcess;
        const client = new OpenAI({ baseURL: gateway.url, apiKey: clientKey, maxRetries: 0 });
        try {
          const completion = await client.chat.completions.create({
            model: 'gpt-4o-mini',
            messages: [{ role: 'user', content: `${prompt} Client ${clientIndex}, attempt ${attempt}.` }],
            max_tokens: 60,
          });
          served.push(completion.usage?.total_tokens ?? Number.NaN);
        } catch (error) {
          if (!(error instanceof OpenAI.APIError) || error.status !== 429) throw error;
          expect(error.code).toBe('budget_exceeded');
          // Refused with the budget used up: this client is done. Refused while others' reservations
          // fill the budget: they may still settle below it, so try again.
          if (
            /exceeded: (\d+) of/.exec(error.message)?.[1] !== undefined &&
            Number(/exceeded: (\d+) of/.exec(error.message)?.[1]) >= limit
          )
            return;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
      throw new Error(`client ${clientIndex} was never refused`);
    };
    await Promise.all(Array.from({ length: 8 }, (_unused, index) => clientLoop(index)));

    const total = served.reduce((sum, tokens) => sum + tokens, 0);
    const largest = Math.max(...served);
    expect(served.length).toBeGreaterThan(50);
    expect(total).toBeGreaterThanOrEqual(limit);
    expect(total - limit).toBeLessThanOrEqual(largest);
    // Every replica counted what the upstream reported, once: the shared count is exact.
    // Each answer is counted as it is settled, which may follow the reply by a moment: asked until settled.
    const read = async () =>
      (
        (await (
          await fetch(`${gateways[1]?.url}/admin/budgets/credentials/${tenantId}`, {
            headers: { authorization: `Bearer ${adminKey}` },
          })
        ).json()) as { budgets: Array<{ used: number; reserved: number; estimated: number }> }
      ).budgets[0];
    await expect.poll(read).toMatchObject({ used: total, reserved: 0, estimated: 0 });
  }, 120_000);
});
