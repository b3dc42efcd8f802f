// Request bodies sent compressed (docs/budgeting.md#what-the-gateway-does-to-a-request): Codex signed in
// with ChatGPT sends its Responses requests to a provider named `openai` zstd-compressed (level 3,
// `Content-Encoding: zstd`: its `enable_request_compression`, on by default), and proxies before the
// gateway may gzip. Such a body is read as the JSON it carries, the limits counted on what it holds: its
// decompressed bytes are bounded by the body limit as they come, and a zstd frame that asks for a window
// or declares content past it is refused before anything is allocated for it.
import type { Readable } from 'node:stream';
import { Transform, type TransformCallback } from 'node:stream';
import * as zlib from 'node:zlib';
import { Decompress } from 'fzstd';
import { GatewayError } from './errors.js';
import { tooLarge } from './json-body.js';

/** Output pieces of 256 KB: each piece costs the reader a scan step, and 16 KB ones cost more than the bytes. */
const chunkSize = 256 * 1024;

/**
 * Node's own zstd decoder, where the runtime has one (Node 22.15 and later: the image's Node LTS), with a
 * window no larger than the body limit; fzstd, in JavaScript, where it has none (Node 20).
 */
const nativeZstd = (zlib as unknown as { createZstdDecompress?: (options: object) => Transform })
  .createZstdDecompress;
const windowLogMax = (zlib.constants as Record<string, number | undefined>).ZSTD_d_windowLogMax;

/** The content codings read, and what each is read with. */
const decoders: Readonly<Record<string, (limitBytes: number) => Transform>> = {
  gzip: () => zlib.createGunzip({ chunkSize }),
  'x-gzip': () => zlib.createGunzip({ chunkSize }),
  deflate: () => zlib.createInflate({ chunkSize }),
  br: () => zlib.createBrotliDecompress({ chunkSize }),
  zstd: (limitBytes) =>
    nativeZstd === undefined || windowLogMax === undefined
      ? new ZstdDecompress(limitBytes)
      : nativeZstd({
          chunkSize,
          params: { [windowLogMax]: Math.max(10, Math.ceil(Math.log2(limitBytes))) },
        }),
};

/** Whether the gateway reads bodies of this content coding (one coding, lower case). */
export function readsEncoding(encoding: string): boolean {
  return Object.hasOwn(decoders, encoding);
}

/**
 * The body `payload` carries, decompressed as `encoding` says (readsEncoding). The stream fails with
 * `request_too_large` past `limitBytes` of compressed zstd or of a frame's window, and with the decoder's
 * own error for data that is not of that coding (the reader names it: `undecodable`). On failure the
 * caller calls `abandon`: what is left of the payload is then the early-refusal drain's.
 */
export function decompressed(
  payload: Readable,
  encoding: string,
  limitBytes: number,
): { body: Readable; abandon: () => void; undecodable: (cause: Error) => GatewayError } {
  const decoder = (decoders[encoding] as (limitBytes: number) => Transform)(limitBytes);
  // A body cut off (the client gone, its stream failed) ends the decoding with it: pipe carries no error.
  const cut = (error?: Error): void => {
    if (!payload.readableEnded) decoder.destroy(error ?? new Error('The request body was cut off.'));
  };
  payload.once('error', cut);
  payload.once('close', () => cut());
  payload.pipe(decoder);
  return {
    body: decoder,
    abandon: () => {
      payload.unpipe(decoder);
      decoder.destroy();
    },
    undecodable: (cause) =>
      new GatewayError(
        'invalid_request',
        `The request body could not be decompressed (Content-Encoding: ${encoding}).`,
        { cause },
      ),
  };
}

/**
 * zstd, read with fzstd (Node 20 has no zstd of its own). The compressed bytes are gathered (they are
 * within the body limit), every frame's header is checked against the limit, then they are decompressed,
 * each piece counted as it comes out.
 */
class ZstdDecompress extends Transform {
  private readonly pieces: Buffer[] = [];
  private received = 0;

  constructor(private readonly limitBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.received += chunk.length;
    if (this.received > this.limitBytes) return done(tooLarge());
    this.pieces.push(chunk);
    done();
  }

