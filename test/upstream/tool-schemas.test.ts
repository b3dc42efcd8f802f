// Tool parameter schemas as providers take them (tool-schemas.ts), as a table of schemas MCP servers send:
// repaired, each is taken by the rules of OpenAI and Anthropic as the strict fakes hold them
// (test/helpers/tool-schema-rules.ts) and a schema they take already is left as it was (a fix learned
// from one client applies to every client's request); in Gemini's subset, by Gemini's rules too. Each
// keeps what the model must know.
import { describe, expect, it } from 'vitest';
import {
  mfjsParameters,
  portableParameters,
  repairedParameters,
  withToolSchemasAs,
} from '../../src/upstream/tool-schemas.js';
import {
  anthropicSchemaRefusal,
  geminiSchemaRefusal,
  moonshotSchemaRefusal,
  openAISchemaRefusal,
} from '../helpers/tool-schema-rules.js';

/** A cycle of references (a tree node whose children are nodes). */
const tree = {
  type: 'object',
  properties: { root: { $ref: '#/definitions/Node' } },
  definitions: {
    Node: {
      type: 'object',
      properties: {
        label: { type: 'string' },
        children: { type: 'array', items: { $ref: '#/definitions/Node' } },
      },
    },
  },
};

/** References that double at each level: 2^40 schemas if each were followed to its end. */
const doubling: Record<string, unknown> = { $defs: {} as Record<string, unknown>, type: 'object' };
for (let level = 0; level < 40; level++)
  (doubling.$defs as Record<string, unknown>)[`L${level}`] = {
    type: 'object',
    properties: { a: { $ref: `#/$defs/L${level + 1}` }, b: { $ref: `#/$defs/L${level + 1}` } },
  };
doubling.properties = { top: { $ref: '#/$defs/L0' } };

const cases: ReadonlyArray<{ name: string; parameters: unknown; properties: string[]; required?: string[] }> =
  [
    {
      name: 'an array without items, nested too (opencode#20273, wordpress-mcp#103)',
      parameters: {
        type: 'object',
        properties: {
          values: { type: 'array', items: { type: 'array' } },
          tags: { type: ['array', 'null'] },
        },
        required: ['values'],
      },
      properties: ['values', 'tags'],
      required: ['values'],
    },
    {
      name: "zod-to-json-schema's draft-07 output: $schema, additionalProperties, const, exclusiveMinimum",
      parameters: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        additionalProperties: false,
        properties: {
          mode: { const: 'append' },
          count: { type: 'number', exclusiveMinimum: 0 },
          url: { type: 'string', format: 'uri' },
        },
        required: ['mode', 'missing'],
      },
      properties: ['mode', 'count', 'url'],
      required: ['mode'],
    },
    {
      name: 'alternatives at the top (aliargun/mcp-server-gemini#8)',
      parameters: {
        oneOf: [
          {
            type: 'object',
            properties: { query: { type: 'string' }, limit: { type: 'integer' } },
            required: ['query', 'limit'],
          },
          {
            type: 'object',
            properties: { id: { type: 'integer' }, limit: { type: 'integer' } },
            required: ['limit'],
          },
        ],
      },
      properties: ['query', 'limit', 'id'],
      required: ['limit'],
    },
    {
      name: 'allOf: every branch holds',
      parameters: {
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          { properties: { b: { type: 'boolean', enum: [true, false] } }, required: ['b'] },
        ],
      },
      properties: ['a', 'b'],
      required: ['a', 'b'],
    },
    {
      name: 'a list of types with an object among them, and a union of types',
      parameters: {
        type: 'object',
        properties: {
          either: { type: ['string', 'object'], properties: { x: { type: 'string' } } },
          anything: { type: ['string', 'number', 'boolean', 'null'] },
        },
      },
      properties: ['either', 'anything'],
    },
    { name: 'a reference cycle (a tree)', parameters: tree, properties: ['root'] },
    { name: 'references that double at each level', parameters: doubling, properties: ['top'] },
    { name: 'no type at the top', parameters: { properties: { q: { type: 'string' } } }, properties: ['q'] },
    { name: 'not a schema', parameters: 'string', properties: [] },
  ];

