// End to end: tool calls a model wrote as text. Servers that run a model without its tool parser give the
// model's call in `content`, as its template writes it, and no `tool_calls` — Ollama with Qwen2.5-Coder
// (the call's JSON alone: ollama/ollama#13519), LM Studio with Qwen3.6 (Qwen3-Coder's
// `<tool_call><function=…>` form: lmstudio-ai/lmstudio-bug-tracker#2115), GLM-4.7 (#829) and Devstral
// (Mistral's `[TOOL_CALLS]`: #797), vLLM without its parser (Hermes' `<tool_call>{json}</tool_call>`) —
// and every agent printed the call and never ran it (earendil-works/pi#6635, ollama/ollama-vscode#20).
// A call the model drafted in its reasoning is made once, or not at all when it then decided against it
// (PrimeIntellect-ai/renderers#78). Through the AI SDK, the OpenAI client (chat and Responses) and the
// Anthropic SDK, against a fake that answers as such a server does: the client is given the calls as
// calls, a session keeps them so (the strict fake refuses a tool result that answers no call), and text
// that is not a call of an offered tool goes as it came.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { jsonSchema, stepCountIs, streamText, generateText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { type GatewayHarness, startGateway } from '../helpers/start-gateway.js';

/** Qwen3.6 on LM Studio: Qwen3-Coder's form. */
const lmStudio = 'qwen/qwen3.6-35b-a3b';
/** A Hermes-style model on vLLM without its parser, a sentence before its calls. */
const hermes = 'NousResearch/Hermes-4-14B';
/** Devstral on LM Studio: Mistral's `[TOOL_CALLS]name[ARGS]{…}`, a sentence before. */
const devstral = 'mistralai/devstral-small-2-2512';
/** Mistral 7B v0.3 on llama.cpp: `[TOOL_CALLS]` and a JSON list. */
const mistral7b = 'mistral-7b-instruct-v0.3.Q4_K_M.gguf';
/** GLM-4.7 on LM Studio: GLM's `<tool_call>NAME<arg_key>…` form. */
const glm = 'zai-org/glm-4.7-flash';
/** GPT-OSS on an MLX server that leaves its Harmony markup in the text. */
const gptOss = 'mlx-community/gpt-oss-20b-MXFP4-Q8';
/** Qwen2.5-Coder on Ollama: the call's JSON alone. */
const ollama = 'qwen2.5-coder:14b';
/**
 * Hermes 3 on Ollama, whose parser missed the call under an agent's prompt (NVIDIA/NemoClaw#2731): a
 * sentence, then the block — the JSON written by Go, `<` as `\u003c`.
 */
const ollamaHermes = 'hermes3:8b';
/** Kimi K2.6 through OpenRouter with few tools: its section in the text (NousResearch/hermes-agent#24534). */
const kimi = 'moonshotai/kimi-k2.6';
/**
 * Kimi K2 Thinking as Chutes serves it: its calls, in Kimi's section, at the end of its reasoning
 * (`reasoning_content`), no text and no call (vybestack/llxprt-code#749).
 */
const kimiThinking = 'moonshotai/Kimi-K2-Thinking';
/** MiniMax-M2 on llama.cpp without its parser: `<minimax:tool_call><invoke name=…>` (ggml-org/llama.cpp#16904). */
const minimax = 'MiniMax-M2-UD-Q5_K_XL';
/** DeepSeek V4 Pro on DeepSeek's API, now and then: `<tool_call id="…" name="…">{…}` (felinics/Memoh#435). */
const deepseek = 'deepseek-v4-pro';
/** DeepSeek V4 Flash on vLLM, whose parser missed its DSML (vllm-project/vllm#54686): split as it streams. */
const dsml = 'deepseek-v4-flash-0731';
/** LFM2.5 on LM Studio: Python calls between its markers (lmstudio-ai/lmstudio-bug-tracker#1979). */
const lfm = 'liquid/lfm2.5-8b-a1b';
/** Llama 4 Maverick on Bedrock: its JSON between its markers, a sentence first (pydantic/pydantic-ai#2033). */
const llama4 = 'us.meta.llama4-maverick-17b-instruct-v1:0';
/** Qwen3 on vLLM with neither parser: it opens its reasoning, drafts the call there, then makes it. */
const qwen3 = 'Qwen/Qwen3-32B';
/** Qwen3.5 the same way, its reasoning opened by its template: the text begins inside it. */
const qwen35 = 'Qwen/Qwen3.5-27B';
/**
 * Qwen3 on vLLM started without `--enable-auto-tool-choice`: a request that lets it choose its tools is
 * refused, and with `tool_choice: "none"` it is shown them and writes its calls as text (Hermes' form).
 */
