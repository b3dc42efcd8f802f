// Cutting text the gateway writes (a note's first characters, a passage of a long line, a quoted
// message) without cutting a character in two. A JavaScript string counts UTF-16 code units: an emoji,
// or any character past U+FFFF, is two, and a cut between them leaves a lone surrogate half — which
// JSON.stringify writes as `\ud83d` and strict providers refuse with the whole body (Anthropic: "The
// request body is not valid JSON: no low surrogate in string"; docs/budgeting.md).

/** Whether the code unit at `index` is the low half of a pair whose high half is right before it. */
function splitsPair(text: string, index: number): boolean {
  if (index <= 0 || index >= text.length) return false;
  const high = text.charCodeAt(index - 1);
  const low = text.charCodeAt(index);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}

/**
 * `text.slice(start, end)` (negative indices as slice takes them) with neither end inside a character:
 * a cut that would fall between the halves of a pair moves inwards, leaving the character out. At most
 * one code unit shorter at each end than the slice.
 */
export function sliceWhole(text: string, start: number, end = text.length): string {
  let from = start < 0 ? Math.max(0, text.length + start) : Math.min(start, text.length);
  let to = end < 0 ? Math.max(0, text.length + end) : Math.min(end, text.length);
  if (splitsPair(text, from)) from++;
  if (splitsPair(text, to)) to--;
  return from >= to ? '' : text.slice(from, to);
}
