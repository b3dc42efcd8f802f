// The Redis session store: the SessionStore contract on a real redis-server and a real local Redis
// Cluster of three masters, and what only it has — the replica cache and summaries not sent again.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { SessionSnapshot, SessionStore, StoredMessage } from '../../src/store/session-store.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { createRedisSessionStore } from '../../src/store/redis-session-store.js';
import { startRedisCluster, type RunningCluster } from '../helpers/redis-cluster.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { commitTurns, requestReport, storeSummary } from '../helpers/stored-turns.js';
import { describeSessionStoreContract } from './session-store-contract.js';
import { serializeChatBody } from '../../src/chat/chat-body.js';
import type { ContextMessage } from '../../src/context/types.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A loaded session without where its message bytes lie (a replica's own memory, laid out as its loads
 * came), once each message's bytes are found there.
 */
function laidOut(snapshot: SessionSnapshot): Omit<SessionSnapshot, 'messageRuns'> {
  const { messageRuns, ...rest } = snapshot;
  (snapshot.messageBytes ?? []).forEach((bytes, index) => {
    expect(
      messageRuns?.memory.subarray(messageRuns.starts[index], messageRuns.ends[index]).equals(bytes),
    ).toBe(true);
  });
  return rest;
}

describeSessionStoreContract('redis-server', (limits) =>
  createRedisSessionStore({
    redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
    limits,
  }),
);

let cluster: Promise<RunningCluster> | undefined;
afterAll(async () => {
  await (await cluster)?.stop();
});

describeSessionStoreContract('redis cluster (3 masters)', async (limits) => {
  cluster ??= startRedisCluster();
  const { nodes } = await cluster;
  return createRedisSessionStore({ redis: createRedisConnection({ mode: 'cluster', nodes }), limits });
});

/** Two stores on the test's redis-server, as two replicas of the gateway have, connected. */
async function twoReplicas(): Promise<[SessionStore, SessionStore]> {
  const limits = { maxActiveMessages: 40, minActiveMessages: 1, idleTtlSeconds: 3_600 };
  const connect = () =>
    createRedisSessionStore({
      redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
      limits,
    });
  const replicas: [SessionStore, SessionStore] = [connect(), connect()];
  for (const store of replicas)
    for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++) await sleep(50);
  return replicas;
}

