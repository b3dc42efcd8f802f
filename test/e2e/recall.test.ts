// The recall tool (docs/budgeting.md#recall), end to end with the official openai client: a session on a
// small window whose early turns left the window (summarization off), and a fake model that, asked for
// a detail its prompt does not hold, calls the tool when it is offered — as a model does — and answers
// from what the tool returned. The client never sees the tool, its calls or its results; the session
// stores the question and the answer only. Real Redis, the strict fake provider.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic } from '../helpers/fake-anthropic.js';
import { FakeUpstream, type Behaviour, type ChatMessage } from '../helpers/fake-upstream.js';
import { answerFromPrompt, codeFor } from '../helpers/fact-session.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';
import { textOf } from '../helpers/text.js';

const model = 'recall-model';
const window = 4_096;
const words = ['river', 'stone', 'lamp', 'green', 'window', 'quiet', 'harbor', 'paper', 'silver', 'field'];
const filler = (count: number, offset: number): string =>
  Array.from({ length: count }, (_unused, index) => words[(index * 7 + offset) % words.length]).join(' ');

const offered = (body: Record<string, unknown>): boolean =>
  Array.isArray(body.tools) &&
  (body.tools as Array<{ function?: { name?: string } }>).some(
    (tool) => tool.function?.name === 'ctxgate_recall',
  );

/** How the fake model behaves: asked for a code its prompt lacks, it searches when it can. */
let behaviour: 'searches' | 'searches_forever' | 'searches_and_calls_a_tool' = 'searches';
let callNumber = 0;
function respond(messages: ReadonlyArray<ChatMessage>, body: Record<string, unknown>): Behaviour | undefined {
  const last = messages.at(-1);
  const question = /What is the access code for vault (\d+)\?/.exec(textOf(last?.content));
  const searching =
    behaviour === 'searches_forever' ? last?.role === 'tool' || question !== null : question !== null;
  if (!searching || !offered(body)) return undefined;
  const vault = question?.[1] ?? '1';
  const known = messages.some((message) =>
    new RegExp(`\\bK${vault}-\\d{5}\\b`).test(textOf(message.content)),
  );
  if (known && behaviour !== 'searches_forever') return undefined;
  const recall = {
    id: `call_recall_${++callNumber}`,
    name: 'ctxgate_recall',
    arguments: JSON.stringify({ query: `access code vault ${vault}` }),
  };
  if (behaviour === 'searches_and_calls_a_tool')
    return {
      toolCalls: [recall, { id: `call_lookup_${callNumber}`, name: 'lookup', arguments: '{"vault":1}' }],
    };
  return { toolCalls: [recall] };
}

let fake: FakeUpstream;
let withRecall: GatewayHarness;
let withoutRecall: GatewayHarness;
let anthropic: FakeAnthropic;
let native: GatewayHarness;

type AnthropicBlock = { type: string; text?: string; content?: string | Array<{ text?: string }> };
const blocksText = (content: string | AnthropicBlock[]): string =>
  typeof content === 'string'
    ? content
    : content
        .map((block) =>
          block.type === 'text'
            ? (block.text ?? '')
            : block.type === 'tool_result'
              ? typeof block.content === 'string'
                ? block.content
                : (block.content ?? []).map((part) => part.text ?? '').join('')
              : '',
        )
        .join('');