const vllmPlain = 'Qwen/Qwen3-14B-vllm';
/**
 * Llama 3 on Ollama, whose template has no tools: a request offering them is refused; told them in its
 * prompt, it writes its calls in Hermes' form.
 */
const noTools = 'llama3:8b';
/** Qwen3.6 on a server whose operator set `text_tool_calls: off` for it: its text is passed as it came. */
const untouched = 'raw/qwen3.6-35b-a3b';

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    textToolCalls: {
      [lmStudio]: { form: 'qwen3-coder' },
      [hermes]: { form: 'hermes', lead: 'I will look both up.\n' },
      [ollama]: { form: 'json' },
      [glm]: { form: 'glm' },
      [gptOss]: { form: 'harmony' },
      [devstral]: { form: 'mistral', lead: 'Checking.' },
      [mistral7b]: { form: 'mistral-list' },
      [qwen3]: { form: 'hermes', draft: 'opened' },
      [qwen35]: { form: 'qwen3-coder', draft: 'template' },
      [untouched]: { form: 'qwen3-coder' },
      [kimi]: { form: 'kimi', lead: 'Looking it up.' },
      [ollamaHermes]: { form: 'hermes', lead: 'Let me check the weather.\n' },
      [kimiThinking]: { form: 'kimi', inReasoning: true },
      [minimax]: { form: 'minimax' },
      [deepseek]: { form: 'attributes', lead: 'Let me look that up.\n' },
      [dsml]: { form: 'dsml', lead: 'Checking the weather.\n\n' },
      [lfm]: { form: 'lfm2' },
      [llama4]: { form: 'llama4', lead: "I'll check the forecast.\n\n" },
      [vllmPlain]: { form: 'hermes' },
      [noTools]: { form: 'hermes' },
    },
    noAutoToolChoice: [vllmPlain],
    noTools: [noTools],
    goJson: [ollamaHermes],
  });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start() },
    configYaml: [
      'models:',
      '  - match: "raw/*"',
      '    window: 131072',
      '    text_tool_calls: "off"',
      '',
    ].join('\n'),
  });
});
beforeEach(() => fake.clearQueue());
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-text-calls', maxRetries: 0, defaultHeaders: headers });

const weather = { id: 'call_w', name: 'get_weather', arguments: '{"city":"Paris","days":3}' };
const rome = { id: 'call_r', name: 'get_weather', arguments: '{"city":"Rome","days":1}' };
const parameters = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } },
  required: ['city'],
};
const tools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', parameters } },
];

const sdkTools = (inputs: unknown[]) => ({
  get_weather: tool({
    inputSchema: jsonSchema<{ city: string; days?: number }>(parameters as never),
    execute: async (input) => {
      inputs.push(input);
      return '18 °C';
    },
  }),
});

