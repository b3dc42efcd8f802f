// Upstream adapter on undici: one keep-alive Pool per configured upstream. Connect, first-byte and
// idle-body timeouts are enforced here, and transport failures become GatewayErrors with stable codes.
import type { Readable } from 'node:stream';
import { Pool, errors as undiciErrors } from 'undici';
import type { UpstreamConfig } from '../config/gateway-config.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from './upstream.js';

export interface UpstreamTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
}

export interface CreateUndiciUpstreamOptions {
  timeouts: UpstreamTimeouts;
  /** Most bytes `readAll` collects (server.max_upstream_answer_bytes); unbounded when not given. */
  maxAnswerBytes?: number;
}

export function isAbortError(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'AbortError' || error instanceof undiciErrors.RequestAbortedError;
}

/** Maps an error thrown by undici to the gateway's error family; aborts are passed on unchanged. */
export function toUpstreamError(error: unknown, timeouts: UpstreamTimeouts): unknown {
  // An abort, or the gateway's own word (IdleWatch's).
  if (isAbortError(error) || isGatewayError(error)) return error;
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new GatewayError(
        'upstream_timeout',
        `Upstream did not accept a connection within ${timeouts.connectMs} ms.`,
        { cause: error },
      );
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new GatewayError(
        'upstream_timeout',
        `Upstream did not answer within ${timeouts.firstByteMs} ms.`,
        { cause: error },
      );
    case 'UND_ERR_BODY_TIMEOUT':
      return new GatewayError('upstream_timeout', `Upstream sent nothing for ${firstChunkMs(timeouts)} ms.`, {
        cause: error,
      });
    default:
      return new GatewayError(
        'upstream_unreachable',
        'Upstream could not be reached or closed the connection.',
        { cause: error },
      );
  }
}

/**
 * How long a body's first chunk is waited for: a reasoning model's stream sends its headers at once and
 * nothing while the model thinks (OpenAI's Chat Completions: minutes at a high effort), which is the
 * answer's first byte, not a stall — `upstream_first_byte_ms` (or the idle time when longer). undici's body
 * timeout; IdleWatch counts the silence between chunks once one has come.
 */
function firstChunkMs(timeouts: UpstreamTimeouts): number {
  return Math.max(timeouts.firstByteMs, timeouts.idleMs);
}

/**
 * The silence allowed between two chunks of a body once its first has come (`upstream_idle_ms`), counted
 * only while the gateway reads it: not while it holds the body (a slow client, an answer being judged).
 */
class IdleWatch {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private started = false;

  constructor(
    private readonly body: Readable,
    private readonly idleMs: number,
  ) {
    body.once('close', () => this.pause());
  }

  /** A chunk came: the silence is counted from now. */
  chunk(): void {
    this.started = true;
    this.arm();
  }

  /** The body is read again: counted again, once a chunk has come. */
  resume(): void {
    if (this.started && !this.body.destroyed) this.arm();
  }

  pause(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer !== undefined) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.body.destroy(new GatewayError('upstream_timeout', `Upstream sent nothing for ${this.idleMs} ms.`));
    }, this.idleMs);
    this.timer.unref();
  }
}

/** Stops reading a body and drops it, its last error (the abort the drop causes) caught. */
function dropBody(body: Readable, onData: (chunk: Buffer) => void): void {
  body.off('data', onData);
  body.on('error', () => undefined);
  body.destroy();
}

/**
 * Hands each chunk of a body to `onChunk` as it arrives, waiting on the promise it returns (backpressure).
 * What `onChunk` fails with, thrown or rejected, is its own failure, not the upstream's: the body is
 * dropped and the failure handed back as it is. (Thrown inside the body's 'data' event, it would have
 * been no one's to catch: the process would have ended.)
 */
function readChunks(
  body: Readable,
  onChunk: (chunk: Buffer) => void | Promise<void>,
  timeouts: UpstreamTimeouts,
  watch: IdleWatch,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const readerFailed = (error: unknown): void => {
      dropBody(body, onData);
      reject(error);
    };
    const onData = (chunk: Buffer): void => {
      watch.chunk();
      let pending: void | Promise<void>;
      try {
        pending = onChunk(chunk);
      } catch (error) {
        return readerFailed(error);
      }
      if (pending !== undefined) {
        body.pause();
        watch.pause();
        pending.then(() => {
          body.resume();
          watch.resume();
        }, readerFailed);
      }
    };
    body.on('data', onData);
    body.once('end', resolve);
    body.once('error', (error) => reject(toUpstreamError(error, timeouts)));
    body.resume();
    watch.resume();
  });
}

