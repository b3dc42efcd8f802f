// Codex (the @openai/codex npm package's Linux binary, run by its launcher under Node 22) pointed at the
// gateway as its users configure it: a custom model provider whose base_url is the gateway, wire_api
// "responses", nothing else. Codex sends what the gateway cannot bridge to a Chat Completions provider
// (client_metadata, encrypted reasoning in include, a namespace tool, web_search): dropped and named.
// The strict fake provider (16,384-token window) answers with shell tool calls, then a final message; a
// second one refuses the fields it does not know, as Mistral's API does. The local model is served with a
// chat template that takes one system message, first (a developer message refused, as Qwen's is): Codex's
// instructions and developer messages reach it as one. On GPT-6 Codex sends its tools
// in an input item, each in a namespace, and acts only through `exec`, a custom tool that runs
// JavaScript: the fake calls it as the bridge names it. Configured the shorter way — the gateway as the
// base URL of Codex's own OpenAI provider — Codex opens a WebSocket first (answered 426, so it goes over
// HTTP at once) and compacts its history remotely (a compaction_trigger item the gateway answers with the
// model's summary). A picture Codex's view_image tool returns reaches the model in a user message. With
// multi-agent v2 on, a worker the model spawns gets its task (an agent_message item) and does it. With
// an MCP server of 40 tools, which Codex holds back behind its own tool search, the model searches, is
// given the tools found and calls one. On Claude, natively (an `anthropic` upstream), it runs its shell
// tool as on any model. On a local model whose server writes its calls as text (LM Studio's Qwen3.6),
// Codex is given them as calls and runs them.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callsSeen, FakeUpstream, type ChatMessage, mistralUnknownFields } from '../helpers/fake-upstream.js';
import { codexLauncher, node22, runProgram } from '../helpers/newest-clients.js';
import { anthropicUpstreamYaml, FakeAnthropic } from '../helpers/fake-anthropic.js';
import { pictureSeenSinceLastCall, png } from '../helpers/png.js';
import { textOf as contentText } from '../helpers/text.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

const model = 'codex-16k';
/**
 * A model as OpenAI serves gpt-5.4 and the gpt-5.6 family: a chat completion that offers tools refused
 * ("Function tools with reasoning_effort are not supported for … in /v1/chat/completions").
 */
const toolsNeedResponsesModel = 'gpt-5.6-terra';
/** A model that thinks as DeepSeek's V4 does: its reasoning must come back with its tool calls. */
const thinkingModel = 'deepseek-v4-flash';
/** A Codex model as OpenAI serves it: through the Responses API alone. */
const responsesOnlyModel = 'gpt-5.3-codex';
/** A thinking model as vLLM 0.17 and later serve it: its reasoning named `reasoning`, read back so only. */
const vllmModel = 'qwen3.5-vllm';
/** Qwen3.6 as LM Studio serves it without its tool parser: its calls written as text (Qwen3-Coder's form). */
const textCallsModel = 'qwen/qwen3.6-35b-a3b';
/**
 * Qwen3.5 served with neither its reasoning nor its tool parser: its reasoning, opened by its template, in
 * the text, a draft of its call in it, then the call (PrimeIntellect-ai/renderers#78).
 */
const draftingModel = 'qwen/qwen3.5-27b';
/**
 * Qwen3.5 as vLLM 0.19 serves it with both its parsers: a call the model wrote inside its reasoning comes
 * in `reasoning`, with no text and no call (vllm-project/vllm#39056).
 */
const callsInReasoningModel = 'qwen3.5-35b-a3b-fp8';
/** Gemini 3 as Google's OpenAI-compatible endpoint serves it: a call goes back with its thought signature. */
const geminiModel = 'gemini-3.1-pro-preview';
/** Claude with reasoning on as OpenRouter serves it: a step goes back with its reasoning_details. */
const openRouterModel = 'anthropic/claude-sonnet-5';
// Codex 0.171's instructions and tools (its sub-agent namespace included) come to some 8,000 tokens.
const window = 16_384;
const longLoop = 40;
/** A task whose steps outgrow the token limit a Codex config sets for compacting its history. */
const countedTask = 'Run the counted steps.';
const countedSteps = 14;
/** What the parent agent asks the worker it spawns to do. */
const workerTask = 'Write the worker note.';
/** A task only a tool of the inventory MCP server can do: Codex defers those behind its tool search. */
const lookupTask = 'Look up record X1 of kind 7.';

