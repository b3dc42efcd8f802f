// Render-time budgeting (docs/budgeting.md): fits a conversation into the model's window without splitting a
// turn, keeping the system prompt and the current turn (current-turn.ts), the first turns and pinned
// ones, and as many recent turns as fit. Older turns are compressible before they are dropped: their
// tool results are masked (oldest first, in clear_at_least steps) and only then are whole turns left out,
// with a start that moves in steps so consecutive requests share their prefix. A final check that
// nothing skips repairs any tool message left without its call. Pure: plain data in, new plain data and
// a report out; the input is never mutated.
import { fitCurrentTurn, isMaskedResult, maskedResultText } from './current-turn.js';
import { placeNotices, type NoticePlacement } from './notice-placement.js';
import {
  countMessageTokens,
  countToolTokens,
  replyPrimingTokens,
  withFirstSystem,
  type ToolFormat,
} from './token-accounting.js';
import { leadingSystemCount, messageText, repairToolPairing, splitTurns, type Turn } from './turns.js';
import type { ContextMessage, ContextPolicy, RenderResult, Tokenizer } from './types.js';

export { truncateText } from './current-turn.js';

export interface RenderInput {
  messages: readonly ContextMessage[];
  tools?: unknown;
  /** The tool definitions' tokens when known better than their rendering (learned from the upstream). */
  toolTokens?: number;
  /**
   * The tool definitions' own tokens (token-accounting.ts toolDefinitionTokens of `tools` in
   * `toolFormat` with this tokenizer), when counted already: the planner counts a tool set once, and an
   * agent sends the same set with every step.
   */
  toolFormula?: number;
  /** How the provider writes tool definitions into the prompt (default: as OpenAI does). */
  toolFormat?: ToolFormat;
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
   * A summary of earlier messages (a session's, docs/sessions.md#summarization): always sent, counted in the budget as its own
   * region, and placed before the first message at or after `position` (an index into `messages`).
   */
  summary?: { message: ContextMessage; position: number; tokens?: number; covers?: number };
  /**
   * A summary of the current turn's older iteration groups (in-turn compaction): it stands, right after
   * the turn's user message, for the turn's messages before `coversUntil` (an index into `messages`).
   */
  turnSummary?: { message: ContextMessage; coversUntil: number; tokens?: number };
  /**
   * In-turn summaries of earlier turns (a session keeps each with its turn when a later turn gets its
   * own): each stands, right after its turn's user message, for that turn's messages before `coversUntil`.
   */
  pastTurnSummaries?: ReadonlyArray<{ message: ContextMessage; coversUntil: number; tokens?: number }>;
  /** Where the gateway's notices and summaries go (default inline: system messages where they stand). */
  noticePlacement?: NoticePlacement;
}

export type RenderOutcome =
  | ({ ok: true } & RenderResult)
  | {
      ok: false;
      reason: 'current_turn_too_large';
      neededTokens: number;
      budgetTokens: number;
      /** The budget before it is floored at 0: negative when the fixed parts alone exceed the room. */
      rawBudgetTokens: number;
      /** The current turn's tokens, whole: what it would take before anything in it is masked or dropped. */
      wholeTurnTokens: number;
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
  return Math.max(0, ownTokens - count(Object.assign({}, message, { content: '' })));
}

/** A turn's in-turn summary: it stands, after the turn's user message, for the messages before `coversUntil`. */
interface TurnSummaryPart {
  message: ContextMessage;
  tokens: number;
  coversUntil: number;
}

/** Whether a turn holds a tool result: only such a turn has a masked form smaller than itself. */
function holdsToolResult(messages: readonly ContextMessage[], turn: Turn): boolean {
  for (let index = turn.start; index < turn.end; index++)
    if ((messages[index] as ContextMessage).role === 'tool') return true;
  return false;
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
  // Tool names are looked up only when some tools are never masked (most policies exclude none).
  const excluded = policy.exclude_tools;
  const names = new Map<string, string>();
  const nameCalls = (message: ContextMessage): void => {
    if (excluded.length > 0)
      for (const call of message.tool_calls ?? []) names.set(call.id, call.function?.name ?? 'tool');
  };
  for (let index = turn.start; index < from; index++) nameCalls(messages[index] as ContextMessage);
  for (let index = from; index < turn.end; index++) {
    const message = messages[index] as ContextMessage;
    const own = messageTokens[index] as number;
    nameCalls(message);
    if (
      form === 'masked' &&
      message.role === 'tool' &&
      !isMaskedResult(message) &&
      !(excluded.length > 0 && excluded.includes(names.get(message.tool_call_id ?? '') ?? ''))
    ) {
      const maskedMessage = Object.assign({}, message, {
        content: maskedResultText(contentTokensOf(message, own, count)),
      });
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
function unchanged(
  sent: { input: RenderInput; historyBudget: number; systemTokens: number; toolTokens: number },
  counted: { historyTokens: number; currentTurnTokens: number; historyStartIndex: number },
): RenderOutcome {
  const { input } = sent;
  return {
    ok: true,
    messages: [...input.messages],
    report: {
      window: input.window,
      historyBudget: sent.historyBudget,
      summaryUsed: false,
      inputTokens:
        sent.systemTokens +
        sent.toolTokens +
        replyPrimingTokens +
        counted.historyTokens +
        counted.currentTurnTokens,
      regions: {
        system: sent.systemTokens,
        summary: 0,
        history: counted.historyTokens,
        currentTurn: counted.currentTurnTokens,
        tools: sent.toolTokens,
        notice: 0,
        outputReserve: input.outputReserve,
        safetyMargin: input.safetyMarginTokens,
      },
      droppedMessages: 0,
      summarizedMessages: 0,
      droppedTurns: 0,
      droppedIterationGroups: 0,
      truncatedToolResults: 0,
      maskedToolResults: 0,
      historyStartIndex: counted.historyStartIndex,
      oversizeTruncated: false,
      orphansRemoved: 0,
      orphanMessagesRemoved: 0,
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
  const outcome = pairedOutcome(input);
  const placement = input.noticePlacement ?? 'inline';
  if (!outcome.ok || placement === 'inline' || !outcome.report.modified) return outcome;
  // The gateway's notices and summaries where the provider's chat template accepts them.
  const count = (message: ContextMessage): number => countMessageTokens(message, input.tokenizer);
  const placed = placeNotices(outcome.messages, leadingSystemCount(input.messages), placement, count);
  const tools = toolTokensFor(input, placed.messages);
  const { report } = outcome;
  return {
    ok: true,
    messages: placed.messages,
    report: Object.assign({}, report, {
      inputTokens: report.inputTokens + placed.tokenDelta - report.regions.tools + tools,
      regions: Object.assign({}, report.regions, {
        notice: Math.max(0, report.regions.notice + placed.tokenDelta),
        tools,
      }),
    }),
  };
}

function pairedOutcome(input: RenderInput): RenderOutcome {
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
    report: Object.assign({}, outcome.report, {
      inputTokens: outcome.report.inputTokens - before + after - outcome.report.regions.tools + tools,
      regions: Object.assign({}, outcome.report.regions, {
        notice: outcome.report.regions.notice + count(notice),
        tools,
      }),
      orphansRemoved: removed,
      orphanMessagesRemoved: outcome.messages.length - repair.messages.length,
      modified: true,
    }),
  };
}

/** The tool definitions' tokens in a prompt that starts with these messages (a system message first carries them). */
function toolTokensFor(input: RenderInput, messages: readonly ContextMessage[]): number {
  if (input.toolTokens !== undefined) return input.toolTokens;
  const first = messages[0];
  const system = first !== undefined && (first.role === 'system' || first.role === 'developer');
  const firstSystemText = system ? messageText(first) : undefined;
  const format = input.toolFormat ?? 'typescript';
  return input.toolFormula === undefined
    ? countToolTokens(input.tools, input.tokenizer, { firstSystemText, format })
    : withFirstSystem(input.toolFormula, input.tokenizer, firstSystemText, format);
}

function sumRange(values: readonly number[], start: number, end: number): number {
  let total = 0;
  for (let index = start; index < end; index++) total += values[index] as number;
  return total;
}

/** What every step of fitting one conversation reads: its turns, their counts and the budgets. */
interface Fit {
  input: RenderInput;
  messages: readonly ContextMessage[];
  policy: ContextPolicy;
  count: (message: ContextMessage) => number;
  messageTokens: readonly number[];
  systemCount: number;
  systemTokens: number;
  toolTokens: number;
  summaryTokens: number;
  historyBudget: number;
  turns: Turn[];
  turnTokens: number[];
  history: Turn[];
  /** First turns (keep_first_turns) and pinned ones, by history index: kept apart from the sliding window. */
  isFirst: (index: number) => boolean;
  /** The omission notice's tokens at its largest (counted on first use: most requests fit as they are). */
  noticeTokens: () => number;
}

function fitOf(input: RenderInput): Fit {
  const { messages, tokenizer, policy } = input;
  const count = (message: ContextMessage): number => countMessageTokens(message, tokenizer);
  const messageTokens =
    input.messageTokens?.length === messages.length ? input.messageTokens : messages.map(count);
  const systemCount = leadingSystemCount(messages);
  const systemTokens = sumRange(messageTokens, 0, systemCount);
  const toolTokens = toolTokensFor(input, messages);
  const summaryTokens =
    input.summary === undefined ? 0 : (input.summary.tokens ?? count(input.summary.message));
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
  const history = turns.slice(0, -1);
  let noticeTokens: number | undefined;
  let firsts: boolean[] | undefined;
  const pinned = (turn: Turn): boolean => {
    const first = messages[turn.start] as ContextMessage;
    return (
      first.role === 'user' && policy.pin_prefix !== '' && messageText(first).startsWith(policy.pin_prefix)
    );
  };
  return {
    input,
    messages,
    policy,
    count,
    messageTokens,
    systemCount,
    systemTokens,
    toolTokens,
    summaryTokens,
    historyBudget,
    turns,
    turnTokens: turns.map((turn) => sumRange(messageTokens, turn.start, turn.end)),
    history,
    // Found once, when first asked: several passes over a long history ask it of every turn.
    isFirst: (index) =>
      (firsts ??= history.map((turn, at) => at < policy.keep_first_turns || pinned(turn)))[index] === true,
    // A function, not a getter: built per request, this literal with a getter kept the whole request
    // alive through young collections until the next full one (measured with --trace-gc-nvp: about 3 KB
    // of each request promoted, 2 µs of scavenging per request; with the function, on Node 22, render
    // promotes no more than parsing the body does).
    noticeTokens: () =>
      (noticeTokens ??= count(omissionNotice(noticeTemplateCount, input.summary !== undefined))),
  };
}

/** Everything fits as it is, nothing to summarize, cap or cut: the conversation goes unchanged. */
function fitsAsItIs(fit: Fit, current: Turn): boolean {
  const { input, policy, messages, messageTokens, count } = fit;
  if (
    input.summary !== undefined ||
    input.turnSummary !== undefined ||
    (input.pastTurnSummaries?.length ?? 0) > 0 ||
    (input.omittedBefore ?? 0) !== 0
  )
    return false;
  if (sumRange(fit.turnTokens, 0, fit.turns.length) > fit.historyBudget) return false;
  for (let position = current.start; position < current.end; position++) {
    const message = messages[position] as ContextMessage;
    if (
      message.role === 'tool' &&
      contentTokensOf(message, messageTokens[position] as number, count) > policy.max_tool_result_tokens
    )
      return false;
  }
  // The turns a turn cap counts: the first turns and pinned ones are kept apart from it.
  const slidingTurnCount = fit.history.filter((_turn, index) => !fit.isFirst(index)).length;
  return policy.max_history_turns === 0 || slidingTurnCount <= policy.max_history_turns;
}

/**
 * Each in-turn summary belongs to the turn its covered messages are in: the current one, or one now in
 * history (it stays in place there, ahead of a history summary that may cover the turn later). By turn
 * index; the latest summary wins a turn two claim.
 */
function turnSummaryParts(fit: Fit): Map<number, TurnSummaryPart> {
  const parts = new Map<number, TurnSummaryPart>();
  const { pastTurnSummaries = [], turnSummary } = fit.input;
  for (const summary of turnSummary === undefined ? pastTurnSummaries : [...pastTurnSummaries, turnSummary]) {
    const turn = fit.turns.findIndex(
      (candidate) => candidate.start < summary.coversUntil && summary.coversUntil <= candidate.end,
    );
    if (turn >= 0)
      parts.set(turn, {
        message: summary.message,
        tokens: summary.tokens ?? fit.count(summary.message),
        coversUntil: summary.coversUntil,
      });
  }
  return parts;
}

/**
 * The first turns and pinned turns come first, compressed as far as needed: masked, then their user
 * message alone (kept whenever it fits beside the current turn at its largest request), then left out.
 * That is one sequence of steps, the same for any budget — each turn masked, oldest first; then each
 * reduced to its user message; then the newest left out first — taken until the turns fit: a budget's
 * forms are a prefix of it, and a smaller budget's a longer one.
 */
interface FirstTurnSteps {
  /** The first turns, by history index. */
  indices: number[];
  steps: Array<{ index: number; form: TurnForm | undefined }>;
  /** The first turns' tokens whole, then after each step. */
  tokens: number[];
}

function firstTurnSteps(fit: Fit, formTokens: (index: number, form: TurnForm) => number): FirstTurnSteps {
  const indices: number[] = [];
  fit.history.forEach((_turn, index) => {
    if (fit.isFirst(index)) indices.push(index);
  });
  const forms = new Map<number, TurnForm>(indices.map((index) => [index, 'whole']));
  let total = 0;
  for (const index of indices) total += formTokens(index, 'whole');
  const steps: FirstTurnSteps['steps'] = [];
  const tokens = [total];
  for (const next of ['masked', 'user_only'] as const)
    for (const index of indices) {
      const before = formTokens(index, forms.get(index) as TurnForm);
      const after = formTokens(index, next);
      if (after < before) {
        forms.set(index, next);
        total -= before - after;
        steps.push({ index, form: next });
        tokens.push(total);
      }
    }
  for (const index of [...indices].reverse()) {
    total -= formTokens(index, forms.get(index) as TurnForm);
    steps.push({ index, form: undefined });
    tokens.push(total);
  }
  return { indices, steps, tokens };
}

/** The fewest steps (from `taken` on) after which the first turns fit `budget`; all of them if none does. */
function stepsWithin(first: FirstTurnSteps, budget: number, taken = 0): number {
  let count = taken;
  while (count < first.steps.length && (first.tokens[count] as number) > budget) count++;
  return count;
}

function firstTurnForms(
  first: FirstTurnSteps,
  budget: number,
): { forms: Map<number, TurnForm>; tokens: number } {
  const taken = stepsWithin(first, budget);
  const forms = new Map<number, TurnForm>(first.indices.map((index) => [index, 'whole']));
  for (const { index, form } of first.steps.slice(0, taken))
    if (form === undefined) forms.delete(index);
    else forms.set(index, form);
  return { forms, tokens: first.tokens[taken] as number };
}

/**
 * The sliding history's window: replay the requests that built this conversation (from the stored start,
 * in a session), then make sure this request fits — mask further, then drop from the start.
 */
function slidingWindow(options: {
  fit: Fit;
  slidingIndices: readonly number[];
  whole: readonly number[];
  masked: readonly number[];
  currentTokens: number;
  firstTokens: number;
  available: number;
}): { windowStart: number; maskedUntil: number } {
  const { fit, whole, masked, available } = options;
  const hint = fit.input.historyStartHint ?? 0;
  const from = options.slidingIndices.findIndex((index) => (fit.history[index] as Turn).start >= hint);
  const plan = slidingPlan(
    whole,
    masked,
    options.currentTokens,
    Math.max(0, fit.historyBudget - options.firstTokens - fit.noticeTokens()),
    fit.policy,
    Math.max(0, from),
  );
  let windowStart = plan.start;
  let maskedUntil = plan.maskedUntil;
  const sized = (position: number): number =>
    position < maskedUntil ? (masked[position] as number) : (whole[position] as number);
  let windowTokens = 0;
  for (let position = windowStart; position < whole.length; position++) windowTokens += sized(position);
  while (windowTokens > available && maskedUntil < whole.length) {
    windowTokens -= (whole[maskedUntil] as number) - (masked[maskedUntil] as number);
    maskedUntil++;
  }
  while (windowStart < whole.length && windowTokens > available) {
    windowTokens -= sized(windowStart);
    windowStart++;
  }
  return { windowStart, maskedUntil: Math.max(maskedUntil, windowStart) };
}

/** The form each history turn is sent in (absent: left out), and where the sliding window starts. */
function historyForms(
  fit: Fit,
  historyTurns: readonly HistoryTurn[],
  current: { tokens: number; peakTokens: number; peakLevels: readonly number[] },
): { forms: Array<TurnForm | undefined>; firstWindowIndex: number } {
  const { tokens: currentTokens, peakTokens: currentPeakTokens } = current;
  const { history, policy, input } = fit;
  const formTokens = (index: number, form: TurnForm): number => {
    const turn = historyTurns[index] as HistoryTurn;
    return form === 'whole' ? turn.whole : form === 'masked' ? turn.masked : turn.userOnly;
  };
  // History — the first turns, then the sliding window — gets what the current turn left it at its peak
  // (replayed over its loop): a turn shortened or left out then stays so for the rest of the loop, and a
  // masking step that shrinks the current turn lets nothing older back in. (Across turns history follows
  // what each turn leaves: a chat's window fills as it may.)
  const peak = Math.max(currentTokens, Math.min(currentPeakTokens, fit.historyBudget));
  const peakRoom = fit.historyBudget - peak;
  // Room for the omission notice stays free: on this path something may be left out.
  const steps = firstTurnSteps(fit, formTokens);
  const first = firstTurnForms(steps, peakRoom - fit.noticeTokens());
  // The sliding window gets no more than it had at any request of the loop: room a first turn freed
  // when the growing loop shortened it stays free, so no older turn comes back. The levels ascend, so
  // the rooms descend and each takes the steps of the one before and maybe more.
  let slidingRoom = peakRoom - first.tokens;
  let taken = 0;
  if (steps.indices.length > 0)
    for (const level of current.peakLevels) {
      if (level >= peak) break;
      const room = fit.historyBudget - level;
      taken = stepsWithin(steps, room - fit.noticeTokens(), taken);
      slidingRoom = Math.min(slidingRoom, room - (steps.tokens[taken] as number));
    }
  const slidingIndices: number[] = [];
  for (let index = 0; index < history.length; index++)
    if (!first.forms.has(index)) slidingIndices.push(index);
  const whole = slidingIndices.map((index) => (historyTurns[index] as HistoryTurn).whole);
  const masked = slidingIndices.map((index) => (historyTurns[index] as HistoryTurn).masked);
  // A first turn sent shortened, or messages already gone, need the notice: its room is kept.
  const firstsShortened =
    (input.omittedBefore ?? 0) > 0 ||
    [...first.forms.values()].some((form) => form === 'user_only') ||
    history.some((_turn, index) => fit.isFirst(index) && !first.forms.has(index));
  const allFit =
    sumRange(whole, 0, whole.length) <= slidingRoom - (firstsShortened ? fit.noticeTokens() : 0) &&
    (policy.max_history_turns === 0 || whole.length <= policy.max_history_turns);
  const { windowStart, maskedUntil } = allFit
    ? { windowStart: 0, maskedUntil: 0 }
    : slidingWindow({
        fit,
        slidingIndices,
        whole,
        masked,
        currentTokens: peak,
        firstTokens: first.tokens,
        available: slidingRoom - fit.noticeTokens(),
      });
  // By history index (undefined: left out); an array, as a long session's thousands of turns are read
  // twice by assemble.
  const forms = new Array<TurnForm | undefined>(history.length).fill(undefined);
  for (const [index, form] of first.forms) forms[index] = form;
  for (let position = windowStart; position < slidingIndices.length; position++)
    forms[slidingIndices[position] as number] = position < maskedUntil ? 'masked' : 'whole';
  return { forms, firstWindowIndex: slidingIndices[windowStart] ?? history.length };
}

/**
 * The prompt in order: history turns as they were, the summary where the summarized ones were, the
 * notice where the omitted ones were, then the current turn.
 */
function assemble(options: {
  fit: Fit;
  /** Each history turn's form, by its index; undefined: left out. */
  forms: ReadonlyArray<TurnForm | undefined>;
  firstWindowIndex: number;
  historyTurns: readonly HistoryTurn[];
  formOf: (index: number, form: TurnForm) => ReturnType<typeof turnForm>;
  /** Turns with an in-turn summary in them, by history index. */
  summarizedTurns: ReadonlyMap<number, unknown>;
  current: readonly ContextMessage[];
}) {
  const { fit, forms, historyTurns, formOf } = options;
  const { messages, history, input } = fit;
  const summary = input.summary;
  let omitted = input.omittedBefore ?? 0;
  let droppedTurns = 0;
  for (let index = 0; index < history.length; index++) {
    const turn = history[index] as Turn;
    const form = forms[index];
    if (form === undefined) {
      omitted += turn.end - turn.start;
      droppedTurns++;
    } else if (form === 'user_only')
      // Its in-turn summary, still sent, stands for the messages it covers: they are not omitted.
      omitted +=
        turn.end -
        turn.start -
        1 -
        (options.summarizedTurns.has(index) ? formOf(index, 'user_only').summarized : 0);
  }
  const rendered: ContextMessage[] = messages.slice(0, fit.systemCount);
  const notice = omitted > 0 ? omissionNotice(omitted, summary !== undefined) : undefined;
  let noticePlaced = false;
  let summaryPlaced = summary === undefined;
  const totals = { historyTokens: 0, maskedResults: 0, summarizedMessages: 0 };
  for (let index = 0; index < history.length; index++) {
    const turn = history[index] as Turn;
    const form = forms[index];
    if (form === undefined) continue;
    if (!summaryPlaced && turn.start >= (summary?.position ?? 0)) {
      rendered.push(summary?.message as ContextMessage);
      summaryPlaced = true;
    }
    if (notice !== undefined && !noticePlaced && index >= options.firstWindowIndex) {
      rendered.push(notice);
      noticePlaced = true;
    }
    const historyTurn = historyTurns[index] as HistoryTurn;
    // A masked form that masks nothing is the turn as it was.
    const asItWas = form === 'whole' || (form === 'masked' && historyTurn.maskable === 0);
    if (asItWas && !options.summarizedTurns.has(index)) {
      for (let position = turn.start; position < turn.end; position++)
        rendered.push(messages[position] as ContextMessage);
    } else {
      const built = formOf(index, form);
      rendered.push(...built.messages);
      totals.maskedResults += built.masked;
      totals.summarizedMessages += built.summarized;
    }
    totals.historyTokens +=
      form === 'whole' ? historyTurn.whole : form === 'masked' ? historyTurn.masked : historyTurn.userOnly;
  }
  if (!summaryPlaced) rendered.push(summary?.message as ContextMessage);
  if (notice !== undefined && !noticePlaced) rendered.push(notice);
  rendered.push(...options.current);
  return { rendered, notice, omitted, droppedTurns, ...totals };
}

function renderFitted(input: RenderInput): RenderOutcome {
  const fit = fitOf(input);
  const { messages, messageTokens, history, policy, count, turnTokens } = fit;
  const current = fit.turns.at(-1);
  const sent = {
    input,
    historyBudget: fit.historyBudget,
    systemTokens: fit.systemTokens,
    toolTokens: fit.toolTokens,
  };
  if (current === undefined)
    return unchanged(sent, { historyTokens: 0, currentTurnTokens: 0, historyStartIndex: fit.systemCount });
  if (fitsAsItIs(fit, current)) {
    // Byte-identical upstream.
    const currentTurnTokens = turnTokens.at(-1) as number;
    return unchanged(sent, {
      historyTokens: sumRange(turnTokens, 0, fit.turns.length) - currentTurnTokens,
      currentTurnTokens,
      historyStartIndex: history[0]?.start ?? current.start,
    });
  }
  const summarized = turnSummaryParts(fit);
  const currentPart = summarized.get(fit.turns.length - 1);
  // With any history, room for the omission notice is kept: if history does not fit, it is needed.
  const currentTurnBudget = fit.historyBudget - (history.length > 0 ? fit.noticeTokens() : 0);
  let fitted = fitCurrentTurn({
    turn: messages.slice(current.start, current.end),
    turnTokens: messageTokens.slice(current.start, current.end),
    budget: currentTurnBudget,
    policy,
    tokenizer: input.tokenizer,
    count,
    turnSummary:
      currentPart === undefined
        ? undefined
        : Object.assign({}, currentPart, { coversUntil: currentPart.coversUntil - current.start }),
  });
  if (fitted.tooLarge) {
    return {
      ok: false,
      reason: 'current_turn_too_large',
      neededTokens: fitted.tokens,
      budgetTokens: Math.max(0, currentTurnBudget),
      rawBudgetTokens: currentTurnBudget,
      wholeTurnTokens: messageTokens
        .slice(current.start, current.end)
        .reduce((total, tokens) => total + tokens, 0),
      window: input.window,
    };
  }
  // Each history turn whole, with its tool results masked, and as its user message alone.
  const formOf = (index: number, form: TurnForm) =>
    turnForm(messages, messageTokens, history[index] as Turn, form, policy, count, summarized.get(index));
  const historyTurns: HistoryTurn[] = history.map((turn, index) => {
    // Only a turn with an in-turn summary in it is built to be counted; the others' whole and
    // user-only forms are known from the counts.
    const summarizedHere = summarized.has(index);
    const whole = summarizedHere ? formOf(index, 'whole').tokens : (turnTokens[index] as number);
    const userOnly =
      (messages[turn.start] as ContextMessage).role !== 'user'
        ? whole
        : summarizedHere
          ? formOf(index, 'user_only').tokens
          : (messageTokens[turn.start] as number);
    // Nothing to mask: the masked form is the turn as it is (a long session walks thousands of these).
    // One shape for every history turn: a spread copy of the turn made this walk several times slower.
    const { start, end } = turn;
    if (!summarizedHere && !holdsToolResult(messages, turn))
      return { start, end, whole, masked: whole, userOnly, maskable: 0 };
    const masked = formOf(index, 'masked');
    return { start, end, whole, masked: masked.tokens, userOnly, maskable: masked.masked };
  });
  const { forms, firstWindowIndex } = historyForms(fit, historyTurns, fitted);
  const assembled = (turn: ReturnType<typeof fitCurrentTurn>) =>
    assemble({
      fit,
      forms,
      firstWindowIndex,
      historyTurns,
      formOf,
      summarizedTurns: summarized,
      current: turn.messages,
    });
  let built = assembled(fitted);
  // Room the history left: the current turn's masked results come back, newest first, while they fit
  // in it and below the turn's step target (the room above that is kept for the loop's next steps, so
  // consecutive requests keep their prefix).
  const notice = built.notice === undefined ? 0 : fit.count(built.notice);
  const leftover = fit.historyBudget - built.historyTokens - notice - fitted.tokens;
  const givenBack = fitted.giveBack(leftover);
  if (givenBack !== undefined) {
    fitted = givenBack;
    built = assembled(fitted);
  }
  return fittedOutcome(fit, current, fitted, built, firstWindowIndex);
}

function fittedOutcome(
  fit: Fit,
  current: Turn,
  fitted: ReturnType<typeof fitCurrentTurn>,
  built: ReturnType<typeof assemble>,
  firstWindowIndex: number,
): RenderOutcome {
  const { input } = fit;
  const summary = input.summary;
  const noticeActual = built.notice === undefined ? 0 : fit.count(built.notice);
  const modified =
    summary !== undefined ||
    built.omitted > 0 ||
    built.maskedResults > 0 ||
    fitted.truncated > 0 ||
    fitted.masked > 0 ||
    fitted.droppedGroups > 0 ||
    fitted.summarizedMessages > 0 ||
    built.summarizedMessages > 0 ||
    fitted.oversizeTruncated;
  // A summary or notice that now opens the prompt carries the tool definitions: counted as sent.
  const sentToolTokens = modified ? toolTokensFor(input, built.rendered) : fit.toolTokens;
  const firstWindowTurn = fit.history[firstWindowIndex];
  return {
    ok: true,
    messages: modified ? built.rendered : [...fit.messages],
    report: {
      window: input.window,
      historyBudget: fit.historyBudget,
      summaryUsed: summary !== undefined || fitted.summarizedMessages > 0 || built.summarizedMessages > 0,
      inputTokens:
        fit.systemTokens +
        fit.summaryTokens +
        sentToolTokens +
        replyPrimingTokens +
        built.historyTokens +
        noticeActual +
        fitted.tokens,
      regions: {
        system: fit.systemTokens,
        summary: fit.summaryTokens,
        history: built.historyTokens,
        currentTurn: fitted.tokens - fitted.noticeTokens,
        tools: sentToolTokens,
        notice: noticeActual + fitted.noticeTokens,
        outputReserve: input.outputReserve,
        safetyMargin: input.safetyMarginTokens,
      },
      droppedMessages: built.omitted + fitted.droppedMessages,
      summarizedMessages: (summary?.covers ?? 0) + built.summarizedMessages + fitted.summarizedMessages,
      droppedTurns: built.droppedTurns,
      droppedIterationGroups: fitted.droppedGroups,
      truncatedToolResults: fitted.truncated,
      maskedToolResults: built.maskedResults + fitted.masked,
      historyStartIndex: firstWindowTurn === undefined ? current.start : firstWindowTurn.start,
      oversizeTruncated: fitted.oversizeTruncated,
      orphansRemoved: 0,
      orphanMessagesRemoved: 0,
      modified,
    },
  };
}
