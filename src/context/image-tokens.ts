// Image token estimates by OpenAI's published tile formula, with the size read from a data URL's
// header bytes (PNG, JPEG, GIF, WebP). Remote URLs get a flat estimate: their size is unknown.

export const lowDetailImageTokens = 85;
const tileTokens = 170;
/** A 1024×1024 image at high detail: a fair guess for an image of unknown size. */
export const unknownSizeImageTokens = lowDetailImageTokens + tileTokens * 4;

export interface ImageSize {
  width: number;
  height: number;
}

export function tileFormulaTokens({ width, height }: ImageSize, detail: string | undefined): number {
  if (detail === 'low') return lowDetailImageTokens;
  let w = width;
  let h = height;
  if (w > 2048 || h > 2048) {
    const scale = 2048 / Math.max(w, h);
    w = Math.floor(w * scale);
    h = Math.floor(h * scale);
  }
  if (Math.min(w, h) > 768) {
    const scale = 768 / Math.min(w, h);
    w = Math.floor(w * scale);
    h = Math.floor(h * scale);
  }
  return lowDetailImageTokens + tileTokens * Math.ceil(w / 512) * Math.ceil(h / 512);
}

/** Each base64 digit's value by its character code (-1: not a digit, skipped as whitespace is). */
const base64Values = (() => {
  const values = new Int8Array(128).fill(-1);
  const digits = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let index = 0; index < digits.length; index++) values[digits.charCodeAt(index)] = index;
  return values;
})();

/**
 * The first `maxBytes` bytes the base64 text of `text` from `start` decodes to (fewer when it ends, or
 * at padding), read in place: a request of thousands of pictures reads each one's header without a copy.
 */
function decodeBase64Prefix(text: string, start: number, maxBytes: number): Uint8Array {
  const bytes = new Uint8Array(maxBytes);
  let length = 0;
  let bits = 0;
  let held = 0;
  for (let at = start; at < text.length && length < maxBytes; at++) {
    const code = text.charCodeAt(at);
    if (code === 0x3d) break;
    const value = code < 128 ? (base64Values[code] as number) : -1;
    if (value < 0) continue;
    bits = (bits << 6) | value;
    held += 6;
    if (held >= 8) {
      held -= 8;
      bytes[length++] = (bits >> held) & 0xff;
    }
  }
  return length === maxBytes ? bytes : bytes.subarray(0, length);
}

function readSize(bytes: Uint8Array): ImageSize | undefined {
  const at = (index: number): number => bytes[index] ?? 0;
  const u16be = (index: number): number => (at(index) << 8) | at(index + 1);
  const u16le = (index: number): number => at(index) | (at(index + 1) << 8);
  const u32be = (index: number): number =>
    ((at(index) << 24) >>> 0) + (at(index + 1) << 16) + (at(index + 2) << 8) + at(index + 3);
  // PNG: signature, then the IHDR chunk with width and height.
  if (at(0) === 0x89 && at(1) === 0x50 && at(2) === 0x4e && at(3) === 0x47)
    return { width: u32be(16), height: u32be(20) };
  // GIF87a / GIF89a: logical screen size.
  if (at(0) === 0x47 && at(1) === 0x49 && at(2) === 0x46) return { width: u16le(6), height: u16le(8) };
  // WebP: RIFF....WEBP then a VP8, VP8L or VP8X chunk.
  if (at(0) === 0x52 && at(1) === 0x49 && at(8) === 0x57 && at(9) === 0x45) {
    const chunk = String.fromCharCode(at(12), at(13), at(14), at(15));
    if (chunk === 'VP8 ') return { width: u16le(26) & 0x3fff, height: u16le(28) & 0x3fff };
    if (chunk === 'VP8L') {
      const bits = at(21) | (at(22) << 8) | (at(23) << 16) | (at(24) << 24);
      return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
    }
    if (chunk === 'VP8X')
      return {
        width: 1 + (at(24) | (at(25) << 8) | (at(26) << 16)),
        height: 1 + (at(27) | (at(28) << 8) | (at(29) << 16)),
      };
    return undefined;
  }
  // JPEG: walk the segments to the first start-of-frame marker.
  if (at(0) === 0xff && at(1) === 0xd8) {
    let offset = 2;
    while (offset + 9 < bytes.length) {
      if (at(offset) !== 0xff) return undefined;
      const marker = at(offset + 1);
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { width: u16be(offset + 7), height: u16be(offset + 5) };
      }
      offset += 2 + u16be(offset + 2);
    }
  }
  return undefined;
}

/** The size of a base64 data-URL image, when its header can be read. */
export function dataUrlImageSize(url: string): ImageSize | undefined {
  const match = /^data:image\/[a-z0-9.+-]+;base64,/i.exec(url);
  if (match === null) return undefined;
  try {
    // PNG, GIF and WebP give their size in their first 30 bytes; a JPEG's frame header may come after
    // its other segments (EXIF, a thumbnail): only a JPEG is read further, up to 64 KB. A screenshot of
    // a megabyte is not decoded 64 KB deep at every count of it.
    const start = match[0].length;
    const head = decodeBase64Prefix(url, start, 64);
    const size =
      head[0] === 0xff && head[1] === 0xd8
        ? readSize(decodeBase64Prefix(url, start, 65_536))
        : readSize(head);
    return size !== undefined && size.width > 0 && size.height > 0 ? size : undefined;
  } catch {
    return undefined;
  }
}

export function imageTokens(url: string, detail: string | undefined): number {
  if (detail === 'low') return lowDetailImageTokens;
  const size = dataUrlImageSize(url);
  return size === undefined ? unknownSizeImageTokens : tileFormulaTokens(size, detail);
}
