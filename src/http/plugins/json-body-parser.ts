// The one body parser: every Content-Type is read as JSON (`curl -d` sends form encoding by default),
// with prototype-poisoning protection, a nesting limit and a limit on objects and arrays — both checked
// on the bytes as they arrive, so a hostile body is refused before it is all read or parsed
// (src/json-body.ts). A compressed body (zstd, gzip, deflate, br) is read decompressed, those limits
// counted on what it holds (src/request-encoding.ts); another coding is refused with 415, a leading
// byte-order mark is dropped, and an empty body is no body at all (a DELETE sent with a JSON
// Content-Type and nothing in it). What is left of a refused body is read and dropped by the
// early-refusal drain, so the client still gets its answer.
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { GatewayError } from '../../errors.js';
import { bytesAsRead, parseJsonBody, readJsonText, type JsonShapeLimits } from '../../json-body.js';
import { decompressed, readsEncoding } from '../../request-encoding.js';

export interface JsonBodyOptions {
  bodyLimitBytes: number;
  shape: JsonShapeLimits;
}

function contentEncodingOf(request: FastifyRequest): string | undefined {
  const header = request.headers['content-encoding'];
  const value = (Array.isArray(header) ? header.join(',') : header)?.trim().toLowerCase();
  return value === undefined || value === '' || value === 'identity' ? undefined : value;
}

function jsonBodyParser(app: FastifyInstance, options: JsonBodyOptions): void {
  const parse = (
    request: FastifyRequest,
    payload: Readable,
    done: (error: Error | null, value?: unknown) => void,
  ): void => {
    const encoding = contentEncodingOf(request);
    if (encoding !== undefined && !readsEncoding(encoding)) {
      done(
        new GatewayError(
          'unsupported_media_type',
          `Request bodies of Content-Encoding ${encoding.slice(0, 40)} are not accepted: send the JSON body uncompressed, or as zstd, gzip, deflate or br.`,
        ),
      );
      return;
    }
    const contentLength = Number(request.headers['content-length']);
    const decoding =
      encoding === undefined || contentLength > options.bodyLimitBytes
        ? undefined
        : decompressed(payload, encoding, options.bodyLimitBytes);
    readJsonText(decoding?.body ?? payload, {
      limitBytes: options.bodyLimitBytes,
      shape: options.shape,
      // What the client's Content-Length counts is the compressed body.
      contentLength: decoding === undefined ? contentLength : Number.NaN,
      ...(decoding === undefined ? {} : { unreadable: decoding.undecodable }),
    }).then(
      (body) => {
        if (body.text.trim() === '') return done(null, undefined);
        let value: unknown;
        try {
          value = parseJsonBody(body);
        } catch (error) {
          return done(error as Error);
        }
        request.gateway.rawBody = bytesAsRead(body, value);
        done(null, value);
      },
      (error: Error) => {
        decoding?.abandon();
        done(error);
      },
    );
  };
  app.removeAllContentTypeParsers();
  // application/json by exact match (fastify caches that lookup), and every other Content-Type too.
  app.addContentTypeParser('application/json', parse);
  app.addContentTypeParser('*', parse);
}

export const jsonBodyParserPlugin = fastifyPlugin(jsonBodyParser, { name: 'ctxgate-json-body-parser' });
