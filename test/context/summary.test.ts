// The summarization core: when to summarize and which turns (planSummary), the summarizer's own request
// (buildSummaryRequest, checked against the fake provider's independent token count), and the guard
// (judgeSummary, identifierFacts) as tables of good and bad summaries.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildSummaryRequest,
  factSourceTexts,
  identifierFacts,
  judgeSummary,
  repairSummary,
  sentenceStating,
  planSummary,
  planTurnSummary,
  withoutThinking,
  type SummaryPlanInput,
} from '../../src/context/summary.js';
import type { ContextMessage } from '../../src/context/types.js';
import { builtInPolicy } from '../../src/config/policy-defaults.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { countPromptTokens } from '../helpers/fake-upstream.js';
import { seeded } from '../helpers/text.js';

const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');

const policy = builtInPolicy;

/** Turns of [user, assistant] with the given token counts per message. */
function activeOf(turns: number[][]): Pick<SummaryPlanInput, 'activeTokens' | 'turnStarts'> {
  return {
    activeTokens: turns.flat(),
    turnStarts: turns.flatMap((turn) => turn.map((_tokens, index) => index === 0)),
  };
}

describe('planSummary', () => {
  const base = { head: 2, archived: 0, summaryTo: 2, summarizeAt: 0.75, summarizeTo: 0.4 };

  it('does nothing while history is at or under summarize_at of the budget', () => {
    // 10 turns of 2 × 10 tokens = 200 tokens; 0.75 × 300 = 225.
    const plan = planSummary({
      ...base,
      ...activeOf(Array.from({ length: 10 }, () => [10, 10])),
      historyBudget: 300,
    });
    expect(plan).toEqual({ kind: 'none', historyTokens: 200, thresholdTokens: 225 });
  });

  it('covers the oldest turns after the head up to the first boundary that reaches summarize_to', () => {
    // 10 turns × 20 = 200 tokens, budget 200: over 150; target 80 → drop 6 turns after the head (the
    // head's 20 + 3 remaining turns' 60 = 80), i.e. active messages 2..13.
    const plan = planSummary({
      ...base,
      ...activeOf(Array.from({ length: 10 }, () => [10, 10])),
      historyBudget: 200,
    });
    expect(plan).toEqual({
      kind: 'summarize',
      historyTokens: 200,
      thresholdTokens: 150,
      targetTokens: 80,
      fromMessage: 2,
      toMessage: 14,
    });
  });

  it('counts archived messages in positions and starts where the previous summary ended', () => {
    const plan = planSummary({
      ...base,
      ...activeOf(Array.from({ length: 10 }, () => [10, 10])),
      archived: 30,
      summaryTo: 25,
      historyBudget: 200,
    });
    expect(plan).toMatchObject({ kind: 'summarize', fromMessage: 25, toMessage: 44 });
  });

  it('never covers the newest turn, and does nothing when only one turn follows the head', () => {
    const huge = planSummary({
      ...base,
      ...activeOf([
        [10, 10],
        [500, 500],
        [500, 500],
      ]),
      historyBudget: 100,
    });
    expect(huge).toMatchObject({ kind: 'summarize', fromMessage: 2, toMessage: 4 });
    const single = planSummary({
      ...base,
      ...activeOf([
        [10, 10],
        [500, 500],
      ]),
      historyBudget: 100,
    });
    expect(single.kind).toBe('none');
  });

  it('waits while a large head leaves too little to summarize, unless the archive holds unsummarized messages', () => {
    // 3 130 tokens over 0.75 × 4 000, but only 80 can be summarized: less than (0.75 − 0.4) × 4 000 / 2.
    const turns = activeOf([
      [3_000, 10],
      [20, 20],
      [20, 20],
      [20, 20],
    ]);
    expect(planSummary({ ...base, ...turns, historyBudget: 4_000 }).kind).toBe('none');
    expect(planSummary({ ...base, ...turns, archived: 5, historyBudget: 4_000 })).toMatchObject({
      kind: 'summarize',
      fromMessage: 2,
      toMessage: 11,
    });
  });

  it('always cuts at a turn boundary after the head and before the newest turn, and no later than needed', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 4 }), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.integer({ min: 0, max: 2 }),
        fc.integer({ min: 50, max: 3_000 }),
        (turns, headTurns, historyBudget) => {
          const head = turns.slice(0, Math.min(headTurns, turns.length - 1)).flat().length;
          const input = { ...base, head, summaryTo: head, ...activeOf(turns), historyBudget };
          const plan = planSummary(input);
          const total = turns.flat().reduce((sum, value) => sum + value, 0);
          if (total <= Math.floor(0.75 * historyBudget)) expect(plan.kind).toBe('none');
          if (plan.kind === 'none') return;
          const cut = plan.toMessage;
          const lastTurnStart = input.turnStarts.lastIndexOf(true);
          expect(input.turnStarts[cut]).toBe(true);
          expect(cut).toBeGreaterThan(head);
          expect(cut).toBeLessThanOrEqual(lastTurnStart);
          const remainingAfter = (end: number): number =>
            total - input.activeTokens.slice(head, end).reduce((sum, value) => sum + value, 0);
          // Either the target is reached, or everything but the newest turn is covered.
          expect(remainingAfter(cut) <= plan.targetTokens || cut === lastTurnStart).toBe(true);
          // No earlier boundary reaches the target.
          for (let earlier = head + 1; earlier < cut; earlier++) {
            if (input.turnStarts[earlier] === true)
              expect(remainingAfter(earlier)).toBeGreaterThan(plan.targetTokens);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

const filler = (words: number): string =>
  Array.from({ length: words }, (_unused, index) => ['river', 'stone', 'lamp', 'green'][index % 4]).join(' ');

function conversation(turns: number, wordsPerMessage: number): ContextMessage[] {
  return Array.from({ length: turns }, (_unused, turn) => [
    { role: 'user', content: `turn ${turn + 100}: ${filler(wordsPerMessage)}` },
    { role: 'assistant', content: filler(wordsPerMessage) },
  ]).flat();
}

/** The summarizer's request in an 8k window with 400 tokens of margin and 500 for the summary. */
const requestFor = (
  messages: ContextMessage[],
  previousSummary?: string,
  more: { answerCapTokens?: number } = {},
) =>
  buildSummaryRequest({
    previousSummary,
    messages,
    tokenizer,
    window: 8_192,
    safetyMarginTokens: 400,
    maxSummaryTokens: 500,
    policy,
    ...more,
  });

describe('buildSummaryRequest', () => {
  it('sends the instructions, the previous summary and every turn when they fit', () => {
    const messages = conversation(4, 20);
    const request = requestFor(messages, 'The user wants a report on /srv/data/report-7.csv.');
    expect(request?.coveredMessages).toBe(8);
    const [system, user] = request?.messages ?? [];
    expect(system?.role).toBe('system');
    expect(String(system?.content)).toMatch(/language the conversation is written in/);
    expect(String(system?.content)).toMatch(/"\[pin\]" verbatim/);
    expect(String(user?.content)).toContain(
      'Previous summary:\nThe user wants a report on /srv/data/report-7.csv.',
    );
    for (let turn = 0; turn < 4; turn++)
      expect(String(user?.content)).toContain(`[user] turn ${turn + 100}:`);
  });

  it("gives a thinking model's answers by what they said, and counts no fact of their thinking", () => {
    // As Ollama serves DeepSeek-R1's distills: each answer's thinking first, between <think> tags.
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Which host runs the queue?' },
      {
        role: 'assistant',
        content:
          '<think>\nMaybe q-host-01 or /etc/queue.conf; check later.\n</think>\n\nThe queue runs on q-host-07.',
      },
    ];
    const transcript = String(requestFor(messages)?.messages[1]?.content);
    expect(transcript).toContain('[assistant] The queue runs on q-host-07.');
    expect(transcript).not.toContain('think');
    expect(factSourceTexts(messages, false).flatMap(identifierFacts)).toEqual(['q-host-07']);
  });

  it("keeps a thinking model's answer cap free, and still asks for a summary of the summary's length", () => {
    const messages = conversation(40, 60);
    const plain = requestFor(messages);
    const thinking = requestFor(messages, undefined, { answerCapTokens: 4_000 });
    expect(thinking?.coveredMessages).toBeLessThan(plain?.coveredMessages ?? 0);
    expect((thinking?.inputTokens ?? Infinity) + 4_000 + 400).toBeLessThanOrEqual(8_192);
    expect(String(thinking?.messages[0]?.content)).toContain('At most about 500 tokens.');
  });

  it('covers only the oldest whole turns that fit the summarizer window, and its request fits', () => {
    const messages = conversation(40, 60);
    const window = 2_000;
    const request = buildSummaryRequest({
      previousSummary: undefined,
      messages,
      tokenizer,
      window,
      safetyMarginTokens: 100,
      maxSummaryTokens: 300,
      policy,
    });
    expect(request).toBeDefined();
    const covered = request?.coveredMessages ?? 0;
    expect(covered).toBeGreaterThan(2);
    expect(covered).toBeLessThan(messages.length);
    expect(covered % 2).toBe(0);
    const text = String(request?.messages[1]?.content);
    expect(text).toContain(`turn ${100 + covered / 2 - 1}:`);
    expect(text).not.toContain(`turn ${100 + covered / 2}:`);
    // The provider's own count (the fake's cookbook count, independent of the gateway's).
    expect(countPromptTokens(request?.messages as never, undefined) + 300).toBeLessThanOrEqual(window - 100);
  });

  it('reads no further into a range of thousands of messages than its window holds', () => {
    // 4,000 turns of about 140 tokens: a session's backlog after a 20 MB request, on an 8k summarizer.
    const messages = conversation(4_000, 60);
    let chars = 0;
    const counting = {
      encoding: tokenizer.encoding,
      count: (text: string) => {
        chars += text.length;
        return tokenizer.count(text);
      },
      truncate: tokenizer.truncate.bind(tokenizer),
    };
    const request = buildSummaryRequest({
      previousSummary: undefined,
      messages,
      tokenizer: counting,
      window: 8_192,
      safetyMarginTokens: 400,
      maxSummaryTokens: 500,
      policy,
    });
    const covered = request?.coveredMessages ?? 0;
    expect(covered).toBeGreaterThan(20);
    const coveredChars = messages
      .slice(0, covered)
      .reduce((sum, message) => sum + String(message.content).length, 0);
    // Each covered text is counted a few times (its cap, its block, the transcript): not the range's 4,000 turns.
    expect(chars).toBeLessThan(8 * coveredChars);
  });

  it('covers what fits of a range far longer than its window, though the whole transcript is counted from samples', () => {
    // A backlog of 1,900 varied messages (prose, numbers, identifiers, German and Japanese words) on a
    // 128k window: the transcript is one text of ~450,000 characters, counted from samples (so its count
    // is not the sum of its blocks' counts), and the request must still be built, not given up on.
    const random = seeded(1);
    const pick = (from: readonly string[]): string => from[Math.floor(random() * from.length)] as string;
    const syllables = [
      'ka',
      'lo',
      'mi',
      'tren',
      'sto',
      'da',
      'vel',
      'qui',
      'ran',
      'po',
      'zu',
      'ber',
      'ex',
      'ion',
    ];
    const words = [
      'the',
      'and',
      'deployment',
      'latency',
      'queue',
      'retry',
      'über',
      'Datenbank',
      '設定',
      '確認',
    ];
    const word = (): string => {
      const roll = random();
      if (roll < 0.45) return pick(words);
      if (roll < 0.55) return String(Math.floor(random() * 100_000));
      if (roll < 0.62) return `${pick(syllables)}_${pick(syllables)}Id`;
      return Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(syllables)).join('');
    };
    const messages: ContextMessage[] = Array.from({ length: 1_900 }, (_unused, index) => {
      let content = `Message ${index}:`;
      while (content.length < 200) content += (random() < 0.08 ? '. ' : ' ') + word();
      return { role: index % 2 === 0 ? 'user' : 'assistant', content };
    });
    const window = 128_000;
    const request = buildSummaryRequest({
      previousSummary: undefined,
      messages,
      tokenizer,
      window,
      safetyMarginTokens: 6_400,
      maxSummaryTokens: 1_024,
      policy,
    });
    expect(request).toBeDefined();
    const covered = request?.coveredMessages ?? 0;
    expect(covered % 2).toBe(0);
    expect(covered).toBeGreaterThan(1_000);
    expect(covered).toBeLessThan(messages.length);
    const text = String(request?.messages[1]?.content);
    expect(text).toContain(`Message ${covered - 1}:`);
    expect(text).not.toContain(`Message ${covered}:`);
    // The provider's own count (the fake's, independent of the gateway's) leaves the summary its room.
    expect(countPromptTokens(request?.messages as never, undefined) + 1_024).toBeLessThanOrEqual(
      window - 6_400,
    );
  });

  it('cuts long tool results in the transcript and gives up when not one turn fits', () => {
    const messages: ContextMessage[] = [
      { role: 'user', content: 'read the log' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'read_log', arguments: '{"path":"/var/log/x"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'line of log output\n'.repeat(3_000) },
      { role: 'assistant', content: 'The log is fine.' },
    ];
    const request = requestFor(messages);
    const text = String(request?.messages[1]?.content);
    expect(text).toContain('[assistant calls read_log({"path":"/var/log/x"})]');
    expect(text).toMatch(/truncated by ctxgate: kept ~\d+ of \d+ tokens/);
    expect(tokenizer.count(text)).toBeLessThan(1_500);
    expect(
      buildSummaryRequest({
        previousSummary: undefined,
        messages,
        tokenizer,
        window: 700,
        safetyMarginTokens: 50,
        maxSummaryTokens: 600,
        policy,
      }),
    ).toBeUndefined();
  });
});

describe("buildSummaryRequest for an agent turn's steps", () => {
  const step = (id: string, words: number): ContextMessage[] => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id, type: 'function', function: { name: 'read_file', arguments: `{"path":"${id}.ts"}` } },
      ],
    },
    { role: 'tool', tool_call_id: id, content: `${id} begins. ${filler(words)} ${id} ends.` },
  ];
  const stepsRequest = (task: string, window: number) =>
    buildSummaryRequest({
      previousSummary: undefined,
      messages: [...step('first', 1_500), ...step('second', 1_500)],
      tokenizer,
      window,
      safetyMarginTokens: 100,
      maxSummaryTokens: 500,
      policy,
      unit: 'steps',
      task,
    });
  /** The tokens of each tool result as the summarizer reads it (between its label and the next block). */
  const readTokens = (text: string): number[] =>
    [...text.matchAll(/\[tool result\] ([\s\S]*?)(?=\n\[assistant calls|$)/g)].map((match) =>
      tokenizer.count(match[1] as string),
    );

  it('gives a short task as it was written, with no truncation mark', () => {
    const text = String(
      stepsRequest('Task 7: fix the retry budget in src/budget.ts.', 8_192)?.messages[1]?.content,
    );
    expect(text).toContain('working on this task:\nTask 7: fix the retry budget in src/budget.ts.\n\n');
    expect(text.split('truncated by ctxgate').length - 1).toBe(2);
  });

  it('reads each result by its ends at a 64th of a small window, at 400 tokens from 25,600 tokens up', () => {
    for (const [window, most] of [
      [8_192, 128],
      [4_096, 64],
      [16_384, 256],
      [32_768, 400],
      [128_000, 400],
    ] as const) {
      const text = String(stepsRequest('Read the files.', window)?.messages[1]?.content);
      const read = readTokens(text);
      expect(read, `window ${window}`).toHaveLength(2);
      for (const tokens of read) {
        expect(tokens, `window ${window}`).toBeLessThanOrEqual(most + 2);
        expect(tokens, `window ${window}`).toBeGreaterThan(most - 40);
      }
      expect(text).toContain('first begins.');
      expect(text).toContain('first ends.');
    }
  });

  it("asks for the agent's steps in instructions of their own: no user, no pinned messages, no previous summary unless given", () => {
    const request = stepsRequest('Read the files.', 8_192);
    const instructions = String(request?.messages[0]?.content);
    expect(instructions).toMatch(/^You write the running summary of an AI agent's work/);
    expect(instructions).toContain('what each step did and found');
    expect(instructions).not.toContain('[pin]');
    expect(instructions).not.toContain('previous summary');
    expect(tokenizer.count(instructions)).toBeLessThan(110);
    const merging = buildSummaryRequest({
      previousSummary: 'Steps 1 to 3 read src/a.ts.',
      messages: step('third', 100),
      tokenizer,
      window: 8_192,
      safetyMarginTokens: 100,
      maxSummaryTokens: 500,
      policy,
      unit: 'steps',
      task: 'Read the files.',
    });
    expect(String(merging?.messages[0]?.content)).toContain('previous summary');
    expect(String(merging?.messages[1]?.content)).toContain('Previous summary:\nSteps 1 to 3 read src/a.ts.');
  });
});

