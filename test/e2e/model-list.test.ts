// End to end (README.md, docs/configuration.md#the-model-list): the model list of a gateway in front of
// several upstreams — Claude on an `anthropic` upstream (its key the gateway's), a provider the caller's key
// does not open, and the default upstream — through the official OpenAI and Anthropic clients and Claude
// Code's gateway model discovery. Forwarded to the default upstream alone, the list held none of Claude's
// models, and Claude Code's /model picker none of the gateway's.
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAnthropic } from '../helpers/fake-anthropic.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { clientsDirectory, runProgram } from '../helpers/newest-clients.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

/** Claude's models as Anthropic lists them: more than its first page of 20. */
const claudeModels = Array.from({ length: 25 }, (_unused, index) =>
  index === 0 ? 'claude-sonnet-4-6' : `claude-model-${String(index).padStart(2, '0')}`,
);
let claude: FakeAnthropic;
/** The default upstream: OpenAI-compatible, listing a Claude name of its own too (a relay's). */
let defaultUpstream: FakeUpstream;
/** A provider whose key the caller does not hold: it refuses the list. */
let locked: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  claude = new FakeAnthropic({ apiKey: 'sk-ant-gateway', listedModels: claudeModels });
  defaultUpstream = new FakeUpstream({
    listedModels: ['gpt-4o-mini', 'claude-sonnet-4-6', 'claude-relay-only', 'qwen3-coder'],
  });
  locked = new FakeUpstream({ requiredApiKey: 'sk-mistral', listedModels: ['mistral-large'] });
  harness = await startGateway({
    env: {
      UPSTREAM_BASE_URL: await defaultUpstream.start(),
      CLAUDE_UPSTREAM_KEY: 'sk-ant-gateway',
      GATEWAY_API_KEYS: 'sk-caller',
    },
    configYaml: [
      'upstreams:',
      '  - name: claude',
      `    base_url: ${await claude.start()}`,
      '    kind: anthropic',
      '    api_key_env: CLAUDE_UPSTREAM_KEY',
      '    models: ["claude-*"]',
      '  - name: mistral',
      `    base_url: ${await locked.start()}`,
      '    models: ["mistral-*"]',
      '',
    ].join('\n'),
  });
});

afterAll(async () => {
  await harness.close();
  await claude.stop();
  await defaultUpstream.stop();
  await locked.stop();
});

/** Each model under the upstream the gateway sends it to, in the order of the upstreams. */
const expectedIds = [...claudeModels, 'gpt-4o-mini', 'qwen3-coder'];

describe('the model list of a gateway in front of several upstreams', () => {
  it('lists, to the OpenAI client, each model under the upstream it is routed to; a list refused is named', async () => {
    const openai = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-caller', maxRetries: 0 });
    const { data: page, response } = await openai.models.list().withResponse();
    expect(page.data.map((model) => model.id)).toEqual(expectedIds);
    expect(page.data.find((model) => model.id === 'gpt-4o-mini')).toEqual({
      id: 'gpt-4o-mini',
      object: 'model',
      created: 1_700_000_000,
      owned_by: 'fake',
    });
    expect(page.data[0]).toMatchObject({ object: 'model', owned_by: 'anthropic' });
    // Counted to the client; named only in the log (upstream names are the operator's).
    expect(response.headers.get('x-ctxgate-upstreams-unlisted')).toBe('1');
    expect(JSON.stringify(page)).not.toContain('mistral');
    expect(
      harness.logLines.some(
        (line) => line.includes('"upstream model list unread"') && line.includes('"mistral"'),
      ),
    ).toBe(true);
    // Anthropic was asked as it takes it: its key, its version, every model at once.
    const asked = claude.requests.filter((request) => request.path === '/v1/models').at(-1);
    expect(asked?.headers['x-api-key']).toBe('sk-ant-gateway');
    expect(asked?.headers.authorization).toBeUndefined();
  });

  it('lists in Anthropic’s shape to the Anthropic client, with the names Anthropic gave', async () => {
    const anthropic = new Anthropic({
      baseURL: harness.baseUrl.replace(/\/v1$/, ''),
      apiKey: 'sk-caller',
      maxRetries: 0,
    });
    const ids: string[] = [];
    const names = new Map<string, string>();
    for await (const model of anthropic.models.list()) {
      ids.push(model.id);
      names.set(model.id, model.display_name);
      expect(model.type).toBe('model');
      expect(Number.isNaN(Date.parse(model.created_at))).toBe(false);
    }
    expect(ids).toEqual(expectedIds);
    expect(names.get('claude-sonnet-4-6')).toBe('Claude sonnet 4 6');
    expect(names.get('qwen3-coder')).toBe('qwen3-coder');
  });

  it("fills Claude Code's /model picker from the gateway (CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY)", async () => {
    const home = mkdtempSync(join(tmpdir(), 'ctxgate-claude-home-'));
    const finished = await runProgram(
      join(clientsDirectory, 'node_modules/.bin/claude'),
      ['-p', 'Say hi.', '--model', 'claude-sonnet-4-6', '--output-format', 'json', '--max-turns', '1'],
      {
        cwd: home,
        limitMs: 120_000,
        env: {
          HOME: home,
          ANTHROPIC_BASE_URL: harness.baseUrl.replace(/\/v1$/, ''),
          ANTHROPIC_API_KEY: 'sk-caller',
          CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_ERROR_REPORTING: '1',
          DISABLE_AUTOUPDATER: '1',
        },
      },
    );
    expect(finished.status).toBe(0);
    const cacheDirectory = join(home, '.claude', 'cache');
    const cached = existsSync(cacheDirectory)
      ? readdirSync(cacheDirectory).map((name) => readFileSync(join(cacheDirectory, name), 'utf8'))
      : [];
    const discovered = cached.find((text) => text.includes('claude-model-24'));
    expect(discovered).toBeDefined();
    // Claude Code keeps the models whose names start with claude (or anthropic).
    expect(discovered).toContain('claude-sonnet-4-6');
    expect(discovered).not.toContain('gpt-4o-mini');
  }, 180_000);
});

