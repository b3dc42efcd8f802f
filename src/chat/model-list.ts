// GET /v1/models (README.md, docs/configuration.md#the-model-list): the models the gateway routes. With one
// upstream, its own list as it answered. With several, each upstream is asked for its list at once, and a
// model is listed under the upstream the gateway would send it to (the first whose globs match it; the
// default upstream takes the rest): a list a model picker can use — Claude Code's gateway model discovery,
// Open WebUI's, LibreChat's — of Claude from an `anthropic` upstream beside the default upstream's models.
// Written in the client's API's shape: Anthropic's when the request carries `anthropic-version`, OpenAI's
// otherwise. An upstream that does not answer a list in time is left out and counted
// (X-Ctxgate-Upstreams-Unlisted; its name goes to the log, not to the client: upstream names are the
// operator's); when none does, the default upstream's answer goes as it came. One model (`GET
// /v1/models/{model}`, with several upstreams) is asked of the upstream its name is routed to and written in
// the client's shape the same way; a refusal goes as it came.
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import type { Credential } from '../auth/authenticate.js';
import type { GatewayConfig, UpstreamConfig } from '../config/gateway-config.js';
import { GatewayError } from '../errors.js';
import { anthropicHeaders } from '../upstream/anthropic-wire.js';
import { buildClientHeaders, buildUpstreamHeaders } from '../upstream/forward-headers.js';
import { forwardedPath } from '../upstream/forwarded-path.js';
import type { ClientStream } from '../upstream/relay.js';
import type { Upstream } from '../upstream/upstream.js';
import type { RequestOutcome } from './request-outcome.js';

export interface ModelListInput {
  headers: IncomingHttpHeaders;
  credential: Credential;
  /** Told each upstream whose list could not be read (the log line `upstream model list unread`). */
  warn?: (fields: Record<string, unknown>, message: string) => void;
}

export interface ModelListService {
  list(input: ModelListInput, client: ClientStream): Promise<RequestOutcome>;
  /**
   * `GET /v1/models/{model}` (`target`: the request target as the client sent it): asked of the upstream
   * the model is routed to, its model written in the client's API's shape.
   */
  retrieve(input: ModelListInput & { target: string }, client: ClientStream): Promise<RequestOutcome>;
}

/** How long each upstream has to answer its list: Claude Code gives discovery 3 seconds in all. */
export const modelListTimeoutMs = 2_500;
/** The most models read of one upstream's list: more than any provider serves. */
const modelsPerUpstream = 10_000;

/** One model as an upstream listed it, in either API's shape. */
interface ListedModel {
  id: string;
  /** Seconds since the epoch (OpenAI's `created`, or Anthropic's `created_at` read). */
  created: number | undefined;
  ownedBy: string | undefined;
  displayName: string | undefined;
}

/** An upstream's answer: the models it listed, or what it answered instead. */
interface UpstreamList {
  upstream: UpstreamConfig;
  models: ListedModel[] | undefined;
  status: number | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | undefined;
}

/**
 * The models of a list in OpenAI's shape (`data` of `{id, created, owned_by}`) or Anthropic's; undefined
 * when it is neither.
 */
export function listedModels(body: Buffer): ListedModel[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const data = (parsed as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  const models: ListedModel[] = [];
  for (const item of data.slice(0, modelsPerUpstream)) {
    const model = listedModelOf(item);
    if (model !== undefined) models.push(model);
  }
  return models;
}

/** One model object in OpenAI's shape (`id`, `created`, `owned_by`) or Anthropic's; undefined otherwise. */
function listedModelOf(item: unknown): ListedModel | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const {
    id,
    created,
    created_at: createdAt,
    owned_by: ownedBy,
    display_name: displayName,
  } = item as Record<string, unknown>;
  if (typeof id !== 'string' || id === '' || id.length > 512) return undefined;
  const at = typeof createdAt === 'string' ? Date.parse(createdAt) : Number.NaN;
  return {
    id,
    created:
      typeof created === 'number' && Number.isFinite(created)
        ? Math.floor(created)
        : Number.isNaN(at)
          ? undefined
          : Math.floor(at / 1000),
    ownedBy: typeof ownedBy === 'string' ? ownedBy : undefined,
    displayName: typeof displayName === 'string' ? displayName : undefined,
  };
}

type RoutedModel = ListedModel & { kind: UpstreamConfig['kind'] };

/** One model as the client's API writes it: Anthropic's object, or OpenAI's. */
function modelObject(model: RoutedModel, shape: 'anthropic' | 'openai'): Record<string, unknown> {
  if (shape === 'openai')
    return {
      id: model.id,
      object: 'model',
      created: model.created ?? 0,
      // Anthropic's models name no owner; OpenAI's own list says `system` of many.
      owned_by: model.ownedBy ?? (model.kind === 'anthropic' ? 'anthropic' : 'system'),
    };
  return {
    type: 'model',
    id: model.id,
    display_name: model.displayName ?? model.id,
    created_at: new Date((model.created ?? 0) * 1000).toISOString(),
  };
}

/** The models as the client's API writes a list: Anthropic's, or OpenAI's. */
export function modelListBody(models: readonly RoutedModel[], shape: 'anthropic' | 'openai'): string {
  const data = models.map((model) => modelObject(model, shape));
  if (shape === 'openai') return JSON.stringify({ object: 'list', data });
  return JSON.stringify({
    data,
    has_more: false,
    first_id: models[0]?.id ?? null,
    last_id: models.at(-1)?.id ?? null,
  });
}

