// Token accounting for chat requests, by the OpenAI cookbook method: 3 tokens of framing per message,
// every string field of a message encoded (role, content, name, tool_call_id, reasoning content, …),
// 1 more per name, 3 to prime the reply; tool definitions rendered the way the provider renders them into
// the prompt — OpenAI's families as a TypeScript namespace (checked against published API counts), other
// models as the JSON their chat templates write (`tool_format`). The cookbook leaves some shapes out; for
// those: text parts count as their text, images by the tile formula, each tool call as its id, function
// name and arguments plus 3 tokens of framing (as the API counts a function call), null or missing
// content as nothing.
import { imageTokens } from './image-tokens.js';
import { filePartTokens } from './file-tokens.js';
import type { CountPrecision } from '../tokenizer/tiktoken-tokenizers.js';
import type { ContextMessage, Tokenizer } from './types.js';
import { sliceWhole } from '../text-slices.js';

export const tokensPerMessage = 3;
export const tokensPerName = 1;
export const replyPrimingTokens = 3;
/** What the API adds around each function call of an assistant message. */
export const tokensPerToolCall = 3;

/** How a provider writes tool definitions into the prompt. */
export type ToolFormat = 'typescript' | 'json';

function messageTextOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Array<{ text?: unknown }>)
    .map((part) => (typeof part?.text === 'string' ? part.text : ''))
    .join('');
}

function contentTokens(content: unknown, tokenizer: Tokenizer): number {
  if (typeof content === 'string') return tokenizer.count(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content as Array<Record<string, unknown>>) {
    if (typeof part !== 'object' || part === null) continue;
    if (typeof part.text === 'string') total += tokenizer.count(part.text);
    else if (typeof part.refusal === 'string') total += tokenizer.count(part.refusal);
    else if (part.type === 'image_url') total += imagePartTokens(part);
    else if (part.type === 'file') total += filePartTokens(part);
  }
  return total;
}

/**
 * Where an image's tokens are kept on its `image_url` object once counted: a request counts its images
 * more than once (its prompt, what it holds that the provider counts its own way, that again against
 * the answer's usage), and a session's stored messages are the same objects from one request to the
 * next. A symbol key, not enumerable: never written out, not copied by a spread; nothing changes a
 * message in place.
 */
const countedImageTokens = Symbol('ctxgate.imageTokens');

/** An image part's tokens by OpenAI's tile formula. */
function imagePartTokens(part: Record<string, unknown>): number {
  const image = part.image_url as
    { url?: unknown; detail?: unknown; [countedImageTokens]?: number } | undefined;
  if (typeof image !== 'object' || image === null) return imageTokens('', undefined);
  const known = image[countedImageTokens];
  if (known !== undefined) return known;
  const tokens = imageTokens(
    typeof image.url === 'string' ? image.url : '',
    typeof image.detail === 'string' ? image.detail : undefined,
  );
  if (Object.isExtensible(image))
    Object.defineProperty(image, countedImageTokens, { value: tokens, configurable: true });
  return tokens;
}

/**
 * The content parts of these messages whose tokens the gateway can only guess — images (by the tile
 * formula), files (a PDF by its pages: file-tokens.ts), audio (not at all): a provider sizes them its own
 * way — and its guess of them.
 */
export function guessedParts(messages: readonly ContextMessage[]): { parts: number; tokens: number } {
  let parts = 0;
  let tokens = 0;
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as Array<Record<string, unknown>>) {
      if (typeof part !== 'object' || part === null) continue;
      if (typeof part.text === 'string' || typeof part.refusal === 'string') continue;
      parts++;
      if (part.type === 'image_url') tokens += imagePartTokens(part);
      else if (part.type === 'file') tokens += filePartTokens(part);
    }
  }
  return { parts, tokens };
}

/** Tokens one message adds to a prompt, framing included. */
export function countMessageTokens(message: ContextMessage, tokenizer: Tokenizer): number {
  let total = tokensPerMessage;
  for (const key in message) {
    const value = message[key];
    if (key === 'content') total += contentTokens(value, tokenizer);
    else if (key === 'tool_calls') {
      for (const call of (value as ContextMessage['tool_calls']) ?? []) {
        total +=
          tokensPerToolCall +
          tokenizer.count(call.id ?? '') +
          tokenizer.count(call.function?.name ?? '') +
          tokenizer.count(call.function?.arguments ?? '');
      }
    } else if (typeof value === 'string') {
      total += tokenizer.count(value);
      if (key === 'name') total += tokensPerName;
    }
  }
  return total;
}

