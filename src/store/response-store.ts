// Stored responses (the Responses API's `store`): each under its tenant, in three parts — what a chain
// needs of it (its turn's chat messages, their token count, the response it continues and its chain's
// first), its links (the ids of the nearest earlier responses), and the rest (the Response object and
// its input items, read only when a client asks for them). A record never repeats its whole chain, and
// a chain is read back newest first in batches — one MGET per batch of 64, which brings the next
// links too — parsing only what a chain needs. Records expire like sessions. One tenant's keys share a
// Redis Cluster slot. In process when there is no Redis, bounded by bytes (the least recently used go
// first).
import { GatewayError } from '../errors.js';
import { decodeUtf8 } from '../json-body.js';
import { valueAt, withValuesAt, type JsonPath } from '../json-paths.js';
import { arrayElementSpans } from '../json-spans.js';
import type { RedisConnection } from './redis-client.js';
import { jsonChars } from './json-chars.js';

/** A record's part over this many bytes (or characters) is written to Redis on its own. */
const largePartBytes = 1024 * 1024;

/** Ids of the nearest earlier responses a record keeps: a chain is read this many links per round trip. */
export const ancestorLinks = 64;

/** What reading a chain needs of one response. */
export interface ChainRecord {
  id: string;
  /** The response this one continues (its previous_response_id); undefined at a chain's start. */
  previousId: string | undefined;
  /** The first response of its chain (its own id at a chain's start). */
  rootId: string;
  /** Its place in its chain: 1 at the start. */
  depth: number;
  /** Chat messages of its chain before its own. */
  messagesBefore: number;
  /** The chat messages this response's turn added: its input, then the assistant's reply. */
  messages: Array<Record<string, unknown>>;
  /** The token count of `messages`, by the model's encoding when it was stored. */
  tokens: number;
}

export interface StoredResponse extends ChainRecord {
  tenantId: string;
  /** Ids of the nearest earlier responses of its chain, newest first, at most `ancestorLinks`. */
  ancestors: string[];
  /** Its input items as sent, without fields the API does not define (GET /v1/responses/{id}/input_items). */
  inputItems: Array<Record<string, unknown>>;
  /** The Response object as returned. */
  response: Record<string, unknown>;
  /**
   * The record as a store that writes JSON holds it (Redis): writers of `messages` and `inputItems` as
   * JSON (mostly from the client's own bytes), written instead of the values. A string of the input items
   * or the Response that a message holds too is held once, by the messages (`shared`): `inputItems`
   * writes, and `response` is, what the record holds with each of them null (heldOnce).
   */
  json?:
    | {
        messages: JsonArrayWriter;
        inputItems: JsonArrayWriter;
        response?: Record<string, unknown>;
        shared?: readonly SharedString[];
      }
    | undefined;
}

/**
 * A string of a record's input items or its Response that one of its messages holds too — an input
 * item's text that became a message's, the answer in the Response's output: where it stands among them
 * (`['inputItems', 2, 'output']`, `['response', 'output', 0, 'content', 0, 'text']`), and in the
 * messages (`[2, 'content']`).
 */
export type SharedString = readonly [at: JsonPath, from: JsonPath];

/** Writes an array as JSON between the JSON text `before` and `after`, into one buffer. */
export type JsonArrayWriter = (before: string, after: string) => Buffer;

export interface ChainListing {
  rootId: string;
  /** The newest response of the chain, and its depth (responses in the chain). */
  headId: string;
  depth: number;
  updatedAtMs: number;
}

/** A chain part as read back: with the JSON bytes of each of its messages where the store holds them. */
export interface ReadChainRecord extends ChainRecord {
  /**
   * Each message's JSON as the store holds it (Redis: the bytes written, the client's where they were
   * its own), aligned with `messages`: a continuation sends them as they are instead of serializing and
   * encoding each message again. Undefined in process, and for records of an earlier format.
   */
  messageBytes?: readonly Buffer[];
}

export interface ChainBatch {
  /** The chain parts of the ids asked for, in order; undefined for each that does not exist. */
  records: Array<ReadChainRecord | undefined>;
  /** The links (nearest earlier ids, newest first) of `linksOf`, when it was asked for and exists. */
  links: string[] | undefined;
}

