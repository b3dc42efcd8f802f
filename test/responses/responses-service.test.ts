// The Responses service over a store it is given: a chain is read in batches, only as far as the
// model's window reaches plus its first response, and what lies between is counted as omitted; a
// record keeps links, never its whole chain; a request that would be stored is refused before the
// provider is called while the store cannot take it. The chat engine is replaced by one that answers
// at once and records what it was asked (the engine itself is tested on its own).
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { describe, expect, inject, it } from 'vitest';
import type { ContextMessage } from '../../src/context/types.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import type { ChatInput, ChatService } from '../../src/chat/chat-turn.js';
import { noOverrides } from '../../src/context/request-overrides.js';
import type { ClientStream } from '../../src/upstream/relay.js';
import { loadConfig } from '../../src/config/load-config.js';
import { isGatewayError } from '../../src/errors.js';
import { createResponsesService } from '../../src/responses/responses-service.js';
import {
  ancestorLinks,
  createMemoryResponseStore,
  createRedisResponseStore,
  type ResponseStore,
} from '../../src/store/response-store.js';
import { readCompactionCarrier } from '../../src/upstream/carried-state.js';
import { knownBytesText } from '../helpers/known-bytes.js';
import { sseEventData } from '../helpers/sse-events.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const config = loadConfig({
  env: {
    CTXGATE_CONFIG: writeConfigFile(
      'models:\n  - { match: small-model, window: 2000, output_reserve: 100 }\n',
    ),
  },
});

/** The service over an in-process store, its engine `chat`, every prompt counted 40. */
const memoryService = (chat: ChatService) =>
  createResponsesService({
    chat,
    store: createMemoryResponseStore({ ttlSeconds: 60 }),
    config,
    countTokens: () => 40,
  });

