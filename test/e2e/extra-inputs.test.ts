// End to end (docs/budgeting.md#refused-fields): providers whose schema refuses every field it does not have,
// by its place, in Fireworks' words — "Extra inputs are not permitted, field: 'messages[2].reasoning'" —
// as Fireworks answers on its chat and Anthropic-compatible endpoints and OpenCode Zen and Go pass it on.
// A conversation whose answers carry a reasoning field failed at its second request (anomalyco/opencode#27852),
// OpenCode's tools on every request (#24975), a client's own field on every request (#40462). Through the
// official OpenAI and Anthropic clients each is answered after one refusal, and the next goes right at once.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAnthropic } from '../helpers/fake-anthropic.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

/** Fireworks' chat endpoint, for every model it serves here. */
let fireworks: FakeUpstream;
/** Its Anthropic-compatible endpoint. */
let fireworksMessages: FakeAnthropic;
let harness: GatewayHarness;
let openai: OpenAI;
let anthropic: Anthropic;

const chatModels = ['kimi-k2p6', 'glm-5p2', 'minimax-m2p5', 'claude-behind-a-strict-proxy'];
/** A model as OpenAI's API serves it: a field its schema lacks refused by its place, in its words. */
const openAIModel = 'gpt-5.5';

beforeAll(async () => {
  fireworks = new FakeUpstream({ extraInputs: chatModels, unknownParameters: [openAIModel] });
  fireworksMessages = new FakeAnthropic({ apiKey: 'sk-test', extraToolMembers: ['kimi-k2p5-turbo'] });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fireworks.start() },
    configYaml: [
      'upstreams:',
      '  - name: fireworks-anthropic',
      `    base_url: ${await fireworksMessages.start()}`,
      '    kind: anthropic',
      '    models: ["kimi-k2p5-turbo"]',
      '',
    ].join('\n'),
  });
  openai = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-test', maxRetries: 0 });
  anthropic = new Anthropic({
    baseURL: harness.baseUrl.replace(/\/v1$/, ''),
    apiKey: 'sk-test',
    maxRetries: 0,
  });
});

afterAll(async () => {
  await harness.close();
  await fireworks.stop();
  await fireworksMessages.stop();
});

/** The bodies and statuses Fireworks' chat endpoint had for a model, from `since` on. */
const sentTo = (model: string, since: number) =>
  fireworks.chatRequests
    .slice(since)
    .map((request) => request.body as Record<string, unknown>)
    .filter((body) => body.model === model);

/** A conversation as a client that keeps OpenRouter's `reasoning` on the model's answers sends it. */
const withReasoning = [
  { role: 'user', content: 'Which file computes the retry budget?' },
  {
    role: 'assistant',
    content: 'src/upstream/recovery-policy.ts computes it.',
    reasoning: 'The user asks where the retry budget is computed; the recovery policy holds it.',
  },
  { role: 'user', content: 'And where is it read?' },
] as unknown as OpenAI.ChatCompletionMessageParam[];

