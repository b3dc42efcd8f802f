// The Responses API over Chat Completions, as values (no I/O): a Responses request translated into the
// chat request the gateway's engine fits and sends, and a chat completion translated back into a
// Response object. What a Chat Completions upstream cannot do is dropped and named (`dropped`) when
// dropping it changes nothing the client relies on — Codex's `client_metadata`, `include` entries the
// gateway cannot produce, another provider's reasoning items (their encrypted content cannot be
// replayed; those the gateway wrote, of a chat model's reasoning or of what a provider gave to be sent
// back, go back), built-in tools the upstream cannot run — or, with `responses.unbridgeable: reject`,
// refused with a 400 naming the field. Tools in a namespace become chat tools named
// `<namespace>__<name>`, a custom (freeform) tool a function tool of one string parameter, `input`; the
// model's calls of them go back to the client as it named them (a `namespace`, a `custom_tool_call`).
// A tool search the client runs (Codex's `tool_search`, `execution: "client"`) is a function tool the
// model calls, given back as a `tool_search_call`; the tools a `tool_search_output` gives join the list.
// Deferred tools (`defer_loading`) are held back beside such a search until one loads them, and given
// beside OpenAI's own search, a first call of one answered after the search items that load it (Deferral).
// What would change the answer's meaning (a prompt template, a stored conversation, a file input, a
// tool_choice forcing a dropped tool) is always refused. A `compaction_trigger` item (Codex's remote
// compaction) asks the model for a summary of the conversation, given back as a `compaction` item whose
// content the gateway reads as that summary when the client sends it in place of the history.
import { randomFillSync } from 'node:crypto';
import type { BridgedSources, StringSource } from '../chat/chat-body.js';
import { tooManyMessages, tooManyToolCalls, type RequestLimits } from '../chat/chat-request-schema.js';
import { GatewayError } from '../errors.js';
import { flatText } from '../flat-string.js';
import { sliceWhole } from '../text-slices.js';
import {
  carriedStateOf,
  carrierOf,
  compactedHistory,
  compactionCarrierOf,
  compactionRequest,
  isCarrier,
  isCompactionCarrier,
  readCarrier,
  readCompactionCarrier,
  type CarriedState,
} from '../upstream/carried-state.js';
import { chunkTexts } from '../upstream/content-chunks.js';
import { outputCapField } from '../upstream/model-family.js';
import { reasoningOf } from '../upstream/reasoning-field.js';
import {
  argumentsObject,
  localCallArguments,
  localCallItem,
  localOutputContent,
  localToolOf,
  type LocalToolKind,
} from './local-tools.js';
import { cachedTokensOf, reasoningTokensOf } from '../upstream/usage-details.js';

export type ChatMessage = Record<string, unknown> & { role: string };
export type InputItem = Record<string, unknown>;

export interface BridgeOptions {
  /** The truncation of a request that does not state one. */
  defaultTruncation: 'auto' | 'disabled';
  /** What cannot be bridged: dropped (and named) when that changes nothing the client relies on, or refused. */
  unbridgeable: 'drop' | 'reject';
  /** The chat request's limits, checked on the input before its items are read (checkInputSize). */
  limits?: Pick<RequestLimits, 'maxMessages' | 'maxToolCalls'>;
}

export const defaultBridgeOptions: BridgeOptions = Object.freeze({
  defaultTruncation: 'auto',
  unbridgeable: 'drop',
});

/** What a chat tool name stands for in the Responses request, when it is not a plain function tool. */
export interface BridgedTool {
  name: string;
  namespace?: string;
  /** A custom (freeform) tool, called with its `input` as the chat function's one argument. */
  custom: boolean;
  /** The client's tool search (`execution: "client"`): a call of it is a `tool_search_call`. */
  search?: boolean;
  /**
   * A deferred tool no search loaded yet, beside a search OpenAI runs: its definition, as the
   * `tool_search_output` that loads it before its first call in an answer gives it (searchItemsOf).
   */
  loads?: Record<string, unknown>;
  /** A tool the client runs that the Responses API defines (local-tools.ts): a call of it is its item. */
  local?: LocalToolKind;
}

/** The chat tool names that stand for a namespaced or a custom tool; the others are the tools' own. */
export type ToolNames = ReadonlyMap<string, BridgedTool>;

export interface BridgedRequest {
  /** The Chat Completions fields other than `messages` (model, tools, sampling, format…). */
  chatFields: Record<string, unknown>;
  /** `instructions` as a system message: not carried to later responses of a chain (as OpenAI does). */
  instructions: ChatMessage | undefined;
  /** This request's input items, normalized, and the chat messages they become. */
  inputItems: InputItem[];
  messages: ChatMessage[];
  /** The `input` item each of `messages` was made from, and where its content stands in it (chat-body.ts). */
  sources: BridgedSources;
  /**
   * The `input` item each of `inputItems` is (-1: none, a string input), and its field that is a string
   * of the client's as it came (`content`, `output`, `arguments`), for storing it (chat-body.ts
   * recordBytes).
   */
  itemSources: { origins: Int32Array; fields: Array<string | undefined> };
  previousResponseId: string | undefined;
  store: boolean;
  /** The client asked for a stream (a compaction's upstream request is not streamed: `compaction`). */
  stream: boolean;
  /**
   * The input ends with a `compaction_trigger`: the answer is a summary of the conversation, given as one
   * `compaction` item (compactionItemOf), asked for whole, with no tool called.
   */
  compaction: boolean;
  truncation: 'auto' | 'disabled';
  /** Echoed on the Response object. */
  echo: Record<string, unknown>;
  /** What was left out because a Chat Completions upstream cannot do it (X-Ctxgate-Dropped). */
  dropped: string[];
  /** The chat tools that stand for a namespaced or a custom tool (answers name them as the client did). */
  toolNames: ToolNames;
  /** Some chat tools came from input items (`additional_tools`, `tool_search_output`), not from `tools` alone. */
  toolsFromInput: boolean;
}

/** Fields the bridge reads. */
const known = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_output_tokens',
  'temperature',
  'top_p',
  'text',
  'metadata',
  'user',
  'store',
  'stream',
  'previous_response_id',
  'truncation',
  'reasoning',
  'seed',
  'stop',
  'frequency_penalty',
  'presence_penalty',
  'logit_bias',
  'service_tier',
  'safety_identifier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'prompt_cache_options',
  'stream_options',
  'include',
  'background',
]);

/** Fields whose absence would change what the answer means: refused whatever the setting. */
const meaningful: Record<string, string> = {
  prompt: "'prompt' templates are kept by OpenAI and cannot be bridged by ctxgate",
  conversation: "'conversation' state is kept by OpenAI and cannot be bridged; use previous_response_id",
};

/** Input items of built-in tools and of reasoning: history a Chat Completions upstream cannot read. */
const droppableItems = new Set([
  'reasoning',
  'compaction',
  'web_search_call',
  'file_search_call',
  'computer_call',
  'computer_call_output',
  'image_generation_call',
  'code_interpreter_call',
  'local_shell_call',
  'local_shell_call_output',
  'mcp_list_tools',
  'mcp_call',
  'mcp_approval_request',
  'mcp_approval_response',
]);

/** Bytes of one id: 192 random bits, written as 48 hex digits. */
const idBytes = 24;

/**
 * Random bytes for ids, drawn from the system's source 256 ids at a time, as Node draws UUIDs: a request
 * of 10,000 input items makes 10,000 ids (a call to the source each cost 25 ms; two UUIDs each, 10 ms).
 */
