// End to end (docs/budgeting.md#what-the-gateway-learns): learned state no single answer can poison,
// against the strict fake, tried as the attacker did — images the gateway counts low against a
// provider whose overflow text carries no numbers, a provider that echoes the client's input back in its
// error, Cohere's output cap — then every other tenant's ordinary requests must still be served. Also:
// a tool loop then a plain chat with the same tools (the tool set's cost not inflated by the loop, no
// false truncation alarm), small windows answering "hi" without max_tokens, and the admin endpoint that
// lists and resets what was learned.
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type ChatMessage, type OverflowFacts } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const window = 4_000;
const adminKey = 'adm-learned-state';
let fake: FakeUpstream;
let upstreamUrl: string;
let overflowAnswer: ((facts: OverflowFacts) => { status: number; body: string }) | undefined;
const harnesses: GatewayHarness[] = [];

/** Groq's and Bedrock's style: an overflow that says so and gives no numbers. */
const noNumbers = () => ({
  status: 400,
  body: JSON.stringify({
    error: {
      message: 'Please reduce the length of the messages or completion.',
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
    },
  }),
});

/** A local model served with a chat template that adds 30 tokens to every prompt (Llama 3's date header). */
const templated = `templated-${Date.now()}`;
/** A local model whose usage counts only what its prompt cache did not hold (Ollama 0.30's did). */
const cacheCounted = `cache-counted-${Date.now()}`;
/** An OpenAI reasoning model deployed under a name the gateway cannot tell it by: it refuses max_tokens. */
const deployment = `deployment-${Date.now()}`;
/** A model whose prompt alone is capped below its window, as GPT-5's 272,000 of 400,000 tokens. */
const inputCapped = `input-capped-${Date.now()}`;
const inputCap = 2_720;

beforeAll(async () => {
  fake = new FakeUpstream({
    defaultWindow: window,
    templateTokens: { [templated]: 30 },
    countsUncachedOnly: [cacheCounted],
    inputLimits: { [inputCapped]: inputCap },
    // The provider sizes a low-detail image at 765 tokens; the gateway's tile formula says 85.
    imageTokens: 765,
    reasoningModels: [deployment],
    overflowAnswer: (facts) => (overflowAnswer ?? noNumbers)(facts),
  });
  upstreamUrl = await fake.start();
});
afterEach(async () => {
  overflowAnswer = undefined;
  fake.clearQueue();
  fake.setDefault({});
  for (const harness of harnesses.splice(0)) await harness.close();
});
afterAll(async () => {
  await fake.stop();
});

async function gateway(
  model: string,
  entry: { window?: number; outputReserve?: number; maxInput?: number } = {},
): Promise<GatewayHarness> {
  // The model's default output reserve (4,096) unless one is given.
  const reserve = entry.outputReserve === undefined ? '' : `, output_reserve: ${entry.outputReserve}`;
  const maxInput = entry.maxInput === undefined ? '' : `, max_input: ${entry.maxInput}`;
  const harness = await startGateway({
    env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl'), ADMIN_API_KEY: adminKey },
    configYaml: `models:\n  - { match: "${model}", window: ${entry.window ?? window}${reserve}${maxInput}, tokenizer: o200k_base }\n`,
  });
  harnesses.push(harness);
  await waitUntilReady(harness);
  return harness;
}

const client = (harness: GatewayHarness, tenant: string) =>
  new OpenAI({ baseURL: harness.baseUrl, apiKey: `sk-${tenant}`, maxRetries: 0 });

const prose = (words: number, seed: number) =>
  Array.from({ length: words }, (_unused, index) => `word${(seed * 17 + index) % 97}`).join(' ');

/** Ordinary requests of other tenants: 1,000 to 2,500 tokens of text (two a word), no max_tokens. */
async function othersServed(harness: GatewayHarness, model: string): Promise<number> {
  let served = 0;
  for (let index = 0; index < 20; index++) {
    const size = 500 + ((index * 79) % 750);
    const answer = await client(harness, `other-${index % 5}`)
      .chat.completions.create({ model, messages: [{ role: 'user', content: prose(size, index) }] })
      .catch((error: unknown) => error);
    if (!(answer instanceof Error)) served++;
  }
  return served;
}

