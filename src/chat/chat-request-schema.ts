// The request schema of POST /v1/chat/completions: it accepts everything the OpenAI API accepts
// (content parts, images, audio, files, tools, vendor fields, which pass through untouched) and rejects
// what the provider would reject anyway, with OpenAI-style messages naming the parameter.
import { z } from 'zod';
import { GatewayError } from '../errors.js';

const roles = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

const contentPartSchema = z
  .looseObject({ type: z.string({ error: 'expected a string' }) }, { error: 'expected an object' })
  .superRefine((part, context) => {
    const record = part as Record<string, unknown>;
    const requireString = (key: string, inside?: string): void => {
      const holder = inside === undefined ? record : (record[inside] as Record<string, unknown>);
      if (typeof holder?.[key] !== 'string') {
        context.addIssue({
          code: 'custom',
          path: inside === undefined ? [key] : [inside, key],
          message: 'expected a string',
        });
      }
    };
    const requireObject = (key: string): boolean => {
      const value = record[key];
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        context.addIssue({ code: 'custom', path: [key], message: 'expected an object' });
        return false;
      }
      return true;
    };
    switch (part.type) {
      case 'text':
        requireString('text');
        break;
      case 'refusal':
        requireString('refusal');
        break;
      case 'image_url':
        if (requireObject('image_url')) requireString('url', 'image_url');
        break;
      case 'input_audio':
        if (requireObject('input_audio')) requireString('data', 'input_audio');
        break;
      case 'file':
        requireObject('file');
        break;
      default:
      // Vendor part types pass through for the upstream to judge.
    }
  });

const contentSchema = z.union([z.string(), z.null(), z.array(contentPartSchema)], {
  error: 'expected a string, null, or an array of content parts',
});

const toolCallSchema = z.looseObject(
  {
    id: z.string({ error: 'expected a string' }),
    type: z.string({ error: 'expected a string' }).optional(),
    function: z
      .looseObject(
        {
          name: z.string({ error: 'expected a string' }),
          arguments: z.string({ error: 'expected a string' }),
        },
        { error: 'expected an object' },
      )
      .optional(),
  },
  { error: 'expected an object' },
);

const messageSchema = z
  .looseObject(
    {
      role: z.enum(roles, { error: `expected one of ${roles.map((role) => `'${role}'`).join(', ')}` }),
      content: contentSchema.optional(),
      name: z.string({ error: 'expected a string' }).optional(),
      tool_calls: z.array(toolCallSchema, { error: 'expected an array' }).nullable().optional(),
      tool_call_id: z.string({ error: 'expected a string' }).optional(),
    },
    { error: 'expected an object' },
  )
  .superRefine((message, context) => {
    if (message.role === 'tool' && message.tool_call_id === undefined) {
      context.addIssue({ code: 'custom', path: ['tool_call_id'], message: "is required for role 'tool'" });
    }
    if (message.role !== 'assistant' && message.role !== 'function' && message.content === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['content'],
        message: `is required for role '${message.role}'`,
      });
    }
  });

/** Stop sequences one request may name: OpenAI takes 4; servers that take more need far fewer than this. */
const maxStopSequences = 256;

/** A model name's bounds, read by the schema and by the hand-written check alike. */
const maxModelLength = 256;
// eslint-disable-next-line no-control-regex -- control characters are what this refuses
const withoutControlCharacters = /^[^\u0000-\u001f\u007f]*$/;
/** OpenAI's bound on `n`: each choice is an answer billed on its own. */
const maxChoices = 128;

const optionalCount = z
  .number({ error: 'expected an integer' })
  .int({ error: 'expected an integer' })
  .min(0, { error: 'must be 0 or more' })
  .nullable()
  .optional();

