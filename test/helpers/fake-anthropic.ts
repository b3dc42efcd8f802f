// A strict fake of Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) for the
// end-to-end tests. It refuses what Anthropic refuses, in Anthropic's words and shape: a key other than
// the one it was given, a missing anthropic-version, a role other than user/assistant (and system,
// right after a user message, for Claude Opus 4.8 and the 5 family, or any model with the
// per-turn-control beta that Claude Code sends: mid-conversation system messages), with thinking on a tool
// loop's last assistant message that does not start with its thinking, a first message that
// is not the user's, a tool_result whose tool_use is not in the previous assistant message, a tool_use
// whose result does not follow, a tool_use id given twice or not of letters, digits, _ and -, a message of no content, a thinking block
// without its signature or with one it did not give for that thinking, more
// than 100 images ("Too much media: 0 document pages + 103 images > 100"), an image over 8000 pixels a
// side or 5 MB of base64 (or, past 20 images, over 2000 pixels), and a prompt over its window
// ("prompt is too long: N tokens > M maximum"), more than 4 cache breakpoints ("A maximum of 4 blocks with
// cache_control may be provided. Found 5.") or a 1-hour one after a 5-minute one, and the escape of a lone surrogate half ("The request body
// is not valid JSON: no low surrogate in string: line 1 column N (char N-1)"). Its token count is its own (cl100k, scaled): not the
// gateway's estimate. It answers by a script, whole or as Anthropic's event stream (a server tool's blocks,
// a compaction and the stop reason as Anthropic streams them), thinking first whenever thinking is on
// (`thinking.type: enabled`), as Claude does; a deferred tool counts once a message references it (a tool
// search's result, a mid-conversation tool change's `tool_addition`). It compacts as Claude
// does (`context_management` edit `compact_20260112`): past the trigger, its answer starts with a
// `compaction` block whose summary is every user message's first sentence; and it reads a conversation from its last
// compaction block of a summary on, every block before it dropped (a signed one must be the first block:
// `compaction_block_misplaced`).
import { anthropicSchemaRefusal, moonshotSchemaRefusal } from './tool-schema-rules.js';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEncoding } from 'js-tiktoken';
import { firstLoneHalf } from './lone-surrogates.js';
import { pngSizeOf } from './png.js';
import { pdfPageTexts } from './pdf.js';
import { startGateway, waitUntilReady, type GatewayHarness } from './start-gateway.js';

type Json = Record<string, unknown>;

const encoding = getEncoding('cl100k_base');
/** Anthropic's tokenizer is not public: it counts more than cl100k does, by this much. */
const countScale = 1.12;

export interface AnthropicReply {
  text?: string;
  toolUse?: { name: string; input: Json };
  /** Several tool calls at once (parallel), after `toolUse`. */
  toolUses?: ReadonlyArray<{ name: string; input: Json }>;
  /** A thinking block before the answer (with its signature). */
  thinking?: string;
  /**
   * Blocks as Anthropic gives them, before the text: a server tool's use and result (web search), a
   * `redacted_thinking`; streamed as Anthropic streams them (a `server_tool_use`'s input as JSON deltas,
   * any other whole at its start).
   */
  blocks?: Json[];
  /** The stop reason, when not the one the content makes (`pause_turn`, `stop_sequence`…). */
  stopReason?: string;
  /** The stop sequence that stopped it (`stopReason: 'stop_sequence'`). */
  stopSequence?: string;
}

export interface RecordedAnthropicRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Json;
  /** The body's bytes as they came (UTF-8). */
  rawBody: string;
  /** The fake's own count of the prompt. */
  inputTokens: number;
  status: number;
  /** A refusal's message (`error.message`), as the fake answered it. */
  refusal?: string | undefined;
}

/** The message of an error body the fake answered. */
function refusalOf(text: string): string | undefined {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    return typeof message === 'string' ? message : undefined;
  } catch {
    return undefined;
  }
}

function blockText(block: unknown): string {
  const record = block as Json | null;
  if (record === null || typeof record !== 'object') return '';
  if (typeof record.text === 'string') return record.text;
  if (typeof record.thinking === 'string') return record.thinking;
  if (record.type === 'tool_use') return `${String(record.name)} ${JSON.stringify(record.input ?? {})}`;
  if (record.type === 'tool_result') return contentText(record.content);
  if (record.type === 'compaction') return typeof record.content === 'string' ? record.content : '';
  // An image is counted apart, by its size (imageTokens), and so is a PDF (documentTokens).
  if (record.type === 'image') return '';
  if (record.type === 'document') {
    const source = (record.source ?? {}) as { type?: unknown; data?: unknown };
    return source.type === 'text' ? String(source.data ?? '') : '';
  }
  return JSON.stringify(record);
}

export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(blockText).join('\n');
  return '';
}

/** The size of a PNG image block, as its header gives it (undefined when the fake cannot read it). */
function imageSize(block: Json): { width: number; height: number } | undefined {
  const data = (block.source as { data?: unknown } | undefined)?.data;
  return typeof data === 'string' ? pngSizeOf(`data:image/png;base64,${data}`) : undefined;
}

/** The longer side of a PNG image block (0 when the fake cannot read its size). */
function imageSide(block: Json): number {
  const size = imageSize(block);
  return size === undefined ? 0 : Math.max(size.width, size.height);
}

/**
 * An image's tokens as Anthropic counts them: width × height / 750, a picture whose size the fake cannot
 * read (not a PNG) as one of the largest Claude takes whole (1,600).
 */
function imageTokens(block: Json): number {
  const size = imageSize(block);
  return size === undefined ? 1_600 : Math.max(1, Math.ceil((size.width * size.height) / 750));
}

/** A picture of a page of a PDF, as Anthropic counts it (a US Letter page, 816×1056 pixels: w × h / 750). */
const pdfPageImageTokens = 1_149;

/** The PDFs of a content (document blocks of base64 data), each as its pages' text. */
export function documentPages(content: unknown): string[][] {
  if (!Array.isArray(content)) return [];
  return (content as Json[]).flatMap((block) => {
    if (block?.type === 'tool_result') return documentPages(block.content);
    const source = block?.type === 'document' ? (block.source as Json | undefined) : undefined;
    if (source?.type !== 'base64' || source.media_type !== 'application/pdf') return [];
    return [pdfPageTexts(Buffer.from(String(source.data), 'base64'))];
  });
}

/**
 * The tools a request's messages reference (tool search: a `tool_reference` in a tool result, as a client's
 * search returns them, or in a server search's `tool_search_tool_result`; a mid-conversation tool change's
 * `tool_addition` by reference).
 */
function referencedTools(messages: unknown): Set<string> {
  const names = new Set<string>();
  const add = (references: unknown) => {
    if (Array.isArray(references))
      for (const reference of references as Json[])
        if (reference?.type === 'tool_reference' && typeof reference.tool_name === 'string')
          names.add(reference.tool_name);
  };
  for (const message of (messages as Json[] | undefined) ?? [])
    for (const block of Array.isArray(message.content) ? (message.content as Json[]) : []) {
      if (block.type === 'tool_result') add(block.content);
      if (block.type === 'tool_search_tool_result') add((block.content as Json | undefined)?.tool_references);
      // A mid-conversation tool change that surfaces a deferred tool by reference.
      const changed = block.tool as Json | undefined;
      if (
        block.type === 'tool_addition' &&
        changed?.type === 'tool_reference' &&
        typeof changed.name === 'string'
      )
        names.add(changed.name);
    }
  return names;
}

/** Whether a block is a compaction that holds a summary (one of `content: null` failed: a no-op). */
const isSummary = (block: unknown): boolean =>
  (block as Json | null)?.type === 'compaction' && typeof (block as Json).content === 'string';

/**
 * The messages Claude reads: from the last compaction block of a summary on (its message's blocks
 * before it dropped too), all of them when there is none.
 */
export function readMessages(messages: unknown): Json[] {
  const all = Array.isArray(messages) ? (messages as Json[]) : [];
  for (let at = all.length - 1; at >= 0; at--) {
    const content = all[at]?.content;
    const block = Array.isArray(content) ? content.findLastIndex(isSummary) : -1;
    if (block >= 0)
      return [{ ...all[at], content: (content as unknown[]).slice(block) }, ...all.slice(at + 1)];
  }
  return all;
}

