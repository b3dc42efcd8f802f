// One contract for every SessionStore implementation: the memory store and real Redis servers run the
// same cases.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  maxPastTurnSummaries,
  type SessionKey,
  type SessionLimits,
  type SessionStore,
  type StoredMessage,
  type TurnSummary,
} from '../../src/store/session-store.js';
import { requestReport } from '../helpers/stored-turns.js';

export type StoreFactory = (limits: SessionLimits) => SessionStore | Promise<SessionStore>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const stored = (role: string, content: string, tokens: number): StoredMessage => ({
  message: { role, content },
  tokens,
});

export function describeSessionStoreContract(name: string, factory: StoreFactory): void {
  describe(`SessionStore contract: ${name}`, () => {
    let store: SessionStore;
    // A store over a network connection fails fast until connected (no offline queue): wait for it.
    const connected = async (candidate: SessionStore): Promise<SessionStore> => {
      for (let attempt = 0; attempt < 100 && !(await candidate.ping()); attempt++) await sleep(50);
      return candidate;
    };
    beforeAll(async () => {
      store = await connected(
        await factory({ maxActiveMessages: 5, minActiveMessages: 1, idleTtlSeconds: 3_600 }),
      );
    });
    // Room for a few turns without spilling, for the summary cases.
    let roomy: SessionStore;
    beforeAll(async () => {
      roomy = await connected(
        await factory({ maxActiveMessages: 50, minActiveMessages: 1, idleTtlSeconds: 3_600 }),
      );
    });
    afterAll(async () => {
      await store.close();
      await roomy.close();
    });
    const freshKey = (): SessionKey => ({
      tenantId: `t-${randomUUID().slice(0, 8)}`,
      sessionId: `s.${randomUUID().slice(0, 8)}:x-1`,
    });

    const report = requestReport;
    const committedSession = async (key: SessionKey): Promise<void> => {
      const hold = (await store.acquire(key, 10_000))!;
      await store.commit(key, {
        hold,
        expectedVersion: 0,
        append: [stored('user', 'hello', 5), stored('assistant', 'hi', 2)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
    };

    it('stores a message and the system prompt as their JSON: what they write out is what is read back', async () => {
      const key = freshKey();
      // A value that writes itself out only in its JSON, as a bridged Messages message's extension does
      // (upstream/anthropic-wire.ts BridgedExtension).
      const written = {
        toJSON: () => ({ blocks: [{ type: 'text', text: 'hello' }], made: '["hello",null]' }),
      };
      const hold = (await store.acquire(key, 10_000))!;
      await store.commit(key, {
        hold,
        expectedVersion: 0,
        append: [{ message: { role: 'user', content: 'hello', ctxgate_anthropic: written }, tokens: 5 }],
        systemPrompt: { role: 'system', content: 'Be brief.', ctxgate_anthropic: written },
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      const extension = { blocks: [{ type: 'text', text: 'hello' }], made: '["hello",null]' };
      const snapshot = await store.load(key);
      expect(snapshot.messages[0]?.message).toEqual({
        role: 'user',
        content: 'hello',
        ctxgate_anthropic: extension,
      });
      expect(snapshot.systemPrompt).toEqual({
        role: 'system',
        content: 'Be brief.',
        ctxgate_anthropic: extension,
      });
    });

    it('keeps a session’s last 200 request reports, newest first, and forgets them with it', async () => {
      const key = freshKey();
      await committedSession(key);
      for (let index = 0; index < 205; index++)
        await store.recordRequest(key, report(1_000 + index, 100 + index));
      const reports = await store.requestReports(key, 500);
      expect(reports).toHaveLength(200);
      expect(reports[0]).toEqual(report(1_204, 304));
      expect(reports.at(-1)).toEqual(report(1_005, 105));
      expect(await store.requestReports(key, 3)).toEqual(reports.slice(0, 3));
      await store.delete(key);
      expect(await store.requestReports(key, 10)).toEqual([]);
    });

    it('keeps no report of a request to a session that is not stored (never, or deleted), nor lists it', async () => {
      const never = freshKey();
      await store.recordRequest(never, report(Date.now(), 3));
      const deleted = { tenantId: never.tenantId, sessionId: `${never.sessionId}-deleted` };
      await committedSession(deleted);
      expect(await store.delete(deleted)).toBe(true);
      // A request that was answered but not stored, reported after the delete (its hold was lost).
      await store.recordRequest(deleted, report(Date.now(), 4));
      expect(await store.listSessions(never.tenantId, { offset: 0, limit: 10 })).toEqual({
        total: 0,
        sessions: [],
      });
      // The same ids used again start with no reports of before.
      for (const key of [never, deleted]) {
        await committedSession(key);
        expect(await store.requestReports(key, 10)).toEqual([]);
      }
    });

    it('keeps a stored turn’s report with it in the same write, and lists the session; a refused turn’s is not kept', async () => {
      const key = freshKey();
      const at = Date.now();
      const hold = (await store.acquire(key, 10_000))!;
      const first = await store.commit(key, {
        hold,
        expectedVersion: 0,
        append: [stored('user', 'hello', 5), stored('assistant', 'hi', 2)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
        report: report(at, 7),
      });
      expect(first).toEqual({ ok: true, version: 1 });
      expect(await store.requestReports(key, 10)).toEqual([report(at, 7)]);
      // A commit whose hold is gone stores neither the turn nor its report.
      const refused = await store.commit(key, {
        hold,
        expectedVersion: 1,
        append: [stored('user', 'again', 5), stored('assistant', 'no', 2)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
        report: report(at + 1_000, 9),
      });
      expect(refused).toEqual({ ok: false, reason: 'hold_lost' });
      expect(await store.requestReports(key, 10)).toEqual([report(at, 7)]);
      expect((await store.load(key)).messages).toHaveLength(2);
      // Listed by the stored report's time, on the store that stored it, at once.
      expect(await store.listSessions(key.tenantId, { offset: 0, limit: 10 })).toEqual({
        total: 1,
        sessions: [{ sessionId: key.sessionId, lastActiveMs: at }],
      });
    });

    it('lists a tenant’s sessions by last activity, searchable and paged, and no other tenant’s', async () => {
      const tenantId = `t-${randomUUID().slice(0, 8)}`;
      const keys = ['alpha-1', 'beta-2', 'alpha-3'].map((sessionId) => ({ tenantId, sessionId }));
      const other = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId: 'alpha-9' };
      const start = Date.now();
      for (const [index, key] of [...keys, other].entries()) {
        await committedSession(key);
        await store.recordRequest(key, report(start + index * 1_000, 100));
      }
      const all = await store.listSessions(tenantId, { offset: 0, limit: 10 });
      expect(all.total).toBe(3);
      expect(all.sessions.map((session) => session.sessionId)).toEqual(['alpha-3', 'beta-2', 'alpha-1']);
      const alphas = await store.listSessions(tenantId, { offset: 0, limit: 10, search: 'alpha' });
      expect(alphas.sessions.map((session) => session.sessionId)).toEqual(['alpha-3', 'alpha-1']);
      const second = await store.listSessions(tenantId, { offset: 1, limit: 1 });
      expect(second).toEqual({ total: 3, sessions: [expect.objectContaining({ sessionId: 'beta-2' })] });
      await store.delete(keys[1] as SessionKey);
      expect((await store.listSessions(tenantId, { offset: 0, limit: 10 })).total).toBe(2);
    });

    it('loads a session that does not exist as empty, version 0', async () => {
      const snapshot = await store.load(freshKey());
      expect(snapshot.version).toBe(0);
      expect(snapshot.messages).toEqual([]);
      expect(snapshot.systemPrompt).toBeUndefined();
    });

    it('lets one holder in at a time and frees the session on release', async () => {
      const key = freshKey();
      const hold = await store.acquire(key, 10_000);
      expect(hold).toBeDefined();
      expect(await store.acquire(key, 10_000)).toBeUndefined();
      await store.release(key, hold!);
      const again = await store.acquire(key, 10_000);
      expect(again).toBeDefined();
      await store.release(key, again!);
    });

    it('renews a hold only for its holder, keeping the session held past its first expiry', async () => {
      const key = freshKey();
      // Each wait is past half the hold: a stall of the test's process up to 550 ms changes nothing.
      const hold = (await store.acquire(key, 1_200))!;
      expect(await store.renew(key, { token: 'someone-else', expiresAtMs: 0 }, 10_000)).toBe(false);
      await sleep(650);
      expect(await store.renew(key, hold, 1_200)).toBe(true);
      await sleep(650);
      // 1,300 ms after acquiring with 1,200: held only because it was renewed.
      expect(await store.acquire(key, 10_000)).toBeUndefined();
      await sleep(1_300);
      expect(await store.renew(key, hold, 1_200)).toBe(false);
      const next = await store.acquire(key, 10_000);
      expect(next).toBeDefined();
      await store.release(key, next!);
    });

    it('admits exactly one of many concurrent acquirers', async () => {
      const key = freshKey();
      const holds = await Promise.all(Array.from({ length: 20 }, () => store.acquire(key, 10_000)));
      expect(holds.filter(Boolean)).toHaveLength(1);
    });

    it('takes the hold and reads the session in one step, and reads nothing while another holds it', async () => {
      const key = freshKey();
      const empty = await roomy.acquireAndLoad(key, 10_000);
      expect(empty?.snapshot.version).toBe(0);
      await roomy.commit(key, {
        hold: empty!.hold,
        expectedVersion: 0,
        append: [stored('user', 'q1', 3), stored('assistant', 'a1', 3)],
        historyStart: 0,
        activeTokenLimit: 100_000,
      });
      const taken = await roomy.acquireAndLoad(key, 10_000);
      expect(taken?.snapshot.version).toBe(1);
      expect(taken?.snapshot.messages.map((entry) => entry.message.content)).toEqual(['q1', 'a1']);
      // Held: refused, and the hold is still the first one's (it commits).
      expect(await roomy.acquireAndLoad(key, 10_000)).toBeUndefined();
      expect(await roomy.acquire(key, 10_000)).toBeUndefined();
      const outcome = await roomy.commit(key, {
        hold: taken!.hold,
        expectedVersion: 1,
        append: [stored('user', 'q2', 3), stored('assistant', 'a2', 3)],
        historyStart: 0,
        activeTokenLimit: 100_000,
      });
      expect(outcome.ok).toBe(true);
      // The commit let go of the hold: the next one gets it with the turn just stored.
      const next = await roomy.acquireAndLoad(key, 10_000);
      expect(next?.snapshot.messages.map((entry) => entry.message.content)).toEqual(['q1', 'a1', 'q2', 'a2']);
      await roomy.release(key, next!.hold);
    });

    it('admits exactly one of many concurrent acquirers that also read', async () => {
      const key = freshKey();
      const taken = await Promise.all(Array.from({ length: 20 }, () => store.acquireAndLoad(key, 10_000)));
      expect(taken.filter(Boolean)).toHaveLength(1);
    });

    it('replaces the last turn of a retry: what the last commit appended comes off, once, and the turn key is kept', async () => {
      const key = freshKey();
      const commit = async (
        expectedVersion: number,
        append: StoredMessage[],
        extra: { replaceLast?: number; turnKey?: string } = {},
      ) =>
        roomy.commit(key, {
          hold: (await roomy.acquire(key, 10_000))!,
          expectedVersion,
          append,
          historyStart: 0,
          activeTokenLimit: 1_000_000,
          ...extra,
        });
      await commit(0, [stored('user', 'first', 3), stored('assistant', 'one', 2)]);
      await commit(1, [stored('user', 'second', 3), stored('assistant', 'two', 2)], { turnKey: 'key-2' });
      let snapshot = await roomy.load(key);
      expect(snapshot.lastTurn).toEqual({ messages: 2, key: 'key-2' });
      expect(snapshot.messages.map((entry) => entry.message.content)).toEqual([
        'first',
        'one',
        'second',
        'two',
      ]);
      // Another replica has read the session too: its copy must not keep the replaced messages.
      const replica = await connected(
        await factory({ maxActiveMessages: 50, minActiveMessages: 1, idleTtlSeconds: 3_600 }),
      );
      const shared = (await replica.load(key)).version === 2;
      const outcome = await commit(2, [stored('user', 'second', 3), stored('assistant', 'two again', 4)], {
        replaceLast: 2,
        turnKey: 'key-2',
      });
      expect(outcome).toEqual({ ok: true, version: 3 });
      snapshot = await roomy.load(key);
      expect(snapshot.messages.map((entry) => entry.message.content)).toEqual([
        'first',
        'one',
        'second',
        'two again',
      ]);
      expect(snapshot.lastTurn).toEqual({ messages: 2, key: 'key-2' });
      const history = await roomy.history(key, 0, 10);
      expect(history.total).toBe(4);
      // A memory store is its process's own: there is no other replica to ask.
      if (shared)
        expect((await replica.load(key)).messages.map((entry) => entry.message.content)).toEqual([
          'first',
          'one',
          'second',
          'two again',
        ]);
      await replica.close();
      // A turn after it appends as ever, and carries no key.
      await commit(3, [stored('user', 'third', 3), stored('assistant', 'three', 2)]);
      snapshot = await roomy.load(key);
      expect(snapshot.messages).toHaveLength(6);
      expect(snapshot.lastTurn).toEqual({ messages: 2, key: undefined });
    });

    it('commits messages, system prompt and history start atomically and releases the hold', async () => {
      const key = freshKey();
      const hold = (await store.acquire(key, 10_000))!;
      const outcome = await store.commit(key, {
        hold,
        expectedVersion: 0,
        append: [stored('user', 'hello', 5), stored('assistant', 'hi there', 6)],
        systemPrompt: { role: 'system', content: 'be brief' },
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      expect(outcome).toEqual({ ok: true, version: 1 });
      const snapshot = await store.load(key);
      expect(snapshot.version).toBe(1);
      expect(snapshot.systemPrompt).toEqual({ role: 'system', content: 'be brief' });
      expect(snapshot.messages).toEqual([stored('user', 'hello', 5), stored('assistant', 'hi there', 6)]);
      const next = await store.acquire(key, 10_000);
      expect(next).toBeDefined();
      const second = await store.commit(key, {
        hold: next!,
        expectedVersion: 1,
        append: [stored('user', 'again', 4)],
        historyStart: 2,
        activeTokenLimit: 1_000_000,
      });
      expect(second).toEqual({ ok: true, version: 2 });
      const after = await store.load(key);
      expect(after.systemPrompt).toEqual({ role: 'system', content: 'be brief' });
      expect(after.historyStart).toBe(2);
      expect(after.messages.map((message) => message.message.content)).toEqual([
        'hello',
        'hi there',
        'again',
      ]);
    });

    it('refuses a commit without the current hold, and writes nothing', async () => {
      const key = freshKey();
      const hold = (await store.acquire(key, 10_000))!;
      const outcome = await store.commit(key, {
        hold: { ...hold, token: 'not-the-holder' },
        expectedVersion: 0,
        append: [stored('user', 'x', 1)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      expect(outcome).toEqual({ ok: false, reason: 'hold_lost' });
      expect((await store.load(key)).messages).toEqual([]);
      await store.release(key, hold);
    });

    it('refuses a commit from a holder whose hold expired, even after another holder came and went', async () => {
      const key = freshKey();
      const stale = (await store.acquire(key, 150))!;
      await sleep(300);
      const fresh = (await store.acquire(key, 10_000))!;
      expect(fresh).toBeDefined();
      expect(
        await store.commit(key, {
          hold: fresh,
          expectedVersion: 0,
          append: [stored('user', 'fresh', 1)],
          historyStart: 0,
          activeTokenLimit: 1_000_000,
        }),
      ).toEqual({ ok: true, version: 1 });
      expect(
        await store.commit(key, {
          hold: stale,
          expectedVersion: 0,
          append: [stored('user', 'stale', 1)],
          historyStart: 0,
          activeTokenLimit: 1_000_000,
        }),
      ).toEqual({ ok: false, reason: 'hold_lost' });
      expect((await store.load(key)).messages.map((message) => message.message.content)).toEqual(['fresh']);
    });

    it('refuses a commit based on an old version', async () => {
      const key = freshKey();
      const first = (await store.acquire(key, 10_000))!;
      await store.commit(key, {
        hold: first,
        expectedVersion: 0,
        append: [stored('user', 'one', 1)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      const second = (await store.acquire(key, 10_000))!;
      expect(
        await store.commit(key, {
          hold: second,
          expectedVersion: 0,
          append: [stored('user', 'dup', 1)],
          historyStart: 0,
          activeTokenLimit: 1_000_000,
        }),
      ).toEqual({ ok: false, reason: 'version_conflict' });
      expect((await store.load(key)).messages).toHaveLength(1);
      await store.release(key, second);
    });

    it('bounds the active list, moving older messages to the archive, and pages the full history', async () => {
      const key = freshKey();
      const hold = (await store.acquire(key, 10_000))!;
      const messages = Array.from({ length: 8 }, (_unused, index) =>
        stored(index % 2 === 0 ? 'user' : 'assistant', `m${index}`, index + 1),
      );
      await store.commit(key, {
        hold,
        expectedVersion: 0,
        append: messages,
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      const snapshot = await store.load(key);
      // Whole turns move (a user message and its answer), never half a turn: 4, not 3.
      expect(snapshot.messages).toEqual(messages.slice(4));
      expect(snapshot.archivedCount).toBe(4);
      const all = await store.history(key, 0, 100);
      expect(all.total).toBe(8);
      expect(all.messages).toEqual(messages);
      // A page across the archive/active boundary.
      expect((await store.history(key, 2, 3)).messages).toEqual(messages.slice(2, 5));
      expect((await store.history(key, 7, 10)).messages).toEqual(messages.slice(7));
      expect((await store.history(key, 9, 10)).messages).toEqual([]);
    });

    it('writes thousands of messages in one commit, and moves a turn of thousands to the archive, in order', async () => {
      // A client's first request of a long conversation, or an agent turn of many steps: more messages
      // than one Redis command takes in a script (Lua's unpack), so the write goes in parts.
      const thousands = await connected(
        await factory({ maxActiveMessages: 3_000, minActiveMessages: 1, idleTtlSeconds: 3_600 }),
      );
      const key = freshKey();
      const longTurn = [
        stored('user', 'start', 2),
        ...Array.from({ length: 2_499 }, (_unused, index) => stored('assistant', `step ${index}`, 3)),
      ];
      const first = (await thousands.acquire(key, 10_000))!;
      expect(
        await thousands.commit(key, {
          hold: first,
          expectedVersion: 0,
          append: longTurn,
          historyStart: 0,
          activeTokenLimit: 1_000_000,
        }),
      ).toEqual({ ok: true, version: 1 });
      expect((await thousands.load(key)).messages).toEqual(longTurn);
      // Two more turns take the list past its bound: the long turn moves to the archive whole.
      const next = [
        stored('user', 'next', 2),
        ...Array.from({ length: 599 }, (_unused, index) => stored('assistant', `more ${index}`, 3)),
      ];
      const second = (await thousands.acquire(key, 10_000))!;
      await thousands.commit(key, {
        hold: second,
        expectedVersion: 1,
        append: next,
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      const snapshot = await thousands.load(key);
      expect(snapshot.messages).toEqual(next);
      expect(snapshot.archivedCount).toBe(2_500);
      const all = await thousands.history(key, 0, 4_000);
      expect(all.total).toBe(3_100);
      expect(all.messages).toEqual([...longTurn, ...next]);
      await thousands.close();
    });

    it('keeps about one window of tokens active, never archives the protected head, and pages in order', async () => {
      const windowed = await connected(
        await factory({ maxActiveMessages: 50, minActiveMessages: 2, idleTtlSeconds: 3_600 }),
      );
      try {
        const key = freshKey();
        const all = Array.from({ length: 14 }, (_unused, index) =>
          stored(index % 2 === 0 ? 'user' : 'assistant', `m${index}`, 10),
        );
        // Seven turns of two messages, 10 tokens each; the window allows 60 active tokens, then 1.
        for (let turn = 0; turn < 7; turn++) {
          const hold = (await windowed.acquire(key, 10_000))!;
          const outcome = await windowed.commit(key, {
            hold,
            expectedVersion: turn,
            append: all.slice(turn * 2, turn * 2 + 2),
            historyStart: turn,
            activeTokenLimit: turn === 6 ? 1 : 60,
            // The head is fixed once (2 messages, the first turn); later values are ignored.
            headMessages: turn * 2,
          });
          expect(outcome).toEqual({ ok: true, version: turn + 1 });
          const snapshot = await windowed.load(key);
          if (turn === 3) {
            // 80 tokens: the oldest messages after the head (m2, m3) moved out.
            expect(snapshot.messages.map((entry) => entry.message.content)).toEqual([
              'm0',
              'm1',
              'm4',
              'm5',
              'm6',
              'm7',
            ]);
            expect(snapshot.archivedCount).toBe(2);
            expect(snapshot.headMessages).toBe(2);
          }
        }
        const snapshot = await windowed.load(key);
        // A window of 1 token still keeps the head and the whole newest turn (the minimum of 2 aside).
        expect(snapshot.messages.map((entry) => entry.message.content)).toEqual(['m0', 'm1', 'm12', 'm13']);
        expect(snapshot.archivedCount).toBe(10);
        expect(snapshot.headMessages).toBe(2);
        expect(snapshot.historyStart).toBe(6);
        const history = await windowed.history(key, 0, 100);
        expect(history.total).toBe(14);
        expect(history.messages).toEqual(all);
        // Pages across the head/archive and archive/active boundaries.
        expect((await windowed.history(key, 1, 3)).messages).toEqual(all.slice(1, 4));
        expect((await windowed.history(key, 11, 3)).messages).toEqual(all.slice(11, 14));
      } finally {
        await windowed.close();
      }
    });

    /** A session of `turns` user/assistant pairs (m0, m1, …; 10 tokens each) with the first turn as head. */
    const sessionOfTurns = async (turns: number): Promise<{ key: SessionKey; all: StoredMessage[] }> => {
      const key = freshKey();
      const all = Array.from({ length: turns * 2 }, (_unused, index) =>
        stored(index % 2 === 0 ? 'user' : 'assistant', `m${index}`, 10),
      );
      for (let turn = 0; turn < turns; turn++) {
        const hold = (await roomy.acquire(key, 10_000))!;
        await roomy.commit(key, {
          hold,
          expectedVersion: turn,
          append: all.slice(turn * 2, turn * 2 + 2),
          historyStart: 0,
          activeTokenLimit: 1_000_000,
          headMessages: turn === 1 ? 2 : 0,
        });
      }
      return { key, all };
    };
    const summaryOf = (fromMessage: number, toMessage: number) => ({
      text: `summary of ${fromMessage}-${toMessage} ✓`,
      tokens: 7,
      fromMessage,
      toMessage,
      coveredTokens: (toMessage - fromMessage) * 10,
      updatedAtMs: 1_700_000_000_000,
    });

    it('starts over with a compacted conversation: the one before comes off, archive, head and summaries with it, and a summary being made of it is not stored', async () => {
      const { key } = await sessionOfTurns(3);
      const lock = (await roomy.acquireSummaryLock(key, 10_000))!;
      expect(
        await roomy.storeSummary(key, { lockToken: lock, expectedToMessage: 0, summary: summaryOf(2, 4) }),
      ).toEqual({ ok: true, archivedMessages: 2 });
      const next = (await roomy.acquireSummaryLock(key, 10_000))!;
      // Another replica read the session before it started over: its copy must not keep the old one.
      const replica = await connected(
        await factory({ maxActiveMessages: 50, minActiveMessages: 1, idleTtlSeconds: 3_600 }),
      );
      const shared = (await replica.load(key)).version === 3;
      const before = await roomy.load(key);
      expect([before.archivedCount, before.headMessages, before.summary?.toMessage]).toEqual([2, 2, 4]);
      const compacted = [stored('user', 'summary of m0-m5', 8), stored('assistant', 'm5', 10)];
      expect(
        await roomy.commit(key, {
          hold: (await roomy.acquire(key, 10_000))!,
          expectedVersion: before.version,
          append: [...compacted, stored('user', 'n0', 3), stored('assistant', 'n1', 3)],
          systemPrompt: { role: 'system', content: 'same instructions' },
          historyStart: 0,
          activeTokenLimit: 1_000_000,
          replaceLast: 1,
          startOver: true,
        }),
      ).toEqual({ ok: true, version: 4 });
      const after = await roomy.load(key);
      expect(after.messages.map((entry) => entry.message.content)).toEqual([
        'summary of m0-m5',
        'm5',
        'n0',
        'n1',
      ]);
      expect([after.archivedCount, after.headMessages, after.historyStart]).toEqual([0, 0, 0]);
      expect([after.summary, after.turnSummary, after.pastTurnSummaries]).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
      expect(after.systemPrompt).toEqual({ role: 'system', content: 'same instructions' });
      expect((await roomy.history(key, 0, 100)).total).toBe(4);
      // The job that was summarizing the conversation before lost its lock: its summary is not stored.
      expect(
        await roomy.storeSummary(key, { lockToken: next, expectedToMessage: 4, summary: summaryOf(2, 6) }),
      ).toEqual({ ok: false, reason: 'lock_lost' });
      expect(await roomy.acquireSummaryLock(key, 10_000)).toBeDefined();
      if (shared)
        expect((await replica.load(key)).messages.map((entry) => entry.message.content)).toEqual([
          'summary of m0-m5',
          'm5',
          'n0',
          'n1',
        ]);
      await replica.close();
      // Turns go on from the new conversation; its first turn becomes the head as any session's does.
      await roomy.commit(key, {
        hold: (await roomy.acquire(key, 10_000))!,
        expectedVersion: 4,
        append: [stored('user', 'n2', 3), stored('assistant', 'n3', 3)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
        headMessages: 2,
      });
      const going = await roomy.load(key);
      expect(going.messages).toHaveLength(6);
      expect(going.headMessages).toBe(2);
    });

    it('stores a summary and moves the messages it covers to the archive in one step; turns go on', async () => {
      const { key, all } = await sessionOfTurns(2);
      const loadedByTurn = await roomy.load(key);
      const lock = await roomy.acquireSummaryLock(key, 10_000);
      expect(lock).toBeDefined();
      expect(await roomy.acquireSummaryLock(key, 10_000)).toBeUndefined();
      // A turn that loaded before the summary commits after it: summaries never conflict with turns.
      const hold = (await roomy.acquire(key, 10_000))!;
      expect(
        await roomy.commit(key, {
          hold,
          expectedVersion: loadedByTurn.version,
          append: [stored('user', 'm4', 10), stored('assistant', 'm5', 10)],
          historyStart: 0,
          activeTokenLimit: 1_000_000,
        }),
      ).toEqual({ ok: true, version: 3 });
      all.push(stored('user', 'm4', 10), stored('assistant', 'm5', 10));
      expect(
        await roomy.storeSummary(key, { lockToken: lock!, expectedToMessage: 0, summary: summaryOf(2, 4) }),
      ).toEqual({ ok: true, archivedMessages: 2 });
      const after = await roomy.load(key);
      expect(after.messages.map((entry) => entry.message.content)).toEqual(['m0', 'm1', 'm4', 'm5']);
      expect(after.archivedCount).toBe(2);
      expect(after.version).toBe(3);
      expect(after.summary).toEqual(summaryOf(2, 4));
      expect((await roomy.history(key, 0, 100)).messages).toEqual(all);
      // Another job that started from no summary is refused: the summary moved on without it.
      expect(
        await roomy.storeSummary(key, { lockToken: lock!, expectedToMessage: 0, summary: summaryOf(2, 6) }),
      ).toEqual({ ok: false, reason: 'changed' });
      // A range past the end of the conversation is refused.
      expect(
        await roomy.storeSummary(key, { lockToken: lock!, expectedToMessage: 4, summary: summaryOf(2, 9) }),
      ).toEqual({ ok: false, reason: 'changed' });
      // A summary never covers the current turn (m4, m5): its user message stays active.
      expect(
        await roomy.storeSummary(key, { lockToken: lock!, expectedToMessage: 4, summary: summaryOf(2, 5) }),
      ).toEqual({ ok: false, reason: 'changed' });
      await roomy.releaseSummaryLock(key, lock!);
      const nextHold = (await roomy.acquire(key, 10_000))!;
      await roomy.commit(key, {
        hold: nextHold,
        expectedVersion: 3,
        append: [stored('user', 'm6', 10), stored('assistant', 'm7', 10)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      all.push(stored('user', 'm6', 10), stored('assistant', 'm7', 10));
      const next = (await roomy.acquireSummaryLock(key, 10_000))!;
      expect(
        await roomy.storeSummary(key, { lockToken: next, expectedToMessage: 4, summary: summaryOf(2, 6) }),
      ).toEqual({ ok: true, archivedMessages: 2 });
      const extended = await roomy.load(key);
      expect(extended.messages.map((entry) => entry.message.content)).toEqual(['m0', 'm1', 'm6', 'm7']);
      expect(extended.summary?.toMessage).toBe(6);
      expect((await roomy.history(key, 0, 100)).messages).toEqual(all);
    });

    it('stores an in-turn summary of the current turn without moving anything, and only while the turn is current', async () => {
      const { key, all } = await sessionOfTurns(2);
      // A third turn, an agent loop: user, call, result, call, result.
      const loop = [
        stored('user', 'task', 10),
        {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          tokens: 10,
        },
        { message: { role: 'tool', tool_call_id: 'a', content: 'one' }, tokens: 10 },
        {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'b', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          tokens: 10,
        },
        { message: { role: 'tool', tool_call_id: 'b', content: 'two' }, tokens: 10 },
      ];
      const hold = (await roomy.acquire(key, 10_000))!;
      await roomy.commit(key, {
        hold,
        expectedVersion: 2,
        append: loop,
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      all.push(...loop);
      const turnSummary = {
        text: 'step one read one ✓',
        tokens: 6,
        turnStart: 4,
        toMessage: 7,
        steps: 1,
        coveredTokens: 20,
        updatedAtMs: 1_700_000_000_000,
      };
      const lock = (await roomy.acquireSummaryLock(key, 10_000))!;
      // The wrong turn start, and an extension of a summary that is not there, are refused.
      expect(
        await roomy.storeTurnSummary(key, {
          lockToken: lock,
          expectedToMessage: 0,
          summary: { ...turnSummary, turnStart: 2 },
        }),
      ).toEqual({ ok: false, reason: 'changed' });
      expect(
        await roomy.storeTurnSummary(key, { lockToken: lock, expectedToMessage: 5, summary: turnSummary }),
      ).toEqual({ ok: false, reason: 'changed' });
      expect(
        await roomy.storeTurnSummary(key, { lockToken: lock, expectedToMessage: 0, summary: turnSummary }),
      ).toEqual({
        ok: true,
        archivedMessages: 0,
      });
      const loaded = await roomy.load(key);
      expect(loaded.turnSummary).toEqual(turnSummary);
      expect(loaded.messages).toHaveLength(9);
      expect((await roomy.history(key, 0, 100)).messages).toEqual(all);
      await roomy.releaseSummaryLock(key, lock);
      // A new turn begins: the old turn's summary can no longer be extended.
      const next = (await roomy.acquire(key, 10_000))!;
      await roomy.commit(key, {
        hold: next,
        expectedVersion: 3,
        append: [stored('user', 'next', 10)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      const lockAgain = (await roomy.acquireSummaryLock(key, 10_000))!;
      expect(
        await roomy.storeTurnSummary(key, {
          lockToken: lockAgain,
          expectedToMessage: 7,
          summary: { ...turnSummary, toMessage: 9 },
        }),
      ).toEqual({ ok: false, reason: 'changed' });
      await roomy.releaseSummaryLock(key, lockAgain);
      expect(
        await roomy.storeTurnSummary(key, {
          lockToken: lockAgain,
          expectedToMessage: 0,
          summary: { ...turnSummary, turnStart: 9 },
        }),
      ).toEqual({ ok: false, reason: 'lock_lost' });
    });

    /** An agent turn: the task, then a call and its result per step. */
    const agentTurn = (task: string, steps: number): StoredMessage[] => [
      stored('user', task, 10),
      ...Array.from({ length: steps }, (_unused, step): StoredMessage[] => {
        const id = `${task}-${step}`;
        return [
          {
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ id, type: 'function', function: { name: 'f', arguments: '{}' } }],
            },
            tokens: 10,
          },
          { message: { role: 'tool', tool_call_id: id, content: `result ${id} ✓` }, tokens: 10 },
        ];
      }).flat(),
    ];
    const turnSummaryOf = (turnStart: number, toMessage: number): TurnSummary => ({
      text: `steps ${turnStart}-${toMessage} read "a/b" ✓`,
      tokens: 9,
      turnStart,
      toMessage,
      steps: (toMessage - turnStart - 1) / 2,
      coveredTokens: (toMessage - turnStart - 1) * 10,
      updatedAtMs: 1_795_770_225_000 + turnStart,
    });
    const append = async (key: SessionKey, messages: StoredMessage[]): Promise<void> => {
      const hold = (await roomy.acquire(key, 10_000))!;
      const { version } = await roomy.load(key);
      const outcome = await roomy.commit(key, {
        hold,
        expectedVersion: version,
        append: messages,
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      expect(outcome.ok).toBe(true);
    };
    const storeTurn = async (key: SessionKey, expectedToMessage: number, summary: TurnSummary) => {
      const lock = (await roomy.acquireSummaryLock(key, 10_000))!;
      const outcome = await roomy.storeTurnSummary(key, { lockToken: lock, expectedToMessage, summary });
      await roomy.releaseSummaryLock(key, lock);
      return outcome;
    };

    it("keeps a turn's in-turn summary when the next turn gets its own, and lets it go once the turn is archived", async () => {
      const { key } = await sessionOfTurns(3);
      // Turn A (positions 6-10) gets a summary of its first step.
      await append(key, agentTurn('A', 2));
      const first = turnSummaryOf(6, 9);
      expect(await storeTurn(key, 0, first)).toEqual({ ok: true, archivedMessages: 0 });
      expect((await roomy.load(key)).pastTurnSummaries).toBeUndefined();
      // Turn B (11: A's answer, 12-16) gets its own, then extends it: A's stays, once.
      await append(key, [stored('assistant', 'done A', 10), ...agentTurn('B', 2)]);
      const second = turnSummaryOf(12, 15);
      expect(await storeTurn(key, 0, second)).toEqual({ ok: true, archivedMessages: 0 });
      const extended = { ...second, toMessage: 17, text: 'both steps of B ✓' };
      expect(await storeTurn(key, 15, extended)).toEqual({ ok: true, archivedMessages: 0 });
      const loaded = await roomy.load(key);
      expect(loaded.turnSummary).toEqual(extended);
      expect(loaded.pastTurnSummaries).toEqual([first]);
      // The history summary archives turns 1, 2 and A (2-11); turn C's first summary lets A's go.
      await append(key, [stored('assistant', 'done B', 10), ...agentTurn('C', 2)]);
      const lock = (await roomy.acquireSummaryLock(key, 10_000))!;
      expect(
        await roomy.storeSummary(key, { lockToken: lock, expectedToMessage: 0, summary: summaryOf(2, 12) }),
      ).toEqual({ ok: true, archivedMessages: 10 });
      await roomy.releaseSummaryLock(key, lock);
      expect(await storeTurn(key, 0, turnSummaryOf(18, 21))).toEqual({ ok: true, archivedMessages: 0 });
      const later = await roomy.load(key);
      expect(later.turnSummary).toEqual(turnSummaryOf(18, 21));
      expect(later.pastTurnSummaries).toEqual([extended]);
    });

    it(`keeps the newest ${maxPastTurnSummaries} past in-turn summaries`, async () => {
      const { key } = await sessionOfTurns(1);
      const made: TurnSummary[] = [];
      // Turns of one message each, so that none spills into the archive (50 active messages at most).
      for (let turn = 0; turn < maxPastTurnSummaries + 3; turn++) {
        const turnStart = 2 + turn;
        await append(key, agentTurn(`T${turn}`, 0));
        made.push(turnSummaryOf(turnStart, turnStart + 1));
        expect(await storeTurn(key, 0, made.at(-1) as TurnSummary)).toEqual({
          ok: true,
          archivedMessages: 0,
        });
      }
      const loaded = await roomy.load(key);
      expect(loaded.archivedCount).toBe(0);
      expect(loaded.turnSummary).toEqual(made.at(-1));
      expect(loaded.pastTurnSummaries).toEqual(made.slice(-1 - maxPastTurnSummaries, -1));
    });

    it('refuses a summary whose lock expired or whose session was deleted, and changes nothing', async () => {
      expect(await roomy.acquireSummaryLock(freshKey(), 10_000)).toBeUndefined();
      const { key } = await sessionOfTurns(3);
      const before = await roomy.load(key);
      const short = (await roomy.acquireSummaryLock(key, 200))!;
      await sleep(300);
      expect(
        await roomy.storeSummary(key, { lockToken: short, expectedToMessage: 0, summary: summaryOf(2, 4) }),
      ).toEqual({ ok: false, reason: 'lock_lost' });
      expect(await roomy.load(key)).toEqual(before);
      const locks = await Promise.all(
        Array.from({ length: 10 }, () => roomy.acquireSummaryLock(key, 10_000)),
      );
      expect(locks.filter(Boolean)).toHaveLength(1);
      await roomy.delete(key);
      const lock = locks.find(Boolean) as string;
      expect(
        await roomy.storeSummary(key, { lockToken: lock, expectedToMessage: 0, summary: summaryOf(2, 4) }),
      ).toEqual({ ok: false, reason: 'lock_lost' });
      expect((await roomy.load(key)).version).toBe(0);
    });

    it('keeps tenants apart: the same session id under another credential is another session', async () => {
      const key = freshKey();
      const hold = (await store.acquire(key, 10_000))!;
      await store.commit(key, {
        hold,
        expectedVersion: 0,
        append: [stored('user', 'mine', 1)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      const other = { tenantId: `${key.tenantId}-other`, sessionId: key.sessionId };
      expect((await store.load(other)).version).toBe(0);
      expect(await store.acquire(other, 10_000)).toBeDefined();
    });

    it('deletes a session and everything in it', async () => {
      const key = freshKey();
      const hold = (await store.acquire(key, 10_000))!;
      await store.commit(key, {
        hold,
        expectedVersion: 0,
        append: [stored('user', 'x', 1)],
        historyStart: 0,
        activeTokenLimit: 1_000_000,
      });
      expect(await store.delete(key)).toBe(true);
      expect((await store.load(key)).version).toBe(0);
      expect((await store.history(key, 0, 10)).total).toBe(0);
      expect(await store.delete(key)).toBe(false);
    });

    it('expires a session after the idle TTL', async () => {
      const shortLived = await connected(
        await factory({ maxActiveMessages: 5, minActiveMessages: 1, idleTtlSeconds: 1 }),
      );
      try {
        const key = freshKey();
        const hold = (await shortLived.acquire(key, 10_000))!;
        await shortLived.commit(key, {
          hold,
          expectedVersion: 0,
          append: [stored('user', 'x', 1)],
          historyStart: 0,
          activeTokenLimit: 1_000_000,
        });
        expect((await shortLived.load(key)).version).toBe(1);
        await sleep(2_200);
        expect((await shortLived.load(key)).version).toBe(0);
      } finally {
        await shortLived.close();
      }
    });
  });
}
