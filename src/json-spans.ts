// Where the elements of a request body's `messages` (or `input`) array lie in the client's bytes, and
// the members of an object among them, so that what the gateway sends or stores as it came is copied
// from them instead of serialized and encoded again (chat/chat-body.ts). Read from bytes JSON.parse has
// already accepted; pure. Whatever could make the bytes and the parsed value disagree — a member given
// twice (JSON.parse keeps the last; a key spelled with escapes is read as JSON.parse reads it), an
// element that is not an object — gives no span at all, and the value is serialized.

const quote = 0x22;
const backslash = 0x5c;
const comma = 0x2c;
const colon = 0x3a;
const openArray = 0x5b;
const closeArray = 0x5d;
const openObject = 0x7b;
const closeObject = 0x7d;

/** The bytes JSON allows between tokens. */
function isJsonSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Past the JSON whitespace at `at`. */
export function skipSpace(bytes: Buffer, at: number): number {
  let index = at;
  while (isJsonSpace(bytes[index])) index++;
  return index;
}

/**
 * How far a string is read byte by byte before its closing quote is searched for with indexOf: a key or
 * a short value ends within it, and a call of indexOf costs as much as reading some 30 bytes (68 ns a
 * call on Node 26, 31 on Node 20; a Claude Code request has thousands of strings).
 */
const shortString = 24;

/** Just past the JSON string whose opening quote is at `at`. */
function stringEnd(bytes: Buffer, at: number): number {
  const limit = Math.min(bytes.length, at + 1 + shortString);
  for (let index = at + 1; index < limit; index++) {
    const byte = bytes[index];
    if (byte === backslash) break;
    if (byte === quote) return index + 1;
  }
  let from = at + 1;
  for (;;) {
    const end = bytes.indexOf(quote, from);
    if (end === -1) return bytes.length;
    let backslashes = 0;
    while (bytes[end - 1 - backslashes] === backslash) backslashes++;
    if (backslashes % 2 === 0) return end + 1;
    from = end + 1;
  }
}

/** Just past the JSON value that starts at `at`. */
function valueEnd(bytes: Buffer, at: number): number {
  const first = bytes[at];
  if (first === quote) return stringEnd(bytes, at);
  if (first === openArray || first === openObject) return containerEnd(bytes, at);
  // A number, true, false or null.
  let index = at;
  while (index < bytes.length) {
    const byte = bytes[index];
    if (byte === comma || byte === closeArray || byte === closeObject || isJsonSpace(byte)) break;
    index++;
  }
  return index;
}

/**
 * Just past the array or object that opens at `at`; with `members`, how many members (or elements) it
 * has in the bytes is written to `members[slot]` — its commas outside its values, counted on the same
 * walk (a key given twice counted twice).
 */
function containerEnd(bytes: Buffer, at: number, members?: Int32Array, slot = 0): number {
  let depth = 0;
  let commas = 0;
  let empty = true;
  let index = at;
  while (index < bytes.length) {
    const byte = bytes[index] as number;
    if (byte === quote) {
      if (depth === 1) empty = false;
      index = stringEnd(bytes, index);
      continue;
    }
    if (byte === openArray || byte === openObject) {
      if (depth === 1) empty = false;
      depth++;
    } else if (byte === closeArray || byte === closeObject) {
      depth--;
      if (depth === 0) {
        if (members !== undefined) members[slot] = empty ? 0 : commas + 1;
        return index + 1;
      }
    } else if (byte === comma && depth === 1) commas++;
    index++;
  }
  return index;
}

/**
 * The byte ranges [start, end) of the elements of the top-level object's array member `key`, in
 * order, as pairs; undefined when the bytes cannot say for sure which array JSON.parse read: the
 * member missing, not an array, or given twice (however its key is spelled), or an element that is not
 * an object (memberSpans). `bytes` must be JSON that JSON.parse accepted (a byte-order mark removed).
 */
export function arrayElementSpans(bytes: Buffer, key: string): Int32Array | undefined {
  return memberSpans(bytes, skipSpace(bytes, 0), key)?.elements?.spans;
}

/**
 * Calls `member` with where each member of the object that opens at `at` has its key and its value
 * (`member` returns where the value ends; -1 stops the walk), and returns where the walk stopped: the
 * object's closing brace, or the byte that was not what JSON has there.
 */
function walkMembers(
  bytes: Buffer,
  at: number,
  member: (keyStart: number, keyEnd: number, valueStart: number) => number,
): number {
  let index = skipSpace(bytes, at + 1);
  while (bytes[index] === quote) {
    const keyEnd = stringEnd(bytes, index);
    const colonAt = skipSpace(bytes, keyEnd);
    if (bytes[colonAt] !== colon) return colonAt;
    const end = member(index, keyEnd, skipSpace(bytes, colonAt + 1));
    if (end < 0) return end;
    index = skipSpace(bytes, end);
    if (bytes[index] !== comma) break;
    index = skipSpace(bytes, index + 1);
  }
  return index;
}

/**
 * Whether the JSON string at [keyStart, keyEnd) is `key` (plain ASCII): compared byte for byte, without
 * a copy; a key with an escape in it is read as JSON.parse reads it, and may spell `key`.
 */
