// Anthropic's Messages API onto the chat engine (docs/anthropic.md): a Messages request becomes the chat
// request it stands for — system prompt, turns, tool_use ↔ tool_calls, tool_result ↔ tool messages,
// tools and tool_choice, sampling — so the same engine fits, sends, recovers and stores it. For an
// `anthropic` upstream every message also carries its original blocks (`ctxgate_anthropic`), sent as
// they came while the engine left the message unchanged (thinking signatures, cache_control and
// documents survive); for any other upstream what chat cannot carry is dropped and named. A conversation
// Claude compacted is read as Claude reads it: from its last `compaction` summary on.
import { createHash } from 'node:crypto';
import { tooManyMessages } from '../chat/chat-request-schema.js';
import type { BridgedSources, StringSource } from '../chat/chat-body.js';
import type { JsonPath } from '../json-paths.js';
import { GatewayError } from '../errors.js';
import {
  compactedHistory,
  compactionRequest,
  isCarrier,
  isGatewayThinking,
  readCarrier,
} from '../upstream/carried-state.js';
import {
  askedMaxTokens,
  BridgedExtension,
  bridgedMessages,
  withoutBillingAttribution,
} from '../upstream/anthropic-wire.js';
import { outputCapField } from '../upstream/model-family.js';
import { clientToolOf } from './client-tools.js';
import { chatReasoningEffort, chatResponseFormat } from '../upstream/output-format.js';

type Json = Record<string, unknown>;

export interface BridgedMessages {
  /** The chat completion request the engine runs. */
  chatBody: Json;
  /** What could not be carried to a Chat Completions upstream (X-Ctxgate-Dropped). */
  dropped: string[];
  model: string;
  stream: boolean;
  /** Bridged for an `anthropic` upstream (original blocks carried). */
  native: boolean;
  /** The message of the request each chat message was made from, and where its content stands in it (chat-body.ts). */
  sources: BridgedSources;
  /**
   * Bridged, the request asks for a compaction (`compaction: {"type": "summarize"}`): the model is asked
   * for a summary of the conversation, whole and with no tool called, and it is answered as one
   * `compaction` block (answer.ts compactionMessageOf), whole or as the stream the client asked for.
   */
  compaction?: true;
  /**
   * When a tool is deferred (tool search) and Claude's search is not offered to a Chat Completions model:
   * the tools the messages reference, in order — with the client's `tools`, what names the chat tools
   * (toolsKeyOf).
   */
  referencedTools?: string[];
}

const invalid = (message: string, param: string): GatewayError =>
  new GatewayError('invalid_request', message, { param });

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Blocks of a content that is a string or an array of blocks; anything else is a 400 naming it. */
function blocksOf(content: unknown, param: string): Json[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalid(`${param}: Input should be a valid string or list`, param);
  return content.map((block, index) => {
    if (!isObject(block) || typeof block.type !== 'string')
      throw invalid(`${param}.${index}: Input should be an object with a type`, `${param}.${index}`);
    if (block.type === 'text' && typeof block.text !== 'string')
      throw invalid(`${param}.${index}.text: Field required`, `${param}.${index}.text`);
    return block;
  });
}

/**
 * A text block of nothing or only whitespace, which Anthropic refuses ("messages: text content blocks must
 * contain non-whitespace text"): Claude Code has sent them (anthropics/claude-code#23369, #59812), and
 * every later request of its conversation was refused the same. Not sent to an `anthropic` upstream.
 */
function isBlankText(block: Json): boolean {
  return block.type === 'text' && typeof block.text === 'string' && block.text.trim() === '';
}

/** The text of a content that is a string or blocks: its text blocks' text, a line each. */
function blocksText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((block: unknown) => isObject(block) && block.type === 'text' && typeof block.text === 'string')
    .map((block: Json) => block.text as string)
    .join('\n');
}

/**
 * A `compaction` block that holds a summary: Claude's compaction (server-side `compact_20260112`, or on
 * demand), which it reads in place of every block before it. One of no summary (`content: null`: the
 * compaction failed) is a no-op to Claude.
 */
function isSummary(block: unknown): block is Json & { content: string } {
  return (
    isObject(block) &&
    block.type === 'compaction' &&
    typeof block.content === 'string' &&
    block.content !== ''
  );
}

/**
 * Where Claude starts reading a conversation: the last compaction block with a summary, as [message,
 * block]; undefined when there is none.
 */
function compactionStart(messages: readonly unknown[]): [number, number] | undefined {
  for (let at = messages.length - 1; at >= 0; at--) {
    const content = (messages[at] as Json | null)?.content;
    if (!Array.isArray(content)) continue;
    for (let block = content.length - 1; block >= 0; block--)
      if (isSummary(content[block])) return [at, block];
  }
  return undefined;
}

