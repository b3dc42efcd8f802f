// How strict JSON parsers answer a body holding the escape of half a UTF-16 surrogate pair that stands
// alone: yyjson's words with Python's position (Anthropic: "The request body is not valid JSON: no low
// surrogate in string: line 1 column 28642 (char 28641)", anthropics/claude-code#5934, #1762), serde's
// (DeepSeek: "Failed to parse the request body as JSON: messages[319].content: lone leading surrogate in
// hex escape", JohnnyZ93/oai-compatible-copilot#271). The strict fakes refuse what these refuse.

export interface LoneHalf {
  /** yyjson's words for it. */
  reason:
    'no low surrogate in string' | 'invalid low surrogate in string' | 'invalid high surrogate in string';
  /** Where it stands in the text (0-based, in characters). */
  at: number;
}

/** The first escape of a lone surrogate half in JSON text, if any. */
export function firstLoneHalf(json: string): LoneHalf | undefined {
  const escape = /(\\+)u([0-9a-fA-F]{4})/g;
  for (let match = escape.exec(json); match !== null; match = escape.exec(json)) {
    const slashes = (match[1] as string).length;
    // An even run is escaped backslashes: the `u` after them is text.
    if (slashes % 2 === 0) continue;
    const at = match.index + slashes - 1;
    const unit = Number.parseInt(match[2] as string, 16);
    if (unit >= 0xdc00 && unit <= 0xdfff) return { reason: 'invalid high surrogate in string', at };
    if (unit < 0xd800 || unit > 0xdbff) continue;
    const after = /^\\u([0-9a-fA-F]{4})/.exec(json.slice(at + 6, at + 12));
    if (after === null) return { reason: 'no low surrogate in string', at };
    const low = Number.parseInt(after[1] as string, 16);
    if (low < 0xdc00 || low > 0xdfff) return { reason: 'invalid low surrogate in string', at };
    // The pair is whole: go on after its low half.
    escape.lastIndex = at + 12;
  }
  return undefined;
}
