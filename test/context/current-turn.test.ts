// The current turn fitted (current-turn.ts; docs/budgeting.md, steps (a)–(d)), as tables worked out by
// hand with a word-counting tokenizer: a message costs 4 tokens and its words, a call 3 more. Results are
// truncated to their cap, then masked oldest first in steps (down to trim_to of the budget, at least
// clear_at_least), the newest keep_last kept whole, excluded tools masked last; whole groups dropped only
// when masked ones do not fit, with a notice. Replayed over the loop as it grew, so each step leaves the
// prompt of the next requests unchanged; given back newest first only below the step's target.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  droppedStepsNotice,
  fitCurrentTurn,
  isMaskedResult,
  maskedResultText,
  truncateText,
  type CurrentTurnInput,
} from '../../src/context/current-turn.js';
import type { ContextMessage, ContextPolicy } from '../../src/context/types.js';
import { words, statedPolicy, wordsText } from '../helpers/words.js';

const count = (message: ContextMessage): number =>
  4 +
  words.count(typeof message.content === 'string' ? message.content : '') +
  3 * (message.tool_calls?.length ?? 0);

const policy = statedPolicy({ keep_last: 1 });

const text = wordsText;

/**
 * A turn: the user's message (3 words: 7 tokens), then one step per entry, each a call (7 tokens) and
 * a result of that many words (4 + words), the tool named `tools[step]` or `read`.
 */
function loop(results: number[], tools: string[] = []): ContextMessage[] {
  const turn: ContextMessage[] = [{ role: 'user', content: 'fix the bug' }];
  results.forEach((length, step) => {
    const id = `call_${step}`;
    turn.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: tools[step] ?? 'read', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: id, content: text(length, `r${step}`) },
    );
  });
  return turn;
}

function fit(turn: ContextMessage[], budget: number, overrides: Partial<ContextPolicy> = {}) {
  const input: CurrentTurnInput = {
    turn,
    turnTokens: turn.map(count),
    budget,
    policy: { ...policy, ...overrides },
    tokenizer: words,
    count,
  };
  return fitCurrentTurn(input);
}

/** Per step of what was sent: W (whole), M (masked), T (truncated); the steps dropped are absent. */
function shape(messages: ContextMessage[]): string {
  return messages
    .filter((message) => message.role === 'tool')
    .map((message) =>
      isMaskedResult(message) ? 'M' : String(message.content).includes('truncated by ctxgate') ? 'T' : 'W',
    )
    .join('');
}

