// Request-body parsing (every route, the pass-through included): JSON with prototype-poisoning
// protection, a nesting limit and a limit on how many objects and arrays a body may build, so a hostile
// body is a clear 400 and never a crash, a polluted prototype, a blown stack or seconds of CPU. The limits are checked on the bytes as they
// arrive (JsonShapeScanner), before JSON.parse builds anything: a body nested eight million deep is
// refused at its 65th byte. The escape of a lone surrogate half, which no strict provider takes, is read
// as the replacement character (withLoneSurrogatesReplaced).
import * as nodeBuffer from 'node:buffer';
import type { Readable } from 'node:stream';
import secureJson from 'secure-json-parse';
import { GatewayError } from './errors.js';
import { multiByteCountingWeight } from './tokenizer/bpe-counter.js';

export const maxJsonDepth = 64;

export interface JsonShapeLimits {
  /** Deepest nesting of objects and arrays. */
  maxDepth: number;
  /** Most objects and arrays in one body: what JSON.parse allocates for, whatever their size. */
  maxContainers: number;
}

const quote = 0x22;
const backslash = 0x5c;

/** The keys secure-json-parse refuses, as bytes: a body that cannot spell either needs no second scan. */
const forbiddenKeys = [Buffer.from('__proto__'), Buffer.from('constructor')] as const;
const allForbiddenKeys = (1 << forbiddenKeys.length) - 1;

/**
 * Tracks the nesting and the number of containers of a JSON text fed to it in pieces, without building
 * anything. Inside strings it jumps from quote to quote (Buffer.indexOf), so text costs next to nothing.
 * It does not validate: JSON.parse does that afterwards; on valid JSON its counts are exact. It also
 * tells whether any string of the text may be `__proto__` or `constructor` (escaped spellings included):
 * it reads each string's first bytes only as long as they can still spell one of them.
 */
export class JsonShapeScanner {
  private depth = 0;
  private containers = 0;
  private colons = 0;
  private inString = false;
  /** Backslashes ending the previous piece inside a string: they may escape this piece's first quote. */
  private carriedBackslashes = 0;
  /** The forbidden keys (bits of forbiddenKeys) the current string can still spell, and its characters so far. */
  private keysAlive = 0;
  private keyLength = 0;
  private forbiddenKeyPossible = false;

  constructor(private readonly limits: JsonShapeLimits) {}

  /** Whether a string of what was scanned may be `__proto__` or `constructor`: the parse must check. */
  get mayHoldForbiddenKey(): boolean {
    return this.forbiddenKeyPossible;
  }

  /** The members of every object scanned (a colon outside strings ends each key), a key given twice counted twice. */
  get members(): number {
    return this.colons;
  }

  /** Scans the next piece; throws a GatewayError as soon as a limit is passed. */
  push(piece: Buffer): void {
    const length = piece.length;
    let index = 0;
    while (index < length) {
      if (this.inString) {
        if (this.keysAlive !== 0) this.matchKeys(piece, index);
        const end = piece.indexOf(quote, index);
        if (end === -1) {
          this.carriedBackslashes = trailingBackslashes(piece, index, length, this.carriedBackslashes);
          return;
        }
        const escapes = trailingBackslashes(piece, index, end, this.carriedBackslashes);
        this.carriedBackslashes = 0;
        index = end + 1;
        if (escapes % 2 === 0) this.inString = false;
        continue;
      }
      const byte = piece[index] as number;
      index++;
      if (byte === quote) {
        this.inString = true;
        this.carriedBackslashes = 0;
        this.keysAlive = this.forbiddenKeyPossible ? 0 : allForbiddenKeys;
        this.keyLength = 0;
      } else if (byte === 0x5b || byte === 0x7b) {
        this.depth++;
        this.containers++;
        if (this.depth > this.limits.maxDepth) throw tooDeep(this.limits.maxDepth);
        if (this.containers > this.limits.maxContainers) throw tooManyContainers(this.limits.maxContainers);
      } else if (byte === 0x5d || byte === 0x7d) {
        this.depth--;
      } else if (byte === 0x3a) {
        this.colons++;
      }
    }
  }

