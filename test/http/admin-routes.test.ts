// The admin endpoints through app.inject(), over the real budget service and learned limits in process:
// who may call them (only the admin key; without one configured they do not exist), budget usage read
// and reset per credential and per session, what was learned listed and forgotten, and the refusals of
// malformed ids — each in the gateway's error shape.
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBudgetService, type BudgetService } from '../../src/budget/budget-service.js';
import { loadConfig } from '../../src/config/load-config.js';
import { registerAdminRoutes } from '../../src/http/admin-routes.js';
import { createMetrics } from '../../src/metrics.js';
import { createMemoryBudgetStore } from '../../src/store/memory-budget-store.js';
import { createMemoryLearnedLimits, type LearnedLimits } from '../../src/store/learned-limits.js';
import { pluginApp } from '../helpers/plugin-app.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const budgetsYaml = [
  'budgets:',
  '  defaults:',
  '    session_tokens: { limit: 1000, mode: hard }',
  '    credential_daily_tokens: { limit: 5000, mode: soft }',
  '',
].join('\n');

interface AdminApp {
  app: FastifyInstance;
  budgets: BudgetService;
  learned: LearnedLimits;
}

async function adminApp(env: Record<string, string>): Promise<AdminApp> {
  const config = loadConfig({ env: { ...env, CTXGATE_CONFIG: writeConfigFile(budgetsYaml) } });
  const budgets = createBudgetService({
    config,
    store: createMemoryBudgetStore(),
    metrics: createMetrics({ collectProcessMetrics: false }),
    logger: pino({ level: 'silent' }),
  });
  const learned = createMemoryLearnedLimits({
    settings: { windowTtlMs: 86_400_000, reprobeAfterMs: 3_600_000 },
    maxEntries: 100,
  });
  const { app } = pluginApp((scope) => registerAdminRoutes(scope, { config, budgets, learned }));
  await app.ready();
  return { app, budgets, learned };
}

const admin = { authorization: 'Bearer admin-key' };

describe('the admin endpoints without an admin key configured', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    ({ app } = await adminApp({ GATEWAY_API_KEYS: 'client-key' }));
  });
  afterAll(() => app.close());

  it.each<[string, string]>([
    ['GET', '/v1/admin/learned'],
    ['GET', '/v1/admin/budgets/credentials/acme'],
    ['DELETE', '/v1/admin/budgets/sessions/acme/s1'],
  ])('do not exist: %s %s is 404 whatever key is sent', async (method, url) => {
    for (const headers of [{}, admin, { authorization: 'Bearer client-key' }]) {
      const response = await app.inject({ method: method as 'GET' | 'DELETE', url, headers });
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('not_found');
    }
  });
});