async function learned(harness: GatewayHarness) {
  const response = await fetch(`${harness.baseUrl}/admin/learned`, {
    headers: { authorization: `Bearer ${adminKey}` },
  });
  return ((await response.json()) as { data: Array<Record<string, unknown> & { model: string }> }).data;
}

describe('one tenant cannot shrink a model for everyone', () => {
  it('images counted low against a provider whose overflow gives no numbers', async () => {
    const model = `images-${Date.now()}`;
    const harness = await gateway(model, { outputReserve: 256 });
    const images = Array.from({ length: 11 }, () => ({
      type: 'image_url' as const,
      image_url: { url: 'https://example.test/cat.png', detail: 'low' as const },
    }));
    for (let attempt = 0; attempt < 3; attempt++)
      await client(harness, 'attacker')
        .chat.completions.create({
          model,
          messages: [{ role: 'user', content: [{ type: 'text', text: 'what are these?' }, ...images] }],
        })
        .catch(() => undefined);
    expect(await othersServed(harness, model)).toBe(20);
    // A new replica on the same Redis agrees.
    const other = await gateway(model);
    expect(await othersServed(other, model)).toBe(20);
  });

  it('a provider that echoes the client’s own input, numbers and all, back in its error', async () => {
    const model = `echo-${Date.now()}`;
    const harness = await gateway(model, { outputReserve: 256 });
    const planted = "This model's maximum context length is 300 tokens. However, you requested 900 tokens.";
    fake.enqueue({
      status: 400,
      body: JSON.stringify({
        error: {
          message: `Invalid value: '${planted}'`,
          type: 'invalid_request_error',
          code: 'invalid_value',
        },
      }),
    });
    await client(harness, 'attacker')
      .chat.completions.create({ model, messages: [{ role: 'user', content: planted }] })
      .catch(() => undefined);
    fake.clearQueue();
    expect(await othersServed(harness, model)).toBe(20);
    // Nor the attacker itself: the quoted numbers taught nothing.
    const entries = (await learned(harness)).filter((entry) => entry.model === model);
    expect(entries.flatMap((entry) => (entry.evidence as unknown[] | undefined) ?? [])).toEqual([]);
  });

  it('Cohere’s output cap is relayed as it is and teaches no window', async () => {
    const model = `cohere-${Date.now()}`;
    // Room for the 8,192 tokens asked for: the request reaches the provider, which refuses the output.
    const harness = await gateway(model, { window: 16_000, outputReserve: 256 });
    fake.setWindow(model, 16_000);
    fake.enqueue({
      status: 400,
      body: JSON.stringify({
        id: 'b0c9e2d4-5a61-4f0e-8f43-2f1a7c3d9e10',
        message:
          'too many tokens: max tokens must be less than or equal to 4096, the maximum output for this model - received 8192.',
      }),
    });
    const refused = await client(harness, 'tenant-a')
      .chat.completions.create({ model, max_tokens: 8_192, messages: [{ role: 'user', content: 'hello' }] })
      .catch((error: unknown) => error);
    expect((refused as { status?: number }).status).toBe(400);
    const conversation: ChatMessage[] = [];
    for (let turn = 0; turn < 20; turn++)
      conversation.push(
        { role: 'user', content: prose(20, turn) },
        { role: 'assistant', content: prose(20, turn + 1) },
      );
    conversation.push({ role: 'user', content: 'and now?' });
    const preview = await fetch(`${harness.baseUrl}/context/render`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-tenant-a' },
      body: JSON.stringify({ model, messages: conversation }),
    });
    expect(preview.headers.get('x-context-dropped-messages')).toBe('0');
    expect(preview.headers.get('x-context-window')).toBe('16000');
  });

  it('an overflow that states the window, agreeing with the gateway’s count, is the tenant’s until a second agrees', async () => {
    const model = `stated-${Date.now()}`;
    const harness = await gateway(model, { outputReserve: 256 });
    // The provider's real window is smaller than the gateway was told.
    fake.setWindow(model, 3_000);
    overflowAnswer = (facts) => ({
      status: 400,
      body: JSON.stringify({
        error: {
          message: `This model's maximum context length is ${facts.window} tokens. However, your messages resulted in ${facts.promptTokens} tokens.`,
          code: 'context_length_exceeded',
        },
      }),
    });
    const render = async (tenant: string) => {
      const response = await fetch(`${harness.baseUrl}/context/render`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer sk-${tenant}` },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      });
      return response.headers.get('x-context-window');
    };
    await client(harness, 'first')
      .chat.completions.create({
        model,
        messages: [{ role: 'user', content: prose(1_600, 1) }],
      })
      .catch(() => undefined);
    expect(await render('first')).toBe('3000');
    expect(await render('bystander')).toBe(String(window));
    await client(harness, 'second')
      .chat.completions.create({
        model,
        messages: [{ role: 'user', content: prose(1_600, 2) }],
      })
      .catch(() => undefined);
    expect(await render('bystander')).toBe('3000');
    // Listed with its evidence, and reset by the admin.
    const [entry] = (await learned(harness)).filter((candidate) => candidate.model === model);
    expect(entry?.sharedWindow).toBe(3_000);
    expect((entry?.evidence as Array<{ tenant: string; status: number }>).map((item) => item.status)).toEqual(
      [400, 400],
    );
    const reset = await fetch(
      `${harness.baseUrl}/admin/learned?id=${encodeURIComponent(entry?.id as string)}`,
      {
        method: 'DELETE',
        headers: { authorization: `Bearer ${adminKey}` },
      },
    );
    expect(((await reset.json()) as { reset: number }).reset).toBe(1);
    expect(await render('bystander')).toBe(String(window));
    const metrics = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
    expect(metrics).toMatch(/ctxgate_learned_changes_total\{kind="model"\} [1-9]/);
    expect(harness.logLines.some((line) => line.includes('"learned limit changed"'))).toBe(true);
  });
});

describe('a field a model refuses, on two replicas of one Redis', () => {
  it('is paid for by one refusal, not one per replica; listed, and forgotten on both by the admin', async () => {
    const [first, second] = [await gateway(deployment), await gateway(deployment)] as const;
    const ask = async (harness: GatewayHarness) => {
      const since = fake.chatRequests.length;
      const { response } = await client(harness, 'a')
        .chat.completions.create({
          model: deployment,
          max_tokens: 200,
          messages: [{ role: 'user', content: 'hi' }],
        })
        .withResponse();
      return {
        attempts: response.headers.get('x-ctxgate-attempts'),
        caps: fake.chatRequests.slice(since).map((request) => {
          const body = request.body as Record<string, unknown>;
          return [body.max_tokens ?? null, body.max_completion_tokens ?? null];
        }),
      };
    };
    expect(await ask(first)).toEqual({
      attempts: '2',
      caps: [
        [200, null],
        [null, 200],
      ],
    });
    const listed = async (harness: GatewayHarness) =>
      (await learned(harness)).find((entry) => entry.kind === 'field_fixes' && entry.model === deployment);
    await expect
      .poll(async () => (await listed(second))?.fieldFixes, { timeout: 5_000 })
      .toEqual([{ field: 'max_tokens', renameTo: 'max_completion_tokens' }]);
    expect(await ask(second)).toEqual({ attempts: '1', caps: [[null, 200]] });

    const id = (await listed(second))?.id as string;
    const reset = await fetch(`${second.baseUrl}/admin/learned?id=${encodeURIComponent(id)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(((await reset.json()) as { reset: number }).reset).toBe(1);
    await expect.poll(async () => (await listed(first))?.fieldFixes ?? [], { timeout: 5_000 }).toEqual([]);
    expect((await ask(first)).attempts).toBe('2');
  });
});

describe('tool sets', () => {
  const tools: OpenAI.ChatCompletionTool[] = Array.from({ length: 6 }, (_unused, index) => ({
    type: 'function',
    function: {
      name: `tool_${index}`,
      description: `Tool number ${index} reads things.`,
      parameters: {
        type: 'object',
        properties: { path: { type: 'string', description: 'Where to read.' }, depth: { type: 'integer' } },
        required: ['path'],
      },
    },
  }));

  it('a tool loop does not inflate the tool set’s cost, nor raise a false truncation alarm after it', async () => {
    const model = `tools-${Date.now()}`;
    const harness = await gateway(model, { outputReserve: 256 });
    fake.setWindow(model, 200_000);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Read everything.' }];
    for (let step = 0; step < 30; step++) {
      const id = `call_${step}_abcdefghijkl`;
      fake.enqueue({
        toolCalls: [
          {
            id,
            name: `tool_${step % 6}`,
            arguments: JSON.stringify({ path: `/src/file_${step}.ts`, depth: step }),
          },
        ],
      });
      const answer = await client(harness, 'agent').chat.completions.create({
        model,
        messages,
        tools,
        max_tokens: 200,
      });
      const call = answer.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageToolCall;
      messages.push(answer.choices[0]?.message as OpenAI.ChatCompletionMessageParam);
      messages.push({ role: 'tool', tool_call_id: call.id, content: prose(40, step) });
    }
    fake.clearQueue();
    const fresh = await client(harness, 'agent')
      .chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Just say hi.' }],
        tools,
        max_tokens: 50,
      })
      .withResponse();
    const sent = fake.chatRequests.at(-1)?.promptTokens as number;
    const estimated = Number(fresh.response.headers.get('x-context-input-tokens'));
    // Within a tenth of what the provider counted, and no alarm.
    expect(Math.abs(estimated - sent) / sent).toBeLessThan(0.1);
    expect(fresh.response.headers.get('x-context-upstream-truncated')).toBeNull();
    expect(harness.logLines.some((line) => line.includes('may have truncated the prompt'))).toBe(false);
  });
});

