// What a file part of a chat request weighs in a prompt (docs/budgeting.md#files): a PDF a client
// attaches as OpenAI's `file` part (`file_data`, a data URL), and what the Responses bridge makes of
// `input_file`. Providers put each page in the prompt twice — OpenAI "both the extracted text and an
// image of each page", Anthropic 1,500 to 3,000 tokens a page — so a PDF is counted by its pages: a
// guess, as an image's tokens are (token-accounting.ts counts it among the guessed parts).
import { Unzlib } from 'fflate';

/** Tokens a page of a PDF is counted as: its text and a picture of it. */
export const pdfPageTokens = 1_500;

/** Bytes of a PDF whose pages cannot be counted taken as one page. */
const bytesPerUncountedPage = 50_000;

/** Where a file's tokens are kept on its `file` object once counted (as image-tokens' are). */
const countedFileTokens = Symbol('ctxgate.fileTokens');

/**
 * The tokens of a `file` part: a PDF by its pages, another file sent as data by its bytes (a text file,
 * a token for every three), a file by id (its content unknown) as one page.
 */
export function filePartTokens(part: Record<string, unknown>): number {
  const file = part.file as { file_data?: unknown; [countedFileTokens]?: number } | undefined;
  if (typeof file !== 'object' || file === null) return pdfPageTokens;
  const known = file[countedFileTokens];
  if (known !== undefined) return known;
  const tokens = typeof file.file_data === 'string' ? fileDataTokens(file.file_data) : pdfPageTokens;
  if (Object.isExtensible(file))
    Object.defineProperty(file, countedFileTokens, { value: tokens, configurable: true });
  return tokens;
}

/**
 * A file's data as a base64 data URL (`data:application/pdf;base64,…`, parameters such as a charset
 * allowed): its media type and its base64; undefined for anything else.
 */
export function base64DataUrl(data: string): { mediaType: string; base64: string } | undefined {
  const header = /^data:([^;,]*)(?:;[\w-]+=[^;,]*)*;base64,/i.exec(data.slice(0, 200));
  return header === null
    ? undefined
    : { mediaType: (header[1] as string).toLowerCase(), base64: data.slice(header[0].length) };
}

