// Resolves what the context engine needs for one request: window, output reserve, tokenizer, safety
// margin and policy. Priority, highest first: request headers, the preset named by the request, the
// model's entry, the config file's defaults, the built-in defaults (docs/configuration.md).
import { ownEntry, type GatewayConfig } from '../config/gateway-config.js';
import { fallbackModelEntry, type ModelEntry } from '../config/model-table.js';
import type { ResolvedPolicy } from '../config/policy-defaults.js';
import { GatewayError } from '../errors.js';
import type { RequestOverrides } from './request-overrides.js';

export interface ContextSettings {
  window: number;
  outputReserve: number;
  /** The reserve is the client's own max_tokens (times n); else the gateway's default, never quoted as asked. */
  outputReserveRequested: boolean;
  model: ModelEntry;
  policyName: string | undefined;
  policy: ResolvedPolicy;
  safetyMarginTokens: number;
}

/** The model's entry: the config file's first match, else the built-in table's (config/model-routing.ts). */
export function findModelEntry(config: GatewayConfig, model: string): ModelEntry {
  return config.routing.entryFor(model);
}

/** `settings` with another policy and safety margin: written out rather than merged, as every request makes one. */
export function withPolicy(
  settings: ContextSettings,
  policy: ResolvedPolicy,
  safetyMarginTokens: number,
): ContextSettings {
  return {
    window: settings.window,
    outputReserve: settings.outputReserve,
    outputReserveRequested: settings.outputReserveRequested,
    model: settings.model,
    policyName: settings.policyName,
    policy,
    safetyMarginTokens,
  };
}

/** True for a model name no configured entry and no built-in one matches (its window is a guess). */
export function isUnknownModel(config: GatewayConfig, model: string): boolean {
  return findModelEntry(config, model) === fallbackModelEntry;
}

export function resolveContextSettings(options: {
  config: GatewayConfig;
  model: string;
  overrides: RequestOverrides;
  maxCompletionTokens: number | null | undefined;
  /** The request's `n`: each choice is an answer of its own, so the reserve is that many answers. */
  choices?: number | null | undefined;
  /** The window learned from the upstream: used when smaller than the configured one. */
  learnedWindow?: number | undefined;
  /**
   * A window the request asks of its provider beyond the configured one (Claude's 1M flag to an Anthropic
   * upstream): used instead when larger, a learned window still below it.
   */
  askedWindow?: number | undefined;
}): ContextSettings {
  const { config, overrides } = options;
  const model = findModelEntry(config, options.model);
  const policyName = overrides.policyName;
  let policy = config.resolvedPolicies.defaults;
  if (policyName !== undefined) {
    const found = ownEntry(config.resolvedPolicies.presets, policyName);
    if (found === undefined) {
      throw new GatewayError(
        'invalid_header',
        `Unknown context policy "${policyName}" in X-Context-Policy; known: ${Object.keys(config.policies).join(', ')}.`,
        {
          param: 'x-context-policy',
        },
      );
    }
    policy = found;
  }
  // Resolved when the config loaded (config/policy-defaults.ts), shared and frozen; a header's cap
  // makes this request's own copy.
  if (overrides.maxHistoryTokens !== undefined)
    policy = Object.assign({}, policy, { max_history_tokens: overrides.maxHistoryTokens });

  const configured = Math.max(model.window, options.askedWindow ?? 0);
  const window = overrides.contextWindow ?? Math.min(configured, options.learnedWindow ?? Infinity);

  // A reserve the client did not ask for leaves most of a small window to the prompt: at most a quarter.
  const requested = options.maxCompletionTokens !== undefined && options.maxCompletionTokens !== null;
  const perChoice = requested
    ? (options.maxCompletionTokens as number)
    : Math.min(model.outputReserve, Math.floor(window / 4));
  const outputReserve = perChoice * (options.choices ?? 1);
  const margin = model.exactTokenizer ? policy.safety_margin : policy.safety_margin_uncalibrated;
  return {
    window,
    outputReserve,
    outputReserveRequested: requested,
    model,
    policyName,
    policy,
    safetyMarginTokens: Math.ceil(window * margin),
  };
}
