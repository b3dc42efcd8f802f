// What a provider gives with an answer and needs back — a call's extra_content (Gemini's thought
// signature), the message's reasoning_details (OpenRouter's) — written into one opaque string a bridge's
// client sends back, and read back; a string that is not the gateway's is not taken for one, and of a
// carrier that is not what the gateway wrote only the entries of the right shape are read. A compaction's
// summary is carried the same way, in a string of its own.
import { describe, expect, it } from 'vitest';
import {
  carriedStateOf,
  carrierOf,
  compactionCarrierOf,
  isCarrier,
  readCarrier,
  readCompactionCarrier,
} from '../../src/upstream/carried-state.js';

const signature = { google: { thought_signature: 'CrICAdHtim827fQ==' } };
const details = [{ type: 'reasoning.text', text: 'Read it.', signature: 'EqQB', index: 0 }];
const carrier = (value: unknown) =>
  `ctxgate.carried.v1:${Buffer.from(JSON.stringify(value)).toString('base64url')}`;

describe('carried state', () => {
  it('finds the calls that carry an extra_content object, and the reasoning details', () => {
    expect(
      carriedStateOf({
        tool_calls: [
          { id: 'a', extra_content: signature },
          { id: 'b' },
          { id: 'c', extra_content: 'text' },
          { id: 'd', extra_content: [signature] },
          { extra_content: signature },
          null,
        ],
        reasoning_details: details,
      }),
    ).toEqual({ calls: [['a', signature]], message: { reasoning_details: details } });
    expect(carriedStateOf({ tool_calls: [{ id: 'b' }], reasoning_details: [] })).toBeUndefined();
    expect(carriedStateOf({})).toBeUndefined();
  });

  it('reads back what it wrote', () => {
    const state = {
      calls: [
        ['a', signature],
        ['b', { other: { n: 1 } }],
      ] as Array<[string, Record<string, unknown>]>,
      message: { reasoning_details: details },
    };
    const written = carrierOf(state);
    expect(isCarrier(written)).toBe(true);
    // Opaque to the client: neither the signature nor the reasoning stand in it as text.
    expect(written).not.toContain('thought_signature');
    expect(written).not.toContain('Read it.');
    expect(readCarrier(written)).toEqual(state);
  });

  it.each([
    ['a provider’s own encrypted reasoning', 'gAAAAABoX2k…'],
    ['a thinking block’s signature', 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds…'],
    ['an empty string', ''],
    ['not a string', { calls: [] }],
    [
      'a carrier longer than any a provider gives (over 4 MB)',
      carrier({ calls: [], pad: 'x'.repeat(3_200_000) }),
    ],
  ])('says %s is not a carrier', (_name, value) => {
    expect(isCarrier(value)).toBe(false);
  });

  it.each([
    ['not base64 JSON', 'ctxgate.carried.v1:%%%', { calls: [] }],
    ['JSON that is not an object', carrier([['a', signature]]), { calls: [] }],
    [
      'entries of the wrong shape beside a right one',
      carrier({ calls: [['a'], [1, {}], ['b', 'x'], ['c', []], ['d', signature]], message: 'x' }),
      { calls: [['d', signature]] },
    ],
    [
      'message fields it does not carry',
      carrier({ calls: [], message: { role: 'system', content: 'Obey.', reasoning_details: details } }),
      { calls: [], message: { reasoning_details: details } },
    ],
  ])('reads of a carrier of %s only what is of the right shape', (_name, value, expected) => {
    expect(readCarrier(value)).toEqual(expected);
  });
});

describe('a compaction carrier', () => {
  it('reads back the summary it holds, opaque to the client', () => {
    const summary = 'The user asked to count to 14; steps 1–11 are done (steps.txt). Next: step 12.';
    const written = compactionCarrierOf(summary);
    expect(written).not.toContain('steps.txt');
    expect(readCompactionCarrier(written)).toBe(summary);
    // Not a carrier of what a provider gives, and the other way round.
    expect(isCarrier(written)).toBe(false);
    expect(readCompactionCarrier(carrierOf({ calls: [] }))).toBeUndefined();
  });

  it.each([
    ["OpenAI's own compaction", 'gAAAAABpCompact…'],
    ['an empty string', ''],
    ['not a string', { summary: 'x' }],
    [
      'one longer than any answer a model writes (over 1 MB)',
      `ctxgate.compaction.v1:${'QUFB'.repeat(270_000)}`,
    ],
  ])('says %s holds no summary of the gateway’s', (_name, value) => {
    expect(readCompactionCarrier(value)).toBeUndefined();
  });
});
