// A forwarded call, decided before and after it is sent: a spelling of one of the gateway's own
// endpoints refused (never forwarded), a provider-state endpoint refused under the shared upstream key,
// a JSON body's model routing it and naming it in the outcome, a used-up hard budget refusing it before
// it is sent, and a success charged with the usage it reports while a refusal costs nothing. A scripted
// upstream at the port; the real budget service on its in-memory store.
import { Readable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createBudgetService } from '../../src/budget/budget-service.js';
import { createForwarder } from '../../src/chat/forward-request.js';
import { createPassthroughService } from '../../src/chat/passthrough-service.js';
import { outcomeOf } from '../../src/chat/request-outcome.js';
import { loadConfig } from '../../src/config/load-config.js';
import { isGatewayError } from '../../src/errors.js';
import { createMetrics } from '../../src/metrics.js';
import { createMemoryBudgetStore } from '../../src/store/memory-budget-store.js';
import type { UpstreamMethod } from '../../src/upstream/upstream.js';
import { recordingClient, scriptedUpstream, type ScriptedAnswer } from '../helpers/port-fakes.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const credential = { mode: 'gateway_key' as const, tenantId: 'acme', mayHoldSessions: true };

function setup(script: ScriptedAnswer[], dailyTokens = 1_000) {
  const config = loadConfig({
    env: {
      UPSTREAM_BASE_URL: 'http://primary.invalid/v1',
      UPSTREAM_API_KEY: 'sk-operator',
      GATEWAY_API_KEYS: 'gw-acme',
      EMBEDDER_KEY: 'sk-embedder',
      CTXGATE_CONFIG: writeConfigFile(
        [
          'upstreams:',
          '  - { name: embedder, base_url: "http://embedder.invalid/v1", models: ["text-embedding-*"], api_key_env: EMBEDDER_KEY }',
          'budgets:',
          '  defaults:',
          `    credential_daily_tokens: { limit: ${dailyTokens}, mode: hard }`,
          '',
        ].join('\n'),
      ),
    },
  });
  const metrics = createMetrics({ collectProcessMetrics: false });
  const upstream = scriptedUpstream(script);
  const passthrough = createPassthroughService({
    config,
    forwarder: createForwarder({ upstream, metrics, now: () => 0 }),
    budgets: createBudgetService({
      config,
      store: createMemoryBudgetStore(),
      metrics,
      logger: pino({ level: 'silent' }),
    }),
    sleep: async () => undefined,
  });
  const call = async (method: UpstreamMethod, target: string, body?: unknown) => {
    const bytes = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const client = recordingClient();
    const outcome = await passthrough
      .forward(
        {
          method,
          target,
          headers:
            bytes === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': String(bytes.length) },
          body: bytes === undefined ? undefined : Readable.from([bytes]),
          credential,
        },
        client,
      )
      .catch((error: unknown) => ({ error }));
    return { outcome, client };
  };
  return { call, upstream };
}

const codeOf = (result: unknown): string | undefined => {
  const error = (result as { error?: unknown }).error;
  return isGatewayError(error) ? error.code : undefined;
};

const embedded = (tokens: number): ScriptedAnswer => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  chunks: [JSON.stringify({ data: [], usage: { prompt_tokens: tokens, total_tokens: tokens } })],
});

describe('the pass-through service', () => {
  it.each<[string, UpstreamMethod, string, string]>([
    ["a spelling of the gateway's own chat endpoint", 'POST', '/v1/Chat/Completions', 'not_found'],
    ['an encoded one', 'POST', '/v1/chat%2Fcompletions', 'not_found'],
    ['a path outside /v1', 'GET', '/v2/models', 'not_found'],
    ["the provider's files under the shared key", 'GET', '/v1/files', 'provider_state_not_shared'],
    ['a batch under the shared key', 'POST', '/v1/batches', 'provider_state_not_shared'],
  ])('refuses %s before anything is sent', async (_name, method, target, code) => {
    const { call, upstream } = setup([]);
    const { outcome } = await call(method, target, method === 'POST' ? { input: 'x' } : undefined);
    expect(codeOf(outcome)).toBe(code);
    expect(upstream.sent).toHaveLength(0);
  });

  it("routes a JSON body by its model, names the model in the outcome, and sends that upstream's key", async () => {
    const { call, upstream } = setup([embedded(12)]);
    const { outcome, client } = await call('POST', '/v1/embeddings', {
      model: 'text-embedding-3-small',
      input: 'hi',
    });
    expect(outcome).toMatchObject({
      model: 'text-embedding-3-small',
      upstream: { name: 'embedder', status: 200 },
    });
    expect(upstream.sent[0]?.path).toBe('/embeddings');
    expect(upstream.sent[0]?.headers.authorization).toBe('Bearer sk-embedder');
    expect(JSON.parse(String(upstream.sent[0]?.body))).toEqual({
      model: 'text-embedding-3-small',
      input: 'hi',
    });
    expect(client.received).toContain('"total_tokens":12');
  });

  it('charges a success with the usage it reports and a refusal nothing: the hard budget refuses once used up', async () => {
    const refusal: ScriptedAnswer = { status: 400, chunks: ['{"error":{"message":"bad input"}}'] };
    const { call, upstream } = setup([refusal, refusal, embedded(60), embedded(60)], 100);
    const body = { model: 'text-embedding-3-small', input: 'hi' };
    // Two refusals: nothing charged.
    for (let index = 0; index < 2; index++)
      expect((await call('POST', '/v1/embeddings', body)).client.statuses).toEqual([400]);
    // 60 of 100, then 120 of 100: the next call is refused before it is sent.
    expect((await call('POST', '/v1/embeddings', body)).client.statuses).toEqual([200]);
    expect((await call('POST', '/v1/embeddings', body)).client.statuses).toEqual([200]);
    const refused = await call('POST', '/v1/embeddings', body);
    expect(codeOf(refused.outcome)).toBe('budget_exceeded');
    expect(outcomeOf((refused.outcome as { error: unknown }).error).model).toBe('text-embedding-3-small');
    expect(upstream.sent).toHaveLength(4);
  });
});
