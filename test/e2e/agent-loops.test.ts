// Agent loops as agent frameworks run them, against the strict fake provider with an 8,192-token window
// and the official openai client:
// - a session agent loop: one user message, then a delta client sending one ~1,500-token tool result per
//   request; the fake agent decides its next call from the trajectory it can see (the calls in its
//   prompt, plus the steps a notice says were removed), so it finishes in exactly 40 calls only if the
//   gateway keeps its trajectory visible;
// - one stateless turn of 12 calls with ~3,000-token results: all 12 calls sent, the newest result
//   whole, the others masked with an indicator, and the headers counting what was sent.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { callsSeen, countPromptTokens, FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { paraphrasingSummarizer } from '../helpers/fake-summarizers.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const model = 'agent-model';
const window = 8_192;
const outputReserve = 512;
const target = 40;

const vocabulary = [
  'alpha',
  'ledger',
  'orbit',
  'mesa',
  'quartz',
  'tundra',
  'vivid',
  'ember',
  'lotus',
  'nimbus',
];
/** A page of about `tokens` tokens (one token per word here). */
const page = (number: number, tokens: number): string =>
  `Page ${number}. ` +
  Array.from(
    { length: tokens },
    (_unused, index) => vocabulary[(index * 3 + number) % vocabulary.length],
  ).join(' ');

/** A code the agent can read in its prompt, in whatever words it is stated. */
function codeInPrompt(messages: ReadonlyArray<ChatMessage>, prefix: string): string | undefined {
  const pattern = new RegExp(`\\b${prefix}-\\d{5}\\b`);
  for (const message of messages) {
    const found = pattern.exec(typeof message.content === 'string' ? message.content : '');
    if (found !== null) return found[0];
  }
  return undefined;
}

/** A realistic summarizer of the agent's steps: which pages were read, and any code one stated. */
const stepSummarizer = paraphrasingSummarizer({
  find(sentence) {
    const code = /(shipment code|deploy key) is ([A-Z]{2}-\d{5})/.exec(sentence);
    if (code !== null) return { key: code[1] as string, value: code[2] as string };
    const read = /^Page (\d+)\.?$/.exec(sentence);
    return read === null ? undefined : { key: `page ${read[1]}`, value: 'read' };
  },
  restate: (key, value) => (value === 'read' ? `Read ${key}.` : `The ${key} is ${value}.`),
});

/** Page 2 states a fact the agent must still know at the end. */
const pageWithFacts = (number: number): string =>
  number === 2 ? `${page(number, 1_400)}\nNote: the shipment code is SH-90211.` : page(number, 1_500);

/** The third test's agent reads modules by path: the arguments of its call for module `number`. */
const moduleCount = 10;
const modulePathArguments = (number: number): string => `{"path":"src/retry/budget_${number}.ts"}`;

let fake: FakeUpstream;
let harness: GatewayHarness;
let modelCalls = 0;

