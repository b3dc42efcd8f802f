// While the gateway drains for shutdown, new requests (but health and readiness probes) are refused
// with 503 so a load balancer moves them elsewhere, and every answer asks the client to reconnect.
import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { GatewayError } from '../../errors.js';

const probes = new Set(['/healthz', '/readyz']);

function shutdownGate(app: FastifyInstance, { isClosing }: { isClosing: () => boolean }): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (!isClosing()) return done();
    reply.header('connection', 'close');
    if (probes.has(request.routeOptions.url ?? '')) return done();
    done(new GatewayError('shutting_down', 'The gateway is shutting down; retry on another instance.'));
  });
}

export const shutdownGatePlugin = fastifyPlugin(shutdownGate, { name: 'ctxgate-shutdown-gate' });