  /**
   * Follows the current string from `index` while it can still spell a forbidden key: a closing quote
   * right after one of them, or an escape this piece does not hold whole, makes the text suspect.
   */
  private matchKeys(piece: Buffer, start: number): void {
    let index = start;
    while (this.keysAlive !== 0 && index < piece.length) {
      let code = piece[index] as number;
      let width = 1;
      if (code === backslash) {
        // \uXXXX may spell a key's character; a short escape (\n, \") spells none of them.
        const unicode = piece[index + 1] === 0x75;
        if (index + 1 >= piece.length || (unicode && index + 6 > piece.length)) {
          this.forbiddenKeyPossible = true;
          this.keysAlive = 0;
          return;
        }
        code = unicode ? Number.parseInt(piece.toString('latin1', index + 2, index + 6), 16) : -1;
        width = unicode ? 6 : 2;
      }
      for (let key = 0; key < forbiddenKeys.length; key++) {
        if ((this.keysAlive & (1 << key)) === 0) continue;
        const spelled = forbiddenKeys[key] as Buffer;
        if (this.keyLength === spelled.length && code === quote && width === 1) {
          this.forbiddenKeyPossible = true;
          this.keysAlive = 0;
          return;
        }
        if (this.keyLength >= spelled.length || spelled[this.keyLength] !== code)
          this.keysAlive &= ~(1 << key);
      }
      this.keyLength++;
      index += width;
    }
  }
}

/** Backslashes right before `end` (from `start` on), plus those carried in when the run reaches `start`. */
function trailingBackslashes(piece: Buffer, start: number, end: number, carried: number): number {
  let count = 0;
  let index = end - 1;
  while (index >= start && piece[index] === backslash) {
    count++;
    index--;
  }
  return index < start ? count + carried : count;
}

function tooDeep(maxDepth: number): GatewayError {
  return new GatewayError('json_too_deep', `The JSON body is nested deeper than ${maxDepth} levels.`);
}

function tooManyContainers(maxContainers: number): GatewayError {
  return new GatewayError(
    'invalid_request',
    `The JSON body holds more than ${maxContainers} objects and arrays (server.max_json_containers).`,
  );
}

export function tooLarge(): GatewayError {
  return new GatewayError('request_too_large', 'The request body is larger than the gateway accepts.');
}

/** A JSON body as read: its bytes and text, and what the shape scan saw of its keys. */
export interface JsonText {
  bytes: Buffer;
  text: string;
  /** Some string of it may be `__proto__` or `constructor` (JsonShapeScanner): parsed with the checks. */
  mayHoldForbiddenKey: boolean;
  /** The members of its objects, a key given twice counted twice (JsonShapeScanner). */
  members: number;
}

/**
 * Reads a JSON body from `payload` within `limitBytes`, its shape checked piece by piece; resolves with
 * its bytes and its text (a leading byte-order mark dropped from both). Rejects at the first piece
 * that passes a limit.
 */
export function readJsonText(
  payload: Readable,
  options: {
    limitBytes: number;
    shape: JsonShapeLimits;
    contentLength: number;
    /** The error a failure of `payload` is told as (a decompressing stream's: request-encoding.ts). */
    unreadable?: (cause: Error) => GatewayError;
  },
): Promise<JsonText> {
  const { limitBytes, contentLength } = options;
  if (contentLength > limitBytes) return Promise.reject(tooLarge());
  const scanner = new JsonShapeScanner(options.shape);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = (): void => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onError);
    };
    const fail = (error: unknown): void => {
      stop();
      reject(error);
    };
    const onData = (chunk: Buffer | string): void => {
      const piece = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      received += piece.length;
      if (received > limitBytes) return fail(tooLarge());
      try {
        scanner.push(piece);
      } catch (error) {
        return fail(error);
      }
      chunks.push(piece);
    };
    const onError = (error: Error): void =>
      fail(
        error instanceof GatewayError
          ? error
          : (options.unreadable?.(error) ??
              new GatewayError('invalid_request', 'The request body could not be read.', { cause: error })),
      );
    const onEnd = (): void => {
      stop();
      if (!Number.isNaN(contentLength) && received !== contentLength)
        return reject(
          new GatewayError('invalid_request', 'The Content-Length header does not match the body.'),
        );
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
      const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
      const body = withLoneSurrogatesReplaced(bom === 0 ? bytes : bytes.subarray(bom));
      resolve({
        bytes: body,
        text: decodeUtf8(body),
        mayHoldForbiddenKey: scanner.mayHoldForbiddenKey,
        members: scanner.members,
      });
    };
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onError);
    payload.resume();
  });
}

const escapeStart = Buffer.from('\\u');
const escapedReplacement = '\\ufffd';