describe('fitting the current turn', () => {
  // Steps of 50 words cost 7 + 54 = 61 tokens; a masked one 7 + 10 = 17 (the mask is 6 words).
  it.each<{
    name: string;
    results: number[];
    budget: number;
    overrides?: Partial<ContextPolicy>;
    tools?: string[];
    sent: string;
    tokens: number;
  }>([
    { name: 'sends a turn that fits as it is', results: [50, 50, 50], budget: 400, sent: 'WWW', tokens: 190 },
    {
      // 7 + 7·61 = 434 > 400 at the seventh step: masked oldest first down to 280 (0.7 × 400),
      // 44 freed each: 434 → 390 → 346 → 302 → 258.
      name: 'masks the oldest results in a step down to trim_to of the budget',
      results: [50, 50, 50, 50, 50, 50, 50],
      budget: 400,
      sent: 'MMMMWWW',
      tokens: 258,
    },
    {
      // The step that masked at the seventh request holds at the eighth: 258 + 61 = 319 fits.
      name: 'leaves the masked set as it was while later steps fit',
      results: [50, 50, 50, 50, 50, 50, 50, 50],
      budget: 400,
      sent: 'MMMMWWWW',
      tokens: 319,
    },
    {
      // At least 200 freed, and down to 200 (400 − clear_at_least, under 0.7 × 400): 434 → 214 after
      // five masks (220 freed), 170 after six.
      name: 'frees at least clear_at_least in a step, to clear_at_least below the budget',
      results: [50, 50, 50, 50, 50, 50, 50],
      budget: 400,
      overrides: { clear_at_least: 200 },
      sent: 'MMMMMMW',
      tokens: 170,
    },
    {
      name: 'keeps the newest keep_last results whole while others can go',
      results: [50, 50, 50, 50, 50, 50, 50],
      budget: 400,
      overrides: { keep_last: 4, trim_to: 0.5 },
      // 434 → 390 → 346 → 302 (the newest four are kept whole though 302 > 200).
      sent: 'MMMWWWW',
      tokens: 302,
    },
    {
      name: 'masks an excluded tool’s result last',
      results: [50, 50, 50, 50, 50, 50, 50],
      tools: ['plan'],
      budget: 400,
      overrides: { exclude_tools: ['plan'] },
      sent: 'WMMMMWW',
      tokens: 258,
    },
    {
      name: 'masks the turn’s first keep_first results last',
      results: [50, 50, 50, 50, 50, 50, 50],
      budget: 400,
      overrides: { keep_first: 2 },
      sent: 'WWMMMMW',
      tokens: 258,
    },
    {
      // The 300-word result within its cap of 30: the indicator's 12 words and 2 of margin leave 16,
      // 8 from each end — 28 words, 32 tokens; 7 + (7 + 24) + (7 + 32) = 77.
      name: 'truncates a result over max_tool_result_tokens to its cap',
      results: [20, 300],
      budget: 1_000,
      overrides: { max_tool_result_tokens: 30 },
      sent: 'WT',
      tokens: 77,
    },
  ])('$name', ({ results, budget, overrides, tools, sent, tokens }) => {
    const fitted = fit(loop(results, tools), budget, overrides);
    expect(shape(fitted.messages)).toBe(sent);
    expect(fitted.tokens).toBe(tokens);
    expect(fitted.masked).toBe([...sent].filter((kind) => kind === 'M').length);
    expect(fitted.droppedGroups).toBe(0);
    expect(fitted.tooLarge).toBe(false);
    // Counted as it is sent.
    expect(fitted.tokens).toBe(fitted.messages.map(count).reduce((sum, tokens) => sum + tokens, 0));
  });

  it('keeps the peak the requests before its summary reached: a summary that shrinks the turn frees no room for older turns', () => {
    // Seven steps of 61 tokens after the user message (7): the sixth request sent 7 + 6·61 = 373, the
    // seventh (434 > 400) was masked down to 258. A summary of the first four steps (20 tokens) leaves
    // 7 + 20 + 3·61 = 210 now, but the loop's largest request stays 373: what history had then is the
    // most it gets for the rest of the loop.
    const turn = loop([50, 50, 50, 50, 50, 50, 50]);
    expect(fit(turn, 400).peakTokens).toBe(373);
    const summary: ContextMessage = { role: 'system', content: text(16, 'summary') };
    const summarized = fitCurrentTurn({
      turn,
      turnTokens: turn.map(count),
      budget: 400,
      policy,
      tokenizer: words,
      count,
      turnSummary: { message: summary, coversUntil: 9, tokens: count(summary) },
    });
    expect(summarized.tokens).toBe(210);
    expect(summarized.peakTokens).toBe(373);
  });

  it('lets the summary of older steps give way before the newest step is cut', () => {
    // Five steps the summary (204 tokens) stands for, then the newest: a call (7) and a result of 104. On
    // 250 tokens the user message (7), the summary and the newest step (322) do not fit: the result would
    // be cut to 32 tokens and masked. Without the summary the newest fits whole, the older steps named.
    const turn = loop([50, 50, 50, 50, 50, 100]);
    const summary: ContextMessage = { role: 'system', content: text(200, 'summary') };
    const input = (budget: number): CurrentTurnInput => ({
      turn,
      turnTokens: turn.map(count),
      budget,
      policy,
      tokenizer: words,
      count,
      turnSummary: { message: summary, coversUntil: 11, tokens: count(summary) },
    });
    const fitted = fitCurrentTurn(input(250));
    expect(fitted.messages.at(-1)).toBe(turn.at(-1));
    expect(fitted.messages).not.toContain(summary);
    expect(fitted.summarizedMessages).toBe(0);
    expect(fitted.droppedGroups + fitted.masked).toBeGreaterThan(0);
    expect(fitted.tokens).toBeLessThanOrEqual(250);
    // Where the newest fits beside it, the summary stays.
    const roomy = fitCurrentTurn(input(330));
    expect(roomy.messages.slice(0, 2)).toEqual([turn[0], summary]);
    expect(roomy.messages.at(-1)).toBe(turn.at(-1));
    expect(roomy.summarizedMessages).toBe(10);
  });

  it('keeps every call with its arguments when its result is masked', () => {
    const turn = loop([50, 50, 50, 50, 50, 50, 50]);
    const fitted = fit(turn, 400);
    expect(fitted.messages.filter((message) => message.role === 'assistant')).toEqual(
      turn.filter((message) => message.role === 'assistant'),
    );
    expect(fitted.messages[2]).toEqual({
      role: 'tool',
      tool_call_id: 'call_0',
      content: maskedResultText(50),
    });
  });

  it('drops the oldest whole steps only when masked ones do not fit, and says which tools they called', () => {
    // Forty masked steps alone cost 7 + 40·17 = 687.
    const tools = Array.from({ length: 40 }, (_tool, step) => (step % 4 === 0 ? 'search' : 'read'));
    const fitted = fit(
      loop(
        Array.from({ length: 40 }, () => 50),
        tools,
      ),
      400,
    );
    expect(fitted.droppedGroups).toBeGreaterThan(0);
    expect(fitted.tokens).toBeLessThanOrEqual(400);
    expect(fitted.messages[0]).toEqual({ role: 'user', content: 'fix the bug' });
    const notice = fitted.messages[1];
    const dropped = fitted.droppedGroups;
    const searches = Math.ceil(dropped / 4);
    expect(notice).toEqual(
      droppedStepsNotice(
        dropped,
        dropped * 2,
        new Map([
          ['search', searches],
          ['read', dropped - searches],
        ]),
      ),
    );
    expect(String(notice?.content)).toContain(
      `${dropped} earlier steps of this task (${dropped * 2} messages)`,
    );
    // The steps kept are the newest, each call still with its result.
    const firstKept = fitted.messages[2]?.tool_calls?.[0]?.id;
    expect(firstKept).toBe(`call_${dropped}`);
    expect(fitted.droppedMessages).toBe(dropped * 2);
  });

  it('is too large when the user message alone is over the budget, or cut in its middle when the policy says so', () => {
    const turn: ContextMessage[] = [{ role: 'user', content: text(500) }];
    expect(fit(turn, 100).tooLarge).toBe(true);
    const cut = fit(turn, 100, { oversize: 'truncate_middle' });
    expect(cut.tooLarge).toBe(false);
    expect(cut.oversizeTruncated).toBe(true);
    expect(cut.tokens).toBeLessThanOrEqual(100);
    expect(String(cut.messages[0]?.content)).toContain('truncated by ctxgate');
  });

  it('cuts the newest step’s results when even it alone is over the budget', () => {
    const fitted = fit(loop([50, 2_000]), 300);
    expect(fitted.tooLarge).toBe(false);
    expect(fitted.tokens).toBeLessThanOrEqual(300);
    // The older step goes first (masked, then dropped); the newest is cut, never masked for a smaller one.
    expect(shape(fitted.messages).at(-1)).toBe('T');
  });
});

