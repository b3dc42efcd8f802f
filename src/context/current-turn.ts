// The current turn (docs/budgeting.md steps (a)–(d)): a user message and the agent loop that follows it, an
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
   * A summary of the turn's older groups (a session's in-turn compaction, docs/sessions.md#summarization): it stands, right after
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
  /**
   * The most the turn took of the window in any request of its loop so far (replayed): what was left
   * for the history then is the most it can have had since, so earlier turns shown then never come
   * back fuller later (the prompt's start never moves backwards).
   */
  peakTokens: number;
  /**
   * Each size the turn's peak took as the loop grew (the largest so far at each request, replayed),
   * ascending: the history's room at each of them bounds what it may have now (render.ts).
   */
  peakLevels: readonly number[];
  oversizeTruncated: boolean;
  tooLarge: boolean;
  /**
   * The same turn with masked results given back whole, newest first, while they fit in `room` more
   * tokens (what the history left over): undefined when none fits. Masking ran in steps, oldest first,
   * and may have freed more than the request needed; a result is never kept masked while a newer one
   * could have been sent whole.
   */
  giveBack(room: number): CurrentTurnFit | undefined;
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

/** The turn being fitted: its groups and results and what has been done to them so far. */
class TurnFitting {
  readonly groups: Group[] = [];
  readonly results: ToolResult[] = [];
  /** The masking order: oldest first, the ones masked last after all others. */
  private readonly order: number[];
  private readonly resultAt: Map<number, ToolResult>;
  private readonly cuts = new Map<number, ContextMessage>();
  private readonly droppedTools = new Map<string, number>();
  readonly anchored: boolean;
  /** Tokens of what is sent now. */
  total = 0;
  /** The largest `total` a request of the loop sent (after its step was fitted). */
  peak = 0;
  /** Each value `peak` took in the replay, ascending. */
  readonly levels: number[] = [];
  dropped = 0;
  droppedMessages = 0;
  noticeStyle: 'full' | 'short' | 'none' = 'full';
  noticeTokens = 0;
  userMessage: ContextMessage | undefined;
  oversizeTruncated = false;
  tooLarge = false;
  /** The newest group, when even it alone had to be cut to fit. */
  lastResort: Group | undefined;
  newestCap: number;

  constructor(private readonly input: CurrentTurnInput) {
    const { turn, turnTokens, policy } = input;
    this.anchored = (turn[0] as ContextMessage | undefined)?.role === 'user';
    this.userMessage = this.anchored ? (turn[0] as ContextMessage) : undefined;
    this.newestCap = policy.max_tool_result_tokens;
    // The parts of the turn that always stay: the user message and the turn summary.
    if (this.anchored) this.total += turnTokens[0] as number;
    if (input.turnSummary !== undefined) this.total += input.turnSummary.tokens;
    this.collectGroups(Math.max(this.anchored ? 1 : 0, input.turnSummary?.coversUntil ?? 0));
    const results = this.results;
    this.order = results
      .map((_result, position) => position)
      .sort(
        (a, b) =>
          (results[a] as ToolResult).rank - (results[b] as ToolResult).rank ||
          (results[a] as ToolResult).index - (results[b] as ToolResult).index,
      );
    this.resultAt = new Map(results.map((result) => [result.index, result]));
  }

  private collectGroups(from: number): void {
    const { turn, turnTokens, policy, count } = this.input;
    const excluded = new Set(policy.exclude_tools);
    for (const span of splitGroups(turn, from)) {
      const call = turn[span.start] as ContextMessage;
      const names = new Map(
        (call.tool_calls ?? []).map((toolCall) => [toolCall.id, toolCall.function?.name ?? 'tool']),
      );
      const group: Group = {
        start: span.start,
        end: span.end,
        fixedTokens: 0,
        results: [],
        toolNames: [...names.values()],
      };
      for (let index = span.start; index < span.end; index++) {
        const message = turn[index] as ContextMessage;
        const tokens = turnTokens[index] as number;
        if (message.role !== 'tool' || index === span.start) {
          group.fixedTokens += tokens;
          continue;
        }
        // Its content's tokens: its own count less its framing (a long text is not counted again).
        const contentTokens = Math.max(0, tokens - count(Object.assign({}, message, { content: '' })));
        const truncate = contentTokens > policy.max_tool_result_tokens;
        const name = names.get(message.tool_call_id ?? '') ?? message.name ?? 'tool';
        const maskedTokens = count(Object.assign({}, message, { content: maskedResultText(contentTokens) }));
        const wholeTokens = truncate
          ? Math.min(tokens, tokens - contentTokens + policy.max_tool_result_tokens)
          : tokens;
        group.results.push(this.results.length);
        this.results.push({
          index,
          group: this.groups.length,
          wholeTokens,
          maskedTokens: isMaskedResult(message) ? wholeTokens : maskedTokens,
          contentTokens,
          truncate,
          rank: excluded.has(name) || this.results.length < policy.keep_first ? 1 : 0,
          masked: false,
        });
      }
      this.groups.push(group);
    }
  }

