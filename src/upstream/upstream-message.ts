// An upstream's error message as it may be logged: a provider may quote the client's input in it
// ("Invalid value for 'content': '<the text>'"), and message text never reaches the logs. What is
// quoted is elided, then every word that also occurs in the text the request carried, and the rest is
// cut short. What is left is the provider's own wording: enough to tell a bad key from a bad schema.

const maxChars = 200;
/** Shorter words ("the", "is", "in") say nothing of the client's text; longer ones may. */
const minimumWordChars = 4;

/** The words of `message` that occur anywhere in `texts`, found in one pass over each text. */
function wordsFoundIn(words: ReadonlySet<string>, texts: Iterable<string>): Set<string> {
  const found = new Set<string>();
  if (words.size === 0) return found;
  const pattern = new RegExp(
    [...words].map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'),
    'g',
  );
  for (const text of texts) {
    for (const match of text.matchAll(pattern)) found.add(match[0]);
    if (found.size === words.size) break;
  }
  return found;
}

/**
 * The message without what it quotes of the request: quoted passages and every word of four characters
 * or more that occurs in `texts` (the request's message text) become "…"; at most 200 characters.
 */
export function upstreamMessageForLog(message: string, texts: Iterable<string>): string {
  const unquoted = message.slice(0, 4 * maxChars).replace(/(['"`])[^'"`]*?\1/g, '$1…$1');
  const words = new Set(unquoted.match(new RegExp(`[\\p{L}\\p{N}_-]{${minimumWordChars},}`, 'gu')) ?? []);
  const echoed = wordsFoundIn(words, texts);
  const redacted =
    echoed.size === 0
      ? unquoted
      : unquoted.replace(new RegExp(`[\\p{L}\\p{N}_-]{${minimumWordChars},}`, 'gu'), (word) =>
          echoed.has(word) ? '…' : word,
        );
  return redacted.slice(0, maxChars);
}

/** The text a chat request carries, part by part: message contents and tool call arguments. */
export function* chatTextsOf(messages: ReadonlyArray<Record<string, unknown>>): Generator<string> {
  for (const message of messages) {
    const content = message.content;
    if (typeof content === 'string') yield content;
    else if (Array.isArray(content))
      for (const part of content as Array<{ text?: unknown }>)
        if (typeof part?.text === 'string') yield part.text;
    const calls = message.tool_calls;
    if (Array.isArray(calls))
      for (const call of calls as Array<{ function?: { arguments?: unknown } }>)
        if (typeof call?.function?.arguments === 'string') yield call.function.arguments;
  }
}
