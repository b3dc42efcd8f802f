// Upstream adapter on undici: one keep-alive Pool per configured upstream. Connect, first-byte and
// idle-body timeouts are enforced here, and transport failures become GatewayErrors with stable codes.
import { Pool, errors as undiciErrors } from 'undici';
import type { UpstreamConfig } from '../config/gateway-config.js';
import { GatewayError } from '../errors.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from './upstream.js';

export interface UpstreamTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
}

export interface CreateUndiciUpstreamOptions {
  timeouts: UpstreamTimeouts;
}

/** Maps an error thrown by undici (or by a body iterator) to the gateway's error family. */
export function toUpstreamGatewayError(error: unknown, timeouts: UpstreamTimeouts): GatewayError {
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
      return new GatewayError('upstream_timeout', `Upstream sent nothing for ${timeouts.idleMs} ms.`, {
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

export function isAbortError(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'AbortError' || error instanceof undiciErrors.RequestAbortedError;
}

export function createUndiciUpstream({ timeouts }: CreateUndiciUpstreamOptions): Upstream {
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
          bodyTimeout: timeouts.idleMs,
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
      try {
        const response = await pool.request({
          method: request.method,
          path: pathPrefix + request.path,
          headers: request.headers,
          body: request.body ?? null,
          signal: request.signal,
        });
        const body = response.body;
        return {
          statusCode: response.statusCode,
          headers: response.headers,
          body: (async function* readBody(): AsyncGenerator<Buffer> {
            try {
              for await (const chunk of body) yield chunk as Buffer;
            } catch (error) {
              if (isAbortError(error)) throw error;
              throw toUpstreamGatewayError(error, timeouts);
            }
          })(),
          discard: () => body.destroy(),
        };
      } catch (error) {
        if (isAbortError(error)) throw error;
        throw toUpstreamGatewayError(error, timeouts);
      }
    },
    async close(): Promise<void> {
      await Promise.all([...pools.values()].map(({ pool }) => pool.close()));
      pools.clear();
    },
  };
}
