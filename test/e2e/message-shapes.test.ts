// End to end: messages shaped as one provider takes and another refuses, each refusal learned once
// (docs/budgeting.md#refused-fields), through the official clients and the AI SDK with a strict fake that
// refuses in each provider's words:
// - a tool result of no text (a command that printed nothing: `mkdir -p src`, `git add .`), which Gemini
//   refuses ("Unable to submit request because it has an empty text parameter. Add a value to the
//   parameter and try again.", microsoft/autogen#5762, FoundationAgents/OpenManus#913): sent as
//   `(no output)`;
// - the `developer` role, which the official clients send OpenAI's newer models and DeepSeek's API
//   refuses ("messages[1].role: unknown variant `developer`, expected one of `system`, `user`,
//   `assistant`, `tool`, `latest_reminder`": icebear0828/codex-proxy#589, BenedictKing/ccx#149): sent as
//   a system message where it stood (a Responses request's developer items are system messages already);
// - a content of text parts (Qwen Code's tool results), which a server that takes only strings refuses
//   ("messages[3].content: invalid type: sequence, expected a string", 0x676e67/duckai#16): sent as text;
// - structured output by a JSON Schema (the AI SDK's generateObject, Codex's --output-schema), which
//   DeepSeek's API refuses ("This response_format type is unavailable now", llm-exe/llm-exe#662): asked
//   in JSON mode, the schema in the system message;
// - a null content — OpenAI's answer of a refusal replayed from a session, which OpenAI itself refuses
//   ("Invalid value for 'content': expected a string, got null.", docker-agent#63), and a tool call's
//   message as the OpenAI client gives it back, which LM Studio refused ("'content' field must be a
//   string or an array of objects", lmstudio-bug-tracker#261): sent as an empty text;
// - system messages a chat template takes only first — two of them first (oh-my-pi#958), one mid-
//   conversation (Hermes Agent's task instruction, vllm-project/vllm#41114), a developer message — which
//   Qwen 3.6's template refuses as vLLM serves it ("System message must be at the beginning."), Qwen 3's
//   ("Unexpected message role.") and Mistral's ("After the optional system message, conversation roles
//   must alternate…"): sent as such templates take them, one system message first;
// - a call sent back whose arguments are not JSON — an answer cut at its max_tokens mid-arguments, stored
//   in a session or replayed by Codex — which vLLM refuses ("Unterminated string starting at: line 1
//   column 14 (char 13)", vllm-project/vllm#48922): sent with the arguments `{}`;
// - another model's answers (DeepSeek's reasoning_content) continued on Groq, which refuses a message
//   field outside its schema ("property 'reasoning_content' is unsupported", SimonSchubert/Kai#265): left
//   out;
// - a conversation that ends with an answer (a prefill, an OpenCode subagent's pruned history), which
//   Claude 4.6 and later refuse ("This model does not support assistant message prefill. The
//   conversation must end with a user message.", cortexkit/magic-context#511): a user message asking the
//   model to go on is sent after it.
// Each is answered after one refusal, and the model's next request goes at once.
import { randomUUID } from 'node:crypto';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { png } from '../helpers/png.js';
import { type GatewayHarness, startGatewayOn } from '../helpers/start-gateway.js';

const gemini = 'gemini-2.5-flash';
const flash = 'gemini-3-flash-preview';
/** A model served by a server that takes a message's content only as a string. */
const local = 'qwen3-coder-local';
/** Models served as LM Studio served them: no null content, beside tool calls either. */
const lmStudio = 'qwen2.5-7b-instruct';
const lmStudioToo = 'qwen2.5-coder-7b-instruct';
/** Models as vLLM serves them with their own chat templates: one system message, first. */
const qwen = 'Qwen/Qwen3.6-27B-FP8';
const qwen3 = 'Qwen/Qwen3-32B';
const devstral = 'mistralai/Devstral-Small-2507';
const mistralSmall = 'mistralai/Mistral-Small-3.2-24B-Instruct-2506';
/** A model as vLLM serves it: the arguments of each call sent back read as JSON. */
const vllmQwen = 'Qwen/Qwen3.6-35B-A3B-FP8';
/** A model as Groq serves it: message fields outside its schema refused. */
const groq = 'moonshotai/kimi-k2-instruct-0905';
/** A thinking model as Cerebras serves it: no reasoning sent back (Kilo-Org/kilocode#10375). */
const cerebras = 'zai-glm-4.7';
/** A model as NVIDIA's NIM serves it: the fields it does not know named together. */
const nim = 'minimaxai/minimax-m2.7';
/** Claude as Bedrock serves it behind LiteLLM: no tool history without tools, roles alternating. */
const bedrockClaude = 'bedrock/claude-opus-4-7';
/** Claude Sonnet 4.6 as GitHub Copilot's chat endpoint serves it: no prefill. */
const copilotClaude = 'claude-sonnet-4.6';
/** Gemma 3 as Google's API serves it, and Gemma 2 as vLLM serves it with its own template: no system role. */
const gemma3 = 'gemma-3-27b-it';
const gemma2 = 'google/gemma-2-9b-it';
/** A model as Perplexity's API serves it: system messages first, then user and assistant alternating. */
const sonar = 'sonar-pro';
/** Claude on Bedrock behind LiteLLM: the user's turn first. */
const bedrock = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
/** A model as MiniMax's API serves it: every tool with parameters, every call's arguments a JSON object. */
const minimax = 'MiniMax-M2.7';
/** A reasoning model as xAI's API serves it: no reasoning effort, and a content in every message. */
const grok = 'grok-4-1-fast-reasoning';

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    geminiRules: [gemini, flash],
    noDeveloperRole: ['deepseek-v4-flash', 'deepseek-chat'],
    stringContentOnly: [local],
    stringToolContent: ['deepseek-chat'],
    noNullContent: [lmStudio, lmStudioToo],
    systemOnlyFirst: [qwen, qwen3, devstral, mistralSmall],
    alternating: [devstral, mistralSmall, gemma2, 'deepseek-reasoner'],
    noSystemRole: [gemma3, gemma2],
    perplexityRules: [sonar],
    userFirst: [bedrock],
    minimaxRules: [minimax],
    xaiRules: [grok],
    jsonToolArguments: [vllmQwen],
    groqRules: [groq],
    cerebrasRules: [cerebras],
    nimRules: [nim],
    bedrockRules: [bedrockClaude],
    userTurnRequired: ['glm-5.2', 'qwen3.7-plus'],
    openRouterRouting: ['z-ai/glm-4.5-air'],
    noPrefill: [copilotClaude],
    jsonModeOnly: ['deepseek-chat', 'deepseek-v4-flash'],
    reasoningEfforts: { 'kimi-k2.7-code': ['minimal', 'low', 'medium', 'high'] },
    ollamaEfforts: { 'glm-5.2:cloud': ['high', 'medium', 'low', 'max', 'none'], 'llama3.1:8b': [] },
    // A model that runs the shell once, then says it is done.
    respond: (messages) =>
      messages.at(-1)?.role === 'tool'
        ? { content: 'Created src.' }
        : { toolCalls: [{ id: 'call_sh', name: 'shell', arguments: '{"command":"mkdir -p src"}' }] },
  });
  harness = await startGatewayOn(fake, inject('redisUrl'));
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-shapes', maxRetries: 0 });
const shell: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
};
/** The agent's call to make the src directory, as the model answered it. */
const mkdirCall: OpenAI.ChatCompletionMessageToolCall = {
  id: 'call_sh',
  type: 'function',
  function: { name: 'shell', arguments: '{"command":"mkdir src"}' },
};