const idPool = { bytes: Buffer.alloc(idBytes * 256), used: idBytes * 256 };

export function newId(prefix: string): string {
  if (idPool.used === idPool.bytes.length) {
    randomFillSync(idPool.bytes);
    idPool.used = 0;
  }
  idPool.used += idBytes;
  return flatText(`${prefix}_${idPool.bytes.toString('hex', idPool.used - idBytes, idPool.used)}`);
}

function refuse(param: string, message: string): never {
  throw new GatewayError('invalid_request', message, { param });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What is dropped, by name; with `reject`, the first of it is refused instead. */
class Drops {
  readonly names: string[] = [];
  constructor(private readonly mode: 'drop' | 'reject') {}

  drop(param: string, name: string, refusal: string): void {
    if (this.mode === 'reject') refuse(param, refusal);
    this.names.push(name);
  }
}

/** A message's content parts as Chat Completions parts. */
function contentOf(content: unknown, param: string): unknown {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) refuse(param, `Invalid '${param}': expected a string or an array of parts.`);
  return content.map((part: unknown, index) => {
    const at = `${param}[${index}]`;
    if (!isRecord(part)) refuse(at, `Invalid '${at}': expected an object.`);
    if (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text')
      return { type: 'text', text: String(part.text ?? '') };
    if (part.type === 'input_image') {
      if (typeof part.image_url !== 'string')
        refuse(at, `'${at}': only input_image parts with an image_url can be bridged (file_id cannot).`);
      return {
        type: 'image_url',
        image_url: {
          url: part.image_url,
          ...(typeof part.detail === 'string' ? { detail: part.detail } : {}),
        },
      };
    }
    if (part.type === 'input_file') return filePartOf(part, at);
    if (part.type === 'refusal') return { type: 'text', text: String(part.refusal ?? '') };
    return refuse(
      at,
      `'${at}': content parts of type '${String(part.type)}' cannot be bridged to Chat Completions.`,
    );
  });
}

/**
 * An `input_file` part as Chat Completions takes a file (OpenAI's `file` part: a PDF's data URL with its
 * file name, which OpenAI requires beside the data, or an uploaded file's id). A file by URL cannot be
 * bridged: Chat Completions takes none.
 */
function filePartOf(part: Record<string, unknown>, at: string): Record<string, unknown> {
  if (typeof part.file_data === 'string')
    return {
      type: 'file',
      file: {
        filename: typeof part.filename === 'string' && part.filename !== '' ? part.filename : 'file.pdf',
        file_data: part.file_data,
      },
    };
  if (typeof part.file_id === 'string') return { type: 'file', file: { file_id: part.file_id } };
  return refuse(
    at,
    `'${at}': only input_file parts with file_data or a file_id can be bridged (Chat Completions takes no file_url).`,
  );
}

/**
 * The strings of a message item's content that its chat message holds as they came (contentOf): the
 * content itself, or each text part's text (a refusal's) and each image's URL.
 */
function contentSources(content: unknown): StringSource[] | undefined {
  if (typeof content === 'string') return [{ inMessage: ['content'], inElement: ['content'] }];
  if (!Array.isArray(content)) return undefined;
  return content.flatMap((part: unknown, index): StringSource[] => {
    const type = isRecord(part) ? part.type : undefined;
    if (type === 'input_text' || type === 'output_text' || type === 'text')
      return [{ inMessage: ['content', index, 'text'], inElement: ['content', index, 'text'] }];
    if (type === 'refusal')
      return [{ inMessage: ['content', index, 'text'], inElement: ['content', index, 'refusal'] }];
    if (type === 'input_image')
      return [
        { inMessage: ['content', index, 'image_url', 'url'], inElement: ['content', index, 'image_url'] },
      ];
    if (type === 'input_file' && typeof (part as Record<string, unknown>).file_data === 'string')
      return [
        { inMessage: ['content', index, 'file', 'file_data'], inElement: ['content', index, 'file_data'] },
      ];
    return [];
  });
}

/**
 * A tool output as a tool message's content: a string as it is; a list of content parts (Codex's exec
 * answers so) as their texts one after the other, another part named by its type, as a chat tool
 * message carries text; with an image or a file among them (Codex's view_image, an MCP screenshot, an
 * Agents SDK tool's image or PDF) as parts — its texts, images and files — which go to a Chat Completions
 * provider as tool-media.ts sends them; anything else as its JSON.
 */
function outputContent(output: unknown): string | Array<Record<string, unknown>> {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output) || !output.every(isRecord)) return JSON.stringify(output ?? '');
  const parts = output.map((part): Record<string, unknown> => {
    if (part.type === 'input_image' && typeof part.image_url === 'string')
      return {
        type: 'image_url',
        image_url: {
          url: part.image_url,
          ...(typeof part.detail === 'string' ? { detail: part.detail } : {}),
        },
      };
    // A file a tool gave (a PDF as data, or by id): a file part, shown as its images are.
    if (
      part.type === 'input_file' &&
      (typeof part.file_data === 'string' || typeof part.file_id === 'string')
    )
      return filePartOf(part, '');
    return {
      type: 'text',
      text:
        (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') &&
        typeof part.text === 'string'
          ? part.text
          : `[${String(part.type)}]`,
    };
  });
  return parts.some((part) => part.type !== 'text')
    ? parts
    : parts.map((part) => part.text as string).join('');
}

/** Input items of a tool's call, and of its output: each one tool call, and one tool message. */
const callItemTypes = new Set([
  'function_call',
  'custom_tool_call',
  'tool_search_call',
  'shell_call',
  'apply_patch_call',
]);
const outputItemTypes = new Set([
  'function_call_output',
  'custom_tool_call_output',
  'tool_search_output',
  'shell_call_output',
  'apply_patch_call_output',
]);

/**
 * The chat function a call item calls and its arguments: a function's as they are, a custom tool's input
 * as its one argument, the client's search's arguments as JSON, a shell's or apply_patch's action as
 * their function's arguments (local-tools.ts).
 */
function chatCallOf(item: InputItem, type: string, at: string): { name: string; args: string } {
  const search = type === 'tool_search_call';
  const local = type === 'shell_call' ? 'shell' : type === 'apply_patch_call' ? 'apply_patch' : undefined;
  const named = search || local !== undefined;
  if (typeof item.call_id !== 'string' || (!named && typeof item.name !== 'string'))
    refuse(at, `'${at}': a ${type} needs call_id${named ? '' : ' and name'}.`);
  if (local !== undefined) return { name: local, args: localCallArguments(item) };
  if (search) return { name: toolSearchName, args: JSON.stringify(item.arguments ?? {}) };
  const name = chatToolName(item.namespace, String(item.name));
  if (type === 'custom_tool_call')
    return { name, args: JSON.stringify({ input: typeof item.input === 'string' ? item.input : '' }) };
  return { name, args: typeof item.arguments === 'string' ? item.arguments : '{}' };
}

/**
 * Input items as chat messages: consecutive function calls join the assistant message before them, and a
 * call's outputs follow it — the messages that came between (a user steering while the call ran, a
 * developer message: Codex sends them there, and the Responses API pairs by call_id wherever an output
 * stands) follow its outputs, in their order. `sources`, when given, gets the index of the item each
 * message was made from (-1 for a call), and where in it the message's content stands when it is a
 * string of the item as it came.
 */
