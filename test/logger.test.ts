// The gateway's logger (logger.ts): credentials redacted wherever a header object is logged (a request's,
// an upstream's), the level as a label and the time as ISO 8601 — what log pipelines read as they are.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, redactedPaths } from '../src/logger.js';
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
});
