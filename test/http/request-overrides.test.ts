// The gateway's own request headers read into overrides (request-overrides.ts; README.md#headers), as a
// table: each header's accepted values and what they become, each malformed value a 400 invalid_header
// naming the header, and the client-side markers (a retry count, an idempotency key) read leniently — a
// value the gateway cannot read marks nothing rather than refusing the request.
import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../src/errors.js';
import { parseRequestOverrides } from '../../src/http/request-overrides.js';

const refusal = (
  headers: IncomingHttpHeaders,
): { code: string; param: string | null | undefined } | undefined => {
  try {
    parseRequestOverrides(headers);
  } catch (error) {
    if (isGatewayError(error)) return { code: error.code, param: error.param };
    throw error;
  }
  return undefined;
};

describe('request headers', () => {
  it('with none, asks for nothing but the automatic history mode', () => {
    expect(parseRequestOverrides({})).toEqual({ historyMode: 'auto' });
  });

  it.each<[string, IncomingHttpHeaders, Record<string, unknown>]>([
    ['a session id', { 'x-session-id': 'user-42:chat_7.v2' }, { sessionId: 'user-42:chat_7.v2' }],
    ['a session id of 128 characters', { 'x-session-id': 's'.repeat(128) }, { sessionId: 's'.repeat(128) }],
    // OpenCode sends its session id to a custom provider twice, for sticky routing: not a session.
    ['an affinity id as OpenCode sends it', { 'x-session-id': 'ses_1a', 'x-session-affinity': 'ses_1a' }, {}],
    ['an affinity id no session could take', { 'x-session-id': 'a/b', 'x-session-affinity': 'a/b' }, {}],
    [
      'an affinity id asked to be a session',
      { 'x-session-id': 'ses_1a', 'x-session-affinity': 'ses_1a', 'x-session-history': 'auto' },
      { sessionId: 'ses_1a' },
    ],
    [
      'a session id beside another affinity id',
      { 'x-session-id': 'project-7', 'x-session-affinity': 'ses_1a' },
      { sessionId: 'project-7' },
    ],
    // Claude Code names each conversation (a run, kept by --resume): a session of its own under the id.
    [
      "Claude Code's conversation under the session id",
      { 'x-session-id': 'my-project', 'x-claude-code-session-id': '405607b3-5819-4404-809e-c33974f76635' },
      { sessionId: 'my-project:405607b3-5819-4404-809e-c33974f76635' },
    ],
    [
      "Claude Code's conversation beside a session id too long to join it",
      { 'x-session-id': 's'.repeat(100), 'x-claude-code-session-id': '405607b3-5819-4404-809e-c33974f76635' },
      { sessionId: 's'.repeat(100) },
    ],
    [
      'a Claude Code conversation id no session could take',
      { 'x-session-id': 'my-project', 'x-claude-code-session-id': 'a/b' },
      { sessionId: 'my-project' },
    ],
    ["Claude Code's conversation alone", { 'x-claude-code-session-id': '405607b3' }, {}],
    ['delta history', { 'x-session-history': 'delta' }, { historyMode: 'delta' }],
    ['full history', { 'x-session-history': 'full' }, { historyMode: 'full' }],
    ['a window', { 'x-context-window': ' 8192 ' }, { contextWindow: 8_192 }],
    [
      "Claude's 1M window flagged among others",
      { 'anthropic-beta': 'claude-code-20250219,context-1m-2025-08-07' },
      { longContextAsked: true },
    ],
    ['other flags alone', { 'anthropic-beta': 'interleaved-thinking-2025-05-14' }, {}],
    ['no history cap', { 'x-context-max-history-tokens': '0' }, { maxHistoryTokens: 0 }],
    ['a policy name', { 'x-context-policy': 'economy' }, { policyName: 'economy' }],
    ['a session budget', { 'x-budget-session-tokens': '500000' }, { budgetSessionTokens: 500_000 }],
    ['an SDK retry', { 'x-stainless-retry-count': '2' }, { retried: true }],
    ['an SDK first try', { 'x-stainless-retry-count': '0' }, {}],
    ['an unreadable retry count', { 'x-stainless-retry-count': 'two' }, {}],
    [
      'an idempotency key',
      { 'idempotency-key': 'stainless-node-retry-1f2e' },
      { idempotencyKey: 'stainless-node-retry-1f2e' },
    ],
    ['an idempotency key with a space', { 'idempotency-key': 'a b' }, {}],
    [
      'a repeated header, its first value',
      { 'x-context-window': ['4096', '8192'] },
      { contextWindow: 4_096 },
    ],
  ])('reads %s', (_name, headers, expected) => {
    expect(parseRequestOverrides(headers)).toEqual({ historyMode: 'auto', ...expected });
  });

  it.each<[string, IncomingHttpHeaders, string]>([
    ['a session id with a slash', { 'x-session-id': 'a/b' }, 'x-session-id'],
    ['a session id of 129 characters', { 'x-session-id': 's'.repeat(129) }, 'x-session-id'],
    ['an empty session id', { 'x-session-id': '' }, 'x-session-id'],
    ['an unknown history mode', { 'x-session-history': 'all' }, 'x-session-history'],
    ['a window of 0', { 'x-context-window': '0' }, 'x-context-window'],
    ['a negative window', { 'x-context-window': '-5' }, 'x-context-window'],
    ['a window in exponent form', { 'x-context-window': '1e5' }, 'x-context-window'],
    ['a window of ten digits', { 'x-context-window': '1234567890' }, 'x-context-window'],
    ['a fractional history cap', { 'x-context-max-history-tokens': '10.5' }, 'x-context-max-history-tokens'],
    [
      'a session budget of sixteen digits',
      { 'x-budget-session-tokens': '1'.repeat(16) },
      'x-budget-session-tokens',
    ],
  ])('refuses %s, naming the header', (_name, headers, param) => {
    expect(refusal(headers)).toEqual({ code: 'invalid_header', param });
  });
});
