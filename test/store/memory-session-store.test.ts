// The in-process store is the default without Redis: it keeps the SessionStore contract, and it must not
// grow without bound: idle sessions expire by the TTL even when nobody touches them again, and past its
// memory bound the least recently used idle sessions go first — never one that a request holds.
import { describe, expect, it } from 'vitest';
import { createMemorySessionStore, type EvictionEvent } from '../../src/store/memory-session-store.js';
import type { SessionKey, SessionStore } from '../../src/store/session-store.js';
import { describeSessionStoreContract } from './session-store-contract.js';

const limits = { maxActiveMessages: 1_000, minActiveMessages: 100, idleTtlSeconds: 60 };
const keyOf = (index: number): SessionKey => ({ tenantId: 't', sessionId: `s${index}` });

/** One committed turn of a user message of `chars` characters and a short reply. */
async function writeTurn(store: SessionStore, key: SessionKey, chars: number): Promise<void> {
  const hold = await store.acquire(key, 10_000);
  if (hold === undefined) throw new Error('held');
  const { version } = await store.load(key);
  const outcome = await store.commit(key, {
    hold,
    expectedVersion: version,
    append: [
      { message: { role: 'user', content: 'x'.repeat(chars) }, tokens: chars / 4 },
      { message: { role: 'assistant', content: 'ok' }, tokens: 1 },
    ],
    historyStart: 0,
    activeTokenLimit: 1_000_000,
  });
  expect(outcome.ok).toBe(true);
}

describeSessionStoreContract('memory', (limits) => createMemorySessionStore({ limits }));

describe('in-process session store bounds', () => {
  it('removes sessions idle past the TTL in the background, and says how many', async () => {
    let nowMs = 1_000_000;
    const events: EvictionEvent[] = [];
    const store = createMemorySessionStore({
      limits,
      now: () => nowMs,
      sweepIntervalMs: 20,
      onEvict: (event) => events.push(event),
    });
    try {
      for (let index = 0; index < 5; index++) await writeTurn(store, keyOf(index), 100);
      nowMs += 30_000;
      await writeTurn(store, keyOf(5), 100); // written later: not yet idle for the TTL
      nowMs += 31_000;
      // The sweep runs on its timer: asked until it has.
      await expect.poll(() => events).toEqual([{ reason: 'expired', sessions: 5 }]);
      expect((await store.load(keyOf(5))).version).toBe(1);
      expect((await store.load(keyOf(0))).version).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('stays within its bound by evicting the least recently used idle sessions, never a held one', async () => {
    const events: EvictionEvent[] = [];
    // Each session holds about 10 000 characters (20 KB as UTF-16, plus bookkeeping).
    const store = createMemorySessionStore({
      limits,
      maxBytes: 220_000,
      onEvict: (event) => events.push(event),
    });
    try {
      for (let index = 0; index < 8; index++) await writeTurn(store, keyOf(index), 10_000);
      const held = await store.acquire(keyOf(0), 10_000); // the oldest, but a request holds it
      expect(held).toBeDefined();
      await store.load(keyOf(1)); // used again: no longer among the least recently used
      for (let index = 8; index < 20; index++) await writeTurn(store, keyOf(index), 10_000);
      const evicted = events.reduce((sum, event) => sum + event.sessions, 0);
      expect(events.every((event) => event.reason === 'memory')).toBe(true);
      const present: number[] = [];
      for (let index = 0; index < 20; index++)
        if ((await store.load(keyOf(index))).version > 0) present.push(index);
      // About ten sessions fit; the held one and the most recently used ones are kept.
      expect(present.length).toBeGreaterThanOrEqual(8);
      expect(present.length).toBeLessThanOrEqual(11);
      expect(present.length + evicted).toBe(20);
      expect(present).toContain(0);
      expect(present).toContain(19);
      expect(present).not.toContain(2);
    } finally {
      await store.close();
    }
  });
});