export function messagesOf(
  items: readonly InputItem[],
  sources?: { origins: number[]; strings: Array<readonly StringSource[] | undefined> },
): ChatMessage[] {
  const order = new ChatOrder(sources);
  // A reasoning item's text, for the assistant message its next items make (DeepSeek and Kimi refuse a
  // tool call sent back without the reasoning that came with it).
  let reasoning = '';
  // What the provider gave with its answers and needs back (carrierItemOf): on calls (Gemini's thought
  // signatures), by call id; on the message (OpenRouter's reasoning_details), for the assistant message
  // the next items make, as the reasoning.
  const { extras, states } = carriedIn(items);
  let carried: Record<string, unknown> | undefined;
  items.forEach((item, index) => {
    const at = `input[${index}]`;
    const type = String(item.type ?? 'message');
    if (type === 'reasoning') {
      reasoning += reasoningText(item);
      const fields = states?.get(item)?.message;
      if (fields !== undefined) carried = Object.assign(carried ?? {}, fields);
      return;
    }
    const thought = reasoning;
    reasoning = '';
    const fields = carried;
    carried = undefined;
    if (type === 'message') {
      const role = item.role;
      if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer')
        refuse(`${at}.role`, `Invalid '${at}.role': expected user, assistant, system or developer.`);
      const message: ChatMessage = { role, content: contentOf(item.content, `${at}.content`) };
      if (role === 'assistant' && thought !== '') message.reasoning_content = thought;
      if (role === 'assistant' && fields !== undefined) Object.assign(message, fields);
      if (role === 'assistant') order.model(message, index, contentSources(item.content));
      else order.between(message, index, contentSources(item.content));
      return;
    }
    // Tools given in the input: they join the request's tool list (bridgeRequest), as no message.
    if (type === 'additional_tools') return;
    // User messages the gateway writes: asked to compact (bridgeRequest), the summary given when it was
    // (a `compaction` item of the gateway's: inputItemsOf keeps no other), and a message from another
    // agent (Codex's multi-agent v2 hands a sub-agent its task so) as its text, none when it has none.
    if (type === 'compaction_trigger' || type === 'compaction' || type === 'agent_message') {
      const content =
        type === 'agent_message'
          ? agentMessageText(item.content, `${at}.content`)
          : type === 'compaction'
            ? compactedHistory + (readCompactionCarrier(item.encrypted_content) ?? '')
            : compactionRequest;
      if (content === '') return;
      order.between({ role: 'user', content }, index, undefined);
      return;
    }
    if (callItemTypes.has(type)) {
      order.call(item.call_id);
      const { name, args } = chatCallOf(item, type, at);
      const extra = extras?.get(item.call_id as string);
      const call =
        extra === undefined
          ? { id: item.call_id, type: 'function', function: { name, arguments: args } }
          : { id: item.call_id, type: 'function', function: { name, arguments: args }, extra_content: extra };
      const last = order.messages.at(-1);
      if (last?.role === 'assistant') {
        // Appended in place: copying the list for every call made N calls cost N² (40,000 calls: 17 s).
        const calls = last.tool_calls as unknown[] | undefined;
        if (calls === undefined) last.tool_calls = [call];
        else calls.push(call);
        if (last.content === '' || last.content === undefined) last.content = null;
        if (thought !== '')
          last.reasoning_content =
            typeof last.reasoning_content === 'string' ? last.reasoning_content + thought : thought;
        if (fields !== undefined) Object.assign(last, fields);
      } else {
        const message: ChatMessage = { role: 'assistant', content: null, tool_calls: [call] };
        if (thought !== '') message.reasoning_content = thought;
        if (fields !== undefined) Object.assign(message, fields);
        order.emit(message, -1, undefined);
      }
      return;
    }
    if (outputItemTypes.has(type)) {
      if (typeof item.call_id !== 'string') refuse(at, `'${at}': a ${type} needs call_id.`);
      const output = item.output;
      order.output(
        item.call_id,
        {
          role: 'tool',
          tool_call_id: item.call_id,
          content:
            type === 'tool_search_output'
              ? toolsFoundText(item.tools)
              : type === 'shell_call_output' || type === 'apply_patch_call_output'
                ? localOutputContent(item)
                : outputContent(output),
        },
        index,
        typeof output === 'string' ? [{ inMessage: ['content'], inElement: ['output'] }] : undefined,
      );
      return;
    }
    refuse(
      `${at}.type`,
      `'${at}': input items of type '${String(type)}' cannot be bridged to Chat Completions.`,
    );
  });
  return order.end();
}

/**
 * Chat messages in the order Chat Completions takes them: a call's outputs right after it. The messages
 * that came while calls waited for their outputs (not the model's) are held until the outputs are in;
 * the model's next message or call sends them on where they came, as does the end.
 */
class ChatOrder {
  readonly messages: ChatMessage[] = [];
  /** The last assistant message's calls still waiting for their outputs, by id: how many. */
  private readonly pending = new Map<string, number>();
  private held: Array<[ChatMessage, number, readonly StringSource[] | undefined]> = [];

  constructor(
    private readonly sources?: { origins: number[]; strings: Array<readonly StringSource[] | undefined> },
  ) {}

  emit(message: ChatMessage, origin: number, strings: readonly StringSource[] | undefined): void {
    this.messages.push(message);
    this.sources?.origins.push(origin);
    this.sources?.strings.push(strings);
  }

  /** The model's message: the calls before it are answered, or never will be. */
  model(message: ChatMessage, origin: number, strings: readonly StringSource[] | undefined): void {
    this.release();
    this.emit(message, origin, strings);
  }

  /** A message that is not the model's: held while calls wait for their outputs. */
  between(message: ChatMessage, origin: number, strings: readonly StringSource[] | undefined): void {
    if (this.pending.size > 0) this.held.push([message, origin, strings]);
    else this.emit(message, origin, strings);
  }

  /** A call, before it joins a message: made after messages held, it sends them on first, as they came. */
  call(id: unknown): void {
    if (this.held.length > 0) this.release();
    if (typeof id === 'string') this.pending.set(id, (this.pending.get(id) ?? 0) + 1);
  }

  /** A call's output; the last of those waited for sends on the messages held. */
  output(
    id: string,
    message: ChatMessage,
    origin: number,
    strings: readonly StringSource[] | undefined,
  ): void {
    this.emit(message, origin, strings);
    const left = this.pending.get(id);
    if (left === undefined) return;
    if (left > 1) this.pending.set(id, left - 1);
    else this.pending.delete(id);
    if (this.pending.size === 0) this.release();
  }

  end(): ChatMessage[] {
    this.release();
    return this.messages;
  }

  private release(): void {
    for (const [message, origin, strings] of this.held) this.emit(message, origin, strings);
    this.held = [];
    this.pending.clear();
  }
}

/**
 * The text of an `agent_message` item's content, its parts joined in order: Codex's header (`input_text`:
 * the message's type, its task name, its sender) and the words the sending agent wrote, which Codex
 * sends as `encrypted_content` — encrypted by OpenAI's Responses API only: through the gateway they
 * are the words the model that called `spawn_agent` wrote, and no other model could read OpenAI's.
 */
function agentMessageText(content: unknown, param: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) refuse(param, `Invalid '${param}': expected a string or an array of parts.`);
  return content
    .map((part: unknown, index) => {
      const at = `${param}[${index}]`;
      if (
        isRecord(part) &&
        (part.type === 'input_text' || part.type === 'text') &&
        typeof part.text === 'string'
      )
        return part.text;
      if (isRecord(part) && part.type === 'encrypted_content' && typeof part.encrypted_content === 'string')
        return part.encrypted_content;
      return refuse(
        at,
        `'${at}': content parts of type '${String(isRecord(part) ? part.type : typeof part)}' cannot be bridged to Chat Completions.`,
      );
    })
    .join('');
}

