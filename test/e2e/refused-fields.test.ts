// End to end (docs/budgeting.md#refused-fields): OpenAI's reasoning models served under a name the
// gateway cannot tell them by (an Azure deployment can be called anything) refuse `max_tokens` and a
// `temperature` other than 1, as the strict fake refuses them. Through the official clients of each API
// the gateway speaks — Chat Completions, the Responses API (whose bridge writes the cap itself) and
// Anthropic's Messages API (Claude Code always sends max_tokens) — each request is answered, the
// model's fix is kept, and its later requests go right the first time.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAnthropic } from '../helpers/fake-anthropic.js';
import { FakeUpstream, mistralUnknownFields, type ChatMessage } from '../helpers/fake-upstream.js';
import { png, pngSizeOf } from '../helpers/png.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
/** As Mistral's API: fields it does not know are refused with a 422. */
let mistral: FakeUpstream;
let harness: GatewayHarness;
/** Anthropic itself (`kind: anthropic`): at most 100 images in a request, and 32 MB. */
let claude: FakeAnthropic;
/** As GitHub Copilot's chat endpoint: a body over about 5.2 MB is refused with a 413. */
let copilot: FakeUpstream;
/** The same ceiling answered with a bare 413, no body at all. */
let copilotBare: FakeUpstream;
let openai: OpenAI;
let anthropic: Anthropic;

const deployments = ['prod-chat', 'prod-stream', 'prod-responses', 'prod-messages', 'prod-both'];

beforeAll(async () => {
  // `local-vision` as vLLM serves a model started with --limit-mm-per-prompt '{"image": 4}'.
  // `azure-gpt-4o` as an older Azure API version serves it: no Predicted Outputs (continuedev/continue#2981).
  fake = new FakeUpstream({
    reasoningModels: deployments,
    imageLimits: { 'local-vision': 4 },
    unknownFields: { 'azure-gpt-4o': ['prediction'], 'prod-chat-plain': ['logprobs'] },
    moonshotRules: ['moonshot-v1-auto'],
    stringToolChoice: ['qwen/qwen3.6-35b-a3b'],
    serviceTiers: { 'gh-gpt-5.4': 'none', 'gpt-5.6-tiers': ['priority', 'default', 'auto'] },
    noCacheRetention: ['gpt-5.6-sol', 'gpt-5.6-luna', 'gpt-5.6-pro'],
    responsesOnly: ['gpt-5.6-pro'],
  });
  claude = new FakeAnthropic({ apiKey: 'sk-test', noSampling: ['claude-opus-4-8', 'claude-opus-4-7'] });
  mistral = new FakeUpstream({
    forbiddenFields: mistralUnknownFields,
    mistralMessages: true,
  });
  copilot = new FakeUpstream({ maxRequestBytes: 5_200_000 });
  copilotBare = new FakeUpstream({ maxRequestBytes: 5_200_000, bareTooLarge: true });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start() },
    configYaml: [
      'upstreams:',
      '  - name: anthropic',
      `    base_url: ${await claude.start()}`,
      '    kind: anthropic',
      '    models: ["claude-*"]',
      '  - name: mistral',
      `    base_url: ${await mistral.start()}`,
      '    models: ["devstral-*", "mistral-*"]',
      '  - name: copilot',
      `    base_url: ${await copilot.start()}`,
      '    models: ["copilot-gpt-*"]',
      '  - name: copilot-bare',
      `    base_url: ${await copilotBare.start()}`,
      '    models: ["copilot-bare-*"]',
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
  await fake.stop();
  await mistral.stop();
  await claude.stop();
  await copilot.stop();
  await copilotBare.stop();
});

/** The bodies the provider received for a model, from `since` on. */
const sentTo = (model: string, since = 0, provider = fake) =>
  provider.chatRequests
    .slice(since)
    .map((request) => request.body as Record<string, unknown>)
    .filter((body) => body.model === model);

const question = [{ role: 'user' as const, content: 'Which file computes the retry budget?' }];

/** A task, the agent's call to bash for it (a Mistral id), and the result of the user cancelling it. */
const cancelledCall = (task: string, id: string): OpenAI.ChatCompletionMessageParam[] => [
  { role: 'user', content: task },
  {
    role: 'assistant',
    content: '',
    tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: '{}' } }],
  },
  { role: 'tool', tool_call_id: id, content: 'Skipped: User cancelled the operation.' },
];

