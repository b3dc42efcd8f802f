// Raw HTTP/1.1 over a TCP socket: sends exactly the request line and headers given (absolute-form and
// percent-encoded targets, duplicate slashes, dot segments), which fetch and undici would normalize.
import { Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export async function rawRequest(options: {
  port: number;
  method: string;
  target: string;
  headers?: Record<string, string>;
  body?: string;
}): Promise<RawResponse> {
  const body = options.body ?? '';
  const headers: Record<string, string> = {
    host: `127.0.0.1:${options.port}`,
    connection: 'close',
    ...(body === '' ? {} : { 'content-type': 'application/json' }),
    'content-length': String(Buffer.byteLength(body)),
    ...options.headers,
  };
  const head =
    `${options.method} ${options.target} HTTP/1.1\r\n` +
    Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    '\r\n';
  const received = await new Promise<Buffer>((resolve, reject) => {
    const socket = new Socket();
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('error', reject);
    socket.once('close', () => resolve(Buffer.concat(chunks)));
    socket.setTimeout(10_000, () => socket.destroy(new Error('raw request timed out')));
    // No half-close: Node's server takes a client's FIN as an abort.
    socket.connect(options.port, '127.0.0.1', () => socket.write(head + body));
  });
  return parseRawResponse(received);
}

export function parseRawResponse(received: Buffer): RawResponse {
  const split = received.indexOf('\r\n\r\n');
  const headText = received.toString('latin1', 0, split === -1 ? received.length : split);
  let body = split === -1 ? Buffer.alloc(0) : received.subarray(split + 4);
  const [statusLine = '', ...headerLines] = headText.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  return { status, headers, body: body.toString('utf8') };
}

function dechunk(chunked: Buffer): Buffer {
  const parts: Buffer[] = [];
  let rest = chunked;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    if (lineEnd === -1) break;
    const size = Number.parseInt(rest.toString('latin1', 0, lineEnd), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
    rest = rest.subarray(lineEnd + 2 + size + 2);
  }
  return Buffer.concat(parts);
}
