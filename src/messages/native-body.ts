// The body an `anthropic` upstream is sent for a Messages request (docs/anthropic.md): the chat request
// the engine fitted, written back in the Messages API's terms (upstream/anthropic-wire.ts
// toAnthropicRequest), with what is still the client's own copied from the client's bytes instead of
// serialized and encoded again — each message whose blocks are the blocks of one of the client's
// messages, in their order; the system prompt, the tools and any other member that is the client's
// value. Claude Code sends its whole conversation, a system prompt of some 15 KB and its tools with
// every request. Nothing is copied from bytes that give a member twice (json-spans.ts).
import { jsonArrayBytes, jsonObjectBytes, type ClientArray, type KnownBytes } from '../chat/chat-body.js';
import type { ElementSpans } from '../json-spans.js';
import { toAnthropicRequest } from '../upstream/anthropic-wire.js';

type Json = Record<string, unknown>;

/** Where the client's members and messages lie in its bytes; read once, the first time a body is written. */
interface ClientSpans {
  members: Map<string, readonly [number, number] | undefined>;
  /** The spans of the client's messages, and their members in the bytes; undefined when they cannot say which is which. */
  messages: ElementSpans | undefined;
}

/**
 * Writes the Messages body of a chat request bridged from the client's Messages request `client`, for
 * each attempt: what the engine left as the client sent it is copied from its bytes (`messages`, the
 * client's `messages` array and where its members lie in them: chat-body.ts clientArray).
 */
export function anthropicBodyWriter(messages: ClientArray, client: Json): (chat: Json) => Buffer {
  return (chat) => {
    const body = toAnthropicRequest(chat);
    const spans = clientSpans(messages);
    return spans === undefined
      ? Buffer.from(JSON.stringify(body))
      : bodyBytes(messages.raw, client, spans, body);
  };
}

function clientSpans(messages: ClientArray): ClientSpans | undefined {
  const members = messages.bodyMembers();
  if (members === undefined) return undefined;
  const spans = messages.spans();
  const counts = messages.members();
  return { members, messages: spans && counts && { spans, members: counts } };
}

function bodyBytes(raw: Buffer, client: Json, spans: ClientSpans, body: Json): Buffer {
  return jsonObjectBytes(
    Object.entries(body).map(([name, value]) => {
      if (name === 'messages' && Array.isArray(value) && spans.messages !== undefined) {
        const known = messageBytes(raw, client.messages as unknown[], spans.messages, value as Json[]);
        return [
          name,
          value,
          known.some((bytes) => bytes !== undefined) ? jsonArrayBytes(value, known) : undefined,
        ];
      }
      const span = spans.members.get(name);
      return [
        name,
        value,
        span !== undefined && isClients(value, client[name]) ? raw.subarray(span[0], span[1]) : undefined,
      ];
    }),
  );
}

/** Whether `value` is the client's `theirs`: the same string, the same object, or an array of the same elements. */
function isClients(value: unknown, theirs: unknown): boolean {
  if (value === theirs) return typeof value === 'string' || (typeof value === 'object' && value !== null);
  if (!Array.isArray(value) || !Array.isArray(theirs) || value.length !== theirs.length) return false;
  return value.every((element, index) => element === theirs[index]);
}

/**
 * The client's bytes of each message sent that is one of its messages as it came: its role and its
 * blocks (the same objects, in the same order, none added), and nothing else in the client's message.
 */
function messageBytes(
  raw: Buffer,
  elements: readonly unknown[],
  found: ElementSpans,
  messages: readonly Json[],
): Array<KnownBytes | undefined> {
  // A message is found by its first block: JSON.parse made every block an object of its own.
  const byFirstBlock = new Map<unknown, number>();
  elements.forEach((element, index) => {
    const content = (element as Json | null)?.content;
    if (Array.isArray(content) && content.length > 0) byFirstBlock.set(content[0], index);
  });
  return messages.map((message) => {
    const blocks = message.content;
    if (!Array.isArray(blocks) || blocks.length === 0) return undefined;
    const index = byFirstBlock.get(blocks[0]);
    if (index === undefined) return undefined;
    const element = elements[index] as Json;
    const theirs = element.content as unknown[];
    if (element.role !== message.role || Object.keys(element).length !== 2 || !isClients(blocks, theirs))
      return undefined;
    // Two members in the bytes too: none given twice.
    if (found.members[index] !== 2) return undefined;
    return raw.subarray(found.spans[2 * index] as number, found.spans[2 * index + 1] as number);
  });
}
