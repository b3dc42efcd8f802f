// The gateway's one error family: every failure the gateway itself reports carries a stable string
// code, and this table is the only place that says which HTTP status and OpenAI error type it has.

export const errorCodes = {
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  json_too_deep: { status: 400, type: 'invalid_request_error' },
  invalid_header: { status: 400, type: 'invalid_request_error' },
  session_requires_credential: { status: 400, type: 'invalid_request_error' },
  session_turn_too_large: { status: 400, type: 'invalid_request_error' },
  unknown_model: { status: 400, type: 'invalid_request_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  missing_api_key: { status: 401, type: 'authentication_error' },
  provider_state_not_shared: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'invalid_request_error' },
  session_busy: { status: 409, type: 'invalid_request_error' },
  session_conflict: { status: 409, type: 'invalid_request_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  websocket_not_supported: { status: 426, type: 'invalid_request_error' },
  headers_too_large: { status: 431, type: 'invalid_request_error' },
  context_length_exceeded: { status: 400, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  budget_exceeded: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'server_error' },
  upstream_unreachable: { status: 502, type: 'server_error' },
  upstream_bad_response: { status: 502, type: 'server_error' },
  session_store_unavailable: { status: 503, type: 'server_error' },
  shutting_down: { status: 503, type: 'server_error' },
  upstream_timeout: { status: 504, type: 'server_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type GatewayErrorCode = keyof typeof errorCodes;

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly status: number;
  readonly param: string | null;
  /** Response headers the answer carries (Retry-After, x-should-retry). */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** Anthropic's machine-readable detail (`error.details`, its `error_code`), on a Messages route only. */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: GatewayErrorCode,
    message: string,
    options: {
      param?: string | null;
      cause?: unknown;
      headers?: Record<string, string>;
      details?: Record<string, unknown>;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = errorCodes[code].status;
    this.param = options.param ?? null;
    this.headers = options.headers;
    this.details = options.details;
  }
}

/**
 * The innermost cause of a failure, as "CODE: message" (a network error's, Redis's own words: never a
 * request's text), cut short; undefined when it has none.
 */
export function causeOf(error: Error): string | undefined {
  let inner: unknown = error.cause;
  while (inner instanceof Error && inner.cause instanceof Error) inner = inner.cause;
  if (!(inner instanceof Error)) return undefined;
  const code = (inner as { code?: unknown }).code;
  const text = typeof code === 'string' ? `${code}: ${inner.message}` : inner.message;
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** Checks by `code`, not `instanceof`, so errors that crossed a module or realm boundary still match. */
export function isGatewayError(value: unknown): value is GatewayError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { name?: unknown }).name === 'GatewayError' &&
    typeof (value as { code?: unknown }).code === 'string' &&
    Object.hasOwn(errorCodes, (value as { code: string }).code)
  );
}

export function toOpenAIErrorBody(error: GatewayError): OpenAIErrorBody {
  return {
    error: {
      message: error.message,
      type: errorCodes[error.code].type,
      param: error.param,
      code: error.code,
    },
  };
}
