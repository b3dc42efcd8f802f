// The recall tool (docs/budgeting.md#recall): a function the gateway offers the model when fitting the
// window left something out — turns dropped or summarized, tool results masked or cut — and answers
// itself, from the messages the model was not shown whole: the model asks for a detail, the gateway
// searches those messages and continues the call with the passages that match. The client never sees
// the tool, its calls or its results. This module is the pure part: the tool, which messages it
// searches, the search, and the answers a call gets. Pure.
import { isSystemRole, messageText } from './turns.js';
import type { ContextMessage, Tokenizer } from './types.js';
import { sliceWhole } from '../text-slices.js';

export const recallToolName = 'ctxgate_recall';

/** The definition the gateway adds to the request's tools. */
export const recallTool = Object.freeze({
  type: 'function',
  function: {
    name: recallToolName,
    description:
      'Search the earlier part of this conversation that is not shown above (messages omitted or ' +
      'summarized to fit the context window, tool results masked or cut short) and get back the exact ' +
      'passages that match. Use it when you need a detail from earlier — a name, number, code, path, ' +
      'decision or quote — that the summary or the notices do not give.',
    parameters: {
      type: 'object',
      properties: {
        query: {
          type: 'string',
          description: 'The words, names, numbers or identifiers to look for.',
        },
      },
      required: ['query'],
    },
  },
});

/** A message the model was not shown whole: its place in the conversation's history, its role, its text. */
export interface RecallSource {
  position: number;
  role: string;
  /** The tool a tool result came from, when known. */
  tool?: string | undefined;
  text: string;
}

/** Whether a message's tool calls include the recall tool's. */
export function isRecallCall(call: { function?: { name?: string } | undefined }): boolean {
  return call.function?.name === recallToolName;
}

/**
 * Whether a request may be offered the tool: the client's tool choice leaves the model free to call
 * a tool of its own choosing, one answer is asked for, and no tool of the client's has its name.
 */
export function recallAllowed(request: { tools?: unknown; tool_choice?: unknown; n?: unknown }): boolean {
  if (request.tool_choice !== undefined && request.tool_choice !== null && request.tool_choice !== 'auto')
    return false;
  if (typeof request.n === 'number' && request.n > 1) return false;
  if (request.tools !== undefined && request.tools !== null && !Array.isArray(request.tools)) return false;
  return !((request.tools as Array<{ function?: { name?: unknown } }> | undefined) ?? []).some(
    (tool) => tool?.function?.name === recallToolName,
  );
}

/** A message as the search reads it: its text, and its tool calls written out. */
function searchableText(message: ContextMessage): string {
  const calls = (message.tool_calls ?? [])
    .map((call) => `${call.function?.name ?? 'tool'}(${call.function?.arguments ?? ''})`)
    .join('\n');
  const text = messageText(message);
  return calls === '' ? text : text === '' ? calls : `${text}\n${calls}`;
}

/**
 * The messages of `conversation` the model was not shown whole in `rendered`: those not sent at all
 * (dropped, or stood for by a summary), and those sent changed (a tool result masked or cut short: its
 * original text). `positionOf` numbers them as the session's history does (its index by default).
 */
export function omittedSources(
  conversation: readonly ContextMessage[],
  rendered: readonly ContextMessage[],
  positionOf: (index: number) => number = (index) => index,
): RecallSource[] {
  const sent = new Set(rendered);
  const toolNames = new Map<string, string>();
  const sources: RecallSource[] = [];
  for (const [index, message] of conversation.entries()) {
    for (const call of message.tool_calls ?? [])
      if (call.id !== undefined) toolNames.set(call.id, call.function?.name ?? 'tool');
    if (isSystemRole(message.role) || sent.has(message)) continue;
    const text = searchableText(message);
    if (text === '') continue;
    sources.push({
      position: positionOf(index),
      role: message.role,
      tool: message.role === 'tool' ? toolNames.get(message.tool_call_id ?? '') : undefined,
      text,
    });
  }
  return sources;
}

/** Words that say nothing about where a detail is. */
const stopWords = new Set(
  (
    'a an and are as at be by did do does for from had has have how i in is it its me my of on or our ' +
    'so that the their them then there these this to was we were what when where which who why will ' +
    'with you your about earlier find look said tell'
  ).split(' '),
);