function isKey(bytes: Buffer, keyStart: number, keyEnd: number, key: string): boolean {
  const length = keyEnd - keyStart - 2;
  let plain = true;
  for (let at = keyStart + 1; at < keyEnd - 1; at++)
    if (bytes[at] === backslash) {
      plain = false;
      break;
    }
  if (!plain) return JSON.parse(bytes.toString('utf8', keyStart, keyEnd)) === key;
  if (length !== key.length) return false;
  for (let index = 0; index < length; index++)
    if (bytes[keyStart + 1 + index] !== key.charCodeAt(index)) return false;
  return true;
}

/** Where the objects of an array lie in the bytes, as pairs, and how many members each has there. */
export interface ElementSpans {
  spans: Int32Array;
  members: Int32Array;
}

/**
 * The spans of the objects of the array that opens at `at`, how many members each has in the bytes (a
 * key given twice counted twice), and where the array ends; undefined for any other element.
 */
function elementSpans(bytes: Buffer, at: number): (ElementSpans & { end: number }) | undefined {
  let spans = new Int32Array(16);
  let members = new Int32Array(8);
  let count = 0;
  let index = skipSpace(bytes, at + 1);
  if (bytes[index] === closeArray)
    return { spans: spans.subarray(0, 0), members: members.subarray(0, 0), end: index + 1 };
  for (;;) {
    if (bytes[index] !== openObject) return undefined;
    if (count + 2 > spans.length) {
      const grown = new Int32Array(spans.length * 2);
      grown.set(spans);
      spans = grown;
      const grownMembers = new Int32Array(members.length * 2);
      grownMembers.set(members);
      members = grownMembers;
    }
    const end = containerEnd(bytes, index, members, count / 2);
    spans[count++] = index;
    spans[count++] = end;
    index = skipSpace(bytes, end);
    if (bytes[index] === closeArray)
      return { spans: spans.subarray(0, count), members: members.subarray(0, count / 2), end: index + 1 };
    if (bytes[index] !== comma) return undefined;
    index = skipSpace(bytes, index + 1);
  }
}

/**
 * Where the value of `key` lies in the object that opens at `at`: [start, end), or undefined when the
 * object has no such member or gives it twice (however it is spelled: JSON.parse keeps the last).
 */
export function memberValueSpan(bytes: Buffer, at: number, key: string): [number, number] | undefined {
  let found: [number, number] | undefined;
  let twice = false;
  walkMembers(bytes, at, (keyStart, keyEnd, valueStart) => {
    const end = valueEnd(bytes, valueStart);
    if (isKey(bytes, keyStart, keyEnd, key)) {
      twice = found !== undefined;
      found = [valueStart, end];
    }
    return twice ? -1 : end;
  });
  return twice ? undefined : found;
}

/**
 * The spans of the elements of the array that opens at `at`, as pairs; undefined when an element is
 * not an object.
 */
export function objectElementSpans(bytes: Buffer, at: number): Int32Array | undefined {
  return bytes[at] === openArray ? elementSpans(bytes, at)?.spans : undefined;
}

/** The span of the first element of the array that opens at `at`; undefined when it is not an object. */
export function firstObjectSpan(bytes: Buffer, at: number): [number, number] | undefined {
  if (bytes[at] !== openArray) return undefined;
  const start = skipSpace(bytes, at + 1);
  return bytes[start] === openObject ? [start, containerEnd(bytes, start)] : undefined;
}

/** Where the members of an object lie in its bytes (memberSpans). */
export interface MemberSpans {
  /** Each member's value, [start, end), by its name as JSON.parse reads it; undefined for a name given twice. */
  members: Map<string, readonly [number, number] | undefined>;
  /**
   * The spans of the elements of the array member named when asked for, as pairs, and how many members
   * each has in the bytes; undefined when it is missing, given twice, or has an element that is not an
   * object.
   */
  elements?: ElementSpans | undefined;
}

/**
 * Where the value of each member of the object that opens at `at` lies, and — for the member named
 * `arrayKey` — where its elements lie: one walk over the object. Undefined when the bytes are not an
 * object's.
 */
export function memberSpans(bytes: Buffer, at: number, arrayKey?: string): MemberSpans | undefined {
  if (bytes[at] !== openObject) return undefined;
  const members = new Map<string, readonly [number, number] | undefined>();
  let elements: MemberSpans['elements'];
  const end = walkMembers(bytes, at, (keyStart, keyEnd, valueStart) => {
    const name = keyName(bytes, keyStart, keyEnd);
    const found =
      name === arrayKey && !members.has(name) && bytes[valueStart] === openArray
        ? elementSpans(bytes, valueStart)
        : undefined;
    const valueEnds = found?.end ?? valueEnd(bytes, valueStart);
    if (name === arrayKey) elements = members.has(name) ? undefined : found;
    members.set(name, members.has(name) ? undefined : [valueStart, valueEnds]);
    return valueEnds;
  });
  return bytes[end] === closeObject ? { members, elements } : undefined;
}

/** The JSON string at [keyStart, keyEnd) as JSON.parse reads it: copied as it is when it has no escape. */
function keyName(bytes: Buffer, keyStart: number, keyEnd: number): string {
  for (let at = keyStart + 1; at < keyEnd - 1; at++)
    if (bytes[at] === backslash) return JSON.parse(bytes.toString('utf8', keyStart, keyEnd)) as string;
  return bytes.toString('utf8', keyStart + 1, keyEnd - 1);
}
