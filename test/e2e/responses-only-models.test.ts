// A model OpenAI serves through the Responses API alone (its Codex and pro models), asked by the official
// OpenAI client's chat completions (docs/budgeting.md#models-served-by-the-responses-api-alone): the
// gateway's chat completion was refused ("This model is only supported in v1/responses and not in
// v1/chat/completions.", a 404) on every request. Now the first is asked again of the Responses API, and
// every later one there at once: answers whole and streamed, a tool loop, the usage counted.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

const model = 'gpt-5.1-codex-mini';
let fake: FakeUpstream;
let harness: GatewayHarness;
let client: OpenAI;

/** A model as OpenAI serves gpt-5.4 and the gpt-5.6 family: tools with reasoning refused on chat completions. */
const reasoningModel = 'gpt-5.6-luna';
/** A Responses-only model served with a window far below the one the gateway's table gives its name. */
const narrowModel = 'gpt-5.1-codex-max';

beforeAll(async () => {
  fake = new FakeUpstream({
    responsesOnly: [model, narrowModel],
    toolsNeedResponses: [reasoningModel],
    windows: { [narrowModel]: 3_000 },
  });
  harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
  client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-test', maxRetries: 0 });
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const paths = (from: number) => fake.requests.slice(from).map((request) => [request.path, request.status]);

describe('a model served by the Responses API alone, asked by chat completions', () => {
  it('answers after one refusal, and asks the Responses API at once from then on, streamed too', async () => {
    let from = fake.requests.length;
    fake.enqueue({});
    fake.enqueue({ content: 'First answer.' });
    const first = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Hello.' }],
      max_completion_tokens: 500,
    });
    expect(first.choices[0]?.message.content).toBe('First answer.');
    expect(first.choices[0]?.finish_reason).toBe('stop');
    expect(first.usage?.completion_tokens).toBe(7);
    expect(paths(from)).toEqual([
      ['/v1/chat/completions', 404],
      ['/v1/responses', 200],
    ]);
    expect(fake.requests.at(-1)?.body).toMatchObject({ max_output_tokens: 500, store: false });

    from = fake.requests.length;
    fake.enqueue({ content: 'Streamed answer.' });
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Again.' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage ??= chunk.usage;
    }
    expect(text).toBe('Streamed answer.');
    expect(usage?.completion_tokens).toBe(7);
    expect(paths(from)).toEqual([['/v1/responses', 200]]);
  });

  it('cuts the answer at a stop sequence itself: the Responses API takes none', async () => {
    fake.enqueue({ content: 'Thought: look it up.\nObservation: it rains.' });
    const answer = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Think, then stop.' }],
      stop: ['Observation:'],
    });
    expect(answer.choices[0]?.message.content).toBe('Thought: look it up.\n');
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    expect(Object.keys(fake.requests.at(-1)?.body as object)).not.toContain('stop');
  });

  it('runs a tool loop: the call comes back as a tool call, its result goes as the call’s output', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
    fake.enqueue({ toolCalls: [{ id: 'call_w', name: 'weather', arguments: '{"city":"Oslo"}' }] });
    const asked = await client.chat.completions.create({ model, messages, tools });
    const call = asked.choices[0]?.message.tool_calls?.[0];
    expect(asked.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call).toMatchObject({ id: 'call_w', function: { name: 'weather', arguments: '{"city":"Oslo"}' } });
    messages.push(asked.choices[0]?.message as OpenAI.ChatCompletionMessageParam, {
      role: 'tool',
      tool_call_id: 'call_w',
      content: 'Sunny, 4 °C.',
    });
    fake.enqueue({ content: 'Sunny in Oslo.' });
    const answered = await client.chat.completions.create({ model, messages, tools });
    expect(answered.choices[0]?.message.content).toBe('Sunny in Oslo.');
    // The Responses API took the tool (flattened) and the output after its call.
    expect(fake.requests.at(-1)?.body).toMatchObject({
      tools: [{ type: 'function', name: 'weather' }],
      input: [
        { role: 'user', content: 'Weather in Oslo?' },
        { type: 'function_call', call_id: 'call_w', name: 'weather' },
        { type: 'function_call_output', call_id: 'call_w', output: 'Sunny, 4 °C.' },
      ],
    });
  });
});

