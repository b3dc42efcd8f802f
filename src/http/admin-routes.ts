// The admin endpoints (SPEC §12): read and reset token budget usage, behind their own key
// (ADMIN_API_KEY). Without an admin key configured they do not exist (404); a client key never opens them.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { budgetPeriod, resolveBudgets, type CounterBudgetName } from '../budget/budget-rules.js';
import { ownEntry, type GatewayConfig } from '../config/gateway-config.js';
import { sha256 } from '../config/tenant-id.js';
import { GatewayError } from '../errors.js';
import { budgetCounter, type BudgetCounter, type BudgetStore } from '../store/budget-store.js';
import { presentedKey } from '../auth/authenticate.js';
import { sessionIdPattern } from '../sessions/session-keys.js';

const tenantPattern = /^[A-Za-z0-9._:-]{1,128}$/;
const credentialBudgets: readonly CounterBudgetName[] = [
  'credential_daily_tokens',
  'credential_monthly_tokens',
];

export function registerAdminRoutes(
  app: FastifyInstance,
  deps: { config: GatewayConfig; budgetStore: BudgetStore; clock?: () => number },
): void {
  const { config, budgetStore } = deps;
  const clock = deps.clock ?? Date.now;
  const adminDigests = config.adminApiKeys.map(sha256);

  function authorize(request: FastifyRequest): void {
    if (adminDigests.length === 0)
      throw new GatewayError(
        'not_found',
        `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`,
      );
    const authorization = request.headers.authorization;
    if (authorization === undefined || authorization.trim() === '')
      throw new GatewayError(
        'missing_api_key',
        'The admin endpoints need the admin key: Authorization: Bearer ADMIN_KEY.',
      );
    if (presentedKey(adminDigests, authorization) === undefined)
      throw new GatewayError('invalid_api_key', 'Incorrect admin key provided.');
  }

  function tenantOf(value: string): string {
    if (!tenantPattern.test(value))
      throw new GatewayError('invalid_request', 'Invalid tenant id.', { param: 'tenant' });
    return value;
  }

  function sessionOf(params: { tenant: string; session: string }): { tenantId: string; sessionId: string } {
    if (!sessionIdPattern.test(params.session))
      throw new GatewayError('invalid_request', 'Invalid session id.', { param: 'session' });
    return { tenantId: tenantOf(params.tenant), sessionId: params.session };
  }

  const counterOf = (name: CounterBudgetName, tenantId: string, sessionId?: string): BudgetCounter =>
    budgetCounter({
      name,
      tenantId,
      sessionId,
      nowMs: clock(),
      sessionTtlSeconds: config.sessions.ttl_seconds,
    });

  async function describe(tenantId: string, names: readonly CounterBudgetName[], sessionId?: string) {
    const limits = resolveBudgets({
      defaults: config.budgets.defaults,
      credential: ownEntry(config.budgets.credentials, tenantId),
      preset: undefined,
      sessionTokensHeader: undefined,
      sessionMode: sessionId !== undefined,
    });
    const counters = names.map((name) => counterOf(name, tenantId, sessionId));
    const usage = await budgetStore.read(counters, clock());
    return names.map((name, index) => {
      const budget = limits.find((candidate) => candidate.name === name);
      const entry = usage[index] ?? { used: 0, estimated: 0, reserved: 0 };
      const resetsAtMs = budgetPeriod(name, clock()).resetsAtMs;
      return {
        budget: name,
        period: counters[index]?.periodId,
        mode: budget?.mode ?? 'off',
        limit: budget?.limit ?? null,
        used: entry.used,
        estimated: entry.estimated,
        reserved: entry.reserved,
        remaining: budget === undefined ? null : Math.max(0, budget.limit - entry.used - entry.reserved),
        resets_at: resetsAtMs === undefined ? null : new Date(resetsAtMs).toISOString(),
      };
    });
  }

  function chosenBudgets(query: { budget?: string }): readonly CounterBudgetName[] {
    if (query.budget === undefined) return credentialBudgets;
    const match = credentialBudgets.find((name) => name === query.budget);
    if (match === undefined) {
      throw new GatewayError(
        'invalid_request',
        `Unknown budget "${query.budget}"; expected ${credentialBudgets.join(' or ')}.`,
        { param: 'budget' },
      );
    }
    return [match];
  }

  const unavailable = (error: unknown): never => {
    throw new GatewayError('session_store_unavailable', 'The budget store is unavailable; retry shortly.', {
      cause: error,
    });
  };

  // `app` is the admin routes' own scope: the check runs for every route registered here, and for
  // no other request.
  app.addHook('onRequest', async (request) => authorize(request));

  app.get<{ Params: { tenant: string } }>('/v1/admin/budgets/credentials/:tenant', async (request) => {
    const tenantId = tenantOf(request.params.tenant);
    return {
      object: 'budget.usage',
      tenant: tenantId,
      budgets: await describe(tenantId, credentialBudgets).catch(unavailable),
    };
  });

  app.delete<{ Params: { tenant: string }; Querystring: { budget?: string } }>(
    '/v1/admin/budgets/credentials/:tenant',
    async (request) => {
      const tenantId = tenantOf(request.params.tenant);
      const names = chosenBudgets(request.query);
      for (const name of names) await budgetStore.reset(counterOf(name, tenantId)).catch(unavailable);
      return { object: 'budget.reset', tenant: tenantId, reset: names };
    },
  );

  app.get<{ Params: { tenant: string; session: string } }>(
    '/v1/admin/budgets/sessions/:tenant/:session',
    async (request) => {
      const { tenantId, sessionId } = sessionOf(request.params);
      return {
        object: 'budget.usage',
        tenant: tenantId,
        session: sessionId,
        budgets: await describe(tenantId, ['session_tokens'], sessionId).catch(unavailable),
      };
    },
  );

  app.delete<{ Params: { tenant: string; session: string } }>(
    '/v1/admin/budgets/sessions/:tenant/:session',
    async (request) => {
      const { tenantId, sessionId } = sessionOf(request.params);
      await budgetStore.reset(counterOf('session_tokens', tenantId, sessionId)).catch(unavailable);
      return { object: 'budget.reset', tenant: tenantId, session: sessionId, reset: ['session_tokens'] };
    },
  );
}