function fileDataTokens(data: string): number {
  // A base64 data URL, another data URL (percent-encoded), or (as some clients send it) the base64 alone.
  const url = base64DataUrl(data);
  const plain = url === undefined ? /^data:([^;,]*),/.exec(data.slice(0, 200)) : null;
  const bytes =
    plain !== null
      ? Buffer.from(decodeURIComponentSafe(data.slice(plain[0].length)), 'utf8')
      : Buffer.from(url?.base64 ?? data, 'base64');
  const mediaType = url?.mediaType ?? plain?.[1] ?? '';
  const isPdf = mediaType === 'application/pdf' || bytes.subarray(0, 5).toString('latin1') === '%PDF-';
  if (!isPdf) return Math.ceil(bytes.length / 3);
  return pdfPages(bytes) * pdfPageTokens;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const isNameByte = (byte: number | undefined): boolean =>
  byte !== undefined &&
  ((byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a));

const isSpace = (byte: number | undefined): boolean =>
  byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09 || byte === 0x0c || byte === 0x00;

/**
 * Most `/Type` and `/Count` keys read in a file: a real PDF of thousands of pages has some tens of
 * thousands; a hostile one of millions costs no more than this many.
 */
const maxTypeKeys = 20_000;
const maxCountKeys = 1_000;

/** "/Page" as bytes. */
const pageName = [0x2f, 0x50, 0x61, 0x67, 0x65];

/** The page objects in `bytes`: `/Type /Page`, not `/Pages` or `/PageLabels`. */
function pageObjects(bytes: Buffer): number {
  let pages = 0;
  let keys = 0;
  for (
    let at = bytes.indexOf('/Type');
    at !== -1 && keys++ < maxTypeKeys;
    at = bytes.indexOf('/Type', at + 5)
  ) {
    let next = at + 5;
    while (isSpace(bytes[next])) next++;
    if (pageName.every((byte, index) => bytes[next + index] === byte) && !isNameByte(bytes[next + 5]))
      pages++;
  }
  return pages;
}

/** The largest `/Count` in `bytes`: a page tree's count of its pages (0 for none). */
function pageTreeCount(bytes: Buffer): number {
  let count = 0;
  let keys = 0;
  for (
    let at = bytes.indexOf('/Count');
    at !== -1 && keys++ < maxCountKeys;
    at = bytes.indexOf('/Count', at + 6)
  ) {
    const digits = /^\s*(\d{1,6})/.exec(bytes.toString('latin1', at + 6, at + 16));
    if (digits !== null) count = Math.max(count, Number(digits[1]));
  }
  return count;
}

/**
 * Most object streams read, and most bytes all of them are inflated to: they hold dictionaries, not
 * page content (a 2,000-page PDF has a few dozen, of some KB each), and a hostile file's CPU stays
 * bounded — a stream is fed 1 KB at a time (at most about 1 MB out of each) and dropped past the bound.
 */
const maxObjectStreams = 64;
const maxObjectStreamBytes = 2 * 1024 * 1024;
const inflateChunk = 1_024;

/**
 * `data` inflated (zlib, as FlateDecode is) until more than `maxBytes` came out: what came out before an
 * error or the bound (`bytes`, at most `maxBytes`), and how much was decoded (`decoded`, what it cost).
 */
function inflated(data: Uint8Array, maxBytes: number): { bytes: Buffer; decoded: number } {
  const chunks: Uint8Array[] = [];
  let decoded = 0;
  const stream = new Unzlib((chunk) => {
    decoded += chunk.length;
    if (decoded <= maxBytes) chunks.push(chunk);
  });
  try {
    for (let at = 0; at < data.length && decoded <= maxBytes; at += inflateChunk)
      stream.push(data.subarray(at, at + inflateChunk), at + inflateChunk >= data.length);
  } catch {
    // Not Flate, or cut: what came out so far.
  }
  return { bytes: Buffer.concat(chunks), decoded };
}

/**
 * The object streams of a PDF (`/Type /ObjStm`, where PDF 1.5 writers — pdfTeX, Word — put the page
 * objects and the page tree, compressed), inflated within the bounds above.
 */
function objectStreams(bytes: Buffer): Buffer[] {
  const streams: Buffer[] = [];
  let tried = 0;
  let read = 0;
  for (let at = bytes.indexOf('/ObjStm'); at !== -1; at = bytes.indexOf('/ObjStm', at + 7)) {
    if (tried++ === maxObjectStreams || read >= maxObjectStreamBytes) break;
    const keyword = bytes.indexOf('stream', at);
    const end = keyword === -1 ? -1 : bytes.indexOf('endstream', keyword);
    if (end === -1) break;
    let start = keyword + 6;
    if (bytes[start] === 0x0d) start++;
    if (bytes[start] === 0x0a) start++;
    const { bytes: stream, decoded } = inflated(bytes.subarray(start, end), maxObjectStreamBytes - read);
    read += decoded;
    streams.push(stream);
    at = end;
  }
  return streams;
}

/**
 * The pages of a PDF: its page objects (`/Type /Page`, not `/Pages`), or those in its compressed object
 * streams; failing that, the largest `/Count` a page tree in those streams gives; else one a 50 KB. At
 * least one. Read with the buffer's own search, no copy of the file; each step only when the one before
 * found nothing.
 */
export function pdfPages(bytes: Buffer): number {
  const visible = pageObjects(bytes);
  if (visible > 0) return visible;
  const streams = objectStreams(bytes);
  const hidden = streams.reduce((total, stream) => total + pageObjects(stream), 0);
  if (hidden > 0) return hidden;
  // The page tree sits beside its pages: in plain sight when they do (then they were counted), in an
  // object stream when they are hidden — so only those are read for it, not the whole file again.
  const count = Math.max(0, ...streams.map(pageTreeCount));
  if (count > 0) return count;
  return Math.max(1, Math.ceil(bytes.length / bytesPerUncountedPage));
}
