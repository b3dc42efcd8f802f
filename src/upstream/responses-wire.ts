// A chat completion sent to an OpenAI-kind upstream as a Responses API request, for a model served there
// only (docs/budgeting.md#models-served-by-the-responses-api-alone): OpenAI's Codex models (gpt-5.1-codex
// and later), its pro models (o1-pro, o3-pro, gpt-5-pro), and relays that took Chat Completions away
// refuse a chat completion ("This model is only supported in v1/responses and not in v1/chat/completions."),
// so Codex on them through the gateway failed at its first request. Learned from that refusal
// (`wire.responses`, field-fixes.ts): the chat body the engine made is written as a Responses body at the
// port, `/responses` asked, and the answer — whole or streamed — read back as the chat answer it stands for,
// so fitting, recovery, sessions and every bridge work on it as on any chat answer.
import { StringDecoder } from 'node:string_decoder';
import { chatChunkEvent, isEventStream, jsonEventsOf, SseDecoder } from './sse.js';
import {
  withTranslatedStream,
  withWholeBody,
  type Upstream,
  type UpstreamRequest,
  type UpstreamResponse,
} from './upstream.js';

type Json = Record<string, unknown>;

/** The learned fix: this model is asked through the Responses API. */
export const responsesWireField = 'wire.responses';

const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A chat content part as a Responses one: text as the role's text type, pictures and files as inputs. */
function partOf(part: unknown, textType: 'input_text' | 'output_text'): Json | undefined {
  if (typeof part === 'string') return { type: textType, text: part };
  if (!isRecord(part)) return undefined;
  if (part.type === 'text' && typeof part.text === 'string') return { type: textType, text: part.text };
  if (part.type === 'refusal' && typeof part.refusal === 'string')
    return { type: 'refusal', refusal: part.refusal };
  if (part.type === 'image_url') {
    const image = part.image_url;
    const url = isRecord(image) ? image.url : image;
    if (typeof url !== 'string') return undefined;
    const detail = isRecord(image) && typeof image.detail === 'string' ? image.detail : 'auto';
    return { type: 'input_image', image_url: url, detail };
  }
  if (part.type === 'file' && isRecord(part.file)) {
    const { file_id: fileId, file_data: fileData, filename } = part.file;
    if (typeof fileId === 'string') return { type: 'input_file', file_id: fileId };
    if (typeof fileData === 'string')
      return Object.assign(
        { type: 'input_file', file_data: fileData },
        typeof filename === 'string' ? { filename } : {},
      );
  }
  return undefined;
}

/** A message's content as Responses content: a text as it is, parts each as the role's. */
function contentOf(content: unknown, role: string): string | Json[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const textType = role === 'assistant' ? 'output_text' : 'input_text';
  return content.map((part) => partOf(part, textType)).filter((part): part is Json => part !== undefined);
}

/** A tool message's content as a call's output: its text, parts of text one after the other. */
function outputOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

/** How a Responses answer's encrypted reasoning rides on a chat message: OpenRouter's `reasoning_details`. */
const reasoningFormat = 'openai-responses-v1';

/**
 * The reasoning items an assistant message carries from the Responses API (its `reasoning_details` of
 * that format), to go back before its text and calls as the Responses API takes them; none when nothing
 * follows them in the message (the API refuses a reasoning item without its following item).
 */
function reasoningItemsOf(message: Json, follows: boolean): Json[] {
  if (!follows || !Array.isArray(message.reasoning_details)) return [];
  const items: Json[] = [];
  for (const detail of message.reasoning_details)
    if (
      isRecord(detail) &&
      detail.type === 'reasoning.encrypted' &&
      detail.format === reasoningFormat &&
      typeof detail.data === 'string'
    )
      items.push({ type: 'reasoning', summary: [], encrypted_content: detail.data });
  return items;
}

/** A Responses reasoning item's encrypted content as chat carries it (reasoningItemsOf reads it back). */
function reasoningDetailOf(item: Json, index: number): Json | undefined {
  if (item.type !== 'reasoning' || typeof item.encrypted_content !== 'string') return undefined;
  return Object.assign(
    { type: 'reasoning.encrypted', data: item.encrypted_content, format: reasoningFormat, index },
    typeof item.id === 'string' ? { id: item.id } : {},
  );
}

