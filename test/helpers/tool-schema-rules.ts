// What providers refuse of a tool's parameter schema, in their own words, for the strict fakes: OpenAI
// an array without `items` and parameters that are not an object (opencode#20273, wordpress-mcp#103),
// Anthropic alternatives at the top (aliargun/mcp-server-gemini#8), Gemini any keyword outside its Schema
// object and a list of types (zed-industries/zed#45552, #44875).

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every schema inside `schema` with its place, as OpenAI's `context=(…)` names it, outermost first. */
function* schemasIn(schema: unknown, at: string[] = []): Generator<[Schema, string[]]> {
  if (!isSchema(schema)) return;
  yield [schema, at];
  if (isSchema(schema.properties))
    for (const [name, property] of Object.entries(schema.properties))
      yield* schemasIn(property, [...at, 'properties', name]);
  if (schema.items !== undefined) yield* schemasIn(schema.items, [...at, 'items']);
  for (const key of ['anyOf', 'oneOf', 'allOf'])
    if (Array.isArray(schema[key]))
      for (const [index, branch] of (schema[key] as unknown[]).entries())
        yield* schemasIn(branch, [...at, key, String(index)]);
  for (const key of ['$defs', 'definitions'])
    if (isSchema(schema[key]))
      for (const [name, definition] of Object.entries(schema[key]))
        yield* schemasIn(definition, [...at, key, name]);
}

const typesOf = (schema: Schema): unknown[] => (Array.isArray(schema.type) ? schema.type : [schema.type]);

/** OpenAI's refusal of a function's parameters (code `invalid_function_parameters`); undefined when it takes them. */
export function openAISchemaRefusal(name: string, parameters: unknown): string | undefined {
  if (parameters === undefined) return undefined;
  const top = isSchema(parameters) ? parameters.type : undefined;
  if (top !== 'object')
    return `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${String(top ?? 'None')}"'.`;
  for (const [schema, at] of schemasIn(parameters))
    if (typesOf(schema).includes('array') && schema.items === undefined) {
      const context = at.map((part) => `'${part}'`).join(', ');
      return `Invalid schema for function '${name}': In context=(${context}), array schema missing items.`;
    }
  return undefined;
}

/** Anthropic's refusal of the `index`th tool's input schema; undefined when it takes it. */
export function anthropicSchemaRefusal(index: number, schema: unknown): string | undefined {
  if (!isSchema(schema)) return `tools.${index}.custom.input_schema: Input should be a valid dictionary`;
  if (schema.type === undefined) return `tools.${index}.custom.input_schema.type: Field required`;
  if (schema.type !== 'object') return `tools.${index}.custom.input_schema.type: Input should be 'object'`;
  if (['anyOf', 'oneOf', 'allOf'].some((key) => schema[key] !== undefined))
    return `tools.${index}.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level`;
  return undefined;
}

/** The keywords of Gemini's Schema object (ai.google.dev/api/caching#Schema). */
const geminiKeywords = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);

