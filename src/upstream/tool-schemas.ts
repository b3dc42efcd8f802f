// Tool parameter schemas as every provider takes them (docs/budgeting.md#refused-fields). MCP servers
// describe their tools' input in full JSON Schema, and providers take less of it, each its own subset:
// OpenAI refuses an array without `items` ("Invalid schema for function 'google-docs_writeSpreadsheet':
// In context=('properties', 'values', 'items'), array schema missing items.", anomalyco/opencode#20273)
// and parameters that are not an object; Anthropic `anyOf`, `oneOf` or `allOf` at the top ("tools.80.
// custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level",
// aliargun/mcp-server-gemini#8); Gemini any keyword outside its own Schema object (`$schema`,
// `additionalProperties`, `const`, a list of types: "Unknown name \"additionalProperties\" at
// 'tools[0].function_declarations[9].parameters…': Cannot find field.", zed-industries/zed#45552). One
// such tool fails every request of the conversation. Once a model has refused one, its requests' schemas
// are written in the subset all of them take (withToolSchemasEveryProviderTakes): what a model is told
// of a tool's input is the same, less what no provider of the three reads alike.

import { isRecord } from './tool-call-shape.js';

/** The keywords of Gemini's Schema object that OpenAI and Anthropic read alike. */
const portableKeywords = new Set([
  'type',
  'title',
  'description',
  'nullable',
  'enum',
  'properties',
  'required',
  'items',
  'anyOf',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'minProperties',
  'maxProperties',
  'minimum',
  'maximum',
  'pattern',
]);

/** How many schemas one tool's parameters may become, `$ref`s followed (a graph of them can double at each level). */
const schemaBudget = 5_000;
/** And all of a request's tools: what is past it is taken as any value (some 2 µs a schema). */
const requestBudget = 40_000;
/** How deep schemas nest before what is deeper is taken as any value. */
const maxDepth = 32;

type Schema = Record<string, unknown>;

/** What one tool's parameters are rewritten with: the definitions its `$ref`s name, and what is left to make. */
interface Walk {
  definitions: Schema;
  budget: number;
  /** The `$ref`s being followed, outermost first: one that names itself again is not followed. */
  following: string[];
}

/** The schema a `$ref` of this document names (`#/$defs/X`, `#/definitions/X`); undefined for any other. */
function referenced(ref: string, walk: Walk): unknown {
  const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref);
  if (match === null) return undefined;
  const name = (match[1] as string).replace(/~1/g, '/').replace(/~0/g, '~');
  return Object.hasOwn(walk.definitions, name) ? walk.definitions[name] : undefined;
}

/** A description with a line added (the meaning of a keyword that is left out). */
function described(schema: Schema, line: string): void {
  schema.description =
    typeof schema.description === 'string' && schema.description !== ''
      ? `${schema.description}\n${line}`
      : line;
}

/** `schema` written in the portable subset. */
function portable(schema: unknown, walk: Walk, depth: number): Schema {
  if (!isRecord(schema) || depth > maxDepth || walk.budget <= 0) return {};
  walk.budget--;
  if (typeof schema.$ref === 'string' && !walk.following.includes(schema.$ref)) {
    const target = referenced(schema.$ref, walk);
    if (target !== undefined) {
      walk.following.push(schema.$ref);
      const out = portable(target, walk, depth + 1);
      walk.following.pop();
      // What the reference's own schema says beside it (a description) is kept over the target's.
      if (typeof schema.description === 'string') out.description = schema.description;
      return out;
    }
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) if (portableKeywords.has(key)) out[key] = value;
  for (const branch of Array.isArray(schema.allOf) ? (schema.allOf as unknown[]) : [])
    merged(out, portable(branch, walk, depth + 1));
  const alternatives = [schema.anyOf, schema.oneOf].flatMap((list) => (Array.isArray(list) ? list : []));
  if (alternatives.length > 0) out.anyOf = alternatives.map((branch) => portable(branch, walk, depth + 1));
  else delete out.anyOf;
  if (schema.const !== undefined) out.enum = [schema.const];
  typed(out, walk, depth);
  if (
    out.enum !== undefined &&
    !(Array.isArray(out.enum) && out.enum.every((value) => typeof value === 'string'))
  ) {
    // Gemini takes only text as an enum's values ("Invalid value at '…enum[0]' (TYPE_STRING), true").
    if (Array.isArray(out.enum))
      described(out, `One of: ${out.enum.map((value) => JSON.stringify(value)).join(', ')}.`);
    delete out.enum;
  }
  if (isRecord(out.properties)) {
    const properties: Schema = {};
    for (const [name, property] of Object.entries(out.properties))
      properties[name] = portable(property, walk, depth + 1);
    out.properties = properties;
  } else delete out.properties;
  if (out.items !== undefined || out.type === 'array') out.items = portable(out.items, walk, depth + 1);
  if (Array.isArray(out.required)) {
    const names = isRecord(out.properties) ? out.properties : {};
    const required = (out.required as unknown[]).filter(
      (name): name is string => typeof name === 'string' && Object.hasOwn(names, name),
    );
    if (required.length > 0) out.required = [...new Set(required)];
    else delete out.required;
  } else delete out.required;
  return out;
}

