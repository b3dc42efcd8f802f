// The gateway's own request headers (README.md), read once per request into typed overrides: the rest of
// the gateway never looks at a header's text. A malformed value is a 400 invalid_header naming it.
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestOverrides } from '../context/request-overrides.js';
import { GatewayError } from '../errors.js';
import { firstHeaderValue } from '../header-value.js';
import { sessionIdPattern } from '../sessions/session-keys.js';

function first(headers: IncomingHttpHeaders, name: string): string | undefined {
  return firstHeaderValue(headers[name]);
}

function invalid(name: string, expected: string): GatewayError {
  return new GatewayError('invalid_header', `Invalid header ${name}: expected ${expected}.`, { param: name });
}

function integer(
  headers: IncomingHttpHeaders,
  name: string,
  minimum: number,
  digits = 9,
): number | undefined {
  const text = first(headers, name);
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (!new RegExp(`^\\d{1,${digits}}$`).test(trimmed) || Number(trimmed) < minimum)
    throw invalid(name, minimum === 0 ? 'a whole number' : `an integer of at least ${minimum}`);
  return Number(trimmed);
}

/**
 * An `X-Session-Id` sent for sticky routing, not for a session: OpenCode sends its own session id to every
 * custom provider as both `X-Session-Id` and `x-session-affinity`, with the whole conversation each time and
 * its title and summary requests under the same id (docs/sessions.md#affinity-ids). A client that asks
 * for a session beside it says so with `X-Session-History`.
 */
function sentForAffinity(headers: IncomingHttpHeaders, sessionId: string): boolean {
  return (
    first(headers, 'x-session-affinity') === sessionId && first(headers, 'x-session-history') === undefined
  );
}

const claudeCodeIdPattern = /^[A-Za-z0-9-]{1,64}$/;

/**
 * Claude Code's name for the conversation a request belongs to (`X-Claude-Code-Session-Id`: one per run,
 * kept by `--resume`, its sub-agents' requests under it too), when it can join the session id: a header
 * of Claude Code's settings (`ANTHROPIC_CUSTOM_HEADERS`) is the same for every run, so each of its
 * conversations gets a session of its own under the id set there (docs/sessions.md#claude-code).
 */
function claudeCodeConversation(headers: IncomingHttpHeaders, sessionId: string): string | undefined {
  const conversation = first(headers, 'x-claude-code-session-id');
  if (conversation === undefined || !claudeCodeIdPattern.test(conversation)) return undefined;
  return sessionId.length + 1 + conversation.length <= 128 ? conversation : undefined;
}

export function parseRequestOverrides(headers: IncomingHttpHeaders): RequestOverrides {
  const overrides: RequestOverrides = { historyMode: 'auto' };
  const sessionId = first(headers, 'x-session-id');
  if (sessionId !== undefined && !sentForAffinity(headers, sessionId)) {
    if (!sessionIdPattern.test(sessionId))
      throw invalid('x-session-id', '1-128 letters, digits, ".", "_", ":" or "-"');
    const conversation = claudeCodeConversation(headers, sessionId);
    overrides.sessionId = conversation === undefined ? sessionId : `${sessionId}:${conversation}`;
  }
  const history = first(headers, 'x-session-history');
  if (history !== undefined) {
    if (history !== 'auto' && history !== 'delta' && history !== 'full')
      throw invalid('x-session-history', "'auto', 'delta' or 'full'");
    overrides.historyMode = history;
  }
  const window = integer(headers, 'x-context-window', 1);
  if (window !== undefined) overrides.contextWindow = window;
  const betas = headers['anthropic-beta'];
  if (betas !== undefined && /\bcontext-1m-/.test(String(betas))) overrides.longContextAsked = true;
  const maxHistoryTokens = integer(headers, 'x-context-max-history-tokens', 0);
  if (maxHistoryTokens !== undefined) overrides.maxHistoryTokens = maxHistoryTokens;
  const policy = first(headers, 'x-context-policy');
  if (policy !== undefined) overrides.policyName = policy;
  const sessionTokens = integer(headers, 'x-budget-session-tokens', 0, 15);
  if (sessionTokens !== undefined) overrides.budgetSessionTokens = sessionTokens;
  // Retries, as the OpenAI SDKs mark them; a value the gateway cannot read marks nothing.
  const retryCount = first(headers, 'x-stainless-retry-count')?.trim();
  if (retryCount !== undefined && /^\d{1,6}$/.test(retryCount) && Number(retryCount) > 0)
    overrides.retried = true;
  const idempotencyKey = first(headers, 'idempotency-key')?.trim();
  if (idempotencyKey !== undefined && /^[\x21-\x7e]{1,256}$/.test(idempotencyKey))
    overrides.idempotencyKey = idempotencyKey;
  return overrides;
}
