// The session summarizer as a unit: when a job runs, what it asks the summarizer, what it stores (the
// prose, the user's statements kept verbatim, an agent turn's calls), what it refuses, and that it tries
// again later. The real in-memory session store and budget service; a provider at the Upstream port
// that answers summary requests with what a given summarizer writes, and records what it was asked.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createBudgetService } from '../../src/budget/budget-service.js';
import { loadConfig } from '../../src/config/load-config.js';
import { builtInPolicy } from '../../src/config/policy-defaults.js';
import { learnedLimitsOptions } from '../../src/create-services.js';
import { createMetrics } from '../../src/metrics.js';
import { createSessionSummarizer } from '../../src/sessions/session-summarizer.js';
import { createMemoryBudgetStore } from '../../src/store/memory-budget-store.js';
import { createMemorySessionStore } from '../../src/store/memory-session-store.js';
import { createMemoryLearnedLimits } from '../../src/store/learned-limits.js';
import type { SessionKey, StoredMessage } from '../../src/store/session-store.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import type { Upstream } from '../../src/upstream/upstream.js';
import { answerOf } from '../helpers/port-fakes.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const model = 'unit-model';
const tokenizers = createTiktokenTokenizers();
const count = (text: string) => tokenizers.forEncoding('o200k_base').count(text);

type Asked = Array<{ role: string; content: string }>;

