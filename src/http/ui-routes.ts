// The session inspector's page (docs/inspector.md): three static files from ui/, read once at start,
// served at /ui/ with a strict Content-Security-Policy (its own script and style only, API calls to
// this origin, no frames). No authentication here: the page signs in against the API itself.
import { existsSync, readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply } from 'fastify';

const files = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
} as const;

const securityHeaders = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** ui/ beside src/ (run from source) or beside dist/ (built). */
function uiDirectory(): URL | undefined {
  for (const candidate of ['../../ui/', '../../../ui/']) {
    const url = new URL(candidate, import.meta.url);
    if (existsSync(new URL('index.html', url))) return url;
  }
  return undefined;
}

export function registerUiRoutes(app: FastifyInstance): void {
  const directory = uiDirectory();
  if (directory === undefined) return;
  const contents = new Map(
    Object.keys(files).map((name) => [name, readFileSync(new URL(name, directory))] as const),
  );
  const send = (name: string, reply: FastifyReply): FastifyReply => {
    const body = contents.get(name);
    if (body === undefined) return reply.code(404).type('text/plain').send('Not found');
    return reply
      .headers(securityHeaders)
      .type(files[name as keyof typeof files])
      .send(body);
  };
  app.get('/ui/', async (_request, reply) => send('index.html', reply));
  // The page loads its files by relative paths: served at `/ui` they would be looked for at the root.
  app.get('/ui', async (_request, reply) => reply.redirect('/ui/', 308));
  app.get<{ Params: { file: string } }>('/ui/:file', async (request, reply) =>
    send(request.params.file, reply),
  );
}
