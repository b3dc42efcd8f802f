// Generated session agent loops through the real session store and the real renderer (fast-check):
// turns of parallel tool calls with small and huge results, replays of a tool-call id, spills of the
// active list, history summaries and in-turn summaries interleaved. Every request the renderer makes is
// valid (no orphaned tool message or call), keeps the current turn's user message, and fits its budget;
// the store loses and duplicates nothing. 2,000 loops on the in-process store, 150 on redis-server.
import { inSession } from '../helpers/in-session.js';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { renderContext } from '../../src/context/render.js';
import { planSummary, planTurnSummary } from '../../src/context/summary.js';
import { findOrphans } from '../../src/context/turns.js';
import type { ContextMessage } from '../../src/context/types.js';
import { createHoldQueue } from '../../src/sessions/hold-queue.js';
import { beginSessionTurn } from '../../src/sessions/session-turn.js';
import { createMemorySessionStore } from '../../src/store/memory-session-store.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { createRedisSessionStore } from '../../src/store/redis-session-store.js';
import type { SessionLimits, SessionStore, StoredMessage } from '../../src/store/session-store.js';
import { words, statedPolicy, wordsText } from '../helpers/words.js';

const policy = statedPolicy({ max_tool_result_tokens: 800, keep_last: 3, clear_at_least: 200 });

type Action =
  | { kind: 'user'; size: number; answer: boolean }
  | { kind: 'step'; calls: number; sizes: number[]; replay: boolean }
  | { kind: 'summary' };

const actionArbitrary: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('user' as const),
      size: fc.integer({ min: 1, max: 60 }),
      answer: fc.boolean(),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('step' as const),
      calls: fc.integer({ min: 1, max: 3 }),
      sizes: fc.array(fc.oneof(fc.integer({ min: 0, max: 80 }), fc.integer({ min: 300, max: 2_000 })), {
        minLength: 3,
        maxLength: 3,
      }),
      replay: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'summary' as const }) },
);

const caseArbitrary = fc.record({
  window: fc.integer({ min: 1_200, max: 6_000 }),
  minActive: fc.integer({ min: 2, max: 30 }),
  actions: fc.array(actionArbitrary, { minLength: 3, maxLength: 40 }),
});

const text = wordsText;

