// The Responses API on top of the chat service: a request is bridged into a chat request carrying its
// chain's whole conversation (previous_response_id: every earlier input and output), run through the
// same engine as any chat request — render-time fitting, reactive recovery, fallbacks, budgets — and
// its answer translated back (whole, or event by event) and stored under the caller's tenant.
import type { ChatInput, ChatService } from '../chat/chat-turn.js';
import type { ClientStream } from '../chat/relay.js';
import { GatewayError } from '../errors.js';
import type { ResponseStore, StoredResponse } from '../store/response-store.js';
import {
  bridgeRequest,
  newId,
  outputItemsOf,
  responseObject,
  usageOf,
  type BridgedRequest,
  type InputItem,
  type ResponseMeta,
} from './bridge.js';
import { ResponsesStreamTranslator } from './stream-translator.js';

export type ResponsesInput = Omit<ChatInput, 'body'> & { body: unknown };

export interface ResponsesService {
  create(input: ResponsesInput, client: ClientStream): Promise<void>;
  retrieve(tenantId: string, id: string): Promise<Record<string, unknown>>;
  remove(tenantId: string, id: string): Promise<Record<string, unknown>>;
  inputItems(
    tenantId: string,
    id: string,
    page: { after?: string | undefined; limit?: number | undefined; order?: 'asc' | 'desc' | undefined },
  ): Promise<Record<string, unknown>>;
  inputTokens(input: Omit<ResponsesInput, 'warn' | 'info'>): Promise<Record<string, unknown>>;
}

const notFound = (id: string) =>
  new GatewayError('not_found', `Response with id '${id}' not found.`, { param: 'response_id' });

export function createResponsesService(deps: { chat: ChatService; store: ResponseStore }): ResponsesService {
  const { chat, store } = deps;

  /** The chain a request continues: the ids before it and the conversation they hold. */
  async function chainOf(tenantId: string, previousId: string | undefined) {
    if (previousId === undefined)
      return { ids: [] as string[], messages: [] as Array<Record<string, unknown>> };
    const [previous] = await store.getMany(tenantId, [previousId]);
    if (previous === undefined)
      throw new GatewayError('not_found', `Previous response with id '${previousId}' not found.`, {
        param: 'previous_response_id',
      });
    const ids = [...previous.chain, previous.id];
    const records = await store.getMany(tenantId, previous.chain);
    const missing = previous.chain.find((_id, index) => records[index] === undefined);
    if (missing !== undefined)
      throw new GatewayError(
        'not_found',
        `Response '${missing}', earlier in the chain of '${previousId}', is gone (deleted or expired).`,
        { param: 'previous_response_id' },
      );
    const messages = [...(records as StoredResponse[]), previous].flatMap((record) => record.messages);
    return { ids, messages };
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
    const chain = await chainOf(credential.tenantId, bridged.previousResponseId);
    const messages = [
      ...(bridged.instructions === undefined ? [] : [bridged.instructions]),
      ...chain.messages,
      ...bridged.messages,
    ];
    // Sessions are the chat API's; a response's state is its chain.
    const { sessionId: _ignored, ...overrides } = input.overrides;
    return {
      chain,
      chatInput: {
        ...input,
        body: { ...bridged.chatFields, messages },
        rawBody: undefined,
        overrides: { ...overrides, ...(bridged.truncation === 'disabled' ? { noTruncation: true } : {}) },
      },
    };
  }

  return {
    async create(input, client) {
      const bridged = bridgeRequest(input.body);
      const { chain, chatInput } = await chatRequestOf(input, bridged);
      const meta: ResponseMeta = {
        id: newId('resp'),
        createdAt: Math.floor(Date.now() / 1000),
        model: String(bridged.chatFields.model),
        echo: bridged.echo,
      };
      const save = async (reply: Record<string, unknown>, response: Record<string, unknown>) => {
        if (!bridged.store) return;
        await store
          .put({
            id: meta.id,
            tenantId: input.credential.tenantId,
            chain: chain.ids,
            messages: [...bridged.messages, reply],
            inputItems: bridged.inputItems.map((item) => ({ id: newId('msg'), ...item })),
            response,
          })
          .catch((error: unknown) =>
            input.warn({ err: { message: (error as Error).message } }, 'the response could not be stored'),
          );
      };
      await chat.complete(
        { ...chatInput, warn: input.warn, info: input.info },
        responsesClient(client, meta, save),
      );
    },

    async retrieve(tenantId, id) {
      const [record] = await store.getMany(tenantId, [id]);
      if (record === undefined) throw notFound(id);
      return record.response;
    },

    async remove(tenantId, id) {
      if (!(await store.delete(tenantId, id))) throw notFound(id);
      return { id, object: 'response', deleted: true };
    },

    async inputItems(tenantId, id, { after, limit = 20, order = 'desc' }) {
      const [record] = await store.getMany(tenantId, [id]);
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

    async inputTokens(input) {
      const bridged = bridgeRequest({ ...(input.body as object), store: false });
      const { chatInput } = await chatRequestOf(input, bridged);
      const { headers } = await chat.preview(chatInput);
      return {
        object: 'response.input_tokens',
        input_tokens: Number(headers['x-context-input-tokens'] ?? 0),
      };
    },
  };
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
      const choice = completion.choices?.[0];
      const reply = choice?.message ?? { role: 'assistant', content: '' };
      const output: InputItem[] = outputItemsOf(reply);
      const response = responseObject(
        meta,
        output,
        choice?.finish_reason,
        usageOf({
          promptTokens: completion.usage?.prompt_tokens,
          completionTokens: completion.usage?.completion_tokens,
        }),
      );
      await save(reply, response);
      await client.sendWhole(
        status,
        { ...headers, 'content-type': 'application/json' },
        Buffer.from(JSON.stringify(response)),
      );
    },
    openStream(status, headers) {
      client.openStream(status, { ...headers, 'content-type': 'text/event-stream; charset=utf-8' });
      void client.write(translator.start());
    },
    write(bytes) {
      const events = translator.push(bytes);
      return events === '' ? undefined : client.write(events);
    },
    end(last) {
      const tail = last === undefined ? '' : translator.push(last);
      const { events, response } = translator.finish();
      const done = (): void => client.end(tail + events);
      if (!translator.succeeded) return done();
      void save(translator.reply(), response).then(done, done);
    },
  };
}
