// Which headers cross the gateway in each direction. Hop-by-hop headers never do; the gateway's own
// control headers stay with the gateway; credentials go upstream only as the auth mode allows.
import type { IncomingHttpHeaders } from 'node:http';
import type { UpstreamConfig } from '../config/gateway-config.js';
import { passThroughCredentialHeaders, type Credential } from '../auth/authenticate.js';

const hopByHop = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
const neverUpstream = new Set([
  ...hopByHop,
  'host',
  'content-length',
  // The gateway sends the body as it writes it: a compressed one it was sent is read decompressed.
  'content-encoding',
  'accept-encoding',
  'cookie',
  'authorization',
  'api-key',
  'x-api-key',
  'expect',
]);
/**
 * Never beside the operator's key: a client's own organisation or project would bill (or read) another
 * account under it, and forwarding headers would tell the provider hosts the client chose.
 */
const neverWithOperatorKey = new Set([
  'openai-organization',
  'openai-project',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-server',
  'x-real-ip',
]);
const gatewayPrefixes = ['x-session-', 'x-context-', 'x-budget-', 'x-admin-'];
const neverDownstream = new Set([...hopByHop, 'content-length', 'set-cookie', 'date', 'server']);

function isGatewayHeader(name: string): boolean {
  // Cheap first test: every gateway header starts with "x-".
  return (
    name.charCodeAt(0) === 120 &&
    name.charCodeAt(1) === 45 &&
    gatewayPrefixes.some((prefix) => name.startsWith(prefix))
  );
}

export function buildUpstreamHeaders(
  clientHeaders: IncomingHttpHeaders,
  upstream: UpstreamConfig,
  credential: Credential,
): Record<string, string> {
  const headers: Record<string, string> = {};
  const operatorKey = upstream.apiKey !== undefined;
  for (const name in clientHeaders) {
    const value = clientHeaders[name];
    if (value === undefined || neverUpstream.has(name) || isGatewayHeader(name)) continue;
    if (operatorKey && neverWithOperatorKey.has(name)) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  headers['content-type'] = 'application/json';
  // Identity encoding: the gateway reads streamed bodies as text.
  headers['accept-encoding'] = 'identity';
  if (upstream.apiKey !== undefined) {
    headers.authorization = `Bearer ${upstream.apiKey}`;
  } else if (credential.mode !== 'gateway_key') {
    for (const name of passThroughCredentialHeaders) {
      const value = clientHeaders[name];
      if (typeof value === 'string') headers[name] = value;
    }
  }
  return headers;
}

/**
 * The upstream's response headers a client may see, plus the gateway's own (which win). The upstream's
 * request id is kept as `x-upstream-request-id`: `x-request-id` is the gateway's.
 */
export function buildClientHeaders(
  upstreamHeaders: Record<string, string | string[] | undefined>,
  gatewayHeaders: Record<string, string> = {},
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const name in upstreamHeaders) {
    const value = upstreamHeaders[name];
    if (value === undefined || neverDownstream.has(name)) continue;
    headers[name === 'x-request-id' ? 'x-upstream-request-id' : name] = value;
  }
  for (const name in gatewayHeaders) headers[name] = gatewayHeaders[name] as string;
  return headers;
}
