// The body shape check that runs on the bytes as they arrive: its depth and container counts equal the
// parsed value's on every JSON text, however the text is cut into pieces (escaped quotes and
// backslashes falling on a cut included), and it refuses a hostile body at the first byte past a limit.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bytesAsRead,
  countingBytesOf,
  decodeUtf8,
  JsonShapeScanner,
  nodeDecodesUtf8Fast,
  parseJsonBody,
  readJsonText,
} from '../src/json-body.js';
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

/** A scanner fed `text` cut at `cuts` (taken modulo its length, in order). */
function scannedInPieces(
  text: string,
  cuts: number[],
  limits = { maxDepth: 1_000, maxContainers: 1_000_000 },
): JsonShapeScanner {
  const bytes = Buffer.from(text);
  const scanner = new JsonShapeScanner(limits);
  let start = 0;
  for (const cut of [
    ...cuts.map((value) => value % (bytes.length + 1)).sort((a, b) => a - b),
    bytes.length,
  ]) {
    scanner.push(bytes.subarray(start, Math.max(start, cut)));
    start = Math.max(start, cut);
  }
  return scanner;
}

function scanInPieces(
  text: string,
  cuts: number[],
  limits: { maxDepth: number; maxContainers: number },
): unknown {
  try {
    scannedInPieces(text, cuts, limits);
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

/** A JSON value as a tree, so that a key like __proto__ stays a key (no object is built to hold it). */
type Tree =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'array'; items: Tree[] }
  | { kind: 'object'; entries: Array<[string, Tree]> };

const nearKeys = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    '__proto_',
    '__proto___',
    'constructors',
    'construct',
    'content',
  ),
  fc.constantFrom('c', '_', '', 'prototype', '"__proto__"', '\\', 'con\nstructor'),
  fc.string({ maxLength: 12 }),
);
const spelledTree = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nearKeys.map((value): Tree => ({ kind: 'string', value })),
    fc.integer().map((value): Tree => ({ kind: 'number', value })),
    fc.array(tie('tree'), { maxLength: 4 }).map((items): Tree => ({ kind: 'array', items })),
    fc
      .array(fc.tuple(nearKeys, tie('tree')), { maxLength: 4 })
      .map((entries): Tree => ({ kind: 'object', entries })),
  ),
})).tree;

function stringsOf(tree: Tree): string[] {
  if (tree.kind === 'string') return [tree.value];
  if (tree.kind === 'number') return [];
  if (tree.kind === 'array') return tree.items.flatMap(stringsOf);
  return tree.entries.flatMap(([key, value]) => [key, ...stringsOf(value)]);
}

/**
 * JSON text of a tree with each string's characters spelled as a client might: literally, as \\uXXXX
 * (either case of hex), or with a short escape where JSON has one. The choices follow `seed`.
 */
function spell(tree: Tree, seed: number): string {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state >>> 16;
  };
  const unicode = (code: number) => {
    const hex = code.toString(16).padStart(4, '0');
    return `\\u${next() % 2 === 0 ? hex : hex.toUpperCase()}`;
  };
  const short: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n' };
  const string = (value: string) => {
    let text = '"';
    for (const char of value) {
      const code = char.charCodeAt(0);
      const mustEscape = char === '"' || char === '\\' || code < 0x20;
      const choice = next() % 3;
      if (choice === 0 && short[char] !== undefined) text += short[char];
      else if (mustEscape || (choice === 1 && char.length === 1))
        text += char.length === 1 ? unicode(code) : char;
      else text += char;
    }
    return `${text}"`;
  };
  const write = (node: Tree): string => {
    if (node.kind === 'string') return string(node.value);
    if (node.kind === 'number') return String(node.value);
    if (node.kind === 'array') return `[${node.items.map(write).join(',')}]`;
    return `{${node.entries.map(([key, value]) => `${string(key)}:${write(value)}`).join(',')}}`;
  };
  return write(tree);
}

