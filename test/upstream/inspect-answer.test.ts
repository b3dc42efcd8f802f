// An upstream answer looked at before any of it reaches the client (docs/budgeting.md#reactive-recovery):
// an error body read whole and classified, a stream's first event read (an overflow can come as the
// first event of a 200 stream), and everything that was read replayed to whoever reads next.
import { describe, expect, it } from 'vitest';
import { inspectAnswer } from '../../src/upstream/inspect-answer.js';
import type { PeekWait, UpstreamResponse } from '../../src/upstream/upstream.js';

/** An answer arriving in the given pieces; peek reads pieces until it has enough, and they are replayed. */
function answer(status: number, contentType: string, pieces: string[]): UpstreamResponse & { reads: number } {
  const buffers = pieces.map((piece) => Buffer.from(piece));
  let taken = 0;
  const result = {
    statusCode: status,
    headers: { 'content-type': contentType },
    reads: 0,
    async readAll() {
      result.reads++;
      return Buffer.concat(buffers);
    },
    async forEachChunk(onChunk: (chunk: Buffer) => void | Promise<void>) {
      result.reads++;
      for (const buffer of buffers) await onChunk(buffer);
    },
    discard: () => undefined,
    // With a wait, the pieces given are all that came before it passed.
    async peek(enough: (received: Buffer) => boolean, wait?: PeekWait) {
      while (taken < buffers.length && !enough(Buffer.concat(buffers.slice(0, taken)))) taken++;
      if (wait !== undefined && !enough(Buffer.concat(buffers.slice(0, taken)))) wait.passed();
      return Buffer.concat(buffers.slice(0, taken));
    },
  };
  return result;
}

const overflowBody =
  '{"error":{"message":"This model\'s maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}';

describe('an upstream answer, inspected', () => {
  it('classifies an error body and replays it', async () => {
    const { response, classification } = await inspectAnswer(
      answer(400, 'application/json', [overflowBody]),
      false,
    );
    expect(classification).toMatchObject({
      kind: 'context_overflow',
      numbers: { maxContext: 8_192, promptTokens: 9_000 },
    });
    expect((await response.readAll()).toString()).toBe(overflowBody);
  });

  it('asks the size of the request it answers for a 413 only: a bare one to megabytes is the bytes', async () => {
    let asked = 0;
    const size = (bytes: number) => () => {
      asked++;
      return bytes;
    };
    expect(
      (await inspectAnswer(answer(413, 'text/plain', []), false, { sentBytes: size(5_500_000) }))
        .classification,
    ).toEqual({
      kind: 'refused_field',
      fixes: [{ field: 'request.bytes' }],
    });
    expect(
      (await inspectAnswer(answer(413, 'text/plain', []), false, { sentBytes: size(20_000) })).classification
        .kind,
    ).toBe('context_overflow');
    expect(asked).toBe(2);
    await inspectAnswer(answer(400, 'application/json', [overflowBody]), false, {
      sentBytes: size(5_500_000),
    });
    await inspectAnswer(answer(200, 'application/json', ['{}']), false, { sentBytes: size(5_500_000) });
    expect(asked).toBe(2);
  });

  it('finds an overflow in the first event of a 200 stream, and the stream is still whole', async () => {
    const event =
      'event: response.failed\ndata: {"type":"response.failed","response":{"error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}}\n\n';
    const raw = answer(200, 'text/event-stream', [event.slice(0, 30), event.slice(30)]);
    const { response, classification } = await inspectAnswer(raw, true);
    expect(classification.kind).toBe('context_overflow');
    let replayed = '';
    await response.forEachChunk((chunk) => void (replayed += chunk.toString()));
    expect(replayed).toBe(event);
  });

  it.each([
    [
      'a healthy stream',
      200,
      'text/event-stream',
      ['data: {"choices":[{"delta":{"content":"hi"}}]}\n\n', 'data: [DONE]\n\n'],
      true,
    ],
    ['a whole success', 200, 'application/json', ['{"choices":[]}'], false],
  ] as const)('leaves %s as it is', async (_name, status, type, pieces, streaming) => {
    const raw = answer(status, type, [...pieces]);
    const { response, classification } = await inspectAnswer(raw, streaming);
    expect(classification).toEqual({ kind: 'none' });
    expect(raw.reads).toBe(0);
    expect((await response.readAll()).toString()).toBe(pieces.join(''));
  });

  // A model that thinks before its first event, a relay's processing comments meanwhile: past the wait the
  // answer is taken as begun (its stream opened to the client and kept alive), and read on as it comes.
  it('takes a stream whose first event did not come within the wait as begun', async () => {
    const comments = ': OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n';
    const raw = answer(200, 'text/event-stream', [comments]);
    const { response, classification } = await inspectAnswer(raw, true, { headWaitMs: 7_500 });
    expect(classification).toEqual({ kind: 'none' });
    expect((await response.readAll()).toString()).toBe(comments);
  });

  it('still judges a stream that ended with no event, with or without a wait', async () => {
    const comments = ': OPENROUTER PROCESSING\n\n';
    for (const options of [{}, { headWaitMs: 7_500 }]) {
      const raw = answer(200, 'text/event-stream', [comments]);
      // The fake's pieces all read and no wait passed: the body ended with comments only.
      raw.peek = async () => Buffer.from(comments);
      expect((await inspectAnswer(raw, true, options)).classification.kind).not.toBe('none');
    }
  });
});