/**
 * A turn whose steps may call tools in parallel: per step, the word counts of its results. A step's call
 * costs 4 tokens and 3 per tool call; its results are `call_<step>_<n>`.
 */
function parallelLoop(steps: number[][]): ContextMessage[] {
  const turn: ContextMessage[] = [{ role: 'user', content: 'fix the bug' }];
  steps.forEach((results, step) => {
    const ids = results.map((_length, index) => `call_${step}_${index}`);
    turn.push({
      role: 'assistant',
      content: null,
      tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'read', arguments: '{}' } })),
    });
    results.forEach((length, index) =>
      turn.push({ role: 'tool', tool_call_id: `call_${step}_${index}`, content: text(length, `r${step}`) }),
    );
  });
  return turn;
}

describe('the newest step’s results, which the model has not seen', () => {
  it('are masked for the step’s target only while the turn is over the budget', () => {
    // 7 + (7 + 154) = 168, then the newest step (10 + 64 + 204 = 278): 446 > 400. Masking the older
    // result (154 → 10) brings it to 302, within the budget: the newest step's first result stays whole
    // though 302 is over the target (280), where the older one alone would not have brought it.
    const fitted = fit(parallelLoop([[150], [60, 200]]), 400);
    expect(shape(fitted.messages)).toBe('MWW');
    expect(fitted.tokens).toBe(302);
  });

  it('come back whole when dropping older steps freed the room they were masked for', () => {
    // 7 + (64 + 20 · 9) = 251, then the newest step (10 + 104 + 154 = 268): 519 > 400. No older result
    // can be masked (a 5-word result is shorter than its mask); the newest step's first result is (425),
    // still over: the older step is dropped (244 less, the notice's tokens more). Its 94 tokens then fit.
    const turn = parallelLoop([Array.from({ length: 20 }, () => 5), [100, 150]]);
    const fitted = fit(turn, 400, { keep_last: 5 });
    const notice = droppedStepsNotice(1, 21, new Map([['read', 20]]));
    expect(fitted.droppedGroups).toBe(1);
    expect(shape(fitted.messages)).toBe('WW');
    expect(fitted.tokens).toBe(7 + count(notice) + 268);
  });
});

