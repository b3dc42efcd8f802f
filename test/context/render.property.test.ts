// Invariants of the renderer over generated conversations (fast-check): single and parallel tool
// calls, images, empty and null contents, pinned turns, huge tool results, agent loops in progress.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderContext, type RenderInput } from '../../src/context/render.js';
import {
  countMessageTokens,
  countPromptTokens,
  countToolTokens,
  replyPrimingTokens,
} from '../../src/context/token-accounting.js';
import { findOrphans } from '../../src/context/turns.js';
import type { ContextMessage } from '../../src/context/types.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { statedPolicy } from '../helpers/words.js';

const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');

const words = [
  'alpha',
  'beta',
  'gamma',
  'delta',
  'naïve',
  '数据',
  'émoji 😀',
  'function()',
  '{"k": 1}',
  'path/to/file.ts',
  '42',
  'lorem ipsum dolor',
];
const textArbitrary = (maxWords: number) =>
  fc.array(fc.constantFrom(...words), { minLength: 0, maxLength: maxWords }).map((parts) => parts.join(' '));
const pngDataUrl = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAgAAAAEACAIAAAB7qGMAAAAAAA==';

const userArbitrary = fc.oneof(
  { weight: 6, arbitrary: textArbitrary(40).map((text) => ({ role: 'user', content: text })) },
  { weight: 1, arbitrary: textArbitrary(10).map((text) => ({ role: 'user', content: `[pin] ${text}` })) },
  { weight: 1, arbitrary: fc.constant({ role: 'user', content: '' }) },
  {
    weight: 1,
    arbitrary: textArbitrary(10).map((text) => ({
      role: 'user',
      content: [
        { type: 'text', text },
        { type: 'image_url', image_url: { url: pngDataUrl, detail: 'high' } },
      ],
    })),
  },
);

const toolResultArbitrary = fc.oneof(
  { weight: 5, arbitrary: textArbitrary(60) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 2_000, max: 12_000 })
      .map((size) => 'log line with some words and 123 numbers\n'.repeat(Math.ceil(size / 9))),
  },
);

let callCounter = 0;
const iterationArbitrary = fc
  .tuple(fc.integer({ min: 1, max: 3 }), fc.array(toolResultArbitrary, { minLength: 3, maxLength: 3 }))
  .map(([calls, results]) => {
    const ids = Array.from({ length: calls }, () => `call_${++callCounter}`);
    const assistant: ContextMessage = {
      role: 'assistant',
      content: null,
      tool_calls: ids.map((id) => ({
        id,
        type: 'function',
        function: { name: 'lookup', arguments: '{"q":"x"}' },
      })),
    };
    return [
      assistant,
      ...ids.map(
        (id, index) => ({ role: 'tool', tool_call_id: id, content: results[index] ?? '' }) as ContextMessage,
      ),
    ];
  });

const turnArbitrary = fc
  .tuple(
    userArbitrary,
    fc.array(iterationArbitrary, { maxLength: 3 }),
    fc.option(textArbitrary(40), { nil: undefined }),
  )
  .map(([user, iterations, answer]) => [
    user as ContextMessage,
    ...iterations.flat(),
    ...(answer === undefined ? [] : [{ role: 'assistant', content: answer } as ContextMessage]),
  ]);

const conversationArbitrary = fc
  .tuple(
    fc.option(textArbitrary(30), { nil: undefined }),
    fc.array(turnArbitrary, { minLength: 1, maxLength: 25 }),
    fc.boolean(),
  )
  .map(([system, turns, loopInProgress]) => {
    const messages: ContextMessage[] = system === undefined ? [] : [{ role: 'system', content: system }];
    turns.forEach((turn, index) => {
      // The last turn may be an agent loop in progress: it ends with tool results, no answer yet.
      const cut =
        index === turns.length - 1 && loopInProgress
          ? turn.filter(
              (message, position) =>
                !(position === turn.length - 1 && message.role === 'assistant' && !message.tool_calls),
            )
          : turn;
      messages.push(...cut);
    });
    return messages.map((message, index) => ({ ...message, x_index: index }));
  });

const policy = statedPolicy({ max_tool_result_tokens: 1_500 });

const tools = [
  {
    type: 'function',
    function: {
      name: 'lookup',
      description: 'Look something up.',
      parameters: { type: 'object', properties: { q: { type: 'string', description: 'query' } } },
    },
  },
];

const inputArbitrary = fc.record({
  messages: conversationArbitrary,
  window: fc.integer({ min: 1_500, max: 30_000 }),
  outputReserve: fc.integer({ min: 0, max: 1_000 }),
  withTools: fc.boolean(),
  keepFirstTurns: fc.integer({ min: 0, max: 2 }),
  maxHistoryTurns: fc.constantFrom(0, 0, 3),
  // A session's summary: its text and where it goes (an index into the messages, clamped).
  summary: fc.option(fc.tuple(textArbitrary(80), fc.integer({ min: 0, max: 40 })), { nil: undefined }),
});