type ChatTool = { type: 'function'; function: Record<string, unknown> };

/** The chat name of the client's tool search (Codex's is named so too). */
const toolSearchName = 'tool_search';

/**
 * The parameters of a search the client runs that gives none of its own: OpenAI's built-in client schema,
 * the paths of the deferred tools (or namespaces) to load, which the Agents SDK's runner loads.
 */
const toolSearchParameters = {
  type: 'object',
  properties: {
    paths: {
      type: 'array',
      items: { type: 'string' },
      description: 'The names of the deferred tools, or of their namespaces, to load.',
    },
  },
  required: ['paths'],
  additionalProperties: false,
};

/** The chat names of the function and custom tools of a list (a search's found tools), namespaces' members included. */
function toolNamesIn(tools: unknown): string[] {
  const names: string[] = [];
  const collect = (list: unknown, namespace?: string): void => {
    if (!Array.isArray(list)) return;
    for (const tool of list) {
      if (!isRecord(tool) || typeof tool.name !== 'string' || tool.name === '') continue;
      if (tool.type === 'namespace' && namespace === undefined) collect(tool.tools, tool.name);
      else if (tool.type === 'function' || tool.type === 'custom')
        names.push(chatToolName(namespace, tool.name));
    }
  };
  collect(tools);
  return names;
}

/**
 * What a client's tool search gave, as the model reads it in the tool message: the chat names of the tools
 * found, which join the request's tool list (toolsOf) and can be called from the next answer on.
 */
function toolsFoundText(tools: unknown): string {
  const names = toolNamesIn(tools);
  return names.length === 0
    ? 'No tools were found.'
    : `Tools found, which can be called now: ${names.join(', ')}.`;
}

/** The chat name of a Responses tool, or of a call of it: `<namespace>__<name>` when it is in a namespace. */
function chatToolName(namespace: unknown, name: string): string {
  return typeof namespace === 'string' && namespace !== '' ? `${namespace}__${name}` : name;
}

/**
 * A custom (freeform) tool as a function tool: its input, the text the model writes (in the tool's
 * grammar, when it gives one), is the function's one string argument.
 */
function customAsFunction(name: string, tool: Record<string, unknown>): ChatTool {
  const format = isRecord(tool.format) ? tool.format : undefined;
  const grammar =
    format?.type === 'grammar' && typeof format.definition === 'string'
      ? ` It follows this ${typeof format.syntax === 'string' ? format.syntax : ''} grammar:\n${format.definition}`
      : '';
  return {
    type: 'function',
    function: {
      name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: {
        type: 'object',
        properties: {
          input: { type: 'string', description: `The tool's whole input, as raw text.${grammar}` },
        },
        required: ['input'],
        additionalProperties: false,
      },
    },
  };
}

/**
 * How a request's deferred tools (`defer_loading`: tool search) reach a chat model, which has no tool
 * search of its own. Beside a search the client runs, a deferred tool is held back until a search in the
 * input loaded it, as OpenAI does (the Agents SDK refuses a call of one not loaded); the search's
 * description names those held back, as the paths it can load. Beside a search OpenAI runs, which the
 * gateway cannot, every deferred tool is given, and the first call of one no search loaded yet is
 * answered after the `tool_search_call` and `tool_search_output` that load it (searchItemsOf).
 */
interface Deferral {
  search: 'client' | 'hosted' | undefined;
  /** The chat names of the tools the input's searches loaded. */
  loaded: ReadonlySet<string>;
  /** Beside the client's search: the deferred tools held back, as `path: description` lines. */
  held: string[];
}

/** What addTools adds to: the chat tools, what their names stand for, and what it dropped. */
interface ToolLists {
  drops: Drops;
  kept: ChatTool[];
  names: Map<string, BridgedTool>;
  deferral: Deferral;
}

/** The most characters of a held-back tool's description the search's description quotes. */
const heldDescriptionChars = 160;

/**
 * A list of Responses tools (`tools`, or an `additional_tools` item's) as chat tools, added to `lists`:
 * function tools as they are, custom tools as functions (customAsFunction), the function and custom
 * tools of a namespace under `<namespace>__<name>` (noted in `names`, with custom tools), the client's
 * tool search as a function, deferred tools as `Deferral` says; tools the upstream cannot run (built-in
 * ones) dropped.
 */
function addTools(
  tools: unknown,
  param: string,
  lists: ToolLists,
  namespace?: Record<string, unknown> & { name: string },
): void {
  const { drops, kept, names, deferral } = lists;
  if (!Array.isArray(tools)) refuse(param, `Invalid '${param}': expected an array.`);
  tools.forEach((tool: unknown, index) => {
    const at = `${param}[${index}]`;
    if (!isRecord(tool)) refuse(at, `Invalid '${at}': expected an object.`);
    const kind = String(tool.type);
    if (
      kind === 'namespace' &&
      namespace === undefined &&
      typeof tool.name === 'string' &&
      tool.name !== ''
    ) {
      addTools(tool.tools ?? [], `${at}.tools`, lists, tool as Record<string, unknown> & { name: string });
      return;
    }
    if (kind === 'tool_search' && tool.execution === 'client' && !names.has(toolSearchName)) {
      names.set(toolSearchName, { name: toolSearchName, custom: false, search: true });
      kept.push({
        type: 'function',
        function: {
          name: toolSearchName,
          ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
          parameters: isRecord(tool.parameters) ? tool.parameters : toolSearchParameters,
        },
      });
      return;
    }
    // A shell or apply_patch the client runs, unless a function of the client's has its name.
    const local = namespace === undefined ? localToolOf(tool) : undefined;
    if (local !== undefined && !names.has(local.kind) && !namesFunction(tools, local.kind)) {
      names.set(local.kind, { name: local.kind, custom: false, local: local.kind });
      kept.push(local.chat);
      return;
    }
    if (kind !== 'function' && kind !== 'custom') {
      const label = typeof tool.name === 'string' ? `${kind} ${tool.name}` : kind;
      drops.drop(at, `${at} (${label})`, `'${at}': only function and custom tools can be bridged (${kind}).`);
      return;
    }
    if (typeof tool.name !== 'string' || tool.name === '')
      refuse(`${at}.name`, `Missing required parameter: '${at}.name'.`);
    const name = chatToolName(namespace?.name, tool.name);
    const deferred =
      (tool.defer_loading === true || namespace?.defer_loading === true) && !deferral.loaded.has(name);
    if (deferred && deferral.search === 'client') {
      const path = namespace === undefined ? tool.name : `${namespace.name}.${tool.name}`;
      const description = typeof tool.description === 'string' ? tool.description : '';
      deferral.held.push(`${path}: ${sliceWhole(description.split('\n')[0] ?? '', 0, heldDescriptionChars)}`);
      return;
    }
    const loads =
      deferred && deferral.search === 'hosted'
        ? namespace === undefined
          ? tool
          : Object.assign(pick(namespace, ['type', 'name', 'description']), { tools: [tool] })
        : undefined;
    if (namespace !== undefined || kind === 'custom' || loads !== undefined)
      names.set(name, {
        name: tool.name,
        ...(namespace === undefined ? {} : { namespace: namespace.name }),
        custom: kind === 'custom',
        ...(loads === undefined ? {} : { loads }),
      });
    if (kind === 'custom') {
      kept.push(customAsFunction(name, tool));
      return;
    }
    kept.push({
      type: 'function',
      function: {
        name,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        ...(tool.parameters === undefined || tool.parameters === null ? {} : { parameters: tool.parameters }),
        ...(typeof tool.strict === 'boolean' ? { strict: tool.strict } : {}),
      },
    });
  });
}