/** The tool set's changes of a conversation (mid-conversation tool changes), as in effect at its end. */
interface ToolChanges {
  /** Tools defined by value (a `tool_definition`), by name: each replaces any earlier one of its name. */
  defined: Map<string, Json>;
  /** Tools added by reference: a deferred tool surfaced. */
  surfaced: Set<string>;
  removed: Set<string>;
}

const isToolChange = (block: Json): boolean =>
  block.type === 'tool_addition' || block.type === 'tool_removal';

/** One `tool_addition` or `tool_removal` block, applied to the changes so far. */
function applyToolChange(block: unknown, changes: ToolChanges): void {
  if (!isObject(block) || !isObject(block.tool)) return;
  const { tool } = block;
  const definition =
    tool.type === 'tool_definition' && isObject(tool.definition) ? tool.definition : undefined;
  const name = tool.type === 'tool_reference' ? tool.name : definition?.name;
  if (typeof name !== 'string') return;
  if (block.type === 'tool_removal') {
    changes.removed.add(name);
    changes.surfaced.delete(name);
    changes.defined.delete(name);
  } else if (block.type === 'tool_addition') {
    changes.removed.delete(name);
    if (definition !== undefined) changes.defined.set(name, definition);
    else changes.surfaced.add(name);
  }
}

/**
 * The tool changes of the conversation Claude reads (mid-conversation tool changes: the `tool_addition`
 * and `tool_removal` blocks of system messages, from that point on): a compaction's first — those of the
 * range it summarized, its `tool_changes` — then each system message's, in order; undefined when there
 * are none.
 */
function toolChangesOf(
  messages: readonly unknown[],
  start: [number, number] | undefined,
): ToolChanges | undefined {
  let changes: ToolChanges | undefined;
  const apply = (blocks: unknown): void => {
    if (!Array.isArray(blocks)) return;
    for (const block of blocks)
      if (isObject(block) && isToolChange(block))
        applyToolChange(block, (changes ??= { defined: new Map(), surfaced: new Set(), removed: new Set() }));
  };
  if (start !== undefined) apply(((messages[start[0]] as Json).content as Json[])[start[1]]?.tool_changes);
  for (let at = start?.[0] ?? 0; at < messages.length; at++) {
    const message = messages[at];
    if (isObject(message) && message.role === 'system') apply(message.content);
  }
  return changes;
}

/**
 * A block as a chat content part: text, an image, a PDF, a text document, and a document of content blocks
 * or a search result as its text; undefined for what chat cannot carry.
 */
function partOf(block: Json): Json | undefined {
  if (block.type === 'text') return { type: 'text', text: block.text };
  // Natively only (a summary in a user message, counted as Claude reads it); bridged it is a message of its own.
  if (isSummary(block)) return { type: 'text', text: block.content };
  if (block.type === 'image' && isObject(block.source)) {
    const source = block.source;
    if (source.type === 'base64' && typeof source.data === 'string')
      return {
        type: 'image_url',
        image_url: { url: `data:${String(source.media_type)};base64,${source.data}` },
      };
    if (source.type === 'url' && typeof source.url === 'string')
      return { type: 'image_url', image_url: { url: source.url } };
  }
  if (block.type === 'document' && isObject(block.source) && block.source.type === 'text')
    return { type: 'text', text: String(block.source.data ?? '') };
  // Text a client gives with its origin, for citations: a search result (RAG), a document of content
  // blocks — its title (and source) first, then its text blocks' text.
  if (
    block.type === 'search_result' ||
    (block.type === 'document' && isObject(block.source) && block.source.type === 'content')
  ) {
    const content = block.type === 'search_result' ? block.content : (block.source as Json).content;
    const heading =
      typeof block.title === 'string' && block.title !== ''
        ? typeof block.source === 'string'
          ? `${block.title} (${block.source})`
          : block.title
        : undefined;
    const texts = blocksText(content);
    return { type: 'text', text: heading === undefined ? texts : `${heading}\n${texts}` };
  }
  // A PDF (Claude Code's @file of one) as OpenAI's file part: its data URL and a name, which OpenAI
  // requires beside the data.
  if (
    block.type === 'document' &&
    isObject(block.source) &&
    block.source.type === 'base64' &&
    block.source.media_type === 'application/pdf' &&
    typeof block.source.data === 'string'
  )
    return {
      type: 'file',
      file: {
        filename: typeof block.title === 'string' && block.title !== '' ? block.title : 'document.pdf',
        file_data: `data:application/pdf;base64,${block.source.data}`,
      },
    };
  return undefined;
}

/**
 * A tool result's content as a tool message's: a string as it is, text blocks as their text, search
 * results as theirs (partOf), a tool search's `tool_reference` as the tool it found (which the model is
 * given among its tools), another block named by its type; with an image among them (Claude Code's Read
 * of a PNG, a screenshot tool), as parts — its texts and its images — which go to a Chat Completions
 * provider as tool-media.ts sends them. An error's text starts with "Error: ".
 */
