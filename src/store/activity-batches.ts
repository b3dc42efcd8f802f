// The tenant index of sessions by last activity, written in batches: the sessions a replica saw answered
// within one short interval go to Redis as one command per tenant (each session with its newest time),
// instead of one command per request. A listing on the same replica writes its tenant's batch first, so
// it always shows what this replica recorded; another replica's listing shows it after the interval
// (docs/inspector.md).

/** Starts `run` after the interval; returns what cancels it. */
export type Schedule = (run: () => void) => () => void;

/** How long a replica gathers a tenant's activity before writing it. */
export const activityBatchMs = 100;

const timerSchedule: Schedule = (run) => {
  const timer = setTimeout(run, activityBatchMs);
  timer.unref();
  return () => clearTimeout(timer);
};

export interface ActivityBatches {
  /** The session was active at `at` (ms since the epoch). */
  mark(tenantId: string, sessionId: string, at: number): void;
  /** A deleted session: nothing waiting for it is written. */
  forget(tenantId: string, sessionId: string): void;
  /** Writes what waits: one tenant's, or every tenant's. */
  flush(tenantId?: string): Promise<void>;
}

export function createActivityBatches(
  /** Writes one tenant's batch: pairs of a time and a session id. A failure loses only that batch. */
  write: (tenantId: string, entries: ReadonlyArray<readonly [number, string]>) => Promise<unknown>,
  schedule: Schedule = timerSchedule,
): ActivityBatches {
  const waiting = new Map<string, Map<string, number>>();
  let cancel: (() => void) | undefined;

  const writeTenant = async (tenantId: string): Promise<void> => {
    const sessions = waiting.get(tenantId);
    if (sessions === undefined) return;
    waiting.delete(tenantId);
    const entries = [...sessions].map(([sessionId, at]) => [at, sessionId] as const);
    // The index is a view: a batch that cannot be written is listed again with the next activity.
    await write(tenantId, entries).catch(() => undefined);
  };
  const flushAll = async (): Promise<void> => {
    cancel?.();
    cancel = undefined;
    await Promise.all([...waiting.keys()].map(writeTenant));
  };

  return {
    mark(tenantId, sessionId, at) {
      let sessions = waiting.get(tenantId);
      if (sessions === undefined) waiting.set(tenantId, (sessions = new Map()));
      sessions.set(sessionId, Math.max(at, sessions.get(sessionId) ?? at));
      cancel ??= schedule(() => {
        cancel = undefined;
        void flushAll();
      });
    },
    forget(tenantId, sessionId) {
      waiting.get(tenantId)?.delete(sessionId);
    },
    async flush(tenantId) {
      if (tenantId === undefined) await flushAll();
      else await writeTenant(tenantId);
    },
  };
}
