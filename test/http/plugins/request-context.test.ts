// The request id a log line and the answer carry: the client's own `x-request-id` when it is short
// printable ASCII, a fresh one otherwise (an id is never a way into the logs).
import { describe, expect, it } from 'vitest';
import { requestIdFrom } from '../../../src/http/plugins/request-context.js';

const fresh = () => 'generated-id';

describe('requestIdFrom', () => {
  it.each<[string, string | string[] | undefined, string]>([
    ['no header', undefined, 'generated-id'],
    ['a usual id', 'req-7f3a9c', 'req-7f3a9c'],
    ['a UUID', '0b6f2b1e-8f0a-4c1e-9d55-3a2b1c0d9e8f', '0b6f2b1e-8f0a-4c1e-9d55-3a2b1c0d9e8f'],
    ['the first of repeated headers', ['first-id', 'second-id'], 'first-id'],
    ['200 characters', 'a'.repeat(200), 'a'.repeat(200)],
    ['201 characters', 'a'.repeat(201), 'generated-id'],
    ['an empty one', '', 'generated-id'],
    ['one with a space', 'two words', 'generated-id'],
    ['one with a line break (log injection)', 'id\n{"level":"error"}', 'generated-id'],
    ['one with a control character', 'id\u0007', 'generated-id'],
    ['non-ASCII', 'idé', 'generated-id'],
  ])('takes %s as %j', (_name, header, expected) => {
    expect(requestIdFrom(header, fresh)).toBe(expected);
  });
});