/**
 * The fake's count of a request's prompt: system, messages (those Claude reads: readMessages) and tools — as Anthropic counts a deferred
 * tool (`defer_loading`, tool search) only once a message references it.
 */
export function anthropicTokens(body: Json): number {
  let text = contentText(body.system);
  let images = 0;
  const messages = readMessages(body.messages);
  for (const message of messages) {
    text += `\n${contentText(message.content)}`;
    for (const image of imageBlocks(message.content)) images += imageTokens(image);
    // Each page of a PDF: its text and a picture of it.
    for (const pages of documentPages(message.content))
      for (const page of pages) images += encoding.encode(page).length + pdfPageImageTokens;
  }
  if (Array.isArray(body.tools)) {
    const referenced = referencedTools(messages);
    text += JSON.stringify(
      (body.tools as Json[]).filter(
        (tool) => tool.defer_loading !== true || referenced.has(String(tool.name)),
      ),
    );
  }
  return Math.ceil((encoding.encode(text).length + images + 4 * messages.length) * countScale);
}

const errorBody = (type: string, message: string): string =>
  JSON.stringify({ type: 'error', error: { type, message } });

/** Anthropic's refusal of a malformed conversation, or undefined. */
/**
 * The signature of a thinking block: bound to its text and to the model that thought it, as Claude's are —
 * "the check fails when a thinking block … differs in any way from what was originally returned (…), or
 * blocks generated by a different model replayed into the conversation" (Anthropic, on
 * anthropics/anthropic-sdk-python#1598) — and to who signed it (`signer`: Anthropic's, or another
 * provider's Anthropic-compatible endpoint, FakeAnthropic `signer`).
 */
export const signature = (answer: number, thinking: string, signer = 'sig', model = ''): string =>
  `${signer}-${answer}-${createHash('sha256').update(`${model}\u0000${thinking}`).digest('hex').slice(0, 8)}`;

const signs = (given: string, thinking: unknown, signer: string, model: unknown): boolean => {
  const answer = new RegExp(`^${signer}-(\\d+)-[0-9a-f]{8}$`).exec(given)?.[1];
  return (
    answer !== undefined &&
    typeof thinking === 'string' &&
    given === signature(Number(answer), thinking, signer, String(model))
  );
};

/** Where a 1-hour cache mark follows a 5-minute one, in the order Anthropic reads them (tools, system, messages). */
function longAfterShort(body: Json): string | undefined {
  let short = false;
  const walk = (blocks: unknown, at: string): string | undefined => {
    if (!Array.isArray(blocks)) return undefined;
    for (const [index, block] of (blocks as Json[]).entries()) {
      if (block?.type === 'tool_result') {
        const inner = walk(block.content, `${at}.${index}.content`);
        if (inner !== undefined) return inner;
      }
      const mark = block?.cache_control as Json | undefined | null;
      if (mark === undefined || mark === null) continue;
      if (mark.ttl === '1h' && short) return `${at}.${index}`;
      if (mark.ttl !== '1h') short = true;
    }
    return undefined;
  };
  const found = walk(body.tools, 'tools') ?? walk(body.system, 'system');
  if (found !== undefined) return found;
  for (const [index, message] of (Array.isArray(body.messages) ? (body.messages as Json[]) : []).entries()) {
    const inMessage = walk(message?.content, `messages.${index}.content`);
    if (inMessage !== undefined) return inMessage;
  }
  return undefined;
}

/** The cache breakpoints of a request, as Anthropic counts them against its 4. */
export function cacheBreakpoints(body: Json): number {
  const marked = (blocks: unknown): number =>
    Array.isArray(blocks)
      ? (blocks as Json[]).reduce(
          (total, block) =>
            total +
            (block?.cache_control === undefined || block.cache_control === null ? 0 : 1) +
            (block?.type === 'tool_result' ? marked(block.content) : 0),
          0,
        )
      : 0;
  return (
    (body.cache_control === undefined || body.cache_control === null ? 0 : 1) +
    marked(body.tools) +
    marked(body.system) +
    (Array.isArray(body.messages) ? (body.messages as Json[]) : []).reduce(
      (total, message) => total + marked(message?.content),
      0,
    )
  );
}

/** What Claude's structured outputs do not constrain, by type: refused in its words. */
const unconstrained: Readonly<Record<string, readonly string[]>> = {
  integer: ['exclusiveMaximum', 'exclusiveMinimum', 'maximum', 'minimum', 'multipleOf'],
  number: ['exclusiveMaximum', 'exclusiveMinimum', 'maximum', 'minimum', 'multipleOf'],
  string: ['maxLength', 'minLength'],
  array: ['maxItems', 'uniqueItems'],
};

/** The most optional properties Claude compiles a grammar for, over a request's schemas. */
const optionalLimit = 24;

/** The first fault Claude refuses in a structured-output schema, in its words (ax-llm/ax#458, BerriAI/litellm#35808). */
function schemaFault(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const node = schema as Json;
  const type = typeof node.type === 'string' ? node.type : undefined;
  if (type === 'object' || (type === undefined && node.properties !== undefined)) {
    if (node.additionalProperties === true)
      return "For 'object' type, 'additionalProperties: true' is not supported. Please set 'additionalProperties' to false";
    if (node.additionalProperties !== false)
      return "For 'object' type, 'additionalProperties' must be explicitly set to false";
  }
  const refused = (unconstrained[type ?? ''] ?? []).filter((key) => node[key] !== undefined);
  if (type === 'array' && typeof node.minItems === 'number' && node.minItems > 1) refused.push('minItems');
  if (refused.length === 1) return `For '${type}' type, property '${refused[0]}' is not supported`;
  if (refused.length > 1)
    return `For '${type}' type, properties ${refused.sort().join(', ')} are not supported`;
  const inner = [
    ...Object.values((node.properties ?? {}) as Json),
    ...Object.values((node.$defs ?? {}) as Json),
    ...(Array.isArray(node.anyOf) ? node.anyOf : []),
    ...(Array.isArray(node.allOf) ? node.allOf : []),
    node.items,
  ];
  for (const each of inner) {
    const fault = schemaFault(each);
    if (fault !== undefined) return fault;
  }
  return undefined;
}

/** Properties a schema leaves optional, counted through every object in it. */
function optionalProperties(schema: unknown): number {
  if (typeof schema !== 'object' || schema === null) return 0;
  const node = schema as Json;
  const properties = Object.keys((node.properties ?? {}) as Json);
  const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
  let count = properties.filter((name) => !required.has(name)).length;
  for (const each of [
    ...Object.values((node.properties ?? {}) as Json),
    ...(Array.isArray(node.anyOf) ? node.anyOf : []),
    node.items,
  ])
    count += optionalProperties(each);
  return count;
}

/**
 * What Claude refuses of structured output (`output_config.format`, the beta's `output_format`): a schema
 * outside its subset, and over the request's schemas held to a grammar (the format's, strict tools'),
 * more optional properties than it compiles.
 */
function outputFormatRefusal(body: Json): string | undefined {
  const config = body.output_config as Json | undefined;
  const [where, format] =
    config?.format !== undefined
      ? ['output_config.format', config.format]
      : ['output_format', body.output_format];
  const schema = (format as Json | undefined)?.schema;
  const fault = format === undefined ? undefined : schemaFault(schema);
  if (fault !== undefined) return `${where}.schema: ${fault}`;
  const strict = (Array.isArray(body.tools) ? (body.tools as Json[]) : []).filter(
    (tool) => tool.strict === true,
  );
  const optional =
    (format === undefined ? 0 : optionalProperties(schema)) +
    strict.reduce((total, tool) => total + optionalProperties(tool.input_schema), 0);
  if (optional > optionalLimit)
    return `Schemas contains too many optional parameters (${optional}), which would make grammar compilation inefficient. Reduce the number of optional parameters in your tool schemas (limit: ${optionalLimit}).`;
  return undefined;
}

/** Where the first of a request's stop sequences begins in `text`: the text before it, and the sequence. */
function stoppedAt(text: string, stops: unknown): { text: string; stop: string } | undefined {
  let found: { text: string; stop: string } | undefined;
  for (const stop of Array.isArray(stops) ? (stops as unknown[]) : []) {
    if (typeof stop !== 'string' || stop === '') continue;
    const at = text.indexOf(stop);
    if (at !== -1 && (found === undefined || at < found.text.length))
      found = { text: text.slice(0, at), stop };
  }
  return found;
}

