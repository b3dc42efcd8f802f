// Stored responses (the Responses API's `store`): each under its tenant, with the chat messages of its
// own turn, their token count, and links to the responses before it — the one it continues, its
// chain's first, and the ids of the nearest earlier ones — so a record never repeats its whole chain
// and a chain is read back in batches (one MGET per batch; one tenant's keys share a Redis Cluster
// slot), newest first, only as far as a request can use. Records expire like sessions. In process when
// there is no Redis, bounded by bytes (the least recently used go first).
import { GatewayError } from '../errors.js';
import type { RedisConnection } from './redis-client.js';

/** Ids of the nearest earlier responses a record keeps: a chain is read this many links per round trip. */
export const ancestorLinks = 64;

export interface StoredResponse {
  id: string;
  tenantId: string;
  /** The response this one continues (its previous_response_id); undefined at a chain's start. */
  previousId: string | undefined;
  /** The first response of its chain (its own id at a chain's start). */
  rootId: string;
  /** Its place in its chain: 1 at the start. */
  depth: number;
  /** Ids of the nearest earlier responses of its chain, newest first, at most `ancestorLinks`. */
  ancestors: string[];
  /** Chat messages of its chain before its own. */
  messagesBefore: number;
  /** The chat messages this response's turn added: its input, then the assistant's reply. */
  messages: Array<Record<string, unknown>>;
  /** The token count of `messages`, by the model's encoding when it was stored. */
  tokens: number;
  /** Its input items as sent, without fields the API does not define (GET /v1/responses/{id}/input_items). */
  inputItems: Array<Record<string, unknown>>;
  /** The Response object as returned. */
  response: Record<string, unknown>;
}

export interface ResponseStore {
  put(record: StoredResponse): Promise<void>;
  /** The records of `ids` in order; undefined for each that does not exist (or is another tenant's). */
  getMany(tenantId: string, ids: readonly string[]): Promise<Array<StoredResponse | undefined>>;
  delete(tenantId: string, id: string): Promise<boolean>;
  /** False while the store cannot take a write (Redis not connected): checked before an upstream call. */
  available(): boolean;
}

const unavailable = (error: unknown) =>
  new GatewayError('session_store_unavailable', 'The response store is unavailable; try again.', {
    cause: error,
  });

/**
 * A record as read: one written before records linked their chain (a `chain` of every earlier id)
 * is read with the same links, so chains stored by an earlier version keep working.
 */
function readRecord(value: Record<string, unknown>): StoredResponse {
  if (Array.isArray(value.ancestors)) return value as unknown as StoredResponse;
  const chain = Array.isArray(value.chain) ? (value.chain as string[]) : [];
  const messages = (value.messages ?? []) as Array<Record<string, unknown>>;
  return {
    id: String(value.id),
    tenantId: String(value.tenantId),
    previousId: chain.at(-1),
    rootId: chain[0] ?? String(value.id),
    depth: chain.length + 1,
    ancestors: chain.slice(-ancestorLinks).reverse(),
    // Not recorded then: an omission notice counts what it can.
    messagesBefore: 0,
    messages,
    tokens: Math.ceil(JSON.stringify(messages).length / 4),
    inputItems: (value.inputItems ?? []) as Array<Record<string, unknown>>,
    response: (value.response ?? {}) as Record<string, unknown>,
  };
}

export function createMemoryResponseStore(options: {
  ttlSeconds: number;
  /** Bytes of records (as JSON) held at most; past them the least recently used go. */
  maxBytes?: number;
  now?: () => number;
  /** Told how many records left to make room. */
  onEvict?: (records: number) => void;
}): ResponseStore {
  const now = options.now ?? Date.now;
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const records = new Map<string, { record: StoredResponse; expiresAtMs: number; bytes: number }>();
  let bytes = 0;
  const keyOf = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;
  const remove = (key: string): boolean => {
    const entry = records.get(key);
    if (entry === undefined) return false;
    bytes -= entry.bytes;
    records.delete(key);
    return true;
  };
  return {
    async put(record) {
      const key = keyOf(record.tenantId, record.id);
      remove(key);
      // Two bytes a character: what the strings of a record take in memory, about.
      const size = 2 * JSON.stringify(record).length;
      if (size > maxBytes) return;
      records.set(key, { record, expiresAtMs: now() + options.ttlSeconds * 1000, bytes: size });
      bytes += size;
      let evicted = 0;
      for (const [oldest] of records) {
        if (bytes <= maxBytes) break;
        remove(oldest);
        evicted++;
      }
      if (evicted > 0) options.onEvict?.(evicted);
    },
    async getMany(tenantId, ids) {
      return ids.map((id) => {
        const key = keyOf(tenantId, id);
        const entry = records.get(key);
        if (entry === undefined) return undefined;
        if (entry.expiresAtMs <= now()) {
          remove(key);
          return undefined;
        }
        // Most recently used last: eviction takes the first.
        records.delete(key);
        records.set(key, entry);
        return entry.record;
      });
    },
    async delete(tenantId, id) {
      return remove(keyOf(tenantId, id));
    },
    available: () => true,
  };
}

export function createRedisResponseStore(options: {
  redis: RedisConnection;
  ttlSeconds: number;
}): ResponseStore {
  const { redis } = options;
  // The tenant in braces: one tenant's responses share a Cluster slot, so a batch of a chain is one MGET.
  const keyOf = (tenantId: string, id: string) => `ctxgate:resp:{${tenantId}}:${id}`;
  return {
    async put(record) {
      await redis
        .set(keyOf(record.tenantId, record.id), JSON.stringify(record), 'EX', options.ttlSeconds)
        .catch((error: unknown) => {
          throw unavailable(error);
        });
    },
    async getMany(tenantId, ids) {
      if (ids.length === 0) return [];
      const values = await redis.mget(...ids.map((id) => keyOf(tenantId, id))).catch((error: unknown) => {
        throw unavailable(error);
      });
      return values.map((value) =>
        value === null ? undefined : readRecord(JSON.parse(value) as Record<string, unknown>),
      );
    },
    async delete(tenantId, id) {
      const removed = await redis.del(keyOf(tenantId, id)).catch((error: unknown) => {
        throw unavailable(error);
      });
      return removed > 0;
    },
    available: () => redis.status === 'ready',
  };
}
