// Render-time budgeting (SPEC §5): fits a conversation into the model's window without splitting a
// turn, keeping the system prompt and the current turn (current-turn.ts), the first turns and pinned
// ones, and as many recent turns as fit. Older turns are compressible before they are dropped: their
// tool results are masked (oldest first, in clear_at_least steps) and only then are whole turns left out,
// with a start that moves in steps so consecutive requests share their prefix. A final check that
// nothing skips repairs any tool message left without its call. Pure: plain data in, new plain data and
// a report out; the input is never mutated.
import { fitCurrentTurn, isMaskedResult, maskedResultText } from './current-turn.js';
import { countMessageTokens, countToolTokens, replyPrimingTokens } from './token-accounting.js';
import { leadingSystemCount, messageText, repairToolPairing, splitTurns, type Turn } from './turns.js';
import type { ContextMessage, ContextPolicy, RenderResult, Tokenizer } from './types.js';

export { truncateText } from './current-turn.js';

export interface RenderInput {
  messages: readonly ContextMessage[];
  tools?: unknown;
  /** The tool definitions' tokens when known better than their rendering (learned from the upstream). */
  toolTokens?: number;
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
  /**
   * A summary of the current turn's older iteration groups (in-turn compaction): it stands, right after
   * the turn's user message, for the turn's messages before `coversUntil` (an index into `messages`).
   */
  turnSummary?: { message: ContextMessage; coversUntil: number; tokens?: number };
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

/** History under this share of its room grows back (see slidingPlan). */
const expandBelow = 0.5;

export function omissionNotice(omittedMessages: number, summaryPresent = false): ContextMessage {
  return {
    role: 'system',
    content: `[ctxgate] ${omittedMessages} earlier messages of this conversation were omitted to fit the model's context window.${summaryPresent ? ' A summary of earlier messages is above.' : ''}`,
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
 * The sliding history's start and mask boundary, replayed over the requests that built the
 * conversation: when turn `i` was the current turn, the history before it had to fit
 * `budget − tokens(i)`. Whenever it did not, the oldest turns not yet masked had their tool results
 * masked, in steps freeing at least `clear_at_least` tokens; when even that was not enough, the start
 * jumped forward far enough that history filled at most `trim_to` of the room. Both only ever move
 * forward, so the same conversation plus one more turn keeps its prefix until the next step. `from`
 * resumes the replay at a start stored earlier.
 */
export function slidingPlan(
  wholeTokens: readonly number[],
  maskedTokens: readonly number[],
  currentTokens: number,
  budget: number,
  policy: ContextPolicy,
  from = 0,
): { start: number; maskedUntil: number } {
  let start = Math.min(Math.max(0, from), wholeTokens.length);
  const first = start;
  let maskedUntil = start;
  let sum = 0;
  const sized = (index: number): number =>
    index < maskedUntil ? (maskedTokens[index] as number) : (wholeTokens[index] as number);
  const maxTurns = policy.max_history_turns;
  const targetTurns = Math.max(1, Math.floor(policy.trim_to * maxTurns));
  for (let index = start; index <= wholeTokens.length; index++) {
    const current = index < wholeTokens.length ? (wholeTokens[index] as number) : currentTokens;
    const available = budget - current;
    if (sum > available) {
      let saved = 0;
      while (maskedUntil < index && (sum > available || saved < policy.clear_at_least)) {
        const freed = (wholeTokens[maskedUntil] as number) - (maskedTokens[maskedUntil] as number);
        if (maskedUntil >= start) {
          sum -= freed;
          saved += freed;
        }
        maskedUntil++;
      }
    }
    if (sum > available || (maxTurns > 0 && index - start > maxTurns)) {
      const target = Math.floor(policy.trim_to * available);
      while (start < index && (sum > target || (maxTurns > 0 && index - start > targetTurns))) {
        sum -= sized(start);
        start++;
      }
      // The turn just before a current turn stays when it fits on its own, even above the target.
      const previous = index - 1;
      if (start === index && previous >= 0 && sized(previous) <= available) {
        start = previous;
        sum = sized(previous);
      }
    }
    // After a turn too big for any history (the request it was current in kept none), history starts
    // again from the turns just before it, back up to trim_to of its room: that request broke the prefix
    // anyway, so this costs no cache.
    if (sum < expandBelow * available) {
      const target = Math.floor(policy.trim_to * available);
      while (
        start > first &&
        sum + sized(start - 1) <= target &&
        (maxTurns === 0 || index - (start - 1) <= targetTurns)
      ) {
        start--;
        sum += sized(start);
      }
    }
    if (maskedUntil < start) maskedUntil = start;
    if (index < wholeTokens.length) sum += sized(index);
  }
  return { start, maskedUntil };
}

/** The history start alone (the replay without masking), for callers that only need where it starts. */
export function slidingStart(
  turnTokens: readonly number[],
  currentTokens: number,
  budget: number,
  policy: ContextPolicy,
  from = 0,
): number {
  return slidingPlan(turnTokens, turnTokens, currentTokens, budget, policy, from).start;
}

/** The forms a history turn can be sent in, most faithful first. */
type TurnForm = 'whole' | 'masked' | 'user_only';

interface HistoryTurn extends Turn {
  whole: number;
  masked: number;
  userOnly: number;
  /** Tool results the masked form masks. */
  maskable: number;
}

/**
 * The tokens of a message's content: its own count less its framing (role, ids, names). Stored counts
 * make this cheap: a long text is not counted again.
 */
export function contentTokensOf(
  message: ContextMessage,
  ownTokens: number,
  count: (message: ContextMessage) => number,
): number {
  return Math.max(0, ownTokens - count({ ...message, content: '' }));
}

/** A turn's in-turn summary: it stands, after the turn's user message, for the messages before `coversUntil`. */
interface TurnSummaryPart {
  message: ContextMessage;
  tokens: number;
  coversUntil: number;
}

/**
 * A history turn in one of its forms: whole; with its tool results masked (each one whose mask is
 * shorter than it, tools named in exclude_tools aside); or its user message alone. A turn with an
 * in-turn summary keeps it after its user message in every form, in place of the messages it covers.
 */
function turnForm(
  messages: readonly ContextMessage[],
  messageTokens: readonly number[],
  turn: Turn,
  form: TurnForm,
  policy: ContextPolicy,
  count: (message: ContextMessage) => number,
  summary: TurnSummaryPart | undefined,
): { messages: ContextMessage[]; tokens: number; masked: number; summarized: number } {
  const out: ContextMessage[] = [];
  let tokens = 0;
  let masked = 0;
  let from = turn.start;
  const first = messages[turn.start] as ContextMessage;
  if (first.role === 'user') {
    out.push(first);
    tokens += messageTokens[turn.start] as number;
    from++;
  }
  let summarized = 0;
  if (summary !== undefined) {
    out.push(summary.message);
    tokens += summary.tokens;
    summarized = Math.max(0, Math.min(summary.coversUntil, turn.end) - from);
    from = Math.max(from, Math.min(summary.coversUntil, turn.end));
  }
  if (form === 'user_only' && first.role === 'user') return { messages: out, tokens, masked, summarized };
  const excluded = new Set(policy.exclude_tools);
  const names = new Map<string, string>();
  for (let index = turn.start; index < from; index++)
    for (const call of (messages[index] as ContextMessage).tool_calls ?? [])
      names.set(call.id, call.function?.name ?? 'tool');
  for (let index = from; index < turn.end; index++) {
    const message = messages[index] as ContextMessage;
    const own = messageTokens[index] as number;
    for (const call of message.tool_calls ?? []) names.set(call.id, call.function?.name ?? 'tool');
    if (
      form === 'masked' &&
      message.role === 'tool' &&
      !isMaskedResult(message) &&
      !excluded.has(names.get(message.tool_call_id ?? '') ?? '')
    ) {
      const maskedMessage = { ...message, content: maskedResultText(contentTokensOf(message, own, count)) };
      const maskedTokens = count(maskedMessage);
      if (maskedTokens < own) {
        out.push(maskedMessage);
        tokens += maskedTokens;
        masked++;
        continue;
      }
    }
    out.push(message);
    tokens += own;
  }
  return { messages: out, tokens, masked, summarized };
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
  const tools = toolTokensFor(input, messages);
  return {
    ok: true,
    messages,
    report: {
      ...outcome.report,
      inputTokens: outcome.report.inputTokens - before + after - outcome.report.regions.tools + tools,
      regions: {
        ...outcome.report.regions,
        notice: outcome.report.regions.notice + count(notice),
        tools,
      },
      orphansRemoved: removed,
      modified: true,
    },
  };
}

/** The tool definitions' tokens in a prompt that starts with these messages (a system message first carries them). */
function toolTokensFor(input: RenderInput, messages: readonly ContextMessage[]): number {
  if (input.toolTokens !== undefined) return input.toolTokens;
  const first = messages[0];
  const system = first !== undefined && (first.role === 'system' || first.role === 'developer');
  return countToolTokens(input.tools, input.tokenizer, {
    firstSystemText: system ? messageText(first) : undefined,
  });
}

function sumRange(values: readonly number[], start: number, end: number): number {
  let total = 0;
  for (let index = start; index < end; index++) total += values[index] as number;
  return total;
}

function renderFitted(input: RenderInput): RenderOutcome {
  const { messages, tokenizer, policy } = input;
  const count = (message: ContextMessage): number => countMessageTokens(message, tokenizer);
  const messageTokens =
    input.messageTokens?.length === messages.length ? input.messageTokens : messages.map(count);

  const systemCount = leadingSystemCount(messages);
  const systemTokens = sumRange(messageTokens, 0, systemCount);
  const toolTokens = toolTokensFor(input, messages);
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

  const pinned = (turn: Turn): boolean => {
    const first = messages[turn.start] as ContextMessage;
    return (
      first.role === 'user' && policy.pin_prefix !== '' && messageText(first).startsWith(policy.pin_prefix)
    );
  };
  const history = turns.slice(0, -1);
  // The turns a turn cap counts: the first turns and pinned ones are kept apart from it.
  const slidingTurnCount = history.filter(
    (turn, index) => !(index < policy.keep_first_turns || pinned(turn)),
  ).length;
  const conversationTokens = sumRange(turnTokens, 0, turns.length);
  let toolResultOverCap = false;
  for (let position = current.start; position < current.end && !toolResultOverCap; position++) {
    const message = messages[position] as ContextMessage;
    toolResultOverCap =
      message.role === 'tool' &&
      contentTokensOf(message, messageTokens[position] as number, count) > policy.max_tool_result_tokens;
  }
  if (
    summary === undefined &&
    input.turnSummary === undefined &&
    conversationTokens <= historyBudget &&
    !toolResultOverCap &&
    (input.omittedBefore ?? 0) === 0 &&
    (policy.max_history_turns === 0 || slidingTurnCount <= policy.max_history_turns)
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

  // The in-turn summary belongs to the turn its covered messages are in: the current one, or one now in
  // history (it stays in place there, ahead of a history summary that may cover the turn later).
  const turnSummary = input.turnSummary;
  const summarizedTurn =
    turnSummary === undefined
      ? -1
      : turns.findIndex(
          (turn) => turn.start < turnSummary.coversUntil && turnSummary.coversUntil <= turn.end,
        );
  const summaryPart: TurnSummaryPart | undefined =
    turnSummary === undefined || summarizedTurn < 0
      ? undefined
      : {
          message: turnSummary.message,
          tokens: turnSummary.tokens ?? count(turnSummary.message),
          coversUntil: turnSummary.coversUntil,
        };
  const noticeTokens = count(omissionNotice(noticeTemplateCount, summary !== undefined));
  // With any history, room for the omission notice is kept: if history does not fit, it is needed.
  const currentTurnBudget = historyBudget - (history.length > 0 ? noticeTokens : 0);
  const currentMessages = messages.slice(current.start, current.end);
  const fitted = fitCurrentTurn({
    turn: currentMessages,
    turnTokens: messageTokens.slice(current.start, current.end),
    budget: currentTurnBudget,
    policy,
    tokenizer,
    count,
    turnSummary:
      summaryPart === undefined || summarizedTurn !== turns.length - 1
        ? undefined
        : { ...summaryPart, coversUntil: summaryPart.coversUntil - current.start },
  });
  if (fitted.tooLarge) {
    return {
      ok: false,
      reason: 'current_turn_too_large',
      neededTokens: fitted.tokens,
      budgetTokens: Math.max(0, currentTurnBudget),
      window: input.window,
    };
  }

  // Each history turn whole, with its tool results masked, and as its user message alone.
  const summaryOf = (index: number): TurnSummaryPart | undefined =>
    index === summarizedTurn ? summaryPart : undefined;
  const formOf = (index: number, form: TurnForm) =>
    turnForm(messages, messageTokens, history[index] as Turn, form, policy, count, summaryOf(index));
  const historyTurns: HistoryTurn[] = history.map((turn, index) => {
    const summarized = summaryOf(index) !== undefined;
    const whole = summarized ? formOf(index, 'whole').tokens : (turnTokens[index] as number);
    const masked = formOf(index, 'masked');
    const first = messages[turn.start] as ContextMessage;
    const userOnly = first.role === 'user' ? formOf(index, 'user_only').tokens : whole;
    return { ...turn, whole, masked: masked.tokens, userOnly, maskable: masked.masked };
  });

  let remaining = historyBudget - fitted.tokens;

  // The first turns and pinned turns come first, compressed as far as needed: masked, then their user
  // message alone (which is kept whenever it fits), then left out.
  const firstForms = new Map<number, TurnForm>();
  history.forEach((turn, index) => {
    if (index < policy.keep_first_turns || pinned(turn)) firstForms.set(index, 'whole');
  });
  // Room for the omission notice stays free: on this path something may be left out.
  const firstBudget = remaining - noticeTokens;
  const formTokens = (index: number, form: TurnForm): number => {
    const turn = historyTurns[index] as HistoryTurn;
    return form === 'whole' ? turn.whole : form === 'masked' ? turn.masked : turn.userOnly;
  };
  let firstTokens = 0;
  for (const [index, form] of firstForms) firstTokens += formTokens(index, form);
  for (const next of ['masked', 'user_only'] as const) {
    for (const index of firstForms.keys()) {
      if (firstTokens <= firstBudget) break;
      const before = formTokens(index, firstForms.get(index) as TurnForm);
      const after = formTokens(index, next);
      if (after < before) {
        firstForms.set(index, next);
        firstTokens -= before - after;
      }
    }
  }
  for (const index of [...firstForms.keys()].reverse()) {
    if (firstTokens <= firstBudget) break;
    firstTokens -= formTokens(index, firstForms.get(index) as TurnForm);
    firstForms.delete(index);
  }
  remaining -= firstTokens;

  const slidingIndices: number[] = [];
  for (let index = 0; index < history.length; index++) if (!firstForms.has(index)) slidingIndices.push(index);
  const slidingWhole = slidingIndices.map((index) => (historyTurns[index] as HistoryTurn).whole);
  const slidingMasked = slidingIndices.map((index) => (historyTurns[index] as HistoryTurn).masked);
  // A first turn sent shortened, or messages already gone, need the notice: its room is kept.
  const firstsShortened =
    (input.omittedBefore ?? 0) > 0 ||
    [...firstForms.values()].some((form) => form === 'user_only') ||
    history.some(
      (turn, index) => (index < policy.keep_first_turns || pinned(turn)) && !firstForms.has(index),
    );
  const allFit =
    sumRange(slidingWhole, 0, slidingWhole.length) <= remaining - (firstsShortened ? noticeTokens : 0) &&
    (policy.max_history_turns === 0 || slidingWhole.length <= policy.max_history_turns);

  let windowStart = 0;
  let maskedUntil = 0;
  if (!allFit) {
    const available = remaining - noticeTokens;
    // Replay the requests that built this conversation (from the stored start, in a session), then
    // make sure this request fits.
    const hint = input.historyStartHint ?? 0;
    const from = slidingIndices.findIndex((index) => (history[index] as Turn).start >= hint);
    const plan = slidingPlan(
      slidingWhole,
      slidingMasked,
      fitted.tokens,
      Math.max(0, historyBudget - firstTokens - noticeTokens),
      policy,
      Math.max(0, from),
    );
    windowStart = plan.start;
    maskedUntil = plan.maskedUntil;
    const sized = (position: number): number =>
      position < maskedUntil ? (slidingMasked[position] as number) : (slidingWhole[position] as number);
    let windowTokens = 0;
    for (let position = windowStart; position < slidingWhole.length; position++)
      windowTokens += sized(position);
    // This request must fit: mask further, then drop from the start.
    while (windowTokens > available && maskedUntil < slidingWhole.length) {
      windowTokens -= (slidingWhole[maskedUntil] as number) - (slidingMasked[maskedUntil] as number);
      maskedUntil++;
    }
    while (windowStart < slidingWhole.length && windowTokens > available) {
      windowTokens -= sized(windowStart);
      windowStart++;
    }
    if (maskedUntil < windowStart) maskedUntil = windowStart;
  }
  // The form each history turn is sent in; absent: left out.
  const forms = new Map<number, TurnForm>(firstForms);
  slidingIndices.forEach((index, position) => {
    if (position >= windowStart) forms.set(index, position < maskedUntil ? 'masked' : 'whole');
  });
  const firstWindowIndex = slidingIndices[windowStart] ?? history.length;

  let omitted = input.omittedBefore ?? 0;
  let droppedTurns = 0;
  for (const [index, turn] of history.entries()) {
    const form = forms.get(index);
    if (form === undefined) {
      omitted += turn.end - turn.start;
      droppedTurns++;
    } else if (form === 'user_only') omitted += turn.end - turn.start - 1;
  }
  const noticeUsed = omitted > 0;

  // Order is kept: history turns as they were, the summary where the summarized ones were, the notice
  // where the omitted ones were.
  const rendered: ContextMessage[] = messages.slice(0, systemCount);
  const notice = noticeUsed ? omissionNotice(omitted, summary !== undefined) : undefined;
  let noticePlaced = false;
  let summaryPlaced = summary === undefined;
  let historyTokens = 0;
  let maskedResults = 0;
  let summarizedMessages = 0;
  for (const [index, turn] of history.entries()) {
    const form = forms.get(index);
    if (form === undefined) continue;
    if (!summaryPlaced && turn.start >= (summary?.position ?? 0)) {
      rendered.push(summary?.message as ContextMessage);
      summaryPlaced = true;
    }
    if (notice !== undefined && !noticePlaced && index >= firstWindowIndex) {
      rendered.push(notice);
      noticePlaced = true;
    }
    if (form === 'whole' && summaryOf(index) === undefined) {
      for (let position = turn.start; position < turn.end; position++)
        rendered.push(messages[position] as ContextMessage);
    } else {
      const built = formOf(index, form);
      rendered.push(...built.messages);
      maskedResults += built.masked;
      summarizedMessages += built.summarized;
    }
    historyTokens += formTokens(index, form);
  }
  if (!summaryPlaced) rendered.push(summary?.message as ContextMessage);
  if (notice !== undefined && !noticePlaced) rendered.push(notice);
  rendered.push(...fitted.messages);

  const noticeActual = notice === undefined ? 0 : count(notice);
  const modified =
    summary !== undefined ||
    omitted > 0 ||
    maskedResults > 0 ||
    fitted.truncated > 0 ||
    fitted.masked > 0 ||
    fitted.droppedGroups > 0 ||
    fitted.summarizedMessages > 0 ||
    summarizedMessages > 0 ||
    fitted.oversizeTruncated;
  const currentTurnTokens = fitted.tokens - fitted.noticeTokens;
  const firstWindowTurn = slidingIndices[windowStart];
  // A summary or notice that now opens the prompt carries the tool definitions: counted as sent.
  const sentToolTokens = modified ? toolTokensFor(input, rendered) : toolTokens;
  return {
    ok: true,
    messages: modified ? rendered : [...messages],
    report: {
      window: input.window,
      historyBudget,
      summaryUsed: summary !== undefined || fitted.summarizedMessages > 0 || summarizedMessages > 0,
      inputTokens:
        systemTokens +
        summaryTokens +
        sentToolTokens +
        replyPrimingTokens +
        historyTokens +
        noticeActual +
        fitted.tokens,
      regions: {
        system: systemTokens,
        summary: summaryTokens,
        history: historyTokens,
        currentTurn: currentTurnTokens,
        tools: sentToolTokens,
        notice: noticeActual + fitted.noticeTokens,
        outputReserve: input.outputReserve,
        safetyMargin: input.safetyMarginTokens,
      },
      droppedMessages: omitted + fitted.droppedMessages,
      droppedTurns,
      droppedIterationGroups: fitted.droppedGroups,
      truncatedToolResults: fitted.truncated,
      maskedToolResults: maskedResults + fitted.masked,
      historyStartIndex:
        firstWindowTurn === undefined ? current.start : (history[firstWindowTurn] as Turn).start,
      oversizeTruncated: fitted.oversizeTruncated,
      orphansRemoved: 0,
      modified,
    },
  };
}
