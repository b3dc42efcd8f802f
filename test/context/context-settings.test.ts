// Which value wins for each context setting: request headers, the preset named by the request, the
// model's entry, the config file's defaults, the built-in defaults (docs/configuration.md).
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { resolveContextSettings, withPolicy } from '../../src/context/context-settings.js';
import { parseRequestOverrides } from '../../src/http/request-overrides.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const config = loadConfig({
  env: {
    CTXGATE_CONFIG: writeConfigFile(
      [
        'models:',
        '  - match: "house-*"',
        '    window: 20000',
        '    output_reserve: 1000',
        '    tokenizer: cl100k_base',
        'context:',
        '  trim_to: 0.6',
        '  keep_last: 4',
        'policies:',
        '  tight:',
        '    trim_to: 0.5',
        '    max_history_tokens: 3000',
      ].join('\n'),
    ),
  },
});

describe('resolveContextSettings', () => {
  it('uses built-in defaults, then the file, for a model of the built-in table', () => {
    const settings = resolveContextSettings({
      config,
      model: 'gpt-4o-mini',
      overrides: parseRequestOverrides({}),
      maxCompletionTokens: undefined,
    });
    expect(settings.window).toBe(128_000);
    expect(settings.outputReserve).toBe(4_096);
    expect(settings.model.tokenizer).toBe('o200k_base');
    expect(settings.policy.trim_to).toBe(0.6);
    expect(settings.policy.keep_last).toBe(4);
    expect(settings.policy.keep_first).toBe(0);
    expect(settings.policy.clear_at_least).toBe(2_000);
    expect(settings.policy.exclude_tools).toEqual([]);
    // gpt-4o is counted with its own encoding: 5% of the window.
    expect(settings.safetyMarginTokens).toBe(6_400);
  });

  it('prefers the file model entry over the built-in table, with the larger margin for an estimate', () => {
    const settings = resolveContextSettings({
      config,
      model: 'house-large',
      overrides: parseRequestOverrides({}),
      maxCompletionTokens: undefined,
    });
    expect(settings.window).toBe(20_000);
    expect(settings.outputReserve).toBe(1_000);
    expect(settings.model.tokenizer).toBe('cl100k_base');
    expect(settings.safetyMarginTokens).toBe(2_000);
  });

  it('lets the request preset override the file, and headers override both', () => {
    const preset = resolveContextSettings({
      config,
      model: 'house-large',
      overrides: parseRequestOverrides({ 'x-context-policy': 'tight' }),
      maxCompletionTokens: undefined,
    });
    expect(preset.policy.trim_to).toBe(0.5);
    expect(preset.policy.max_history_tokens).toBe(3_000);
    expect(preset.policy.keep_last).toBe(4);
    const headers = resolveContextSettings({
      config,
      model: 'house-large',
      overrides: parseRequestOverrides({
        'x-context-policy': 'tight',
        'x-context-max-history-tokens': '0',
        'x-context-window': '50000',
      }),
      maxCompletionTokens: undefined,
    });
    expect(headers.policy.max_history_tokens).toBe(0);
    expect(headers.window).toBe(50_000);
  });

  it("gives a header's history cap to that request alone: the preset stays as configured for the next", () => {
    const capped = resolveContextSettings({
      config,
      model: 'house-large',
      overrides: parseRequestOverrides({ 'x-context-policy': 'tight', 'x-context-max-history-tokens': '10' }),
      maxCompletionTokens: undefined,
    });
    const next = resolveContextSettings({
      config,
      model: 'house-large',
      overrides: parseRequestOverrides({ 'x-context-policy': 'tight' }),
      maxCompletionTokens: undefined,
    });
    expect(capped.policy.max_history_tokens).toBe(10);
    expect(capped.policy.trim_to).toBe(0.5);
    expect(next.policy.max_history_tokens).toBe(3_000);
    expect(next.policy).toBe(config.resolvedPolicies.presets.tight);
  });

  it('withPolicy: every other setting as it was, the policy and margin given, the settings it was given unchanged', () => {
    const settings = resolveContextSettings({
      config,
      model: 'house-large',
      overrides: parseRequestOverrides({ 'x-context-policy': 'tight' }),
      maxCompletionTokens: 321,
    });
    const before = structuredClone(settings);
    const policy = { ...settings.policy, keep_last: 1 };
    const changed = withPolicy(settings, policy, 77);
    expect(changed).toEqual({ ...before, policy, safetyMarginTokens: 77 });
    expect(changed.policy).toBe(policy);
    expect(settings).toEqual(before);
  });

  it("takes the output reserve from the request's max tokens", () => {
    expect(
      resolveContextSettings({
        config,
        model: 'gpt-4o',
        overrides: parseRequestOverrides({}),
        maxCompletionTokens: 123,
      }).outputReserve,
    ).toBe(123);
  });

  it('refuses an unknown preset and malformed numbers with invalid_header', () => {
    expect(() =>
      resolveContextSettings({
        config,
        model: 'gpt-4o',
        overrides: parseRequestOverrides({ 'x-context-policy': 'nope' }),
        maxCompletionTokens: undefined,
      }),
    ).toThrow(expect.objectContaining({ code: 'invalid_header', param: 'x-context-policy' }));
    for (const value of ['-1', '1.5', 'abc', '']) {
      expect(() =>
        resolveContextSettings({
          config,
          model: 'gpt-4o',
          overrides: parseRequestOverrides({ 'x-context-max-history-tokens': value }),
          maxCompletionTokens: undefined,
        }),
      ).toThrow(expect.objectContaining({ code: 'invalid_header' }));
    }
  });
});
