// Session reconciliation (docs/sessions.md): which incoming messages are new, given what the session stores.
// Messages are compared by a canonical form of role, text, tool calls and tool_call_id, so a client
// that resends the whole conversation and one that sends only the new message both work, and neither
// creates duplicates.
import { messageText } from './turns.js';
import type { ContextMessage } from './types.js';

export type HistoryMode = 'auto' | 'delta' | 'full';

/** The canonical form two messages are compared by. */
export function canonicalMessage(message: ContextMessage): string {
  const calls = (message.tool_calls ?? []).map((call) => [
    call.id,
    call.function?.name ?? '',
    call.function?.arguments ?? '',
  ]);
  return JSON.stringify([message.role, messageText(message), calls, message.tool_call_id ?? '']);
}

/**
 * Where a session's stored list leaves out messages of its conversation: after its first `head`
 * messages (the protected first turn), `archived` messages moved to the archive, which a request does
 * not read.
 */
export interface StoredGap {
  head: number;
  archived: number;
}

const noGap: StoredGap = Object.freeze({ head: 0, archived: 0 });

/**
 * The index in `incoming` where new messages start. In `auto` and `full`, when the incoming messages
 * contain the most recent stored messages (as many as overlap, up to the whole stored list), only what
 * follows them is new; otherwise every incoming message is new. In `delta`, every message is new. The
 * whole conversation resent past the archive (`gap`) holds the archived messages between the head and
 * the rest of the stored list: it lines up when the head does, the rest does, and as many messages as
 * the archive holds come between them.
 */
export function newMessagesStart(
  stored: readonly ContextMessage[],
  incoming: readonly ContextMessage[],
  mode: HistoryMode,
  gap: StoredGap = noGap,
): number {
  if (mode === 'delta' || stored.length === 0 || incoming.length === 0) return 0;
  // Keys are computed as the comparison reaches them: usually only the last few stored messages.
  const lazyKeys = (messages: readonly ContextMessage[]): ((index: number) => string) => {
    const keys: string[] = [];
    return (index) => (keys[index] ??= canonicalMessage(messages[index] as ContextMessage));
  };
  const storedKey = lazyKeys(stored);
  const incomingKey = lazyKeys(incoming);
  const last = storedKey(stored.length - 1);
  // A message whose role or text length differs cannot have the same canonical form: a conversation
  // that does not go on from the stored one is read once, cheaply, not written out whole.
  const lastMessage = stored[stored.length - 1] as ContextMessage;
  const lastLength = messageText(lastMessage).length;
  // Try the latest occurrence of the last stored message first: the overlap ends there.
  for (let end = incoming.length - 1; end >= 0; end--) {
    const candidate = incoming[end] as ContextMessage;
    if (candidate.role !== lastMessage.role || messageText(candidate).length !== lastLength) continue;
    if (incomingKey(end) !== last) continue;
    let matched = 1;
    while (
      matched <= end &&
      matched < stored.length &&
      incomingKey(end - matched) === storedKey(stored.length - 1 - matched)
    )
      matched++;
    // The whole incoming prefix, or the whole stored list, must line up.
    if (matched === end + 1 || matched === stored.length) return end + 1;
    if (
      linesUpPastTheArchive(
        matched,
        end,
        stored.length,
        gap,
        (index) => incomingKey(index) === storedKey(index),
      )
    )
      return end + 1;
  }
  return 0;
}

/**
 * The stored list after the head lined up (`matched` of it, ending at `end` in the request), preceded by
 * exactly the head and the archived messages, and the head lines up with the request's first messages.
 */
function linesUpPastTheArchive(
  matched: number,
  end: number,
  storedLength: number,
  gap: StoredGap,
  sameAt: (index: number) => boolean,
): boolean {
  const rest = storedLength - gap.head;
  if (gap.archived === 0 || gap.head === 0 || rest <= 0 || matched < rest) return false;
  if (end + 1 - rest !== gap.head + gap.archived) return false;
  for (let index = 0; index < gap.head; index++) if (!sameAt(index)) return false;
  return true;
}

/**
 * How many stored messages a request that resends the whole conversation keeps when it rewrites its end
 * (a regenerated answer, an edited or rewound message): the first turn and the rest of the stored list
 * up to where they part, past the archive (`gap`), whose messages it must hold as many of. Undefined when
 * it does not start as the stored conversation does (another conversation), parts inside the archive,
 * or does not part at all.
 */
export function branchPoint(
  stored: readonly ContextMessage[],
  incoming: readonly ContextMessage[],
  gap: StoredGap = noGap,
): number | undefined {
  const { head, archived } = gap;
  if (incoming.length < head + archived) return undefined;
  for (let index = 0; index < head; index++)
    if (
      canonicalMessage(incoming[index] as ContextMessage) !==
      canonicalMessage(stored[index] as ContextMessage)
    )
      return undefined;
  let kept = head;
  while (
    kept < stored.length &&
    kept + archived < incoming.length &&
    canonicalMessage(incoming[kept + archived] as ContextMessage) ===
      canonicalMessage(stored[kept] as ContextMessage)
  )
    kept++;
  return kept === 0 || kept === stored.length ? undefined : kept;
}
