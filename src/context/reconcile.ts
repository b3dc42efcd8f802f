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
 * The index in `incoming` where new messages start. In `auto` and `full`, when the incoming messages
 * contain the most recent stored messages (as many as overlap, up to the whole stored list), only what
 * follows them is new; otherwise every incoming message is new. In `delta`, every message is new.
 */
export function newMessagesStart(
  stored: readonly ContextMessage[],
  incoming: readonly ContextMessage[],
  mode: HistoryMode,
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
  // Try the latest occurrence of the last stored message first: the overlap ends there.
  for (let end = incoming.length - 1; end >= 0; end--) {
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
  }
  return 0;
}