/** The shell tool as a Responses request gives it. */
const responsesShell: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'shell',
  strict: false,
  parameters: { type: 'object', properties: { command: { type: 'string' } } },
};
/** An official client whose requests carry a session of their own. */
const sessionClient = (name: string) =>
  new OpenAI({
    baseURL: harness.baseUrl,
    apiKey: 'sk-shapes',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': `${name}-${randomUUID()}` },
  });
const sentMessages = () => (fake.chatRequests.at(-1)?.body as { messages: ChatMessage[] }).messages;
const lastToolMessage = () => sentMessages().findLast((message) => message.role === 'tool');
const rolesSent = () => sentMessages().map((message) => message.role);

describe('a tool result of no text, to Gemini', () => {
  it('a client that keeps the conversation is answered after one refusal, then at once', async () => {
    const chat = client();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Make a src folder.' }];
    const first = await chat.chat.completions.create({ model: gemini, tools: [shell], messages });
    const reply = first.choices[0]?.message as OpenAI.ChatCompletionMessage;
    messages.push(reply, { role: 'tool', tool_call_id: reply.tool_calls?.[0]?.id ?? '', content: '' });
    const before = fake.chatRequests.length;
    const second = await chat.chat.completions.create({ model: gemini, tools: [shell], messages });
    expect(second.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(lastToolMessage()?.content).toBe('(no output)');
    const again = fake.chatRequests.length;
    await chat.chat.completions.create({ model: gemini, tools: [shell], messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it("the AI SDK's loop, its tool returning nothing, in a session", async () => {
    const provider = createOpenAICompatible({
      name: 'gateway',
      baseURL: harness.baseUrl,
      apiKey: 'sk-shapes',
      headers: { 'x-session-id': `empty-${randomUUID()}` },
    });
    const result = streamText({
      model: provider.chatModel(flash),
      prompt: 'Make a src folder.',
      maxRetries: 0,
      tools: {
        shell: tool({
          inputSchema: jsonSchema<{ command: string }>({
            type: 'object',
            properties: { command: { type: 'string' } },
          }),
          execute: async () => '',
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe('Created src.');
    expect(lastToolMessage()?.content).toBe('(no output)');
  });
});

describe("a server's own hints (Qwen's thinking switch, vLLM's sampling), to an OpenAI model", () => {
  it('a request written for Qwen on vLLM is answered after one refusal of each, without them; the next at once', async () => {
    // As evalscope's Qwen 3 settings and Cherry Studio send them (OpenAI's client passes them as extra body).
    const hints = { top_k: 20, chat_template_kwargs: { enable_thinking: false }, enable_thinking: false };
    const ask = () =>
      client().chat.completions.create(
        Object.assign(
          {
            model: 'gpt-4o-mini',
            top_p: 0.8,
            messages: [{ role: 'user' as const, content: 'Summarize the plan.' }],
          },
          hints,
        ),
      );
    const before = fake.chatRequests.length;
    expect((await ask()).choices).toHaveLength(1);
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 400, 400, 200]);
    const sent = fake.chatRequests.at(-1)?.body as Record<string, unknown>;
    expect(Object.keys(hints).filter((name) => sent[name] !== undefined)).toEqual([]);
    expect(sent.top_p).toBe(0.8);
    const again = fake.chatRequests.length;
    await ask();
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('a conversation with tool calls, summarized without tools, to Bedrock', () => {
  const history = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Make the src directory.' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [mkdirCall],
    },
    { role: 'tool', tool_call_id: 'call_sh', content: 'exit 0' },
  ] as OpenAI.ChatCompletionMessageParam[];

  it("a client's compaction (no tools offered) answered after one refusal, the calls told as text; the next at once", async () => {
    // OpenCode's compaction, a side chat: the history as it is, asked for a summary, no tools.
    const messages = [
      ...history,
      { role: 'user', content: 'Summarize the conversation so far.' },
    ] as OpenAI.ChatCompletionMessageParam[];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: bedrockClaude, messages });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentMessages()).toEqual([
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Make the src directory.' },
      { role: 'assistant', content: '[called shell({"command":"mkdir src"})]' },
      { role: 'user', content: '[result of shell]\nexit 0\n\nSummarize the conversation so far.' },
    ]);
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: bedrockClaude, messages });
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });

  it("an empty answer in the history (a model's empty turn) said as (empty) after one refusal", async () => {
    const messages = [
      { role: 'user', content: 'Which file computes the retry budget?' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'Please answer: which file?' },
    ] as OpenAI.ChatCompletionMessageParam[];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: bedrockClaude, messages });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentMessages()[1]).toEqual({ role: 'assistant', content: '(empty)' });
  });

  it('the same conversation with its tools offered goes as it came', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: bedrockClaude,
      tools: [shell],
      messages: history,
    });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([200]);
    expect(sentMessages()[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_sh', content: 'exit 0' });
  });
});

describe('two user messages in a row, to DeepSeek R1, which takes them alternating only', () => {
  it('a chat app that sends a note before the question is answered after one refusal, the two joined', async () => {
    // Cherry Studio, Open WebUI, bolt.diy: a note and the question, or a question sent again after a failure.
    const messages = [
      { role: 'user', content: 'Here is my code: const a = 1;' },
      { role: 'user', content: 'What does it do?' },
    ] as OpenAI.ChatCompletionMessageParam[];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: 'deepseek-reasoner', messages });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentMessages().map((message) => message.role)).toEqual(['user']);
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: 'deepseek-reasoner', messages });
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

