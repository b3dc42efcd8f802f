// The gateway's logger (logger.ts): credentials redacted wherever a header object is logged (a request's,
// an upstream's), the level as a label and the time as ISO 8601 — what log pipelines read as they are.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, infoLineWriter, redactedPaths } from '../src/logger.js';
import { captureLogs } from './helpers/start-gateway.js';

const secrets = {
  authorization: 'Bearer sk-live-secret-1',
  'x-api-key': 'sk-ant-secret-2',
  'api-key': 'azure-secret-3',
  'proxy-authorization': 'Basic c2VjcmV0LTQ=',
  cookie: 'session=secret-5',
  'x-admin-key': 'admin-secret-6',
};

describe('the logger', () => {
  it.each(['headers', 'upstreamHeaders', 'req'])('redacts every credential header under %s', (field) => {
    const { lines, destination } = captureLogs();
    const logger = createLogger({ level: 'info', destination });
    const headers = { ...secrets, 'content-type': 'application/json' };
    logger.info(field === 'req' ? { req: { headers } } : { [field]: headers }, 'a request');
    expect(lines).toHaveLength(1);
    const line = lines[0] as string;
    for (const secret of Object.values(secrets)) expect(line).not.toContain(secret.slice(-8));
    const logged = JSON.parse(line) as Record<
      string,
      { headers?: Record<string, string> } & Record<string, string>
    >;
    const loggedHeaders = (field === 'req' ? logged.req?.headers : logged[field]) as Record<string, string>;
    for (const name of Object.keys(secrets)) expect(loggedHeaders[name]).toBe('[redacted]');
    expect(loggedHeaders['content-type']).toBe('application/json');
  });

  it('covers the same headers at every path', () => {
    const names = (prefix: string) =>
      redactedPaths.filter((path) => path.startsWith(prefix)).map((path) => path.slice(prefix.length));
    expect(names('req.headers').sort()).toEqual(
      Object.keys(secrets)
        .map((name) => `["${name}"]`)
        .sort(),
    );
    expect(names('upstreamHeaders').sort()).toEqual(names('req.headers').sort());
  });

  it('writes the level as a label and the time in ISO 8601, below its level nothing', () => {
    const { lines, destination } = captureLogs();
    const logger = createLogger({ level: 'warn', destination });
    logger.info('not written');
    logger.warn({ code: 'x' }, 'written');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] as string) as {
      level: string;
      time: string;
      service: string;
      msg: string;
    };
    expect(line).toMatchObject({ level: 'warn', service: 'ctxgate', msg: 'written' });
    expect(new Date(line.time).toISOString()).toBe(line.time);
  });

  describe('the time', () => {
    afterEach(() => vi.useRealTimers());

    it('is the moment each line is written, to the millisecond, also when lines come within one', () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const { lines, destination } = captureLogs();
      const logger = createLogger({ level: 'info', destination });
      const times = () => lines.map((line) => (JSON.parse(line) as { time: string }).time);
      vi.setSystemTime(Date.UTC(2026, 10, 27, 13, 45, 0, 1));
      logger.info('first');
      logger.info('second, the same millisecond');
      vi.setSystemTime(Date.UTC(2026, 10, 27, 13, 45, 0, 2));
      logger.info('third, the next one');
      vi.setSystemTime(Date.UTC(2027, 0, 1, 0, 0, 0, 0));
      logger.info('fourth, a year on');
      expect(times()).toEqual([
        '2026-11-27T13:45:00.001Z',
        '2026-11-27T13:45:00.001Z',
        '2026-11-27T13:45:00.002Z',
        '2027-01-01T00:00:00.000Z',
      ]);
    });
  });

  describe('the info line writer', () => {
    afterEach(() => vi.useRealTimers());

    /** The same record through logger.info and through the writer, at the same moment: the raw strings. */
    function bothLines(record: object, level: 'info' | 'warn' = 'info'): [string[], string[]] {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.UTC(2026, 10, 27, 13, 45, 0, 7));
      const byPino: string[] = [];
      const byWriter: string[] = [];
      createLogger({ level, destination: { write: (line: string) => byPino.push(line) } }).info(
        record,
        'request',
      );
      const write = infoLineWriter(
        createLogger({ level, destination: { write: (line: string) => byWriter.push(line) } }),
        'request',
      );
      write(record);
      return [byPino, byWriter];
    }

    const records: Array<[string, object]> = [
      [
        'a request line, nested objects and undefined fields among them',
        {
          reqId: 'req-1',
          method: 'POST',
          route: '/v1/chat/completions',
          path: undefined,
          status: 200,
          model: 'gpt-4o-mini',
          stream: false,
          dropped: ['logprobs', 'n'],
          context: { window: 128_000, inputTokens: 512, summarizedMessages: undefined, modified: true },
          clientAborted: undefined,
          durations: { totalMs: 1.234, upstreamMs: 1, overheadMs: 0.234 },
        },
      ],
      ['no fields at all', {}],
      ['only undefined fields', { a: undefined, b: undefined }],
      [
        'strings to escape',
        { quote: 'say "hi"', backslash: 'C:\\dir', control: 'a\u0001b\nc\td', unicode: 'naïve – 日本 😀' },
      ],
      ['a string past 100 characters', { errorCause: `ECONNRESET ${'x"'.repeat(80)}` }],
      ['numbers pino writes as null', { nan: Number.NaN, infinite: Number.POSITIVE_INFINITY, zero: -0 }],
      ['a function field, left out', { keep: 1, skip: () => 1 }],
      ['a field named as the message', { msg: 'inner', level: 'x' }],
    ];

    it.each(records)('writes what logger.info writes, byte for byte: %s', (_name, record) => {
      const [byPino, byWriter] = bothLines(record);
      expect(byPino).toHaveLength(1);
      expect(byWriter).toEqual(byPino);
    });

    it("writes nothing below its logger's level", () => {
      const [byPino, byWriter] = bothLines({ reqId: 'req-2' }, 'warn');
      expect(byPino).toEqual([]);
      expect(byWriter).toEqual([]);
    });

    it('escapes a lone surrogate, which pino writes raw, and reads back the same', () => {
      const record = { model: 'gpt\ud800x', reqId: 'req-3' };
      const [byPino, byWriter] = bothLines(record);
      expect(byWriter[0]).toContain('gpt\\ud800x');
      expect(JSON.parse(byWriter[0] as string)).toEqual(JSON.parse(byPino[0] as string));
    });
  });
});
