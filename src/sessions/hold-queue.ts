// Requests for a busy session wait their turn (docs/sessions.md): on one replica in the order they arrived —
// each tries for the hold only once the one before it has it or gave up — and across replicas by
// polling the store, woken at once when a request of this replica lets go of the session. Past the
// wait the caller answers 409 session_busy.
import type { SessionKey } from '../store/session-store.js';

/** Polling starts this fast and slows to at most the second value. */
const firstPollMs = 5;
const maxPollMs = 100;

interface Waiter {
  /** Resolves when the waiter before it has the hold or gave up. */
  turn: Promise<void>;
}

/** The order of one replica's requests per session: one per gateway, never shared between gateways. */
export interface HoldQueue {
  /** A request of this replica let go of the session: its waiters try again now. */
  sessionReleased(key: SessionKey): void;
  /**
   * The session's hold, waiting up to `waitMs` for it (0: not at all); undefined when it stayed busy.
   * `attempt` tries for it once and says what it got: the hold, or the hold with what came with it.
   * Store errors are thrown as they are.
   */
  acquireInTurn<Held>(
    key: SessionKey,
    waitMs: number,
    attempt: () => Promise<Held | undefined>,
    now?: () => number,
  ): Promise<Held | undefined>;
}

const idOf = ({ tenantId, sessionId }: SessionKey): string => `${tenantId}\u0000${sessionId}`;

async function atMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms)))),
  ]);
  clearTimeout(timer);
}

/** `waiting` is told once for each request that does not get the hold at once and starts to wait. */
export function createHoldQueue(waiting: () => void = () => undefined): HoldQueue {
  const queues = new Map<string, Waiter>();
  const wakers = new Map<string, Set<() => void>>();

  /** Resolves after `ms`, or at once when a request of this replica releases the session. */
  function pause(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let wakersOfId = wakers.get(id);
      if (wakersOfId === undefined) wakers.set(id, (wakersOfId = new Set()));
      const set = wakersOfId;
      const done = (): void => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0 && wakers.get(id) === set) wakers.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }

  return {
    sessionReleased(key) {
      for (const wake of [...(wakers.get(idOf(key)) ?? [])]) wake();
    },
    async acquireInTurn(key, waitMs, attempt, now = Date.now) {
      const id = idOf(key);
      const deadline = now() + waitMs;
      const ahead = queues.get(id);
      let done = (): void => undefined;
      const mine: Waiter = { turn: new Promise<void>((resolve) => (done = resolve)) };
      queues.set(id, mine);
      try {
        // Wait for the request before this one, but never past the deadline.
        if (ahead !== undefined) {
          waiting();
          await atMost(ahead.turn, deadline - now());
        }
        let pollMs = firstPollMs;
        for (let tries = 0; ; tries++) {
          const held = await attempt();
          if (held !== undefined) return held;
          const left = deadline - now();
          if (left <= 0) return undefined;
          if (tries === 0 && ahead === undefined) waiting();
          await pause(id, Math.min(pollMs, left));
          pollMs = Math.min(maxPollMs, pollMs * 2);
        }
      } finally {
        done();
        if (queues.get(id) === mine) queues.delete(id);
      }
    },
  };
}
