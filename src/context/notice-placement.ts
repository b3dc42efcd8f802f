// Where the gateway's own messages go — omission notices, dropped-steps notices, summaries — once the
// prompt is fitted. `inline` sends each as a system message where it stands (after the kept first turn,
// inside an agent turn): OpenAI's API takes that. The chat templates of many open models served by vLLM,
// TGI or llama.cpp (Mistral's, Gemma's…) accept a system message only first and refuse the request
// otherwise, so `user` carries each one in the user message next to it — prepended to the user message
// that follows it, or appended to the one that opened an earlier agent turn — and what would join the
// current turn's user message (sent as the client wrote it) goes to the leading system message, as
// `leading_system` sends them all. Merged where it stood, a notice changes the prompt from where it was,
// as inline does: the prefix a provider's cache reuses is the same. The same templates refuse what a
// request bridged from the Responses or Messages API can hold (developer messages, system messages in
// the conversation, two user messages in a row): forStrictTemplate writes such a request as they take
// it. Pure.
import { isSystemRole, leadingSystemCount, messageText } from './turns.js';
import type { ContextMessage } from './types.js';

export type NoticePlacement = 'inline' | 'leading_system' | 'user';

/** The gateway's own messages: a system message past the leading ones, written by ctxgate. */
function isGatewayNotice(message: ContextMessage, index: number, systemCount: number): boolean {
  return (
    index >= systemCount &&
    message.role === 'system' &&
    typeof message.content === 'string' &&
    message.content.startsWith('[ctxgate]')
  );
}

function withText(message: ContextMessage, text: string, side: 'before' | 'after'): ContextMessage {
  const content = message.content;
  if (Array.isArray(content)) {
    const part = { type: 'text', text };
    return Object.assign({}, message, {
      content: side === 'before' ? [part, ...content] : [...content, part],
    });
  }
  const own = typeof content === 'string' ? content : messageText(message);
  return Object.assign({}, message, {
    content: side === 'before' ? `${text}\n\n${own}` : `${own}\n\n${text}`,
  });
}

/**
 * The rendered messages with the gateway's notices placed as `placement` says, and the change in
 * prompt tokens that makes (merging saves each notice's framing).
 */
export function placeNotices(
  rendered: readonly ContextMessage[],
  systemCount: number,
  placement: NoticePlacement,
  count: (message: ContextMessage) => number,
): { messages: ContextMessage[]; tokenDelta: number } {
  if (
    placement === 'inline' ||
    !rendered.some((message, index) => isGatewayNotice(message, index, systemCount))
  )
    return { messages: [...rendered], tokenDelta: 0 };
  const out: ContextMessage[] = [];
  const toLeading: string[] = [];
  // The current turn's user message is sent as the client wrote it: what would join it goes first.
  const current = rendered.findLastIndex((message) => message.role === 'user');
  let pending: string[] = [];
  let delta = 0;
  /** Index in `rendered` of the last message pushed to `out`. */
  let previousIndex = -1;
  /** Replaces out[at] by itself with `text` added, counting the change. */
  const merge = (at: number, text: string, side: 'before' | 'after'): void => {
    const before = out[at] as ContextMessage;
    const after = withText(before, text, side);
    delta += count(after) - count(before);
    out[at] = after;
  };
  for (const [index, message] of rendered.entries()) {
    if (isGatewayNotice(message, index, systemCount)) {
      delta -= count(message);
      const text = message.content as string;
      if (placement === 'leading_system') toLeading.push(text);
      else pending.push(text);
      continue;
    }
    if (pending.length > 0) {
      const text = pending.join('\n\n');
      pending = [];
      const previous = out.at(-1);
      if (message.role === 'user' && index !== current) {
        out.push(message);
        merge(out.length - 1, text, 'before');
        continue;
      }
      // Inside an earlier agent turn: the user message that opened it, right before.
      if (previous?.role === 'user' && previousIndex !== current) merge(out.length - 1, text, 'after');
      else toLeading.push(text);
    }
    out.push(message);
    previousIndex = index;
  }
  toLeading.push(...pending);
  if (toLeading.length > 0) {
    const text = toLeading.join('\n\n');
    if (systemCount > 0 && out[systemCount - 1] !== undefined) merge(systemCount - 1, text, 'after');
    else {
      const leading: ContextMessage = { role: 'system', content: text };
      out.unshift(leading);
      delta += count(leading);
    }
  }
  return { messages: out, tokenDelta: delta };
}

/** A user message, or an assistant message that calls no tool: what a strict template makes alternate. */
function isTurnMessage(message: ContextMessage): boolean {
  if (message.role === 'user') return true;
  const calls = message.tool_calls;
  return message.role === 'assistant' && !(Array.isArray(calls) && calls.length > 0);
}

