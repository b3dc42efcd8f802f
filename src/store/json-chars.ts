// What a value takes as JSON, without writing it: the memory stores weigh what they hold by it, and
// writing a record of tens of megabytes only to measure it would cost as much CPU as the request it
// came with (docs/configuration.md, responses.memory_mb).

/**
 * The length of `JSON.stringify(value)`, give or take its escapes (each string is counted as its
 * characters and two quotes). Iterative: a deep value costs no stack.
 */
export function jsonChars(value: unknown): number {
  let chars = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') chars += next.length + 2;
    else if (typeof next === 'number' || typeof next === 'boolean') chars += String(next).length;
    else if (next === null) chars += 4;
    else if (Array.isArray(next)) {
      // Brackets and commas; a hole or an undefined element is written as null.
      chars += 2 + Math.max(0, next.length - 1);
      for (const element of next) pending.push(element === undefined ? null : element);
    } else if (typeof next === 'object') {
      let fields = 0;
      for (const key in next) {
        if (!Object.hasOwn(next, key)) continue;
        const field = (next as Record<string, unknown>)[key];
        if (field === undefined || typeof field === 'function') continue;
        fields++;
        chars += key.length + 3;
        pending.push(field);
      }
      chars += 2 + Math.max(0, fields - 1);
    }
  }
  return chars;
}