/** A provider whose summaries are what `write` makes of the request it was sent. */
function summarizingUpstream(write: (messages: Asked) => string): Upstream & { asked: Asked[] } {
  const asked: Asked[] = [];
  return {
    asked,
    async send(request) {
      const messages = (JSON.parse(String(request.body)) as { messages: Asked }).messages;
      asked.push(messages);
      const text = write(messages);
      return answerOf({
        status: 200,
        headers: { 'content-type': 'application/json' },
        chunks: [
          JSON.stringify({
            choices: [{ message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 100, completion_tokens: count(text) },
          }),
        ],
      });
    },
    close: async () => undefined,
  };
}

function setup(write: (messages: Asked) => string) {
  const config = loadConfig({
    env: {
      UPSTREAM_BASE_URL: 'http://provider.invalid/v1',
      CTXGATE_CONFIG: writeConfigFile(
        `models:\n  - { match: ${model}, window: 8192, output_reserve: 512 }\n`,
      ),
    },
  });
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics({ collectProcessMetrics: false });
  const store = createMemorySessionStore({
    limits: { maxActiveMessages: 10_000, minActiveMessages: 100, idleTtlSeconds: 600 },
  });
  const upstream = summarizingUpstream(write);
  const summarizer = createSessionSummarizer({
    config,
    store,
    upstream,
    tokenizers,
    metrics,
    learnedLimits: createMemoryLearnedLimits(learnedLimitsOptions(config, logger, metrics)),
    logger,
    budgets: createBudgetService({ config, store: createMemoryBudgetStore(), metrics, logger }),
  });
  const key: SessionKey = { tenantId: 'acme', sessionId: `s-${Math.random().toString(36).slice(2)}` };
  /** Stores `messages` as the session's turns, then tells the summarizer, as a committed request does. */
  const committed = async (messages: Array<Record<string, unknown>>) => {
    const hold = await store.acquire(key, 10_000);
    if (hold === undefined) throw new Error('the session is held');
    const { version } = await store.load(key);
    const append: StoredMessage[] = messages.map((message) => ({
      message,
      tokens: count(JSON.stringify(message.content ?? message.tool_calls ?? '')) + 4,
    }));
    await store.commit(key, {
      hold,
      expectedVersion: version,
      append,
      historyStart: 0,
      activeTokenLimit: 1_000_000,
    });
    await store.release(key, hold);
    const activeTokens = (await store.load(key)).messages.reduce((sum, entry) => sum + entry.tokens, 0);
    summarizer.afterTurn({
      key,
      model,
      policy: builtInPolicy,
      historyBudget: 4_000,
      activeTokens,
      window: 8_192,
      clientHeaders: {},
      credential: undefined,
    });
    await summarizer.idle();
  };
  return { store, upstream, key, committed, summarizer };
}

const filler = (words: number) =>
  Array.from({ length: words }, (_unused, index) => ['river', 'stone', 'lamp', 'green'][index % 4]).join(' ');

/** `turns` turns of about 120 tokens each; the third states a code. */
const chatTurns = (turns: number, from = 0) =>
  Array.from({ length: turns }, (_unused, index) => [
    {
      role: 'user',
      content:
        index + from === 2
          ? `Turn ${index + from}. The vault code is K3-12345. ${filler(50)}`
          : `Turn ${index + from}. ${filler(55)}`,
    },
    { role: 'assistant', content: `Noted ${index + from}. ${filler(55)}` },
  ]).flat();

describe('the session summarizer', () => {
  it('does nothing while the history is under summarize_at of its budget', async () => {
    const { upstream, committed, store, key } = setup(() => 'A summary.');
    await committed(chatTurns(10));
    expect(upstream.asked).toHaveLength(0);
    expect((await store.load(key)).summary).toBeUndefined();
  });

  it("summarizes the oldest turns, keeps the user's statement the summarizer dropped, and archives what it covers", async () => {
    // A paraphrasing summarizer: it keeps no code.
    const { upstream, committed, store, key } = setup(
      () => 'The user and the assistant talked about rivers and stones.',
    );
    await committed(chatTurns(40));
    expect(upstream.asked).toHaveLength(1);
    const asked = upstream.asked[0]?.at(-1)?.content ?? '';
    expect(asked).toContain('[user] Turn 0.');
    expect(asked).not.toContain('Turn 39.');
    const snapshot = await store.load(key);
    expect(snapshot.summary?.text).toBe(
      "The user and the assistant talked about rivers and stones.\n\n[ctxgate] The user's own statements, kept verbatim:\n- The vault code is K3-12345.",
    );
    // What it covers left the active list, not the conversation.
    const covered = (snapshot.summary?.toMessage ?? 0) - (snapshot.summary?.fromMessage ?? 0);
    expect(covered).toBeGreaterThan(10);
    expect(covered % 2).toBe(0);
    expect(snapshot.messages.length).toBe(80 - covered);
    expect((await store.history(key, 0, 1_000)).messages).toHaveLength(80);
  });

  it('refuses an answer that is a refusal, stores nothing, and tries again at a later turn', async () => {
    let answer = "I'm sorry, but I can't help with that.";
    const { upstream, committed, store, key } = setup(() => answer);
    await committed(chatTurns(40));
    expect(upstream.asked).toHaveLength(1);
    expect((await store.load(key)).summary).toBeUndefined();
    answer = 'They discussed the vault.';
    for (let turn = 0; turn < 4 && (await store.load(key)).summary === undefined; turn++)
      await committed(chatTurns(1, 40 + turn));
    expect((await store.load(key)).summary?.text).toContain('They discussed the vault.');
  });

  /** `count` steps of an agent turn from step `from`: a call reading a module and its long result. */
  const agentSteps = (from: number, count: number) =>
    Array.from({ length: count }, (_unused, offset) => {
      const index = from + offset;
      return [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_${index}`,
              type: 'function',
              function: { name: 'read_file', arguments: `{"path":"src/mod_${index}.ts"}` },
            },
          ],
        },
        {
          role: 'tool',
          tool_call_id: `call_${index}`,
          content: `export const value = ${index}; ${filler(300)}`,
        },
      ];
    }).flat();

  it("summarizes a long agent turn's first steps with the agent's calls kept verbatim", async () => {
    const { upstream, committed, store, key } = setup(() => 'The agent read the modules.');
    await committed([{ role: 'user', content: 'Read every module and fix the bug.' }, ...agentSteps(0, 12)]);
    expect(upstream.asked).toHaveLength(1);
    const turnSummary = (await store.load(key)).turnSummary;
    expect(turnSummary?.steps).toBeGreaterThan(3);
    const calls = Array.from(
      { length: turnSummary?.steps ?? 0 },
      (_unused, index) => `- read_file({"path":"src/mod_${index}.ts"})`,
    );
    expect(turnSummary?.text).toBe(
      [
        `[ctxgate] Steps 1 to ${turnSummary?.steps} (${2 * (turnSummary?.steps ?? 0)} messages):`,
        'The agent read the modules.',
        '',
        "[ctxgate] The agent's calls in these steps, kept verbatim:",
        ...calls,
      ].join('\n'),
    );
  });

  it("appends the next steps' summary as a segment, leaving the text before it as it was", async () => {
    const { upstream, committed, store, key } = setup((messages) =>
      messages.at(-1)?.content.includes('Previous summary:') === true ? 'Merged.' : 'Read some modules.',
    );
    await committed([{ role: 'user', content: 'Read every module and fix the bug.' }, ...agentSteps(0, 12)]);
    const first = (await store.load(key)).turnSummary;
    await committed(agentSteps(12, 10));
    const second = (await store.load(key)).turnSummary;
    expect(upstream.asked).toHaveLength(2);
    // The second job was asked about its own steps only: no previous summary to rewrite.
    expect(upstream.asked[1]?.at(-1)?.content).not.toContain('Previous summary:');
    expect(second?.steps).toBeGreaterThan(first?.steps ?? 0);
    // A prompt cache keeps everything up to the new segment.
    expect(
      second?.text.startsWith(
        `${first?.text}\n\n[ctxgate] Steps ${(first?.steps ?? 0) + 1} to ${second?.steps} (`,
      ),
    ).toBe(true);
    expect(second?.text).toContain(`- read_file({"path":"src/mod_${(second?.steps ?? 0) - 1}.ts"})`);
  });

  it('merges the segments into one once the summary has grown, with the calls of its steps', async () => {
    // A summarizer that writes a lot: the segments soon pass what a turn's summary may hold.
    const { upstream, committed, store, key } = setup((messages) =>
      messages.at(-1)?.content.includes('Previous summary:') === true ? 'Merged.' : filler(400),
    );
    await committed([{ role: 'user', content: 'Read every module and fix the bug.' }, ...agentSteps(0, 12)]);
    let merged = 0;
    for (let round = 0; round < 4; round++) {
      const asked = upstream.asked.length;
      await committed(agentSteps(12 + round * 10, 10));
      const job = upstream.asked[asked]?.at(-1)?.content ?? '';
      if (!job.includes('Previous summary:')) continue;
      merged++;
      // The merge extends what the segments said, and stores one segment from the first step.
      expect(job).toContain(filler(400).slice(0, 200));
      const summary = (await store.load(key)).turnSummary;
      expect(summary?.text.startsWith(`[ctxgate] Steps 1 to ${summary.steps} (`)).toBe(true);
      expect(summary?.text.match(/\[ctxgate\] Steps /g)).toHaveLength(1);
      expect(summary?.text).toContain('Merged.');
      expect(summary?.text).toContain(`- read_file({"path":"src/mod_${(summary?.steps ?? 0) - 1}.ts"})`);
    }
    expect(merged).toBeGreaterThan(0);
  });
});
