// Every /v1 path the gateway does not manage (embeddings, moderations, audio, images, files, legacy
// completions…), forwarded: the request target decoded and normalised first (a spelling of one of the
// gateway's own endpoints is refused, never forwarded), a JSON body read within the body limit with
// its shape checked as it arrives (only to find its model), provider-state endpoints refused under a
// shared upstream key, and the call admitted by the hard token budgets and charged with the usage its
// answer reports (docs/budgets.md). Bodies that are not JSON stream through as they arrive.
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Credential } from '../auth/authenticate.js';
import type { BudgetReservation, BudgetService } from '../budget/budget-service.js';
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { firstHeaderValue } from '../header-value.js';
import { bytesAsRead, jsonShapeLimits, parseJsonBody, readJsonText } from '../json-body.js';
import { forwardedPath } from '../upstream/forwarded-path.js';
import { providerStateEndpoint } from '../upstream/provider-state.js';
import type { UpstreamMethod } from '../upstream/upstream.js';
import type { Forwarder } from './forward-request.js';
import type { ClientStream } from '../upstream/relay.js';
import { withOutcome, type RequestOutcome } from './request-outcome.js';

export interface PassthroughInput {
  method: UpstreamMethod;
  /** The request target as the client sent it (path and query). */
  target: string;
  headers: IncomingHttpHeaders;
  /** The request body as it arrives (undefined for GET and DELETE). */
  body: Readable | undefined;
  credential: Credential;
}

export interface PassthroughService {
  /** Forwards the call; what was done (request-outcome.ts), on the error when it failed. */
  forward(input: PassthroughInput, client: ClientStream): Promise<RequestOutcome>;
}

function notFound(input: PassthroughInput): GatewayError {
  return new GatewayError(
    'not_found',
    `Unknown request URL: ${input.method} ${input.target.split('?')[0]?.slice(0, 200)}.`,
  );
}

/** What a forwarded JSON body asks for, read from its fields: the prompt's text, and the answer's cap. */
function expectedCost(body: Record<string, unknown> | undefined): {
  promptTokens: number;
  maxOutputTokens: number;
} {
  if (body === undefined) return { promptTokens: 0, maxOutputTokens: 0 };
  let characters = 0;
  const measure = (value: unknown): void => {
    if (typeof value === 'string') characters += value.length;
    else if (Array.isArray(value)) for (const item of value) measure(item);
  };
  measure(body.input);
  measure(body.prompt);
  const cap = [body.max_tokens, body.max_completion_tokens, body.max_output_tokens].find(
    (value): value is number => typeof value === 'number' && Number.isFinite(value) && value > 0,
  );
  const choices = typeof body.n === 'number' && body.n > 1 ? Math.min(body.n, 128) : 1;
  // About four characters a token: an estimate, settled later with the usage the answer reports.
  return { promptTokens: Math.ceil(characters / 4), maxOutputTokens: (cap ?? 0) * choices };
}