/**
 * `bytes` with each JSON escape of half a UTF-16 surrogate pair that stands alone (`\ud83d` not followed
 * by the escape of a low half, or a low half alone) written as `\ufffd`, the replacement character:
 * the text a UTF-8 decoder gives a body's invalid bytes (an encoded surrogate half among them). A lone
 * half is no character; JSON.stringify writes one for a string cut between the halves of an emoji,
 * and strict parsers refuse the whole body (Anthropic: "The request body is not valid JSON: no low
 * surrogate in string", DeepSeek: "lone leading surrogate in hex escape") — every later request of a
 * session that stored it too. The same length (six bytes for six), so nothing else moves; the bytes
 * themselves when there is none (a body with no `\u` escape is read by one search: about 0.1 µs at
 * 2 KB, 2.5 µs at 214 KB, measured alone).
 */
export function withLoneSurrogatesReplaced(bytes: Buffer): Buffer {
  let out: Buffer | undefined;
  let at = bytes.indexOf(escapeStart);
  while (at !== -1) {
    let next = at + 2;
    // `\ud…` or `\uD…` only (any other escape is a whole character), and only a backslash that is not
    // itself escaped.
    if (((bytes[at + 2] as number) | 0x20) === 0x64 && startsEscape(bytes, at)) {
      const unit = escapedUnit(bytes, at);
      const isHigh = unit >= 0xd800 && unit <= 0xdbff;
      // A high half is whole only with the escape of a low one right after it.
      const low = isHigh && bytes[at + 6] === backslash ? escapedUnit(bytes, at + 6) : -1;
      if (isHigh && low >= 0xdc00 && low <= 0xdfff) next = at + 12;
      else if (unit >= 0xd800 && unit <= 0xdfff) {
        out ??= Buffer.from(bytes);
        out.write(escapedReplacement, at, 'latin1');
        next = at + 6;
      }
    }
    at = bytes.indexOf(escapeStart, next);
  }
  return out ?? bytes;
}

/** Whether the backslash at `at` starts an escape: an even number of backslashes before it. */
function startsEscape(bytes: Buffer, at: number): boolean {
  let before = 0;
  while (at - before - 1 >= 0 && bytes[at - before - 1] === backslash) before++;
  return before % 2 === 0;
}