describe("thinking switches, to NVIDIA's NIM, which names every field it does not know at once", () => {
  it('answered after one refusal, without any of them; the next at once', async () => {
    const ask = () =>
      client().chat.completions.create(
        Object.assign(
          { model: nim, messages: [{ role: 'user' as const, content: 'Summarize the plan.' }] },
          { thinking: { type: 'enabled' }, enable_thinking: true },
        ),
      );
    const before = fake.chatRequests.length;
    expect((await ask()).choices).toHaveLength(1);
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    const sent = fake.chatRequests.at(-1)?.body as Record<string, unknown>;
    expect(sent).not.toHaveProperty('thinking');
    expect(sent).not.toHaveProperty('enable_thinking');
    const again = fake.chatRequests.length;
    await ask();
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('a seed, to Gemini (its OpenAI-compatible endpoint knows none)', () => {
  it("an evaluation harness's seeded request is answered after one refusal, without it; the next at once", async () => {
    const ask = () =>
      client().chat.completions.create({
        model: gemini,
        seed: 42,
        temperature: 0,
        messages: [{ role: 'user', content: 'Grade this answer.' }],
      });
    const before = fake.chatRequests.length;
    expect((await ask()).choices).toHaveLength(1);
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    const sent = fake.chatRequests.at(-1)?.body as { seed?: unknown; temperature?: unknown };
    expect(sent.seed).toBeUndefined();
    expect(sent.temperature).toBe(0);
    const again = fake.chatRequests.length;
    await ask();
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe("a chat app's penalties, to Gemini (its OpenAI-compatible endpoint knows none)", () => {
  // n4ze3m/page-assist#418, versun/RSSBox#132, sleepydeer666/RPGBox#2: apps that send them by default.
  it('answered after one refusal naming both, without them, the rest as it came; the next at once', async () => {
    const ask = () =>
      client().chat.completions.create({
        model: gemini,
        temperature: 0.7,
        frequency_penalty: 0.5,
        presence_penalty: 0.3,
        messages: [{ role: 'user', content: 'Write a haiku about rain.' }],
      });
    const before = fake.chatRequests.length;
    expect((await ask()).choices).toHaveLength(1);
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    const sent = fake.chatRequests.at(-1)?.body as Record<string, unknown>;
    expect(sent).not.toHaveProperty('frequency_penalty');
    expect(sent).not.toHaveProperty('presence_penalty');
    expect(sent.temperature).toBe(0.7);
    const again = fake.chatRequests.length;
    await ask();
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('developer messages to DeepSeek, which knows no such role', () => {
  it('a Responses request as Codex sends it goes at once: the bridge writes its developer items as system', async () => {
    const before = fake.chatRequests.length;
    const response = await client().responses.create({
      model: 'deepseek-v4-flash',
      store: false,
      instructions: 'You are Codex.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>…' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files.' }] },
      ],
    });
    expect(response.output.length).toBeGreaterThan(0);
    expect(fake.chatRequests.length - before).toBe(1);
    expect(rolesSent()).not.toContain('developer');
  });

  it('a chat client’s developer message goes as a system message where it stood, after one refusal', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: 'deepseek-chat',
      messages: [
        { role: 'developer', content: 'Answer tersely.' },
        { role: 'user', content: 'Hello' },
      ],
    });
    expect(answer.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(rolesSent()).toEqual(['system', 'user']);
    expect(fake.chatRequests.length - before).toBe(2);
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model: 'deepseek-chat',
      messages: [
        { role: 'developer', content: 'Answer tersely.' },
        { role: 'user', content: 'Again' },
      ],
    });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('a content of text parts, to a server that takes only strings', () => {
  it('a tool result given as parts (Qwen Code) is answered after one refusal, sent as text', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Make a src folder.' }];
    const first = await client().chat.completions.create({ model: local, tools: [shell], messages });
    const reply = first.choices[0]?.message as OpenAI.ChatCompletionMessage;
    messages.push(reply, {
      role: 'tool',
      tool_call_id: reply.tool_calls?.[0]?.id ?? '',
      content: [
        { type: 'text', text: 'exit code 0' },
        { type: 'text', text: 'created src' },
      ],
    });
    const before = fake.chatRequests.length;
    const second = await client().chat.completions.create({ model: local, tools: [shell], messages });
    expect(second.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(lastToolMessage()?.content).toBe('exit code 0\ncreated src');
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: local, tools: [shell], messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe("a tool result given as parts, to DeepSeek's API (its words name the message)", () => {
  // Gitlawb/openclaude#806: "messages[N]: invalid type: sequence, expected a string", a sub-agent's result.
  it('is answered after one refusal, sent as text; the next request at once', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Make a src folder.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_sh', type: 'function', function: { name: 'shell', arguments: '{}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'call_sh',
        content: [
          { type: 'text', text: 'exit code 0' },
          { type: 'text', text: 'created src' },
        ],
      },
    ];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: 'deepseek-chat',
      tools: [shell],
      messages,
    });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(lastToolMessage()?.content).toBe('exit code 0\ncreated src');
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: 'deepseek-chat', tools: [shell], messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('structured output by a JSON Schema, to DeepSeek (JSON mode only)', () => {
  const schema = {
    type: 'object',
    properties: { city: { type: 'string' }, celsius: { type: 'number' } },
    required: ['city', 'celsius'],
  };
  const formatSent = () => (fake.chatRequests.at(-1)?.body as { response_format?: unknown }).response_format;

  it('a chat request is answered after one refusal, in JSON mode told the schema; the next at once', async () => {
    const request: OpenAI.ChatCompletionCreateParamsNonStreaming = {
      model: 'deepseek-chat',
      messages: [
        { role: 'system', content: 'You report the weather.' },
        { role: 'user', content: 'Paris?' },
      ],
      response_format: { type: 'json_schema', json_schema: { name: 'weather', schema, strict: true } },
    };
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create(request);
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(formatSent()).toEqual({ type: 'json_object' });
    const system = sentMessages()[0];
    expect(system?.role).toBe('system');
    expect(String(system?.content)).toContain('You report the weather.');
    expect(String(system?.content)).toContain(JSON.stringify(schema));
    expect(rolesSent()).toEqual(['system', 'user']);
    const again = fake.chatRequests.length;
    await client().chat.completions.create(request);
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it('a Responses request with a text format (Codex’s --output-schema), no system message of its own', async () => {
    const response = await client().responses.create({
      model: 'deepseek-v4-flash',
      store: false,
      input: 'Paris?',
      text: { format: { type: 'json_schema', name: 'weather', schema, strict: true } },
    });
    expect(response.status).toBe('completed');
    expect(formatSent()).toEqual({ type: 'json_object' });
    expect(sentMessages()[0]?.role).toBe('system');
  });
});

describe('JSON mode with no message that says "json", which OpenAI refuses', () => {
  /** OpenAI's, Azure's and DashScope's rule: a model never told to answer in JSON may write whitespace. */
  const saysJson = (messages: readonly ChatMessage[]) => /json/i.test(JSON.stringify(messages));
  const filler = 'The quarterly numbers were reviewed line by line with the finance team. '.repeat(12);

  it("a client's prompt that never says it (mem0's custom prompts) is sent with the word, in one call", async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Extract the facts the user states.' },
        { role: 'user', content: 'I moved to Lyon in May.' },
      ],
      response_format: { type: 'json_object' },
    });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(1);
    expect(rolesSent()).toEqual(['system', 'user']);
    expect(String(sentMessages()[0]?.content)).toMatch(/^Extract the facts the user states\.\n\n.*JSON/s);
    expect(sentMessages()[1]?.content).toBe('I moved to Lyon in May.');
  });

  it('the only message that said it, left out to fit the window, is said again: one call', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Hello.' },
      { role: 'assistant', content: 'Hello! What shall I extract?' },
      { role: 'user', content: `From now on, answer with a JSON object of the names and ages. ${filler}` },
      { role: 'assistant', content: `{"people": []} ${filler}` },
      { role: 'user', content: `Ann is 34. ${filler}` },
      { role: 'assistant', content: `{"people": [{"name": "Ann", "age": 34}]} ${filler}` },
      { role: 'user', content: 'Bob is 41.' },
    ];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create(
      { model: 'gpt-4o-mini', messages, response_format: { type: 'json_object' } },
      { headers: { 'X-Context-Window': '700' } },
    );
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(1);
    // The messages that said it were left out: the window could not hold them.
    expect(sentMessages().some((message) => String(message.content).startsWith('From now on'))).toBe(false);
    expect(sentMessages().at(-1)?.content).toBe('Bob is 41.');
    expect(saysJson(sentMessages())).toBe(true);
  });

  it('a prompt that says it is sent as it came', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'Extract the facts the user states, as json.' },
      { role: 'user', content: 'I moved to Lyon in May.' },
    ];
    await client().chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      response_format: { type: 'json_object' },
    });
    expect(sentMessages()).toEqual(messages);
  });

  it('a Responses request in JSON mode with no instructions, bridged: one call', async () => {
    const before = fake.chatRequests.length;
    const response = await client().responses.create({
      model: 'gpt-4o-mini',
      store: false,
      input: 'I moved to Lyon in May.',
      text: { format: { type: 'json_object' } },
    });
    expect(response.status).toBe('completed');
    expect(fake.chatRequests.length - before).toBe(1);
    expect(rolesSent()).toEqual(['system', 'user']);
    expect(String(sentMessages()[0]?.content)).toMatch(/JSON/);
    expect(JSON.stringify(sentMessages()[1]?.content)).toContain('I moved to Lyon in May.');
  });
});

/** The reasoning effort the provider was last sent. */
const effortSent = () => (fake.chatRequests.at(-1)?.body as { reasoning_effort?: unknown }).reasoning_effort;

describe('a reasoning effort the model does not take', () => {
  it("Codex's xhigh, bridged to Kimi K2.7: the nearest it takes after one refusal; a client's none at once", async () => {
    const before = fake.chatRequests.length;
    const response = await client().responses.create({
      model: 'kimi-k2.7-code',
      store: false,
      input: 'Plan the refactor.',
      reasoning: { effort: 'xhigh' },
    });
    expect(response.status).toBe('completed');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(effortSent()).toBe('high');
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model: 'kimi-k2.7-code',
      messages: [{ role: 'user', content: 'Hi.' }],
      reasoning_effort: 'none' as never,
    });
    expect(fake.chatRequests.length - again).toBe(1);
    expect(effortSent()).toBe('minimal');
    await client().chat.completions.create({
      model: 'kimi-k2.7-code',
      messages: [{ role: 'user', content: 'Hi.' }],
      reasoning_effort: 'low',
    });
    expect(effortSent()).toBe('low');
  });
});

describe("Codex's reasoning effort, to Ollama", () => {
  it('xhigh to a model that takes up to max asked as high, and an effort to a model that does not think left out', async () => {
    const before = fake.chatRequests.length;
    const response = await client().responses.create({
      model: 'glm-5.2:cloud',
      store: false,
      input: 'Plan the refactor.',
      reasoning: { effort: 'xhigh' },
    });
    expect(response.status).toBe('completed');
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(effortSent()).toBe('high');
    const plain = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: 'llama3.1:8b',
      messages: [{ role: 'user', content: 'Hi.' }],
      reasoning_effort: 'medium',
    });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.slice(plain).map((request) => request.status)).toEqual([400, 200]);
    expect(effortSent()).toBeUndefined();
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model: 'llama3.1:8b',
      messages: [{ role: 'user', content: 'Hi.' }],
      reasoning_effort: 'low',
    });
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

describe('a null content, to a provider that takes none there', () => {
  const refusal = "I'm sorry, I can't help with that.";
  /** OpenAI's answer of a refusal: no content, the refusal beside it. */
  const refused = {
    status: 200,
    body: JSON.stringify({
      id: 'chatcmpl-refused',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'gpt-4o-mini',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, refusal },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
    }),
  };

  it("a session whose stored answer was OpenAI's refusal goes on, on OpenAI itself, after one refusal", async () => {
    const chat = sessionClient('refusal');
    fake.enqueue(refused);
    const first = await chat.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Tell me how to pick a lock.' }],
    });
    expect(first.choices[0]?.message.refusal).toBe(refusal);
    const before = fake.chatRequests.length;
    const second = await chat.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Then how do locks work?' }],
    });
    expect(second.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    const replayed = sentMessages().find((message) => message.role === 'assistant');
    expect(replayed).toMatchObject({ content: '', refusal });
    const again = fake.chatRequests.length;
    await chat.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'And padlocks?' }],
    });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it("the OpenAI client's own tool-call answer, sent back to LM Studio, goes with an empty text", async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Make a src folder.' }];
    const first = await client().chat.completions.create({ model: lmStudio, tools: [shell], messages });
    const reply = first.choices[0]?.message as OpenAI.ChatCompletionMessage;
    expect(reply.content).toBeNull();
    messages.push(reply, { role: 'tool', tool_call_id: reply.tool_calls?.[0]?.id ?? '', content: 'done' });
    const before = fake.chatRequests.length;
    const second = await client().chat.completions.create({ model: lmStudio, tools: [shell], messages });
    expect(second.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(sentMessages()[1]).toMatchObject({ role: 'assistant', content: '' });
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: lmStudio, tools: [shell], messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it('a Responses request as Codex sends its calls back, bridged to LM Studio', async () => {
    const response = await client().responses.create({
      model: lmStudioToo,
      store: false,
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Make a src folder.' }] },
        { type: 'function_call', call_id: 'call_sh', name: 'shell', arguments: '{"command":"mkdir -p src"}' },
        { type: 'function_call_output', call_id: 'call_sh', output: '' },
      ],
      tools: [responsesShell],
    });
    expect(response.output_text).toBe('Created src.');
    expect(sentMessages().find((message) => message.role === 'assistant')?.content).toBe('');
  });
});