async function runLoop(store: SessionStore, generated: { window: number; actions: Action[] }): Promise<void> {
  const key = { tenantId: 't', sessionId: `loop-${randomUUID()}` };
  const outputReserve = 100;
  const committed: StoredMessage[] = [];
  let pendingCalls: string[] = [];
  let callCounter = 0;
  let usedIds: string[] = [];
  let started = false;
  for (const action of generated.actions) {
    if (action.kind === 'summary') {
      const snapshot = await store.load(key);
      if (snapshot.version === 0) continue;
      const lock = await store.acquireSummaryLock(key, 10_000);
      if (lock === undefined) continue;
      const tokens = snapshot.messages.map((entry) => entry.tokens);
      const roles = snapshot.messages.map((entry) => String(entry.message.role));
      const budget = generated.window - outputReserve;
      const turnPlan = planTurnSummary({
        activeTokens: tokens,
        roles,
        coveredUntil:
          snapshot.turnSummary === undefined ? 0 : snapshot.turnSummary.toMessage - snapshot.archivedCount,
        historyBudget: budget,
        summarizeAt: 0.5,
        summarizeTo: 0.3,
      });
      const position = (index: number): number =>
        index < snapshot.headMessages ? index : index + snapshot.archivedCount;
      if (turnPlan.kind === 'summarize_turn') {
        const sameTurn = snapshot.turnSummary?.turnStart === position(turnPlan.turnStart);
        await store.storeTurnSummary(key, {
          lockToken: lock,
          expectedToMessage: sameTurn ? (snapshot.turnSummary?.toMessage ?? 0) : 0,
          summary: {
            text: 'steps summarized',
            tokens: 9,
            turnStart: position(turnPlan.turnStart),
            toMessage: position(turnPlan.to),
            steps: turnPlan.steps,
            coveredTokens: 1,
            updatedAtMs: 0,
          },
        });
      } else {
        const plan = planSummary({
          activeTokens: tokens,
          turnStarts: roles.map((role) => role === 'user'),
          head: snapshot.headMessages,
          archived: snapshot.archivedCount,
          summaryTo: snapshot.summary?.toMessage ?? snapshot.headMessages,
          historyBudget: budget,
          summarizeAt: 0.5,
          summarizeTo: 0.3,
        });
        if (plan.kind === 'summarize')
          await store.storeSummary(key, {
            lockToken: lock,
            expectedToMessage: snapshot.summary?.toMessage ?? 0,
            summary: {
              text: 'earlier turns summarized',
              tokens: 10,
              fromMessage: snapshot.summary?.fromMessage ?? snapshot.headMessages,
              toMessage: plan.toMessage,
              coveredTokens: 1,
              updatedAtMs: 0,
            },
          });
      }
      await store.releaseSummaryLock(key, lock);
      continue;
    }
    // The client's new messages: a user message, or the results of the calls still pending.
    // A well-behaved client answers every pending call before it says anything else.
    const results: ContextMessage[] = pendingCalls.map((id, index) => ({
      role: 'tool',
      tool_call_id: id,
      content: text(action.kind === 'step' ? (action.sizes[index] ?? 5) : 5, 'result'),
    }));
    pendingCalls = [];
    let incoming: ContextMessage[];
    if (action.kind === 'user' || !started) {
      incoming = [
        ...results,
        { role: 'user', content: `task ${text(action.kind === 'user' ? action.size : 5, 'do')}` },
      ];
    } else if (results.length > 0) {
      incoming = results;
    } else {
      incoming = [{ role: 'user', content: 'continue' }];
    }
    started = true;
    const turn = await inSession(
      beginSessionTurn({
        holdQueue: createHoldQueue(),
        store,
        key,
        historyMode: 'delta',
        incoming,
        tokenizer: words,
        holdMs: 10_000,
        maxTurnMessages: 100_000,
      }),
    );
    const outcome = renderContext({
      messages: turn.conversation,
      messageTokens: turn.conversationTokens,
      tokenizer: words,
      window: generated.window,
      outputReserve,
      safetyMarginTokens: 0,
      policy,
      historyStartHint: turn.historyStartHint,
      omittedBefore: turn.omittedBefore,
      ...(turn.summary === undefined ? {} : { summary: turn.summary }),
      ...(turn.turnSummary === undefined ? {} : { turnSummary: turn.turnSummary }),
    });
    if (!outcome.ok) throw new Error(`refused: ${JSON.stringify(outcome)}`);
    // What the provider would receive: valid, the current user message kept, within the window.
    expect(findOrphans(outcome.messages)).toEqual([]);
    expect(outcome.report.orphansRemoved).toBe(0);
    const lastUser = turn.conversation.findLast((message) => message.role === 'user');
    expect(outcome.messages).toContain(lastUser);
    expect(outcome.report.inputTokens).toBeLessThanOrEqual(generated.window - outputReserve);

    // The model's reply: more parallel calls (sometimes replaying an id used before), or an answer.
    let reply: Record<string, unknown>;
    if (action.kind === 'step' || (action.kind === 'user' && !action.answer)) {
      const calls = action.kind === 'step' ? action.calls : 1;
      const ids = Array.from({ length: calls }, (_unused, index) =>
        action.kind === 'step' && action.replay && index === 0 && usedIds.length > 0
          ? (usedIds[callCounter % usedIds.length] as string)
          : `call_${++callCounter}`,
      );
      const unique = [...new Set(ids)];
      usedIds = [...usedIds, ...unique].slice(-20);
      pendingCalls = unique;
      reply = {
        role: 'assistant',
        content: null,
        tool_calls: unique.map((id) => ({
          id,
          type: 'function',
          function: { name: 'lookup', arguments: '{}' },
        })),
      };
    } else {
      reply = { role: 'assistant', content: text(10, 'answer') };
    }
    await turn.commit(reply, {
      window: generated.window,
      historyStartIndex: outcome.report.historyStartIndex,
      keepFirstTurns: policy.keep_first_turns,
    });
    committed.push(
      ...incoming.map((message) => ({ message: message as Record<string, unknown>, tokens: 0 })),
    );
    committed.push({ message: reply, tokens: 0 });
  }
  // Nothing lost, nothing duplicated: the whole conversation, in order.
  const history = await store.history(key, 0, 100_000);
  expect(history.messages.map((entry) => entry.message)).toEqual(committed.map((entry) => entry.message));
}

function describeLoops(name: string, runs: number, create: (limits: SessionLimits) => SessionStore): void {
  it(`keeps every request valid and loses nothing over ${runs} generated loops: ${name}`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async (generated) => {
        const store = create({
          maxActiveMessages: 60,
          minActiveMessages: generated.minActive,
          idleTtlSeconds: 3_600,
        });
        // A store over a network connection fails fast until connected (no offline queue).
        for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++)
          await new Promise((resolve) => setTimeout(resolve, 20));
        try {
          await runLoop(store, generated);
        } finally {
          await store.close();
        }
      }),
      { numRuns: runs },
    );
  }, 300_000);
}

describe('session agent loops through the store and the renderer', () => {
  describeLoops('in-process store', 2_000, (limits) => createMemorySessionStore({ limits }));
  describeLoops('redis-server', 150, (limits) =>
    createRedisSessionStore({
      redis: createRedisConnection({ mode: 'standalone', url: inject('redisUrl') }),
      limits,
      cacheBytes: 0,
    }),
  );
});
