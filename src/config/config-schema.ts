// The one schema of the config file (config/ctxgate.yaml); the file's TypeScript type is inferred from
// it, so the validator and the code that reads the config can never disagree.
import { z } from 'zod';
import { providerStateEndpoints } from '../upstream/provider-state.js';

const positiveMs = z.number().int().positive();

export const upstreamEntrySchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 letters, digits, dots, dashes or underscores'),
  base_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  /** Name of the environment variable holding this upstream's API key (never the key itself). */
  api_key_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
    .optional(),
  /** Model-name globs (`*` and `?`) routed to this upstream; first matching upstream wins. */
  models: z.array(z.string().min(1)).min(1),
  max_connections: z.number().int().positive().default(256),
  /**
   * The wire format the upstream speaks: `openai` (Chat Completions, the default) or `anthropic`
   * (the Messages API; its key is sent as `x-api-key`). docs/anthropic.md.
   */
  kind: z.enum(['openai', 'anthropic']).default('openai'),
  /**
   * Claude Code's billing line (`x-anthropic-billing-header: …`) in the system prompt sent to an
   * `anthropic` upstream: kept for Anthropic's own host, dropped for any other unless set.
   * docs/anthropic.md#claude-codes-billing-line.
   */
  billing_line: z.enum(['keep', 'drop'], { error: 'must be keep or drop' }).optional(),
});

export const serverSectionSchema = z.strictObject({
  body_limit_bytes: z
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024),
  /** Time a client has to send its whole request. */
  request_timeout_ms: positiveMs.default(60_000),
  /** An idle keep-alive connection is closed after this long. */
  keep_alive_timeout_ms: positiveMs.default(72_000),
  /**
   * Longest an answer's open event stream stays silent: then a keep-alive in the client's dialect (an SSE
   * comment; Anthropic's `ping` on the Messages API). 0: none.
   */
  stream_keepalive_ms: z.number().int().min(0).max(600_000).default(15_000),
  /** On SIGTERM, in-flight requests get this long to finish before connections are closed. */
  shutdown_grace_ms: positiveMs.default(30_000),
  /** Most messages one chat request may hold (400 beyond); bounds the CPU a request can cost. */
  max_messages: z.number().int().positive().max(100_000).default(10_000),
  /** Most content parts all messages of one request may hold together (400 beyond). */
  max_content_parts: z.number().int().positive().max(200_000).default(20_000),
  /** Most tool calls all messages (or Responses input items) of one request may hold together (400 beyond). */
  max_tool_calls: z.number().int().positive().max(200_000).default(20_000),
  /**
   * Most objects and arrays one JSON body may hold, counted as its bytes arrive (400 beyond): what
   * parsing allocates for, however small each one is.
   */
  max_json_containers: z.number().int().positive().max(5_000_000).default(250_000),
  /**
   * Most bytes of an upstream answer read whole (a non-streaming answer, an error body): past them the
   * answer is given up (502 upstream_bad_response), not buffered without end.
   */
  max_upstream_answer_bytes: z
    .number()
    .int()
    .positive()
    .default(256 * 1024 * 1024),
  /**
   * Origins whose pages may call the gateway from a browser (`https://chat.example.com`, `*` for any):
   * preflights answered, the gateway's headers readable (http/plugins/cors.ts). None by default.
   */
  cors_origins: z
    .array(
      z.string().regex(/^(?:\*|[a-z][a-z0-9+.-]*:\/\/[^\s/?#]+)$/, {
        error: 'must be * or an origin: scheme://host[:port], no path',
      }),
    )
    .max(100)
    .default([]),
});

export const timeoutsSectionSchema = z.strictObject({
  upstream_connect_ms: positiveMs.default(10_000),
  /** Until the upstream's response headers arrive; reasoning models think long before answering. */
  upstream_first_byte_ms: positiveMs.default(300_000),
  /** Longest silence between two chunks of an upstream body. */
  upstream_idle_ms: positiveMs.default(120_000),
  /** Upstream retries (429, 5xx, connection errors) stop once this long has passed since the first try. */
  upstream_retry_deadline_ms: positiveMs.default(30_000),
  /** A background summarization call is abandoned (nothing changes) after this long. */
  summary_ms: positiveMs.default(120_000),
});

