// The BudgetStore port (docs/budgets.md): token counters per session (lifetime) and per credential and period,
// shared by replicas. A request reserves its expected cost on every counter it counts in before it is
// sent (refused when a hard counter's used + reserved tokens already reach the limit), then settles
// with what the upstream reported. Reservations expire by themselves, so a replica that dies mid-request
// leaves nothing behind for long. Implementations: in-memory and Redis (one contract suite).
import { budgetPeriod, type CounterBudgetName } from '../budget/budget-rules.js';

export interface BudgetCounter {
  name: CounterBudgetName;
  tenantId: string;
  /** Session budgets only. */
  sessionId?: string;
  /** The period id (budgetPeriod): `lifetime`, `2026-11-22`, `2026-11`. */
  periodId: string;
  /** How long the counter is kept after its last change. */
  ttlSeconds: number;
}

export interface CounterUsage {
  /** Tokens settled in this counter (reported by the upstream, or estimated). */
  used: number;
  /** Of `used`, tokens that were estimates (the answer carried no usage). */
  estimated: number;
  /** Tokens reserved by requests in flight. */
  reserved: number;
}

export interface CounterLimit {
  limit: number;
  hard: boolean;
}

export type ReserveOutcome =
  | { ok: true; usage: CounterUsage[] }
  /** `refused`: the index of the first hard counter at its limit. */
  | { ok: false; refused: number; usage: CounterUsage[] };

export interface BudgetStore {
  read(counters: readonly BudgetCounter[], nowMs: number): Promise<CounterUsage[]>;
  /** Atomically per store node: checks every hard counter, then reserves `tokens` on every counter. */
  reserve(input: {
    counters: readonly BudgetCounter[];
    limits: readonly CounterLimit[];
    reservationId: string;
    tokens: number;
    expiresAtMs: number;
    nowMs: number;
  }): Promise<ReserveOutcome>;
  /**
   * Drops the reservation and adds `tokens` (of which `estimatedTokens` were estimates). `warned[i]` is
   * true for the one settle that first took counter i to `warnAt` of its limit in its period.
   */
  settle(input: {
    counters: readonly BudgetCounter[];
    limits: readonly CounterLimit[];
    reservationId: string;
    tokens: number;
    estimatedTokens: number;
    warnAt: number;
  }): Promise<{ usage: number[]; warned: boolean[] }>;
  release(counters: readonly BudgetCounter[], reservationId: string): Promise<void>;
  /** Forgets a counter's usage (admin reset); true when there was any. */
  reset(counter: BudgetCounter): Promise<boolean>;
}

const dayTtlSeconds = 40 * 86_400;
const monthTtlSeconds = 400 * 86_400;

/**
 * The counter `name` counts in at `nowMs`: a session's (lifetime, kept as long as the session), or a
 * credential's for the current UTC day or month (kept 40 or 400 days).
 */
export function budgetCounter(input: {
  name: CounterBudgetName;
  tenantId: string;
  sessionId: string | undefined;
  nowMs: number;
  sessionTtlSeconds: number;
}): BudgetCounter {
  const { name, tenantId } = input;
  const periodId = budgetPeriod(name, input.nowMs).id;
  if (name === 'session_tokens')
    return {
      name,
      tenantId,
      sessionId: input.sessionId as string,
      periodId,
      ttlSeconds: input.sessionTtlSeconds,
    };
  const ttlSeconds = name === 'credential_daily_tokens' ? dayTtlSeconds : monthTtlSeconds;
  return { name, tenantId, periodId, ttlSeconds };
}

/** One counter's name in a store: tenant, session (for session budgets), budget and period. */
export function counterKey(counter: BudgetCounter): string {
  return counter.sessionId === undefined
    ? `ctxgate:{budget:${counter.tenantId}}:${counter.name}:${counter.periodId}`
    : `ctxgate:{${counter.tenantId}:${counter.sessionId}}:budget:${counter.name}`;
}