/** A text's words, numbers and identifiers (paths, codes, versions kept whole), lower-cased, in order. */
function wholeTerms(text: string): string[] {
  const terms: string[] = [];
  for (const match of text.toLowerCase().matchAll(/[\p{L}\p{N}](?:[\p{L}\p{N}_.:/@#-]*[\p{L}\p{N}])?/gu)) {
    const term = match[0];
    if (stopWords.has(term)) continue;
    if (term.length < 2 && !/\p{N}/u.test(term)) continue;
    terms.push(term);
  }
  return terms;
}

/** The terms of a text: its whole terms, and an identifier's parts too ("svc_12/config.yaml" by "config"). */
export function searchTerms(text: string): string[] {
  const terms: string[] = [];
  for (const term of wholeTerms(text)) {
    terms.push(term);
    if (/[_.:/@#-]/.test(term))
      for (const part of term.split(/[_.:/@#-]+/))
        if (part.length >= 2 && !stopWords.has(part)) terms.push(part);
  }
  return terms;
}

const wordChar = /[\p{L}\p{N}]/u;
const isWordChar = (text: string, index: number): boolean =>
  index >= 0 && index < text.length && wordChar.test(text[index] as string);

/**
 * Where `term` stands in `text` as a term of its own (no letter or digit right before or after it: a
 * word, a number, an identifier, or a part of one between its separators), from `from`; -1 if nowhere.
 */
function termAt(text: string, term: string, from = 0): number {
  for (let at = text.indexOf(term, from); at !== -1; at = text.indexOf(term, at + 1))
    if (!isWordChar(text, at - 1) && !isWordChar(text, at + term.length)) return at;
  return -1;
}

/** Whether `second` follows `first` in `text` with nothing but separators and stop words between them. */
function standsBeside(text: string, first: string, second: string): boolean {
  for (let at = termAt(text, first); at !== -1; at = termAt(text, first, at + 1)) {
    let cursor = at + first.length;
    for (let words = 0; words <= 3; words++) {
      while (cursor < text.length && !isWordChar(text, cursor)) cursor++;
      if (text.startsWith(second, cursor) && !isWordChar(text, cursor + second.length)) return true;
      let end = cursor;
      while (end < text.length && isWordChar(text, end)) end++;
      if (end === cursor || !stopWords.has(text.slice(cursor, end))) break;
      cursor = end;
    }
  }
  return false;
}

interface Passage {
  source: RecallSource;
  /** Order in the conversation: the source's position, then the passage's place in it. */
  order: number;
  text: string;
  /** The text lower-cased, where the query's terms are looked for. */
  lower: string;
}

/** Passages of at most about `maxChars` characters, cut at line ends (a long line at a space). */
function passagesOf(source: RecallSource, order: number, maxChars: number): Passage[] {
  const pieces: string[] = [];
  for (const line of source.text.split('\n')) {
    let rest = line;
    while (rest.length > maxChars) {
      const space = rest.lastIndexOf(' ', maxChars);
      const cut = space > maxChars / 2 ? space : maxChars;
      const piece = sliceWhole(rest, 0, cut);
      pieces.push(piece);
      rest = rest.slice(piece.length).trimStart();
    }
    pieces.push(rest);
  }
  const passages: Passage[] = [];
  let current = '';
  const close = (): void => {
    if (current.trim() === '') return;
    passages.push({
      source,
      order: order + passages.length / 10_000,
      text: current,
      lower: current.toLowerCase(),
    });
    current = '';
  };
  for (const piece of pieces) {
    if (current !== '' && current.length + piece.length + 1 > maxChars) close();
    current = current === '' ? piece : `${current}\n${piece}`;
  }
  close();
  return passages;
}

const passageChars = 480;
/** The most text one search reads, the newest first (about 500,000 tokens). */
export const maxSearchedChars = 2_000_000;

/** The query's first distinct terms looked for; the rest are not. */
export const maxQueryTerms = 32;

function label(source: RecallSource): string {
  const who =
    source.role === 'tool'
      ? `tool result${source.tool === undefined ? '' : ` of ${source.tool}`}`
      : source.role;
  return `[message ${source.position}, ${who}]`;
}

export interface RecallAnswer {
  /** The tool result's text. */
  text: string;
  /** Passages given. */
  passages: number;
}

/**
 * The passages of `sources` that best match `query`, within `maxTokens`, in the conversation's order:
 * each query term scores by how rare it is among the passages (a code or a name outweighs a common
 * word), a passage holding every term scores twice, and terms found side by side as the query has
 * them (stop words left out) score again.
 */
export function searchRecall(options: {
  query: string;
  sources: readonly RecallSource[];
  tokenizer: Tokenizer;
  maxTokens: number;
}): RecallAnswer {
  const { query, tokenizer, maxTokens } = options;
  // Each term is looked for in every passage: a query of thousands of words (a model may be led to
  // write one) would read the searched text thousands of times.
  const queryTerms = [...new Set(searchTerms(query))].slice(0, maxQueryTerms);
  const quoted = JSON.stringify(query.length > 200 ? `${sliceWhole(query, 0, 200)}…` : query);
  if (options.sources.length === 0)
    return { text: 'Nothing of this conversation is left out: everything is shown above.', passages: 0 };
  if (queryTerms.length === 0)
    return {
      text: `The query ${quoted} holds no words to look for; ask with names, numbers or words.`,
      passages: 0,
    };
  // The newest text first, up to a bound: a search costs milliseconds however long the session is.
  const searched: RecallSource[] = [];
  let chars = 0;
  for (let index = options.sources.length - 1; index >= 0; index--) {
    const source = options.sources[index] as RecallSource;
    chars += source.text.length;
    if (chars > maxSearchedChars && searched.length > 0) break;
    searched.push(
      source.text.length > maxSearchedChars
        ? Object.assign({}, source, { text: sliceWhole(source.text, -maxSearchedChars) })
        : source,
    );
  }
  searched.reverse();
  const passages = searched.flatMap((source, index) => passagesOf(source, index, passageChars));
  const frequency = new Map<string, number>();
  const found = passages.map((passage) => queryTerms.filter((term) => termAt(passage.lower, term) !== -1));
  for (const terms of found) for (const term of terms) frequency.set(term, (frequency.get(term) ?? 0) + 1);
  const rarity = (term: string): number => Math.log(1 + passages.length / (frequency.get(term) ?? 1));
  const whole = wholeTerms(query);
  const looked = new Set(queryTerms);
  // Each pair of neighbouring query terms once (both of them looked for).
  const pairs = new Map<string, readonly [string, string]>();
  for (let index = 1; index < whole.length; index++) {
    const first = whole[index - 1] as string;
    const second = whole[index] as string;
    if (looked.has(first) && looked.has(second)) pairs.set(`${first} ${second}`, [first, second]);
  }
  const queryPairs = [...pairs.values()];
  const scored: Array<{ passage: Passage; score: number }> = [];
  passages.forEach((passage, index) => {
    const terms = found[index] as string[];
    if (terms.length === 0) return;
    let score = 0;
    for (const term of terms) score += rarity(term);
    if (terms.length === queryTerms.length && queryTerms.length > 1) score *= 2;
    // Terms of the query found side by side as in the query count again, by the rarer of the two.
    for (const [first, second] of queryPairs) {
      if (terms.includes(first) && terms.includes(second) && standsBeside(passage.lower, first, second))
        score += Math.max(rarity(first), rarity(second));
    }
    scored.push({ passage, score });
  });
  if (scored.length === 0)
    return {
      text: `Nothing in the earlier messages that are not shown matches ${quoted}.`,
      passages: 0,
    };
  scored.sort((a, b) => b.score - a.score || b.passage.order - a.passage.order);
  const header = `Earlier messages (not shown above) that match ${quoted}, oldest first:`;
  let used = tokenizer.count(header) + 8;
  const chosen: Passage[] = [];
  // The best first, while room is left; a few that do not fit are passed over for smaller ones.
  let passedOver = 0;
  for (const { passage } of scored) {
    if (maxTokens - used < 32 || passedOver > 16) break;
    const tokens = tokenizer.count(`${label(passage.source)} ${passage.text}`) + 2;
    if (used + tokens > maxTokens) {
      passedOver++;
      continue;
    }
    chosen.push(passage);
    used += tokens;
  }
  if (chosen.length === 0)
    return {
      text: `Earlier messages match ${quoted}, but none fits in the room left in the window.`,
      passages: 0,
    };
  chosen.sort((a, b) => a.order - b.order);
  const lines = [header];
  for (const passage of chosen) lines.push(`${label(passage.source)} ${passage.text}`);
  lines.push(`(${chosen.length} of ${scored.length} matching passages)`);
  return { text: lines.join('\n'), passages: chosen.length };
}

/** The query a recall call asks for: its `query` argument, else its arguments as they are. */
export function recallQuery(argumentsText: string | undefined): string {
  try {
    const parsed = JSON.parse(argumentsText ?? '') as { query?: unknown };
    if (typeof parsed?.query === 'string') return parsed.query;
  } catch {
    // Not JSON: the text is the query.
  }
  return argumentsText ?? '';
}

/** A call's answer when no more calls are answered in this request. */
export const recallLimitReached =
  'No more searches of earlier messages in this request: answer with what is shown and found.';

/** A call's answer when the window has no room left for what it would find. */
export const recallNoRoom =
  'The context window has no room left to show earlier messages: answer with what is shown and found.';
