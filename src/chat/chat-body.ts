// The upstream body of a chat completion whose messages the gateway chose: the request's own fields in
// their order, with `messages` replaced. A message whose JSON bytes are already known — a stored session
// message, or a message of a stateless request sent as the client wrote it — is copied as it is instead
// of being serialized and encoded again; those bytes are JSON of the same object (a client's own, with
// its spacing and escapes, which parse to it). Written into one buffer of the exact length: a
// conversation of thousands of messages is one copy of each, and a run of the client's messages sent
// one after the other one copy.
import type { ContextMessage } from '../context/types.js';
import { sourcePositions } from '../context/turns.js';
import { inPreviousPart, type KnownBytes } from '../known-bytes.js';
import { valueAt, withValuesAt, type JsonPath } from '../json-paths.js';
import {
  firstObjectSpan,
  memberSpans,
  memberValueSpan,
  objectElementSpans,
  skipSpace,
  type MemberSpans,
} from '../json-spans.js';

const comma = 0x2c;

export { inPreviousPart, type KnownBytes };

export function serializeChatBody(
  request: Readonly<Record<string, unknown>>,
  messages: readonly ContextMessage[],
  /** The JSON bytes of `messages[i]` when known (or inPreviousPart), aligned with `messages`. */
  knownBytes: readonly (KnownBytes | undefined)[] = [],
): Buffer {
  // The request's other fields, before and after where `messages` stands (at the end when it has none).
  const before: string[] = [];
  const after: string[] = [];
  let placed = false;
  for (const [name, value] of Object.entries(request)) {
    if (name === 'messages') {
      placed = true;
      continue;
    }
    const json = JSON.stringify(value) as string | undefined;
    if (json !== undefined) (placed ? after : before).push(`${JSON.stringify(name)}:${json}`);
  }
  const head = Buffer.from(`{${before.map((field) => `${field},`).join('')}"messages":[`);
  const tail = Buffer.from(`]${after.map((field) => `,${field}`).join('')}}`);
  return joined(head, messages, knownBytes, tail);
}

const openArray = Buffer.from('[');
const closeArray = Buffer.from(']');

/**
 * `values` as a JSON array between the JSON text `before` and `after` (the rest of an object it is a
 * member of), each value whose bytes are known (or inPreviousPart) copied, as serializeChatBody does.
 */
export function jsonArrayBytes(
  values: readonly unknown[],
  knownBytes: readonly (KnownBytes | undefined)[] = [],
  before = '',
  after = '',
): Buffer {
  return joined(
    before === '' ? openArray : Buffer.from(`${before}[`),
    values,
    knownBytes,
    after === '' ? closeArray : Buffer.from(`]${after}`),
  );
}

const openObject = Buffer.from('{');
const closeObject = Buffer.from('}');

/**
 * An object of `members`, in their order, as JSON: a member's value copied where its JSON bytes are
 * known, else serialized (left out when JSON.stringify leaves it out: undefined).
 */
export function jsonObjectBytes(
  members: ReadonlyArray<readonly [name: string, value: unknown, known: KnownBytes | undefined]>,
): Buffer {
  const parts: KnownBytes[] = [];
  for (const [name, value, known] of members) {
    const key = `${JSON.stringify(name)}:`;
    if (known !== undefined) {
      parts.push(Buffer.isBuffer(known) ? [key, known] : [key, ...known]);
      continue;
    }
    const json = JSON.stringify(value) as string | undefined;
    if (json !== undefined) parts.push([`${key}${json}`]);
  }
  return joined(openObject, parts, parts, closeObject);
}

/** `values` comma-separated between `head` and `tail`, in one buffer of the exact length. */
function joined(
  head: Buffer,
  values: readonly unknown[],
  knownBytes: readonly (KnownBytes | undefined)[],
  tail: Buffer,
): Buffer {
  const bytes: KnownBytes[] = [];
  values.forEach((value, index) => {
    const known = knownBytes[index];
    if (known !== inPreviousPart) bytes.push(known ?? Buffer.from(JSON.stringify(value)));
  });
  let length = head.length + tail.length + Math.max(0, bytes.length - 1);
  for (const part of bytes)
    if (Buffer.isBuffer(part)) length += part.length;
    else
      for (const piece of part) length += typeof piece === 'string' ? Buffer.byteLength(piece) : piece.length;
  const body = Buffer.allocUnsafe(length);
  let at = head.copy(body, 0);
  bytes.forEach((part, index) => {
    if (index > 0) body[at++] = comma;
    if (Buffer.isBuffer(part)) at += part.copy(body, at);
    else
      for (const piece of part)
        at += typeof piece === 'string' ? body.write(piece, at) : piece.copy(body, at);
  });
  tail.copy(body, at);
  return body;
}

