// POST /v1/messages and /v1/messages/count_tokens (docs/anthropic.md): a Messages request bridged into
// the chat request it stands for and run through the same engine as any chat request — fitting,
// sessions, budgets, recovery, fallbacks — then answered in Anthropic's wire format. To an `anthropic`
// upstream the engine's request goes natively (upstream/anthropic-wire.ts); to any other it goes as
// Chat Completions.
import { EventEmitter } from 'node:events';
import type { ChatInput, ChatService } from '../chat/chat-turn.js';
import { anthropicHeaders, toAnthropicRequest } from '../upstream/anthropic-wire.js';
import { buildUpstreamHeaders } from '../upstream/forward-headers.js';
import { fixesForKey, withAnthropicFixes, withBetaFixes, type FieldFixes } from '../upstream/field-fixes.js';
import type { Upstream } from '../upstream/upstream.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { servedAsBridged, type RequestOutcome } from '../chat/request-outcome.js';
import { reportedFailureOf, type ClientStream } from '../upstream/relay.js';
import {
  compactionMessageOf,
  messageEvents,
  messageOf,
  MessagesStreamTranslator,
  newMessageId,
  toAnthropicErrorBody,
} from './answer.js';
import { bridgeMessagesRequest, type BridgedMessages } from './bridge.js';
import {
  bodyStringBytes,
  bridgedMessageBytes,
  clientArray,
  toolsKeyOf,
  withLeadingBytes,
} from '../chat/chat-body.js';
import type { ContextMessage } from '../context/types.js';
import { forStrictTemplate } from '../context/notice-placement.js';
import {
  createReasoningNames,
  reasoningNamed,
  reasoningOf,
  type ReasoningField,
} from '../upstream/reasoning-field.js';
import { anthropicBodyWriter } from './native-body.js';

export type MessagesInput = Omit<ChatInput, 'body'> & { body: unknown };

export interface MessagesService {
  /** What was done (request-outcome.ts), on the error when it failed. */
  create(input: MessagesInput, client: ClientStream): Promise<RequestOutcome>;
  /** The body to answer, and what the request would do for its log line. */
  countTokens(
    input: Omit<MessagesInput, 'warn' | 'info'>,
  ): Promise<{ body: { input_tokens: number }; outcome: RequestOutcome }>;
}

