// The tenant index's batches: what a replica saw within one interval goes as one write per tenant, each
// session with its newest time; a listing writes its tenant's batch first; a deleted session's entry
// is not written; a write that fails loses only its batch. The interval is the test's to end.
import { describe, expect, it } from 'vitest';
import { createActivityBatches, type Schedule } from '../../src/store/activity-batches.js';

/** A schedule the test runs by hand: `due()` ends the interval that is waiting, if any. */
function manualSchedule(): { schedule: Schedule; waiting: () => number; due: () => void } {
  const runs = new Set<() => void>();
  return {
    schedule: (run) => {
      runs.add(run);
      return () => runs.delete(run);
    },
    waiting: () => runs.size,
    due: () => {
      const pending = [...runs];
      runs.clear();
      for (const run of pending) run();
    },
  };
}

function recorder(fail: (tenantId: string) => boolean = () => false) {
  const writes: Array<{ tenantId: string; entries: Array<readonly [number, string]> }> = [];
  const write = async (tenantId: string, entries: ReadonlyArray<readonly [number, string]>) => {
    if (fail(tenantId)) throw new Error('redis down');
    writes.push({ tenantId, entries: [...entries] });
  };
  return { writes, write };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('activity batches', () => {
  it('writes one batch per tenant when the interval ends, each session with its newest time', async () => {
    const clock = manualSchedule();
    const { writes, write } = recorder();
    const batches = createActivityBatches(write, clock.schedule);
    batches.mark('t1', 'a', 1_000);
    batches.mark('t1', 'b', 1_500);
    batches.mark('t1', 'a', 3_000);
    // A time older than the one waiting (a request that ended earlier, recorded later) does not win.
    batches.mark('t1', 'b', 1_200);
    batches.mark('t2', 'a', 2_000);
    expect(clock.waiting()).toBe(1);
    expect(writes).toEqual([]);
    clock.due();
    await settle();
    expect(writes).toEqual([
      {
        tenantId: 't1',
        entries: [
          [3_000, 'a'],
          [1_500, 'b'],
        ],
      },
      { tenantId: 't2', entries: [[2_000, 'a']] },
    ]);
    // Nothing waits any more, and the next mark starts a new interval.
    expect(clock.waiting()).toBe(0);
    batches.mark('t1', 'c', 4_000);
    expect(clock.waiting()).toBe(1);
    clock.due();
    await settle();
    expect(writes.at(-1)).toEqual({ tenantId: 't1', entries: [[4_000, 'c']] });
  });

  it('writes one tenant’s batch at once when asked (a listing), and the others when the interval ends', async () => {
    const clock = manualSchedule();
    const { writes, write } = recorder();
    const batches = createActivityBatches(write, clock.schedule);
    batches.mark('t1', 'a', 1_000);
    batches.mark('t2', 'b', 1_000);
    await batches.flush('t1');
    expect(writes).toEqual([{ tenantId: 't1', entries: [[1_000, 'a']] }]);
    // A tenant with nothing waiting writes nothing.
    await batches.flush('t1');
    expect(writes).toHaveLength(1);
    clock.due();
    await settle();
    expect(writes.map((batch) => batch.tenantId)).toEqual(['t1', 't2']);
  });

  it('writes everything waiting on flush() (closing), and nothing for a session deleted meanwhile', async () => {
    const clock = manualSchedule();
    const { writes, write } = recorder();
    const batches = createActivityBatches(write, clock.schedule);
    batches.mark('t1', 'kept', 1_000);
    batches.mark('t1', 'deleted', 1_000);
    batches.mark('t2', 'other', 1_000);
    batches.forget('t1', 'deleted');
    await batches.flush();
    expect(writes).toEqual([
      { tenantId: 't1', entries: [[1_000, 'kept']] },
      { tenantId: 't2', entries: [[1_000, 'other']] },
    ]);
    expect(clock.waiting()).toBe(0);
  });

  it('loses only the batch whose write failed, without throwing', async () => {
    const clock = manualSchedule();
    let down = true;
    const { writes, write } = recorder((tenantId) => down && tenantId === 't1');
    const batches = createActivityBatches(write, clock.schedule);
    batches.mark('t1', 'a', 1_000);
    batches.mark('t2', 'b', 1_000);
    await expect(batches.flush()).resolves.toBeUndefined();
    expect(writes).toEqual([{ tenantId: 't2', entries: [[1_000, 'b']] }]);
    down = false;
    batches.mark('t1', 'a', 2_000);
    await batches.flush('t1');
    expect(writes.at(-1)).toEqual({ tenantId: 't1', entries: [[2_000, 'a']] });
  });
});