function partsOf(content: unknown): unknown[] {
  if (Array.isArray(content)) return content;
  return typeof content === 'string' && content !== '' ? [{ type: 'text', text: content }] : [];
}

/** Messages of one role as one: their texts (or parts) one after the other, joined once. */
function joined(messages: readonly ContextMessage[]): ContextMessage {
  const first = messages[0] as ContextMessage;
  const content = messages.every((message) => typeof message.content === 'string' || message.content == null)
    ? messages
        .map((message) => (message.content as string | null | undefined) ?? '')
        .filter((text) => text !== '')
        .join('\n\n')
    : messages.flatMap((message) => partsOf(message.content));
  return Object.assign({}, first, { content });
}

function isText(message: ContextMessage): boolean {
  return (
    typeof message.content === 'string' ||
    partsOf(message.content).every((part) => (part as { type?: unknown }).type === 'text')
  );
}

/**
 * User and assistant messages made to alternate, tool calls and results aside: a message of the role
 * the last one had joins it when it is right after it; a user message right after tool results (a tool
 * call and nothing the assistant said since the last user message) is added to the last result when it
 * is text; one that cannot be (an image) comes after a word of the model's (afterResultsText). The
 * model's text and then its calls, as two messages, are one. Each run is joined once: a request of 10,000
 * user messages in a row costs one pass, not one copy per message.
 */
function alternating(messages: readonly ContextMessage[], from: number): ContextMessage[] {
  const out = messages.slice(0, from);
  let last: string | undefined;
  /** The role last had before the last turn message was sent. */
  let lastBefore: string | undefined;
  /** Messages that join out's last message, and how: as one of its role, or as text after a result. */
  let run: ContextMessage[] = [];
  let into: 'message' | 'result' = 'message';
  const flush = (): void => {
    if (run.length === 0) return;
    const target = out[out.length - 1] as ContextMessage;
    out[out.length - 1] =
      into === 'message'
        ? joined([target, ...run])
        : withText(target, run.map((message) => messageText(message)).join('\n\n'), 'after');
    run = [];
  };
  for (let index = from; index < messages.length; index++) {
    const message = messages[index] as ContextMessage;
    if (message.role === 'assistant' && !isTurnMessage(message)) {
      flush();
      const answer = out.at(-1);
      if (answer?.role === 'assistant' && isTurnMessage(answer)) {
        // The model's text, then its calls, as two messages: one message, its text beside the calls (a
        // message a template sets aside, as the turn before it was the last).
        out[out.length - 1] = Object.assign({}, message, { content: joined([answer, message]).content });
        last = lastBefore;
        continue;
      }
    }
    const previous = out.at(-1);
    if (isTurnMessage(message) && message.role === last && previous !== undefined) {
      const kind =
        previous.role === message.role && isTurnMessage(previous)
          ? 'message'
          : previous.role === 'tool' && isText(message)
            ? 'result'
            : undefined;
      if (kind !== undefined && (run.length === 0 || kind === into)) {
        into = kind;
        run.push(message);
        continue;
      }
    }
    flush();
    if (message.role === 'user' && last === 'user' && previous?.role === 'tool')
      // A user's picture right after tool results, which no result can carry: a word of the model's first.
      out.push({ role: 'assistant', content: afterResultsText });
    out.push(message);
    if (isTurnMessage(message)) {
      lastBefore = last;
      last = message.role;
    }
  }
  flush();
  return out;
}

/**
 * The user message put before a conversation that starts with the model (a chat widget's greeting, an
 * agent's history that starts with its call): strict templates and Gemini take the user's turn first.
 */
export const modelFirstText = "[ctxgate] The conversation starts with the assistant's message that follows.";

/** What the model says between tool results and a user's message no result can carry (an image). */
export const afterResultsText = '[ctxgate] The tool results are above; the user’s message follows.';