describe('one model of a gateway in front of several upstreams', () => {
  // The OpenAI client's models.retrieve and the Anthropic client's (Llama Stack checks a model so before
  // using it: BerriAI/litellm#13128) went to the default upstream whatever the name: a model of another
  // upstream was the default's 404, or its own model of that name (a relay's Claude), never Claude's.
  it('gives the OpenAI client the model of the upstream its name is routed to, in OpenAI’s shape', async () => {
    const openai = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-caller', maxRetries: 0 });
    // Anthropic's model (not the default upstream's model of that name), and one only Anthropic serves.
    expect(await openai.models.retrieve('claude-sonnet-4-6')).toEqual({
      id: 'claude-sonnet-4-6',
      object: 'model',
      created: Date.UTC(2026, 10, 1) / 1000,
      owned_by: 'anthropic',
    });
    expect(await openai.models.retrieve('claude-model-24')).toMatchObject({ id: 'claude-model-24' });
    expect(await openai.models.retrieve('qwen3-coder')).toEqual({
      id: 'qwen3-coder',
      object: 'model',
      created: 1_700_000_000,
      owned_by: 'fake',
    });
    // Anthropic was asked as it takes it: its key, its path.
    const asked = claude.requests.filter((request) => request.path === '/v1/models/claude-model-24').at(-1);
    expect(asked?.headers['x-api-key']).toBe('sk-ant-gateway');
    expect(asked?.headers.authorization).toBeUndefined();
    // A model the upstream it is routed to does not serve: that upstream's 404, as it came.
    const missing = await openai.models.retrieve('claude-relay-only').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).message).toContain(
      'model: claude-relay-only',
    );
  });

  it('gives the Anthropic client any routed model in Anthropic’s shape', async () => {
    const anthropic = new Anthropic({
      baseURL: harness.baseUrl.replace(/\/v1$/, ''),
      apiKey: 'sk-caller',
      maxRetries: 0,
    });
    expect(await anthropic.models.retrieve('gpt-4o-mini')).toEqual({
      type: 'model',
      id: 'gpt-4o-mini',
      display_name: 'gpt-4o-mini',
      created_at: new Date(1_700_000_000_000).toISOString(),
    });
    expect(await anthropic.models.retrieve('claude-sonnet-4-6')).toEqual({
      type: 'model',
      id: 'claude-sonnet-4-6',
      display_name: 'Claude sonnet 4 6',
      created_at: new Date(Date.UTC(2026, 10, 1)).toISOString(),
    });
    const missing = await anthropic.models.retrieve('gpt-none').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('takes a router’s name with its slash, encoded or not', async () => {
    const routerModel = 'mistralai/mistral-7b-instruct';
    const served = new FakeUpstream({ listedModels: [routerModel] });
    const other = new FakeUpstream();
    const gateway = await startGateway({
      env: { UPSTREAM_BASE_URL: await other.start() },
      configYaml: [
        'upstreams:',
        '  - name: router',
        `    base_url: ${await served.start()}`,
        '    models: ["mistralai/*"]',
        '',
      ].join('\n'),
    });
    try {
      const openai = new OpenAI({ baseURL: gateway.baseUrl, apiKey: 'sk-any', maxRetries: 0 });
      // The OpenAI client encodes the slash (`mistralai%2Fmistral-7b-instruct`); curl users write it.
      expect(await openai.models.retrieve(routerModel)).toMatchObject({ id: routerModel, owned_by: 'fake' });
      const plain = await fetch(`${gateway.baseUrl}/models/${routerModel}`, {
        headers: { authorization: 'Bearer sk-any' },
      });
      expect(plain.status).toBe(200);
      expect(((await plain.json()) as { id: string }).id).toBe(routerModel);
    } finally {
      await gateway.close();
      await served.stop();
      await other.stop();
    }
  });
});

describe('the model list when no upstream lists', () => {
  it('answers what the default upstream answered, as it came', async () => {
    const refusing = new FakeUpstream({ requiredApiKey: 'sk-default' });
    const gateway = await startGateway({
      env: { UPSTREAM_BASE_URL: await refusing.start() },
      configYaml: [
        'upstreams:',
        '  - name: mistral',
        `    base_url: ${await locked.start()}`,
        '    models: ["mistral-*"]',
        '',
      ].join('\n'),
    });
    try {
      const response = await fetch(`${gateway.baseUrl}/models`, {
        headers: { authorization: 'Bearer sk-wrong' },
      });
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    } finally {
      await gateway.close();
      await refusing.stop();
    }
  });
});
