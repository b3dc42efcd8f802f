// The model list of several upstreams: what each upstream's list is read as (OpenAI's shape and
// Anthropic's; anything else is no list), the list written in the client's API's shape, and the service
// over a scripted Upstream — each model under the upstream it is routed to, an upstream that breaks or
// refuses left out and named, and the default upstream's answer when none lists.
import { describe, expect, it } from 'vitest';
import { noCredential } from '../../src/auth/authenticate.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createModelListService, listedModels, modelListBody } from '../../src/chat/model-list.js';
import { recordingClient, scriptedUpstream, type ScriptedAnswer } from '../helpers/port-fakes.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

describe('listedModels', () => {
  it.each([
    [
      "OpenAI's list",
      json({
        object: 'list',
        data: [{ id: 'gpt-4o', object: 'model', created: 1_715_367_049, owned_by: 'system' }],
      }),
      [{ id: 'gpt-4o', created: 1_715_367_049, ownedBy: 'system', displayName: undefined }],
    ],
    [
      "Anthropic's page",
      json({
        data: [
          {
            type: 'model',
            id: 'claude-opus-4-8',
            display_name: 'Claude Opus 4.8',
            created_at: '2026-05-20T00:00:00Z',
          },
        ],
        has_more: false,
      }),
      [{ id: 'claude-opus-4-8', created: 1_779_235_200, ownedBy: undefined, displayName: 'Claude Opus 4.8' }],
    ],
    [
      'entries without a usable id left out',
      json({ data: [{ id: '' }, { id: 7 }, null, 'gpt', { id: 'x'.repeat(513) }, { id: 'kept' }] }),
      [{ id: 'kept', created: undefined, ownedBy: undefined, displayName: undefined }],
    ],
  ])('%s', (_name, body, expected) => {
    expect(listedModels(body)).toEqual(expected);
  });

  it.each([
    ['not JSON', Buffer.from('<html>Bad Gateway</html>')],
    ['no data', json({ models: [{ name: 'llama3' }] })],
    ['an error', json({ error: { message: 'Incorrect API key provided.' } })],
    ['null', Buffer.from('null')],
  ])('reads %s as no list', (_name, body) => {
    expect(listedModels(body)).toBeUndefined();
  });
});

describe('modelListBody', () => {
  const models = [
    {
      id: 'claude-opus-4-8',
      created: 1_779_235_200,
      ownedBy: undefined,
      displayName: 'Claude Opus 4.8',
      kind: 'anthropic' as const,
    },
    { id: 'gpt-4o', created: undefined, ownedBy: 'system', displayName: undefined, kind: 'openai' as const },
  ];

  it("writes OpenAI's list, Anthropic as the owner of its models, which name none", () => {
    expect(JSON.parse(modelListBody(models, 'openai'))).toEqual({
      object: 'list',
      data: [
        { id: 'claude-opus-4-8', object: 'model', created: 1_779_235_200, owned_by: 'anthropic' },
        { id: 'gpt-4o', object: 'model', created: 0, owned_by: 'system' },
      ],
    });
  });

  it("writes Anthropic's page, whole, the id as the name where the model had none", () => {
    expect(JSON.parse(modelListBody(models, 'anthropic'))).toEqual({
      data: [
        {
          type: 'model',
          id: 'claude-opus-4-8',
          display_name: 'Claude Opus 4.8',
          created_at: '2026-05-20T00:00:00.000Z',
        },
        { type: 'model', id: 'gpt-4o', display_name: 'gpt-4o', created_at: '1970-01-01T00:00:00.000Z' },
      ],
      has_more: false,
      first_id: 'claude-opus-4-8',
      last_id: 'gpt-4o',
    });
    expect(JSON.parse(modelListBody([], 'anthropic'))).toEqual({
      data: [],
      has_more: false,
      first_id: null,
      last_id: null,
    });
  });
});