/** Whether a list of Responses tools holds a function or custom tool of this name. */
function namesFunction(tools: readonly unknown[], name: string): boolean {
  return tools.some(
    (tool) => isRecord(tool) && (tool.type === 'function' || tool.type === 'custom') && tool.name === name,
  );
}

/**
 * A request's deferral (held tools aside), read in one pass over its input: its tool search, by the first
 * `tool_search` tool in `tools` or an `additional_tools` item, and the tools its searches loaded.
 */
function deferralOf(tools: unknown, input: unknown): Deferral {
  const loaded = new Set<string>();
  let search: Deferral['search'];
  const searchIn = (list: unknown): void => {
    if (search !== undefined || !Array.isArray(list)) return;
    const tool = list.find((entry: unknown) => isRecord(entry) && entry.type === 'tool_search') as
      Record<string, unknown> | undefined;
    if (tool !== undefined) search = tool.execution === 'client' ? 'client' : 'hosted';
  };
  searchIn(tools);
  for (const item of Array.isArray(input) ? input : []) {
    if (!isRecord(item)) continue;
    if (item.type === 'additional_tools') searchIn(item.tools);
    else if (item.type === 'tool_search_output') for (const name of toolNamesIn(item.tools)) loaded.add(name);
  }
  return { search, loaded, held: [] };
}

/**
 * The chat tools of `tools`, of the input's `additional_tools` items and of the tools its client-run
 * searches found (`tool_search_output`, each tool once: two searches may find the same), in their order;
 * deferred tools as `Deferral` says.
 */
function toolsOf(
  tools: unknown,
  input: unknown,
  drops: Drops,
): { tools: ChatTool[] | undefined; names: Map<string, BridgedTool>; fromInput: boolean } {
  const lists: ToolLists = { drops, kept: [], names: new Map(), deferral: deferralOf(tools, input) };
  const { kept, names } = lists;
  if (tools !== undefined && tools !== null) addTools(tools, 'tools', lists);
  let fromInput = false;
  // The names of `kept`, brought up to date before a search's tools are added (each once).
  const known = new Set<string>();
  let knownUpTo = 0;
  if (Array.isArray(input))
    input.forEach((item: unknown, index) => {
      if (!isRecord(item)) return;
      if (item.type === 'additional_tools') {
        fromInput = true;
        addTools(item.tools ?? [], `input[${index}].tools`, lists);
      } else if (item.type === 'tool_search_output' && isClientSearch(item)) {
        fromInput = true;
        const found: ChatTool[] = [];
        addTools(item.tools ?? [], `input[${index}].tools`, Object.assign({}, lists, { kept: found }));
        for (; knownUpTo < kept.length; knownUpTo++)
          known.add((kept[knownUpTo] as ChatTool).function.name as string);
        for (const tool of found)
          if (!known.has(tool.function.name as string)) {
            known.add(tool.function.name as string);
            kept.push(tool);
            knownUpTo++;
          }
      }
    });
  // The tools held back, named in the search's description: what it can load.
  const search = kept.find(
    (tool) => tool.function.name === toolSearchName && names.get(toolSearchName)?.search,
  );
  if (search !== undefined && lists.deferral.held.length > 0) {
    const own = typeof search.function.description === 'string' ? `${search.function.description}\n\n` : '';
    search.function.description = `${own}Deferred tools it can load (path: description):\n${lists.deferral.held.join('\n')}`;
  }
  return {
    tools: tools === undefined || tools === null ? (fromInput ? kept : undefined) : kept,
    names,
    fromInput,
  };
}

/** The chat name of the tool a tool choice names: a function or custom tool, or a client-run shell or apply_patch. */
function choiceName(choice: Record<string, unknown>): string | undefined {
  if ((choice.type === 'function' || choice.type === 'custom') && typeof choice.name === 'string')
    return chatToolName(choice.namespace, choice.name);
  return choice.type === 'shell' || choice.type === 'apply_patch' ? choice.type : undefined;
}

/**
 * The chat tool_choice: auto, none and required as they are; a function only when it is among the
 * bridged tools (forcing a dropped tool would change the answer: refused); `allowed_tools` narrows the
 * tool list to the function tools it names.
 */
function toolChoiceOf(
  choice: unknown,
  tools: ChatTool[] | undefined,
): { toolChoice: unknown; tools: typeof tools } {
  const names = new Set((tools ?? []).map((tool) => tool.function.name));
  if (choice === undefined || choice === null || typeof choice === 'string')
    return { toolChoice: choice ?? undefined, tools };
  const forced = isRecord(choice) ? choiceName(choice) : undefined;
  if (forced !== undefined) {
    const named = isRecord(choice) && typeof choice.name === 'string' ? choice.name : forced;
    if (!names.has(forced))
      refuse('tool_choice', `'tool_choice' forces '${named}', which is not a tool this request bridges.`);
    return { toolChoice: { type: 'function', function: { name: forced } }, tools };
  }
  if (isRecord(choice) && choice.type === 'allowed_tools' && Array.isArray(choice.tools)) {
    const allowed = new Set(
      choice.tools.filter(isRecord).flatMap((tool) => {
        const name = choiceName(tool);
        return name === undefined ? [] : [name];
      }),
    );
    const mode = choice.mode === 'required' ? 'required' : 'auto';
    if (mode === 'required' && ![...allowed].some((name) => names.has(name)))
      refuse('tool_choice', "'tool_choice' requires tools this request cannot bridge.");
    return {
      toolChoice: mode,
      tools: (tools ?? []).filter((tool) => allowed.has(String(tool.function.name))),
    };
  }
  return refuse(
    'tool_choice',
    "'tool_choice': only auto, none, required, allowed_tools or a function can be bridged.",
  );
}

function responseFormatOf(text: unknown): unknown {
  if (!isRecord(text) || !isRecord(text.format)) return undefined;
  const format = text.format;
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema')
    return {
      type: 'json_schema',
      json_schema: {
        name: format.name,
        schema: format.schema,
        ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
        ...(format.description === undefined ? {} : { description: format.description }),
      },
    };
  return refuse('text.format', `'text.format': type '${String(format.type)}' cannot be bridged.`);
}

/** The fields the Responses API defines for each item and content part: nothing else is kept or stored. */
const itemFields: Record<string, readonly string[]> = {
  message: ['type', 'id', 'role', 'content', 'status'],
  function_call: ['type', 'id', 'call_id', 'namespace', 'name', 'arguments', 'status'],
  function_call_output: ['type', 'id', 'call_id', 'output', 'status'],
  custom_tool_call: ['type', 'id', 'call_id', 'namespace', 'name', 'input', 'status'],
  custom_tool_call_output: ['type', 'id', 'call_id', 'output', 'status'],
  additional_tools: ['type', 'id', 'role', 'tools'],
  tool_search_call: ['type', 'id', 'call_id', 'execution', 'arguments', 'status'],
  tool_search_output: ['type', 'id', 'call_id', 'execution', 'tools', 'status'],
  agent_message: ['type', 'id', 'author', 'recipient', 'content'],
  shell_call: ['type', 'id', 'call_id', 'action', 'environment', 'status'],
  shell_call_output: ['type', 'id', 'call_id', 'output', 'max_output_length', 'status'],
  apply_patch_call: ['type', 'id', 'call_id', 'operation', 'status'],
  apply_patch_call_output: ['type', 'id', 'call_id', 'output', 'status'],
  item_reference: ['type', 'id'],
};
const partFields: Record<string, readonly string[]> = {
  input_text: ['type', 'text'],
  output_text: ['type', 'text', 'annotations'],
  text: ['type', 'text'],
  refusal: ['type', 'refusal'],
  input_image: ['type', 'image_url', 'file_id', 'detail'],
  input_file: ['type', 'file_data', 'file_id', 'file_url', 'filename'],
  encrypted_content: ['type', 'encrypted_content'],
};