  groupTokens(group: Group): number {
    let total = group.fixedTokens;
    for (const position of group.results) {
      const result = this.results[position] as ToolResult;
      total += result.masked ? result.maskedTokens : result.wholeTokens;
    }
    return total;
  }

  notice(): ContextMessage | undefined {
    return this.noticeStyle === 'none'
      ? undefined
      : droppedStepsNotice(this.dropped, this.droppedMessages, this.droppedTools, this.noticeStyle);
  }

  private recountNotice(): number {
    const before = this.noticeTokens;
    const notice = this.notice();
    this.noticeTokens = notice === undefined ? 0 : this.input.count(notice);
    return this.noticeTokens - before;
  }

  /** Drops the oldest group kept; returns the tokens that saves (the notice's growth deducted). */
  dropOldest(): number {
    const group = this.groups[this.dropped] as Group;
    const saved = this.groupTokens(group);
    for (const name of group.toolNames) this.droppedTools.set(name, (this.droppedTools.get(name) ?? 0) + 1);
    this.droppedMessages += group.end - group.start;
    this.dropped++;
    const freed = saved - this.recountNotice();
    this.total -= freed;
    return freed;
  }

  private mask(position: number): number {
    const result = this.results[position] as ToolResult;
    result.masked = true;
    const saved = result.wholeTokens - result.maskedTokens;
    this.total -= saved;
    return saved;
  }

  /** Replay: the turn as each request of the loop saw it, one more group each time. */
  replay(): void {
    this.peak = this.total;
    this.levels.push(this.peak);
    for (let step = 0; step < this.groups.length; step++) {
      this.total += this.groupTokens(this.groups[step] as Group);
      if (this.total > this.input.budget) this.fitStep(step);
      const peak = Math.max(this.peak, Math.min(this.total, this.input.budget));
      if (peak > this.peak) this.levels.push(peak);
      this.peak = peak;
    }
  }

  private fitStep(step: number): void {
    const { budget, policy } = this.input;
    let saved = 0;
    // The newest keep_last results of the turn so far stay whole while anything else can go.
    const visible: number[] = [];
    for (let group = this.dropped; group <= step; group++)
      visible.push(...(this.groups[group] as Group).results);
    const protectedFrom = Math.max(0, visible.length - policy.keep_last);
    const isProtected = new Set(visible.slice(protectedFrom));
    // A step goes well below the budget, as history's does (trim_to, at least clear_at_least): the
    // loop's next steps then append to an unchanged prompt until it is full again.
    const target = this.stepTarget();
    for (const position of this.order) {
      if (this.total <= target && saved >= policy.clear_at_least) break;
      const result = this.results[position] as ToolResult;
      if (
        result.masked ||
        result.maskedTokens >= result.wholeTokens ||
        result.group < this.dropped ||
        result.group > step ||
        isProtected.has(position) ||
        // The step's own results, which the model has not seen, go for the budget, not for the target.
        (result.group === step && this.total <= budget)
      )
        continue;
      saved += this.mask(position);
    }
    // Fewer kept whole when they do not fit, down to the newest alone.
    for (const position of visible.slice(protectedFrom, -1)) {
      if (this.total <= budget) break;
      const result = this.results[position] as ToolResult;
      if (!result.masked && result.maskedTokens < result.wholeTokens) this.mask(position);
    }
    // Then the oldest whole groups, never the newest, in the same steps.
    saved = 0;
    while (this.dropped < step && (this.total > budget || (saved > 0 && this.total > target)))
      saved += this.dropOldest();
    if (saved > 0) this.unmaskNewest(step);
  }

  /** Dropping freed more than the masking before it needed: the step's own results come back, newest first, while they fit the budget. */
  private unmaskNewest(step: number): void {
    const group = this.groups[step] as Group;
    for (let index = group.results.length - 1; index >= 0; index--) {
      const result = this.results[group.results[index] as number] as ToolResult;
      if (!result.masked) continue;
      const extra = result.wholeTokens - result.maskedTokens;
      if (this.total + extra > this.input.budget) break;
      result.masked = false;
      this.total += extra;
    }
  }

  /** Where a masking or dropping step brings the turn: trim_to of the budget, and clear_at_least below it. */
  stepTarget(): number {
    const { budget, policy } = this.input;
    return Math.min(budget - policy.clear_at_least, Math.floor(budget * policy.trim_to));
  }