/** A list of types as one (and `nullable`), or as alternatives of one type each; a type that is not text left out. */
function typed(out: Schema, walk: Walk, depth: number): void {
  if (!Array.isArray(out.type)) {
    if (out.type !== undefined && typeof out.type !== 'string') delete out.type;
    return;
  }
  const types = (out.type as unknown[]).filter((type): type is string => typeof type === 'string');
  const named = [...new Set(types.filter((type) => type !== 'null'))];
  if (types.includes('null')) out.nullable = true;
  delete out.type;
  if (named.length === 1) out.type = named[0];
  else if (named.length > 1 && out.anyOf === undefined)
    out.anyOf = named.map((type) =>
      portable(
        type === 'array'
          ? { type, items: out.items }
          : type === 'object'
            ? { type, properties: out.properties }
            : { type },
        walk,
        depth + 1,
      ),
    );
}

/** `from`'s properties, requirements and type added to `into` (an `allOf` branch: all of them hold). */
function merged(into: Schema, from: Schema): void {
  if (isRecord(from.properties))
    into.properties = Object.assign({}, isRecord(into.properties) ? into.properties : {}, from.properties);
  if (Array.isArray(from.required))
    into.required = [...(Array.isArray(into.required) ? (into.required as unknown[]) : []), ...from.required];
  if (into.type === undefined && from.type !== undefined) into.type = from.type;
  if (into.description === undefined && from.description !== undefined) into.description = from.description;
}

/**
 * A tool's parameters in the portable subset, an object of properties at the top: alternatives there
 * (Anthropic refuses them) become one object of every alternative's properties, required only where
 * every alternative requires them.
 */
export function portableParameters(
  parameters: unknown,
  left: { schemas: number } = { schemas: schemaBudget },
): Schema {
  const definitions: Schema = {};
  if (isRecord(parameters))
    for (const key of ['definitions', '$defs'] as const)
      if (isRecord(parameters[key])) Object.assign(definitions, parameters[key]);
  const walk: Walk = { definitions, budget: Math.min(schemaBudget, left.schemas), following: [] };
  const given = walk.budget;
  const schema = portable(parameters, walk, 0);
  left.schemas -= given - walk.budget;
  const top: Schema = { type: 'object', properties: isRecord(schema.properties) ? schema.properties : {} };
  if (typeof schema.description === 'string') top.description = schema.description;
  let required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  if (Array.isArray(schema.anyOf)) {
    const branches = (schema.anyOf as Schema[]).filter((branch) => isRecord(branch.properties));
    for (const branch of branches) Object.assign(top.properties as Schema, branch.properties);
    const everywhere = branches
      .map((branch) => (Array.isArray(branch.required) ? (branch.required as string[]) : []))
      .reduce<string[] | undefined>(
        (all, names) => (all === undefined ? names : all.filter((name) => names.includes(name))),
        undefined,
      );
    required = [...new Set([...required, ...(everywhere ?? [])])];
    if (branches.length > 1) described(top, `Give the properties of one of ${branches.length} forms.`);
  }
  if (required.length > 0) top.required = required;
  return top;
}

/** `tools` with the schema each holds under `key` (of the tools `holds` picks) written portably; undefined when none changed. */
function portableTools(
  tools: unknown,
  holds: (tool: Schema) => Schema | undefined,
  key: string,
  left: { schemas: number },
): unknown[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  let changed = false;
  const out = (tools as unknown[]).map((tool) => {
    const holder = isRecord(tool) ? holds(tool) : undefined;
    if (holder === undefined || holder[key] === undefined) return tool;
    changed = true;
    const written = Object.assign({}, holder, { [key]: portableParameters(holder[key], left) });
    return holder === tool ? written : Object.assign({}, tool, { function: written });
  });
  return changed ? out : undefined;
}

/**
 * The request with each function tool's parameters in the portable subset (toolSchemasField) — and,
 * for a Messages request bridged onto it, each of the client's own tools' `input_schema`, which is what
 * Claude is sent; the same request when it sends no such tool.
 */
export function withToolSchemasEveryProviderTakes<R extends Record<string, unknown>>(request: R): R {
  const left = { schemas: requestBudget };
  const tools = portableTools(
    request.tools,
    (tool) => (isRecord(tool.function) ? tool.function : undefined),
    'parameters',
    left,
  );
  const extension = isRecord(request.ctxgate_anthropic) ? request.ctxgate_anthropic : undefined;
  // Claude's own custom tools (a server tool has a versioned type and no schema).
  const claudes = portableTools(
    extension?.tools,
    (tool) => (tool.type === undefined || tool.type === 'custom' ? tool : undefined),
    'input_schema',
    left,
  );
  if (tools === undefined && claudes === undefined) return request;
  const out: Record<string, unknown> = Object.assign({}, request);
  if (tools !== undefined) out.tools = tools;
  if (claudes !== undefined) out.ctxgate_anthropic = Object.assign({}, extension, { tools: claudes });
  return out as R;
}
