// End to end: what a provider gives with an answer and refuses the next request without.
// Gemini 3 through Google's OpenAI-compatible endpoint (docs/budgeting.md#refused-fields) gives the first
// tool call of each answer a thought signature (`extra_content.google.thought_signature`) and refuses a
// request whose current turn sends a call back without it — "Function call is missing a
// thought_signature in functionCall parts", in an array as Google sends its errors. Through the official
// OpenAI client: a session's streamed tool loop sends each call back with the signature Gemini gave it;
// a client that drops the field, and a conversation another model began, get their answer after one
// refused call, and the model's later requests go right the first time. OpenRouter serving Claude with
// reasoning on gives the reasoning as `reasoning_details` with Claude's signature, and passes on
// Anthropic's refusal of a tool loop whose last step comes back without its thinking
// (docs/budgeting.md#a-thinking-models-reasoning): a session's streamed loop sends it back whole. DeepSeek
// V4 refuses a tool loop sent back without its `reasoning_content` ("The `reasoning_content` in the thinking
// mode must be passed back to the API.") — which a client that keeps only OpenAI's fields drops: it gets
// its answer after one refused call, each answer of no reasoning sent with a stand-in.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGatewayOn } from '../helpers/start-gateway.js';

const gemini = 'gemini-3-flash-preview';
const stand = 'skip_thought_signature_validator';
/** A reasoning model as Mistral serves it: its content as chunks of thinking and text. */
const magistral = 'magistral-medium-2509';
/** Claude with reasoning on, as OpenRouter serves it. */
const claude = 'anthropic/claude-sonnet-5';
/** Another Claude behind OpenRouter: Claude's signatures are bound to the model that thought. */
const otherClaude = 'anthropic/claude-opus-5';
/** DeepSeek V4, which thinks by default and wants its reasoning back with each call. */
const deepseek = 'deepseek-v4-pro';

/** A step sent back as a client that keeps only OpenAI's fields of an answer sends it (Continue, Crush). */
const openAIStep: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'user', content: 'Where is the retry budget computed?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'export const budget = 3;' },
];

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    thoughtSignatures: [gemini, 'gemini-3-pro-preview'],
    reasoningDetails: [claude, otherClaude],
    mistralThinking: [magistral],
    thinking: [deepseek],
  });
  harness = await startGatewayOn(fake, inject('redisUrl'));
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-gemini', maxRetries: 0, defaultHeaders: headers });

/** The messages of the provider's requests for a model from `since` on. */
const sent = (model: string, since: number) =>
  fake.chatRequests
    .slice(since)
    .map((request) => request.body as { model: string; messages: ChatMessage[] })
    .filter((body) => body.model === model)
    .map((body) => body.messages);

/** The signature of each assistant message's first tool call. */
const signaturesOf = (messages: ChatMessage[] | undefined) =>
  (messages ?? [])
    .filter((message) => (message.tool_calls?.length ?? 0) > 0)
    .map((message) => message.tool_calls?.[0]?.extra_content?.google?.thought_signature);