  /** Unmasks the newest masked results while `room` holds them; the results given back, newest first. */
  giveBack(room: number): ToolResult[] {
    const given: ToolResult[] = [];
    // Never past where the last step brought the turn: the room above it is the next steps'.
    room = Math.min(room, this.stepTarget() - this.total);
    const masked = this.results
      .filter((result) => result.masked && result.group >= this.dropped)
      .sort((a, b) => b.index - a.index);
    for (const result of masked) {
      const extra = result.wholeTokens - result.maskedTokens;
      if (extra > room) break;
      result.masked = false;
      this.total += extra;
      room -= extra;
      given.push(result);
    }
    return given;
  }

  /** Masks again what giveBack unmasked (the exact count overshot the estimate). */
  retake(result: ToolResult): void {
    this.mask(this.results.indexOf(result));
  }

  /** The newest group alone is too big: its results are cut to what is left, masked if little is. */
  cutNewest(): void {
    const { budget, policy } = this.input;
    const newest = this.groups.at(-1);
    if (this.total <= budget || newest === undefined) return;
    this.lastResort = newest;
    const over = this.total - budget;
    const contentOf = (result: ToolResult): number =>
      result.truncate ? policy.max_tool_result_tokens : result.contentTokens;
    // Only results with something to cut share the cut.
    const whole = newest.results.filter((position) => {
      const result = this.results[position] as ToolResult;
      return !result.masked && contentOf(result) > 64;
    });
    const perResult = whole.length === 0 ? 0 : Math.ceil(over / whole.length);
    for (const position of whole) {
      const result = this.results[position] as ToolResult;
      const content = contentOf(result);
      const frame = result.wholeTokens - content;
      const target = content - perResult;
      if (target < 64) {
        if (result.maskedTokens < result.wholeTokens) this.mask(position);
      } else {
        this.newestCap = Math.min(this.newestCap, target);
        result.truncate = true;
        this.total -= result.wholeTokens - (frame + target);
        result.wholeTokens = frame + target;
      }
    }
  }

  /**
   * Even the newest group cut down does not fit beside the user message: it goes too, and when room is
   * that short the notice shrinks, then goes.
   */
  dropRest(): void {
    const { budget } = this.input;
    while (this.total > budget && this.dropped < this.groups.length) this.dropOldest();
    for (const style of ['short', 'none'] as const) {
      if (this.total <= budget || this.dropped === 0) break;
      this.noticeStyle = style;
      this.total += this.recountNotice();
    }
    this.tooLarge = this.total > budget;
  }

  /** The user message itself does not fit: cut its middle when the policy says so. */
  cutUserMessage(): void {
    const { budget, policy, turnTokens, count, tokenizer } = this.input;
    const userMessage = this.userMessage;
    if (!this.tooLarge || userMessage === undefined || policy.oversize !== 'truncate_middle') return;
    const content = userMessage.content;
    if (typeof content !== 'string') return;
    const others = this.total - (turnTokens[0] as number);
    const room = budget - others - count(Object.assign({}, userMessage, { content: '' }));
    if (room <= 32) return;
    this.userMessage = Object.assign({}, userMessage, {
      content: truncateText(content, room, 'both', tokenizer).text,
    });
    this.oversizeTruncated = true;
    this.total = others + count(this.userMessage);
    this.tooLarge = this.total > budget;
  }

  /**
   * The messages to send: the user message, the turn summary, the notice, the groups kept. Truncated
   * results are cut `slack` tokens below their cap.
   */
  build(slack: number): { messages: ContextMessage[]; tokens: number; truncated: number; masked: number } {
    const { turn, turnTokens, count } = this.input;
    const built = { messages: [] as ContextMessage[], tokens: 0, truncated: 0, masked: 0 };
    const add = (message: ContextMessage, tokens: number): void => {
      built.messages.push(message);
      built.tokens += tokens;
    };
    if (this.userMessage !== undefined)
      add(this.userMessage, this.oversizeTruncated ? count(this.userMessage) : (turnTokens[0] as number));
    const summary = this.input.turnSummary;
    if (summary !== undefined) add(summary.message, summary.tokens);
    const notice = this.dropped > 0 ? this.notice() : undefined;
    if (notice !== undefined) add(notice, this.noticeTokens);
    for (const group of this.groups.slice(this.dropped)) {
      for (let index = group.start; index < group.end; index++) {
        const message = turn[index] as ContextMessage;
        const result = this.resultAt.get(index);
        if (result === undefined || (!result.masked && !result.truncate)) {
          add(message, turnTokens[index] as number);
        } else if (result.masked) {
          const maskedMessage = Object.assign({}, message, {
            content: maskedResultText(result.contentTokens),
          });
          add(maskedMessage, count(maskedMessage));
          built.masked++;
        } else {
          const cut = this.truncated(message, index, group, slack);
          add(cut, count(cut));
          built.truncated++;
        }
      }
    }
    return built;
  }

