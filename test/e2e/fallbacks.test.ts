// End to end (issue "Reactive recovery", item 3): context-window fallbacks. Two strict fake providers of
// different windows on two upstreams; the small model names the large one as its fallback. A turn too
// big for the small model, and a conversation whose retry would drop most of its history, go to the
// large model, re-fitted to it, and say so; a session keeps one conversation across the switch.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, mistralUnknownFields } from '../helpers/fake-upstream.js';
import { prose } from '../helpers/text.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const smallWindow = 4_000;
const largeWindow = 32_000;
let small: FakeUpstream;
let large: FakeUpstream;
/** As Mistral's API: its own tool call ids are 9 letters and digits, and it refuses any other. */
let mistral: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  small = new FakeUpstream({ windows: { 'small-chat': smallWindow, 'hidden-small': smallWindow } });
  large = new FakeUpstream({ defaultWindow: largeWindow });
  mistral = new FakeUpstream({
    defaultWindow: largeWindow,
    mistralToolCallIds: true,
    forbiddenFields: mistralUnknownFields,
    mistralMessages: true,
  });
  const smallUrl = await small.start();
  const largeUrl = await large.start();
  const mistralUrl = await mistral.start();
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: smallUrl, REDIS_URL: inject('redisUrl') },
    configYaml: [
      'upstreams:',
      '  - name: big',
      `    base_url: ${largeUrl}`,
      '    models: ["large-chat"]',
      '  - name: mistral',
      `    base_url: ${mistralUrl}`,
      '    models: ["mistral-large"]',
      'models:',
      '  - match: small-chat',
      `    window: ${smallWindow}`,
      '    output_reserve: 500',
      '    fallbacks: ["large-chat"]',
      // The gateway believes this one is four times larger than its provider's real window.
      '  - match: hidden-small',
      '    window: 16000',
      '    output_reserve: 500',
      '    fallbacks: ["large-chat"]',
      '  - match: lonely-small',
      `    window: ${smallWindow}`,
      '    output_reserve: 500',
      // A small OpenAI-style model whose conversations go on at Mistral when they outgrow it.
      '  - match: small-tools',
      `    window: ${smallWindow}`,
      '    output_reserve: 500',
      '    fallbacks: ["mistral-large"]',
      '  - match: mistral-large',
      `    window: ${largeWindow}`,
      '    output_reserve: 500',
      '  - match: large-chat',
      `    window: ${largeWindow}`,
      '    output_reserve: 500',
      '',
    ].join('\n'),
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await small.stop();
  await large.stop();
  await mistral.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-fallback', maxRetries: 0, defaultHeaders: headers });

/** About 110 tokens a turn. */
function conversation(turns: number): OpenAI.ChatCompletionMessageParam[] {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are terse.' }];
  for (let turn = 0; turn < turns; turn++) {
    messages.push({ role: 'user', content: `Question ${turn}: ${prose(50, turn)}` });
    messages.push({ role: 'assistant', content: `Answer ${turn}: ${prose(50, turn + 3)}` });
  }
  messages.push({ role: 'user', content: 'And the last question?' });
  return messages;
}

const calls = (fake: FakeUpstream, before: number) => fake.chatRequests.slice(before);

