// Table-driven behaviour of the renderer, with a word-counting tokenizer so that every expected number
// can be worked out by hand: one token per word, 3 per message of framing (+ role), 3 for the reply.
import { describe, expect, it } from 'vitest';
import { renderContext, slidingStart, type RenderInput } from '../../src/context/render.js';
import type { ContextMessage, ContextPolicy } from '../../src/context/types.js';
import { words, statedPolicy, wordsText } from '../helpers/words.js';

const policy = statedPolicy();

const text = wordsText;
const user = (content: string): ContextMessage => ({ role: 'user', content });
const assistant = (content: string): ContextMessage => ({ role: 'assistant', content });
/** One agent iteration: a tool call (7 tokens here) and its result (5 + the result's words). */
const iteration = (id: string, result: string): ContextMessage[] => [
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'f', arguments: '{}' } }],
  },
  { role: 'tool', tool_call_id: id, content: result },
];

/** Each message costs 3 (framing) + 1 (role word) + its words. */
function render(
  messages: ContextMessage[],
  overrides: Partial<RenderInput> = {},
  policyOverrides: Partial<ContextPolicy> = {},
) {
  const outcome = renderContext({
    messages,
    tokenizer: words,
    window: 1_000,
    outputReserve: 0,
    safetyMarginTokens: 0,
    policy: { ...policy, ...policyOverrides },
    ...overrides,
  });
  if (!outcome.ok) throw new Error(`refused: ${JSON.stringify(outcome)}`);
  return outcome;
}

/**
 * An agent loop of 12 groups (each a call and a 30-word result) rendered one more group a request in
 * 385 tokens: the masked results of each request, and how many requests began with the previous one.
 */
function growingLoop(trimTo: number): { maskedCounts: number[]; prefixKept: number } {
  const calls = Array.from({ length: 12 }, (_unused, index) => `c${index}`);
  const loop = [user('go'), ...calls.flatMap((id) => iteration(id, text(30, id)))];
  const maskedCounts: number[] = [];
  let previous: ContextMessage[] = [];
  let prefixKept = 0;
  for (let groups = 1; groups <= 12; groups++) {
    const { messages: rendered, report } = render(
      loop.slice(0, 1 + groups * 2),
      { window: 385 },
      { clear_at_least: 100, keep_last: 1, trim_to: trimTo },
    );
    maskedCounts.push(report.maskedToolResults);
    if (JSON.stringify(rendered.slice(0, previous.length)) === JSON.stringify(previous)) prefixKept++;
    previous = rendered;
  }
  return { maskedCounts, prefixKept };
}