/** A message's text, whether a string or parts. */
const textOf = (message: ChatMessage | undefined): string => contentText(message?.content);

const shell = (id: string, cmd: string) => ({
  toolCalls: [{ id, name: 'exec_command', arguments: JSON.stringify({ cmd }) }],
});

/** The last message is the user's, neither the counted task nor a summary of its steps: a request to summarize. */
function isAskedToSummarize(messages: ReadonlyArray<ChatMessage>): boolean {
  const last = messages.at(-1);
  const text = textOf(last);
  return last?.role === 'user' && !text.endsWith(countedTask) && !/Steps done: \d+/.test(text);
}

/**
 * The fake model, deciding from its prompt: "Write the note." runs one shell command, then answers; "Run
 * the steps." runs a command per step (each printing ~1,000 tokens) until it sees it made 40 calls (its
 * calls in the prompt, plus those a notice says were removed), then answers.
 */
function respond(messages: ReadonlyArray<ChatMessage>, body?: Record<string, unknown>) {
  if (messages.some((message) => message.role === 'user' && textOf(message).endsWith(lookupTask)))
    return lookUp(messages, body);
  // A sub-agent Codex spawned (multi-agent v2), handed its task: it writes its file, then reports.
  if (messages.some((message) => textOf(message).includes(`Payload:\n${workerTask}`)))
    return messages.some((message) => message.role === 'tool' && message.tool_call_id === 'call_worker')
      ? { content: 'Worker note written.' }
      : shell('call_worker', "printf 'written by the worker\\n' > worker.txt");
  // The task is a user message of its own, or the end of one (joined to the environment for a template
  // that makes user and assistant messages alternate).
  const task = messages
    .filter((message) => message.role === 'user')
    .map(textOf)
    .flatMap((text) =>
      [
        'Write the note.',
        'Run the steps.',
        'Log the run.',
        'Write it with exec.',
        'How big is pic.png?',
        'Delegate the note.',
        countedTask,
      ].filter((task) => text.endsWith(task)),
    )
    .at(0);
  const seen = callsSeen(messages);
  if (task === 'Write it with exec.')
    return seen === 0
      ? {
          toolCalls: [
            {
              id: 'call_exec',
              name: 'functions__exec',
              arguments: JSON.stringify({
                input: `await tools.exec_command({ cmd: "printf 'written by exec\\n' > note.txt" });`,
              }),
            },
          ],
        }
      : { content: 'Note written with exec.' };
  // The parent: spawns a worker with the task, waits for it, then answers.
  if (task === 'Delegate the note.') {
    if (seen === 0)
      return {
        toolCalls: [
          {
            id: 'call_spawn',
            name: 'collaboration__spawn_agent',
            arguments: JSON.stringify({ task_name: 'worker', message: workerTask }),
          },
        ],
      };
    if (seen === 1)
      return {
        toolCalls: [
          { id: 'call_wait', name: 'collaboration__wait_agent', arguments: '{"timeout_ms":60000}' },
        ],
      };
    return { content: 'Delegated the note.' };
  }
  if (task === 'How big is pic.png?') {
    if (seen === 0)
      return { toolCalls: [{ id: 'call_look', name: 'view_image', arguments: '{"path":"pic.png"}' }] };
    const size = pictureSeenSinceLastCall(messages);
    return {
      content: size === undefined ? 'I see no picture.' : `It is ${size.width}×${size.height} pixels.`,
    };
  }
  if (task === 'Write the note.')
    return seen === 0
      ? shell('call_note', "printf 'written through ctxgate\\n' > note.txt")
      : { content: 'Note written.' };
  if (task === countedTask) {
    // What a summary of the earlier steps says was done, and the calls made since.
    const done =
      seen +
      Math.max(0, ...messages.map((message) => Number(/Steps done: (\d+)/.exec(textOf(message))?.[1] ?? 0)));
    // Asked for something else than the task — to write a summary of the conversation, not given one:
    // it says where it is.
    if (isAskedToSummarize(messages)) return { content: `Steps done: ${done}` };
    return done >= countedSteps
      ? { content: `Finished after ${done} steps.` }
      : shell(`call_counted_${done + 1}`, `echo step ${done + 1} >> steps.txt; seq 1 600`);
  }
  if (task === 'Log the run.')
    return seen === 0 ? shell('call_log', "printf 'ran\\n' >> run.log") : { content: 'Logged.' };
  if (task === 'Run the steps.')
    return seen >= longLoop
      ? { content: `Finished after ${seen} steps.` }
      : shell(`call_step_${seen + 1}`, `echo step ${seen + 1} >> steps.txt; seq 1 300`);
  return undefined;
}