interface JsonSchema {
  type?: unknown;
  description?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: unknown;
  items?: JsonSchema;
  enum?: unknown;
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function literal(value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : String(value);
}

/**
 * What rendering tool definitions may still write, in characters. Indentation and comment marks make a
 * body's text longer as it is written (a description of empty lines 28 objects deep, 2 bytes of JSON a
 * line, writes 62 characters a line): past the limit the definitions are more than any window holds,
 * and writing on would only cost time and memory.
 */
interface RenderBudget {
  left: number;
}

/** Thrown when rendering runs past its budget. */
class RenderTooLong extends Error {}

function charge(budget: RenderBudget, chars: number): void {
  budget.left -= chars;
  if (budget.left < 0) throw new RenderTooLong();
}

/** A JSON schema as the TypeScript type OpenAI writes for it into the prompt. */
function schemaType(schema: JsonSchema, indent: number, budget: RenderBudget): string {
  if (!isRecord(schema)) return 'any';
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives))
    return alternatives.map((option) => schemaType(option, indent, budget)).join(' | ');
  if (Array.isArray(schema.enum)) return charged(schema.enum.map(literal).join(' | '), budget);
  if (schema.const !== undefined) return charged(literal(schema.const), budget);
  if (Array.isArray(schema.type)) return typeUnion(schema, schema.type, indent, budget);
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return isRecord(schema.items) ? `${schemaType(schema.items, indent, budget)}[]` : 'any[]';
    case 'object':
      if (!isRecord(schema.properties) || Object.keys(schema.properties).length === 0) return 'object';
      charge(budget, indent + 3);
      return `{\n${schemaProperties(schema, indent + 2, budget)}\n${' '.repeat(indent)}}`;
    default:
      return isRecord(schema.properties)
        ? schemaType(Object.assign({}, schema, { type: 'object' }), indent, budget)
        : 'any';
  }
}

function charged(text: string, budget: RenderBudget): string {
  charge(budget, text.length);
  return text;
}

/** What a listed type is written as: a type without a TypeScript name of its own is its schema's shape. */
function typeKind(type: unknown, schema: JsonSchema): string {
  switch (type) {
    case 'string':
    case 'boolean':
    case 'null':
    case 'array':
    case 'object':
      return type;
    case 'number':
    case 'integer':
      return 'number';
    default:
      return isRecord(schema.properties) ? 'object' : 'any';
  }
}

/**
 * A schema with a list of types (`["string", "null"]`) as the union of what each is written as, each
 * written once: a type listed twice, or two names written as the same object, would write the schema's
 * properties again for each, and a one-kilobyte schema nested twenty deep 2^20 times.
 */
function typeUnion(
  schema: JsonSchema,
  types: readonly unknown[],
  indent: number,
  budget: RenderBudget,
): string {
  const kinds = new Set(types.map((type) => typeKind(type, schema)));
  return [...kinds]
    .map((kind) =>
      kind === 'any' ? 'any' : schemaType(Object.assign({}, schema, { type: kind }), indent, budget),
    )
    .join(' | ');
}

/** A description as comment lines, each line at the indentation (read line by line, within the budget). */
function writeComment(lines: string[], text: unknown, indent: number, budget: RenderBudget): void {
  if (typeof text !== 'string' || text === '') return;
  const margin = `${' '.repeat(indent)}// `;
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n', start);
    const line = end === -1 ? text.slice(start) : text.slice(start, end);
    charge(budget, margin.length + line.length + 1);
    lines.push(margin + line);
    if (end === -1) return;
    start = end + 1;
  }
}

/** An object schema's properties, one per line, with their descriptions and defaults as comments. */
function schemaProperties(schema: JsonSchema, indent: number, budget: RenderBudget): string {
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const lines: string[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    writeComment(lines, property?.description, indent, budget);
    const optional = required.has(name) ? '' : '?';
    const fallback =
      isRecord(property) && property.default !== undefined
        ? ` // default: ${JSON.stringify(property.default)}`
        : '';
    charge(budget, indent + name.length + fallback.length + 5);
    lines.push(
      `${' '.repeat(indent)}${name}${optional}: ${schemaType(property, indent, budget)},${fallback}`,
    );
  }
  return lines.join('\n');
}