function pick(
  record: Record<string, unknown>,
  fields: readonly string[] | undefined,
): Record<string, unknown> {
  if (fields === undefined) return record;
  const picked: Record<string, unknown> = {};
  for (const field of fields) if (record[field] !== undefined) picked[field] = record[field];
  return picked;
}

/**
 * An input item as it is bridged and stored: the fields its type defines, and of its content parts the
 * fields theirs define. Anything else a client adds is dropped, so it neither travels nor takes space.
 */
export function definedFieldsOf(item: Record<string, unknown>): InputItem {
  const type = typeof item.type === 'string' ? item.type : 'message';
  const kept = pick(Object.assign({}, item, { type }), itemFields[type]);
  if ((type === 'message' || type === 'agent_message') && Array.isArray(kept.content))
    kept.content = kept.content.map((part: unknown) =>
      isRecord(part) && typeof part.type === 'string' ? pick(part, partFields[part.type]) : part,
    );
  return kept;
}

/** OpenAI's limits on `metadata`: at most 16 pairs, keys up to 64 characters, string values up to 512. */
function metadataOf(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) return refuse('metadata', "Invalid 'metadata': expected an object.");
  const entries = Object.entries(value);
  if (entries.length > 16)
    refuse('metadata', `Invalid 'metadata': at most 16 key-value pairs, got ${entries.length}.`);
  for (const [key, entry] of entries) {
    if (key.length > 64)
      refuse('metadata', `Invalid 'metadata': keys are at most 64 characters, got ${key.length}.`);
    if (typeof entry !== 'string')
      refuse(`metadata.${key}`, `Invalid 'metadata.${key}': values are strings.`);
    if (entry.length > 512)
      refuse(`metadata.${key}`, `Invalid 'metadata.${key}': values are at most 512 characters.`);
  }
  return value as Record<string, string>;
}

/**
 * The text of a reasoning item, as a chat provider gave it (its `content` of `reasoning_text` parts, which
 * the gateway makes of a reply's `reasoning_content`); '' for one that holds only encrypted content or a
 * summary (OpenAI's own reasoning, which no chat provider can read).
 */
export function reasoningText(item: InputItem): string {
  if (!Array.isArray(item.content)) return '';
  return item.content
    .map((part: unknown) =>
      isRecord(part) &&
      (part.type === 'reasoning_text' || part.type === 'text') &&
      typeof part.text === 'string'
        ? part.text
        : '',
    )
    .join('');
}

/**
 * The input items of a request (item references already resolved), those a upstream cannot read
 * dropped; `indexes` gets each kept item's index in `input`.
 */
