// An `anthropic` upstream (docs/anthropic.md): the chat engine fits, sends and recovers in Chat
// Completions terms; this adapter, behind the Upstream port, sends a chat body to Anthropic's Messages
// API (`POST /messages`) and hands back its answer as a chat completion — whole, or as chat chunks
// event by event — so everything above it (recovery, relay, sessions, usage) is unchanged. What chat
// messages cannot say (thinking signatures, cache_control, documents) travels on the messages as
// `ctxgate_anthropic` — the original blocks and the content they were bridged to — and is sent as it
// came when the message reached here unchanged.
import { withPortableCallIds, type CallIdSlots } from './tool-call-ids.js';
import { StringDecoder } from 'node:string_decoder';
import {
  withTranslatedStream,
  withWholeBody,
  type Upstream,
  type UpstreamRequest,
  type UpstreamResponse,
} from './upstream.js';
import { chatChunkEvent, jsonEventsOf, SseDecoder } from './sse.js';
import { fileNameOf } from './tool-media.js';
import { base64DataUrl } from '../context/file-tokens.js';
import { isGatewayThinking } from './carried-state.js';
import { withinCacheBreakpoints } from './cache-breakpoints.js';
import { isRecord } from './tool-call-shape.js';
import { blocksAsTaken, type BlockTypes } from './block-stand-ins.js';
import { anthropicOutputFormat } from './output-format.js';

/** The Anthropic API version sent when the client named none. */
export const defaultAnthropicVersion = '2023-06-01';

/** What a bridged message carries for an Anthropic upstream: its blocks, and the content made of them. */
export interface AnthropicExtension {
  blocks: unknown[];
  /** The chat content (and tool calls) the blocks were bridged to: the blocks go only while these are unchanged. */
  made: string;
}

type Json = Record<string, unknown>;

export function madeKey(message: Json): string {
  return JSON.stringify([message.content ?? null, message.tool_calls ?? null]);
}

/**
 * The extension of a message the bridge made of `blocks`, its `made` written out only when it is read:
 * when the message is stored in a session (its JSON, toJSON), or when the engine sent a copy of it and
 * the copy is compared. A message sent as the bridge made it (bridgedMessages) is never compared, and a
 * conversation of 250 KB is not serialized a second time for every request (1.2 ms on Node 20). The
 * message is the bridge's, which nothing changes: the engine makes a new one for what it changes.
 */
export class BridgedExtension implements AnthropicExtension {
  readonly #message: Json;
  #made: string | undefined;

  constructor(
    message: Json,
    readonly blocks: unknown[],
  ) {
    this.#message = message;
  }

  get made(): string {
    this.#made ??= madeKey(this.#message);
    return this.#made;
  }

  /** As a session stores it: the blocks and what they were bridged to. */
  toJSON(): AnthropicExtension {
    return { blocks: this.blocks, made: this.made };
  }
}

/**
 * Messages as a Chat Completions upstream takes them: without the Anthropic blocks a message carries
 * (`ctxgate_anthropic`: a Messages client's own, a session's copy of Claude's answer), which no other
 * provider reads and OpenAI refuses ("Additional properties are not allowed ('ctxgate_anthropic' was
 * unexpected)"), and — where they hold Claude's signed thinking — without that thinking, which is
 * Claude's alone (the Messages bridge drops it so). The same array when no message carries blocks.
 */
export function withoutAnthropicBlocks<T extends Json>(messages: T[]): T[] {
  if (!messages.some((message) => message.ctxgate_anthropic !== undefined)) return messages;
  return messages.map((message) => {
    const extension = message.ctxgate_anthropic as AnthropicExtension | undefined;
    if (extension === undefined) return message;
    const { ctxgate_anthropic: _blocks, ...rest } = message;
    const claudes = (extension.blocks as Json[]).some(
      (block) => block?.type === 'thinking' && !isGatewayThinking(block),
    );
    if (claudes) {
      delete rest.reasoning_content;
      delete rest.reasoning;
    }
    return rest as T;
  });
}

/**
 * On a chat request bridged from a Messages request: the messages as the bridge made them. While the
 * engine leaves one as it is (the same object; it makes a new one for what it changes), its blocks go
 * without its content written out again to compare with `made` (what a message stored and read back,
 * or changed, is checked against). A symbol key: never written out, carried by spreads and
 * Object.assign.
 */
export const bridgedMessages = Symbol('ctxgate.anthropic.bridgedMessages');

/**
 * The max_tokens a Messages client asked for, on the fields its request carries to Anthropic
 * (`ctxgate_anthropic`): a symbol, not enumerable, so never written out nor compared.
 */
export const askedMaxTokens = Symbol('ctxgate.anthropic.askedMaxTokens');

/** How Claude Code's billing attribution starts. */
const billingLine = 'x-anthropic-billing-header:';