beforeAll(async () => {
  fake = new FakeUpstream({
    windows: { [model]: window },
    answer: answerFromPrompt,
    respond,
    recordLimit: 5_000,
  });
  const upstream = await fake.start();
  const models = `models:\n  - { match: ${model}, window: ${window}, output_reserve: 512 }\n`;
  withRecall = await startGateway({
    env: { UPSTREAM_BASE_URL: upstream, REDIS_URL: inject('redisUrl') },
    configYaml: `${models}context:\n  summarization: off\n  recall: on\n  recall_max_calls: 2\n`,
  });
  withoutRecall = await startGateway({
    env: { UPSTREAM_BASE_URL: upstream, REDIS_URL: inject('redisUrl') },
    configYaml: `${models}context:\n  summarization: off\n`,
  });
  await waitUntilReady(withRecall);
  await waitUntilReady(withoutRecall);
  // Claude behind a kind: anthropic upstream, asked natively: the same model behaviour, in its shapes.
  anthropic = new FakeAnthropic({ window: 200_000 });
  anthropic.respond = (body) => {
    const texts = (body.messages as Array<{ content: string | AnthropicBlock[] }>).map((message) =>
      blocksText(message.content),
    );
    const vault = texts
      .map((text) => /What is the access code for vault (\d+)\?/.exec(text)?.[1])
      .findLast(Boolean);
    if (vault === undefined) return { text: 'Noted.' };
    const code = texts.join('\n').match(new RegExp(`\\bK${vault}-\\d{5}\\b`))?.[0];
    if (code !== undefined) return { text: `The access code for vault ${vault} is ${code}.` };
    const tools = (body.tools as Array<{ name?: string }> | undefined) ?? [];
    return tools.some((tool) => tool.name === 'ctxgate_recall')
      ? { toolUse: { name: 'ctxgate_recall', input: { query: `access code vault ${vault}` } } }
      : { text: 'I do not know that code.' };
  };
  native = await startGateway({
    env: { UPSTREAM_BASE_URL: upstream, REDIS_URL: inject('redisUrl') },
    configYaml: [
      'upstreams:',
      '  - name: anthropic',
      `    base_url: ${await anthropic.start()}`,
      '    kind: anthropic',
      '    models: ["claude-*"]',
      'models:',
      `  - { match: claude-recall, window: ${window}, output_reserve: 512 }`,
      'context:',
      "  summarization: 'off'",
      "  recall: 'on'",
      '',
    ].join('\n'),
  });
  await waitUntilReady(native);
});
afterAll(async () => {
  await withRecall?.close();
  await withoutRecall?.close();
  await native?.close();
  await anthropic?.stop();
  await fake?.stop();
});

/** A session whose first turns state vault codes, then 40 turns of talk: the codes have left the window. */
async function sessionWithCodes(
  harness: GatewayHarness,
  sessionModel = model,
  turns = 44,
): Promise<{ client: OpenAI; sessionId: string }> {
  const sessionId = `recall-${randomUUID()}`;
  const client = new OpenAI({
    baseURL: harness.baseUrl,
    apiKey: 'sk-recall',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': sessionId },
  });
  for (let turn = 0; turn < turns; turn++) {
    const content =
      turn >= 1 && turn <= 3
        ? `Turn ${turn}. ${filler(40, turn)} The access code for vault ${turn} is ${codeFor(turn)}. ${filler(40, turn + 1)}`
        : `Turn ${turn}. ${filler(120, turn)}`;
    await client.chat.completions.create({ model: sessionModel, messages: [{ role: 'user', content }] });
  }
  return { client, sessionId };
}

const chatRequestsSince = (before: number) =>
  fake.chatRequests.slice(before).map((request) => request.body as Record<string, unknown>);