describe('context-window fallbacks', () => {
  it('sends a turn too big for the small model to the large one, re-fitted, and says so', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: `Summarize: ${prose(6_000, 1)}` },
    ];
    // Without a fallback the gateway cannot send it at all.
    const refused = await client()
      .chat.completions.create({ model: 'lonely-small', messages, max_tokens: 300 })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('context_length_exceeded');

    const [smallBefore, largeBefore] = [small.chatRequests.length, large.chatRequests.length];
    large.setDefault({ content: 'from the large model' });
    const { data, response } = await client()
      .chat.completions.create({ model: 'small-chat', messages, max_tokens: 300 })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('from the large model');
    expect(response.headers.get('x-context-fallback')).toBe('large-chat');
    expect(calls(small, smallBefore)).toHaveLength(0);
    const [sent] = calls(large, largeBefore);
    expect((sent?.body as { model: string }).model).toBe('large-chat');
    expect(sent?.promptTokens ?? Infinity).toBeLessThanOrEqual(largeWindow - 300);

    // The preview is the run: it names the fallback too.
    const preview = await fetch(`${harness.baseUrl}/context/render`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-fallback' },
      body: JSON.stringify({ model: 'small-chat', messages, max_tokens: 300 }),
    });
    expect(preview.status).toBe(200);
    expect(preview.headers.get('x-context-fallback')).toBe('large-chat');
  });

  it("takes a tool loop on to Mistral, which refuses an OpenAI answer's leftovers and another provider's tool call ids: learned, sent as it takes them", async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Read the report and summarize it.' },
    ];
    // The small model's call, with an id as OpenAI writes them.
    small.enqueue({ toolCalls: [{ id: 'call_Kq3vT9xLm2Pq8Rz1', name: 'read', arguments: '{}' }] });
    const first = await client().chat.completions.create({ model: 'small-tools', messages, max_tokens: 300 });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(call?.id).toBe('call_Kq3vT9xLm2Pq8Rz1');
    messages.push(
      first.choices[0]?.message as OpenAI.ChatCompletionMessageParam,
      { role: 'tool', tool_call_id: call?.id ?? '', content: 'Sales rose.' },
      { role: 'assistant', content: 'Sales rose.' },
      { role: 'user', content: `Now this one: ${prose(6_000, 9)}` },
    );
    // The next question does not fit the small model: the conversation goes on at Mistral.
    const before = mistral.chatRequests.length;
    mistral.setDefault({ content: 'A summary.' });
    for (const turn of [1, 2]) {
      const { data, response } = await client()
        .chat.completions.create({ model: 'small-tools', messages, max_tokens: 300 })
        .withResponse();
      expect(data.choices[0]?.message.content, `turn ${turn}`).toBe('A summary.');
      expect(response.headers.get('x-context-fallback')).toBe('mistral-large');
    }
    // Refused once for what the OpenAI SDK's message carries beside the answer (`refusal: null`,
    // `annotations: []`: Mistral's 422), once for the id, then sent without those fields and with ids
    // Mistral takes, the call and its result alike; the second request was sent so at once.
    const bodies = calls(mistral, before).map(
      (request) => request.body as { messages: Array<Record<string, unknown>> },
    );
    expect(bodies[0]?.messages[2]).toMatchObject({ refusal: null, annotations: [] });
    for (const body of bodies.slice(1))
      for (const message of body.messages) {
        expect(message).not.toHaveProperty('refusal');
        expect(message).not.toHaveProperty('annotations');
      }
    const sent = calls(mistral, before).map((request) =>
      (
        request.body as { messages: Array<{ tool_calls?: Array<{ id: string }>; tool_call_id?: string }> }
      ).messages.flatMap((message) => [
        ...(message.tool_calls ?? []).map((one) => one.id),
        ...(message.tool_call_id === undefined ? [] : [message.tool_call_id]),
      ]),
    );
    expect(sent).toHaveLength(4);
    expect(sent[0]).toEqual(['call_Kq3vT9xLm2Pq8Rz1', 'call_Kq3vT9xLm2Pq8Rz1']);
    expect(sent[1]).toEqual(['call_Kq3vT9xLm2Pq8Rz1', 'call_Kq3vT9xLm2Pq8Rz1']);
    const [callId, resultId] = sent[2] ?? [];
    expect(callId).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(resultId).toBe(callId);
    expect(sent[3]).toEqual([callId, callId]);
  });

  it('goes to the large model when a retry would drop most of the history, streaming too', async () => {
    const messages = conversation(60);
    const [smallBefore, largeBefore] = [small.chatRequests.length, large.chatRequests.length];
    large.setDefault({ content: 'the whole history seen' });
    const { data, response } = await client()
      .chat.completions.create({ model: 'hidden-small', messages, max_tokens: 300, stream: true })
      .withResponse();
    let content = '';
    for await (const chunk of data) content += chunk.choices[0]?.delta.content ?? '';
    expect(content).toBe('the whole history seen');
    expect(response.headers.get('x-context-fallback')).toBe('large-chat');
    expect(response.headers.get('x-context-retries')).toBe('1');
    // The small provider refused once; the large one got every message, nothing dropped.
    expect(calls(small, smallBefore)).toHaveLength(1);
    const [sent] = calls(large, largeBefore);
    expect((sent?.body as { messages: unknown[] }).messages).toHaveLength(messages.length);
  });

  it('keeps one conversation in a session across the switch', async () => {
    const sessionId = `fallback-${randomUUID()}`;
    const sessionClient = client({ 'x-session-id': sessionId });
    const turns = ['A short question.', `Read this: ${prose(5_000, 2)}`, 'And a short one again.'];
    const answeredBy: Array<string | null> = [];
    for (const [index, content] of turns.entries()) {
      small.setDefault({ content: `small answer ${index}` });
      large.setDefault({ content: `large answer ${index}` });
      const { data, response } = await sessionClient.chat.completions
        .create({ model: 'small-chat', messages: [{ role: 'user', content }], max_tokens: 300 })
        .withResponse();
      answeredBy.push(response.headers.get('x-context-fallback'));
      expect(data.choices[0]?.message.content).toMatch(new RegExp(`answer ${index}$`));
    }
    expect(answeredBy).toEqual([null, 'large-chat', null]);
    const history = await fetch(`${harness.baseUrl}/sessions/${sessionId}/history?limit=100`, {
      headers: { authorization: 'Bearer sk-fallback' },
    });
    const { data: messages } = (await history.json()) as { data: Array<{ role: string; content: string }> };
    expect(messages.map((message) => message.content)).toEqual([
      turns[0],
      'small answer 0',
      turns[1],
      'large answer 1',
      turns[2],
      'small answer 2',
    ]);
  });
});