/** Gemini's refusals of the `index`th function's parameters, one line each; undefined when it takes them. */
export function geminiSchemaRefusal(index: number, parameters: unknown): string | undefined {
  const lines: string[] = [];
  for (const [schema, at] of schemasIn(parameters)) {
    // Gemini names a place as `properties[i].value`: the property's index among its siblings.
    const place = `tools[0].function_declarations[${index}].parameters${at.map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`)).join('')}`;
    for (const key of Object.keys(schema))
      if (!geminiKeywords.has(key))
        lines.push(`Invalid JSON payload received. Unknown name "${key}" at '${place}': Cannot find field.`);
    if (Array.isArray(schema.type))
      lines.push(
        `Invalid JSON payload received. Unknown name "type" at '${place}': Proto field is not repeating, cannot start list.`,
      );
    if (Array.isArray(schema.enum) && schema.enum.some((value) => typeof value !== 'string'))
      lines.push(`Invalid value at '${place}.enum[0]' (TYPE_STRING), ${JSON.stringify(schema.enum[0])}`);
    // An empty text among the values: "* GenerateContentRequest.tools[0].function_declarations[34].parameters
    // .properties[permission].enum[3]: cannot be empty" (its place by the property's name, here).
    const empty = Array.isArray(schema.enum) ? schema.enum.indexOf('') : -1;
    if (empty !== -1)
      lines.push(
        `* GenerateContentRequest.tools[0].function_declarations[${index}].parameters${at.map((part) => `.${part}`).join('')}.enum[${empty}]: cannot be empty`,
      );
  }
  return lines.length === 0 ? undefined : lines.join('\n');
}

/** A JSON value's type as Moonshot's validator names it (a whole number is an `integer`, and a `number` too). */
const kindOf = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'array'
      : typeof value === 'number'
        ? Number.isInteger(value)
          ? 'integer'
          : 'number'
        : typeof value;

/** Moonshot's first objection to one schema at `at` (its place as the validator names it), and then to those inside it. */
function moonshotObjection(schema: Schema, at: string[]): string | undefined {
  const place = at.length === 0 ? 'root' : at.join('.');
  const say = (where: string, what: string) => `<At path '${where}': ${what}>`;
  if (schema.type !== undefined && schema.anyOf !== undefined)
    return say(place, 'when using anyOf, type should be defined in anyOf items instead of the parent schema');
  if (schema.type !== undefined && schema.$ref !== undefined)
    return say(
      place,
      'when using $ref, type should be defined in the referenced schema instead of the parent schema',
    );
  if (typeof schema.$ref === 'string' && schema.$ref !== '#' && !schema.$ref.startsWith('#/$defs/'))
    return say([...at, '$ref'].join('.'), 'references must start with #/$defs/');
  if (Array.isArray(schema.enum)) {
    if (schema.type === undefined) return say(place, 'type is not defined');
    const types = typesOf(schema);
    if (types.length > 2 || (types.length === 2 && !types.includes('null')))
      return say(
        place,
        'when type is array and enum is specified, currently only 2 types are supported, one must be null, and the other can be string/integer/number/boolean',
      );
    for (const value of schema.enum as unknown[])
      if (!types.some((type) => type === kindOf(value) || (type === 'number' && kindOf(value) === 'integer')))
        return say(
          [...at, 'enum'].join('.'),
          `enum value (${String(value)}) does not match any type in [${types.join(' ')}]`,
        );
  }
  if (schema.properties !== undefined && !isSchema(schema.properties))
    return say([...at, 'properties'].join('.'), 'properties must be an object');
  if (schema.items !== undefined && !isSchema(schema.items))
    return say([...at, 'items'].join('.'), 'items must be an object');
  const properties = isSchema(schema.properties) ? schema.properties : {};
  for (const [name, property] of Object.entries(properties))
    if (!isSchema(property))
      return say([...at, 'properties'].join('.'), `property schema for '${name}' must be an object`);
  for (const name of Array.isArray(schema.required) ? (schema.required as unknown[]) : [])
    if (!Object.hasOwn(properties, String(name)))
      return say(
        [...at, 'required'].join('.'),
        `required property '${String(name)}' is not defined in properties`,
      );
  if (Array.isArray(schema.anyOf))
    for (const branch of schema.anyOf as unknown[]) {
      if (!isSchema(branch)) return say([...at, 'anyOf'].join('.'), 'schema in anyOf must be an object');
      // The keywords a branch shares with its parent (a description aside) are refused.
      const shared = Object.keys(branch).filter(
        (key) => key !== 'description' && key !== 'title' && key in schema && key !== 'anyOf',
      );
      if (shared.length > 0)
        return say(
          place,
          `conflicting keywords found in anyOf with parent: keywords (${shared.sort().join(', ')}) are defined on the parent schema and inside anyOf; remove them from the parent or from anyOf branches`,
        );
      const inner = moonshotObjection(branch, [...at, 'anyOf']);
      if (inner !== undefined) return inner;
    }
  for (const [name, property] of Object.entries(properties)) {
    const inner = moonshotObjection(property as Schema, [...at, 'properties', name]);
    if (inner !== undefined) return inner;
  }
  if (isSchema(schema.items)) return moonshotObjection(schema.items, [...at, 'items']);
  if (isSchema(schema.additionalProperties))
    return moonshotObjection(schema.additionalProperties, [...at, 'additionalProperties']);
  return undefined;
}

/**
 * Moonshot's refusal of a function's parameters, in its words (a subset of its validator's rules,
 * github.com/MoonshotAI/walle: MoonshotAI/kimi-code#2661, nicobailon/pi-subagents#127,
 * earendil-works/pi#5822, can1357/oh-my-pi#5952, farion1231/cc-switch#5046); undefined when it takes them.
 */
export function moonshotSchemaRefusal(parameters: unknown): string | undefined {
  if (!isSchema(parameters) || parameters.type !== 'object')
    return 'Invalid request: tools.function.parameters.type is required and must be "object"';
  const objection = moonshotObjection(parameters, []);
  if (objection === undefined) {
    for (const [name, definition] of Object.entries(isSchema(parameters.$defs) ? parameters.$defs : {})) {
      if (!isSchema(definition))
        return `Invalid request: tools.function.parameters is not a valid moonshot flavored json schema, details: <At path '$defs': $defs schema must be object: ${name}>`;
      const inner = moonshotObjection(definition, ['$defs', name]);
      if (inner !== undefined)
        return `Invalid request: tools.function.parameters is not a valid moonshot flavored json schema, details: ${inner}`;
    }
    return undefined;
  }
  return `Invalid request: tools.function.parameters is not a valid moonshot flavored json schema, details: ${objection}`;
}

/** A keyword's value as Python prints it in Fireworks' refusal (`{'required': ['expand']}`). */
function pythonRepr(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.entries(value)
      .map(([key, entry]) => `'${key}': ${pythonRepr(entry)}`)
      .join(', ')}}`;
  return value === true ? 'True' : value === false ? 'False' : value === null ? 'None' : String(value);
}

/**
 * Fireworks' rule for a function's parameters, as it serves Kimi: it merges the branches of an `allOf` into
 * one schema, and two branches giving one keyword different values (two conditionals' `if`) are refused in
 * its words (nicobailon/pi-subagents#265, #325). Anywhere in the schema.
 */
export function fireworksSchemaRefusal(parameters: unknown): string | undefined {
  if (typeof parameters !== 'object' || parameters === null) return undefined;
  const schema = parameters as Record<string, unknown>;
  if (Array.isArray(schema.allOf)) {
    const merged = new Map<string, unknown>();
    for (const branch of schema.allOf as unknown[])
      for (const [key, value] of Object.entries((branch ?? {}) as Record<string, unknown>)) {
        const previous = merged.get(key);
        if (previous !== undefined && JSON.stringify(previous) !== JSON.stringify(value))
          return `Conflict in schema definitions for key '${key}'. Previous: ${pythonRepr(previous)}, New: ${pythonRepr(value)}`;
        merged.set(key, value);
      }
  }
  const nested = [
    ...Object.values((schema.properties ?? {}) as Record<string, unknown>),
    schema.items,
    ...((schema.anyOf ?? []) as unknown[]),
  ];
  for (const each of nested) {
    const refusal = fireworksSchemaRefusal(each);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}