/**
 * The model given the lookup task: the tool it needs is not among those it was given, so it searches
 * for it (Codex's `tool_search`), calls it once it is given, and answers with what it returned.
 */
function lookUp(messages: ReadonlyArray<ChatMessage>, body: Record<string, unknown> | undefined) {
  // Codex gives an MCP tool's answer after a line of its own (the call's wall time).
  const result = messages
    .filter((message) => message.role === 'tool')
    .map((message) => /record \S+ of kind \d+: ACME-[\w-]+/.exec(textOf(message))?.[0])
    .find((found) => found !== undefined);
  if (result !== undefined) return { content: `Found ${result}.` };
  const tools = ((body?.tools ?? []) as Array<{ function: { name: string } }>).map(
    (tool) => tool.function.name,
  );
  if (tools.includes('mcp__inventory__lookup_7'))
    return { toolCalls: [{ id: 'call_lookup', name: 'mcp__inventory__lookup_7', arguments: '{"id":"X1"}' }] };
  if (tools.includes('tool_search') && callsSeen(messages) === 0)
    return {
      toolCalls: [
        {
          id: 'call_search',
          name: 'tool_search',
          arguments: '{"query":"inventory record kind 7","limit":3}',
        },
      ],
    };
  return { content: `No inventory tool among: ${tools.join(', ')}.` };
}

let fake: FakeUpstream;
/** As Mistral's API: fields it does not know are refused with a 422. */
let mistral: FakeUpstream;
/** As vLLM 0.17 serves a thinking model (Qwen 3.5 with a local template). */
let vllm: FakeUpstream;
let harness: GatewayHarness;
/** Claude, natively (an `anthropic` upstream): it runs the note's command, then answers. */
let claude: FakeAnthropic;

beforeAll(async () => {
  claude = new FakeAnthropic();
  claude.respond = (body) => {
    const text = JSON.stringify(body.messages);
    if (!text.includes('Write the note.')) return { text: 'ok' };
    return text.includes('"tool_result"')
      ? { text: 'Note written.' }
      : {
          toolUse: { name: 'exec_command', input: { cmd: "printf 'written through ctxgate\\n' > note.txt" } },
        };
  };
  // The local model is served with a template that takes one system message, first; GPT-6 as OpenAI serves it.
  fake = new FakeUpstream({
    windows: {
      [model]: window,
      [thinkingModel]: 131_072,
      [geminiModel]: 131_072,
      [openRouterModel]: 131_072,
      'gpt-5.5': 131_072,
      [textCallsModel]: 131_072,
      [draftingModel]: 131_072,
    },
    textToolCalls: {
      [textCallsModel]: { form: 'qwen3-coder' },
      [draftingModel]: { form: 'qwen3-coder', draft: 'template' },
    },
    systemOnlyFirst: [model],
    alternating: [model],
    responsesOnly: [responsesOnlyModel],
    toolsNeedResponses: [toolsNeedResponsesModel],
    thinking: [thinkingModel],
    thoughtSignatures: [geminiModel],
    reasoningDetails: [openRouterModel],
    recordLimit: 200,
    respond,
  });
  mistral = new FakeUpstream({
    windows: { 'devstral-codex': 131_072, 'magistral-medium-2509': 131_072 },
    mistralThinking: ['magistral-medium-2509'],
    recordLimit: 200,
    respond,
    forbiddenFields: mistralUnknownFields,
    mistralMessages: true,
    mistralToolCallIds: true,
  });
  vllm = new FakeUpstream({
    windows: { [vllmModel]: 131_072, [callsInReasoningModel]: 131_072 },
    textToolCalls: { [callsInReasoningModel]: { form: 'qwen3-coder', inReasoning: true } },
    systemOnlyFirst: true,
    thinking: [vllmModel],
    reasoningField: 'reasoning',
    recordLimit: 200,
    respond,
  });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start() },
    configYaml: [
      'upstreams:',
      ...anthropicUpstreamYaml('claude', await claude.start(), ['claude-*']),
      '  - name: mistral',
      `    base_url: ${await mistral.start()}`,
      '    models: ["devstral-*", "magistral-*"]',
      '  - name: vllm',
      `    base_url: ${await vllm.start()}`,
      '    models: ["qwen3.5-*"]',
      'models:',
      `  - match: ${model}`,
      `    window: ${window}`,
      '',
    ].join('\n'),
  });
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await mistral.stop();
  await vllm.stop();
  await claude.stop();
});