/** An answer past the bytes the gateway reads whole. */
function answerTooLarge(maxBytes: number): GatewayError {
  return new GatewayError(
    'upstream_bad_response',
    `The upstream's answer was larger than ${maxBytes} bytes (server.max_upstream_answer_bytes).`,
  );
}

export function createUndiciUpstream({
  timeouts,
  maxAnswerBytes = Number.POSITIVE_INFINITY,
}: CreateUndiciUpstreamOptions): Upstream {
  const pools = new Map<string, { pool: Pool; pathPrefix: string }>();

  function poolFor(upstream: UpstreamConfig): { pool: Pool; pathPrefix: string } {
    let entry = pools.get(upstream.name);
    if (entry === undefined) {
      const url = new URL(upstream.baseUrl);
      entry = {
        pool: new Pool(url.origin, {
          connections: upstream.maxConnections,
          connect: { timeout: timeouts.connectMs },
          headersTimeout: timeouts.firstByteMs,
          bodyTimeout: firstChunkMs(timeouts),
          keepAliveTimeout: 30_000,
        }),
        pathPrefix: url.pathname.replace(/\/+$/, ''),
      };
      pools.set(upstream.name, entry);
    }
    return entry;
  }

  return {
    async send(request: UpstreamRequest): Promise<UpstreamResponse> {
      const { pool, pathPrefix } = poolFor(request.upstream);
      let response;
      try {
        response = await pool.request({
          method: request.method,
          path: pathPrefix + request.path,
          headers: request.headers,
          body: request.body ?? null,
          signal: request.signal,
        });
      } catch (error) {
        throw toUpstreamError(error, timeouts);
      }
      const body = response.body;
      const watch = new IdleWatch(body, timeouts.idleMs);
      // What peek() read, handed out first by readAll and forEachChunk.
      let peeked: Buffer[] = [];
      let ended = false;
      body.once('end', () => {
        ended = true;
        request.onBodyEnd?.();
      });
      const takePeeked = (): Buffer[] => {
        const taken = peeked;
        peeked = [];
        return taken;
      };
      return {
        statusCode: response.statusCode,
        headers: response.headers,
        readAll() {
          // Collected by hand: cheaper per request than undici's body mixins for small JSON answers.
          return new Promise<Buffer>((resolve, reject) => {
            const chunks: Buffer[] = takePeeked();
            let size = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
            const finish = (): void =>
              resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
            if (ended) return finish();
            body.on('data', (chunk: Buffer) => {
              watch.chunk();
              size += chunk.length;
              if (size <= maxAnswerBytes) chunks.push(chunk);
              else {
                body.destroy();
                reject(answerTooLarge(maxAnswerBytes));
              }
            });
            body.once('end', finish);
            body.once('error', (error) => reject(toUpstreamError(error, timeouts)));
            body.resume();
            watch.resume();
          });
        },

        async forEachChunk(onChunk) {
          for (const chunk of takePeeked()) await onChunk(chunk);
          if (ended) return;
          return readChunks(body, onChunk, timeouts, watch);
        },
        peek(enough, wait) {
          return new Promise<Buffer>((resolve, reject) => {
            let timer: NodeJS.Timeout | undefined;
            const done = (): void => {
              clearTimeout(timer);
              body.off('data', onData);
              body.off('end', done);
              body.off('error', onError);
              body.pause();
              watch.pause();
              resolve(Buffer.concat(peeked));
            };
            const onData = (chunk: Buffer): void => {
              watch.chunk();
              peeked.push(chunk);
              // As forEachChunk's reader: what the judge of `enough` fails with is handed back.
              let seen: boolean;
              try {
                seen = enough(Buffer.concat(peeked));
              } catch (error) {
                clearTimeout(timer);
                body.off('end', done);
                body.off('error', onError);
                dropBody(body, onData);
                reject(error);
                return;
              }
              if (seen) done();
            };
            const onError = (error: Error): void => {
              clearTimeout(timer);
              body.off('data', onData);
              body.off('end', done);
              reject(toUpstreamError(error, timeouts));
            };
            if (ended) return resolve(Buffer.concat(peeked));
            body.on('data', onData);
            body.once('end', done);
            body.once('error', onError);
            if (wait !== undefined)
              timer = setTimeout(() => {
                wait.passed();
                done();
              }, wait.ms).unref();
            body.resume();
            watch.resume();
          });
        },
        discard() {
          // Destroying a body nobody reads emits an abort error; with no listener it would be thrown.
          body.on('error', () => undefined);
          body.destroy();
        },
      };
    },
    async close(): Promise<void> {
      await Promise.all([...pools.values()].map(({ pool }) => pool.close()));
      pools.clear();
    },
  };
}
