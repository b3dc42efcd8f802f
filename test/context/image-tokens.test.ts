// Image tokens (image-tokens.ts): OpenAI's tile formula against its published examples, with the size read
// from a data URL's header bytes (PNG, GIF, JPEG, WebP written here byte by byte), and a flat estimate
// where the size cannot be known.
import { describe, expect, it } from 'vitest';
import {
  dataUrlImageSize,
  imageTokens,
  tileFormulaTokens,
  unknownSizeImageTokens,
} from '../../src/context/image-tokens.js';

function pngHeader(width: number, height: number): string {
  const bytes = new Uint8Array(33);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  new DataView(bytes.buffer).setUint32(16, width);
  new DataView(bytes.buffer).setUint32(20, height);
  return `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`;
}

function gifHeader(width: number, height: number): string {
  const bytes = Buffer.alloc(13);
  bytes.write('GIF89a', 0, 'latin1');
  bytes.writeUInt16LE(width, 6);
  bytes.writeUInt16LE(height, 8);
  return `data:image/gif;base64,${bytes.toString('base64')}`;
}

function jpegHeader(width: number, height: number, app0Bytes = 16): string {
  // SOI, an APP0 segment of 16 bytes (or more: EXIF, a thumbnail), then SOF0 with height and width.
  const bytes = Buffer.from([
    0xff,
    0xd8,
    0xff,
    0xe0,
    app0Bytes >> 8,
    app0Bytes & 0xff,
    ...new Array<number>(app0Bytes - 2).fill(0),
    0xff,
    0xc0,
    0x00,
    0x11,
    0x08,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    0x03,
    // The first component's specification.
    0x01,
    0x22,
    0x00,
  ]);
  return `data:image/jpeg;base64,${bytes.toString('base64')}`;
}

function webpHeader(width: number, height: number): string {
  const bytes = Buffer.alloc(30);
  bytes.write('RIFF', 0, 'latin1');
  bytes.write('WEBPVP8X', 8, 'latin1');
  bytes.writeUIntLE(width - 1, 24, 3);
  bytes.writeUIntLE(height - 1, 27, 3);
  return `data:image/webp;base64,${bytes.toString('base64')}`;
}

describe('image tokens', () => {
  it("matches OpenAI's published examples of the tile formula", () => {
    // 1024×1024 high: 4 tiles → 765. 2048×4096 high: scaled to 768×1536, 6 tiles → 1105. Low: 85.
    expect(tileFormulaTokens({ width: 1024, height: 1024 }, 'high')).toBe(765);
    expect(tileFormulaTokens({ width: 2048, height: 4096 }, 'high')).toBe(1105);
    expect(tileFormulaTokens({ width: 4096, height: 8192 }, 'low')).toBe(85);
  });

  it.each([
    ['PNG', pngHeader(800, 600)],
    ['GIF', gifHeader(800, 600)],
    ['JPEG', jpegHeader(800, 600)],
    ['JPEG whose frame header follows 20 KB of other segments', jpegHeader(800, 600, 20_000)],
    ['WebP', webpHeader(800, 600)],
    // Base64 broken into lines, as MIME writes it (every 76 characters; every 16 here, so that the
    // header's own bytes are broken too).
    [
      'PNG in base64 broken into lines',
      pngHeader(800, 600).replace(/(?<=;base64,)(.*)$/s, (data) => data.replace(/.{1,16}/g, '$&\r\n')),
    ],
  ])('reads the size of a %s data URL', (_format, url) => {
    expect(dataUrlImageSize(url)).toEqual({ width: 800, height: 600 });
  });

  it.each([
    // 512×512: one tile. 800×600: 2×2 tiles as it is (never scaled up). 3000×100: scaled to 2048×68, 4×1.
    [512, 512, 'high', 255],
    [800, 600, 'auto', 765],
    [3_000, 100, 'high', 765],
    [800, 600, 'low', 85],
  ] as const)('counts a %i×%i PNG at %s detail as %i tokens', (width, height, detail, tokens) => {
    expect(imageTokens(pngHeader(width, height), detail)).toBe(tokens);
  });

  it.each([
    ['a zero width', pngHeader(0, 600)],
    ['a truncated header', pngHeader(800, 600).slice(0, 30)],
    [
      'a JPEG without a frame',
      'data:image/jpeg;base64,' + Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0]).toString('base64'),
    ],
    ['no base64', 'data:image/png,rawbytes'],
  ])('reads no size from %s', (_name, url) => {
    expect(dataUrlImageSize(url)).toBeUndefined();
  });

  it('uses a flat estimate for remote URLs and unreadable data', () => {
    expect(imageTokens('https://example.com/cat.png', 'high')).toBe(unknownSizeImageTokens);
    expect(imageTokens('data:image/png;base64,!!!!', 'auto')).toBe(unknownSizeImageTokens);
    expect(imageTokens('https://example.com/cat.png', 'low')).toBe(85);
  });
});
