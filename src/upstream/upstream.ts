// The Upstream port: send one HTTP request to a configured upstream and get its status, headers and
// body. Wire shapes and transport errors stay behind this port; routes never touch undici directly.
import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { UpstreamConfig } from '../config/gateway-config.js';

export type UpstreamMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface UpstreamRequest {
  upstream: UpstreamConfig;
  method: UpstreamMethod;
  /** Path below the upstream's base URL, e.g. `/chat/completions`. */
  path: string;
  headers: Record<string, string>;
  /** A stream is sent as it arrives (a forwarded upload). */
  body?: string | Buffer | Readable;
  /**
   * `anthropic`: a chat completion's `body` is already written in an anthropic upstream's Messages format
   * (the attempt ladder writes it so); else a chat body to one is translated (anthropic-wire.ts).
   * `responses`: a chat completion asked of the upstream's Responses API, for a model served there alone
   * (responses-wire.ts).
   */
  wire?: 'anthropic' | 'responses';
  /** Emits 'abort' to cancel the call (an EventEmitter: far cheaper per request than an AbortController). */
  signal: EventEmitter;
  /** Called when the answer's body has been read to its end (not when it breaks or is discarded). */
  onBodyEnd?: () => void;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** The whole body. Rejects with a GatewayError on timeouts and broken connections. */
  readAll(): Promise<Buffer>;
  /**
   * Hands each chunk to `onChunk` as it arrives; a returned promise pauses reading until it settles
   * (backpressure). Resolves at the end of the body; rejects like readAll.
   */
  forEachChunk(onChunk: (chunk: Buffer) => void | Promise<void>): Promise<void>;
  /** Releases the connection when the body will not be read. */
  discard(): void;
  /**
   * Reads until `enough(received)` says so, the body ends or `wait` (when given) has passed, and returns
   * what was read; readAll and forEachChunk then start with it. Used to look at a stream's first event
   * before relaying anything.
   */
  peek(enough: (received: Buffer) => boolean, wait?: PeekWait): Promise<Buffer>;
}

/** How long a peek waits at most, and what is told when that has passed (before it resolves). */
export interface PeekWait {
  ms: number;
  passed(): void;
}

export interface Upstream {
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  close(): Promise<void>;
}

/**
 * A whole (not streamed) answer read through `transform`: its body read once, transformed, and given
 * to readAll, forEachChunk (as one chunk) and peek alike.
 */
/**
 * `response`, an event stream, read through a translator of its events (another wire's stream as chat's):
 * each chunk as the translator writes it, nothing passed on for a chunk it wrote nothing of. A peek reads
 * the first events through a translator of its own, so reading starts again from the same bytes.
 */
export function withTranslatedStream(
  response: UpstreamResponse,
  translator: () => { push(bytes: Buffer | string): string },
): UpstreamResponse {
  const stream = translator();
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    async readAll() {
      let out = '';
      await response.forEachChunk((chunk) => void (out += stream.push(chunk)));
      return Buffer.from(out);
    },
    forEachChunk(onChunk) {
      return response.forEachChunk((chunk) => {
        const text = stream.push(chunk);
        return text === '' ? undefined : onChunk(Buffer.from(text));
      });
    },
    discard: () => response.discard(),
    async peek(enough, wait) {
      const raw = await response.peek((received) => enough(Buffer.from(translator().push(received))), wait);
      return Buffer.from(translator().push(raw));
    },
  };
}

export function withWholeBody(
  response: UpstreamResponse,
  transform: (body: Buffer) => Buffer,
): UpstreamResponse {
  let whole: Promise<Buffer> | undefined;
  const all = (): Promise<Buffer> => (whole ??= response.readAll().then(transform));
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    readAll: all,
    forEachChunk: async (onChunk) => onChunk(await all()),
    discard: () => response.discard(),
    peek: all,
  };
}
