// Where a body's messages lie in its bytes: each span must parse to the message JSON.parse read there,
// whatever the spacing, escapes and strings full of brackets; and wherever the bytes could say
// something else than JSON.parse read, no spans at all.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayElementSpans, firstObjectSpan, memberSpans } from '../src/json-spans.js';

/** What each span of `text` parses to, or undefined without spans. */
function spansOf(text: string, key = 'messages'): unknown[] | undefined {
  const bytes = Buffer.from(text);
  const spans = arrayElementSpans(bytes, key);
  if (spans === undefined) return undefined;
  const values: unknown[] = [];
  for (let at = 0; at < spans.length; at += 2)
    values.push(JSON.parse(bytes.subarray(spans[at] as number, spans[at + 1] as number).toString()));
  return values;
}

/** Any JSON object (JSON.parse would make `__proto__` a member; an object literal cannot). */
const anyObject = fc.dictionary(
  fc.string().filter((key) => key !== '__proto__'),
  fc.jsonValue(),
);

/** JSON text with a space, a newline or nothing around every token, as different clients write it. */
const spacings = [
  (value: unknown) => JSON.stringify(value),
  (value: unknown) => JSON.stringify(value, null, 2),
  (value: unknown) => JSON.stringify(value, null, '\t').replace(/\n/g, '\r\n'),
];

describe('arrayElementSpans', () => {
  it('finds each message of any body, however it is spaced, as JSON.parse reads it', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string().filter((key) => key !== 'messages' && key !== '__proto__'),
          fc.jsonValue(),
        ),
        fc.array(anyObject, {
          maxLength: 6,
        }),
        fc.constantFrom(0, 1, 2),
        fc.boolean(),
        (fields, messages, spacing, first) => {
          const body = first ? { messages, ...fields } : { ...fields, messages };
          const text = (spacings[spacing] as (value: unknown) => string)(body);
          expect(spansOf(text)).toEqual((JSON.parse(text) as { messages: unknown[] }).messages);
        },
      ),
    );
  });

  it.each([
    {
      name: 'strings holding quotes, backslashes and brackets',
      text: String.raw`{"messages":[{"role":"user","content":"a \"]}\\"},{"role":"tool","content":"\\\"[{"}]}`,
    },
    {
      name: 'escapes and characters of every width',
      text: String.raw`{"messages":[{"content":"caf\u00e9 \ud83d\ude00 日本"},{"content":"é😀"}],"n":1}`,
    },
    {
      name: 'a messages member nested in another member, before the real one',
      text: '{"metadata":{"messages":[{"x":1}]},"messages":[{"role":"user","content":"real"}]}',
    },
    {
      name: 'numbers, literals and empty containers around it',
      text: '{"n":-1.5e3,"b":true,"z":null,"a":[],"o":{},"messages":[{"c":[1,{"d":[]}]},{}],"t":false}',
    },
    { name: 'an empty array', text: '{"messages":[]}' },
    {
      name: 'keys spelled with escapes, the messages key among them',
      text: String.raw`{"\"":1,"mod\u0065l":"m","m\u0065ssages":[{"role":"user"}]}`,
    },
  ])('finds the messages of a body with $name', ({ text }) => {
    expect(spansOf(text)).toEqual((JSON.parse(text) as { messages: unknown[] }).messages);
  });

  it.each([
    { name: 'has no messages', text: '{"model":"m","input":[{"role":"user"}]}' },
    { name: 'has messages that are not an array', text: '{"messages":{"0":{"role":"user"}}}' },
    {
      name: 'gives messages twice (JSON.parse keeps the last)',
      text: '{"messages":[{"content":"first"}],"messages":[{"content":"second"}]}',
    },
    {
      name: 'gives messages twice, once spelled with an escape',
      text: String.raw`{"messages":[{"content":"first"}],"m\u0065ssages":[{"content":"second"}]}`,
    },
    { name: 'holds a message that is not an object', text: '{"messages":[{"role":"user"},"text"]}' },
    { name: 'is not an object', text: '[{"messages":[{"role":"user"}]}]' },
  ])('gives nothing for a body that $name', ({ text }) => {
    JSON.parse(text);
    expect(spansOf(text)).toBeUndefined();
  });
});