describe('system messages where a chat template takes one, first', () => {
  it('two system messages first (oh-my-pi#958), to Qwen 3.6: one, after one refusal; the next at once', async () => {
    const request: OpenAI.ChatCompletionCreateParamsNonStreaming = {
      model: qwen,
      messages: [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'system', content: 'The workspace is /repo.' },
        { role: 'user', content: 'List the files.' },
      ],
    };
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create(request);
    expect(answer.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(sentMessages()).toEqual([
      { role: 'system', content: 'You are a coding agent.\n\nThe workspace is /repo.' },
      { role: 'user', content: 'List the files.' },
    ]);
    const again = fake.chatRequests.length;
    await client().chat.completions.create(request);
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it("a system message mid-conversation (Hermes Agent's task), to Devstral: in the user message after it", async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: devstral,
      messages: [
        { role: 'user', content: 'prior conversation context' },
        { role: 'assistant', content: 'prior response' },
        { role: 'system', content: 'Task instruction: summarize the above.' },
        { role: 'user', content: 'New user query' },
      ],
    });
    expect(answer.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(rolesSent()).toEqual(['user', 'assistant', 'user']);
    expect(String(sentMessages()[2]?.content)).toContain('Task instruction: summarize the above.');
    expect(String(sentMessages()[2]?.content)).toContain('New user query');
  });

  it('a developer message from the OpenAI client, to Qwen 3: the system message', async () => {
    const before = fake.chatRequests.length;
    await client().chat.completions.create({
      model: qwen3,
      messages: [
        { role: 'developer', content: 'Answer tersely.' },
        { role: 'user', content: 'Hello' },
      ],
    });
    expect(fake.chatRequests.length - before).toBe(2);
    expect(sentMessages()).toEqual([
      { role: 'system', content: 'Answer tersely.' },
      { role: 'user', content: 'Hello' },
    ]);
  });
});

