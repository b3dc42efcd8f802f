// Compressed request bodies (request-encoding.ts): zstd frames walked by their headers before anything is
// allocated for them, and bodies decoded as zstd (Codex's level 3, from a real encoder), gzip, deflate and
// br, bounded by the body limit — on this runtime (Node 20: zstd in JavaScript) and on Node 22, whose own
// zstd decoder the gateway uses where it has one.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../src/errors.js';
import { decompressed, readsEncoding, zstdFramesFault } from '../src/request-encoding.js';
import { node22 } from './helpers/newest-clients.js';
import { zstdCompress } from './helpers/zstd.js';

/** What `decompressed` gives of `bytes`: the text, or the code of the error it fails with. */
async function decoded(bytes: Buffer, encoding: string, limitBytes: number): Promise<string> {
  const { body } = decompressed(Readable.from([bytes]), encoding, limitBytes);
  const pieces: Buffer[] = [];
  try {
    for await (const piece of body) pieces.push(piece as Buffer);
  } catch (error) {
    return isGatewayError(error) ? `error ${error.code}` : `error ${(error as Error).message}`;
  }
  return Buffer.concat(pieces).toString('utf8');
}

const json = JSON.stringify({ model: 'gpt-5.5', input: 'Read the log. '.repeat(2_000) });

describe('zstdFramesFault', () => {
  /** A frame header of no content size and a window of 2^(10 + exponent), then one empty last raw block. */
  const windowFrame = (exponent: number) =>
    Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, exponent << 3, 0x01, 0x00, 0x00]);
  /** A single-segment frame declaring `size` bytes of content in 4 bytes, then one empty last raw block. */
  const sizedFrame = (size: number) => {
    const frame = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0, 0, 0, 0, 0x01, 0x00, 0x00]);
    frame.writeUInt32LE(size, 5);
    return frame;
  };
  const skippable = Buffer.from([0x50, 0x2a, 0x4d, 0x18, 0x02, 0x00, 0x00, 0x00, 0xaa, 0xbb]);

  it.each([
    ['a real encoder’s frame', () => zstdCompress(json), undefined],
    [
      'two frames, a skippable one between',
      () => Buffer.concat([zstdCompress('{}'), skippable, zstdCompress('[]')]),
      undefined,
    ],
    ['a window of 1 MiB', () => windowFrame(10), undefined],
    ['a window of 2 GiB', () => windowFrame(21), 'request_too_large'],
    ['content declared past the limit', () => sizedFrame(2_000_000_000), 'request_too_large'],
    ['a frame cut in its blocks', () => zstdCompress(json).subarray(0, 20), 'invalid_request'],
    ['bytes that are no frame', () => Buffer.from('{"model":"m"} is JSON'), 'invalid_request'],
    [
      'more blocks than an encoder writes (340,000 empty ones: 100 ms of decoding)',
      () =>
        Buffer.concat([
          Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00]),
          Buffer.alloc(3 * 340_000),
          Buffer.from([1, 0, 0]),
        ]),
      'invalid_request',
    ],
    [
      'more frames than an encoder writes (116,000 empty ones overflowed the decoder’s stack)',
      () => Buffer.concat(Array.from({ length: 116_000 }, () => windowFrame(0))),
      'invalid_request',
    ],
    ['1,024 frames', () => Buffer.concat(Array.from({ length: 1_024 }, () => windowFrame(0))), undefined],
    [
      'a reserved block type',
      () => Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 0x07, 0x00, 0x00]),
      'invalid_request',
    ],
  ])('%s', (_name, frames, fault) => {
    expect(zstdFramesFault(frames(), 32 * 1024 * 1024)?.code).toBe(fault);
  });
});

describe('decompressed', () => {
  it.each([
    ['zstd', zstdCompress],
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ])('reads %s', async (encoding, compress) => {
    expect(readsEncoding(encoding)).toBe(true);
    expect(await decoded(compress(json), encoding, 1_000_000)).toBe(json);
  });

  it('fails a zstd body that decompresses past the limit with request_too_large (a gzip one is the reader’s to stop)', async () => {
    const spaces = ' '.repeat(2_000_000);
    expect(await decoded(zstdCompress(spaces), 'zstd', 1_000_000)).toBe('error request_too_large');
    expect(await decoded(gzipSync(spaces), 'gzip', 1_000_000)).toBe(spaces);
  });

  it.each(['zstd', 'gzip', 'deflate', 'br'])('fails bytes that are not %s', async (encoding) => {
    expect(await decoded(Buffer.from('{"a":1} is no compressed body'), encoding, 1_000_000)).toMatch(
      /^error /,
    );
  });

  it.each(['zstd', 'gzip'])('fails a %s body cut off before its end (the client gone)', async (encoding) => {
    const whole = encoding === 'zstd' ? zstdCompress(json) : gzipSync(json);
    const payload = new Readable({ read: () => undefined });
    payload.push(whole.subarray(0, 10));
    const { body } = decompressed(payload, encoding, 1_000_000);
    const reading = (async () => {
      for await (const _piece of body) {
        // drain
      }
    })();
    payload.destroy(new Error('aborted'));
    await expect(reading).rejects.toThrow();
  });

  it('reads no other coding', () => {
    for (const encoding of ['compress', 'gzip, br', 'identity', 'toString'])
      expect(readsEncoding(encoding)).toBe(false);
  });

  it("decodes zstd with Node 22's own decoder, bounded by the limit's window", () => {
    const script = `
      import { Readable } from 'node:stream';
      import { decompressed } from ${JSON.stringify(new URL('../src/request-encoding.ts', import.meta.url).pathname)};
      const read = async (bytes, limit) => {
        const pieces = [];
        try { for await (const piece of decompressed(Readable.from([bytes]), 'zstd', limit).body) pieces.push(piece); }
        catch (error) { return 'error'; }
        return Buffer.concat(pieces).toString();
      };
      const input = JSON.parse(process.argv[2]);
      console.log(JSON.stringify({
        native: typeof (await import('node:zlib')).createZstdDecompress,
        text: await read(Buffer.from(input.body, 'base64'), 1_000_000),
        wide: await read(Buffer.from(input.wide, 'base64'), 1_000_000),
      }));`;
    const wide = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 21 << 3, 0x01, 0x00, 0x00]);
    const file = join(mkdtempSync(join(tmpdir(), 'ctxgate-zstd-')), 'native.mts');
    writeFileSync(file, script);
    const out = execFileSync(
      node22,
      [
        new URL('../node_modules/tsx/dist/cli.mjs', import.meta.url).pathname,
        file,
        JSON.stringify({ body: zstdCompress(json).toString('base64'), wide: wide.toString('base64') }),
      ],
      { encoding: 'utf8' },
    );
    expect(JSON.parse(out.trim().split('\n').at(-1) ?? '')).toEqual({
      native: 'function',
      text: json,
      wide: 'error',
    });
  });
});