/**
 * Claude Code's billing attribution, the first text of its system prompt (`x-anthropic-billing-header:
 * cc_version=2.1.332.857; cc_entrypoint=cli;`, and `cch=` where it attests): Anthropic's to read, noise to
 * any other model, and a line that changes with each conversation's first message and each sub-agent's
 * (with `cch`, each request) at the very start of the prompt — where it kept a Chat Completions provider
 * from reusing its prefix cache for the instructions and tools after it; Bedrock and GitHub Copilot's
 * Messages endpoint refuse it (ConversationFixes noBillingAttribution). Left out of a bridged request's
 * system prompt, and of one to such an upstream: the text without that line (nothing, when the text was
 * the line alone).
 */
export function withoutBillingAttribution(text: string): string[] {
  if (!text.startsWith(billingLine)) return [text];
  const end = text.indexOf('\n');
  const rest = end === -1 ? '' : text.slice(end + 1).replace(/^\n+/, '');
  return rest === '' ? [] : [rest];
}

/** `blocks` with the billing attribution left out of their texts (withoutBillingAttribution). */
function withoutBillingBlocks(blocks: Json[]): Json[] {
  if (!blocks.some((block) => typeof block.text === 'string' && block.text.startsWith(billingLine)))
    return blocks;
  return blocks.flatMap((block) =>
    typeof block.text === 'string' && block.text.startsWith(billingLine)
      ? withoutBillingAttribution(block.text).map((text) => Object.assign({}, block, { text }))
      : [block],
  );
}

/** What an `anthropic` upstream refused of a conversation, as its learned fixes say (field-fixes.ts). */
export interface ConversationFixes {
  /** The block types it takes: each other block is told as text where it stood (block-stand-ins.ts). */
  blockTypes?: BlockTypes;
  /** It takes no system message in the conversation: each is sent as user text where it stood. */
  noSystemMessages?: true;
  /** Members of a cache breakpoint's mark it refused (`ttl`, `scope`), which no mark is sent with. */
  cacheMembers?: ReadonlySet<string>;
  /** Members of a block it refused, by the block's type (a tool call's `caller`), which no block is sent with. */
  blockMembers?: ReadonlyMap<string, ReadonlySet<string>>;
  /** It refuses Claude Code's billing attribution in the system prompt: the line is left out there. */
  noBillingAttribution?: true;
  /**
   * It refused thinking it did not sign (another model's, in the conversation): the thinking blocks of
   * every assistant message are left out but — `earlier` — those of a tool loop's call being answered, or
   * — `all` — those too, with thinking off when they went (withoutForeignThinking).
   */
  foreignThinking?: ForeignThinkingStep;
}

/**
 * How far thinking another model signed is left out after a refusal of it: `earlier`, all but the
 * thinking of the tool loop being answered; `all`, all of it (to Claude, thinking then off).
 */
export type ForeignThinkingStep = 'earlier' | 'all';

/**
 * `blocks` without the members the upstream refused of blocks of their type (ConversationFixes
 * blockMembers): a block changed is a copy; the same array when none is.
 */
function withoutRefusedMembers(blocks: Json[], refused: ReadonlyMap<string, ReadonlySet<string>>): Json[] {
  let out: Json[] | undefined;
  blocks.forEach((block, index) => {
    const members = refused.get(block.type as string);
    if (members === undefined) return;
    let copy: Json | undefined;
    for (const member of members)
      if (block[member] !== undefined) delete (copy ??= Object.assign({}, block))[member];
    if (copy !== undefined) (out ??= blocks.slice())[index] = copy;
  });
  return out ?? blocks;
}

/**
 * On a chat request bound for an `anthropic` upstream: its ConversationFixes. A symbol, never written out,
 * carried by Object.assign.
 */
export const conversationFixes = Symbol('ctxgate.anthropic.conversationFixes');

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => {
      const record = part as Json | null;
      if (typeof record?.text === 'string') return record.text;
      if (typeof record?.refusal === 'string') return record.refusal;
      return '';
    })
    .join('');
};

/** A chat content part as an Anthropic block (text, images and files; anything else as its text). */
function blockOfPart(part: unknown): Json | undefined {
  const record = part as Json | null;
  if (record === null || typeof record !== 'object') return undefined;
  if (record.type === 'text' && typeof record.text === 'string')
    return isBlank(record.text) ? undefined : { type: 'text', text: record.text };
  if (record.type === 'image_url') {
    const url = (record.image_url as { url?: unknown } | undefined)?.url;
    if (typeof url !== 'string') return undefined;
    const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
    return data === null
      ? { type: 'image', source: { type: 'url', url } }
      : { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
  }
  if (record.type === 'file') return documentOf(record);
  const text = textOf([record]);
  return text === '' ? undefined : { type: 'text', text };
}

/** A media type of text: `text/*`, and JSON, XML and YAML. */
const isTextMedia = (mediaType: string): boolean =>
  mediaType.startsWith('text/') || /^application\/(?:json|xml|(?:x-)?yaml)$/.test(mediaType);

/**
 * A chat file part (OpenAI's: a PDF's data URL and its name) as an Anthropic document block: a PDF as
 * base64, a text file as text. Anything else — a file by id, another type — is named, as Anthropic
 * cannot be sent it.
 */
function documentOf(part: Json): Json {
  const file = part.file as Json | undefined;
  const titled = typeof file?.filename === 'string' ? { title: file.filename } : {};
  const url = typeof file?.file_data === 'string' ? base64DataUrl(file.file_data) : undefined;
  if (url?.mediaType === 'application/pdf')
    return {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: url.base64 },
      ...titled,
    };
  // A text file of any kind (HTML, code, JSON) as the plain text Anthropic takes: it refuses another
  // media type ("…document.source.base64.media_type: Input should be 'application/pdf'",
  // danny-avila/LibreChat#16054).
  if (url !== undefined && isTextMedia(url.mediaType))
    return {
      type: 'document',
      source: {
        type: 'text',
        media_type: 'text/plain',
        data: Buffer.from(url.base64, 'base64').toString('utf8'),
      },
      ...titled,
    };
  return {
    type: 'text',
    text: `[file ${fileNameOf(part)}: not sent, Anthropic takes PDFs and text files sent as data]`,
  };
}

