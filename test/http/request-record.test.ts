// The edge's record of a request gets what the service returned once, whether it answered or failed,
// and the request's log line waits for it (the answer can be out before the service has returned).
import { describe, expect, it } from 'vitest';
import { withOutcome } from '../../src/chat/request-outcome.js';
import { GatewayError } from '../../src/errors.js';
import { applyOutcome, createRequestState, served } from '../../src/http/request-record.js';

const tally = { name: 'primary', status: 200, ms: 40, attempts: 2, errorCause: undefined };

describe('the request record', () => {
  it('takes what a service said and keeps what it did not say', () => {
    const record = createRequestState(0);
    record.model = 'asked-model';
    record.stream = true;
    applyOutcome(record, { fallback: 'big-model', session: 'abc', dropped: ['store'], upstream: tally });
    expect(record).toMatchObject({
      model: 'asked-model',
      stream: true,
      fallback: 'big-model',
      session: 'abc',
      dropped: ['store'],
      upstreamName: 'primary',
      upstreamStatus: 200,
      upstreamMs: 40,
      attempts: 2,
      errorCause: undefined,
    });
  });

  it('gets the outcome of a service that answered, and of one that failed, whose error is passed on', async () => {
    const answered = createRequestState(0);
    await served(answered, async () => ({ model: 'm', streamErrorCode: 'upstream_stream_error' }));
    expect(answered.model).toBe('m');
    expect(answered.streamErrorCode).toBe('upstream_stream_error');

    const failed = createRequestState(0);
    const error = new GatewayError('upstream_unreachable', 'The upstream could not be reached.');
    const running = served(failed, async () => {
      throw withOutcome(error, {
        model: 'm',
        upstream: { ...tally, status: undefined, errorCause: 'ECONNREFUSED' },
      });
    });
    await expect(running).rejects.toBe(error);
    expect(failed).toMatchObject({ model: 'm', upstreamName: 'primary', upstreamStatus: undefined });
    expect(failed.errorCause).toBe('ECONNREFUSED');
  });

  it('tells the log line when the service is done: `serving` settles after the outcome is on the record', async () => {
    const record = createRequestState(0);
    let finish: (value: { model: string }) => void = () => undefined;
    const running = served(record, () => new Promise((resolve) => (finish = resolve)));
    expect(record.serving).toBeDefined();
    let seen: string | undefined = 'not yet';
    const logged = record.serving?.then(() => (seen = record.model));
    expect(seen).toBe('not yet');
    await Promise.resolve();
    finish({ model: 'late-model' });
    await running;
    await logged;
    expect(seen).toBe('late-model');
  });

  it('is waited for by an answer finished while the service writes it (a synchronous finish)', async () => {
    const record = createRequestState(0);
    // What a log line written at the answer's 'finish' would find: the service still running.
    let servingAtFinish: Promise<void> | undefined;
    await served(record, async () => {
      servingAtFinish = record.serving;
      return { model: 'm' };
    });
    expect(servingAtFinish).toBeDefined();
    await servingAtFinish;
    expect(record.model).toBe('m');
  });
});
