// The body an `anthropic` upstream is sent for a Messages request (docs/anthropic.md): the chat request
// the engine fitted, written back in the Messages API's terms (upstream/anthropic-wire.ts
// toAnthropicRequest), with what is still the client's own copied from the client's bytes instead of
// serialized and encoded again — each message whose blocks are the blocks of one of the client's
// messages, in their order; the system prompt, the tools and any other member that is the client's
// value. Claude Code sends its whole conversation, a system prompt of some 15 KB and its tools with
// every request. Nothing is copied from bytes that give a member twice (json-spans.ts). In a session, a
// stored message's blocks are copied from the bytes the session stores it as, where they went as they
// were bridged (its extension's `blocks`), and so is a stored system prompt's.
import { jsonArrayBytes, jsonObjectBytes, type ClientArray, type KnownBytes } from '../chat/chat-body.js';
import { memberValueSpan, skipSpace, type ElementSpans } from '../json-spans.js';
import { toAnthropicRequest } from '../upstream/anthropic-wire.js';

type Json = Record<string, unknown>;

/** Where the client's members and messages lie in its bytes (read once, by its ClientArray). */
interface ClientSpans {
  members: Map<string, readonly [number, number] | undefined>;
  /** The spans of the client's messages, and their members in the bytes; undefined when they cannot say which is which. */
  messages: ElementSpans | undefined;
}

/**
 * Writes the Messages body of a chat request bridged from the client's Messages request `client`, for
 * each attempt: what the engine left as the client sent it is copied from its bytes (`messages`, the
 * client's `messages` array and where its members lie in them: chat-body.ts clientArray), and what it
 * sends of a session's stored messages from the bytes stored (`stored`, aligned with `chat.messages`).
 */
export function anthropicBodyWriter(
  messages: ClientArray,
  client: Json,
): (chat: Json, stored?: ReadonlyArray<KnownBytes | undefined>) => Buffer {
  return (chat, stored) => {
    const body = toAnthropicRequest(chat);
    const spans = clientSpans(messages);
    if (spans === undefined) return Buffer.from(JSON.stringify(body));
    const runs = storedRuns((chat.messages as Json[] | undefined) ?? [], stored ?? []);
    return bodyBytes(messages.raw, client, spans, body, runs);
  };
}

function clientSpans(messages: ClientArray): ClientSpans | undefined {
  const members = messages.bodyMembers();
  if (members === undefined) return undefined;
  const spans = messages.spans();
  const counts = messages.members();
  return { members, messages: spans && counts && { spans, members: counts } };
}

function bodyBytes(
  raw: Buffer,
  client: Json,
  spans: ClientSpans,
  body: Json,
  runs: StoredRuns | undefined,
): Buffer {
  return jsonObjectBytes(
    Object.entries(body).map(([name, value]) => {
      if (name === 'messages' && Array.isArray(value)) {
        const theirs =
          spans.messages === undefined
            ? []
            : messageBytes(raw, client.messages as unknown[], spans.messages, value as Json[]);
        const known = (value as Json[]).map(
          (message, index) => theirs[index] ?? (runs && storedMessageBytes(message, runs)),
        );
        return [
          name,
          value,
          known.some((bytes) => bytes !== undefined) ? jsonArrayBytes(value, known) : undefined,
        ];
      }
      const span = spans.members.get(name);
      if (span !== undefined && isClients(value, client[name]))
        return [name, value, raw.subarray(span[0], span[1])];
      const blocks = name === 'system' && runs !== undefined ? storedBlocksOf(value, runs) : undefined;
      return [name, value, blocks && [openArray, ...blocks, closeArray]];
    }),
  );
}

const openArray = Buffer.from('[');
const closeArray = Buffer.from(']');
const comma = Buffer.from(',');
const closeMessage = Buffer.from(']}');

/** A stored message's blocks as they went (its extension's), and their bytes in what the session stores: inside the brackets. */
interface StoredRun {
  blocks: readonly unknown[];
  inner: Buffer;
}

/** The stored runs of a chat request's messages, by their first block. */
type StoredRuns = Map<unknown, StoredRun>;

/** Where an extension's `blocks` lie in the bytes its message is stored as, kept on the extension. */
const storedBlocksSpan = Symbol('ctxgate.anthropic.storedBlocksSpan');

interface BlocksSpan {
  bytes: Buffer;
  span: readonly [number, number] | undefined;
}

function storedRuns(
  messages: readonly Json[],
  stored: ReadonlyArray<KnownBytes | undefined>,
): StoredRuns | undefined {
  let runs: StoredRuns | undefined;
  messages.forEach((message, index) => {
    const run = storedRun(message, stored[index]);
    if (run === undefined) return;
    runs ??= new Map();
    runs.set(run.blocks[0], run);
  });
  return runs;
}

/**
 * The run of a stored message: its extension's blocks and their bytes in `bytes`, the JSON the session
 * stores it as (what JSON.stringify writes of it, its extension's toJSON included). Where they lie is
 * found once for the message and kept on its extension (a session's cache hands the same message and
 * the same bytes to every request); not enumerable, so never written out.
 */
function storedRun(message: Json, bytes: KnownBytes | undefined): StoredRun | undefined {
  const extension = message.ctxgate_anthropic as { blocks?: unknown } | undefined;
  if (!Buffer.isBuffer(bytes) || typeof extension !== 'object' || extension === null) return undefined;
  const blocks = extension.blocks;
  if (!Array.isArray(blocks) || blocks.length === 0) return undefined;
  let found = (extension as { [storedBlocksSpan]?: BlocksSpan })[storedBlocksSpan];
  if (found?.bytes !== bytes) {
    const outer = memberValueSpan(bytes, skipSpace(bytes, 0), 'ctxgate_anthropic');
    const span = outer === undefined ? undefined : memberValueSpan(bytes, outer[0], 'blocks');
    found = { bytes, span: span !== undefined && bytes[span[0]] === openArray[0] ? span : undefined };
    if (Object.isExtensible(extension))
      Object.defineProperty(extension, storedBlocksSpan, {
        value: found,
        configurable: true,
        writable: true,
      });
  }
  return found.span === undefined
    ? undefined
    : { blocks, inner: bytes.subarray(found.span[0] + 1, found.span[1] - 1) };
}

/** The bytes of `blocks` when they are stored runs, whole and in order: each run's, comma-separated. */
function storedBlocksOf(blocks: unknown, runs: StoredRuns): Buffer[] | undefined {
  if (!Array.isArray(blocks) || blocks.length === 0) return undefined;
  const parts: Buffer[] = [];
  for (let at = 0; at < blocks.length;) {
    const run = runs.get(blocks[at]);
    if (run === undefined || at + run.blocks.length > blocks.length) return undefined;
    for (let index = 0; index < run.blocks.length; index++)
      if (blocks[at + index] !== run.blocks[index]) return undefined;
    if (parts.length > 0) parts.push(comma);
    parts.push(run.inner);
    at += run.blocks.length;
  }
  return parts;
}

/** A Messages message (its role and blocks, nothing else) whose blocks are stored runs: written around their bytes. */
function storedMessageBytes(message: Json, runs: StoredRuns): KnownBytes | undefined {
  if (Object.keys(message).length !== 2 || typeof message.role !== 'string') return undefined;
  const blocks = storedBlocksOf(message.content, runs);
  return (
    blocks && [Buffer.from(`{"role":${JSON.stringify(message.role)},"content":[`), ...blocks, closeMessage]
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