/**
 * Text of nothing or only whitespace: Anthropic refuses such a text block ("messages: text content blocks
 * must contain non-whitespace text"), which chat clients write — a tool-calling turn's "\n\n", an empty
 * user line — and every later request of the conversation would be refused the same. Left out; a message
 * left with no block is no message (its neighbours of one role join).
 */
const isBlank = (text: string): boolean => text.trim() === '';

function blocksOfContent(content: unknown): Json[] {
  if (typeof content === 'string') return isBlank(content) ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  return content.map(blockOfPart).filter((block): block is Json => block !== undefined);
}

/** The messages of `chat` as the bridge made them, when it was bridged (bridgedMessages). */
type Bridged = WeakSet<object> | undefined;

/** What an extension was last checked against: the content and tool calls of the message then, and the answer. */
interface MadeCheck {
  content: unknown;
  toolCalls: unknown;
  same: boolean;
}

/**
 * Where an extension keeps its last MadeCheck: not enumerable, so never written out. On the extension,
 * not the message: a session's held system prompt is frozen, its extension is not; a copy of a message
 * shares its extension, and is checked again once its content is not the one checked.
 */
const madeCheck = Symbol('ctxgate.anthropic.madeCheck');

const extensionOf = (message: Json, bridged: Bridged): AnthropicExtension | undefined => {
  const extension = message.ctxgate_anthropic as AnthropicExtension | undefined;
  if (extension === undefined) return undefined;
  if (bridged?.has(message) === true) return extension;
  // A session's stored messages are the same objects from one request to the next (the store's cache
  // of them), and nothing changes one in place: checked once, not written out again for every request.
  const checked = (extension as { [madeCheck]?: MadeCheck })[madeCheck];
  if (
    checked !== undefined &&
    checked.content === message.content &&
    checked.toolCalls === message.tool_calls
  )
    return checked.same ? extension : undefined;
  const same = extension.made === madeKey(message);
  if (Object.isExtensible(extension))
    Object.defineProperty(extension, madeCheck, {
      value: { content: message.content, toolCalls: message.tool_calls, same } satisfies MadeCheck,
      configurable: true,
      writable: true,
    });
  return same ? extension : undefined;
};

/** A tool call's JSON arguments as a tool_use input: an object, `{}` for anything else. */
export function toolInputOf(argumentsText: unknown): Json {
  if (typeof argumentsText !== 'string' || argumentsText === '') return {};
  try {
    const input: unknown = JSON.parse(argumentsText);
    return typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Json) : {};
  } catch {
    return {};
  }
}

function assistantBlocks(message: Json, bridged: Bridged): Json[] {
  const kept = extensionOf(message, bridged);
  if (kept !== undefined) return kept.blocks as Json[];
  const blocks = blocksOfContent(message.content);
  for (const call of (message.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function ?? {}) as { name?: unknown; arguments?: unknown };
    blocks.push({ type: 'tool_use', id: call.id, name: fn.name, input: toolInputOf(fn.arguments) });
  }
  return blocks;
}

function toolResultBlock(message: Json, bridged: Bridged): Json {
  const kept = extensionOf(message, bridged);
  if (kept !== undefined) return kept.blocks[0] as Json;
  // Anthropic's tool results take images: a result that holds one (a Responses request's) keeps it.
  const content = message.content;
  const withImage =
    Array.isArray(content) && content.some((part) => (part as Json | null)?.type === 'image_url');
  return {
    type: 'tool_result',
    tool_use_id: message.tool_call_id,
    content: withImage ? blocksOfContent(content) : textOf(content),
  };
}

/** A Messages message as toAnthropicRequest writes it: its blocks in an array of its own. */
interface WireMessage {
  role: 'user' | 'assistant' | 'system';
  content: Json[];
  regroup?: true;
}

/** A member of each block of one type in a message, in order. */
function blockMembers(message: WireMessage, type: string, member: string): unknown[] {
  const values: unknown[] = [];
  for (const block of message.content) if (block.type === type) values.push(block[member]);
  return values;
}

/** The message with the blocks of one type given these members in turn: a copy, the blocks too. */
function withBlocksGiven(message: WireMessage, type: string, member: string, values: readonly unknown[]) {
  let at = 0;
  const content = message.content.map((block) =>
    block.type === type ? Object.assign({}, block, { [member]: values[at++] }) : block,
  );
  return Object.assign({}, message, { content });
}