/** The JSON bytes of each message sent, where known (serializeChatBody's `knownBytes`). */
export type KnownMessageBytes = (
  messages: readonly ContextMessage[],
) => ReadonlyArray<KnownBytes | undefined>;

/**
 * The client's own bytes of the messages of `body` (parsed from `raw`) that are sent as they came — the
 * same objects — for serializeChatBody. Found once, the first time they are asked for; none when the
 * bytes cannot say for sure which message is which (json-spans.ts).
 */
export function clientMessageBytes(raw: Buffer | undefined, body: unknown): KnownMessageBytes | undefined {
  const array = clientArray(raw, 'messages', body);
  return array && elementBytes(array, array.elements as ContextMessage[], (position) => position);
}

/**
 * `rest`'s known bytes, and for messages it knows none of among the first of `original`, the bytes
 * `leading` gives them (by position in `original`; a Responses chain's stored messages before the
 * client's input). The same objects only: a message the engine changed is written anew.
 */
export function withLeadingBytes(
  original: readonly ContextMessage[],
  leading: ReadonlyArray<KnownBytes | undefined>,
  rest: KnownMessageBytes | undefined,
): KnownMessageBytes | undefined {
  if (!leading.some((bytes) => bytes !== undefined)) return rest;
  return (messages) => {
    const known = rest?.(messages) ?? [];
    const positions = sourcePositions(original, messages);
    return Array.from(
      positions,
      (position, at) => known[at] ?? (position < 0 ? undefined : leading[position]),
    );
  };
}

/**
 * A top-level array of the client's body: its elements as JSON.parse read them, and where each lies in
 * the client's bytes — read once, the first time they are asked for (json-spans.ts); undefined when
 * the bytes cannot say for sure which element is which.
 */
export interface ClientArray {
  raw: Buffer;
  elements: readonly unknown[];
  spans(): Int32Array | undefined;
  /** How many members each element has in the bytes (a key given twice counted twice), with spans(). */
  members(): Int32Array | undefined;
  /** Where the value of each member of the body lies, by name (undefined for one given twice), from the same walk. */
  bodyMembers(): MemberSpans['members'] | undefined;
}

export function clientArray(
  raw: Buffer | undefined,
  key: 'input' | 'messages',
  body: unknown,
): ClientArray | undefined {
  const elements = (body as Record<string, unknown> | null | undefined)?.[key];
  if (raw === undefined || !Array.isArray(elements)) return undefined;
  let found: MemberSpans | null | undefined = null;
  const read = (): MemberSpans | undefined => {
    if (found === null) found = memberSpans(raw, skipSpace(raw, 0), key);
    return found;
  };
  const known = () => {
    const spans = read()?.elements;
    return spans?.members.length === elements.length ? spans : undefined;
  };
  return {
    raw,
    elements,
    spans: () => known()?.spans,
    members: () => known()?.members,
    bodyMembers: () => read()?.members,
  };
}

/**
 * A text that names a bridged request's chat tools exactly: `api`, then the client's bytes of each of
 * `names`, the members of its body they are made from (docs/budgeting.md, tool definitions). Two
 * requests with the same text have the same tools, so the planner knows the set without writing it
 * out (chat/context-planner.ts). Undefined when the bytes cannot say which member JSON.parse read.
 */
export function toolsKeyOf(
  array: ClientArray | undefined,
  api: string,
  names: readonly string[],
): string | undefined {
  const members = array?.bodyMembers();
  if (array === undefined || members === undefined) return undefined;
  // No JSON value holds a NUL byte, so the parts cannot run into each other ("\u0001": none given).
  const parts = [api];
  for (const name of names) {
    if (!members.has(name)) {
      parts.push('\u0001');
      continue;
    }
    const span = members.get(name);
    if (span === undefined) return undefined;
    parts.push(array.raw.toString('latin1', span[0], span[1]));
  }
  // Joined: one flat string (flat-string.ts), which the text cache's hash and comparison read as it is;
  // one added up from pieces is copied into one the first time they read it.
  return parts.join('\u0000');
}

/** A string of a bridged message that is a string of the element it was made from, as it came. */
export interface StringSource {
  /** Where it stands in the message (`['content']`, `['content', 0, 'text']`). */
  inMessage: JsonPath;
  /** Where it stands in the element (`['output']`, `['content', 0, 'text']`). */
  inElement: JsonPath;
}

