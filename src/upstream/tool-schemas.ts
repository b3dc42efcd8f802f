// Tool parameter schemas as providers take them (docs/budgeting.md#refused-fields). MCP servers describe
// their tools' input in full JSON Schema, and providers take less of it, each its own: OpenAI refuses an
// array without `items` ("Invalid schema for function 'google-docs_writeSpreadsheet': In
// context=('properties', 'values', 'items'), array schema missing items.", anomalyco/opencode#20273) and
// parameters that are not an object; Anthropic `anyOf`, `oneOf` or `allOf` at the top ("tools.80.custom.
// input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level",
// aliargun/mcp-server-gemini#8); Gemini any keyword outside its own Schema object (`$schema`,
// `additionalProperties`, `const`, a list of types: "Unknown name \"additionalProperties\" at
// 'tools[0].function_declarations[9].parameters…': Cannot find field.", zed-industries/zed#45552). One
// such tool fails every request of the conversation. A fix learned from one client's tool applies to
// every request of the model, so each form leaves a schema the provider takes as it was: OpenAI's and
// Anthropic's refusals are met by repairing only what they refuse (repairedParameters: a strict tool's
// `additionalProperties: false` kept), Gemini's by writing the schema in its subset (portableParameters).

import { isRecord } from './tool-call-shape.js';

/** The keywords of Gemini's Schema object that OpenAI and Anthropic read alike: Gemini's subset. */
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

/**
 * What `write` makes of one tool's parameters within a tool's budget and what is `left` of the request's,
 * which it lowers by the schemas it made.
 */