describe('a call the model wrote as text', () => {
  it.each([
    lmStudio,
    hermes,
    glm,
    ollama,
    devstral,
    mistral7b,
    gptOss,
    qwen3,
    qwen35,
    kimi,
    ollamaHermes,
    kimiThinking,
    minimax,
    deepseek,
    dsml,
    lfm,
    llama4,
  ])('the AI SDK runs it, streamed and whole (%s)', async (model) => {
    const provider = createOpenAICompatible({ name: 'local', baseURL: harness.baseUrl, apiKey: 'sk-t' });
    for (const stream of [true, false]) {
      fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C in Paris.' });
      const inputs: unknown[] = [];
      const options = {
        model: provider(model),
        prompt: 'Weather in Paris for three days?',
        maxRetries: 0,
        stopWhen: stepCountIs(3),
        tools: sdkTools(inputs),
      };
      const text = stream ? await streamText(options).text : (await generateText(options)).text;
      expect(text).toBe('It is 18 °C in Paris.');
      expect(inputs).toEqual([{ city: 'Paris', days: 3 }]);
    }
  });

  it("the OpenAI client gets two calls and the model's sentence, streamed and whole", async () => {
    fake.enqueue({ toolCalls: [weather, rome] }, { toolCalls: [weather, rome] });
    const whole = await client().chat.completions.create({
      model: hermes,
      tools,
      messages: [{ role: 'user', content: 'Paris and Rome?' }],
    });
    const streamed = await client()
      .chat.completions.stream({
        model: hermes,
        tools,
        messages: [{ role: 'user', content: 'Paris and Rome?' }],
      })
      .finalChatCompletion();
    for (const answer of [whole, streamed]) {
      const [choice] = answer.choices;
      expect(choice?.finish_reason).toBe('tool_calls');
      expect(choice?.message.content?.trim()).toBe('I will look both up.');
      expect(
        choice?.message.tool_calls?.map((call) =>
          call.type === 'function' ? [call.function.name, JSON.parse(call.function.arguments)] : undefined,
        ),
      ).toEqual([
        ['get_weather', { city: 'Paris', days: 3 }],
        ['get_weather', { city: 'Rome', days: 1 }],
      ]);
    }
  });

  it('a session keeps the call as a call: its result reaches the model', async () => {
    const chat = client({ 'x-session-id': `lmstudio-${randomUUID()}` });
    fake.enqueue({ toolCalls: [weather] }, { content: 'It is 18 °C.' });
    const first = await chat.chat.completions.create({
      model: lmStudio,
      stream: false,
      tools,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(call?.id).toMatch(/^call_\w+$/);
    const since = fake.chatRequests.length;
    await chat.chat.completions.create({
      model: lmStudio,
      tools,
      messages: [{ role: 'tool', tool_call_id: call?.id ?? '', content: '18 °C' }],
    });
    const sent = (fake.chatRequests[since]?.body as { messages: ChatMessage[] }).messages;
    expect(sent.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(sent[1]?.tool_calls?.[0]?.function?.arguments).toBe('{"city":"Paris","days":3}');
    expect(sent[2]?.tool_call_id).toBe(call?.id);
  });

  it('a Responses client is given a function_call item', async () => {
    fake.enqueue({ toolCalls: [weather] });
    const response = await client().responses.create({
      model: lmStudio,
      input: 'Weather in Paris?',
      store: false,
      tools: [{ type: 'function', name: 'get_weather', parameters, strict: false }],
    });
    const item = response.output.find((entry) => entry.type === 'function_call');
    expect(item?.type === 'function_call' ? [item.name, JSON.parse(item.arguments)] : undefined).toEqual([
      'get_weather',
      { city: 'Paris', days: 3 },
    ]);
  });
});

describe('an Anthropic client (Claude Code before a local model)', () => {
  it('is given a tool_use block, streamed and whole', async () => {
    const anthropic = new Anthropic({
      baseURL: harness.baseUrl.replace(/\/v1$/, ''),
      apiKey: 'sk-text-calls',
      maxRetries: 0,
    });
    const request = {
      model: lmStudio,
      max_tokens: 512,
      tools: [{ name: 'get_weather', input_schema: parameters as Anthropic.Tool.InputSchema }],
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
    };
    fake.enqueue({ toolCalls: [weather] }, { toolCalls: [weather] });
    for (const message of [
      await anthropic.messages.create(request),
      await anthropic.messages.stream(request).finalMessage(),
    ]) {
      expect(message.stop_reason).toBe('tool_use');
      const use = message.content.find((block) => block.type === 'tool_use');
      expect(use?.type === 'tool_use' ? [use.name, use.input] : undefined).toEqual([
        'get_weather',
        { city: 'Paris', days: 3 },
      ]);
    }
  });
});

/**
 * The AI SDK's loop on `model`, whose first request is refused: the weather call the model makes (as text)
 * run, and its answer given. Returns the requests the provider had, after checking what the loop did.
 */
async function weatherLoopAfterRefusal(model: string, system?: string) {
  const before = fake.chatRequests.length;
  const provider = createOpenAICompatible({ name: 'local', baseURL: harness.baseUrl, apiKey: 'sk-t' });
  // The first request, refused, takes a behaviour of the queue too.
  fake.enqueue({}, { toolCalls: [weather] }, { content: 'It is 18 °C in Paris.' });
  const inputs: unknown[] = [];
  const text = await streamText({
    model: provider(model),
    ...(system === undefined ? {} : { system }),
    prompt: 'Weather in Paris for three days?',
    maxRetries: 0,
    stopWhen: stepCountIs(3),
    tools: sdkTools(inputs),
  }).text;
  expect(text).toBe('It is 18 °C in Paris.');
  expect(inputs).toEqual([{ city: 'Paris', days: 3 }]);
  const sent = fake.chatRequests.slice(before);
  expect(sent.map((request) => request.status)).toEqual([400, 200, 200]);
  return sent;
}

// vLLM started without `--enable-auto-tool-choice` refuses every request that lets the model choose its
// tools ("\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set":
// vllm-project/vllm#9986): every agent request failed.
describe('a vLLM server without its auto tool choice', () => {
  it('is asked with tool_choice "none" after one refusal, and the calls the model writes as text are run', async () => {
    const sent = await weatherLoopAfterRefusal(vllmPlain);
    expect(sent.slice(1).map((request) => (request.body as { tool_choice?: unknown }).tool_choice)).toEqual([
      'none',
      'none',
    ]);
  });

  it('a client that forbade calls (tool_choice "none") gets its text as it came', async () => {
    fake.enqueue({ toolCalls: [weather] });
    const whole = await client().chat.completions.create({
      model: vllmPlain,
      tools,
      tool_choice: 'none',
      messages: [{ role: 'user', content: 'Paris?' }],
    });
    expect(whole.choices[0]?.message.tool_calls).toBeUndefined();
    expect(whole.choices[0]?.message.content).toContain('<tool_call>');
  });
});

// Ollama refuses tools for a model whose template has none ("registry.ollama.ai/library/llama3:8b does not
// support tools": langgenius/dify#13538, pydantic/pydantic-ai#703, cline/cline#460): every agent request failed.
describe('a model whose server takes no tools', () => {
  it('is told its tools in the prompt after one refusal, the calls it writes run, the loop finished', async () => {
    const sent = await weatherLoopAfterRefusal(noTools, 'You are a weather assistant.');
    const bodies = sent
      .slice(1)
      .map((request) => request.body as { tools?: unknown; messages: ChatMessage[] });
    for (const body of bodies) {
      expect(body.tools).toBeUndefined();
      // The client's system prompt, then the tools told: their schema and the form of a call.
      const system = String(bodies[0]?.messages[0]?.content);
      expect(system.startsWith('You are a weather assistant.')).toBe(true);
      expect(system).toContain('"name":"get_weather"');
      expect(system).toContain('<tool_call>');
    }
    // The call made and its result, as the model was told to write and read them.
    const last = bodies[1]?.messages ?? [];
    expect(last.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(String(last[2]?.content)).toContain(
      '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris","days":3}}\n</tool_call>',
    );
    expect(String(last[3]?.content)).toContain('<tool_response name="get_weather">\n18 °C');
  });
});

describe('text that is not a call of an offered tool', () => {
  it.each([
    ['a call of a tool not offered', '<tool_call>\n{"name": "rm_rf", "arguments": {}}\n</tool_call>'],
    ['JSON that is not a call', '{"city": "Paris", "days": 3}'],
    ['prose that names the marker', 'Models write <tool_call> blocks; this is not one.'],
    [
      'a call the model drafted in its reasoning and then decided against',
      '<think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\nNo: it was given.\n</think>\n\nIt is 18 °C, as you said.',
    ],
  ])('%s goes as it came, streamed and whole', async (_name, content) => {
    for (const stream of [false, true]) {
      fake.enqueue({ content, chunks: 7 });
      let text = '';
      if (stream)
        for await (const chunk of await client().chat.completions.create({
          model: hermes,
          tools,
          stream: true,
          messages: [{ role: 'user', content: 'Hi' }],
        })) {
          expect(chunk.choices[0]?.delta.tool_calls ?? []).toEqual([]);
          text += chunk.choices[0]?.delta.content ?? '';
        }
      else {
        const answer = await client().chat.completions.create({
          model: hermes,
          tools,
          messages: [{ role: 'user', content: 'Hi' }],
        });
        expect(answer.choices[0]?.message.tool_calls ?? []).toEqual([]);
        text = answer.choices[0]?.message.content ?? '';
      }
      expect(text).toBe(content);
    }
  });

  it("a model set `text_tool_calls: off`: its call's text goes as it came, streamed and whole", async () => {
    fake.enqueue({ toolCalls: [weather] }, { toolCalls: [weather] });
    const request = { model: untouched, tools, messages: [{ role: 'user' as const, content: 'Paris?' }] };
    const whole = await client().chat.completions.create(request);
    const streamed = await client().chat.completions.stream(request).finalChatCompletion();
    for (const answer of [whole, streamed]) {
      expect(answer.choices[0]?.message.tool_calls ?? []).toEqual([]);
      expect(answer.choices[0]?.message.content).toContain('<function=get_weather>');
      expect(answer.choices[0]?.finish_reason).toBe('stop');
    }
  });

  it('a request that offered no tools: the JSON of a call goes as it came', async () => {
    const content = '{"name": "get_weather", "arguments": {"city": "Paris"}}';
    fake.enqueue({ content });
    const answer = await client().chat.completions.create({
      model: ollama,
      messages: [{ role: 'user', content: 'Write a call as JSON.' }],
    });
    expect(answer.choices[0]?.message.content).toBe(content);
  });
});