/** A chat engine that answers every request with one short reply and keeps what it was asked. */
function answeringChat(
  contentOf: (count: number) => unknown = (count) => `answer ${count}`,
): ChatService & { asked: ChatInput[] } {
  const asked: ChatInput[] = [];
  return {
    asked,
    async complete(input, client) {
      asked.push(input);
      const completion = {
        choices: [
          { message: { role: 'assistant', content: contentOf(asked.length) }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 2 },
      };
      await client.sendWhole(200, {}, Buffer.from(JSON.stringify(completion)));
      return { model: String((input.body as { model?: unknown }).model) };
    },
    async preview() {
      return { headers: {}, body: {}, outcome: {} };
    },
  };
}

function client(): ClientStream & { bodies: Buffer[]; statuses: number[] } {
  const bodies: Buffer[] = [];
  const statuses: number[] = [];
  return {
    bodies,
    statuses,
    cancellation: Object.assign(new EventEmitter(), { aborted: false }),
    addHeaders() {},
    async sendWhole(status, _headers, body) {
      statuses.push(status);
      bodies.push(body);
    },
    openStream() {},
    write: () => undefined,
    end() {},
    destroy() {},
  } as ClientStream & { bodies: Buffer[]; statuses: number[] };
}

/** The store, with every id it was asked for counted. */
function countingStore(store: ResponseStore): ResponseStore & { readIds: string[]; reads: number } {
  const counted = {
    readIds: [] as string[],
    reads: 0,
    put: (record: Parameters<ResponseStore['put']>[0]) => store.put(record),
    async readChain(tenantId: string, ids: readonly string[], linksOf?: string) {
      counted.reads++;
      counted.readIds.push(...ids);
      return store.readChain(tenantId, ids, linksOf);
    },
    get: (tenantId: string, id: string) => store.get(tenantId, id),
    findItems: (tenantId: string, ids: readonly string[]) => store.findItems(tenantId, ids),
    delete: (tenantId: string, id: string) => store.delete(tenantId, id),
    listChains: (tenantId: string, page: { offset: number; limit: number }) =>
      store.listChains(tenantId, page),
    available: () => store.available(),
  };
  return counted;
}

const credential = { mode: 'pass_through' as const, tenantId: 'pt-tenant', mayHoldSessions: true };

function request(body: Record<string, unknown>) {
  return {
    body,
    rawBody: Buffer.from(JSON.stringify(body)),
    countingBytes: Buffer.byteLength(JSON.stringify(body)),
    overrides: noOverrides,
    credential,
    clientHeaders: {},
    startedAtMs: 0,
    warn: () => undefined,
    info: () => undefined,
  };
}

/** Builds a chain of `length` responses, each turn about 40 tokens, and returns the last one's id. */
async function chainOf(length: number, store: ResponseStore, chat = answeringChat()): Promise<string> {
  const service = createResponsesService({ chat, store, config, countTokens: () => 40 });
  let previous: string | undefined;
  for (let turn = 0; turn < length; turn++) {
    const answer = client();
    await service.create(
      request({
        model: 'small-model',
        input: `turn ${turn}`,
        truncation: 'auto',
        ...(previous === undefined ? {} : { previous_response_id: previous }),
      }),
      answer,
    );
    previous = (JSON.parse((answer.bodies[0] as Buffer).toString()) as { id: string }).id;
  }
  return previous as string;
}

describe('reading a chain', () => {
  it('reads only as far as the window reaches, plus the first response, and counts what lies between', async () => {
    const memory = createMemoryResponseStore({ ttlSeconds: 3_600 });
    const last = await chainOf(300, memory);
    const store = countingStore(memory);
    const chat = answeringChat();
    const service = createResponsesService({ chat, store, config, countTokens: () => 40 });
    await service.create(
      request({ model: 'small-model', input: 'and now?', previous_response_id: last, truncation: 'auto' }),
      client(),
    );
    const asked = chat.asked[0] as ChatInput;
    // The client's Responses bytes never go upstream as a chat body.
    expect(asked.rawBody).toBeUndefined();
    const messages = (asked.body as { messages: Array<{ role: string; content: unknown }> }).messages;
    // The window (2,000 tokens) holds 50 turns of 40: 51 read, the first response read on its own.
    const turnsRead = (messages.length - 1) / 2;
    expect(turnsRead).toBe(52);
    expect(messages[0]).toMatchObject({ role: 'user' });
    expect(JSON.stringify(messages[0])).toContain('turn 0');
    expect(JSON.stringify(messages[2])).toContain('turn 249');
    expect(JSON.stringify(messages.at(-3))).toContain('turn 299');
    // 300 turns of two messages: the first and the last 51 sent, the 248 between omitted.
    expect(asked.overrides.omittedBefore).toBe(2 * 248);
    expect(store.readIds.length).toBeLessThanOrEqual(52 + ancestorLinks);
    expect(store.reads).toBeLessThanOrEqual(Math.ceil(52 / ancestorLinks) + 2);
  });

  it('reads a short chain whole, with nothing omitted', async () => {
    const memory = createMemoryResponseStore({ ttlSeconds: 3_600 });
    const last = await chainOf(5, memory);
    const chat = answeringChat();
    const service = createResponsesService({ chat, store: memory, config, countTokens: () => 40 });
    await service.create(
      request({ model: 'small-model', input: 'and now?', previous_response_id: last, truncation: 'auto' }),
      client(),
    );
    const asked = chat.asked[0] as ChatInput;
    expect((asked.body as { messages: unknown[] }).messages).toHaveLength(11);
    expect(asked.overrides.omittedBefore).toBeUndefined();
  });

  it('keeps links in each record, never the whole chain', async () => {
    const memory = createMemoryResponseStore({ ttlSeconds: 3_600 });
    const last = await chainOf(150, memory);
    const record = await memory.get('pt-tenant', last);
    expect(record?.depth).toBe(150);
    expect(record?.ancestors).toHaveLength(ancestorLinks);
    expect(record?.messagesBefore).toBe(2 * 149);
    expect(record?.tokens).toBe(40);
  });

  it('refuses a chain that cannot be sent whole when truncation is disabled', async () => {
    const memory = createMemoryResponseStore({ ttlSeconds: 3_600 });
    const last = await chainOf(100, memory);
    const service = createResponsesService({
      chat: answeringChat(),
      store: memory,
      config,
      countTokens: () => 40,
    });
    await expect(
      service.create(
        request({ model: 'small-model', input: 'x', previous_response_id: last, truncation: 'disabled' }),
        client(),
      ),
    ).rejects.toMatchObject({ code: 'context_length_exceeded' });
  });
});

describe('storing', () => {
  it.each<[string, number, string]>([
    ['a body of a few bytes', 200, 'exact'],
    ['a body over 4 MB', 5 * 1024 * 1024, 'sampled'],
  ])(
    "counts a stored response's tokens as its prompt was counted: %s",
    async (_name, countingBytes, expected) => {
      const precisions: string[] = [];
      const chat = answeringChat();
      const service = createResponsesService({
        chat,
        store: createMemoryResponseStore({ ttlSeconds: 3_600 }),
        config,
        countTokens: (_model, _messages, precision) => {
          precisions.push(precision);
          return 40;
        },
      });
      await service.create(
        Object.assign(request({ model: 'small-model', input: 'x' }), { countingBytes }),
        client(),
      );
      expect(precisions).toEqual([expected]);
      // The chat engine is told the client's body size: it counts the prompt the same way.
      expect(chat.asked[0]?.countingBytes).toBe(countingBytes);
    },
  );

  it('refuses store: true while the store cannot take a write, before the provider is asked', async () => {
    const memory = createMemoryResponseStore({ ttlSeconds: 3_600 });
    const down: ResponseStore = { ...memory, available: () => false };
    const chat = answeringChat();
    const service = createResponsesService({ chat, store: down, config, countTokens: () => 40 });
    await expect(
      service.create(request({ model: 'small-model', input: 'x' }), client()),
    ).rejects.toMatchObject({
      code: 'session_store_unavailable',
    });
    expect(chat.asked).toHaveLength(0);
    // store: false needs no store.
    await service.create(request({ model: 'small-model', input: 'x', store: false }), client());
    expect(chat.asked).toHaveLength(1);
  });

  it('answers an error, not the response, when storing it fails after the answer', async () => {
    const memory = createMemoryResponseStore({ ttlSeconds: 3_600 });
    const failing: ResponseStore = {
      ...memory,
      put: async () => {
        throw Object.assign(new Error('store down'), {
          name: 'GatewayError',
          code: 'session_store_unavailable',
        });
      },
    };
    const service = createResponsesService({
      chat: answeringChat(),
      store: failing,
      config,
      countTokens: () => 40,
    });
    const answer = client();
    await expect(service.create(request({ model: 'small-model', input: 'x' }), answer)).rejects.toThrow(
      'store down',
    );
    expect(answer.statuses).toEqual([]);
  });
});

describe('continuing a chain stored in Redis', () => {
  it('gives the chat engine each stored message’s bytes, aligned with the messages, the instructions apart', async () => {
    const redis = createRedisConnection({ mode: 'standalone', url: inject('redisUrl') });
    for (let attempt = 0; attempt < 100 && redis.status !== 'ready'; attempt++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    try {
      const store = createRedisResponseStore({ redis, ttlSeconds: 60 });
      const tenant = `tenant-${randomUUID()}`;
      const chat = answeringChat();
      const service = createResponsesService({ chat, store, config, countTokens: () => 40 });
      let previous: string | undefined;
      // Questions long enough for their bytes to be kept (short ones are written anew).
      for (const text of ['Café?', 'And the “menu”?', 'Thanks.'].map(
        (question) => `${question} ${'More detail. '.repeat(100)}`,
      )) {
        const answer = client();
        await service.create(
          Object.assign(
            request({
              model: 'small-model',
              input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }],
              ...(previous === undefined ? {} : { previous_response_id: previous }),
            }),
            { credential: Object.assign({}, credential, { tenantId: tenant }) },
          ),
          answer,
        );
        previous = (JSON.parse((answer.bodies[0] as Buffer).toString()) as { id: string }).id;
      }
      await service.create(
        Object.assign(
          request({
            model: 'small-model',
            instructions: 'Be brief.',
            input: 'And now?',
            previous_response_id: previous,
          }),
          { credential: Object.assign({}, credential, { tenantId: tenant }) },
        ),
        client(),
      );
      const asked = chat.asked.at(-1) as ChatInput;
      const messages = (asked.body as { messages: ContextMessage[] }).messages;
      const known = asked.messageBytes?.(messages) ?? [];
      // Instructions, three turns of a question and an answer, the new input.
      expect(messages.map((message) => message.role)).toEqual([
        'system',
        ...Array<string[]>(3).fill(['user', 'assistant']).flat(),
        'user',
      ]);
      expect(known.map((bytes) => bytes !== undefined)).toEqual([
        false,
        ...Array<boolean>(6).fill(true),
        false,
      ]);
      known.forEach((bytes, index) => {
        if (bytes !== undefined) expect(JSON.parse(String(bytes))).toEqual(messages[index]);
      });
    } finally {
      redis.disconnect();
    }
  });
});

