// Stored responses, in process and in a real Redis: one tenant never reads another's, a chain's
// records come back in order in one call, records expire like sessions, and deleting says whether
// there was anything to delete.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedisConnection, type RedisConnection } from '../../src/store/redis-client.js';
import { withHeldOnce } from '../helpers/held-once.js';
import { startRedisCluster, type RunningCluster } from '../helpers/redis-cluster.js';
import {
  createMemoryResponseStore,
  createRedisResponseStore,
  inputItemId,
  type SharedString,
  type ResponseStore,
  type StoredResponse,
} from '../../src/store/response-store.js';

const record = (tenantId: string, id: string, ancestors: string[] = [], text = id): StoredResponse => ({
  id,
  tenantId,
  previousId: ancestors[0],
  rootId: ancestors.at(-1) ?? id,
  depth: ancestors.length + 1,
  ancestors,
  messagesBefore: ancestors.length,
  messages: [{ role: 'user', content: text }],
  tokens: 8,
  inputItems: [],
  response: { id, object: 'response' },
});

const connections: RedisConnection[] = [];
let cluster: Promise<RunningCluster> | undefined;
afterAll(async () => {
  for (const redis of connections) redis.disconnect();
  await (await cluster)?.stop();
});

async function redisStore(
  ttlSeconds: number,
  mode: 'standalone' | 'cluster' = 'standalone',
): Promise<{ store: ResponseStore; redis: RedisConnection }> {
  if (mode === 'cluster') cluster ??= startRedisCluster();
  const redis =
    mode === 'cluster'
      ? createRedisConnection({ mode: 'cluster', nodes: (await (cluster as Promise<RunningCluster>)).nodes })
      : createRedisConnection({ mode: 'standalone', url: inject('redisUrl') });
  connections.push(redis);
  for (let attempt = 0; attempt < 100 && redis.status !== 'ready'; attempt++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  return { store: createRedisResponseStore({ redis, ttlSeconds }), redis };
}

describe.each([
  ['in process', async () => createMemoryResponseStore({ ttlSeconds: 60 })],
  ['in Redis', async () => (await redisStore(60)).store],
  // A chain is one MGET: a tenant's keys share a slot (its id in braces), or the cluster would refuse it.
  ['in a Redis Cluster (3 masters)', async () => (await redisStore(60, 'cluster')).store],
])('the response store %s', (_name, make) => {
  it('lists a tenant’s chains by their newest response, most recently extended first', async () => {
    const store = await make();
    const [a, b] = [`tenant-${randomUUID()}`, `tenant-${randomUUID()}`];
    await store.put(record(a, 'resp_1'));
    await store.put(record(b, 'resp_b'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.put(record(a, 'resp_9'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.put(record(a, 'resp_2', ['resp_1']));
    const listed = await store.listChains(a, { offset: 0, limit: 10 });
    expect(listed.total).toBe(2);
    expect(listed.chains.map(({ rootId, headId, depth }) => ({ rootId, headId, depth }))).toEqual([
      { rootId: 'resp_1', headId: 'resp_2', depth: 2 },
      { rootId: 'resp_9', headId: 'resp_9', depth: 1 },
    ]);
    expect((await store.listChains(a, { offset: 1, limit: 1 })).chains.map((chain) => chain.rootId)).toEqual([
      'resp_9',
    ]);
    expect((await store.listChains(b, { offset: 0, limit: 10 })).chains.map((chain) => chain.headId)).toEqual(
      ['resp_b'],
    );
  });

  it('keeps tenants apart, reads a chain in order, and deletes once', async () => {
    const store = await make();
    const [a, b] = [`tenant-${randomUUID()}`, `tenant-${randomUUID()}`];
    await store.put(record(a, 'resp_1'));
    await store.put(record(a, 'resp_2', ['resp_1']));
    const batch = await store.readChain(a, ['resp_2', 'resp_1', 'resp_x'], 'resp_2');
    expect(batch.records.map((found) => found?.id)).toEqual(['resp_2', 'resp_1', undefined]);
    // The chain part only: messages and links, never the response object or the input items (and, from
    // Redis, each message's bytes: below).
    const { messageBytes: _bytes, ...part } = batch.records[0] ?? {};
    expect(part).toEqual({
      id: 'resp_2',
      previousId: 'resp_1',
      rootId: 'resp_1',
      depth: 2,
      messagesBefore: 1,
      messages: [{ role: 'user', content: 'resp_2' }],
      tokens: 8,
    });
    expect(batch.links).toEqual(['resp_1']);
    expect(await store.get(a, 'resp_2')).toEqual(record(a, 'resp_2', ['resp_1']));
    expect((await store.readChain(b, ['resp_1'], 'resp_1')).records).toEqual([undefined]);
    expect(await store.get(b, 'resp_1')).toBeUndefined();
    expect(await store.delete(b, 'resp_1')).toBe(false);
    expect(await store.delete(a, 'resp_1')).toBe(true);
    expect(await store.delete(a, 'resp_1')).toBe(false);
  });

  it("finds a stored response's input and output items by id, for its tenant only, until it is deleted", async () => {
    const store = await make();
    const [a, b] = [`tenant-${randomUUID()}`, `tenant-${randomUUID()}`];
    const asked = { type: 'message', id: 'msg_in1', role: 'user', content: 'Pick a word.' };
    const said = {
      type: 'message',
      id: 'msg_out1',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Larkspur' }],
    };
    await store.put({
      ...record(a, 'resp_1'),
      inputItems: [asked],
      response: { id: 'resp_1', output: [said] },
    });
    expect(await store.findItems(a, ['msg_out1', 'msg_nowhere', 'msg_in1'])).toEqual([
      said,
      undefined,
      asked,
    ]);
    expect(await store.findItems(b, ['msg_out1'])).toEqual([undefined]);
    // A later response that holds the same item (its input referred to it) keeps it findable.
    await store.put({
      ...record(a, 'resp_2', ['resp_1']),
      inputItems: [said],
      response: { id: 'resp_2', output: [] },
    });
    expect(await store.delete(a, 'resp_1')).toBe(true);
    expect(await store.findItems(a, ['msg_out1', 'msg_in1'])).toEqual([said, undefined]);
    expect(await store.delete(a, 'resp_2')).toBe(true);
    expect(await store.findItems(a, ['msg_out1'])).toEqual([undefined]);
  });

  it('finds input items named after their response, in a later response that holds one too, and in none other', async () => {
    const store = await make();
    const [a, b] = [`tenant-${randomUUID()}`, `tenant-${randomUUID()}`];
    const first = `resp_${'a1'.repeat(24)}`;
    const later = `resp_${'b2'.repeat(24)}`;
    const item = (index: number) => ({
      type: 'message',
      id: inputItemId(first, index),
      role: 'user',
      content: `Word ${index}.`,
    });
    const [asked, toldToo] = [item(0), item(1)];
    await store.put({
      ...record(a, first),
      inputItems: [asked, toldToo],
      response: { id: first, output: [] },
    });
    // A name that points at a response which never held it, or at another tenant's, finds nothing.
    const forged = inputItemId(first, 7);
    expect(await store.findItems(a, [toldToo.id, forged, asked.id])).toEqual([toldToo, undefined, asked]);
    expect(await store.findItems(b, [asked.id])).toEqual([undefined]);
    // The client sends one of them again, under its name: the later response holds it, and keeps it
    // findable once the first is gone.
    const again = { ...asked, content: 'Word 0, again.' };
    await store.put({
      ...record(a, later, [first]),
      inputItems: [again],
      response: { id: later, output: [] },
    });
    expect(await store.findItems(a, [asked.id])).toEqual([again]);
    expect(await store.delete(a, first)).toBe(true);
    expect(await store.findItems(a, [asked.id, toldToo.id])).toEqual([again, undefined]);
    expect(await store.delete(a, later)).toBe(true);
    expect(await store.findItems(a, [asked.id])).toEqual([undefined]);
  });
});

describe('the Redis response store’s item index', () => {
  it('holds no entry for input items named after their response, and one for every other item', async () => {
    const { store, redis } = await redisStore(60);
    const tenant = `tenant-${randomUUID()}`;
    const id = `resp_${'c3'.repeat(24)}`;
    const named = Array.from({ length: 50 }, (_unused, index) => ({
      type: 'message',
      id: inputItemId(id, index),
      role: 'user',
      content: `${index}`,
    }));
    const own = { type: 'message', id: 'msg_clients_own', role: 'user', content: 'mine' };
    const output = { type: 'message', id: 'msg_out', role: 'assistant', content: [] };
    await store.put({
      ...record(tenant, id),
      inputItems: [...named, own],
      response: { id, output: [output] },
    });

    const indexed = await redis.keys(`ctxgate:resp:{${tenant}}:item:*`);
    expect(indexed.sort()).toEqual([
      `ctxgate:resp:{${tenant}}:item:msg_clients_own`,
      `ctxgate:resp:{${tenant}}:item:msg_out`,
    ]);
    expect(await store.findItems(tenant, [named[49]?.id as string, 'msg_clients_own'])).toEqual([
      named[49],
      own,
    ]);
  });
});

/** A record whose messages and input items its caller writes as JSON itself: indented, é as an escape. */
function writtenRecord(tenantId: string, id: string, messageCount: number): StoredResponse {
  const messages = Array.from({ length: messageCount }, (_unused, index) => ({
    role: index % 2 === 0 ? 'user' : 'assistant',
    content: `Café ${index}: ${'x'.repeat(900)}`,
  }));
  const inputItems = messages.map((message, index) => ({ id: `msg_${index}`, type: 'message', ...message }));
  const writer = (values: unknown[]) => (before: string, after: string) =>
    Buffer.from(`${before}${JSON.stringify(values, null, 1).replace(/é/g, '\\u00e9')}${after}`);
  return {
    ...record(tenantId, id),
    messages,
    inputItems,
    json: { messages: writer(messages), inputItems: writer(inputItems) },
  };
}

describe('the in-process response store, given the JSON of a record', () => {
  it('holds the values, not the writers', async () => {
    const store = createMemoryResponseStore({ ttlSeconds: 60 });
    const written = writtenRecord('acme', 'resp_1', 3);
    await store.put(written);
    const { json: _json, ...values } = written;
    const held = await store.get('acme', 'resp_1');
    expect(held).toEqual(values);
    expect(held).not.toHaveProperty('json');
  });
});

describe('the Redis response store, given the JSON of a record', () => {
  it.each([
    ['small, in one transaction', 3],
    ['over 1 MB, its large parts first', 1_200],
  ])('stores the bytes its caller wrote, read back as the same values (%s)', async (_name, count) => {
    const { store, redis } = await redisStore(60);
    const tenant = `tenant-${randomUUID()}`;
    const written = writtenRecord(tenant, 'resp_1', count);
    await store.put(written);
    const { json: _json, ...values } = written;
    const batch = await store.readChain(tenant, ['resp_1'], 'resp_1');
    expect(batch.records[0]?.messages).toEqual(values.messages);
    expect(batch.links).toEqual([]);
    // Each message's bytes as they were written (the writer's spaces and escapes), for a continuation
    // to send as they are: one per message, in order.
    const messageBytes = batch.records[0]?.messageBytes?.map(String) ?? [];
    expect(messageBytes.map((bytes) => JSON.parse(bytes) as unknown)).toEqual(values.messages);
    messageBytes.forEach((bytes, index) => expect(bytes).toContain(`"content": "Caf\\u00e9 ${index}: `));
    expect(await store.get(tenant, 'resp_1')).toEqual(values);
    expect(await store.findItems(tenant, [`msg_${count - 1}`])).toEqual([values.inputItems.at(-1)]);
    // What Redis holds is what the writers wrote, not the values written again.
    const stored = await redis.get(`ctxgate:resp:{${tenant}}:resp_1`);
    const rest = await redis.get(`ctxgate:resp:{${tenant}}:resp_1:rest`);
    expect(stored).toContain('"content": "Caf\\u00e9 0: ');
    expect(rest).toContain('"content": "Caf\\u00e9 0: ');
  });
});

/** A record whose input item and answer are texts of its messages, which it holds once. */
function sharedRecord(tenantId: string, id: string): StoredResponse {
  const [asked, answer] = [`Café, asked: ${'q'.repeat(600)}`, `Answered "${'a'.repeat(600)}"`];
  const messages = [
    { role: 'user', content: asked },
    { role: 'assistant', content: answer },
  ];
  const inputItems = [{ id: 'msg_asked', type: 'message', role: 'user', content: asked }];
  const response = {
    id,
    object: 'response',
    output: [{ id: 'msg_answer', type: 'message', content: [{ type: 'output_text', text: answer }] }],
  };
  const shared: SharedString[] = [
    [
      ['inputItems', 0, 'content'],
      [0, 'content'],
    ],
    [
      ['response', 'output', 0, 'content', 0, 'text'],
      [1, 'content'],
    ],
  ];
  return withHeldOnce({ ...record(tenantId, id), messages, inputItems, response }, shared);
}

describe('the Redis response store, given strings its record holds once', () => {
  it('holds each in the messages only, and reads the record back whole: get, item ids, chain', async () => {
    const { store, redis } = await redisStore(60);
    const tenant = `tenant-${randomUUID()}`;
    const written = sharedRecord(tenant, 'resp_1');
    await store.put(written);
    const { json: _json, ...values } = written;
    const held = await redis.mget(`ctxgate:resp:{${tenant}}:resp_1`, `ctxgate:resp:{${tenant}}:resp_1:rest`);
    for (const message of values.messages)
      expect(held.join('').split(JSON.stringify(message.content)).length - 1).toBe(1);
    expect(await store.get(tenant, 'resp_1')).toEqual(values);
    expect(await store.findItems(tenant, ['msg_asked', 'msg_answer'])).toEqual([
      values.inputItems[0],
      (values.response.output as unknown[])[0],
    ]);
    expect((await store.readChain(tenant, ['resp_1'])).records[0]?.messages).toEqual(values.messages);
    // The values given are not changed by holding them once.
    expect(written.inputItems[0]?.content).toBe(values.messages[0]?.content);
  });

  it('finds none of a record’s items once its messages are gone', async () => {
    const { store, redis } = await redisStore(60);
    const tenant = `tenant-${randomUUID()}`;
    await store.put(sharedRecord(tenant, 'resp_1'));
    await redis.del(`ctxgate:resp:{${tenant}}:resp_1`);
    expect(await store.findItems(tenant, ['msg_asked', 'msg_answer'])).toEqual([undefined, undefined]);
  });
});

describe('expiry', () => {
  it('forgets a record after the session TTL in process', async () => {
    let nowMs = 1_000_000;
    const store = createMemoryResponseStore({ ttlSeconds: 10, now: () => nowMs });
    await store.put(record('t', 'resp_old'));
    nowMs += 9_999;
    expect((await store.get('t', 'resp_old'))?.id).toBe('resp_old');
    nowMs += 2;
    expect(await store.get('t', 'resp_old')).toBeUndefined();
  });

  it('sets the session TTL on the Redis key', async () => {
    const { store, redis } = await redisStore(123);
    const tenant = `tenant-${randomUUID()}`;
    await store.put(record(tenant, 'resp_ttl'));
    const ttl = await redis.ttl(`ctxgate:resp:{${tenant}}:resp_ttl`);
    expect(ttl).toBeGreaterThan(100);
    expect(ttl).toBeLessThanOrEqual(123);
  });

  it('holds at most maxBytes in process, the least recently used going first, the newest always', async () => {
    const size = 2 * JSON.stringify(record('t', 'r1', [], 'x'.repeat(1_000))).length;
    let evicted = 0;
    const store = createMemoryResponseStore({
      ttlSeconds: 60,
      maxBytes: size * 2 + 10,
      onEvict: (records) => (evicted += records),
    });
    await store.put(record('t', 'r1', [], 'x'.repeat(1_000)));
    await store.put(record('t', 'r2', [], 'x'.repeat(1_000)));
    // Read: r1 is now the most recently used, and r2 goes when r3 arrives.
    await store.get('t', 'r1');
    await store.put(record('t', 'r3', [], 'x'.repeat(1_000)));
    expect((await store.readChain('t', ['r1', 'r2', 'r3'])).records.map((found) => found?.id)).toEqual([
      'r1',
      undefined,
      'r3',
    ]);
    expect(evicted).toBe(1);
    // A record larger than the whole bound is kept, alone: its id has been answered.
    await store.put(record('t', 'huge', [], 'x'.repeat(size * 4)));
    expect((await store.get('t', 'huge'))?.id).toBe('huge');
    expect((await store.readChain('t', ['r1', 'r3'])).records).toEqual([undefined, undefined]);
    expect(evicted).toBe(3);
  });

  it('weighs a string that a record’s messages and its items hold once, as memory holds it', async () => {
    // Records whose input item and answer are their messages' strings (1.2 KB of text each): a bound
    // of 2.2 records weighed with those strings twice holds three weighed with them once.
    const { json: _json, ...values } = sharedRecord('t', 'r1');
    const twice = 2 * JSON.stringify(values).length;
    const store = createMemoryResponseStore({ ttlSeconds: 60, maxBytes: Math.round(twice * 2.2) });
    for (const id of ['r1', 'r2', 'r3']) await store.put(sharedRecord('t', id));
    const kept = (await store.readChain('t', ['r1', 'r2', 'r3'])).records.map((found) => found?.id);
    expect(kept).toEqual(['r1', 'r2', 'r3']);
  });

  it('reads a record an earlier version stored with its whole chain, with the same links', async () => {
    const { store, redis } = await redisStore(60);
    const tenant = `tenant-${randomUUID()}`;
    await redis.set(
      `ctxgate:resp:{${tenant}}:resp_3`,
      JSON.stringify({
        id: 'resp_3',
        tenantId: tenant,
        chain: ['resp_1', 'resp_2'],
        messages: [{ role: 'user', content: 'third' }],
        inputItems: [],
        response: { id: 'resp_3' },
      }),
    );
    const read = await store.get(tenant, 'resp_3');
    expect(read).toMatchObject({
      previousId: 'resp_2',
      rootId: 'resp_1',
      depth: 3,
      ancestors: ['resp_2', 'resp_1'],
      response: { id: 'resp_3' },
    });
    const batch = await store.readChain(tenant, ['resp_3'], 'resp_3');
    expect(batch.records[0]).toMatchObject({ previousId: 'resp_2', rootId: 'resp_1', depth: 3 });
    expect(batch.links).toEqual(['resp_2', 'resp_1']);
  });
});
