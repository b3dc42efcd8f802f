// How much of the window the renderer uses, and what it keeps, over 500 generated long conversations
// on an 8,192-token window (real o200k_base counts): turns of chat and of tool calls with results of
// every size, pinned turns, agent loops in progress. Figures the context engine must reach (issue
// "Context fidelity"): fill (prompt + reserve over window) median ≥ 0.85 and p10 ≥ 0.6 for requests
// whose current turn fits; the first and pinned user messages kept whenever they fit alone; the
// notices' counts equal to what was left out.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderContext } from '../../src/context/render.js';
import { countMessageTokens } from '../../src/context/token-accounting.js';
import type { ContextMessage, ContextPolicy } from '../../src/context/types.js';
import { builtInPolicy } from '../../src/config/policy-defaults.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { prose } from '../helpers/text.js';

const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');
const window = 8_192;
const safetyMargin = Math.ceil(window * 0.05);
const policy: ContextPolicy = builtInPolicy;

let ids = 0;
const turnArbitrary = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .tuple(fc.integer({ min: 5, max: 400 }), fc.integer({ min: 5, max: 500 }), fc.boolean())
      .map(([asked, answered, pinned]): ContextMessage[] => [
        { role: 'user', content: `${pinned ? '[pin] ' : ''}${prose(asked, asked)}` },
        { role: 'assistant', content: prose(answered, answered) },
      ]),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.integer({ min: 5, max: 200 }),
        fc.array(fc.oneof(fc.integer({ min: 10, max: 300 }), fc.integer({ min: 800, max: 4_000 })), {
          minLength: 1,
          maxLength: 4,
        }),
      )
      .map(([asked, results]): ContextMessage[] => [
        { role: 'user', content: prose(asked, asked + 1) },
        ...results.flatMap((size): ContextMessage[] => {
          const id = `call_${++ids}`;
          return [
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id, type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }],
            },
            { role: 'tool', tool_call_id: id, content: prose(size, size) },
          ];
        }),
        { role: 'assistant', content: prose(60, asked) },
      ]),
  },
);

// Half the requests set no max_tokens (the model's default reserve, 4,096, applies), half ask for 256–2,048.
const conversations = fc.sample(
  fc
    .tuple(
      fc.array(turnArbitrary, { minLength: 8, maxLength: 60 }),
      fc.integer({ min: 5, max: 120 }),
      fc.oneof(fc.constant(4_096), fc.integer({ min: 256, max: 2_048 })),
    )
    .map(([turns, question, outputReserve]) => ({
      outputReserve,
      messages: [
        { role: 'system', content: 'You are a careful assistant.' },
        ...turns.flat(),
        { role: 'user', content: prose(question, 3) },
      ] as ContextMessage[],
    })),
  { numRuns: 500, seed: 14 },
);

function percentile(sorted: number[], share: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] as number;
}

describe('context fidelity over 500 generated conversations', () => {
  const outcomes = conversations.map(({ messages, outputReserve }) => ({
    messages,
    outputReserve,
    outcome: renderContext({
      messages,
      tokenizer,
      window,
      outputReserve,
      safetyMarginTokens: safetyMargin,
      policy,
    }),
  }));

  it('fills the window: median ≥ 0.85 and p10 ≥ 0.6 of prompt plus reserve', () => {
    const fills = outcomes
      .flatMap(({ outcome, outputReserve }) =>
        outcome.ok ? [(outcome.report.inputTokens + outputReserve) / window] : [],
      )
      .sort((a, b) => a - b);
    console.log(
      `fill over ${fills.length} requests: p10 ${percentile(fills, 0.1).toFixed(3)}, median ${percentile(fills, 0.5).toFixed(3)}, max ${(fills.at(-1) as number).toFixed(3)}`,
    );
    expect(fills.length).toBeGreaterThan(450);
    expect(percentile(fills, 0.5)).toBeGreaterThanOrEqual(0.85);
    expect(percentile(fills, 0.1)).toBeGreaterThanOrEqual(0.6);
    expect(fills.at(-1) as number).toBeLessThanOrEqual(1 - safetyMargin / window + 1e-9);
  });

  it('keeps the first user message and pinned ones whenever they fit alone', () => {
    let checked = 0;
    for (const { messages, outcome } of outcomes) {
      if (!outcome.ok) continue;
      const users = messages.filter((message) => message.role === 'user');
      const first = users[0] as ContextMessage;
      const pinned = users.slice(0, -1).filter((message) => String(message.content).startsWith('[pin]'));
      for (const message of [first, ...pinned]) {
        if (countMessageTokens(message, tokenizer) > outcome.report.historyBudget / 4) continue;
        checked++;
        expect(outcome.messages).toContain(message);
      }
    }
    expect(checked).toBeGreaterThan(500);
  });

  it('says in its notices exactly how many messages it left out', () => {
    for (const { messages, outcome } of outcomes) {
      if (!outcome.ok) continue;
      let noticed = 0;
      for (const message of outcome.messages) {
        const text = String(message.content);
        const omitted = /^\[ctxgate\] (\d+) earlier messages/.exec(text);
        const steps = /^\[ctxgate\] \d+ earlier steps of this task \((\d+) messages\)/.exec(text);
        noticed += Number(omitted?.[1] ?? 0) + Number(steps?.[1] ?? 0);
      }
      const kept = new Set(outcome.messages);
      // Masked and truncated results are other objects: match them by position through their call ids.
      const keptIds = new Set(outcome.messages.map((message) => message.tool_call_id).filter(Boolean));
      const left = messages.filter(
        (message) => !kept.has(message) && !(message.role === 'tool' && keptIds.has(message.tool_call_id)),
      ).length;
      expect(noticed).toBe(outcome.report.droppedMessages);
      expect(left).toBe(outcome.report.droppedMessages);
    }
  });
});