/** Where Claude's messages hold call ids: an assistant message's tool_use blocks, a user message's tool_result blocks. */
const toolUseSlots: CallIdSlots<WireMessage> = {
  callIds: (message) => (message.role === 'assistant' ? blockMembers(message, 'tool_use', 'id') : undefined),
  resultIds: (message) =>
    message.role === 'user' ? blockMembers(message, 'tool_result', 'tool_use_id') : undefined,
  withCallIds: (message, ids) => withBlocksGiven(message, 'tool_use', 'id', ids),
  withResultIds: (message, ids) => withBlocksGiven(message, 'tool_result', 'tool_use_id', ids),
};

/**
 * The index of the last assistant message when its tool calls are being answered (a tool message follows
 * it): the tool loop whose call, with thinking on, Anthropic takes back only with its thinking; else -1.
 */
export function openToolLoop(messages: readonly Json[]): number {
  const last = messages.findLastIndex((message) => message.role === 'assistant');
  const calls = messages[last]?.tool_calls;
  return Array.isArray(calls) && calls.length > 0 && messages.slice(last + 1).some((m) => m.role === 'tool')
    ? last
    : -1;
}

/**
 * What goes of each assistant message's blocks after a refusal of thinking Claude did not sign
 * (ConversationFixes foreignThinking): all of them when there was none; else without thinking but — at
 * `earlier` — that of the call being answered. `callsThinkingDropped` once that went: Anthropic then takes
 * the answer to the call only with thinking off ("a final `assistant` message must start with a thinking
 * block"), which withThinkingOff makes it.
 */
function thinkingKept(messages: readonly Json[], stage: ForeignThinkingStep | undefined) {
  const loop = stage === undefined ? -1 : openToolLoop(messages);
  const kept = {
    callsThinkingDropped: false,
    blocks(at: number, blocks: Json[]): Json[] {
      if (stage === undefined || (stage === 'earlier' && at === loop)) return blocks;
      const without = withoutThinking(blocks);
      if (at === loop && without !== blocks) kept.callsThinkingDropped = true;
      return without;
    },
  };
  return kept;
}

/**
 * `body` with thinking off: no `thinking`, and no context edit that clears thinking (`clear_thinking_…`),
 * none being left; `context_management` goes when no edit is left.
 */
function withThinkingOff(body: Json): void {
  delete body.thinking;
  const management = body.context_management;
  if (!isRecord(management) || !Array.isArray(management.edits)) return;
  const edits = (management.edits as unknown[]).filter(
    (edit) => !(isRecord(edit) && typeof edit.type === 'string' && edit.type.startsWith('clear_thinking')),
  );
  if (edits.length === management.edits.length) return;
  if (edits.length === 0 && Object.keys(management).length === 1) delete body.context_management;
  else body.context_management = Object.assign({}, management, { edits });
}

/** `blocks` without thinking (and redacted thinking) blocks; the same array when they hold none. */
function withoutThinking(blocks: Json[]): Json[] {
  const isThinking = (block: Json) => block?.type === 'thinking' || block?.type === 'redacted_thinking';
  return blocks.some(isThinking) ? blocks.filter((block) => !isThinking(block)) : blocks;
}