function toolResultContent(content: unknown, isError: boolean): string | Json[] {
  const blocks = Array.isArray(content) ? (content as unknown[]) : [];
  const parts = blocks.map((block: unknown): Json => {
    const record = block as Json | null;
    // An image, or a PDF (Claude Code's Read of one gives its text line, then the document).
    const part =
      record?.type === 'image' || record?.type === 'document' || record?.type === 'search_result'
        ? partOf(record)
        : undefined;
    if (part !== undefined) return part;
    return {
      type: 'text',
      text:
        record?.type === 'text'
          ? String(record.text ?? '')
          : record?.type === 'tool_reference' && typeof record.tool_name === 'string'
            ? `Tool found: ${record.tool_name}`
            : `[${String(record?.type ?? 'block')}]`,
    };
  });
  const text =
    typeof content === 'string'
      ? content
      : parts.map((part) => (part.type === 'text' ? String(part.text) : '')).join('\n');
  const hasImage = parts.some((part) => part.type !== 'text');
  if (!hasImage) return isError && text !== '' ? `Error: ${text}` : text;
  return isError ? [{ type: 'text', text: 'Error:' }, ...parts] : parts;
}

/**
 * A chat content made of parts, a cache breakpoint among them (BridgeContext cacheMarks): text only, one text
 * part — the text chatContent would give, marked with the last mark — so that the message reads the same as
 * when the client sends it again unmarked (a session lines the two up by their text: reconcile.ts); with
 * an image or a file, the parts as they are. Without a mark, chatContent.
 */
function markedContent(parts: Json[]): string | Json[] {
  const mark = parts.findLast((part) => part.cache_control !== undefined)?.cache_control;
  if (mark === undefined) return chatContent(parts);
  if (!parts.every((part) => part.type === 'text')) return parts;
  return [
    {
      type: 'text',
      text: chatContent(parts.map(({ cache_control: _mark, ...part }) => part)),
      cache_control: mark,
    },
  ];
}

/** A chat content made of parts: a plain string when it is text only (what most templates take). */
function chatContent(parts: Json[]): string | Json[] {
  return parts.every((part) => part.type === 'text') ? parts.map((part) => part.text).join('\n') : parts;
}

function withExtension(message: Json, blocks: unknown[], native: boolean): Json {
  if (native) message.ctxgate_anthropic = new BridgedExtension(message, blocks);
  return message;
}

function functionTool(tool: Json, index: number): Json | undefined {
  if (typeof tool.name !== 'string' || tool.name === '')
    throw invalid(`tools.${index}.name: Field required`, `tools.${index}.name`);
  // Anthropic's client tools (bash, the text editor, memory) have a versioned type and no schema: a
  // function of the schema Claude knows (client-tools.ts). Its server tools (web search, code execution)
  // and computer use: a Chat Completions model cannot run them.
  const client = typeof tool.type === 'string' ? clientToolOf(tool.type) : undefined;
  if (client !== undefined)
    return {
      type: 'function',
      function: { name: tool.name, description: client.description, parameters: client.parameters },
    };
  if (tool.type !== undefined && tool.type !== 'custom') return undefined;
  if (!isObject(tool.input_schema))
    throw invalid(`tools.${index}.input_schema: Field required`, `tools.${index}.input_schema`);
  return {
    type: 'function',
    function: {
      name: tool.name,
      ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
      parameters: tool.input_schema,
    },
  };
}

/**
 * The tools a request's messages reference — a `tool_reference` in a tool result (what a client's own
 * tool search gives, as Claude Code's ToolSearch does) or in a server search's `tool_search_tool_result`,
 * or one a tool change surfaced and none removed since — when any of its tools is deferred
 * (`defer_loading`); undefined when none is.
 */
function referencedTools(body: Json, changes: ToolChanges | undefined): Set<string> | undefined {
  const tools = body.tools;
  if (!Array.isArray(tools) || !tools.some((tool) => isObject(tool) && tool.defer_loading === true))
    return undefined;
  const names = new Set<string>();
  const add = (references: unknown): void => {
    if (!Array.isArray(references)) return;
    for (const reference of references)
      if (
        isObject(reference) &&
        reference.type === 'tool_reference' &&
        typeof reference.tool_name === 'string'
      )
        names.add(reference.tool_name);
  };
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    if (!isObject(message) || !Array.isArray(message.content)) continue;
    for (const block of message.content) {
      if (!isObject(block)) continue;
      if (block.type === 'tool_result') add(block.content);
      else if (block.type === 'tool_search_tool_result' && isObject(block.content))
        add(block.content.tool_references);
    }
  }
  for (const name of changes?.surfaced ?? []) names.add(name);
  for (const name of changes?.removed ?? []) names.delete(name);
  return names;
}

/** Whether the request offers Anthropic's own tool search (`tool_search_tool_regex_…`, `…_bm25_…`). */
function hasServerSearch(body: Json): boolean {
  return (
    Array.isArray(body.tools) &&
    body.tools.some(
      (tool) => isObject(tool) && typeof tool.type === 'string' && tool.type.startsWith('tool_search_tool_'),
    )
  );
}