describe('Redis session store: the replica cache', () => {
  it('lets two replicas committing in turn load exactly what a store without a cache loads', async () => {
    const limits = { maxActiveMessages: 40, minActiveMessages: 3, idleTtlSeconds: 3_600 };
    const connect = (cacheBytes?: number) =>
      createRedisSessionStore({
        redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
        limits,
        ...(cacheBytes === undefined ? {} : { cacheBytes }),
      });
    const replicas = [connect(), connect()];
    const reference = connect(0);
    const stores = [...replicas, reference];
    try {
      for (const store of stores)
        for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++) await sleep(50);
      const key = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId: 'cache-check' };
      let seed = 7;
      const random = (): number => {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        return seed / 2_147_483_648;
      };
      let sent: StoredMessage[] = [];
      let version = 0;
      for (let turn = 0; turn < 80; turn++) {
        if (turn === 50) {
          // A deleted and recreated session: the other replica's cached copy belongs to the old one.
          expect(await (replicas[0] as SessionStore).delete(key)).toBe(true);
          sent = [];
          version = 0;
        }
        const store = replicas[random() < 0.5 ? 0 : 1] as SessionStore;
        const hold = await store.acquire(key, 10_000);
        expect(hold).toBeDefined();
        const loaded = await store.load(key);
        const expected = await reference.load(key);
        expect(laidOut(loaded)).toEqual(laidOut(expected));
        expect(loaded.version).toBe(version);
        const append = Array.from({ length: 1 + Math.floor(random() * 4) }, (_unused, index) => ({
          message: { role: index === 0 ? 'user' : 'assistant', content: `turn ${turn} part ${index} ✓` },
          tokens: 1 + Math.floor(random() * 30),
        }));
        const outcome = await store.commit(key, {
          hold: hold!,
          expectedVersion: version,
          append,
          historyStart: 0,
          activeTokenLimit: 40 + Math.floor(random() * 160),
          headMessages: turn === 52 || turn === 3 ? 2 : 0,
        });
        expect(outcome).toEqual({ ok: true, version: version + 1 });
        version++;
        sent.push(...append);
        if (random() < 0.2) {
          // A summary moves messages to the archive outside any turn: the caches must follow it too.
          const before = await reference.load(key);
          const from = before.headMessages + before.archivedCount;
          const lock = await store.acquireSummaryLock(key, 10_000);
          // Whole older turns only: up to the second turn start after the head, never the last turn.
          const starts = before.messages
            .map((entry, index) =>
              entry.message.role === 'user' && index > before.headMessages ? index : -1,
            )
            .filter((index) => index >= 0);
          const boundary = starts.length >= 2 ? (starts[0] as number) : before.headMessages;
          const covered = boundary - before.headMessages;
          if (lock !== undefined && covered > 0) {
            const summary = {
              text: `summary ${turn}`,
              tokens: 5,
              fromMessage: before.headMessages,
              toMessage: from + covered,
              coveredTokens: 1,
              updatedAtMs: turn,
            };
            expect(
              await store.storeSummary(key, {
                lockToken: lock,
                expectedToMessage: before.summary?.toMessage ?? 0,
                summary,
              }),
            ).toEqual({ ok: true, archivedMessages: covered });
          }
          if (lock !== undefined) await store.releaseSummaryLock(key, lock);
        }
      }
      const after = await reference.load(key);
      expect(after.archivedCount).toBeGreaterThan(0);
      expect((await reference.history(key, 0, 1_000)).messages).toEqual(sent);
      for (const store of replicas) expect(laidOut(await store.load(key))).toEqual(laidOut(after));
    } finally {
      for (const store of stores) await store.close();
    }
  });

  it('hands out one frozen summary object while the stored summary is unchanged, and the new one once it changes', async () => {
    const [replica, other] = await twoReplicas();
    try {
      const key = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId: 'summary-once' };
      await commitTurns(replica, key, 4);
      const summaryOf = (text: string, toMessage: number) => ({
        text,
        tokens: 9,
        fromMessage: 0,
        toMessage,
        coveredTokens: toMessage * 3,
        updatedAtMs: toMessage,
      });
      await storeSummary(other, key, 0, summaryOf('the first two turns ✓', 4));
      const first = await replica.load(key);
      const again = await replica.load(key);
      expect(first.summary).toEqual(summaryOf('the first two turns ✓', 4));
      expect(again.summary).toBe(first.summary);
      expect(Object.isFrozen(first.summary)).toBe(true);
      // Another replica wrote a new one: read as it now is, a new object.
      await storeSummary(other, key, 4, summaryOf('the first three turns ✓', 6));
      const changed = await replica.load(key);
      expect(changed.summary).toEqual(summaryOf('the first three turns ✓', 6));
      expect(changed.summary).not.toBe(first.summary);
      expect(first.summary?.text).toBe('the first two turns ✓');
    } finally {
      for (const store of [replica, other]) await store.close();
    }
  });

  it("hands out one frozen array of earlier turns' in-turn summaries while it is unchanged, and a new one once it changes", async () => {
    const [replica, other] = await twoReplicas();
    try {
      const key = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId: 'past-turn-summaries' };
      const turnSummaryOf = (turn: number) => ({
        text: `turn ${turn}'s first steps ✓`,
        tokens: 8,
        turnStart: 2 * turn,
        toMessage: 2 * turn + 1,
        steps: 0,
        coveredTokens: 0,
        updatedAtMs: turn,
      });
      // Each turn gets an in-turn summary, stored by the other replica.
      const turn = async (index: number) => {
        const hold = (await other.acquire(key, 10_000))!;
        await other.commit(key, {
          hold,
          expectedVersion: index,
          append: [
            { message: { role: 'user', content: `task ${index}` }, tokens: 3 },
            { message: { role: 'assistant', content: `done ${index}` }, tokens: 3 },
          ],
          historyStart: 0,
          activeTokenLimit: 1_000_000,
        });
        const lockToken = (await other.acquireSummaryLock(key, 10_000))!;
        expect(
          await other.storeTurnSummary(key, {
            lockToken,
            expectedToMessage: 0,
            summary: turnSummaryOf(index),
          }),
        ).toEqual({ ok: true, archivedMessages: 0 });
        await other.releaseSummaryLock(key, lockToken);
      };
      for (let index = 0; index < 3; index++) await turn(index);
      const first = await replica.load(key);
      const again = await replica.load(key);
      expect(first.pastTurnSummaries).toEqual([turnSummaryOf(0), turnSummaryOf(1)]);
      expect(again.pastTurnSummaries).toBe(first.pastTurnSummaries);
      expect(Object.isFrozen(first.pastTurnSummaries)).toBe(true);
      await turn(3);
      const changed = await replica.load(key);
      expect(changed.pastTurnSummaries).toEqual([turnSummaryOf(0), turnSummaryOf(1), turnSummaryOf(2)]);
      expect(changed.pastTurnSummaries).not.toBe(first.pastTurnSummaries);
    } finally {
      for (const store of [replica, other]) await store.close();
    }
  });

  it('sends a replica a summary it holds at the session’s revision only once, and one rewritten by a build without revisions again (a redis-server of its own: its output bytes are this test’s)', async () => {
    const redis = await startRedisServer();
    const connect = () =>
      createRedisSessionStore({
        redis: createRedisConnection({ mode: 'standalone', url: redis.url }),
        limits: { maxActiveMessages: 40, minActiveMessages: 1, idleTtlSeconds: 3_600 },
      });
    const [replica, other] = [connect(), connect()];
    const admin = createRedisConnection({ mode: 'standalone', url: redis.url });
    const sentBytes = async (): Promise<number> =>
      Number(/total_net_output_bytes:(\d+)/.exec(await admin.info('stats'))?.[1]);
    try {
      for (const store of [replica, other])
        for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++) await sleep(50);
      for (let attempt = 0; attempt < 100 && admin.status !== 'ready'; attempt++) await sleep(50);
      const key = { tenantId: 't-held', sessionId: 'held-summary' };
      await commitTurns(replica, key, 4);
      const text = 'タイムアウト vault 7 ✓ '.repeat(2_000);
      const summary = { text, tokens: 9, fromMessage: 0, toMessage: 4, coveredTokens: 12, updatedAtMs: 1 };
      const size = Buffer.byteLength(JSON.stringify(summary));
      await storeSummary(other, key, 0, summary);
      const first = await replica.load(key);
      expect(first.summary).toEqual(summary);
      // Five more loads, and five turns taken the way a request takes them: the summary is not sent again.
      const before = await sentBytes();
      for (let load = 0; load < 5; load++) expect((await replica.load(key)).summary).toBe(first.summary);
      for (let turn = 0; turn < 5; turn++) {
        const { hold, snapshot } = (await replica.acquireAndLoad(key, 10_000))!;
        expect(snapshot.summary).toBe(first.summary);
        await replica.release(key, hold);
      }
      expect(await sentBytes()).toBeLessThan(before + size / 2);
      // A build that kept no revision (a rolling upgrade) rewrites the summary as its script did:
      // the revision stays, the bytes differ, and the replica reads the new one.
      const older = { ...summary, text: `${text} and more`, toMessage: 4, updatedAtMs: 2 };
      await admin.hset(`ctxgate:{${key.tenantId}:${key.sessionId}}:meta`, 'summary', JSON.stringify(older));
      expect((await replica.load(key)).summary).toEqual(older);
      // A store that holds nothing is sent it whole, and loads the same.
      const fresh = connect();
      try {
        for (let attempt = 0; attempt < 100 && !(await fresh.ping()); attempt++) await sleep(50);
        const freshBefore = await sentBytes();
        expect(laidOut(await fresh.load(key))).toEqual(laidOut(await replica.load(key)));
        expect(await sentBytes()).toBeGreaterThan(freshBefore + size);
      } finally {
        await fresh.close();
      }
    } finally {
      for (const store of [replica, other]) await store.close();
      admin.disconnect();
      await redis.stop();
    }
  });

  it('sends a replica the system prompt it holds only once, with its bytes; a new one, one of the same length and one rewritten by a build without revisions are read again (a redis-server of its own)', async () => {
    const redis = await startRedisServer();
    const connect = () =>
      createRedisSessionStore({
        redis: createRedisConnection({ mode: 'standalone', url: redis.url }),
        limits: { maxActiveMessages: 40, minActiveMessages: 1, idleTtlSeconds: 3_600 },
      });
    const replica = connect();
    const admin = createRedisConnection({ mode: 'standalone', url: redis.url });
    const sentBytes = async (): Promise<number> =>
      Number(/total_net_output_bytes:(\d+)/.exec(await admin.info('stats'))?.[1]);
    const key = { tenantId: 't-held', sessionId: 'held-system-prompt' };
    // An agent's instructions, as Codex and Claude Code send theirs: tens of KB.
    const prompt = (marker: string) => ({
      role: 'system',
      content: `Agent ${marker}: follow "the rules" ✓ `.repeat(1_500),
    });
    const commit = async (systemPrompt: Record<string, unknown> | undefined) => {
      const hold = await replica.acquire(key, 10_000);
      const { version } = await replica.load(key);
      await replica.commit(key, {
        hold: hold!,
        expectedVersion: version,
        append: [{ message: { role: 'user', content: `question ${version}` }, tokens: 3 }],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
        systemPrompt,
      });
    };
    try {
      for (let attempt = 0; attempt < 100 && !(await replica.ping()); attempt++) await sleep(50);
      for (let attempt = 0; attempt < 100 && admin.status !== 'ready'; attempt++) await sleep(50);
      const first = prompt('A');
      const size = Buffer.byteLength(JSON.stringify(first));
      await commit(first);
      const loaded = await replica.load(key);
      expect(loaded.systemPrompt).toEqual(first);
      expect(Object.isFrozen(loaded.systemPrompt)).toBe(true);
      expect(loaded.systemPromptBytes?.toString('utf8')).toBe(JSON.stringify(first));
      // Five loads, five turns taken as a request takes them, and turns that keep it: not sent again.
      const before = await sentBytes();
      for (let load = 0; load < 5; load++)
        expect((await replica.load(key)).systemPrompt).toBe(loaded.systemPrompt);
      for (let turn = 0; turn < 5; turn++) {
        const { hold, snapshot } = (await replica.acquireAndLoad(key, 10_000))!;
        expect(snapshot.systemPrompt).toBe(loaded.systemPrompt);
        expect(snapshot.systemPromptBytes).toBe(loaded.systemPromptBytes);
        await replica.release(key, hold);
      }
      await commit(undefined);
      expect((await replica.load(key)).systemPrompt).toBe(loaded.systemPrompt);
      expect(await sentBytes()).toBeLessThan(before + size / 2);
      // A new one of the same length (a date in the instructions moved on) is read.
      const next = prompt('B');
      expect(Buffer.byteLength(JSON.stringify(next))).toBe(size);
      await commit(next);
      const changed = await replica.load(key);
      expect(changed.systemPrompt).toEqual(next);
      expect(changed.systemPromptBytes?.toString('utf8')).toBe(JSON.stringify(next));
      // A build that kept no revision (a rolling upgrade) writes one of another length: read too.
      const older = prompt('an older build');
      await admin.hset(
        `ctxgate:{${key.tenantId}:${key.sessionId}}:meta`,
        'systemPrompt',
        JSON.stringify(older),
      );
      expect((await replica.load(key)).systemPrompt).toEqual(older);
      // A store that holds nothing is sent it whole, and loads the same.
      const fresh = connect();
      try {
        for (let attempt = 0; attempt < 100 && !(await fresh.ping()); attempt++) await sleep(50);
        const freshBefore = await sentBytes();
        expect((await fresh.load(key)).systemPrompt).toEqual(older);
        expect(await sentBytes()).toBeGreaterThan(freshBefore + size);
      } finally {
        await fresh.close();
      }
    } finally {
      await replica.close();
      admin.disconnect();
      await redis.stop();
    }
  });

  it("keeps each message's bytes as its JSON while turns are appended one by one and spill: a body built from them is exact", async () => {
    const store = createRedisSessionStore({
      redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
      limits: { maxActiveMessages: 150, minActiveMessages: 100, idleTtlSeconds: 3_600 },
    });
    try {
      for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++) await sleep(50);
      const key = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId: 'bytes-check' };
      for (let turn = 0; turn < 140; turn++) {
        const hold = await store.acquire(key, 10_000);
        const loaded = await store.load(key);
        const messages = loaded.messages.map((entry) => entry.message as ContextMessage);
        const request = { model: 'm', messages: [], temperature: 0 };
        // Every other message, as a render that leaves some out sends them: runs of one and of many.
        const sent = messages.filter((_message, index) => index % 5 !== 3);
        const sentBytes = (loaded.messageBytes ?? []).filter((_bytes, index) => index % 5 !== 3);
        expect(serializeChatBody(request, sent, sentBytes).toString('utf8')).toBe(
          JSON.stringify({ ...request, messages: sent }),
        );
        await store.commit(key, {
          hold: hold!,
          expectedVersion: loaded.version,
          append: [
            { message: { role: 'user', content: `question ${turn} — ✓ "quoted"` }, tokens: 3 },
            { message: { role: 'assistant', content: `answer ${turn}` }, tokens: 2 },
          ],
          historyStart: 0,
          activeTokenLimit: 100_000,
        });
      }
      expect((await store.load(key)).archivedCount).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });
});