describe('the client’s bytes of what the bridge makes of its strings', () => {
  it('gives long instructions and a long string input in the client’s own bytes, short ones none', async () => {
    const instructions = `You are a coding agent; paths look like src/a.ts. ${'Follow the rules. '.repeat(80)}`;
    const input = `Fix the “bug” in src/b.ts. ${'Context line. '.repeat(90)}`;
    // The client spells '/' as '\/' and 'é' as '\u00e9': bytes copied keep its spelling.
    const spelled = (text: string) => JSON.stringify(text).replaceAll('/', '\\/').replaceAll('“', '\\u201c');
    const rawBody = Buffer.from(
      ` {"model":"small-model","instructions":${spelled(instructions)},"input":${spelled(input)},"store":false}`,
    );
    const body = JSON.parse(rawBody.toString()) as Record<string, unknown>;
    expect(body.instructions).toBe(instructions);
    const chat = answeringChat();
    const service = memoryService(chat);
    await service.create(Object.assign(request(body), { rawBody }), client());
    const asked = chat.asked[0] as ChatInput;
    const messages = (asked.body as { messages: ContextMessage[] }).messages;
    expect(messages).toEqual([
      { role: 'system', content: instructions },
      { role: 'user', content: [{ type: 'text', text: input }] },
    ]);
    const known = (asked.messageBytes?.(messages) ?? []).map(knownBytesText);
    expect(known).toHaveLength(2);
    known.forEach((text, index) => {
      expect(JSON.parse(text as string)).toEqual(messages[index]);
    });
    expect(known[0]).toContain(spelled(instructions));
    expect(known[1]).toContain(spelled(input));

    // Under 1,024 characters: written anew.
    const short = answeringChat();
    await memoryService(short).create(
      request({ model: 'small-model', instructions: 'Be brief.', input: 'Hi', store: false }),
      client(),
    );
    const shortAsked = short.asked[0] as ChatInput;
    const shortMessages = (shortAsked.body as { messages: ContextMessage[] }).messages;
    expect(shortAsked.messageBytes?.(shortMessages) ?? []).toEqual([]);
  });
});