export function findAnthropicRefusal(
  body: Json,
  perTurnControl = false,
  interleavedThinking = false,
  signer = 'sig',
): string | undefined {
  const messages = body.messages;
  if (typeof body.model !== 'string') return 'model: Field required';
  if (!Array.isArray(messages)) return 'messages: Field required';
  // A thinking budget: at least 1,024, and (but with interleaved thinking, where it spans a turn's
  // answers) under max_tokens.
  const thinking = body.thinking as Json | undefined;
  if (thinking?.type === 'enabled') {
    const budget = Number(thinking.budget_tokens);
    if (!(budget >= 1_024))
      return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (!interleavedThinking && budget >= Number(body.max_tokens))
      return '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';
  }
  const format = outputFormatRefusal(body);
  if (format !== undefined) return format;
  // A temperature past 1, which OpenAI's API takes up to 2: refused for every model.
  if (typeof body.temperature === 'number' && body.temperature > 1) return 'temperature: range: 0..1';
  // Stop sequences: each of some text (litellm#3286: a chat client's "\n"; mcp-web-ui#5: an empty one).
  if (Array.isArray(body.stop_sequences)) {
    const stops = body.stop_sequences as unknown[];
    if (stops.some((stop) => stop === '')) return 'stop_sequences: each stop sequence must be non-empty';
    if (stops.some((stop) => typeof stop === 'string' && !/\S/.test(stop)))
      return 'stop_sequences: each stop sequence must contain non-whitespace';
  }
  // Thinking (a budget, or adaptive) and a tool forced are not taken together (Anthropic's extended thinking
  // docs; mastra-ai/mastra#7507, can1357/oh-my-pi#341).
  const forced = (body.tool_choice as Json | undefined)?.type;
  if (
    (thinking?.type === 'enabled' || thinking?.type === 'adaptive') &&
    (forced === 'any' || forced === 'tool')
  )
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  // Claude Sonnet 4.5 and the models after it take one of the two.
  if (
    /^claude-(?:sonnet|opus|haiku)-4-[5-9]/.test(body.model) &&
    body.temperature !== undefined &&
    body.top_p !== undefined
  )
    return '`temperature` and `top_p` cannot both be specified for this model. Please use only one.';
  const systemInConversation =
    perTurnControl || /claude-(?:opus-4-8|(?:opus|sonnet|haiku|fable|mythos)-5)/.test(body.model);
  for (const [index, message] of (messages as Json[]).entries()) {
    if (message.role === 'system' && systemInConversation) {
      if ((messages[index - 1] as Json | undefined)?.role !== 'user')
        return `messages.${index}: a system message must immediately follow a user message`;
      continue;
    }
    // A system message to a model that takes none there, in Anthropic's words (decolua/9router#1603, a
    // request id of Anthropic's own); any other role as its schema refuses it.
    if (message.role === 'system') return "role 'system' is not supported on this model";
    if (message.role !== 'user' && message.role !== 'assistant')
      return `messages.${index}.role: Input should be 'user' or 'assistant'`;
  }
  // A signed compaction (asked on demand) is sent back first, in place of what it summarizes.
  for (const [index, message] of (messages as Json[]).entries())
    for (const [position, block] of (Array.isArray(message.content)
      ? (message.content as Json[])
      : []
    ).entries())
      if (block.type === 'compaction' && typeof block.signature === 'string' && (index > 0 || position > 0))
        return 'compaction_block_misplaced';
  // The conversation as Claude reads it may start at an assistant message: the one of its compaction.
  // Anthropic's rule for a tool's name (github/copilot-cli#2581: an MCP tool named with a dot).
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  const badTool = tools.findIndex(
    (tool) =>
      typeof tool.name === 'string' && tool.type === undefined && !/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name),
  );
  if (badTool !== -1)
    return `tools.${badTool}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
  // And for its input schema (aliargun/mcp-server-gemini#8: alternatives at the top).
  for (const [index, tool] of tools.entries()) {
    const refusal = tool.type === undefined ? anthropicSchemaRefusal(index, tool.input_schema) : undefined;
    if (refusal !== undefined) return refusal;
  }
  const read = readMessages(messages);
  const opening = read[0];
  // Instructions and nothing else (langchain-ai/langchain#31657: a system message alone, which OpenAI takes).
  if (opening === undefined) return 'messages: at least one message is required';
  if (opening?.role !== 'user' && !(Array.isArray(opening?.content) && isSummary(opening.content[0])))
    return 'messages: first message must use the "user" role';
  const toolUseIds = new Set<unknown>();
  for (const [index, message] of (messages as Json[]).entries()) {
    const blocks = Array.isArray(message.content) ? (message.content as Json[]) : [];
    const previous = (messages as Json[])[index - 1];
    const previousUses = new Set(
      (Array.isArray(previous?.content) ? (previous.content as Json[]) : [])
        .filter((block) => block.type === 'tool_use' && previous?.role === 'assistant')
        .map((block) => block.id),
    );
    for (const [position, block] of blocks.entries()) {
      if (block.type === 'tool_result' && !previousUses.has(block.tool_use_id))
        return (
          `messages.${index}.content.${position}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. ` +
          'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.'
        );
      if (block.type === 'thinking' && typeof block.signature !== 'string')
        return `messages.${index}.content.${position}.thinking.signature: Field required`;
      // A signature is Claude's own, bound to what it signs: any other (another model's, one made up, an
      // empty one) is refused.
      if (block.type === 'thinking' && !signs(String(block.signature), block.thinking, signer, body.model))
        return `messages.${index}.content.${position}: Invalid \`signature\` in \`thinking\` block`;
      if (block.type === 'tool_use') {
        // Another provider's ids (Kimi's functions.<name>:<n>) are refused: farion1231/cc-switch#1181.
        if (typeof block.id !== 'string' || !/^[a-zA-Z0-9_-]+$/.test(block.id))
          return `messages.${index}.content.${position}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
        if (toolUseIds.has(block.id))
          return `messages.${index}.content.${position}: \`tool_use\` ids must be unique`;
        toolUseIds.add(block.id);
      }
    }
    if (message.role === 'assistant') {
      const uses = blocks.filter((block) => block.type === 'tool_use').map((block) => String(block.id));
      const next = (messages as Json[])[index + 1];
      if (uses.length > 0 && next !== undefined) {
        const results = new Set(
          (Array.isArray(next.content) ? (next.content as Json[]) : [])
            .filter((block) => block.type === 'tool_result')
            .map((block) => block.tool_use_id),
        );
        const missing = uses.filter((id) => !results.has(id));
        if (missing.length > 0)
          return (
            `messages.${index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
            'Each `tool_use` block must have a corresponding `tool_result` block in the next message.'
          );
      }
    }
  }
  // With thinking on, the assistant message of the tool calls being answered starts with its thinking.
  const lastAssistant = (messages as Json[]).findLastIndex((message) => message.role === 'assistant');
  const answered = (messages as Json[])[lastAssistant];
  const answerStart = Array.isArray(answered?.content) ? (answered.content as Json[])[0] : undefined;
  if (
    thinking?.type === 'enabled' &&
    Array.isArray(answered?.content) &&
    (answered.content as Json[]).some((block) => block.type === 'tool_use') &&
    answerStart?.type !== 'thinking' &&
    answerStart?.type !== 'redacted_thinking'
  )
    return (
      `messages.${lastAssistant}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(answerStart?.type)}\`. ` +
      'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). ' +
      'We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. ' +
      'Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking'
    );
  if (body.max_tokens === undefined) return 'max_tokens: Field required';
  // At most 4 cache breakpoints in a request: on tools, system blocks, message blocks (a tool result's
  // own blocks included) and the request's top-level (automatic) one.
  const breakpoints = cacheBreakpoints(body);
  if (breakpoints > 4)
    return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  const misordered = longAfterShort(body);
  if (misordered !== undefined)
    return (
      `${misordered}.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. ` +
      'Note that blocks are processed in the following order: `tools`, `system`, `messages`.'
    );
  // A message of no content (but a final assistant message, which Claude goes on from).
  for (const [index, message] of (messages as Json[]).entries())
    if (
      (message.content === '' || (Array.isArray(message.content) && message.content.length === 0)) &&
      !(message.role === 'assistant' && index === messages.length - 1)
    )
      return `messages.${index}: all messages must have non-empty content except for the optional final assistant message`;
  // A text block, or a message's string content, of nothing or only whitespace.
  for (const message of messages as Json[]) {
    const blocks =
      typeof message.content === 'string'
        ? [{ type: 'text', text: message.content }]
        : (message.content as Json[]);
    for (const block of Array.isArray(blocks) ? blocks : [])
      if (block?.type === 'text' && typeof block.text === 'string' && block.text.trim() === '')
        return block.text === ''
          ? 'messages: text content blocks must be non-empty'
          : 'messages: text content blocks must contain non-whitespace text';
  }
  // At most 100 images in a request, a tool result's included (Anthropic's vision limits).
  const images = (messages as Json[]).reduce(
    (total, message) => total + imageBlocks(message.content).length,
    0,
  );
  if (images > maxImages) return `Too much media: 0 document pages + ${images} images > ${maxImages}`;
  // No image of more than 8000 pixels a side, nor of more than 5 MB of base64.
  for (const [index, message] of (messages as Json[]).entries()) {
    const blocks = Array.isArray(message.content) ? (message.content as Json[]) : [];
    for (const [position, block] of blocks.entries())
      for (const image of imageBlocks([block])) {
        const data = (image.source as { data?: unknown } | undefined)?.data;
        if (typeof data === 'string' && data.length > 5_242_880)
          return `messages.${index}.content.${position}.image.source.base64: image exceeds 5 MB maximum: ${data.length} bytes > 5242880 bytes`;
        if (imageSide(image) > 8_000)
          return `messages.${index}.content.${position}.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels`;
      }
  }
  // In a request of more than 20 images, none may be larger than 2000 pixels a side.
  if (images > 20)
    for (const [index, message] of (messages as Json[]).entries()) {
      const blocks = Array.isArray(message.content) ? (message.content as Json[]) : [];
      for (const [position, block] of blocks.entries())
        if (imageBlocks([block]).some((image) => imageSide(image) > 2_000))
          return `messages.${index}.content.${position}.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels`;
    }
  return undefined;
}