export interface ResponseStore {
  put(record: StoredResponse): Promise<void>;
  /** Chain parts of `ids` (another tenant's do not exist), and the links of `linksOf`, in one call. */
  readChain(tenantId: string, ids: readonly string[], linksOf?: string): Promise<ChainBatch>;
  /** The whole record, or undefined. */
  get(tenantId: string, id: string): Promise<StoredResponse | undefined>;
  /**
   * Input and output items of the tenant's stored responses, by their ids (an `item_reference`); undefined
   * for each that no stored response of the tenant holds.
   */
  findItems(
    tenantId: string,
    itemIds: readonly string[],
  ): Promise<Array<Record<string, unknown> | undefined>>;
  delete(tenantId: string, id: string): Promise<boolean>;
  /**
   * The tenant's chains, most recently extended first (docs/inspector.md): each by its first response,
   * with its newest response and how long it is.
   */
  listChains(
    tenantId: string,
    page: { offset: number; limit: number },
  ): Promise<{ total: number; chains: ChainListing[] }>;
  /** False while the store cannot take a write (Redis not connected): checked before an upstream call. */
  available(): boolean;
}

const unavailable = (error: unknown) =>
  new GatewayError('session_store_unavailable', 'The response store is unavailable; try again.', {
    cause: error,
  });

/** Item ids longer than this are not indexed (a client may name its items; OpenAI's ids are ~50). */
const maxItemIdChars = 128;

/**
 * The id of input item `index` of response `responseId` (`resp_` and 48 hex digits): `msg_`, those 48
 * digits and 8 more for its position — hex, as other item ids. A store finds the record holding an item
 * so named without an index entry of its own (ownerNamedIn), so a request of ten thousand input items
 * writes none for them. Another response id gives an id that names nothing: it is indexed.
 */
export function inputItemId(responseId: string, index: number): string {
  return `msg_${responseId.slice(responseId.indexOf('_') + 1)}${index.toString(16).padStart(8, '0')}`;
}

const inputItemIdPattern = /^msg_([0-9a-f]{48})[0-9a-f]{8}$/;

/** The Redis key of an item's index entry: the id of the response holding it. */
const itemKey = (tenantId: string, itemId: string): string => `ctxgate:resp:{${tenantId}}:item:${itemId}`;

/** The response an item id made by inputItemId names; undefined for any other id. */
function ownerNamedIn(itemId: string): string | undefined {
  const hex = inputItemIdPattern.exec(itemId)?.[1];
  return hex === undefined ? undefined : `resp_${hex}`;
}

/**
 * The ids of a record's items that need an index entry to be found: all but the input items named
 * after it (inputItemId), which lead to it by their names.
 */
function indexedItemIds(record: Pick<StoredResponse, 'id' | 'inputItems' | 'response'>): string[] {
  const ids: string[] = [];
  forEachItem(record, (itemId) => {
    if (ownerNamedIn(itemId) !== record.id) ids.push(itemId);
  });
  return ids;
}

/** Calls `visit` with each item of a record that has an id: its input items, then its output's. */
function forEachItem(
  record: Pick<StoredResponse, 'inputItems' | 'response'>,
  visit: (itemId: string, item: Record<string, unknown>) => void,
): void {
  const output = Array.isArray(record.response.output) ? (record.response.output as unknown[]) : [];
  for (const items of [record.inputItems, output])
    for (const item of items)
      if (typeof item === 'object' && item !== null) {
        const id = (item as { id?: unknown }).id;
        if (typeof id === 'string' && id !== '' && id.length <= maxItemIdChars)
          visit(id, item as Record<string, unknown>);
      }
}

/** The items a record holds, by id: its input items and the items of its output. */
function itemsOf(
  record: Pick<StoredResponse, 'inputItems' | 'response'>,
): Map<string, Record<string, unknown>> {
  const items = new Map<string, Record<string, unknown>>();
  forEachItem(record, (itemId, item) => items.set(itemId, item));
  return items;
}