describe('the name of a request’s tool set', () => {
  it('names two requests’ tools alike only when the engine gets the same tools', async () => {
    const tool = (name: string) => ({ type: 'function', name, parameters: { type: 'object' } });
    const allowed = (...names: string[]) => ({
      type: 'allowed_tools',
      mode: 'auto',
      tools: names.map((name) => ({ type: 'function', name })),
    });
    const base = { model: 'small-model', input: [{ role: 'user', content: 'Hi' }], store: false };
    const bodies = [
      { ...base, tools: [tool('read'), tool('write')] },
      { ...base, tools: [tool('read'), tool('write')], input: [{ role: 'user', content: 'Go on' }] },
      { ...base, tools: [tool('read'), tool('write')], tool_choice: 'auto' },
      // allowed_tools narrows the tools the engine gets.
      { ...base, tools: [tool('read'), tool('write')], tool_choice: allowed('read') },
      { ...base, tools: [tool('read'), tool('write')], tool_choice: allowed('read', 'write') },
      { ...base, tools: [tool('read')] },
    ];
    const asked: ChatInput[] = [];
    for (const body of bodies) {
      const chat = answeringChat();
      const service = memoryService(chat);
      await service.create(
        Object.assign(request(body), { rawBody: Buffer.from(JSON.stringify(body)) }),
        client(),
      );
      asked.push(chat.asked[0] as ChatInput);
    }
    const keys = asked.map((one) => one.toolsKey);
    expect(keys.every((key) => key !== undefined)).toBe(true);
    for (const first of asked)
      for (const [b, second] of asked.entries())
        if (first.toolsKey === second.toolsKey)
          expect([b, (second.body as { tools?: unknown }).tools]).toEqual([
            b,
            (first.body as { tools?: unknown }).tools,
          ]);
    // The first two only are the same request's tools.
    expect(new Set(keys).size).toBe(5);
  });
});

