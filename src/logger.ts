// The gateway's pino logger. Credentials are redacted wherever a header object could be logged, and
// request bodies are never logged at all (they hold message text).
import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config/gateway-config.js';

const credentialHeaders = [
  'authorization',
  'x-api-key',
  'api-key',
  'proxy-authorization',
  'cookie',
  'x-admin-key',
];

export const redactedPaths = [
  ...credentialHeaders.map((header) => `req.headers["${header}"]`),
  ...credentialHeaders.map((header) => `headers["${header}"]`),
  ...credentialHeaders.map((header) => `upstreamHeaders["${header}"]`),
];

export interface CreateLoggerOptions {
  level: LogLevel;
  destination?: DestinationStream;
}

export function createLogger({ level, destination }: CreateLoggerOptions): Logger {
  const options = {
    level,
    base: { service: 'ctxgate' },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    // What log pipelines read without a mapping: "level":"info", "time":"2026-11-23T13:45:00.000Z".
    formatters: { level: (label: string) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // stdout is written asynchronously: lines logged while a write is in flight go out together in the
  // next one, so a loaded gateway does not pay one write(2) per request line, and an idle one still
  // logs at once. pino flushes what is buffered when the process exits.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}