function inputItemsOf(input: unknown, drops: Drops, indexes: number[]): InputItem[] {
  if (typeof input === 'string') {
    indexes.push(-1);
    return [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  }
  if (!Array.isArray(input))
    return refuse('input', "Invalid 'input': expected a string or an array of items.");
  const items: InputItem[] = [];
  input.forEach((item: unknown, index) => {
    if (!isRecord(item)) refuse(`input[${index}]`, `Invalid 'input[${index}]': expected an object.`);
    const type = typeof item.type === 'string' ? item.type : 'message';
    if (
      (droppableItems.has(type) &&
        !(type === 'reasoning' && (reasoningText(item) !== '' || isCarrier(item.encrypted_content))) &&
        !(type === 'compaction' && isCompactionCarrier(item.encrypted_content))) ||
      ((type === 'tool_search_call' || type === 'tool_search_output') && !isClientSearch(item))
    ) {
      drops.drop(
        `input[${index}].type`,
        `input[${index}] (${type})`,
        `'input[${index}]': input items of type '${type}' cannot be bridged to Chat Completions.`,
      );
      return;
    }
    if (type === 'compaction_trigger' && index !== input.length - 1) {
      // A request to compact is the input's last item; anywhere else it asks nothing of the answer.
      drops.drop(
        `input[${index}].type`,
        `input[${index}] (${type})`,
        `'input[${index}]': a compaction_trigger item is read only as the input's last.`,
      );
      return;
    }
    items.push(definedFieldsOf(item));
    indexes.push(index);
  });
  return items;
}

/**
 * A tool search item of the client's running (`execution: "client"`, with the call id that pairs the call
 * and its output): a hosted search's items, run by OpenAI, cannot be read by another model.
 */
function isClientSearch(item: Record<string, unknown>): boolean {
  return item.execution === 'client' && typeof item.call_id === 'string';
}

/**
 * Refuses an input that would make more chat messages or tool calls than one request may hold, before its
 * items are read: each message item and function call output makes one message (the instructions one
 * more), each function call one tool call. What the chat request holds is never less (a chain adds its
 * messages and calls, a run of calls one assistant message), so its own check, later, refuses whatever
 * this lets through, in the same words; this one spares bridging every item of a body that will be
 * refused anyway (80,000 items of a 5 MB body: some 200 ms).
 */
function checkInputSize(
  input: unknown,
  instructions: boolean,
  limits: Pick<RequestLimits, 'maxMessages' | 'maxToolCalls'>,
): void {
  if (!Array.isArray(input)) return;
  let messages = instructions ? 1 : 0;
  let calls = 0;
  for (const item of input) {
    if (!isRecord(item)) continue;
    const type = typeof item.type === 'string' ? item.type : 'message';
    if (type === 'message' || outputItemTypes.has(type)) messages++;
    else if (callItemTypes.has(type)) calls++;
  }
  if (messages > limits.maxMessages) throw tooManyMessages(messages, limits.maxMessages);
  if (calls > limits.maxToolCalls) throw tooManyToolCalls(calls, limits.maxToolCalls);
}

/** The field of an input item that holds its text as a string: what storing it copies from the client's bytes. */
function longStringField(item: InputItem): string | undefined {
  const field =
    item.type === 'function_call_output' || item.type === 'custom_tool_call_output'
      ? 'output'
      : item.type === 'function_call'
        ? 'arguments'
        : item.type === 'custom_tool_call'
          ? 'input'
          : 'content';
  return typeof item[field] === 'string' ? field : undefined;
}

/** A Responses request, checked and translated (its item references resolved by the caller). */
export function bridgeRequest(body: unknown, options: BridgeOptions = defaultBridgeOptions): BridgedRequest {
  if (!isRecord(body)) refuse('body', 'The request body must be a JSON object.');
  const drops = new Drops(options.unbridgeable);
  for (const [name, value] of Object.entries(body)) {
    if (known.has(name) || value === undefined || value === null) continue;
    const meaning = meaningful[name];
    if (meaning !== undefined) refuse(name, `${meaning}.`);
    drops.drop(name, name, `'${name}' has no Chat Completions equivalent and cannot be bridged by ctxgate.`);
  }
  if (typeof body.model !== 'string' || body.model === '')
    refuse('model', "Missing required parameter: 'model'.");
  // Answered at once instead of queued: a client polling for it would find nothing to poll.
  if (body.background === true) refuse('background', "'background' responses cannot be bridged.");
  if (Array.isArray(body.include))
    for (const [index, entry] of body.include.entries())
      drops.drop(
        `include[${index}]`,
        `include ${String(entry)}`,
        "'include' cannot be bridged to Chat Completions.",
      );
  const truncation = body.truncation ?? options.defaultTruncation;
  if (truncation !== 'auto' && truncation !== 'disabled')
    refuse('truncation', "Invalid 'truncation': expected auto or disabled.");
  if (options.limits !== undefined)
    checkInputSize(
      body.input,
      typeof body.instructions === 'string' && body.instructions !== '',
      options.limits,
    );
  const itemIndexes: number[] = [];
  const inputItems = inputItemsOf(body.input, drops, itemIndexes);
  const metadata = metadataOf(body.metadata);
  const reasoning = isRecord(body.reasoning) ? body.reasoning : undefined;
  if (reasoning !== undefined)
    for (const name of Object.keys(reasoning))
      if (name !== 'effort' && reasoning[name] !== undefined && reasoning[name] !== null)
        drops.drop(
          `reasoning.${name}`,
          `reasoning.${name}`,
          `'reasoning.${name}' cannot be bridged to Chat Completions.`,
        );
  const chatFields: Record<string, unknown> = { model: body.model };
  const copy = (from: string, to = from): void => {
    if (body[from] !== undefined && body[from] !== null) chatFields[to] = body[from];
  };
  for (const name of ['temperature', 'top_p', 'user', 'seed', 'stop']) copy(name);
  for (const name of ['frequency_penalty', 'presence_penalty', 'logit_bias', 'service_tier']) copy(name);
  // Prompt caching's directives: Chat Completions takes the same fields (GPT-5.6's options, 24h retention).
  for (const name of [
    'safety_identifier',
    'prompt_cache_key',
    'prompt_cache_retention',
    'prompt_cache_options',
  ])
    copy(name);
  copy('max_output_tokens', outputCapField(String(body.model)));
  const bridgedTools = toolsOf(body.tools, body.input, drops);
  const choice = toolChoiceOf(body.tool_choice, bridgedTools.tools);
  // Tool calling's settings go with tools only (OpenAI refuses them without), as a hosted tool alone is not.
  if (choice.tools !== undefined && choice.tools.length > 0) {
    chatFields.tools = choice.tools;
    if (choice.toolChoice !== undefined) chatFields.tool_choice = choice.toolChoice;
    copy('parallel_tool_calls');
  } else if (choice.toolChoice === 'required')
    refuse('tool_choice', "'tool_choice' requires a tool, and none of this request's tools can be bridged.");
  // Asked for a summary: tools stay (calls in the history need them), none is called, the answer read whole.
  const compaction = inputItems.at(-1)?.type === 'compaction_trigger';
  if (compaction && chatFields.tools !== undefined) chatFields.tool_choice = 'none';
  const responseFormat = responseFormatOf(body.text);
  if (responseFormat !== undefined) chatFields.response_format = responseFormat;
  if (isRecord(body.text) && typeof body.text.verbosity === 'string')
    chatFields.verbosity = body.text.verbosity;
  if (typeof reasoning?.effort === 'string') chatFields.reasoning_effort = reasoning.effort;
  const stream = body.stream === true;
  if (stream && !compaction) {
    chatFields.stream = true;
    chatFields.stream_options = { include_usage: true };
  }
  const instructions =
    typeof body.instructions === 'string' && body.instructions !== ''
      ? { role: 'system', content: body.instructions }
      : undefined;
  const sources = { origins: [] as number[], strings: [] as Array<readonly StringSource[] | undefined> };
  const messages = messagesOf(inputItems, sources);
  return {
    chatFields,
    instructions,
    inputItems,
    messages,
    sources: {
      origins: Int32Array.from(sources.origins, (item) => (item < 0 ? -1 : (itemIndexes[item] ?? -1))),
      strings: sources.strings,
    },
    itemSources: { origins: Int32Array.from(itemIndexes), fields: inputItems.map(longStringField) },
    previousResponseId: typeof body.previous_response_id === 'string' ? body.previous_response_id : undefined,
    store: body.store !== false,
    stream,
    compaction,
    truncation,
    dropped: drops.names,
    toolNames: bridgedTools.names,
    toolsFromInput: bridgedTools.fromInput,
    echo: {
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      metadata,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: body.previous_response_id ?? null,
      temperature: body.temperature ?? null,
      top_p: body.top_p ?? null,
      tool_choice: body.tool_choice ?? 'auto',
      tools: body.tools ?? [],
      text: body.text ?? { format: { type: 'text' } },
      truncation,
      store: body.store !== false,
      user: body.user ?? null,
      reasoning: body.reasoning ?? null,
    },
  };
}

export interface ResponseMeta {
  id: string;
  /** The answer is a compaction's summary (BridgedRequest), and the client asked for it as a stream. */
  compaction?: { stream: boolean };
  createdAt: number;
  model: string;
  echo: Record<string, unknown>;
  /** The request's chat tools that stand for a namespaced or a custom tool (BridgedRequest). */
  tools?: ToolNames;
}

/**
 * A chat tool call as a Response output item: a function call, or a custom tool's call with the input
 * it was given, named as the client named the tool (its namespace apart).
 */
export function callItemOf(
  id: string,
  callId: unknown,
  name: string,
  args: string,
  status: string,
  tools: ToolNames | undefined,
): InputItem {
  const tool = tools?.get(name);
  if (tool === undefined)
    return { id, type: 'function_call', status, call_id: callId, name, arguments: args };
  if (tool.local !== undefined) return localCallItem(tool.local, id, callId, args, status);
  if (tool.search === true)
    return {
      id,
      type: 'tool_search_call',
      status,
      call_id: callId,
      execution: 'client',
      arguments: status === 'completed' ? searchArguments(args) : {},
    };
  const namespace = tool.namespace === undefined ? {} : { namespace: tool.namespace };
  if (!tool.custom)
    return {
      id,
      type: 'function_call',
      status,
      call_id: callId,
      ...namespace,
      name: tool.name,
      arguments: args,
    };
  return {
    id,
    type: 'custom_tool_call',
    status,
    call_id: callId,
    ...namespace,
    name: tool.name,
    input: customInput(args),
  };
}

/**
 * What OpenAI's tool search gives before the first call of a deferred tool it loaded: its call (the tool's
 * path) and its output (the tool's definition, in its namespace), both run by the server. Beside a
 * search OpenAI runs, a chat model is given every deferred tool; a client that keeps track of what was
 * loaded (the Agents SDK refuses a call of a deferred tool no search loaded) reads these.
 */
export function searchItemsOf(tool: BridgedTool): InputItem[] {
  const path = tool.namespace === undefined ? tool.name : `${tool.namespace}.${tool.name}`;
  const fields = { status: 'completed', call_id: null, execution: 'server' };
  return [
    Object.assign({ id: newId('tsc'), type: 'tool_search_call' }, fields, { arguments: { paths: [path] } }),
    Object.assign({ id: newId('tso'), type: 'tool_search_output' }, fields, { tools: [tool.loads] }),
  ];
}

/** The arguments of a tool search's call as the object they are (a query alone when not JSON). */
function searchArguments(args: string): Record<string, unknown> {
  // Not a JSON object: the model wrote its query.
  return argumentsObject(args) ?? { query: args };
}

/** The prefix of the id of an output item that calls `tool` (OpenAI's: fc, ctc, tsc, sh, apc). */
export function callIdPrefix(tool: BridgedTool | undefined): string {
  if (tool?.local !== undefined) return tool.local === 'shell' ? 'sh' : 'apc';
  return tool?.search === true ? 'tsc' : tool?.custom === true ? 'ctc' : 'fc';
}

/** The input of a custom tool's call: the `input` of the arguments the model wrote, else those as they are. */
export function customInput(args: string): string {
  // Not a JSON object of an input: the model wrote the input itself.
  const input = argumentsObject(args)?.input;
  return typeof input === 'string' ? input : args;
}

/**
 * A chat reply's `reasoning_content` (DeepSeek, Kimi, Qwen as vLLM serves it) as a reasoning item with the
 * text as it is — as OpenAI gives the reasoning of its open-weight models — which a client sends back
 * with the call it preceded (messagesOf).
 */
export function reasoningItemOf(id: string, text: string): InputItem {
  return { id, type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text }] };
}