describe('Gemini 3: a tool call goes back with its thought signature', () => {
  it("sends a session's streamed calls back with the signatures Gemini gave them, the first time", async () => {
    const chat = client({ 'x-session-id': `gemini-${randomUUID()}` });
    const since = fake.chatRequests.length;
    fake.enqueue(
      {
        toolCalls: [
          { id: 'call_read', name: 'read_file', arguments: '{"path":"src/a.ts"}' },
          { id: 'call_list', name: 'list_dir', arguments: '{"path":"src"}' },
        ],
      },
      { toolCalls: [{ id: 'call_grep', name: 'grep', arguments: '{"q":"retry"}' }] },
      { content: 'The retry budget is computed in src/a.ts.' },
    );
    const streamed = async (messages: OpenAI.ChatCompletionMessageParam[]) => {
      const { data: stream, response } = await chat.chat.completions
        .create({ model: gemini, messages, stream: true })
        .withResponse();
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return { text, attempts: response.headers.get('x-ctxgate-attempts') };
    };
    // The session holds the conversation: each request sends only what is new.
    expect(
      (await streamed([{ role: 'user', content: 'Where is the retry budget computed?' }])).attempts,
    ).toBe('1');
    expect(
      await streamed([
        { role: 'tool', tool_call_id: 'call_read', content: 'export const budget = 3;' },
        { role: 'tool', tool_call_id: 'call_list', content: 'a.ts b.ts' },
      ]),
    ).toEqual({ text: '', attempts: '1' });
    expect(await streamed([{ role: 'tool', tool_call_id: 'call_grep', content: 'src/a.ts:1' }])).toEqual({
      text: 'The retry budget is computed in src/a.ts.',
      attempts: '1',
    });
    const requests = sent(gemini, since);
    expect(requests).toHaveLength(3);
    // Gemini's own signatures, one per step, none of them the stand-in.
    const signatures = signaturesOf(requests[2]);
    expect(signatures).toHaveLength(2);
    expect(signatures[0]).toBe(signaturesOf(requests[1])[0]);
    expect(signatures[1]).not.toBe(signatures[0]);
    for (const signature of signatures) expect(signature).toMatch(/^[A-Za-z0-9+/=]{8,}$/);
  });

  it('answers a client that dropped the signature after one refused call, and its next request at once', async () => {
    const chat = client();
    const model = 'gemini-3-pro-preview';
    const step = openAIStep;
    const since = fake.chatRequests.length;
    // The refused call takes the first scripted answer.
    fake.enqueue({}, { content: 'In a.' });
    const { data, response } = await chat.chat.completions.create({ model, messages: step }).withResponse();
    expect(data.choices[0]?.message.content).toBe('In a.');
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const [refused, fixed, ...rest] = sent(model, since);
    expect(signaturesOf(refused)).toEqual([undefined]);
    expect(signaturesOf(fixed)).toEqual([stand]);
    expect(rest).toEqual([]);
    // The rest of the conversation as the client wrote it.
    expect(fixed?.map((message) => message.content)).toEqual(step.map((message) => message.content));

    // The same turn one step on, the new step's call without its signature too.
    const again = fake.chatRequests.length;
    fake.enqueue({ content: 'In a, line 1.' });
    const next = await chat.chat.completions
      .create({
        model,
        messages: [
          ...step,
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'grep', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'call_2', content: 'a:1' },
        ],
      })
      .withResponse();
    expect(next.response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(signaturesOf(sent(model, again)[0])).toEqual([stand, stand]);
    // Learned once, told to the log without the conversation's text.
    const learned = harness.logLines.filter((line) => line.includes('model refuses a request field'));
    expect(learned.filter((line) => line.includes(model))).toHaveLength(1);
    expect(learned.join('\n')).not.toContain('retry budget');
  });

  it('leaves a signature Gemini gave as it is, beside the stand-in for a call another model made', async () => {
    const chat = client();
    // The first step came from another model (a fallback, a client that switched), the second from Gemini.
    // Refused once (the other model's step has no signature): the refused call takes the first answer.
    fake.enqueue({}, { toolCalls: [{ id: 'call_g', name: 'grep', arguments: '{"q":"budget"}' }] });
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Find the budget.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_o', type: 'function', function: { name: 'list_dir', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_o', content: 'a.ts' },
    ];
    const first = await chat.chat.completions.create({ model: gemini, messages: history });
    const geminiStep = first.choices[0]?.message as OpenAI.ChatCompletionMessageParam;
    const own = signaturesOf([geminiStep as ChatMessage])[0];
    expect(own).toMatch(/^[A-Za-z0-9+/=]{8,}$/);
    const since = fake.chatRequests.length;
    fake.enqueue({ content: 'Found.' });
    const { response } = await chat.chat.completions
      .create({
        model: gemini,
        messages: [...history, geminiStep, { role: 'tool', tool_call_id: 'call_g', content: 'a.ts:1' }],
      })
      .withResponse();
    expect(response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(signaturesOf(sent(gemini, since)[0])).toEqual([stand, own]);
  });
});