function chatToolChoice(choice: Json): unknown {
  switch (choice.type) {
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: String(choice.name) } };
    default:
      return 'auto';
  }
}

/** Where a message's blocks are bridged: its field (for errors), the upstream kind, what was dropped. */
interface BridgeContext {
  param: string;
  native: boolean;
  dropped: Set<string>;
  /** The client's cache breakpoints go on the chat content parts they marked (BridgeMessagesOptions). */
  cacheMarks?: boolean;
}

/** A block's cache breakpoint (`cache_control`), or undefined. */
const markOf = (block: Json): Json | undefined =>
  isObject(block.cache_control) ? block.cache_control : undefined;

/** `part` with `block`'s cache breakpoint on it, when there is one to carry. */
function marked(part: Json, block: Json, carry: boolean | undefined): Json {
  const mark = carry === true ? markOf(block) : undefined;
  return mark === undefined ? part : Object.assign({}, part, { cache_control: mark });
}

/**
 * An assistant message's blocks as one chat message: text, tool calls, and — bridged — the thinking a
 * chat provider gave (its reasoning, which the gateway answered as a thinking block with no signature) as
 * `reasoning_content` again, which the service names as the model's answers do (reasoning-field.ts):
 * DeepSeek and Kimi refuse a tool call sent back without it; a thinking block whose signature the gateway
 * wrote gives the message and its calls back what their provider gave to be sent back (Gemini's thought
 * signatures, OpenRouter's reasoning details: answer.ts). Claude's own thinking (signed) goes natively
 * only, and natively only Claude's.
 */
function assistantMessage(blocks: Json[], { param, native, dropped }: BridgeContext): Json {
  const text: string[] = [];
  const calls: Json[] = [];
  let reasoning = '';
  /** What the provider gave to be sent back (carried-state.ts): on calls by id, on the message. */
  let extras: Map<string, Record<string, unknown>> | undefined;
  let carried: Record<string, unknown> | undefined;
  for (const block of blocks) {
    // Natively a summary is counted as the text it is (Claude reads it); bridged it is a message of its own.
    if (block.type === 'text' || (native && isSummary(block))) text.push(String(block.text ?? block.content));
    else if (block.type === 'tool_use') {
      if (typeof block.id !== 'string' || typeof block.name !== 'string')
        throw invalid(`${param}: tool_use needs an id and a name`, param);
      calls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
      });
    } else if (!native) {
      // A chat provider's thinking carries no signature, or one the gateway wrote that holds what the
      // provider attached to the calls; Claude's (signed), like any other block, is dropped.
      if (isGatewayThinking(block)) {
        reasoning += String(block.thinking ?? '');
        if (isCarrier(block.signature)) {
          const state = readCarrier(block.signature);
          for (const [id, extra] of state.calls) (extras ??= new Map()).set(id, extra);
          if (state.message !== undefined) carried = Object.assign(carried ?? {}, state.message);
        }
        // A compaction that failed (no summary) is nothing to Claude: nothing is lost.
      } else if (block.type !== 'compaction') dropped.add(String(block.type));
    }
  }
  if (extras !== undefined)
    for (const call of calls) {
      const extra = extras.get(call.id as string);
      if (extra !== undefined) call.extra_content = extra;
    }
  // To Claude, the thinking blocks the gateway made for another model (a chat model's reasoning, a call's
  // extras) are dropped: Anthropic refuses a signature it did not give ("Invalid `signature` in
  // `thinking` block"), and the conversation goes on there after a fallback or a client's switch.
  const madeForAnother = native && blocks.some(isGatewayThinking);
  if (madeForAnother) dropped.add('thinking');
  const sent =
    madeForAnother || (native && blocks.some(isBlankText))
      ? blocks.filter(
          (block) => !(madeForAnother && isGatewayThinking(block)) && !(native && isBlankText(block)),
        )
      : blocks;
  const message: Json = {
    role: 'assistant',
    content: text.length === 0 && calls.length > 0 ? null : text.join(''),
  };
  if (calls.length > 0) message.tool_calls = calls;
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (carried !== undefined) Object.assign(message, carried);
  return withExtension(message, sent, native);
}

/**
 * A system message in the conversation (Anthropic's mid-conversation system messages: instructions from
 * that point on) as a chat system message where it stands: its text blocks' texts.
 */
function systemMessage(blocks: Json[], { native, dropped }: BridgeContext): Json {
  const text: string[] = [];
  for (const block of blocks)
    if (block.type === 'text') text.push(String(block.text));
    else if (isToolChange(block)) {
      // The tool set's changes: bridged, they make the chat tools (toolsAndFields); natively a tool defined
      // so is counted as its definition, which goes to Claude in the message.
      const tool = block.tool as Json | undefined;
      if (native && tool?.type === 'tool_definition') text.push(JSON.stringify(tool.definition));
    } else if (!native) dropped.add(String(block.type));
  return withExtension({ role: 'system', content: text.join('\n\n') }, blocks, native);
}

