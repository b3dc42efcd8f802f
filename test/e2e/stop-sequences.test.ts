// End to end: stop sequences a model does not take, held by the gateway (docs/budgeting.md#refused-fields).
// OpenAI's reasoning models (GPT-5 and later, o3, o4-mini) take none ("Unsupported parameter: 'stop' is
// not supported with this model.") and every model of OpenAI's takes at most 4; LangChain's ReAct agents,
// smolagents' CodeAgent and CrewAI send them (huggingface/smolagents#1893, crewAIInc/crewAI#2738), and
// every such request failed. Now the model is sent none (or its first 4), after one refusal, and the
// gateway cuts the answer where the first of the client's begins, whole or streamed, as the provider
// would have; the model's next request goes at once. The strict fake refuses in OpenAI's words and, where
// it takes them, ends its own answer at a stop.
import Anthropic from '@anthropic-ai/sdk';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic } from '../helpers/fake-anthropic.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGateway, waitUntilReady } from '../helpers/start-gateway.js';

/** A reasoning model as OpenAI serves it: no stop sequences. */
const gpt5 = 'gpt-5.2';
/** A ReAct agent's step as a model that was not stopped writes it: its own made-up Observation, and on. */
const unstopped =
  'Thought: I should look it up.\nAction: search[capital of France]\nObservation: Lyon.\nThought: I know.\nFinal Answer: Lyon';
const untilObservation = 'Thought: I should look it up.\nAction: search[capital of France]\n';

let fake: FakeUpstream;
/** Claude itself (`kind: anthropic`), which takes no stop sequence of whitespace only. */
let claude: FakeAnthropic;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    noStop: [gpt5],
    stopLimits: {
      'deepseek-chat': { max: 16, refusal: JSON.stringify({ detail: 'Stop string array too long' }) },
    },
    respond: () => ({ content: unstopped, chunks: 9 }),
  });
  claude = new FakeAnthropic({ apiKey: 'sk-stops' });
  claude.respond = () => ({ text: 'Paris\n\nThe capital of France is Paris. END of answer.' });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    configYaml: [
      'upstreams:',
      '  - name: anthropic',
      `    base_url: ${await claude.start()}`,
      '    kind: anthropic',
      '    models: ["claude-*"]',
      '',
    ].join('\n'),
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await claude.stop();
});

const statusesSince = (before: number) => fake.chatRequests.slice(before).map((request) => request.status);
const stopSent = () => (fake.chatRequests.at(-1)?.body as { stop?: unknown } | undefined)?.stop;
const langchain = () =>
  new ChatOpenAI({
    model: gpt5,
    apiKey: 'sk-stops',
    maxRetries: 0,
    configuration: { baseURL: harness.baseUrl },
  });

describe('stop sequences to a model that takes none (OpenAI’s reasoning models)', () => {
  it("LangChain's ReAct step: answered after one refusal, cut at its Observation; the next at once", async () => {
    const before = fake.chatRequests.length;
    const answer = await langchain().invoke('What is the capital of France?', { stop: ['\nObservation:'] });
    expect(answer.content).toBe(untilObservation.slice(0, -1));
    expect(answer.response_metadata.finish_reason).toBe('stop');
    expect(statusesSince(before)).toEqual([400, 200]);
    expect(stopSent()).toBeUndefined();
    const again = fake.chatRequests.length;
    await langchain().invoke('And of Spain?', { stop: ['\nObservation:'] });
    expect(statusesSince(again)).toEqual([200]);
  });

  it('streamed: every piece given up to the stop, none after it, the choice finished there', async () => {
    let text = '';
    let finish: unknown;
    for await (const piece of await langchain().stream('What is the capital of France?', {
      stop: ['Observation:'],
    })) {
      text += String(piece.content);
      finish = piece.response_metadata.finish_reason ?? finish;
    }
    expect(text).toBe(untilObservation);
    expect(finish).toBe('stop');
    expect(stopSent()).toBeUndefined();
  });

  it('a request with no stop sequences is answered whole', async () => {
    const answer = await langchain().invoke('What is the capital of France?');
    expect(answer.content).toBe(unstopped);
  });
});

