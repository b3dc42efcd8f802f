// The Upstream port: send one HTTP request to a configured upstream and get its status, headers and a
// body stream. Wire shapes stay behind this port; routes never touch undici directly.
import type { UpstreamConfig } from '../config/gateway-config.js';

export interface UpstreamRequest {
  upstream: UpstreamConfig;
  method: 'GET' | 'POST';
  /** Path below the upstream's base URL, e.g. `/chat/completions`. */
  path: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Buffer>;
  /** Releases the connection when the body will not be read to its end. */
  discard(): void;
}

export interface Upstream {
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  close(): Promise<void>;
}
