// An upstream's refusal as a client reads it (docs/budgeting.md#an-upstreams-error-body). Providers answer
// in shapes of their own — Google's OpenAI-compatible endpoint an array around its error, TGI and LM Studio
// `{"error": "…"}`, Bedrock and Cerebras `{"message": "…"}`, FastAPI servers `{"detail": …}`, Cloudflare
// `{"errors": [{"message": …}]}` — which the OpenAI SDKs read as no error at all ("400 status code (no
// body)": ymichael/open-codex#15 on Gemini, liliMozi/openhanako#395) and Anthropic's SDK as no message. The
// relayed body says the provider's own words in the client's shape, the provider's body beside them.

import { isRecord } from './tool-call-shape.js';

/** What a refusal says: its message, and its type and code when it names them. */
export interface UpstreamErrorFacts {
  message: string;
  type?: string;
  code?: string | number;
}

/** Error bodies read to be written again in OpenAI's shape: larger ones go as they came. */
export const maxReshapedErrorBytes = 1 << 20;

const textOf = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;

const nameOf = (value: unknown): string | number | undefined =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? value : undefined;

/** A pydantic validation error's items (`{"loc": ["body", "messages"], "msg": "…"}`) as one sentence. */
function validationText(items: unknown[]): string | undefined {
  const texts = items.slice(0, 10).flatMap((item) => {
    if (!isRecord(item) || textOf(item.msg) === undefined) return [];
    const place = Array.isArray(item.loc) ? item.loc.join('.') : '';
    return [place === '' ? String(item.msg) : `${place}: ${String(item.msg)}`];
  });
  return texts.length === 0 ? undefined : texts.join('; ');
}

/** What a parsed error body says, in any of the shapes above; undefined when it says nothing readable. */
export function upstreamErrorFacts(parsed: unknown): UpstreamErrorFacts | undefined {
  const body = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!isRecord(body)) return undefined;
  const facts = (message: string | undefined, type: unknown, code: unknown) => {
    if (message === undefined) return undefined;
    const found: UpstreamErrorFacts = { message };
    const typeName = nameOf(type);
    if (typeof typeName === 'string') found.type = typeName;
    const codeName = nameOf(code);
    if (codeName !== undefined) found.code = codeName;
    return found;
  };
  const error = body.error;
  if (isRecord(error)) return facts(textOf(error.message), error.type ?? error.status, error.code);
  if (textOf(error) !== undefined) return facts(error as string, body.error_type ?? body.type, body.code);
  if (textOf(body.message) !== undefined)
    return facts(body.message as string, body.type ?? body.__type, body.code);
  if (textOf(body.detail) !== undefined) return facts(body.detail as string, undefined, undefined);
  if (Array.isArray(body.detail))
    return facts(validationText(body.detail), 'invalid_request_error', undefined);
  const first = Array.isArray(body.errors) ? (body.errors[0] as unknown) : undefined;
  if (isRecord(first)) return facts(textOf(first.message), undefined, first.code);
  return undefined;
}

/**
 * The error a chat stream's event reports, when it reports one: `{"error": …}` beside or instead of the
 * choices (OpenAI's, OpenRouter's with a numbered code, TGI's string) or vLLM's `{"object": "error", …}` — in
 * the provider's words (`The upstream failed.` when it gave none). Undefined for an event of the answer.
 */
export function streamedErrorOf(chunk: Record<string, unknown>): UpstreamErrorFacts | undefined {
  if (!reportsError(chunk)) return undefined;
  return upstreamErrorFacts(chunk) ?? { message: 'The upstream failed.' };
}

/** Whether a chat stream's event is the provider's error (streamedErrorOf), not an event of the answer. */
export const reportsError = (chunk: Record<string, unknown>): boolean =>
  (chunk.error !== undefined && chunk.error !== null) || chunk.object === 'error';

/**
 * An upstream's error body as an OpenAI client reads it: the same bytes when it is OpenAI's shape
 * already (an `error` object with its `message`), not JSON (a proxy's page, read as text) or larger
 * than maxReshapedErrorBytes; else `{"error": {"message", "type", "param", "code", "upstream"}}` — the
 * provider's words, the type and code it named, and its body as it came under `upstream`.
 */
export function withOpenAIErrorShape(body: Buffer): Buffer {
  if (body.length > maxReshapedErrorBytes) return body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (isRecord(parsed) && isRecord(parsed.error) && typeof parsed.error.message === 'string') return body;
  const facts = upstreamErrorFacts(parsed);
  if (facts === undefined) return body;
  return Buffer.from(
    JSON.stringify({
      error: {
        message: facts.message,
        type: facts.type ?? 'upstream_error',
        param: null,
        code: facts.code ?? null,
        upstream: parsed,
      },
    }),
  );
}
