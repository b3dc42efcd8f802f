// The facts of a long covered range, read in slices between other work: the same facts as in one go,
// and the event loop gets its turns meanwhile.
import { describe, expect, it } from 'vitest';
import { identifierFacts } from '../../src/context/summary.js';
import { factsInSlices } from '../../src/sessions/facts-in-slices.js';

/** Texts of prose with identifiers a summary must keep: hosts, paths, snake_case names, long numbers. */
function coveredTexts(count: number): string[] {
  return Array.from(
    { length: count },
    (_unused, index) =>
      `Step ${index}: the job on worker-${index % 37}.internal wrote /var/log/run_${index}.log and ` +
      `set retry_budget_${index % 11} to ${10_000 + index * 7}; nothing else changed in this step. `.repeat(
        3,
      ),
  );
}

describe('factsInSlices', () => {
  it('finds exactly the facts extracting them in one go finds', async () => {
    const texts = coveredTexts(400);
    const expected = new Set(texts.flatMap(identifierFacts));
    expect(expected.size).toBeGreaterThan(500);
    expect(await factsInSlices(texts, { yieldTurn: async () => undefined })).toEqual(expected);
  });

  it('gives a turn back after every slice it has read', async () => {
    const texts = coveredTexts(100);
    const characters = texts.reduce((sum, text) => sum + text.length, 0);
    let turns = 0;
    await factsInSlices(texts, { sliceChars: 4_096, yieldTurn: async () => void turns++ });
    // At least one turn for every slice plus the longest text read between two of them.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(characters / (4_096 + (texts[0] as string).length)));
  });

  it('lets work queued on the event loop run before it has finished a long range', async () => {
    let ranBeforeDone = false;
    setImmediate(() => (ranBeforeDone = true));
    const done = factsInSlices(coveredTexts(2_000)).then(() => ranBeforeDone);
    expect(await done).toBe(true);
  });
});
