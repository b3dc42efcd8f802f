// Reads the environment and the config file once at start, validates both, and returns a frozen
// GatewayConfig. Every problem found is reported, one line each, naming the key; nothing starts on a
// bad configuration. This is the only module besides main.ts that reads process.env.
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { configFileSchema, type BudgetSetConfig, type ConfigFile } from './config-schema.js';
import { gatewayKeyTenantId, passThroughTenantId, sha256 } from './tenant-id.js';
import type { GatewayConfig, LogLevel, RedisConfig, UpstreamConfig } from './gateway-config.js';
import { createModelRouting } from './model-routing.js';
import {
  builtInPresets,
  resolvePolicies,
  type ResolvedPolicies,
  type ResolvedPolicy,
} from './policy-defaults.js';

export const defaultConfigPath = 'config/ctxgate.yaml';
export const defaultUpstreamBaseUrl = 'https://api.openai.com/v1';
const logLevels: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Environment = Readonly<Record<string, string | undefined>>;

/** A blank variable means unset. */
function readVariable(env: Environment, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else text += text === '' ? String(key) : `.${String(key)}`;
  }
  return text === '' ? '(top level)' : text;
}

function describeIssues(source: string, issues: readonly z.core.$ZodIssue[]): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) lines.push(`${source}: ${formatPath([...issue.path, key])}: unknown key`);
    } else {
      lines.push(`${source}: ${formatPath(issue.path)}: ${issue.message}`);
    }
  }
  return lines;
}

function readConfigFile(path: string, explicit: boolean, problems: string[]): ConfigFile | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !explicit) return configFileSchema.parse({});
    problems.push(`CTXGATE_CONFIG: cannot read ${path}: ${code ?? 'unknown error'}`);
    return undefined;
  }
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    for (const error of document.errors) {
      const line = error.linePos?.[0];
      const reason = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      problems.push(
        `${path}:${line === undefined ? '' : `${line.line}:${line.col}`} invalid YAML: ${reason}`,
      );
    }
    return undefined;
  }

  const result = configFileSchema.safeParse(document.toJS() ?? {});
  if (!result.success) {
    problems.push(...describeIssues(path, result.error.issues));
    return undefined;
  }
  return result.data;
}

function parsePort(env: Environment, problems: string[]): number {
  const raw = readVariable(env, 'PORT');
  if (raw === undefined) return 8080;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 0 || port > 65535) {
    problems.push(`PORT: must be an integer from 0 to 65535, got "${raw}"`);
    return 8080;
  }
  return port;
}

function parseHttpUrl(name: string, raw: string, problems: string[]): string {
  try {
    const url = new URL(raw);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
    return raw.replace(/\/+$/, '');
  } catch {
    problems.push(`${name}: must be an http:// or https:// URL`);
    return raw;
  }
}

type HostPort = { host: string; port: number };

/** A comma-separated list of host:port (IPv6 hosts in brackets); each bad entry is a problem. */
function parseHostPorts(env: Environment, name: string, problems: string[]): HostPort[] {
  const nodes: HostPort[] = [];
  const before = problems.length;
  for (const entry of (readVariable(env, name) ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(entry);
    const port = Number(match?.[2]);
    if (!match?.[1] || port < 1 || port > 65535) {
      problems.push(`${name}: "${entry}" is not host:port`);
      continue;
    }
    nodes.push({ host: match[1].replace(/^\[|\]$/g, ''), port });
  }
  if (nodes.length === 0 && problems.length === before) problems.push(`${name}: lists no host:port`);
  return nodes;
}

function parseRedis(env: Environment, problems: string[]): RedisConfig {
  // Passwords of the data nodes (Cluster, Sentinel) and of the Sentinels; REDIS_URL carries its own.
  const password = readVariable(env, 'REDIS_PASSWORD');
  const secrets = password === undefined ? {} : { password };
  if (readVariable(env, 'REDIS_CLUSTER_NODES') !== undefined)
    return { mode: 'cluster', nodes: parseHostPorts(env, 'REDIS_CLUSTER_NODES', problems), ...secrets };
  if (readVariable(env, 'REDIS_SENTINELS') !== undefined) {
    const sentinelPassword = readVariable(env, 'REDIS_SENTINEL_PASSWORD');
    return {
      mode: 'sentinel',
      sentinels: parseHostPorts(env, 'REDIS_SENTINELS', problems),
      masterName: readVariable(env, 'REDIS_SENTINEL_MASTER') ?? 'mymaster',
      ...secrets,
      ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
    };
  }
  const url = readVariable(env, 'REDIS_URL');
  if (url === undefined) return { mode: 'memory' };
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new Error('protocol');
  } catch {
    // The URL may hold a password: name the variable, never echo its value.
    problems.push('REDIS_URL: must be a redis:// or rediss:// URL');
  }
  return { mode: 'standalone', url };
}

