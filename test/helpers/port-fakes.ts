// In-memory stand-ins for the gateway's two I/O ports, for unit tests of what runs between them: an
// Upstream that answers from a script (statuses, headers, bodies in chunks, a connection that breaks
// mid-body the way undici's does: a GatewayError from the body reader) and records what it was sent,
// and a ClientStream that records what the client received.
import { EventEmitter } from 'node:events';
import type { UpstreamConfig } from '../../src/config/gateway-config.js';
import { GatewayError } from '../../src/errors.js';
import type { ClientStream } from '../../src/upstream/relay.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../../src/upstream/upstream.js';

export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  /** The body in the chunks it arrives in. */
  chunks?: string[];
  /** The connection breaks after the chunks. */
  breaks?: boolean;
  /** No answer at all: the connection is refused. */
  refused?: boolean;
}

export function scriptedUpstream(script: ScriptedAnswer[]): Upstream & { sent: UpstreamRequest[] } {
  const sent: UpstreamRequest[] = [];
  return {
    sent,
    async send(request) {
      sent.push(request);
      const next = script.shift();
      if (next === undefined) throw new Error('the script has no more answers');
      if (next.refused === true)
        throw new GatewayError('upstream_unreachable', 'The upstream could not be reached.', {
          cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
        });
      return answerOf(next, request.onBodyEnd);
    },
    close: async () => undefined,
  };
}

/**
 * The upstream's answer as the port hands it over (a refused connection aside), `onBodyEnd` called when
 * its body has been read to the end.
 */
export function answerOf(answer: ScriptedAnswer, onBodyEnd?: () => void): UpstreamResponse {
  const chunks = (answer.chunks ?? []).map((chunk) => Buffer.from(chunk));
  const broken = () =>
    new GatewayError('upstream_unreachable', 'The upstream connection broke.', {
      cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    });
  const forEachChunk = async (onChunk: (chunk: Buffer) => void | Promise<void>) => {
    for (const chunk of chunks) await onChunk(chunk);
    if (answer.breaks === true) throw broken();
    onBodyEnd?.();
  };
  return {
    statusCode: answer.status,
    headers: answer.headers ?? {},
    async readAll() {
      if (answer.breaks === true) throw broken();
      onBodyEnd?.();
      return Buffer.concat(chunks);
    },
    forEachChunk,
    discard: () => undefined,
    // As the undici port peeks: chunk by chunk until `enough` says so (readAll and forEachChunk then
    // start with what was peeked, here the same chunks again).
    async peek(enough) {
      const read: Buffer[] = [];
      for (const chunk of chunks) {
        read.push(chunk);
        if (enough(Buffer.concat(read))) break;
      }
      return Buffer.concat(read);
    },
  };
}

export function upstreamConfig(name: string, apiKey?: string): UpstreamConfig {
  return {
    name,
    baseUrl: `http://${name}.invalid/v1`,
    apiKey,
    modelGlobs: ['*'],
    maxConnections: 8,
    kind: 'openai',
    billingLine: 'drop',
  };
}

export function recordingClient(): ClientStream & {
  statuses: number[];
  /** Every header the answer carried (added ones and the answer's own), the last value of each name. */
  headers: Record<string, string | string[]>;
  received: string;
  ended: boolean;
  destroyed: boolean;
  leave(): void;
} {
  const cancellation = Object.assign(new EventEmitter(), { aborted: false });
  const client = {
    cancellation,
    statuses: [] as number[],
    headers: {} as Record<string, string | string[]>,
    received: '',
    ended: false,
    destroyed: false,
    addHeaders(headers: Record<string, string>) {
      Object.assign(client.headers, headers);
    },
    async sendWhole(status: number, headers: Record<string, string | string[]>, body: Buffer) {
      Object.assign(client.headers, headers);
      client.statuses.push(status);
      client.received += body.toString('utf8');
      client.ended = true;
    },
    openStream(status: number, headers: Record<string, string | string[]>) {
      Object.assign(client.headers, headers);
      client.statuses.push(status);
    },
    write(bytes: Buffer | string) {
      client.received += bytes.toString();
      return undefined;
    },
    end(last?: Buffer | string) {
      if (last !== undefined) client.received += last.toString();
      client.ended = true;
    },
    destroy() {
      client.destroyed = true;
    },
    leave() {
      cancellation.aborted = true;
      cancellation.emit('abort');
    },
  };
  return client;
}