export const modelEntrySchema = z.strictObject({
  /** Model-name glob (`*`, `?`, case-insensitive); entries are tried in order before the built-in table. */
  match: z.string().min(1),
  window: z.number().int().positive(),
  output_reserve: z.number().int().min(0).default(4_096),
  /**
   * The most prompt tokens the provider takes, whatever the answer asks for, when that is less than the
   * window less the answer (OpenAI's GPT-5: 272,000 of 400,000).
   */
  max_input: z.number().int().positive().optional(),
  tokenizer: z.enum(['o200k_base', 'cl100k_base']).default('o200k_base'),
  /** Learn a correction ratio from upstream usage (reactive recovery); with it off the estimate is used as is. */
  calibration: z.boolean().default(true),
  /** True when `tokenizer` is the model's own encoding, so the smaller safety margin applies. */
  exact_tokenizer: z.boolean().default(false),
  /**
   * How the provider writes tool definitions into the prompt: `typescript` (OpenAI's namespace) or `json`
   * (the chat templates of open models). Default: typescript with an exact tokenizer, json otherwise.
   */
  tool_format: z.enum(['typescript', 'json']).optional(),
  /**
   * Where the gateway's notices and summaries go: `inline` (system messages where they stand), `user`
   * (carried in the user message next to them), `leading_system` (appended to the leading system
   * message). Default: inline with an exact tokenizer (OpenAI's API), user otherwise (open models' chat
   * templates accept a system message only first).
   */
  notice_placement: z.enum(['inline', 'user', 'leading_system']).optional(),
  /**
   * Whether calls the model wrote as text, to a request that offered tools, are given as calls (`read`,
   * the default) or its text passed as it came (`off`): docs/budgeting.md#tool-calls-written-as-text.
   */
  text_tool_calls: z.enum(['read', 'off']).optional(),
  /**
   * Larger-window models (possibly on other upstreams) a request goes to, the first that fits, when it
   * cannot fit this one or its retries would drop too much of its history (policy fallback_when_dropping).
   */
  fallbacks: z.array(z.string().min(1).max(256)).max(16).default([]),
});

const fraction = z.number().gt(0).lte(1);

/** One token budget: a limit and what happens at it (docs/budgets.md). */
export const budgetLimitSchema = z.strictObject({
  limit: z.number().int().min(0),
  /** hard: refused before the upstream is called (429); soft: served with a warning; off: not counted. */
  mode: z.enum(['hard', 'soft', 'off']).default('hard'),
});

/** The budgets a layer (defaults, a credential, a preset) may set; each is optional. */
export const budgetSetSchema = z.strictObject({
  /** Tokens one session may use over its lifetime. */
  session_tokens: budgetLimitSchema.optional(),
  /** Tokens one credential may use per UTC day, and per UTC month. */
  credential_daily_tokens: budgetLimitSchema.optional(),
  credential_monthly_tokens: budgetLimitSchema.optional(),
  /** Tokens one request may cost: its rendered prompt estimate plus the max_tokens it asks for. */
  max_request_tokens: budgetLimitSchema.optional(),
});