/**
 * The longest tool definitions written out, in characters (of their strings, and of their rendering):
 * some 2 million tokens of prose. Longer ones are more than any window holds; they count as
 * `oversizedToolTokens` without being written, hashed or read further.
 */
export const maxToolDefinitionChars = 8_000_000;

/** What tool definitions longer than `maxToolDefinitionChars` count as: more than any model's window. */
export const oversizedToolTokens = 4_000_000;

/**
 * Whether the strings of `tools` (names, keys and values) hold more than `limit` characters, walked
 * without building anything and given up as soon as they do.
 */
export function toolDefinitionsLongerThan(tools: unknown, limit: number): boolean {
  let left = limit;
  const walk = (value: unknown): boolean => {
    if (typeof value === 'string') left -= value.length;
    else if (Array.isArray(value)) {
      for (const item of value) if (walk(item)) return true;
    } else if (typeof value === 'object' && value !== null)
      for (const key in value) {
        left -= key.length;
        if (walk((value as Record<string, unknown>)[key])) return true;
      }
    return left < 0;
  };
  return walk(tools);
}

/**
 * Tool definitions as OpenAI renders them into the prompt: a TypeScript namespace of function types,
 * descriptions as comments, nested objects, arrays, enums, unions and defaults written out. Tools that
 * are not functions are written as their JSON. Undefined when the text would be longer than `maxChars`.
 */
export function renderToolDefinitions(
  tools: readonly unknown[],
  maxChars = maxToolDefinitionChars,
): string | undefined {
  const budget: RenderBudget = { left: maxChars };
  const lines = ['namespace functions {', ''];
  const others: string[] = [];
  try {
    for (const tool of tools) {
      const definition = isRecord(tool) && isRecord(tool.function) ? tool.function : tool;
      if (!isRecord(definition) || typeof definition.name !== 'string') {
        others.push(charged(JSON.stringify(tool), budget));
        continue;
      }
      writeComment(lines, definition.description, 0, budget);
      const parameters = definition.parameters as JsonSchema | undefined;
      charge(budget, definition.name.length + 24);
      if (
        isRecord(parameters) &&
        isRecord(parameters.properties) &&
        Object.keys(parameters.properties).length > 0
      ) {
        lines.push(`type ${definition.name} = (_: {`, schemaProperties(parameters, 0, budget), '}) => any;');
      } else lines.push(`type ${definition.name} = () => any;`);
      lines.push('');
    }
  } catch (error) {
    if (error instanceof RenderTooLong) return undefined;
    throw error;
  }
  lines.push('} // namespace functions');
  return [...lines, ...others].join('\n');
}

/** What a tool set adds to a prompt beyond its rendered text; 4 less when a system message carries it. */
const toolSetOverhead = 9;
const toolSetSystemReuse = 4;

/**
 * Tokens the tool definitions add to a prompt, as OpenAI renders them. When the prompt starts with a
 * system message the tools join it: 4 tokens less, and that message's text gains a line break.
 */
export function countToolTokens(
  tools: unknown,
  tokenizer: Tokenizer,
  options: { firstSystemText?: string | undefined; format?: ToolFormat } = {},
): number {
  const format = options.format ?? 'typescript';
  return withFirstSystem(
    toolDefinitionTokens(tools, tokenizer, format),
    tokenizer,
    options.firstSystemText,
    format,
  );
}

/**
 * Tokens the tool definitions add to a prompt that does not start with a system message: what a tool
 * set counts by itself, the same for every request that sends it (the planner counts it once per tool
 * set, chat/context-planner.ts).
 */
export function toolDefinitionTokens(tools: unknown, tokenizer: Tokenizer, format: ToolFormat): number {
  if (!Array.isArray(tools) || tools.length === 0) return 0;
  if (toolDefinitionsLongerThan(tools, maxToolDefinitionChars)) return oversizedToolTokens;
  // Chat templates of other models write the definitions as they came, as JSON.
  if (format === 'json') return tokenizer.count(JSON.stringify(tools));
  const rendered = renderToolDefinitions(tools);
  if (rendered === undefined) return oversizedToolTokens;
  return tokenizer.count(rendered) + toolSetOverhead;
}

/**
 * `definitions` (toolDefinitionTokens) in a prompt whose first message is a system message with this
 * text: OpenAI's rendering joins the two, 4 tokens less, and the message's text gains a line break.
 * The JSON of other templates, no tools and definitions too long to send are unchanged.
 */
