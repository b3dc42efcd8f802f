// Summarization planning and checking (docs/sessions.md#summarization), pure like the rest of the context engine: when a
// session's history calls for a summary and which turns it covers, the summarizer's own request (fitted
// to the summarizer model's window), and the guard that refuses a summary which lost what it must keep.
import { renderContext, truncateText } from './render.js';
import { countMessageTokens } from './token-accounting.js';
import { messageText } from './turns.js';
import type { ContextMessage, ContextPolicy, Tokenizer } from './types.js';
import { sliceWhole } from '../text-slices.js';

/** Thinking at the start of an answer, between tags: the tag's name. */
const thinkingOpen = /^\s*<(think|thinking|reasoning)>/i;

/** Whether `text` starts with thinking between tags (withoutThinking). */
export const startsThinking = (text: string): boolean => thinkingOpen.test(text);

/**
 * `text` without the thinking a model served without a reasoning parser (DeepSeek-R1's distills, QwQ,
 * Qwen3 on Ollama, llama.cpp or vLLM) wrote at its start, between `<think>` tags: what it said. A
 * summarizer's answer is what it said after thinking; an assistant message of such a model is
 * summarized, and its facts counted, by what it said (its thinking weighs more and states no
 * decision). Thinking never closed (an answer cut at its length) leaves nothing.
 */
export function withoutThinking(text: string): string {
  const open = thinkingOpen.exec(text);
  if (open === null) return text;
  const close = new RegExp(`</${open[1] as string}\\s*>`, 'i').exec(text.slice(open[0].length));
  return close === null ? '' : text.slice(open[0].length + close.index + close[0].length).trimStart();
}

/** The message the renderer puts where the summarized messages were. */
export function summaryMessage(text: string, coveredMessages: number): ContextMessage {
  return {
    role: 'system',
    content: `[ctxgate] Summary of ${coveredMessages} earlier messages of this conversation, which are not shown:\n${text}`,
  };
}

/**
 * The message the renderer puts right after a long agent turn's user message, for its first steps: its
 * segments (summary-notes.ts), oldest first. Its opening line counts nothing, so a segment appended
 * later leaves everything before it as it was, byte for byte — what a provider's prompt cache reuses.
 */
export function turnSummaryMessage(text: string): ContextMessage {
  return {
    role: 'system',
    content: `[ctxgate] Summary of this task's earlier steps, which are not shown:\n${text}`,
  };
}

export interface SummaryPlanInput {
  /** Token count of each active message, oldest first, the protected head included. */
  activeTokens: readonly number[];
  /** For each active message, whether it starts a turn (a user message). */
  turnStarts: readonly boolean[];
  /** Active messages at the start that are never summarized (the session's first turns). */
  head: number;
  /** Messages in the archive (conversation positions head … head + archived − 1). */
  archived: number;
  /** Conversation position where the current summary ends (`head` when there is none). */
  summaryTo: number;
  /** The session's history budget (docs/budgeting.md, the summary's own tokens already taken out). */
  historyBudget: number;
  summarizeAt: number;
  summarizeTo: number;
}

export type SummaryPlan =
  | { kind: 'none'; historyTokens: number; thresholdTokens: number }
  | {
      kind: 'summarize';
      historyTokens: number;
      thresholdTokens: number;
      targetTokens: number;
      /** Conversation positions: the range to summarize is [fromMessage, toMessage), whole turns. */
      fromMessage: number;
      toMessage: number;
    };

/**
 * Whether to summarize and what: when the active history is over `summarizeAt` of the budget, the
 * oldest turns after the head (and whatever the archive holds that no summary covers yet) up to the
 * first turn boundary that brings history down to `summarizeTo`, never the newest turn.
 */
