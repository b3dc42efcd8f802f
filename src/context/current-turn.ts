// The current turn (SPEC §5 steps (a)–(d)): a user message and the agent loop that follows it, an
// iteration group at a time (an assistant message with tool calls and all their results). The model of
// Anthropic's context editing (`clear_tool_uses`): tool results are truncated to a cap, then masked oldest
// first — every call and its arguments stay, so the model keeps its trajectory — keeping the newest
// `keep_last` whole; tools named in `exclude_tools` (and the turn's first `keep_first` results) are masked
// last; masking advances in steps of at least `clear_at_least` tokens. Only when even masked groups do
// not fit are the oldest whole groups dropped, and a notice in the turn names the steps removed.
//
// Cache stability: the masked set and the dropped groups are replayed over the turn as it grew, group by
// group (as the requests of an agent loop saw it), and only ever grow. Consecutive requests therefore
// share their prefix until the next step. Pure.
import { messageText } from './turns.js';
import type { ContextMessage, ContextPolicy, Tokenizer } from './types.js';

export function maskedResultText(removedTokens: number): string {
  return `[result masked — ~${removedTokens} tokens removed]`;
}

/** A tool result that already is a mask (a rendered conversation sent again): it stays as it is. */
export function isMaskedResult(message: ContextMessage): boolean {
  return typeof message.content === 'string' && message.content.startsWith('[result masked — ~');
}

function truncationIndicator(keptTokens: number, originalTokens: number): string {
  return `[… truncated by ctxgate: kept ~${keptTokens} of ${originalTokens} tokens, ~${Math.max(0, originalTokens - keptTokens)} removed …]`;
}

/** Cuts a text to about `maxTokens`, keeping its head, its tail or both ends, with an indicator. */
export function truncateText(
  text: string,
  maxTokens: number,
  side: 'head' | 'tail' | 'both',
  tokenizer: Tokenizer,
): { text: string; originalTokens: number } {
  const originalTokens = tokenizer.count(text);
  const indicatorTokens = tokenizer.count(truncationIndicator(originalTokens, originalTokens)) + 2;
  const keepTokens = Math.max(0, maxTokens - indicatorTokens);
  if (side === 'both') {
    const head = tokenizer.truncate(text, Math.ceil(keepTokens / 2), 'head');
    const tail = tokenizer.truncate(text.slice(head.text.length), Math.floor(keepTokens / 2), 'tail');
    return {
      text: `${head.text}\n${truncationIndicator(head.tokens + tail.tokens, originalTokens)}\n${tail.text}`,
      originalTokens,
    };
  }
  const kept = tokenizer.truncate(text, keepTokens, side);
  const indicator = truncationIndicator(kept.tokens, originalTokens);
  return {
    text: side === 'head' ? `${kept.text}\n${indicator}` : `${indicator}\n${kept.text}`,
    originalTokens,
  };
}

/** The notice that stands where dropped steps were (a short one when even that must be small). */
export function droppedStepsNotice(
  steps: number,
  messages: number,
  tools: ReadonlyMap<string, number>,
  style: 'full' | 'short' = 'full',
): ContextMessage {
  if (style === 'short') return { role: 'system', content: `[ctxgate] ${steps} earlier steps removed.` };
  const called = [...tools].map(([name, times]) => (times > 1 ? `${name} ×${times}` : name)).join(', ');
  return {
    role: 'system',
    content: `[ctxgate] ${steps} earlier steps of this task (${messages} messages) were removed to fit the model's context window${called === '' ? '' : `; they called: ${called}`}. Their results are not shown.`,
  };
}

export interface CurrentTurnInput {
  /** The turn's messages: its user message first (when it has one), then the agent loop. */
  turn: readonly ContextMessage[];
  /** Token count of each of `turn`. */
  turnTokens: readonly number[];
  budget: number;
  policy: ContextPolicy;
  tokenizer: Tokenizer;
  count: (message: ContextMessage) => number;
  /**
   * A summary of the turn's older groups (a session's in-turn compaction, SPEC §7): it stands, right after
   * the user message, for the messages before `coversUntil` (an index into `turn`).
   */
  turnSummary?: { message: ContextMessage; coversUntil: number; tokens: number } | undefined;
}