/** Images Anthropic takes in one request. */
const maxImages = 100;

/** The image blocks of a message's content, those of its tool results included. */
export function imageBlocks(content: unknown): Json[] {
  if (!Array.isArray(content)) return [];
  return (content as Json[]).flatMap((block) =>
    block.type === 'image' ? [block] : block.type === 'tool_result' ? imageBlocks(block.content) : [],
  );
}

/** Where the first cache breakpoint with a `ttl` is, as Anthropic names a place (`tools.2.custom`, `messages.3.content.0`). */
function cacheTtlPlace(body: Json): string | undefined {
  const hasTtl = (block: unknown) =>
    ((block as Json | null)?.cache_control as Json | undefined)?.ttl !== undefined;
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  const tool = tools.findIndex(hasTtl);
  if (tool !== -1) return `tools.${tool}.custom`;
  const system = Array.isArray(body.system) ? (body.system as Json[]) : [];
  const block = system.findIndex(hasTtl);
  if (block !== -1) return `system.${block}`;
  for (const [index, message] of (Array.isArray(body.messages) ? (body.messages as Json[]) : []).entries()) {
    const content = Array.isArray(message.content) ? (message.content as Json[]) : [];
    for (const [at, part] of content.entries()) {
      if (hasTtl(part)) return `messages.${index}.content.${at}`;
      const inner =
        part.type === 'tool_result' && Array.isArray(part.content) ? (part.content as Json[]) : [];
      const innerAt = inner.findIndex(hasTtl);
      if (innerAt !== -1) return `messages.${index}.content.${at}.content.${innerAt}`;
    }
  }
  return undefined;
}

/** Where the first block of a tool result not of a type among `taken` is, and its type. */
function resultBlockPlace(
  messages: unknown,
  taken: readonly string[],
): { message: number; block: number; inner: number; type: string } | undefined {
  for (const [message, entry] of (Array.isArray(messages) ? (messages as Json[]) : []).entries())
    for (const [block, part] of (Array.isArray(entry.content) ? (entry.content as Json[]) : []).entries()) {
      if (part.type !== 'tool_result' || !Array.isArray(part.content)) continue;
      const inner = (part.content as Json[]).findIndex((item) => !taken.includes(String(item.type)));
      if (inner !== -1) return { message, block, inner, type: String((part.content as Json[])[inner]?.type) };
    }
  return undefined;
}

/** The first type of content block, in the messages or in their tool results, that is not among `taken`. */
function blockTypeNotIn(messages: unknown, taken: readonly string[]): string | undefined {
  for (const message of Array.isArray(messages) ? (messages as Json[]) : [])
    for (const block of Array.isArray(message.content) ? (message.content as Json[]) : []) {
      if (!taken.includes(String(block?.type))) return String(block?.type);
      if (block.type === 'tool_result' && Array.isArray(block.content)) {
        const inner = blockTypeNotIn([{ content: block.content }], taken);
        if (inner !== undefined) return inner;
      }
    }
  return undefined;
}

/**
 * A web search Claude ran (Anthropic's `web_search` server tool), as its answer's blocks give it: the
 * server tool's use, then its result of one page found at `url`.
 */
export function webSearchBlocks(id: string, url: string, title = 'ctxgate 1.0'): Json[] {
  return [
    { type: 'server_tool_use', id, name: 'web_search', input: { query: 'ctxgate release' } },
    {
      type: 'web_search_tool_result',
      tool_use_id: id,
      content: [
        { type: 'web_search_result', url, title, encrypted_content: 'EqgfCioIARgBIiQ3YTQ', page_age: null },
      ],
    },
  ];
}

/** The gateway's configuration lines of an `anthropic` upstream at `baseUrl` serving `models` (YAML). */
export function anthropicUpstreamYaml(name: string, baseUrl: string, models: readonly string[]): string[] {
  return [
    `  - name: ${name}`,
    `    base_url: ${baseUrl}`,
    '    kind: anthropic',
    `    models: ${JSON.stringify(models)}`,
  ];
}

/** What DeepSeek's Anthropic endpoint refuses of what Claude Code sends, in its words (FakeAnthropic `deepseekEndpoint`). */
function deepseekRefuses(body: Json): string | undefined {
  const userId = (body.metadata as Json | undefined)?.user_id;
  if (typeof userId === 'string' && !/^[a-zA-Z0-9_-]+$/.test(userId))
    return "Invalid 'user_id': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.";
  if (
    (body.thinking as Json | undefined)?.type === 'disabled' &&
    (body.output_config as Json | undefined)?.effort !== undefined
  )
    return 'thinking options type cannot be disabled when reasoning_effort is set';
  const forced = (body.tool_choice as Json | undefined)?.type;
  if (forced === 'tool' || forced === 'any') return 'deepseek-reasoner does not support this tool_choice';
  return undefined;
}

/** Where the first block holding a member of `unknown` (`<type>.<member>`) is: `messages.N.content.M.<type>.<member>`. */
function unknownBlockMemberPlace(messages: unknown, unknown: readonly string[]): string | undefined {
  if (unknown.length === 0 || !Array.isArray(messages)) return undefined;
  for (const [index, message] of (messages as Json[]).entries()) {
    if (!Array.isArray(message.content)) continue;
    for (const [at, block] of (message.content as Json[]).entries())
      for (const each of unknown) {
        const [type, member = ''] = each.split('.');
        if (block.type === type && block[member] !== undefined)
          return `messages.${index}.content.${at}.${each}`;
      }
  }
  return undefined;
}

/** What Kimi's Anthropic endpoint does not take, of what Claude Code sends (FakeAnthropic `unexplained`). */
function kimiRefuses(body: Json): boolean {
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  const blocks = (Array.isArray(body.messages) ? (body.messages as Json[]) : []).flatMap((message) =>
    Array.isArray(message.content) ? (message.content as Json[]) : [],
  );
  const inResults = blocks.flatMap((block) =>
    block.type === 'tool_result' && Array.isArray(block.content) ? (block.content as Json[]) : [],
  );
  return (
    tools.some((tool) => tool.defer_loading !== undefined) ||
    [...blocks, ...inResults].some((block) => block.type === 'tool_reference') ||
    body.context_management !== undefined ||
    (typeof body.temperature === 'number' && body.temperature > 1)
  );
}