describe('memberSpans: how many members each element of the array asked for has in the bytes', () => {
  it('counts the members of any object as JSON.parse reads its keys, however it is spaced', () => {
    fc.assert(
      fc.property(anyObject, fc.constantFrom(...spacings), (object, spacing) => {
        const bytes = Buffer.from(spacing({ messages: [object] }));
        expect(memberSpans(bytes, 0, 'messages')?.elements?.members[0]).toBe(Object.keys(object).length);
      }),
    );
  });

  it.each([
    { text: '{}', members: 0 },
    { text: '{"a":"x","a":"y"}', members: 2 },
    { text: '{"role":"user","c\\u006fntent":"A","content":"B"}', members: 3 },
    { text: '{"a":{"b":1,"c":[{"d":"}"}]},"e":"\\"}"}', members: 2 },
    { text: ' \n{ "a" : 1 , "b" : null }', members: 2 },
  ])('counts $members in $text, a key given twice counted twice', ({ text, members }) => {
    const bytes = Buffer.from(`{"messages":[${text}]}`);
    expect(memberSpans(bytes, 0, 'messages')?.elements?.members[0]).toBe(members);
  });
});

describe('memberSpans', () => {
  it('finds each member of any object, however it is spaced, as JSON.parse reads it', () => {
    fc.assert(
      fc.property(anyObject, fc.constantFrom(...spacings), (object, spacing) => {
        const bytes = Buffer.from(spacing(object));
        const spans = memberSpans(bytes, 0);
        const read = Object.fromEntries(
          [...(spans?.members ?? [])].map(([name, span]) => [
            name,
            span === undefined
              ? undefined
              : (JSON.parse(bytes.toString('utf8', span[0], span[1])) as unknown),
          ]),
        );
        expect(read).toEqual(JSON.parse(bytes.toString('utf8')));
      }),
    );
  });

  it.each([
    { text: '{"a":"x","a":"y","b":1}', given: { a: undefined, b: '1' } },
    {
      text: '{"role":"user","c\\u006fntent":"A","content":"B"}',
      given: { role: '"user"', content: undefined },
    },
    {
      text: ' \n{ "caf\\u00e9" : [1, {"}":"]"}] , "b" : null }',
      given: { café: '[1, {"}":"]"}]', b: 'null' },
    },
  ])('gives no span for a member given twice however it is spelled: $text', ({ text, given }) => {
    const bytes = Buffer.from(text);
    const spans = memberSpans(bytes, text.indexOf('{'));
    const read = Object.fromEntries(
      [...(spans?.members ?? [])].map(([name, span]) => [
        name,
        span && bytes.toString('utf8', span[0], span[1]),
      ]),
    );
    expect(read).toEqual(given);
  });

  it('finds the elements of the array asked for on the same walk, with their members in the bytes', () => {
    fc.assert(
      fc.property(
        fc.array(anyObject, { maxLength: 6 }),
        fc.constantFrom(...spacings),
        (messages, spacing) => {
          const bytes = Buffer.from(spacing({ model: 'm', messages, stream: false }));
          const elements = memberSpans(bytes, 0, 'messages')?.elements;
          const read = Array.from(
            { length: (elements?.spans.length ?? 0) / 2 },
            (_unused, index) =>
              JSON.parse(
                bytes.toString('utf8', elements?.spans[2 * index], elements?.spans[2 * index + 1]),
              ) as unknown,
          );
          expect(read).toEqual((JSON.parse(bytes.toString('utf8')) as { messages: unknown[] }).messages);
          expect(Array.from(elements?.members ?? [])).toEqual(
            messages.map((message) => Object.keys(message).length),
          );
        },
      ),
    );
    const twice = Buffer.from('{"messages":[{"role":"user","role":"user","content":"a"},{}],"x":1}');
    expect(Array.from(memberSpans(twice, 0, 'messages')?.elements?.members ?? [])).toEqual([3, 0]);
    const given = Buffer.from('{"messages":[{"a":1}],"m\\u0065ssages":[{"a":2}]}');
    expect(memberSpans(given, 0, 'messages')?.elements).toBeUndefined();
  });

  it('finds none in what is not an object', () => {
    expect(memberSpans(Buffer.from('[{"a":1}]'), 0)).toBeUndefined();
  });
});

describe('firstObjectSpan', () => {
  it('finds the first element of any array, however it is spaced, as JSON.parse reads it, whatever follows it', () => {
    fc.assert(
      fc.property(
        anyObject,
        fc.array(fc.jsonValue(), { maxLength: 4 }),
        fc.constantFrom(...spacings),
        (first, rest, spacing) => {
          const text = spacing({ content: [first, ...rest] });
          const bytes = Buffer.from(text);
          const span = firstObjectSpan(bytes, bytes.indexOf('['));
          expect(span).toBeDefined();
          // As JSON.parse reads the whole text (-0 is written as 0).
          const read = (JSON.parse(text) as { content: unknown[] }).content[0];
          expect(JSON.parse(bytes.toString('utf8', span?.[0], span?.[1]))).toEqual(read);
        },
      ),
    );
  });

  it.each(['[]', '[ ]', '["a",{}]', '[[{}]]', '[1]', '{"a":1}'])('finds none in %s', (text) => {
    expect(firstObjectSpan(Buffer.from(text), 0)).toBeUndefined();
  });
});
