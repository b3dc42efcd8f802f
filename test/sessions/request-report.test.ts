// What happened to each message of a session in one request (docs/inspector.md), as positions of its
// history: the archive summarized or dropped, the rest sent, truncated, masked, dropped, or stood for by
// the turn's summary; runs of equal fates.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SessionView } from '../../src/context/session-view.js';
import type { ContextMessage, RenderReport } from '../../src/context/types.js';
import { maskedResultText } from '../../src/context/current-turn.js';
import { buildRequestReport, messageFates } from '../../src/sessions/request-report.js';

const user = (content: string): ContextMessage => ({ role: 'user', content });
const assistant = (content: string): ContextMessage => ({ role: 'assistant', content });
const call = (id: string): ContextMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'f', arguments: '{}' } }],
});
const result = (id: string, content: string): ContextMessage => ({ role: 'tool', tool_call_id: id, content });

describe('message fates', () => {
  const system: ContextMessage = { role: 'system', content: 'S' };
  const turn1 = [user('first'), assistant('one')];
  const turn2 = [user('second'), assistant('two')];
  const agent = [
    user('do it'),
    call('a'),
    result('a', 'A'.repeat(50)),
    call('b'),
    result('b', 'B'.repeat(50)),
  ];
  const conversation = [system, ...turn1, ...turn2, ...agent];

  it.each([
    [
      'everything sent as it was',
      conversation,
      [],
      ['sent', 'sent', 'sent', 'sent', 'sent', 'sent', 'sent', 'sent', 'sent'],
    ],
    [
      'a dropped turn, a masked and a truncated result',
      [
        system,
        // The first user message carries a notice now (a rewritten object): still sent.
        user('[ctxgate] 2 earlier messages were omitted.\n\nfirst'),
        turn1[1] as ContextMessage,
        agent[0] as ContextMessage,
        agent[1] as ContextMessage,
        result('a', maskedResultText(40)),
        agent[3] as ContextMessage,
        result('b', 'BBB [… truncated by ctxgate: kept ~10 of 50 tokens, ~40 removed …]'),
      ],
      [],
      ['sent', 'sent', 'dropped', 'dropped', 'sent', 'sent', 'masked', 'sent', 'truncated'],
    ],
    [
      'the turn’s older steps stood for by its summary',
      [
        system,
        ...turn1,
        ...turn2,
        agent[0] as ContextMessage,
        agent[3] as ContextMessage,
        agent[4] as ContextMessage,
      ],
      // An index into the conversation: the summary stands for its messages before index 8.
      [8],
      ['sent', 'sent', 'sent', 'sent', 'sent', 'summarized', 'summarized', 'sent', 'sent'],
    ],
    [
      'a turn left out before the summarized one is dropped, not summarized',
      [system, ...turn1, agent[0] as ContextMessage, agent[3] as ContextMessage, agent[4] as ContextMessage],
      [8],
      ['sent', 'sent', 'dropped', 'dropped', 'sent', 'summarized', 'summarized', 'sent', 'sent'],
    ],
  ] as const)('%s', (_name, rendered, coversUntil, fates) => {
    expect(messageFates(conversation, rendered, coversUntil)).toEqual(fates);
  });
});

describe('message fates when a provider gives the same call id again in a later turn', () => {
  // Kimi K3's ids are turn-scoped by design (`search:0` in turn after turn: fw-ai/fireconnect#16), and
  // some endpoints give every call an empty id.
  const conversation = [
    user('first'),
    call('search:0'),
    result('search:0', 'A'.repeat(50)),
    assistant('one'),
    user('second'),
    call('search:0'),
    result('search:0', 'B'.repeat(50)),
  ];

  it('marks the masked result of the later turn, and the older turn dropped', () => {
    const rendered = [
      conversation[4] as ContextMessage,
      // A rewritten call message (as the engine copies one it changes) and the masked result.
      { ...(conversation[5] as ContextMessage) },
      result('search:0', maskedResultText(40)),
    ];
    expect(messageFates(conversation, rendered, [])).toEqual([
      'dropped',
      'dropped',
      'dropped',
      'dropped',
      'sent',
      'sent',
      'masked',
    ]);
  });

  it('marks the masked result of the older turn, the later one sent as it was', () => {
    const rendered = [
      conversation[0] as ContextMessage,
      conversation[1] as ContextMessage,
      result('search:0', maskedResultText(40)),
      ...conversation.slice(3),
    ];
    expect(messageFates(conversation, rendered, [])).toEqual([
      'sent',
      'sent',
      'masked',
      'sent',
      'sent',
      'sent',
      'sent',
    ]);
  });
});

describe('message fates with a past turn’s in-turn summary', () => {
  it('counts the messages each summary stands for in its own turn', () => {
    const system: ContextMessage = { role: 'system', content: 'S' };
    const first = [user('do it'), call('a'), result('a', 'A'), call('b'), result('b', 'B')];
    const second = [user('next'), call('c'), result('c', 'C'), call('d'), result('d', 'D')];
    const conversation = [system, ...first, ...second];
    // Each turn's first step is stood for by its summary (ends 4 and 9); the summaries are not messages
    // of the conversation.
    const rendered = [
      system,
      first[0],
      assistant('[ctxgate] Summary of this task’s earlier steps'),
      first[3],
      first[4],
      second[0],
      assistant('[ctxgate] Summary of this task’s earlier steps'),
      second[3],
      second[4],
    ] as ContextMessage[];
    expect(messageFates(conversation, rendered, [4, 9])).toEqual([
      'sent',
      'summarized',
      'summarized',
      'sent',
      'sent',
      'sent',
      'summarized',
      'summarized',
      'sent',
      'sent',
    ]);
  });
});