describe('truncateText', () => {
  it.each([
    ['head', /^w0 w1 w2 .*w\d+\n\[… truncated by ctxgate: kept ~\d+ of 100 tokens/],
    ['tail', /^\[… truncated by ctxgate: kept ~\d+ of 100 tokens, ~\d+ removed …\]\nw\d+ .* w99$/],
    ['both', /^w0 .*\n\[… truncated by ctxgate: kept ~\d+ of 100 tokens, ~\d+ removed …\]\n.* w99$/],
  ] as const)('keeps the %s within the cap, with an indicator', (side, expected) => {
    const original = Array.from({ length: 100 }, (_word, index) => `w${index}`).join(' ');
    const cut = truncateText(original, 40, side, words);
    expect(cut.originalTokens).toBe(100);
    expect(cut.text).toMatch(expected);
    expect(words.count(cut.text)).toBeLessThanOrEqual(40);
  });
});

describe('giving masked results back', () => {
  it('gives nothing back above the step’s target, where the next steps go', () => {
    // Fitted at 258 of 400, target 280: the 44 a result needs is over the 22 left below the target.
    const fitted = fit(loop([50, 50, 50, 50, 50, 50, 50]), 400);
    expect(fitted.giveBack(1_000)).toBeUndefined();
  });

  it('gives back newest first while they fit the room and the target', () => {
    // The excluded 300-word result (311 tokens with its call) is masked last: at the third step
    // (7 + 311 + 61 + 61 = 440) the second result is masked (396), the third is protected, then the
    // excluded one frees 294 (102). Two more steps: 224, 56 below the target (280) — the second result
    // (44 more whole) comes back, the excluded one (294) does not.
    const fitted = fit(loop([300, 50, 50, 50, 50], ['plan']), 400, { exclude_tools: ['plan'] });
    expect(shape(fitted.messages)).toBe('MMWWW');
    expect(fitted.tokens).toBe(224);
    expect(fitted.giveBack(40)).toBeUndefined();
    const given = fitted.giveBack(1_000);
    expect(shape(given?.messages ?? [])).toBe('MWWWW');
    expect(given?.tokens).toBe(268);
    expect(given?.masked).toBe(1);
  });

  it('never leaves a result masked that would have fit whole beside the newer ones (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 300, max: 3_000 }),
        fc.integer({ min: 0, max: 2_000 }),
        fc.constantFrom(0.5, 0.7, 0.9),
        fc.integer({ min: 0, max: 4 }),
        (results, budget, room, trimTo, keepLast) => {
          const overrides = { trim_to: trimTo, keep_last: keepLast };
          const fitted = fit(loop(results), budget, overrides);
          if (fitted.tooLarge) return;
          const final = fitted.giveBack(room) ?? fitted;
          const target = Math.min(budget, Math.floor(budget * trimTo));
          expect(final.tokens).toBeLessThanOrEqual(fitted.tokens + room);
          // The newest result still masked would not have fit in what was left below the target.
          const newestMasked = final.messages.findLast(isMaskedResult);
          if (newestMasked === undefined) return;
          const step = Number(newestMasked.tool_call_id?.slice('call_'.length));
          const extra = 4 + (results[step] as number) - count(newestMasked);
          expect(extra).toBeGreaterThan(Math.min(fitted.tokens + room, target) - final.tokens);
        },
      ),
      { numRuns: 300, seed: 27 },
    );
  });
});
