// Routing as tables: the first upstream whose model globs match, else the default (always last); the
// first model entry of the config file, then of the built-in table, else the fallback entry — each
// configuration with its own answers.
import { describe, expect, it } from 'vitest';
import type { ModelEntryConfig } from '../../src/config/config-schema.js';
import type { UpstreamConfig } from '../../src/config/gateway-config.js';
import { createModelRouting } from '../../src/config/model-routing.js';
import { fallbackModelEntry } from '../../src/config/model-table.js';

const upstream = (name: string, modelGlobs: string[]): UpstreamConfig => ({
  name,
  baseUrl: `http://${name}.invalid/v1`,
  apiKey: undefined,
  modelGlobs,
  maxConnections: 8,
  kind: 'openai',
  billingLine: 'drop',
});
const upstreams = [
  upstream('local', ['llama*', 'qwen*']),
  upstream('anthropic', ['*claude*']),
  upstream('claude-special', ['claude-special']),
  upstream('default', ['*']),
];

const model = (match: string, window: number, extra: Partial<ModelEntryConfig> = {}): ModelEntryConfig => ({
  match,
  window,
  output_reserve: 1_000,
  tokenizer: 'o200k_base',
  exact_tokenizer: false,
  calibration: true,
  fallbacks: [],
  ...extra,
});

describe('model routing: upstreams', () => {
  const routing = createModelRouting(upstreams, []);

  it.each([
    ['llama-3.1-8b', 'local'],
    ['QWEN2.5-7B', 'local'],
    ['claude-3-5-sonnet', 'anthropic'],
    // The first match wins, in the configured order.
    ['claude-special', 'anthropic'],
    ['gpt-4o-mini', 'default'],
    ['', 'default'],
  ])('%j goes to %s', (name, upstreamName) => {
    expect(routing.upstreamFor(name).name).toBe(upstreamName);
    // Asked again (now from what it kept): the same answer.
    expect(routing.upstreamFor(name).name).toBe(upstreamName);
  });

  it("routes by each configuration's list on its own", () => {
    const other = createModelRouting([upstream('everything', ['*'])], []);
    expect(routing.upstreamFor('llama-3').name).toBe('local');
    expect(other.upstreamFor('llama-3').name).toBe('everything');
  });

  it('answers the same after more names than it keeps', () => {
    for (let index = 0; index < 5_000; index++) routing.upstreamFor(`model-${index}`);
    expect(routing.upstreamFor('llama-3.1-8b').name).toBe('local');
    expect(routing.upstreamFor('model-4999').name).toBe('default');
  });

  it('refuses an empty list: a configuration always has its default upstream last', () => {
    expect(() => createModelRouting([], []).upstreamFor('x')).toThrow('no upstream configured');
  });
});

describe('model routing: model entries', () => {
  const routing = createModelRouting(upstreams, [
    model('gpt-4o*', 32_000),
    model('local-*', 8_192, { exact_tokenizer: true, notice_placement: 'leading_system' }),
  ]);

  it.each<[string, number, string, string]>([
    // The config file's entry before the built-in one of the same family.
    ['gpt-4o-mini', 32_000, 'json', 'user'],
    ['local-7b', 8_192, 'typescript', 'leading_system'],
    // Built in when the file has none.
    ['claude-sonnet-4-5', 200_000, 'json', 'user'],
    ['gpt-4.1-mini', 1_047_576, 'typescript', 'inline'],
  ])('%s: window %i, tools as %s, notices %s', (name, window, toolFormat, noticePlacement) => {
    expect(routing.entryFor(name)).toMatchObject({ window, toolFormat, noticePlacement });
  });

  it('answers a name nothing matches with the fallback entry itself (its window is a guess)', () => {
    expect(routing.entryFor('some-local-model')).toBe(fallbackModelEntry);
    expect(routing.entryFor('vendor/some-local-model')).toBe(fallbackModelEntry);
    expect(routing.entryFor('vendor/')).toBe(fallbackModelEntry);
  });

  it.each<[string, number, boolean]>([
    // A router's name (OpenRouter, LiteLLM: `provider/model`) that only its last segment matches.
    ['openai/gpt-5.4', 1_050_000, true],
    ['openai/gpt-4.1-mini', 1_047_576, true],
    ['azure/openai/gpt-5-mini', 400_000, true],
    // The last segment is looked up as any name is: the file's entries first.
    ['openai/gpt-4o-mini', 32_000, false],
  ])('%s: its last segment when nothing matches the whole name: window %i', (name, window, exact) => {
    expect(routing.entryFor(name)).toMatchObject({ window, exactTokenizer: exact });
  });

  it('reads calls written as text unless an entry says `text_tool_calls: off`', () => {
    const off = createModelRouting(upstreams, [model('raw-*', 8_192, { text_tool_calls: 'off' })]);
    expect(off.entryFor('raw-qwen').textToolCalls).toBe('off');
    expect(routing.entryFor('local-7b').textToolCalls).toBe('read');
  });

  it('hands out entries nobody can change', () => {
    const entry = routing.entryFor('gpt-4o-mini');
    expect(Object.isFrozen(entry)).toBe(true);
  });
});