describe('portableParameters over the schemas MCP servers send', () => {
  it.each(cases)('$name: taken by OpenAI, Anthropic and Gemini', ({ parameters, properties, required }) => {
    const written = portableParameters(parameters);
    expect(openAISchemaRefusal('tool', written)).toBeUndefined();
    expect(anthropicSchemaRefusal(0, written)).toBeUndefined();
    expect(geminiSchemaRefusal(0, written)).toBeUndefined();
    expect(Object.keys(written.properties as object)).toEqual(properties);
    expect(written.required).toEqual(required);
  });

  it('leaves a schema in the subset already as it was (another client’s, once the model learned)', () => {
    const schema = {
      type: 'object',
      properties: {
        city: { type: 'string', description: 'A city' },
        days: { type: 'array', items: { type: 'integer', minimum: 1 } },
        unit: { type: 'string', enum: ['C', 'F'], nullable: true },
      },
      required: ['city'],
    };
    expect(portableParameters(schema)).toBe(schema);
    // One keyword outside it: written anew.
    const other = structuredClone(schema);
    Object.assign(other.properties.city, { format: 'city' });
    expect(portableParameters(other)).not.toBe(other);
  });

  it("keeps a property's description, its type and a constant's value", () => {
    expect(
      portableParameters({
        type: 'object',
        properties: {
          range: { type: 'string', description: 'A1 notation', format: 'uri', examples: ['A1'] },
          mode: { const: 'append', description: 'Always append' },
          level: { enum: [1, 2, 3] },
        },
      }).properties,
    ).toEqual({
      range: { type: 'string', description: 'A1 notation' },
      mode: { enum: ['append'], description: 'Always append' },
      // Gemini takes only text as an enum's values: the numbers are told in the description.
      level: { description: 'One of: 1, 2, 3.' },
    });
  });

  // Gemini refuses an empty text among an enum's values ("tools[0].function_declarations[34].parameters
  // .properties[permission].enum[3]: cannot be empty": Cline's tools on Gemini, every request failed).
  it('tells the values of an enum holding an empty text in the description, as Gemini refuses one', () => {
    const parameters = {
      type: 'object',
      properties: { permission: { type: 'string', enum: ['read', 'write', 'admin', ''] } },
    };
    expect(portableParameters(parameters).properties).toEqual({
      permission: { type: 'string', description: 'One of: "read", "write", "admin", "".' },
    });
  });

  it("follows a reference, keeping the referrer's description", () => {
    expect(
      portableParameters({
        type: 'object',
        properties: { filter: { $ref: '#/$defs/Filter', description: 'Which rows' } },
        $defs: { Filter: { type: 'object', properties: { field: { type: 'string' } } } },
      }).properties,
    ).toEqual({
      filter: { type: 'object', properties: { field: { type: 'string' } }, description: 'Which rows' },
    });
  });

  it('tells the model the alternatives were joined', () => {
    const written = portableParameters(cases[2]?.parameters);
    expect(written.description).toBe('Give the properties of one of 2 forms.');
  });
});