describe('a request report', () => {
  it('numbers messages as the history does: head, archive (summarized or dropped), then the rest', () => {
    const conversation = [
      user('head'),
      assistant('head reply'),
      user('now'),
      assistant('reply'),
      user('next'),
    ];
    const session = {
      conversation,
      headMessages: 2,
      archivedMessages: 6,
      summaryRange: { from: 2, to: 6 },
      turnSummary: undefined,
    } as unknown as SessionView;
    const report = {
      window: 8_192,
      inputTokens: 1_000,
      regions: {
        system: 0,
        summary: 100,
        notice: 10,
        tools: 0,
        history: 500,
        currentTurn: 390,
        outputReserve: 0,
        safetyMargin: 0,
      },
      droppedMessages: 2,
      summarizedMessages: 4,
      truncatedToolResults: 0,
      maskedToolResults: 0,
    } as unknown as RenderReport;
    const built = buildRequestReport({
      at: 1,
      model: 'm',
      fallback: undefined,
      status: 200,
      session,
      rendered: [conversation[0], conversation[1], conversation[4]] as ContextMessage[],
      report,
      outputReserve: 512,
      safetyMargin: 410,
      ratio: 1.5,
      providerPromptTokens: 1_490,
      retries: 1,
      durationMs: 12.4,
    });
    expect(built.fates).toEqual([
      [0, 2, 'sent'],
      [2, 4, 'summarized'],
      // The archive's unsummarized part and the turn left out, one run.
      [6, 4, 'dropped'],
      [10, 1, 'sent'],
    ]);
    // In the provider's units (the estimate times the learned ratio).
    expect(built.inputTokens).toBe(1_500);
    expect(built.regions).toEqual({ system: 0, summary: 165, tools: 0, history: 750, current: 585 });
    expect(built).toMatchObject({
      retries: 1,
      durationMs: 12,
      providerPromptTokens: 1_490,
      dropped: 2,
      summarized: 4,
    });
  });

  it('gives every position of the history exactly one fate, in runs, however long the archive', () => {
    // The oracle: each position's fate on its own, then runs of equal fates.
    const expanded = (
      head: number,
      archived: number,
      range: { from: number; to: number } | undefined,
      local: readonly string[],
    ): Array<[number, number, string]> => {
      const positions: string[] = [];
      for (let index = 0; index < local.length; index++) {
        if (index === head)
          for (let position = head; position < head + archived; position++)
            positions.push(
              range !== undefined && position >= range.from && position < range.to ? 'summarized' : 'dropped',
            );
        positions.push(local[index] as string);
      }
      if (local.length <= head)
        for (let position = head; position < head + archived; position++)
          positions.push(
            range !== undefined && position >= range.from && position < range.to ? 'summarized' : 'dropped',
          );
      const runs: Array<[number, number, string]> = [];
      positions.forEach((fate, position) => {
        const last = runs.at(-1);
        if (last !== undefined && last[2] === fate) last[1]++;
        else runs.push([position, 1, fate]);
      });
      return runs;
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 0, max: 300 }),
        fc.option(fc.tuple(fc.integer({ min: 0, max: 320 }), fc.integer({ min: 0, max: 320 }))),
        fc.array(fc.constantFrom('sent', 'dropped', 'summarized'), { minLength: 1, maxLength: 12 }),
        (headWanted, archived, rangeEnds, kinds) => {
          // A conversation whose messages the render sent or left out as `kinds` says.
          const conversation = kinds.map((_kind, index) => user(`message ${index}`));
          const rendered = conversation.filter((_message, index) => kinds[index] === 'sent');
          const coversUntil = kinds.lastIndexOf('summarized') + 1 || undefined;
          const local = messageFates(conversation, rendered, coversUntil === undefined ? [] : [coversUntil]);
          const head = Math.min(headWanted, conversation.length);
          const range =
            rangeEnds === null ? undefined : { from: Math.min(...rangeEnds), to: Math.max(...rangeEnds) };
          const built = buildRequestReport({
            at: 1,
            model: 'm',
            fallback: undefined,
            status: 200,
            session: {
              conversation,
              headMessages: head,
              archivedMessages: archived,
              summaryRange: range,
              turnSummary: coversUntil === undefined ? undefined : { coversUntil },
            } as unknown as SessionView,
            rendered,
            report: {
              window: 8_192,
              inputTokens: 0,
              regions: { system: 0, summary: 0, notice: 0, tools: 0, history: 0, currentTurn: 0 },
            } as unknown as RenderReport,
            outputReserve: 0,
            safetyMargin: 0,
            ratio: 1,
            providerPromptTokens: undefined,
            retries: 0,
            durationMs: 0,
          });
          expect(built.fates).toEqual(expanded(head, archived, range, local));
        },
      ),
      { numRuns: 300 },
    );
  });
});
