// Token budgets (docs/budgets.md), the pure part: which budgets apply to a request and how tight each is, the
// period a counter belongs to and when it resets, and the backpressure delay for a usage share.
import type { BudgetLimitConfig, BudgetSetConfig } from '../config/config-schema.js';

export type CounterBudgetName = 'session_tokens' | 'credential_daily_tokens' | 'credential_monthly_tokens';
export type BudgetName = CounterBudgetName | 'max_request_tokens';
export const budgetNames: readonly BudgetName[] = [
  'session_tokens',
  'credential_daily_tokens',
  'credential_monthly_tokens',
  'max_request_tokens',
];

export interface ActiveBudget {
  name: BudgetName;
  limit: number;
  mode: 'hard' | 'soft';
}

function tightest(
  candidates: ReadonlyArray<BudgetLimitConfig | undefined>,
): Omit<ActiveBudget, 'name'> | undefined {
  let best: Omit<ActiveBudget, 'name'> | undefined;
  for (const candidate of candidates) {
    if (candidate === undefined || candidate.mode === 'off') continue;
    if (
      best === undefined ||
      candidate.limit < best.limit ||
      (candidate.limit === best.limit && candidate.mode === 'hard')
    )
      best = { limit: candidate.limit, mode: candidate.mode };
  }
  return best;
}

/**
 * The budgets of one request: the credential's own entry replaces the defaults budget by budget; a
 * preset named by the request can only add a tighter one (the tightest wins); `X-Budget-Session-Tokens`
 * lowers the session budget (a hard one when none is set) and never raises it. `session_tokens`
 * applies only to session requests.
 */
export function resolveBudgets(input: {
  defaults: BudgetSetConfig;
  credential: BudgetSetConfig | undefined;
  preset: BudgetSetConfig | undefined;
  sessionTokensHeader: number | undefined;
  sessionMode: boolean;
}): ActiveBudget[] {
  const budgets: ActiveBudget[] = [];
  for (const name of budgetNames) {
    if (name === 'session_tokens' && !input.sessionMode) continue;
    const base = input.credential?.[name] ?? input.defaults[name];
    let chosen = tightest([base, input.preset?.[name]]);
    if (name === 'session_tokens' && input.sessionTokensHeader !== undefined) {
      if (chosen === undefined) chosen = { limit: input.sessionTokensHeader, mode: 'hard' };
      else if (input.sessionTokensHeader < chosen.limit)
        chosen = Object.assign({}, chosen, { limit: input.sessionTokensHeader });
    }
    if (chosen !== undefined) budgets.push({ name, ...chosen });
  }
  return budgets;
}

/** The period a counter of `name` counts in at `nowMs` (UTC), and when the next one starts. */
export function budgetPeriod(
  name: CounterBudgetName,
  nowMs: number,
): { id: string; resetsAtMs: number | undefined } {
  const now = new Date(nowMs);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  if (name === 'credential_daily_tokens') {
    const day = now.getUTCDate();
    return {
      id: `${year}-${String(month + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`,
      resetsAtMs: Date.UTC(year, month, day + 1),
    };
  }
  if (name === 'credential_monthly_tokens')
    return { id: `${year}-${String(month + 1).padStart(2, '0')}`, resetsAtMs: Date.UTC(year, month + 1, 1) };
  return { id: 'lifetime', resetsAtMs: undefined };
}

/** The delay of the highest backpressure step at or below `share` (steps ascending by `at`). */
export function backpressureDelayMs(
  share: number,
  steps: ReadonlyArray<{ at: number; delayMs: number }>,
): number {
  let delayMs = 0;
  for (const step of steps) if (share >= step.at) delayMs = step.delayMs;
  return delayMs;
}
