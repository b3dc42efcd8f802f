// The resolved, frozen configuration the gateway runs with: the config file merged with the environment.
import type { BudgetSetConfig, ConfigFile } from './config-schema.js';
import type { ModelRouting } from './model-routing.js';
import type { ResolvedPolicies } from './policy-defaults.js';

export interface UpstreamConfig {
  name: string;
  /** e.g. `https://api.openai.com/v1`; request paths such as `/chat/completions` are appended. */
  baseUrl: string;
  /** Key the gateway sends upstream; undefined means the client's Authorization is passed through. */
  apiKey: string | undefined;
  modelGlobs: readonly string[];
  maxConnections: number;
  /** The wire format it speaks: Chat Completions, or Anthropic's Messages API (docs/anthropic.md). */
  kind: 'openai' | 'anthropic';
  /**
   * Whether Claude Code's billing line goes to it in the system prompt (an `anthropic` upstream's):
   * docs/anthropic.md#claude-codes-billing-line.
   */
  billingLine: 'keep' | 'drop';
}

export type RedisConfig =
  | { mode: 'memory' }
  | { mode: 'standalone'; url: string }
  | { mode: 'cluster'; nodes: ReadonlyArray<{ host: string; port: number }>; password?: string }
  | {
      mode: 'sentinel';
      sentinels: ReadonlyArray<{ host: string; port: number }>;
      masterName: string;
      password?: string;
      sentinelPassword?: string;
    };

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface GatewayConfig {
  /** The config file read (CTXGATE_CONFIG, or the default path). */
  configPath: string;
  port: number;
  host: string;
  logLevel: LogLevel;
  /** Keys clients must present; empty means the gateway does not authenticate clients. */
  gatewayApiKeys: readonly string[];
  redis: RedisConfig;
  /** Routed upstreams from the file, in order, then the environment's default upstream last. */
  upstreams: readonly UpstreamConfig[];
  defaultUpstream: UpstreamConfig;
  /** The upstream and the model entry of a model name, compiled from `upstreams` and `models`. */
  routing: ModelRouting;
  server: ConfigFile['server'];
  timeouts: ConfigFile['timeouts'];
  models: ConfigFile['models'];
  unknownModels: ConfigFile['unknown_models'];
  sessions: ConfigFile['sessions'];
  /** Policy defaults from the file (partial; built-in defaults fill the rest). */
  context: ConfigFile['context'];
  /** Named presets: the built-in ones (chat, agent, economy) merged with the file's. */
  policies: ConfigFile['policies'];
  /** `context` and each of `policies` over the built-in defaults, as requests use them. */
  resolvedPolicies: ResolvedPolicies;
  budgets: BudgetsConfig;
  learning: ConfigFile['learning'];
  responses: ConfigFile['responses'];
  passthrough: ConfigFile['passthrough'];
  /** Keys of the admin endpoints (ADMIN_API_KEY); empty: the admin endpoints do not exist. */
  adminApiKeys: readonly string[];
}

export interface BudgetsConfig {
  warnAt: number;
  /** Ascending by `at`. */
  backpressure: ReadonlyArray<{ at: number; delayMs: number }>;
  defaults: BudgetSetConfig;
  /** Per-credential budgets by tenant id (see tenant-id.ts). */
  credentials: Readonly<Record<string, BudgetSetConfig>>;
}

/**
 * A config table's entry by a name a request chose: own properties only, so that "__proto__" or
 * "constructor" never finds Object's.
 */
export function ownEntry<T>(table: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(table, name) ? table[name] : undefined;
}