/**
 * Chat messages as Responses input items, in their order; a thinking model's reasoning is sent back only
 * as the Responses API gave it (encrypted), before the text and calls it led to.
 */
function inputOf(messages: unknown): Json[] {
  const items: Json[] = [];
  for (const message of Array.isArray(messages) ? messages : []) {
    if (!isRecord(message) || typeof message.role !== 'string') continue;
    const { role } = message;
    if (role === 'tool') {
      items.push({
        type: 'function_call_output',
        call_id: message.tool_call_id,
        output: outputOf(message.content),
      });
      continue;
    }
    const content = contentOf(message.content, role);
    const calls = Array.isArray(message.tool_calls) ? message.tool_calls.length : 0;
    if (role === 'assistant') items.push(...reasoningItemsOf(message, content.length > 0 || calls > 0));
    if (content.length > 0) items.push({ role, content });
    if (role !== 'assistant' || !Array.isArray(message.tool_calls)) continue;
    for (const call of message.tool_calls) {
      if (!isRecord(call) || !isRecord(call.function)) continue;
      items.push({
        type: 'function_call',
        call_id: call.id,
        name: call.function.name,
        arguments: typeof call.function.arguments === 'string' ? call.function.arguments : '{}',
      });
    }
  }
  return items;
}

/** A chat tool (`{type: "function", function: {…}}`, a custom one) as the Responses API writes it. */
function toolOf(tool: unknown): unknown {
  if (!isRecord(tool)) return tool;
  if (tool.type === 'function' && isRecord(tool.function))
    return Object.assign({ type: 'function' }, tool.function);
  if (tool.type === 'custom' && isRecord(tool.custom)) return Object.assign({ type: 'custom' }, tool.custom);
  return tool;
}

/** A chat tool choice as the Responses API's: a function named beside its type, allowed tools flattened. */
function toolChoiceOf(choice: unknown): unknown {
  if (!isRecord(choice)) return choice;
  if (choice.type === 'function' && isRecord(choice.function))
    return { type: 'function', name: choice.function.name };
  if (choice.type === 'allowed_tools' && isRecord(choice.allowed_tools))
    return Object.assign({ type: 'allowed_tools' }, choice.allowed_tools, {
      tools: (Array.isArray(choice.allowed_tools.tools) ? choice.allowed_tools.tools : []).map(toolChoiceOf),
    });
  return choice;
}

/** Chat's `response_format` as the Responses API's `text.format`. */
function formatOf(format: unknown): Json | undefined {
  if (!isRecord(format)) return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema' && isRecord(format.json_schema))
    return Object.assign({ type: 'json_schema' }, format.json_schema);
  return undefined;
}

/** Fields the two APIs name alike. */
const sameFields = [
  'model',
  'stream',
  'temperature',
  'top_p',
  'user',
  'metadata',
  'parallel_tool_calls',
  'service_tier',
  'store',
  'safety_identifier',
  'prompt_cache_key',
  'prompt_cache_retention',
  // The gpt-5.6 family's word for how its caches are made and kept (`mode`, `ttl`).
  'prompt_cache_options',
  'top_logprobs',
] as const;

/**
 * A chat completion request as a Responses API request. What the Responses API has no word for (`n`,
 * `stop`, penalties, `logit_bias`, `seed`, `stream_options`: its stream always ends with the usage) is left
 * out; nothing is stored at the provider unless the client asked (`store`).
 */
export function toResponsesRequest(chat: Json): Json {
  const body: Json = { input: inputOf(chat.messages), store: false };
  for (const field of sameFields)
    if (chat[field] !== undefined && chat[field] !== null) body[field] = chat[field];
  const maxTokens = chat.max_completion_tokens ?? chat.max_tokens;
  if (typeof maxTokens === 'number') body.max_output_tokens = maxTokens;
  if (Array.isArray(chat.tools)) body.tools = chat.tools.map(toolOf);
  if (chat.tool_choice !== undefined) body.tool_choice = toolChoiceOf(chat.tool_choice);
  if (typeof chat.reasoning_effort === 'string') body.reasoning = { effort: chat.reasoning_effort };
  // A reasoning model's reasoning, encrypted (nothing is stored at the provider), to go back with its step.
  if (typeof chat.reasoning_effort === 'string' && chat.reasoning_effort !== 'none' && body.store === false)
    body.include = ['reasoning.encrypted_content'];
  const format = formatOf(chat.response_format);
  const text: Json = {};
  if (format !== undefined) text.format = format;
  if (typeof chat.verbosity === 'string') text.verbosity = chat.verbosity;
  if (Object.keys(text).length > 0) body.text = text;
  return body;
}