export const chatCompletionRequestSchema = z.looseObject({
  model: z
    .string({ error: 'expected a string' })
    .min(1, { error: 'must not be empty' })
    .max(maxModelLength, { error: `must be at most ${maxModelLength} characters` })
    .regex(withoutControlCharacters, { error: 'must not contain control characters' }),
  messages: z
    .array(messageSchema, { error: 'expected an array of messages' })
    .min(1, { error: 'expected an array with at least one message, got an empty array' }),
  stream: z.boolean({ error: 'expected a boolean' }).nullable().optional(),
  max_tokens: optionalCount,
  max_completion_tokens: optionalCount,
  tools: z
    .array(
      z.looseObject({ type: z.string({ error: 'expected a string' }) }, { error: 'expected an object' }),
      { error: 'expected an array' },
    )
    .nullable()
    .optional(),
  stream_options: z.looseObject({}, { error: 'expected an object' }).nullable().optional(),
  n: z
    .number({ error: 'expected an integer' })
    .int({ error: 'expected an integer' })
    .min(1, { error: 'must be at least 1' })
    .max(maxChoices, { error: `must be at most ${maxChoices}` })
    .nullable()
    .optional(),
  stop: z
    .union([z.string(), z.array(z.string())], { error: 'expected a string or an array of strings' })
    .nullable()
    .optional(),
});

export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
export type ChatMessage = ChatCompletionRequest['messages'][number];

export function formatParam(path: ReadonlyArray<PropertyKey>): string {
  let text = '';
  for (const key of path)
    text += typeof key === 'number' ? `[${key}]` : text === '' ? String(key) : `.${String(key)}`;
  return text;
}

function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let value = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** How much one request may hold, so that no accepted body costs the gateway more than a bounded CPU time. */
export interface RequestLimits {
  maxMessages: number;
  /** Content parts of all messages together. */
  maxContentParts: number;
  /** Tool calls of all messages together. */
  maxToolCalls: number;
}

export const defaultRequestLimits: RequestLimits = {
  maxMessages: 10_000,
  maxContentParts: 20_000,
  maxToolCalls: 20_000,
};

/** The refusal of a request of more messages than one request may hold (server.max_messages). */
export function tooManyMessages(count: number, maxMessages: number): GatewayError {
  return new GatewayError(
    'invalid_request',
    `Invalid 'messages': array too long. Expected an array with at most ${maxMessages} messages, but got ${count}.`,
    { param: 'messages' },
  );
}

/** The refusal of a request whose messages hold more tool calls than one request may (server.max_tool_calls). */
export function tooManyToolCalls(count: number, maxToolCalls: number): GatewayError {
  return new GatewayError(
    'invalid_request',
    `Invalid 'messages': too many tool calls. Expected at most ${maxToolCalls} in all, but got ${count}.`,
    { param: 'messages' },
  );
}

/** Refuses a body with more messages or content parts than the limits, before anything else looks at it. */
function checkSize(body: Record<string, unknown>, limits: RequestLimits): void {
  if (Array.isArray(body.stop) && body.stop.length > maxStopSequences)
    throw new GatewayError(
      'invalid_request',
      `Invalid 'stop': array too long. Expected an array with at most ${maxStopSequences} strings, but got ${body.stop.length}.`,
      { param: 'stop' },
    );
  const messages = body.messages;
  if (!Array.isArray(messages)) return;
  if (messages.length > limits.maxMessages) throw tooManyMessages(messages.length, limits.maxMessages);
  let parts = 0;
  let calls = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (Array.isArray(content)) parts += content.length;
    const toolCalls = (message as { tool_calls?: unknown } | null)?.tool_calls;
    if (Array.isArray(toolCalls)) calls += toolCalls.length;
  }
  if (calls > limits.maxToolCalls) throw tooManyToolCalls(calls, limits.maxToolCalls);
  if (parts > limits.maxContentParts) {
    throw new GatewayError(
      'invalid_request',
      `Invalid 'messages': too many content parts. Expected at most ${limits.maxContentParts} in all, but got ${parts}.`,
      { param: 'messages' },
    );
  }
}

// The schema's rules written out by hand for the bodies clients send, so that a valid request is not
// validated a second time by zod's general machinery (0.4 µs for two messages, 50 for 600, and a copy of
// every message it throws away). It only ever says yes to what the schema accepts; anything it does not
// recognise goes to the schema, which finds the problem and words the error.
const roleSet: ReadonlySet<string> = new Set(roles);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isAbsent = (value: unknown): boolean => value === undefined || value === null;

const isCount = (value: unknown): boolean =>
  isAbsent(value) || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0);