/** A user message's blocks as chat messages: its tool results first (each a tool message), then the rest. */
function userMessages(
  content: unknown,
  blocks: Json[],
  { param, native, dropped, cacheMarks }: BridgeContext,
): Json[] {
  const messages: Json[] = [];
  const rest: Json[] = [];
  const restBlocks: Json[] = [];
  for (const block of blocks) {
    if (block.type === 'tool_result') {
      if (typeof block.tool_use_id !== 'string')
        throw invalid(`${param}: tool_result needs a tool_use_id`, param);
      const result = toolResultContent(block.content, block.is_error === true);
      const mark = cacheMarks === true ? markOf(block) : undefined;
      const tool: Json = {
        role: 'tool',
        tool_call_id: block.tool_use_id,
        // Its cache breakpoint on its (last) part.
        content:
          mark === undefined
            ? result
            : typeof result === 'string'
              ? [{ type: 'text', text: result, cache_control: mark }]
              : result.map((part, at) =>
                  at === result.length - 1 ? Object.assign({}, part, { cache_control: mark }) : part,
                ),
      };
      messages.push(withExtension(tool, [block], native));
      continue;
    }
    const part = partOf(block);
    if (part === undefined && !native && block.type !== 'compaction') dropped.add(String(block.type));
    if (part !== undefined) rest.push(marked(part, block, cacheMarks));
    restBlocks.push(block);
  }
  if (restBlocks.length > 0) {
    const message: Json = {
      role: 'user',
      content: typeof content === 'string' ? content : markedContent(rest),
    };
    // Blank text left out of what goes to Anthropic: the message too when it holds nothing else beside
    // tool results; a message of nothing else alone is the client's.
    const sent =
      native && restBlocks.some(isBlankText) ? restBlocks.filter((block) => !isBlankText(block)) : restBlocks;
    if (sent.length > 0 || messages.length === 0)
      messages.push(withExtension(message, sent.length === 0 ? restBlocks : sent, native));
  }
  return messages;
}

/**
 * How many chat messages a Messages request's messages become: each tool_result block one, and the rest
 * of a user message one more; counted before any is made, so that a request of 150,000 tool results is
 * refused for what it is without building them.
 */
function chatMessageCount(messages: readonly unknown[]): number {
  let count = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) {
      count++;
      continue;
    }
    let results = 0;
    for (const block of content) if ((block as { type?: unknown } | null)?.type === 'tool_result') results++;
    count += results + (results < content.length ? 1 : 0);
  }
  return count;
}

/**
 * Where the text a chat message's content was made of stands, when it is one string of `content` (at
 * `path`): `content` itself, or its one text block's text. chat-body.ts copies it only when it is that
 * string still (a message of other blocks is joined, or written as parts, and not copied).
 */
function textPath(content: unknown, path: JsonPath): JsonPath | undefined {
  if (typeof content === 'string') return path;
  if (!Array.isArray(content)) return undefined;
  const texts = content.flatMap((block: unknown, at) =>
    (block as Json | null)?.type === 'text' ? [at] : [],
  );
  return texts.length === 1 ? [...path, texts[0] as number, 'text'] : undefined;
}

/**
 * Where the chat messages made of request message `index` (those of `messages` past `sources`) came
 * from, for chat-body.ts: its index, and where the string each one's content was made of stands in it
 * (textPath). Tool messages follow the order of the tool_result blocks they were made of; the rest is
 * last.
 */
function recordSources(
  sources: { origins: number[]; strings: Array<readonly StringSource[] | undefined> },
  messages: readonly Json[],
  index: number,
  content: unknown,
  blocks: readonly Json[],
): void {
  const results = blocks.flatMap((block, at) => (block.type === 'tool_result' ? [at] : []));
  let result = 0;
  for (let at = sources.origins.length; at < messages.length; at++) {
    sources.origins.push(index);
    const block = messages[at]?.role === 'tool' ? results[result++] : undefined;
    const inElement =
      block === undefined
        ? textPath(content, ['content'])
        : textPath(blocks[block]?.content, ['content', block, 'content']);
    sources.strings.push(inElement === undefined ? undefined : [{ inMessage: ['content'], inElement }]);
  }
}

/**
 * Bridged, the chat tools as the conversation's tool changes leave them (toolChangesOf): a removed one
 * left out, one defined by value given as it was defined last (in place of one of its name), one Claude's
 * own (a server tool, defined so) dropped and named.
 */
function changeTools(tools: Json[], changes: ToolChanges, dropped: Set<string>): void {
  const kept = tools.filter((tool) => {
    const name = (tool.function as Json).name as string;
    return !changes.removed.has(name) && !changes.defined.has(name);
  });
  tools.splice(0, tools.length, ...kept);
  for (const [name, definition] of changes.defined) {
    const mapped = isObject(definition.input_schema) ? functionTool(definition, 0) : undefined;
    if (mapped === undefined) dropped.add(`tool_addition (${name})`);
    else tools.push(mapped);
  }
}

