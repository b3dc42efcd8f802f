// Routing as a table: the first upstream whose model globs match, else the default (always last).
import { describe, expect, it } from 'vitest';
import type { UpstreamConfig } from '../../src/config/gateway-config.js';
import { selectUpstream } from '../../src/upstream/select-upstream.js';

const upstream = (name: string, modelGlobs: string[]): UpstreamConfig => ({
  name,
  baseUrl: `http://${name}.invalid/v1`,
  apiKey: undefined,
  modelGlobs,
  maxConnections: 8,
  kind: 'openai',
});
const upstreams = [
  upstream('local', ['llama*', 'qwen*']),
  upstream('anthropic', ['*claude*']),
  upstream('claude-special', ['claude-special']),
  upstream('default', ['*']),
];

describe('selectUpstream', () => {
  it.each([
    ['llama-3.1-8b', 'local'],
    ['QWEN2.5-7B', 'local'],
    ['claude-3-5-sonnet', 'anthropic'],
    // The first match wins, in the configured order.
    ['claude-special', 'anthropic'],
    ['gpt-4o-mini', 'default'],
    ['', 'default'],
  ])('%j goes to %s', (model, name) => {
    expect(selectUpstream(upstreams, model).name).toBe(name);
    // Asked again (now from its cache): the same answer.
    expect(selectUpstream(upstreams, model).name).toBe(name);
  });

  it("routes by each list on its own (one gateway's routes are not another's)", () => {
    const other = [upstream('everything', ['*'])];
    expect(selectUpstream(upstreams, 'llama-3').name).toBe('local');
    expect(selectUpstream(other, 'llama-3').name).toBe('everything');
  });

  it('refuses an empty list: a configuration always has its default upstream last', () => {
    expect(() => selectUpstream([], 'x')).toThrow('no upstream configured');
  });
});