describe('the admin endpoints', () => {
  let app: FastifyInstance;
  let budgets: BudgetService;
  let learned: LearnedLimits;
  beforeAll(async () => {
    ({ app, budgets, learned } = await adminApp({
      GATEWAY_API_KEYS: 'client-key',
      ADMIN_API_KEY: 'admin-key',
    }));
  });
  afterAll(() => app.close());

  const get = (url: string, headers: Record<string, string> = admin) =>
    app.inject({ method: 'GET', url, headers });
  const del = (url: string, headers: Record<string, string> = admin) =>
    app.inject({ method: 'DELETE', url, headers });

  it.each<[string, Record<string, string>, number, string]>([
    ['no key', {}, 401, 'missing_api_key'],
    ['an empty key', { authorization: '   ' }, 401, 'missing_api_key'],
    ['a client key', { authorization: 'Bearer client-key' }, 401, 'invalid_api_key'],
    ['a wrong key', { authorization: 'Bearer admin-kez' }, 401, 'invalid_api_key'],
  ])('refuse %s', async (_name, headers, status, code) => {
    for (const url of ['/v1/admin/learned', '/v1/admin/budgets/credentials/acme']) {
      const response = await get(url, headers);
      expect(response.statusCode).toBe(status);
      expect(response.json().error.code).toBe(code);
    }
  });

  it("report a credential's usage and set it back to zero", async () => {
    await budgets.charge({ tenantId: 'acme', sessionId: 's1' }, { tokens: 300, estimated: false });
    await budgets.charge({ tenantId: 'acme', sessionId: 's2' }, { tokens: 200, estimated: true });
    const usage = await get('/v1/admin/budgets/credentials/acme');
    expect(usage.statusCode).toBe(200);
    const daily = usage
      .json()
      .budgets.find((entry: { budget: string }) => entry.budget === 'credential_daily_tokens');
    expect(usage.json()).toMatchObject({ object: 'budget.usage', tenant: 'acme' });
    expect(daily).toMatchObject({ mode: 'soft', limit: 5000, used: 500, estimated: 200, remaining: 4500 });

    const reset = await del('/v1/admin/budgets/credentials/acme?budget=credential_daily_tokens');
    expect(reset.json()).toEqual({
      object: 'budget.reset',
      tenant: 'acme',
      reset: ['credential_daily_tokens'],
    });
    const after = await get('/v1/admin/budgets/credentials/acme');
    const dailyAfter = after
      .json()
      .budgets.find((entry: { budget: string }) => entry.budget === 'credential_daily_tokens');
    expect(dailyAfter).toMatchObject({ used: 0, remaining: 5000 });
  });

  it("report a session's usage and reset it, leaving the credential's and other sessions' alone", async () => {
    await budgets.charge({ tenantId: 'beta', sessionId: 'one' }, { tokens: 400, estimated: false });
    await budgets.charge({ tenantId: 'beta', sessionId: 'two' }, { tokens: 100, estimated: false });
    const one = await get('/v1/admin/budgets/sessions/beta/one');
    expect(one.json()).toMatchObject({ object: 'budget.usage', tenant: 'beta', session: 'one' });
    expect(one.json().budgets).toEqual([
      expect.objectContaining({
        budget: 'session_tokens',
        mode: 'hard',
        limit: 1000,
        used: 400,
        remaining: 600,
      }),
    ]);

    const reset = await del('/v1/admin/budgets/sessions/beta/one');
    expect(reset.json()).toEqual({
      object: 'budget.reset',
      tenant: 'beta',
      session: 'one',
      reset: ['session_tokens'],
    });
    expect((await get('/v1/admin/budgets/sessions/beta/one')).json().budgets[0].used).toBe(0);
    expect((await get('/v1/admin/budgets/sessions/beta/two')).json().budgets[0].used).toBe(100);
    const credential = (await get('/v1/admin/budgets/credentials/beta')).json().budgets;
    expect(
      credential.find((entry: { budget: string }) => entry.budget === 'credential_daily_tokens').used,
    ).toBe(500);
  });

  it('reset both credential budgets when none is named', async () => {
    const reset = await del('/v1/admin/budgets/credentials/gamma');
    expect(reset.json().reset).toEqual(['credential_daily_tokens', 'credential_monthly_tokens']);
  });

  it.each<[string, 'GET' | 'DELETE', string, string]>([
    [
      'a tenant with a slash-free but illegal character',
      'GET',
      '/v1/admin/budgets/credentials/ac%20me',
      'tenant',
    ],
    ['a tenant over 128 characters', 'GET', `/v1/admin/budgets/credentials/${'t'.repeat(129)}`, 'tenant'],
    ['a session id with a space', 'GET', '/v1/admin/budgets/sessions/acme/a%20b', 'session'],
    [
      'a session id over 128 characters',
      'DELETE',
      `/v1/admin/budgets/sessions/acme/${'s'.repeat(129)}`,
      'session',
    ],
    ['an unknown budget', 'DELETE', '/v1/admin/budgets/credentials/acme?budget=session_tokens', 'budget'],
    ['a learned id over 2,000 characters', 'DELETE', `/v1/admin/learned?id=${'x'.repeat(2_001)}`, 'id'],
  ])('refuse %s with 400 naming the parameter', async (_name, method, url, param) => {
    const response = await app.inject({ method, url, headers: admin });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ code: 'invalid_request', param });
  });

  it('list what was learned, forget one entry by its id, and say 404 for an id it does not hold', async () => {
    learned.recordOverflow('default', 'small-model', 'acme', {
      stated: 4_000,
      failedSize: 4_500,
      status: 400,
      textClass: 'numbers',
    });
    learned.recordOverflow('default', 'other-model', 'acme', {
      stated: 6_000,
      failedSize: 6_500,
      status: 400,
      textClass: 'numbers',
    });
    const listed = (await get('/v1/admin/learned')).json();
    expect(listed.object).toBe('list');
    expect(listed.data.map((entry: { model: string }) => entry.model).sort()).toEqual([
      'other-model',
      'small-model',
    ]);
    const small = listed.data.find((entry: { model: string }) => entry.model === 'small-model');
    expect(small.evidence[0]).toMatchObject({ tenant: 'acme', stated: 4_000 });

    const forgotten = await del(`/v1/admin/learned?id=${encodeURIComponent(small.id)}`);
    expect(forgotten.json()).toEqual({ object: 'learned.reset', reset: 1 });
    expect(
      (await get('/v1/admin/learned')).json().data.map((entry: { model: string }) => entry.model),
    ).toEqual(['other-model']);

    const missing = await del(`/v1/admin/learned?id=${encodeURIComponent(small.id)}`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toMatchObject({ code: 'not_found', param: 'id' });

    const all = await del('/v1/admin/learned');
    expect(all.json()).toEqual({ object: 'learned.reset', reset: 1 });
    expect((await get('/v1/admin/learned')).json().data).toEqual([]);
  });
});