describe('a call sent back whose arguments are not JSON, to vLLM', () => {
  const cut = '{"path": "src/app.ts", "content": "export const';
  /** An answer cut at its max_tokens in the middle of a call's arguments. */
  const cutShort = {
    status: 200,
    body: JSON.stringify({
      id: 'chatcmpl-cut',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: vllmQwen,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_write', type: 'function', function: { name: 'write', arguments: cut } }],
          },
          finish_reason: 'length',
        },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 16, total_tokens: 46 },
    }),
  };
  const callsSent = () =>
    sentMessages()
      .flatMap((message) => message.tool_calls ?? [])
      .map((call) => call.function?.arguments);

  it('a session whose stored answer was cut in a call goes on after one refusal, the call sent as {}', async () => {
    const chat = sessionClient('cut');
    const write: OpenAI.ChatCompletionTool = {
      type: 'function',
      function: { name: 'write', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
    };
    fake.enqueue(cutShort);
    const first = await chat.chat.completions.create({
      model: vllmQwen,
      tools: [write],
      messages: [{ role: 'user', content: 'Write src/app.ts.' }],
    });
    expect(first.choices[0]?.finish_reason).toBe('length');
    const before = fake.chatRequests.length;
    await chat.chat.completions.create({
      model: vllmQwen,
      tools: [write],
      messages: [{ role: 'tool', tool_call_id: 'call_write', content: 'error: the arguments are not JSON' }],
    });
    expect(fake.chatRequests.length - before).toBe(2);
    expect(callsSent()).toEqual(['{}']);
    const again = fake.chatRequests.length;
    await chat.chat.completions.create({
      model: vllmQwen,
      tools: [write],
      messages: [{ role: 'user', content: 'Try again, in two parts.' }],
    });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it('a Responses request as Codex replays a call cut short (local-inference-lab/vllm#684)', async () => {
    const response = await client().responses.create({
      model: vllmQwen,
      store: false,
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Run the check.' }] },
        { type: 'function_call', call_id: 'call_incomplete', name: 'shell', arguments: '{"value": ' },
        {
          type: 'function_call_output',
          call_id: 'call_incomplete',
          output: 'The tool was not executed because its arguments were invalid.',
        },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Continue.' }] },
      ],
      tools: [responsesShell],
    });
    expect(response.status).toBe('completed');
    expect(callsSent()).toEqual(['{}']);
  });
});

