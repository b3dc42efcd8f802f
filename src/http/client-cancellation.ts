// Cancels the upstream call as soon as the client goes away, before or after the upstream's first
// byte, so nothing keeps generating and billing for an answer nobody will read.
import { EventEmitter } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';

export class ClientCancellation extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

export function cancelOnClientClose(request: FastifyRequest, reply: FastifyReply): ClientCancellation {
  const cancellation = new ClientCancellation();
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) {
      request.gateway.clientAborted = true;
      cancellation.abort();
    }
  });
  return cancellation;
}