/** A Responses usage as chat's. */
function usageOf(usage: unknown): Json | undefined {
  if (!isRecord(usage)) return undefined;
  const prompt = Number(usage.input_tokens ?? 0);
  const completion = Number(usage.output_tokens ?? 0);
  const cached = isRecord(usage.input_tokens_details) ? usage.input_tokens_details.cached_tokens : undefined;
  const reasoning = isRecord(usage.output_tokens_details)
    ? usage.output_tokens_details.reasoning_tokens
    : undefined;
  return Object.assign(
    { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    typeof cached === 'number' ? { prompt_tokens_details: { cached_tokens: cached } } : {},
    typeof reasoning === 'number' ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {},
  );
}

/** Why an answer ended, in chat's words. */
function finishOf(response: Json, calls: number): string {
  const details = isRecord(response.incomplete_details) ? response.incomplete_details.reason : undefined;
  if (response.status === 'incomplete') return details === 'content_filter' ? 'content_filter' : 'length';
  return calls > 0 ? 'tool_calls' : 'stop';
}

/** A Responses answer (a Response object) as the chat completion it stands for. */
export function fromResponsesAnswer(response: Json): Json {
  let text = '';
  let refusal = '';
  const calls: Json[] = [];
  const reasoning: Json[] = [];
  for (const item of Array.isArray(response.output) ? response.output : []) {
    if (!isRecord(item)) continue;
    const detail = reasoningDetailOf(item, reasoning.length);
    if (detail !== undefined) reasoning.push(detail);
    if (item.type === 'function_call')
      calls.push({
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: item.arguments ?? '' },
      });
    if (item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content) {
      if (isRecord(part) && part.type === 'output_text' && typeof part.text === 'string') text += part.text;
      if (isRecord(part) && part.type === 'refusal' && typeof part.refusal === 'string')
        refusal += part.refusal;
    }
  }
  const message: Json = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text };
  if (refusal !== '') message.refusal = refusal;
  if (calls.length > 0) message.tool_calls = calls;
  if (reasoning.length > 0) message.reasoning_details = reasoning;
  const usage = usageOf(response.usage);
  return Object.assign(
    {
      id: typeof response.id === 'string' ? response.id : 'chatcmpl-responses',
      object: 'chat.completion',
      created: typeof response.created_at === 'number' ? Math.floor(response.created_at) : 0,
      model: response.model,
      choices: [{ index: 0, message, finish_reason: finishOf(response, calls.length), logprobs: null }],
    },
    usage === undefined ? {} : { usage },
  );
}

/** A Responses event stream read as a chat completion stream, event by event. */
export class ResponsesToChatStream {
  private readonly utf8 = new StringDecoder('utf8');
  private readonly sse = new SseDecoder();
  private id = 'chatcmpl-responses';
  private model: unknown = '';
  private created = 0;
  /** Output item id (or index) → its tool call's index among the answer's calls. */
  private readonly calls = new Map<string, number>();
  /** Reasoning items given so far (their encrypted content, as `reasoning_details`). */
  private reasoning = 0;
  private ended = false;

  private chunk(delta: Json, finish: string | null = null): string {
    return chatChunkEvent(this.id, this.created, this.model, [{ index: 0, delta, finish_reason: finish }]);
  }

  push(bytes: Buffer | string): string {
    const text = typeof bytes === 'string' ? bytes : this.utf8.write(bytes);
    let out = '';
    for (const event of jsonEventsOf(this.sse, text)) out += this.translate(event);
    return out;
  }