describe('a reasoning model the gateway knows only by its refusal', () => {
  it('answers a chat request that asked for max_tokens, and sends the next one right the first time', async () => {
    const { data: completion, response } = await openai.chat.completions
      .create({ model: 'prod-chat', messages: question, max_tokens: 300 })
      .withResponse();
    expect(completion.choices[0]?.message.content).toEqual(expect.any(String));
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const [refused, fixed, ...rest] = sentTo('prod-chat');
    expect(refused?.max_tokens).toBe(300);
    expect(fixed).toMatchObject({ max_completion_tokens: 300, messages: question });
    expect(fixed).not.toHaveProperty('max_tokens');
    expect(rest).toEqual([]);

    const before = fake.chatRequests.length;
    const again = await openai.chat.completions
      .create({ model: 'prod-chat', messages: question, max_tokens: 200 })
      .withResponse();
    expect(again.response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(sentTo('prod-chat', before)).toEqual([expect.objectContaining({ max_completion_tokens: 200 })]);
    expect(sentTo('prod-chat', before)[0]).not.toHaveProperty('max_tokens');
    // Learned once, and told to the log without the request's text.
    const learned = harness.logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === 'model refuses a request field' && line.model === 'prod-chat');
    expect(learned).toEqual([
      expect.objectContaining({
        upstream: 'default',
        field: 'max_tokens',
        renamedTo: 'max_completion_tokens',
      }),
    ]);
    expect(harness.logLines.join('\n')).not.toContain('retry budget');
  });

  it('streams an answer after leaving out a temperature the model refuses', async () => {
    const stream = await openai.chat.completions.create({
      model: 'prod-stream',
      messages: question,
      temperature: 0.2,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    const sent = sentTo('prod-stream');
    expect(sent).toHaveLength(2);
    expect(sent[0]?.temperature).toBe(0.2);
    expect(sent[1]).not.toHaveProperty('temperature');
    expect(sent[1]?.stream).toBe(true);
  });

  it('fixes both fields of one request, one refusal each', async () => {
    await openai.chat.completions.create({
      model: 'prod-both',
      messages: question,
      max_tokens: 100,
      temperature: 0,
    });
    const sent = sentTo('prod-both');
    expect(sent.map((body) => [body.max_tokens, body.max_completion_tokens, body.temperature])).toEqual([
      [100, undefined, 0],
      [undefined, 100, 0],
      [undefined, 100, undefined],
    ]);
  });

  it('answers a Responses request whose max_output_tokens the bridge sent as max_tokens', async () => {
    const response = await openai.responses.create({
      model: 'prod-responses',
      input: 'Which file computes the retry budget?',
      max_output_tokens: 400,
    });
    expect(response.status).toBe('completed');
    expect(response.output_text.length).toBeGreaterThan(0);
    const sent = sentTo('prod-responses');
    expect(sent.at(-1)).toMatchObject({ max_completion_tokens: 400 });
    expect(sent.at(-1)).not.toHaveProperty('max_tokens');
    expect(sent).toHaveLength(2);
  });

  it('answers Anthropic Messages requests (max_tokens always sent) to it', async () => {
    for (const maxTokens of [1_024, 512]) {
      const message = await anthropic.messages.create({
        model: 'prod-messages',
        max_tokens: maxTokens,
        messages: question,
      });
      expect(message.content[0]).toMatchObject({ type: 'text', text: expect.any(String) });
    }
    const sent = sentTo('prod-messages');
    // One refusal, then each request right the first time.
    expect(sent.map((body) => body.max_tokens ?? null)).toEqual([1_024, null, null]);
    expect(sent.map((body) => body.max_completion_tokens ?? null)).toEqual([null, 1_024, 512]);
  });

  it('leaves the requests of other models as their clients wrote them', async () => {
    const before = fake.chatRequests.length;
    await openai.chat.completions.create({ model: 'local-model', messages: question, max_tokens: 50 });
    const sent = sentTo('local-model', before);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.max_tokens).toBe(50);
    expect(sent[0]).not.toHaveProperty('max_completion_tokens');
  });

  it('relays a refusal it cannot fix as the provider worded it', async () => {
    // A field that asks for part of the answer (its log probabilities): the provider's own 400 reaches the
    // client, sent once — an answer without them is not what it asked.
    const before = fake.chatRequests.length;
    const error = await openai.chat.completions
      .create({ model: 'prod-chat-plain', messages: question, max_tokens: 10, logprobs: true })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/logprobs/);
    expect(fake.chatRequests.length - before).toBe(1);
  });

  // A client's own field, which no API defines and so no provider could act on (OpenCode's `delegateTo`):
  // every request of such a client failed.
  it("leaves a client's own field out after one refusal; the next request at once", async () => {
    const before = fake.chatRequests.length;
    const answer = await openai.chat.completions.create({
      model: 'local-own-fields',
      messages: question,
      max_tokens: 10,
      ...{ bogus_field: 1 },
    });
    expect(answer.choices[0]?.message).toBeDefined();
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentTo('local-own-fields', before)[1]).not.toHaveProperty('bogus_field');
    const again = fake.chatRequests.length;
    await openai.chat.completions.create({
      model: 'local-own-fields',
      messages: question,
      max_tokens: 10,
      ...{ bogus_field: 1 },
    });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

// Claude Opus 4.7 and later take no sampling settings ("`temperature` is deprecated for this model.":
// sipeed/picoclaw#2939, RooCodeInc/Roo-Code#12162): every request of a client that sends one failed.
describe('a service tier the model is not served with (Codex’s /fast, a flex tier)', () => {
  const ask = (model: string, tier: 'priority' | 'flex') =>
    openai.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'Hi.' }], service_tier: tier })
      .withResponse();
  const tiersSent = (since: number) =>
    fake.chatRequests.slice(since).map((request) => (request.body as { service_tier?: string }).service_tier);

  it('none at all (GitHub Copilot): left out after one refusal; the next request at once', async () => {
    const since = fake.chatRequests.length;
    const first = await ask('gh-gpt-5.4', 'priority');
    expect(first.response.headers.get('x-ctxgate-attempts')).toBe('2');
    const next = await ask('gh-gpt-5.4', 'flex');
    expect(next.response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(tiersSent(since)).toEqual(['priority', undefined, undefined]);
  });

  it('one the model is not served with: that one left out after its refusal, the others still asked', async () => {
    const since = fake.chatRequests.length;
    const flex = await ask('gpt-5.6-tiers', 'flex');
    expect(flex.data.choices[0]?.message.role).toBe('assistant');
    const priority = await ask('gpt-5.6-tiers', 'priority');
    expect(priority.response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(tiersSent(since)).toEqual(['flex', undefined, 'priority']);
  });
});

// The gpt-5.6 family keeps every prompt cache 30 minutes at least and refuses `prompt_cache_retention`
// ("prompt_cache_retention is not supported on this model": openai/codex#39442), which the OpenAI SDKs'
// users, the AI SDK's promptCacheRetention and Factory Droid send: every request of theirs failed.
describe('a prompt cache retention asked of the gpt-5.6 family', () => {
  const retentionsSent = (since: number, requests = fake.chatRequests) =>
    requests
      .slice(since)
      .map((request) => (request.body as { prompt_cache_retention?: string }).prompt_cache_retention);

  it('on Chat Completions: left out after one refusal; the next request at once', async () => {
    const since = fake.chatRequests.length;
    const ask = () =>
      openai.chat.completions
        .create({
          model: 'gpt-5.6-sol',
          messages: [{ role: 'user', content: 'Hi.' }],
          prompt_cache_key: 'session-1',
          prompt_cache_retention: '24h',
        })
        .withResponse();
    const first = await ask();
    expect(first.data.choices[0]?.message.role).toBe('assistant');
    expect(first.response.headers.get('x-ctxgate-attempts')).toBe('2');
    const next = await ask();
    expect(next.response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(retentionsSent(since)).toEqual(['24h', undefined, undefined]);
    expect(fake.chatRequests.at(-1)?.body).toMatchObject({ prompt_cache_key: 'session-1' });
  });

  it('on the Responses API, the newer cache options kept', async () => {
    const since = fake.chatRequests.length;
    const response = await openai.responses.create({
      model: 'gpt-5.6-luna',
      input: 'Hi.',
      prompt_cache_retention: '24h',
      prompt_cache_options: { mode: 'explicit', ttl: '30m' },
    });
    expect(response.status).toBe('completed');
    expect(retentionsSent(since)).toEqual(['24h', undefined]);
    expect(fake.chatRequests.at(-1)?.body).toMatchObject({
      prompt_cache_options: { mode: 'explicit', ttl: '30m' },
    });
  });

  it('of a model served by the Responses API alone: the cache options go there, the retention after one refusal not', async () => {
    const since = fake.requests.length;
    const answer = await openai.chat.completions.create({
      model: 'gpt-5.6-pro',
      messages: [{ role: 'user', content: 'Hi.' }],
      prompt_cache_retention: '24h',
      prompt_cache_options: { mode: 'explicit', ttl: '30m' },
    });
    expect(answer.choices[0]?.message.role).toBe('assistant');
    const asked = fake.requests.slice(since).filter((request) => request.path === '/v1/responses');
    expect(asked.map((request) => request.status)).toEqual([400, 200]);
    expect(retentionsSent(0, asked)).toEqual(['24h', undefined]);
    expect(asked.at(-1)?.body).toMatchObject({ prompt_cache_options: { mode: 'explicit', ttl: '30m' } });
  });
});

describe("Predicted Outputs to a model's API that does not know them (Continue's edit mode)", () => {
  it('answered after one refusal, sent without the prediction; the next at once', async () => {
    const file = 'export function add(a: number, b: number) {\n  return a + b;\n}\n';
    const edit = () =>
      openai.chat.completions.create({
        model: 'azure-gpt-4o',
        messages: [{ role: 'user', content: `Rename add to sum:\n${file}` }],
        prediction: { type: 'content', content: file },
      });
    fake.setDefault({ content: file.replace('add', 'sum') });
    const before = fake.chatRequests.length;
    const answer = await edit();
    expect(answer.choices[0]?.message.content).toBe(file.replace('add', 'sum'));
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentTo('azure-gpt-4o', before)[0]?.prediction).toEqual({ type: 'content', content: file });
    expect(sentTo('azure-gpt-4o', before)[1]).not.toHaveProperty('prediction');
    const again = fake.chatRequests.length;
    await edit();
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

describe('sampling settings to a Claude that takes none (Opus 4.7 and later)', () => {
  const sentToClaude = (since: number) =>
    claude.requests
      .slice(since)
      .map((request) => [request.status, request.body.temperature, request.body.top_k]);

  it("the Anthropic client's temperature and top_k: answered after one refusal of each, the next at once", async () => {
    // The SDK's own types no longer name them (Anthropic deprecated them); its earlier versions, and the
    // clients that write their own bodies (OpenCode's, picoclaw's), send them.
    const params = {
      model: 'claude-opus-4-8',
      max_tokens: 256,
      temperature: 0.7,
      top_k: 40,
      messages: question,
    } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const ask = () => anthropic.messages.create(params);
    const before = claude.requests.length;
    expect((await ask()).content[0]).toMatchObject({ type: 'text' });
    expect(sentToClaude(before)).toEqual([
      [400, 0.7, 40],
      [400, undefined, 40],
      [200, undefined, undefined],
    ]);
    const again = claude.requests.length;
    await ask();
    expect(sentToClaude(again)).toEqual([[200, undefined, undefined]]);
  });

  it("a Chat Completions client's temperature (an OpenAI-compatible agent's), streamed: one refusal", async () => {
    const before = claude.requests.length;
    const stream = await openai.chat.completions.create({
      model: 'claude-opus-4-7',
      temperature: 0,
      stream: true,
      messages: question,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello from the fake Anthropic.');
    expect(sentToClaude(before)).toEqual([
      [400, 0, undefined],
      [200, undefined, undefined],
    ]);
  });
});

describe('a provider that refuses the fields it does not know (Mistral)', () => {
  it('streams Claude Code’s requests, whose user id and usage request the bridge adds, after one refusal', async () => {
    // Claude Code streams every request and sends its user id as metadata.user_id.
    const userId = `user_${'9f2c'.repeat(16)}_account_6c1e-41d2_session_0a7b-4f9e`;
    for (const round of [0, 1]) {
      const stream = anthropic.messages.stream({
        model: 'devstral-small-2507',
        max_tokens: 2_048,
        metadata: { user_id: userId },
        messages: [{ role: 'user', content: `Round ${round}: which file computes the retry budget?` }],
      });
      const message = await stream.finalMessage();
      expect(message.content[0]).toMatchObject({ type: 'text', text: expect.any(String) });
      expect(message.usage.input_tokens).toBeGreaterThan(0);
    }
    const sent = sentTo('devstral-small-2507', 0, mistral);
    expect(sent.map((body) => [typeof body.user, typeof body.stream_options, body.stream])).toEqual([
      ['string', 'object', true],
      ['undefined', 'undefined', true],
      ['undefined', 'undefined', true],
    ]);
    expect(sent.every((body) => body.max_tokens === 2_048)).toBe(true);
  });

  it('takes a conversation holding an answer of nothing (a model’s empty turn) with it said as empty, after one refusal', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Which file computes the retry budget?' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'Please answer: which file?' },
    ];
    const before = mistral.chatRequests.length;
    const answer = await openai.chat.completions.create({ model: 'mistral-large-2512', messages });
    expect(answer.choices).toHaveLength(1);
    expect(mistral.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    const sent = sentTo('mistral-large-2512', before, mistral).at(-1)?.messages as ChatMessage[];
    expect(sent.map((message) => [message.role, message.content])).toEqual([
      ['user', 'Which file computes the retry budget?'],
      ['assistant', '(empty)'],
      ['user', 'Please answer: which file?'],
    ]);
    const again = mistral.chatRequests.length;
    await openai.chat.completions.create({ model: 'mistral-large-2512', messages });
    expect(mistral.chatRequests.length - again).toBe(1);
  });

  it('takes the same conversation to Moonshot, which names the empty turn by its position', async () => {
    // CherryHQ/cherry-studio#1313, labring/FastGPT#3575: "the message at position 4 with role 'assistant' must not be empty".
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Which file computes the retry budget?' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'Please answer: which file?' },
    ];
    const before = fake.chatRequests.length;
    const answer = await openai.chat.completions.create({ model: 'moonshot-v1-auto', messages });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    const sent = sentTo('moonshot-v1-auto', before).at(-1)?.messages as ChatMessage[];
    expect(sent[1]).toEqual({ role: 'assistant', content: '(empty)' });
    const again = fake.chatRequests.length;
    await openai.chat.completions.create({ model: 'moonshot-v1-auto', messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it('streams a Codex-shaped Responses request: reasoning effort, verbosity and cache directives left out', async () => {
    // Codex sends these on every request (and GPT-5.6's cache options, the 24h retention); a provider
    // that does not know them cannot act on them.
    const stream = await openai.responses.create({
      model: 'devstral-medium-2507',
      instructions: 'You are a coding agent.',
      input: 'List the files that compute the retry budget.',
      reasoning: { effort: 'medium' },
      text: { verbosity: 'low' },
      prompt_cache_key: 'codex-session-1',
      prompt_cache_retention: '24h',
      prompt_cache_options: { mode: 'implicit', ttl: '30m' },
      stream: true,
    });
    let text = '';
    for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
    expect(text.length).toBeGreaterThan(0);
    const sent = sentTo('devstral-medium-2507', 0, mistral);
    const fields = ['reasoning_effort', 'verbosity', 'prompt_cache_key', 'prompt_cache_retention'];
    fields.push('prompt_cache_options', 'stream_options');
    expect(sent).toHaveLength(2);
    expect(Object.keys(sent[0] ?? {})).toEqual(expect.arrayContaining(fields));
    for (const field of fields) expect(sent[1]).not.toHaveProperty(field);
    expect(sent[1]?.messages).toEqual(sent[0]?.messages);
  });

  it('takes a conversation whose answers carry another model’s leftovers (reasoning_content, refusal, annotations) without them', async () => {
    // As a client (crush, LiteLLM, the OpenAI SDK's messages kept as they came) replays a thinking
    // model's answers to Mistral: its 422 locates each field in its message.
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Which file computes the retry budget?' },
      {
        role: 'assistant',
        content: 'src/retry.ts.',
        reasoning_content: 'It is in the retry module.',
        refusal: null,
        annotations: [],
      } as OpenAI.ChatCompletionMessageParam,
      { role: 'user', content: 'And the backoff?' },
    ];
    const model = 'mistral-medium-3-5';
    for (const attempts of ['2', '1']) {
      const { data, response } = await openai.chat.completions
        .create({ model, messages: history })
        .withResponse();
      expect(data.choices[0]?.message.content).toEqual(expect.any(String));
      expect(response.headers.get('x-ctxgate-attempts')).toBe(attempts);
    }
    const sent = sentTo(model, 0, mistral).map(
      (body) => (body.messages as Array<Record<string, unknown>>)[1],
    );
    expect(sent).toEqual([
      history[1],
      { role: 'assistant', content: 'src/retry.ts.' },
      { role: 'assistant', content: 'src/retry.ts.' },
    ]);
  });

  it('takes the cap an OpenAI client sent as max_completion_tokens as max_tokens', async () => {
    const { data, response } = await openai.chat.completions
      .create({ model: 'mistral-large-latest', messages: question, max_completion_tokens: 256 })
      .withResponse();
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = sentTo('mistral-large-latest', 0, mistral);
    expect(sent.map((body) => [body.max_completion_tokens ?? null, body.max_tokens ?? null])).toEqual([
      [256, null],
      [null, 256],
    ]);
  });

  it("takes a user's message right after tool results (a cancelled call: mistral-vibe#578, zed#37021) with the last result", async () => {
    const model = 'devstral-medium-latest';
    const conversation = [
      ...cancelledCall('Run the unit tests.', 'aB3dE5gH7'),
      { role: 'user' as const, content: 'Use the .venv first.' },
    ];
    const { data, response } = await openai.chat.completions
      .create({ model, messages: conversation })
      .withResponse();
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = sentTo(model, 0, mistral).at(-1)?.messages as ChatMessage[];
    expect(sent.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(String(sent[2]?.content)).toContain('Skipped: User cancelled the operation.');
    expect(String(sent[2]?.content)).toContain('Use the .venv first.');
  });

  it("takes a user's screenshot right after tool results, which no tool result can carry, after a word of the model's", async () => {
    const model = 'mistral-medium-latest';
    const conversation: OpenAI.ChatCompletionMessageParam[] = [
      ...cancelledCall('Fix the layout.', 'cD4eF6gH8'),
      {
        role: 'user',
        content: [
          { type: 'text', text: 'This is how it looks now.' },
          { type: 'image_url', image_url: { url: shot(64, 64) } },
        ],
      },
    ];
    const { data, response } = await openai.chat.completions
      .create({ model, messages: conversation })
      .withResponse();
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = sentTo(model, 0, mistral).at(-1)?.messages as ChatMessage[];
    expect(sent.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
    expect(sent[2]?.content).toBe('Skipped: User cancelled the operation.');
    expect(sent[4]?.content).toEqual(conversation[3]?.content);
  });
});

/** A screenshot of `width`×`height` as a data URL. */
const shot = (width: number, height: number): string =>
  `data:image/png;base64,${png(width, height).toString('base64')}`;

/** A step of Claude Code's Read of a picture: its tool_use, and the tool_result holding the PNG. */
const readStep = (step: number, picture: Buffer): Anthropic.MessageParam[] => [
  {
    role: 'assistant',
    content: [
      { type: 'tool_use', id: `toolu_${step}`, name: 'Read', input: { file_path: `shot-${step}.png` } },
    ],
  },
  {
    role: 'user',
    content: [
      {
        type: 'tool_result',
        tool_use_id: `toolu_${step}`,
        content: [
          {
            type: 'image',
            source: { type: 'base64', media_type: 'image/png', data: picture.toString('base64') },
          },
        ],
      },
    ],
  },
];

/** What each tool_result of a Messages request holds: `image`, or the text standing for it. */
const toolResultContents = (body: Record<string, unknown>): unknown[] =>
  (body.messages as Array<{ content: unknown }>)
    .flatMap((message) =>
      Array.isArray(message.content) ? (message.content as Array<Record<string, unknown>>) : [],
    )
    .filter((block) => block.type === 'tool_result')
    .map((result) =>
      typeof result.content === 'string'
        ? result.content
        : (result.content as Array<Record<string, unknown>>)[0]?.type,
    );

describe('more images than the model takes in one request', () => {
  it('sends a chat conversation of 6 screenshots to a vLLM model that takes 4: the newest 4, the others named', async () => {
    // A user who pastes a screenshot each turn; the sixth turn's is the one asked about.
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    for (let turn = 1; turn <= 6; turn++) {
      messages.push({
        role: 'user',
        content: [
          { type: 'text', text: `Screenshot ${turn}: what changed?` },
          { type: 'image_url', image_url: { url: shot(10 + turn, 20) } },
        ],
      });
      if (turn < 6) messages.push({ role: 'assistant', content: `Step ${turn} looks fine.` });
    }
    const before = fake.chatRequests.length;
    const { data, response } = await openai.chat.completions
      .create({ model: 'local-vision', messages })
      .withResponse();
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = fake.chatRequests
      .slice(before)
      .filter((request) => request.path.endsWith('/chat/completions'));
    expect(sent.map((request) => request.status)).toEqual([400, 200]);
    const parts = (sent[1]?.body as { messages: ChatMessage[] }).messages.flatMap((message) =>
      Array.isArray(message.content) ? (message.content as Array<Record<string, unknown>>) : [],
    );
    // The newest four, as the client sent them; the two oldest named where they stood.
    expect(
      parts
        .filter((part) => part.type === 'image_url')
        .map((part) => pngSizeOf(String((part.image_url as { url: string }).url))?.width),
    ).toEqual([13, 14, 15, 16]);
    expect(parts.filter((part) => part.type === 'text').map((part) => part.text)).toEqual([
      'Screenshot 1: what changed?',
      '[image: left out, the model takes at most 4 images in a request]',
      'Screenshot 2: what changed?',
      '[image: left out, the model takes at most 4 images in a request]',
      'Screenshot 3: what changed?',
      'Screenshot 4: what changed?',
      'Screenshot 5: what changed?',
      'Screenshot 6: what changed?',
    ]);

    // Its next request goes right the first time.
    const again = fake.chatRequests.length;
    const next = await openai.chat.completions.create({ model: 'local-vision', messages }).withResponse();
    expect(next.response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });

  it('goes on with an Anthropic session whose tool results hold 103 pictures: the newest 100 reach Claude', async () => {
    // As Claude Code's Read returns a PNG: each tool_result an image block; the 103rd read is the newest.
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Rename each picture by what it shows.' },
    ];
    for (let step = 1; step <= 103; step++) messages.push(...readStep(step, png(step, 7)));
    claude.respond = (body) => {
      // The model names the newest picture it was shown: its width is the step that read it.
      const last = (body.messages as Array<{ content: unknown }>).at(-1)?.content as Array<
        Record<string, unknown>
      >;
      const image = (last[0]?.content as Array<Record<string, unknown>>)[0];
      const data = (image?.source as { data?: string } | undefined)?.data ?? '';
      return {
        text: `The newest picture is ${pngSizeOf(`data:image/png;base64,${data}`)?.width ?? 'missing'} wide.`,
      };
    };
    const before = claude.messageRequests.length;
    const answer = await anthropic.messages.create({ model: 'claude-sonnet-5', max_tokens: 256, messages });
    expect(answer.content).toEqual([
      expect.objectContaining({ type: 'text', text: 'The newest picture is 103 wide.' }),
    ]);
    const sent = claude.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([400, 200]);
    // Each result's content: its image block, or the line that stands for it (text, sent as a string).
    // Every result is still there (no tool_use without its result); the three oldest hold a line instead.
    const contents = toolResultContents(sent[1]?.body ?? {});
    expect(contents).toHaveLength(103);
    expect(contents.filter((content) => content === 'image')).toHaveLength(100);
    expect(contents.slice(0, 4)).toEqual([
      ...Array.from(
        { length: 3 },
        () => '[image: left out, the model takes at most 100 images in a request]',
      ),
      'image',
    ]);
  });

  it('goes on when a session past 20 pictures holds a screenshot over 2000 pixels, which Claude then refuses', async () => {
    // Screenshots of a phone (1080×2400) among small ones, as Claude Code's Read returns them; the newest small.
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Check each screen.' }];
    for (let step = 1; step <= 24; step++)
      messages.push(...readStep(step, step === 3 || step === 10 ? png(1080, 2400, 0) : png(40 + step, 30)));
    claude.respond = () => ({ text: 'Every screen checked.' });
    const before = claude.messageRequests.length;
    const answer = await anthropic.messages.create({ model: 'claude-opus-5', max_tokens: 256, messages });
    expect(answer.content).toEqual([expect.objectContaining({ text: 'Every screen checked.' })]);
    const sent = claude.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([400, 200]);
    const contents = toolResultContents(sent[1]?.body ?? {});
    // The two large screenshots named where they stood; the 22 others sent.
    const named =
      '[image: left out, larger than 2000 pixels, which the model takes only in a request of at most 20 images]';
    expect(contents.filter((content) => content === 'image')).toHaveLength(22);
    expect([contents[2], contents[9]]).toEqual([named, named]);
  });

  it('goes on after a screenshot larger than Claude takes at all (over 8000 pixels, over 5 MB): each is named', async () => {
    // A full-page capture 9000 pixels long (flat, a few KB), and a 4 MB screenshot (5.5 MB of base64).
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Check the page.' },
      ...readStep(1, png(1_200, 9_000, 0)),
      ...readStep(2, png(1_200, 1_150, 7)),
      ...readStep(3, png(64, 48)),
    ];
    claude.respond = () => ({ text: 'Checked.' });
    const before = claude.messageRequests.length;
    const answer = await anthropic.messages.create({ model: 'claude-opus-5', max_tokens: 256, messages });
    expect(answer.content).toEqual([expect.objectContaining({ text: 'Checked.' })]);
    const sent = claude.messageRequests.slice(before);
    // One refusal for each, then the request with both named.
    expect(sent.map((request) => request.status)).toEqual([400, 400, 200]);
    const named = '[image: left out, larger than the model takes (8000 pixels a side, 5242880 bytes)]';
    expect(toolResultContents(sent[2]?.body ?? {})).toEqual([named, named, 'image']);
  });
});

describe('a request larger than the provider takes, in bytes', () => {
  /** A screenshot of seeded noise, `width` wide, of about 1 MB of base64 (760×330 pixels of RGB). */
  const heavyShot = (width: number): string =>
    `data:image/png;base64,${png(width, 330, width).toString('base64')}`;
  /** A conversation of `count` turns, each pasting a screenshot (as Open WebUI sends them: data URLs). */
  const screenshots = (count: number): OpenAI.ChatCompletionMessageParam[] =>
    Array.from({ length: count }, (_, index): OpenAI.ChatCompletionMessageParam[] => [
      {
        role: 'user',
        content: [
          { type: 'text', text: `Screenshot ${index + 1}: what changed?` },
          { type: 'image_url', image_url: { url: heavyShot(760 + index) } },
        ],
      },
      { role: 'assistant', content: `Step ${index + 1} looks fine.` },
    ]).flat();
  /** The widths of the pictures a chat body holds, and the lines that stand for the others. */
  const picturesOf = (raw: string) =>
    (JSON.parse(raw) as { messages: ChatMessage[] }).messages
      .flatMap((message) =>
        Array.isArray(message.content) ? (message.content as Array<Record<string, unknown>>) : [],
      )
      .map((part) =>
        part.type === 'image_url'
          ? pngSizeOf(String((part.image_url as { url: string }).url))?.width
          : String(part.text),
      )
      .filter((part) => !String(part).startsWith('Screenshot'));

  it('sends GitHub Copilot a conversation of six 1 MB screenshots (its ceiling about 5.2 MB): the newest five, and the next request right the first time', async () => {
    const five = screenshots(5);
    const answered = await openai.chat.completions
      .create({ model: 'copilot-gpt-5', messages: five.slice(0, -1) })
      .withResponse();
    expect(answered.response.headers.get('x-ctxgate-attempts')).toBe('1');

    const six = [...screenshots(6).slice(0, -1)];
    const before = copilot.chatRequests.length;
    const { data, response } = await openai.chat.completions
      .create({ model: 'copilot-gpt-5', messages: six })
      .withResponse();
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));
    const sent = copilot.chatRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([413, 200]);
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const named = '[image: left out, the request would be larger than the provider takes]';
    // The oldest named where it stood; the five newest as the client sent them, within the ceiling.
    expect(picturesOf(sent[1]?.rawBody ?? '{}')).toEqual([named, 761, 762, 763, 764, 765]);
    expect(sent[1]?.bodyBytes.length).toBeLessThanOrEqual(5_200_000);

    // A seventh screenshot: the gateway knows the ceiling, and sends the newest that fit at once.
    const seven = [...screenshots(7).slice(0, -1)];
    const again = copilot.chatRequests.length;
    const next = await openai.chat.completions
      .create({ model: 'copilot-gpt-5', messages: seven })
      .withResponse();
    expect(next.response.headers.get('x-ctxgate-attempts')).toBe('1');
    const resent = copilot.chatRequests.slice(again);
    expect(resent.map((request) => request.status)).toEqual([200]);
    expect(picturesOf(resent[0]?.rawBody ?? '{}')).toEqual([named, named, 762, 763, 764, 765, 766]);
  });

  it('reads a bare 413 to a body of megabytes as its bytes, not a prompt over the window: the oldest named', async () => {
    const before = copilotBare.chatRequests.length;
    const { response } = await openai.chat.completions
      .create({ model: 'copilot-bare-gpt-5', messages: screenshots(6).slice(0, -1) })
      .withResponse();
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = copilotBare.chatRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([413, 200]);
    // Every turn still there (nothing left out for tokens), the oldest picture named.
    expect(response.headers.get('x-context-dropped-messages')).toBe('0');
    const named = '[image: left out, the request would be larger than the provider takes]';
    expect(picturesOf(sent[1]?.rawBody ?? '{}')).toEqual([named, 761, 762, 763, 764, 765]);
  });

  it('answers a Codex-shaped Responses request whose pictures pass the ceiling: the oldest named', async () => {
    // As Codex sends its whole history (store: false), the pictures view_image showed among it.
    const input: OpenAI.Responses.ResponseInputItem[] = Array.from({ length: 6 }, (_, index) => ({
      role: 'user' as const,
      content: [
        { type: 'input_text' as const, text: `Screenshot ${index + 1}: what changed?` },
        { type: 'input_image' as const, image_url: heavyShot(760 + index), detail: 'auto' as const },
      ],
    }));
    const before = copilot.chatRequests.length;
    const { data, response } = await openai.responses
      .create({ model: 'copilot-gpt-5-mini', input, store: false })
      .withResponse();
    expect(data.output_text).toEqual(expect.any(String));
    expect(response.headers.get('x-ctxgate-attempts')).toBe('2');
    const sent = copilot.chatRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([413, 200]);
    const named = '[image: left out, the request would be larger than the provider takes]';
    expect(picturesOf(sent[1]?.rawBody ?? '{}')).toEqual([named, 761, 762, 763, 764, 765]);
  });

  it('goes on with a Claude Code request of 14 screenshots past Anthropic’s 32 MB: the oldest named, the newest reach Claude', async () => {
    // 14 reads of a 2.3 MB screenshot (1000×570 pixels of noise): 32.3 MB of JSON, which the gateway
    // takes (its limit is 32 MiB) and Anthropic does not (32 MB).
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Compare the screens.' }];
    for (let step = 1; step <= 14; step++) messages.push(...readStep(step, png(1_000 + step, 570, step)));
    claude.respond = () => ({ text: 'Compared.' });
    const before = claude.messageRequests.length;
    const answer = await anthropic.messages.create({ model: 'claude-opus-5', max_tokens: 256, messages });
    expect(answer.content).toEqual([expect.objectContaining({ text: 'Compared.' })]);
    const sent = claude.messageRequests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([413, 200]);
    expect(Buffer.byteLength(sent[0]?.rawBody ?? '')).toBeGreaterThan(32_000_000);
    const named = '[image: left out, the request would be larger than the provider takes]';
    // Every result still there; the two oldest pictures (4.6 MB) named, the twelve newest sent.
    expect(toolResultContents(sent[1]?.body ?? {})).toEqual([
      named,
      named,
      ...Array.from({ length: 12 }, () => 'image'),
    ]);
  });
});

// LM Studio's server takes a tool choice as a string only ("Invalid tool_choice type: 'object'. Supported
// string values: none, auto, required"): structured output by a tool (instructor, LangChain's
// with_structured_output) and an agent's forced step failed on every request.
describe("a named tool choice, to LM Studio's server (a string only)", () => {
  it('is asked as required with that tool alone after one refusal; the next request at once', async () => {
    const tool = (name: string): OpenAI.ChatCompletionTool => ({
      type: 'function',
      function: { name, parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    });
    const ask = () =>
      openai.chat.completions.create({
        model: 'qwen/qwen3.6-35b-a3b',
        messages: question,
        tools: [tool('search'), tool('extract_city')],
        tool_choice: { type: 'function', function: { name: 'extract_city' } },
      });
    const before = fake.chatRequests.length;
    await ask();
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    const fixed = sentTo('qwen/qwen3.6-35b-a3b', before)[1] as {
      tool_choice: unknown;
      tools: Array<{ function: { name: string } }>;
    };
    expect(fixed.tool_choice).toBe('required');
    expect(fixed.tools.map((each) => each.function.name)).toEqual(['extract_city']);
    const again = fake.chatRequests.length;
    await ask();
    expect(fake.chatRequests.length - again).toBe(1);
  });
});
