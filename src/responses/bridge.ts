// The Responses API over Chat Completions, as values (no I/O): a Responses request translated into the
// chat request the gateway's engine fits and sends, and a chat completion translated back into a
// Response object. What has no Chat Completions equivalent is refused with a 400 naming the field.
import { randomBytes } from 'node:crypto';
import { GatewayError } from '../errors.js';

export type ChatMessage = Record<string, unknown> & { role: string };
export type InputItem = Record<string, unknown>;

export interface BridgedRequest {
  /** The Chat Completions fields other than `messages` (model, tools, sampling, format…). */
  chatFields: Record<string, unknown>;
  /** `instructions` as a system message: not carried to later responses of a chain (as OpenAI does). */
  instructions: ChatMessage | undefined;
  /** This request's input items, normalized, and the chat messages they become. */
  inputItems: InputItem[];
  messages: ChatMessage[];
  previousResponseId: string | undefined;
  store: boolean;
  stream: boolean;
  truncation: 'auto' | 'disabled';
  /** Echoed on the Response object. */
  echo: Record<string, unknown>;
}

/** Fields the bridge reads; any other field with a value is refused. */
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
  'stream_options',
  'include',
  'background',
]);

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

function refuse(param: string, message: string): never {
  throw new GatewayError('invalid_request', message, { param });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
    if (part.type === 'refusal') return { type: 'text', text: String(part.refusal ?? '') };
    return refuse(
      at,
      `'${at}': content parts of type '${String(part.type)}' cannot be bridged to Chat Completions.`,
    );
  });
}

/** Input items as chat messages: consecutive function calls join the assistant message before them. */
export function messagesOf(items: readonly InputItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  items.forEach((item, index) => {
    const at = `input[${index}]`;
    const type = item.type ?? 'message';
    if (type === 'message') {
      const role = item.role;
      if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer')
        refuse(`${at}.role`, `Invalid '${at}.role': expected user, assistant, system or developer.`);
      messages.push({ role, content: contentOf(item.content, `${at}.content`) });
      return;
    }
    if (type === 'function_call') {
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string')
        refuse(at, `'${at}': a function_call needs call_id and name.`);
      const call = {
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '{}' },
      };
      const last = messages.at(-1);
      if (last?.role === 'assistant') {
        // Appended in place: copying the list for every call made N calls cost N² (40,000 calls: 17 s).
        const calls = last.tool_calls as unknown[] | undefined;
        if (calls === undefined) last.tool_calls = [call];
        else calls.push(call);
        if (last.content === '' || last.content === undefined) last.content = null;
      } else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      return;
    }
    if (type === 'function_call_output') {
      if (typeof item.call_id !== 'string') refuse(at, `'${at}': a function_call_output needs call_id.`);
      const output = item.output;
      messages.push({
        role: 'tool',
        tool_call_id: item.call_id,
        content: typeof output === 'string' ? output : JSON.stringify(output ?? ''),
      });
      return;
    }
    refuse(
      `${at}.type`,
      `'${at}': input items of type '${String(type)}' cannot be bridged to Chat Completions.`,
    );
  });
  return messages;
}

function toolsOf(tools: unknown): unknown[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) refuse('tools', "Invalid 'tools': expected an array.");
  return tools.map((tool: unknown, index) => {
    if (!isRecord(tool) || tool.type !== 'function')
      refuse(
        `tools[${index}]`,
        `'tools[${index}]': only function tools can be bridged (${isRecord(tool) ? String(tool.type) : 'not an object'}).`,
      );
    return {
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        ...(tool.parameters === undefined || tool.parameters === null ? {} : { parameters: tool.parameters }),
        ...(typeof tool.strict === 'boolean' ? { strict: tool.strict } : {}),
      },
    };
  });
}

