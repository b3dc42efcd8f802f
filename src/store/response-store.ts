// Stored responses (the Responses API's `store`): each under its tenant, with the chat messages of its
// own turn and the ids of the responses before it in its chain, so a chain is read in one round trip
// (MGET; one tenant's keys share a Redis Cluster slot). Records expire like sessions. In process when
// there is no Redis, bounded (the oldest go first).
import { GatewayError } from '../errors.js';
import type { RedisConnection } from './redis-client.js';

export interface StoredResponse {
  id: string;
  tenantId: string;
  /** Ids of the responses before this one in its chain, oldest first. */
  chain: string[];
  /** The chat messages this response's turn added: its input, then the assistant's reply. */
  messages: Array<Record<string, unknown>>;
  /** Its input items as sent (GET /v1/responses/{id}/input_items). */
  inputItems: Array<Record<string, unknown>>;
  /** The Response object as returned. */
  response: Record<string, unknown>;
}

export interface ResponseStore {
  put(record: StoredResponse): Promise<void>;
  /** The records of `ids` in order; undefined for each that does not exist (or is another tenant's). */
  getMany(tenantId: string, ids: readonly string[]): Promise<Array<StoredResponse | undefined>>;
  delete(tenantId: string, id: string): Promise<boolean>;
}

const unavailable = (error: unknown) =>
  new GatewayError('session_store_unavailable', 'The response store is unavailable; try again.', {
    cause: error,
  });

export function createMemoryResponseStore(options: {
  ttlSeconds: number;
  maxRecords?: number;
  now?: () => number;
}): ResponseStore {
  const now = options.now ?? Date.now;
  const maxRecords = options.maxRecords ?? 100_000;
  const records = new Map<string, { record: StoredResponse; expiresAtMs: number }>();
  const keyOf = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;
  return {
    async put(record) {
      const key = keyOf(record.tenantId, record.id);
      records.delete(key);
      records.set(key, { record, expiresAtMs: now() + options.ttlSeconds * 1000 });
      while (records.size > maxRecords) records.delete(records.keys().next().value as string);
    },
    async getMany(tenantId, ids) {
      return ids.map((id) => {
        const entry = records.get(keyOf(tenantId, id));
        if (entry === undefined || entry.expiresAtMs <= now()) return undefined;
        return entry.record;
      });
    },
    async delete(tenantId, id) {
      return records.delete(keyOf(tenantId, id));
    },
  };
}

export function createRedisResponseStore(options: {
  redis: RedisConnection;
  ttlSeconds: number;
}): ResponseStore {
  const { redis } = options;
  // The tenant in braces: one tenant's responses share a Cluster slot, so a chain is one MGET.
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
      return values.map((value) => (value === null ? undefined : (JSON.parse(value) as StoredResponse)));
    },
    async delete(tenantId, id) {
      const removed = await redis.del(keyOf(tenantId, id)).catch((error: unknown) => {
        throw unavailable(error);
      });
      return removed > 0;
    },
  };
}
