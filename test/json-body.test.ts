// The body shape check that runs on the bytes as they arrive: its depth and container counts equal the
// parsed value's on every JSON text, however the text is cut into pieces (escaped quotes and
// backslashes falling on a cut included), and it refuses a hostile body at the first byte past a limit.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonShapeScanner, parseJsonBody, readJsonText } from '../src/json-body.js';
import { Readable } from 'node:stream';

/** Depth and containers of a parsed value, by walking it. */
function shapeOf(value: unknown): { depth: number; containers: number } {
  if (typeof value !== 'object' || value === null) return { depth: 0, containers: 0 };
  let depth = 0;
  let containers = 1;
  for (const child of Object.values(value)) {
    const inner = shapeOf(child);
    depth = Math.max(depth, inner.depth);
    containers += inner.containers;
  }
  return { depth: depth + 1, containers };
}

function scanInPieces(
  text: string,
  cuts: number[],
  limits: { maxDepth: number; maxContainers: number },
): unknown {
  const bytes = Buffer.from(text);
  const scanner = new JsonShapeScanner(limits);
  let start = 0;
  try {
    for (const cut of [
      ...cuts.map((value) => value % (bytes.length + 1)).sort((a, b) => a - b),
      bytes.length,
    ]) {
      scanner.push(bytes.subarray(start, Math.max(start, cut)));
      start = Math.max(start, cut);
    }
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return 'ok';
}

const awkwardText = fc.oneof(
  fc.string(),
  fc.constantFrom('"', '\\', '\\"', '\\\\', '\\\\"', '[{', '}]', 'a"b\\"c\\\\', '\u00e9\u4e2d\ud83d\ude00'),
);
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    awkwardText,
    fc.integer(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(awkwardText, tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('JsonShapeScanner', () => {
  it('refuses exactly the texts nested deeper, or holding more containers, than its limits', () => {
    fc.assert(
      fc.property(
        jsonValue,
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 30 }),
        (value, cuts, maxDepth, maxContainers) => {
          const { depth, containers } = shapeOf(value);
          const expected =
            depth > maxDepth ? 'json_too_deep' : containers > maxContainers ? 'invalid_request' : 'ok';
          const outcome = scanInPieces(JSON.stringify(value), cuts, { maxDepth, maxContainers });
          // Both limits passed: whichever the bytes reach first is named.
          if (depth > maxDepth && containers > maxContainers) expect(outcome).not.toBe('ok');
          else expect(outcome).toBe(expected);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('stops at the first byte past the depth limit of a body nested millions deep', () => {
    const scanner = new JsonShapeScanner({ maxDepth: 64, maxContainers: 1_000_000 });
    const deep = Buffer.from('['.repeat(8_000_000));
    let error: unknown;
    try {
      scanner.push(deep);
    } catch (caught) {
      error = caught;
    }
    expect((error as { code: string }).code).toBe('json_too_deep');
  });
});

describe('readJsonText', () => {
  const limits = { maxDepth: 64, maxContainers: 100 };

  it('reads a body in pieces, the byte-order mark dropped, multi-byte characters cut across pieces kept', async () => {
    const text = '{"text":"caf\u00e9 \u4e2d"}';
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
    const pieces = Array.from(bytes).map((byte) => Buffer.from([byte]));
    const { text: read } = await readJsonText(Readable.from(pieces), {
      limitBytes: 1_000,
      shape: limits,
      contentLength: bytes.length,
    });
    expect(read).toBe(text);
    expect(parseJsonBody(read)).toEqual({ text: 'caf\u00e9 \u4e2d' });
  });

  it('refuses a body over the limit, a length that does not match, and a shape past the limits', async () => {
    const refusal = async (body: string, options: { limitBytes?: number; contentLength?: number } = {}) =>
      readJsonText(Readable.from([Buffer.from(body)]), {
        limitBytes: options.limitBytes ?? 1_000,
        shape: limits,
        contentLength: options.contentLength ?? Buffer.byteLength(body),
      }).then(
        () => 'read',
        (error: { code?: string }) => error.code,
      );
    expect(await refusal('{"a":1}', { limitBytes: 3 })).toBe('request_too_large');
    expect(await refusal('{"a":1}', { contentLength: 99 })).toBe('invalid_request');
    expect(await refusal('['.repeat(65) + ']'.repeat(65))).toBe('json_too_deep');
    expect(await refusal(`[${'[],'.repeat(100)}[]]`)).toBe('invalid_request');
    expect(await refusal(`[${'[],'.repeat(98)}[]]`)).toBe('read');
  });
});
