// The sessions API over the in-memory store: a session as the API reports it (counts, tokens, its
// summary's range), its history paged, the caller's list paged and searched, deletion, and the refusals
// — a malformed id, another tenant's session, a caller with no credential. Requests through app.inject
// with the gateway's own error handler.
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleError } from '../../src/http/error-handler.js';
import { createRequestState, type RequestState } from '../../src/http/request-record.js';
import { registerSessionRoutes } from '../../src/http/session-routes.js';
import { createMemorySessionStore } from '../../src/store/memory-session-store.js';
import type { SessionKey, SessionStore } from '../../src/store/session-store.js';
import { requestReport } from '../helpers/stored-turns.js';

let app: FastifyInstance;
let store: SessionStore;

const report = requestReport;

/** Commits `turns` user/assistant turns of 10 and 5 tokens to the tenant's session. */
async function session(key: SessionKey, turns: number): Promise<void> {
  const hold = await store.acquire(key, 10_000);
  if (hold === undefined) throw new Error('held');
  const append = Array.from({ length: turns }, (_unused, turn) => [
    { message: { role: 'user', content: `question ${turn}` }, tokens: 10 },
    { message: { role: 'assistant', content: `answer ${turn}` }, tokens: 5 },
  ]).flat();
  await store.commit(key, { hold, expectedVersion: 0, append, historyStart: 0, activeTokenLimit: 1_000_000 });
  await store.release(key, hold);
}

beforeAll(async () => {
  store = createMemorySessionStore({
    limits: { maxActiveMessages: 1_000, minActiveMessages: 100, idleTtlSeconds: 600 },
  });
  app = Fastify();
  app.decorateRequest('gateway', null as unknown as RequestState);
  app.addHook('onRequest', (request, _reply, done) => {
    request.gateway = createRequestState(0);
    const tenant = request.headers['x-tenant'];
    if (typeof tenant === 'string')
      request.gateway.credential = { mode: 'gateway_key', tenantId: tenant, mayHoldSessions: true };
    done();
  });
  app.setErrorHandler(handleError);
  registerSessionRoutes(app, { sessionStore: store });
  await app.ready();
  await session({ tenantId: 'acme', sessionId: 'chat-1' }, 60);
  for (const [index, sessionId] of ['alpha-1', 'beta-2', 'alpha-3'].entries()) {
    await session({ tenantId: 'listing', sessionId }, 1);
    await store.recordRequest({ tenantId: 'listing', sessionId }, report(Date.now() + index * 1_000, 1_500));
  }
});
afterAll(() => app.close());

/** A GET as `tenant`'s credential (null: none). */
const get = (url: string, tenant: string | null = 'acme') =>
  app.inject({ method: 'GET', url, headers: tenant === null ? {} : { 'x-tenant': tenant } });

