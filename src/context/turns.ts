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
  let pending = new Map<string, number>();
  const flushPending = (): void => {
    for (const index of pending.values()) if (!orphans.includes(index)) orphans.push(index);
    pending = new Map();
  };
  for (const [index, message] of messages.entries()) {
    if (message.role === 'tool') {
      if (message.tool_call_id === undefined || !pending.has(message.tool_call_id)) orphans.push(index);
      else pending.delete(message.tool_call_id);
      continue;
    }
    flushPending();
    if (message.role === 'assistant')
      for (const call of message.tool_calls ?? []) pending.set(call.id, index);
  }
  flushPending();
  return orphans;
}