describe('images', () => {
  it('a tenant’s images do not bend its own count of plain text', async () => {
    const model = `vision-${Date.now()}`;
    const harness = await gateway(model, { window: 32_000, outputReserve: 256 });
    fake.setWindow(model, 32_000);
    // One question about three screenshots: the provider sizes each at 765 tokens, the gateway's tile
    // formula at 85 (detail low): the provider counts several times the gateway's estimate.
    const image = {
      type: 'image_url' as const,
      image_url: { url: 'https://example.test/shot.png', detail: 'low' as const },
    };
    await client(harness, 'vision').chat.completions.create({
      model,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What changed?' }, image, image, image] }],
      max_tokens: 100,
    });
    // Then the same tenant's plain conversation of about 14,000 tokens: it fits the 32,000-token window
    // whole.
    const messages: OpenAI.ChatCompletionMessageParam[] = Array.from({ length: 20 }, (_unused, index) => ({
      role: index % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: prose(330, index),
    }));
    const answer = await client(harness, 'vision')
      .chat.completions.create({ model, messages, max_tokens: 100 })
      .withResponse();
    const sent = fake.chatRequests.at(-1);
    expect((sent?.body as { messages: unknown[] }).messages.length).toBe(messages.length);
    expect(answer.response.headers.get('x-context-dropped-messages')).toBe('0');
    const estimated = Number(answer.response.headers.get('x-context-input-tokens'));
    expect(
      Math.abs(estimated - (sent?.promptTokens as number)) / (sent?.promptTokens as number),
    ).toBeLessThan(0.1);
  });
});