describe('repairedParameters over the schemas MCP servers send', () => {
  it.each(cases)('$name: taken by OpenAI and Anthropic', ({ parameters, properties, required }) => {
    const written = repairedParameters(parameters) as { properties: object; required?: string[] };
    expect(openAISchemaRefusal('tool', written)).toBeUndefined();
    expect(anthropicSchemaRefusal(0, written)).toBeUndefined();
    // The repair keeps every property the schema names (one required where it names none: as it was).
    expect(Object.keys(written.properties)).toEqual(expect.arrayContaining(properties));
    if (required !== undefined) expect(written.required).toEqual(expect.arrayContaining(required));
  });

  it('leaves a schema OpenAI and Anthropic take as it was: a strict tool’s, with references', () => {
    const strict = {
      type: 'object',
      additionalProperties: false,
      properties: {
        mode: { const: 'append' },
        url: { type: 'string', format: 'uri' },
        filter: { $ref: '#/$defs/Filter' },
      },
      required: ['mode', 'url', 'filter'],
      $defs: {
        Filter: { type: 'object', additionalProperties: false, properties: { f: { type: 'string' } } },
      },
    };
    expect(repairedParameters(strict)).toBe(strict);
  });

  it('gives an array without items, inside a definition too, items of any value; all else as it was', () => {
    const schema = {
      type: 'object',
      additionalProperties: false,
      properties: { rows: { $ref: '#/$defs/Rows' } },
      $defs: { Rows: { type: 'array', description: 'rows' } },
    };
    expect(repairedParameters(schema)).toEqual({
      type: 'object',
      additionalProperties: false,
      properties: { rows: { $ref: '#/$defs/Rows' } },
      $defs: { Rows: { type: 'array', description: 'rows', items: {} } },
    });
  });
});

/** Schemas Moonshot's validator refused, each failing every request of the agent that sent it to Kimi. */
const moonshotCases: ReadonlyArray<{
  name: string;
  parameters: unknown;
  properties: string[];
  required?: string[];
}> = [
  {
    name: "a type beside alternatives at the top (Notion's notion-create-attachment, MoonshotAI/kimi-code#2661)",
    parameters: {
      type: 'object',
      anyOf: [
        {
          type: 'object',
          properties: { filename: { type: 'string' }, content: { type: 'string' } },
          required: ['filename', 'content'],
        },
        {
          type: 'object',
          properties: { filename: { type: 'string' }, url: { type: 'string' } },
          required: ['filename', 'url'],
        },
      ],
    },
    properties: ['filename', 'content', 'url'],
    required: ['filename'],
  },
  {
    name: 'a type beside alternatives in a property (nicobailon/pi-subagents#127)',
    parameters: {
      type: 'object',
      properties: {
        skill: { type: 'string', anyOf: [{ enum: ['review'] }, { pattern: '^x' }, { type: 'null' }] },
      },
    },
    properties: ['skill'],
  },
  {
    name: "an enum of no type (JetBrains' truncateMode, MoonshotAI/kimi-cli#2030), of numbers, with null",
    parameters: {
      type: 'object',
      properties: {
        mode: { enum: ['START', 'END'] },
        level: { enum: [1, 2.5] },
        maybe: { enum: ['a', null] },
        kind: { type: 'object', enum: ['file', 'dir'] },
      },
    },
    properties: ['mode', 'level', 'maybe', 'kind'],
  },
  {
    name: 'a schema of true, a property of false, a tuple (can1357/oh-my-pi#5952)',
    parameters: {
      type: 'object',
      properties: {
        outputSchema: true,
        never: false,
        point: { type: 'array', items: [{ type: 'number' }, { type: 'string' }] },
      },
      required: ['never', 'point'],
    },
    properties: ['outputSchema', 'point'],
    required: ['point'],
  },
  {
    name: 'draft-07 definitions and references into them (NousResearch/hermes-agent#14804)',
    parameters: {
      type: 'object',
      properties: {
        location: { $ref: '#/definitions/Location', type: 'object' },
        other: { $ref: 'https://x.dev/s.json' },
      },
      definitions: { Location: { type: 'object', properties: { code: { enum: [1, 2] } } } },
    },
    properties: ['location', 'other'],
  },
  {
    name: 'properties as an empty list, a type beside a reference, a boolean enum typed as text (QwenLM/qwen-code#10227)',
    parameters: {
      type: 'object',
      properties: {
        options: { type: 'object', properties: [] },
        lane: { type: 'object', $ref: '#/$defs/Lane' },
      },
      $defs: { Lane: { type: 'object', properties: { enabled: { type: 'string', enum: [true, false] } } } },
    },
    properties: ['options', 'lane'],
  },
  {
    name: 'alternatives that only say which properties are required, and requirements of no property',
    parameters: {
      type: 'object',
      properties: {
        target: {
          type: 'object',
          properties: { id: { type: 'string' }, url: { type: 'string' } },
          anyOf: [{ required: ['id'] }, { required: ['url'] }],
          required: ['name'],
        },
      },
    },
    properties: ['target'],
  },
];