describe('more stop sequences than OpenAI takes (4)', () => {
  const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-stops', maxRetries: 0 });
  const stops = ['Final Answer:', 'Thought: I know', 'Observation:', '\n\n\n', 'Question:'];

  it('the OpenAI client: answered after one refusal, the first 4 sent, the answer cut at the first of all 5', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: 'gpt-4.1',
      stop: stops,
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
    });
    expect(answer.choices[0]?.message.content).toBe(untilObservation);
    expect(statusesSince(before)).toEqual([400, 200]);
    expect(stopSent()).toEqual(stops.slice(0, 4));
  });

  it('an autocompleter’s 20 stops to DeepSeek, whose refusal names no number: none sent, all held', async () => {
    // As Continue builds them for a completion: the language's keywords at a line's start, and more.
    const stops = [
      '\n\n\n',
      '```',
      'Final Answer:',
      ...Array.from({ length: 16 }, (_unused, index) => `\nkw${index} `),
      'Action:',
    ];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: 'deepseek-chat',
      stop: stops,
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
    });
    expect(answer.choices[0]?.message.content).toBe('Thought: I should look it up.\n');
    expect(statusesSince(before)).toEqual([400, 200]);
    expect(stopSent()).toBeUndefined();
  });

  it("the Anthropic client's stop_sequences to a chat model: the fifth held by the gateway", async () => {
    const anthropic = new Anthropic({
      baseURL: harness.baseUrl.replace(/\/v1$/, ''),
      apiKey: 'sk-stops',
      maxRetries: 0,
    });
    const late = ['Question:', 'Answer:', 'Note:', 'Thought: I know', 'Action:'];
    const before = fake.chatRequests.length;
    const message = await anthropic.messages.create({
      model: 'gpt-4.1-mini',
      max_tokens: 512,
      stop_sequences: late,
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
    });
    expect(message.content).toHaveLength(1);
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'Thought: I should look it up.\n' });
    // As Claude says it: stopped by a sequence, and which.
    expect([message.stop_reason, message.stop_sequence]).toEqual(['stop_sequence', 'Action:']);
    expect(statusesSince(before)).toEqual([400, 200]);
    expect(stopSent()).toEqual(late.slice(0, 4));
  });

  it('the Anthropic client streaming: the text up to the stop, and the stop as Claude says it', async () => {
    const anthropic = new Anthropic({
      baseURL: harness.baseUrl.replace(/\/v1$/, ''),
      apiKey: 'sk-stops',
      maxRetries: 0,
    });
    const stream = anthropic.messages.stream({
      model: 'gpt-4.1-mini',
      max_tokens: 512,
      stop_sequences: ['Question:', 'Answer:', 'Note:', 'Thought: I know', '\nObservation'],
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
    });
    const message = await stream.finalMessage();
    expect(message.content[0]).toMatchObject({ type: 'text', text: untilObservation.slice(0, -1) });
    expect([message.stop_reason, message.stop_sequence]).toEqual(['stop_sequence', '\nObservation']);
  });
});

// Claude takes no stop sequence of whitespace only ("stop_sequences: each stop sequence must contain
// non-whitespace"): a chat client's "\n" (BerriAI/litellm#3286), an autocompleter's "\n\n"
// (continuedev/continue#1660) failed every request. Claude is sent the others, and the gateway holds the
// answer to all of them: in one call.
describe('a stop sequence of whitespace only, to Claude', () => {
  const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-stops', maxRetries: 0 });
  const claudeSent = () => claude.requests.at(-1)?.body as { stop_sequences?: unknown } | undefined;

  it('the OpenAI client asking for one line: answered at once, cut at the line’s end', async () => {
    const before = claude.requests.length;
    const answer = await client().chat.completions.create({
      model: 'claude-sonnet-4-6',
      stop: ['\n'],
      messages: [{ role: 'user', content: 'The capital of France, one word.' }],
    });
    expect(answer.choices[0]?.message.content).toBe('Paris');
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    expect(claude.requests.slice(before).map((request) => request.status)).toEqual([200]);
    expect(claudeSent()?.stop_sequences).toBeUndefined();
  });

  it('streamed, beside one Claude takes: Claude stops at its own, the gateway at the blank line', async () => {
    const stream = await client().chat.completions.create({
      model: 'claude-sonnet-4-6',
      stop: ['\n\n', 'END'],
      stream: true,
      messages: [{ role: 'user', content: 'The capital of France?' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Paris');
    expect(claudeSent()?.stop_sequences).toEqual(['END']);
  });
});