export function createPassthroughService(deps: {
  config: GatewayConfig;
  forwarder: Forwarder;
  budgets: BudgetService;
  sleep: (ms: number) => Promise<void>;
}): PassthroughService {
  const { config, forwarder, budgets } = deps;
  const shape = jsonShapeLimits(config);
  const allowedState = new Set<string>(config.passthrough.provider_state_endpoints);

  /** Reads a JSON body (shape checked as it arrives) and the model it names. */
  async function readJson(input: PassthroughInput, stream: Readable) {
    const body = await readJsonText(stream, {
      limitBytes: config.server.body_limit_bytes,
      shape,
      contentLength: Number(firstHeaderValue(input.headers['content-length'])),
    });
    let parsed: Record<string, unknown> | undefined;
    try {
      const value = body.text.trim() === '' ? undefined : parseJsonBody(body);
      if (typeof value === 'object' && value !== null && !Array.isArray(value))
        parsed = value as Record<string, unknown>;
    } catch {
      // Not JSON after all: forwarded as sent, for the provider to answer.
    }
    // A body that gives a key twice goes as the gateway read it: the model and costs it was charged for.
    return { bytes: parsed === undefined ? body.bytes : bytesAsRead(body, parsed), parsed };
  }

  /** Provider-side state under the operator's key is every tenant's: refused unless configured. */
  function checkProviderState(input: PassthroughInput, target: UpstreamConfig, segments: readonly string[]) {
    const endpoint = providerStateEndpoint(input.method, segments);
    if (endpoint === undefined || allowedState.has(endpoint)) return;
    if (input.credential.mode !== 'gateway_key' || target.apiKey === undefined) return;
    throw new GatewayError(
      'provider_state_not_shared',
      `'/v1/${endpoint}' keeps state on the provider under the gateway's one upstream key, which every client of this gateway shares; it is not forwarded. A deployment with a single tenant can allow it in passthrough.provider_state_endpoints.`,
      { param: 'url' },
    );
  }

  async function reserve(
    input: PassthroughInput,
    cost: ReturnType<typeof expectedCost>,
    client: ClientStream,
  ) {
    const plan = budgets.plan({ tenantId: input.credential.tenantId, sessionId: undefined });
    if (plan === undefined) return undefined;
    let reservation: BudgetReservation;
    try {
      reservation = await budgets.reserve(plan, Object.assign({}, cost, { backpressure: true }));
    } catch (error) {
      if (isGatewayError(error) && error.code === 'budget_exceeded')
        client.addHeaders({ 'x-budget-remaining': '0' });
      throw error;
    }
    client.addHeaders(reservation.headers);
    if (reservation.delayMs > 0) await deps.sleep(reservation.delayMs);
    return reservation;
  }

  /** The call as forwarded (the JSON body re-sent as read, any other as it arrives), admitted and charged. */
  async function forwardCall(
    input: PassthroughInput,
    client: ClientStream,
    path: { path: string; segments: readonly string[] },
    contentType: string | undefined,
    json: Awaited<ReturnType<typeof readJson>> | undefined,
    model: string | undefined,
  ): Promise<RequestOutcome> {
    const target = model === undefined ? config.defaultUpstream : config.routing.upstreamFor(model);
    checkProviderState(input, target, path.segments);
    const cost = expectedCost(json?.parsed);
    const reservation = await reserve(input, cost, client);
    const hasBody = input.method !== 'GET' && input.method !== 'DELETE' && input.body !== undefined;
    const body: Buffer | Readable | undefined = json?.bytes ?? (hasBody ? input.body : undefined);
    const bodyHeaders: Record<string, string> = {};
    const contentLength = firstHeaderValue(input.headers['content-length']);
    if (contentType !== undefined) bodyHeaders['content-type'] = contentType;
    if (Buffer.isBuffer(body)) bodyHeaders['content-length'] = String(body.length);
    else if (body !== undefined && contentLength !== undefined) bodyHeaders['content-length'] = contentLength;
    try {
      const forwarded = await forwarder.forward(
        {
          target,
          method: input.method,
          path: path.path,
          body,
          bodyHeaders,
          streamBody: true,
          clientHeaders: input.headers,
          credential: input.credential,
        },
        client,
      );
      // Refusals cost nothing; a success is counted by its usage, else by the estimate.
      if (forwarded.answered && (forwarded.upstream.status ?? 500) < 300) {
        const reported = forwarded.totalTokens;
        await reservation?.settle({
          tokens: reported ?? cost.promptTokens + cost.maxOutputTokens,
          estimated: reported === undefined,
        });
      }
      return { upstream: forwarded.upstream, streamErrorCode: forwarded.streamErrorCode };
    } finally {
      await reservation?.release();
    }
  }

  return {
    async forward(input, client) {
      const path = forwardedPath(input.method, input.target);
      if (path.kind !== 'forward') throw notFound(input);
      const contentType = firstHeaderValue(input.headers['content-type']);
      const json =
        input.body !== undefined &&
        input.method !== 'GET' &&
        input.method !== 'DELETE' &&
        contentType !== undefined &&
        /^application\/json\b/i.test(contentType)
          ? await readJson(input, input.body)
          : undefined;
      const model = typeof json?.parsed?.model === 'string' ? json.parsed.model : undefined;
      try {
        return { model, ...(await forwardCall(input, client, path, contentType, json, model)) };
      } catch (error) {
        throw withOutcome(error, { model });
      }
    },
  };
}