export function planSummary(input: SummaryPlanInput): SummaryPlan {
  const { activeTokens, turnStarts, head } = input;
  let historyTokens = 0;
  for (const tokens of activeTokens) historyTokens += tokens;
  const thresholdTokens = Math.floor(input.summarizeAt * input.historyBudget);
  if (input.historyBudget <= 0 || historyTokens <= thresholdTokens)
    return { kind: 'none', historyTokens, thresholdTokens };

  const targetTokens = Math.floor(input.summarizeTo * input.historyBudget);
  let lastTurnStart = -1;
  for (let index = activeTokens.length - 1; index > head; index--) {
    if (turnStarts[index] === true) {
      lastTurnStart = index;
      break;
    }
  }
  let cut = -1;
  let remaining = historyTokens;
  for (let index = head; index < lastTurnStart; index++) {
    remaining -= activeTokens[index] as number;
    if (turnStarts[index + 1] === true) {
      cut = index + 1;
      if (remaining <= targetTokens) break;
    }
  }
  if (cut === -1) return { kind: 'none', historyTokens, thresholdTokens };
  // A job is worth its call only when it takes out a fair share of the budget: with a large head (or a
  // huge newest turn) the target cannot be reached, and a job per turn would summarize one turn each.
  const coveredTokens = historyTokens - remaining;
  const uncoveredArchive = input.summaryTo < head + input.archived;
  if (
    !uncoveredArchive &&
    coveredTokens < ((input.summarizeAt - input.summarizeTo) * input.historyBudget) / 2
  )
    return { kind: 'none', historyTokens, thresholdTokens };

  return {
    kind: 'summarize',
    historyTokens,
    thresholdTokens,
    targetTokens,
    fromMessage: input.summaryTo,
    toMessage: cut + input.archived,
  };
}

export interface TurnSummaryPlanInput {
  /** Token count of each active message, oldest first. */
  activeTokens: readonly number[];
  /** For each active message: 'user' starts a turn, 'assistant' starts an iteration group. */
  roles: readonly string[];
  /** Active index where the messages after an existing summary of the current turn start (0: none). */
  coveredUntil: number;
  /** Tokens of the turn's existing summary (sent in place of what it covers). */
  summaryTokens?: number;
  historyBudget: number;
  summarizeAt: number;
  summarizeTo: number;
}

export type TurnSummaryPlan =
  | { kind: 'none' }
  | {
      kind: 'summarize_turn';
      /** Active index of the current turn's user message. */
      turnStart: number;
      /** The groups to summarize: active indexes [from, to), whole iteration groups. */
      from: number;
      to: number;
      steps: number;
      turnTokens: number;
    };

/**
 * In-turn compaction (docs/sessions.md#summarization): when the current turn — an agent loop — has outgrown `summarizeAt` of
 * the history budget, its oldest iteration groups not yet summarized, up to the first group boundary
 * that brings the turn down to `summarizeTo`, never the newest group.
 */
export function planTurnSummary(input: TurnSummaryPlanInput): TurnSummaryPlan {
  const { activeTokens, roles } = input;
  const turnStart = roles.lastIndexOf('user');
  if (turnStart < 0 || input.historyBudget <= 0) return { kind: 'none' };
  let turnTokens = 0;
  for (let index = turnStart; index < activeTokens.length; index++)
    turnTokens += activeTokens[index] as number;
  const from = Math.max(turnStart + 1, input.coveredUntil);
  // What the turn sends: its messages the summary does not already stand for, and the summary itself.
  let liveTokens = turnTokens + (input.summaryTokens ?? 0);
  for (let index = turnStart + 1; index < from; index++) liveTokens -= activeTokens[index] as number;
  if (liveTokens <= input.summarizeAt * input.historyBudget) return { kind: 'none' };
  const groupStarts: number[] = [];
  for (let index = from; index < activeTokens.length; index++)
    if (roles[index] === 'assistant') groupStarts.push(index);
  const newestGroup = groupStarts.at(-1);
  if (newestGroup === undefined || groupStarts[0] !== from) return { kind: 'none' };
  const target = input.summarizeTo * input.historyBudget;
  // What the turn will send: its summary included, which stays and grows by the new segment.
  let remaining = liveTokens;
  let to = from;
  let steps = 0;
  for (const start of groupStarts.slice(1)) {
    for (let index = to; index < start; index++) remaining -= activeTokens[index] as number;
    to = start;
    steps++;
    if (remaining <= target) break;
  }
  if (steps === 0) return { kind: 'none' };
  return { kind: 'summarize_turn', turnStart, from, to, steps, turnTokens };
}