/** A record's input items and Response with each `shared` string null, as it holds them once. */
export function heldOnce(
  record: Pick<StoredResponse, 'inputItems' | 'response'>,
  shared: readonly SharedString[],
): Pick<StoredResponse, 'inputItems' | 'response'> {
  if (shared.length === 0) return record;
  const held = withValuesAt(
    { inputItems: record.inputItems, response: record.response },
    shared.map(([at]) => at),
    () => null,
  );
  return held as Pick<StoredResponse, 'inputItems' | 'response'>;
}

/**
 * The input items and Response of a record's rest as Redis holds it (JSON), each string it holds once
 * put back from its messages (read by `messages` only then); undefined when they are gone.
 */
function restOf(
  rest: string,
  messages: () => unknown[] | undefined,
): Pick<StoredResponse, 'inputItems' | 'response'> | undefined {
  const {
    inputItems = [],
    response = {},
    shared,
  } = JSON.parse(rest) as Partial<StoredResponse> & {
    shared?: SharedString[];
  };
  const held = { inputItems, response };
  if (shared === undefined || shared.length === 0) return held;
  const from = messages();
  if (from === undefined) return undefined;
  for (const [at, source] of shared) {
    const container = valueAt(held, at.slice(0, -1));
    const step = at.at(-1) as string | number;
    // Only where a null was written for it.
    if (typeof container === 'object' && container !== null && Object.hasOwn(container, step))
      (container as Record<string | number, unknown>)[step] = valueAt(from, source);
  }
  return held;
}

function chainPart(record: StoredResponse): ChainRecord {
  const { id, previousId, rootId, depth, messagesBefore, messages, tokens } = record;
  return { id, previousId, rootId, depth, messagesBefore, messages, tokens };
}

/** `{"<name>":[…], …fields}`: an object's JSON with one array member the caller writes. */
function withMember(name: string, write: JsonArrayWriter, fields: Record<string, unknown>): Buffer {
  const rest = JSON.stringify(fields);
  return write(`{${JSON.stringify(name)}:`, rest === '{}' ? '}' : `,${rest.slice(1)}`);
}