/** The fields of a Messages request the bridge writes in chat terms; the others are carried (or dropped). */
const translated = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stream',
  'temperature',
  'top_p',
  'stop_sequences',
  'tools',
  'tool_choice',
]);

/**
 * The tools, tool_choice and every field the bridge does not translate, into `chatBody` as chat has
 * them; what goes natively as it came is returned (the request's extension). Every other field
 * (`thinking`, `top_k`, `output_config`, `context_management`…) goes to an anthropic upstream as it
 * came; for any other it is dropped and named (metadata's user id is `user`).
 */
function toolsAndFields(
  body: Json,
  chatBody: Json,
  { native, dropped }: { native: boolean; dropped: Set<string> },
  referenced: ReadonlySet<string> | undefined,
  changes: ToolChanges | undefined,
): Json {
  const extension: Json = {};
  if (body.tools !== undefined && !Array.isArray(body.tools))
    throw invalid('tools: Input should be a valid list', 'tools');
  const tools: Json[] = [];
  (body.tools as unknown[] | undefined)?.forEach((tool: unknown, index) => {
    if (!isObject(tool)) throw invalid(`tools.${index}: Input should be an object`, `tools.${index}`);
    const mapped = functionTool(tool, index);
    if (mapped === undefined) {
      if (!native) dropped.add(`tools.${index} (${String(tool.type)})`);
    } else if (tool.defer_loading !== true || referenced?.has(tool.name as string) !== false)
      tools.push(mapped);
  });
  if (changes !== undefined && !native) changeTools(tools, changes, dropped);
  if (tools.length > 0) chatBody.tools = tools;
  if (native && body.tools !== undefined) extension.tools = body.tools;
  if (isObject(body.tool_choice)) {
    if (chatBody.tools !== undefined) chatBody.tool_choice = chatToolChoice(body.tool_choice);
    // With the tools only: OpenAI refuses it with none (a server tool alone, left out).
    if (chatBody.tools !== undefined && body.tool_choice.disable_parallel_tool_use === true)
      chatBody.parallel_tool_calls = false;
    if (native) extension.tool_choice = body.tool_choice;
  }
  if (isObject(body.metadata) && typeof body.metadata.user_id === 'string')
    chatBody.user = endUserId(body.metadata.user_id);
  if (!native) outputConfigAsChat(body, chatBody, dropped);
  for (const [key, value] of Object.entries(body)) {
    // A Thread is not kept (noThreads): what creates one goes as a whole conversation, without `thread`.
    if (translated.has(key) || value === undefined || key === 'thread') continue;
    if (native) extension[key] = value;
    else if (key === 'output_config' || key === 'output_format') continue;
    // A budget goes as the effort (outputConfigAsChat), unless the client named one.
    else if (key === 'thinking' && budgetIsEffort(body)) continue;
    else if (key !== 'metadata' && !(key === 'compaction' && isCompaction(value))) dropped.add(key);
  }
  return extension;
}

/**
 * A Messages request's `output_config` (and the beta's `output_format`) in chat terms, for a Chat
 * Completions model (output-format.ts): its schema for the answer as `response_format`, its effort as
 * `reasoning_effort`; what chat has no word for dropped and named (`output_config.task_budget`).
 */
function outputConfigAsChat(body: Json, chatBody: Json, dropped: Set<string>): void {
  const given = body.output_config;
  if (given !== undefined && !isObject(given)) dropped.add('output_config');
  const config = isObject(given) ? given : {};
  const format = config.format ?? body.output_format;
  if (format !== undefined) {
    const responseFormat = chatResponseFormat(format);
    if (responseFormat !== undefined) chatBody.response_format = responseFormat;
    else dropped.add(config.format === undefined ? 'output_format' : 'output_config.format');
  }
  if (config.effort !== undefined) {
    const effort = chatReasoningEffort(config.effort);
    if (effort !== undefined) chatBody.reasoning_effort = effort;
    else dropped.add('output_config.effort');
  } else {
    const effort = effortOfBudget(body.thinking);
    if (effort !== undefined) chatBody.reasoning_effort = effort;
  }
  for (const key of Object.keys(config))
    if (key !== 'format' && key !== 'effort') dropped.add(`output_config.${key}`);
}

/**
 * A thinking budget (`thinking: {type: "enabled", budget_tokens}`: Claude Code's "think" 4,000, "think
 * hard" 10,000, "ultrathink" 31,999) as a chat model's reasoning effort — under 4,096 tokens `low`, under
 * 16,384 `medium`, more `high`; undefined for none, adaptive thinking (the model's own) and thinking off.
 */
