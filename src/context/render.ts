// Render-time budgeting (SPEC §5): fits a conversation into the model's window without splitting a
// turn, keeping the system prompt and the current turn, the first turns and pinned ones, and as many
// recent turns as fit, with a start that moves in steps so consecutive requests share their prefix.
// Pure: plain data in, new plain data and a report out; the input is never mutated.
import { countMessageTokens, countToolTokens, replyPrimingTokens } from './token-accounting.js';
import { leadingSystemCount, messageText, repairToolPairing, splitTurns, type Turn } from './turns.js';
import type { ContextMessage, ContextPolicy, RenderResult, Tokenizer } from './types.js';

export interface RenderInput {
  messages: readonly ContextMessage[];
  tools?: unknown;
  tokenizer: Tokenizer;
  window: number;
  outputReserve: number;
  safetyMarginTokens: number;
  policy: ContextPolicy;
  /** Token count of each of `messages` when known (sessions pass stored counts); else they are counted. */
  messageTokens?: readonly number[];
  /**
   * Where the previous render of this conversation started its sliding history (an index into
   * `messages`; sessions store it). The start is replayed from there instead of from the beginning,
   * which gives the same start when the conversation's beginning is no longer all there.
   */
  historyStartHint?: number;
  /**
   * Messages of this conversation that came before `messages` and are no longer part of it (a
   * session's archive). The omission notice counts them, so it appears whenever they exist.
   */
  omittedBefore?: number;
  /**
   * A summary of earlier messages (a session's, SPEC §7): always sent, counted in the budget as its own
   * region, and placed before the first message at or after `position` (an index into `messages`).
   */
  summary?: { message: ContextMessage; position: number; tokens?: number };
}

export type RenderOutcome =
  | ({ ok: true } & RenderResult)
  | {
      ok: false;
      reason: 'current_turn_too_large';
      neededTokens: number;
      budgetTokens: number;
      window: number;
    };

const noticeTemplateCount = 999_999;

export function omissionNotice(omittedMessages: number, summaryPresent = false): ContextMessage {
  return {
    role: 'system',
    content: `[ctxgate] ${omittedMessages} earlier messages of this conversation were omitted to fit the model's context window.${summaryPresent ? ' A summary of earlier messages is above.' : ''}`,
  };
}

function textOf(content: unknown): string {
  return messageText({ role: 'tool', content });
}