function keyFlagInPieces(text: string, cuts: number[]): boolean {
  return scannedInPieces(text, cuts).mayHoldForbiddenKey;
}

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

  it('says a body may hold a forbidden key exactly when one of its strings is __proto__ or constructor, however spelled', () => {
    fc.assert(
      fc.property(spelledTree, fc.integer(), (tree, seed) => {
        const text = spell(tree, seed);
        const expected = stringsOf(tree).some((value) => value === '__proto__' || value === 'constructor');
        // Whole: exact, so a clean body skips secure-json-parse's scans.
        expect(keyFlagInPieces(text, [])).toBe(expected);
        expect(JSON.parse(text)).toBeDefined();
      }),
      { numRuns: 3_000 },
    );
  });

  it('never misses a forbidden key cut across pieces (an escape cut in two counts as one)', () => {
    fc.assert(
      fc.property(spelledTree, fc.integer(), fc.array(fc.nat(), { maxLength: 12 }), (tree, seed, cuts) => {
        const text = spell(tree, seed);
        if (stringsOf(tree).some((value) => value === '__proto__' || value === 'constructor'))
          expect(keyFlagInPieces(text, cuts)).toBe(true);
      }),
      { numRuns: 3_000 },
    );
  });

  it('counts the members of every object, however the text is cut into pieces', () => {
    /** Keys of every object in a parsed value, by walking it. */
    const keysIn = (value: unknown): number =>
      typeof value !== 'object' || value === null
        ? 0
        : Object.entries(value).reduce(
            (sum, [, child]) => sum + keysIn(child) + (Array.isArray(value) ? 0 : 1),
            0,
          );
    fc.assert(
      fc.property(jsonValue, fc.array(fc.nat(), { maxLength: 8 }), (value, cuts) => {
        const text = JSON.stringify(value, null, cuts.length % 2 === 0 ? 0 : 2);
        expect(scannedInPieces(text, cuts).members).toBe(keysIn(JSON.parse(text)));
      }),
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
    expect(parseJsonBody({ text: read, mayHoldForbiddenKey: false })).toEqual({ text: 'caf\u00e9 \u4e2d' });
  });

  it.each([
    ['Chinese', '委员会审查了该提案并要求提供估算，下周再讨论。'],
    ['Russian', 'Комитет рассмотрел предложение и попросил оценки. '],
    ['emoji', '🚀✅🎉 great job 👍 '],
    ['French', 'Le comité a examiné la proposition détaillée. '],
  ])('reads 200 KB of %s text as written', async (_language, unit) => {
    const text = JSON.stringify({ text: unit.repeat(Math.ceil(200_000 / unit.length)) });
    const bytes = Buffer.from(text);
    const { text: read } = await readJsonText(Readable.from([bytes]), {
      limitBytes: 10_000_000,
      shape: limits,
      contentLength: bytes.length,
    });
    expect(read).toBe(text);
  });

  it('reads a large body that is not valid UTF-8 with the replacement characters V8 gives it', async () => {
    const bytes = Buffer.concat([
      Buffer.from(`{"text":"${'中文'.repeat(30_000)}`),
      Buffer.from([0xe4, 0xb8, 0xff, 0xc3]),
      Buffer.from(`${'中文'.repeat(30_000)}"}`),
    ]);
    const { text: read } = await readJsonText(Readable.from([bytes]), {
      limitBytes: 10_000_000,
      shape: limits,
      contentLength: bytes.length,
    });
    expect(read).toBe(new TextDecoder().decode(bytes));
    expect(read).toContain('\uFFFD');
  });

  it('reads any mix of ASCII, multi-byte characters and invalid bytes as the WHATWG decoder does, small or past 64 KB', async () => {
    // Valid characters of every length (the BOM, noncharacters and the last code point among them) and
    // what is not UTF-8: a stray continuation byte, overlong forms, an encoded surrogate half, a
    // sequence cut short, a code point past U+10FFFF, bytes that never occur.
    const valid = fc
      .integer({ min: 0x80, max: 0x10ffff })
      .filter((codePoint) => codePoint < 0xd800 || codePoint > 0xdfff)
      .map((codePoint) => Buffer.from(String.fromCodePoint(codePoint)));
    const named = fc
      .constantFrom('é', '├──', '中', '🚀', '\uFEFF', '\uFFFE', '\u{10FFFF}')
      .map((text) => Buffer.from(text));
    const invalid = fc
      .constantFrom(
        [0x80],
        [0xc0, 0x80],
        [0xe0, 0x80, 0x80],
        [0xed, 0xa0, 0x80],
        [0xe4, 0xb8],
        [0xf0, 0x9f, 0x9a],
        [0xf4, 0x90, 0x80, 0x80],
        [0xff],
        [0xfe],
      )
      .map((bytes) => Buffer.from(bytes));
    const ascii = fc
      .string({ unit: fc.constantFrom(...'abc xyz 019,.:/-_'), maxLength: 40 })
      .map((text) => Buffer.from(text));
    const validPiece = fc.oneof({ arbitrary: ascii, weight: 4 }, valid, named);
    const anyPiece = fc.oneof({ arbitrary: ascii, weight: 4 }, valid, named, invalid);
    await fc.assert(
      fc.asyncProperty(
        // Text that is all valid UTF-8 (the transcoder's), or not (V8's), once or repeated past 64 KB.
        fc.oneof(fc.array(validPiece, { maxLength: 60 }), fc.array(anyPiece, { maxLength: 60 })),
        fc.constantFrom(1, 1, 3_000),
        async (pieces, copies) => {
          const inner = Buffer.concat(pieces);
          const bytes = Buffer.concat([
            Buffer.from('{"text":"'),
            ...Array.from({ length: copies }, () => inner),
            Buffer.from('"}'),
          ]);
          const { text } = await readJsonText(Readable.from([bytes]), {
            limitBytes: 100_000_000,
            shape: limits,
            contentLength: bytes.length,
          });
          const expected = new TextDecoder().decode(bytes);
          expect(text).toBe(expected);
          // Whichever decoder this Node has: the transcoder's path and Node's own give the same text.
          expect(decodeUtf8(bytes, false)).toBe(expected);
          expect(decodeUtf8(bytes, true)).toBe(expected);
        },
      ),
      { numRuns: 150 },
    );
  });

  // A JSON escape of half a UTF-16 surrogate pair is text no strict parser takes: Anthropic answers "The
  // request body is not valid JSON: no low surrogate in string", DeepSeek "lone leading surrogate in hex
  // escape" — and a session that stored one was refused on every later request. JSON.stringify writes
  // one for a string cut between the halves of an emoji (a client's `slice`); Python's json.dumps
  // escapes every character outside ASCII, pairs as two escapes.
  it('reads the escape of a lone surrogate half as the replacement character, pairs and escaped backslashes as written', async () => {
    // Pieces of a JSON string's text: characters, escapes of surrogate halves (either case), escaped
    // backslashes (`\\ud83d` is text, not an escape), other escapes.
    const piece = fc.constantFrom(
      'a',
      ' ',
      '\\\\',
      '\\\\u',
      'é',
      '中',
      '😀',
      '\\ud83d',
      '\\ude00',
      '\\uD83D',
      '\\uDE00',
      '\\ud800',
      '\\udbff',
      '\\udc00',
      '\\udfff',
      '\\u00e9',
      '\\n',
      '\\"',
    );
    const asPython = (text: string): string =>
      JSON.stringify(text).replace(
        /[\u0080-\uffff]/g,
        (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`,
      );
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 30 }), fc.boolean(), async (pieces, python) => {
        // The text a client meant, lone halves and all, written by JSON.stringify or as Python does.
        const meant = JSON.parse(`"${pieces.join('')}"`) as string;
        const body = `{"text":${python ? asPython(meant) : JSON.stringify(meant)}}`;
        const bytes = Buffer.from(body);
        const read = await readJsonText(Readable.from([bytes]), {
          limitBytes: 100_000,
          shape: limits,
          contentLength: bytes.length,
        });
        const parsed = parseJsonBody(read) as { text: string };
        expect(parsed.text).toBe(meant.toWellFormed());
        // The bytes forwarded as read say the same, at the same length.
        expect((JSON.parse(read.bytes.toString('utf8')) as { text: string }).text).toBe(meant.toWellFormed());
        expect(read.bytes.length).toBe(bytes.length);
      }),
      { numRuns: 400 },
    );
  });

  it('keeps a body with no lone half the very bytes it came as', async () => {
    const bytes = Buffer.from('{"text":"\\\\ud83d \\ud83d\\ude00 \\uD83D\\uDE00 😀"}');
    const read = await readJsonText(Readable.from([bytes]), {
      limitBytes: 1_000,
      shape: limits,
      contentLength: bytes.length,
    });
    expect(read.bytes).toBe(bytes);
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

describe('nodeDecodesUtf8Fast: the Node releases whose UTF-8 decoder is vectorized (nodejs/node#61131)', () => {
  it.each<[string, boolean]>([
    ['20.20.2', false],
    ['22.23.3', false],
    ['v24.13.0', false],
    ['24.14.0', true],
    ['v24.15.0', true],
    ['25.2.1', false],
    ['25.3.0', true],
    ['25.9.0', true],
    ['26.0.0', true],
    ['v26.10.0', true],
    ['27.1.0', true],
  ])('%s: %s', (version, fast) => {
    expect(nodeDecodesUtf8Fast(version)).toBe(fast);
  });
});

describe('bytesAsRead: the bytes that say what the gateway read', () => {
  const limits = { maxDepth: 64, maxContainers: 100 };
  const read = async (text: string) => {
    const body = await readJsonText(Readable.from([Buffer.from(text)]), {
      limitBytes: 10_000,
      shape: limits,
      contentLength: Number.NaN,
    });
    const value = parseJsonBody(body);
    return { body, value, bytes: bytesAsRead(body, value) };
  };

  it('are the client’s own bytes when no key is given twice', async () => {
    const text =
      '{ "model": "m",\n  "messages": [{"role": "user", "content": "caf\\u00e9 {\\"a\\":1, \\"a\\":2}"}],\n "stop": ["a:", ":"] }';
    const { body, bytes } = await read(text);
    expect(bytes).toBe(body.bytes);
  });

  it.each([
    { name: 'at the top', text: '{"max_tokens":100000,"model":"m","max_tokens":1}' },
    { name: 'in a message', text: '{"model":"m","messages":[{"role":"user","content":"A","content":"B"}]}' },
    {
      name: 'spelled with an escape, deep in a tool call',
      text: '{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"A","\\u0061rguments":"B"}}]}]}',
    },
    { name: 'in an object in an array', text: '{"stop":[{"a":1,"a":2}],"model":"m"}' },
  ])('are the value written anew when a key is given twice $name: the last of it, once', async ({ text }) => {
    const { bytes, value } = await read(text);
    expect(bytes.toString()).toBe(JSON.stringify(JSON.parse(text)));
    expect(JSON.parse(bytes.toString())).toEqual(value);
  });
});

describe('countingBytesOf: a body as counting weighs it', () => {
  it.each<[string, string, number]>([
    ['a small body, whatever it holds', JSON.stringify({ text: '会議'.repeat(1_000) }), 1],
    ['a large ASCII body', JSON.stringify({ text: 'plain words '.repeat(20_000) }), 1],
    // Three bytes a character, each weighing four: about four times its size.
    ['a large body of Chinese', JSON.stringify({ text: '会議では提案を検討した'.repeat(10_000) }), 4],
  ])('%s', (_name, text, times) => {
    const bytes = Buffer.from(text);
    const weighed = countingBytesOf(bytes);
    if (times === 1) expect(weighed).toBe(bytes.length);
    else expect(Math.abs(weighed / bytes.length - times)).toBeLessThan(0.05);
  });

  it('is 0 without a body', () => {
    expect(countingBytesOf(undefined)).toBe(0);
  });
});