beforeAll(async () => {
  fake = new FakeUpstream({
    // A chat template that takes a system message only first: the gateway's notices must not be there.
    systemOnlyFirst: true,
    windows: { [model]: window },
    recordLimit: 500,
    summarizer: stepSummarizer,
    respond(messages) {
      modelCalls++;
      const question = /What is the (shipment code|deploy key)\?/.exec(String(messages.at(-1)?.content));
      if (question !== null)
        return {
          content: `It is ${codeInPrompt(messages, question[1] === 'deploy key' ? 'DK' : 'SH') ?? 'unknown'}.`,
        };
      const seen = callsSeen(messages);
      if (String(messages.find((message) => message.role === 'user')?.content).includes('retry modules'))
        return seen >= moduleCount
          ? { content: 'DONE' }
          : {
              toolCalls: [
                {
                  id: `call_${randomUUID().slice(0, 8)}`,
                  name: 'read_file',
                  arguments: modulePathArguments(seen + 1),
                },
              ],
            };
      if (seen >= target)
        return {
          content: `DONE after ${seen} calls. Deploy key ${codeInPrompt(messages, 'DK') ?? '?'}, shipment ${codeInPrompt(messages, 'SH') ?? '?'}.`,
        };
      return {
        toolCalls: [
          { id: `call_${randomUUID().slice(0, 8)}`, name: 'read_page', arguments: `{"page":${seen + 1}}` },
        ],
      };
    },
  });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    configYaml: `models:\n  - match: ${model}\n    window: ${window}\n    output_reserve: ${outputReserve}\n`,
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

describe('agent loops', () => {
  it('finishes a 40-step session loop of ~1,500-token results in exactly 40 calls, no error', async () => {
    const client = new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: 'sk-agent',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': `loop-${randomUUID()}`, 'x-session-history': 'delta' },
    });
    modelCalls = 0;
    fake.requests.length = 0;
    let messages: OpenAI.ChatCompletionMessageParam[] = [
      {
        role: 'user',
        content: `Read pages 1 to ${target} with read_page, one call each, then say DONE. The deploy key is DK-44812.`,
      },
    ];
    let toolCalls = 0;
    let answer = '';
    for (let step = 0; step < 100; step++) {
      const completion = await client.chat.completions.create({ model, messages, max_tokens: outputReserve });
      const message = completion.choices[0]?.message;
      const calls = message?.tool_calls ?? [];
      if (calls.length === 0) {
        answer = message?.content ?? '';
        break;
      }
      toolCalls += calls.length;
      // The tool runs (the summarizer catches up meanwhile, as it would while a real tool works).
      await harness.gateway.summarizer.idle();
      // A delta client: only the new tool results go with the next request.
      messages = calls.map((call) => ({
        role: 'tool' as const,
        tool_call_id: call.id,
        content: pageWithFacts(
          JSON.parse((call as { function: { arguments: string } }).function.arguments).page as number,
        ),
      }));
    }
    expect(toolCalls).toBe(target);
    // The facts of the user message and of an early tool result were still in view at the end.
    expect(answer).toBe(`DONE after ${target} calls. Deploy key DK-44812, shipment SH-90211.`);
    expect(modelCalls).toBe(target + 1);
    // The turn was compacted in the background: its first steps summarized, the summary said so.
    expect(fake.summaryRequests.length).toBeGreaterThan(0);
    const last = fake.chatRequests.filter((request) => !fake.summaryRequests.includes(request)).at(-1);
    expect(JSON.stringify(last?.body)).toContain("[ctxgate] Summary of this task's earlier steps");
    // And after the turn: a new question is answered from it.
    const followUp = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'What is the shipment code?' }],
    });
    expect(followUp.choices[0]?.message.content).toBe('It is SH-90211.');
    // Every prompt fitted the window as the provider counts it, and was valid (the fake refuses orphans).
    for (const request of fake.chatRequests) {
      const maxTokens = (request.body as { max_tokens?: number }).max_tokens ?? 0;
      expect((request.promptTokens ?? Infinity) + maxTokens).toBeLessThanOrEqual(window);
    }
  });

  it('sends all 12 calls of a stateless turn of ~3,000-token results: the newest whole, the others masked', async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-agent', maxRetries: 0 });
    const turn: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Read the 12 pages and summarize them.' },
    ];
    for (let number = 1; number <= 12; number++) {
      const id = `call_${number}`;
      turn.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id, type: 'function', function: { name: 'read_page', arguments: `{"page":${number}}` } },
          ],
        },
        { role: 'tool', tool_call_id: id, content: page(number, 3_000) },
      );
    }
    fake.requests.length = 0;
    const { response } = await client.chat.completions
      .create({ model, messages: turn, max_tokens: outputReserve })
      .withResponse();
    const sent = (fake.chatRequests.at(-1)?.body as { messages: ChatMessage[] }).messages;
    const sentCalls = sent.flatMap((message) => (message.tool_calls ?? []).map((call) => call.id));
    expect(sentCalls).toEqual(Array.from({ length: 12 }, (_unused, index) => `call_${index + 1}`));
    const results = sent
      .filter((message) => message.role === 'tool')
      .map((message) => String(message.content));
    expect(results).toHaveLength(12);
    expect(results.at(-1)).toBe(page(12, 3_000));
    for (const result of results.slice(0, -1))
      expect(result).toMatch(/^\[result masked — ~\d{4} tokens removed\]$/);
    // What the headers count is what was sent.
    expect(response.headers.get('x-context-masked-tool-results')).toBe('11');
    expect(response.headers.get('x-context-dropped-messages')).toBe('0');
    expect(Number(response.headers.get('x-context-input-tokens'))).toBe(countPromptTokens(sent, undefined));
    expect(callsSeen(sent)).toBe(12);
  });

  it('sends the messages it leaves as they are in the keys and bytes the client wrote, once it changes others', async () => {
    const client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-agent', maxRetries: 0 });
    // Written as OpenAI's own examples write them (tool_call_id before content), as a prompt cache
    // compares them: byte for byte.
    const step = (number: number, tokens: number): OpenAI.ChatCompletionMessageParam[] => [
      {
        role: 'assistant',
        tool_calls: [
          {
            id: `call_${number}`,
            type: 'function',
            function: { name: 'read_page', arguments: `{"page":${number}}` },
          },
        ],
        content: null,
      },
      { role: 'tool', tool_call_id: `call_${number}`, content: page(number, tokens) },
    ];
    const conversation: OpenAI.ChatCompletionMessageParam[] = [
      { content: 'You read pages.', role: 'system' },
      { role: 'user', content: 'Read pages 1 and 2.' },
      ...step(1, 4_000),
      ...step(2, 2_500),
    ];
    fake.requests.length = 0;
    const { response } = await client.chat.completions
      .create({ model, messages: conversation, max_tokens: outputReserve })
      .withResponse();
    expect(response.headers.get('x-context-masked-tool-results')).toBe('1');
    const raw = fake.chatRequests.at(-1)?.rawBody ?? '';
    for (const index of [0, 1, 2, 4, 5])
      expect(raw, `message ${index}`).toContain(JSON.stringify(conversation[index]));
    expect(raw).not.toContain(JSON.stringify(conversation[3]));
  });

  it("keeps the agent's calls verbatim in the turn's summary, where a summarizer paraphrases their paths away", async () => {
    const client = new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: 'sk-agent',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': `calls-${randomUUID()}`, 'x-session-history': 'delta' },
    });
    fake.requests.length = 0;
    let messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: `Read the ${moduleCount} retry modules one by one, then say DONE.` },
    ];
    for (let step = 0; step <= moduleCount; step++) {
      const completion = await client.chat.completions.create({ model, messages, max_tokens: outputReserve });
      const calls = completion.choices[0]?.message.tool_calls ?? [];
      if (calls.length === 0) break;
      await harness.gateway.summarizer.idle();
      messages = calls.map((call, index) => ({
        role: 'tool' as const,
        tool_call_id: call.id,
        content: page(step + index + 1, 1_500),
      }));
    }
    const prompt = JSON.stringify(
      (
        fake.chatRequests.filter((request) => !fake.summaryRequests.includes(request)).at(-1)?.body as {
          messages: ChatMessage[];
        }
      ).messages,
    );
    // The steps the summary's segments stand for: up to the last one's end.
    const summarized = [...prompt.matchAll(/\[ctxgate\] Steps \d+ to (\d+) \(/g)].at(-1);
    expect(summarized).toBeDefined();
    const steps = Number(summarized?.[1]);
    expect(steps).toBeGreaterThan(3);
    // Each summarized step's call is in the prompt as the agent made it (the summarizer wrote only
    // "Read page N."), and no repair call was spent asking for a path.
    expect(prompt).toContain("[ctxgate] The agent's calls in these steps, kept verbatim:");
    for (let module = 1; module <= steps; module++)
      expect(prompt).toContain(JSON.stringify(`- read_file(${modulePathArguments(module)})`).slice(1, -1));
    expect(fake.summaryRequests.length).toBeGreaterThan(0);
    const repairs = fake.summaryRequests.filter((request) =>
      JSON.stringify(request.body).includes('Statements whose facts are missing'),
    );
    expect(repairs.filter((request) => JSON.stringify(request.body).includes('src/retry/'))).toHaveLength(0);
  });
});