describe('a model served by the Responses API alone, over its window', () => {
  // The Responses API refuses an input over the window in words of no numbers ("Your input exceeds the
  // context window of this model."): the gateway recovers there as on a chat completion — smaller, asked
  // of the Responses API again — and the next request fits first time.
  it('is recovered from before the client sees the refusal, and the next request fits first time', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    for (let turn = 0; turn < 40; turn++)
      messages.push(
        { role: 'user', content: `Question ${turn}: ${'about the weather in Oslo and Bergen '.repeat(4)}` },
        {
          role: 'assistant',
          content: `Answer ${turn}: ${'it rains on the west coast most days '.repeat(4)}`,
        },
      );
    messages.push({ role: 'user', content: 'And tomorrow?' });
    const from = fake.requests.length;
    fake.setDefault({ content: 'Rain again.' });
    const { data, response } = await client.chat.completions
      .create({ model: narrowModel, messages })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('Rain again.');
    const asked = fake.requests.slice(from);
    expect(asked.map((request) => request.path)).toContain('/v1/responses');
    expect(asked.at(-1)?.status).toBe(200);
    expect(Number(response.headers.get('x-context-retries'))).toBeGreaterThan(0);
    // The current turn went; what went fit the window the gateway was not told.
    const input = (asked.at(-1)?.body as { input: Array<{ content?: unknown }> }).input;
    expect(input.at(-1)?.content).toBe('And tomorrow?');
    expect(asked.at(-1)?.promptTokens).toBeLessThanOrEqual(3_000);

    const next = fake.requests.length;
    const again = await client.chat.completions
      .create({
        model: narrowModel,
        messages: [
          ...messages,
          { role: 'assistant', content: 'Rain again.' },
          { role: 'user', content: 'And after?' },
        ],
      })
      .withResponse();
    expect(again.response.headers.get('x-context-retries')).toBe('0');
    expect(fake.requests.slice(next).map((request) => request.path)).toEqual(['/v1/responses']);
  });
});

describe('a model GitHub Copilot serves through its Responses API alone', () => {
  it('is asked there after its refusal ("is not accessible via the /chat/completions endpoint")', async () => {
    const from = fake.requests.length;
    // As Copilot's API answers a chat completion for gpt-5.4 and later (caozhiyuan/copilot-api#113).
    fake.enqueue({
      status: 400,
      body: '{"error":{"message":"model \\"gpt-5.4-mini\\" is not accessible via the /chat/completions endpoint","code":"unsupported_api_for_model"}}',
    });
    fake.enqueue({ content: 'Through Copilot.' });
    const answer = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages: [{ role: 'user', content: 'Hello.' }],
    });
    expect(answer.choices[0]?.message.content).toBe('Through Copilot.');
    expect(fake.requests.slice(from).map((request) => request.path)).toEqual([
      '/v1/chat/completions',
      '/v1/responses',
    ]);
  });
});

