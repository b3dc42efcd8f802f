// Authentication of the API scope: registered inside the scope that holds the `/v1` routes, so it runs
// for exactly the routes the router matched there — however the request target was spelled
// (percent-encoded, absolute-form) — and never depends on the URL's text.
import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../../auth/authenticate.js';

export function addClientAuthentication(scope: FastifyInstance, authenticator: Authenticator): void {
  scope.addHook('onRequest', (request, _reply, done) => {
    try {
      request.gateway.credential = authenticator.authenticate(request.headers);
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  });
}