export const summarizerInstructions = (maxSummaryTokens: number, pinPrefix: string): string =>
  [
    'You write the running summary of a conversation between a user and an AI assistant. The assistant will continue the conversation seeing only your summary instead of the messages it covers, so anything you leave out is lost to it.',
    "Keep, exactly as written: the user's stated goals, preferences and constraints; decisions made and why; facts; numbers, amounts, dates and units; names of people, products and places; identifiers, codes, file paths, URLs, commands and code symbols; questions still open and tasks still pending.",
    ...(pinPrefix === ''
      ? []
      : [`Copy every message that begins with "${pinPrefix}" verbatim, on its own line.`]),
    'When a previous summary is given, extend it with the new messages: keep everything from it that still matters and never start over.',
    'Write in the language the conversation is written in. Plain text, terse, one fact per line, no preamble and no closing remarks.',
    `At most about ${maxSummaryTokens} tokens.`,
  ].join('\n');

/**
 * The instructions for an agent turn's steps: what the steps did and found, for the agent that goes on
 * with the task. Shorter than a conversation's (no user, no pinned messages): on a small window a
 * step is summarized as it leaves, so these words are paid at nearly every step of a loop.
 */
export const stepSummarizerInstructions = (maxSummaryTokens: number, extending: boolean): string =>
  [
    "You write the running summary of an AI agent's work on a task. The agent goes on seeing only your summary instead of the steps it covers, so anything you leave out is lost to it.",
    'Keep, exactly as written: what each step did and found; decisions and why; identifiers, file paths, URLs, commands, code symbols, numbers and errors; what is still open.',
    ...(extending ? ['Extend the previous summary with the new steps; never start over.'] : []),
    'Plain text in the language of the task, terse, one fact per line, no preamble.',
    `At most about ${maxSummaryTokens} tokens.`,
  ].join('\n');

/** One message as a transcript block. Tool results and very long texts are cut to `capTokens`. */
function transcriptBlock(message: ContextMessage, capTokens: number, tokenizer: Tokenizer): string {
  const calls = (message.tool_calls ?? [])
    .map((call) => `[assistant calls ${call.function?.name ?? 'tool'}(${call.function?.arguments ?? ''})]`)
    .join('\n');
  let text = message.role === 'assistant' ? withoutThinking(messageText(message)) : messageText(message);
  if (tokenizer.count(text) > capTokens) text = truncateText(text, capTokens, 'both', tokenizer).text;
  const label =
    message.role === 'tool'
      ? `[tool result${message.name === undefined ? '' : ` ${message.name}`}]`
      : `[${message.role}]`;
  return [text === '' ? '' : `${label} ${text}`, calls].filter((part) => part !== '').join('\n');
}

export interface SummaryRequestInput {
  previousSummary: string | undefined;
  /** The range to summarize, oldest first, starting at a turn boundary and ending at one. */
  messages: readonly ContextMessage[];
  tokenizer: Tokenizer;
  /** The summarizer model's window and the room kept free in it (docs/budgeting.md's margin). */
  window: number;
  safetyMarginTokens: number;
  /** How long the summary is asked to be. */
  maxSummaryTokens: number;
  /**
   * The most tokens the answer may take, thinking included, left free in the window: more than
   * maxSummaryTokens for a model that thinks before it answers (docs/sessions.md); maxSummaryTokens
   * when not given.
   */
  answerCapTokens?: number;
  policy: ContextPolicy;
  /**
   * turns: the range is cut at user messages (history). steps: at assistant messages (the iteration
   * groups of one agent turn, whose task is given as `task`).
   */
  unit?: 'turns' | 'steps';
  task?: string;
}

export interface SummaryRequest {
  messages: ContextMessage[];
  /** How many of `messages` (whole turns, oldest first) the request covers. */
  coveredMessages: number;
  inputTokens: number;
}

const toolResultCapTokens = 1_000;
/**
 * In an agent turn's steps, a tool result is read by its ends: a step is summarized as what it did and
 * found. The summary of a small window is small, so what it reads of each result scales with the window
 * (a 64th of it, 64 to 400 tokens): on 8,192 tokens a step's results are read at 128 tokens each, and
 * the summarizer's prompt stays a small share of the loop's although nearly every step is summarized.
 */
const stepToolResultCapTokens = (window: number): number =>
  Math.max(64, Math.min(400, Math.floor(window / 64)));