export function withFirstSystem(
  definitions: number,
  tokenizer: Tokenizer,
  firstSystemText: string | undefined,
  format: ToolFormat,
): number {
  if (firstSystemText === undefined || format === 'json' || definitions === 0) return definitions;
  if (definitions >= oversizedToolTokens) return definitions;
  return (
    definitions +
    tokenizer.count(`${firstSystemText}\n`) -
    tokenizer.count(firstSystemText) -
    toolSetSystemReuse
  );
}

/** The whole prompt: every message, the reply priming and the tool definitions. */
export function countPromptTokens(
  messages: readonly ContextMessage[],
  tools: unknown,
  tokenizer: Tokenizer,
  format: ToolFormat = 'typescript',
): number {
  const first = messages[0];
  const system = first?.role === 'system' || first?.role === 'developer' ? first : undefined;
  let total =
    replyPrimingTokens +
    countToolTokens(tools, tokenizer, {
      firstSystemText: system === undefined ? undefined : messageTextOf(system.content),
      format,
    });
  for (const message of messages) total += countMessageTokens(message, tokenizer);
  return total;
}

/**
 * How much counting one request's messages may cost, in the counting work of bpe-counter.ts (about
 * 6 ns a unit: some 35 ms on the bench's machine, up to 60 ms for the costliest text): past it, what
 * is left to count is estimated at the ratio of tokens to characters found so far in texts of its kind.
 * Counting costs from
 * 34 ns a character (English prose, its words counted before) to 490 (random base64, letters without
 * spaces, uncommon Chinese characters), so a conversation of a few megabytes, or a window that holds
 * tens of them (a model's, or one a client claims with X-Context-Window), would otherwise cost a second
 * of CPU a request; and parsing and forwarding a body of 20 MB already costs some 150 ms. A text counted
 * before costs only its length (a lookup in the tokenizer's cache), so a conversation resent with a
 * few new messages is counted exactly up to 6 million characters: any body counted exactly (4 MB at most).
 */
export const countingWorkLimit = 6_000_000;

/**
 * The bound for a body's precision: a body over 4 MB (counted from samples) already costs some 10 ms a
 * megabyte to read, parse and forward, and most of it is left out, so it counts a quarter as far.
 */
export function countingWorkLimitFor(precision: CountPrecision): number {
  return precision === 'sampled' ? countingWorkLimit / 4 : countingWorkLimit;
}

/** Each message's tokens, and whether any of them is an estimate rather than a count. */
export interface MessageCounts {
  tokens: number[];
  estimated: boolean;
}

/**
 * Counts of a conversation within a bounded CPU time, with `tokenizer` as far as it can be sent: its
 * leading messages up to the first user message, then its newest messages until they hold more than
 * `limitTokens`, then the rest of its first turn, newest first (it is the current turn when the
 * conversation has one user message). Its texts are counted until their counting costs `workLimit`, the
 * rest estimated at the ratio of counted texts of their kind (see boundedTokenizer). Every message between is estimated from its length, four
 * characters a token: those cannot be sent — the counted newest ones already fill the window — so their
 * estimate only ever says how much was left out. A tokenizer without a meter of its work (`workDone`) is
 * not bounded.
 */
export function countNewestWithin(
  messages: readonly ContextMessage[],
  tokenizer: Tokenizer,
  limitTokens: number,
  workLimit = countingWorkLimit,
): MessageCounts {
  const tokens = new Array<number>(messages.length);
  const firstUser = messages.findIndex((message) => message.role === 'user');
  let firstTurnEnd = messages.length;
  if (firstUser !== -1) {
    const next = messages.findIndex((message, index) => index > firstUser && message.role === 'user');
    if (next !== -1) firstTurnEnd = next;
  }
  const bounded = boundedTokenizer(tokenizer, workLimit);
  const count = (index: number) => countMessageTokens(messages[index] as ContextMessage, bounded);
  const anchorEnd = firstUser === -1 ? 0 : firstUser + 1;
  for (let index = 0; index < anchorEnd; index++) tokens[index] = count(index);
  let counted = 0;
  let index = messages.length - 1;
  for (; index >= firstTurnEnd && counted <= limitTokens; index--) {
    tokens[index] = count(index);
    counted += tokens[index] as number;
  }
  const byLengthFrom = index;
  for (; index >= firstTurnEnd; index--)
    tokens[index] = countMessageTokens(messages[index] as ContextMessage, byLength);
  for (index = firstTurnEnd - 1; index >= anchorEnd; index--) tokens[index] = count(index);
  return { tokens, estimated: bounded.estimated() || byLengthFrom >= firstTurnEnd };
}