  override _flush(done: TransformCallback): void {
    const data = Buffer.concat(this.pieces, this.received);
    const fault = zstdFramesFault(data, this.limitBytes);
    if (fault !== undefined) return done(fault);
    let out = 0;
    // Pieces (a block each) gathered into chunks of 256 KB before they go on: a body of tiny blocks
    // would otherwise cost a push each.
    let gathered: Buffer[] = [];
    let gatheredBytes = 0;
    const pass = (): void => {
      if (gatheredBytes > 0) this.push(Buffer.concat(gathered, gatheredBytes));
      gathered = [];
      gatheredBytes = 0;
    };
    try {
      new Decompress((piece) => {
        out += piece.length;
        if (out > this.limitBytes) throw tooLarge();
        gathered.push(Buffer.from(piece));
        gatheredBytes += piece.length;
        if (gatheredBytes >= chunkSize) pass();
      }).push(data, true);
    } catch (error) {
      return done(error as Error);
    }
    pass();
    done();
  }
}

/**
 * The most frames and blocks a body may hold: an encoder writes one frame of blocks of up to 128 KB (a
 * 32 MiB body: 256 blocks; one that flushes every 2 KB, 16,384). fzstd spends ~0.3–1 µs on each block
 * however small, and recurses once per frame: a body of 340,000 empty blocks cost 100 ms, 65,535 blocks of
 * a byte 64 ms, and 116,000 empty frames overflowed its stack.
 */
const maxFrames = 1_024;
const maxBlocks = 16_384;

/**
 * What is wrong with the zstd frames of `data`, walked by their headers and block headers alone: a frame
 * whose window or declared content size passes `limitBytes` (fzstd allocates either whole), more frames or
 * blocks than an encoder writes, or data that is not zstd frames; undefined when nothing is. Linear in the
 * number of blocks.
 */
export function zstdFramesFault(data: Uint8Array, limitBytes: number): GatewayError | undefined {
  const invalid = new GatewayError(
    'invalid_request',
    'The request body could not be decompressed (Content-Encoding: zstd).',
  );
  let at = 0;
  let frames = 0;
  let blocks = 0;
  while (at < data.length) {
    if (++frames > maxFrames) return invalid;
    if (data.length - at < 8) return invalid;
    const magic = readLittleEndian(data, at, 4);
    // A skippable frame: its size, then its bytes.
    if (magic >= 0x184d2a50 && magic <= 0x184d2a5f) {
      at += 8 + readLittleEndian(data, at + 4, 4);
      continue;
    }
    if (magic !== 0xfd2fb528) return invalid;
    const descriptor = data[at + 4] as number;
    const contentSizeFlag = descriptor >> 6;
    const singleSegment = (descriptor >> 5) & 1;
    let next = at + 5;
    let window = 0;
    if (singleSegment === 0) {
      const windowDescriptor = data[next++] as number;
      const base = 2 ** (10 + (windowDescriptor >> 3));
      window = base + (base / 8) * (windowDescriptor & 7);
    }
    next += [0, 1, 2, 4][descriptor & 3] as number;
    const sizeBytes = contentSizeFlag === 0 ? singleSegment : 2 ** contentSizeFlag;
    const contentSize =
      sizeBytes === 0 ? 0 : readLittleEndian(data, next, sizeBytes) + (contentSizeFlag === 1 ? 256 : 0);
    next += sizeBytes;
    if (window > limitBytes || contentSize > limitBytes) return tooLarge();
    for (;;) {
      if (next + 3 > data.length || ++blocks > maxBlocks) return invalid;
      const header = readLittleEndian(data, next, 3);
      next += 3;
      const type = (header >> 1) & 3;
      if (type === 3) return invalid;
      next += type === 1 ? 1 : header >>> 3;
      if ((header & 1) === 1) break;
    }
    // The content checksum, when the frame says it has one.
    at = next + ((descriptor >> 2) & 1) * 4;
  }
  return at === data.length ? undefined : invalid;
}

/** `bytes` bytes of `data` from `at`, little-endian; past 2^53 (an 8-byte size), Infinity. */
function readLittleEndian(data: Uint8Array, at: number, bytes: number): number {
  let value = 0;
  for (let index = bytes - 1; index >= 0; index--) value = value * 256 + (data[at + index] ?? 0);
  return Number.isSafeInteger(value) ? value : Infinity;
}