describe('identifierFacts', () => {
  it.each([
    ['The invoice INV-2024-0042 is due on 2026-12-01.', ['INV-2024-0042', '2026-12-01']],
    [
      'Edit src/http/proxy-routes.ts and /etc/ctxgate.yaml',
      ['src/http/proxy-routes.ts', '/etc/ctxgate.yaml'],
    ],
    [
      'See https://example.com/a?b=1 or mail ops@example.com',
      ['https://example.com/a?b=1', 'ops@example.com'],
    ],
    ['call get_user_name then fetchUserById', ['get_user_name', 'fetchUserById']],
    ['costs 1,250.50 EUR, port 8080, version v2.3.1', ['1,250.50', '8080', 'v2.3.1']],
    ['we met 3 times and agreed on the plan, and/or later', []],
    // Turn counters and list numbering are incidental; the code in the sentence is the fact.
    ['Turn 17: 2. the code for vault 3 is K3-12345 (step 12 of 40)', ['K3-12345']],
    ['at 10:30 on 3/4, 120 items', ['10:30', '3/4']],
    ['(see "C:\\Users\\ana\\notes.txt") and ./run.sh', ['C:\\Users\\ana\\notes.txt', './run.sh']],
    ['the code (K3-12345).", or v2.3.1!?', ['K3-12345', 'v2.3.1']],
  ])('%s', (text, expected) => {
    expect(identifierFacts(text)).toEqual(expected);
  });

  // Words a tool's output holds that a summary should not restate, each of them 100,000 characters:
  // patterns tried again at every position of such a word took seconds of CPU for one word.
  it.each([
    ['digits', '1'.repeat(100_000)],
    ['colons and a letter', `${':'.repeat(100_000)}x`],
    ['a digit and dashes', `1${'-'.repeat(100_000)}`],
    ['a path', `src${'/a'.repeat(50_000)}.ts`],
  ])('leaves out a word of 100,000 characters (%s), and keeps the facts beside it', (_name, word) => {
    expect(identifierFacts(`deploy K3-12345 ${word} to db-staging-04`)).toEqual([
      'K3-12345',
      'db-staging-04',
    ]);
  });
});