function effortOfBudget(thinking: unknown): string | undefined {
  if (!isObject(thinking) || thinking.type !== 'enabled' || typeof thinking.budget_tokens !== 'number')
    return undefined;
  return thinking.budget_tokens < 4_096 ? 'low' : thinking.budget_tokens < 16_384 ? 'medium' : 'high';
}

/** Whether a Messages request's thinking budget is what its chat request asks as the effort. */
function budgetIsEffort(body: Json): boolean {
  const named = isObject(body.output_config) && body.output_config.effort !== undefined;
  return !named && effortOfBudget(body.thinking) !== undefined;
}

/** A request's `compaction` that asks for one now (Anthropic's on-demand compaction). */
function isCompaction(value: unknown): value is Json {
  return isObject(value) && value.type === 'summarize';
}

/**
 * A chat request asking for a compaction (BridgedMessages.compaction): the request for a summary — the
 * client's `instructions` in place of the gateway's, when not blank — as the last user message, answered
 * whole (the summary is read whole: answer.ts) and with no tool called.
 */
function askForCompaction(chatBody: Json, compaction: Json): void {
  const { instructions } = compaction;
  (chatBody.messages as Json[]).push({
    role: 'user',
    content:
      typeof instructions === 'string' && instructions.trim() !== '' ? instructions : compactionRequest,
  });
  delete chatBody.stream;
  delete chatBody.stream_options;
  if (chatBody.tools !== undefined) chatBody.tool_choice = 'none';
}

/**
 * Anthropic's message Threads (`thread`: the Anthropic SDK's tool runner and message threads send a turn's
 * new messages only, `{"type": "continue", "previous_message_id"}`, on a conversation the server keeps):
 * the gateway keeps none — it fits whole conversations. A continued Thread is answered as Anthropic
 * answers one it no longer has (404, `error_code: thread_not_found`), and the SDK replays the whole
 * conversation with `{"type": "create"}`, which goes as any request, without `thread`.
 */
function noThreads(body: Json): void {
  if (isObject(body.thread) && body.thread.type === 'continue')
    throw new GatewayError(
      'not_found',
      'No usable Thread state was found for `previous_message_id`: ctxgate keeps no Threads. Replay the full conversation with `thread: {"type": "create"}`.',
      { param: 'thread.previous_message_id', details: { error_code: 'thread_not_found' } },
    );
}

/**
 * The system prompt as the leading chat system message, none when it holds no text: a string stays a
 * string; blocks (cache_control on them) go back natively as they came. Bridged, without Claude Code's
 * billing attribution; to Claude through a Chat Completions endpoint (`cacheMarks`), as its texts in parts,
 * each with its mark, each after the first starting with the blank line that joins them, so that the
 * parts read as the one text does (a session compares the two: reconcile.ts).
 */
function systemPromptMessage(system: unknown, native: boolean, cacheMarks: boolean): Json | undefined {
  const blocks = blocksOf(system, 'system');
  const textBlocks = blocks.filter((block) => block.type === 'text');
  const texts = textBlocks.map((block) => block.text as string);
  const text = (native ? texts : texts.flatMap(withoutBillingAttribution)).join('\n\n');
  if (text === '') return undefined;
  if (typeof system === 'string') return { role: 'system', content: text };
  const parts =
    !native && cacheMarks && textBlocks.some((block) => markOf(block) !== undefined)
      ? textBlocks
          .flatMap((block) =>
            withoutBillingAttribution(block.text as string).map((each) =>
              marked({ type: 'text', text: each }, block, true),
            ),
          )
          .map((part, at) =>
            at === 0 ? part : Object.assign({}, part, { text: `\n\n${part.text as string}` }),
          )
      : undefined;
  return withExtension({ role: 'system', content: parts ?? text }, blocks, native);
}

export interface BridgeMessagesOptions {
  native: boolean;
  /**
   * Claude behind a Chat Completions endpoint (OpenRouter, LiteLLM), which caches only up to the parts a
   * client marks: the client's cache breakpoints go on the content parts they marked (docs/anthropic.md).
   */
  cacheMarks?: boolean;
  requireMaxTokens: boolean;
  maxMessages?: number;
}

