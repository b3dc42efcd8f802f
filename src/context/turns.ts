// Turns and tool pairing. A turn starts at a user message and runs to the next one; the leading
// system/developer messages are the system region, not a turn. Tool calls and their results always
// stay in one turn, which is what lets the renderer drop whole turns without creating orphans.
import type { ContextMessage } from './types.js';

export interface Turn {
  /** Index of the turn's first message in the input. */
  start: number;
  /** Index after its last message. */
  end: number;
}

export function isSystemRole(role: string): boolean {
  return role === 'system' || role === 'developer';
}

/** Number of leading system/developer messages. */
export function leadingSystemCount(messages: readonly ContextMessage[]): number {
  let count = 0;
  while (count < messages.length && isSystemRole((messages[count] as ContextMessage).role)) count++;
  return count;
}

export function splitTurns(messages: readonly ContextMessage[], from: number): Turn[] {
  const turns: Turn[] = [];
  let start = from;
  for (let index = from + 1; index < messages.length; index++) {
    if ((messages[index] as ContextMessage).role === 'user') {
      turns.push({ start, end: index });
      start = index;
    }
  }
  if (start < messages.length) turns.push({ start, end: messages.length });
  return turns;
}

export function messageText(message: ContextMessage): string {
  const content = message.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: { type?: unknown; text?: unknown }) =>
      part?.type === 'text' && typeof part.text === 'string' ? part.text : '',
    )
    .join('');
}

/**
 * Tool messages that answer no earlier tool call, and tool calls left without a result before the next
 * non-tool message — what providers refuse. Returned as message indices.
 */
export function findOrphans(messages: readonly ContextMessage[]): number[] {
  const orphans: number[] = [];
  // Calls not answered yet, by id: how many (a provider that gives every call the same id, or none,
  // is answered once for each — docs/budgeting.md#tool-calls-as-providers-give-them).
  let pending = new Map<string, number>();
  let callsAt = -1;
  const flushPending = (): void => {
    if (pending.size > 0 && !orphans.includes(callsAt)) orphans.push(callsAt);
    pending = new Map();
  };
  for (const [index, message] of messages.entries()) {
    if (message.role === 'tool') {
      const id = message.tool_call_id;
      const left = id === undefined ? undefined : pending.get(id);
      if (id === undefined || left === undefined) orphans.push(index);
      else if (left > 1) pending.set(id, left - 1);
      else pending.delete(id);
      continue;
    }
    flushPending();
    if (message.role === 'assistant') {
      callsAt = index;
      for (const call of message.tool_calls ?? []) pending.set(call.id, (pending.get(call.id) ?? 0) + 1);
    }
  }
  flushPending();
  return orphans;
}

/** How far past the last message paired the walk of `sourcePositions` looks before it looks one up. */
const pairingLookahead = 64;

/** Messages left unpaired at the end up to this many are searched for one by one, not through a map. */
const pairingLastFew = 8;

/**
 * Where each message of `rendered` came from: its index in `original` when it is the same object, else
 * -1 (a message the engine made or rewrote). What is sent keeps the conversation's order, so one walk
 * pairs them, looking a short way past the last pair. A message not found there is the engine's when a
 * later one is found there (the order allows nothing else); only when none is — a gap in what was sent
 * — is the rest looked up in a map of the conversation, built once. Identity sets of every message cost
 * more than the walk (thousands of messages, per request).
 */
