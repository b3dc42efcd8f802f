// A session's view of a conversation as the session turn would hand it to the decision of what is sent
// (src/context/session-view.ts): its messages with the counts a test gives them, nothing archived,
// summarized or stored as bytes.
import type { SessionView } from '../../src/context/session-view.js';
import type { ContextMessage } from '../../src/context/types.js';

export function sessionViewOf(
  conversation: ContextMessage[],
  conversationTokens: number[],
  fields: Partial<SessionView> = {},
): SessionView {
  return Object.assign(
    {
      sessionId: 's-test',
      conversation,
      conversationTokens,
      knownBytes: (messages: readonly ContextMessage[]) => messages.map(() => undefined),
      historyStartHint: 0,
      archivedMessages: 0,
      omittedBefore: 0,
      summary: undefined,
      turnSummary: undefined,
      messagesAfterCommit: conversation.length + 1,
    },
    fields,
  );
}
