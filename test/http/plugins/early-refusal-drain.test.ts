// An answer decided before the request body was read (a refused key, a body over the limit, a shutdown)
// reaches a client that is still sending: the rest of the body is read and dropped first, within a byte
// bound past which the connection is closed. Real HTTP on loopback: the failure this prevents — the
// client's write cut by a reset before it reads the answer — does not exist under app.inject().
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../../src/errors.js';
import { earlyRefusalDrainPlugin } from '../../../src/http/plugins/early-refusal-drain.js';
import { jsonBodyParserPlugin } from '../../../src/http/plugins/json-body-parser.js';
import { pluginApp } from '../../helpers/plugin-app.js';

const drainBytes = 8 * 1024 * 1024;
const bodyLimit = 256 * 1024;

let app: FastifyInstance;
let port: number;
// Keep-alive, as SDK clients are: a connection left open after an answer is one the server could reuse.
const agent = new Agent({ keepAlive: true });

beforeAll(async () => {
  ({ app } = pluginApp(
    (scope) => {
      scope.register(jsonBodyParserPlugin, {
        bodyLimitBytes: bodyLimit,
        shape: { maxDepth: 64, maxContainers: 1_000 },
      });
      scope.register(earlyRefusalDrainPlugin, { maxBytes: drainBytes, maxMs: 10_000 });
      // Refused before the body is read, as client authentication does.
      scope.addHook('onRequest', (request, _reply, done) => {
        if (request.headers.authorization !== 'Bearer right')
          return done(new GatewayError('invalid_api_key', 'Incorrect API key provided.'));
        done();
      });
      scope.post('/echo', async (request) => ({ received: request.body }));
    },
    { bodyLimit },
  ));
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  agent.destroy();
  await app.close();
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Sends `size` bytes of body (spaces: a valid, empty JSON text once all of it is read) and settles once
 * the whole exchange is over, sending included: an error at any point (EPIPE or a reset while still
 * sending, even after the answer was read) is the outcome.
 */
function upload(size: number, authorization: string): Promise<Answer | NodeJS.ErrnoException> {
  return new Promise((resolve) => {
    let failure: NodeJS.ErrnoException | undefined;
    let answer: Answer | undefined;
    const request = httpRequest({
      port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/echo',
      agent,
      headers: { authorization, 'content-type': 'application/json', 'content-length': size },
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        answer = {
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
      });
    });
    request.on('error', (error) => (failure ??= error));
    request.on('close', () => resolve(failure ?? answer ?? new Error('no answer')));
    // One write of the whole body, as SDKs send a request: the socket takes it in over time.
    request.end(Buffer.alloc(size, 0x20));
  });
}

/** The answer, failing the test with the client's error when there was one. */
function answered(outcome: Answer | Error): Answer {
  if (outcome instanceof Error) throw outcome;
  return outcome;
}

/** Twenty tries of one upload: a reset comes on some tries only, so one try proves little. */
async function twentyTries(
  size: number,
  authorization: string,
): Promise<{ failures: string[]; last: Answer }> {
  const failures: string[] = [];
  let last: Answer | undefined;
  for (let attempt = 0; attempt < 20; attempt++) {
    const outcome = await upload(size, authorization);
    if (outcome instanceof Error) failures.push(`${outcome.code ?? outcome.message}`);
    else last = outcome;
  }
  return { failures, last: answered(last ?? new Error('no try was answered')) };
}

describe('the early-refusal drain', () => {
  it('lets a client that is still sending a large body read the refusal', async () => {
    const { failures, last } = await twentyTries(16 * bodyLimit, 'Bearer wrong');
    expect(failures).toEqual([]);
    expect(last.status).toBe(401);
    expect(JSON.parse(last.body).error.code).toBe('invalid_api_key');
    // Everything was read: the connection could carry another request.
    expect(last.headers.connection).not.toBe('close');
  });

  it('answers a body over the limit with 413 once the client has sent it', async () => {
    const { failures, last } = await twentyTries(16 * bodyLimit, 'Bearer right');
    expect(failures).toEqual([]);
    expect(last.status).toBe(413);
    expect(JSON.parse(last.body).error.code).toBe('request_too_large');
  });

  it('stops reading past its byte bound and closes the connection after the answer', async () => {
    // Past the bound the client may see its write cut: what matters is that the server does not read on.
    const outcome = await upload(drainBytes * 4, 'Bearer wrong');
    if (outcome instanceof Error) {
      expect(['EPIPE', 'ECONNRESET']).toContain(outcome.code);
    } else {
      expect(outcome.status).toBe(401);
      expect(outcome.headers.connection).toBe('close');
    }
  });

  it('leaves an answer to a body that was read whole as it is', async () => {
    const answer = answered(await upload(2, 'Bearer right'));
    // Two spaces are no body at all.
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({});
  });
});