// OpenAI's gpt-5.4 and gpt-5.6 (sol, terra, luna) refuse a chat completion that offers function tools with
// any reasoning effort but 'none' — the model's default too, when the request names none — "Function tools
// with reasoning_effort are not supported for gpt-5.6-terra in /v1/chat/completions. To use function
// tools, use /v1/responses or set reasoning_effort to 'none'." (GEMISIS/leviath#333, laurent22/joplin#16451,
// pipecat-ai/pipecat#4043). Every agent through the gateway offers tools: each of its requests failed.
describe('a model that takes function tools with reasoning only through the Responses API', () => {
  const tools: OpenAI.ChatCompletionTool[] = [
    { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } },
  ];

  it('is asked of the Responses API with the effort the client asked, not dropped to none; and from then on', async () => {
    let from = fake.requests.length;
    fake.enqueue({});
    fake.enqueue({ toolCalls: [{ id: 'call_r', name: 'weather', arguments: '{}' }] });
    const asked = await client.chat.completions.create({
      model: reasoningModel,
      messages: [{ role: 'user', content: 'Weather?' }],
      tools,
      reasoning_effort: 'high',
    });
    expect(asked.choices[0]?.message.tool_calls?.[0]).toMatchObject({ id: 'call_r' });
    expect(paths(from)).toEqual([
      ['/v1/chat/completions', 400],
      ['/v1/responses', 200],
    ]);
    expect(fake.requests.at(-1)?.body).toMatchObject({ reasoning: { effort: 'high' } });

    // A request that names no effort (the model's default is refused too) goes there at once.
    from = fake.requests.length;
    fake.enqueue({ content: 'Sunny.' });
    const next = await client.chat.completions.create({
      model: reasoningModel,
      messages: [{ role: 'user', content: 'And now?' }],
      tools,
    });
    expect(next.choices[0]?.message.content).toBe('Sunny.');
    expect(paths(from)).toEqual([['/v1/responses', 200]]);
  });

  // The Responses API gives a reasoning model's reasoning encrypted when asked (store is false), and it
  // goes back before the call it led to: the model goes on from it instead of reasoning afresh each step
  // (OpenAI's cookbook, "Better performance from reasoning models"). A reasoning item the provider did not
  // encrypt, or one with nothing after it, it refuses.
  it('carries the reasoning a step gave back with its call: whole, and from a stream through a session', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
    fake.enqueue({ toolCalls: [{ id: 'call_o', name: 'weather', arguments: '{}' }] });
    const asked = await client.chat.completions.create({
      model: reasoningModel,
      messages,
      tools,
      reasoning_effort: 'medium',
    });
    expect(fake.requests.at(-1)?.body).toMatchObject({ include: ['reasoning.encrypted_content'] });
    const step = asked.choices[0]?.message as OpenAI.ChatCompletionMessage & { reasoning_details?: unknown };
    expect(step.reasoning_details).toEqual([
      expect.objectContaining({ type: 'reasoning.encrypted', format: 'openai-responses-v1' }),
    ]);
    messages.push(step, { role: 'tool', tool_call_id: 'call_o', content: 'Sunny.' });
    fake.enqueue({ content: 'Sunny in Oslo.' });
    await client.chat.completions.create({
      model: reasoningModel,
      messages,
      tools,
      reasoning_effort: 'medium',
    });
    const input = (
      fake.requests.at(-1)?.body as { input: Array<{ type?: string; encrypted_content?: string }> }
    ).input;
    expect(input.map((item) => item.type ?? 'message')).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call_output',
    ]);
    expect(input[1]?.encrypted_content).toBe((step.reasoning_details as Array<{ data: string }>)[0]?.data);

    // Streamed, in a session: the gateway keeps the step with its reasoning, and sends both back.
    const session = { headers: { 'x-session-id': `reasoning-${Date.now()}` } };
    fake.enqueue({ toolCalls: [{ id: 'call_s', name: 'weather', arguments: '{}' }] });
    const stream = await client.chat.completions.create(
      {
        model: reasoningModel,
        messages: [{ role: 'user', content: 'Weather in Bergen?' }],
        tools,
        reasoning_effort: 'medium',
        stream: true,
      },
      session,
    );
    for await (const chunk of stream) void chunk;
    fake.enqueue({ content: 'Rain in Bergen.' });
    await client.chat.completions.create(
      {
        model: reasoningModel,
        messages: [{ role: 'tool', tool_call_id: 'call_s', content: 'Rain.' }],
        tools,
        reasoning_effort: 'medium',
      },
      session,
    );
    const resent = (fake.requests.at(-1)?.body as { input: Array<{ type?: string }> }).input;
    expect(resent.map((item) => item.type ?? 'message')).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call_output',
    ]);
  });
});
