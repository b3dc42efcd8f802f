// Browser apps that call the gateway themselves (docs/configuration.md#browser-apps): BetterChatGPT,
// Chatbox, Open WebUI's direct connections, the Anthropic SDK in a page. A browser asks first whether the
// origin may send a request with an `Authorization` header (a preflight: OPTIONS, no credential) and
// gives the page the answer only when the response names its origin. Off unless `server.cors_origins`
// names origins: a gateway in front of a local model that takes no key would otherwise serve any web page
// the user opens. A preflight from a named origin is answered here, before any key check (it carries
// none, and does nothing); every other request of such an origin gets the origin allowed and the
// gateway's headers (X-Context-*, X-Session-*, Retry-After…) readable.
import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { firstHeaderValue } from '../../header-value.js';

export interface CorsOptions {
  /** Origins allowed (`https://chat.example.com`), or `*` for any; none: no cross-origin answers. */
  origins: readonly string[];
}

const allowedMethods = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
/** A preflight's answer is kept by the browser this long (seconds; Chromium keeps it two hours at most). */
const preflightMaxAgeSeconds = '600';
/** The request headers a preflight names, echoed when they are a list of header names of a sane length. */
const headerNames = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;
const maxRequestedHeadersLength = 4_096;

function cors(app: FastifyInstance, { origins }: CorsOptions): void {
  if (origins.length === 0) return;
  const anyOrigin = origins.includes('*');
  const named = new Set(origins);
  app.addHook('onRequest', (request, reply, done) => {
    const origin = firstHeaderValue(request.headers.origin);
    if (origin === undefined || !(anyOrigin || named.has(origin))) return done();
    // A named origin is echoed, and caches told the answer depends on it; `*` needs neither.
    reply.header('access-control-allow-origin', anyOrigin ? '*' : origin);
    if (!anyOrigin) reply.header('vary', 'Origin');
    const askedMethod = firstHeaderValue(request.headers['access-control-request-method']);
    if (request.method !== 'OPTIONS' || askedMethod === undefined) {
      reply.header('access-control-expose-headers', '*');
      return done();
    }
    // `Access-Control-Allow-Headers: *` leaves out Authorization (the Fetch standard): the names asked echoed.
    const asked = firstHeaderValue(request.headers['access-control-request-headers'])?.trim();
    reply.header('access-control-allow-methods', allowedMethods);
    if (asked !== undefined && asked.length <= maxRequestedHeadersLength && headerNames.test(asked))
      reply.header('access-control-allow-headers', asked);
    reply.header('access-control-max-age', preflightMaxAgeSeconds);
    void reply.code(204).send();
  });
}

export const corsPlugin = fastifyPlugin(cors, { name: 'ctxgate-cors' });