describe('the recall tool', () => {
  it('answers from a turn that left the window, the tool unseen by the client and unstored', async () => {
    behaviour = 'searches';
    const { client, sessionId } = await sessionWithCodes(withRecall);
    const before = fake.chatRequests.length;
    const { data, response } = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'What is the access code for vault 2?' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toContain(codeFor(2));
    expect(data.choices[0]?.message.tool_calls ?? []).toEqual([]);
    expect(data.choices[0]?.finish_reason).toBe('stop');
    expect(response.headers.get('x-ctxgate-recall')).toBe('1');
    // The provider was asked twice: the call, then the question with the passages that hold the code.
    const sent = chatRequestsSince(before);
    expect(sent).toHaveLength(2);
    const result = (sent[1]?.messages as ChatMessage[]).at(-1);
    expect(result?.role).toBe('tool');
    expect(textOf(result?.content)).toContain(codeFor(2));
    expect(textOf(result?.content)).toMatch(
      /^Earlier messages \(not shown above\) that match "access code vault 2"/,
    );
    // The session holds the question and the answer, nothing of the search.
    const history = (await (
      await fetch(`${withRecall.baseUrl}/sessions/${sessionId}/history?limit=1000`, {
        headers: { authorization: 'Bearer sk-recall' },
      })
    ).json()) as { data: ChatMessage[]; total: number };
    expect(history.total).toBe(history.data.length);
    const stored = history.data;
    expect(stored.at(-2)?.content).toBe('What is the access code for vault 2?');
    expect(stored.at(-1)?.content).toContain(codeFor(2));
    expect(JSON.stringify(stored)).not.toContain('ctxgate_recall');
  }, 60_000);

  it("finds a code in the session's archive, numbered as the history numbers it", async () => {
    behaviour = 'searches';
    const { client, sessionId } = await sessionWithCodes(withRecall, model, 80);
    const session = (await (
      await fetch(`${withRecall.baseUrl}/sessions/${sessionId}`, {
        headers: { authorization: 'Bearer sk-recall' },
      })
    ).json()) as { counts: { active: number; total: number } };
    // The turn with the code has moved to the archive.
    expect(session.counts.total - session.counts.active).toBeGreaterThan(10);
    const before = fake.chatRequests.length;
    const data = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'What is the access code for vault 1?' }],
    });
    expect(data.choices[0]?.message.content).toContain(codeFor(1));
    const result = textOf((chatRequestsSince(before)[1]?.messages as ChatMessage[]).at(-1)?.content);
    // Turn 1's user message is the history's third message (turn 0 and its answer come first).
    expect(result).toContain(`[message 2, user] Turn 1.`);
  }, 60_000);

  it('streams the answer that follows the search, with no tool call in the stream', async () => {
    behaviour = 'searches';
    const { client } = await sessionWithCodes(withRecall);
    const stream = await client.chat.completions.create({
      model,
      stream: true,
      messages: [{ role: 'user', content: 'What is the access code for vault 3?' }],
    });
    let content = '';
    let toolDeltas = 0;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      toolDeltas += chunk.choices[0]?.delta.tool_calls?.length ?? 0;
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(content).toContain(codeFor(3));
    expect(toolDeltas).toBe(0);
    expect(finish).toBe('stop');
  }, 60_000);

  it('is not offered unless the policy turns it on: the model then cannot know', async () => {
    behaviour = 'searches';
    const { client } = await sessionWithCodes(withoutRecall);
    const before = fake.chatRequests.length;
    const { data, response } = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'What is the access code for vault 1?' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).not.toContain(codeFor(1));
    expect(response.headers.get('x-ctxgate-recall')).toBeNull();
    expect(chatRequestsSince(before).some(offered)).toBe(false);
  }, 60_000);

  it('gives the client its own tool call, alone and numbered from 0, when the model also searched', async () => {
    behaviour = 'searches_and_calls_a_tool';
    const { client } = await sessionWithCodes(withRecall);
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } },
    ];
    const whole = await client.chat.completions.create({
      model,
      tools,
      messages: [{ role: 'user', content: 'What is the access code for vault 1?' }],
    });
    expect(
      whole.choices[0]?.message.tool_calls?.map(
        (call) => (call as { function: { name: string } }).function.name,
      ),
    ).toEqual(['lookup']);
    expect(whole.choices[0]?.finish_reason).toBe('tool_calls');
    const stream = await client.chat.completions.create({
      model,
      tools,
      stream: true,
      messages: [{ role: 'user', content: 'What is the access code for vault 2?' }],
    });
    const calls = new Map<number, string>();
    for await (const chunk of stream)
      for (const call of chunk.choices[0]?.delta.tool_calls ?? [])
        calls.set(call.index, (calls.get(call.index) ?? '') + (call.function?.name ?? ''));
    expect([...calls]).toEqual([[0, 'lookup']]);
  }, 60_000);

  it('stops searching after recall_max_calls rounds and answers the client', async () => {
    behaviour = 'searches_forever';
    const { client } = await sessionWithCodes(withRecall);
    const before = fake.chatRequests.length;
    const { data, response } = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'What is the access code for vault 1?' }] })
      .withResponse();
    // Two rounds answered, one told the search is over, then the answer: four calls at most.
    expect(chatRequestsSince(before).length).toBeLessThanOrEqual(4);
    expect(Number(response.headers.get('x-ctxgate-recall'))).toBe(3);
    expect(data.choices[0]?.message.tool_calls ?? []).toEqual([]);
    const last = chatRequestsSince(before).at(-1)?.messages as ChatMessage[];
    expect(textOf(last.at(-1)?.content)).toMatch(/No more searches of earlier messages/);
  }, 60_000);

  it('answers a Messages API request bridged onto the provider the same way (Anthropic SDK, streamed)', async () => {
    behaviour = 'searches';
    const { sessionId } = await sessionWithCodes(withRecall);
    const anthropic = new Anthropic({
      baseURL: withRecall.baseUrl.replace(/\/v1$/, ''),
      apiKey: 'sk-recall',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': sessionId },
    });
    const stream = anthropic.messages.stream({
      model,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'What is the access code for vault 1?' }],
    });
    const message = await stream.finalMessage();
    const text = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    expect(text).toContain(codeFor(1));
    expect(message.content.some((block) => block.type === 'tool_use')).toBe(false);
    expect(message.stop_reason).toBe('end_turn');
  }, 60_000);

  it("answers through a kind: anthropic upstream, the calls and results in Anthropic's shapes", async () => {
    const { client } = await sessionWithCodes(native, 'claude-recall');
    const before = anthropic.messageRequests.length;
    const { data, response } = await client.chat.completions
      .create({
        model: 'claude-recall',
        messages: [{ role: 'user', content: 'What is the access code for vault 3?' }],
      })
      .withResponse();
    expect(data.choices[0]?.message.content).toContain(codeFor(3));
    expect(response.headers.get('x-ctxgate-recall')).toBe('1');
    const sent = anthropic.messageRequests.slice(before).map((request) => request.body);
    expect(sent).toHaveLength(2);
    const last = (sent[1]?.messages as Array<{ role: string; content: AnthropicBlock[] }>).at(-1);
    expect(last?.role).toBe('user');
    expect(last?.content[0]?.type).toBe('tool_result');
    expect(blocksText(last?.content ?? [])).toContain(codeFor(3));
  }, 60_000);

  it('searches what a stateless request left out of its own messages', async () => {
    behaviour = 'searches';
    const client = new OpenAI({ baseURL: withRecall.baseUrl, apiKey: 'sk-recall', maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    for (let turn = 0; turn < 40; turn++) {
      messages.push({
        role: 'user',
        content:
          turn === 2
            ? `Turn ${turn}. The access code for vault 5 is ${codeFor(5)}. ${filler(60, turn)}`
            : `Turn ${turn}. ${filler(120, turn)}`,
      });
      messages.push({ role: 'assistant', content: `Noted. ${filler(20, turn)}` });
    }
    messages.push({ role: 'user', content: 'What is the access code for vault 5?' });
    const { data, response } = await client.chat.completions.create({ model, messages }).withResponse();
    expect(Number(response.headers.get('x-context-dropped-messages'))).toBeGreaterThan(10);
    expect(data.choices[0]?.message.content).toContain(codeFor(5));
    expect(response.headers.get('x-ctxgate-recall')).toBe('1');
  }, 60_000);
});