function withinBudget<T>(left: { schemas: number }, definitions: Schema, write: (walk: Walk) => T): T {
  const walk: Walk = { definitions, budget: Math.min(schemaBudget, left.schemas), following: [] };
  const given = walk.budget;
  const written = write(walk);
  left.schemas -= given - walk.budget;
  return written;
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
  if (out.enum !== undefined && !(Array.isArray(out.enum) && out.enum.every(isGeminiEnumValue))) {
    // Gemini takes only text as an enum's values ("Invalid value at '…enum[0]' (TYPE_STRING), true"), and
    // no empty one ("…properties[permission].enum[3]: cannot be empty").
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

/** Where a schema holds schemas by name: its properties, and the definitions its references name. */
const namedSchemas = new Set(['properties', '$defs', 'definitions', 'patternProperties']);
/** Where it holds one, or a list of them. */
const heldSchemas = new Set([
  'items',
  'additionalProperties',
  'not',
  'contains',
  'anyOf',
  'oneOf',
  'allOf',
  'prefixItems',
]);

/** Each of a list of schemas repaired: the same list when none changed. */
function repairedList(list: readonly unknown[], walk: Walk, depth: number): readonly unknown[] {
  let out: unknown[] | undefined;
  for (let at = 0; at < list.length; at++) {
    const written = repaired(list[at], walk, depth);
    if (written !== list[at]) (out ??= list.slice())[at] = written;
  }
  return out ?? list;
}

/** Each of a map of schemas by name repaired: the same map when none changed. */
function repairedNamed(named: Schema, walk: Walk, depth: number): Schema {
  let out: Schema | undefined;
  for (const name in named) {
    const written = repaired(named[name], walk, depth);
    if (written !== named[name]) (out ??= Object.assign({}, named))[name] = written;
  }
  return out ?? named;
}

/**
 * `schema` with what OpenAI and Anthropic refuse inside it repaired — an array given `items` — or itself.
 * Its keys are read once (most schemas have two or three), not looked up by every name that may hold one.
 */
function repaired(schema: unknown, walk: Walk, depth: number): unknown {
  if (!isRecord(schema) || depth > maxDepth || walk.budget <= 0) return schema;
  walk.budget--;
  let out: Schema | undefined;
  for (const key in schema) {
    const held = schema[key];
    let written = held;
    if (namedSchemas.has(key)) written = isRecord(held) ? repairedNamed(held, walk, depth + 1) : held;
    else if (heldSchemas.has(key))
      written = Array.isArray(held) ? repairedList(held, walk, depth + 1) : repaired(held, walk, depth + 1);
    if (written !== held) (out ??= Object.assign({}, schema))[key] = written;
  }
  const type = schema.type;
  if (
    (type === 'array' || (Array.isArray(type) && type.includes('array'))) &&
    schema.items === undefined &&
    schema.prefixItems === undefined
  )
    (out ??= Object.assign({}, schema)).items = {};
  return out ?? schema;
}

/**
 * A tool's parameters with what OpenAI and Anthropic refuse repaired, all else as it was (the same object
 * when nothing is): an array without `items` given `items: {}`, no `type` at the top `object` (with
 * `properties`), and alternatives at the top joined into one object of every alternative's properties,
 * required only where every alternative requires them.
 */
export function repairedParameters(
  parameters: unknown,
  left: { schemas: number } = { schemas: schemaBudget },
): unknown {
  const written = withinBudget(left, {}, (walk) => repaired(parameters, walk, 0));
  if (!isRecord(written)) return { type: 'object', properties: {} };
  let schema: Schema = written;
  const alternatives = (['anyOf', 'oneOf', 'allOf'] as const).filter((key) => Array.isArray(schema[key]));
  if (alternatives.length > 0) {
    const top: Schema = Object.assign({}, schema);
    const branches: Schema[] = [];
    for (const key of alternatives) {
      branches.push(...(top[key] as unknown[]).filter(isRecord));
      delete top[key];
    }
    const properties: Schema = Object.assign({}, isRecord(top.properties) ? top.properties : {});
    for (const branch of branches)
      if (isRecord(branch.properties)) Object.assign(properties, branch.properties);
    const requiredOf = (branch: Schema): string[] =>
      Array.isArray(branch.required)
        ? (branch.required as unknown[]).filter((name) => typeof name === 'string')
        : [];
    // Every branch of `allOf` holds; of the others one does: a name required by all of them is.
    const required = new Set([
      ...requiredOf(top),
      ...(alternatives.includes('allOf') ? branches.flatMap(requiredOf) : []),
      ...(branches
        .map(requiredOf)
        .reduce<string[] | undefined>(
          (all, names) => (all === undefined ? names : all.filter((name) => names.includes(name))),
          undefined,
        ) ?? []),
    ]);
    top.properties = properties;
    if (required.size > 0) top.required = [...required];
    else delete top.required;
    if (!alternatives.includes('allOf') && branches.length > 1)
      described(top, `Give the properties of one of ${branches.length} forms.`);
    schema = top;
  }
  if (schema.type === undefined || !isRecord(schema.properties)) {
    const top: Schema = Object.assign({}, schema);
    top.type ??= 'object';
    if (top.type === 'object' && !isRecord(top.properties)) top.properties = {};
    schema = top;
  }
  return schema;
}

/** A JSON value's type as a schema names it; a whole number is an `integer`. */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/**
 * The type an enum's values are all of, as Moonshot takes it with an enum (one type, or one and `null`;
 * whole numbers among others are `number`s); undefined when they are of more (or of objects or lists).
 */
function typeOfValues(values: readonly unknown[]): string | string[] | undefined {
  const kinds = new Set(values.map(kindOf));
  if (kinds.has('number')) kinds.delete('integer');
  const nullable = kinds.delete('null');
  if (kinds.size !== 1) return undefined;
  const kind = [...kinds][0] as string;
  if (kind === 'object' || kind === 'array') return undefined;
  return nullable ? [kind, 'null'] : kind;
}

/** Whether an enum's values are all of `type` (a name or a list of them). */
const valuesOfType = (values: readonly unknown[], type: unknown): boolean => {
  const types: unknown[] = Array.isArray(type) ? type : [type];
  return values.every((value) => {
    const kind = kindOf(value);
    return types.includes(kind) || (kind === 'integer' && types.includes('number'));
  });
};

/** The keywords by which an alternative says what value it is (not only what an object must hold). */
const shapingKeywords = ['type', 'properties', 'items', 'enum', 'const', '$ref', 'anyOf', 'oneOf', 'allOf'];

/**
 * Alternatives that only say which of an object's properties it requires ("either `id` or `url`"), which
 * Moonshot refuses beside the object's type and each as requiring properties it does not have: told in
 * the description instead (in `out`, a copy).
 */
function withRequirementsTold(out: Schema): void {
  const branches = out.anyOf;
  if (!Array.isArray(branches) || branches.length === 0) return;
  if (
    !branches.every((branch) => isRecord(branch) && !shapingKeywords.some((key) => branch[key] !== undefined))
  )
    return;
  const forms = branches.map((branch) => ((branch as Schema).required as unknown[] | undefined) ?? []);
  // An alternative that requires nothing leaves nothing to tell.
  if (forms.every((names) => Array.isArray(names) && names.length > 0))
    described(out, `Give one of: ${forms.map((names) => names.join(' and ')).join('; ')}.`);
  delete out.anyOf;
}

/**
 * `schema`'s `type` and `enum` as Moonshot takes them (in `out`, a copy): a type beside alternatives moved
 * into those that have none; a type beside a reference left out; an enum of no type (or of
 * values not of its type) typed by its values, or told in the description when they are of several.
 */
function mfjsTyped(out: Schema): void {
  if (Array.isArray(out.anyOf) && out.type !== undefined) {
    const type = out.type;
    out.anyOf = (out.anyOf as unknown[]).map((branch) =>
      isRecord(branch) && branch.type === undefined && branch.$ref === undefined && branch.anyOf === undefined
        ? Object.assign({ type }, branch)
        : branch,
    );
    delete out.type;
  }
  if (typeof out.$ref === 'string') delete out.type;
  const values = Array.isArray(out.enum)
    ? (out.enum as unknown[])
    : out.const !== undefined
      ? [out.const]
      : undefined;
  if (values === undefined || out.anyOf !== undefined || out.$ref !== undefined) return;
  if (out.type !== undefined && valuesOfType(values, out.type)) return;
  const type = typeOfValues(values);
  if (type !== undefined) out.type = type;
  else if (Array.isArray(out.enum)) {
    described(out, `One of: ${values.map((value) => JSON.stringify(value)).join(', ')}.`);
    delete out.enum;
    delete out.type;
  }
}

/**
 * `original` when `written` holds the same values under the same keys (nothing in it changed), else
 * `written`.
 */
function sameOr<T extends Schema | unknown[]>(original: T, written: T): T {
  const keys = Object.keys(written);
  return keys.length === Object.keys(original).length &&
    keys.every((key) => (written as Schema)[key] === (original as Schema)[key])
    ? original
    : written;
}

/** A schema where Moonshot takes only an object: `true` (any value) as `{}`. */
const asSchema = (value: unknown): unknown => (value === true ? {} : value);

/**
 * `schema` in Moonshot's flavored JSON Schema (MFJS, github.com/MoonshotAI/walle), or itself when it is:
 * each schema inside an object (`true` as `{}`, a property of `false` left out), a tuple's `items` as one
 * schema of its alternatives, `definitions` and references into it as `$defs`, a reference elsewhere
 * left out, and each schema's type and enum as mfjsTyped writes them, its requirements only of its
 * properties.
 */
function mfjs(schema: unknown, walk: Walk, depth: number, root: boolean): unknown {
  if (!isRecord(schema) || depth > maxDepth || walk.budget <= 0) return schema;
  walk.budget--;
  const out: Schema = Object.assign({}, schema);
  // Properties written as a list (an empty one, as PHP encodes an empty map): Moonshot takes a map only.
  if (out.properties !== undefined && !isRecord(out.properties)) out.properties = {};
  withRequirementsTold(out);
  const each = (value: unknown): unknown => mfjs(asSchema(value), walk, depth + 1, false);
  for (const key of ['properties', '$defs', 'definitions', 'patternProperties'] as const) {
    if (!isRecord(out[key])) continue;
    const named: Schema = {};
    for (const [name, held] of Object.entries(out[key] as Schema))
      if (held !== false) named[name] = each(held);
    out[key] = sameOr(out[key] as Schema, named);
  }
  if (root && isRecord(out.definitions)) {
    out.$defs = Object.assign({}, out.definitions, isRecord(out.$defs) ? out.$defs : {});
    delete out.definitions;
  }
  if (Array.isArray(out.items)) {
    const items = (out.items as unknown[]).map(each);
    out.items = items.length === 0 ? {} : items.length === 1 ? items[0] : { anyOf: items };
  } else if (out.items === false) delete out.items;
  else if (out.items !== undefined) out.items = each(out.items);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const)
    if (Array.isArray(out[key])) out[key] = sameOr(out[key] as unknown[], (out[key] as unknown[]).map(each));
  for (const key of ['additionalProperties', 'not', 'contains', 'if', 'then', 'else'] as const)
    if (isRecord(out[key])) out[key] = each(out[key]);
  if (typeof out.$ref === 'string') {
    const named = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(out.$ref);
    if (named !== null) out.$ref = `#/$defs/${named[1] as string}`;
    else if (out.$ref !== '#') delete out.$ref;
  }
  mfjsTyped(out);
  if (Array.isArray(out.required)) {
    const properties = isRecord(out.properties) ? out.properties : {};
    const required = (out.required as unknown[]).filter(
      (name) => typeof name === 'string' && Object.hasOwn(properties, name),
    );
    if (required.length === 0) delete out.required;
    else if (required.length < (out.required as unknown[]).length) out.required = required;
  }
  return sameOr(schema, out);
}

/**
 * A tool's parameters in Moonshot's flavored JSON Schema (mfjs), and then repaired as OpenAI and
 * Anthropic take them: an object at the top, its alternatives joined (Moonshot takes no type beside
 * them, and an object's type at the top only).
 */
export function mfjsParameters(
  parameters: unknown,
  left: { schemas: number } = { schemas: schemaBudget },
): unknown {
  const written = withinBudget(left, {}, (walk) => mfjs(parameters, walk, 0, true));
  return repairedParameters(written, left);
}

/** Whether Gemini takes `value` among an enum's values: a text, not empty. */
const isGeminiEnumValue = (value: unknown): boolean => typeof value === 'string' && value !== '';

/**
 * Whether `schema` is in Gemini's subset already: its keywords among it, its type one, its enum of text,
 * an array's items given, each name it requires a property, and so each schema inside it.
 */
function inSubset(schema: unknown, left: { schemas: number }, depth: number): boolean {
  if (!isRecord(schema) || depth > maxDepth || left.schemas-- <= 0) return false;
  for (const key in schema) if (!portableKeywords.has(key)) return false;
  const { type, enum: values, properties, items, required, anyOf } = schema;
  if (type !== undefined && typeof type !== 'string') return false;
  if (values !== undefined && !(Array.isArray(values) && values.every(isGeminiEnumValue))) return false;
  if (type === 'array' && items === undefined) return false;
  if (properties !== undefined) {
    if (!isRecord(properties)) return false;
    for (const name in properties) if (!inSubset(properties[name], left, depth + 1)) return false;
  }
  if (required !== undefined) {
    if (!Array.isArray(required)) return false;
    for (const name of required)
      if (typeof name !== 'string' || !isRecord(properties) || !Object.hasOwn(properties, name)) return false;
  }
  if (items !== undefined && !inSubset(items, left, depth + 1)) return false;
  if (
    anyOf !== undefined &&
    !(Array.isArray(anyOf) && anyOf.every((branch) => inSubset(branch, left, depth + 1)))
  )
    return false;
  return true;
}

/**
 * A tool's parameters in Gemini's subset (which OpenAI and Anthropic take too), an object of properties at the top: alternatives there
 * (Anthropic refuses them) become one object of every alternative's properties, required only where
 * every alternative requires them.
 */
export function portableParameters(
  parameters: unknown,
  left: { schemas: number } = { schemas: schemaBudget },
): Schema {
  // A schema in the subset already (another client's, once the model learned the fix) goes as it is.
  const checked = { schemas: Math.min(schemaBudget, left.schemas) };
  if (
    isRecord(parameters) &&
    parameters.type === 'object' &&
    parameters.anyOf === undefined &&
    inSubset(parameters, checked, 0)
  ) {
    left.schemas -= Math.min(schemaBudget, left.schemas) - checked.schemas;
    return parameters;
  }
  const definitions: Schema = {};
  if (isRecord(parameters))
    for (const key of ['definitions', '$defs'] as const)
      if (isRecord(parameters[key])) Object.assign(definitions, parameters[key]);
  const schema = withinBudget(left, definitions, (walk) => portable(parameters, walk, 0));
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

/** How a schema is written: what OpenAI and Anthropic refuse repaired, in Gemini's subset, or in Moonshot's. */
export type SchemaForm = 'repaired' | 'gemini' | 'moonshot';

/** `tools` with the schema each holds under `key` (of the tools `holds` picks) written in `form`; undefined when none changed. */
function toolsWritten(
  tools: unknown,
  holds: (tool: Schema) => Schema | undefined,
  key: string,
  form: SchemaForm,
  left: { schemas: number },
): unknown[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  let changed = false;
  const out = (tools as unknown[]).map((tool) => {
    const holder = isRecord(tool) ? holds(tool) : undefined;
    // A function that takes nothing, given no parameters (Qwen Code leaves them out), which MiniMax refuses:
    // an object of no properties (Gemini's subset has no such object, and it takes none left out).
    if (holder === undefined || (holder[key] === undefined && form === 'gemini')) return tool;
    const schema =
      holder[key] === undefined
        ? { type: 'object', properties: {} }
        : form === 'gemini'
          ? portableParameters(holder[key], left)
          : form === 'moonshot'
            ? mfjsParameters(holder[key], left)
            : repairedParameters(holder[key], left);
    if (schema === holder[key]) return tool;
    changed = true;
    const written = Object.assign({}, holder, { [key]: schema });
    return holder === tool ? written : Object.assign({}, tool, { function: written });
  });
  return changed ? out : undefined;
}

/**
 * The request with each function tool's parameters written in `form` (toolSchemasField,
 * toolSchemaKeywordsField) — and, for a Messages request bridged onto it, each of the client's own tools'
 * `input_schema`, which is what Claude is sent; the same request when none changes.
 */
export function withToolSchemasAs<R extends Record<string, unknown>>(request: R, form: SchemaForm): R {
  const left = { schemas: requestBudget };
  const tools = toolsWritten(
    request.tools,
    (tool) => (isRecord(tool.function) ? tool.function : undefined),
    'parameters',
    form,
    left,
  );
  const extension = isRecord(request.ctxgate_anthropic) ? request.ctxgate_anthropic : undefined;
  // Claude's own custom tools (a server tool has a versioned type and no schema).
  const claudes = toolsWritten(
    extension?.tools,
    (tool) => (tool.type === undefined || tool.type === 'custom' ? tool : undefined),
    'input_schema',
    form,
    left,
  );
  if (tools === undefined && claudes === undefined) return request;
  const out: Record<string, unknown> = Object.assign({}, request);
  if (tools !== undefined) out.tools = tools;
  if (claudes !== undefined) out.ctxgate_anthropic = Object.assign({}, extension, { tools: claudes });
  return out as R;
}
