// The Responses API on top of the chat service: a request is bridged into a chat request carrying its
// chain's conversation (previous_response_id: the earlier inputs and outputs), run through the same
// engine as any chat request — render-time fitting, reactive recovery, fallbacks, budgets — and its
// answer translated back (whole, or event by event) and stored under the caller's tenant.
//
// A chain is read newest first, in batches, only as far as the model's window reaches (each record
// knows its own token count), plus its first response (the first turn is kept, as for any
// conversation): what lies between is left out with the usual omission notice. So a request's work is
// bounded by the window, not by how long the chain has grown.
import { withoutThinking } from '../context/summary.js';
import type { ChatInput, ChatService } from '../chat/chat-turn.js';
import {
  bodyStringBytes,
  bridgedMessageBytes,
  clientArray,
  jsonArrayBytes,
  recordBytes,
  toolsKeyOf,
  withLeadingBytes,
} from '../chat/chat-body.js';
import type { ContextMessage } from '../context/types.js';
import { findModelEntry } from '../context/context-settings.js';
import { countPrecisionFor } from '../context/plan-send.js';
import { forStrictTemplate } from '../context/notice-placement.js';
import { createReasoningNames, reasoningNamed, reasoningOf } from '../upstream/reasoning-field.js';
import type { CountPrecision } from '../tokenizer/tiktoken-tokenizers.js';
import { servedAsBridged, type RequestOutcome } from '../chat/request-outcome.js';
import { reportedFailureOf, type ClientStream } from '../upstream/relay.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { GatewayError, toOpenAIErrorBody } from '../errors.js';
import { chunkTexts } from '../upstream/content-chunks.js';
import {
  ancestorLinks,
  heldOnce,
  inputItemId,
  type ReadChainRecord,
  type ResponseStore,
} from '../store/response-store.js';
import {
  bridgeRequest,
  compactionItemOf,
  newId,
  outputItemsOf,
  responseObject,
  usageOf,
  responseUsageCounts,
  userItemsOf,
  type BridgedRequest,
  type InputItem,
  type ResponseMeta,
} from './bridge.js';
import { sharedStrings } from './shared-strings.js';
import { ResponsesStreamTranslator, wholeResponseEvents } from './stream-translator.js';

export type ResponsesInput = Omit<ChatInput, 'body'> & { body: unknown };

export interface ResponsesService {
  /** What was done (request-outcome.ts), on the error when it failed. */
  create(input: ResponsesInput, client: ClientStream): Promise<RequestOutcome>;
  /**
   * POST /v1/responses/compact: the conversation (`input`, or the chain of `previous_response_id`)
   * summarized by its model, answered as the user's messages and one compaction item.
   */
  compact(input: ResponsesInput, client: ClientStream): Promise<RequestOutcome>;
  retrieve(tenantId: string, id: string): Promise<Record<string, unknown>>;
  remove(tenantId: string, id: string): Promise<Record<string, unknown>>;
  inputItems(
    tenantId: string,
    id: string,
    page: { after?: string | undefined; limit?: number | undefined; order?: 'asc' | 'desc' | undefined },
  ): Promise<Record<string, unknown>>;
  /** The body to answer, and what the request would do for its log line. */
  inputTokens(
    input: Omit<ResponsesInput, 'warn' | 'info'>,
  ): Promise<{ body: Record<string, unknown>; outcome: RequestOutcome }>;
  /** The tenant's chains, most recently extended first (docs/inspector.md). */
  chains(tenantId: string, page: { offset: number; limit: number }): Promise<Record<string, unknown>>;
}

const notFound = (id: string) =>
  new GatewayError('not_found', `Response with id '${id}' not found.`, { param: 'response_id' });