/** What a bridge says of the messages it made (responses/bridge.ts, messages/bridge.ts). */
export interface BridgedSources {
  /** The element of the client's array each message was made from; -1 for none. */
  origins: Int32Array;
  /**
   * For each message, its strings that are strings of its element as it came (a tool result's text, a
   * text part's text, an image's URL); undefined or empty for none.
   */
  strings?: ReadonlyArray<readonly StringSource[] | undefined>;
}

/**
 * A string shorter than this is written anew with the rest of its message: finding it in the client's
 * bytes and writing the fields around it costs more than writing it (10,000 tool results of 512 ASCII
 * characters: 25 ms copied, 16 written; of 2,048: 27 copied, 50 written).
 */
const spliceMinChars = 1024;

/**
 * For a bridged request (a Responses or Messages body made into chat messages): the client's bytes of
 * what it sent as it came. A message that is an element of its array `key` written as a chat message
 * already — an object of exactly `role` and `content`, a string, and the same in the message made of
 * it (`{"role":"user","content":"…"}` is all three APIs' plain message) — is copied whole; of a
 * message whose strings are strings of its element (a tool result's text, a text part's, an image's
 * URL: `strings`), those of 1,024 characters or more are copied and the rest is written anew.
 * `messages` are the chat request's messages, those the bridge made among them from `offset` on.
 * Nothing is copied from bytes that give a key on the way twice.
 */
export function bridgedMessageBytes(
  array: ClientArray | undefined,
  messages: readonly unknown[],
  offset: number,
  sources: BridgedSources,
): KnownMessageBytes | undefined {
  if (array === undefined) return undefined;
  const { raw, elements } = array;
  const { origins, strings = [] } = sources;
  const originOf = (position: number): number =>
    position < offset ? -1 : (origins[position - offset] ?? -1);
  const plainElementOf = (position: number): number => {
    const origin = originOf(position);
    if (origin < 0) return -1;
    const element = elements[origin] as Record<string, unknown> | undefined;
    const message = messages[position] as Record<string, unknown>;
    const plain =
      element !== undefined &&
      typeof element.content === 'string' &&
      element.content === message.content &&
      element.role === message.role &&
      Object.keys(element).length === 2 &&
      Object.keys(message).length === 2;
    return plain ? origin : -1;
  };
  // Where the members and elements inside elements lie: read once, however many strings of one element
  // are copied (10,000 tool results of one message).
  const found: SpanCache = { members: new Map(), arrays: new Map() };
  const spliced = (position: number, spans: Int32Array): KnownBytes | undefined => {
    const origin = originOf(position);
    const sourced = position < offset ? undefined : strings[position - offset];
    if (origin < 0 || sourced === undefined || sourced.length === 0) return undefined;
    const message = messages[position];
    const copies: StringCopy[] = [];
    for (const { inMessage, inElement } of sourced) {
      // The string must be the one at `inElement` in the element JSON.parse read.
      const value = valueAt(elements[origin], inElement);
      if (typeof value !== 'string' || value.length < spliceMinChars || value !== valueAt(message, inMessage))
        continue;
      const span = valueSpanAt(raw, spans[2 * origin] as number, inElement, found);
      if (span !== undefined) copies.push({ path: inMessage, span });
    }
    return copies.length === 0 ? undefined : withStringsOf(raw, message, copies);
  };
  return elementBytes(array, messages as ContextMessage[], plainElementOf, 2, spliced);
}

/**
 * A message the bridge made of a string of the client's body outside its message array — a Responses
 * request's `instructions` or string `input`, a Messages request's string `system` or its one text block
 * — with that string copied from the client's bytes: `inBody` is where the string stands in the body,
 * `inMessage` where in the message. Undefined (the message is written anew) when the string is shorter
 * than spliceMinChars, is not the same string in both, or the bytes cannot say for sure where it is (a
 * member given twice). An agent's instructions (tens of KB, sent with every request) are not serialized
 * again for each.
 */
export function bodyStringBytes(
  raw: Buffer | undefined,
  body: unknown,
  inBody: JsonPath,
  message: unknown,
  inMessage: JsonPath,
): KnownBytes | undefined {
  const value = valueAt(body, inBody);
  if (raw === undefined || typeof value !== 'string' || value.length < spliceMinChars) return undefined;
  if (value !== valueAt(message, inMessage)) return undefined;
  const span = valueSpanAt(raw, skipSpace(raw, 0), inBody, { members: new Map(), arrays: new Map() });
  return span === undefined ? undefined : withStringsOf(raw, message, [{ path: inMessage, span }]);
}

/**
 * Where the members of objects (by where each opens, and the member's name) and the elements of arrays
 * (by where each opens) lie in the client's bytes, once read.
 */