/** A Chat Completions body as the Messages API takes it. */
export function toAnthropicRequest(chat: Json): Json {
  const messages = (chat.messages as Json[] | undefined) ?? [];
  const bridged = (chat as { [bridgedMessages]?: Bridged })[bridgedMessages];
  // The block types the upstream takes, once it refused another: each other told as text.
  const fixed = (chat as { [conversationFixes]?: ConversationFixes })[conversationFixes] ?? {};
  const taken = fixed.blockTypes;
  const refusedMembers = fixed.blockMembers;
  const asTaken = (given: Json[]): Json[] => {
    const blocks = taken === undefined ? given : blocksAsTaken(given, taken);
    return refusedMembers === undefined ? blocks : withoutRefusedMembers(blocks, refusedMembers);
  };
  const systemRefused = fixed.noSystemMessages === true;
  const system: Json[] = [];
  let systemBlocks: unknown[] | undefined;
  // `regroup`: merged from several messages, some with tool results, which go first (below).
  const out: WireMessage[] = [];
  const push = (role: 'user' | 'assistant', given: Json[]): void => {
    const blocks = asTaken(given);
    if (blocks.length === 0) return;
    const last = out.at(-1);
    // Anthropic takes alternating roles: consecutive messages of one role are one message. Blocks are
    // added one by one (as arguments, 150,000 would overflow the stack), and a user message's tool
    // results are put first once, at the end, not again at every tool message (10,000 of them cost
    // half a second that way).
    if (last?.role !== role) {
      out.push({ role, content: blocks.slice() });
      return;
    }
    for (const block of blocks) last.content.push(block);
    if (role === 'user' && blocks.some((block) => block.type === 'tool_result')) last.regroup = true;
  };
  let leading = true;
  const thinking = thinkingKept(messages, fixed.foreignThinking);
  for (let at = 0; at < messages.length; at++) {
    const message = messages[at] as Json;
    const role = message.role;
    if (role === 'system' || role === 'developer') {
      if (leading) {
        const kept = extensionOf(message, bridged);
        const given = kept !== undefined ? asTaken(kept.blocks as Json[]) : blocksOfContent(message.content);
        const blocks = fixed.noBillingAttribution === true ? withoutBillingBlocks(given) : given;
        if (kept !== undefined) {
          systemBlocks ??= [];
          for (const block of blocks) systemBlocks.push(block);
        } else for (const block of blocks) system.push(block);
        continue;
      }
      // The client's own system message after the conversation began (Anthropic's mid-conversation
      // system messages) goes where it stood; any other (a notice placed inline) as user text.
      // An upstream that takes none there (noSystemMessages) is sent its blocks as user text.
      const kept = role === 'system' ? extensionOf(message, bridged) : undefined;
      if (kept !== undefined && !systemRefused)
        out.push({ role: 'system', content: asTaken(kept.blocks as Json[]).slice() });
      else push('user', kept !== undefined ? (kept.blocks as Json[]) : blocksOfContent(message.content));
      continue;
    }
    leading = false;
    if (role === 'assistant') push('assistant', thinking.blocks(at, assistantBlocks(message, bridged)));
    else if (role === 'tool') push('user', [toolResultBlock(message, bridged)]);
    else {
      const kept = extensionOf(message, bridged);
      push('user', kept === undefined ? blocksOfContent(message.content) : (kept.blocks as Json[]));
    }
  }
  // In a user message the tool results come first: a notice placed before them goes after.
  for (const entry of out) {
    if (entry.regroup === undefined) continue;
    entry.content = [
      ...entry.content.filter((block) => block.type === 'tool_result'),
      ...entry.content.filter((block) => block.type !== 'tool_result'),
    ];
    delete entry.regroup;
  }
  // A tool_use id Claude refuses (another provider's: empty, of other characters, given twice) as one it
  // takes, each tool_result following (tool-call-ids.ts).
  const allSystem = [...(systemBlocks ?? []), ...system];
  // Instructions and nothing else (an LLM-as-a-judge prompt, one SystemMessage): they are what the user
  // asks — Claude refuses a request of no message ("messages: at least one message is required").
  const instructionsOnly = out.length === 0 && allSystem.length > 0;
  if (instructionsOnly) out.push({ role: 'user', content: asTaken(allSystem as Json[]) });
  const body: Json = { model: chat.model, messages: withPortableCallIds(out, toolUseSlots) };
  if (allSystem.length > 0 && !instructionsOnly)
    body.system =
      systemBlocks === undefined && system.every((block) => block.type === 'text')
        ? system.map((block) => block.text as string).join('\n\n')
        : allSystem;
  const maxTokens = chat.max_completion_tokens ?? chat.max_tokens;
  body.max_tokens = typeof maxTokens === 'number' ? maxTokens : 4_096;
  const extension = (chat.ctxgate_anthropic ?? {}) as Json;
  writeTools(body, chat, extension);
  // Stop sequences of some text: Claude refuses one of whitespace only, which the gateway holds the answer
  // to itself instead (field-fixes.ts heldStopsOf).
  const stops = (Array.isArray(chat.stop) ? (chat.stop as unknown[]) : [chat.stop]).filter(
    (stop) => typeof stop === 'string' && /\S/.test(stop),
  );
  if (stops.length > 0) body.stop_sequences = stops;
  for (const key of ['temperature', 'top_p', 'stream'] as const)
    if (chat[key] !== undefined && chat[key] !== null) body[key] = chat[key];
  // What the client sent that chat has no word for (thinking, top_k, output_config…), as it came.
  for (const [key, value] of Object.entries(extension))
    if (key !== 'tools' && key !== 'tool_choice' && value !== undefined) body[key] = value;
  if (thinking.callsThinkingDropped) withThinkingOff(body);
  // A chat client's schema for the answer as Claude's structured output (output-format.ts), unless its
  // own Messages request said one.
  const format = anthropicOutputFormat(chat.response_format);
  const config = (body.output_config ?? {}) as Json;
  if (format !== undefined && config.format === undefined)
    body.output_config = Object.assign({}, config, { format });
  if (body.metadata === undefined && typeof chat.user === 'string') body.metadata = { user_id: chat.user };
  // A max_tokens the gateway lowered to what the window leaves (docs/budgeting.md) takes the client's
  // thinking budget down with it.
  const asked = (extension as { [askedMaxTokens]?: number })[askedMaxTokens];
  if (asked !== undefined && (body.max_tokens as number) < asked) {
    const thinking = thinkingWithin(body.thinking, body.max_tokens as number);
    if (thinking === undefined) delete body.thinking;
    else body.thinking = thinking;
  }
  withinCacheBreakpoints(body, fixed.cacheMembers);
  return body;
}

/**
 * `body`'s tools and tool choice: a Messages client's own as it sent them (`extension`), or the chat
 * request's function tools as Anthropic's, its choice (and `parallel_tool_calls: false`) as Anthropic's.
 */
