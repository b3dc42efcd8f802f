// The request id a log line and the answer carry: the client's own `x-request-id` when it is short
// printable ASCII, a fresh one otherwise (an id is never a way into the logs).
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freshRequestId, requestIdFrom } from '../../../src/http/plugins/request-context.js';
import { served } from '../../../src/http/request-record.js';
import { pluginApp } from '../../helpers/plugin-app.js';

const fresh = () => 'generated-id';

describe('requestIdFrom', () => {
  it.each<[string, string | string[] | undefined, string]>([
    ['no header', undefined, 'generated-id'],
    ['a usual id', 'req-7f3a9c', 'req-7f3a9c'],
    ['a UUID', '0b6f2b1e-8f0a-4c1e-9d55-3a2b1c0d9e8f', '0b6f2b1e-8f0a-4c1e-9d55-3a2b1c0d9e8f'],
    ['the first of repeated headers', ['first-id', 'second-id'], 'first-id'],
    ['200 characters', 'a'.repeat(200), 'a'.repeat(200)],
    ['201 characters', 'a'.repeat(201), 'generated-id'],
    ['an empty one', '', 'generated-id'],
    ['one with a space', 'two words', 'generated-id'],
    ['one with a line break (log injection)', 'id\n{"level":"error"}', 'generated-id'],
    ['one with a control character', 'id\u0007', 'generated-id'],
    ['non-ASCII', 'idé', 'generated-id'],
  ])('takes %s as %j', (_name, header, expected) => {
    expect(requestIdFrom(header, fresh)).toBe(expected);
  });
});

describe('freshRequestId', () => {
  it('makes a lower-case version 4 UUID, a different one each time', () => {
    const ids = Array.from({ length: 1000 }, freshRequestId);
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(1000);
  });
});

describe("the request's log line", () => {
  /** Resolves with the first line `lines` gains that `matches`, polling the captured log. */
  async function lineWhere(lines: string[], matches: (line: Record<string, unknown>) => boolean) {
    for (;;) {
      const found = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find(matches);
      if (found !== undefined) return found;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('is written for a client that left while its service never returned, saying so', async () => {
    let reached: () => void = () => undefined;
    const handlerReached = new Promise<void>((resolve) => (reached = resolve));
    const { app, logLines } = pluginApp(
      (scope) => {
        scope.post('/v1/chat/completions', async (request) => {
          reached();
          // A service stuck for good (a bug): it never says what it did.
          await served(request.gateway, () => new Promise(() => undefined));
        });
      },
      { outcomeWaitMs: 50 },
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as AddressInfo;
      const leaving = new AbortController();
      const request = fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"m"}',
        signal: leaving.signal,
      }).catch(() => 'left');
      // The request reached its handler: the service runs (and never returns); the client leaves.
      await handlerReached;
      leaving.abort();
      expect(await request).toBe('left');
      const line = await lineWhere(logLines, (entry) => entry.route === '/v1/chat/completions');
      expect(line).toMatchObject({ status: 499, serviceUnfinished: true });
    } finally {
      await app.close();
    }
  });
});