/**
 * A reasoning item that holds no reasoning, only what the provider gave with a reply and needs back —
 * its calls' `extra_content` (Gemini's thought signatures), its `reasoning_details` (OpenRouter's) — in
 * its `encrypted_content` (carried-state.ts): a client sends it back as it got it, and messagesOf puts
 * it back on the message and its calls. Undefined when the reply holds nothing such.
 */
export function carrierItemOf(
  id: string,
  reply: { tool_calls?: unknown; reasoning_details?: unknown },
): InputItem | undefined {
  const state = carriedStateOf(reply);
  return state === undefined
    ? undefined
    : { id, type: 'reasoning', summary: [], encrypted_content: carrierOf(state) };
}

/**
 * The one output item of a compaction (BridgedRequest): the summary the model wrote, in a `compaction`
 * item's `encrypted_content` (carried-state.ts), which the client sends back in place of the history.
 */
export function compactionItemOf(id: string, summary: string): InputItem {
  return { id, type: 'compaction', encrypted_content: compactionCarrierOf(summary) };
}

/**
 * The user's messages of a conversation being compacted, as output items (POST /v1/responses/compact
 * answers them, then its compaction item, as OpenAI does): those of the chain, from the chat messages the
 * store holds (their text and image parts), earlier compactions' summaries left out; then the input's, as
 * the client sent them but with their content as parts.
 */
export function userItemsOf(
  chain: ReadonlyArray<Record<string, unknown>>,
  items: readonly InputItem[],
): InputItem[] {
  const fromChain = chain.flatMap((message): InputItem[] => {
    if (message.role !== 'user') return [];
    const content = message.content;
    const parts: InputItem[] =
      typeof content === 'string'
        ? [{ type: 'input_text', text: content }]
        : Array.isArray(content)
          ? content.flatMap((part: unknown): InputItem[] =>
              !isRecord(part)
                ? []
                : part.type === 'text' && typeof part.text === 'string'
                  ? [{ type: 'input_text', text: part.text }]
                  : part.type === 'image_url' &&
                      isRecord(part.image_url) &&
                      typeof part.image_url.url === 'string'
                    ? [{ type: 'input_image', image_url: part.image_url.url }]
                    : [],
            )
          : [];
    const first = parts[0]?.text;
    if (parts.length === 0 || (typeof first === 'string' && first.startsWith(compactedHistory))) return [];
    return [{ id: newId('msg'), type: 'message', role: 'user', content: parts }];
  });
  // As output items are: typed, with parts (a client reads them so), even where the client sent a string.
  const fromInput = items
    .filter((item) => (item.type ?? 'message') === 'message' && item.role === 'user')
    .map((item) =>
      Object.assign({ type: 'message' }, item, {
        content:
          typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : item.content,
      }),
    );
  return [...fromChain, ...fromInput];
}

/**
 * What the carrier items among `items` hold, each read once: for calls, by call id; and each carrier's
 * state, by its item (both undefined when no item is a carrier).
 */
function carriedIn(items: readonly InputItem[]): {
  extras: Map<string, Record<string, unknown>> | undefined;
  states: Map<InputItem, CarriedState> | undefined;
} {
  let extras: Map<string, Record<string, unknown>> | undefined;
  let states: Map<InputItem, CarriedState> | undefined;
  for (const item of items) {
    if (item.type !== 'reasoning' || !isCarrier(item.encrypted_content)) continue;
    const state = readCarrier(item.encrypted_content);
    (states ??= new Map()).set(item, state);
    for (const [id, extra] of state.calls) (extras ??= new Map()).set(id, extra);
  }
  return { extras, states };
}

/**
 * Output items of an assistant chat message: its reasoning, the item that carries what the provider needs
 * back (carrierItemOf), its text as a message item, then its tool calls.
 */
export function outputItemsOf(reply: Record<string, unknown> | undefined, tools?: ToolNames): InputItem[] {
  const items: InputItem[] = [];
  // The content as a string, or as chunks of text and thinking (Mistral's reasoning models).
  const { text, thinking } = chunkTexts(reply?.content);
  const reasoning = reasoningOf(reply)?.text ?? thinking;
  if (reasoning !== '') items.push(reasoningItemOf(newId('rs'), reasoning));
  const carrier = reply === undefined ? undefined : carrierItemOf(newId('rs'), reply);
  if (carrier !== undefined) items.push(carrier);
  if (text !== '')
    items.push({
      id: newId('msg'),
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    });
  // Deferred tools loaded in this answer (BridgedTool.loads): once each.
  const loading = new Set<string>();
  for (const call of (reply?.tool_calls as Array<Record<string, unknown>> | undefined) ?? []) {
    const fn = call.function as { name?: unknown; arguments?: unknown } | undefined;
    const name = typeof fn?.name === 'string' ? fn.name : '';
    const args = typeof fn?.arguments === 'string' ? fn.arguments : '';
    const tool = tools?.get(name);
    if (tool?.loads !== undefined && !loading.has(name)) {
      loading.add(name);
      items.push(...searchItemsOf(tool));
    }
    items.push(callItemOf(newId(callIdPrefix(tool)), call.id, name, args, 'completed', tools));
  }
  return items;
}

export function usageOf(usage: ResponseUsageCounts) {
  const input = usage.promptTokens ?? 0;
  const output = usage.completionTokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    total_tokens: input + output,
  };
}

/** What a Response's usage is made of: the chat usage's counts, and what its cache held and it reasoned. */
export interface ResponseUsageCounts {
  promptTokens?: number | undefined;
  completionTokens?: number | undefined;
  cachedTokens?: number | undefined;
  reasoningTokens?: number | undefined;
}

/** A chat answer's usage as a Response's counts (usage-details.ts for the provider's names). */
export function responseUsageCounts(usage: unknown, countedPrompt?: number): ResponseUsageCounts {
  const counts = (usage ?? {}) as { prompt_tokens?: unknown; completion_tokens?: unknown };
  return {
    promptTokens: typeof counts.prompt_tokens === 'number' ? counts.prompt_tokens : countedPrompt,
    completionTokens: typeof counts.completion_tokens === 'number' ? counts.completion_tokens : undefined,
    cachedTokens: cachedTokensOf(usage),
    reasoningTokens: reasoningTokensOf(usage),
  };
}

/** The Response object for what the model produced (`status` from the chat finish reason). */
export function responseObject(
  meta: ResponseMeta,
  output: InputItem[],
  finishReason: unknown,
  usage: ReturnType<typeof usageOf> | null,
  status?: 'in_progress',
): Record<string, unknown> {
  const incomplete = finishReason === 'length';
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.createdAt,
    status: status ?? (incomplete ? 'incomplete' : 'completed'),
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    model: meta.model,
    output,
    usage,
    ...meta.echo,
  };
}
