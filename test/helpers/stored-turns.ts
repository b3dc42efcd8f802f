// A session of question/answer turns written straight through a store, and a summary stored over its
// oldest messages, for tests of what the stores and the session's view make of them.
import type {
  SessionKey,
  SessionRequestReport,
  SessionStore,
  SessionSummary,
} from '../../src/store/session-store.js';

/**
 * What a request of the session did, as the chat service records it: `inputTokens` of an 8,000-token
 * window with 500 reserved for the output, two messages sent (sessions are listed by their requests).
 */
export const requestReport = (at: number, inputTokens: number): SessionRequestReport => ({
  at,
  model: 'm',
  status: 200,
  window: 8_000,
  inputTokens,
  outputReserve: 500,
  safetyMargin: 400,
  regions: { system: 10, summary: 0, tools: 0, history: inputTokens - 20, current: 10 },
  retries: 0,
  durationMs: 5,
  dropped: 0,
  summarized: 0,
  truncated: 0,
  masked: 0,
  fates: [[0, 2, 'sent']],
});

/**
 * Commits `turns` turns ("question N", "answer N"; `tokens` each), one write per turn: to a new session,
 * or after the `from` turns committed so far.
 */
export async function commitTurns(
  store: SessionStore,
  key: SessionKey,
  turns: number,
  tokens = 3,
  from = 0,
): Promise<void> {
  for (let turn = from; turn < from + turns; turn++) {
    const hold = await store.acquire(key, 10_000);
    if (hold === undefined) throw new Error('the test session is busy');
    await store.commit(key, {
      hold,
      expectedVersion: turn,
      append: [
        { message: { role: 'user', content: `question ${turn}` }, tokens },
        { message: { role: 'assistant', content: `answer ${turn}` }, tokens },
      ],
      historyStart: 0,
      activeTokenLimit: 1_000_000,
    });
  }
}

/** Stores `summary` under the summarization lock, as a summarizer job does; fails the test when refused. */
export async function storeSummary(
  store: SessionStore,
  key: SessionKey,
  expectedToMessage: number,
  summary: SessionSummary,
): Promise<void> {
  const lockToken = await store.acquireSummaryLock(key, 10_000);
  if (lockToken === undefined) throw new Error('the summarization lock is taken');
  const outcome = await store.storeSummary(key, { lockToken, expectedToMessage, summary });
  await store.releaseSummaryLock(key, lockToken);
  if (!outcome.ok) throw new Error(`the summary was refused: ${outcome.reason}`);
}