/** Every knob of docs/budgeting.md, all optional: presets and the file's defaults are partial. */
export const policySchema = z.strictObject({
  keep_first_turns: z.number().int().min(0).optional(),
  trim_to: fraction.optional(),
  max_history_tokens: z.number().int().min(0).optional(),
  max_history_turns: z.number().int().min(0).optional(),
  max_tool_result_tokens: z.number().int().positive().optional(),
  tool_result_truncation: z.enum(['head', 'tail', 'both']).optional(),
  keep_first: z.number().int().min(0).optional(),
  keep_last: z.number().int().min(0).optional(),
  clear_at_least: z.number().int().min(0).optional(),
  exclude_tools: z.array(z.string().min(1).max(128)).max(256).optional(),
  oversize: z.enum(['reject', 'truncate_middle']).optional(),
  pin_prefix: z.string().optional(),
  /** Share of the window kept free when the count is exact or calibrated. */
  safety_margin: z.number().min(0).lt(1).optional(),
  /** Share of the window kept free when the count is an uncalibrated estimate. */
  safety_margin_uncalibrated: z.number().min(0).lt(1).optional(),
  /** Compressed retries after the upstream refused a prompt as too long. */
  max_retries: z.number().int().min(0).max(10).optional(),
  /** Retries of 429, 5xx and connection errors before any byte reached the client. */
  upstream_retries: z.number().int().min(0).max(10).optional(),
  /** A retry that would drop more than this share of the conversation's messages goes to a fallback model. */
  fallback_when_dropping: fraction.optional(),
  /** Background summarization of a session's oldest turns (docs/sessions.md#summarization). */
  summarization: z.enum(['on', 'off']).optional(),
  /** Summarize once a session's history tokens pass this share of its history budget… */
  summarize_at: fraction.optional(),
  /** …down to this share (the oldest turns, cut at a turn boundary). */
  summarize_to: fraction.optional(),
  /** Model that writes summaries, routed like any request; empty = the conversation's own model. */
  summary_model: z.string().max(256).optional(),
  /** Longest summary, in tokens (the summarizer's max_tokens). */
  summary_max_tokens: z.number().int().min(64).optional(),
  /**
   * A summary stating fewer than this share of the identifier-like facts (codes, amounts, paths, ids)
   * of what it covers is repaired: one more call restates them, the rest is appended verbatim.
   */
  summary_min_fact_recall: z.number().min(0).max(1).optional(),
  /**
   * The user's own sentences that state a fact are kept verbatim beside the summary (a notes region), at
   * most this share of the window, the oldest leaving first; 0 turns the notes off.
   */
  summary_notes_share: z.number().min(0).max(0.5).optional(),
  /**
   * The recall tool (docs/budgeting.md#recall): when fitting left something out, the model may search
   * what it was not shown; the gateway answers the calls itself.
   */
  recall: z.enum(['on', 'off']).optional(),
  /** Rounds of recall calls one request may make. */
  recall_max_calls: z.number().int().min(1).max(10).optional(),
  /** Most tokens one recall call's result may take. */
  recall_result_tokens: z.number().int().min(64).optional(),
  /** Budgets of requests that name this preset (the tightest of these and the credential's apply). */
  budgets: budgetSetSchema.optional(),
});

export const sessionsSectionSchema = z.strictObject({
  /** Sessions expire after this long without a write (30 days). */
  ttl_seconds: z.number().int().positive().default(2_592_000),
  /** A request's hold on its session expires by itself after this long (a replica may die holding it). */
  hold_ms: z.number().int().positive().default(600_000),
  /** A request for a session another request holds waits this long, in order, before its 409. */
  busy_wait_ms: z.number().int().min(0).max(600_000).default(10_000),
  /**
   * A turn's write whose acknowledgement was lost (Redis stalled or dropped the connection) is checked
   * this long before the client hears it failed: a stalled Redis carries the write out when it resumes.
   */
  commit_check_ms: z.number().int().min(0).max(600_000).default(15_000),
  /**
   * Most messages in a session's active list whatever their tokens; below that, the list keeps about
   * one window of tokens (at least 100 messages) and older messages move to the archive.
   */
  max_active_messages: z.number().int().min(100).default(10_000),
  /** Memory each replica may use to keep loaded sessions, so the next turn loads only what is new. */
  cache_mb: z.number().min(0).default(64),
  /**
   * Without REDIS_URL: memory the in-process session store may hold; past it the least recently used
   * idle sessions are evicted.
   */
  memory_mb: z.number().positive().default(256),
  /**
   * Pass-through mode: the tenant that callers presenting no credential share. Empty (the default):
   * such callers get no sessions (400 session_requires_credential).
   */
  anonymous_tenant: z
    .string()
    .regex(/^[A-Za-z0-9._-]{0,64}$/, 'must be up to 64 letters, digits, dots, dashes or underscores')
    .default(''),
});