  private callKey(event: Json): string {
    return typeof event.item_id === 'string' ? event.item_id : `#${String(event.output_index)}`;
  }

  private translate(event: Json): string {
    if (this.ended) return '';
    const response = isRecord(event.response) ? event.response : undefined;
    switch (event.type) {
      case 'response.created': {
        if (response !== undefined) {
          if (typeof response.id === 'string') this.id = response.id;
          this.model = response.model;
          if (typeof response.created_at === 'number') this.created = Math.floor(response.created_at);
        }
        return this.chunk({ role: 'assistant', content: '' });
      }
      case 'response.output_text.delta':
        return typeof event.delta === 'string' ? this.chunk({ content: event.delta }) : '';
      case 'response.refusal.delta':
        return typeof event.delta === 'string' ? this.chunk({ refusal: event.delta }) : '';
      case 'response.output_item.added': {
        const item = isRecord(event.item) ? event.item : undefined;
        if (item?.type !== 'function_call') return '';
        const index = this.calls.size;
        this.calls.set(typeof item.id === 'string' ? item.id : `#${String(event.output_index)}`, index);
        return this.chunk({
          tool_calls: [
            { index, id: item.call_id, type: 'function', function: { name: item.name, arguments: '' } },
          ],
        });
      }
      case 'response.output_item.done': {
        // A reasoning item's encrypted content comes whole once the item is done.
        const detail = isRecord(event.item) ? reasoningDetailOf(event.item, this.reasoning) : undefined;
        if (detail === undefined) return '';
        this.reasoning++;
        return this.chunk({ reasoning_details: [detail] });
      }
      case 'response.function_call_arguments.delta': {
        const index = this.calls.get(this.callKey(event));
        if (index === undefined || typeof event.delta !== 'string') return '';
        return this.chunk({ tool_calls: [{ index, function: { arguments: event.delta } }] });
      }
      case 'response.completed':
      case 'response.incomplete': {
        this.ended = true;
        const finish = finishOf(response ?? {}, this.calls.size);
        const usage = usageOf(response?.usage);
        const last = this.chunk({}, finish);
        const usageChunk =
          usage === undefined ? '' : chatChunkEvent(this.id, this.created, this.model, [], usage);
        return `${last}${usageChunk}data: [DONE]\n\n`;
      }
      case 'response.failed':
      case 'error': {
        this.ended = true;
        const error = isRecord(response?.error) ? response.error : event;
        const message = typeof error.message === 'string' ? error.message : 'The upstream answer failed.';
        return `data: ${JSON.stringify({ error: { message, type: 'server_error', code: error.code ?? null } })}\n\n`;
      }
      default:
        return '';
    }
  }
}

/** A Responses answer read back as chat: a whole one translated once, a stream event by event. */
function chatAnswerOf(response: UpstreamResponse): UpstreamResponse {
  if (response.statusCode !== 200) return response;
  if (!isEventStream(response.headers)) {
    const translate = (body: Buffer): Buffer => {
      try {
        const parsed: unknown = JSON.parse(body.toString('utf8'));
        return isRecord(parsed) ? Buffer.from(JSON.stringify(fromResponsesAnswer(parsed))) : body;
      } catch {
        return body;
      }
    };
    return withWholeBody(response, translate);
  }
  return withTranslatedStream(response, () => new ResponsesToChatStream());
}

/** The Upstream port with chat completions marked `wire: 'responses'` asked of `/responses` and read back. */
export function withResponsesWire(inner: Upstream): Upstream {
  return {
    close: () => inner.close(),
    send(request: UpstreamRequest): Promise<UpstreamResponse> {
      if (request.wire !== 'responses' || request.path !== '/chat/completions') return inner.send(request);
      return sendAsResponses(request);
    },
  };

  async function sendAsResponses(request: UpstreamRequest): Promise<UpstreamResponse> {
    const text =
      typeof request.body === 'string' || Buffer.isBuffer(request.body) ? request.body.toString() : '{}';
    const body = JSON.stringify(toResponsesRequest(JSON.parse(text) as Json));
    const response = await inner.send(
      Object.assign({}, request, { path: '/responses', body, wire: undefined }),
    );
    return chatAnswerOf(response);
  }
}