/** The agent's task as the summarizer reads it: whole, or its ends when it is over 1,000 tokens. */
function taskText(task: string, tokenizer: Tokenizer): string {
  return tokenizer.count(task) > 1_000 ? truncateText(task, 1_000, 'both', tokenizer).text : task;
}

/**
 * The summarizer's request: its instructions, the previous summary and as many of the oldest turns of
 * the range as fit the summarizer's window with `maxSummaryTokens` left for the answer; the context
 * engine then checks it as it checks any request. Undefined when not even one turn fits.
 */
export function buildSummaryRequest(input: SummaryRequestInput): SummaryRequest | undefined {
  const { tokenizer, policy } = input;
  const steps = input.unit === 'steps';
  const system: ContextMessage = {
    role: 'system',
    content: steps
      ? stepSummarizerInstructions(input.maxSummaryTokens, input.previousSummary !== undefined)
      : summarizerInstructions(input.maxSummaryTokens, policy.pin_prefix),
  };
  const previous =
    input.previousSummary === undefined ? '' : `Previous summary:\n${input.previousSummary}\n\n`;
  const task =
    steps && input.task !== undefined
      ? `These are steps (tool calls and their results) of an agent working on this task:\n${taskText(input.task, tokenizer)}\n\n`
      : '';
  const header = `${task}${previous}New messages, oldest first:\n`;
  const fixedTokens =
    countMessageTokens(system, tokenizer) +
    countMessageTokens({ role: 'user', content: header }, tokenizer) +
    3;
  const answerCap = input.answerCapTokens ?? input.maxSummaryTokens;
  const available = input.window - input.safetyMarginTokens - answerCap - fixedTokens;
  if (available <= 0) return undefined;
  const textCap = Math.max(64, Math.floor(available / 2));

  // Each message's block, counted once; a unit (a turn, or a step) starts at its first message. Blocks
  // past the room are never sent: a range of thousands of messages costs what fits, not what it holds.
  const blocks: Array<{ text: string; tokens: number; startsUnit: boolean }> = [];
  let blockTokens = 0;
  for (const [index, message] of input.messages.entries()) {
    if (blockTokens > available) break;
    const cap =
      message.role === 'tool'
        ? Math.min(textCap, steps ? stepToolResultCapTokens(input.window) : toolResultCapTokens)
        : textCap;
    const text = transcriptBlock(message, cap, tokenizer);
    const tokens = text === '' ? 0 : tokenizer.count(text) + 1;
    blockTokens += tokens;
    blocks.push({ text, tokens, startsUnit: index > 0 && message.role === (steps ? 'assistant' : 'user') });
  }
  /** How many messages, whole units oldest first, fit in `room` by their blocks' counts. */
  const coveredWithin = (room: number): number => {
    let used = 0;
    let covered = 0;
    for (const [index, block] of blocks.entries()) {
      if (block.startsUnit) covered = index;
      used += block.tokens;
      if (used > room) return covered;
    }
    return blocks.length;
  };

  // The transcript is counted as one text, which is not quite the sum of its blocks (BPE merges across
  // them, and a long text is counted from samples): when that count is over, the room shrinks by the
  // excess and whole units are taken off the end.
  let room = available;
  for (let attempt = 0; attempt < 4; attempt++) {
    const covered = coveredWithin(room);
    if (covered === 0) return undefined;
    const transcript = blocks
      .slice(0, covered)
      .filter((block) => block.text !== '')
      .map((block) => block.text)
      .join('\n');
    const messages: ContextMessage[] = [system, { role: 'user', content: `${header}${transcript}` }];
    // The summarizer's request goes through the context engine like any other: it must fit as it is.
    const outcome = renderContext({
      messages,
      tokenizer,
      window: input.window,
      outputReserve: answerCap,
      safetyMarginTokens: input.safetyMarginTokens,
      policy: Object.assign({}, policy, { oversize: 'reject' }),
    });
    if (outcome.ok && !outcome.report.modified)
      return { messages, coveredMessages: covered, inputTokens: outcome.report.inputTokens };
    if (outcome.ok) return undefined;
    room -= outcome.neededTokens - outcome.budgetTokens + Math.ceil(room / 1_000);
  }
  return undefined;
}

export type SummaryRejection = 'empty' | 'error_text' | 'truncated' | 'lost_pinned';