describe('a conversation whose answers carry their reasoning, to Kimi as OpenCode Go serves it', () => {
  it('is answered after one refusal, without the reasoning; the next request right the first time', async () => {
    const before = fireworks.chatRequests.length;
    const { data, response } = await openai.chat.completions
      .create({ model: 'kimi-k2p6', messages: withReasoning })
      .withResponse();
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const [refused, answered, ...rest] = sentTo('kimi-k2p6', before);
    expect(rest).toEqual([]);
    expect((refused?.messages as Array<Record<string, unknown>>)[1]).toHaveProperty('reasoning');
    // The conversation as it was, every word of it, without the field.
    expect(answered?.messages).toEqual([
      withReasoning[0],
      { role: 'assistant', content: 'src/upstream/recovery-policy.ts computes it.' },
      withReasoning[2],
    ]);

    const again = fireworks.chatRequests.length;
    const stream = await openai.chat.completions.create({
      model: 'kimi-k2p6',
      messages: withReasoning,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).not.toBe('');
    expect(sentTo('kimi-k2p6', again)).toEqual([
      expect.not.objectContaining({ reasoning: expect.anything() }),
    ]);
    expect((sentTo('kimi-k2p6', again)[0]?.messages as unknown[])[1]).not.toHaveProperty('reasoning');
  });

  it("leaves out a client's own field (OpenCode's delegateTo) and a call's Gemini signature in the same refusal", async () => {
    const before = fireworks.chatRequests.length;
    const body = {
      model: 'glm-5p2',
      delegateTo: 'build',
      messages: [
        { role: 'user', content: 'List the files.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'ls', arguments: '{}' },
              extra_content: { google: { thought_signature: 'c2lnbmF0dXJl' } },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'README.md\nsrc\n' },
      ],
      tools: [{ type: 'function', function: { name: 'ls', parameters: { type: 'object', properties: {} } } }],
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const { response } = await openai.chat.completions.create(body).withResponse();
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const [refused, answered] = sentTo('glm-5p2', before);
    expect(refused).toHaveProperty('delegateTo', 'build');
    expect(answered).not.toHaveProperty('delegateTo');
    expect((answered?.messages as Array<{ tool_calls?: unknown }>)[1]?.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{}' } },
    ]);
  });

  it("relays a refusal of a message's own field (Hermes's tool_name) as Fireworks worded it, after one call", async () => {
    const before = fireworks.chatRequests.length;
    const body = {
      model: 'minimax-m2p5',
      messages: [
        { role: 'user', content: 'Read the README.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'read', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_2', tool_name: 'read', content: '# ctxgate' },
      ],
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const error = await openai.chat.completions.create(body).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain(
      "Extra inputs are not permitted, field: 'messages[2].tool_name'",
    );
    expect(sentTo('minimax-m2p5', before)).toHaveLength(1);
  });
});

describe('cache breakpoints to Claude behind a Chat Completions endpoint that takes none', () => {
  it('the Anthropic client is answered after one refusal, its marks left out; the next at once', async () => {
    const ask = () =>
      anthropic.messages
        .create({
          model: 'claude-behind-a-strict-proxy',
          max_tokens: 256,
          system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
          messages: [
            { role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] },
          ],
        })
        .withResponse();
    const before = fireworks.chatRequests.length;
    const { data, response } = await ask();
    expect(data.content[0]).toMatchObject({ type: 'text' });
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const [refused, answered] = sentTo('claude-behind-a-strict-proxy', before);
    expect(JSON.stringify(refused?.messages)).toContain('cache_control');
    expect(JSON.stringify(answered?.messages)).not.toContain('cache_control');
    expect((await ask()).response.headers.get('x-ctxgate-attempts')).toBe('1');
  });
});

describe("OpenCode's tools to Fireworks' Anthropic-compatible endpoint", () => {
  const tools = [
    {
      name: 'read',
      description: 'Reads a file.',
      input_schema: { type: 'object', properties: { path: { type: 'string' } } },
      eager_input_streaming: true,
    },
    {
      name: 'bash',
      description: 'Runs a command.',
      input_schema: { type: 'object', properties: { command: { type: 'string' } } },
      eager_input_streaming: true,
      cache_control: { type: 'ephemeral' },
    },
  ] as unknown as Anthropic.Tool[];
  const ask = () =>
    anthropic.messages
      .create({
        model: 'kimi-k2p5-turbo',
        max_tokens: 512,
        system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
        tools,
        messages: [{ role: 'user', content: 'What does the README say?' }],
      })
      .withResponse();

  it('are answered after one refusal, each tool with its name, description and schema; the next at once', async () => {
    const before = fireworksMessages.requests.length;
    const { data, response } = await ask();
    expect(data.content[0]).toMatchObject({ type: 'text' });
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = fireworksMessages.requests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([400, 200]);
    expect(sent[1]?.body.tools).toEqual(
      (tools as unknown as Array<Record<string, unknown>>).map(({ name, description, input_schema }) => ({
        name,
        description,
        input_schema,
      })),
    );
    // The system prompt's cache breakpoint is not a tool's: it stays.
    expect(sent[1]?.body.system).toEqual([
      { type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } },
    ]);

    const again = fireworksMessages.requests.length;
    expect((await ask()).response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(fireworksMessages.requests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

// OpenAI's API refuses the same by its place in its own words ("Unknown parameter:
// 'messages[2].reasoning'."): a conversation that went on from a model that thinks, a client that keeps a
// stream's call indexes on its calls (FastGPT's "Unknown parameter: 'messages[2].tool_calls[0].index'."), a
// client's own field; every later request of the conversation failed so.
describe("fields OpenAI's schema lacks, refused in its words by their place", () => {
  it('a reasoning left on an answer, a call index, a client field: each left out after one refusal', async () => {
    const before = fireworks.chatRequests.length;
    const messages = [
      ...withReasoning,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            index: 0,
            id: 'call_1',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path":"a"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'export const budget = 3;' },
    ] as unknown as OpenAI.ChatCompletionMessageParam[];
    const request = {
      model: openAIModel,
      messages,
      tools: [
        {
          type: 'function' as const,
          function: {
            name: 'read_file',
            parameters: { type: 'object', properties: { path: { type: 'string' } } },
          },
        },
      ],
      delegateTo: 'build',
    };
    const { data, response } = await openai.chat.completions.create(request as never).withResponse();
    expect((data as OpenAI.ChatCompletion).choices[0]?.message).toBeDefined();
    expect(response.headers.get('x-ctxgate-attempts')).toBe('4');
    const sent = sentTo(openAIModel, before);
    expect(sent).toHaveLength(4);
    const last = sent.at(-1) as { messages: Array<Record<string, unknown>>; delegateTo?: unknown };
    expect(last.delegateTo).toBeUndefined();
    expect(last.messages[1]).not.toHaveProperty('reasoning');
    expect((last.messages[3]?.tool_calls as Array<Record<string, unknown>>)[0]).toEqual({
      id: 'call_1',
      type: 'function',
      function: { name: 'read_file', arguments: '{"path":"a"}' },
    });
    // The next request of the conversation goes right the first time.
    const again = fireworks.chatRequests.length;
    await openai.chat.completions.create(request as never);
    expect(sentTo(openAIModel, again)).toHaveLength(1);
  });
});