describe('Redis session store: the tenant index, written in batches', () => {
  /** Two replicas on one Redis: A's batch interval ends when the test runs `due`; B's never by itself. */
  async function batchingReplicas() {
    const limits = { maxActiveMessages: 40, minActiveMessages: 1, idleTtlSeconds: 3_600 };
    const due: Array<() => void> = [];
    const connect = (schedule: (run: () => void) => () => void) =>
      createRedisSessionStore({
        redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
        limits,
        activitySchedule: schedule,
      });
    const a = connect((run) => {
      due.push(run);
      return () => undefined;
    });
    // Only a listing writes B's batch.
    const b = connect(() => () => undefined);
    for (const store of [a, b])
      for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++) await sleep(50);
    return { a, b, due };
  }

  it('shows a replica’s activity to another once its batch is written; a session’s time only moves forward', async () => {
    const { a, b, due } = await batchingReplicas();
    try {
      const tenantId = `t-${randomUUID().slice(0, 8)}`;
      const key = { tenantId, sessionId: 'batched' };
      const at = Date.now();
      const report = (time: number) => requestReport(time, 10);
      const hold = (await a.acquire(key, 10_000))!;
      const committed = await a.commit(key, {
        hold,
        expectedVersion: 0,
        append: [
          { message: { role: 'user', content: 'hello' }, tokens: 5 },
          { message: { role: 'assistant', content: 'hi' }, tokens: 2 },
        ],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
        report: report(at),
      });
      expect(committed.ok).toBe(true);
      // The turn and its report are stored; the index waits for A's batch.
      expect(await b.requestReports(key, 5)).toEqual([report(at)]);
      expect((await b.listSessions(tenantId, { offset: 0, limit: 10 })).total).toBe(0);
      expect(due).toHaveLength(1);
      for (const run of due.splice(0)) run();
      await expect
        .poll(async () => (await b.listSessions(tenantId, { offset: 0, limit: 10 })).sessions)
        .toEqual([{ sessionId: 'batched', lastActiveMs: at }]);
      // B records an older request of the same session: its batch does not move the time back.
      await b.recordRequest(key, report(at - 5_000));
      expect((await b.listSessions(tenantId, { offset: 0, limit: 10 })).sessions).toEqual([
        { sessionId: 'batched', lastActiveMs: at },
      ]);
      await b.recordRequest(key, report(at + 5_000));
      expect((await b.listSessions(tenantId, { offset: 0, limit: 10 })).sessions).toEqual([
        { sessionId: 'batched', lastActiveMs: at + 5_000 },
      ]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('does not list a session deleted on one replica when another replica’s batch for it lands after the delete', async () => {
    const { a, b, due } = await batchingReplicas();
    try {
      const tenantId = `t-${randomUUID().slice(0, 8)}`;
      const key = { tenantId, sessionId: 'deleted-meanwhile' };
      const turn = async (store: typeof a, expectedVersion: number, at: number) => {
        const hold = (await store.acquire(key, 10_000))!;
        return store.commit(key, {
          hold,
          expectedVersion,
          append: [{ message: { role: 'user', content: 'hello' }, tokens: 5 }],
          historyStart: 0,
          activeTokenLimit: 1_000_000,
          report: requestReport(at, 10),
        });
      };
      // A answers a turn; its batch for the index is still waiting when B deletes the session.
      expect((await turn(a, 0, Date.now() - 1_000)).ok).toBe(true);
      expect(await b.delete(key)).toBe(true);
      expect(due).toHaveLength(1);
      for (const run of due.splice(0)) run();
      await a.listSessions(tenantId, { offset: 0, limit: 10 });
      // A's batch has landed (A's own listing writes it first): it does not bring the session back.
      expect(await b.listSessions(tenantId, { offset: 0, limit: 10 })).toEqual({ total: 0, sessions: [] });
      expect(await a.listSessions(tenantId, { offset: 0, limit: 10 })).toEqual({ total: 0, sessions: [] });
      // A session started again under the same id after the delete is listed.
      const again = Date.now() + 1_000;
      expect((await turn(a, 0, again)).ok).toBe(true);
      expect((await b.listSessions(tenantId, { offset: 0, limit: 10 })).total).toBe(0);
      expect((await a.listSessions(tenantId, { offset: 0, limit: 10 })).sessions).toEqual([
        { sessionId: 'deleted-meanwhile', lastActiveMs: again },
      ]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