function plainPart(part: unknown): boolean {
  if (!isRecord(part) || typeof part.type !== 'string') return false;
  switch (part.type) {
    case 'text':
      return typeof part.text === 'string';
    case 'refusal':
      return typeof part.refusal === 'string';
    case 'image_url':
      return isRecord(part.image_url) && typeof part.image_url.url === 'string';
    case 'input_audio':
      return isRecord(part.input_audio) && typeof part.input_audio.data === 'string';
    case 'file':
      return isRecord(part.file);
    default:
      return true;
  }
}

function plainToolCall(call: unknown): boolean {
  if (!isRecord(call) || typeof call.id !== 'string') return false;
  if (call.type !== undefined && typeof call.type !== 'string') return false;
  const fn = call.function;
  return (
    fn === undefined || (isRecord(fn) && typeof fn.name === 'string' && typeof fn.arguments === 'string')
  );
}

function plainMessage(message: unknown): boolean {
  if (!isRecord(message)) return false;
  const { role, content, name, tool_calls: toolCalls, tool_call_id: toolCallId } = message;
  if (typeof role !== 'string' || !roleSet.has(role)) return false;
  if (content === undefined) {
    if (role !== 'assistant' && role !== 'function') return false;
  } else if (content !== null && typeof content !== 'string') {
    if (!Array.isArray(content)) return false;
    for (const part of content) if (!plainPart(part)) return false;
  }
  if (name !== undefined && typeof name !== 'string') return false;
  if (toolCallId === undefined ? role === 'tool' : typeof toolCallId !== 'string') return false;
  if (isAbsent(toolCalls)) return true;
  if (!Array.isArray(toolCalls)) return false;
  for (const call of toolCalls) if (!plainToolCall(call)) return false;
  return true;
}

/** True only for a body the schema accepts; false sends it to the schema. */
export function plainlyValid(body: Record<string, unknown>): boolean {
  const { model, messages, tools, stop, n } = body;
  if (typeof model !== 'string' || model.length === 0 || model.length > maxModelLength) return false;
  if (!withoutControlCharacters.test(model)) return false;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const message of messages) if (!plainMessage(message)) return false;
  if (!isAbsent(body.stream) && typeof body.stream !== 'boolean') return false;
  if (!isCount(body.max_tokens) || !isCount(body.max_completion_tokens)) return false;
  if (!isAbsent(body.stream_options) && !isRecord(body.stream_options)) return false;
  if (!isAbsent(n) && !(typeof n === 'number' && Number.isSafeInteger(n) && n >= 1 && n <= maxChoices))
    return false;
  if (!isAbsent(stop) && typeof stop !== 'string') {
    if (!Array.isArray(stop)) return false;
    for (const sequence of stop) if (typeof sequence !== 'string') return false;
  }
  if (isAbsent(tools)) return true;
  if (!Array.isArray(tools)) return false;
  for (const tool of tools) if (!isRecord(tool) || typeof tool.type !== 'string') return false;
  return true;
}

/**
 * Validates a parsed body; the first problem becomes a 400 naming the parameter, as OpenAI does. The
 * body itself is returned, not the schema's copy (the schema transforms nothing): the copy lists each
 * message's keys in the schema's order, and a message the gateway leaves as it is must reach the
 * provider in the bytes the client wrote — a provider's prompt cache works on the rendered tokens,
 * but whatever compares requests as bytes (the fidelity bench's prefix reuse, a cache or a log keyed on
 * the body) saw every message change the first time the engine changed any.
 */
export function parseChatCompletionRequest(
  body: unknown,
  limits: RequestLimits = defaultRequestLimits,
): ChatCompletionRequest {
  if (body === undefined)
    throw new GatewayError('invalid_json', 'The request body is empty; expected a JSON object.');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  }
  checkSize(body as Record<string, unknown>, limits);
  if (plainlyValid(body as Record<string, unknown>)) return body as ChatCompletionRequest;
  const result = chatCompletionRequestSchema.safeParse(body);
  if (result.success) return body as ChatCompletionRequest;
  const issue = result.error.issues[0];
  if (issue === undefined) throw new GatewayError('invalid_request', 'Invalid request body.');
  const param = formatParam(issue.path);
  const missing = valueAt(body, issue.path) === undefined;
  const message = missing
    ? `Missing required parameter: '${param}'.`
    : `Invalid '${param}': ${issue.message}.`;
  throw new GatewayError('invalid_request', message, { param });
}