export interface CurrentTurnFit {
  messages: ContextMessage[];
  tokens: number;
  /** Tool results sent truncated (masked and dropped ones aside). */
  truncated: number;
  /** Tool results sent masked. */
  masked: number;
  droppedGroups: number;
  droppedMessages: number;
  /** Messages the turn summary stands for. */
  summarizedMessages: number;
  noticeTokens: number;
  oversizeTruncated: boolean;
  tooLarge: boolean;
}

interface Group {
  start: number;
  end: number;
  /** Tokens of its messages that are not tool results (the assistant message with its calls). */
  fixedTokens: number;
  /** Indexes into `results`. */
  results: number[];
  toolNames: string[];
}

interface ToolResult {
  index: number;
  group: number;
  /** Tokens as sent whole (after truncation to the cap, estimated until it is done). */
  wholeTokens: number;
  maskedTokens: number;
  /** Tokens of the original content: what masking removes. */
  contentTokens: number;
  truncate: boolean;
  /** 0: masked first; 1: masked last (an excluded tool, or one of the turn's first keep_first results). */
  rank: number;
  masked: boolean;
}

function textOf(content: unknown): string {
  return messageText({ role: 'tool', content });
}

/** Groups from `from` on: an assistant message with tool calls and the results after it, or one message. */
function splitGroups(turn: readonly ContextMessage[], from: number): Array<{ start: number; end: number }> {
  const groups: Array<{ start: number; end: number }> = [];
  let index = from;
  while (index < turn.length) {
    const message = turn[index] as ContextMessage;
    let end = index + 1;
    if (message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0)
      while (end < turn.length && (turn[end] as ContextMessage).role === 'tool') end++;
    groups.push({ start: index, end });
    index = end;
  }
  return groups;
}