describe('mfjsParameters over the schemas MCP servers send', () => {
  it.each([...moonshotCases, ...cases])(
    '$name: taken by Moonshot, OpenAI and Anthropic',
    ({ parameters, properties, required }) => {
      const written = mfjsParameters(parameters) as { properties: object; required?: string[] };
      expect(moonshotSchemaRefusal(written)).toBeUndefined();
      expect(openAISchemaRefusal('tool', written)).toBeUndefined();
      expect(anthropicSchemaRefusal(0, written)).toBeUndefined();
      expect(Object.keys(written.properties)).toEqual(expect.arrayContaining(properties));
      if (required !== undefined) expect(written.required).toEqual(expect.arrayContaining(required));
    },
  );

  it.each(moonshotCases)('$name: refused by Moonshot as it was', ({ parameters }) => {
    expect(moonshotSchemaRefusal(parameters)).toMatch(/moonshot flavored json schema|type is required/);
  });

  it('leaves a schema Moonshot takes as it was: references, an enum of its type, a nullable one', () => {
    const schema = {
      type: 'object',
      additionalProperties: false,
      properties: {
        unit: { type: 'string', enum: ['C', 'F'] },
        day: { type: ['integer', 'null'], enum: [1, 2, null] },
        filter: { $ref: '#/$defs/Filter' },
        either: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
      },
      required: ['unit'],
      $defs: { Filter: { type: 'object', properties: { f: { type: 'string' } } } },
    };
    expect(mfjsParameters(schema)).toBe(schema);
  });

  it('keeps what each said: the type in each alternative, the enum typed, the requirement told', () => {
    const [, skill, enums, , refs, , requiring] = moonshotCases.map((row) =>
      mfjsParameters(row.parameters),
    ) as Array<{
      properties: Record<string, unknown>;
      $defs?: unknown;
    }>;
    expect(skill?.properties.skill).toEqual({
      anyOf: [{ type: 'string', enum: ['review'] }, { type: 'string', pattern: '^x' }, { type: 'null' }],
    });
    expect(enums?.properties).toEqual({
      mode: { type: 'string', enum: ['START', 'END'] },
      level: { type: 'number', enum: [1, 2.5] },
      maybe: { type: ['string', 'null'], enum: ['a', null] },
      kind: { type: 'string', enum: ['file', 'dir'] },
    });
    expect(refs?.properties).toEqual({ location: { $ref: '#/$defs/Location' }, other: {} });
    expect(refs?.$defs).toEqual({
      Location: { type: 'object', properties: { code: { type: 'integer', enum: [1, 2] } } },
    });
    expect(requiring?.properties.target).toEqual({
      type: 'object',
      properties: { id: { type: 'string' }, url: { type: 'string' } },
      description: 'Give one of: id; url.',
    });
  });

  it('tells an enum of values of several types in the description (Moonshot takes one type, and null)', () => {
    expect(mfjsParameters({ type: 'object', properties: { v: { enum: ['a', 1, true] } } })).toEqual({
      type: 'object',
      properties: { v: { description: 'One of: "a", 1, true.' } },
    });
  });

  it('writes properties given as a list as a map, a referrer without its type, an enum by its values’ type', () => {
    const written = mfjsParameters(moonshotCases[5]?.parameters) as { properties: unknown; $defs: unknown };
    expect(written.properties).toEqual({
      options: { type: 'object', properties: {} },
      lane: { $ref: '#/$defs/Lane' },
    });
    expect(written.$defs).toEqual({
      Lane: { type: 'object', properties: { enabled: { type: 'boolean', enum: [true, false] } } },
    });
  });

  it('writes a tuple as one schema of its alternatives', () => {
    expect(
      (mfjsParameters(moonshotCases[3]?.parameters) as { properties: Record<string, unknown> }).properties,
    ).toEqual({
      outputSchema: {},
      point: { type: 'array', items: { anyOf: [{ type: 'number' }, { type: 'string' }] } },
    });
  });
});

