// A gateway's requests for a busy session take the hold in the order they came, and each gateway keeps
// its own order: two gateways in one process (tests, an embedding) never wait behind each other's.
import { describe, expect, it } from 'vitest';
import { createHoldQueue } from '../../src/sessions/hold-queue.js';

const key = { tenantId: 't', sessionId: 's' };

describe('createHoldQueue', () => {
  it('hands the hold out in the order the requests came', async () => {
    const queue = createHoldQueue();
    let holder: string | undefined;
    const got: string[] = [];
    const request = (name: string) =>
      queue.acquireInTurn(key, 60_000, async () => {
        if (holder !== undefined) return undefined;
        holder = name;
        return name;
      });
    const first = await request('a');
    const waiting = [request('b'), request('c'), request('d')];
    got.push(first as string);
    for (const next of waiting) {
      holder = undefined;
      queue.sessionReleased(key);
      got.push((await next) as string);
    }
    expect(got).toEqual(['a', 'b', 'c', 'd']);
  });

  it('tells of each request that had to wait, once however often it tried', async () => {
    let waits = 0;
    const queue = createHoldQueue(() => waits++);
    let holder: string | undefined = 'another replica';
    let tries = 0;
    const request = (name: string) =>
      queue.acquireInTurn(key, 60_000, async () => {
        tries++;
        if (holder !== undefined) return undefined;
        holder = name;
        return name;
      });
    // Held elsewhere: the first request polls the store; the next two queue behind it on this replica.
    const waiting = [request('a'), request('b'), request('c')];
    while (tries < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    holder = undefined;
    for (const next of waiting) {
      await next;
      holder = undefined;
      queue.sessionReleased(key);
    }
    expect(tries).toBeGreaterThan(3);
    expect(waits).toBe(3);
    // The session free: no wait to tell.
    expect(await request('d')).toBe('d');
    expect(waits).toBe(3);
  });

  it('gives up when the session stays busy past the wait', async () => {
    const queue = createHoldQueue();
    let clock = 0;
    const held = await queue.acquireInTurn(
      key,
      50,
      async () => {
        clock += 30;
        return undefined;
      },
      () => clock,
    );
    expect(held).toBeUndefined();
  });

  it('tells of no wait when the caller waits for nothing (busy_wait_ms 0)', async () => {
    let waits = 0;
    const queue = createHoldQueue(() => waits++);
    expect(await queue.acquireInTurn(key, 0, async () => undefined)).toBeUndefined();
    expect(waits).toBe(0);
  });

  it('keeps each gateway’s order to itself', async () => {
    const mine = createHoldQueue();
    const other = createHoldQueue();
    // A request of the other gateway is trying for the session (its store has not answered yet).
    let answer = (): void => undefined;
    const pending = other.acquireInTurn(
      key,
      60_000,
      () => new Promise<string>((resolve) => (answer = () => resolve('other'))),
    );
    // This gateway's request is not queued behind it: it takes the session at once.
    expect(await mine.acquireInTurn(key, 60_000, async () => 'mine')).toBe('mine');
    answer();
    expect(await pending).toBe('other');
  });
});