function writeTools(body: Json, chat: Json, extension: Json): void {
  if (Array.isArray(extension.tools)) body.tools = extension.tools;
  else if (Array.isArray(chat.tools) && chat.tools.length > 0)
    body.tools = (chat.tools as Json[]).map((tool) => {
      const fn = (tool.function ?? {}) as Json;
      return {
        name: fn.name,
        ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
        input_schema: fn.parameters ?? { type: 'object', properties: {} },
      };
    });
  if (extension.tool_choice !== undefined) body.tool_choice = extension.tool_choice;
  else if (
    (chat.tool_choice !== undefined || chat.parallel_tool_calls === false) &&
    body.tools !== undefined
  ) {
    const choice = chat.tool_choice;
    const named = (choice as { function?: { name?: unknown } } | null)?.function?.name;
    body.tool_choice =
      choice === 'required'
        ? { type: 'any' }
        : choice === 'none'
          ? { type: 'none' }
          : typeof named === 'string'
            ? { type: 'tool', name: named }
            : { type: 'auto' };
    if (chat.parallel_tool_calls === false) (body.tool_choice as Json).disable_parallel_tool_use = true;
  }
}

/** The least thinking budget Anthropic takes. */
const minThinkingBudget = 1_024;

/**
 * A thinking budget (`thinking: {type: "enabled", budget_tokens}`) under a max_tokens the gateway
 * lowered, as Anthropic requires ("`max_tokens` must be greater than `thinking.budget_tokens`"): one
 * token under it; where no budget of at least 1,024 fits, the answer is asked without thinking. Any other
 * `thinking` (adaptive, disabled, a budget already under) as it came — and so is a budget a client set
 * over its own max_tokens, as interleaved thinking takes one (this is not called then).
 */
function thinkingWithin(thinking: unknown, maxTokens: number): unknown {
  if (
    typeof thinking !== 'object' ||
    thinking === null ||
    (thinking as Json).type !== 'enabled' ||
    typeof (thinking as Json).budget_tokens !== 'number' ||
    ((thinking as Json).budget_tokens as number) < maxTokens
  )
    return thinking;
  return maxTokens > minThinkingBudget
    ? Object.assign({}, thinking, { budget_tokens: maxTokens - 1 })
    : undefined;
}

const finishReasons: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** The stop reasons a chat finish reason gives back as they were (answer.ts): others are carried. */
const sayable = new Set(['end_turn', 'max_tokens', 'tool_use', 'refusal']);

/**
 * How Claude's answer stopped, when chat has no word for it — `pause_turn` (a server tool's turn to go
 * on), `compaction`, `model_context_window_exceeded`, a `stop_sequence` and the one that matched: carried
 * beside the finish reason (`ctxgate_anthropic_stop`) for a Messages client; undefined otherwise.
 */
function unsaidStop(reason: unknown, sequence: unknown): Json | undefined {
  if (typeof reason !== 'string' || (sayable.has(reason) && typeof sequence !== 'string')) return undefined;
  return { stop_reason: reason, stop_sequence: typeof sequence === 'string' ? sequence : null };
}

interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/** Chat usage of an Anthropic usage: the prompt is every input token, cached or not. */
function chatUsage(usage: AnthropicUsage): Json {
  const cached = usage.cache_read_input_tokens ?? 0;
  const prompt = (usage.input_tokens ?? 0) + cached + (usage.cache_creation_input_tokens ?? 0);
  const completion = usage.output_tokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
    ctxgate_anthropic: usage,
  };
}

/** An Anthropic message as a chat completion; its blocks kept on the reply for a Messages client. */
export function fromAnthropicMessage(message: Json): Json {
  const blocks = Array.isArray(message.content) ? (message.content as Json[]) : [];
  const text = blocks
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('');
  const reasoning = blocks
    .filter((block) => block.type === 'thinking')
    .map((block) => block.thinking)
    .join('');
  const calls = blocks
    .filter((block) => block.type === 'tool_use')
    .map((block) => ({
      id: block.id,
      type: 'function',
      function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
    }));
  const reply: Json = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text };
  if (calls.length > 0) reply.tool_calls = calls;
  if (reasoning !== '') reply.reasoning_content = reasoning;
  reply.ctxgate_anthropic = { blocks, made: madeKey(reply) } satisfies AnthropicExtension;
  const stop = typeof message.stop_reason === 'string' ? message.stop_reason : 'end_turn';
  const choice: Json = {
    index: 0,
    message: reply,
    finish_reason: finishReasons[stop] ?? 'stop',
    logprobs: null,
  };
  const unsaid = unsaidStop(message.stop_reason, message.stop_sequence);
  if (unsaid !== undefined) choice.ctxgate_anthropic_stop = unsaid;
  return {
    id: message.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: message.model,
    choices: [choice],
    usage: chatUsage((message.usage ?? {}) as AnthropicUsage),
  };
}

/**
 * Anthropic's stream events as chat chunks, one for one as they arrive. A block chat has no word for (a
 * server tool's use and result, a compaction, redacted thinking) and a delta of one (a text's citations)
 * go as the event they are (`ctxgate_anthropic_event`), which a Messages client is given as it came
 * (answer.ts), as is a stop chat cannot say (unsaidStop).
 */
