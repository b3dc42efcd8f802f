// Request-body parsing (every route, the pass-through included): JSON with prototype-poisoning
// protection, a nesting limit and a limit on how many objects and arrays a body may build, so a hostile
// body is a clear 400 and never a crash, a polluted prototype, a blown stack or seconds of CPU. The limits are checked on the bytes as they
// arrive (JsonShapeScanner), before JSON.parse builds anything: a body nested eight million deep is
// refused at its 65th byte.
import type { Readable } from 'node:stream';
import secureJson from 'secure-json-parse';
import { GatewayError } from './errors.js';

export const maxJsonDepth = 64;

export interface JsonShapeLimits {
  /** Deepest nesting of objects and arrays. */
  maxDepth: number;
  /** Most objects and arrays in one body: what JSON.parse allocates for, whatever their size. */
  maxContainers: number;
}

const quote = 0x22;
const backslash = 0x5c;

/**
 * Tracks the nesting and the number of containers of a JSON text fed to it in pieces, without building
 * anything. Inside strings it jumps from quote to quote (Buffer.indexOf), so text costs next to nothing.
 * It does not validate: JSON.parse does that afterwards; on valid JSON its counts are exact.
 */
export class JsonShapeScanner {
  private depth = 0;
  private containers = 0;
  private inString = false;
  /** Backslashes ending the previous piece inside a string: they may escape this piece's first quote. */
  private carriedBackslashes = 0;

  constructor(private readonly limits: JsonShapeLimits) {}

  /** Scans the next piece; throws a GatewayError as soon as a limit is passed. */
  push(piece: Buffer): void {
    const length = piece.length;
    let index = 0;
    while (index < length) {
      if (this.inString) {
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
      } else if (byte === 0x5b || byte === 0x7b) {
        this.depth++;
        this.containers++;
        if (this.depth > this.limits.maxDepth) throw tooDeep(this.limits.maxDepth);
        if (this.containers > this.limits.maxContainers) throw tooManyContainers(this.limits.maxContainers);
      } else if (byte === 0x5d || byte === 0x7d) {
        this.depth--;
      }
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

/**
 * Reads a JSON body from `payload` within `limitBytes`, its shape checked piece by piece; resolves with
 * its bytes and its text (a leading byte-order mark dropped from both). Rejects at the first piece
 * that passes a limit.
 */
export function readJsonText(
  payload: Readable,
  options: { limitBytes: number; shape: JsonShapeLimits; contentLength: number },
): Promise<{ bytes: Buffer; text: string }> {
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
      fail(new GatewayError('invalid_request', 'The request body could not be read.', { cause: error }));
    const onEnd = (): void => {
      stop();
      if (!Number.isNaN(contentLength) && received !== contentLength)
        return reject(
          new GatewayError('invalid_request', 'The Content-Length header does not match the body.'),
        );
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
      const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
      const body = bom === 0 ? bytes : bytes.subarray(bom);
      resolve({ bytes: body, text: body.toString('utf8') });
    };
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onError);
    payload.resume();
  });
}

/** The shape limits a configuration sets. */
export function jsonShapeLimits(config: { server: { max_json_containers: number } }): JsonShapeLimits {
  return { maxDepth: maxJsonDepth, maxContainers: config.server.max_json_containers };
}

/**
 * Parses a body whose shape was already checked (JsonShapeScanner). Throws invalid_json for what is not
 * JSON or holds a prototype key.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '')
    throw new GatewayError('invalid_json', 'The request body is empty; expected a JSON object.');
  try {
    // secure-json-parse scans the whole text twice after parsing; a text that cannot hold either key
    // (not even \u-escaped) needs no scan: that halves the cost of a large body.
    const suspect = text.includes('__proto__') || text.includes('constructor') || text.includes('\\u00');
    return suspect
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
