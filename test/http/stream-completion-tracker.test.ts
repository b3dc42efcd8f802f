// The stream tracker decides whether a relayed stream reached its end; it must see the end markers
// however the bytes are cut, and must not mistake an unfinished stream for a finished one.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StreamCompletionTracker } from '../../src/upstream/sse.js';

const chunk = (delta: string, finish: string | null) =>
  `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"${delta}"},"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;

function track(text: string, cuts: number[]): StreamCompletionTracker {
  const tracker = new StreamCompletionTracker();
  const bytes = Buffer.from(text);
  let start = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    tracker.push(bytes.subarray(start, cut));
    start = cut;
  }
  tracker.push(bytes.subarray(start));
  return tracker;
}

const unfinished = chunk('Hel', null) + chunk('lo', null);
const finished = unfinished + chunk('', 'stop');
const doneWithoutFinish = unfinished + 'data: [DONE]\n\n';

describe('StreamCompletionTracker', () => {
  it('sees [DONE] wherever the chunks are cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: Buffer.byteLength(doneWithoutFinish) }), { maxLength: 20 }),
        (cuts) => {
          expect(track(doneWithoutFinish, cuts).isComplete()).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('sees a finish_reason wherever the chunks are cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: Buffer.byteLength(finished) }), { maxLength: 20 }),
        (cuts) => {
          expect(track(finished, cuts).isComplete()).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('calls a stream with a finish_reason but no [DONE] complete', () => {
    expect(track(finished, [17, 90]).isComplete()).toBe(true);
  });

  it('does not call a stream complete without either marker', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: Buffer.byteLength(unfinished) }), { maxLength: 20 }),
        (cuts) => {
          expect(track(unfinished, cuts).isComplete()).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('judges a long stream by its end, however it is chunked', () => {
    const long = chunk('x'.repeat(200), null).repeat(300);
    const everyByte = (text: string) =>
      Array.from({ length: Buffer.byteLength(text) }, (_unused, index) => index);
    expect(track(long + 'data: [DONE]\n\n', [100, 5000, 30_000]).isComplete()).toBe(true);
    expect(
      track(
        long + chunk('', 'stop'),
        everyByte(long).filter((index) => index % 97 === 0),
      ).isComplete(),
    ).toBe(true);
    expect(track(long, [100, 5000, 30_000]).isComplete()).toBe(false);
  });

  it('accepts a space after the colon, as some servers write it', () => {
    expect(track('data: {"choices":[{"finish_reason": "length"}]}\n\n', []).isComplete()).toBe(true);
  });
});