describe("OpenRouter's reasoning_details: Claude's thinking goes back with its tool calls", () => {
  it.each([true, false])(
    "sends a session's calls back with the thinking Claude gave them (streamed: %s)",
    async (stream) => {
      const chat = client({ 'x-session-id': `openrouter-${randomUUID()}` });
      const since = fake.chatRequests.length;
      fake.enqueue(
        { toolCalls: [{ id: 'call_read', name: 'read_file', arguments: '{"path":"src/a.ts"}' }] },
        { toolCalls: [{ id: 'call_grep', name: 'grep', arguments: '{"q":"retry"}' }] },
        { content: 'In src/a.ts.' },
      );
      const ask = async (messages: OpenAI.ChatCompletionMessageParam[]) => {
        if (!stream) {
          const { data, response } = await chat.chat.completions
            .create({ model: claude, messages })
            .withResponse();
          return { text: data.choices[0]?.message.content ?? '', status: response.status };
        }
        const { data, response } = await chat.chat.completions
          .create({ model: claude, messages, stream: true })
          .withResponse();
        let text = '';
        for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
        return { text, status: response.status };
      };
      await ask([{ role: 'user', content: 'Where is the retry budget computed?' }]);
      await ask([{ role: 'tool', tool_call_id: 'call_read', content: 'export const budget = 3;' }]);
      expect(await ask([{ role: 'tool', tool_call_id: 'call_grep', content: 'src/a.ts:1' }])).toEqual({
        text: 'In src/a.ts.',
        status: 200,
      });
      const requests = fake.chatRequests.slice(since);
      // Three requests, none refused; the last sent both steps with the thinking Claude gave each, whole.
      expect(requests.map((request) => request.status)).toEqual([200, 200, 200]);
      const steps = (requests[2]?.body as { messages: ChatMessage[] }).messages.filter(
        (message) => (message.tool_calls?.length ?? 0) > 0,
      );
      expect(steps.map((message) => message.reasoning_details)).toEqual([
        [
          {
            type: 'reasoning.text',
            text: expect.stringMatching(/^Claude thinks before answer \d+\.$/),
            signature: expect.any(String),
            format: 'anthropic-claude-v1',
            index: 0,
          },
        ],
        [expect.objectContaining({ type: 'reasoning.text', signature: expect.any(String) })],
      ]);
    },
  );
});