export function createResponsesService(deps: {
  chat: ChatService;
  store: ResponseStore;
  config: GatewayConfig;
  /**
   * Tokens of chat messages as the model counts them: each stored response keeps its own (from samples
   * when the request's body was over 4 MB, as its prompt was counted).
   */
  countTokens: (
    model: string,
    messages: ReadonlyArray<Record<string, unknown>>,
    precision: CountPrecision,
  ) => number;
}): ResponsesService {
  const { chat, store, config } = deps;
  /** The name each model's answers give their reasoning (reasoning-field.ts). */
  const reasoningNames = createReasoningNames();
  const bridgeOptions = {
    defaultTruncation: config.responses.default_truncation,
    unbridgeable: config.responses.unbridgeable,
    limits: { maxMessages: config.server.max_messages, maxToolCalls: config.server.max_tool_calls },
  } as const;

  /**
   * The request with its `item_reference` items replaced by the items the tenant's stored responses
   * hold (inputs and outputs alike); a reference to an item that no stored response of the tenant holds
   * is a 400 naming it.
   */
  async function withReferencesResolved(body: unknown, tenantId: string): Promise<unknown> {
    const input = (body as { input?: unknown } | null)?.input;
    if (!Array.isArray(input)) return body;
    const references: Array<{ index: number; id: string }> = [];
    input.forEach((item: unknown, index) => {
      const reference = item as { type?: unknown; id?: unknown } | null;
      if (reference?.type !== 'item_reference') return;
      if (typeof reference.id !== 'string' || reference.id === '' || reference.id.length > 256)
        throw new GatewayError('invalid_request', `Invalid 'input[${index}].id': expected an item id.`, {
          param: `input[${index}].id`,
        });
      references.push({ index, id: reference.id });
    });
    if (references.length === 0) return body;
    const found = await store.findItems(
      tenantId,
      references.map((reference) => reference.id),
    );
    const resolved = [...input];
    references.forEach((reference, position) => {
      const item = found[position];
      if (item === undefined)
        throw new GatewayError('invalid_request', `Item with id '${reference.id}' not found.`, {
          param: `input[${reference.index}].id`,
        });
      resolved[reference.index] = item;
    });
    return Object.assign({}, body as object, { input: resolved });
  }

  /** The request bridged: references resolved, what cannot be bridged dropped and named (or refused). */
  async function bridgedOf(input: Omit<ResponsesInput, 'warn' | 'info'>, body: unknown) {
    const tenantId = input.credential.mayHoldSessions ? input.credential.tenantId : '\u0000none';
    return bridgeRequest(await withReferencesResolved(body, tenantId), bridgeOptions);
  }

  const missingLink = (id: string, previousId: string) =>
    new GatewayError(
      'not_found',
      `Response '${id}', earlier in the chain of '${previousId}', is gone (deleted or expired).`,
      { param: 'previous_response_id' },
    );

  /**
   * The chain a request continues, read newest first until its records hold more than `tokenLimit`
   * tokens (or its start), in batches of the nearest links each record keeps. When older links remain,
   * the chain's first response is read too and what lies between is counted as omitted.
   */
  async function chainOf(tenantId: string, previousId: string | undefined, tokenLimit: number) {
    if (previousId === undefined)
      return {
        previous: undefined,
        previousLinks: [],
        messages: [],
        messageBytes: [],
        omitted: 0,
        complete: true,
      };
    const first = await store.readChain(tenantId, [previousId], previousId);
    const previous = first.records[0];
    if (previous === undefined)
      throw new GatewayError('not_found', `Previous response with id '${previousId}' not found.`, {
        param: 'previous_response_id',
      });
    const previousLinks = first.links ?? [];
    const newestFirst: ReadChainRecord[] = [previous];
    let tokens = previous.tokens;
    let oldest = previous;
    let next = previousLinks;
    while (oldest.previousId !== undefined && tokens <= tokenLimit && next.length > 0) {
      const ids = next.slice(0, ancestorLinks);
      // The batch, and the links of its oldest (the next batch), in one round trip.
      const batch = await store.readChain(tenantId, ids, ids.at(-1));
      for (const [index, record] of batch.records.entries()) {
        if (record === undefined) throw missingLink(ids[index] as string, previousId);
        newestFirst.push(record);
        tokens += record.tokens;
        oldest = record;
        if (tokens > tokenLimit || record.previousId === undefined) break;
      }
      next = batch.links ?? [];
    }
    const complete = oldest.previousId === undefined;
    let head: ReadChainRecord[] = [];
    let omitted = 0;
    if (!complete) {
      const [root] = (await store.readChain(tenantId, [oldest.rootId])).records;
      if (root === undefined) throw missingLink(oldest.rootId, previousId);
      head = [root];
      omitted = Math.max(0, oldest.messagesBefore - root.messages.length);
    }
    const records = [...head, ...newestFirst.reverse()];
    return {
      previous,
      previousLinks,
      messages: records.flatMap((record) => record.messages),
      messageBytes: chainBytes(records),
      omitted,
      complete,
    };
  }

  /** The stored bytes of a chain's messages, in order, where its records hold them. */
  function chainBytes(records: readonly ReadChainRecord[]): Array<Buffer | undefined> {
    const bytes: Array<Buffer | undefined> = [];
    for (const record of records)
      if (record.messageBytes !== undefined) bytes.push(...record.messageBytes);
      else for (let index = 0; index < record.messages.length; index++) bytes.push(undefined);
    return bytes;
  }

  /** The window a chain is read against: the one stated by the request, or the model's. */
  function windowOf(input: Omit<ResponsesInput, 'warn' | 'info'>, model: string): number {
    return input.overrides.contextWindow ?? findModelEntry(config, model).window;
  }

  /** The bridged request as the chat service takes it: the chain's conversation, then this input. */
  async function chatRequestOf(input: Omit<ResponsesInput, 'warn' | 'info'>, bridged: BridgedRequest) {
    const { credential } = input;
    if ((bridged.store || bridged.previousResponseId !== undefined) && !credential.mayHoldSessions)
      throw new GatewayError(
        'session_requires_credential',
        'Stored responses and previous_response_id need a credential; send an API key, or store: false.',
        { param: 'store' },
      );
    // Checked before the provider is called (and bills): an answer that cannot be stored is not asked for.
    if (bridged.store && !store.available())
      throw new GatewayError(
        'session_store_unavailable',
        'The response store is unavailable; retry shortly, or send store: false.',
        { param: 'store' },
      );
    const model = String(bridged.chatFields.model);
    const chain = await chainOf(credential.tenantId, bridged.previousResponseId, windowOf(input, model));
    const noTruncation = bridged.truncation === 'disabled';
    if (noTruncation && !chain.complete)
      throw new GatewayError(
        'context_length_exceeded',
        `This model's maximum context length is ${windowOf(input, model)} tokens, and the conversation of previous_response_id does not fit it whole. Send truncation: "auto" to let ctxgate fit it.`,
        { param: 'input' },
      );
    const before = [...(bridged.instructions === undefined ? [] : [bridged.instructions]), ...chain.messages];
    const messages = [...before, ...bridged.messages];
    // Sessions are the chat API's; a response's state is its chain.
    const { sessionId: _ignored, ...overrides } = input.overrides;
    // The client's input items in its bytes: read once, for the upstream body and for the stored record.
    const clientInput = clientArray(input.rawBody, 'input', input.body);
    // Long instructions, and a long string input (one user message), as the client wrote them.
    const instructionsBytes = bodyStringBytes(
      input.rawBody,
      input.body,
      ['instructions'],
      bridged.instructions,
      ['content'],
    );
    const stringInput =
      clientInput === undefined && bridged.messages.length === 1 ? bridged.messages[0] : undefined;
    const inputBytes =
      stringInput === undefined
        ? undefined
        : bodyStringBytes(
            input.rawBody,
            input.body,
            ['input'],
            stringInput,
            typeof stringInput.content === 'string' ? ['content'] : ['content', 0, 'text'],
          );
    // A Chat Completions model whose template takes one system message, first, as the gateway's notices
    // tell (`notice_placement` not `inline`): instructions and developer messages made so. The messages
    // it keeps are the same objects: their bytes are still found below.
    const systemOnlyFirst =
      config.routing.upstreamFor(model).kind !== 'anthropic' &&
      findModelEntry(config, model).noticePlacement !== 'inline';
    return {
      chain,
      clientInput,
      chatInput: Object.assign({}, input, {
        // A thinking model's reasoning, given back, under the name its answers use.
        body: Object.assign({}, bridged.chatFields, {
          messages: reasoningNamed(
            systemOnlyFirst
              ? forStrictTemplate(messages as ContextMessage[])
              : (messages as ContextMessage[]),
            reasoningNames.of(model),
          ),
        }),
        rawBody: undefined,
        // The chat tools are the client's function tools, narrowed by an allowed_tools tool_choice.
        // Tools given in input items as well are not named by these two fields alone.
        toolsKey: bridged.toolsFromInput
          ? undefined
          : toolsKeyOf(clientInput, 'responses', ['tools', 'tool_choice']),
        // The chain's messages as the store holds them, then the client's input as it came.
        messageBytes: withLeadingBytes(
          messages as ContextMessage[],
          [
            ...(bridged.instructions === undefined ? [] : [instructionsBytes]),
            ...chain.messageBytes,
            ...(inputBytes === undefined ? [] : [inputBytes]),
          ],
          bridgedMessageBytes(clientInput, messages, before.length, bridged.sources),
        ),
        overrides: Object.assign(
          {},
          overrides,
          noTruncation ? { noTruncation: true } : {},
          chain.omitted > 0 ? { omittedBefore: chain.omitted } : {},
        ),
      }),
    };
  }

  /** A Responses request: bridged, its chain read, served by the chat engine, stored when asked. */
  async function serveBridged(
    input: ResponsesInput,
    client: ClientStream,
    bridged: Awaited<ReturnType<typeof bridgedOf>>,
    compacted = false,
  ): Promise<RequestOutcome> {
    const { chain, chatInput, clientInput } = await chatRequestOf(input, bridged);
    const answer = compacted
      ? compactedClient(
          client,
          userItemsOf(chain.messages as Array<Record<string, unknown>>, bridged.inputItems),
        )
      : client;
    const meta: ResponseMeta = {
      id: newId('resp'),
      createdAt: Math.floor(Date.now() / 1000),
      model: String(bridged.chatFields.model),
      echo: bridged.echo,
      tools: bridged.toolNames,
      ...(bridged.compaction ? { compaction: { stream: bridged.stream } } : {}),
    };
    const previous = chain.previous;
    const save = async (reply: Record<string, unknown>, response: Record<string, unknown>) => {
      reasoningNames.saw(meta.model, reasoningOf(reply)?.field);
      if (!bridged.store) return;
      const messages = [...bridged.messages, reply];
      const inputItems = bridged.inputItems.map((item, index) => ({
        id: inputItemId(meta.id, index),
        ...item,
      }));
      // Written from the client's bytes where they hold it: a record as large as its request costs a copy.
      // A text the messages hold is held by them only.
      const shared = sharedStrings(bridged, messages, inputItems, response);
      const held = heldOnce({ inputItems, response }, shared);
      const json = {
        messages: (before: string, after: string) =>
          jsonArrayBytes(messages, chatInput.messageBytes?.(messages as ContextMessage[]), before, after),
        inputItems: (before: string, after: string) =>
          jsonArrayBytes(
            held.inputItems,
            recordBytes(
              clientInput,
              held.inputItems,
              // An item held without its shared strings is no longer the client's: written anew.
              bridged.itemSources.origins.map((origin, index) =>
                held.inputItems[index] === inputItems[index] ? origin : -1,
              ),
              bridged.itemSources.fields,
            ),
            before,
            after,
          ),
        response: held.response,
        shared,
      };
      await store.put({
        id: meta.id,
        tenantId: input.credential.tenantId,
        previousId: previous?.id,
        rootId: previous?.rootId ?? meta.id,
        depth: (previous?.depth ?? 0) + 1,
        ancestors:
          previous === undefined ? [] : [previous.id, ...chain.previousLinks].slice(0, ancestorLinks),
        messagesBefore: previous === undefined ? 0 : previous.messagesBefore + previous.messages.length,
        messages,
        tokens: deps.countTokens(meta.model, messages, countPrecisionFor(input.countingBytes)),
        inputItems,
        response,
        json,
      });
    };
    return chat.complete(
      Object.assign({}, chatInput, { warn: input.warn, info: input.info }),
      responsesClient(answer, meta, save),
    );
  }

  return {
    async create(input, client) {
      return servedAsBridged({
        body: input.body,
        addHeaders: (headers) => client.addHeaders(headers),
        bridge: () => bridgedOf(input, input.body),
        serve: (bridged) => serveBridged(input, client, bridged),
      });
    },
    async compact(input, client) {
      const body = input.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new GatewayError('invalid_request', 'The request body must be a JSON object.', {
          param: 'body',
        });
      // The conversation, then the request to compact it: a request the bridge reads as any other.
      const given = (body as { input?: unknown }).input;
      const trigger = { type: 'compaction_trigger' };
      const items = Array.isArray(given)
        ? [...(given as unknown[]), trigger]
        : typeof given === 'string'
          ? [{ type: 'message', role: 'user', content: given }, trigger]
          : given === undefined || given === null
            ? [trigger]
            : given;
      const asked = Object.assign({}, body, { input: items, store: false, stream: false });
      return servedAsBridged({
        body: asked,
        addHeaders: (headers) => client.addHeaders(headers),
        bridge: () => bridgedOf(input, asked),
        serve: (bridged) => serveBridged(input, client, bridged, true),
      });
    },
    async retrieve(tenantId, id) {
      const record = await store.get(tenantId, id);
      if (record === undefined) throw notFound(id);
      return record.response;
    },

    async remove(tenantId, id) {
      if (!(await store.delete(tenantId, id))) throw notFound(id);
      return { id, object: 'response', deleted: true };
    },

    async inputItems(tenantId, id, { after, limit = 20, order = 'desc' }) {
      const record = await store.get(tenantId, id);
      if (record === undefined) throw notFound(id);
      const items = order === 'desc' ? [...record.inputItems].reverse() : record.inputItems;
      const start = after === undefined ? 0 : items.findIndex((item) => item.id === after) + 1;
      const data = items.slice(start, start + Math.min(Math.max(limit, 1), 100));
      return {
        object: 'list',
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: start + data.length < items.length,
      };
    },

    async chains(tenantId, { offset, limit }) {
      const page = await store.listChains(tenantId, { offset, limit });
      return {
        object: 'list',
        total: page.total,
        offset,
        limit,
        has_more: offset + page.chains.length < page.total,
        data: page.chains.map((chain) => ({
          object: 'response.chain',
          first_response_id: chain.rootId,
          last_response_id: chain.headId,
          responses: chain.depth,
          updated_at: Math.floor(chain.updatedAtMs / 1000),
        })),
      };
    },

    async inputTokens(input) {
      const bridged = await bridgedOf(input, Object.assign({}, input.body as object, { store: false }));
      const { chatInput } = await chatRequestOf(input, bridged);
      const { headers, outcome } = await chat.preview(chatInput);
      return {
        body: {
          object: 'response.input_tokens',
          input_tokens: Number(headers['x-context-input-tokens'] ?? 0),
        },
        outcome,
      };
    },
  };
}

