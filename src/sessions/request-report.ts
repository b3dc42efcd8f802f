// One session request as the inspector draws it (docs/inspector.md): what happened to every message of
// the session's history in that request — sent whole, truncated, masked, summarized or dropped — found
// by comparing the conversation the engine was given with what it sent, and the window's regions.
// Positions are the history's (archive included, as GET /v1/sessions/{id}/history numbers them); no
// message text is kept. Pure.
import { isMaskedResult } from '../context/current-turn.js';
import type { SessionView } from '../context/session-view.js';
import { isSystemRole, messageText, sourcePositions } from '../context/turns.js';
import type { ContextMessage, RenderReport } from '../context/types.js';
import type { MessageFate, SessionRequestReport } from '../store/session-store.js';

const truncationMark = '[… truncated by ctxgate';

/**
 * What happened to each message of `conversation` (after its system prompt) in the rendered request.
 * `turnSummaryEnds`: where each in-turn summary's cover ends (an index into `conversation`); it stands
 * for its turn's messages after the user message and before that end.
 */
export function messageFates(
  conversation: readonly ContextMessage[],
  rendered: readonly ContextMessage[],
  turnSummaryEnds: readonly number[],
): MessageFate[] {
  const standsFor = new Uint8Array(conversation.length);
  for (const end of turnSummaryEnds)
    for (let index = end - 1; index >= 0 && conversation[index]?.role !== 'user'; index--)
      standsFor[index] = 1;
  // Which of the conversation's own messages went as they were (the same objects, in order).
  const sent = new Uint8Array(conversation.length);
  const positions = sourcePositions(conversation, rendered);
  const toolResults = new Map<string, ContextMessage>();
  const callIds = new Set<string>();
  // User messages the engine rewrote (a notice merged in): few, and only their texts are read.
  const rewrittenUserTexts: string[] = [];
  rendered.forEach((message, at) => {
    const position = positions[at] as number;
    if (position >= 0) sent[position] = 1;
    if (message.role === 'tool' && typeof message.tool_call_id === 'string')
      toolResults.set(message.tool_call_id, message);
    for (const call of message.tool_calls ?? []) if (call.id !== undefined) callIds.add(call.id);
    if (message.role === 'user' && position < 0) rewrittenUserTexts.push(messageText(message));
  });
  const systemCount = conversation.findIndex((message) => !isSystemRole(message.role));
  const start = systemCount < 0 ? conversation.length : systemCount;
  const fates: MessageFate[] = [];
  for (let index = start; index < conversation.length; index++) {
    const message = conversation[index] as ContextMessage;
    if (sent[index] === 1) {
      fates.push('sent');
      continue;
    }
    const result =
      message.role === 'tool' && typeof message.tool_call_id === 'string'
        ? toolResults.get(message.tool_call_id)
        : undefined;
    if (result !== undefined) {
      fates.push(
        isMaskedResult(result)
          ? 'masked'
          : messageText(result).includes(truncationMark)
            ? 'truncated'
            : 'sent',
      );
      continue;
    }
    const firstCall = message.tool_calls?.[0]?.id;
    // A message the engine rewrote (a notice merged into a user message) still went.
    const rewritten =
      (firstCall !== undefined && callIds.has(firstCall)) ||
      (message.role === 'user' &&
        rewrittenUserTexts.length > 0 &&
        rewrittenUserTexts.some((text) => text.includes(messageText(message))));
    if (rewritten) fates.push('sent');
    else if (standsFor[index] === 1) fates.push('summarized');
    else fates.push('dropped');
  }
  return fates;
}

/** Runs of equal fates, [first position, count, fate], built a run at a time (adjacent equal runs merge). */
function fateRuns(): {
  add(position: number, count: number, fate: MessageFate): void;
  runs: Array<[number, number, MessageFate]>;
} {
  const runs: Array<[number, number, MessageFate]> = [];
  return {
    runs,
    add(position, count, fate) {
      if (count <= 0) return;
      const last = runs.at(-1);
      if (last !== undefined && last[2] === fate && last[0] + last[1] === position) last[1] += count;
      else runs.push([position, count, fate]);
    },
  };
}

/**
 * What the request did to each message of the session's history, as runs [first position, count, fate]
 * in history positions (archive included): the costly part of a report, found once per attempt.
 */
export function historyFates(
  session: SessionView,
  rendered: readonly ContextMessage[],
): Array<[number, number, MessageFate]> {
  const head = session.headMessages ?? 0;
  const archived = session.archivedMessages;
  const turnSummaryEnds = [...(session.pastTurnSummaries ?? []), session.turnSummary].flatMap((summary) =>
    summary === undefined ? [] : [summary.coversUntil],
  );
  const local = messageFates(session.conversation, rendered, turnSummaryEnds);
  // Conversation positions (after the system prompt): the head, then — past the archive — the rest.
  // The archive is added as ranges (it can hold many thousands of messages; none of it was sent).
  const fates = fateRuns();
  const addArchive = (): void => {
    const end = head + archived;
    const range = session.summaryRange;
    const from = range === undefined ? end : Math.min(end, Math.max(head, range.from));
    const to = range === undefined ? end : Math.min(end, Math.max(from, range.to));
    fates.add(head, from - head, 'dropped');
    fates.add(from, to - from, 'summarized');
    fates.add(to, end - to, 'dropped');
  };
  local.forEach((fate, index) => {
    if (index === head) addArchive();
    fates.add(index < head ? index : index + archived, 1, fate);
  });
  if (local.length <= head) addArchive();
  return fates.runs;
}

export function buildRequestReport(input: {
  at: number;
  model: string;
  fallback: string | undefined;
  status: number;
  session: SessionView;
  rendered: readonly ContextMessage[];
  report: RenderReport;
  outputReserve: number;
  safetyMargin: number;
  /** Scales the gateway's estimate into the provider's units (an estimated model's learned ratio). */
  ratio: number;
  providerPromptTokens: number | undefined;
  retries: number;
  durationMs: number;
  /** historyFates(session, rendered), when already found. */
  fates?: Array<[number, number, MessageFate]>;
}): SessionRequestReport {
  const { report } = input;
  const scale = (tokens: number): number => Math.ceil(tokens * input.ratio);
  return {
    at: input.at,
    model: input.model,
    ...(input.fallback === undefined ? {} : { fallback: input.fallback }),
    status: input.status,
    window: report.window,
    inputTokens: scale(report.inputTokens),
    ...(input.providerPromptTokens === undefined ? {} : { providerPromptTokens: input.providerPromptTokens }),
    outputReserve: input.outputReserve,
    safetyMargin: input.safetyMargin,
    regions: {
      system: scale(report.regions.system),
      summary: scale(report.regions.summary + report.regions.notice),
      tools: scale(report.regions.tools),
      history: scale(report.regions.history),
      current: scale(report.regions.currentTurn),
    },
    retries: input.retries,
    durationMs: Math.round(input.durationMs),
    dropped: report.droppedMessages,
    summarized: report.summarizedMessages,
    truncated: report.truncatedToolResults,
    masked: report.maskedToolResults,
    fates: input.fates ?? historyFates(input.session, input.rendered),
  };
}