/** The code unit of the `\uXXXX` escape at `at`, or -1 when there is none there. */
function escapedUnit(bytes: Buffer, at: number): number {
  if (bytes[at] !== backslash || bytes[at + 1] !== 0x75 || at + 6 > bytes.length) return -1;
  let unit = 0;
  for (let index = at + 2; index < at + 6; index++) {
    const digit = hexDigit(bytes[index] as number);
    if (digit === -1) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

function hexDigit(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

/** ICU's transcoder: Node has it when built with ICU (official builds and Debian's are). */
const icuTranscode = (nodeBuffer as Partial<typeof nodeBuffer>).transcode;

/**
 * Up to this size, a body with any multi-byte character goes through ICU's transcoder; above it, only a
 * body mostly of them (transcodeMinHighShare), where the transcoder still wins.
 */
const transcodeAnyMaxBytes = 4 * 1024 * 1024;
/** Bytes of 0x80 and over, in a sample of the body, from which ICU's transcoder decodes a larger body faster. */
const transcodeMinHighShare = 0.4;

/**
 * The share of `bytes` (sampled every 97th) that are parts of multi-byte characters: most of them in
 * text in Chinese, Japanese, Korean, Cyrillic, Greek or Hindi, or emoji-heavy.
 */
function highByteShare(bytes: Buffer): number {
  let high = 0;
  let seen = 0;
  for (let at = 0; at < bytes.length; at += 97) {
    seen++;
    if ((bytes[at] as number) >= 0x80) high++;
  }
  return seen === 0 ? 0 : high / seen;
}

/**
 * A body's size as counting weighs it: its bytes, those of multi-byte characters (found in a sample)
 * weighing multiByteCountingWeight each. Over 4 MB of it, a prompt is counted from samples.
 */
export function countingBytesOf(bytes: Buffer | undefined): number {
  if (bytes === undefined) return 0;
  const share = bytes.length < 64 * 1024 ? 0 : highByteShare(bytes);
  return Math.round(bytes.length * (1 + (multiByteCountingWeight - 1) * share));
}

/**
 * Whether Node's own UTF-8 decoder (`buffer.toString('utf8')`) is the vectorized one: it validates with
 * simdutf and converts in one pass from Node 24.14, 25.3 and 26 on (nodejs/node#61131). Before it, V8
 * decoded byte by byte from the first multi-byte character on.
 */
export function nodeDecodesUtf8Fast(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return major >= 26 || (major === 25 && minor >= 3) || (major === 24 && minor >= 14);
}

const fastNodeDecoder = nodeDecodesUtf8Fast(process.versions.node);

/**
 * UTF-8 text of a body. An ASCII body (most JSON: clients escape or send few other characters) is
 * copied byte for byte, the same text: on a 29 MB body that took 4 ms where V8's UTF-8 decoder took 22
 * (measured alone; in the gateway both also pay for the fresh memory).
 *
 * Any other body: where Node decodes UTF-8 with simdutf (`nodeDecodesUtf8Fast`: the Docker image's Node
 * 26 among them), with Node's decoder. There ICU's transcoder, which makes a UTF-16 buffer and copies it
 * into the string, is the slower one (a 231 KB conversation with a few accented words, Node 26: 39–88 µs
 * against 113–151; Node 24.15: 200–237 against 280–330; 200 KB of Chinese and of Russian, and 20 MB of
 * Chinese, no faster either; a 2-core VM, measured alone). On an older Node (20 and 22, which this
 * project's tests and benches run on), valid UTF-8 goes through ICU's transcoder to UTF-16 (vectorized),
 * up to 4 MB whatever its mix: V8's decoder reads byte by byte from the first multi-byte character on
 * (one `é` or `├──` early in an agent's conversation is enough), and decoding and parsing took 0.35–0.85
 * of V8's time from 4 KB to 4 MB, of text with 0.1%, 2% or 10% of its bytes in accented Latin, CJK or
 * mixed characters (a 2-core VM, measured alone); a gateway given a 206 KB conversation spent 0.76–0.86
 * of its CPU per request (the `proxy` bench's 214 KB conversation is such a one). Past 4 MB the two-byte
 * string it makes costs as much as it saves, except for text mostly of multi-byte characters (31 MB of
 * Chinese: 23–40 ms where V8 took 122–147; of Russian 83 where it took 154). A body that is not valid
 * UTF-8 is left to Node's decoder, whose replacement characters the client's text gets either way.
 * `fastDecoder` says which Node this is (tests give both).
 */
export function decodeUtf8(bytes: Buffer, fastDecoder = fastNodeDecoder): string {
  if (nodeBuffer.isAscii(bytes)) return bytes.toString('latin1');
  if (
    !fastDecoder &&
    icuTranscode !== undefined &&
    (bytes.length <= transcodeAnyMaxBytes || highByteShare(bytes) >= transcodeMinHighShare) &&
    nodeBuffer.isUtf8(bytes)
  )
    return icuTranscode(bytes, 'utf8', 'ucs2').toString('ucs2');
  return bytes.toString('utf8');
}

/** The shape limits a configuration sets. */
export function jsonShapeLimits(config: { server: { max_json_containers: number } }): JsonShapeLimits {
  return { maxDepth: maxJsonDepth, maxContainers: config.server.max_json_containers };
}

/**
 * Parses a body whose shape was already checked (JsonShapeScanner). Throws invalid_json for what is not
 * JSON or holds a prototype key.
 */
export function parseJsonBody(body: Pick<JsonText, 'text' | 'mayHoldForbiddenKey'>): unknown {
  const { text } = body;
  if (text.trim() === '')
    throw new GatewayError('invalid_json', 'The request body is empty; expected a JSON object.');
  try {
    // secure-json-parse scans the whole text twice after parsing; a text none of whose strings can be
    // either key (the shape scan followed each string's first bytes) needs neither scan.
    return body.mayHoldForbiddenKey
      ? secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
      : JSON.parse(text);
  } catch (error) {
    const poisoned =
      error instanceof SyntaxError &&
      /prototype|constructor/i.test(error.message) &&
      !/JSON/.test(error.message);
    throw new GatewayError(
      'invalid_json',
      poisoned
        ? 'The request body contains a forbidden "__proto__" or "constructor.prototype" key.'
        : 'We could not parse the JSON body of your request. The body must be valid JSON.',
    );
  }
}

/**
 * The bytes of a parsed body that say what the gateway read: its own bytes, or — when they give a key
 * of some object twice — the value written anew. JSON.parse keeps the last of a key given twice; an
 * upstream may read the first, or refuse the body, so bytes that hold both are never forwarded or
 * copied: what was counted, checked and charged is what is sent. The check is a count: the value's
 * keys, at every depth, against the members the shape scan saw.
 */
export function bytesAsRead(body: Pick<JsonText, 'bytes' | 'members'>, value: unknown): Buffer {
  return keyCount(value) === body.members ? body.bytes : Buffer.from(JSON.stringify(value));
}

/** How many keys the objects of a parsed JSON value have, at every depth. */
function keyCount(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let count = 0;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (typeof item === 'object') count += keyCount(item);
    return count;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) count += 1 + keyCount(record[key]);
  return count;
}
