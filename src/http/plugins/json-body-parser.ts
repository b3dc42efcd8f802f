// The one body parser: every Content-Type is read as JSON (`curl -d` sends form encoding by default),
// with prototype-poisoning protection and a nesting limit (json-body.ts). A compressed body is refused
// with 415 rather than misread as JSON, a leading byte-order mark is dropped, and an empty body is no
// body at all (a DELETE sent with a JSON Content-Type and nothing in it).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { GatewayError } from '../../errors.js';
import { parseJsonBody } from '../json-body.js';

function contentEncodingOf(request: FastifyRequest): string | undefined {
  const header = request.headers['content-encoding'];
  const value = (Array.isArray(header) ? header.join(',') : header)?.trim().toLowerCase();
  return value === undefined || value === '' || value === 'identity' ? undefined : value;
}

function jsonBodyParser(app: FastifyInstance, { bodyLimitBytes }: { bodyLimitBytes: number }): void {
  const parse = (
    request: FastifyRequest,
    body: string | Buffer,
    done: (error: Error | null, value?: unknown) => void,
  ): void => {
    try {
      const encoding = contentEncodingOf(request);
      if (encoding !== undefined) {
        throw new GatewayError(
          'unsupported_media_type',
          `Compressed request bodies are not accepted (Content-Encoding: ${encoding.slice(0, 40)}); send the JSON body uncompressed.`,
        );
      }
      let text = body as string;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (text.trim() === '') return done(null, undefined);
      request.gateway.rawBody = text;
      done(null, parseJsonBody(text));
    } catch (error) {
      done(error as Error, undefined);
    }
  };
  app.removeAllContentTypeParsers();
  const options = { parseAs: 'string' as const, bodyLimit: bodyLimitBytes };
  // application/json by exact match (fastify caches that lookup), and every other Content-Type too.
  app.addContentTypeParser('application/json', options, parse);
  app.addContentTypeParser('*', options, parse);
}

export const jsonBodyParserPlugin = fastifyPlugin(jsonBodyParser, { name: 'ctxgate-json-body-parser' });
