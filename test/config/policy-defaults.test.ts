// The policies a request can name, resolved once when the config loads: built-in defaults, then the
// file's `context`, then the preset (docs/configuration.md).
import { describe, expect, it } from 'vitest';
import { ownEntry } from '../../src/config/gateway-config.js';
import { loadConfig } from '../../src/config/load-config.js';
import { builtInPolicy, resolvePolicies } from '../../src/config/policy-defaults.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

describe('resolvePolicies', () => {
  it('lays the context over the built-in defaults and each preset over both; an undefined knob changes nothing', () => {
    const resolved = resolvePolicies(
      { keep_last: 4, trim_to: undefined },
      { tight: { trim_to: 0.5, keep_last: undefined }, wide: { max_history_tokens: 90_000 } },
    );
    expect(resolved.defaults.keep_last).toBe(4);
    expect(resolved.defaults.trim_to).toBe(builtInPolicy.trim_to);
    expect(resolved.defaults.clear_at_least).toBe(builtInPolicy.clear_at_least);
    expect(ownEntry(resolved.presets, 'tight')?.trim_to).toBe(0.5);
    expect(ownEntry(resolved.presets, 'tight')?.keep_last).toBe(4);
    expect(ownEntry(resolved.presets, 'wide')?.max_history_tokens).toBe(90_000);
    expect(ownEntry(resolved.presets, 'wide')?.trim_to).toBe(builtInPolicy.trim_to);
    // The built-in defaults themselves are copied, never written.
    expect(builtInPolicy.keep_last).not.toBe(4);
  });

  it('keeps a preset named like an Object.prototype property as an entry of its own', () => {
    const presets: Record<string, object> = Object.fromEntries([
      ['__proto__', { keep_last: 9 }],
      ['constructor', { keep_last: 7 }],
    ]);
    const resolved = resolvePolicies({}, presets);
    expect(ownEntry(resolved.presets, '__proto__')?.keep_last).toBe(9);
    expect(ownEntry(resolved.presets, 'constructor')?.keep_last).toBe(7);
    expect(Object.getPrototypeOf(resolved.presets)).toBe(Object.prototype);
    expect(ownEntry(resolved.presets, 'toString')).toBeUndefined();
  });

  it('is resolved once for a loaded config, built-in presets included, and frozen for every request to share', () => {
    const config = loadConfig({
      env: {
        CTXGATE_CONFIG: writeConfigFile(
          ['context:', '  keep_last: 5', 'policies:', '  tight:', '    trim_to: 0.5'].join('\n'),
        ),
      },
    });
    const { defaults, presets } = config.resolvedPolicies;
    expect(defaults.keep_last).toBe(5);
    expect(ownEntry(presets, 'tight')?.trim_to).toBe(0.5);
    expect(ownEntry(presets, 'tight')?.keep_last).toBe(5);
    // The built-in agent preset, over the file's context.
    expect(ownEntry(presets, 'agent')?.keep_last).toBe(8);
    expect(ownEntry(presets, 'agent')?.trim_to).toBe(defaults.trim_to);
    expect(Object.isFrozen(defaults)).toBe(true);
    expect(Object.isFrozen(ownEntry(presets, 'tight'))).toBe(true);
  });
});
