// The inspector's page as the server hands it out: the three files of ui/ byte for byte with their
// types, a strict Content-Security-Policy on each, and nothing else of the disk — a name that is not one
// of the three (a path climbing out, a file beside them) is 404.
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerUiRoutes } from '../../src/http/ui-routes.js';

const uiFile = (name: string) => readFileSync(new URL(`../../ui/${name}`, import.meta.url));

let app: FastifyInstance;
beforeAll(async () => {
  app = Fastify();
  registerUiRoutes(app);
  await app.ready();
});
afterAll(() => app.close());

describe('the inspector page routes', () => {
  it.each<[string, string, string]>([
    ['/ui/', 'index.html', 'text/html; charset=utf-8'],
    ['/ui/index.html', 'index.html', 'text/html; charset=utf-8'],
    ['/ui/app.js', 'app.js', 'text/javascript; charset=utf-8'],
    ['/ui/app.css', 'app.css', 'text/css; charset=utf-8'],
  ])('serve %s as ui/%s', async (url, name, type) => {
    const response = await app.inject({ method: 'GET', url });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe(type);
    expect(response.rawPayload.equals(uiFile(name))).toBe(true);
    const policy = String(response.headers['content-security-policy']);
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe-inline');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['referrer-policy']).toBe('no-referrer');
  });

  it('sends /ui on to /ui/, where the page finds its files by their relative paths', async () => {
    const response = await app.inject({ method: 'GET', url: '/ui' });
    expect(response.statusCode).toBe(308);
    expect(response.headers.location).toBe('/ui/');
  });

  it.each<[string]>([
    ['/ui/package.json'],
    ['/ui/..%2Fpackage.json'],
    ['/ui/..%2F..%2Fetc%2Fpasswd'],
    ['/ui/%2E%2E%2Fsrc%2Fmain.ts'],
    ['/ui/toString'],
    ['/ui/__proto__'],
  ])('answer %s with 404', async (url) => {
    const response = await app.inject({ method: 'GET', url });
    expect(response.statusCode).toBe(404);
    expect(response.body).not.toContain('"name"');
  });
});