function toolChoiceOf(choice: unknown): unknown {
  if (choice === undefined || typeof choice === 'string') return choice;
  if (isRecord(choice) && choice.type === 'function' && typeof choice.name === 'string')
    return { type: 'function', function: { name: choice.name } };
  return refuse('tool_choice', "'tool_choice': only auto, none, required or a function can be bridged.");
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
  function_call: ['type', 'id', 'call_id', 'name', 'arguments', 'status'],
  function_call_output: ['type', 'id', 'call_id', 'output', 'status'],
};
const partFields: Record<string, readonly string[]> = {
  input_text: ['type', 'text'],
  output_text: ['type', 'text', 'annotations'],
  text: ['type', 'text'],
  refusal: ['type', 'refusal'],
  input_image: ['type', 'image_url', 'file_id', 'detail'],
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
function definedFieldsOf(item: Record<string, unknown>): InputItem {
  const type = typeof item.type === 'string' ? item.type : 'message';
  const kept = pick({ ...item, type }, itemFields[type]);
  if (type === 'message' && Array.isArray(kept.content))
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

/** A Responses request, checked and translated. */
export function bridgeRequest(body: unknown): BridgedRequest {
  if (!isRecord(body)) refuse('body', 'The request body must be a JSON object.');
  for (const [name, value] of Object.entries(body))
    if (!known.has(name) && value !== undefined && value !== null)
      refuse(name, `'${name}' has no Chat Completions equivalent and cannot be bridged by ctxgate.`);
  if (typeof body.model !== 'string' || body.model === '')
    refuse('model', "Missing required parameter: 'model'.");
  if (body.background === true) refuse('background', "'background' responses cannot be bridged.");
  if (Array.isArray(body.include) && body.include.length > 0)
    refuse('include', "'include' cannot be bridged to Chat Completions.");
  const truncation = body.truncation ?? 'disabled';
  if (truncation !== 'auto' && truncation !== 'disabled')
    refuse('truncation', "Invalid 'truncation': expected auto or disabled.");
  const input = body.input;
  const inputItems: InputItem[] =
    typeof input === 'string'
      ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }]
      : Array.isArray(input)
        ? input.map((item: unknown, index) => {
            if (!isRecord(item)) refuse(`input[${index}]`, `Invalid 'input[${index}]': expected an object.`);
            return definedFieldsOf(item);
          })
        : refuse('input', "Invalid 'input': expected a string or an array of items.");
  const metadata = metadataOf(body.metadata);
  const reasoning = isRecord(body.reasoning) ? body.reasoning.effort : undefined;
  const chatFields: Record<string, unknown> = { model: body.model };
  const copy = (from: string, to = from): void => {
    if (body[from] !== undefined && body[from] !== null) chatFields[to] = body[from];
  };
  for (const name of ['temperature', 'top_p', 'parallel_tool_calls', 'user', 'seed', 'stop']) copy(name);
  for (const name of ['frequency_penalty', 'presence_penalty', 'logit_bias', 'service_tier']) copy(name);
  for (const name of ['safety_identifier', 'prompt_cache_key']) copy(name);
  copy('max_output_tokens', 'max_tokens');
  const tools = toolsOf(body.tools);
  if (tools !== undefined) chatFields.tools = tools;
  const toolChoice = toolChoiceOf(body.tool_choice);
  if (toolChoice !== undefined) chatFields.tool_choice = toolChoice;
  const responseFormat = responseFormatOf(body.text);
  if (responseFormat !== undefined) chatFields.response_format = responseFormat;
  if (typeof reasoning === 'string') chatFields.reasoning_effort = reasoning;
  const stream = body.stream === true;
  if (stream) {
    chatFields.stream = true;
    chatFields.stream_options = { include_usage: true };
  }
  const instructions =
    typeof body.instructions === 'string' && body.instructions !== ''
      ? { role: 'system', content: body.instructions }
      : undefined;
  return {
    chatFields,
    instructions,
    inputItems,
    messages: messagesOf(inputItems),
    previousResponseId: typeof body.previous_response_id === 'string' ? body.previous_response_id : undefined,
    store: body.store !== false,
    stream,
    truncation,
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
  createdAt: number;
  model: string;
  echo: Record<string, unknown>;
}

/** Output items of an assistant chat message: its text as a message item, then its tool calls. */
export function outputItemsOf(reply: Record<string, unknown> | undefined): InputItem[] {
  const items: InputItem[] = [];
  const text = typeof reply?.content === 'string' ? reply.content : '';
  if (text !== '')
    items.push({
      id: newId('msg'),
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    });
  for (const call of (reply?.tool_calls as Array<Record<string, unknown>> | undefined) ?? []) {
    const fn = call.function as { name?: unknown; arguments?: unknown } | undefined;
    items.push({
      id: newId('fc'),
      type: 'function_call',
      status: 'completed',
      call_id: call.id,
      name: fn?.name,
      arguments: typeof fn?.arguments === 'string' ? fn.arguments : '',
    });
  }
  return items;
}

export function usageOf(usage: { promptTokens?: number | undefined; completionTokens?: number | undefined }) {
  const input = usage.promptTokens ?? 0;
  const output = usage.completionTokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
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