interface SpanCache {
  members: Map<string, readonly [number, number] | undefined>;
  arrays: Map<number, Int32Array | undefined>;
}

/** Where the value at `path` lies in the value that opens at `at`; undefined when the bytes cannot say for sure. */
function valueSpanAt(
  raw: Buffer,
  at: number,
  path: JsonPath,
  { members, arrays }: SpanCache,
): readonly [number, number] | undefined {
  let span: readonly [number, number] = [at, at];
  for (const step of path) {
    if (typeof step === 'string') {
      if (raw[span[0]] !== 0x7b) return undefined;
      const key = `${span[0]}:${step}`;
      if (!members.has(key)) members.set(key, memberValueSpan(raw, span[0], step));
      const member = members.get(key);
      if (member === undefined) return undefined;
      span = member;
      continue;
    }
    // An array's first element is found alone while its other elements are not asked for: a message's
    // one content block does not need the spans of all (each found costs two typed arrays).
    if (step === 0 && !arrays.has(span[0])) {
      const first = firstObjectSpan(raw, span[0]);
      if (first === undefined) return undefined;
      span = first;
      continue;
    }
    if (!arrays.has(span[0])) arrays.set(span[0], objectElementSpans(raw, span[0]));
    const spans = arrays.get(span[0]);
    if (spans === undefined || 2 * step + 1 >= spans.length) return undefined;
    span = [spans[2 * step] as number, spans[2 * step + 1] as number];
  }
  return span;
}

/**
 * The bytes of the messages sent that are elements of the client's `array`: message `position` of
 * `original` is element `elementOf(position)` (-1: none). With `members`, an element is copied only
 * when its bytes hold that many members (none given twice). `spliced` gives the bytes of a message sent
 * as it came that is no element (the spans of the elements given).
 */
function elementBytes(
  array: ClientArray,
  original: readonly ContextMessage[],
  elementOf: (position: number) => number,
  members?: number,
  spliced?: (position: number, spans: Int32Array) => KnownBytes | undefined,
): KnownMessageBytes {
  const { raw } = array;
  return (messages) => {
    const positions = sourcePositions(original, messages);
    const elements = Array.from(positions, (position) => (position < 0 ? -1 : elementOf(position)));
    // None sent as it came (a conversation rewritten whole): the body need not be read for them.
    if (!(spliced === undefined ? elements : positions).some((index) => index >= 0)) return [];
    const found = array.spans();
    const counts = array.members();
    if (found === undefined || counts === undefined) return [];
    const known = new Array<KnownBytes | undefined>(positions.length);
    // A run of the client's elements sent one after the other: one part, from the first one's start to
    // the last one's end (the commas and spaces between them are the client's).
    let runAt = -1;
    elements.forEach((element, at) => {
      const start = found[2 * element] as number;
      if (element < 0 || (members !== undefined && counts[element] !== members)) {
        runAt = -1;
        const position = positions[at] as number;
        if (spliced !== undefined && position >= 0) known[at] = spliced(position, found);
        return;
      }
      const end = found[2 * element + 1] as number;
      if (runAt >= 0 && elements[at - 1] === element - 1) {
        known[runAt] = raw.subarray(found[2 * (elements[runAt] as number)] as number, end);
        known[at] = inPreviousPart;
        return;
      }
      runAt = at;
      known[at] = raw.subarray(start, end);
    });
    return known;
  };
}

/** A string of a value to copy from the client's bytes: where it stands in the value, and in the bytes. */
interface StringCopy {
  path: JsonPath;
  span: readonly [number, number];
}

/** What stands in for copy `index` while the rest of its value is written, and how it reads in JSON. */
const placeholder = (index: number): string => `\u0000ctxgate copy ${index}\u0000`;
const placeholderStart = JSON.stringify(placeholder(0)).split('0\\u0000')[0] as string;
const placeholderEnd = '\\u0000"';

/**
 * `value` as JSON, the string at each copy's path copied from `raw` at its span (a JSON string there,
 * which the caller has checked parses to it) and the rest written anew; undefined when a span holds no
 * string, or a placeholder cannot be told apart from the value's own strings. Linear in the value and
 * its copies, however many (10,000 text parts of one message).
 */
