// What a provider attaches to a tool call (Gemini's thought signature), written into one opaque string a
// bridge's client sends back, and read back by call id; a string that is not the gateway's adds nothing.
import { describe, expect, it } from 'vitest';
import { callExtrasOf, carrierOf, isCarrier, readCarrier } from '../../src/upstream/call-extras.js';

const signature = { google: { thought_signature: 'CrICAdHtim827fQ==' } };

describe('call extras', () => {
  it('finds the calls that carry an extra_content object, and only those', () => {
    expect(
      callExtrasOf([
        { id: 'a', extra_content: signature },
        { id: 'b' },
        { id: 'c', extra_content: 'text' },
        { id: 'd', extra_content: [signature] },
        { extra_content: signature },
        null,
      ]),
    ).toEqual([['a', signature]]);
    expect(callExtrasOf(undefined)).toEqual([]);
  });

  it('reads back what it wrote, by call id', () => {
    const carrier = carrierOf([
      ['a', signature],
      ['b', { other: { n: 1 } }],
    ]);
    expect(isCarrier(carrier)).toBe(true);
    // Opaque to the client: neither the ids nor the signature stand in it as text.
    expect(carrier).not.toContain('thought_signature');
    const into = new Map<string, Record<string, unknown>>();
    readCarrier(carrier, into);
    expect([...into]).toEqual([
      ['a', signature],
      ['b', { other: { n: 1 } }],
    ]);
  });

  it.each([
    ['a provider’s own encrypted reasoning', 'gAAAAABoX2k…'],
    ['a thinking block’s signature', 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds…'],
    ['an empty string', ''],
  ])('says %s is not a carrier', (_name, value) => {
    expect(isCarrier(value)).toBe(false);
  });

  it.each([
    ['not base64 JSON', 'ctxgate.call-extras.v1:%%%'],
    ['JSON that is not a list', `ctxgate.call-extras.v1:${Buffer.from('{"a":1}').toString('base64url')}`],
    [
      'entries of the wrong shape',
      `ctxgate.call-extras.v1:${Buffer.from(JSON.stringify([['a'], [1, {}], ['b', 'x'], ['c', []]])).toString('base64url')}`,
    ],
  ])('reads nothing from a carrier of %s', (_name, value) => {
    const into = new Map<string, Record<string, unknown>>();
    readCarrier(value, into);
    expect(into.size).toBe(0);
  });
});