describe('chat templates', () => {
  it('a first “hi” does not make a model served with a template count every later prompt four times', async () => {
    const harness = await gateway(templated, { window: 8_192, outputReserve: 256 });
    fake.setWindow(templated, 8_192);
    // The gateway counts 8 tokens, the provider 38: the template's header is most of a short prompt.
    await client(harness, 'local').chat.completions.create({
      model: templated,
      messages: [{ role: 'user', content: 'hi' }],
    });
    // Then a conversation of about 6,000 tokens, which the 8,192-token window holds whole.
    const messages: OpenAI.ChatCompletionMessageParam[] = Array.from({ length: 18 }, (_unused, index) => ({
      role: index % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: prose(160, index),
    }));
    const answer = await client(harness, 'local')
      .chat.completions.create({ model: templated, messages })
      .withResponse();
    const sent = fake.chatRequests.at(-1);
    expect((sent?.body as { messages: unknown[] }).messages.length).toBe(messages.length);
    expect(answer.response.headers.get('x-context-dropped-messages')).toBe('0');
  });
});

describe('a cap on the input alone', () => {
  /** Ten turns of about 320 tokens: within the 4,000-token window the gateway is told, over the cap. */
  function conversationAsker(harness: GatewayHarness, tenant: string) {
    const conversation: ChatMessage[] = [];
    for (let turn = 0; turn < 10; turn++)
      conversation.push(
        { role: 'user', content: prose(80, turn) },
        { role: 'assistant', content: prose(80, turn + 50) },
      );
    return async (question: string) => {
      conversation.push({ role: 'user', content: question });
      const before = fake.chatRequests.length;
      const answer = await client(harness, tenant).chat.completions.create({
        model: inputCapped,
        messages: conversation as OpenAI.ChatCompletionMessageParam[],
      });
      conversation.push({ role: 'assistant', content: answer.choices[0]?.message.content ?? '' });
      return fake.chatRequests.slice(before).map((request) => request.status);
    };
  }

  it('GPT-5’s “configured limit” is refused once, then the conversation is sent within it at once', async () => {
    const ask = conversationAsker(await gateway(inputCapped, { outputReserve: 256 }), 'codex-user');
    expect(await ask('What did we settle on?')).toEqual([400, 200]);
    expect(await ask('And after that?')).toEqual([200]);
    expect(await ask('Anything else?')).toEqual([200]);
  });

  it('a model entry’s max_input is never refused for it', async () => {
    const harness = await gateway(inputCapped, { outputReserve: 256, maxInput: inputCap });
    const ask = conversationAsker(harness, 'configured-user');
    expect(await ask('What did we settle on?')).toEqual([200]);
    expect(await ask('And after that?')).toEqual([200]);
  });
});