/**
 * Counts of messages that all may be sent (a session's new messages, a stored response's), bounded as
 * above (by `workLimit` when given).
 */
export function countMessages(
  messages: readonly ContextMessage[],
  tokenizer: Tokenizer,
  workLimit = countingWorkLimit,
): MessageCounts {
  return countNewestWithin(messages, tokenizer, Number.POSITIVE_INFINITY, workLimit);
}

/**
 * What kind of text `text` is, for its ratio of characters to tokens, from 32 characters spread over it:
 * 0 text with spaces (prose, code), 1 text without (base64, hex, minified data: some 1.4 characters a
 * token where prose has 4 to 6), 2 mostly multi-byte characters (CJK: under one).
 */
function textKind(text: string): number {
  const step = Math.max(1, Math.floor(text.length / 32));
  let spaces = 0;
  let multiByte = 0;
  for (let index = 0; index < text.length; index += step) {
    const code = text.charCodeAt(index);
    if (code === 32 || code === 10) spaces++;
    else if (code >= 0x80) multiByte++;
  }
  if (multiByte >= 8) return 2;
  return spaces === 0 ? 1 : 0;
}

/**
 * `tokenizer` until its counting cost `workLimit`; past it, texts over 64 characters at the ratio of
 * tokens to characters it found in texts of their kind (textKind; of all it counted when it counted
 * none of that kind). Shorter texts — roles, names, ids — are still counted, and left out of the ratio.
 * A text costs the work its counting did, and at least its length: one found in the cache costs a
 * lookup that compares it whole, so a repeated body of tens of megabytes is not looked up text by text
 * to its end.
 */
function boundedTokenizer(tokenizer: Tokenizer, workLimit: number): Tokenizer & { estimated(): boolean } {
  const workDone = tokenizer.workDone?.bind(tokenizer);
  let spent = 0;
  // Characters and tokens counted, of each kind of text and (last) of all.
  const chars = [0, 0, 0, 0];
  const tokens = [0, 0, 0, 0];
  // The long texts counted, and their counts, until the limit is reached: their kinds are found only
  // then (most requests never reach it, and finding each text's kind costs ~0.1 ms a request).
  let unsorted: Array<[string, number]> | undefined = [];
  const add = (kind: number, length: number, counted: number): void => {
    chars[kind] = (chars[kind] as number) + length;
    tokens[kind] = (tokens[kind] as number) + counted;
  };
  let estimates = 0;
  return {
    encoding: tokenizer.encoding,
    count(text) {
      if (workDone === undefined) return tokenizer.count(text);
      const long = text.length > 64;
      if (long && (chars[3] as number) > 0 && spent >= workLimit) {
        if (unsorted !== undefined) {
          for (const [seen, counted] of unsorted) add(textKind(seen), seen.length, counted);
          unsorted = undefined;
        }
        estimates++;
        const kind = textKind(text);
        const of = (chars[kind] as number) > 0 ? kind : 3;
        return Math.ceil((text.length * (tokens[of] as number)) / (chars[of] as number));
      }
      const before = workDone();
      const counted = tokenizer.count(text);
      spent += Math.max(text.length, workDone() - before);
      // A role's or an id's ratio would bend the estimate of long texts (10,000 roles of 6 characters
      // a token made 20 MB of text count 19% short).
      if (long) {
        add(3, text.length, counted);
        if (unsorted === undefined) add(textKind(text), text.length, counted);
        else unsorted.push([text, counted]);
      }
      return counted;
    },
    truncate: (text, maxTokens, keep) => tokenizer.truncate(text, maxTokens, keep),
    estimated: () => estimates > 0,
  };
}

/** Four characters a token: the estimate of text that is only ever left out. */
const byLength: Tokenizer = {
  encoding: 'length',
  count: (text) => Math.ceil(text.length / 4),
  truncate: (text, maxTokens, keep) => {
    const kept =
      keep === 'head'
        ? sliceWhole(text, 0, maxTokens * 4)
        : sliceWhole(text, Math.max(0, text.length - maxTokens * 4));
    return { text: kept, tokens: Math.ceil(kept.length / 4) };
  },
};
