// Structured output across the wires (docs/anthropic.md#structured-output). Chat Completions asks for an
// answer that follows a JSON Schema with `response_format: {type: "json_schema", json_schema: {name,
// schema, strict}}`; Anthropic's Messages API with `output_config: {format: {type: "json_schema",
// schema}}` (`output_format` in its beta). A bridge that drops either leaves the model writing prose
// where the client parses JSON — the OpenAI SDK's `chat.completions.parse`, LangChain's
// `withStructuredOutput`, the Agents SDK's `outputType` on Claude; the Anthropic SDK's `messages.parse`
// and the AI SDK's Anthropic provider on any other model — and every such request fails in the client
// (router-for-me/CLIProxyAPI#5280 and #5533, decolua/9router#285). Claude holds a schema to a subset of
// JSON Schema, refusing the rest by type ("output_config.format.schema: For 'integer' type, properties
// maximum, minimum are not supported", "For 'object' type, 'additionalProperties' must be explicitly set
// to false": ax-llm/ax#458, BerriAI/litellm#35808): a chat client's schema is written in it, what Claude
// does not constrain told in the schema's description, as Anthropic's own SDKs write theirs.

import { isRecord } from './tool-call-shape.js';

type Json = Record<string, unknown>;

/** The string formats Claude's structured outputs constrain. */
const anthropicStringFormats = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'uri',
  'ipv4',
  'ipv6',
  'uuid',
]);

/** Keywords Claude takes as they are, whatever the type. */
const keptKeywords = new Set(['type', 'required', 'description', 'title', '$ref']);

/** A value of an enum or a const Claude takes: a string, a number, a boolean or null. */
const isPrimitive = (value: unknown): boolean => value === null || typeof value !== 'object';

/** Keywords holding a map of schemas by name. */
const schemaMaps = new Set(['properties', '$defs', 'definitions']);

function isObjectSchema(schema: Json): boolean {
  const { type } = schema;
  return (
    type === 'object' ||
    (Array.isArray(type) && type.includes('object')) ||
    (type === undefined && isRecord(schema.properties))
  );
}

function eachSchema(map: Json): Json {
  const out: Json = {};
  for (const [name, schema] of Object.entries(map)) out[name] = anthropicOutputSchema(schema);
  return out;
}

/**
 * `schema` in the subset Claude's structured outputs take: every object closed (`additionalProperties:
 * false`, which Claude requires; a schema for further properties told), `oneOf` as `anyOf`, a string's
 * `format` only among those Claude constrains, an array's `minItems` only 0 or 1, an enum or a const of
 * strings, numbers, booleans and null only (Claude takes no complex value there); every other keyword
 * (`minimum`, `maxLength`, `pattern`, `uniqueItems`, `default`…) told at the end of the description,
 * `{minimum: 0, maximum: 10}`, and `$schema` left out. A copy; what is not an object as it is.
 */
export function anthropicOutputSchema(schema: unknown): unknown {
  if (!isRecord(schema)) return schema;
  const out: Json = {};
  const told: string[] = [];
  const tell = (key: string, value: unknown) => told.push(`${key}: ${JSON.stringify(value)}`);
  for (const [key, value] of Object.entries(schema)) {
    if (keptKeywords.has(key)) out[key] = value;
    else if (key === 'enum' && Array.isArray(value) && value.every(isPrimitive)) out.enum = value;
    else if (key === 'const' && isPrimitive(value)) out.const = value;
    else if (schemaMaps.has(key)) out[key] = isRecord(value) ? eachSchema(value) : value;
    else if ((key === 'anyOf' || key === 'allOf' || key === 'oneOf') && Array.isArray(value)) {
      const alternatives = value.map(anthropicOutputSchema);
      if (key !== 'oneOf') out[key] = alternatives;
      else if (schema.anyOf === undefined) out.anyOf = alternatives;
      else tell(key, value);
    } else if (key === 'items' && isRecord(value)) out.items = anthropicOutputSchema(value);
    else if (key === 'format' && anthropicStringFormats.has(value as string)) out.format = value;
    else if (key === 'minItems' && (value === 0 || value === 1)) out.minItems = value;
    else if (key === 'additionalProperties') {
      if (isRecord(value) || (value !== false && !isObjectSchema(schema))) tell(key, value);
    } else if (key !== '$schema') tell(key, value);
  }
  if (isObjectSchema(schema)) out.additionalProperties = false;
  if (told.length > 0) {
    const given =
      typeof out.description === 'string' && out.description !== '' ? `${out.description}\n\n` : '';
    out.description = `${given}{${told.join(', ')}}`;
  }
  return out;
}