describe("another model's answers, continued on Groq", () => {
  it('a conversation DeepSeek answered (reasoning_content) goes on, after one refusal, without it', async () => {
    const messages = [
      { role: 'user', content: 'Which file computes the retry budget?' },
      { role: 'assistant', content: 'src/budget.ts', reasoning_content: 'The user asks about retries…' },
      { role: 'user', content: 'And the backoff?' },
    ] as OpenAI.ChatCompletionMessageParam[];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: groq, messages });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(sentMessages()[1]).toEqual({ role: 'assistant', content: 'src/budget.ts' });
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: groq, messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('a thinking model’s reasoning sent back, to Cerebras, which refuses it naming its path', () => {
  it("Kilo Code's tool loop with reasoning_content goes on, after one refusal, without it; the next at once", async () => {
    const messages = [
      { role: 'user', content: 'Make the src directory.' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'I should run mkdir.',
        tool_calls: [mkdirCall],
      },
      { role: 'tool', tool_call_id: 'call_sh', content: 'exit 0' },
    ] as OpenAI.ChatCompletionMessageParam[];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: cerebras, tools: [shell], messages });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentMessages()[1]).not.toHaveProperty('reasoning_content');
    expect(sentMessages()[1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_sh' }] });
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: cerebras, tools: [shell], messages });
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

describe('a system prompt and a tool result as text parts, to Groq (a string only but in a user message)', () => {
  it('is answered after one refusal, each content its text; the next request at once', async () => {
    // OpenHands through LiteLLM with prompt caching (OpenHands/OpenHands#4643), Qwen Code's tool results.
    const messages = [
      {
        role: 'system',
        content: [{ type: 'text', text: 'You are OpenHands agent.', cache_control: { type: 'ephemeral' } }],
      },
      { role: 'user', content: 'Make the src directory.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [mkdirCall],
      },
      { role: 'tool', tool_call_id: 'call_sh', content: [{ type: 'text', text: 'exit 0' }] },
    ] as OpenAI.ChatCompletionMessageParam[];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: groq, tools: [shell], messages });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentMessages()[0]).toEqual({ role: 'system', content: 'You are OpenHands agent.' });
    expect(sentMessages()[3]).toMatchObject({ role: 'tool', content: 'exit 0' });
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: groq, tools: [shell], messages });
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

describe("OpenRouter's 404s for what no endpoint of the model takes (not a missing model)", () => {
  const routed = 'z-ai/glm-4.5-air';
  it('a tool result’s picture: answered after one refusal, the picture named where it stood', async () => {
    const messages = [
      { role: 'user', content: 'Take a screenshot.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_shot', type: 'function', function: { name: 'shell', arguments: '{"command":"shot"}' } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_shot',
        content: [
          { type: 'text', text: 'Captured.' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png(4, 4).toString('base64')}` } },
        ],
      },
    ] as OpenAI.ChatCompletionMessageParam[];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: routed, tools: [shell], messages });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([404, 200]);
    expect(JSON.stringify(sentMessages())).toContain('[image: not shown, the model takes no images]');
  });

  it('a forced tool choice (Zed’s edit_file): answered after one refusal, the choice left to the model', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: routed,
      tools: [shell],
      tool_choice: { type: 'function', function: { name: 'shell' } },
      messages: [{ role: 'user', content: 'Make the src directory.' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'shell' } });
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([404, 200]);
    expect((fake.chatRequests.at(-1)?.body as { tool_choice?: unknown }).tool_choice).not.toEqual({
      type: 'function',
      function: { name: 'shell' },
    });
  });
  // Roo Code and Claude Code's routers mark content parts for caching (Claude's prompt caching through
  // OpenRouter), which OpenRouter refuses for a model none of whose endpoints caches so
  // (musistudio/claude-code-router#207, RooCodeInc/Roo-Code#2913): every request failed.
  it('content parts marked for caching: answered after one refusal, no mark sent; the next request at once', async () => {
    const mark = { type: 'ephemeral' };
    const messages = [
      { role: 'system', content: [{ type: 'text', text: 'You are Roo.', cache_control: mark }] },
      { role: 'user', content: [{ type: 'text', text: 'Make the src directory.', cache_control: mark }] },
    ] as unknown as OpenAI.ChatCompletionMessageParam[];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: routed, tools: [shell], messages });
    expect(answer.choices[0]?.message).toBeDefined();
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([404, 200]);
    expect(sentMessages().map((message) => message.content)).toEqual([
      [{ type: 'text', text: 'You are Roo.' }],
      [{ type: 'text', text: 'Make the src directory.' }],
    ]);
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: routed, tools: [shell], messages });
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
  });
});

/** A conversation of no user message: the system prompt, then a call and its result (the prompt compacted away). */
const withoutUserTurn: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are a coding agent.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_sh', type: 'function', function: { name: 'shell', arguments: '{"command":"mkdir src"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_sh', content: 'exit 0' },
];

describe("a conversation with no user message, to Qwen on Alibaba's DashScope", () => {
  it('is answered after one refusal in its words, a user message before the model’s first', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: 'qwen3.7-plus',
      tools: [shell],
      messages: withoutUserTurn,
    });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentMessages().map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
  });
});

describe('a conversation with no user message (its prompt compacted away by the client), to GLM', () => {
  it('is answered after one refusal, a user message before the model’s first; one with a user message at once', async () => {
    const messages = withoutUserTurn;
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: 'glm-5.2', tools: [shell], messages });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.slice(before).map((request) => request.status)).toEqual([400, 200]);
    expect(sentMessages().map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model: 'glm-5.2',
      tools: [shell],
      messages: [
        messages[0],
        { role: 'user', content: 'Make src.' },
        ...messages.slice(1),
      ] as OpenAI.ChatCompletionMessageParam[],
    });
    // A conversation that has its user message goes as it came.
    expect(fake.chatRequests.slice(again).map((request) => request.status)).toEqual([200]);
    expect(sentMessages().map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(sentMessages()[1]).toEqual({ role: 'user', content: 'Make src.' });
  });
});

describe('a conversation that ends with an answer, to Claude 4.6 on GitHub Copilot (no prefill)', () => {
  it('is answered after one refusal, the model asked to go on; the next request at once', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Write the release notes.' },
      { role: 'assistant', content: '## Release notes\n\n- ' },
    ];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: copilotClaude, messages });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(rolesSent()).toEqual(['user', 'assistant', 'user']);
    expect(sentMessages()[1]?.content).toBe('## Release notes\n\n- ');
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: copilotClaude, messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('a conversation that starts with the model, where the first turn must be the user’s', () => {
  it("a background worker's history that starts with a call (lbjlaq/Antigravity-Manager#3396), to Gemini", async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a background worker. Check the build.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_bg', type: 'function', function: { name: 'shell', arguments: '{"command":"make"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_bg', content: 'make: Nothing to be done.' },
    ];
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({ model: gemini, tools: [shell], messages });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(rolesSent()).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(sentMessages()[2]?.tool_calls).toEqual(
      messages[1] && 'tool_calls' in messages[1] ? messages[1].tool_calls : [],
    );
    const again = fake.chatRequests.length;
    await client().chat.completions.create({ model: gemini, tools: [shell], messages });
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it("a chat widget's greeting first, to Mistral Small: a user message before it, after one refusal", async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: mistralSmall,
      messages: [
        { role: 'system', content: 'You are the shop assistant.' },
        { role: 'assistant', content: 'Hi! How can I help you today?' },
        { role: 'user', content: 'Where is my order?' },
      ],
    });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(rolesSent()).toEqual(['system', 'user', 'assistant', 'user']);
    expect(sentMessages()[2]?.content).toBe('Hi! How can I help you today?');
    expect(sentMessages()[3]?.content).toBe('Where is my order?');
  });
});

describe('instructions only, to Claude on Bedrock (the user’s turn first)', () => {
  it('an agent run with no user prompt (pydantic/pydantic-ai#4495): its instructions as the user’s message', async () => {
    const instructions = 'Choose one of: retry, escalate, close. Ticket 4411 failed twice.';
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: bedrock,
      messages: [{ role: 'system', content: instructions }],
    });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(sentMessages()).toEqual([{ role: 'user', content: instructions }]);
  });
});

describe('user messages in a row, to Perplexity (user and assistant alternate)', () => {
  it('a note with the current file, then the question (glowingjade/obsidian-smart-composer#305): one message', async () => {
    const request: OpenAI.ChatCompletionCreateParamsNonStreaming = {
      model: sonar,
      messages: [
        { role: 'system', content: 'You are an intelligent assistant.' },
        { role: 'user', content: '# Inputs\n## Current File\nmeeting-notes.md' },
        { role: 'user', content: [{ type: 'text', text: 'Summarize the decisions.' }] },
      ],
    };
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create(request);
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(rolesSent()).toEqual(['system', 'user']);
    expect(sentMessages()[1]?.content).toEqual([
      { type: 'text', text: '# Inputs\n## Current File\nmeeting-notes.md' },
      { type: 'text', text: 'Summarize the decisions.' },
    ]);
    const again = fake.chatRequests.length;
    await client().chat.completions.create(request);
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('a system prompt, to Gemma (no system role)', () => {
  it('Gemma 3 on Google’s API: the system prompt at the start of the first user message, after one refusal', async () => {
    const request: OpenAI.ChatCompletionCreateParamsNonStreaming = {
      model: gemma3,
      messages: [
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: 'What is the capital of Italy?' },
      ],
    };
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create(request);
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    expect(sentMessages()).toEqual([
      { role: 'user', content: 'Answer in French.\n\nWhat is the capital of Italy?' },
    ]);
    const again = fake.chatRequests.length;
    await client().chat.completions.create(request);
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it('JSON mode to Gemma 3 (its refusal learned above): told so in the first user message, in one call', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: gemma3,
      messages: [{ role: 'user', content: 'What is the capital of Italy?' }],
      response_format: { type: 'json_object' },
    });
    expect(answer.choices).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(1);
    expect(rolesSent()).toEqual(['user']);
    expect(String(sentMessages()[0]?.content)).toMatch(/JSON.*\n\nWhat is the capital of Italy\?$/s);
  });

  it('a Responses request with instructions and a greeting first, to Gemma 2 on vLLM: user and assistant alternate', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().responses.create({
      model: gemma2,
      instructions: 'You are the shop assistant.',
      input: [
        { role: 'assistant', content: 'Hi! How can I help you today?' },
        { role: 'user', content: 'Where is my order?' },
      ],
    });
    expect(answer.status).toBe('completed');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(rolesSent()).toEqual(['user', 'assistant', 'user']);
    expect(String(sentMessages()[0]?.content)).toContain('You are the shop assistant.');
    expect(sentMessages()[2]?.content).toBe('Where is my order?');
  });
});

describe('MiniMax, which wants every tool’s parameters and every call’s arguments as an object', () => {
  it('a tool that takes nothing, sent without parameters (QwenLM/qwen-code#11905): given an empty object', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      shell,
      { type: 'function', function: { name: 'list_agents', description: 'Lists the running agents.' } },
    ];
    const request: OpenAI.ChatCompletionCreateParamsNonStreaming = {
      model: minimax,
      tools,
      messages: [{ role: 'user', content: '你好' }],
    };
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create(request);
    expect(answer.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(fake.chatRequests.length - before).toBe(2);
    const sentTools = (fake.chatRequests.at(-1)?.body as { tools: OpenAI.ChatCompletionTool[] }).tools;
    expect(sentTools[1]).toEqual({
      type: 'function',
      function: {
        name: 'list_agents',
        description: 'Lists the running agents.',
        parameters: { type: 'object', properties: {} },
      },
    });
    expect(sentTools[0]).toEqual(shell);
    const again = fake.chatRequests.length;
    await client().chat.completions.create(request);
    expect(fake.chatRequests.length - again).toBe(1);
  });

  it('a call cut short in the history (NousResearch/hermes-agent#12167): sent with {}, after one refusal', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: minimax,
      tools: [shell],
      messages: [
        { role: 'user', content: 'Make a src folder.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_function_60llhpv7vhhb_1',
              type: 'function',
              function: { name: 'shell', arguments: '{"command":"mkd' },
            },
          ],
        },
        {
          role: 'tool',
          tool_call_id: 'call_function_60llhpv7vhhb_1',
          content: 'Error: the call was cut short.',
        },
      ],
    });
    expect(answer.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(sentMessages()[1]?.tool_calls?.[0]?.function?.arguments).toBe('{}');
  });
});

describe('xAI’s reasoning models, which take no reasoning effort and want a content in every message', () => {
  it("an agent's loop (JetBrains/junie#39, langchain-ai/langchain#34140): answered after two refusals, then at once", async () => {
    const chat = client();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Make a src folder.' }];
    const request = () => ({ model: grok, tools: [shell], reasoning_effort: 'low' as const, messages });
    const before = fake.chatRequests.length;
    const first = await chat.chat.completions.create(request());
    expect(fake.chatRequests.length - before).toBe(2);
    expect(fake.chatRequests.at(-1)?.body).not.toHaveProperty('reasoning_effort');
    const reply = first.choices[0]?.message as OpenAI.ChatCompletionMessage;
    expect(reply.content).toBeNull();
    messages.push(reply, { role: 'tool', tool_call_id: reply.tool_calls?.[0]?.id ?? '', content: 'done' });
    const during = fake.chatRequests.length;
    const second = await chat.chat.completions.create(request());
    expect(second.choices[0]?.message.content).toBe('Created src.');
    expect(fake.chatRequests.length - during).toBe(2);
    expect(sentMessages()[1]?.content).toBe('');
    const again = fake.chatRequests.length;
    await chat.chat.completions.create(request());
    expect(fake.chatRequests.length - again).toBe(1);
  });
});