export function bridgeMessagesRequest(body: unknown, options: BridgeMessagesOptions): BridgedMessages {
  const { native } = options;
  if (!isObject(body)) throw invalid('Request body must be a JSON object.', 'body');
  if (typeof body.model !== 'string' || body.model === '') throw invalid('model: Field required', 'model');
  const maxTokens = body.max_tokens;
  if (options.requireMaxTokens && maxTokens === undefined)
    throw invalid('max_tokens: Field required', 'max_tokens');
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || (maxTokens as number) < 1))
    throw invalid('max_tokens: Input should be a positive integer', 'max_tokens');
  if (!Array.isArray(body.messages)) throw invalid('messages: Field required', 'messages');
  if (options.maxMessages !== undefined) {
    const count = chatMessageCount(body.messages);
    if (count > options.maxMessages) throw tooManyMessages(count, options.maxMessages);
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean')
    throw invalid('stream: Input should be a valid boolean', 'stream');
  noThreads(body);
  const dropped = new Set<string>();
  const messages: Json[] = [];
  // The index in body.messages each chat message was made from (the system prompt's: -1).
  const origins: number[] = [];

  if (body.system !== undefined) {
    const message = systemPromptMessage(body.system, native, options.cacheMarks === true);
    if (message !== undefined) messages.push(message);
  }

  // Where each chat message's content stands in its message, when it is a string there (chat-body.ts).
  const strings: Array<readonly StringSource[] | undefined> = [];
  if (messages.length > 0) {
    origins.push(-1);
    strings.push(undefined);
  }
  // Claude reads a conversation from its last compaction summary on (compactionStart): what is before it
  // is neither sent nor counted, and to a Chat Completions model the summary is a user message of its own.
  const start = compactionStart(body.messages);
  body.messages.forEach((raw: unknown, index) => {
    if (start !== undefined && index < start[0]) return;
    const param = `messages.${index}`;
    if (!isObject(raw)) throw invalid(`${param}: Input should be an object`, param);
    const { role } = raw;
    if (role !== 'user' && role !== 'assistant' && role !== 'system')
      throw invalid(`${param}.role: Input should be 'user', 'assistant' or 'system'`, `${param}.role`);
    let blocks = blocksOf(raw.content, `${param}.content`);
    if (index === start?.[0]) {
      blocks = blocks.slice(start[1]);
      if (!native) {
        messages.push({ role: 'user', content: compactedHistory + String(blocks[0]?.content) });
        blocks = blocks.slice(1);
      }
      if (blocks.length === 0) return recordSources({ origins, strings }, messages, index, undefined, []);
    }
    const where = { param: `${param}.content`, native, dropped, cacheMarks: options.cacheMarks === true };
    if (role === 'assistant') messages.push(assistantMessage(blocks, where));
    // Where it stood: for a model whose template takes one system message, first, the service moves it
    // (notice-placement.ts's forStrictTemplate).
    else if (role === 'system') {
      const message = systemMessage(blocks, where);
      // Bridged, a system message of only tool changes is no message: the changes are the chat tools.
      if (native || message.content !== '' || !blocks.every(isToolChange)) messages.push(message);
    }
    // One by one: a message of 150,000 tool results would overflow the stack as arguments.
    else for (const message of userMessages(raw.content, blocks, where)) messages.push(message);
    recordSources({ origins, strings }, messages, index, raw.content, blocks);
  });

  const chatBody: Json = { model: body.model, messages };
  if (maxTokens !== undefined) chatBody[outputCapField(body.model)] = maxTokens;
  const stream = body.stream === true;
  if (stream) {
    chatBody.stream = true;
    chatBody.stream_options = { include_usage: true };
  }
  for (const key of ['temperature', 'top_p'] as const) if (body[key] !== undefined) chatBody[key] = body[key];
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0)
    chatBody.stop = body.stop_sequences;
  // A deferred tool (tool search) is not in Claude's prompt until a message references it: natively it is
  // sent, but not counted, until then; to a Chat Completions model it is not given until then — but
  // beside Anthropic's own search (a `tool_search_tool_…` server tool), which such a model cannot run:
  // then every tool is.
  const changes = toolChangesOf(body.messages, start);
  const referenced = native || !hasServerSearch(body) ? referencedTools(body, changes) : undefined;
  const extension = toolsAndFields(body, chatBody, { native, dropped }, referenced, changes);
  const compaction = !native && isCompaction(body.compaction);
  if (compaction) askForCompaction(chatBody, body.compaction as Json);
  if (native && Object.keys(extension).length > 0) {
    if (typeof maxTokens === 'number')
      Object.defineProperty(extension, askedMaxTokens, { value: maxTokens, enumerable: false });
    chatBody.ctxgate_anthropic = extension;
  }
  if (native)
    (chatBody as { [bridgedMessages]?: WeakSet<object> })[bridgedMessages] = new WeakSet(
      messages.filter((message) => message.ctxgate_anthropic !== undefined),
    );
  return {
    chatBody,
    dropped: [...dropped],
    model: body.model,
    stream,
    native,
    sources: { origins: Int32Array.from(origins), strings },
    ...(referenced === undefined ? {} : { referencedTools: [...referenced] }),
    ...(compaction ? { compaction: true as const } : {}),
  };
}

/** The longest end-user id OpenAI takes in `user` (OpenRouter takes 128). */
const maxEndUserIdLength = 64;

/**
 * Anthropic's `metadata.user_id` as a Chat Completions `user`: itself when short enough, else its SHA-256
 * in hex (64 characters; Claude Code's ids run to about 150), the same for every request of that user.
 */
export function endUserId(id: string): string {
  return id.length <= maxEndUserIdLength ? id : createHash('sha256').update(id).digest('hex');
}
