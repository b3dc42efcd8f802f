// The budget service (docs/budgets.md) against the in-process store, as a table: which limit applies
// (defaults, a credential's entry, a preset that tightens, X-Budget-Session-Tokens that only lowers), a
// used-up hard budget refused before anything is spent, a soft one warned about, reservations released
// or settled by what the answer cost, and background work refused once a hard budget is spent.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createBudgetService } from '../../src/budget/budget-service.js';
import { loadConfig } from '../../src/config/load-config.js';
import { isGatewayError } from '../../src/errors.js';
import { createMetrics } from '../../src/metrics.js';
import { createMemoryBudgetStore } from '../../src/store/memory-budget-store.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const config = loadConfig({
  env: {
    CTXGATE_CONFIG: writeConfigFile(
      [
        'budgets:',
        '  defaults:',
        '    session_tokens: { limit: 1000, mode: hard }',
        '    credential_daily_tokens: { limit: 5000, mode: soft }',
        'policies:',
        '  cheap:',
        '    budgets:',
        '      session_tokens: { limit: 300, mode: hard }',
        '      max_request_tokens: { limit: 200, mode: hard }',
        '',
      ].join('\n'),
    ),
  },
});

function service() {
  return createBudgetService({
    config,
    store: createMemoryBudgetStore(),
    metrics: createMetrics({ collectProcessMetrics: false }),
    logger: pino({ level: 'silent' }),
  });
}

async function refusal(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return isGatewayError(error) ? error.code : String(error);
  }
}

describe('which budgets a request has', () => {
  it.each([
    ['the defaults', {}, { session_tokens: 1_000, credential_daily_tokens: 5_000 }],
    [
      'a preset that tightens',
      { policyName: 'cheap' },
      { session_tokens: 300, credential_daily_tokens: 5_000 },
    ],
    [
      'X-Budget-Session-Tokens lowering it',
      { sessionTokens: 400 },
      { session_tokens: 400, credential_daily_tokens: 5_000 },
    ],
    [
      'X-Budget-Session-Tokens never raising it',
      { sessionTokens: 4_000 },
      { session_tokens: 1_000, credential_daily_tokens: 5_000 },
    ],
  ] as const)('%s', (_name, extra, limits) => {
    const plan = service().plan({ tenantId: 't', sessionId: 's', ...extra });
    const applied = Object.fromEntries(plan?.counted.map((budget) => [budget.name, budget.limit]) ?? []);
    expect(applied).toEqual(limits);
  });

  it('has no session budget without a session', () => {
    const plan = service().plan({ tenantId: 't', sessionId: undefined });
    expect(plan?.counted.map((budget) => budget.name)).toEqual(['credential_daily_tokens']);
  });
});

describe('spending', () => {
  it('settles what the answer cost, and refuses the next request once a hard budget is spent', async () => {
    const budgets = service();
    const plan = budgets.plan({ tenantId: 't1', sessionId: 's1' }) as NonNullable<
      ReturnType<typeof budgets.plan>
    >;
    const admitted = await budgets.admit(plan);
    const reservation = await budgets.reserve(admitted.plan, {
      promptTokens: 100,
      maxOutputTokens: 50,
      backpressure: false,
    });
    await reservation.settle({ tokens: 1_200, estimated: false });
    const [session] = await budgets.usage({ tenantId: 't1', names: ['session_tokens'], sessionId: 's1' });
    expect(session?.used).toBe(1_200);
    expect(await refusal(budgets.admit(plan))).toBe('budget_exceeded');
    expect(await budgets.allowsBackgroundWork({ tenantId: 't1', sessionId: 's1' })).toBe(false);
    // Another session of the credential still has its own budget.
    expect(await budgets.allowsBackgroundWork({ tenantId: 't1', sessionId: 's2' })).toBe(true);
  });

  it('counts nothing for a released reservation', async () => {
    const budgets = service();
    const plan = budgets.plan({ tenantId: 't2', sessionId: 's' }) as NonNullable<
      ReturnType<typeof budgets.plan>
    >;
    const reservation = await budgets.reserve((await budgets.admit(plan)).plan, {
      promptTokens: 900,
      maxOutputTokens: 50,
      backpressure: false,
    });
    await reservation.release();
    const [session] = await budgets.usage({ tenantId: 't2', names: ['session_tokens'], sessionId: 's' });
    expect(session?.used).toBe(0);
  });

  it('refuses a request over max_request_tokens before reserving anything', async () => {
    const budgets = service();
    const plan = budgets.plan({ tenantId: 't3', sessionId: 's', policyName: 'cheap' }) as NonNullable<
      ReturnType<typeof budgets.plan>
    >;
    expect(
      await refusal(budgets.reserve(plan, { promptTokens: 250, maxOutputTokens: 0, backpressure: false })),
    ).toBe('budget_exceeded');
  });

  it('warns, and does not refuse, past a soft budget', async () => {
    const budgets = service();
    await budgets.charge({ tenantId: 't4', sessionId: 'a' }, { tokens: 900, estimated: false });
    for (const sessionId of ['b', 'c', 'd', 'e', 'f'])
      await budgets.charge({ tenantId: 't4', sessionId }, { tokens: 900, estimated: false });
    const plan = budgets.plan({ tenantId: 't4', sessionId: 'g' }) as NonNullable<
      ReturnType<typeof budgets.plan>
    >;
    const admitted = await budgets.admit(plan);
    const reservation = await budgets.reserve(admitted.plan, {
      promptTokens: 10,
      maxOutputTokens: 10,
      backpressure: false,
    });
    expect(JSON.stringify({ ...admitted.headers, ...reservation.headers })).toMatch(
      /credential_daily_tokens/,
    );
  });
});