/** The chain part and the rest of a record as Redis stores them. */
function storedParts(record: StoredResponse): { chain: string | Buffer; rest: string | Buffer } {
  const { json } = record;
  if (json === undefined)
    return {
      chain: JSON.stringify(chainPart(record)),
      rest: JSON.stringify({ inputItems: record.inputItems, response: record.response }),
    };
  const { messages: _messages, ...chain } = chainPart(record);
  const shared = json.shared ?? [];
  return {
    chain: withMember('messages', json.messages, chain),
    rest: withMember('inputItems', json.inputItems, {
      response: json.response ?? record.response,
      ...(shared.length === 0 ? {} : { shared }),
    }),
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
  /** Item ids to the record holding them. */
  const itemIndex = new Map<string, string>();
  let bytes = 0;
  const keyOf = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;
  const remove = (key: string): boolean => {
    const entry = records.get(key);
    if (entry === undefined) return false;
    bytes -= entry.bytes;
    records.delete(key);
    for (const itemId of indexedItemIds(entry.record)) {
      const indexKey = `${entry.record.tenantId}\u0000${itemId}`;
      // A later response holding the same item keeps it findable.
      if (itemIndex.get(indexKey) === entry.record.id) itemIndex.delete(indexKey);
    }
    return true;
  };
  const read = (tenantId: string, id: string): StoredResponse | undefined => {
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
  };
  return {
    async put(written) {
      // The values are held; their JSON is not.
      const { json, ...record } = written;
      const key = keyOf(record.tenantId, record.id);
      remove(key);
      // Two bytes a character: what the strings of a record take in memory, about. A string its
      // messages and its items hold alike (json.shared) is one string in memory: counted once.
      let shared = 0;
      for (const [, from] of json?.shared ?? []) shared += String(valueAt(record.messages, from)).length;
      const size = 2 * (jsonChars(record) - shared);
      records.set(key, { record, expiresAtMs: now() + options.ttlSeconds * 1000, bytes: size });
      // As in Redis: an input item named after its record leads to it by its name.
      for (const itemId of indexedItemIds(record))
        itemIndex.set(`${record.tenantId}\u0000${itemId}`, record.id);
      bytes += size;
      // The least recently used go first; the record just stored stays, alone if it passes the bound by
      // itself (its id has been answered: a client may read or continue it).
      let evicted = 0;
      for (const [oldest] of records) {
        if (bytes <= maxBytes || oldest === key) break;
        remove(oldest);
        evicted++;
      }
      if (evicted > 0) options.onEvict?.(evicted);
    },
    async readChain(tenantId, ids, linksOf) {
      const found = ids.map((id) => read(tenantId, id));
      return {
        records: found.map((record) => (record === undefined ? undefined : chainPart(record))),
        links: linksOf === undefined ? undefined : read(tenantId, linksOf)?.ancestors,
      };
    },
    async get(tenantId, id) {
      return read(tenantId, id);
    },
    async findItems(tenantId, itemIds) {
      // Each record's items by id made once, however many of them are asked for.
      const byResponse = new Map<string, Map<string, Record<string, unknown>> | undefined>();
      return itemIds.map((itemId) => {
        const responseId = itemIndex.get(`${tenantId}\u0000${itemId}`) ?? ownerNamedIn(itemId);
        if (responseId === undefined) return undefined;
        if (!byResponse.has(responseId)) {
          const record = read(tenantId, responseId);
          byResponse.set(responseId, record === undefined ? undefined : itemsOf(record));
        }
        return byResponse.get(responseId)?.get(itemId);
      });
    },
    async delete(tenantId, id) {
      return remove(keyOf(tenantId, id));
    },
    async listChains(tenantId, { offset, limit }) {
      const heads = new Map<string, ChainListing>();
      const prefix = `${tenantId}\u0000`;
      for (const [key, entry] of records) {
        if (!key.startsWith(prefix) || entry.expiresAtMs <= now()) continue;
        const { record } = entry;
        const updatedAtMs = entry.expiresAtMs - options.ttlSeconds * 1000;
        const known = heads.get(record.rootId);
        if (known === undefined || record.depth > known.depth)
          heads.set(record.rootId, {
            rootId: record.rootId,
            headId: record.id,
            depth: record.depth,
            updatedAtMs,
          });
      }
      const chains = [...heads.values()].sort((a, b) => b.updatedAtMs - a.updatedAtMs);
      return { total: chains.length, chains: chains.slice(offset, offset + limit) };
    },
    available: () => true,
  };
}

/** A chain part as stored by an earlier version (one key holding the whole record and its whole chain). */
function chainPartOfEarlier(value: Record<string, unknown>): { part: ChainRecord; links: string[] } {
  const chain = Array.isArray(value.chain) ? (value.chain as string[]) : [];
  const messages = (value.messages ?? []) as Array<Record<string, unknown>>;
  return {
    part: {
      id: String(value.id),
      previousId: chain.at(-1),
      rootId: chain[0] ?? String(value.id),
      depth: chain.length + 1,
      // Not recorded then: an omission notice counts what it can.
      messagesBefore: 0,
      messages,
      tokens: Math.ceil(JSON.stringify(messages).length / 4),
    },
    links: chain.slice(-ancestorLinks).reverse(),
  };
}

/**
 * A record of fewer bytes than this per message (its ids and counts, about 250 bytes, included) has none
 * of its messages' bytes read: a short message is written anew faster than it is found (a chain of
 * 3,000 turns of a sentence each, records of 535 bytes, continued: 50–60 ms of CPU with their bytes
 * found, 38–43 written anew; of 300 turns of about 1 KB of text each: 12.5–17 ms found, 20.5–25.5
 * written anew).
 */
const messageBytesMinAverage = 512;

/**
 * A chain part from the bytes Redis holds, with each message's bytes (`{"messages":[…],…}` as
 * storedParts writes it); a record of an earlier format, of short messages, or of bytes that cannot
 * say which message is which, without them.
 */
function chainRecordOf(bytes: Buffer): ReadChainRecord {
  const parsed = JSON.parse(decodeUtf8(bytes)) as Record<string, unknown>;
  if ('chain' in parsed) return chainPartOfEarlier(parsed).part;
  const record = parsed as unknown as ChainRecord;
  if (bytes.length < messageBytesMinAverage * record.messages.length) return record;
  const spans = arrayElementSpans(bytes, 'messages');
  if (spans?.length !== 2 * record.messages.length) return record;
  const messageBytes = record.messages.map((_message, index) =>
    bytes.subarray(spans[2 * index] as number, spans[2 * index + 1] as number),
  );
  return Object.assign(record, { messageBytes });
}

export function createRedisResponseStore(options: {
  redis: RedisConnection;
  ttlSeconds: number;
}): ResponseStore {
  const { redis } = options;
  // The tenant in braces: one tenant's responses share a Cluster slot, so a batch of a chain is one MGET.
  //   ctxgate:resp:{<tenant>}:<id>        the chain part (JSON)
  //   ctxgate:resp:{<tenant>}:<id>:links  the nearest earlier ids, newest first, comma-separated
  //   ctxgate:resp:{<tenant>}:<id>:rest   the Response object and the input items (JSON)
  //   ctxgate:resp:{<tenant>}:item:<item id>  the id of the response holding that input or output item
  const keyOf = (tenantId: string, id: string) => `ctxgate:resp:{${tenantId}}:${id}`;
  const chainKeys = (tenantId: string) => ({
    chains: `ctxgate:resp:{${tenantId}}:chains`,
    heads: `ctxgate:resp:{${tenantId}}:heads`,
  });
  const fail = (error: unknown): never => {
    throw unavailable(error);
  };
  return {
    async put(record) {
      const key = keyOf(record.tenantId, record.id);
      const ttl = options.ttlSeconds;
      const parts = storedParts(record);
      const write = redis.multi().set(`${key}:links`, record.ancestors.join(','), 'EX', ttl);
      // A large part is written on its own, first: in a transaction ioredis copies every buffer of it
      // once more (a 20 MB request's record: 40 MB). Nothing reads a record before its id is answered,
      // and its links and the indexes that lead to it are written after it.
      const large = [parts.chain, parts.rest].some((part) => part.length > largePartBytes);
      if (large)
        await Promise.all([
          redis.set(key, parts.chain, 'EX', ttl),
          redis.set(`${key}:rest`, parts.rest, 'EX', ttl),
        ]).catch(fail);
      else write.set(key, parts.chain, 'EX', ttl).set(`${key}:rest`, parts.rest, 'EX', ttl);
      for (const itemId of indexedItemIds(record))
        write.set(itemKey(record.tenantId, itemId), record.id, 'EX', ttl);
      // The tenant's chains by when each was last extended, and each chain's newest response.
      const at = Date.now();
      const { chains, heads } = chainKeys(record.tenantId);
      write
        .zadd(chains, at, record.rootId)
        .zremrangebyscore(chains, '-inf', at - ttl * 1000)
        .expire(chains, ttl)
        .hset(heads, record.rootId, JSON.stringify({ headId: record.id, depth: record.depth }))
        .expire(heads, ttl);
      await write.exec().catch(fail);
    },
    async readChain(tenantId, ids, linksOf) {
      const keys = ids.map((id) => keyOf(tenantId, id));
      if (linksOf !== undefined) keys.push(`${keyOf(tenantId, linksOf)}:links`, keyOf(tenantId, linksOf));
      if (keys.length === 0) return { records: [], links: undefined };
      // As bytes: decoded as a request body is (json-body.ts), and each message's bytes kept.
      const values = await redis.mgetBuffer(...keys).catch(fail);
      const records = values
        .slice(0, ids.length)
        .map((value) => (value === null ? undefined : chainRecordOf(value)));
      let links: string[] | undefined;
      if (linksOf !== undefined) {
        const [linkBytes, own] = values.slice(ids.length) as [Buffer | null, Buffer | null];
        const linkText = linkBytes?.toString();
        if (linkText !== undefined) links = linkText === '' ? [] : linkText.split(',');
        // Stored by an earlier version: the links are in the record's own chain.
        else if (own !== null && own.includes('"chain":'))
          links = chainPartOfEarlier(JSON.parse(decodeUtf8(own)) as Record<string, unknown>).links;
      }
      return { records, links };
    },
    async get(tenantId, id) {
      const key = keyOf(tenantId, id);
      const [part, linkText, rest] = await redis.mget(key, `${key}:links`, `${key}:rest`).catch(fail);
      if (part === null || part === undefined) return undefined;
      const parsed = JSON.parse(part) as Record<string, unknown>;
      if ('chain' in parsed) {
        const earlier = chainPartOfEarlier(parsed);
        return Object.assign({}, earlier.part, {
          tenantId,
          ancestors: earlier.links,
          inputItems: (parsed.inputItems ?? []) as Array<Record<string, unknown>>,
          response: (parsed.response ?? {}) as Record<string, unknown>,
        });
      }
      const chain = parsed as unknown as ChainRecord;
      const { inputItems, response } =
        (rest === null || rest === undefined ? undefined : restOf(rest, () => chain.messages)) ?? {};
      return Object.assign({}, chain, {
        tenantId,
        ancestors: linkText === null || linkText === undefined || linkText === '' ? [] : linkText.split(','),
        inputItems: inputItems ?? [],
        response: response ?? {},
      });
    },
    async findItems(tenantId, itemIds) {
      if (itemIds.length === 0) return [];
      const owners = await redis.mget(...itemIds.map((itemId) => itemKey(tenantId, itemId))).catch(fail);
      // An item held by a later response too is found there (its index entry); one named after the
      // response that first held it (inputItemId), in that response.
      itemIds.forEach((itemId, index) => {
        owners[index] ??= ownerNamedIn(itemId) ?? null;
      });
      const responseIds = [...new Set(owners.filter((owner): owner is string => owner !== null))];
      // Each record's rest, and its chain part, which holds the strings the rest shares with it.
      const values =
        responseIds.length === 0
          ? []
          : await redis
              .mget(...responseIds.flatMap((id) => [`${keyOf(tenantId, id)}:rest`, keyOf(tenantId, id)]))
              .catch(fail);
      const byResponse = new Map<string, Map<string, Record<string, unknown>>>();
      responseIds.forEach((id, index) => {
        const [rest, part] = [values[2 * index], values[2 * index + 1]];
        const messages = () =>
          part === null || part === undefined ? undefined : (JSON.parse(part) as ChainRecord).messages;
        const held = rest === null || rest === undefined ? undefined : restOf(rest, messages);
        if (held !== undefined) byResponse.set(id, itemsOf(held));
      });
      return itemIds.map((itemId, index) => {
        const owner = owners[index];
        return owner === null || owner === undefined ? undefined : byResponse.get(owner)?.get(itemId);
      });
    },
    async delete(tenantId, id) {
      const key = keyOf(tenantId, id);
      const rest = await redis.get(`${key}:rest`).catch(fail);
      const heldKeys =
        rest === null
          ? []
          : indexedItemIds({
              id,
              ...(JSON.parse(rest) as Pick<StoredResponse, 'inputItems' | 'response'>),
            }).map((itemId) => itemKey(tenantId, itemId));
      // An item a later response also holds stays findable through it.
      const owners = heldKeys.length === 0 ? [] : await redis.mget(...heldKeys).catch(fail);
      const itemKeys = heldKeys.filter((_, index) => owners[index] === id);
      const removed = await redis.del(key, `${key}:links`, `${key}:rest`, ...itemKeys).catch(fail);
      return removed > 0;
    },
    async listChains(tenantId, { offset, limit }) {
      const { chains, heads } = chainKeys(tenantId);
      const since = Date.now() - options.ttlSeconds * 1000;
      const found = (await redis
        .zrevrangebyscore(chains, '+inf', since, 'WITHSCORES')
        .catch(fail)) as string[];
      const total = found.length / 2;
      const page: Array<{ rootId: string; updatedAtMs: number }> = [];
      for (let at = offset * 2; at < found.length && page.length < limit; at += 2)
        page.push({ rootId: found[at] as string, updatedAtMs: Number(found[at + 1]) });
      if (page.length === 0) return { total, chains: [] };
      const values = await redis.hmget(heads, ...page.map((entry) => entry.rootId)).catch(fail);
      return {
        total,
        chains: page.map((entry, index) => {
          const head = JSON.parse(values[index] ?? '{}') as { headId?: string; depth?: number };
          return Object.assign({}, entry, { headId: head.headId ?? entry.rootId, depth: head.depth ?? 1 });
        }),
      };
    },
    available: () => redis.status === 'ready',
  };
}