/** A request line of the gateway's log. */
interface RequestLine {
  msg: string;
  method?: string;
  route?: string;
  status?: number;
  stream?: boolean;
  errorCode?: string;
  dropped?: string[];
  context?: { modified: boolean; droppedMessages: number; maskedToolResults: number };
}

/** Codex asked to write the note, on `codexModel`: it ends well and the note is there. */
async function noteWritten(codexModel?: string, options?: Parameters<typeof codexExec>[2]) {
  const result = await codexExec('Write the note.', codexModel, options);
  expect(result.finished.status, result.finished.stderr.slice(-2_000)).toBe(0);
  expect(readFileSync(join(result.work, 'note.txt'), 'utf8')).toBe('written through ctxgate\n');
  return result;
}

/**
 * `codex exec` with a fresh home whose config.toml names the gateway: as a custom model provider, or —
 * `builtin` — as the base URL of Codex's own OpenAI provider (`openai_base_url`), with `config` added.
 */
async function codexExec(
  prompt: string,
  codexModel = model,
  options: { builtin?: boolean; config?: string[]; files?: Record<string, Buffer>; inventory?: boolean } = {},
) {
  const home = mkdtempSync(join(tmpdir(), 'ctxgate-codex-home-'));
  const work = mkdtempSync(join(tmpdir(), 'ctxgate-codex-work-'));
  for (const [name, data] of Object.entries(options.files ?? {})) writeFileSync(join(work, name), data);
  const provider =
    options.builtin === true
      ? [`openai_base_url = "${harness.baseUrl}"`]
      : [
          'model_provider = "ctxgate"',
          '[model_providers.ctxgate]',
          'name = "ctxgate"',
          `base_url = "${harness.baseUrl}"`,
          'wire_api = "responses"',
          'env_key = "CTXGATE_KEY"',
        ];
  writeFileSync(
    join(home, 'config.toml'),
    [
      `model = "${codexModel}"`,
      ...(options.config ?? []),
      ...provider,
      ...(options.inventory === true
        ? [
            '[mcp_servers.inventory]',
            `command = "${process.execPath}"`,
            `args = ["${fileURLToPath(new URL('../clients/mcp-inventory.mjs', import.meta.url))}"]`,
          ]
        : []),
      '',
    ].join('\n'),
  );
  const from = harness.logLines.length;
  const finished = await runProgram(
    node22,
    [
      codexLauncher,
      'exec',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '-C',
      work,
      prompt,
    ],
    {
      cwd: work,
      env: { HOME: home, CODEX_HOME: home, CTXGATE_KEY: 'sk-codex', OPENAI_API_KEY: 'sk-codex' },
      limitMs: 240_000,
    },
  );
  const lines = harness.logLines
    .slice(from)
    .map((line) => JSON.parse(line) as RequestLine)
    .filter((line) => line.msg === 'request');
  const requests = lines.filter((line) => line.route === '/v1/responses' && line.method === 'POST');
  return { finished, work, requests, lines };
}