export class AnthropicToChatStream {
  private readonly utf8 = new StringDecoder('utf8');
  private readonly sse = new SseDecoder();
  private id = '';
  private model = '';
  private usage: AnthropicUsage = {};
  /** Block index → tool call index, for tool_use blocks. */
  private readonly calls = new Map<number, number>();
  private readonly blocks = new Map<number, Json>();
  private stopReason: string | undefined;
  private stopSequence: unknown;
  /** Blocks chat has no word for, by index: their events go as they came. */
  private readonly unsaid = new Set<number>();
  /** The JSON of a block's input as its deltas give it (a tool's or a server tool's use), by index. */
  private readonly inputs = new Map<number, string>();

  private chunk(delta: Json, finish: string | null = null): string {
    return chatChunkEvent(this.id, 0, this.model, [{ index: 0, delta, finish_reason: finish }]);
  }

  push(bytes: Buffer | string): string {
    const text = typeof bytes === 'string' ? bytes : this.utf8.write(bytes);
    let out = '';
    for (const event of jsonEventsOf(this.sse, text)) out += this.translate(event);
    return out;
  }

  /**
   * The answer's blocks as Claude gave them, when its chat form would not give them back (signed or
   * redacted thinking, a block chat has no word for, a text's citations): what a session stores of it
   * (reply-assembler.ts), carried at the end of the stream (`ctxgate_anthropic_blocks`); undefined when the
   * chat form says it all.
   */
  private answerBlocks(): Json[] | undefined {
    // In the order their starts came, which is their index order.
    const blocks = [...this.blocks.entries()];
    const needed = blocks.some(
      ([index, block]) =>
        this.unsaid.has(index) || block.type === 'thinking' || Array.isArray(block.citations),
    );
    if (!needed) return undefined;
    return blocks.map(([index, block]) => {
      const json = this.inputs.get(index);
      if (json === undefined || json === '') return block;
      try {
        return Object.assign({}, block, { input: JSON.parse(json) as unknown });
      } catch {
        return block;
      }
    });
  }

  private translate(event: Json): string {
    switch (event.type) {
      case 'message_start': {
        const message = (event.message ?? {}) as Json;
        this.id = String(message.id ?? '');
        this.model = String(message.model ?? '');
        this.usage = { ...((message.usage ?? {}) as AnthropicUsage) };
        return this.chunk({ role: 'assistant', content: '' });
      }
      case 'content_block_start': {
        const index = Number(event.index ?? 0);
        const block = { ...((event.content_block ?? {}) as Json) };
        this.blocks.set(index, block);
        if (block.input !== undefined) this.inputs.set(index, '');
        if (block.type !== 'tool_use' && block.type !== 'text' && block.type !== 'thinking') {
          this.unsaid.add(index);
          return this.chunk({ ctxgate_anthropic_event: event });
        }
        if (block.type !== 'tool_use') return '';
        const call = this.calls.size;
        this.calls.set(index, call);
        return this.chunk({
          tool_calls: [
            { index: call, id: block.id, type: 'function', function: { name: block.name, arguments: '' } },
          ],
        });
      }
      case 'content_block_delta': {
        const index = Number(event.index ?? 0);
        const delta = (event.delta ?? {}) as Json;
        const block = this.blocks.get(index);
        if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string')
          this.inputs.set(index, (this.inputs.get(index) ?? '') + delta.partial_json);
        if (this.unsaid.has(index) || delta.type === 'citations_delta') {
          if (block !== undefined) addUnsaidDelta(block, delta);
          return this.chunk({ ctxgate_anthropic_event: event });
        }
        if (delta.type === 'text_delta' && typeof delta.text === 'string') {
          if (block !== undefined) block.text = String(block.text ?? '') + delta.text;
          return this.chunk({ content: delta.text });
        }
        if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          return this.chunk({
            tool_calls: [{ index: this.calls.get(index) ?? 0, function: { arguments: delta.partial_json } }],
          });
        }
        if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') {
          if (block !== undefined) block.thinking = String(block.thinking ?? '') + delta.thinking;
          return this.chunk({ reasoning_content: delta.thinking });
        }
        if (delta.type === 'signature_delta' && typeof delta.signature === 'string') {
          if (block !== undefined) block.signature = String(block.signature ?? '') + delta.signature;
          return this.chunk({ ctxgate_anthropic_signature: delta.signature, ctxgate_anthropic_block: index });
        }
        return '';
      }
      case 'content_block_stop': {
        const index = Number(event.index ?? 0);
        if (this.unsaid.has(index)) return this.chunk({ ctxgate_anthropic_event: event });
        // A call whose input came whole in its start and no delta after (Anthropic-compatible endpoints
        // that do not stream it: yannikzz/narracat-novel-agent#16): that input is its arguments.
        const block = this.blocks.get(index);
        const call = this.calls.get(index);
        if (call === undefined || this.inputs.get(index) !== '' || !isRecord(block?.input)) return '';
        if (Object.keys(block.input).length === 0) return '';
        return this.chunk({
          tool_calls: [{ index: call, function: { arguments: JSON.stringify(block.input) } }],
        });
      }
      case 'message_delta': {
        const delta = (event.delta ?? {}) as Json;
        if (typeof delta.stop_reason === 'string') this.stopReason = delta.stop_reason;
        if (delta.stop_sequence !== undefined) this.stopSequence = delta.stop_sequence;
        Object.assign(this.usage, (event.usage ?? {}) as AnthropicUsage);
        return '';
      }
      case 'message_stop': {
        const finish = finishReasons[this.stopReason ?? 'end_turn'] ?? 'stop';
        const last = {
          id: this.id,
          object: 'chat.completion.chunk',
          created: 0,
          model: this.model,
          choices: [],
          usage: chatUsage(this.usage),
        };
        const unsaid = unsaidStop(this.stopReason, this.stopSequence);
        const delta: Json = unsaid === undefined ? {} : { ctxgate_anthropic_stop: unsaid };
        const blocks = this.answerBlocks();
        if (blocks !== undefined) delta.ctxgate_anthropic_blocks = blocks;
        return `${this.chunk(delta, finish)}data: ${JSON.stringify(last)}\n\ndata: [DONE]\n\n`;
      }
      case 'error': {
        const error = (event.error ?? {}) as Json;
        return `data: ${JSON.stringify({ error: { message: error.message ?? '', type: error.type ?? 'api_error', code: error.type ?? null } })}\n\n`;
      }
      default:
        return '';
    }
  }
}