/** The `anthropic-beta` flag that asks Claude's 1M window (Claude Code's `[1m]` models). */
const longContextFlag = 'context-1m-2025-08-07';

export class FakeAnthropic {
  readonly requests: RecordedAnthropicRequest[] = [];
  private server: Server | undefined;
  /** What the model answers, from the request it was sent. */
  respond: (body: Json) => AnthropicReply = () => ({ text: 'Hello from the fake Anthropic.' });

  constructor(
    private readonly options: {
      window?: number;
      /** Windows of their own, by model name: the rest have `window`. */
      windows?: Readonly<Record<string, number>>;
      apiKey?: string;
      /** The most bytes a Messages request may have: Anthropic's 32 MB (docs: request size limits). */
      maxRequestBytes?: number;
      /** The longest answer the model gives: a larger `max_tokens` is refused in Anthropic's words. */
      maxOutputTokens?: number;
      /**
       * The `anthropic-beta` flags the upstream takes; any other is refused — `named` as Vertex does (and
       * LiteLLM before it passes on: "Unexpected value(s) `x` for the `anthropic-beta` header."), `bare` as
       * Bedrock does ("invalid beta flag"). Anthropic's own API takes them all.
       */
      betas?: { accepted: readonly string[]; refusal: 'named' | 'bare' };
      /**
       * Models served without Claude's 1M window to this key (Haiku; a subscription without it): a request
       * flagged `context-1m-2025-08-07` refused in Anthropic's words for that — `subscription` ("The long
       * context beta is not yet available for this subscription."), `authentication` ("This authentication
       * style is incompatible with the long context beta header.", a Pro plan's OAuth token).
       */
      noLongContext?: Readonly<Record<string, 'subscription' | 'authentication'>>;
      /** Models whose window is Claude's 1M when the request is flagged `context-1m-2025-08-07` (Sonnet 4, 4.5). */
      longContext?: readonly string[];
      /**
       * Of `longContext`, those whose key is not billed for the million: a flagged prompt past 200,000 tokens
       * answered with Anthropic's 429 for it ("Extra usage is required for long context requests.").
       */
      longContextUnbilled?: readonly string[];
      /**
       * Models of fast mode whose key has no usage credits for it: a request asking `speed: "fast"` answered
       * with Anthropic's 429 for that ("Usage credits are required for fast mode.", its overage header
       * saying why); at standard speed, answered.
       */
      fastUnbilled?: readonly string[];
      /**
       * Models that always think, as Volcengine's Anthropic endpoint serves GLM-5.3: thinking turned off is
       * refused in its words and shape ("thinking.type `disabled` is not supported by this model …").
       */
      alwaysThinks?: readonly string[];
      /** Keys (`x-api-key`) that have usage credits for fast mode whatever the model: not refused for it. */
      fastCreditedKeys?: readonly string[];
      /**
       * Members of a request the upstream does not know, refused as Vertex refuses them ("diagnostics: Extra
       * inputs are not permitted": Claude Code's, anthropics/claude-code#82539).
       */
      unknownMembers?: readonly string[];
      /**
       * Members of a content block the upstream does not know, as `<type>.<member>`, refused by their place
       * as Vertex and Bedrock refuse them ("messages.7.content.1.tool_use.caller: Extra inputs are not
       * permitted": langchain-ai/langchain-google#1446; a text's citations, anthropics/claude-code#146).
       */
      unknownBlockMembers?: readonly string[];
      /**
       * Models that take thinking in one mode only: adaptive (Opus 4.7 and later; MiniMax-M3 on MiniMax's API,
       * refused in its words for a `MiniMax-` model), or a budget (Sonnet 4.5, Haiku 4.5; MiniMax M3 behind
       * another endpoint, anomalyco/opencode#35138).
       */
      thinkingModes?: Readonly<Record<string, 'adaptive' | 'enabled'>>;
      /**
       * As GitHub Copilot's Messages endpoint serves Claude: the efforts each model takes (another refused in
       * its words, caozhiyuan/copilot-api#190), or none at all (`output_config` refused, anomalyco/opencode#24527);
       * `no effort` as Anthropic serves Haiku 4.5 ("This model does not support the effort parameter.").
       */
      efforts?: Readonly<Record<string, readonly string[] | 'none' | 'no effort'>>;
      /**
       * Models that take no sampling settings, as Anthropic serves Claude Opus 4.7 and later: a `temperature`,
       * `top_p` or `top_k` refused in its words ("`temperature` is deprecated for this model.":
       * sipeed/picoclaw#2939, RooCodeInc/Roo-Code#12162).
       */
      noSampling?: readonly string[];
      /**
       * Models served as OpenRouter's Messages endpoint serves a model not Anthropic's: no tool loaded on
       * demand, and no context management (its member or its beta flag) in its words, which name the flag
       * (multica-ai/multica#450).
       */
      noDeferral?: readonly string[];
      /**
       * Models served as Volcano Engine's Ark serves them (its coding plan's Messages endpoint): a content
       * block of a type not among these, in a message or a tool result, is refused in its words, which name
       * the types it takes (farion1231/cc-switch#1519, Wei-Shaw/sub2api#3677, anthropics/claude-code#30912).
       */
      blockTypes?: Readonly<Record<string, readonly string[]>>;
      /**
       * Models served as OpenCode Zen serves Claude: a tool result holding a block of a type other than
       * text or an image is refused in its words (anomalyco/opencode#43502); a message's own go.
       */
      zenResults?: readonly string[];
      /**
       * Models served by an Anthropic-compatible endpoint that takes no system message in the conversation
       * (Anthropic's mid-conversation system messages, which Claude Code sends): refused in DeepSeek's words
       * (`serde`: deepseek-ai/DeepSeek-V3#1369) or a FastAPI proxy's (`pydantic`, a 422:
       * Alishahryar1/free-claude-code#1041, ogx-ai/ogx#5982), or a relay's before ChatGPT's Codex backend
       * (`relay`: "System messages are not allowed", router-for-me/CLIProxyAPI#3625).
       */
      noSystemMessages?: Readonly<Record<string, 'serde' | 'pydantic' | 'relay'>>;
      /**
       * Models served as Bedrock serves Claude before its hour-long cache: a cache breakpoint's `ttl` is
       * refused in its words, by its place (BerriAI/litellm#15880).
       */
      noCacheTtl?: readonly string[];
      /**
       * Models served as Bedrock serves Sonnet 5 and Opus 5.5: a tool's `strict` (strict tool use) is
       * refused in its words, by its place (BerriAI/litellm#33193, lobehub/lobehub#19876).
       */
      noStrictTools?: readonly string[];
      /**
       * Models served as Fireworks' Anthropic-compatible endpoint serves them (and OpenCode Zen's for a model
       * not Claude): a member of a tool other than its name, description, schema and type is refused by its
       * place, every one in one 400, in Fireworks' words ("Extra inputs are not permitted, field:
       * 'tools[0].eager_input_streaming'; …": anomalyco/opencode#24975).
       */
      extraToolMembers?: readonly string[];
      /**
       * Models served as GitHub Copilot's Messages endpoint (and Claude on Bedrock) serve them: a system prompt
       * holding Claude Code's billing line is refused in their words (ericc-ch/copilot-api#174).
       */
      reservedBilling?: readonly string[];
      /**
       * The models `GET /v1/models` lists, newest first, as Anthropic lists them: 20 a page unless `limit`
       * asks for more (up to 1,000), with `has_more`. None by default.
       */
      listedModels?: readonly string[];
      /**
       * Models served as Kimi's Anthropic endpoint serves them: a request it does not take — a tool loaded
       * on demand, a tool search's `tool_reference` block, `context_management`, a temperature above 1 —
       * answered with its one message, "Invalid request Error" (MoonshotAI/kimi-cli#1449,
       * farion1231/cc-switch#2941, MoonshotAI/Kimi-K2.5#5); more than 128 tools in its words for them.
       */
      unexplained?: readonly string[];
      /**
       * Models served as DeepSeek's Anthropic endpoint serves V4: a forced tool refused in the words of the
       * model it routes to (deepseek-ai/awesome-deepseek-integration#598, #606), thinking turned off beside an
       * effort (deepseek-ai/DeepSeek-V3#1397), a `metadata.user_id` of other than letters, digits, `_` and `-`
       * (deepseek-ai/awesome-deepseek-agent#67).
       */
      deepseekEndpoint?: readonly string[];
      /**
       * Models served as Kimi's Anthropic endpoint holds a tool's `input_schema` to Moonshot Flavored JSON
       * Schema: the first fault refused in its validator's words (test/helpers/tool-schema-rules.ts).
       */
      moonshotSchemas?: readonly string[];
      /**
       * Models served as Ollama's Anthropic endpoint serves Qwen 3.8, whose chat template takes a system
       * message first only: one in the conversation is refused with a 500 (ollama/ollama#17774).
       */
      templateSystemFirst?: readonly string[];
      /**
       * Who signs its thinking (the signatures' prefix): another provider's Anthropic-compatible endpoint
       * signs its own way — z.ai's (tombii/better-ccflare#52), MiniMax's (decolua/9router#922) — and refuses
       * every signature but its own, as Anthropic refuses theirs. Anthropic's by default.
       */
      signer?: string;
    } = {},
  ) {}