describe('withoutThinking: what a model said after the thinking it wrote between tags', () => {
  it.each<[string, string, string]>([
    ['plain text', 'Staging DB: db-staging-04.', 'Staging DB: db-staging-04.'],
    [
      'thinking between <think> tags first (DeepSeek-R1 on Ollama)',
      '<think>\nThe user wants a summary. Keep the codes.\n</think>\n\nStaging DB: db-staging-04.',
      'Staging DB: db-staging-04.',
    ],
    ['an empty <think> block (Qwen3, thinking off)', '<think>\n\n</think>\n\nSummary.', 'Summary.'],
    ['<thinking> tags, any case', '  <Thinking>plan</THINKING>Summary.', 'Summary.'],
    ['thinking never closed (cut at its length)', '<think>\nStill weighing what to keep', ''],
    [
      'a tag quoted later in the text is text',
      'Use <think> tags in prompts.',
      'Use <think> tags in prompts.',
    ],
  ])('%s', (_case, text, expected) => {
    expect(withoutThinking(text)).toBe(expected);
  });
});

describe('judgeSummary', () => {
  const covered: ContextMessage[] = [
    { role: 'user', content: 'The staging database is db-staging-04 on port 5433.' },
    { role: 'assistant', content: 'Noted; the config lives in deploy/staging.yaml.' },
    { role: 'user', content: '[pin] Never restart the primary during business hours.' },
    { role: 'tool', tool_call_id: 'c', content: 'irrelevant 123456 789' },
  ];
  const good =
    'Staging DB: db-staging-04, port 5433; config in deploy/staging.yaml.\nNever restart the primary during business hours.';
  const judge = (text: string, extra: Partial<Parameters<typeof judgeSummary>[0]> = {}) =>
    judgeSummary({
      text,
      finishReason: 'stop',
      previousSummary: undefined,
      covered,
      pinPrefix: '[pin]',
      ...extra,
    });

  it('accepts a summary that keeps the pinned message and every identifier (tool output is not required)', () => {
    expect(judge(good)).toEqual({ ok: true, factsKept: 3, factsTotal: 3, missingFacts: [] });
  });

  it('judges alike with the source facts extracted by the caller as without', () => {
    for (const withToolResults of [false, true])
      for (const text of [good, 'Staging DB: db-staging-04.', 'Config: deploy/staging.yaml, port 5433.']) {
        const sourceFacts = factSourceTexts(covered, withToolResults).flatMap(identifierFacts);
        expect(judge(text, { withToolResults, sourceFacts })).toEqual(judge(text, { withToolResults }));
      }
    // And they are what it counts: the covered messages are not read again.
    expect(judge(good, { sourceFacts: ['db-staging-04', 'replica_lag_ms'] })).toMatchObject({
      factsTotal: 2,
      factsKept: 1,
      missingFacts: ['replica_lag_ms'],
    });
  });

  it('counts the facts of tool results when asked to (a summary of an agent loop)', () => {
    expect(judge(good, { withToolResults: true })).toMatchObject({
      ok: true,
      factsTotal: 4,
      missingFacts: ['123456'],
    });
  });

  it.each([
    ['empty', '   \n'],
    ['error_text', "I'm sorry, but I can't help with summarizing this conversation."],
    ['error_text', '{"error":{"message":"overloaded"}}'],
    ['error_text', 'Error: upstream timed out'],
    ['lost_pinned', 'Staging DB: db-staging-04, port 5433; config in deploy/staging.yaml.'],
  ])('rejects %s: %j', (reason, text) => {
    expect(judge(text)).toMatchObject({ ok: false, reason });
  });

  it('takes a summary of a debugging session that starts with the word Error', () => {
    // What a terse summarizer writes of a conversation that began with a stack trace: a summary, not
    // a provider's error text.
    const summary = [
      'Error in the staging deploy traced to db-staging-04 refusing connections on port 5433.',
      'The user changed deploy/staging.yaml to point at the replica; the deploy then passed.',
      'Open: add a health check before the migration step.',
      'Never restart the primary during business hours.',
    ].join('\n');
    expect(judge(summary)).toMatchObject({ ok: true });
    expect(
      judge(
        `Error handling was rewritten around db-staging-04: ${'retries with backoff, '.repeat(12)}done. Never restart the primary during business hours.`,
      ),
    ).toMatchObject({ ok: true });
  });

  it('never vetoes dropped identifiers: it lists them to repair', () => {
    expect(judge('Staging DB on port 5433.\nNever restart the primary during business hours.')).toEqual({
      ok: true,
      factsKept: 1,
      factsTotal: 3,
      missingFacts: ['db-staging-04', 'deploy/staging.yaml'],
    });
    expect(judge(good, { previousSummary: 'Budget approved: 42000 USD for Q3-2026.' })).toMatchObject({
      ok: true,
      factsTotal: 5,
      factsKept: 3,
      missingFacts: ['42000', 'Q3-2026'],
    });
  });

  it('rejects an answer cut at its length limit, and a pinned identifier lost', () => {
    expect(judge(good, { finishReason: 'length' })).toMatchObject({ ok: false, reason: 'truncated' });
    const pinnedId: ContextMessage[] = [{ role: 'user', content: '[pin] The release tag is r-2026.11' }];
    expect(judge('The release tag is r-2026.12', { covered: pinnedId })).toMatchObject({
      ok: false,
      reason: 'lost_pinned',
    });
  });
});