/** What the gateway learns from its upstreams (docs/budgeting.md#what-the-gateway-learns). */
export const learningSectionSchema = z.strictObject({
  /** A learned window is forgotten this long after the last overflow confirming it. */
  window_ttl_seconds: z.number().int().positive().default(86_400),
  /** A learned window not confirmed for this long: one request per tenant tries the configured window. */
  reprobe_after_seconds: z.number().int().positive().default(3_600),
  /** Entries (models and tool sets) kept at most, in Redis and in each replica; least recently used go. */
  max_entries: z.number().int().min(100).max(1_000_000).default(10_000),
});

export const responsesSectionSchema = z.strictObject({
  /** The truncation of a request that does not state one: `auto` fits it, `disabled` sends it whole or refuses. */
  default_truncation: z.enum(['auto', 'disabled']).default('auto'),
  /**
   * What a Chat Completions upstream cannot do (client metadata, include entries, reasoning items,
   * built-in and namespace tools): `drop` leaves it out and names it in X-Ctxgate-Dropped; `reject`
   * refuses the request with a 400 naming it. What would change the answer's meaning is always refused.
   */
  unbridgeable: z.enum(['drop', 'reject']).default('drop'),
  /** Without Redis: memory the in-process store of responses may hold; past it the least recently used go. */
  memory_mb: z.number().positive().default(64),
});

export const passthroughSectionSchema = z.strictObject({
  /**
   * Provider-state endpoints (files, batches, stored chat completions…) forwarded even when every
   * tenant's call carries the one upstream key the gateway holds: for a deployment with one tenant.
   * Not listed: refused with 403, and `store: true` dropped from chat completions.
   */
  provider_state_endpoints: z.array(z.enum(providerStateEndpoints)).default([]),
});

const defaultBackpressure = [
  { at: 0.8, delay_ms: 50 },
  { at: 0.85, delay_ms: 300 },
  { at: 0.9, delay_ms: 750 },
  { at: 0.95, delay_ms: 1_500 },
];

export const budgetsSectionSchema = z.strictObject({
  /** A budget's warning (a log line and a metric) once its usage passes this share, once per period. */
  warn_at: fraction.default(0.8),
  /** Above each usage share, requests wait this long before they are forwarded. */
  backpressure: z
    .array(z.strictObject({ at: fraction, delay_ms: z.number().int().min(0).max(60_000) }))
    .default(defaultBackpressure),
  /** The budgets every credential has unless its own entry says otherwise. */
  defaults: budgetSetSchema.default({}),
  /** Budgets of one credential: the key is read from the environment variable named by key_env. */
  credentials: z
    .array(
      budgetSetSchema.extend({
        key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'),
      }),
    )
    .default([]),
});

export const configFileSchema = z.strictObject({
  server: serverSectionSchema.default(serverSectionSchema.parse({})),
  timeouts: timeoutsSectionSchema.default(timeoutsSectionSchema.parse({})),
  upstreams: z.array(upstreamEntrySchema).default([]),
  models: z.array(modelEntrySchema).default([]),
  /**
   * A model no entry (yours or the built-in table) knows: `assume` fits it into 128 000 tokens (logged once
   * per model), `reject` answers 400 `unknown_model` unless the request states X-Context-Window.
   */
  unknown_models: z.enum(['assume', 'reject']).default('assume'),
  context: policySchema.default({}),
  sessions: sessionsSectionSchema.default(sessionsSectionSchema.parse({})),
  budgets: budgetsSectionSchema.default(budgetsSectionSchema.parse({})),
  learning: learningSectionSchema.default(learningSectionSchema.parse({})),
  responses: responsesSectionSchema.default(responsesSectionSchema.parse({})),
  passthrough: passthroughSectionSchema.default(passthroughSectionSchema.parse({})),
  policies: z

    .record(
      z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 letters, digits, dots, dashes or underscores'),
      policySchema,
    )
    .default({}),
});

export type ModelEntryConfig = z.infer<typeof modelEntrySchema>;
export type PolicyConfig = z.infer<typeof policySchema>;

export type ConfigFile = z.infer<typeof configFileSchema>;
export type BudgetSetConfig = z.infer<typeof budgetSetSchema>;
export type BudgetLimitConfig = z.infer<typeof budgetLimitSchema>;

export type UpstreamEntry = z.infer<typeof upstreamEntrySchema>;
