// Token budgets for the chat route (docs/budgets.md): resolves a request's budgets, refuses what a hard budget
// no longer allows (429 budget_exceeded) before anything is held or sent, delays requests as usage nears
// a limit (backpressure, before the session's hold is taken), reserves each request's expected cost so
// that concurrent requests on every replica together overshoot a hard budget by at most one request,
// and settles with the upstream's reported usage. When the budget store is unreachable, budgets are
// not enforced for that request (logged and counted): Redis trouble never stops stateless traffic.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ownEntry, type GatewayConfig } from '../config/gateway-config.js';
import { GatewayError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import {
  budgetCounter,
  type BudgetCounter,
  type BudgetStore,
  type CounterLimit,
  type CounterUsage,
} from '../store/budget-store.js';
import {
  backpressureDelayMs,
  budgetPeriod,
  resolveBudgets,
  type ActiveBudget,
  type CounterBudgetName,
} from './budget-rules.js';

export interface BudgetPlan {
  tenantId: string;
  /** Budgets counted in the store, with their counters (same order). */
  counted: ActiveBudget[];
  counters: BudgetCounter[];
  maxRequest: ActiveBudget | undefined;
  /** The store failed for this request: budgets are not enforced for it. */
  unavailable: boolean;
}

export interface BudgetReservation {
  /** Response headers (`X-Budget-Remaining`, `X-Budget-Warning`, `X-Budget-Delay-Ms`). */
  headers: Record<string, string>;
  /** Backpressure to wait before forwarding (only when asked for). */
  delayMs: number;
  /** Adds what the request cost and drops its reservation; never throws. */
  settle(usage: { tokens: number; estimated: boolean }): Promise<void>;
  /** Drops the reservation without counting anything (the request failed before any answer). */
  release(): Promise<void>;
}

/** One budget's usage as the admin endpoints report it (docs/budgets.md). */
export interface BudgetUsageReport {
  budget: CounterBudgetName;
  period: string | undefined;
  mode: 'hard' | 'soft' | 'off';
  limit: number | null;
  used: number;
  estimated: number;
  reserved: number;
  remaining: number | null;
  resets_at: string | null;
}

export interface BudgetService {
  /** The request's budgets; undefined when none applies (then budgets cost nothing). */
  plan(input: {
    tenantId: string;
    sessionId: string | undefined;
    /** The preset the request names (X-Context-Policy): its budgets apply. */
    policyName?: string | undefined;
    /** X-Budget-Session-Tokens: lowers the session budget. */
    sessionTokens?: number | undefined;
  }): BudgetPlan | undefined;
  /**
   * Work the gateway does for a session on its own (summarization): false when a hard budget of the
   * session or its credential is used up, so the work is not started.
   */
  allowsBackgroundWork(input: { tenantId: string; sessionId: string }): Promise<boolean>;
  /** Counts the tokens of such work against the session's and its credential's budgets. */
  charge(
    input: { tenantId: string; sessionId: string },
    usage: { tokens: number; estimated: boolean },
  ): Promise<void>;
  /**
   * Before the session hold: refuses a used-up hard budget; the backpressure delay to wait. The plan to
   * reserve with comes back: marked unavailable when the store failed, so the request is not enforced.
   */
  admit(plan: BudgetPlan): Promise<{ delayMs: number; headers: Record<string, string>; plan: BudgetPlan }>;
  /**
   * After rendering: checks max_request_tokens, then reserves the request's expected cost. With
   * `backpressure` (a request that holds nothing, so it may wait now: one store call instead of two),
   * the reservation also says how long to wait before forwarding.
   */
  reserve(
    plan: BudgetPlan,
    cost: { promptTokens: number; maxOutputTokens: number; backpressure: boolean },
  ): Promise<BudgetReservation>;
  /** The usage of a credential's (or, with `sessionId`, a session's) counters; rejects when the store fails. */
  usage(input: {
    tenantId: string;
    names: readonly CounterBudgetName[];
    sessionId?: string | undefined;
  }): Promise<BudgetUsageReport[]>;
  /** Sets a counter's usage back to zero; rejects when the store fails. */
  reset(input: { tenantId: string; name: CounterBudgetName; sessionId?: string | undefined }): Promise<void>;
}

function describeReset(resetsAtMs: number | undefined): string {
  return resetsAtMs === undefined
    ? 'it does not reset (it counts the whole session)'
    : `it resets at ${new Date(resetsAtMs).toISOString()}`;
}

export function createBudgetService(deps: {
  config: GatewayConfig;
  store: BudgetStore;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Wall-clock milliseconds: periods and reservation expiries follow it. */
  clock?: () => number;
}): BudgetService {
  const { config, store, metrics, logger } = deps;
  const clock = deps.clock ?? Date.now;
  const { budgets } = config;
  const anyConfigured =
    Object.values(budgets.defaults).some((budget) => budget !== undefined) ||
    Object.keys(budgets.credentials).length > 0 ||
    Object.values(config.policies).some((preset) => preset.budgets !== undefined);
  const reservationMs = config.timeouts.upstream_first_byte_ms + 10 * config.timeouts.upstream_idle_ms;

  /** A budget refusal holds until its period resets: clients that obey x-should-retry do not retry it. */
  const noRetry = { 'x-should-retry': 'false' };

  function exceeded(budget: ActiveBudget, used: number, extra = ''): GatewayError {
    const resetsAtMs =
      budget.name === 'max_request_tokens' ? undefined : budgetPeriod(budget.name, clock()).resetsAtMs;
    metrics.budgetRefusals.inc({ budget: budget.name });
    return new GatewayError(
      'budget_exceeded',
      `Token budget ${budget.name} exceeded: ${used} of ${budget.limit} tokens used${extra}; ${describeReset(resetsAtMs)}.`,
      // Not a rate: retrying at once cannot help, and the OpenAI SDKs would otherwise retry a 429.
      { param: budget.name, headers: noRetry },
    );
  }

  function remainingHeader(plan: BudgetPlan, usage: readonly CounterUsage[]): Record<string, string> {
    if (plan.counted.length === 0) return {};
    let remaining = Infinity;
    plan.counted.forEach((budget, index) => {
      const entry = usage[index] ?? { used: 0, reserved: 0, estimated: 0 };
      remaining = Math.min(remaining, Math.max(0, budget.limit - entry.used - entry.reserved));
    });
    return { 'x-budget-remaining': String(remaining) };
  }

  /** The backpressure delay for the most used budget (reservations included). */
  function backpressureFor(plan: BudgetPlan, usage: readonly CounterUsage[]): number {
    let share = 0;
    for (const [index, budget] of plan.counted.entries()) {
      const entry = usage[index] ?? { used: 0, reserved: 0, estimated: 0 };
      if (budget.limit > 0) share = Math.max(share, (entry.used + entry.reserved) / budget.limit);
      else if (budget.mode === 'hard') share = 1;
    }
    const delayMs = backpressureDelayMs(share, budgets.backpressure);
    if (delayMs > 0) metrics.budgetDelays.inc({ delay_ms: String(delayMs) });
    return delayMs;
  }

  /** Adds what a request cost to its counters (dropping its reservation); logs a first warning. */
  async function count(
    plan: BudgetPlan,
    limits: readonly CounterLimit[],
    reservationId: string,
    usage: { tokens: number; estimated: boolean },
  ): Promise<void> {
    try {
      const settled = await store.settle({
        counters: plan.counters,
        limits,
        reservationId,
        tokens: usage.tokens,
        estimatedTokens: usage.estimated ? usage.tokens : 0,
        warnAt: budgets.warnAt,
      });
      // Counted once the store has them: a scrape that shows them finds them on the budgets too.
      metrics.budgetTokens.inc({ source: usage.estimated ? 'estimate' : 'usage' }, usage.tokens);
      settled.warned.forEach((warned, index) => {
        if (!warned) return;
        const budget = plan.counted[index] as ActiveBudget;
        metrics.budgetWarnings.inc({ budget: budget.name });
        logger.warn(
          {
            tenant: plan.tenantId,
            budget: budget.name,
            mode: budget.mode,
            limit: budget.limit,
            used: settled.usage[index],
            warnAt: budgets.warnAt,
          },
          'token budget passed its warning share',
        );
      });
    } catch (error) {
      // A reservation expires by itself; the tokens are lost to the count (logged).
      storeFailed(plan, error);
    }
  }

  const counterOf = (
    name: CounterBudgetName,
    tenantId: string,
    sessionId: string | undefined,
  ): BudgetCounter =>
    budgetCounter({
      name,
      tenantId,
      sessionId,
      nowMs: clock(),
      sessionTtlSeconds: config.sessions.ttl_seconds,
    });

  const limitsOf = (plan: BudgetPlan): CounterLimit[] =>
    plan.counted.map((budget) => ({ limit: budget.limit, hard: budget.mode === 'hard' }));

  function storeFailed(plan: BudgetPlan, error: unknown): void {
    metrics.budgetStoreErrors.inc({});
    logger.warn(
      { tenant: plan.tenantId, err: error instanceof Error ? error.message : String(error) },
      'budget store unreachable: budgets not enforced for this request',
    );
  }

  return {
    plan({ tenantId, sessionId, policyName, sessionTokens }) {
      // The common case on the hot path: no budget anywhere, none asked for.
      if (!anyConfigured && sessionTokens === undefined) return undefined;
      const active = resolveBudgets({
        defaults: budgets.defaults,
        credential: ownEntry(budgets.credentials, tenantId),
        preset: policyName === undefined ? undefined : ownEntry(config.policies, policyName)?.budgets,
        sessionTokensHeader: sessionTokens,
        sessionMode: sessionId !== undefined,
      });
      if (active.length === 0) return undefined;
      const counted = active.filter((budget) => budget.name !== 'max_request_tokens');
      return {
        tenantId,
        counted,
        counters: counted.map((budget) => counterOf(budget.name as CounterBudgetName, tenantId, sessionId)),
        maxRequest: active.find((budget) => budget.name === 'max_request_tokens'),
        unavailable: false,
      };
    },

    async allowsBackgroundWork({ tenantId, sessionId }) {
      const plan = this.plan({ tenantId, sessionId });
      if (plan === undefined || plan.counted.length === 0) return true;
      try {
        const usage = await store.read(plan.counters, clock());
        return plan.counted.every(
          (budget, index) => budget.mode !== 'hard' || (usage[index]?.used ?? 0) < budget.limit,
        );
      } catch {
        return true;
      }
    },

    async charge({ tenantId, sessionId }, usage) {
      const plan = this.plan({ tenantId, sessionId });
      if (plan === undefined || plan.counted.length === 0) return;
      await count(plan, limitsOf(plan), randomUUID(), usage);
    },

    async admit(plan) {
      if (plan.counted.length === 0) return { delayMs: 0, headers: { 'x-budget-delay-ms': '0' }, plan };
      let usage: CounterUsage[];
      try {
        usage = await store.read(plan.counters, clock());
      } catch (error) {
        storeFailed(plan, error);
        return { delayMs: 0, headers: {}, plan: Object.assign({}, plan, { unavailable: true }) };
      }
      for (const [index, budget] of plan.counted.entries()) {
        const entry = usage[index] ?? { used: 0, reserved: 0, estimated: 0 };
        if (budget.mode === 'hard' && entry.used >= budget.limit) throw exceeded(budget, entry.used);
      }
      const delayMs = backpressureFor(plan, usage);
      return {
        delayMs,
        headers: Object.assign({}, remainingHeader(plan, usage), { 'x-budget-delay-ms': String(delayMs) }),
        plan,
      };
    },

    async usage({ tenantId, names, sessionId }) {
      const limits = resolveBudgets({
        defaults: budgets.defaults,
        credential: ownEntry(budgets.credentials, tenantId),
        preset: undefined,
        sessionTokensHeader: undefined,
        sessionMode: sessionId !== undefined,
      });
      const counters = names.map((name) => counterOf(name, tenantId, sessionId));
      const usage = await store.read(counters, clock());
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
    },

    async reset({ tenantId, name, sessionId }) {
      await store.reset(counterOf(name, tenantId, sessionId));
    },

    async reserve(plan, cost) {
      const tokens = Math.max(0, Math.ceil(cost.promptTokens + cost.maxOutputTokens));
      const headers: Record<string, string> = {};
      const warnings: string[] = [];
      const maxRequest = plan.maxRequest;
      if (maxRequest !== undefined && tokens > maxRequest.limit) {
        if (maxRequest.mode === 'hard') {
          metrics.budgetRefusals.inc({ budget: maxRequest.name });
          throw new GatewayError(
            'budget_exceeded',
            `Token budget max_request_tokens exceeded: this request needs about ${tokens} tokens (its prompt and max_tokens), over the limit of ${maxRequest.limit}. Lower max_tokens or send less.`,
            { param: maxRequest.name, headers: noRetry },
          );
        }
        metrics.budgetSoftExceeded.inc({ budget: maxRequest.name });
        warnings.push(`max_request_tokens: about ${tokens} of ${maxRequest.limit} tokens (soft)`);
      }
      const noReservation: BudgetReservation = {
        headers,
        delayMs: 0,
        async settle() {},
        async release() {},
      };
      if (plan.counted.length === 0 || plan.unavailable) {
        if (warnings.length > 0) headers['x-budget-warning'] = warnings.join('; ');
        return noReservation;
      }
      const limits = limitsOf(plan);
      const reservationId = randomUUID();
      const nowMs = clock();
      let outcome: Awaited<ReturnType<BudgetStore['reserve']>>;
      try {
        outcome = await store.reserve({
          counters: plan.counters,
          limits,
          reservationId,
          tokens,
          expiresAtMs: nowMs + reservationMs,
          nowMs,
        });
      } catch (error) {
        storeFailed(plan, error);
        return noReservation;
      }
      if (!outcome.ok) {
        const budget = plan.counted[outcome.refused] as ActiveBudget;
        const entry = outcome.usage[outcome.refused] ?? { used: 0, reserved: 0, estimated: 0 };
        throw exceeded(
          budget,
          entry.used,
          entry.reserved > 0 ? ` and ${entry.reserved} reserved by requests in flight` : '',
        );
      }
      plan.counted.forEach((budget, index) => {
        const entry = outcome.usage[index] ?? { used: 0, reserved: 0, estimated: 0 };
        if (budget.mode === 'soft' && entry.used + entry.reserved >= budget.limit) {
          metrics.budgetSoftExceeded.inc({ budget: budget.name });
          warnings.push(`${budget.name}: ${entry.used} of ${budget.limit} tokens used (soft)`);
        }
      });
      Object.assign(headers, remainingHeader(plan, outcome.usage));
      if (warnings.length > 0) headers['x-budget-warning'] = warnings.join('; ');
      const delayMs = cost.backpressure ? backpressureFor(plan, outcome.usage) : 0;
      if (cost.backpressure) headers['x-budget-delay-ms'] = String(delayMs);
      let done = false;
      return {
        headers,
        delayMs,
        async settle(usage) {
          if (done) return;
          done = true;
          await count(plan, limits, reservationId, usage);
        },
        async release() {
          if (done) return;
          done = true;
          await store.release(plan.counters, reservationId).catch(() => undefined);
        },
      };
    },
  };
}