describe('renderContext', () => {
  it('sends a conversation that fits unchanged and reports its regions', () => {
    const messages = [
      { role: 'system', content: 'be brief' },
      user('hello there'),
      assistant('hi'),
      user('how are you'),
    ];
    const { messages: rendered, report } = render(messages);
    expect(rendered).toEqual(messages);
    expect(report.modified).toBe(false);
    // system 3+1+2 = 6; history (user 3+1+2, assistant 3+1+1) = 11; current 3+1+3 = 7; reply 3.
    expect(report.regions).toMatchObject({ system: 6, history: 11, currentTurn: 7 });
    expect(report.inputTokens).toBe(6 + 11 + 7 + 3);
    expect(report.historyBudget).toBe(1_000 - 6 - 3);
  });

  it('keeps the first turn, drops middle turns whole, and says how many messages were omitted', () => {
    const messages = [
      user(text(50, 'first')),
      assistant(text(50)),
      user(text(50)),
      assistant(text(50)),
      user(text(50)),
      assistant(text(50)),
      user('now'),
    ];
    // Each 50-word message is 54 tokens; a turn of two is 108; the current turn is 5.
    const { messages: rendered, report } = render(messages, { window: 300 });
    expect(rendered[0]).toEqual(messages[0]);
    expect(rendered[1]).toEqual(messages[1]);
    expect(rendered[2]?.role).toBe('system');
    expect(String(rendered[2]?.content)).toContain('2 earlier messages');
    expect(rendered.slice(3)).toEqual(messages.slice(4));
    expect(report.droppedMessages).toBe(2);
    expect(report.droppedTurns).toBe(1);
  });

  it('sends a summary after the first turn, counted as its own region, and says it is there', () => {
    const messages = [
      user(text(10, 'first')),
      assistant(text(10)),
      user(text(50)),
      assistant(text(50)),
      user(text(50)),
      assistant(text(50)),
      user('now'),
    ];
    // The summary message: 3 framing + 1 role + 5 words = 9 tokens.
    const summary = { message: { role: 'system', content: 's s s s s' }, position: 2 };
    // Budget 250 − 9 − 3 = 238 < 28 + 216 + 5: one of the two middle turns must go.
    const { messages: rendered, report } = render(messages, { window: 250, summary });
    expect(rendered.slice(0, 3)).toEqual([messages[0], messages[1], summary.message]);
    expect(rendered[3]?.role).toBe('system');
    expect(String(rendered[3]?.content)).toContain('2 earlier messages');
    expect(String(rendered[3]?.content)).toContain('A summary of earlier messages is above.');
    expect(rendered.slice(4)).toEqual(messages.slice(4));
    expect(report.regions.summary).toBe(9);
    expect(report.summaryUsed).toBe(true);
    expect(report.historyBudget).toBe(250 - 9 - 3);
    const noticeTokens = 4 + words.count(String(rendered[3]?.content));
    expect(report.inputTokens).toBe(28 + 9 + noticeTokens + 108 + 5 + 3);

    // Room for everything: the summary is still sent where it belongs, and nothing is omitted.
    const roomy = render(messages, { window: 1_000, summary });
    expect(roomy.messages).toEqual([messages[0], messages[1], summary.message, ...messages.slice(2)]);
    expect(roomy.report.modified).toBe(true);
    expect(roomy.report.droppedMessages).toBe(0);
  });

  it('keeps pinned turns however old they are', () => {
    const messages = [
      user(text(50)),
      assistant(text(50)),
      user(`[pin] ${text(20, 'goal')}`),
      assistant('ok'),
      user(text(50)),
      assistant(text(50)),
      user(text(50)),
      assistant(text(50)),
      user('now'),
    ];
    const { messages: rendered } = render(messages, { window: 260 }, { keep_first_turns: 0 });
    expect(rendered).toContainEqual(messages[2]);
    expect(rendered).toContainEqual(messages[3]);
    expect(rendered.at(-1)).toEqual(messages.at(-1));
  });

  it('moves the history start in steps down to trim_to of the budget', () => {
    // History turns of 10 tokens, a current turn of 10, a budget of 60: 50 available for history. Five
    // fit; the sixth overflows, and the start jumps so that at most 35 (0.7 × 50) remain: turns 3..5.
    // It stays there while later turns fit (up to turn 7), jumps again at turn 8 (to 6) and at turn 11 (to 9).

    const starts = Array.from({ length: 12 }, (_unused, length) =>
      slidingStart(new Array<number>(length + 1).fill(10), 10, 60, policy),
    );
    expect(starts).toEqual([0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9]);
  });

  it('truncates a tool result over max_tool_result_tokens, keeping both ends and an indicator', () => {
    const messages: ContextMessage[] = [
      user('run it'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: `${text(100, 'head')} ${text(100, 'tail')}` },
    ];
    const { messages: rendered, report } = render(messages, {}, { max_tool_result_tokens: 40 });
    const result = String(rendered[2]?.content);
    expect(result.startsWith('head')).toBe(true);
    expect(result.endsWith('tail')).toBe(true);
    expect(result).toContain('of 200 tokens');
    expect(result).toMatch(/removed …\]/);
    expect(words.count(result)).toBeLessThanOrEqual(40);
    expect(report.truncatedToolResults).toBe(1);
  });

  it('masks the oldest tool results first, keeping every call and the newest keep_last results whole', () => {
    const calls = Array.from({ length: 9 }, (_unused, index) => `c${index}`);
    const messages: ContextMessage[] = [user('go'), ...calls.flatMap((id) => iteration(id, text(30, id)))];
    // The user message is 5 tokens, each call 10 (framing, role, id, name, arguments, and 3 around the
    // call), each result 35 (30 words, framing, role, id): 410 in all, 38 over a budget of 372. A masked
    // result is 11 (6 words), so masking two (c0, c1) frees 48.
    // (trim_to 1: a step goes only as far as needed; steps are the next test's subject.)
    const { messages: rendered, report } = render(messages, { window: 375 }, { trim_to: 1 });
    const results = rendered
      .filter((message) => message.role === 'tool')
      .map((message) => String(message.content));
    expect(report.maskedToolResults).toBe(2);
    expect(results[0]).toBe('[result masked — ~30 tokens removed]');
    expect(results[1]).toBe('[result masked — ~30 tokens removed]');
    expect(results.slice(2)).toEqual(calls.slice(2).map((id) => text(30, id)));
    expect(rendered.filter((message) => message.role === 'assistant')).toHaveLength(9);
    expect(report.inputTokens).toBe(410 - 2 * 24 + 3);
  });

  it('masks in steps of clear_at_least, so the next request keeps the same prefix', () => {
    // Each request of the loop adds one group (45 tokens, 5 + 45 × 8 = 365 fit in 382); a step masks
    // (24 tokens saved each, the newest result kept whole) until the turn is clear_at_least below the
    // budget, 282: at 9 groups 410 → 266 (6 masked); 10 and 11 groups fit (311, 356); at 12, 401 → 281
    // (5 more).
    const { maskedCounts, prefixKept } = growingLoop(1);
    expect(maskedCounts).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 6, 6, 6, 11]);
    // Every request but the two that took a step sends the previous one's messages unchanged first.
    expect(prefixKept).toBe(10);
  });

  it('masks down to trim_to of the budget in a step, so the next requests only append', () => {
    // The same loop in 382 tokens with trim_to 0.5: the step at 9 groups (410 tokens) masks toward
    // 191 — all 8 results but the newest, 218 left — and 10, 11 and 12 groups (263, 308, 353) fit
    // without another step. Nothing comes back above the step's target.
    const { maskedCounts, prefixKept } = growingLoop(0.5);
    expect(maskedCounts).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8]);
    expect(prefixKept).toBe(11);
  });

  it('gives masked results back, newest first, while they fit', () => {
    // Eleven steps of uneven results in 379 tokens: fitting drops the oldest nine steps' worth of
    // room step by step, and masking as it went had masked c9 (11 words) although, once the steps were
    // dropped, it fits whole beside the newest result.
    const sizes = [251, 33, 48, 182, 243, 75, 123, 52, 45, 11, 289];
    const messages = [
      user('go'),
      ...sizes.flatMap((size, index) => iteration(`c${index}`, text(size, `r${index}`))),
    ];
    const { messages: rendered, report } = render(messages, { window: 379 }, { keep_last: 1, trim_to: 1 });
    expect(rendered.find((message) => message.tool_call_id === 'c9')?.content).toBe(text(11, 'r9'));
    expect(rendered.find((message) => message.tool_call_id === 'c10')?.content).toBe(text(289, 'r10'));
    expect(report.inputTokens).toBeLessThanOrEqual(379);
    // What stays masked is older than what is whole, and could not come back: too big for the room.
    const room = 379 - report.inputTokens;
    for (const message of rendered)
      if (message.role === 'tool' && String(message.content).startsWith('[result masked')) {
        const index = Number(message.tool_call_id?.slice(1));
        expect(index).toBeLessThan(9);
        expect((sizes[index] as number) - 7).toBeGreaterThan(room);
      }
  });

  it('counts each message once: sent, summarized by an in-turn summary, or omitted', () => {
    // The first turn, an agent task whose first four steps an in-turn summary stands for, is kept (as
    // keep_first_turns asks) but only as its user message and summary: its later steps are omitted,
    // the summarized ones are not counted as omitted too.
    const first = [
      user('task one'),
      ...['a', 'b', 'c', 'd', 'e', 'f'].flatMap((id) => iteration(id, text(40, id))),
    ];
    const messages = [...first, assistant('done'), user(text(95, 'now'))];
    const turnSummary = {
      message: { role: 'system' as const, content: 'steps a to d read files' },
      coversUntil: 1 + 8,
      tokens: 9,
    };
    const { messages: rendered, report } = render(messages, { window: 150, turnSummary });
    expect(rendered.map((message) => message.content)).toEqual([
      'task one',
      'steps a to d read files',
      "[ctxgate] 5 earlier messages of this conversation were omitted to fit the model's context window.",
      text(95, 'now'),
    ]);
    expect(report.summarizedMessages).toBe(8);
    expect(report.droppedMessages).toBe(5);
    expect(2 + report.summarizedMessages + report.droppedMessages).toBe(messages.length);
  });

  it("places a past turn's in-turn summary in that turn beside the current turn's own, each counted once", () => {
    // Two agent tasks; an in-turn summary stands for the first two steps of each (the first task's kept
    // by the session when the second got its own). Everything fits: each summary goes after its turn's
    // user message, in place of the steps it stands for.
    const messages = [
      user('task one'),
      ...['a', 'b', 'c'].flatMap((id) => iteration(id, text(40, id))),
      assistant('done one'),
      user('task two'),
      ...['d', 'e', 'f'].flatMap((id) => iteration(id, text(40, id))),
    ];
    const summaryOf = (content: string, coversUntil: number) => ({
      message: { role: 'system' as const, content },
      coversUntil,
      tokens: 8,
    });
    const { messages: rendered, report } = render(messages, {
      window: 2_000,
      pastTurnSummaries: [summaryOf('steps a and b', 5)],
      turnSummary: summaryOf('steps d and e', 13),
    });
    expect(
      rendered.map((message) => message.tool_call_id ?? message.content ?? message.tool_calls?.[0]?.id),
    ).toEqual(['task one', 'steps a and b', 'c', 'c', 'done one', 'task two', 'steps d and e', 'f', 'f']);
    expect(report.summarizedMessages).toBe(8);
    expect(report.droppedMessages).toBe(0);
    expect(rendered.length - 2 + report.summarizedMessages).toBe(messages.length);
  });

  it('never lets an older turn back in when the growing loop shortens a first turn', () => {
    // A first turn with a 100-word result, a middle turn, then an agent loop of 30-word groups in 460
    // tokens. As the loop grows, the middle turn is left out while the first turn is still whole; a
    // request later the first turn is masked, which frees more than the loop grew: that room stays free.
    const first = [user('first task'), ...iteration('f1', text(100, 'f')), assistant(text(20, 'a'))];
    const middle = [user('middle'), assistant(text(50, 'm'))];
    const loop = [
      user('go'),
      ...Array.from({ length: 14 }, (_unused, index) => iteration(`c${index}`, text(30, `r${index}`))).flat(),
    ];
    const shown: Array<{ firstWhole: boolean; middle: boolean }> = [];
    for (let groups = 1; groups <= 14; groups++) {
      const { messages: rendered } = render(
        [...first, ...middle, ...loop.slice(0, 1 + groups * 2)],
        { window: 460 },
        { keep_last: 1, clear_at_least: 50, trim_to: 0.7 },
      );
      const contents = rendered.map((message) => String(message.content));
      shown.push({ firstWhole: contents.includes(text(100, 'f')), middle: contents.includes('middle') });
    }
    const middleLeftOut = shown.findIndex((request) => !request.middle);
    // The case this is about: the middle turn went while the first turn was whole, then the first was shortened.
    expect(shown[middleLeftOut]?.firstWhole).toBe(true);
    expect(shown[middleLeftOut + 1]?.firstWhole).toBe(false);
    expect(shown.slice(middleLeftOut).map((request) => request.middle)).toEqual(
      shown.slice(middleLeftOut).map(() => false),
    );
  });

  it('never gives a first turn back fuller within an agent loop: the prompt start does not move backwards', () => {
    // A first turn with a tool call, then an agent loop that grows a group (45 tokens) a request and is
    // trimmed in steps: after each step there is room again, but a first turn shortened at the loop's
    // peak stays as short (its form replayed from the loop's largest request).
    const first = [user('first task'), ...iteration('f1', text(60, 'f')), assistant(text(20, 'a'))];
    const loop = [
      user('go'),
      ...Array.from({ length: 14 }, (_unused, index) => iteration(`c${index}`, text(30, `r${index}`))).flat(),
    ];
    const rank = { whole: 3, masked: 2, user_only: 1, omitted: 0 } as const;
    const forms: number[] = [];
    for (let groups = 1; groups <= 14; groups++) {
      const { messages: rendered } = render(
        [...first, ...loop.slice(0, 1 + groups * 2)],
        { window: 420 },
        { keep_last: 1, clear_at_least: 50, trim_to: 0.7 },
      );
      const contents = rendered.map((message) => String(message.content));
      forms.push(
        contents.includes(text(60, 'f'))
          ? rank.whole
          : rendered.some((message) => message.tool_call_id === 'f1')
            ? rank.masked
            : contents.includes('first task')
              ? rank.user_only
              : rank.omitted,
      );
    }
    // It was shortened at some point, and never came back fuller after that.
    expect(Math.min(...forms)).toBeLessThan(rank.whole);
    for (let index = 1; index < forms.length; index++)
      expect(forms[index] as number).toBeLessThanOrEqual(forms[index - 1] as number);
  });

  /** Chat turns of a short question (5 tokens) and a longer answer (40). */
  const chatTurns = (count: number): ContextMessage[] =>
    Array.from({ length: count }, (_unused, index) => [
      user(text(5, `q${index}`)),
      assistant(text(40, `a${index}`)),
    ]).flat();

  /**
   * The requests of an agent loop after `history`, growing a group (45 tokens) a request for 14 requests,
   * on 520 tokens, trimmed in small steps: each step leaves room that a later request could fill.
   */
  const loopAfter = (history: ContextMessage[], overrides: Partial<ContextPolicy>) => {
    const loop = [
      user('go'),
      ...Array.from({ length: 14 }, (_unused, index) => iteration(`c${index}`, text(30, `r${index}`))).flat(),
    ];
    return Array.from({ length: 14 }, (_unused, index) =>
      render(
        [...history, ...loop.slice(0, 3 + index * 2)],
        { window: 520 },
        {
          keep_last: 1,
          clear_at_least: 50,
          trim_to: 0.7,
          ...overrides,
        },
      ),
    );
  };

  it('never lets older turns back in within an agent loop after a masking step: the history start stays', () => {
    // Chat turns, then an agent loop growing a group (45 tokens) a request, trimmed in steps: each step
    // leaves room, but the sliding history keeps what the loop left it at its largest request.
    const omitted = loopAfter(chatTurns(8), { keep_first_turns: 0 }).map(
      ({ report }) => report.droppedMessages,
    );
    // History was cut at some point, and no request reached further back than the one before it.
    expect(Math.max(...omitted)).toBeGreaterThan(0);
    for (let index = 1; index < omitted.length; index++)
      expect(omitted[index] as number).toBeGreaterThanOrEqual(omitted[index - 1] as number);
  });

  it('never brings the first user message back within an agent loop once the loop left it out', () => {
    // The first turn is kept as its user message alone while that fits beside the loop at its largest
    // request; a masking step that shrinks the turn afterwards does not bring it back.
    const first = user(text(40, 'first'));
    const history = [first, assistant(text(60, 'a0')), ...chatTurns(6)];
    const kept = loopAfter(history, { keep_first_turns: 1 }).map(({ messages }) => messages.includes(first));
    // It was sent, then left out, and once left out it stays out.
    expect(kept[0]).toBe(true);
    const leftOut = kept.indexOf(false);
    expect(leftOut).toBeGreaterThan(0);
    expect(kept.slice(leftOut)).toEqual(kept.slice(leftOut).map(() => false));
  });

  it('masks the tools named in exclude_tools last', () => {
    const messages: ContextMessage[] = [
      user('go'),
      ...iteration('keep', text(30, 'k')).map((message) =>
        message.role === 'assistant'
          ? {
              ...message,
              tool_calls: [{ id: 'keep', type: 'function', function: { name: 'plan', arguments: '{}' } }],
            }
          : message,
      ),
      ...['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8'].flatMap((id) => iteration(id, text(30, id))),
    ];
    const { messages: rendered } = render(messages, { window: 350 }, { exclude_tools: ['plan'], trim_to: 1 });
    const result = (id: string) => rendered.find((message) => message.tool_call_id === id)?.content;
    expect(result('keep')).toBe(text(30, 'k'));
    expect(result('c1')).toBe('[result masked — ~30 tokens removed]');
    expect(result('c2')).toBe('[result masked — ~30 tokens removed]');
  });

  it('keeps fewer results whole when the newest keep_last do not fit, down to the newest alone', () => {
    const messages: ContextMessage[] = [
      user('go'),
      ...['a', 'b', 'c'].flatMap((id) => iteration(id, text(100, id))),
    ];
    // Each group is 10 (call) + 105 (result); with 'go' (5) the turn is 350, over a budget of 197. All
    // three results are among the newest 5, so the older two are masked (11 each) and 'c' stays whole.
    const { messages: rendered, report } = render(messages, { window: 200 });
    expect(report.droppedIterationGroups).toBe(0);
    expect(report.maskedToolResults).toBe(2);
    expect(rendered.map((message) => message.tool_call_id ?? message.role)).toEqual([
      'user',
      'assistant',
      'a',
      'assistant',
      'b',
      'assistant',
      'c',
    ]);
    expect(rendered.at(-1)?.content).toBe(text(100, 'c'));
    expect(report.inputTokens).toBe(5 + 2 * 21 + 115 + 3);
  });

  it('drops the oldest whole groups only when even masked ones do not fit, and says which steps', () => {
    const heavyCall = (id: string): ContextMessage[] => [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'search', arguments: text(40, 'arg') } }],
      },
      { role: 'tool', tool_call_id: id, content: text(100, id) },
    ];
    const ids = Array.from({ length: 10 }, (_unused, index) => `g${index}`);
    const messages: ContextMessage[] = [user('go'), ...ids.flatMap(heavyCall)];
    const { messages: rendered, report } = render(messages, { window: 400 });
    expect(report.inputTokens).toBeLessThanOrEqual(400);
    expect(report.droppedIterationGroups).toBeGreaterThan(0);
    const dropped = report.droppedIterationGroups;
    const notice = rendered.find((message) => String(message.content).includes('earlier steps'));
    expect(notice?.content).toBe(
      `[ctxgate] ${dropped} earlier steps of this task (${dropped * 2} messages) were removed to fit the model's context window; they called: search${dropped > 1 ? ` ×${dropped}` : ''}. Their results are not shown.`,
    );
    // The notice follows the user message; the oldest groups are the ones gone; the newest is whole.
    expect(rendered[1]).toBe(notice);
    const keptCalls = rendered.flatMap((message) => (message.tool_calls ?? []).map((call) => call.id));
    expect(keptCalls).toEqual(ids.slice(dropped));
    expect(rendered.at(-1)?.content).toBe(text(100, 'g9'));
    expect(report.droppedMessages).toBe(dropped * 2);
    expect(report.maskedToolResults).toBe(
      rendered.filter((m) => String(m.content).startsWith('[result masked')).length,
    );
  });

  it('refuses a last user message that cannot fit, or cuts its middle under oversize: truncate_middle', () => {
    const messages = [user(`${text(300, 'start')} ${text(300, 'end')}`)];
    expect(
      renderContext({
        messages,
        tokenizer: words,
        window: 200,
        outputReserve: 0,
        safetyMarginTokens: 0,
        policy,
      }).ok,
    ).toBe(false);
    const { messages: rendered, report } = render(messages, { window: 200 }, { oversize: 'truncate_middle' });
    const content = String(rendered[0]?.content);
    expect(content.startsWith('start')).toBe(true);
    expect(content.endsWith('end')).toBe(true);
    expect(report.oversizeTruncated).toBe(true);
    expect(report.inputTokens).toBeLessThanOrEqual(200);
  });

  it('applies max_history_tokens and max_history_turns, the tightest limit winning', () => {
    const messages = Array.from({ length: 10 }, (_unused, index) => [
      user(text(10, `u${index}`)),
      assistant(text(10)),
    ]).flat();
    messages.push(user('now'));
    const capped = render(messages, {}, { max_history_tokens: 100 });
    expect(capped.report.inputTokens - 3).toBeLessThanOrEqual(100);
    const turns = render(messages, {}, { max_history_turns: 4, keep_first_turns: 0 });
    const userTurns = turns.messages.filter((message) => message.role === 'user').length - 1;
    expect(userTurns).toBeLessThanOrEqual(4);
  });

  it.each([
    { format: 'json', first: 'system', tools: 200 },
    { format: 'json', first: 'user', tools: 200 },
    { format: 'typescript', first: 'user', tools: 200 },
    // OpenAI's rendering joins the definitions to a system message first: 4 fewer (the line break it
    // adds is no word here).
    { format: 'typescript', first: 'system', tools: 196 },
  ] as const)(
    'takes a tool set’s count it is given instead of counting the definitions: $format, $first first',
    ({ format, first, tools }) => {
      const messages = [{ role: first, content: 'Be brief.' }, user('Now?')];
      const definitions = [{ type: 'function', function: { name: 'read', parameters: {} } }];
      const { report } = render(messages, { tools: definitions, toolFormat: format, toolFormula: 200 });
      expect(report.regions.tools).toBe(tools);
    },
  );

  it('does not mutate its input', () => {
    const messages = [user(text(500)), assistant(text(500)), user('now')];
    const copy = structuredClone(messages);
    render(messages, { window: 100 });
    expect(messages).toEqual(copy);
  });
});