export function createMessagesService(deps: {
  chat: ChatService;
  config: GatewayConfig;
  /** For count_tokens on an `anthropic` upstream: the provider counts what would be sent. */
  upstream: Upstream;
  /** What each model refused (its `anthropic-beta` flags, members): left out of what it is asked to count. */
  fieldFixes: FieldFixes;
}): MessagesService {
  const { chat, config } = deps;
  /** The name each model's answers give their reasoning (reasoning-field.ts). */
  const reasoningNames = createReasoningNames();

  /**
   * The provider's own count of the messages the engine would send (an `anthropic` upstream's
   * count_tokens), or undefined when it cannot say (the gateway's estimate answers then).
   */
  async function providerCount(
    input: Omit<MessagesInput, 'warn' | 'info'>,
    request: BridgedMessages,
    messages: unknown,
  ): Promise<number | undefined> {
    const target = config.routing.upstreamFor(request.model);
    const fixes = fixesForKey(
      (upstream, model) => deps.fieldFixes.fixesFor(upstream, model),
      target,
      input.credential.tenantId,
      request.model,
    );
    const { max_tokens: _unused, ...body } = toAnthropicRequest(
      Object.assign({}, withAnthropicFixes(request.chatBody, fixes), { messages }),
    );
    const signal = new EventEmitter();
    const timer = setTimeout(() => signal.emit('abort'), config.timeouts.upstream_first_byte_ms);
    try {
      const response = await deps.upstream.send({
        upstream: target,
        method: 'POST',
        path: '/messages/count_tokens',
        headers: anthropicHeaders(
          withBetaFixes(buildUpstreamHeaders(input.clientHeaders, target, input.credential), fixes),
          target,
        ),
        body: JSON.stringify(body),
        signal,
      });
      const text = (await response.readAll()).toString('utf8');
      if (response.statusCode !== 200) return undefined;
      const counted = (JSON.parse(text) as { input_tokens?: unknown }).input_tokens;
      return typeof counted === 'number' && Number.isFinite(counted) ? counted : undefined;
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  function bridged(input: Omit<MessagesInput, 'warn' | 'info'>, requireMaxTokens: boolean): BridgedMessages {
    const model = (input.body as { model?: unknown } | null)?.model;
    const named = typeof model === 'string' && model !== '';
    const native = named && config.routing.upstreamFor(model).kind === 'anthropic';
    return bridgeMessagesRequest(input.body, {
      native,
      // Claude served through a Chat Completions endpoint caches only up to the marks it is given.
      cacheMarks: named && !native && /claude/i.test(model),
      requireMaxTokens,
      maxMessages: config.server.max_messages,
    });
  }

  /** The chat input: an Anthropic key (x-api-key) reaches a Chat Completions upstream as a bearer token. */
  function chatInputOf(input: Omit<MessagesInput, 'warn' | 'info'>, request: BridgedMessages) {
    const headers = Object.assign({}, input.clientHeaders);
    const key = headers['x-api-key'];
    if (!request.native && headers.authorization === undefined && typeof key === 'string') {
      headers.authorization = `Bearer ${key}`;
      delete headers['x-api-key'];
    }
    const messages = request.chatBody.messages as unknown[];
    const clientMessages = clientArray(input.rawBody, 'messages', input.body);
    const rest = bridgedMessageBytes(clientMessages, messages, 0, request.sources);
    // The system prompt as the client wrote it, when it is one string (or one text block); natively,
    // anthropicBody copies it.
    const system = (input.body as { system?: unknown }).system;
    const first = messages[0] as { role?: unknown } | undefined;
    const systemBytes =
      request.native || first?.role !== 'system' || request.sources.origins[0] !== -1
        ? undefined
        : bodyStringBytes(
            input.rawBody,
            input.body,
            typeof system === 'string' ? ['system'] : ['system', 0, 'text'],
            first,
            ['content'],
          );
    // A model whose template takes one system message, first (its `notice_placement` is not `inline`)
    // has the client's later ones in its user messages, as it has the gateway's notices. The messages
    // left as they were are the same objects: their bytes are still found.
    const systemOnlyFirst =
      !request.native && config.routing.entryFor(request.model).noticePlacement !== 'inline';
    return Object.assign({}, input, {
      clientHeaders: headers,
      // A thinking model's reasoning, given back, under the name its answers use.
      body: request.native
        ? request.chatBody
        : Object.assign({}, request.chatBody, {
            messages: reasoningNamed(
              systemOnlyFirst
                ? forStrictTemplate(messages as ContextMessage[])
                : (messages as ContextMessage[]),
              reasoningNames.of(request.model),
            ),
          }),
      rawBody: undefined,
      messageBytes: withLeadingBytes(messages as ContextMessage[], [systemBytes], rest),
      anthropicBody:
        request.native && clientMessages !== undefined
          ? anthropicBodyWriter(clientMessages, input.body as Record<string, unknown>)
          : undefined,
      // The chat tools are made of the client's `tools` (its function tools), and, when one is deferred,
      // of the tools its messages reference: those alone are counted.
      toolsKey: withReferences(toolsKeyOf(clientMessages, 'messages', ['tools']), request.referencedTools),
    });
  }

  return {
    async create(input, client) {
      return servedAsBridged({
        body: input.body,
        addHeaders: (headers) => client.addHeaders(headers),
        bridge: () => bridged(input, true),
        serve: (request) =>
          chat.complete(
            Object.assign({}, chatInputOf(input, request), { warn: input.warn, info: input.info }),
            messagesClient(
              client,
              { id: newMessageId(), model: request.model },
              (field) => reasoningNames.saw(request.model, field),
              request.compaction && { stream: request.stream },
            ),
          ),
      });
    },

    async countTokens(input) {
      const request = bridged(input, false);
      const { headers, body, outcome } = await chat.preview(chatInputOf(input, request));
      const counted = request.native ? await providerCount(input, request, body.messages) : undefined;
      return { body: { input_tokens: counted ?? Number(headers['x-context-input-tokens'] ?? 0) }, outcome };
    },
  };
}

/** A tools key (chat-body.ts toolsKeyOf) that names the referenced tools too, when some are deferred. */
function withReferences(
  key: string | undefined,
  referenced: readonly string[] | undefined,
): string | undefined {
  return key === undefined || referenced === undefined ? key : [key, ...referenced].join('\u0000');
}

/**
 * The ClientStream the chat engine answers into, answering the client in Anthropic's format; `answered`
 * hears the name the answer gave its reasoning.
 */
function messagesClient(
  client: ClientStream,
  meta: { id: string; model: string },
  answered: (field: ReasoningField | undefined) => void,
  /** A compaction asked for (bridge.ts), and whether as a stream: its answer is read whole. */
  compaction: { stream: boolean } | undefined,
): ClientStream {
  let translator: MessagesStreamTranslator | undefined;
  return {
    cancellation: client.cancellation,
    addHeaders: (headers) => client.addHeaders(headers),
    destroy: () => client.destroy(),
    async sendWhole(status, headers, body) {
      const completion =
        status >= 300 ? undefined : (JSON.parse(body.toString('utf8')) as Record<string, unknown>);
      // An answer that failed as it was generated is no message: the client is told so.
      const failed = completion === undefined ? undefined : reportedFailureOf(completion);
      // Thrown: the route answers it in its API's shape, and the request line names its code.
      if (failed !== undefined) throw failed;
      const message = completion === undefined ? undefined : messageOf(completion, meta);
      const answer =
        message === undefined
          ? toAnthropicErrorBody(status, body)
          : compaction === undefined
            ? message
            : compactionMessageOf(message);
      const choices = completion?.choices as Array<{ message?: Record<string, unknown> }> | undefined;
      answered(reasoningOf(choices?.[0]?.message)?.field);
      if (compaction?.stream === true && message !== undefined) {
        // Asked for as a stream, read whole: its events all at once.
        client.openStream(
          status,
          Object.assign({}, headers, { 'content-type': 'text/event-stream; charset=utf-8' }),
        );
        return client.end(messageEvents(answer));
      }
      await client.sendWhole(
        status,
        Object.assign({}, headers, { 'content-type': 'application/json' }),
        Buffer.from(JSON.stringify(answer)),
      );
    },
    openStream(status, headers) {
      const inputTokens = Number(headers['x-context-input-tokens'] ?? 0);
      translator = new MessagesStreamTranslator(meta, Number.isFinite(inputTokens) ? inputTokens : 0);
      client.openStream(
        status,
        Object.assign({}, headers, { 'content-type': 'text/event-stream; charset=utf-8' }),
      );
      void client.write(translator.start());
    },
    write(bytes) {
      const events = translator?.push(bytes) ?? '';
      return events === '' ? undefined : client.write(events);
    },
    end(last) {
      const tail = last === undefined || translator === undefined ? '' : translator.push(last);
      answered(translator?.reasoningField);
      client.end(tail + (translator?.end() ?? ''));
    },
  };
}