describe('Codex through the gateway', () => {
  it('runs its shell tool: the file the command writes is there, and Codex ends with the answer', async () => {
    const { finished, requests } = await noteWritten();
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    // Streamed, as Codex asks; what could not be bridged was dropped and named.
    expect(requests[0]?.stream).toBe(true);
    expect(requests[0]?.dropped).toEqual(
      expect.arrayContaining(['client_metadata', 'include reasoning.encrypted_content']),
    );
  });

  it('runs on a model OpenAI serves through the Responses API alone (a Codex model): asked there after one refusal', async () => {
    const before = fake.requests.length;
    const { finished, requests } = await noteWritten(responsesOnlyModel);
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    // One chat completion refused in OpenAI's words, then the Responses API alone: the call's output
    // after the call, as it takes them.
    const asked = fake.requests.slice(before).map((request) => [request.path, request.status]);
    expect(asked).toEqual([
      ['/v1/chat/completions', 404],
      ['/v1/responses', 200],
      ['/v1/responses', 200],
    ]);
    const last = fake.requests.at(-1)?.body as { input: Array<{ type?: string; call_id?: string }> };
    expect(
      last.input.filter((item) => item.type !== undefined).map((item) => [item.type, item.call_id]),
    ).toEqual([
      ['function_call', 'call_note'],
      ['function_call_output', 'call_note'],
    ]);
  });

  it('runs on a model OpenAI refuses function tools with reasoning on chat completions (gpt-5.6): asked of the Responses API, its effort kept', async () => {
    const before = fake.requests.length;
    const { finished, requests } = await noteWritten(toolsNeedResponsesModel);
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    const asked = fake.requests.slice(before);
    expect(asked.map((request) => [request.path, request.status])).toEqual([
      ['/v1/chat/completions', 400],
      ['/v1/responses', 200],
      ['/v1/responses', 200],
    ]);
    // The effort Codex asked goes to the Responses API as it was, not dropped to 'none' to keep the tools.
    const effort = (JSON.parse(asked[0]?.rawBody ?? '{}') as { reasoning_effort?: string }).reasoning_effort;
    expect(effort).toMatch(/^(low|medium|high|xhigh)$/);
    const sent = asked[2]?.body as {
      reasoning?: { effort?: string };
      tools?: Array<{ type?: string }>;
      input: Array<{ type?: string; encrypted_content?: string }>;
    };
    expect(sent.reasoning?.effort).toBe(effort);
    expect(sent.tools?.map((tool) => tool.type)).toContain('function');
    // The reasoning the step gave (encrypted, carried through Codex in its own reasoning item) goes back
    // before the call it led to, as the Responses API gave it.
    const kinds = sent.input.map((item) => item.type).filter((type) => type !== undefined);
    expect(kinds).toEqual(['reasoning', 'function_call', 'function_call_output']);
    expect(sent.input.find((item) => item.type === 'reasoning')?.encrypted_content).toMatch(/^fake-rs\./);
  });

  it('runs the same task on Claude, natively (an anthropic upstream)', async () => {
    const { finished, requests } = await noteWritten('claude-sonnet-4-5');
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
  });

  it('runs the same task on a provider that refuses the fields it does not know (Mistral)', async () => {
    const { finished, requests } = await noteWritten('devstral-codex');
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    // The first request was refused for what the bridge wrote from Codex's; none after it carried those.
    const sent = mistral.chatRequests.map((request) => Object.keys(request.body as object));
    expect(sent.length).toBeGreaterThan(2);
    expect(
      sent
        .slice(1)
        .flat()
        .filter((field) => ['stream_options', 'reasoning_effort', 'prompt_cache_key'].includes(field)),
    ).toEqual([]);
  });

  it("runs on Mistral's reasoning model (Magistral), whose answers are chunks of thinking and text", async () => {
    const earlier = new Set(mistral.chatRequests);
    const { finished, requests } = await noteWritten('magistral-medium-2509');
    // The answer's text, which came as a chunk, reached Codex.
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    // Its thinking went to Codex as reasoning; sent back, Mistral refused it once in the message (its
    // schema has no reasoning_content), and the model's later requests leave it out at once.
    const sent = mistral.chatRequests
      .filter((request) => !earlier.has(request))
      .map((request) => request.status);
    expect(sent.at(-1)).toBe(200);
  });

  it('runs on a local model whose server writes its calls as text (LM Studio): Codex runs them', async () => {
    const { finished, requests } = await noteWritten(textCallsModel);
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
  });

  it('runs a call once when the model drafted it in its reasoning first (Qwen3.5 without parsers)', async () => {
    const { finished, work, requests } = await codexExec('Log the run.', draftingModel);
    expect(finished.status, finished.stderr.slice(-2_000)).toBe(0);
    expect(readFileSync(join(work, 'run.log'), 'utf8')).toBe('ran\n');
    expect(finished.stdout).toContain('Logged.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
  });

  it('runs a call the model wrote in its reasoning (Qwen3.5 on vLLM 0.19 with both parsers)', async () => {
    const { finished, requests } = await noteWritten(callsInReasoningModel);
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
  });

  it('runs on a thinking model (DeepSeek V4): its reasoning goes back with its tool call', async () => {
    const from = fake.chatRequests.length;
    const { finished, requests } = await noteWritten(thinkingModel);
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    // The reasoning the model gave with its call (the fake's first answer) came back with that call.
    const second = fake.chatRequests.slice(from)[1];
    const call = (second?.body as { messages: ChatMessage[] }).messages.find(
      (message) => message.role === 'assistant' && message.tool_calls !== undefined,
    );
    expect(call?.reasoning_content).toMatch(/^Thinking before answer \d+\.$/);
  });

  it('runs on a thinking model served by vLLM 0.17: its reasoning goes back under the name vLLM reads, `reasoning`', async () => {
    const { requests } = await noteWritten(vllmModel);
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    const call = (vllm.chatRequests.at(-1)?.body as { messages: ChatMessage[] }).messages.find(
      (message) => message.role === 'assistant' && message.tool_calls !== undefined,
    ) as Record<string, unknown> | undefined;
    expect(call?.reasoning).toMatch(/^Thinking before answer \d+\.$/);
    expect(call).not.toHaveProperty('reasoning_content');
  });

  it('runs on Gemini 3: its call goes back with the thought signature Gemini gave it, the first time', async () => {
    const earlier = new Set(fake.chatRequests);
    const { finished, requests } = await noteWritten(geminiModel);
    expect(finished.stdout).toContain('Note written.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    // Two calls to Gemini, none refused: the second sent the call with the signature of the first answer.
    const sent = fake.chatRequests
      .filter((request) => !earlier.has(request))
      .map((request) => request.body as { messages: ChatMessage[] });
    expect(sent).toHaveLength(2);
    const call = sent[1]?.messages.find((message) => message.tool_calls !== undefined)?.tool_calls?.[0];
    expect(call?.id).toBe('call_note');
    expect(call?.extra_content?.google?.thought_signature).toEqual(
      expect.stringMatching(/^[A-Za-z0-9+/=]{8,}$/),
    );
  });

  it('runs on Claude through OpenRouter: its step goes back with the reasoning_details Claude gave it, the first time', async () => {
    const earlier = new Set(fake.chatRequests);
    const { requests } = await noteWritten(openRouterModel);
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    const sent = fake.chatRequests.filter((request) => !earlier.has(request));
    expect(sent.map((request) => request.status)).toEqual([200, 200]);
    const step = (sent[1]?.body as { messages: ChatMessage[] }).messages.find(
      (message) => message.tool_calls !== undefined,
    );
    expect(step?.reasoning_details).toEqual([
      expect.objectContaining({
        type: 'reasoning.text',
        text: expect.stringMatching(/^Claude thinks/),
        signature: expect.any(String),
      }),
    ]);
  });

  it('runs on GPT-6 as Codex sends it there: its exec tool, given in the input, writes the file', async () => {
    const from = fake.chatRequests.length;
    const { finished, work, requests } = await codexExec('Write it with exec.', 'gpt-6.2-sol');
    expect(finished.status, finished.stderr.slice(-2_000)).toBe(0);
    expect(readFileSync(join(work, 'note.txt'), 'utf8')).toBe('written by exec\n');
    expect(finished.stdout).toContain('Note written with exec.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    const [first, second] = fake.chatRequests
      .slice(from)
      .map((request) => request.body as Record<string, unknown>);
    const toolNames = (first?.tools as Array<{ function: { name: string } }>).map(
      (tool) => tool.function.name,
    );
    expect(toolNames).toContain('functions__exec');
    // The exec's answer (text parts) reached the model as text.
    const result = (second?.messages as ChatMessage[]).find((message) => message.role === 'tool');
    expect(typeof result?.content).toBe('string');
    expect(String(result?.content)).not.toMatch(/^\[\{"type"/);
  });

  // Codex's multi-agent v2 hands a spawned agent its task as an `agent_message` input item (the parent's
  // words as `encrypted_content`, which only OpenAI's Responses API encrypts); refused as an unknown item,
  // the worker never got its task (ollama/ollama#18286, envoyproxy/ai-gateway#2442).
  it('hands a sub-agent its task (multi-agent v2): the worker writes its file and the parent answers', async () => {
    const from = fake.chatRequests.length;
    const { finished, work, requests } = await codexExec('Delegate the note.', 'gpt-5.5', {
      config: ['features.multi_agent_v2 = true'],
    });
    expect(finished.status, finished.stderr.slice(-2_000)).toBe(0);
    expect(requests.map((line) => line.status).filter((status) => status !== 200)).toEqual([]);
    expect(readFileSync(join(work, 'worker.txt'), 'utf8')).toBe('written by the worker\n');
    expect(finished.stdout).toContain('Delegated the note.');
    // The worker's first request: the task as a user message, after the parent's history it inherits.
    const handed = fake.chatRequests
      .slice(from)
      .map((request) => (request.body as { messages: ChatMessage[] }).messages.at(-1))
      .find((message) => textOf(message).endsWith(`Payload:\n${workerTask}`));
    expect(handed?.role).toBe('user');
  });

  // Codex shows the model an MCP server's tools only through its tool search (a `tool_search` tool run by
  // the client: the model's tool_search_call, Codex's tool_search_output of the tools found). Dropped as a
  // built-in tool, the model was never given a way to any MCP tool.
  it("reaches an MCP server's tools through Codex's tool search: the model searches, calls the tool found, and answers", async () => {
    const from = fake.chatRequests.length;
    const { finished, requests } = await codexExec(lookupTask, 'gpt-5.5', { inventory: true });
    expect(finished.status, finished.stderr.slice(-2_000)).toBe(0);
    expect(requests.map((line) => line.status)).toEqual([200, 200, 200]);
    expect(finished.stdout).toContain('Found record X1 of kind 7: ACME-X1-7.');
    const [first, second] = fake.chatRequests
      .slice(from)
      .map((request) => request.body as Record<string, unknown>);
    const names = (body: Record<string, unknown> | undefined) =>
      ((body?.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);
    // None of the 40 tools is given upfront; the three the search found are given after it, and the
    // model was told which they are.
    expect(names(first).filter((name) => name.startsWith('mcp__inventory__'))).toEqual([]);
    expect(names(second).filter((name) => name.startsWith('mcp__inventory__'))).toHaveLength(3);
    const found = (second?.messages as ChatMessage[]).find((message) => message.role === 'tool');
    expect(textOf(found)).toContain('mcp__inventory__lookup_7');
  });

  it('shows the model the picture its view_image tool returned (an input_image in the function output)', async () => {
    const from = fake.chatRequests.length;
    const { finished, requests } = await codexExec('How big is pic.png?', 'gpt-5.5', {
      files: { 'pic.png': png(29, 11) },
    });
    expect(finished.status, finished.stderr.slice(-2_000)).toBe(0);
    expect(finished.stdout).toContain('It is 29×11 pixels.');
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
    const second = fake.chatRequests.slice(from).at(-1)?.body as { messages: ChatMessage[] };
    const result = second.messages.find((message) => message.role === 'tool');
    expect(String(result?.content)).toContain('[image 1: shown in the next user message]');
  });

  it(`fits a ${longLoop}-step session on an ${window}-token model: it ends without an error`, async () => {
    const { finished, work, requests } = await codexExec('Run the steps.');
    expect(finished.status, finished.stderr.slice(-2_000)).toBe(0);
    expect(finished.stdout).toContain(`Finished after ${longLoop} steps.`);
    expect(existsSync(join(work, 'steps.txt'))).toBe(true);
    expect(readFileSync(join(work, 'steps.txt'), 'utf8')).toBe(
      Array.from({ length: longLoop }, (_unused, index) => `step ${index + 1}\n`).join(''),
    );
    expect(requests).toHaveLength(longLoop + 1);
    expect(requests.every((line) => line.status === 200)).toBe(true);
    // Codex sends its whole history every time; the later requests no longer fit and were fitted.
    // (On this model the environment and the task are one user message: old results are masked.)
    const fitted = requests.at(-1)?.context;
    expect(fitted?.modified).toBe(true);
    expect((fitted?.droppedMessages ?? 0) + (fitted?.maskedToolResults ?? 0)).toBeGreaterThan(0);
    expect(Math.max(...fake.chatRequests.map((request) => request.promptTokens ?? 0))).toBeLessThanOrEqual(
      window,
    );
  });

  it("takes Codex's own OpenAI provider pointed at it: its WebSocket is refused at once (426), and it goes on over HTTP", async () => {
    const { finished, requests, lines } = await noteWritten(model, { builtin: true });
    // No retries of the WebSocket (each one a "Reconnecting... n/5" and a wait), no fallback warning.
    expect(finished.stderr + finished.stdout).not.toMatch(/Reconnecting|Falling back from WebSockets/);
    const upgrades = lines.filter((line) => line.method === 'GET' && line.route === '/v1/responses');
    expect(upgrades.length).toBeGreaterThan(0);
    expect(upgrades.map((line) => line.status)).toEqual(upgrades.map(() => 426));
    expect(requests.map((line) => line.status)).toEqual([200, 200]);
  });

  it("compacts Codex's history when Codex asks (its OpenAI provider's remote compaction), and Codex goes on from the summary", async () => {
    const earlier = new Set(fake.chatRequests);
    const { finished, work, requests } = await codexExec(countedTask, 'gpt-5.5', {
      builtin: true,
      config: ['model_auto_compact_token_limit = 20000', 'model_context_window = 131072'],
    });
    expect(finished.status, finished.stderr.slice(-2_000)).toBe(0);
    expect(finished.stderr + finished.stdout).not.toMatch(/compact task/);
    expect(finished.stdout).toContain(`Finished after ${countedSteps} steps.`);
    expect(readFileSync(join(work, 'steps.txt'), 'utf8')).toBe(
      Array.from({ length: countedSteps }, (_unused, index) => `step ${index + 1}\n`).join(''),
    );
    expect(requests.every((line) => line.status === 200)).toBe(true);
    const sent = fake.chatRequests.filter((request) => !earlier.has(request));
    const messagesOf = (request: (typeof sent)[number]) =>
      (request.body as { messages: ChatMessage[] }).messages;
    // Asked to summarize: the history, then what the gateway asks; no tool may be called for it.
    const asked = sent.filter((request) => isAskedToSummarize(messagesOf(request)));
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.map((request) => (request.body as { tool_choice?: unknown }).tool_choice)).toEqual(
      asked.map(() => 'none'),
    );
    // After it, the model was sent the summary in place of the steps it summarized (fewer calls than steps).
    const after = sent.slice(sent.indexOf(asked[0] as (typeof sent)[number]) + 1);
    expect(after.length).toBeGreaterThan(0);
    for (const request of after) {
      const texts = messagesOf(request).map(textOf);
      expect(texts.some((text) => /Steps done: \d+/.test(text))).toBe(true);
      expect(callsSeen(messagesOf(request))).toBeLessThan(countedSteps);
    }
  });
});