  get messageRequests(): RecordedAnthropicRequest[] {
    return this.requests.filter((request) => request.path === '/v1/messages');
  }

  async start(): Promise<string> {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const path = (request.url ?? '').split('?')[0] ?? '';
    let body: Json = {};
    const send = (status: number, text: string): void => {
      this.requests.push({
        path,
        headers: request.headers,
        body,
        rawBody: Buffer.concat(chunks).toString('utf8'),
        inputTokens: anthropicTokens(body),
        status,
        refusal: status >= 400 ? refusalOf(text) : undefined,
      });
      response.writeHead(status, {
        'content-type': 'application/json',
        'request-id': `req_${this.requests.length}`,
      });
      response.end(text);
    };
    // Anthropic refuses a request over its size at its edge, the body unread.
    if (
      chunks.reduce((total, chunk) => total + chunk.length, 0) > (this.options.maxRequestBytes ?? 32_000_000)
    )
      return send(
        413,
        JSON.stringify({ error: { type: 'request_too_large', message: 'Request exceeds the maximum size' } }),
      );
    const listed = this.options.listedModels ?? [];
    const modelObject = (id: string, index: number) => ({
      type: 'model',
      id,
      display_name: id.replace(/^claude-/, 'Claude ').replace(/-/g, ' '),
      created_at: new Date(Date.UTC(2026, 10, 1) - index * 86_400_000).toISOString(),
    });
    // One model, as Anthropic's `GET /v1/models/{model_id}` gives it; a model it does not serve is a 404.
    if (request.method === 'GET' && path.startsWith('/v1/models/')) {
      if (this.options.apiKey !== undefined && request.headers['x-api-key'] !== this.options.apiKey)
        return send(401, errorBody('authentication_error', 'invalid x-api-key'));
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      const index = listed.indexOf(id);
      if (index === -1) return send(404, errorBody('not_found_error', `model: ${id}`));
      return send(200, JSON.stringify(modelObject(id, index)));
    }
    if (request.method === 'GET' && path === '/v1/models') {
      if (this.options.apiKey !== undefined && request.headers['x-api-key'] !== this.options.apiKey)
        return send(401, errorBody('authentication_error', 'invalid x-api-key'));
      const asked = Number(new URL(request.url ?? '', 'http://fake').searchParams.get('limit') ?? '20');
      const limit = Number.isInteger(asked) && asked >= 1 && asked <= 1_000 ? asked : 20;
      const page = listed.slice(0, limit).map(modelObject);
      return send(
        200,
        JSON.stringify({
          data: page,
          has_more: listed.length > limit,
          first_id: page[0]?.id ?? null,
          last_id: page.at(-1)?.id ?? null,
        }),
      );
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const loneHalf = firstLoneHalf(text);
    if (loneHalf !== undefined)
      return send(
        400,
        errorBody(
          'invalid_request_error',
          `The request body is not valid JSON: ${loneHalf.reason}: line 1 column ${loneHalf.at + 1} (char ${loneHalf.at})`,
        ),
      );
    try {
      body = JSON.parse(text) as Json;
    } catch {
      return send(
        400,
        errorBody('invalid_request_error', 'There was an issue with the request body: not JSON.'),
      );
    }
    if (this.options.apiKey !== undefined && request.headers['x-api-key'] !== this.options.apiKey)
      return send(401, errorBody('authentication_error', 'invalid x-api-key'));
    if (typeof request.headers['anthropic-version'] !== 'string')
      return send(400, errorBody('invalid_request_error', 'anthropic-version: header is required'));
    if (path !== '/v1/messages' && path !== '/v1/messages/count_tokens')
      return send(404, errorBody('not_found_error', 'Not Found'));
    const beta = request.headers['anthropic-beta'];
    const betas = this.options.betas;
    const unknownFlags =
      betas === undefined || typeof beta !== 'string'
        ? []
        : beta
            .split(',')
            .map((flag) => flag.trim())
            .filter((flag) => flag !== '' && !betas.accepted.includes(flag));
    if (
      this.options.noDeferral?.includes(String(body.model)) === true &&
      (body.context_management !== undefined || String(beta).includes('context-management-2025-06-27'))
    )
      return send(
        400,
        JSON.stringify({
          error: {
            message:
              "No endpoints available that support Anthropic's context management features (context-management-2025-06-27). Context management requires a supported provider (Anthropic).",
            code: 400,
          },
        }),
      );
    if (
      this.options.noDeferral?.includes(String(body.model)) === true &&
      (Array.isArray(body.tools) ? (body.tools as Json[]) : []).some((tool) => tool.defer_loading === true)
    )
      return send(
        400,
        JSON.stringify({
          error: {
            message: `Deferred custom tools are only supported on Anthropic models and on Anthropic-compatible provider endpoints that implement deferral. Other endpoints cannot call tools omitted from tools[]. Received ${String(body.model)}.`,
            code: 400,
          },
        }),
      );
    const blockMemberAt = unknownBlockMemberPlace(body.messages, this.options.unknownBlockMembers ?? []);
    if (blockMemberAt !== undefined)
      return send(
        400,
        errorBody('invalid_request_error', `${blockMemberAt}: Extra inputs are not permitted`),
      );
    const unknownMember = this.options.unknownMembers?.find((member) => body[member] !== undefined);
    if (unknownMember !== undefined)
      return send(
        400,
        errorBody('invalid_request_error', `${unknownMember}: Extra inputs are not permitted`),
      );
    const ttlAt =
      this.options.noCacheTtl?.includes(String(body.model)) === true ? cacheTtlPlace(body) : undefined;
    if (ttlAt !== undefined)
      return send(
        400,
        errorBody('invalid_request_error', `${ttlAt}.cache_control.ttl: Extra inputs are not permitted`),
      );
    // Kimi's one refusal that says what: more tools than it takes (MoonshotAI/Kimi-K2#90).
    if (
      this.options.unexplained?.includes(String(body.model)) === true &&
      Array.isArray(body.tools) &&
      body.tools.length > 128
    )
      return send(400, errorBody('invalid_request_error', 'a max of 128 tools can be supported'));
    if (this.options.unexplained?.includes(String(body.model)) === true && kimiRefuses(body))
      return send(
        400,
        JSON.stringify({
          error: { type: 'invalid_request_error', message: 'Invalid request Error' },
          type: 'error',
        }),
      );
    const mfjs =
      this.options.moonshotSchemas?.includes(String(body.model)) === true
        ? (Array.isArray(body.tools) ? (body.tools as Json[]) : [])
            .map((tool) =>
              tool.input_schema === undefined ? undefined : moonshotSchemaRefusal(tool.input_schema),
            )
            .find((refusal) => refusal !== undefined)
        : undefined;
    if (mfjs !== undefined)
      return send(
        400,
        JSON.stringify({ error: { type: 'invalid_request_error', message: mfjs }, type: 'error' }),
      );
    const deepseekRefusal =
      this.options.deepseekEndpoint?.includes(String(body.model)) === true
        ? deepseekRefuses(body)
        : undefined;
    if (deepseekRefusal !== undefined)
      return send(
        400,
        JSON.stringify({
          error: {
            message: deepseekRefusal,
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_request_error',
          },
        }),
      );
    if (
      this.options.reservedBilling?.includes(String(body.model)) === true &&
      JSON.stringify(body.system ?? '').includes('x-anthropic-billing-header')
    )
      return send(
        400,
        JSON.stringify({
          error: {
            message:
              'x-anthropic-billing-header is a reserved keyword and may not be used in the system prompt.',
            code: 'invalid_request_body',
          },
        }),
      );
    const extraMembers =
      this.options.extraToolMembers?.includes(String(body.model)) === true
        ? (Array.isArray(body.tools) ? (body.tools as Json[]) : []).flatMap((tool, at) =>
            Object.keys(tool)
              .filter((member) => !['name', 'description', 'input_schema', 'type'].includes(member))
              .map((member) => `Extra inputs are not permitted, field: 'tools[${at}].${member}'`),
          )
        : [];
    if (extraMembers.length > 0)
      return send(
        400,
        JSON.stringify({
          error: { type: 'invalid_request_error', message: extraMembers.join('; ') },
          type: 'error',
        }),
      );
    const strictAt =
      this.options.noStrictTools?.includes(String(body.model)) === true
        ? (Array.isArray(body.tools) ? (body.tools as Json[]) : []).findIndex(
            (tool) => tool.strict !== undefined,
          )
        : -1;
    if (strictAt >= 0)
      return send(
        400,
        errorBody('invalid_request_error', `tools.${strictAt}.custom.strict: Extra inputs are not permitted`),
      );
    if (
      this.options.templateSystemFirst?.includes(String(body.model)) === true &&
      (Array.isArray(body.messages) ? (body.messages as Json[]) : []).some(
        (message) => message.role === 'system',
      )
    )
      return send(500, errorBody('api_error', 'system message must be at the beginning'));
    const systemRule = this.options.noSystemMessages?.[String(body.model)];
    const systemAt = (Array.isArray(body.messages) ? (body.messages as Json[]) : []).findIndex(
      (message) => message.role === 'system',
    );
    if (systemRule === 'serde' && systemAt !== -1)
      return send(
        400,
        JSON.stringify({
          error: {
            message: `Failed to deserialize the JSON body into the target type: messages[${systemAt}].role: unknown variant \`system\`, expected \`user\` or \`assistant\` at line 1 column 2034`,
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_request_error',
          },
        }),
      );
    if (systemRule === 'relay' && systemAt !== -1)
      return send(400, JSON.stringify({ detail: 'System messages are not allowed' }));
    if (systemRule === 'pydantic' && systemAt !== -1)
      return send(
        422,
        JSON.stringify({
          detail: [
            {
              type: 'literal_error',
              loc: ['body', 'messages', systemAt, 'role'],
              msg: "Input should be 'user' or 'assistant'",
              input: 'system',
              ctx: { expected: "'user' or 'assistant'" },
            },
          ],
        }),
      );
    if (this.options.zenResults?.includes(String(body.model)) === true) {
      const place = resultBlockPlace(body.messages, ['text', 'image']);
      if (place !== undefined)
        return send(
          400,
          JSON.stringify({
            error: {
              message: `Error from provider (Console): Upstream request failed: [invalid_request_error] messages[${place.message}]: content[${place.block}]: tool_result: content[${place.inner}]: tool_result content type must be "text" or "image", got "${place.type}"`,
              type: 'invalid_request_error',
            },
          }),
        );
    }
    const taken = this.options.blockTypes?.[String(body.model)];
    const untaken = taken === undefined ? undefined : blockTypeNotIn(body.messages, taken);
    if (taken !== undefined && untaken !== undefined)
      return send(
        400,
        JSON.stringify({
          error: {
            code: 'InvalidParameter',
            message: `The parameter \`messages.content.type\` specified in the request are not valid: invalid value: \`${untaken}\`, supported values are: ${taken
              .slice(0, -1)
              // Ark's own quoting: one type in single quotes.
              .map((type) => (type === 'tool_use' ? `'${type}'` : `\`${type}\``))
              .join(
                ', ',
              )} and \`${String(taken.at(-1))}\`. Request id: 0217736355560584bb2d320cfcd0d3dcaa0804120ace3f94d4c42`,
            param: '',
            type: 'BadRequest',
          },
        }),
      );
    const sampling = ['temperature', 'top_p', 'top_k'].find((name) => body[name] !== undefined);
    if (sampling !== undefined && this.options.noSampling?.includes(String(body.model)) === true)
      return send(400, errorBody('invalid_request_error', `\`${sampling}\` is deprecated for this model.`));
    const efforts = this.options.efforts?.[String(body.model)];
    const effort = (body.output_config as Json | undefined)?.effort;
    if (efforts === 'no effort' && effort !== undefined)
      return send(
        400,
        errorBody('invalid_request_error', 'This model does not support the effort parameter.'),
      );
    if (efforts === 'none' && body.output_config !== undefined)
      return send(400, errorBody('invalid_request_error', 'output_config: Extra inputs are not permitted'));
    if (Array.isArray(efforts) && typeof effort === 'string' && !efforts.includes(effort))
      return send(
        400,
        JSON.stringify({
          error: {
            message: `output_config.effort "${effort}" is not supported by model ${String(body.model)}; supported values: [${efforts.join(' ')}]`,
            code: 'invalid_reasoning_effort',
          },
        }),
      );
    // As Anthropic answers a thinking mode the model does not take (AAswordman/Operit#568, mnfst/llm-gateway#1928).
    const onlyMode = this.options.thinkingModes?.[String(body.model)];
    const mode = (body.thinking as Json | undefined)?.type;
    // MiniMax-M3 on MiniMax's Anthropic-compatible API, in its words (CherryHQ/cherry-studio#16431).
    const minimax = String(body.model).startsWith('MiniMax-');
    if (onlyMode === 'adaptive' && mode === 'enabled')
      return send(
        400,
        minimax
          ? JSON.stringify({
              type: 'error',
              error: {
                type: 'bad_request_error',
                message:
                  'invalid params, invalid thinking.type: "enabled" (allowed: adaptive, disabled) (2013)',
                http_code: '400',
              },
              request_id: '068a807bc9c47de0db57062e',
            })
          : errorBody(
              'invalid_request_error',
              '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
            ),
      );
    if (onlyMode === 'enabled' && mode === 'adaptive')
      return send(
        400,
        errorBody(
          'invalid_request_error',
          minimax
            ? 'Validation: thinking.type must be enabled or disabled'
            : 'adaptive thinking is not supported on this model',
        ),
      );
    // Without its flag, a feature's member is one the host does not know (Wei-Shaw/sub2api#2726).
    const flagged = (flag: string) =>
      typeof beta === 'string' && beta.split(',').some((given) => given.trim() === flag);
    const unflagged =
      betas === undefined
        ? undefined
        : body.context_management !== undefined && !flagged('context-management-2025-06-27')
          ? 'context_management'
          : (Array.isArray(body.tools) ? (body.tools as Json[]) : [])
              .map((tool, index) =>
                tool.defer_loading !== undefined && !flagged('advanced-tool-use-2025-11-20')
                  ? `tools.${index}.custom.defer_loading`
                  : undefined,
              )
              .find((path) => path !== undefined);
    if (
      (body.thinking as Json | undefined)?.type === 'disabled' &&
      this.options.alwaysThinks?.includes(String(body.model)) === true
    )
      return send(
        400,
        JSON.stringify({
          error: {
            code: 'InvalidParameter',
            message: `thinking.type \`disabled\` is not supported by this model Request id: 0217${'8'.repeat(40)}`,
            param: '',
            type: 'BadRequest',
          },
        }),
      );
    if (
      body.speed === 'fast' &&
      this.options.fastUnbilled?.includes(String(body.model)) === true &&
      this.options.fastCreditedKeys?.includes(String(request.headers['x-api-key'])) !== true
    ) {
      response.setHeader('anthropic-ratelimit-unified-overage-disabled-reason', 'out_of_credits');
      return send(429, errorBody('rate_limit_error', 'Usage credits are required for fast mode.'));
    }
    const longContext = this.options.noLongContext?.[String(body.model)];
    if (longContext !== undefined && flagged(longContextFlag))
      return send(
        400,
        errorBody(
          'invalid_request_error',
          longContext === 'subscription'
            ? 'The long context beta is not yet available for this subscription.'
            : 'This authentication style is incompatible with the long context beta header.',
        ),
      );
    if (betas !== undefined && unknownFlags.length === 0 && unflagged !== undefined)
      return send(400, errorBody('invalid_request_error', `${unflagged}: Extra inputs are not permitted`));
    if (betas !== undefined && unknownFlags.length > 0)
      return send(
        400,
        errorBody(
          'invalid_request_error',
          betas.refusal === 'bare'
            ? 'invalid beta flag'
            : `Unexpected value(s) ${unknownFlags.map((flag) => `\`${flag}\``).join(', ')} for the \`anthropic-beta\` header. Please consult our documentation at docs.anthropic.com or try again without the header.`,
        ),
      );
    const refusal = findAnthropicRefusal(
      path.endsWith('count_tokens') ? { max_tokens: 1, ...body } : body,
      typeof beta === 'string' && beta.includes('per-turn-control-'),
      typeof beta === 'string' && beta.includes('interleaved-thinking-'),
      this.options.signer,
    );
    if (refusal === 'compaction_block_misplaced')
      return send(
        400,
        JSON.stringify({
          type: 'error',
          error: {
            type: 'invalid_request_error',
            message: 'The `compaction` block must be the first block of the conversation.',
            details: { error_code: refusal },
          },
        }),
      );
    if (refusal !== undefined) return send(400, errorBody('invalid_request_error', refusal));
    const inputTokens = anthropicTokens(body);
    if (path.endsWith('count_tokens')) return send(200, JSON.stringify({ input_tokens: inputTokens }));
    const window =
      this.options.longContext?.includes(String(body.model)) === true && flagged(longContextFlag)
        ? 1_000_000
        : (this.options.windows?.[String(body.model)] ?? this.options.window ?? 200_000);
    if (inputTokens > window)
      return send(
        400,
        errorBody('invalid_request_error', `prompt is too long: ${inputTokens} tokens > ${window} maximum`),
      );
    if (
      window === 1_000_000 &&
      inputTokens > 200_000 &&
      this.options.longContextUnbilled?.includes(String(body.model)) === true
    )
      return send(429, errorBody('rate_limit_error', 'Extra usage is required for long context requests.'));
    const maxTokens = Number(body.max_tokens);
    // The model's longest answer (anthropics/claude-code#24451: 128001 asked of Opus 4.5's 64000).
    const longest = this.options.maxOutputTokens;
    if (longest !== undefined && maxTokens > longest)
      return send(
        400,
        errorBody(
          'invalid_request_error',
          `max_tokens: ${maxTokens} > ${longest}, which is the maximum allowed number of output tokens for ${String(body.model)}`,
        ),
      );
    if (inputTokens + maxTokens > window)
      return send(
        400,
        errorBody(
          'invalid_request_error',
          `input length and \`max_tokens\` exceed context limit: ${inputTokens} + ${maxTokens} > ${window}, decrease input length or \`max_tokens\` and try again`,
        ),
      );
    const reply = this.respond(body);
    const content: Json[] = [];
    // Past the trigger of a compact edit, the answer starts with a summary of the conversation read.
    const compact = ((body.context_management as Json | undefined)?.edits as Json[] | undefined)?.find(
      (edit) => edit.type === 'compact_20260112',
    );
    const trigger = Number((compact?.trigger as Json | undefined)?.value ?? 150_000);
    const compacted = compact !== undefined && inputTokens > trigger;
    if (compacted)
      content.push({
        type: 'compaction',
        content: readMessages(body.messages)
          .map((message) =>
            message.role === 'user'
              ? (contentText(message.content).split('. ')[0] ?? '')
              : contentText(Array.isArray(message.content) ? message.content.filter(isSummary) : []),
          )
          .filter((text) => text !== '')
          .join('\n'),
      });
    // With thinking on (a budget), Claude's answer starts with its thinking.
    const thinks =
      reply.thinking ??
      ((body.thinking as Json | undefined)?.type === 'enabled' ? 'Let me think.' : undefined);
    if (thinks !== undefined)
      content.push({
        type: 'thinking',
        thinking: thinks,
        signature: signature(this.requests.length, thinks, this.options.signer, String(body.model)),
      });
    content.push(...(reply.blocks ?? []));
    // Claude ends its answer where the first of the request's stop sequences begins.
    const stopped = reply.text === undefined ? undefined : stoppedAt(reply.text, body.stop_sequences);
    if (reply.text !== undefined) content.push({ type: 'text', text: stopped?.text ?? reply.text });
    // Stopped, it wrote nothing after the sequence: no call.
    const uses =
      stopped === undefined
        ? [...(reply.toolUse === undefined ? [] : [reply.toolUse]), ...(reply.toolUses ?? [])]
        : [];
    uses.forEach((use, index) =>
      content.push({
        type: 'tool_use',
        id: `toolu_${this.requests.length}_${index}`,
        name: use.name,
        input: use.input,
      }),
    );
    const outputTokens = Math.max(1, encoding.encode(contentText(content)).length);
    const stopReason =
      stopped === undefined
        ? (reply.stopReason ?? (uses.length === 0 ? 'end_turn' : 'tool_use'))
        : 'stop_sequence';
    const message = {
      id: `msg_fake_${this.requests.length}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: stopReason,
      stop_sequence: stopped?.stop ?? reply.stopSequence ?? null,
      usage: {
        input_tokens: inputTokens,
        output_tokens: outputTokens,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
    };
    if (body.stream !== true) return send(200, JSON.stringify(message));
    const rawBody = Buffer.concat(chunks).toString('utf8');
    this.requests.push({ path, headers: request.headers, body, rawBody, inputTokens, status: 200 });
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'request-id': `req_${this.requests.length}`,
    });
    const event = (type: string, fields: Json): string =>
      `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
    response.write(
      event('message_start', {
        message: {
          ...message,
          content: [],
          stop_reason: null,
          usage: { ...message.usage, output_tokens: 1 },
        },
      }),
    );
    response.write(event('ping', {}));
    content.forEach((block, index) => {
      if (block.type === 'text') {
        response.write(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
        const text = String(block.text);
        const half = Math.floor(text.length / 2);
        for (const piece of [text.slice(0, half), text.slice(half)])
          if (piece !== '')
            response.write(
              event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }),
            );
      } else if (block.type === 'compaction') {
        response.write(
          event('content_block_start', {
            index,
            content_block: { type: 'compaction', content: null, encrypted_content: null },
          }),
        );
        response.write(
          event('content_block_delta', {
            index,
            delta: { type: 'compaction_delta', content: block.content, encrypted_content: null },
          }),
        );
      } else if (block.type === 'thinking') {
        response.write(
          event('content_block_start', {
            index,
            content_block: { type: 'thinking', thinking: '', signature: '' },
          }),
        );
        response.write(
          event('content_block_delta', {
            index,
            delta: { type: 'thinking_delta', thinking: block.thinking },
          }),
        );
        response.write(
          event('content_block_delta', {
            index,
            delta: { type: 'signature_delta', signature: block.signature },
          }),
        );
      } else if (block.type !== 'tool_use' && block.type !== 'server_tool_use') {
        response.write(event('content_block_start', { index, content_block: block }));
      } else {
        response.write(event('content_block_start', { index, content_block: { ...block, input: {} } }));
        const json = JSON.stringify(block.input);
        const half = Math.floor(json.length / 2);
        for (const piece of [json.slice(0, half), json.slice(half)])
          response.write(
            event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }),
          );
      }
      response.write(event('content_block_stop', { index }));
    });
    response.write(
      event('message_delta', {
        delta: { stop_reason: stopReason, stop_sequence: stopped?.stop ?? reply.stopSequence ?? null },
        usage: { output_tokens: outputTokens },
      }),
    );
    response.end(event('message_stop', {}));
  }
}

/**
 * A gateway in front of `chat` (any model) and `claude` (models `claude-*`, an upstream of kind
 * anthropic), with the tests' Redis, started and ready; stop it, and the fakes, after.
 */
export async function startGatewayWithClaude(
  chat: { start(): Promise<string> },
  claude: FakeAnthropic,
  redisUrl: string,
): Promise<GatewayHarness> {
  const harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await chat.start(), REDIS_URL: redisUrl },
    configYaml: [
      'upstreams:',
      ...anthropicUpstreamYaml('claude', await claude.start(), ['claude-*']),
      '',
    ].join('\n'),
  });
  await waitUntilReady(harness);
  return harness;
}