  private truncated(message: ContextMessage, index: number, group: Group, slack: number): ContextMessage {
    const { policy, tokenizer } = this.input;
    const cap = Math.max(
      16,
      (group === this.lastResort ? this.newestCap : policy.max_tool_result_tokens) - slack,
    );
    const known = slack === 0 ? this.cuts.get(index) : undefined;
    if (known !== undefined) return known;
    const text = truncateText(textOf(message.content), cap, policy.tool_result_truncation, tokenizer).text;
    const cut = Object.assign({}, message, { content: text });
    if (slack === 0) this.cuts.set(index, cut);
    return cut;
  }
}

/** The turn as fitted: built within `budget`, truncated results cut a little more should the exact counts overshoot. */
function buildWithin(fitting: TurnFitting, budget: number): ReturnType<TurnFitting['build']> {
  let built = fitting.build(0);
  for (let attempt = 0, slack = 0; attempt < 3 && !fitting.tooLarge && built.tokens > budget; attempt++) {
    if (built.truncated === 0) break;
    slack += Math.ceil((built.tokens - budget) / built.truncated) + 4;
    built = fitting.build(slack);
  }
  return built;
}

/**
 * The current turn fitted in its budget. A summary of its older steps gives way before its newest step is
 * cut: when the newest step fits whole only without the summary, the steps it stood for are left out
 * (named in the notice) instead — an agent shown a summary of its earlier steps but not the result of its
 * last call calls it again (on a small model's window the summary grows step by step and the newest
 * result shrinks until it is masked: Qwen Code then stopped at "Duplicate provider tool call id").
 */
export function fitCurrentTurn(input: CurrentTurnInput): CurrentTurnFit {
  const fit = fitTurn(input);
  if (input.turnSummary === undefined || !fit.newestCut) return fit.fit;
  const without = fitTurn(Object.assign({}, input, { turnSummary: undefined }));
  return without.newestCut || without.fit.tooLarge ? fit.fit : without.fit;
}

function fitTurn(input: CurrentTurnInput): { fit: CurrentTurnFit; newestCut: boolean } {
  const fitting = new TurnFitting(input);
  fitting.replay();
  // The requests made before the turn summary saw the whole turn: its peak counts too, so a summary that
  // shrinks the turn lets nothing older back in (a session's history start never moves backwards).
  if (input.turnSummary !== undefined) {
    const unsummarized = new TurnFitting(Object.assign({}, input, { turnSummary: undefined }));
    unsummarized.replay();
    fitting.peak = Math.max(fitting.peak, unsummarized.peak);
    const levels = [...new Set([...fitting.levels, ...unsummarized.levels])].sort((a, b) => a - b);
    fitting.levels.splice(0, fitting.levels.length, ...levels);
  }
  fitting.cutNewest();
  fitting.dropRest();
  fitting.cutUserMessage();
  return {
    fit: fitOf(input, fitting, buildWithin(fitting, input.budget)),
    newestCut: fitting.lastResort !== undefined,
  };
}

function fitOf(
  input: CurrentTurnInput,
  fitting: TurnFitting,
  built: ReturnType<TurnFitting['build']>,
): CurrentTurnFit {
  const summary = input.turnSummary;
  return {
    giveBack(room: number): CurrentTurnFit | undefined {
      if (fitting.tooLarge || built.masked === 0 || room <= 0) return undefined;
      const limit = built.tokens + room;
      const given = fitting.giveBack(room);
      if (given.length === 0) return undefined;
      let rebuilt = buildWithin(fitting, limit);
      // The estimate of a truncated result may be short of its exact count: the oldest given back is
      // masked again until the turn fits the room.
      while (rebuilt.tokens > limit && given.length > 0) {
        fitting.retake(given.pop() as ToolResult);
        rebuilt = buildWithin(fitting, limit);
      }
      return given.length === 0 ? undefined : fitOf(input, fitting, rebuilt);
    },
    messages: built.messages,
    tokens: built.tokens,
    truncated: built.truncated,
    masked: built.masked,
    droppedGroups: fitting.dropped,
    droppedMessages: fitting.droppedMessages,
    summarizedMessages:
      summary === undefined ? 0 : Math.max(0, summary.coversUntil - (fitting.anchored ? 1 : 0)),
    noticeTokens: fitting.dropped > 0 ? fitting.noticeTokens : 0,
    peakTokens: Math.max(fitting.peak, built.tokens),
    peakLevels: fitting.levels,
    oversizeTruncated: fitting.oversizeTruncated,
    tooLarge: fitting.tooLarge || built.tokens > input.budget,
  };
}