describe('withToolSchemasAs', () => {
  it('is the same request when each schema is taken as it is (repaired)', () => {
    const request = {
      tools: [{ type: 'function', function: { name: 'a', parameters: { type: 'object', properties: {} } } }],
    };
    expect(withToolSchemasAs(request, 'repaired')).toBe(request);
  });

  it('gives a function of no parameters an object of none (MiniMax refuses it), and leaves it so for Gemini', () => {
    const request = {
      tools: [{ type: 'function', function: { name: 'list_agents', description: 'Lists.' } }],
    };
    expect(withToolSchemasAs(request, 'repaired').tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'list_agents',
          description: 'Lists.',
          parameters: { type: 'object', properties: {} },
        },
      },
    ]);
    expect(request.tools[0]?.function).toEqual({ name: 'list_agents', description: 'Lists.' });
    expect(withToolSchemasAs(request, 'gemini')).toBe(request);
  });

  it("rewrites each function's parameters and leaves a custom tool and the client's request as they were", () => {
    const request = {
      model: 'm',
      tools: [
        {
          type: 'function',
          function: { name: 'a', parameters: { type: 'object', properties: { l: { type: 'array' } } } },
        },
        { type: 'custom', custom: { name: 'apply_patch' } },
      ],
    };
    const copy = structuredClone(request);
    const written = withToolSchemasAs(request, 'gemini');
    expect(request).toEqual(copy);
    expect(written.tools[1]).toBe(request.tools[1]);
    expect(openAISchemaRefusal('a', request.tools[0]?.function?.parameters)).toBeDefined();
    expect(
      openAISchemaRefusal('a', (written.tools[0] as (typeof request.tools)[0]).function?.parameters),
    ).toBeUndefined();
  });

  it("bounds a request's work: tools past 40,000 schemas are each an object of any input", () => {
    const wide = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 2_000 }, (_, at) => [`p${at}`, { type: 'string' }]),
      ),
    };
    const tools = Array.from({ length: 30 }, (_, at) => ({
      type: 'function',
      function: { name: `t${at}`, parameters: wide },
    }));
    const written = withToolSchemasAs({ tools }, 'gemini').tools.map(
      (tool) => Object.keys((tool.function.parameters as { properties: object }).properties).length,
    );
    // 2,001 schemas a tool: 19 whole, the 20th cut, the rest none.
    expect(written.slice(0, 19)).toEqual(Array(19).fill(2_000));
    expect(written.slice(20)).toEqual(Array(10).fill(0));
  });

  it("writes a Messages request's own custom tools' input_schema, not a server tool", () => {
    const search = { type: 'web_search_20250305', name: 'web_search' };
    const request: { ctxgate_anthropic: { tools: Array<Record<string, unknown>> } } = {
      ctxgate_anthropic: {
        tools: [
          { name: 'lookup', input_schema: { anyOf: [{ properties: { q: { type: 'string' } } }] } },
          search,
        ],
      },
    };
    const written = withToolSchemasAs(request, 'gemini').ctxgate_anthropic.tools;
    expect(anthropicSchemaRefusal(0, request.ctxgate_anthropic.tools[0]?.input_schema)).toBeDefined();
    expect(anthropicSchemaRefusal(0, written[0]?.input_schema)).toBeUndefined();
    expect(written[1]).toBe(search);
  });

  it('is the same request when it has no tools', () => {
    const request = { model: 'm', messages: [] };
    expect(withToolSchemasAs(request, 'gemini')).toBe(request);
  });
});
