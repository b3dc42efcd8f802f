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
  // User messages the engine rewrote (a notice merged in): few, and only their texts are read.
  const rewrittenUserTexts: string[] = [];
  rendered.forEach((message, at) => {
    const position = positions[at] as number;
    if (position >= 0) sent[position] = 1;
    if (message.role === 'user' && position < 0) rewrittenUserTexts.push(messageText(message));
  });
  const systemCount = conversation.findIndex((message) => !isSystemRole(message.role));
  const start = systemCount < 0 ? conversation.length : systemCount;
  const rewritten = rewrittenFates(conversation, rendered, positions, sent, start);
  const fates: MessageFate[] = [];
  for (let index = start; index < conversation.length; index++) {
    const message = conversation[index] as ContextMessage;
    if (sent[index] === 1) {
      fates.push('sent');
      continue;
    }
    const fate = rewritten.get(index);
    if (fate !== undefined) {
      fates.push(fate);
      continue;
    }
    // A message the engine rewrote (a notice merged into a user message) still went.
    const merged =
      message.role === 'user' &&
      rewrittenUserTexts.length > 0 &&
      rewrittenUserTexts.some((text) => text.includes(messageText(message)));
    if (merged) fates.push('sent');
    else if (standsFor[index] === 1) fates.push('summarized');
    else fates.push('dropped');
  }
  return fates;
}

/** A tool result's or a call message's key: its kind and (first) call id; undefined for other messages. */
function callKeyOf(message: ContextMessage): string | undefined {
  if (message.role === 'tool')
    return typeof message.tool_call_id === 'string' ? `r\u0000${message.tool_call_id}` : undefined;
  const id = message.tool_calls?.[0]?.id;
  return typeof id === 'string' ? `c\u0000${id}` : undefined;
}

/**
 * The fates of the tool results and call messages the engine sent rewritten (truncated, masked, copied),
 * by their index in `conversation`. Each stands for a message of its kind and call id between the
 * messages sent as they were around it — the newest such not taken by a later one: a provider that gives
 * an id again in a later turn (Kimi K3's turn-scoped ids, an endpoint's empty ids) has older messages of
 * that id, which the engine dropped first. One walk back, each key's indexes taken from their end.
 */
function rewrittenFates(
  conversation: readonly ContextMessage[],
  rendered: readonly ContextMessage[],
  positions: ArrayLike<number>,
  sent: Uint8Array,
  start: number,
): Map<number, MessageFate> {
  const fates = new Map<number, MessageFate>();
  const byKey = new Map<string, number[]>();
  for (let index = start; index < conversation.length; index++) {
    if (sent[index] === 1) continue;
    const key = callKeyOf(conversation[index] as ContextMessage);
    if (key === undefined) continue;
    const indexes = byKey.get(key);
    if (indexes === undefined) byKey.set(key, [index]);
    else indexes.push(index);
  }
  if (byKey.size === 0) return fates;
  // The conversation's index of the last message sent as it was before each rendered one.
  const lowerBounds = new Int32Array(rendered.length);
  let lower = -1;
  rendered.forEach((_message, at) => {
    lowerBounds[at] = lower;
    if ((positions[at] as number) >= 0) lower = positions[at] as number;
  });
  let upper = conversation.length;
  for (let at = rendered.length - 1; at >= 0; at--) {
    const position = positions[at] as number;
    if (position >= 0) {
      upper = position;
      continue;
    }
    const message = rendered[at] as ContextMessage;
    const key = callKeyOf(message);
    const indexes = key === undefined ? undefined : byKey.get(key);
    if (indexes === undefined) continue;
    while (indexes.length > 0 && (indexes.at(-1) as number) >= upper) indexes.pop();
    const index = indexes.at(-1);
    if (index === undefined || index <= (lowerBounds[at] as number)) continue;
    indexes.pop();
    upper = index;
    fates.set(
      index,
      message.role !== 'tool'
        ? 'sent'
        : isMaskedResult(message)
          ? 'masked'
          : messageText(message).includes(truncationMark)
            ? 'truncated'
            : 'sent',
    );
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
