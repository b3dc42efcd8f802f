// The admin endpoints (docs/budgets.md, docs/budgeting.md#what-the-gateway-learns): read and reset token
// budget usage, and what the gateway learned from its upstreams, behind their own key (ADMIN_API_KEY).
// Without an admin key configured they do not exist (404); a client key never opens them.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { CounterBudgetName } from '../budget/budget-rules.js';
import type { BudgetService } from '../budget/budget-service.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { sha256 } from '../config/tenant-id.js';
import { GatewayError } from '../errors.js';
import { presentedKey } from '../auth/authenticate.js';
import { sessionIdPattern } from '../sessions/session-keys.js';
import type { LearnedLimits } from '../store/learned-limits.js';

const tenantPattern = /^[A-Za-z0-9._:-]{1,128}$/;
const credentialBudgets: readonly CounterBudgetName[] = [
  'credential_daily_tokens',
  'credential_monthly_tokens',
];

export function registerAdminRoutes(
  app: FastifyInstance,
  deps: { config: GatewayConfig; budgets: BudgetService; learned: LearnedLimits },
): void {
  const { config, budgets, learned } = deps;
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
      budgets: await budgets.usage({ tenantId, names: credentialBudgets }).catch(unavailable),
    };
  });

  app.delete<{ Params: { tenant: string }; Querystring: { budget?: string } }>(
    '/v1/admin/budgets/credentials/:tenant',
    async (request) => {
      const tenantId = tenantOf(request.params.tenant);
      const names = chosenBudgets(request.query);
      for (const name of names) await budgets.reset({ tenantId, name }).catch(unavailable);
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
        budgets: await budgets.usage({ tenantId, names: ['session_tokens'], sessionId }).catch(unavailable),
      };
    },
  );

  app.delete<{ Params: { tenant: string; session: string } }>(
    '/v1/admin/budgets/sessions/:tenant/:session',
    async (request) => {
      const { tenantId, sessionId } = sessionOf(request.params);
      await budgets.reset({ tenantId, name: 'session_tokens', sessionId }).catch(unavailable);
      return { object: 'budget.reset', tenant: tenantId, session: sessionId, reset: ['session_tokens'] };
    },
  );

  // What the gateway learned: windows with their evidence, ratios, tool-set costs; one or all reset.
  app.get('/v1/admin/learned', async () => ({ object: 'list', data: learned.list() }));

  app.delete<{ Querystring: { id?: string } }>('/v1/admin/learned', async (request) => {
    const id = request.query.id;
    if (id !== undefined && (typeof id !== 'string' || id.length > 2_000))
      throw new GatewayError('invalid_request', 'Invalid entry id.', { param: 'id' });
    const reset = await learned.reset(id);
    if (id !== undefined && reset === 0)
      throw new GatewayError('not_found', `No learned entry '${id.slice(0, 200)}'.`, { param: 'id' });
    return { object: 'learned.reset', reset };
  });
}