export function fitCurrentTurn(input: CurrentTurnInput): CurrentTurnFit {
  const { turn, turnTokens, budget, policy, tokenizer, count } = input;
  const anchored = (turn[0] as ContextMessage | undefined)?.role === 'user';
  const summary = input.turnSummary;
  const groupsFrom = Math.max(anchored ? 1 : 0, summary?.coversUntil ?? 0);
  const excluded = new Set(policy.exclude_tools);

  // The parts of the turn that always stay: the user message and the turn summary.
  let fixed = 0;
  if (anchored) fixed += turnTokens[0] as number;
  if (summary !== undefined) fixed += summary.tokens;

  const groups: Group[] = [];
  const results: ToolResult[] = [];
  for (const span of splitGroups(turn, groupsFrom)) {
    const call = turn[span.start] as ContextMessage;
    const names = new Map(
      (call.tool_calls ?? []).map((toolCall) => [toolCall.id, toolCall.function?.name ?? 'tool']),
    );
    const group: Group = { start: span.start, end: span.end, fixedTokens: 0, results: [], toolNames: [] };
    for (const name of names.values()) group.toolNames.push(name);
    for (let index = span.start; index < span.end; index++) {
      const message = turn[index] as ContextMessage;
      const tokens = turnTokens[index] as number;
      if (message.role !== 'tool' || index === span.start) {
        group.fixedTokens += tokens;
        continue;
      }
      // Its content's tokens: its own count less its framing (a long text is not counted again).
      const contentTokens = Math.max(0, tokens - count({ ...message, content: '' }));
      const truncate = contentTokens > policy.max_tool_result_tokens;
      const name = names.get(message.tool_call_id ?? '') ?? message.name ?? 'tool';
      const maskedTokens = count({ ...message, content: maskedResultText(contentTokens) });
      const wholeTokens = truncate
        ? Math.min(tokens, tokens - contentTokens + policy.max_tool_result_tokens)
        : tokens;
      group.results.push(results.length);
      results.push({
        index,
        group: groups.length,
        wholeTokens,
        maskedTokens: isMaskedResult(message) ? wholeTokens : maskedTokens,
        contentTokens,
        truncate,
        rank: excluded.has(name) || results.length < policy.keep_first ? 1 : 0,
        masked: false,
      });
    }
    groups.push(group);
  }
  const groupTokens = (group: Group): number => {
    let total = group.fixedTokens;
    for (const position of group.results) {
      const result = results[position] as ToolResult;
      total += result.masked ? result.maskedTokens : result.wholeTokens;
    }
    return total;
  };
  // The masking order: oldest first, the ones masked last after all others.
  const order = results
    .map((_result, position) => position)
    .sort(
      (a, b) =>
        (results[a] as ToolResult).rank - (results[b] as ToolResult).rank ||
        (results[a] as ToolResult).index - (results[b] as ToolResult).index,
    );

  const droppedTools = new Map<string, number>();
  let droppedMessages = 0;
  let dropped = 0;
  let noticeStyle: 'full' | 'short' | 'none' = 'full';
  const noticeFor = (): ContextMessage | undefined =>
    noticeStyle === 'none'
      ? undefined
      : droppedStepsNotice(dropped, droppedMessages, droppedTools, noticeStyle);
  const noticeCount = (): number => {
    const notice = noticeFor();
    return notice === undefined ? 0 : count(notice);
  };
  let noticeTokens = 0;
  const dropOldest = (): number => {
    const group = groups[dropped] as Group;
    const saved = groupTokens(group);
    for (const name of group.toolNames) droppedTools.set(name, (droppedTools.get(name) ?? 0) + 1);
    droppedMessages += group.end - group.start;
    dropped++;
    const before = noticeTokens;
    noticeTokens = noticeCount();
    return saved - (noticeTokens - before);
  };

  // Replay: the turn as each request of the loop saw it, one more group each time.
  let total = fixed;
  for (let step = 0; step < groups.length; step++) {
    total += groupTokens(groups[step] as Group);
    if (total <= budget) continue;
    let saved = 0;
    const mask = (position: number): void => {
      const result = results[position] as ToolResult;
      result.masked = true;
      total -= result.wholeTokens - result.maskedTokens;
      saved += result.wholeTokens - result.maskedTokens;
    };
    // The newest keep_last results of the turn so far stay whole while anything else can go.
    const visible: number[] = [];
    for (let group = dropped; group <= step; group++) visible.push(...(groups[group] as Group).results);
    const protectedFrom = Math.max(0, visible.length - policy.keep_last);
    const isProtected = new Set(visible.slice(protectedFrom));
    for (const position of order) {
      if (total <= budget && saved >= policy.clear_at_least) break;
      const result = results[position] as ToolResult;
      if (
        result.masked ||
        result.maskedTokens >= result.wholeTokens ||
        result.group < dropped ||
        result.group > step ||
        isProtected.has(position)
      )
        continue;
      mask(position);
    }
    // Fewer kept whole when they do not fit, down to the newest alone.
    for (const position of visible.slice(protectedFrom, -1)) {
      if (total <= budget) break;
      const result = results[position] as ToolResult;
      if (!result.masked && result.maskedTokens < result.wholeTokens) mask(position);
    }
    // Then the oldest whole groups, never the newest.
    saved = 0;
    while (dropped < step && (total > budget || (saved > 0 && saved < policy.clear_at_least))) {
      const freed = dropOldest();
      total -= freed;
      saved += freed;
    }
  }

  // The user message itself does not fit: refuse, or cut its middle when the policy says so.
  let userMessage = anchored ? (turn[0] as ContextMessage) : undefined;
  let oversizeTruncated = false;
  const newest = groups.at(-1);
  const lastResort = total > budget && newest !== undefined ? newest : undefined;
  let newestCap = policy.max_tool_result_tokens;
  if (lastResort !== undefined) {
    // The newest group alone is too big: its results are cut to what is left, masked if little is.
    const over = total - budget;
    const contentOf = (result: ToolResult): number =>
      result.truncate ? policy.max_tool_result_tokens : result.contentTokens;
    // Only results with something to cut share the cut.
    const whole = lastResort.results.filter((position) => {
      const result = results[position] as ToolResult;
      return !result.masked && contentOf(result) > 64;
    });
    const perResult = whole.length === 0 ? 0 : Math.ceil(over / whole.length);
    for (const position of whole) {
      const result = results[position] as ToolResult;
      const content = contentOf(result);
      const frame = result.wholeTokens - content;
      const target = content - perResult;
      if (target < 64) {
        if (result.maskedTokens < result.wholeTokens) {
          result.masked = true;
          total -= result.wholeTokens - result.maskedTokens;
        }
      } else {
        newestCap = Math.min(newestCap, target);
        result.truncate = true;
        total -= result.wholeTokens - (frame + target);
        result.wholeTokens = frame + target;
      }
    }
  }
  // Even the newest group cut down does not fit beside the user message: it goes too, and when room is
  // that short the notice shrinks, then goes.
  while (total > budget && dropped < groups.length) total -= dropOldest();
  for (const style of ['short', 'none'] as const) {
    if (total <= budget || dropped === 0) break;
    noticeStyle = style;
    const before = noticeTokens;
    noticeTokens = noticeCount();
    total -= before - noticeTokens;
  }
  let tooLarge = total > budget;
  if (tooLarge && userMessage !== undefined && policy.oversize === 'truncate_middle') {
    const content = userMessage.content;
    if (typeof content === 'string') {
      const others = total - (turnTokens[0] as number);
      const frame = count({ ...userMessage, content: '' });
      const room = budget - others - frame;
      if (room > 32) {
        userMessage = { ...userMessage, content: truncateText(content, room, 'both', tokenizer).text };
        oversizeTruncated = true;
        total = others + count(userMessage);
        tooLarge = total > budget;
      }
    }
  }

  // The messages to send: the user message, the turn summary, the notice, the groups kept. The sizes
  // of truncated results were estimated; should the exact ones overshoot, they are cut a little more.
  const resultAt = new Map(results.map((result) => [result.index, result]));
  const cuts = new Map<number, ContextMessage>();
  const build = (slack: number) => {
    const messages: ContextMessage[] = [];
    let tokens = 0;
    if (userMessage !== undefined) {
      messages.push(userMessage);
      tokens += oversizeTruncated ? count(userMessage) : (turnTokens[0] as number);
    }
    if (summary !== undefined) {
      messages.push(summary.message);
      tokens += summary.tokens;
    }
    const notice = dropped > 0 ? noticeFor() : undefined;
    if (notice !== undefined) {
      messages.push(notice);
      tokens += noticeTokens;
    }
    let truncated = 0;
    let masked = 0;
    for (const group of groups.slice(dropped)) {
      for (let index = group.start; index < group.end; index++) {
        const message = turn[index] as ContextMessage;
        const result = resultAt.get(index);
        if (result === undefined || (!result.masked && !result.truncate)) {
          messages.push(message);
          tokens += turnTokens[index] as number;
        } else if (result.masked) {
          const maskedMessage = { ...message, content: maskedResultText(result.contentTokens) };
          messages.push(maskedMessage);
          tokens += count(maskedMessage);
          masked++;
        } else {
          const cap = Math.max(
            16,
            (group === lastResort ? newestCap : policy.max_tool_result_tokens) - slack,
          );
          let cut = slack === 0 ? cuts.get(index) : undefined;
          if (cut === undefined) {
            const text = truncateText(
              textOf(message.content),
              cap,
              policy.tool_result_truncation,
              tokenizer,
            ).text;
            cut = { ...message, content: text };
            if (slack === 0) cuts.set(index, cut);
          }
          messages.push(cut);
          tokens += count(cut);
          truncated++;
        }
      }
    }
    return { messages, tokens, truncated, masked };
  };
  let built = build(0);
  for (let attempt = 0, slack = 0; attempt < 3 && !tooLarge && built.tokens > budget; attempt++) {
    if (built.truncated === 0) break;
    slack += Math.ceil((built.tokens - budget) / built.truncated) + 4;
    built = build(slack);
  }
  return {
    messages: built.messages,
    tokens: built.tokens,
    truncated: built.truncated,
    masked: built.masked,
    droppedGroups: dropped,
    droppedMessages,
    summarizedMessages: summary === undefined ? 0 : Math.max(0, summary.coversUntil - (anchored ? 1 : 0)),
    noticeTokens: dropped > 0 ? noticeTokens : 0,
    oversizeTruncated,
    tooLarge: tooLarge || built.tokens > budget,
  };
}