describe('the final pairing check', () => {
  it.each([
    [
      'a tool message with no call before it',
      [
        { role: 'user', content: 'a' },
        { role: 'tool', tool_call_id: 'x', content: 'r' },
      ],
      ['user'],
      1,
    ],
    [
      'a call without its result, in an assistant message with text',
      [
        { role: 'user', content: 'a' },
        {
          role: 'assistant',
          content: 'let me look',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'user', content: 'b' },
      ],
      ['user', 'assistant:0', 'user'],
      1,
    ],
    [
      'one of two parallel calls answered, a second answer to the same call',
      [
        { role: 'user', content: 'a' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } },
            { id: 'c2', type: 'function', function: { name: 'g', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'one' },
        { role: 'tool', tool_call_id: 'c1', content: 'one again' },
      ],
      ['user', 'assistant:1', 'tool'],
      2,
    ],
  ])('repairs %s, with a notice', (_name, messages, expectedShape, removed) => {
    const copy = structuredClone(messages);
    const outcome = render(messages as ContextMessage[]);
    const shape = outcome.messages
      .filter((message) => !String(message.content).startsWith('[ctxgate]'))
      .map((message) =>
        message.role === 'assistant' ? `assistant:${message.tool_calls?.length ?? 0}` : message.role,
      );
    expect(shape).toEqual(expectedShape);
    expect(outcome.report.orphansRemoved).toBe(removed);
    expect(outcome.messages[0]?.content).toBe(
      `[ctxgate] ${removed} tool messages or tool calls without their counterpart were removed from this conversation.`,
    );
    // The input is not touched.
    expect(messages).toEqual(copy);
  });
});
