// The floor for any gateway that reads the request: a minimal fastify + undici pass-through that parses
// the JSON body, re-serializes it and relays the answer (streams piped as they come). No validation, no
// metrics; `/v1/messages` too, to the upstream's `/messages`; with FLOOR_LOG=1 it writes one pino access line per request, as a production gateway does
// (method, route, status, model, durations), else none. Prints "READY <base url>" when listening.
import Fastify from 'fastify';
import { pino } from 'pino';
import { Pool } from 'undici';

const upstream = new URL(process.env.UPSTREAM_BASE_URL ?? 'http://127.0.0.1:9/v1');
const pool = new Pool(upstream.origin, { connections: 256 });
const app = Fastify({ bodyLimit: 32 * 1024 * 1024 });
const log = process.env.FLOOR_LOG === '1' ? pino({ base: { service: 'floor' } }) : undefined;
if (log !== undefined)
  app.addHook('onResponse', async (request, reply) => {
    log.info(
      {
        method: request.method,
        route: request.routeOptions.url,
        status: reply.statusCode,
        model: (request.body as { model?: unknown } | undefined)?.model,
        durations: { totalMs: Math.round(reply.elapsedTime * 1000) / 1000 },
      },
      'request',
    );
  });

app.post('/v1/chat/completions', async (request, reply) => {
  const response = await pool.request({
    method: 'POST',
    path: `${upstream.pathname}/chat/completions`,
    headers: { 'content-type': 'application/json', authorization: request.headers.authorization ?? '' },
    body: JSON.stringify(request.body),
  });
  reply.code(response.statusCode);
  const contentType = response.headers['content-type'];
  if (typeof contentType === 'string') reply.header('content-type', contentType);
  return reply.send(response.body);
});

// A Messages request, forwarded as parsed and re-serialized to the upstream's `/messages` (the floor of
// the `agents` section, whose upstream speaks Anthropic's API).
app.post('/v1/messages', async (request, reply) => {
  const response = await pool.request({
    method: 'POST',
    path: `${upstream.pathname}/messages`,
    headers: {
      'content-type': 'application/json',
      'x-api-key': String(request.headers['x-api-key'] ?? ''),
      'anthropic-version': String(request.headers['anthropic-version'] ?? '2023-06-01'),
    },
    body: JSON.stringify(request.body),
  });
  reply.code(response.statusCode);
  const contentType = response.headers['content-type'];
  if (typeof contentType === 'string') reply.header('content-type', contentType);
  return reply.send(response.body);
});

const address = await app.listen({ port: Number(process.env.PORT ?? '0'), host: '127.0.0.1' });
process.stdout.write(`READY ${address}/v1\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