describe('createModelListService', () => {
  const config = loadConfig({
    env: {
      UPSTREAM_BASE_URL: 'http://default.invalid/v1',
      CTXGATE_CONFIG: writeConfigFile(
        [
          'upstreams:',
          '  - name: claude',
          '    base_url: http://claude.invalid/v1',
          '    kind: anthropic',
          '    models: ["claude-*"]',
          '  - name: local',
          '    base_url: http://local.invalid/v1',
          '    models: ["qwen*"]',
          '',
        ].join('\n'),
      ),
    },
  });
  const warned: unknown[][] = [];
  const list = async (script: ScriptedAnswer[], headers: Record<string, string> = {}) => {
    warned.length = 0;
    const upstream = scriptedUpstream(script);
    const client = recordingClient();
    const outcome = await createModelListService({ config, upstream, now: () => 0 }).list(
      { headers, credential: noCredential, warn: (fields, message) => warned.push([fields, message]) },
      client,
    );
    return { upstream, client, outcome };
  };
  const openAIList = (...ids: string[]): ScriptedAnswer => ({
    status: 200,
    chunks: [
      JSON.stringify({
        object: 'list',
        data: ids.map((id) => ({ id, object: 'model', created: 1, owned_by: 'x' })),
      }),
    ],
  });

  it('lists each model under the upstream it is routed to, in the order of the upstreams', async () => {
    const { upstream, client, outcome } = await list([
      {
        status: 200,
        chunks: [
          JSON.stringify({
            data: [{ type: 'model', id: 'claude-opus-4-8', created_at: '2026-05-20T00:00:00Z' }],
          }),
        ],
      },
      openAIList('qwen3-coder', 'gpt-4o'),
      openAIList('gpt-4o', 'claude-relay', 'qwen3-coder', 'o3'),
    ]);
    expect(JSON.parse(client.received).data.map((model: { id: string }) => model.id)).toEqual([
      'claude-opus-4-8',
      'qwen3-coder',
      'gpt-4o',
      'o3',
    ]);
    expect(client.statuses).toEqual([200]);
    expect(client.headers['x-ctxgate-upstreams-unlisted']).toBeUndefined();
    expect(upstream.sent.map((request) => [request.upstream.name, request.method, request.path])).toEqual([
      ['claude', 'GET', '/models?limit=1000'],
      ['local', 'GET', '/models'],
      ['default', 'GET', '/models'],
    ]);
    expect(upstream.sent[0]?.headers['anthropic-version']).toBe('2023-06-01');
    expect(outcome.upstream).toMatchObject({ status: 200, attempts: 3 });
  });

  it('leaves out and counts an upstream that breaks, is unreachable or answers no list; names it to the log', async () => {
    const { client } = await list(
      [
        { status: 200, chunks: ['{"data":[{"id":"claude-haiku'], breaks: true },
        { status: 0, refused: true },
        openAIList('gpt-4o'),
      ],
      { 'anthropic-version': '2023-06-01' },
    );
    expect(JSON.parse(client.received)).toMatchObject({
      data: [{ type: 'model', id: 'gpt-4o' }],
      has_more: false,
    });
    expect(client.headers['x-ctxgate-upstreams-unlisted']).toBe('2');
    expect(warned).toEqual([
      [{ upstream: 'claude', status: null }, 'upstream model list unread'],
      [{ upstream: 'local', status: null }, 'upstream model list unread'],
    ]);
  });

  it("answers the default upstream's answer as it came when no upstream lists", async () => {
    const refusal = JSON.stringify({
      error: { message: 'Incorrect API key provided.', code: 'invalid_api_key' },
    });
    const { client } = await list([
      { status: 401, chunks: ['{"type":"error"}'] },
      { status: 404, chunks: ['Not Found'] },
      { status: 401, headers: { 'content-type': 'application/json' }, chunks: [refusal] },
    ]);
    expect(client.statuses).toEqual([401]);
    expect(client.received).toBe(refusal);
  });

  const retrieve = async (target: string, script: ScriptedAnswer[], headers: Record<string, string> = {}) => {
    const upstream = scriptedUpstream(script);
    const client = recordingClient();
    const outcome = await createModelListService({ config, upstream, now: () => 0 }).retrieve(
      { headers, credential: noCredential, target },
      client,
    );
    return { upstream, client, outcome };
  };

  it.each([
    ['claude-opus-4-8', 'claude', '/models/claude-opus-4-8'],
    ['qwen3-coder?x=1', 'local', '/models/qwen3-coder?x=1'],
    ['gpt-4o', 'default', '/models/gpt-4o'],
    ['qwen%2Fqwen3', 'local', '/models/qwen/qwen3'],
    ['gpt-4o/', 'default', '/models/gpt-4o'],
  ])('asks for %s the upstream its name is routed to, at its path', async (asked, name, path) => {
    const { upstream, outcome } = await retrieve(`/v1/models/${asked}`, [
      { status: 200, chunks: [JSON.stringify({ id: 'm', object: 'model', created: 1, owned_by: 'x' })] },
    ]);
    expect(upstream.sent.map((request) => [request.upstream.name, request.method, request.path])).toEqual([
      [name, 'GET', path],
    ]);
    expect(outcome.upstream).toMatchObject({ name, status: 200, attempts: 1 });
  });

  it("writes the model in the client's API's shape, an Anthropic upstream asked with its key header", async () => {
    const claudeModel = { type: 'model', id: 'claude-opus-4-8', created_at: '2026-05-20T00:00:00Z' };
    const asOpenAI = await retrieve(
      '/v1/models/claude-opus-4-8',
      [{ status: 200, chunks: [JSON.stringify(claudeModel)] }],
      { authorization: 'Bearer sk-client' },
    );
    expect(JSON.parse(asOpenAI.client.received)).toEqual({
      id: 'claude-opus-4-8',
      object: 'model',
      created: 1_779_235_200,
      owned_by: 'anthropic',
    });
    expect(asOpenAI.upstream.sent[0]?.headers).toMatchObject({
      'x-api-key': 'sk-client',
      'anthropic-version': '2023-06-01',
    });
    expect(asOpenAI.upstream.sent[0]?.headers.authorization).toBeUndefined();
    const asAnthropic = await retrieve(
      '/v1/models/gpt-4o',
      [
        {
          status: 200,
          chunks: [JSON.stringify({ id: 'gpt-4o', object: 'model', created: 1, owned_by: 'x' })],
        },
      ],
      { 'anthropic-version': '2023-06-01' },
    );
    expect(JSON.parse(asAnthropic.client.received)).toEqual({
      type: 'model',
      id: 'gpt-4o',
      display_name: 'gpt-4o',
      created_at: '1970-01-01T00:00:01.000Z',
    });
  });

  it('relays a refusal, or an answer that is no model, as it came; /v1/models/ is the list', async () => {
    const refusal = '{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}';
    const refused = await retrieve('/v1/models/claude-nope', [{ status: 404, chunks: [refusal] }]);
    expect([refused.client.statuses, refused.client.received]).toEqual([[404], refusal]);
    const odd = await retrieve('/v1/models/gpt-4o', [{ status: 200, chunks: ['{"models":[]}'] }]);
    expect([odd.client.statuses, odd.client.received]).toEqual([[200], '{"models":[]}']);
    const listed = await retrieve('/v1/models/', [openAIList(), openAIList('qwen3'), openAIList('o3')]);
    expect(JSON.parse(listed.client.received).data.map((model: { id: string }) => model.id)).toEqual([
      'qwen3',
      'o3',
    ]);
    // Paths the pass-through refuses too: not decodable, or climbing out of the models.
    await expect(retrieve('/v1/models/%zz', [])).rejects.toMatchObject({ code: 'not_found' });
    await expect(retrieve('/v1/models/claude-x/../../chat/completions', [])).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('refuses with a 502 when no upstream answered at all', async () => {
    await expect(
      list([
        { status: 0, refused: true },
        { status: 0, refused: true },
        { status: 0, refused: true },
      ]),
    ).rejects.toMatchObject({
      code: 'upstream_unreachable',
    });
  });
});
