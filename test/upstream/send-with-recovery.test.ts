// The send loop with a scripted upstream and a fake clock: what it sends, how long it waits, and which
// answer it hands on — no sockets, no timers. Bodies are the providers' own (shared fixtures).
import { describe, expect, it } from 'vitest';
import {
  callsMade,
  sendWithRecovery,
  type SendAttempt,
  type SendEvent,
} from '../../src/upstream/send-with-recovery.js';
import { GatewayError } from '../../src/errors.js';
import type { UpstreamResponse } from '../../src/upstream/upstream.js';
import { contextErrorFixtures } from '../fixtures/context-errors.js';
import type { FieldFix } from '../../src/upstream/field-fixes.js';

function answer(status: number, body: string, headers: Record<string, string> = {}): UpstreamResponse {
  const bytes = Buffer.from(body);
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json', ...headers },
    readAll: async () => bytes,
    forEachChunk: async (onChunk: (chunk: Buffer) => void | Promise<void>) => {
      await onChunk(bytes);
    },
    discard: () => undefined,
    peek: async () => bytes,
  };
}

const ok = () =>
  answer(200, JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'hi' } }] }));
const openAIOverflow = contextErrorFixtures.find((entry) => entry.id === 'T02');

interface Attempt extends SendAttempt {
  name: string;
}

function harness(
  script: Array<UpstreamResponse | Error>,
  options: {
    upstreamRetries?: number;
    deadlineMs?: number;
    fixFields?: (fixes: FieldFix[], current: Attempt) => Attempt | undefined;
  } = {},
) {
  let clockMs = 0;
  const sent: string[] = [];
  const waits: number[] = [];
  const events: Array<SendEvent<Attempt>['type']> = [];
  let smallerCalls = 0;
  const run = (
    smaller: () => Attempt | undefined = () => ({
      name: `smaller-${++smallerCalls}`,
      promptTokens: 1_000,
      askedMaxTokens: undefined,
    }),
  ) =>
    sendWithRecovery<Attempt>({
      first: { name: 'first', promptTokens: 3_000, askedMaxTokens: 1_000 },
      send: async (attempt) => {
        sent.push(attempt.name);
        clockMs += 40;
        const next = script.shift();
        if (next === undefined) throw new Error('script ran out');
        if (next instanceof Error) throw next;
        return next;
      },
      smaller: () => smaller(),
      ...(options.fixFields === undefined ? {} : { fixFields: options.fixFields }),
      streaming: false,
      limits: {
        maxOverflowRetries: 2,
        maxUpstreamRetries: options.upstreamRetries ?? 2,
        deadlineMs: options.deadlineMs ?? 30_000,
        maxRetryWaitMs: 10_000,
      },
      clock: () => clockMs,
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
        clockMs += ms;
      },
      cancelled: () => false,
      observe: (event) => events.push(event.type),
    });
  return { run, sent, waits, events };
}