function toRenderInput(
  generated: fc.Arbitrary<unknown> extends never
    ? never
    : {
        messages: ContextMessage[];
        window: number;
        outputReserve: number;
        withTools: boolean;
        keepFirstTurns: number;
        maxHistoryTurns: number;
        summary: [string, number] | undefined;
      },
): RenderInput {
  const userIndices = generated.messages.flatMap((message, index) =>
    message.role === 'user' ? [index] : [],
  );
  const summary =
    generated.summary === undefined
      ? undefined
      : {
          message: { role: 'system', content: `[summary] ${generated.summary[0]}` },
          // Summaries cover whole earlier turns: the place is a turn's start, never inside the current one.
          position: userIndices[generated.summary[1] % userIndices.length] as number,
        };
  return {
    ...(summary === undefined ? {} : { summary }),
    messages: generated.messages,
    tools: generated.withTools ? tools : undefined,
    tokenizer,
    window: generated.window,
    outputReserve: generated.outputReserve,
    safetyMarginTokens: Math.floor(generated.window * 0.05),
    policy: {
      ...policy,
      keep_first_turns: generated.keepFirstTurns,
      max_history_turns: generated.maxHistoryTurns,
    },
  };
}

function budgetOf(input: RenderInput): number {
  return input.window - input.outputReserve - input.safetyMarginTokens;
}

describe('renderContext invariants', () => {
  it('holds every invariant on 2,000 generated conversations', () => {
    fc.assert(
      fc.property(inputArbitrary, (generated) => {
        const input = toRenderInput(generated);
        const before = structuredClone(input.messages);
        const outcome = renderContext(input);
        // Input not mutated.
        expect(input.messages).toEqual(before);
        const lastUser = [...input.messages].reverse().find((message) => message.role === 'user');

        if (!outcome.ok) {
          // Refused only when the current user message (with system and tools) cannot fit by itself.
          const system =
            input.messages[0]?.role === 'system' ? countMessageTokens(input.messages[0], tokenizer) : 0;
          const fixed = system + countToolTokens(input.tools, tokenizer) + replyPrimingTokens;
          expect(fixed + countMessageTokens(lastUser as ContextMessage, tokenizer)).toBeGreaterThan(
            budgetOf(input) - 3 * 16,
          );
          return;
        }
        const rendered = outcome.messages;
        // Fits the budget, and the report says what was sent.
        const sent = countPromptTokens(rendered, input.tools, tokenizer);
        expect(sent).toBe(outcome.report.inputTokens);
        expect(sent).toBeLessThanOrEqual(budgetOf(input));
        // System first.
        if (input.messages[0]?.role === 'system') expect(rendered[0]).toEqual(input.messages[0]);
        // The current user message kept.
        expect(rendered.some((message) => message.x_index === lastUser?.x_index)).toBe(true);
        // Order kept, nothing reordered, no role rewritten.
        const kept = rendered.filter((message) => message.x_index !== undefined);
        const indices = kept.map((message) => message.x_index as number);
        expect(indices).toEqual([...indices].sort((a, b) => a - b));
        for (const message of kept)
          expect(message.role).toBe(input.messages[message.x_index as number]?.role);
        // No orphaned tool message.
        expect(findOrphans(rendered)).toEqual([]);
        // The summary, when given, is sent exactly once, after the kept messages that came before its
        // position and before those that came after it.
        if (input.summary !== undefined) {
          const at = rendered.indexOf(input.summary.message);
          expect(rendered.filter((message) => message === input.summary?.message)).toHaveLength(1);
          for (const [index, message] of rendered.entries()) {
            if (message.x_index === undefined || message.role === 'system') continue;
            expect(index < at).toBe((message.x_index as number) < input.summary.position);
          }
        }
        // Rendering the result again changes nothing (the summary is in it now).
        const { summary: _summary, ...withoutSummary } = input;
        const again = renderContext({ ...withoutSummary, messages: rendered });
        expect(again.ok && again.messages).toEqual(rendered);
        // A conversation that already fits goes out unchanged.
        // (A turn cap is a reduction of its own: only conversations without one count here.)
        const fitsAlready =
          input.summary === undefined &&
          input.policy.max_history_turns === 0 &&
          countPromptTokens(input.messages, input.tools, tokenizer) <= budgetOf(input) &&
          input.messages.every(
            (message) =>
              message.role !== 'tool' ||
              tokenizer.count(String(message.content)) <= policy.max_tool_result_tokens,
          );
        if (fitsAlready) {
          expect(outcome.report.modified).toBe(false);
          expect(rendered).toEqual(input.messages);
        }
      }),
      { numRuns: 2_000 },
    );
  });
});