export function sourcePositions(
  original: readonly ContextMessage[],
  rendered: readonly ContextMessage[],
): Int32Array {
  const positions = new Int32Array(rendered.length).fill(-1);
  let cursor = 0;
  let byMessage: Map<ContextMessage, number> | undefined;
  const near = (message: ContextMessage): number => {
    const limit = Math.min(original.length, cursor + pairingLookahead);
    for (let index = cursor; index < limit; index++) if (original[index] === message) return index;
    return -1;
  };
  let at = 0;
  while (at < rendered.length) {
    const message = rendered[at] as ContextMessage;
    let found = near(message);
    if (found < 0 && byMessage === undefined) {
      let next = at + 1;
      while (next < rendered.length && near(rendered[next] as ContextMessage) < 0) next++;
      if (next < rendered.length) {
        // The messages before it were not the conversation's.
        at = next;
        continue;
      }
      // None is: the last few (what the engine made of the current turn's end, most often) are looked
      // for one by one; more than that are looked up in a map.
      if (rendered.length - at > pairingLastFew)
        byMessage = new Map(original.map((known, index) => [known, index]));
    }
    if (found < 0)
      found = byMessage === undefined ? original.indexOf(message, cursor) : (byMessage.get(message) ?? -1);
    if (found >= cursor) {
      positions[at] = found;
      cursor = found + 1;
    }
    at++;
  }
  return positions;
}

export interface PairingRepair {
  messages: ContextMessage[];
  /** Tool messages dropped (no call before them, or a second answer to one call). */
  removedToolMessages: number;
  /** Tool calls dropped from assistant messages because no result followed. */
  removedToolCalls: number;
}

/**
 * Makes a conversation valid for the provider: every tool message answers a call of the assistant
 * message its block follows (once), and every tool call kept has its result. Orphaned tool messages
 * are dropped; unanswered calls are dropped from their assistant message, which is dropped itself
 * when nothing else is left in it. Pure; returns the input array itself when nothing was wrong.
 */
export function repairToolPairing(messages: readonly ContextMessage[]): PairingRepair {
  const result: ContextMessage[] = [];
  let removedToolMessages = 0;
  let removedToolCalls = 0;
  let index = 0;
  while (index < messages.length) {
    const message = messages[index] as ContextMessage;
    if (message.role === 'tool') {
      // A tool message outside a call's block.
      removedToolMessages++;
      index++;
      continue;
    }
    const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : [];
    if (calls.length === 0) {
      result.push(message);
      index++;
      continue;
    }
    let end = index + 1;
    while (end < messages.length && (messages[end] as ContextMessage).role === 'tool') end++;
    // By id, how many calls and how many answered: each call is answered once, also where a provider
    // gave several calls the same id (or all an empty one), as the results then follow in their order.
    const callCount = new Map<string, number>();
    for (const call of calls) callCount.set(call.id, (callCount.get(call.id) ?? 0) + 1);
    const answered = new Map<string, number>();
    const results: ContextMessage[] = [];
    for (let position = index + 1; position < end; position++) {
      const toolMessage = messages[position] as ContextMessage;
      const id = toolMessage.tool_call_id;
      const done = id === undefined ? 0 : (answered.get(id) ?? 0);
      if (id === undefined || done >= (callCount.get(id) ?? 0)) {
        removedToolMessages++;
        continue;
      }
      answered.set(id, done + 1);
      results.push(toolMessage);
    }
    // The first calls of each id, as many as were answered.
    const keptOf = new Map<string, number>();
    const keptCalls = calls.filter((call) => {
      const kept = keptOf.get(call.id) ?? 0;
      if (kept >= (answered.get(call.id) ?? 0)) return false;
      keptOf.set(call.id, kept + 1);
      return true;
    });
    removedToolCalls += calls.length - keptCalls.length;
    if (keptCalls.length === calls.length) result.push(message);
    else if (keptCalls.length > 0) result.push(Object.assign({}, message, { tool_calls: keptCalls }));
    else if (messageText(message) !== '') {
      const { tool_calls: _dropped, ...rest } = message;
      result.push(rest as ContextMessage);
    }
    result.push(...results);
    index = end;
  }
  if (removedToolMessages === 0 && removedToolCalls === 0)
    return { messages: messages as ContextMessage[], removedToolMessages: 0, removedToolCalls: 0 };
  return { messages: result, removedToolMessages, removedToolCalls };
}