describe('sendWithRecovery', () => {
  it('hands on a success at once and says it was accepted', async () => {
    const { run, sent, waits, events } = harness([ok()]);
    const result = await run();
    expect(result.response.statusCode).toBe(200);
    expect(sent).toEqual(['first']);
    expect(waits).toEqual([]);
    expect(events).toEqual(['accepted']);
  });

  it('waits out a 429 with its Retry-After, then a 503 with backoff, and sends the same attempt again', async () => {
    const limited = answer(429, '{"error":{"message":"Rate limit reached","type":"requests"}}', {
      'retry-after': '2',
    });
    const unavailable = answer(503, '{"error":{"message":"The server is overloaded"}}');
    const { run, sent, waits } = harness([limited, unavailable, ok()], { upstreamRetries: 3 });
    const result = await run();
    expect(result.response.statusCode).toBe(200);
    expect(sent).toEqual(['first', 'first', 'first']);
    // 2 s from Retry-After; then 250 × 2^1 × 0.5 = 250 ms.
    expect(waits).toEqual([2_000, 250]);
    expect(result.upstreamRetries).toBe(2);
  });

  it('gives the client the last 5xx once out of retries, unread', async () => {
    const failures = [answer(500, '{}'), answer(502, '{}'), answer(503, '{"error":{"message":"down"}}')];
    const { run, sent } = harness([...failures]);
    const result = await run();
    expect(sent).toHaveLength(3);
    expect(result.response.statusCode).toBe(503);
    expect(await result.response.readAll()).toEqual(Buffer.from('{"error":{"message":"down"}}'));
  });

  it('retries a broken connection and rethrows it once out of retries', async () => {
    const broken = () => new GatewayError('upstream_unreachable', 'connection refused');
    const { run, sent } = harness([broken(), broken(), broken()]);
    await expect(run()).rejects.toMatchObject({ code: 'upstream_unreachable' });
    expect(sent).toHaveLength(3);
  });

  it('never retries past the deadline', async () => {
    const limited = answer(429, '{"error":{"message":"Rate limit"}}', { 'retry-after': '5' });
    const { run, sent } = harness([limited], { deadlineMs: 4_000 });
    const result = await run();
    expect(sent).toEqual(['first']);
    expect(result.response.statusCode).toBe(429);
  });

  it('sends the smaller attempt after a real provider overflow, and reports the overflow', async () => {
    if (openAIOverflow === undefined) throw new Error('fixture T02 missing');
    const overflow = answer(openAIOverflow.status ?? 400, openAIOverflow.body);
    const { run, sent, events } = harness([overflow, ok()]);
    const result = await run();
    expect(sent).toEqual(['first', 'smaller-1']);
    expect(result.attempt.name).toBe('smaller-1');
    expect(result.overflowRetries).toBe(1);
    expect(events).toEqual(['overflow', 'smaller_attempt', 'accepted']);
  });

  it('relays the overflow itself when nothing smaller can be sent', async () => {
    if (openAIOverflow === undefined) throw new Error('fixture T02 missing');
    const { run, sent } = harness([answer(openAIOverflow.status ?? 400, openAIOverflow.body)]);
    const result = await run(() => undefined);
    expect(sent).toEqual(['first']);
    expect(result.response.statusCode).toBe(400);
    expect((await result.response.readAll()).toString()).toContain('maximum context length');
  });

  describe('a field the model refuses', () => {
    const refusal = (field: string) =>
      answer(
        400,
        JSON.stringify({
          error: {
            message:
              field === 'max_tokens'
                ? "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
                : `Unsupported value: '${field}' does not support 0 with this model. Only the default (1) value is supported.`,
            type: 'invalid_request_error',
            param: field,
            code: 'unsupported_parameter',
          },
        }),
      );
    const fixing = (fixes: FieldFix[]) => (asked: FieldFix[], current: Attempt) => {
      fixes.push(...asked);
      return { ...current, name: `${current.name}+${asked.map((fix) => fix.field).join('+')}` };
    };

    it('sends the attempt again as fixed, once per field, with no wait and no retry counted', async () => {
      const fixes: FieldFix[] = [];
      const { run, sent, waits, events } = harness([refusal('max_tokens'), refusal('temperature'), ok()], {
        fixFields: fixing(fixes),
      });
      const result = await run();
      expect(sent).toEqual(['first', 'first+max_tokens', 'first+max_tokens+temperature']);
      expect(fixes).toEqual([
        { field: 'max_tokens', renameTo: 'max_completion_tokens' },
        { field: 'temperature' },
      ]);
      expect(waits).toEqual([]);
      expect(events).toEqual(['fields_fixed', 'fields_fixed', 'accepted']);
      expect(result.response.statusCode).toBe(200);
      expect([result.overflowRetries, result.upstreamRetries, result.fieldResends]).toEqual([0, 0, 2]);
      expect(callsMade(result)).toBe(3);
    });

    it('relays the refusal when the same field is refused again', async () => {
      const fixes: FieldFix[] = [];
      const { run, sent } = harness([refusal('max_tokens'), refusal('max_tokens')], {
        fixFields: fixing(fixes),
      });
      const result = await run();
      expect(sent).toEqual(['first', 'first+max_tokens']);
      expect(fixes).toHaveLength(1);
      expect(callsMade(result)).toBe(2);
      expect(result.response.statusCode).toBe(400);
      expect((await result.response.readAll()).toString()).toContain("Use 'max_completion_tokens'");
    });

    it('relays the refusal when the attempt cannot be sent fixed, or the caller fixes nothing', async () => {
      for (const fixFields of [() => undefined, undefined]) {
        const { run, sent } = harness([refusal('max_tokens')], fixFields === undefined ? {} : { fixFields });
        const result = await run();
        expect(sent).toEqual(['first']);
        expect(callsMade(result)).toBe(1);
        expect(result.response.statusCode).toBe(400);
      }
    });
  });
});