/**
 * Whether a base URL is Anthropic's own API (`api.anthropic.com`, or another host under `anthropic.com`):
 * the one reader of Claude Code's billing line, whose subscription sign-in needs it (BerriAI/litellm#29701).
 */
function isAnthropicsOwn(baseUrl: string): boolean {
  const host = new URL(baseUrl).hostname.toLowerCase();
  return host === 'anthropic.com' || host.endsWith('.anthropic.com');
}

/** The default upstream (from the environment) and the routed ones (from the file), their keys read. */
function parseUpstreams(
  env: Environment,
  file: ConfigFile | undefined,
  configPath: string,
  gatewayApiKeys: readonly string[],
  problems: string[],
): { defaultUpstream: UpstreamConfig; routed: UpstreamConfig[] } {
  const defaultUpstream: UpstreamConfig = {
    name: 'default',
    baseUrl: parseHttpUrl(
      'UPSTREAM_BASE_URL',
      readVariable(env, 'UPSTREAM_BASE_URL') ?? defaultUpstreamBaseUrl,
      problems,
    ),
    apiKey: readVariable(env, 'UPSTREAM_API_KEY'),
    modelGlobs: ['*'],
    maxConnections: 256,
    kind: 'openai',
    billingLine: 'drop',
  };
  const routed: UpstreamConfig[] = [];
  const seenNames = new Set(['default']);
  for (const [index, entry] of (file?.upstreams ?? []).entries()) {
    if (seenNames.has(entry.name))
      problems.push(`${configPath}: upstreams[${index}].name: "${entry.name}" is used twice`);
    seenNames.add(entry.name);
    let apiKey: string | undefined;
    if (entry.api_key_env !== undefined) {
      apiKey = readVariable(env, entry.api_key_env);
      if (apiKey === undefined) {
        problems.push(
          `${configPath}: upstreams[${index}].api_key_env: environment variable ${entry.api_key_env} is not set`,
        );
      }
    }
    if (entry.billing_line !== undefined && entry.kind !== 'anthropic')
      problems.push(
        `${configPath}: upstreams[${index}].billing_line: applies to kind: anthropic alone (a bridged request never carries the line)`,
      );
    routed.push({
      name: entry.name,
      baseUrl: entry.base_url.replace(/\/+$/, ''),
      apiKey,
      modelGlobs: entry.models,
      maxConnections: entry.max_connections,
      kind: entry.kind,
      billingLine: entry.billing_line ?? (isAnthropicsOwn(entry.base_url) ? 'keep' : 'drop'),
    });
  }
  const upstreamWithKey = [defaultUpstream, ...routed].find((upstream) => upstream.apiKey !== undefined);
  if (upstreamWithKey !== undefined && gatewayApiKeys.length === 0) {
    // Without client keys, anyone who can reach the port would spend the configured upstream key.
    problems.push(
      `GATEWAY_API_KEYS: required when an upstream key is configured (${upstreamWithKey.name === 'default' ? 'UPSTREAM_API_KEY' : `upstream "${upstreamWithKey.name}"`})`,
    );
  }

  return { defaultUpstream, routed };
}

/** summarize_to must lie below summarize_at in the defaults and in every preset as they resolve. */
function checkSummaryThresholds(resolved: ResolvedPolicies, configPath: string, problems: string[]): void {
  const layers: Array<[string, ResolvedPolicy]> = [
    ['context', resolved.defaults],
    ...Object.entries(resolved.presets).map(([name, policy]): [string, ResolvedPolicy] => [
      `policies.${name}`,
      policy,
    ]),
  ];
  for (const [where, policy] of layers) {
    if (policy.summarize_to >= policy.summarize_at) {
      problems.push(
        `${configPath}: ${where}: summarize_to (${policy.summarize_to}) must be below summarize_at (${policy.summarize_at})`,
      );
    }
  }
}