/**
 * The most schemas a response schema may hold to go to Claude (written in its subset, some 5 µs each).
 * Claude compiles a grammar of far fewer — it refuses more than 24 optional properties — so one past it
 * is not sent, and the answer is not held to it: sent, its refusal would be learned for the model and
 * every later request's schema told instead of held to, and telling megabytes of schema costs a second of
 * CPU for a prompt no window takes.
 */
const outputSchemaBudget = 5_000;

/** Whether `schema` holds at most `left.count` schemas (its properties, definitions, alternatives, items). */
function schemasWithin(schema: unknown, left: { count: number }): boolean {
  if (!isRecord(schema)) return true;
  if (--left.count < 0) return false;
  for (const key in schema) {
    const value = schema[key];
    if (schemaMaps.has(key) && isRecord(value)) {
      for (const name in value) if (!schemasWithin(value[name], left)) return false;
    } else if ((key === 'anyOf' || key === 'allOf' || key === 'oneOf') && Array.isArray(value)) {
      for (const each of value) if (!schemasWithin(each, left)) return false;
    } else if (key === 'items' && !schemasWithin(value, left)) return false;
  }
  return true;
}

/**
 * Chat's `response_format` of a JSON Schema as Claude's `output_config.format`, its schema in Claude's
 * subset; undefined for any other (JSON mode has no counterpart: the client's messages ask for JSON), and
 * for a schema past outputSchemaBudget.
 */
export function anthropicOutputFormat(responseFormat: unknown): Json | undefined {
  if (!isRecord(responseFormat) || responseFormat.type !== 'json_schema') return undefined;
  const given = responseFormat.json_schema;
  if (!isRecord(given) || !isRecord(given.schema)) return undefined;
  if (!schemasWithin(given.schema, { count: outputSchemaBudget })) return undefined;
  return { type: 'json_schema', schema: anthropicOutputSchema(given.schema) };
}

/** The name a Messages request's schema goes by in chat, which names every schema. */
export const bridgedSchemaName = 'response';

/**
 * Claude's `output_config.format` (or the beta's `output_format`) of a JSON Schema as chat's
 * `response_format`, named `response`; not `strict`, which OpenAI takes only of a schema whose every
 * property is required and Claude's need not be (the schema still guides the answer, and is held to by
 * the providers that decode by grammar whatever `strict` says). Undefined for any other.
 */
export function chatResponseFormat(format: unknown): Json | undefined {
  if (!isRecord(format) || format.type !== 'json_schema' || !isRecord(format.schema)) return undefined;
  return { type: 'json_schema', json_schema: { name: bridgedSchemaName, schema: format.schema } };
}

/** Claude's efforts as chat's `reasoning_effort`: its `max` as chat's most, `xhigh`. */
const chatEfforts: Readonly<Record<string, string>> = {
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
  max: 'xhigh',
};

/** Claude's `output_config.effort` as chat's `reasoning_effort`; undefined for a value it does not know. */
export function chatReasoningEffort(effort: unknown): string | undefined {
  return typeof effort === 'string' && Object.hasOwn(chatEfforts, effort) ? chatEfforts[effort] : undefined;
}

/** Chat's `reasoning_effort` as Claude's effort: its least (`none`, `minimal`) as Claude's, `low`. */
const claudeEfforts: Readonly<Record<string, string>> = {
  none: 'low',
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
};

/**
 * A chat request bound for Claude with its `reasoning_effort` (Codex's reasoning effort through the
 * Responses bridge, an OpenAI client's) as Claude's `output_config.effort`, among the Messages members it
 * carries (`ctxgate_anthropic`, where the model's refusals of an effort are applied: field-fixes.ts
 * withAnthropicFixes): dropped before, Claude spent as it would by default. A Messages client's own effort
 * stays; a value chat does not define is left out. The same object when there is none.
 */
export function withEffortAsClaudes<R extends Record<string, unknown>>(request: R): R {
  if (request.reasoning_effort === undefined || request.reasoning_effort === null) return request;
  const out: Record<string, unknown> = Object.assign({}, request);
  delete out.reasoning_effort;
  const effort =
    typeof request.reasoning_effort === 'string' && Object.hasOwn(claudeEfforts, request.reasoning_effort)
      ? claudeEfforts[request.reasoning_effort]
      : undefined;
  const extension = isRecord(request.ctxgate_anthropic) ? request.ctxgate_anthropic : {};
  const config = isRecord(extension.output_config) ? extension.output_config : {};
  if (effort !== undefined && config.effort === undefined)
    out.ctxgate_anthropic = Object.assign({}, extension, {
      output_config: Object.assign({}, config, { effort }),
    });
  return out as R;
}