describe('prompt caches', () => {
  it('a provider that counts only what its cache did not hold never makes the gateway send past the window', async () => {
    const harness = await gateway(cacheCounted, { window: 8_192, outputReserve: 256 });
    fake.setWindow(cacheCounted, 8_192);
    // A chat resent whole each turn: from the second turn on, the usage counts only the new turn.
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    const retries: string[] = [];
    const first = fake.chatRequests.length;
    for (let turn = 0; turn < 36; turn++) {
      messages.push({ role: 'user', content: prose(170, turn) });
      const answer = await client(harness, 'local')
        .chat.completions.create({ model: cacheCounted, messages, max_tokens: 200 })
        .withResponse();
      retries.push(answer.response.headers.get('x-context-retries') ?? '');
      messages.push(answer.data.choices[0]?.message as OpenAI.ChatCompletionMessageParam);
    }
    // The conversation outgrew the window; every prompt sent still fit it, none was refused.
    const sent = fake.chatRequests.slice(first).map((request) => request.promptTokens as number);
    expect(sent.length).toBe(36);
    expect(Math.max(...sent)).toBeLessThanOrEqual(8_192 - 200);
    expect(retries.filter((count) => count !== '0')).toEqual([]);
  });
});

describe('small windows', () => {
  it('answers "hi" on a 2,048-token window without max_tokens, and recovers from its own overflow', async () => {
    const model = `small-${Date.now()}`;
    const harness = await gateway(model);
    const hi = await client(harness, 'small')
      .chat.completions.create(
        { model, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-context-window': '2048' } },
      )
      .withResponse();
    expect(hi.data.choices[0]?.message.content).toBeTruthy();
    // The provider's window is 2,048 but the gateway was told more: it must recover without max_tokens.
    fake.setWindow(model, 2_048);
    const conversation: OpenAI.ChatCompletionMessageParam[] = [];
    for (let turn = 0; turn < 30; turn++)
      conversation.push(
        { role: 'user', content: prose(40, turn) },
        { role: 'assistant', content: prose(40, turn + 3) },
      );
    conversation.push({ role: 'user', content: 'and now?' });
    const recovered = await client(harness, 'small')
      .chat.completions.create({ model, messages: conversation })
      .withResponse();
    expect(recovered.data.choices[0]?.message.content).toBeTruthy();
    expect(Number(recovered.response.headers.get('x-context-retries'))).toBeGreaterThan(0);
  });
});