export type SummaryVerdict =
  | {
      ok: true;
      factsKept: number;
      factsTotal: number;
      /** Identifier-like facts of the covered messages the summary does not state: to repair. */
      missingFacts: string[];
    }
  | { ok: false; reason: SummaryRejection; factsKept: number; factsTotal: number; missingFacts: string[] };

const errorTextPattern =
  /^\s*(?:\{\s*"error"|<(?:!doctype|html)|internal server error|i(?:'|’| a)m sorry|sorry,? (?:but )?i can|i can(?:not|'t|’t) (?:help|assist|do|summari[sz]e|comply)|as an ai\b)/i;
/**
 * An error or a refusal given as the answer. An error line ("Error: upstream timed out", a proxy's or
 * a provider's) is one short line: a summary may start with the word too (a debugging session's:
 * "Error in the staging deploy traced to …"), and runs longer. Read without a pattern that backtracks.
 */
function isErrorText(text: string): boolean {
  if (errorTextPattern.test(text)) return true;
  const trimmed = text.trim();
  return trimmed.length <= 200 && !trimmed.includes('\n') && /^error\b/i.test(trimmed);
}

const urlPattern = /^https?:\/\/\S+$/;
const emailPattern = /^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$/;
const pathPattern =
  /^(?:~|\.{1,2})?\/[\w.@~+-]|^[\w.@~+-]+(?:[/\\][\w.@~+-]+)*[/\\][\w@~+-]+\.\w+$|^[A-Za-z]:\\|^[\w.@~+-]+(?:[/\\][\w.@~+-]+){2,}$/;
const snakeCasePattern = /^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$/;
const camelCasePattern = /^[a-z]+[A-Z][A-Za-z0-9]*$/;
/**
 * A digit with a letter (codes, versions: K3-12345, v2, INV-2024-0042, 17th aside from plain counts):
 * two searches, not one pattern of two look-aheads, which is tried again at every position of a word
 * that has no letter (a 40,000-digit word took 1.7 s of CPU).
 */
const isCode = (word: string): boolean => /\d/.test(word) && /[A-Za-z]/.test(word);
/** Numbers that carry information: four digits or more, or with separators (1,250.50, 10:30, 2024-05-01). */
const significantNumberPattern = /^\d{4,}$|\d[.,:/-]\d/;

/** A digit, `_`, `/`, `\\`, `@`, `:` or an upper-case letter after the first character. */
const mayBeIdentifier = /[\d_/\\@:]|.[A-Z]/;

/**
 * A word longer than this is no fact a summary should restate (a hash, a signed URL, a line of minified
 * code or a run of digits in a tool's output): it is not looked at.
 */
const maxFactCharacters = 256;

/** Punctuation and closing marks after a word (a sentence's end, a closing bracket or quote). */
const closingMarks = new Set('.,;:!?)]}"\'`>');

/**
 * A word without the closing marks after it, read from its end: the pattern `[…]+$` is tried from every
 * position of a run of them, and a word of 40,000 colons took 1.4 s of CPU.
 */
function withoutClosingMarks(word: string): string {
  let end = word.length;
  while (end > 0 && closingMarks.has(word[end - 1] as string)) end--;
  return end === word.length ? word : word.slice(0, end);
}

/**
 * The identifier-like facts of a text, what a summary should state: codes (letters with digits),
 * numbers of four digits or more or with separators (amounts, dates, times, versions), paths, URLs,
 * e-mail addresses, snake_case and camelCase names. Small plain numbers — turn counters, list
 * numbering, counts — are incidental: real summarizers drop them, and a good summary does too.
 */
export function identifierFacts(text: string): string[] {
  const found = new Set<string>();
  for (const raw of text.split(/\s+/)) {
    // Every pattern below needs one of these; most words of prose have none.
    if (raw.length > maxFactCharacters || !mayBeIdentifier.test(raw)) continue;
    const word = withoutClosingMarks(raw.replace(/^[([{"'`<]+/, ''));
    if (word.length < 2) continue;
    if (
      urlPattern.test(word) ||
      emailPattern.test(word) ||
      pathPattern.test(word) ||
      (/\d/.test(word) && (isCode(word) || significantNumberPattern.test(word))) ||
      snakeCasePattern.test(word) ||
      camelCasePattern.test(word)
    )
      found.add(word);
  }
  return [...found];
}

const collapse = (text: string): string => text.replace(/\s+/g, ' ').trim().toLowerCase();

/** Pinned messages longer than this are checked by their identifiers only, not copied verbatim. */
const verbatimPinnedCharacters = 2_000;

/** Whether `text` states `fact` (thousands separators aside: 1,250 and 1250 are the same). */
export function statesFact(text: string, fact: string): boolean {
  return text.includes(fact) || text.includes(fact.replace(/,/g, ''));
}

/** The texts whose facts a summary of `covered` should keep: user, assistant and (optionally) tool messages. */
export function factSourceTexts(covered: readonly ContextMessage[], withToolResults: boolean): string[] {
  return covered
    .filter(
      (message) =>
        message.role === 'user' ||
        message.role === 'assistant' ||
        (withToolResults && message.role === 'tool'),
    )
    .map((message) =>
      message.role === 'assistant' ? withoutThinking(messageText(message)) : messageText(message),
    );
}

/**
 * The guard (docs/sessions.md#summarization): refuses only what is unusable — an empty answer, an error or refusal text, an
 * answer cut at its length limit, or one that lost a pinned message. Identifier-like facts the summary
 * does not state are not a veto: they are returned, to be repaired.
 */
export function judgeSummary(input: {
  text: string;
  finishReason: string | undefined;
  previousSummary: string | undefined;
  covered: readonly ContextMessage[];
  pinPrefix: string;
  /** Facts of tool results count too (a summary of an agent loop's steps). */
  withToolResults?: boolean;
  /**
   * The identifier facts of `factSourceTexts(covered, withToolResults)`, when the caller extracted them
   * already (a long range is read in slices between other work); extracted here otherwise.
   */
  sourceFacts?: Iterable<string>;
}): SummaryVerdict {
  const { text } = input;
  const facts = new Set<string>(identifierFacts(input.previousSummary ?? ''));
  const pinnedFacts = new Set<string>();
  const pinnedTexts: string[] = [];
  for (const message of input.covered) {
    if (message.role !== 'user') continue;
    const content = messageText(message);
    if (input.pinPrefix === '' || !content.startsWith(input.pinPrefix)) continue;
    for (const fact of identifierFacts(content)) pinnedFacts.add(fact);
    if (content.length <= verbatimPinnedCharacters) pinnedTexts.push(content.slice(input.pinPrefix.length));
  }
  if (input.sourceFacts !== undefined) for (const fact of input.sourceFacts) facts.add(fact);
  else
    for (const source of factSourceTexts(input.covered, input.withToolResults === true))
      for (const fact of identifierFacts(source)) facts.add(fact);
  const missingFacts = [...facts].filter((fact) => !statesFact(text, fact));
  const factsTotal = facts.size;
  const factsKept = factsTotal - missingFacts.length;
  const verdict = (reason: SummaryRejection | undefined): SummaryVerdict =>
    reason === undefined
      ? { ok: true, factsKept, factsTotal, missingFacts }
      : { ok: false, reason, factsKept, factsTotal, missingFacts };

  if (text.trim() === '') return verdict('empty');
  if (isErrorText(text)) return verdict('error_text');
  if (input.finishReason === 'length') return verdict('truncated');
  const collapsed = collapse(text);
  if (
    [...pinnedFacts].some((fact) => !statesFact(text, fact)) ||
    pinnedTexts.some((pinned) => !collapsed.includes(collapse(pinned)))
  )
    return verdict('lost_pinned');
  return verdict(undefined);
}

const sentenceEnds = '.!?';
const isSpace = (character: string | undefined): boolean =>
  character !== undefined && character.trim() === '' && character !== '';
const endsSentence = (character: string | undefined): boolean =>
  character !== undefined && character.length === 1 && sentenceEnds.includes(character);

/**
 * The sentence (or line) around `at`: sentences end at a line break, or at `.`, `!` or `?` followed by
 * white space. Found by walking out from the fact, not by splitting the text: a long message with many
 * facts is not split again for each one.
 */
function sentenceAround(text: string, at: number, length: number): string {
  let start = 0;
  for (let index = at - 1; index >= 0; index--) {
    const character = text[index] as string;
    if (character === '\n' || (isSpace(character) && endsSentence(text[index - 1]))) {
      start = index + 1;
      break;
    }
  }
  let end = text.length;
  for (let index = at + length; index < text.length; index++) {
    const character = text[index] as string;
    if (character === '\n') {
      end = index;
      break;
    }
    if (endsSentence(character) && isSpace(text[index + 1])) {
      end = index + 1;
      break;
    }
  }
  return text.slice(start, end);
}

/** The sentence (or line) of the covered messages that states `fact`, at most 300 characters. */
export function sentenceStating(
  fact: string,
  covered: readonly ContextMessage[],
  previousSummary: string | undefined,
): string | undefined {
  const texts = [previousSummary ?? '', ...covered.map((message) => messageText(message))];
  const plain = fact.replace(/,/g, '');
  for (const text of texts) {
    // The first sentence stating it holds its first occurrence (a fact holds no white space).
    const exact = text.indexOf(fact);
    const stripped = plain === fact ? -1 : text.indexOf(plain);
    if (exact < 0 && stripped < 0) continue;
    const [at, length] =
      exact >= 0 && (stripped < 0 || exact <= stripped) ? [exact, fact.length] : [stripped, plain.length];
    const trimmed = sentenceAround(text, at, length).trim();
    if (trimmed.length <= 300) return trimmed;
    const inSentence = trimmed.indexOf(fact);
    return sliceWhole(trimmed, Math.max(0, inSentence - 140), inSentence + fact.length + 140).trim();
  }
  return undefined;
}

/** Most facts one repair call asks about. */
export const maxRepairFacts = 40;

/** Most statements a repair looks up to copy verbatim, and the least room worth looking one up for. */
const maxStatementLookups = 2 * maxRepairFacts;
const minStatementTokens = 4;

export const repairInstructions =
  'You complete the running summary of a conversation. The summary you wrote left out facts the conversation states. For each statement below, write one short line stating the fact it holds, keeping every number, code, name and identifier exactly as written. No preamble, one fact per line.';

/** The repair call: the facts a summary dropped, each with the sentence that states it. */
export function buildRepairRequest(statements: readonly string[]): ContextMessage[] {
  return [
    { role: 'system', content: repairInstructions },
    {
      role: 'user',
      content: `Statements whose facts are missing from the summary:\n${statements.map((statement) => `- ${statement}`).join('\n')}`,
    },
  ];
}

/**
 * The repaired summary: the summary, the repair call's lines that state a missing fact, then — for
 * what is still missing — the sentences stating it verbatim, as long as `capTokens` allows (at most
 * `maxStatementLookups` of them looked up).
 */
export function repairSummary(input: {
  text: string;
  repairAnswer: string | undefined;
  missingFacts: readonly string[];
  statementFor: (fact: string) => string | undefined;
  tokenizer: Tokenizer;
  capTokens: number;
}): { text: string; stillMissing: string[] } {
  let text = input.text.trim();
  let added = 0;
  const add = (line: string): boolean => {
    const tokens = input.tokenizer.count(line) + 1;
    if (added + tokens > input.capTokens) return false;
    text += `\n${line}`;
    added += tokens;
    return true;
  };
  let missing = input.missingFacts.filter((fact) => !statesFact(text, fact));
  for (const line of (input.repairAnswer ?? '')
    .split('\n')
    .map((candidate) => candidate.replace(/^\s*[-*•]\s*/, '').trim())) {
    if (line === '' || isErrorText(line)) continue;
    if (missing.some((fact) => statesFact(line, fact)) && add(line))
      missing = missing.filter((fact) => !statesFact(text, fact));
  }
  // Statements are looked up while there is room, a bounded number of times: a long conversation can
  // hold thousands of facts, and each lookup reads the covered messages.
  let lookups = 0;
  for (const fact of [...missing]) {
    if (input.capTokens - added < minStatementTokens || lookups >= maxStatementLookups) break;
    if (statesFact(text, fact)) continue;
    lookups++;
    const statement = input.statementFor(fact);
    if (statement !== undefined && add(statement))
      missing = missing.filter((other) => !statesFact(text, other));
  }
  return { text, stillMissing: missing.filter((fact) => !statesFact(text, fact)) };
}