function truncationIndicator(keptTokens: number, originalTokens: number): string {
  return `[… truncated by ctxgate: kept ~${keptTokens} of ${originalTokens} tokens …]`;
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

interface CurrentTurnResult {
  messages: ContextMessage[];
  tokens: number;
  truncated: number;
  masked: number;
  droppedGroups: number;
  droppedMessages: number;
  oversizeTruncated: boolean;
  tooLarge: boolean;
}

/** Steps (a)–(d) of SPEC §5 on the current turn. */
function fitCurrentTurn(
  turn: readonly ContextMessage[],
  budget: number,
  input: RenderInput,
  count: (message: ContextMessage) => number,
): CurrentTurnResult {
  const { policy, tokenizer } = input;
  let messages = [...turn];
  let truncated = 0;
  let masked = 0;
  let droppedGroups = 0;
  let droppedMessages = 0;
  let oversizeTruncated = false;

  // (a) every tool result over the cap is truncated, whether or not the turn fits.
  messages = messages.map((message) => {
    if (message.role !== 'tool') return message;
    const text = textOf(message.content);
    if (tokenizer.count(text) <= policy.max_tool_result_tokens) return message;
    truncated++;
    return {
      ...message,
      content: truncateText(text, policy.max_tool_result_tokens, policy.tool_result_truncation, tokenizer)
        .text,
    };
  });
  const total = (): number => messages.reduce((sum, message) => sum + count(message), 0);
  let tokens = total();

  // (b) mask tool results other than the first keep_first and the last keep_last.
  if (tokens > budget) {
    const toolIndices = messages.flatMap((message, index) => (message.role === 'tool' ? [index] : []));
    const maskable = toolIndices.slice(
      policy.keep_first,
      Math.max(policy.keep_first, toolIndices.length - policy.keep_last),
    );
    for (const index of maskable) {
      const message = messages[index] as ContextMessage;
      const removed = tokenizer.count(textOf(message.content));
      messages[index] = { ...message, content: `[result masked — ~${removed} tokens removed]` };
      masked++;
    }
    tokens = total();
  }

  // (c) drop the oldest whole iteration groups: an assistant message with tool calls and its results.
  while (tokens > budget) {
    const groupStart = messages.findIndex(
      (message) => message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0,
    );
    if (groupStart === -1) break;
    let groupEnd = groupStart + 1;
    while (groupEnd < messages.length && (messages[groupEnd] as ContextMessage).role === 'tool') groupEnd++;
    droppedMessages += groupEnd - groupStart;
    messages = [...messages.slice(0, groupStart), ...messages.slice(groupEnd)];
    droppedGroups++;
    tokens = total();
  }

  // (d) the user message itself does not fit: refuse, or cut its middle when the policy says so.
  let tooLarge = tokens > budget;
  if (tooLarge && policy.oversize === 'truncate_middle') {
    const userIndex = messages.findIndex((message) => message.role === 'user');
    const user = messages[userIndex];
    if (user !== undefined && typeof user.content === 'string') {
      const others = tokens - count(user);
      const frame = count({ ...user, content: '' });
      const room = budget - others - frame;
      if (room > 32) {
        messages[userIndex] = { ...user, content: truncateText(user.content, room, 'both', tokenizer).text };
        oversizeTruncated = true;
        tokens = total();
        tooLarge = tokens > budget;
      }
    }
  }
  return { messages, tokens, truncated, masked, droppedGroups, droppedMessages, oversizeTruncated, tooLarge };
}

/**
 * The first index (into `turnTokens`, the sliding history turns) of the sliding history window. The
 * conversation is replayed as the sequence of requests that built it: when turn `i` was the current
 * turn, the history before it had to fit `budget − tokens(i)`; whenever it did not, the start jumped
 * forward far enough that history filled at most `trim_to` of that. The start is therefore a function
 * of the conversation alone: the same conversation plus one more turn keeps its start while it fits,
 * and moves in steps, not one turn per request. `from` resumes the replay at a start stored earlier.
 */
export function slidingStart(
  turnTokens: readonly number[],
  currentTokens: number,
  budget: number,
  policy: ContextPolicy,
  from = 0,
): number {
  let start = Math.min(Math.max(0, from), turnTokens.length);
  let sum = 0;
  const maxTurns = policy.max_history_turns;
  const targetTurns = Math.max(1, Math.floor(policy.trim_to * maxTurns));
  for (let index = start; index <= turnTokens.length; index++) {
    const current = index < turnTokens.length ? (turnTokens[index] as number) : currentTokens;
    const available = budget - current;
    if (sum > available || (maxTurns > 0 && index - start > maxTurns)) {
      const target = Math.floor(policy.trim_to * available);
      while (start < index && (sum > target || (maxTurns > 0 && index - start > targetTurns))) {
        sum -= turnTokens[start] as number;
        start++;
      }
      // The turn just before a current turn stays when it fits on its own, even above the target.
      const previous = turnTokens[index - 1];
      if (start === index && previous !== undefined && previous <= available) {
        start = index - 1;
        sum = previous;
      }
    }
    if (index < turnTokens.length) sum += current;
  }
  return start;
}

function sumRange(values: readonly number[], start: number, end: number): number {
  let total = 0;
  for (let index = start; index < end; index++) total += values[index] as number;
  return total;
}

/** The outcome for a conversation sent as it is. */
function unchanged(values: {
  input: RenderInput;
  historyBudget: number;
  systemTokens: number;
  toolTokens: number;
  historyTokens: number;
  currentTurnTokens: number;
  historyStartIndex: number;
}): RenderOutcome {
  const { input } = values;
  return {
    ok: true,
    messages: [...input.messages],
    report: {
      window: input.window,
      historyBudget: values.historyBudget,
      summaryUsed: false,
      inputTokens:
        values.systemTokens +
        values.toolTokens +
        replyPrimingTokens +
        values.historyTokens +
        values.currentTurnTokens,
      regions: {
        system: values.systemTokens,
        summary: 0,
        history: values.historyTokens,
        currentTurn: values.currentTurnTokens,
        tools: values.toolTokens,
        notice: 0,
        outputReserve: input.outputReserve,
        safetyMargin: input.safetyMarginTokens,
      },
      droppedMessages: 0,
      droppedTurns: 0,
      droppedIterationGroups: 0,
      truncatedToolResults: 0,
      maskedToolResults: 0,
      historyStartIndex: values.historyStartIndex,
      oversizeTruncated: false,
      orphansRemoved: 0,
      modified: false,
    },
  };
}

/** The notice of the final check: what it removed, so the model is not left wondering. */
export function pairingNotice(removed: number): ContextMessage {
  return {
    role: 'system',
    content: `[ctxgate] ${removed} tool messages or tool calls without their counterpart were removed from this conversation.`,
  };
}

/**
 * Fits a conversation into the window (renderFitted), then the final check that nothing skips: every
 * tool message answers a call that is present and every kept call has its result. Should it find an
 * orphan (the input's own, or a fault of fitting), it removes it, says so in a notice and the report.
 */
export function renderContext(input: RenderInput): RenderOutcome {
  const outcome = renderFitted(input);
  if (!outcome.ok) return outcome;
  const repair = repairToolPairing(outcome.messages);
  if (repair.messages === outcome.messages) return outcome;
  const removed = repair.removedToolMessages + repair.removedToolCalls;
  const systemCount = leadingSystemCount(repair.messages);
  const notice = pairingNotice(removed);
  const messages = [...repair.messages.slice(0, systemCount), notice, ...repair.messages.slice(systemCount)];
  const count = (message: ContextMessage): number => countMessageTokens(message, input.tokenizer);
  const before = outcome.messages.reduce((sum, message) => sum + count(message), 0);
  const after = messages.reduce((sum, message) => sum + count(message), 0);
  return {
    ok: true,
    messages,
    report: {
      ...outcome.report,
      inputTokens: outcome.report.inputTokens - before + after,
      regions: { ...outcome.report.regions, notice: outcome.report.regions.notice + count(notice) },
      orphansRemoved: removed,
      modified: true,
    },
  };
}

function renderFitted(input: RenderInput): RenderOutcome {
  const { messages, tokenizer, policy } = input;
  const count = (message: ContextMessage): number => countMessageTokens(message, tokenizer);
  const messageTokens =
    input.messageTokens?.length === messages.length ? input.messageTokens : messages.map(count);

  const systemCount = leadingSystemCount(messages);
  const systemTokens = sumRange(messageTokens, 0, systemCount);
  const toolTokens = countToolTokens(input.tools, tokenizer);
  const summary = input.summary;
  const summaryTokens = summary === undefined ? 0 : (summary.tokens ?? count(summary.message));
  let historyBudget =
    input.window -
    systemTokens -
    summaryTokens -
    toolTokens -
    input.outputReserve -
    input.safetyMarginTokens -
    replyPrimingTokens;
  if (policy.max_history_tokens > 0) historyBudget = Math.min(historyBudget, policy.max_history_tokens);

  const turns = splitTurns(messages, systemCount);
  const turnTokens = turns.map((turn) => sumRange(messageTokens, turn.start, turn.end));
  const current = turns.at(-1);
  if (current === undefined) {
    return unchanged({
      input,
      historyBudget,
      systemTokens,
      toolTokens,
      historyTokens: 0,
      currentTurnTokens: 0,
      historyStartIndex: systemCount,
    });
  }

  const history = turns.slice(0, -1);
  const conversationTokens = sumRange(turnTokens, 0, turns.length);
  const toolResultOverCap = messages
    .slice(current.start, current.end)
    .some(
      (message) =>
        message.role === 'tool' && tokenizer.count(textOf(message.content)) > policy.max_tool_result_tokens,
    );
  if (
    summary === undefined &&
    conversationTokens <= historyBudget &&
    !toolResultOverCap &&
    (input.omittedBefore ?? 0) === 0 &&
    (policy.max_history_turns === 0 || history.length <= policy.max_history_turns + policy.keep_first_turns)
  ) {
    // Everything fits as it is: send the conversation unchanged (byte-identical upstream).
    const currentTurnTokens = turnTokens.at(-1) as number;
    return unchanged({
      input,
      historyBudget,
      systemTokens,
      toolTokens,
      historyTokens: conversationTokens - currentTurnTokens,
      currentTurnTokens,
      historyStartIndex: history[0]?.start ?? current.start,
    });
  }

  const noticeTokens = count(omissionNotice(noticeTemplateCount, summary !== undefined));
  // With any history, room for the omission notice is kept: if history does not fit, it is needed.
  const currentTurnBudget = historyBudget - (history.length > 0 ? noticeTokens : 0);
  const fitted = fitCurrentTurn(messages.slice(current.start, current.end), currentTurnBudget, input, count);
  if (fitted.tooLarge) {
    return {
      ok: false,
      reason: 'current_turn_too_large',
      neededTokens: fitted.tokens,
      budgetTokens: Math.max(0, currentTurnBudget),
      window: input.window,
    };
  }

  const pinned = (turn: Turn): boolean => {
    const first = messages[turn.start] as ContextMessage;
    return (
      first.role === 'user' && policy.pin_prefix !== '' && messageText(first).startsWith(policy.pin_prefix)
    );
  };
  let remaining = historyBudget - fitted.tokens;

  // The first turns and pinned turns come first; the sliding window takes what is left.
  const keptFirst = new Set<number>();
  const firstCandidates: number[] = [];
  history.forEach((turn, index) => {
    if (index < policy.keep_first_turns || pinned(turn)) firstCandidates.push(index);
  });
  // Room for the omission notice stays free: on this path something may be left out.
  const firstBudget = remaining - noticeTokens;

  let firstTokens = 0;
  for (const index of firstCandidates) {
    const tokens = turnTokens[index] as number;
    if (firstTokens + tokens <= firstBudget) {
      keptFirst.add(index);
      firstTokens += tokens;
    }
  }
  remaining -= firstTokens;

  const slidingIndices: number[] = [];
  for (let index = 0; index < history.length; index++) if (!keptFirst.has(index)) slidingIndices.push(index);
  const slidingTokens = slidingIndices.map((index) => turnTokens[index] as number);
  const allFit =
    sumRange(slidingTokens, 0, slidingTokens.length) <= remaining &&
    keptFirst.size === firstCandidates.length &&
    (policy.max_history_turns === 0 || slidingTokens.length <= policy.max_history_turns);

  let windowStart = 0;
  if (!allFit) {
    const available = remaining - noticeTokens;
    // Replay the requests that built this conversation (from the stored start, in a session), then
    // make sure this request fits.
    const hint = input.historyStartHint ?? 0;
    const from = slidingIndices.findIndex((index) => (history[index] as Turn).start >= hint);
    windowStart = slidingStart(
      slidingTokens,
      fitted.tokens,
      Math.max(0, historyBudget - firstTokens - noticeTokens),
      policy,
      Math.max(0, from),
    );

    let windowTokens = sumRange(slidingTokens, windowStart, slidingTokens.length);
    while (windowStart < slidingTokens.length && windowTokens > available) {
      windowTokens -= slidingTokens[windowStart] as number;
      windowStart++;
    }
  }
  // Turns at or after the first window turn that are not kept first are the window.
  const firstWindowIndex = slidingIndices[windowStart] ?? history.length;
  const windowIndices = {
    has: (index: number): boolean => index >= firstWindowIndex && !keptFirst.has(index),
  };

  let omitted = input.omittedBefore ?? 0;
  let droppedTurns = 0;
  for (const [index, turn] of history.entries()) {
    if (!keptFirst.has(index) && !windowIndices.has(index)) {
      omitted += turn.end - turn.start;
      droppedTurns++;
    }
  }
  const noticeUsed = omitted > 0;

  // Order is kept: history turns as they were, the summary where the summarized ones were, the notice
  // where the omitted ones were.
  const rendered: ContextMessage[] = messages.slice(0, systemCount);
  const notice = noticeUsed ? omissionNotice(omitted, summary !== undefined) : undefined;
  let noticePlaced = false;
  let summaryPlaced = summary === undefined;
  let historyTokens = 0;
  for (const [index, turn] of history.entries()) {
    if (!keptFirst.has(index) && !windowIndices.has(index)) continue;
    if (!summaryPlaced && turn.start >= (summary?.position ?? 0)) {
      rendered.push(summary?.message as ContextMessage);
      summaryPlaced = true;
    }
    if (notice !== undefined && !noticePlaced && windowIndices.has(index)) {
      rendered.push(notice);
      noticePlaced = true;
    }
    for (let position = turn.start; position < turn.end; position++)
      rendered.push(messages[position] as ContextMessage);

    historyTokens += turnTokens[index] as number;
  }
  if (!summaryPlaced) rendered.push(summary?.message as ContextMessage);
  if (notice !== undefined && !noticePlaced) rendered.push(notice);
  rendered.push(...fitted.messages);

  const noticeActual = notice === undefined ? 0 : count(notice);
  const modified =
    summary !== undefined ||
    omitted > 0 ||
    fitted.truncated > 0 ||
    fitted.masked > 0 ||
    fitted.droppedGroups > 0 ||
    fitted.oversizeTruncated;
  const currentTurnTokens = fitted.tokens;
  const firstWindowTurn = slidingIndices[windowStart];
  return {
    ok: true,
    messages: modified ? rendered : [...messages],
    report: {
      window: input.window,
      historyBudget,
      summaryUsed: summary !== undefined,
      inputTokens:
        systemTokens +
        summaryTokens +
        toolTokens +
        replyPrimingTokens +
        historyTokens +
        noticeActual +
        currentTurnTokens,
      regions: {
        system: systemTokens,
        summary: summaryTokens,

        history: historyTokens,
        currentTurn: currentTurnTokens,
        tools: toolTokens,
        notice: noticeActual,
        outputReserve: input.outputReserve,
        safetyMargin: input.safetyMarginTokens,
      },
      droppedMessages: omitted + fitted.droppedMessages,
      droppedTurns,
      droppedIterationGroups: fitted.droppedGroups,
      truncatedToolResults: fitted.truncated,
      maskedToolResults: fitted.masked,
      historyStartIndex:
        firstWindowTurn === undefined ? current.start : (history[firstWindowTurn] as Turn).start,
      oversizeTruncated: fitted.oversizeTruncated,
      orphansRemoved: 0,
      modified,
    },
  };
}