/**
 * A compaction's Response answered as POST /v1/responses/compact answers (`response.compaction`): the
 * user's messages of the conversation, then its one compaction item.
 */
function compactedClient(client: ClientStream, userItems: InputItem[]): ClientStream {
  return {
    cancellation: client.cancellation,
    addHeaders: (headers) => client.addHeaders(headers),
    destroy: () => client.destroy(),
    openStream: (status, headers) => client.openStream(status, headers),
    write: (bytes) => client.write(bytes),
    end: (last) => client.end(last),
    async sendWhole(status, headers, body) {
      if (status >= 300) return client.sendWhole(status, headers, body);
      const response = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
      const compacted = {
        id: response.id,
        object: 'response.compaction',
        created_at: response.created_at,
        output: [...userItems, ...(response.output as InputItem[])],
        usage: response.usage,
      };
      return client.sendWhole(status, headers, Buffer.from(JSON.stringify(compacted)));
    },
  };
}

/** The gateway's count of the prompt it sent (its `x-context-input-tokens`); undefined without one. */
function countedPrompt(headers: Record<string, string | string[] | number | undefined>): number | undefined {
  const counted = Number(headers['x-context-input-tokens']);
  return Number.isFinite(counted) && counted > 0 ? counted : undefined;
}

/**
 * The ClientStream the chat service answers into: a whole chat completion becomes a Response object,
 * a chat stream becomes the Responses event sequence; the response is stored before its last event.
 */