/** Per-credential budgets: the key comes from the environment and is kept only as its tenant id. */
function parseBudgetCredentials(
  env: Environment,
  file: ConfigFile | undefined,
  configPath: string,
  gatewayApiKeys: readonly string[],
  problems: string[],
): Record<string, BudgetSetConfig> {
  const budgetCredentials: Record<string, BudgetSetConfig> = {};
  for (const [index, entry] of (file?.budgets.credentials ?? []).entries()) {
    const key = readVariable(env, entry.key_env);
    if (key === undefined) {
      problems.push(
        `${configPath}: budgets.credentials[${index}].key_env: environment variable ${entry.key_env} is not set`,
      );
      continue;
    }
    const { key_env: _keyEnv, ...budgets } = entry;
    const tenantId = gatewayApiKeys.length > 0 ? gatewayKeyTenantId(sha256(key)) : passThroughTenantId([key]);
    budgetCredentials[tenantId] = budgets;
  }
  return budgetCredentials;
}

export interface LoadConfigOptions {
  env: Environment;
}

export function loadConfig({ env }: LoadConfigOptions): GatewayConfig {
  const problems: string[] = [];
  const explicitPath = readVariable(env, 'CTXGATE_CONFIG');
  const configPath = explicitPath ?? defaultConfigPath;
  const file = readConfigFile(configPath, explicitPath !== undefined, problems);

  const logLevelRaw = readVariable(env, 'LOG_LEVEL') ?? 'info';
  if (!logLevels.includes(logLevelRaw as LogLevel)) {
    problems.push(`LOG_LEVEL: must be one of ${logLevels.join(', ')}, got "${logLevelRaw}"`);
  }
  const gatewayApiKeys = (readVariable(env, 'GATEWAY_API_KEYS') ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter(Boolean);
  const { defaultUpstream, routed } = parseUpstreams(env, file, configPath, gatewayApiKeys, problems);
  // The built-in presets merged with the file's, resolved once: checked here, used by every request.
  const policies = Object.assign({}, builtInPresets, file?.policies);
  const resolvedPolicies = file === undefined ? undefined : resolvePolicies(file.context, policies);
  if (resolvedPolicies !== undefined) checkSummaryThresholds(resolvedPolicies, configPath, problems);
  const budgetCredentials = parseBudgetCredentials(env, file, configPath, gatewayApiKeys, problems);
  const adminApiKeys = (readVariable(env, 'ADMIN_API_KEY') ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter(Boolean);
  if (adminApiKeys.some((key) => gatewayApiKeys.includes(key)))
    problems.push('ADMIN_API_KEY: must differ from every gateway key');

  const port = parsePort(env, problems);
  const redis = parseRedis(env, problems);
  if (problems.length > 0 || file === undefined || resolvedPolicies === undefined)
    throw new ConfigError(problems);

  const upstreams = [...routed, defaultUpstream];
  const config: GatewayConfig = {
    configPath,
    port,
    host: readVariable(env, 'HOST') ?? '127.0.0.1',
    logLevel: logLevelRaw as LogLevel,
    gatewayApiKeys,
    redis,
    upstreams,
    defaultUpstream,
    routing: createModelRouting(upstreams, file.models),
    server: file.server,
    timeouts: file.timeouts,
    models: file.models,
    unknownModels: file.unknown_models,
    sessions: file.sessions,
    context: file.context,
    policies,
    resolvedPolicies,
    budgets: {
      warnAt: file.budgets.warn_at,
      backpressure: file.budgets.backpressure
        .map((step) => ({ at: step.at, delayMs: step.delay_ms }))
        .sort((a, b) => a.at - b.at),
      defaults: file.budgets.defaults,
      credentials: budgetCredentials,
    },
    learning: file.learning,
    responses: file.responses,
    passthrough: file.passthrough,
    adminApiKeys,
  };
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