/** A delta of a block chat has no word for, added to the block: a compaction's summary, a text's citations. */
function addUnsaidDelta(block: Json, delta: Json): void {
  if (delta.type === 'compaction_delta') {
    block.content = delta.content;
    if (delta.encrypted_content !== undefined) block.encrypted_content = delta.encrypted_content;
  } else if (delta.type === 'citations_delta' && delta.citation !== undefined) {
    if (!Array.isArray(block.citations)) block.citations = [];
    (block.citations as unknown[]).push(delta.citation);
  }
}

function isEventStreamHeaders(headers: UpstreamResponse['headers']): boolean {
  const type = headers['content-type'];
  return (Array.isArray(type) ? type.join(',') : (type ?? '')).includes('text/event-stream');
}

/** An Anthropic answer read as the chat answer it stands for. */
function chatResponseOf(response: UpstreamResponse): UpstreamResponse {
  if (response.statusCode !== 200) return response;
  if (!isEventStreamHeaders(response.headers)) {
    const translate = (body: Buffer): Buffer => {
      try {
        return Buffer.from(JSON.stringify(fromAnthropicMessage(JSON.parse(body.toString('utf8')) as Json)));
      } catch {
        return body;
      }
    };
    return withWholeBody(response, translate);
  }
  return withTranslatedStream(response, () => new AnthropicToChatStream());
}

/** Upstream headers as Anthropic takes them: the key as `x-api-key`, an `anthropic-version`. */
export function anthropicHeaders(
  upstreamHeaders: Record<string, string>,
  upstream: UpstreamRequest['upstream'],
): Record<string, string> {
  const headers: Record<string, string> = Object.assign({}, upstreamHeaders);
  if (upstream.apiKey !== undefined) {
    delete headers.authorization;
    headers['x-api-key'] = upstream.apiKey;
  } else if (headers['x-api-key'] === undefined && headers.authorization !== undefined) {
    // A client key sent as a bearer token reaches Anthropic as its own header.
    const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization)?.[1];
    if (bearer !== undefined) {
      headers['x-api-key'] = bearer;
      delete headers.authorization;
    }
  }
  headers['anthropic-version'] ??= defaultAnthropicVersion;
  return headers;
}

/** A chat body (bytes or text) as a Messages body: parsed, translated and written again. */
function messagesBodyOf(body: UpstreamRequest['body']): string {
  const text = typeof body === 'string' || Buffer.isBuffer(body) ? body.toString() : '{}';
  return JSON.stringify(toAnthropicRequest(JSON.parse(text) as Json));
}

/**
 * The Upstream port with `anthropic` upstreams spoken to in their own wire format: a chat completion
 * request to one goes to `/messages`, its key as `x-api-key`, and its answer comes back as chat.
 */
export function withAnthropicUpstreams(inner: Upstream): Upstream {
  return {
    close: () => inner.close(),
    // Not async: every other request is the inner port's own promise, with no extra one around it.
    send(request: UpstreamRequest): Promise<UpstreamResponse> {
      if (request.upstream.kind !== 'anthropic' || request.path !== '/chat/completions')
        return inner.send(request);
      return sendAsChat(request);
    },
  };

  async function sendAsChat(request: UpstreamRequest): Promise<UpstreamResponse> {
    const response = await inner.send(
      Object.assign({}, request, {
        path: '/messages',
        headers: anthropicHeaders(request.headers, request.upstream),
        body: request.wire === 'anthropic' ? request.body : messagesBodyOf(request.body),
      }),
    );
    return chatResponseOf(response);
  }
}
