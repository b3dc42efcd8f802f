// The config loader: defaults, the environment, the file, and one named line per problem.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';
import { builtInPolicy } from '../../src/config/policy-defaults.js';
import { createAuthenticator } from '../../src/auth/authenticate.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig({ env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('loadConfig', () => {
  it('uses the documented defaults with an empty environment and no file', () => {
    const config = loadConfig({ env: { CTXGATE_CONFIG: writeConfigFile('') } });
    expect(config.port).toBe(8080);
    expect(config.host).toBe('127.0.0.1');
    expect(config.logLevel).toBe('info');
    expect(config.redis).toEqual({ mode: 'memory' });
    expect(config.defaultUpstream.baseUrl).toBe('https://api.openai.com/v1');
    expect(config.defaultUpstream.apiKey).toBeUndefined();
    expect(config.gatewayApiKeys).toEqual([]);
    expect(config.server).toEqual({
      body_limit_bytes: 33_554_432,
      request_timeout_ms: 60_000,
      keep_alive_timeout_ms: 72_000,
      stream_keepalive_ms: 15_000,
      shutdown_grace_ms: 30_000,
      max_messages: 10_000,
      max_content_parts: 20_000,
      max_tool_calls: 20_000,
      max_json_containers: 250_000,
      max_upstream_answer_bytes: 268_435_456,
      cors_origins: [],
    });
    expect(config.responses).toEqual({ default_truncation: 'auto', unbridgeable: 'drop', memory_mb: 64 });
    expect(config.passthrough).toEqual({ provider_state_endpoints: [] });
    expect(config.sessions).toMatchObject({ memory_mb: 256, anonymous_tenant: '' });
    expect(config.timeouts).toEqual({
      upstream_connect_ms: 10_000,
      upstream_first_byte_ms: 300_000,
      upstream_idle_ms: 120_000,
      upstream_retry_deadline_ms: 30_000,
      summary_ms: 120_000,
    });
  });

  it('treats a missing default file as empty but a missing named file as an error', () => {
    expect(() => loadConfig({ env: {} })).not.toThrow();
    expect(problemsOf({ CTXGATE_CONFIG: '/no/such/file.yaml' })).toEqual([
      'CTXGATE_CONFIG: cannot read /no/such/file.yaml: ENOENT',
    ]);
  });

  it('reads every environment variable, and treats blank ones as unset', () => {
    const config = loadConfig({
      env: {
        CTXGATE_CONFIG: writeConfigFile('{}'),
        PORT: '9999',
        HOST: '0.0.0.0',
        UPSTREAM_BASE_URL: 'http://127.0.0.1:1234/v1/',
        UPSTREAM_API_KEY: 'sk-up',
        GATEWAY_API_KEYS: ' a , b ,,',
        REDIS_URL: '   ',
        LOG_LEVEL: 'debug',
      },
    });
    expect(config.port).toBe(9999);
    expect(config.host).toBe('0.0.0.0');
    expect(config.defaultUpstream.baseUrl).toBe('http://127.0.0.1:1234/v1');
    expect(config.defaultUpstream.apiKey).toBe('sk-up');
    expect(config.gatewayApiKeys).toEqual(['a', 'b']);
    expect(config.redis).toEqual({ mode: 'memory' });
    expect(config.logLevel).toBe('debug');
  });

  it('prefers REDIS_CLUSTER_NODES over REDIS_URL', () => {
    const config = loadConfig({
      env: {
        CTXGATE_CONFIG: writeConfigFile('{}'),
        REDIS_URL: 'redis://x:1',
        REDIS_CLUSTER_NODES: '127.0.0.1:7000, [::1]:7001',
      },
    });
    expect(config.redis).toEqual({
      mode: 'cluster',
      nodes: [
        { host: '127.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
      ],
    });
  });

  it('uses Sentinel with REDIS_SENTINELS (master name defaults to mymaster), and passes passwords on', () => {
    const base = { CTXGATE_CONFIG: writeConfigFile('{}'), REDIS_URL: 'redis://x:1' };
    expect(loadConfig({ env: { ...base, REDIS_SENTINELS: 's1:26379,s2:26380' } }).redis).toEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      masterName: 'mymaster',
    });
    expect(
      loadConfig({
        env: {
          ...base,
          REDIS_SENTINELS: 's1:26379',
          REDIS_SENTINEL_MASTER: 'sessions',
          REDIS_PASSWORD: 'pw',
          REDIS_SENTINEL_PASSWORD: 'spw',
        },
      }).redis,
    ).toEqual({
      mode: 'sentinel',
      sentinels: [{ host: 's1', port: 26379 }],
      masterName: 'sessions',
      password: 'pw',
      sentinelPassword: 'spw',
    });
    // Cluster wins over Sentinel.
    expect(
      loadConfig({ env: { ...base, REDIS_SENTINELS: 's1:26379', REDIS_CLUSTER_NODES: 'c1:7000' } }).redis,
    ).toEqual({ mode: 'cluster', nodes: [{ host: 'c1', port: 7000 }] });
  });

  it('routes file upstreams before the default one and reads their keys from the named variables', () => {
    const path = writeConfigFile(
      'upstreams:\n  - name: local\n    base_url: http://127.0.0.1:8000/v1\n    models: ["llama-*"]\n  - name: groq\n    base_url: https://api.groq.com/openai/v1\n    api_key_env: GROQ_KEY\n    models: ["mixtral*"]\n',
    );
    const config = loadConfig({ env: { CTXGATE_CONFIG: path, GROQ_KEY: 'gsk-1', GATEWAY_API_KEYS: 'gk' } });
    expect(config.upstreams.map((upstream) => [upstream.name, upstream.apiKey])).toEqual([
      ['local', undefined],
      ['groq', 'gsk-1'],
      ['default', undefined],
    ]);
  });

  // Claude Code's billing line is Anthropic's to read; to any other Anthropic-compatible endpoint (Kimi's,
  // DeepSeek's, Fireworks', vLLM's) it is a line that changes with each request at the very start of the
  // prompt, and their prefix caches missed everything after it (anthropics/claude-code#68900).
  it("keeps Claude Code's billing line for Anthropic's own host alone, unless an upstream says otherwise", () => {
    const path = writeConfigFile(
      [
        'upstreams:',
        '  - { name: claude, base_url: "https://api.anthropic.com/v1", kind: anthropic, models: ["claude-*"] }',
        '  - { name: kimi, base_url: "https://api.moonshot.ai/anthropic/v1", kind: anthropic, models: ["kimi-*"] }',
        '  - { name: evil, base_url: "https://api.anthropic.com.example.net/v1", kind: anthropic, models: ["e-*"] }',
        '  - name: relay',
        '    base_url: http://litellm.internal:4000/v1',
        '    kind: anthropic',
        '    billing_line: keep',
        '    models: ["relay-*"]',
        '  - name: drops',
        '    base_url: https://api.anthropic.com/v1',
        '    kind: anthropic',
        '    billing_line: drop',
        '    models: ["drops-*"]',
        '',
      ].join('\n'),
    );
    const config = loadConfig({ env: { CTXGATE_CONFIG: path } });
    expect(config.upstreams.map((upstream) => [upstream.name, upstream.billingLine])).toEqual([
      ['claude', 'keep'],
      ['kimi', 'drop'],
      ['evil', 'drop'],
      ['relay', 'keep'],
      ['drops', 'drop'],
      ['default', 'drop'],
    ]);
  });

  it("reads a model entry's fallbacks and the policy's fallback share", () => {
    const path = writeConfigFile(
      'models:\n  - match: small-*\n    window: 8000\n    fallbacks: ["large-a", "large-b"]\n  - match: large-*\n    window: 128000\ncontext:\n  fallback_when_dropping: 0.3\n',
    );
    const config = loadConfig({ env: { CTXGATE_CONFIG: path } });
    expect(config.models.map((entry) => entry.fallbacks)).toEqual([['large-a', 'large-b'], []]);
    expect(config.context.fallback_when_dropping).toBe(0.3);
  });

  it('ships a config/ctxgate.yaml that is valid and states exactly the built-in defaults', () => {
    const shipped = loadConfig({ env: { CTXGATE_CONFIG: 'config/ctxgate.yaml' } });
    const builtIn = loadConfig({ env: { CTXGATE_CONFIG: writeConfigFile('{}') } });
    // The file spells out every policy knob; without it they come from the built-in policy.
    expect({ ...builtInPolicy, ...shipped.context }).toEqual(builtInPolicy);
    // Routing is compiled from the rest (its functions differ per load): compared through what it routes.
    const rest = (config: typeof shipped) => ({
      ...config,
      context: undefined,
      configPath: undefined,
      routing: undefined,
    });
    expect(rest(shipped)).toEqual(rest(builtIn));
    expect(shipped.configPath).toBe('config/ctxgate.yaml');
  });

  it('keys per-credential budgets by the tenant id the authenticator gives that key', () => {
    const yaml =
      'budgets:\n  defaults:\n    session_tokens: { limit: 100 }\n  credentials:\n    - key_env: TEAM_KEY\n      credential_daily_tokens: { limit: 5, mode: soft }\n';
    const withGatewayKeys = loadConfig({
      env: { CTXGATE_CONFIG: writeConfigFile(yaml), GATEWAY_API_KEYS: 'team-a-key', TEAM_KEY: 'team-a-key' },
    });
    const gatewayTenant = createAuthenticator({
      gatewayApiKeys: ['team-a-key'],
      anonymousTenant: '',
    }).authenticate({
      authorization: 'Bearer team-a-key',
    }).tenantId;
    expect(withGatewayKeys.budgets.credentials).toEqual({
      [gatewayTenant]: { credential_daily_tokens: { limit: 5, mode: 'soft' } },
    });
    expect(withGatewayKeys.budgets.defaults).toEqual({ session_tokens: { limit: 100, mode: 'hard' } });
    const passThrough = loadConfig({ env: { CTXGATE_CONFIG: writeConfigFile(yaml), TEAM_KEY: 'sk-team' } });
    const passThroughTenant = createAuthenticator({ gatewayApiKeys: [], anonymousTenant: '' }).authenticate({
      authorization: 'Bearer sk-team',
    }).tenantId;
    expect(Object.keys(passThrough.budgets.credentials)).toEqual([passThroughTenant]);
  });

  it('returns a frozen config', () => {
    const config = loadConfig({ env: { CTXGATE_CONFIG: writeConfigFile('{}') } });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.server)).toBe(true);
  });

  const problemCases: Array<{
    name: string;
    yaml?: string;
    env?: Record<string, string>;
    problems: (path: string) => string[];
  }> = [
    {
      name: 'an unknown top-level key',
      yaml: 'colour: blue\n',
      problems: (path) => [`${path}: colour: unknown key`],
    },
    {
      name: 'an unknown nested key',
      yaml: 'server:\n  bodylimit: 5\n',
      problems: (path) => [`${path}: server.bodylimit: unknown key`],
    },
    {
      name: 'a wrong type',
      yaml: 'timeouts:\n  upstream_connect_ms: soon\n',
      problems: (path) => [
        `${path}: timeouts.upstream_connect_ms: Invalid input: expected number, received string`,
      ],
    },
    {
      name: 'a fallback share outside (0, 1]',
      yaml: 'context:\n  fallback_when_dropping: 1.5\n',
      problems: (path) => [`${path}: context.fallback_when_dropping: Too big: expected number to be <=1`],
    },
    {
      name: 'a non-http upstream URL',
      yaml: 'upstreams:\n  - name: x\n    base_url: ftp://host/v1\n    models: ["*"]\n',
      problems: (path) => [`${path}: upstreams[0].base_url: must be an http:// or https:// URL`],
    },
    {
      name: 'an upstream without models',
      yaml: 'upstreams:\n  - name: x\n    base_url: http://host/v1\n    models: []\n',
      problems: (path) => [`${path}: upstreams[0].models: Too small: expected array to have >=1 items`],
    },
    {
      name: 'an unset key variable',
      yaml: 'upstreams:\n  - name: x\n    base_url: http://host/v1\n    api_key_env: X_KEY\n    models: ["*"]\n',
      env: { GATEWAY_API_KEYS: 'gk' },
      problems: (path) => [`${path}: upstreams[0].api_key_env: environment variable X_KEY is not set`],
    },
    {
      name: 'a CORS origin with a path',
      yaml: 'server:\n  cors_origins: ["https://chat.example.com/app"]\n',
      problems: (path) => [
        `${path}: server.cors_origins[0]: must be * or an origin: scheme://host[:port], no path`,
      ],
    },
    {
      name: 'a billing line neither kept nor dropped',
      yaml: 'upstreams:\n  - name: x\n    base_url: http://host/v1\n    kind: anthropic\n    billing_line: strip\n    models: ["*"]\n',
      problems: (path) => [`${path}: upstreams[0].billing_line: must be keep or drop`],
    },
    {
      name: 'a billing line for a Chat Completions upstream',
      yaml: 'upstreams:\n  - name: x\n    base_url: http://host/v1\n    billing_line: keep\n    models: ["*"]\n',
      problems: (path) => [
        `${path}: upstreams[0].billing_line: applies to kind: anthropic alone (a bridged request never carries the line)`,
      ],
    },
    {
      name: 'a duplicate upstream name',
      yaml: 'upstreams:\n  - name: default\n    base_url: http://host/v1\n    models: ["*"]\n',
      problems: (path) => [`${path}: upstreams[0].name: "default" is used twice`],
    },
    {
      name: 'an unset budget key variable',
      yaml: 'budgets:\n  credentials:\n    - key_env: TEAM_KEY\n      credential_daily_tokens: { limit: 5 }\n',
      problems: (path) => [
        `${path}: budgets.credentials[0].key_env: environment variable TEAM_KEY is not set`,
      ],
    },
    {
      name: 'summarize_to not below summarize_at in a preset',
      yaml: 'policies:\n  odd:\n    summarize_to: 0.8\n',
      problems: (path) => [`${path}: policies.odd: summarize_to (0.8) must be below summarize_at (0.75)`],
    },
    {
      name: 'an admin key that is also a gateway key',
      env: { GATEWAY_API_KEYS: 'shared-key', ADMIN_API_KEY: 'shared-key' },
      problems: () => ['ADMIN_API_KEY: must differ from every gateway key'],
    },
    {
      name: 'invalid YAML',
      yaml: 'server: [\n',
      problems: (path) => [
        expect.stringMatching(
          new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+ invalid YAML: `),
        ) as unknown as string,
      ],
    },
    {
      name: 'an upstream key without gateway keys',
      yaml: '{}',
      env: { UPSTREAM_API_KEY: 'sk' },
      problems: () => ['GATEWAY_API_KEYS: required when an upstream key is configured (UPSTREAM_API_KEY)'],
    },
    {
      name: 'a bad PORT',
      yaml: '{}',
      env: { PORT: '70000' },
      problems: () => ['PORT: must be an integer from 0 to 65535, got "70000"'],
    },
    {
      name: 'a bad UPSTREAM_BASE_URL',
      yaml: '{}',
      env: { UPSTREAM_BASE_URL: 'not a url' },
      problems: () => ['UPSTREAM_BASE_URL: must be an http:// or https:// URL'],
    },
    {
      name: 'a bad REDIS_URL (not echoed: it may hold a password)',
      yaml: '{}',
      env: { REDIS_URL: 'http://user:pw@host' },
      problems: () => ['REDIS_URL: must be a redis:// or rediss:// URL'],
    },
    {
      name: 'bad cluster seeds',
      yaml: '{}',
      env: { REDIS_CLUSTER_NODES: 'host-without-port' },
      problems: () => ['REDIS_CLUSTER_NODES: "host-without-port" is not host:port'],
    },
    {
      name: 'bad Sentinel addresses',
      yaml: '{}',
      env: { REDIS_SENTINELS: 's1:26379,s2:99999' },
      problems: () => ['REDIS_SENTINELS: "s2:99999" is not host:port'],
    },
    {
      name: 'an empty Sentinel list',
      yaml: '{}',
      env: { REDIS_SENTINELS: ' , ' },
      problems: () => ['REDIS_SENTINELS: lists no host:port'],
    },
  ];

  it.each(problemCases)('reports $name as one line naming the key', ({ yaml, env, problems }) => {
    const path = writeConfigFile(yaml ?? '{}');
    expect(problemsOf({ CTXGATE_CONFIG: path, ...env })).toEqual(problems(path));
  });

  it('lists every problem at once', () => {
    const path = writeConfigFile('server:\n  shutdown_grace_ms: 0\n  extra: 1\n');
    expect(problemsOf({ CTXGATE_CONFIG: path, PORT: 'x', LOG_LEVEL: 'chatty' })).toHaveLength(4);
  });
});