function responsesClient(
  client: ClientStream,
  meta: ResponseMeta,
  save: (reply: Record<string, unknown>, response: Record<string, unknown>) => Promise<void>,
): ClientStream {
  const translator = new ResponsesStreamTranslator(meta);
  return {
    cancellation: client.cancellation,
    addHeaders: (headers) => client.addHeaders(headers),
    destroy: () => client.destroy(),
    async sendWhole(status, headers, body) {
      if (status >= 300) return client.sendWhole(status, headers, body);
      const completion = JSON.parse(body.toString('utf8')) as {
        choices?: Array<{ message?: Record<string, unknown>; finish_reason?: unknown }>;
        usage?: { prompt_tokens?: number; completion_tokens?: number };
      };
      // An answer that failed as it was generated is no Response: the client is told so.
      const failed = reportedFailureOf(completion);
      // Thrown: the route answers it in its API's shape, and the request line names its code.
      if (failed !== undefined) throw failed;
      const choice = completion.choices?.[0];
      const reply = choice?.message ?? { role: 'assistant', content: '' };
      // What the model wrote after any thinking (its chunks', or a <think> block left in its text).
      const summary =
        meta.compaction === undefined ? undefined : withoutThinking(chunkTexts(reply.content).text);
      if (summary === '') {
        const error = new GatewayError(
          'upstream_bad_response',
          'The model wrote no summary to compact the conversation with.',
        );
        return client.sendWhole(error.status, headers, Buffer.from(JSON.stringify(toOpenAIErrorBody(error))));
      }
      const output: InputItem[] =
        summary === undefined ? outputItemsOf(reply, meta.tools) : [compactionItemOf(newId('cmp'), summary)];
      const response = responseObject(
        meta,
        output,
        choice?.finish_reason,
        // A provider that reports none: the gateway's count of the prompt it sent, not 0.
        usageOf(responseUsageCounts(completion.usage, countedPrompt(headers))),
      );
      await save(reply, response);
      if (meta.compaction?.stream === true) {
        // Asked for as a stream, read whole: its events all at once.
        client.openStream(
          status,
          Object.assign({}, headers, { 'content-type': 'text/event-stream; charset=utf-8' }),
        );
        return client.end(wholeResponseEvents(meta, response));
      }
      await client.sendWhole(
        status,
        Object.assign({}, headers, { 'content-type': 'application/json' }),
        Buffer.from(JSON.stringify(response)),
      );
    },
    openStream(status, headers) {
      translator.countedPrompt = countedPrompt(headers);
      client.openStream(
        status,
        Object.assign({}, headers, { 'content-type': 'text/event-stream; charset=utf-8' }),
      );
      void client.write(translator.start());
    },
    write(bytes) {
      const events = translator.push(bytes);
      return events === '' ? undefined : client.write(events);
    },
    end(last) {
      const tail = last === undefined ? '' : translator.push(last);
      if (!translator.succeeded) return client.end(tail + translator.finish().events);
      const { events, response } = translator.finish();
      // Stored before its last event; one that could not be stored is not reported completed.
      void save(translator.reply(), response).then(
        () => client.end(tail + events),
        () =>
          client.end(
            tail + translator.fail('session_store_unavailable', 'The response could not be stored; retry.'),
          ),
      );
    },
  };
}