function withStringsOf(
  raw: Buffer,
  value: unknown,
  copies: readonly StringCopy[],
): ReadonlyArray<Buffer | string> | undefined {
  if (copies.some(({ path, span }) => path.length === 0 || raw[span[0]] !== 0x22)) return undefined;
  const json = JSON.stringify(
    withValuesAt(
      value,
      copies.map(({ path }) => path),
      placeholder,
    ),
  );
  const seen = new Uint8Array(copies.length);
  const pieces: Array<Buffer | string> = [];
  let from = 0;
  for (let at = json.indexOf(placeholderStart); at >= 0; at = json.indexOf(placeholderStart, from)) {
    const digits = at + placeholderStart.length;
    const close = json.indexOf(placeholderEnd, digits);
    const index = close < 0 ? -1 : Number(json.slice(digits, close));
    // A string of the value's own that reads like a placeholder: the value is written whole.
    if (!Number.isInteger(index) || index < 0 || index >= copies.length || seen[index] === 1)
      return undefined;
    seen[index] = 1;
    const span = (copies[index] as StringCopy).span;
    pieces.push(json.slice(from, at), raw.subarray(span[0], span[1]));
    from = close + placeholderEnd.length;
  }
  if (seen.includes(0)) return undefined;
  pieces.push(json.slice(from));
  return pieces;
}

/**
 * An element shorter than this (in the client's bytes) is written anew as its record: copying it
 * costs more (10,000 items of 100 characters: 11 ms copied, 8 written; of 512: 13 copied, 20 written).
 */
const wholeMinBytes = 256;

/**
 * The JSON of records made of the elements of the client's `array` (a Responses request's input items
 * as they are stored: an id and a type added, fields the API does not define left out), where the
 * client's bytes hold it; undefined where not. Record `i` is made of element `origins[i]`:
 * - when it is that element with only an `id` (and a `type`) put before its fields — the element gave
 *   neither, and nothing of it was left out — it is those two fields and the element's bytes (its
 *   fields in the client's order), for an element of 256 bytes or more;
 * - else its string field `fields[i]` is copied, when the element's is the same string, and its other
 *   fields are written anew.
 */
export function recordBytes(
  array: ClientArray | undefined,
  records: ReadonlyArray<Record<string, unknown>>,
  origins: Int32Array,
  fields: ReadonlyArray<string | undefined>,
): Array<KnownBytes | undefined> {
  const spans = array?.spans();
  if (array === undefined || spans === undefined) return [];
  const { raw, elements } = array;
  return records.map((record, index) => {
    const origin = origins[index] ?? -1;
    if (origin < 0) return undefined;
    const element = elements[origin] as Record<string, unknown>;
    const start = spans[2 * origin] as number;
    const end = spans[2 * origin + 1] as number;
    const head = end - start < wholeMinBytes ? undefined : addedFields(record, element);
    if (head !== undefined) return [Buffer.from(head), raw.subarray(start + 1, end)];
    const field = fields[index];
    const value = field === undefined ? undefined : element[field];
    if (field === undefined || typeof value !== 'string' || value.length < spliceMinChars) return undefined;
    if (value !== record[field]) return undefined;
    const span = memberValueSpan(raw, start, field);
    return span === undefined ? undefined : withStringsOf(raw, record, [{ path: [field], span }]);
  });
}

/**
 * `{"id":…,` — and `"type":…,` when the element gives none — when `record` is `element` with those put
 * before its fields: followed by the element's bytes after its opening brace, the record's JSON.
 */
function addedFields(record: Record<string, unknown>, element: Record<string, unknown>): string | undefined {
  if (Object.hasOwn(element, 'id')) return undefined;
  const addsType = !Object.hasOwn(element, 'type');
  const keys = Object.keys(record);
  const names = Object.keys(element);
  if (keys[0] !== 'id' || (addsType && keys[1] !== 'type')) return undefined;
  if (names.length === 0 || keys.length !== names.length + (addsType ? 2 : 1)) return undefined;
  for (const name of names) if (!sameValue(record[name], element[name])) return undefined;
  return addsType
    ? `{"id":${JSON.stringify(record.id)},"type":${JSON.stringify(record.type)},`
    : `{"id":${JSON.stringify(record.id)},`;
}

/**
 * Whether a field of a record holds what the element's did: the same value, or an array of the same
 * values, or of objects with the same fields (content parts, copied with the fields their type defines).
 */
function sameValue(kept: unknown, given: unknown): boolean {
  if (kept === given) return true;
  if (!Array.isArray(kept) || !Array.isArray(given) || kept.length !== given.length) return false;
  return kept.every((part: unknown, index) => {
    const original: unknown = given[index];
    if (part === original) return true;
    if (typeof part !== 'object' || part === null || typeof original !== 'object' || original === null)
      return false;
    const names = Object.keys(original);
    return (
      Object.keys(part).length === names.length &&
      names.every(
        (name) => (part as Record<string, unknown>)[name] === (original as Record<string, unknown>)[name],
      )
    );
  });
}