describe('the request limits', () => {
  it('refuses an input of more messages than server.max_messages allows before bridging its items, and never asks the engine', async () => {
    const limited = loadConfig({
      env: { CTXGATE_CONFIG: writeConfigFile('server:\n  max_messages: 3\n') },
    });
    const chat = answeringChat();
    const service = createResponsesService({
      chat,
      store: createMemoryResponseStore({ ttlSeconds: 60 }),
      config: limited,
      countTokens: () => 40,
    });
    const outputs = ['a', 'b', 'c', 'd'].map((id) => ({
      type: 'function_call_output',
      call_id: id,
      output: 'ok',
    }));
    // An item no bridge takes, after them: read, it would be the refusal.
    const body = {
      model: 'small-model',
      store: false,
      input: [...outputs, { type: 'computer_screenshot_v9' }],
    };
    const refusal = await service.create(request(body), client()).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isGatewayError(refusal) ? [refusal.status, refusal.param, refusal.message] : refusal).toEqual([
      400,
      'messages',
      "Invalid 'messages': array too long. Expected an array with at most 3 messages, but got 4.",
    ]);
    expect(chat.asked).toHaveLength(0);
  });
});

describe('instructions and developer messages for a template that takes one system message, first', () => {
  // As Codex sends them to a model of its own provider: instructions, two developer messages, the
  // environment and the task as user messages; later, a developer message before a new user message.
  const codexLike = (model: string) => ({
    model,
    instructions: 'You are Codex.',
    store: false,
    input: [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Sandbox: none.' }] },
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Approvals: never.' }] },
      { type: 'message', role: 'user', content: `<environment_context>${'cwd /work. '.repeat(120)}` },
      { type: 'message', role: 'user', content: 'Write the note.' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Plan mode.' }] },
      { type: 'message', role: 'user', content: 'Now plan the tests.' },
    ],
  });

  it.each<[string, string, Array<[string, string]>]>([
    [
      'a model other than OpenAI’s: one system message first, the later one in the user message after it',
      'small-model',
      [
        ['system', 'You are Codex.\n\nSandbox: none.\n\nApprovals: never.'],
        // Two user messages in a row are one: such templates make user and assistant alternate.
        ['user', `<environment_context>${'cwd /work. '.repeat(120)}\n\nWrite the note.`],
        ['assistant', 'Done.'],
        ['user', 'Plan mode.\n\nNow plan the tests.'],
      ],
    ],
    [
      'an OpenAI model: as they came',
      'gpt-5.4',
      [
        ['system', 'You are Codex.'],
        ['developer', 'Sandbox: none.'],
        ['developer', 'Approvals: never.'],
        ['user', `<environment_context>${'cwd /work. '.repeat(120)}`],
        ['user', 'Write the note.'],
        ['assistant', 'Done.'],
        ['developer', 'Plan mode.'],
        ['user', 'Now plan the tests.'],
      ],
    ],
  ])('%s', async (_name, model, expected) => {
    const chat = answeringChat();
    await memoryService(chat).create(request(codexLike(model)), client());
    const asked = chat.asked[0] as ChatInput;
    const messages = (asked.body as { messages: ContextMessage[] }).messages;
    const text = (content: unknown) =>
      typeof content === 'string'
        ? content
        : (content as Array<{ text: string }>).map((part) => part.text).join('');
    expect(messages.map((message) => [message.role, text(message.content)])).toEqual(expected);
    // What is sent as it came (the long environment message to an OpenAI model) is in the client's
    // bytes, aligned with the messages.
    const known = asked.messageBytes?.(messages) ?? [];
    if (model === 'gpt-5.4') expect(knownBytesText(known[3])).toContain('cwd /work.');
    known.forEach((bytes, index) => {
      if (bytes !== undefined) expect(JSON.parse(knownBytesText(bytes) as string)).toEqual(messages[index]);
    });
  });
});

describe('a compaction (Codex asks with a compaction_trigger item)', () => {
  const compacting = (stream: boolean) =>
    request({
      model: 'small-model',
      store: false,
      stream,
      input: [{ type: 'message', role: 'user', content: 'Count the steps.' }, { type: 'compaction_trigger' }],
    });

  /** A client that keeps a stream's status, headers and bytes as well. */
  function streamingClient() {
    const answer = client();
    const stream = { status: 0, headers: {} as Record<string, unknown>, text: '' };
    return Object.assign(answer, {
      stream,
      openStream(status: number, headers: Record<string, unknown>) {
        stream.status = status;
        stream.headers = headers;
      },
      end(last?: Buffer | string) {
        stream.text += String(last ?? '');
      },
    });
  }

  it('answers whole with one compaction item holding what the model wrote, asked of the engine unstreamed', async () => {
    const chat = answeringChat();
    const answer = streamingClient();
    await memoryService(chat).create(compacting(false), answer);
    expect((chat.asked[0]?.body as { stream?: unknown }).stream).toBeUndefined();
    const response = JSON.parse((answer.bodies[0] as Buffer).toString()) as {
      status: string;
      output: Array<Record<string, unknown>>;
    };
    expect(response.status).toBe('completed');
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'compaction', id: expect.stringMatching(/^cmp_/) });
    expect(readCompactionCarrier(response.output[0]?.encrypted_content)).toBe('answer 1');
  });

  it('answers a client that asked for a stream with the events of that one item, then response.completed', async () => {
    const chat = answeringChat();
    const answer = streamingClient();
    await memoryService(chat).create(compacting(true), answer);
    expect((chat.asked[0]?.body as { stream?: unknown }).stream).toBeUndefined();
    expect(answer.stream.status).toBe(200);
    expect(answer.stream.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = sseEventData(answer.stream.text);
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual([0, 1, 2, 3, 4]);
    const done = events[3] as { item: { type: string; encrypted_content: string } };
    expect(done.item.type).toBe('compaction');
    expect(readCompactionCarrier(done.item.encrypted_content)).toBe('answer 1');
    expect((events[4] as { response: { output: unknown[] } }).response.output).toEqual([done.item]);
  });

  it("keeps what a thinking model wrote after its thinking: its <think> block on Ollama, Magistral's thinking chunk", async () => {
    for (const content of [
      '<think>\nWhat matters so far?\n</think>\n\nCounted to 3 with seq.',
      [
        { type: 'thinking', thinking: [{ type: 'text', text: 'What matters so far?' }] },
        { type: 'text', text: 'Counted to 3 with seq.' },
      ],
    ]) {
      const answer = streamingClient();
      await memoryService(answeringChat(() => content)).create(compacting(false), answer);
      const response = JSON.parse((answer.bodies[0] as Buffer).toString()) as {
        output: Array<Record<string, unknown>>;
      };
      expect(readCompactionCarrier(response.output[0]?.encrypted_content)).toBe('Counted to 3 with seq.');
    }
  });

  it('answers 502 when the model wrote no summary (it called a tool instead)', async () => {
    const chat: ChatService = {
      async complete(_input, answer) {
        const completion = {
          choices: [
            {
              message: {
                role: 'assistant',
                content: null,
                tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
              },
              finish_reason: 'tool_calls',
            },
          ],
        };
        await answer.sendWhole(200, {}, Buffer.from(JSON.stringify(completion)));
        return {};
      },
      preview: async () => ({ headers: {}, body: {}, outcome: {} }),
    };
    const answer = streamingClient();
    await memoryService(chat).create(compacting(true), answer);
    expect(answer.statuses).toEqual([502]);
    expect(JSON.parse((answer.bodies[0] as Buffer).toString())).toMatchObject({
      error: { code: 'upstream_bad_response', type: 'server_error' },
    });
    expect(answer.stream.status).toBe(0);
  });
});