describe('repairing a summary', () => {
  const words = {
    encoding: 'words',
    count: (text: string) => text.split(/\s+/).filter(Boolean).length,
    truncate: (text: string) => ({ text, tokens: 0 }),
  };
  const covered: ContextMessage[] = [
    { role: 'user', content: 'Hello. The staging database is db-staging-04. It listens on port 5433.' },
    { role: 'assistant', content: 'The config lives in deploy/staging.yaml, as agreed.' },
  ];

  it('finds the sentence stating a fact', () => {
    expect(sentenceStating('db-staging-04', covered, undefined)).toBe(
      'The staging database is db-staging-04.',
    );
    expect(sentenceStating('Q3-2026', covered, 'Budget: 42000 USD.\nDeadline Q3-2026.')).toBe(
      'Deadline Q3-2026.',
    );
    expect(sentenceStating('nowhere-1', covered, undefined)).toBeUndefined();
  });

  it('never cuts a long sentence stating a fact between the two halves of an emoji', () => {
    for (let shift = 0; shift < 4; shift++) {
      const sentence = `${'🎉'.repeat(90)}${'x'.repeat(shift)} host db-prod-07 ${'🚀'.repeat(90)}`;
      const found = sentenceStating('db-prod-07', [{ role: 'user', content: sentence }], undefined);
      expect(found).toContain('db-prod-07');
      expect(found?.isWellFormed()).toBe(true);
    }
  });

  it('finds the same sentence as splitting the texts into sentences would, on generated texts', () => {
    // The definition, written the slow way: split at line breaks and at white space after . ! ?
    const oracle = (fact: string, texts: string[]): string | undefined => {
      for (const text of texts)
        for (const sentence of text.split(/\n+|(?<=[.!?])\s+/)) {
          if (!sentence.includes(fact) && !sentence.includes(fact.replace(/,/g, ''))) continue;
          const trimmed = sentence.trim();
          if (trimmed.length <= 300) return trimmed;
          const at = trimmed.indexOf(fact);
          return trimmed.slice(Math.max(0, at - 140), at + fact.length + 140).trim();
        }
      return undefined;
    };
    const word = fc.constantFrom('the', 'db-04', 'v2.0', '1,250', '1250', 'K3-9', 'port', 'é', 'a?b');
    const gap = fc.constantFrom(' ', '  ', '. ', '! ', '? ', '.\n', '\n', '\n\n', ', ', '.', ' \t', '?\r\n');
    const text = fc
      .array(fc.tuple(word, gap), { maxLength: 60 })
      .map((parts) => parts.map(([w, g]) => w + g).join(''));
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), word, (texts, fact) => {
        const [previous, ...rest] = texts;
        const covered = rest.map((content) => ({ role: 'user', content }));
        expect(sentenceStating(fact, covered, previous)).toBe(oracle(fact, texts));
      }),
      { numRuns: 2_000 },
    );
  });

  it('looks up a bounded number of statements, however many facts are missing', () => {
    const missing = Array.from({ length: 2_000 }, (_unused, index) => `code-${index}x`);
    let lookups = 0;
    const repaired = repairSummary({
      text: 'Summary.',
      repairAnswer: undefined,
      missingFacts: missing,
      statementFor: (fact) => {
        lookups++;
        return `It was ${fact}.`;
      },
      tokenizer: words,
      capTokens: 100_000,
    });
    expect(lookups).toBeGreaterThan(0);
    expect(lookups).toBeLessThanOrEqual(100);
    expect(repaired.text.split('\n').length).toBe(lookups + 1);
    expect(repaired.stillMissing.length).toBe(2_000 - lookups);
  });

  it('adds the repair lines that state a missing fact, then the sentences still missing, within the cap', () => {
    const missing = ['db-staging-04', 'deploy/staging.yaml'];
    const repaired = repairSummary({
      text: 'Staging DB on port 5433.',
      repairAnswer: '- Staging database: db-staging-04\n- Unrelated chatter line',
      missingFacts: missing,
      statementFor: (fact) => sentenceStating(fact, covered, undefined),
      tokenizer: words,
      capTokens: 100,
    });
    expect(repaired).toEqual({
      text: 'Staging DB on port 5433.\nStaging database: db-staging-04\nThe config lives in deploy/staging.yaml, as agreed.',
      stillMissing: [],
    });
    const capped = repairSummary({
      text: 'Staging DB on port 5433.',
      repairAnswer: undefined,
      missingFacts: missing,
      statementFor: (fact) => sentenceStating(fact, covered, undefined),
      tokenizer: words,
      capTokens: 6,
    });
    expect(capped).toEqual({
      text: 'Staging DB on port 5433.\nThe staging database is db-staging-04.',
      stillMissing: ['deploy/staging.yaml'],
    });
  });
});

