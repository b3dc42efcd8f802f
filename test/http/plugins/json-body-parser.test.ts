// The one body parser: every Content-Type read as JSON, an empty body as no body, a compressed one read
// decompressed (zstd as Codex sends it, gzip, deflate, br) and any other coding refused with 415, the bytes
// kept for a request forwarded as it came, and a hostile body refused with the gateway's own error.
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { jsonBodyParserPlugin } from '../../../src/http/plugins/json-body-parser.js';
import { pluginApp } from '../../helpers/plugin-app.js';
import { zstdCompress } from '../../helpers/zstd.js';

let app: FastifyInstance;

beforeAll(async () => {
  ({ app } = pluginApp((scope) => {
    scope.register(jsonBodyParserPlugin, {
      bodyLimitBytes: 1_000,
      shape: { maxDepth: 4, maxContainers: 10 },
    });
    // What the route received: the parsed body, and the bytes kept beside it.
    scope.post('/echo', async (request) => ({
      body: request.body ?? null,
      rawBody: request.gateway.rawBody?.toString('utf8') ?? null,
    }));
  }));
  await app.ready();
});
afterAll(() => app.close());

const post = (payload: string | Buffer, headers: Record<string, string>) =>
  app.inject({ method: 'POST', url: '/echo', payload, headers });

describe('the JSON body parser', () => {
  it.each<[string, string | undefined]>([
    ['application/json', 'application/json'],
    ['application/json with a charset', 'application/json; charset=utf-8'],
    ['form encoding (curl -d)', 'application/x-www-form-urlencoded'],
    ['text/plain', 'text/plain'],
    ['an unknown type', 'application/vnd.example+whatever'],
  ])('reads a body sent as %s as JSON', async (_name, contentType) => {
    const response = await post(
      '{"model":"m","n":2}',
      contentType === undefined ? {} : { 'content-type': contentType },
    );
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ body: { model: 'm', n: 2 }, rawBody: '{"model":"m","n":2}' });
  });

  it.each<[string, string]>([
    ['empty', ''],
    ['only whitespace', ' \r\n\t '],
  ])('takes an %s body as no body at all', async (_name, payload) => {
    const response = await post(payload, { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ body: null, rawBody: null });
  });

  it('keeps the bytes of a body that gives a key twice as the gateway read it: the last of it, once', async () => {
    const response = await post('{"model":"a","n":2,"model":"b"}', { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ body: { model: 'b', n: 2 }, rawBody: '{"model":"b","n":2}' });
  });

  it('drops a leading byte-order mark from the body and from the bytes kept', async () => {
    const payload = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]);
    const response = await post(payload, { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ body: { a: 1 }, rawBody: '{"a":1}' });
  });

  it.each<[string, string, (body: Buffer) => Buffer]>([
    ['zstd (Codex signed in with ChatGPT)', 'zstd', zstdCompress],
    ['gzip', 'gzip', gzipSync],
    ['x-gzip', 'x-gzip', gzipSync],
    ['deflate', 'deflate', deflateSync],
    ['br', 'br', brotliCompressSync],
    ['an upper-case coding', 'GZIP', gzipSync],
  ])(
    'reads a body compressed with %s, and keeps its bytes decompressed',
    async (_name, encoding, compress) => {
      const response = await post(compress(Buffer.from('{"model":"m","n":2}')), {
        'content-type': 'application/json',
        'content-encoding': encoding,
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ body: { model: 'm', n: 2 }, rawBody: '{"model":"m","n":2}' });
    },
  );

  it.each<[string, string, () => Buffer, number, string]>([
    ['a list of codings', 'gzip, deflate', () => gzipSync(deflateSync('{}')), 415, 'unsupported_media_type'],
    ['an unknown coding', 'compress', () => Buffer.from('{}'), 415, 'unsupported_media_type'],
    ['gzip that is not gzip', 'gzip', () => Buffer.from('{"a":1}'), 400, 'invalid_request'],
    ['zstd that is not zstd', 'zstd', () => Buffer.from('{"a":1} and more'), 400, 'invalid_request'],
    [
      'a gzip bomb past the byte limit',
      'gzip',
      () => gzipSync(Buffer.from(`{"a":"${' '.repeat(1_000_000)}"}`)),
      413,
      'request_too_large',
    ],
    [
      'a zstd bomb past the byte limit',
      'zstd',
      () => zstdCompress(`{"a":"${' '.repeat(1_000_000)}"}`),
      413,
      'request_too_large',
    ],
    [
      'a zstd frame that asks for a 2 GB window (what a decoder would allocate)',
      'zstd',
      // Magic, a descriptor of no content size, a window of 2^31, then a last raw block of nothing.
      () => Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa8, 0x01, 0x00, 0x00]),
      413,
      'request_too_large',
    ],
    ['compressed JSON past the nesting limit', 'gzip', () => gzipSync('[[[[[1]]]]]'), 400, 'json_too_deep'],
  ])('refuses %s', async (_name, encoding, body, status, code) => {
    const response = await post(body(), { 'content-type': 'application/json', 'content-encoding': encoding });
    expect(response.statusCode).toBe(status);
    expect(response.json().error).toMatchObject({ code, type: 'invalid_request_error' });
  });

  it.each<[string, string]>([
    ['identity', 'identity'],
    ['an empty value', ''],
  ])('reads a body whose Content-Encoding is %s', async (_name, encoding) => {
    const response = await post('{"a":1}', {
      'content-type': 'application/json',
      'content-encoding': encoding,
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().body).toEqual({ a: 1 });
  });

  it('cuts an attacker-length Content-Encoding in the message', async () => {
    const encoding = `x${'y'.repeat(5_000)}`;
    const response = await post('{"a":1}', {
      'content-type': 'application/json',
      'content-encoding': encoding,
    });
    expect(response.statusCode).toBe(415);
    expect(response.json().error.message.length).toBeLessThan(200);
  });

  it.each<[string, string, number, string]>([
    ['malformed JSON', '{"a":', 400, 'invalid_json'],
    ['a prototype key', '{"__proto__":{"admin":true}}', 400, 'invalid_json'],
    ['nesting past the limit', '[[[[[1]]]]]', 400, 'json_too_deep'],
    ['too many objects and arrays', `[${'[],'.repeat(12)}[]]`, 400, 'invalid_request'],
    ['a body over the byte limit', `{"a":"${'x'.repeat(1_000)}"}`, 413, 'request_too_large'],
  ])('refuses %s with the gateway error', async (_name, payload, status, code) => {
    const response = await post(payload, { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(status);
    expect(response.json().error.code).toBe(code);
  });
});