describe('POST /v1/responses/compact', () => {
  it("answers the user's messages and one compaction item of what the model wrote, stored nowhere", async () => {
    const chat = answeringChat();
    const store = createMemoryResponseStore({ ttlSeconds: 60 });
    const service = createResponsesService({ chat, store, config, countTokens: () => 40 });
    const answer = client();
    await service.compact(
      request({
        model: 'small-model',
        input: [
          { role: 'user', content: 'Read page 1.' },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Read it.' }] },
        ],
      }),
      answer,
    );
    // The engine was asked, unstreamed, with the conversation and then the request for a summary.
    const body = chat.asked[0]?.body as { stream?: unknown; messages: ContextMessage[] };
    expect(body.stream).toBeUndefined();
    expect(body.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(String(body.messages[2]?.content)).toMatch(/summary/i);
    expect(answer.statuses).toEqual([200]);
    const compacted = JSON.parse((answer.bodies[0] as Buffer).toString()) as {
      object: string;
      id: string;
      output: Array<Record<string, unknown>>;
      usage: Record<string, unknown>;
    };
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.output).toHaveLength(2);
    expect(compacted.output[0]).toEqual({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'Read page 1.' }],
    });
    expect(compacted.output[1]?.type).toBe('compaction');
    expect(readCompactionCarrier(compacted.output[1]?.encrypted_content)).toBe('answer 1');
    expect(compacted.usage).toMatchObject({ input_tokens: 10, output_tokens: 2 });
    expect(await store.get(credential.tenantId, compacted.id)).toBeUndefined();
  });

  it('takes a string input as one user message, and refuses a body that is not an object', async () => {
    const chat = answeringChat();
    const answer = client();
    await memoryService(chat).compact(request({ model: 'small-model', input: 'Read page 1.' }), answer);
    const compacted = JSON.parse((answer.bodies[0] as Buffer).toString()) as {
      output: Array<{ type: string }>;
    };
    expect(compacted.output.map((item) => item.type)).toEqual(['message', 'compaction']);
    await expect(
      memoryService(chat).compact(Object.assign(request({}), { body: ['x'] }), client()),
    ).rejects.toMatchObject({ code: 'invalid_request', param: 'body' });
    await expect(
      memoryService(chat).compact(request({ model: 'small-model', input: 42 }), client()),
    ).rejects.toMatchObject({ code: 'invalid_request', param: 'input' });
  });
});
