// What both session stores share besides their contract (session-store-contract.ts): which turns a
// commit moves to the archive (the Redis commit script does the same, checked by the contract), how a
// log names a session, and releasing a hold while the store is unreachable.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hashedSessionId, releaseEventually, spillCount, startsTurn } from '../../src/store/session-store.js';

/** A list of messages written as roles: 'u' a user message (starts a turn), 'a' anything else. */
const turnStartsOf = (roles: string): boolean[] => [...roles].map((role) => role === 'u');

describe('spillCount', () => {
  const cases: Array<{
    name: string;
    roles: string;
    tokens?: number[];
    head?: number;
    tokenLimit?: number;
    maxActiveMessages?: number;
    minActiveMessages?: number;
    spilled: number;
  }> = [
    { name: 'under both limits: nothing moves', roles: 'uauaua', maxActiveMessages: 6, spilled: 0 },
    { name: 'over the count: the oldest turn moves', roles: 'uauaua', maxActiveMessages: 4, spilled: 2 },
    {
      name: 'whole turns only: a turn of four moves at once',
      roles: 'uaaaua',
      maxActiveMessages: 5,
      spilled: 4,
    },
    {
      name: 'never the current turn, however long its loop',
      roles: 'uaaaaaaa',
      maxActiveMessages: 2,
      spilled: 0,
    },
    {
      name: 'as many turns as it takes, the current one kept',
      roles: 'uauauaua',
      maxActiveMessages: 1,
      spilled: 6,
    },
    {
      name: 'the protected head stays; the turns after it move',
      roles: 'uauaua',
      head: 2,
      maxActiveMessages: 4,
      spilled: 2,
    },
    {
      name: 'over the tokens, while what stays is at least minActiveMessages long',
      roles: 'uauaua',
      tokens: [100, 100, 100, 100, 100, 100],
      tokenLimit: 250,
      minActiveMessages: 2,
      spilled: 4,
    },
    {
      name: 'over the tokens, but what would stay is under minActiveMessages: nothing moves',
      roles: 'uauaua',
      tokens: [100, 100, 100, 100, 100, 100],
      tokenLimit: 250,
      minActiveMessages: 5,
      spilled: 0,
    },
  ];
  for (const testCase of cases)
    it(testCase.name, () => {
      const tokens = testCase.tokens ?? [...testCase.roles].map(() => 1);
      expect(
        spillCount(tokens, turnStartsOf(testCase.roles), testCase.head ?? 0, testCase.tokenLimit ?? 1e9, {
          maxActiveMessages: testCase.maxActiveMessages ?? 1_000,
          minActiveMessages: testCase.minActiveMessages ?? 0,
          idleTtlSeconds: 60,
        }),
      ).toBe(testCase.spilled);
    });

  it('a turn starts at a user message and nowhere else', () => {
    expect(
      ['user', 'assistant', 'tool', 'system', 'developer'].filter((role) => startsTurn({ role })),
    ).toEqual(['user']);
  });
});

describe('hashedSessionId', () => {
  it('names a session without its tenant or id, the same every time, and apart from every other', () => {
    const name = hashedSessionId({ tenantId: 'acme', sessionId: 'conversation-42' });
    expect(name).toMatch(/^[0-9a-f]{16}$/);
    // The SHA-256 of tenant, NUL, id: logs written by earlier builds name the same session alike.
    expect(name).toBe(createHash('sha256').update('acme\u0000conversation-42').digest('hex').slice(0, 16));
    expect(hashedSessionId({ tenantId: 'acme', sessionId: 'conversation-42' })).toBe(name);
    // The separator keeps ("ab", "c") and ("a", "bc") apart, and another tenant's session of the same id.
    const others = [
      { tenantId: 'acme', sessionId: 'conversation-43' },
      { tenantId: 'other', sessionId: 'conversation-42' },
      { tenantId: 'acmeconversation-42', sessionId: '' },
      { tenantId: 'acm', sessionId: 'econversation-42' },
    ].map(hashedSessionId);
    expect(new Set([name, ...others]).size).toBe(5);
  });
});

describe('releaseEventually', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('tries again in the background until the store takes the release', async () => {
    vi.useFakeTimers();
    let calls = 0;
    const release = async (): Promise<void> => {
      calls++;
      if (calls < 4) throw new Error('store unreachable');
    };
    await releaseEventually(release, Number.MAX_SAFE_INTEGER, () => 0);
    expect(calls).toBe(1);
    // Backing off 250, 500, 1,000 ms: three more tries, the last one taken, and none after it.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toBe(4);
  });

  it('stops once the hold would have expired by itself', async () => {
    vi.useFakeTimers();
    let nowMs = 0;
    let calls = 0;
    const release = async (): Promise<void> => {
      calls++;
      throw new Error('store unreachable');
    };
    await releaseEventually(release, 1_000, () => nowMs);
    await vi.advanceTimersByTimeAsync(300);
    expect(calls).toBe(2);
    nowMs = 1_000;
    await vi.advanceTimersByTimeAsync(60_000);
    // The try at 1,000 ms still happens (it was scheduled before); after it, no other.
    expect(calls).toBe(3);
  });

  it('gives up after 60 tries even when the hold never expires', async () => {
    vi.useFakeTimers();
    let calls = 0;
    await releaseEventually(
      async () => {
        calls++;
        throw new Error('store unreachable');
      },
      Number.MAX_SAFE_INTEGER,
      () => 0,
    );
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(calls).toBe(61);
  });
});
