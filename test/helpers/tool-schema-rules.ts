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
  }
  return lines.length === 0 ? undefined : lines.join('\n');
}