/**
 * A conversation the gateway made from another API (a Responses request's `instructions` and developer
 * items, a Messages request's mid-conversation system messages) as a chat template that takes one
 * system message, first, accepts it — Qwen's refuses a `developer` role ("Unexpected message role"),
 * Qwen's and Mistral's a system message anywhere but first. The leading system and developer messages
 * become one system message (their texts one after the other); a later one's text goes into the user
 * message that follows it, or else is added to the message before it when that is a user or tool
 * message (after a run of tool results: the last of them), or else becomes a user message of its own.
 * Mistral's and Devstral's templates also make user and assistant messages alternate, tool calls and
 * results aside: two user messages in a row (Codex sends its environment, then the task) are one, and so
 * are two assistant answers, and an answer's text and its calls given as two messages; a user message
 * right after tool results joins the last of them (one holding an image, which no result can carry, comes
 * after a word of the model's, afterResultsText). A conversation that starts with the model gets a user
 * message before it (modelFirstText): Mistral's and Gemma's templates, and Gemini ("Please ensure that
 * function call turn comes immediately after a user turn or after a function response turn."), take the
 * user's turn first (Bedrock too: "A conversation must start with a user message"), and system messages
 * and nothing else are the user's message. A message left as it was is the same object (its bytes are
 * copied from the client's, chat-body.ts). Deterministic: the next request of a conversation gets the
 * same prefix. Pure.
 */
export function forStrictTemplate(messages: readonly ContextMessage[]): ContextMessage[] {
  const leading = leadingSystemCount(messages);
  const only = messages[0];
  const out: ContextMessage[] =
    leading === 0
      ? []
      : leading === 1 && only?.role === 'system'
        ? [only]
        : leading === 1 && only !== undefined && typeof only.content === 'string'
          ? [Object.assign({}, only, { role: 'system' })]
          : [
              {
                role: 'system',
                content: messages
                  .slice(0, leading)
                  .map((message) => messageText(message))
                  .join('\n\n'),
              },
            ];
  let pending: string[] = [];
  /** The pending texts added to the last message sent, or as a user message of their own. */
  const flush = (): void => {
    const text = pending.join('\n\n');
    pending = [];
    const previous = out.at(-1);
    if (previous !== undefined && (previous.role === 'user' || previous.role === 'tool'))
      out[out.length - 1] = withText(previous, text, 'after');
    else out.push({ role: 'user', content: text });
  };
  for (let index = leading; index < messages.length; index++) {
    const message = messages[index] as ContextMessage;
    if (isSystemRole(message.role)) {
      const text = messageText(message);
      if (text !== '') pending.push(text);
      continue;
    }
    if (pending.length === 0 || message.role === 'tool') out.push(message);
    else if (message.role === 'user') {
      out.push(withText(message, pending.join('\n\n'), 'before'));
      pending = [];
    } else {
      flush();
      out.push(message);
    }
  }
  if (pending.length > 0) flush();
  const from = leading === 0 ? 0 : 1;
  // Instructions and nothing else (an agent run with no prompt): they are what the user asks.
  if (from === 1 && out.length === 1) return [Object.assign({}, out[0], { role: 'user' })];
  if (out[from]?.role === 'assistant') out.splice(from, 0, { role: 'user', content: modelFirstText });
  return alternating(out, from);
}

/**
 * A conversation with no user message — the system prompt, then the model's calls and their results, the
 * user's prompt left out by the client's own compaction — as GLM's API takes it (which refuses one: "The
 * messages parameter is illegal", verified live by diegosouzapw/OmniRoute#11209): a user message before
 * the model's first (modelFirstText). Instructions and nothing else (an LLM-as-a-judge prompt, which
 * Gemini refuses too: "contents is not specified"): the last of them is what the user asks, sent as the
 * user's message. The same array when it has a user message. Pure.
 */
export function withUserTurn(messages: readonly ContextMessage[]): ContextMessage[] {
  if (messages.some((message) => message.role === 'user')) return messages as ContextMessage[];
  const first = messages.findIndex((message) => message.role !== 'system' && message.role !== 'developer');
  if (first === -1) {
    const last = messages.at(-1);
    return last === undefined
      ? (messages as ContextMessage[])
      : [...messages.slice(0, -1), Object.assign({}, last, { role: 'user' })];
  }
  const out = messages.slice();
  out.splice(first, 0, { role: 'user', content: modelFirstText });
  return out;
}

/**
 * A conversation as a model with no system role takes it — Gemma's templates ("System role not supported"
 * as vLLM serves Gemma 2) and Gemma on Google's API ("Developer instruction is not enabled for
 * models/gemma-3-27b-it") — the way Google's own Gemma integration sends one: as forStrictTemplate
 * writes it, the one system message's text then at the start of the first user message (a user message
 * of its own when there is none). Pure.
 */
export function withoutSystemRole(messages: readonly ContextMessage[]): ContextMessage[] {
  const strict = forStrictTemplate(messages);
  const first = strict[0];
  if (first === undefined || !isSystemRole(first.role)) return strict;
  const text = messageText(first);
  const next = strict[1];
  if (text === '') return strict.slice(1);
  if (next?.role === 'user') return [withText(next, text, 'before'), ...strict.slice(2)];
  return [{ role: 'user', content: text }, ...strict.slice(1)];
}
