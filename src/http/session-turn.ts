// One turn of a session (SPEC §4): hold the session, load it, work out which incoming messages are new,
// hand the whole conversation to the context engine (stored messages keep their stored token counts),
// and after a successful answer append the new messages and the reply in one versioned write.
import type { IncomingHttpHeaders } from 'node:http';
import { canonicalMessage, newMessagesStart, type HistoryMode } from '../context/reconcile.js';
import { countMessageTokens } from '../context/token-accounting.js';
import { isSystemRole } from '../context/turns.js';
import type { ContextMessage, Tokenizer } from '../context/types.js';
import { GatewayError } from '../errors.js';
import type {
  SessionHold,
  SessionKey,
  SessionSnapshot,
  SessionStore,
  StoredMessage,
} from '../store/session-store.js';
import { releaseEventually } from '../store/session-store.js';

/** What a session id may be (SPEC §3): the header and the sessions API path alike. */
export const sessionIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

export interface SessionTurn {
  sessionId: string;
  /** System prompt, stored messages, then the new ones: what the context engine renders. */
  conversation: ContextMessage[];
  /** Token count of a message of `conversation`: stored counts for stored messages. */
  countMessage(message: ContextMessage): number;
  /** Messages the session will hold once this turn is committed (reply included). */
  messagesAfterCommit: number;
  /** Appends the new messages and the reply in one write; throws a GatewayError when it cannot. */
  commit(reply: Record<string, unknown> | undefined): Promise<void>;
  release(): Promise<void>;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function sessionIdFrom(headers: IncomingHttpHeaders): string | undefined {
  const sessionId = headerValue(headers, 'x-session-id');
  if (sessionId === undefined) return undefined;
  if (!sessionIdPattern.test(sessionId)) {
    throw new GatewayError(
      'invalid_header',
      'Invalid header x-session-id: expected 1-128 letters, digits, ".", "_", ":" or "-".',
      { param: 'x-session-id' },
    );
  }
  return sessionId;
}

function historyModeFrom(headers: IncomingHttpHeaders): HistoryMode {
  const mode = headerValue(headers, 'x-session-history') ?? 'auto';
  if (mode !== 'auto' && mode !== 'delta' && mode !== 'full') {
    throw new GatewayError(
      'invalid_header',
      "Invalid header x-session-history: expected 'auto', 'delta' or 'full'.",
      { param: 'x-session-history' },
    );
  }
  return mode;
}

export function storeUnavailable(cause: unknown): GatewayError {
  return new GatewayError(
    'session_store_unavailable',
    'The session store is unavailable; retry shortly. Requests without X-Session-Id are not affected.',
    { cause },
  );
}

/**
 * After a write whose outcome is unknown: true when the session now holds exactly this turn (its
 * version moved on by one and ends with the appended messages). Polls briefly while Redis comes back.
 */
async function wasCommitted(
  store: SessionStore,
  key: SessionKey,
  expectedVersion: number,
  append: readonly StoredMessage[],
): Promise<boolean> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    try {
      const after = await store.load(key);
      if (after.version !== expectedVersion + 1 || after.messages.length < append.length) return false;
      const tail = after.messages.slice(after.messages.length - append.length);
      return tail.every(
        (stored, index) =>
          canonicalMessage(stored.message as ContextMessage) ===
          canonicalMessage(append[index]?.message as ContextMessage),
      );
    } catch {
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export async function beginSessionTurn(options: {
  store: SessionStore;
  key: SessionKey;
  headers: IncomingHttpHeaders;
  incoming: readonly ContextMessage[];
  tokenizer: Tokenizer;
  holdMs: number;
}): Promise<SessionTurn> {
  const { store, key, tokenizer } = options;
  const mode = historyModeFrom(options.headers);
  let hold: SessionHold | undefined;
  try {
    hold = await store.acquire(key, options.holdMs);
  } catch (error) {
    throw storeUnavailable(error);
  }
  if (hold === undefined) {
    throw new GatewayError(
      'session_busy',
      'Another request is in progress for this session; retry when it has finished.',
      { param: 'x-session-id' },
    );
  }
  const taken = hold;
  let snapshot: SessionSnapshot;
  try {
    snapshot = await store.load(key);
  } catch (error) {
    await releaseEventually(() => store.release(key, taken), taken.expiresAtMs);
    throw storeUnavailable(error);
  }

  const incomingSystem = options.incoming.filter((message) => isSystemRole(message.role));
  const incomingHistory = options.incoming.filter((message) => !isSystemRole(message.role));
  const systemPrompt =
    (incomingSystem.at(-1) as Record<string, unknown> | undefined) ?? snapshot.systemPrompt;
  const stored = snapshot.messages.map((entry) => entry.message as ContextMessage);
  const newMessages = incomingHistory.slice(newMessagesStart(stored, incomingHistory, mode));

  const knownTokens = new WeakMap<object, number>();
  snapshot.messages.forEach((entry, index) => knownTokens.set(stored[index] as ContextMessage, entry.tokens));
  const countMessage = (message: ContextMessage): number =>
    knownTokens.get(message) ?? countMessageTokens(message, tokenizer);
  const conversation = [
    ...(systemPrompt === undefined ? [] : [systemPrompt as ContextMessage]),
    ...stored,
    ...newMessages,
  ];
  let released = false;

  return {
    sessionId: key.sessionId,
    conversation,
    countMessage,
    messagesAfterCommit: snapshot.archivedCount + stored.length + newMessages.length + 1,
    async commit(reply) {
      const append: StoredMessage[] = newMessages.map((message) => ({
        message: message as Record<string, unknown>,
        tokens: countMessage(message),
      }));
      if (reply !== undefined)
        append.push({ message: reply, tokens: countMessageTokens(reply as ContextMessage, tokenizer) });
      let outcome: Awaited<ReturnType<SessionStore['commit']>>;
      try {
        outcome = await store.commit(key, {
          hold: taken,
          expectedVersion: snapshot.version,
          append,
          systemPrompt: incomingSystem.length > 0 ? systemPrompt : undefined,
          historyStart: 0,
        });
      } catch (error) {
        // The write may have been applied with its reply lost (Redis going down right after it): telling
        // the client to retry then would store the turn twice. Find out what happened first.
        if (await wasCommitted(store, key, snapshot.version, append)) {
          released = true;
          return;
        }
        throw storeUnavailable(error);
      }
      if (!outcome.ok) {
        // The hold expired (the turn outlived sessions.hold_ms) and the session moved on: storing this
        // turn now could duplicate or reorder messages, so it is not stored and the client must retry.
        throw new GatewayError(
          'session_conflict',
          'The session changed while this request was running; the answer was not stored. Retry the request.',
          {
            param: 'x-session-id',
          },
        );
      }
      released = true;
    },
    async release() {
      if (released) return;
      released = true;
      await releaseEventually(() => store.release(key, taken), taken.expiresAtMs);
    },
  };
}