/** The API whose shape the client reads: Anthropic's when it sent `anthropic-version`. */
function shapeOf(headers: IncomingHttpHeaders): 'anthropic' | 'openai' {
  return headers['anthropic-version'] === undefined ? 'openai' : 'anthropic';
}

export function createModelListService(deps: {
  config: GatewayConfig;
  upstream: Upstream;
  now: () => number;
}): ModelListService {
  const { config } = deps;

  /** Asks one upstream for its list, within modelListTimeoutMs; never rejects. */
  async function listOf(
    upstream: UpstreamConfig,
    input: ModelListInput,
    cancel: EventEmitter,
  ): Promise<UpstreamList> {
    const failed = { upstream, models: undefined, status: undefined, headers: {}, body: undefined };
    const signal = new EventEmitter();
    const abort = (): void => void signal.emit('abort');
    const timer = setTimeout(abort, modelListTimeoutMs);
    cancel.once('abort', abort);
    try {
      const response = await deps.upstream.send({
        upstream,
        method: 'GET',
        // Anthropic lists 20 a page unless asked for more (1,000 at most).
        path: upstream.kind === 'anthropic' ? '/models?limit=1000' : '/models',
        headers: headersFor(upstream, input),
        signal,
      });
      const body = await response.readAll();
      return {
        upstream,
        models: response.statusCode < 300 ? listedModels(body) : undefined,
        status: response.statusCode,
        headers: response.headers,
        body,
      };
    } catch {
      return failed;
    } finally {
      clearTimeout(timer);
      cancel.off('abort', abort);
    }
  }

  /** The headers an upstream is asked with: an `anthropic` one's as Anthropic takes them. */
  function headersFor(upstream: UpstreamConfig, input: ModelListInput): Record<string, string> {
    const headers = buildUpstreamHeaders(input.headers, upstream, input.credential);
    return upstream.kind === 'anthropic' ? anthropicHeaders(headers, upstream) : headers;
  }

  const service: ModelListService = {
    async retrieve(input, client) {
      const path = forwardedPath('GET', input.target);
      if (path.kind !== 'forward')
        throw new GatewayError(
          'not_found',
          `Unknown request URL: GET ${input.target.split('?')[0]?.slice(0, 200)}.`,
        );
      // `/v1/models/` is the list.
      if (path.segments.length < 2) return service.list(input, client);
      // A router's name holds a slash (`mistralai/mistral-7b-instruct`), sent as it is or encoded.
      const model = path.segments.slice(1).join('/');
      const upstream = config.routing.upstreamFor(model);
      const startedAtMs = deps.now();
      const tally = { name: upstream.name, status: undefined as number | undefined, ms: 0, attempts: 1 };
      const response = await deps.upstream.send({
        upstream,
        method: 'GET',
        path: path.path,
        headers: headersFor(upstream, input),
        signal: client.cancellation,
      });
      const body = await response.readAll();
      tally.status = response.statusCode;
      tally.ms = deps.now() - startedAtMs;
      // The name as the log line carries a chat request's, at most 256 characters.
      const outcome = {
        model: model.slice(0, 256),
        upstream: Object.assign(tally, { errorCause: undefined }),
      };
      let found: ListedModel | undefined;
      if (response.statusCode < 300)
        try {
          found = listedModelOf(JSON.parse(body.toString('utf8')));
        } catch {
          found = undefined;
        }
      // A refusal (a model the upstream does not serve: its 404), or an answer not a model: as it came.
      if (found === undefined) {
        await client.sendWhole(response.statusCode, buildClientHeaders(response.headers), body);
        return outcome;
      }
      const written = modelObject(Object.assign(found, { kind: upstream.kind }), shapeOf(input.headers));
      await client.sendWhole(
        200,
        { 'content-type': 'application/json' },
        Buffer.from(JSON.stringify(written)),
      );
      return outcome;
    },

    async list(input, client) {
      const startedAtMs = deps.now();
      const lists = await Promise.all(
        config.upstreams.map((upstream) => listOf(upstream, input, client.cancellation)),
      );
      const tally = {
        name: config.upstreams
          .map((upstream) => upstream.name)
          .join(',')
          .slice(0, 200),
        status: undefined as number | undefined,
        ms: deps.now() - startedAtMs,
        attempts: lists.length,
        errorCause: undefined,
      };
      const listed = lists.filter((list) => list.models !== undefined);
      if (listed.length === 0) {
        // No list anywhere: the default upstream's answer (its refusal of the key, say) as it came.
        const own = lists.at(-1);
        if (own?.status === undefined || own.body === undefined)
          throw new GatewayError('upstream_unreachable', 'No upstream answered its model list.');
        tally.status = own.status;
        await client.sendWhole(own.status, buildClientHeaders(own.headers), own.body);
        return { upstream: tally };
      }
      const seen = new Set<string>();
      const models: RoutedModel[] = [];
      for (const { upstream, models: each } of listed)
        for (const model of each ?? [])
          if (!seen.has(model.id) && config.routing.upstreamFor(model.id).name === upstream.name) {
            seen.add(model.id);
            models.push(Object.assign({}, model, { kind: upstream.kind }));
          }
      const unlisted = lists.filter((list) => list.models === undefined);
      for (const { upstream, status } of unlisted)
        input.warn?.({ upstream: upstream.name, status: status ?? null }, 'upstream model list unread');
      const shape = shapeOf(input.headers);
      tally.status = 200;
      await client.sendWhole(
        200,
        Object.assign(
          { 'content-type': 'application/json' },
          unlisted.length === 0 ? {} : { 'x-ctxgate-upstreams-unlisted': String(unlisted.length) },
        ),
        Buffer.from(modelListBody(models, shape)),
      );
      return { upstream: tally };
    },
  };
  return service;
}
