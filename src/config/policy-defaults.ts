// Built-in context policy defaults (docs/budgeting.md) and the named presets every gateway has. The config file's
// `context` section overrides the defaults; its `policies` section overrides or adds presets.
import type { ContextPolicy } from '../context/types.js';
import type { PolicyConfig } from './config-schema.js';

export interface ResolvedPolicy extends ContextPolicy {
  safety_margin: number;
  safety_margin_uncalibrated: number;
  /** Compressed retries after the upstream refused a prompt as too long (docs/budgeting.md#reactive-recovery). */
  max_retries: number;
  /** Retries of 429, 5xx and connection errors, before any byte reached the client. */
  upstream_retries: number;
  /** A retry that would drop more than this share of the conversation's messages goes to a fallback. */
  fallback_when_dropping: number;
  /** docs/sessions.md#summarization. */
  summarization: 'on' | 'off';
  summarize_at: number;
  summarize_to: number;
  /** Empty: the conversation's own model. */
  summary_model: string;
  summary_max_tokens: number;
  summary_min_fact_recall: number;
  /** The user's own fact-stating sentences kept verbatim beside the summary: at most this share of the window. */
  summary_notes_share: number;
  /** docs/budgeting.md#recall. */
  recall: 'on' | 'off';
  recall_max_calls: number;
  recall_result_tokens: number;
}

export const builtInPolicy: ResolvedPolicy = {
  keep_first_turns: 1,
  trim_to: 0.7,
  max_history_tokens: 0,
  max_history_turns: 0,
  max_tool_result_tokens: 8_000,
  tool_result_truncation: 'both',
  keep_first: 0,
  keep_last: 5,
  clear_at_least: 2_000,
  exclude_tools: [],
  oversize: 'reject',
  pin_prefix: '[pin]',
  safety_margin: 0.05,
  safety_margin_uncalibrated: 0.1,
  max_retries: 3,
  upstream_retries: 2,
  fallback_when_dropping: 0.5,
  summarization: 'on',
  summarize_at: 0.75,
  summarize_to: 0.4,
  summary_model: '',
  summary_max_tokens: 1_024,
  summary_min_fact_recall: 1,
  summary_notes_share: 0.08,
  recall: 'off',
  recall_max_calls: 3,
  recall_result_tokens: 1_000,
};

export const builtInPresets: Record<string, PolicyConfig> = {
  /** Conversations: the defaults. */
  chat: {},
  /** Agent loops: smaller tool results, more recent results kept whole. */
  agent: {
    max_tool_result_tokens: 4_000,
    keep_last: 8,
    clear_at_least: 4_000,
    tool_result_truncation: 'both',
  },
  /** Cost first: a tight history cap and short tool results. */
  economy: { max_history_tokens: 8_000, trim_to: 0.5, max_tool_result_tokens: 2_000, keep_last: 3 },
};

/**
 * The policies a request can name, resolved once when the config loads: the built-in defaults under the
 * file's `context`, and each preset (built-in and the file's) over those (docs/configuration.md). The
 * config is frozen, and so are these: every request shares them.
 */
export interface ResolvedPolicies {
  /** What a request that names no preset runs with. */
  defaults: ResolvedPolicy;
  /** By preset name (own entries only: read them with ownEntry). */
  presets: Readonly<Record<string, ResolvedPolicy>>;
}

/** A copy of `policy` with the defined knobs of `layer` over it (a spread copy, whose keys only change). */
function overlaid(policy: ResolvedPolicy, layer: object): ResolvedPolicy {
  const copy: ResolvedPolicy = { ...policy };
  const target = copy as unknown as Record<string, unknown>;
  for (const key in layer) {
    const value = (layer as Record<string, unknown>)[key];
    if (value !== undefined) target[key] = value;
  }
  return copy;
}

export function resolvePolicies(
  context: object,
  presets: Readonly<Record<string, object>>,
): ResolvedPolicies {
  const defaults = overlaid(builtInPolicy, context);
  return {
    defaults,
    // fromEntries defines own properties: a preset named "__proto__" is one like any other.
    presets: Object.fromEntries(
      Object.entries(presets).map(([name, preset]) => [name, overlaid(defaults, preset)]),
    ),
  };
}
