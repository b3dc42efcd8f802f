// The pass-through route: every method under /v1 the other routes do not take, handed to the service
// with its target as sent and its body unparsed — the bytes as they arrive, whatever their type (a
// multipart upload, a binary file, JSON that is not even valid), so uploads stream through.
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PassthroughInput, PassthroughService } from '../../src/chat/passthrough-service.js';
import { registerPassthroughRoutes } from '../../src/http/passthrough-routes.js';
import { pluginApp } from '../helpers/plugin-app.js';

interface Seen {
  input: PassthroughInput;
  bytes: Buffer | undefined;
}
const seen: Seen[] = [];

async function readAll(body: Readable | undefined): Promise<Buffer | undefined> {
  if (body === undefined) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

const passthrough: PassthroughService = {
  async forward(input, client) {
    seen.push({ input, bytes: await readAll(input.body) });
    await client.sendWhole(200, {}, Buffer.from('{"ok":true}'));
    return { upstream: { name: 'default', status: 200, ms: 1, attempts: 1, errorCause: undefined } };
  },
};

let app: FastifyInstance;
beforeAll(async () => {
  ({ app } = pluginApp((scope) => {
    // Another route of the API beside it, as in the gateway: it keeps its own path.
    scope.post('/v1/chat/completions', async () => ({ chat: true }));
    scope.register(async (inner) => registerPassthroughRoutes(inner, { passthrough }));
  }));
  await app.ready();
});
afterAll(() => app.close());

describe('the pass-through route', () => {
  type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  it.each<[string, Method, string, string | undefined, Buffer | undefined]>([
    ['an embeddings request', 'POST', '/v1/embeddings', 'application/json', Buffer.from('{"input":"x"}')],
    ['JSON that does not parse', 'POST', '/v1/embeddings', 'application/json', Buffer.from('{"input":')],
    [
      'a multipart upload',
      'POST',
      '/v1/files',
      'multipart/form-data; boundary=b',
      Buffer.from('--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--b--\r\n'),
    ],
    ['binary audio', 'POST', '/v1/audio/transcriptions', 'audio/mpeg', Buffer.from([0, 255, 1, 254, 0x1f])],
    ['a file read with a query', 'GET', '/v1/files/file-1/content?raw=1', undefined, undefined],
    ['a deletion', 'DELETE', '/v1/files/file-1', undefined, undefined],
    ['a batch update', 'PATCH', '/v1/batches/b-1', 'application/json', Buffer.from('{}')],
  ])('hands the service %s as it came', async (_name, method, target, type, body) => {
    seen.length = 0;
    const response = await app.inject({
      method,
      url: target,
      headers: type === undefined ? {} : { 'content-type': type },
      ...(body === undefined ? {} : { payload: body }),
    });
    expect(response.statusCode).toBe(200);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.input).toMatchObject({ method, target });
    if (body === undefined) expect(seen[0]?.bytes ?? Buffer.alloc(0)).toEqual(Buffer.alloc(0));
    else expect(seen[0]?.bytes?.equals(body)).toBe(true);
  });

  it('leaves the routes of the API to them', async () => {
    seen.length = 0;
    const response = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: { model: 'm' },
    });
    expect(response.json()).toEqual({ chat: true });
    expect(seen).toEqual([]);
  });
});
