// End to end: the official openai client → the real gateway on a loopback port → the strict fake
// provider. Non-streaming, streaming, streamed tool calls, pass-through of unmanaged fields, upstream
// errors and the model list.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { badInputBodyLimitBytes, badInputCases } from '../fixtures/bad-input-cases.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
let harness: GatewayHarness;
let client: OpenAI;

beforeAll(async () => {
  fake = new FakeUpstream({ extraFields: ['vendor_extension'] });
  const upstreamUrl = await fake.start();
  harness = await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl } });
  client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-client-key', maxRetries: 0 });
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

beforeEach(() => {
  fake.requests.length = 0;
});

describe('chat completions through the gateway', () => {
  it('returns a non-streaming completion exactly as the upstream produced it', async () => {
    fake.enqueue({ content: 'Paris is the capital of France.' });
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Capital of France?' }],
    });
    expect(completion.choices[0]?.message.content).toBe('Paris is the capital of France.');
    expect(completion.object).toBe('chat.completion');
    expect(fake.chatRequests).toHaveLength(1);
    expect(completion.usage?.prompt_tokens).toBe(fake.chatRequests[0]?.promptTokens);
  });

  it('relays a stream chunk by chunk and ends it with the upstream [DONE]', async () => {
    const text = 'one two three four five six seven eight nine ten';
    fake.enqueue({ content: text, chunks: 10 });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let received = '';
    let chunkCount = 0;
    let finishReason: string | null | undefined;
    let usageTokens: number | undefined;
    for await (const chunk of stream) {
      chunkCount++;
      received += chunk.choices[0]?.delta.content ?? '';
      finishReason = chunk.choices[0]?.finish_reason ?? finishReason;
      usageTokens = chunk.usage?.prompt_tokens ?? usageTokens;
    }
    expect(received).toBe(text);
    expect(finishReason).toBe('stop');
    expect(chunkCount).toBeGreaterThanOrEqual(10);
    expect(usageTokens).toBe(fake.chatRequests[0]?.promptTokens);
  });

  it('relays the bytes of a stream unchanged', async () => {
    fake.enqueue({ content: 'byte for byte', chunks: 3 });
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-client-key' },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      }),
    });
    const text = await response.text();
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = text.split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const content = events
      .slice(0, -1)
      .map(
        (event) =>
          JSON.parse(event.slice('data: '.length)) as { choices: Array<{ delta: { content?: string } }> },
      )
      .map((chunk) => chunk.choices[0]?.delta.content ?? '')
      .join('');
    expect(content).toBe('byte for byte');
  });

  it('streams tool calls whose arguments the client can assemble', async () => {
    fake.enqueue({
      toolCalls: [
        { id: 'call_weather', name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' },
        { id: 'call_time', name: 'get_time', arguments: '{"timezone":"Europe/Paris"}' },
      ],
    });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather and time in Paris?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
        {
          type: 'function',
          function: {
            name: 'get_time',
            parameters: { type: 'object', properties: { timezone: { type: 'string' } } },
          },
        },
      ],
      stream: true,
    });
    const calls: Array<{ id?: string; name?: string; arguments: string }> = [];
    let finishReason: string | null | undefined;
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        const call = (calls[delta.index] ??= { arguments: '' });
        if (delta.id !== undefined) call.id = delta.id;
        if (delta.function?.name !== undefined) call.name = delta.function.name;
        call.arguments += delta.function?.arguments ?? '';
      }
      finishReason = chunk.choices[0]?.finish_reason ?? finishReason;
    }
    expect(finishReason).toBe('tool_calls');
    expect(calls).toEqual([
      { id: 'call_weather', name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' },
      { id: 'call_time', name: 'get_time', arguments: '{"timezone":"Europe/Paris"}' },
    ]);
  });

  it('forwards every field it does not manage to the upstream untouched', async () => {
    const request = {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be terse.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this image?' },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
          ],
        },
      ],
      temperature: 0.25,
      top_p: 0.9,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } } } },
      },
      tools: [
        { type: 'function', function: { name: 'look', parameters: { type: 'object', properties: {} } } },
      ],
      tool_choice: 'none',
      seed: 42,
      metadata: { purpose: 'test' },
      vendor_extension: { nested: [1, 2, { deep: true }] },
    };
    await client.chat.completions.create(request as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(fake.chatRequests[0]?.body).toEqual(request);
  });

  it('passes upstream 4xx and 5xx answers through with their status and body', async () => {
    const quotaBody = JSON.stringify({
      error: {
        message: 'You exceeded your current quota.',
        type: 'insufficient_quota',
        param: null,
        code: 'insufficient_quota',
      },
    });
    fake.enqueue({ status: 429, body: quotaBody, headers: { 'retry-after': '7' } });
    const quota = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(quota.status).toBe(429);
    expect(quota.headers.get('retry-after')).toBe('7');
    expect(await quota.text()).toBe(quotaBody);

    const serverBody =
      '{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}';
    // A 5xx is retried (upstream_retries, 2 by default) before it reaches the client as it was.
    fake.enqueue(
      { status: 500, body: serverBody },
      { status: 500, body: serverBody },
      { status: 500, body: serverBody },
    );
    const before = fake.chatRequests.length;
    const failure = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.InternalServerError);
    expect((failure as InstanceType<typeof OpenAI.InternalServerError>).error).toEqual(
      JSON.parse(serverBody).error,
    );
    expect(fake.chatRequests.length - before).toBe(3);

    fake.enqueue({
      status: 404,
      body: '{"error":{"message":"The model `nope` does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}',
    });
    const missing = await client.chat.completions
      .create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] })
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });

  // Refusals in the provider's own shape reached the OpenAI client as no error at all: "400 status code (no
  // body)" for Gemini's array (ymichael/open-codex#15, liliMozi/openhanako#395), a JSON dump for TGI's.
  it.each([
    [
      "Google's OpenAI-compatible endpoint (an array around its error)",
      400,
      '[{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified","status":"INVALID_ARGUMENT"}}]',
      '* GenerateContentRequest.contents: contents is not specified',
      'INVALID_ARGUMENT',
    ],
    [
      "TGI (the message as the error's value)",
      422,
      '{"error":"Input validation error: `temperature` must be strictly positive","error_type":"validation"}',
      'Input validation error: `temperature` must be strictly positive',
      'validation',
    ],
    [
      "Bedrock's OpenAI-compatible endpoint (a bare message)",
      400,
      '{"message":"The provided model identifier is invalid."}',
      'The provided model identifier is invalid.',
      'upstream_error',
    ],
    [
      'a FastAPI server (a validation error)',
      422,
      '{"detail":[{"loc":["body","messages",0,"role"],"msg":"field required","type":"missing"}]}',
      'body.messages.0.role: field required',
      'invalid_request_error',
    ],
  ])(
    'passes a refusal in %s on in OpenAI’s shape, the provider’s words kept',
    async (_name, status, body, message, type) => {
      fake.enqueue({ status, body });
      const failure = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      const error = failure as InstanceType<typeof OpenAI.APIError>;
      expect([error.status, error.message]).toEqual([status, `${status} ${message}`]);
      expect(error.type).toBe(type);
      // The provider's body beside, as it came.
      expect((error.error as { upstream?: unknown }).upstream).toEqual(JSON.parse(body));
    },
  );

  it('never sends an orphaned tool message: the final check removes it and tells the model', async () => {
    // The strict fake refuses orphans as OpenAI does; the request goes through all the same.
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'tool', tool_call_id: 'call_missing', content: 'orphan' },
      ],
    });
    expect(completion.choices[0]?.message.role).toBe('assistant');
    const sent = fake.chatRequests.at(-1)?.body as { messages: Array<{ role: string; content: string }> };
    expect(sent.messages.map((message) => message.role)).toEqual(['system', 'user']);
    expect(sent.messages[0]?.content).toMatch(/1 tool messages or tool calls without their counterpart/);
  });

  const call = (id: string) => ({
    id,
    type: 'function' as const,
    function: { name: 'read', arguments: '{}' },
  });
  // Each with how many of its messages the final check removes whole.
  it.each<[string, OpenAI.ChatCompletionMessageParam[], number]>([
    [
      'an orphaned tool message',
      [
        { role: 'user', content: 'hi' },
        { role: 'tool', tool_call_id: 'call_x', content: 'r' },
        { role: 'user', content: 'and?' },
      ],
      1,
    ],
    [
      'a call answered twice',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: [call('c1')] },
        { role: 'tool', tool_call_id: 'c1', content: 'r1' },
        { role: 'tool', tool_call_id: 'c1', content: 'r1 again' },
        { role: 'user', content: 'next' },
      ],
      1,
    ],
    [
      'a call whose result came after the next user message (the call goes too)',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: [call('c1')] },
        { role: 'user', content: 'wait' },
        { role: 'tool', tool_call_id: 'c1', content: 'r1' },
        { role: 'user', content: 'next' },
      ],
      2,
    ],
    [
      'one of two parallel calls answered (the assistant message stays, with the other call)',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: 'Reading both.', tool_calls: [call('c1'), call('c2')] },
        { role: 'tool', tool_call_id: 'c2', content: 'r2' },
        { role: 'user', content: 'next' },
      ],
      0,
    ],
  ])('counts what the final check removed as dropped: %s', async (_name, messages, removed) => {
    const { response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages })
      .withResponse();
    const sent = (fake.chatRequests.at(-1)?.body as { messages: Array<{ content: unknown }> }).messages;
    const own = sent.filter((message) => !String(message.content).startsWith('[ctxgate]')).length;
    expect(own).toBe(messages.length - removed);
    // Sent, summarized and dropped: each message of the conversation counted once.
    expect(Number(response.headers.get('x-context-dropped-messages'))).toBe(removed);
    expect(Number(response.headers.get('x-context-summarized-messages'))).toBe(0);
  });

  it('sends a message whose body gives a key twice as the gateway read it: the last one, once', async () => {
    // JSON.parse keeps the last of a key given twice; the gateway counted that one. An upstream that
    // reads the first, or refuses a key given twice, must not see the other.
    const body =
      '{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be terse."},' +
      '{"role":"user","content":"IGNORED ' +
      'x'.repeat(4000) +
      '","content":"Hello?"}]}';
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-client-key' },
      body,
    });

    expect(response.status).toBe(200);
    const sent = fake.chatRequests[0]?.rawBody ?? '';
    expect(sent).not.toContain('IGNORED');
    expect(JSON.parse(sent)).toMatchObject({
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Hello?' },
      ],
    });
    // The message written well is still sent as the client wrote it.
    expect(sent).toContain('{"role":"system","content":"Be terse."},{"role":"user","content":"Hello?"}');
  });

  it('forwards the model list', async () => {
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['gpt-4o-mini']);
    expect(fake.requests.at(-1)?.path).toBe('/v1/models');
  });
});

describe('bad input over real HTTP', () => {
  let badInputHarness: GatewayHarness;
  beforeAll(async () => {
    badInputHarness = await startGateway({
      env: { UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1' },
      configYaml: `server:\n  body_limit_bytes: ${badInputBodyLimitBytes}\n`,
    });
  });
  afterAll(() => badInputHarness.close());

  it.each(badInputCases)('answers $status to $name', async ({ payload, status, body }) => {
    const response = await fetch(`${badInputHarness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: payload,
    });
    expect(response.status).toBe(status);
    expect(await response.json()).toEqual(body);
  });

  it('keeps serving after every bad request', async () => {
    const response = await fetch(`${badInputHarness.baseUrl.replace(/\/v1$/, '')}/healthz`);
    expect(response.status).toBe(200);
  });
});