describe('planTurnSummary', () => {
  // A turn: its user message (10 tokens), then groups of an assistant call (10) and a result (90).
  const turn = (groups: number) => ({
    activeTokens: [10, ...Array.from({ length: groups }, () => [10, 90]).flat()],
    roles: ['user', ...Array.from({ length: groups }, () => ['assistant', 'tool']).flat()],
  });

  it('summarizes the oldest groups down to summarize_to once the turn passes summarize_at', () => {
    // 8 groups: 810 tokens of a 1,000 budget, over 0.75; down to 400: the first 5 groups (810 − 500 = 310).
    expect(
      planTurnSummary({
        ...turn(8),
        coveredUntil: 0,
        historyBudget: 1_000,
        summarizeAt: 0.75,
        summarizeTo: 0.4,
      }),
    ).toEqual({ kind: 'summarize_turn', turnStart: 0, from: 1, to: 11, steps: 5, turnTokens: 810 });
  });

  it('counts what the turn sends: the groups its summary stands for count as the summary, not again', () => {
    // The first 5 groups are summarized in 60 tokens: the turn sends 10 + 60 + 3 × 100 = 370, under 750.
    expect(
      planTurnSummary({
        ...turn(8),
        coveredUntil: 11,
        summaryTokens: 60,
        historyBudget: 1_000,
        summarizeAt: 0.75,
        summarizeTo: 0.4,
      }),
    ).toEqual({ kind: 'none' });
    // Four more groups later it sends 770: the job covers the next groups, down to 400.
    expect(
      planTurnSummary({
        ...turn(12),
        coveredUntil: 11,
        summaryTokens: 60,
        historyBudget: 1_000,
        summarizeAt: 0.75,
        summarizeTo: 0.4,
      }),
    ).toMatchObject({ kind: 'summarize_turn', from: 11 });
  });

  it('brings what the turn sends down to summarize_to with its summary counted, which stays', () => {
    // A 250-token summary of the first 5 groups and 7 groups after it: 10 + 250 + 700 = 960. Down to
    // 400 takes 6 of the 7 groups (960 − 600 = 360), not the 4 that would be enough without the summary.
    expect(
      planTurnSummary({
        ...turn(12),
        coveredUntil: 11,
        summaryTokens: 250,
        historyBudget: 1_000,
        summarizeAt: 0.75,
        summarizeTo: 0.4,
      }),
    ).toEqual({ kind: 'summarize_turn', turnStart: 0, from: 11, to: 23, steps: 6, turnTokens: 1_210 });
  });
});