// A session stores each answer's reasoning_details (Claude's signed thinking) with it; when the session's
// next request names another Claude (anthropics/anthropic-sdk-python#1598: a block another model thought
// fails the check), OpenRouter passed on Anthropic's refusal of every request (linanwx/nagobot#21).
describe("OpenRouter's Claude: a session that goes on on another Claude model", () => {
  it("is answered after one refusal, the other model's signed thinking left out", async () => {
    const chat = client({ 'x-session-id': `openrouter-switch-${randomUUID()}` });
    fake.enqueue(
      { toolCalls: [{ id: 'call_read', name: 'read_file', arguments: '{"path":"src/a.ts"}' }] },
      { content: 'In src/a.ts.' },
    );
    await chat.chat.completions.create({
      model: claude,
      messages: [{ role: 'user', content: 'Where is it?' }],
    });
    await chat.chat.completions.create({
      model: claude,
      messages: [{ role: 'tool', tool_call_id: 'call_read', content: 'export const budget = 3;' }],
    });
    const since = fake.chatRequests.length;
    fake.enqueue({}, { content: 'Three.' });
    const { data, response } = await chat.chat.completions
      .create({ model: otherClaude, messages: [{ role: 'user', content: 'And the budget?' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('Three.');
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = fake.chatRequests.slice(since);
    expect(sent.map((request) => request.status)).toEqual([400, 200]);
    const details = (sent[1]?.body as { messages: ChatMessage[] }).messages.map(
      (message) => message.reasoning_details,
    );
    expect(details.filter((detail) => detail !== undefined)).toEqual([]);
  });
});

describe("OpenRouter's Claude: cache breakpoints on a client's messages", () => {
  // OpenRouter's prompt caching for Claude, as its docs show it: a `cache_control` on the content part to
  // cache up to, the system prompt's and the newest message's. A session's stored messages kept the one
  // each came with, and from the fourth turn on OpenRouter passed on Claude's refusal: "A maximum of 4
  // blocks with cache_control may be provided. Found 5."
  it('goes on past four turns of a client that marks its newest message', async () => {
    const chat = client({ 'x-session-id': `openrouter-cache-${randomUUID()}` });
    const since = fake.chatRequests.length;
    const marked = (text: string) => [
      {
        type: 'text' as const,
        text,
        cache_control: { type: 'ephemeral' },
      } as OpenAI.ChatCompletionContentPartText,
    ];
    for (const turn of [1, 2, 3, 4, 5]) {
      const answer = await chat.chat.completions.create({
        model: claude,
        messages: [
          { role: 'system', content: marked('You review code.') },
          { role: 'user', content: marked(`Look at part ${turn}.`) },
        ],
      });
      expect(answer.choices[0]?.finish_reason).toBe('stop');
    }
    const requests = fake.chatRequests.slice(since);
    expect(requests.map((request) => request.status)).toEqual([200, 200, 200, 200, 200]);
    // The newest kept: the system prompt's, this turn's and the two turns' before it.
    const last = (requests.at(-1)?.body as { messages: ChatMessage[] }).messages;
    expect(
      last.map((message) =>
        Array.isArray(message.content) && message.content.some((part) => 'cache_control' in part)
          ? message.role
          : '-',
      ),
    ).toEqual(['system', '-', '-', '-', '-', 'user', '-', 'user', '-', 'user']);
  });
});

describe("Mistral's reasoning models: an answer given as chunks of thinking and text", () => {
  it("keeps a session's streamed answer, its text and its thinking as Mistral gave them", async () => {
    const chat = client({ 'x-session-id': `magistral-${randomUUID()}` });
    const since = fake.chatRequests.length;
    fake.enqueue({ content: 'The budget is 3.' }, { content: 'It doubles.' });
    for (const question of ['What is the retry budget?', 'And the backoff?']) {
      const stream = await chat.chat.completions.create({
        model: magistral,
        messages: [{ role: 'user', content: question }],
        stream: true,
      });
      for await (const _chunk of stream) {
        // drain
      }
    }
    // The second request carried the first answer: its text, and its thinking in Mistral's own form.
    const second = (fake.chatRequests.slice(since)[1]?.body as { messages: ChatMessage[] }).messages;
    expect(second.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(second[1]?.content).toEqual([
      {
        type: 'thinking',
        thinking: [{ type: 'text', text: expect.stringMatching(/^Magistral thinks before answer \d+\.$/) }],
      },
      { type: 'text', text: 'The budget is 3.' },
    ]);
  });
});

describe('DeepSeek V4, its reasoning dropped by the client', () => {
  it('answers a tool loop sent back without reasoning_content after one refused call, the next at once', async () => {
    const chat = client();
    const step = openAIStep;
    const since = fake.chatRequests.length;
    fake.enqueue({}, { content: 'In a.' });
    const { data, response } = await chat.chat.completions
      .create({ model: deepseek, messages: step })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('In a.');
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const fixed = sent(deepseek, since).at(-1);
    expect(fixed?.[1]?.reasoning_content).toBe(' ');
    expect(fixed?.map((message) => message.content)).toEqual(step.map((message) => message.content));
    const again = fake.chatRequests.length;
    fake.enqueue({ content: 'In a, line 1.' });
    await chat.chat.completions.create({ model: deepseek, messages: step });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});
