// The sessions API (README.md): read a session, page through its full history, delete it. Sessions are
// namespaced by the caller's credential: another credential sees 404 for the same id.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';
import type { SessionKey, SessionListing, SessionSnapshot, SessionStore } from '../store/session-store.js';
import { sessionIdPattern, sessionKeyFor, storeUnavailable } from '../sessions/session-keys.js';

function keyOf(request: FastifyRequest<{ Params: { id: string } }>): SessionKey {
  const sessionId = request.params.id;
  if (!sessionIdPattern.test(sessionId))
    throw new GatewayError('invalid_request', 'Invalid session id.', { param: 'id' });
  return sessionKeyFor(request.gateway.credential, sessionId);
}

function notFound(sessionId: string): GatewayError {
  return new GatewayError('not_found', `No session '${sessionId}'.`, { param: 'id' });
}

function pageNumber(value: unknown, fallback: number, maximum: number): number {
  const number = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : fallback;
  return Math.min(number, maximum);
}

/** A session's message counts and active tokens, as the sessions API reports them. */
function countsOf(snapshot: SessionSnapshot) {
  return {
    counts: {
      active: snapshot.messages.length,
      archived: snapshot.archivedCount,
      total: snapshot.archivedCount + snapshot.messages.length,
    },
    tokens: { active: snapshot.messages.reduce((sum, entry) => sum + entry.tokens, 0) },
  };
}

/** One row of GET /v1/sessions: the session's counts and its last request's window fill. */
async function sessionListing(
  sessionStore: SessionStore,
  tenantId: string,
  { sessionId, lastActiveMs }: SessionListing,
) {
  const key = { tenantId, sessionId };
  const [snapshot, [last]] = await Promise.all([sessionStore.load(key), sessionStore.requestReports(key, 1)]);
  return {
    object: 'session',
    id: sessionId,
    last_active_at: Math.floor(lastActiveMs / 1000),
    ...countsOf(snapshot),
    summary: snapshot.summary !== undefined,
    last_window_fill:
      last === undefined ? null : Number(((last.inputTokens + last.outputReserve) / last.window).toFixed(3)),
    last_model: last?.model ?? null,
  };
}

export function registerSessionRoutes(
  app: FastifyInstance,
  { sessionStore }: { sessionStore: SessionStore },
): void {
  // The caller's sessions, most recently active first (docs/inspector.md): the inspector's list.
  app.get<{ Querystring: { offset?: string; limit?: string; search?: string } }>(
    '/v1/sessions',
    async (request) => {
      // The same rule as a session id's: sessions belong to a credential.
      const { tenantId } = sessionKeyFor(request.gateway.credential, 'list');
      const offset = pageNumber(request.query.offset, 0, Number.MAX_SAFE_INTEGER);
      const limit = Math.max(1, pageNumber(request.query.limit, 20, 100));
      const search =
        typeof request.query.search === 'string' ? request.query.search.slice(0, 128) : undefined;
      const page = await sessionStore
        .listSessions(tenantId, { offset, limit, search })
        .catch((error: unknown) => {
          throw storeUnavailable(error);
        });
      const data = await Promise.all(
        page.sessions.map((listing) => sessionListing(sessionStore, tenantId, listing)),
      ).catch((error: unknown) => {
        throw storeUnavailable(error);
      });
      return {
        object: 'list',
        total: page.total,
        offset,
        limit,
        has_more: offset + data.length < page.total,
        data,
      };
    },
  );

  // What the session's recent requests did (docs/inspector.md): newest first, at most 200.
  app.get<{ Params: { id: string }; Querystring: { limit?: string } }>(
    '/v1/sessions/:id/requests',
    async (request) => {
      const key = keyOf(request);
      const limit = Math.max(1, pageNumber(request.query.limit, 200, 200));
      const [snapshot, reports] = await Promise.all([
        sessionStore.load(key),
        sessionStore.requestReports(key, limit),
      ]).catch((error: unknown) => {
        throw storeUnavailable(error);
      });
      if (snapshot.version === 0) throw notFound(key.sessionId);
      return { object: 'list', data: reports };
    },
  );

  app.get<{ Params: { id: string } }>('/v1/sessions/:id', async (request) => {
    const key = keyOf(request);
    const snapshot = await sessionStore.load(key).catch((error: unknown) => {
      throw storeUnavailable(error);
    });
    if (snapshot.version === 0) throw notFound(key.sessionId);
    return {
      object: 'session',
      id: key.sessionId,
      version: snapshot.version,
      system_prompt: snapshot.systemPrompt ?? null,
      // docs/sessions.md#summarization: the summary and the range of the conversation (positions in /history) it stands for.
      summary:
        snapshot.summary === undefined
          ? null
          : {
              text: snapshot.summary.text,
              tokens: snapshot.summary.tokens,
              covers: {
                from_message: snapshot.summary.fromMessage,
                to_message: snapshot.summary.toMessage,
                messages: snapshot.summary.toMessage - snapshot.summary.fromMessage,
                tokens: snapshot.summary.coveredTokens,
              },
              updated_at: Math.floor(snapshot.summary.updatedAtMs / 1000),
            },

      messages: snapshot.messages.map((entry) => entry.message),
      ...countsOf(snapshot),
      updated_at: Math.floor(snapshot.updatedAtMs / 1000),
    };
  });

  app.get<{ Params: { id: string }; Querystring: { offset?: string; limit?: string } }>(
    '/v1/sessions/:id/history',
    async (request) => {
      const key = keyOf(request);
      const offset = pageNumber(request.query.offset, 0, Number.MAX_SAFE_INTEGER);
      const limit = pageNumber(request.query.limit, 100, 1_000);
      const page = await sessionStore.history(key, offset, limit).catch((error: unknown) => {
        throw storeUnavailable(error);
      });
      if (page.total === 0) throw notFound(key.sessionId);
      return {
        object: 'list',
        total: page.total,
        offset,
        limit,
        has_more: offset + page.messages.length < page.total,
        data: page.messages.map((entry) => Object.assign({}, entry.message, { tokens: entry.tokens })),
      };
    },
  );

  app.delete<{ Params: { id: string } }>('/v1/sessions/:id', async (request) => {
    const key = keyOf(request);
    const deleted = await sessionStore.delete(key).catch((error: unknown) => {
      throw storeUnavailable(error);
    });
    if (!deleted) throw notFound(key.sessionId);
    return { object: 'session.deleted', id: key.sessionId, deleted: true };
  });
}