describe('the sessions API', () => {
  it('reports a session: its counts, active tokens and messages', async () => {
    const response = await get('/v1/sessions/chat-1');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({
      object: 'session',
      id: 'chat-1',
      summary: null,
      counts: { active: 120, archived: 0, total: 120 },
      tokens: { active: 60 * 15 },
    });
    expect(body.messages[0]).toEqual({ role: 'user', content: 'question 0' });
  });

  it.each<
    [
      string,
      string,
      { offset: number; limit: number; first: string | undefined; length: number; has_more: boolean },
    ]
  >([
    [
      'the first page by default',
      '',
      { offset: 0, limit: 100, first: 'question 0', length: 100, has_more: true },
    ],
    [
      'a later page',
      '?offset=110&limit=5',
      { offset: 110, limit: 5, first: 'question 55', length: 5, has_more: true },
    ],
    [
      'the last one',
      '?offset=118&limit=5',
      { offset: 118, limit: 5, first: 'question 59', length: 2, has_more: false },
    ],
    [
      'a limit over 1,000, capped',
      '?limit=5000',
      { offset: 0, limit: 1_000, first: 'question 0', length: 120, has_more: false },
    ],
    [
      'a junk limit, as the default',
      '?limit=-3',
      { offset: 0, limit: 100, first: 'question 0', length: 100, has_more: true },
    ],
    [
      'past the end',
      '?offset=500',
      { offset: 500, limit: 100, first: undefined, length: 0, has_more: false },
    ],
  ])('pages the history: %s', async (_name, query, expected) => {
    const body = (await get(`/v1/sessions/chat-1/history${query}`)).json();
    expect(body).toMatchObject({
      object: 'list',
      total: 120,
      offset: expected.offset,
      limit: expected.limit,
      has_more: expected.has_more,
    });
    expect(body.data).toHaveLength(expected.length);
    expect(body.data[0]?.content).toBe(expected.first);
    if (expected.length > 0) expect(body.data[0].tokens).toBe(10);
  });

  it.each<[string, string, { total: number; ids: string[]; has_more: boolean; limit: number }]>([
    ['newest first', '', { total: 3, ids: ['alpha-3', 'beta-2', 'alpha-1'], has_more: false, limit: 20 }],
    ['a page of one', '?limit=1&offset=1', { total: 3, ids: ['beta-2'], has_more: true, limit: 1 }],
    ['searched', '?search=alpha', { total: 2, ids: ['alpha-3', 'alpha-1'], has_more: false, limit: 20 }],
    ['a limit of 0, as one', '?limit=0', { total: 3, ids: ['alpha-3'], has_more: true, limit: 1 }],
    [
      'a limit over 100, capped',
      '?limit=1000',
      { total: 3, ids: ['alpha-3', 'beta-2', 'alpha-1'], has_more: false, limit: 100 },
    ],
  ])("lists the caller's sessions: %s", async (_name, query, expected) => {
    const body = (await get(`/v1/sessions${query}`, 'listing')).json();
    expect(body).toMatchObject({
      object: 'list',
      total: expected.total,
      has_more: expected.has_more,
      limit: expected.limit,
    });
    expect(body.data.map((row: { id: string }) => row.id)).toEqual(expected.ids);
    expect(body.data[0]).toMatchObject({
      object: 'session',
      counts: { active: 2, archived: 0, total: 2 },
      summary: false,
      // Its last request filled (1,500 + 500) of 8,000 tokens.
      last_window_fill: 0.25,
      last_model: 'm',
    });
  });

  it.each<[string, string, string | null, number, string]>([
    ['a malformed id', '/v1/sessions/bad%20id', 'acme', 400, 'invalid_request'],
    ["another tenant's session", '/v1/sessions/chat-1', 'intruder', 404, 'not_found'],
    ["another tenant's history", '/v1/sessions/chat-1/history', 'intruder', 404, 'not_found'],
    ["another tenant's requests", '/v1/sessions/chat-1/requests', 'intruder', 404, 'not_found'],
    ['no session by that id', '/v1/sessions/never-was', 'acme', 404, 'not_found'],
    ['a caller with no credential', '/v1/sessions/chat-1', null, 400, 'session_requires_credential'],
    ['a list for a caller with no credential', '/v1/sessions', null, 400, 'session_requires_credential'],
  ])('refuses %s', async (_name, url, tenant, status, code) => {
    const response = await get(url, tenant);
    expect(response.statusCode).toBe(status);
    expect(response.json().error.code).toBe(code);
  });

  it('deletes a session for its own tenant only, then knows it no more', async () => {
    await session({ tenantId: 'acme', sessionId: 'short-lived' }, 2);
    const remove = (tenant: string) =>
      app.inject({ method: 'DELETE', url: '/v1/sessions/short-lived', headers: { 'x-tenant': tenant } });
    expect((await remove('intruder')).statusCode).toBe(404);
    const deleted = await remove('acme');
    expect(deleted.json()).toEqual({ object: 'session.deleted', id: 'short-lived', deleted: true });
    expect((await get('/v1/sessions/short-lived')).statusCode).toBe(404);
    expect((await remove('acme')).statusCode).toBe(404);
  });
});
