// Claude Code (the @anthropic-ai/claude-code npm package's own binary, `claude -p`) pointed at the
// gateway as its users configure it: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (the gateway key), a
// session id in ANTHROPIC_CUSTOM_HEADERS. Natively to the strict fake Anthropic, and bridged to the
// strict fake Chat Completions provider (and to one that refuses the fields it does not know, as Mistral's
// API does, and to a local model whose server writes its calls as text, GLM-4.7 on LM Studio): a scripted task (read a file with the Read tool, then answer),
// and a long scripted loop on a small window that finishes without "Prompt is too long"; an MCP server's
// tool reached through Claude Code's tool search; a web search (WebSearch, Anthropic's server tool). The
// fake Claude thinks first when Claude Code turns thinking on, and refuses a tool loop sent back without.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentText, FakeAnthropic, imageBlocks, webSearchBlocks } from '../helpers/fake-anthropic.js';
import { FakeUpstream, type ChatMessage, mistralUnknownFields } from '../helpers/fake-upstream.js';
import { clientsDirectory, runProgram } from '../helpers/newest-clients.js';
import { pdf, pdfOfDataUrl, pdfPageTexts } from '../helpers/pdf.js';
import { png, pictureSeenSinceLastCall, pngSizeOf } from '../helpers/png.js';
import { prose, textOf } from '../helpers/text.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

const claude = join(clientsDirectory, 'node_modules/.bin/claude');
/** The fake's window for the long loop: Claude Code's own prompt and tools take a good part of it. */
const smallWindow = 60_000;
const loopSteps = 24;
/**
 * A task Claude Code hands to a sub-agent of its own (its Agent tool), which runs in the background; or
 * in the foreground, the call waiting for it, when the task says to wait.
 */
const helperTask = 'Ask a helper to count to three.';
const waitingHelperTask = 'Ask a helper to count to three, and wait for it.';
const helperPrompt = 'Count to three, then stop.';
/** A task Claude Code hands to a fork of its own (its Agent tool's `fork`): a sub-agent shown its conversation. */
const forkTask = 'Ask a fork of yourself to count to three, and wait for it.';
/** A task only a tool of the inventory MCP server can do (test/clients/mcp-inventory.mjs). */
const lookupTask = 'Look up record X1 of kind 7.';
/** Screenshots the picture session reads, 8 at a time: more than the 100 images Anthropic takes. */
const screenshots = 104;

type Json = Record<string, unknown>;

let anthropic: FakeAnthropic;
let wideAnthropic: FakeAnthropic;
/** Claude behind Bedrock (a gateway or LiteLLM before it): every anthropic-beta flag but one refused, naming none. */
let bedrockClaude: FakeAnthropic;
/**
 * Kimi on Fireworks' Anthropic-compatible endpoint: a member of a tool beyond its name, description and
 * schema refused.
 */
let fireworks: FakeAnthropic;
/** A model on Volcano Engine's Ark coding plan: no content block beyond text, thinking, images and tools. */
let ark: FakeAnthropic;
/** Kimi's Anthropic endpoint: what it does not take (a deferred tool, a tool_reference) refused naming nothing. */
let kimi: FakeAnthropic;
/**
 * MiniMax's Anthropic endpoint: the model's call written in a text block, as MiniMax-M2.5 gives it there
 * (MiniMax-AI/MiniMax-M2.5#10), `end_turn` and no tool_use.
 */
let minimax: FakeAnthropic;
let openai: FakeUpstream;
let mistral: FakeUpstream;
let harness: GatewayHarness;
let workDirectory: string;
/** Steps the long loop made so far (the fake model's own memory of its plan). */
let stepsMade = 0;

const taskOf = (messages: Array<{ role: string; content: unknown }>): string =>
  messages
    .filter((message) => message.role === 'user')
    .map((message) => contentText(message.content))
    .join('\n');

/** The last tool result's text, when the newest user message carries one. */
function lastToolResult(messages: Array<{ role: string; content: unknown }>): string | undefined {
  const last = messages.at(-1);
  if (!Array.isArray(last?.content)) return undefined;
  const result = (last.content as Json[]).find((block) => block.type === 'tool_result');
  return result === undefined ? undefined : contentText(result.content);
}

/**
 * A vision model asked to look at every screenshot: it reads them 8 at a time, then says how wide the
 * widest picture it was shown is (each screenshot is as wide as its number: the newest) and how many
 * it was shown.
 */
function lookAtScreenshots(messages: Array<{ role: string; content: unknown }>) {
  const reads = messages
    .flatMap((message) =>
      message.role === 'assistant' && Array.isArray(message.content) ? message.content : [],
    )
    .filter((block: Json) => block.type === 'tool_use').length;
  if (reads < screenshots)
    return {
      toolUses: Array.from({ length: Math.min(8, screenshots - reads) }, (_unused, index) => ({
        name: 'Read',
        input: { file_path: join(workDirectory, `shot-${reads + index + 1}.png`) },
      })),
    };
  const images = messages.flatMap((message) => imageBlocks(message.content));
  const widths = images.map(
    (image) => pngSizeOf(`data:image/png;base64,${String((image.source as Json).data)}`)?.width ?? 0,
  );
  return { text: `The widest screenshot is ${Math.max(0, ...widths)} pixels; I was shown ${images.length}.` };
}

/**
 * The main agent of the helper task: it starts a sub-agent, says so, and once Claude Code tells it the
 * sub-agent finished (a task notification), answers with what it found.
 */
function delegate(messages: Array<{ role: string; content: unknown }>, wait: boolean) {
  const last = contentText(messages.at(-1)?.content);
  const toolResult = lastToolResult(messages);
  const found =
    /<result>([\s\S]*?)<\/result>/.exec(last)?.[1] ??
    (wait ? /The report follows:\s*\n\s*(.+)/.exec(toolResult ?? '')?.[1]?.trim() : undefined);
  if (found !== undefined) return { text: `The helper said: ${found}` };
  if (toolResult !== undefined) return { text: 'The helper is counting.' };
  return {
    toolUse: {
      name: 'Agent',
      input: {
        description: 'Count',
        prompt: helperPrompt,
        subagent_type: 'general-purpose',
        ...(wait ? { run_in_background: false } : {}),
      },
    },
  };
}

/**
 * The main agent of the fork task: it starts a fork of itself, which is shown the conversation and then
 * told it is the fork, and answers with what the fork reported once its call returns.
 */
function delegateToFork(messages: Array<{ role: string; content: unknown }>) {
  const last = contentText(messages.at(-1)?.content);
  if (last.includes('that fork is you')) return { text: 'one two three' };
  const report = lastToolResult(messages);
  if (report !== undefined)
    return { text: `The fork said: ${/one two three/.exec(report)?.[0] ?? 'nothing'}` };
  return {
    toolUse: {
      name: 'Agent',
      input: { description: 'Count', prompt: helperPrompt, subagent_type: 'fork', run_in_background: false },
    },
  };
}

/** The task of the loop Claude Code compacts part-way, and how many parts it reads. */
const partsTask = 'Read the chapters in order, part-1.txt onwards, one at a time';
const parts = 14;

/** The newest part a conversation shows read: by a Read result, or by its compaction's summary. */
const partsRead = (text: string): number =>
  Math.max(
    0,
    ...[...text.matchAll(/Chapter (\d+)\.|read up to chapter (\d+)/g)].map((match) =>
      Number(match[1] ?? match[2]),
    ),
  );

/** The fake model, deciding from the task in its prompt. */
function decide(
  task: string,
  toolResult: string | undefined,
): { text: string } | { tool: string; input: Json } {
  if (task.includes('Tell me the code in notes.txt')) {
    if (toolResult === undefined)
      return { tool: 'Read', input: { file_path: join(workDirectory, 'notes.txt') } };
    const code = /CODE-\d+/.exec(toolResult)?.[0] ?? 'nothing';
    return { text: `The code is ${code}.` };
  }
  if (task.includes('Search the web for the ctxgate release')) {
    if (toolResult === undefined) return { tool: 'WebSearch', input: { query: 'ctxgate release' } };
    const link = /https:\/\/example\.com\/[\w-]+/.exec(toolResult)?.[0];
    return { text: link === undefined ? 'I found nothing.' : `It is out: ${link}` };
  }
  if (task.includes('Read every chapter')) {
    if (stepsMade >= loopSteps) return { text: `Read ${stepsMade} chapters.` };
    stepsMade++;
    return { tool: 'Read', input: { file_path: join(workDirectory, `chapter-${stepsMade}.txt`) } };
  }
  // Claude Code's compaction (`/compact`, or on its own near the window) asks for a summary as its
  // model writes one: an analysis, then the summary, in tags, which Claude Code keeps.
  if (task.includes('Your task is to create a detailed summary of the conversation so far'))
    return {
      text: `<analysis>\nThe user asked me to do things, one after the other.\n</analysis>\n\n<summary>\n1. Primary Request and Intent: ${
        task.includes(partsTask)
          ? `${partsTask}; I read up to chapter ${partsRead(task)}.`
          : 'the user asked me to say something, then something else.'
      }\n2. Pending Tasks: none.\n</summary>`,
    };
  // A loop Claude Code compacts part-way: each step reads the part after the newest one shown, or after
  // the one its compaction's summary says it read up to.
  if (task.includes(partsTask)) {
    const read = partsRead(task);
    if (read >= parts) return { text: `Read ${parts} chapters.` };
    return { tool: 'Read', input: { file_path: join(workDirectory, `part-${read + 1}.txt`) } };
  }
  return { text: 'ok' };
}

beforeAll(async () => {
  workDirectory = mkdtempSync(join(tmpdir(), 'ctxgate-claude-'));
  writeFileSync(join(workDirectory, 'notes.txt'), 'Shopping list.\nThe launch code is CODE-4711.\n');
  writeFileSync(join(workDirectory, 'chart.png'), png(37, 23));
  writeFileSync(join(workDirectory, 'report.pdf'), pdf(['Revenue grew.', 'The Lisbon office opens in May.']));
  for (let part = 1; part <= parts; part++)
    writeFileSync(join(workDirectory, `part-${part}.txt`), `Chapter ${part}.\n${prose(3_000, 50 + part)}\n`);
  for (let chapter = 1; chapter <= loopSteps; chapter++)
    writeFileSync(join(workDirectory, `chapter-${chapter}.txt`), `${prose(3_000, chapter)}\n`);
  for (let shot = 1; shot <= screenshots; shot++)
    writeFileSync(join(workDirectory, `shot-${shot}.png`), png(shot, 9, shot));
  // The pictures' model has room for all 104 and Claude Code's prompt (with this run's paths, whatever their
  // length): what refuses the request is Anthropic's limit of 100 pictures, not the window.
  anthropic = new FakeAnthropic({ window: smallWindow, windows: { 'claude-sonnet-5': 131_072 } });
  // Claude on its whole window, for a loop Claude Code compacts by itself before the gateway fits it.
  wideAnthropic = new FakeAnthropic({ window: 200_000 });
  bedrockClaude = new FakeAnthropic({
    window: 200_000,
    betas: { accepted: ['interleaved-thinking-2025-05-14'], refusal: 'bare' },
  });
  ark = new FakeAnthropic({
    window: 200_000,
    blockTypes: { 'doubao-seed-2.0-code': ['text', 'thinking', 'image', 'tool_use', 'tool_result'] },
  });
  // Reads the PDF it is asked about, then says what the tool's result told it.
  ark.respond = (body) => {
    const messages = body.messages as Array<{ role: string; content: unknown }>;
    if (!(Array.isArray(body.tools) && (body.tools as Json[]).some((tool) => tool.name === 'Read')))
      return { text: 'A summary: the assistant is reading files for the user.' };
    const result = lastToolResult(messages);
    return result === undefined
      ? { toolUse: { name: 'Read', input: { file_path: join(workDirectory, 'report.pdf') } } }
      : { text: `Read: ${result.split('\n')[0] ?? ''}` };
  };
  kimi = new FakeAnthropic({ window: 200_000, unexplained: ['kimi-for-coding'] });
  // Looks a record up with an MCP tool it finds through Claude Code's ToolSearch, then says what it found.
  kimi.respond = (body) => {
    if (!(Array.isArray(body.tools) && (body.tools as Json[]).some((tool) => tool.name === 'ToolSearch')))
      return { text: 'A summary: the assistant is looking a record up.' };
    const results = (body.messages as Array<{ content: unknown }>).flatMap((message) =>
      Array.isArray(message.content)
        ? (message.content as Json[])
            .filter((block) => block.type === 'tool_result')
            .map((block) => contentText(block.content))
        : [],
    );
    const record = results.map((text) => /record X1 of kind 7: ACME-X1-7/.exec(text)?.[0]).find(Boolean);
    if (record !== undefined) return { text: `Found ${record}.` };
    return results.some((text) => text.includes('Tool found: mcp__inventory__lookup_7'))
      ? { toolUse: { name: 'mcp__inventory__lookup_7', input: { id: 'X1' } } }
      : { toolUse: { name: 'ToolSearch', input: { query: 'select:mcp__inventory__lookup_7' } } };
  };
  anthropic.respond = (body) => {
    const messages = body.messages as Array<{ role: string; content: unknown }>;
    // Claude Code's side requests (titles, summaries of its own) and the gateway's summarizer carry no
    // Read tool: they get text, and never move the loop on.
    // Claude Code's WebSearch asks Claude with Anthropic's web search server tool: Claude searches (a
    // server_tool_use and its results, which the API runs) and answers.
    if (
      Array.isArray(body.tools) &&
      (body.tools as Json[]).some((tool) => tool.type === 'web_search_20250305')
    )
      return {
        blocks: webSearchBlocks('srvtoolu_01', 'https://example.com/ctxgate-1-0', 'ctxgate 1.0 released'),
        text: 'ctxgate 1.0 was released two days ago.',
      };
    // A conversation is told by its first user message: the helper task's, or its sub-agent's.
    const first = contentText(messages.find((message) => message.role === 'user')?.content);
    if (first.endsWith(helperTask) || first.endsWith(waitingHelperTask))
      return delegate(messages, first.endsWith(waitingHelperTask));
    if (first.endsWith(helperPrompt)) return { text: 'one two three' };
    if (first.endsWith(forkTask)) return delegateToFork(messages);
    const hasRead = Array.isArray(body.tools) && (body.tools as Json[]).some((tool) => tool.name === 'Read');
    if (!hasRead) return { text: 'A summary: the assistant is reading files for the user.' };
    if (taskOf(messages).includes('Look at every screenshot')) return lookAtScreenshots(messages);
    const decision = decide(taskOf(messages), lastToolResult(messages));
    return 'text' in decision
      ? { text: decision.text }
      : { toolUse: { name: decision.tool, input: decision.input } };
  };
  /** The fake Chat Completions model: tool calls from the task, text for Claude Code's side requests. */
  let callNumber = 0;
  const respond = (messages: ReadonlyArray<ChatMessage>, body?: Json) => {
    // Offered as tools, or told in the system prompt (a model whose server takes no tools).
    const told = messages[0]?.role === 'system' && textOf(messages[0].content).includes('{"name":"Read"');
    if (!(Array.isArray(body?.tools) && JSON.stringify(body.tools).includes('"Read"')) && !told)
      return { content: 'A summary: the assistant is reading files for the user.' };
    const task = messages
      .filter((message) => message.role === 'user')
      .map((message) => textOf(message.content))
      .join('\n');
    if (task.includes('How big is the picture chart.png')) return lookAtPicture(messages);
    if (task.includes(lookupTask)) return lookUp(messages);
    if (task.includes('What does page 2 of report.pdf say')) return lookAtPdf(messages);
    const last = messages.at(-1);
    // Told its tools in its prompt, the model has their results as user text.
    const toldResult =
      told && last?.role === 'user' && textOf(last.content).includes('<tool_response')
        ? textOf(last.content)
        : undefined;
    const decision = decide(task, last?.role === 'tool' ? textOf(last.content) : toldResult);
    return 'text' in decision
      ? { content: decision.text }
      : {
          toolCalls: [
            { id: `call_${++callNumber}`, name: decision.tool, arguments: JSON.stringify(decision.input) },
          ],
        };
  };
  /**
   * A model asked for a record only an MCP tool can look up, which Claude Code holds back behind its
   * ToolSearch: it searches for the tool, calls it once the search's result names it, and answers.
   */
  const lookUp = (messages: ReadonlyArray<ChatMessage>) => {
    const results = messages
      .filter((message) => message.role === 'tool')
      .map((message) => textOf(message.content));
    const record = results.map((text) => /record X1 of kind 7: ACME-X1-7/.exec(text)?.[0]).find(Boolean);
    if (record !== undefined) return { content: `Found ${record}.` };
    const [name, input] = results.some((text) => text.includes('Tool found: mcp__inventory__lookup_7'))
      ? ['mcp__inventory__lookup_7', { id: 'X1' }]
      : ['ToolSearch', { query: 'select:mcp__inventory__lookup_7' }];
    return { toolCalls: [{ id: `call_${++callNumber}`, name, arguments: JSON.stringify(input) }] };
  };
  /**
   * A vision model asked about a picture: it reads the file, then says the size of the picture it was
   * shown since — in a user message, as Chat Completions providers show images.
   */
  const lookAtPicture = (messages: ReadonlyArray<ChatMessage>) => {
    if (!messages.some((message) => (message.tool_calls?.length ?? 0) > 0))
      return {
        toolCalls: [
          {
            id: `call_${++callNumber}`,
            name: 'Read',
            arguments: JSON.stringify({ file_path: join(workDirectory, 'chart.png') }),
          },
        ],
      };
    const seen = pictureSeenSinceLastCall(messages);
    return {
      content:
        seen === undefined ? 'I see no picture.' : `The picture is ${seen.width}×${seen.height} pixels.`,
    };
  };
  /**
   * A model that reads PDFs (as OpenAI's do: a file part in a user message) asked about one: it reads the
   * file, then says what the page asked for holds, in the first PDF it was shown since.
   */
  const lookAtPdf = (messages: ReadonlyArray<ChatMessage>) => {
    const called = messages.findLastIndex((message) => (message.tool_calls?.length ?? 0) > 0);
    if (called === -1)
      return {
        toolCalls: [
          {
            id: `call_${++callNumber}`,
            name: 'Read',
            arguments: JSON.stringify({ file_path: join(workDirectory, 'report.pdf') }),
          },
        ],
      };
    const file = messages
      .slice(called + 1)
      .flatMap((message) => (Array.isArray(message.content) ? (message.content as Json[]) : []))
      .find((part) => part.type === 'file');
    const report = pdfOfDataUrl((file?.file as Json | undefined)?.file_data);
    return { content: report === undefined ? 'I see no PDF.' : `Page 2 says: ${pdfPageTexts(report)[1]}` };
  };
  // Local models whose chat templates take a system message only first (Mistral's, Gemma's).
  openai = new FakeUpstream({
    windows: {
      'local-coder': 131_072,
      'local-coder-small': smallWindow,
      'local-coder-text': 131_072,
      'glm-4.7-lmstudio': 131_072,
      'minimax-m2-llamacpp': 131_072,
      'deepseek-v4-flash': 131_072,
      'deepseek-v4-pro': 131_072,
      'gemini-3.1-pro-preview': 131_072,
      'anthropic/claude-sonnet-5': 131_072,
    },
    respond,
    // As Alibaba's DashScope serves Qwen: its usage says what the prompt cache held.
    reportsCachedTokens: ['qwen3-coder-plus'],
    // As Ollama serves a model whose template has no tools; told them, it writes its calls in Hermes' form.
    noTools: ['llama3.3-notools'],
    // As OpenAI serves its Codex models: through the Responses API alone.
    responsesOnly: ['gpt-5.3-codex'],
    // As OpenAI serves gpt-5.6: function tools with reasoning only through the Responses API.
    toolsNeedResponses: ['gpt-5.6-sol'],
    systemOnlyFirst: true,
    alternating: true,
    // As vLLM serves a model that takes no images.
    textOnly: ['local-coder-text'],
    // As LM Studio serves GLM-4.7 without its tool parser: its calls written as text, in GLM's form.
    // MiniMax-M2 as llama.cpp served it without its parser (ggml-org/llama.cpp#16904): its XML blocks.
    // DeepSeek V4 on its own API writes a call as `<tool_call id=… name=…>` now and then (felinics/Memoh#435).
    textToolCalls: {
      'glm-4.7-lmstudio': { form: 'glm' },
      'minimax-m2-llamacpp': { form: 'minimax' },
      'deepseek-v4-flash': { form: 'attributes' },
      'llama3.3-notools': { form: 'hermes' },
    },
    // As DeepSeek V4 thinks: its reasoning must come back with its tool calls.
    thinking: ['deepseek-v4-pro'],
    // As Gemini 3 is served: each call must come back with its thought signature.
    thoughtSignatures: ['gemini-3.1-pro-preview'],
    // As OpenRouter serves Claude with reasoning on: each step must come back with its reasoning_details.
    reasoningDetails: ['anthropic/claude-sonnet-5'],
  });
  // As Mistral's API: the fields it does not know (the bridge's `user` and `stream_options`) are refused.
  mistral = new FakeUpstream({
    windows: { 'devstral-coder': 131_072 },
    forbiddenFields: mistralUnknownFields,
    mistralMessages: true,
    mistralToolCallIds: true,
    respond,
  });
  const anthropicUrl = await anthropic.start();
  wideAnthropic.respond = anthropic.respond;
  bedrockClaude.respond = anthropic.respond;
  fireworks = new FakeAnthropic({
    window: 200_000,
    extraToolMembers: ['fireworks-kimi-k2p5-turbo'],
    reservedBilling: ['copilot-claude-sonnet-4.6'],
  });
  fireworks.respond = anthropic.respond;
  minimax = new FakeAnthropic({ window: 200_000 });
  minimax.respond = (body) => {
    const reply = anthropic.respond?.(body);
    if (reply === undefined || !('toolUse' in reply) || reply.toolUse === undefined) return reply;
    const parameters = Object.entries(reply.toolUse.input as Record<string, unknown>)
      .map(([key, value]) => `<parameter name="${key}">${String(value)}</parameter>`)
      .join('\n');
    return {
      text: `<minimax:tool_call>\n<invoke name="${reply.toolUse.name}">\n${parameters}\n</invoke>\n</minimax:tool_call>`,
    };
  };
  const fireworksUrl = await fireworks.start();
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await openai.start(), GATEWAY_API_KEYS: 'gw-claude-code' },
    configYaml: [
      'upstreams:',
      '  - name: anthropic-wide',
      `    base_url: ${await wideAnthropic.start()}`,
      '    kind: anthropic',
      '    models: ["claude-haiku-*"]',
      '  - name: ark',
      `    base_url: ${await ark.start()}`,
      '    kind: anthropic',
      '    models: ["doubao-*"]',
      '  - name: fireworks',
      `    base_url: ${fireworksUrl}`,
      '    kind: anthropic',
      '    models: ["fireworks-*"]',
      // A relay an operator keeps Claude Code's billing line for (one in front of Anthropic too).
      '  - name: copilot',
      `    base_url: ${fireworksUrl}`,
      '    kind: anthropic',
      '    billing_line: keep',
      '    models: ["copilot-*"]',
      '  - name: kimi',
      `    base_url: ${await kimi.start()}`,
      '    kind: anthropic',
      '    models: ["kimi-*"]',
      '  - name: minimax',
      `    base_url: ${await minimax.start()}`,
      '    kind: anthropic',
      '    models: ["MiniMax-*"]',
      '  - name: bedrock',
      `    base_url: ${await bedrockClaude.start()}`,
      '    kind: anthropic',
      '    models: ["claude-opus-4-7*"]',
      // Anthropic itself, which reads Claude Code's billing line (its host is api.anthropic.com).
      '  - name: anthropic',
      `    base_url: ${anthropicUrl}`,
      '    kind: anthropic',
      '    billing_line: keep',
      '    models: ["claude-*"]',
      '  - name: mistral',
      `    base_url: ${await mistral.start()}`,
      '    models: ["devstral-*"]',
      'models:',
      '  - match: local-coder',
      '    window: 131072',
      '',
    ].join('\n'),
  });
}, 120_000);

afterAll(async () => {
  await harness.close();
  await anthropic.stop();
  await wideAnthropic.stop();
  await bedrockClaude.stop();
  await fireworks.stop();
  await ark.stop();
  await kimi.stop();
  await minimax.stop();
  await openai.stop();
  await mistral.stop();
});

/**
 * `claude -p` on `model`, in the gateway session `sessionId` (none: stateless, as Claude Code runs by
 * default); with `resume`, Claude Code's own conversation of that id in `home`, continued.
 */
async function runClaude(
  prompt: string,
  model: string,
  sessionId: string | undefined,
  {
    home = mkdtempSync(join(tmpdir(), 'ctxgate-claude-home-')),
    resume,
    quiet = true,
    inventory = false,
    allowedTools = inventory ? 'Read,ToolSearch,mcp__inventory__lookup_7' : 'Read',
    env = {},
  }: {
    home?: string;
    resume?: string;
    quiet?: boolean;
    inventory?: boolean;
    allowedTools?: string;
    env?: Record<string, string>;
  } = {},
) {
  const mcpConfig = join(home, 'mcp.json');
  if (inventory)
    writeFileSync(
      mcpConfig,
      JSON.stringify({
        mcpServers: {
          inventory: {
            command: process.execPath,
            args: [fileURLToPath(new URL('../clients/mcp-inventory.mjs', import.meta.url))],
          },
        },
      }),
    );
  const finished = await runProgram(
    claude,
    [
      '-p',
      prompt,
      ...(resume === undefined ? [] : ['--resume', resume]),
      '--model',
      model,
      '--output-format',
      'json',
      ...(inventory ? ['--mcp-config', mcpConfig] : []),
      '--allowedTools',
      allowedTools,
      '--max-turns',
      '60',
    ],
    {
      cwd: workDirectory,
      limitMs: 240_000,
      env: {
        HOME: home,
        ANTHROPIC_BASE_URL: harness.baseUrl.replace(/\/v1$/, ''),
        ANTHROPIC_API_KEY: 'gw-claude-code',
        ...(sessionId === undefined ? {} : { ANTHROPIC_CUSTOM_HEADERS: `x-session-id: ${sessionId}` }),
        ANTHROPIC_SMALL_FAST_MODEL: model,
        ...env,
        // Without them (`quiet: false`), as Claude Code runs by default.
        ...(quiet
          ? {
              DISABLE_TELEMETRY: '1',
              DISABLE_ERROR_REPORTING: '1',
              DISABLE_AUTOUPDATER: '1',
              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            }
          : {}),
      },
    },
  );
  const line = finished.stdout.trim().split('\n').at(-1) ?? '';
  let result: Json = {};
  try {
    result = JSON.parse(line) as Json;
  } catch {
    throw new Error(
      `claude exited with ${finished.status}: ${finished.stdout.slice(-1_500)} ${finished.stderr.slice(-1_500)}`,
    );
  }
  return { finished, result };
}

/** The statuses of the gateway's /v1/messages request lines since log line `from`. */
function messagesStatuses(from: number): Array<number | undefined> {
  return harness.logLines
    .slice(from)
    .map((line) => JSON.parse(line) as { msg?: string; route?: string; status?: number })
    .filter((line) => line.msg === 'request' && line.route === '/v1/messages')
    .map((line) => line.status);
}

describe('Claude Code through ctxgate', () => {
  it('starts as it does by default without a 404: its connection warm-up (HEAD /api/hello) is answered', async () => {
    const from = harness.logLines.length;
    const hellos = async () => {
      const text = await (await fetch(harness.baseUrl.replace(/\/v1$/, '/metrics'))).text();
      return Number(
        /ctxgate_http_requests_total\{[^}]*route="\/api\/hello"[^}]*status="200"[^}]*\} (\d+)/.exec(
          text,
        )?.[1] ?? 0,
      );
    };
    const before = await hellos();
    const { result } = await runClaude('Tell me the code in notes.txt.', 'local-coder', undefined, {
      quiet: false,
    });
    expect(result.is_error).toBe(false);
    const statuses = harness.logLines
      .slice(from)
      .map((line) => JSON.parse(line) as { msg?: string; status?: number })
      .filter((line) => line.msg === 'request')
      .map((line) => line.status);
    expect(statuses.length).toBeGreaterThan(1);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(await hellos()).toBeGreaterThan(before);
  }, 300_000);

  // Claude Code's WebSearch asks Claude with Anthropic's web search server tool and reads what it found
  // from the stream's blocks. Natively the stream lost them — the search's server_tool_use became a tool
  // call of no name, its results were dropped — and Claude Code found nothing.
  it('searches the web natively (WebSearch: the server tool web_search), and answers from what was found', async () => {
    const { result } = await runClaude(
      'Search the web for the ctxgate release.',
      'claude-sonnet-4-5',
      undefined,
      {
        allowedTools: 'WebSearch',
      },
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('It is out: https://example.com/ctxgate-1-0');
  }, 300_000);

  // Claude Code sends ANTHROPIC_CUSTOM_HEADERS with every request, its sub-agents' too: each sub-agent
  // is a conversation of its own under the session's id. Kept as the session's, the sub-agent was shown
  // the main agent's conversation (and did its task), and the main agent's next request, which did not
  // continue the sub-agent's messages, was stored again whole after them.
  it.each([
    ['in the background', helperTask],
    ['in the foreground, its call waiting', waitingHelperTask],
  ])(
    'keeps a session of the main agent alone while a sub-agent of its own runs %s',
    async (_how, task) => {
      const sessionId = `cc-helper-${randomUUID().slice(0, 8)}`;
      const before = new Set(anthropic.messageRequests);
      const from = harness.logLines.length;
      const { result } = await runClaude(task, 'claude-sonnet-4-5', sessionId, { allowedTools: 'Agent' });
      expect(result.is_error).toBe(false);
      expect(result.result).toBe('The helper said: one two three');
      const firstUserText = (body: Json) =>
        contentText((body.messages as Json[]).find((message) => message.role === 'user')?.content);
      const requests = anthropic.messageRequests.filter((request) => !before.has(request));
      const helper = requests.filter((request) => firstUserText(request.body).endsWith(helperPrompt));
      expect(helper.length).toBeGreaterThan(0);
      for (const request of helper)
        expect(JSON.stringify(request.body.messages)).not.toContain('Ask a helper');
      // Each of the sub-agent's requests is logged as another conversation under the session's id.
      const others = harness.logLines
        .slice(from)
        .map((line) => JSON.parse(line) as { route?: string; otherConversation?: boolean })
        .filter((line) => line.route === '/v1/messages' && line.otherConversation === true);
      expect(others).toHaveLength(helper.length);
      // The session holds the main agent's conversation once, and nothing of the sub-agent's.
      const history = (await (
        await fetch(`${harness.baseUrl}/sessions/${sessionId}:${String(result.session_id)}/history`, {
          headers: { authorization: 'Bearer gw-claude-code' },
        })
      ).json()) as { data: Array<{ role: string; content: unknown }> };
      const userTexts = history.data
        .filter((message) => message.role === 'user')
        .map((message) => contentText(message.content));
      expect(userTexts.filter((text) => text.endsWith(task))).toHaveLength(1);
      expect(userTexts.filter((text) => text.endsWith(helperPrompt))).toEqual([]);
    },
    300_000,
  );

  // A fork (the Agent tool's `fork`) is shown the main agent's whole conversation, then its task, in a
  // request that goes on from the session's conversation (its system prompt differing only in the
  // billing header's `cc_is_subagent=true`): it is served in the session, which shows the model the
  // stored steps as they came — their thinking included, which the fork's copy leaves out and Claude
  // refuses a tool loop without ("Expected `thinking` or `redacted_thinking`, but found `tool_use`") —
  // and the main agent's next request, which does not go on from the fork's messages, takes them off.
  it("runs a fork of Claude Code in a session: the fork answers, and the session keeps the main agent's conversation", async () => {
    const sessionId = `cc-fork-${randomUUID().slice(0, 8)}`;
    const before = new Set(anthropic.messageRequests);
    const { result } = await runClaude(forkTask, 'claude-sonnet-4-5', sessionId, { allowedTools: 'Agent' });
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The fork said: one two three');
    const fork = anthropic.messageRequests
      .filter((request) => !before.has(request))
      .filter((request) =>
        contentText((request.body.messages as Json[]).at(-1)?.content).includes('that fork is you'),
      );
    expect(fork.map((request) => request.status)).toEqual([200]);
    const history = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}:${String(result.session_id)}/history`, {
        headers: { authorization: 'Bearer gw-claude-code' },
      })
    ).json()) as { data: Array<{ role: string; content: unknown }> };
    const texts = history.data.map((message) => contentText(message.content));
    expect(texts.filter((text) => text.endsWith(forkTask))).toHaveLength(1);
    expect(texts.filter((text) => text.includes('that fork is you'))).toEqual([]);
    expect(texts.at(-1)).toBe('The fork said: one two three');
  }, 300_000);

  it('runs a scripted task natively: a Read tool call, then the answer', async () => {
    const before = anthropic.messageRequests.length;
    const sessionId = `cc-${Date.now()}`;
    const { result } = await runClaude('Tell me the code in notes.txt.', 'claude-sonnet-4-5', sessionId);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    // ANTHROPIC_CUSTOM_HEADERS carried the session id: the gateway kept the conversation under it.
    const session = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}:${String(result.session_id)}`, {
        headers: { authorization: 'Bearer gw-claude-code' },
      })
    ).json()) as { counts?: { total?: number } };
    expect(session.counts?.total).toBeGreaterThanOrEqual(4);
    // The tool's result went back to Anthropic right after its tool_use (the fake refuses it otherwise).
    const answered = anthropic.messageRequests
      .slice(before)
      .find((request) => request.status === 200 && JSON.stringify(request.body).includes('CODE-4711'));
    expect(answered).toBeDefined();
  }, 300_000);

  // `/model claude-sonnet-4-5[1m]`: Claude Code asks Claude's 1M window with a flag beside the plain name,
  // and a session there was cut to the 200,000 the gateway knew the model by.
  it("fits a run on a [1m] model to Claude's million, which Claude Code flags, and a run on the plain name to 200,000", async () => {
    const windows = async (model: string) => {
      const from = harness.logLines.length;
      const before = anthropic.messageRequests.length;
      const { result } = await runClaude('Say something.', model, undefined);
      expect(result.is_error).toBe(false);
      const flags = anthropic.messageRequests
        .slice(before)
        .map((request) => request.headers['anthropic-beta']);
      const logged = harness.logLines
        .slice(from)
        .map((line) => JSON.parse(line) as { msg?: string; model?: string; context?: { window?: number } })
        .filter((line) => line.msg === 'request' && line.model === 'claude-sonnet-4-5-20250929');
      return { flags, windows: [...new Set(logged.map((line) => line.context?.window))] };
    };
    const wide = await windows('claude-sonnet-4-5-20250929[1m]');
    expect(wide.flags.every((flags) => String(flags).includes('context-1m-2025-08-07'))).toBe(true);
    expect(wide.windows).toEqual([1_000_000]);
    const plain = await windows('claude-sonnet-4-5-20250929');
    expect(plain.flags.some((flags) => String(flags).includes('context-1m-'))).toBe(false);
    expect(plain.windows).toEqual([200_000]);
  }, 300_000);

  // Claude Code sends its anthropic-beta flags with every request, and the members they turn on; Bedrock
  // refuses all flags but a few ("invalid beta flag", anthropics/claude-code#49370), then the members
  // ("context_management: Extra inputs are not permitted", "tools.N.custom.defer_loading: …"), and every
  // request failed through a gateway.
  it('runs the scripted task on Claude behind Bedrock, which refuses its beta flags and what they turn on: each refused once', async () => {
    const before = bedrockClaude.messageRequests.length;
    const { result } = await runClaude('Tell me the code in notes.txt.', 'claude-opus-4-7', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const sent = bedrockClaude.messageRequests.slice(before);
    const refusals = sent.filter((request) => request.status === 400);
    expect(refusals.map((request) => request.refusal)).toEqual([
      'invalid beta flag',
      'context_management: Extra inputs are not permitted',
      expect.stringMatching(/^tools\.\d+\.custom\.defer_loading: Extra inputs are not permitted$/),
    ]);
    expect(sent.slice(0, 3)).toEqual(refusals);
    const answered = sent.slice(3);
    expect(answered.length).toBeGreaterThan(1);
    expect(answered.every((request) => request.status === 200)).toBe(true);
    for (const request of answered) {
      expect(request.headers['anthropic-beta']).toBeUndefined();
      expect(request.body.context_management).toBeUndefined();
      expect(JSON.stringify(request.body.tools)).not.toContain('defer_loading');
    }
  }, 300_000);

  // Fireworks' Anthropic-compatible endpoint refuses a member of a tool it does not have, in its words and by
  // its place ("Extra inputs are not permitted, field: 'tools[0].eager_input_streaming'"); Claude Code
  // loads some of its tools on demand (`defer_loading`), so every request failed through a gateway.
  it("runs the scripted task on Kimi on Fireworks' Anthropic-compatible endpoint, which refuses its deferred tools: refused once", async () => {
    const before = fireworks.messageRequests.length;
    const { result } = await runClaude(
      'Tell me the code in notes.txt.',
      'fireworks-kimi-k2p5-turbo',
      undefined,
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const sent = fireworks.messageRequests.slice(before);
    const refusals = sent.filter((request) => request.status === 400);
    // (Its system message in the conversation refused too, as the fake does for a model it does not know.)
    expect(refusals.map((request) => request.refusal)).toEqual([
      expect.stringMatching(/^Extra inputs are not permitted, field: 'tools\[\d+\]\.defer_loading'/),
      "role 'system' is not supported on this model",
    ]);
    expect(sent.slice(0, 2)).toEqual(refusals);
    const answered = sent.slice(2);
    expect(answered.length).toBeGreaterThan(1);
    expect(answered.every((request) => request.status === 200)).toBe(true);
    for (const request of answered) expect(JSON.stringify(request.body.tools)).not.toContain('defer_loading');
  }, 300_000);

  // GitHub Copilot's Messages endpoint (and Claude on Bedrock behind a relay) refuses Claude Code's first
  // system line, its billing attribution ("x-anthropic-billing-header is a reserved keyword and may not be
  // used in the system prompt."): every request failed through a gateway (ericc-ch/copilot-api#174).
  it("runs the scripted task on GitHub Copilot's Claude, which refuses Claude Code's billing line: refused once", async () => {
    const before = fireworks.messageRequests.length;
    const { result } = await runClaude(
      'Tell me the code in notes.txt.',
      'copilot-claude-sonnet-4.6',
      undefined,
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const sent = fireworks.messageRequests.slice(before);
    expect(sent.filter((request) => request.status !== 200).map((request) => request.refusal)).toEqual([
      'x-anthropic-billing-header is a reserved keyword and may not be used in the system prompt.',
    ]);
    expect(sent[0]?.status).toBe(400);
    expect(sent.length).toBeGreaterThan(2);
    for (const request of sent.slice(1)) {
      expect(JSON.stringify(request.body.system)).not.toContain('x-anthropic-billing-header');
      // The instructions after the line went as they were.
      expect(JSON.stringify(request.body.system)).toContain('You are a Claude agent');
    }
  }, 300_000);

  // Claude Code's billing line changes with each request (`cch=`) and each conversation's first message, at
  // the very start of the prompt: an Anthropic-compatible provider that caches by prefix (Fireworks, Kimi,
  // DeepSeek, vLLM, SGLang) reused nothing after it (anthropics/claude-code#68900, vllm-project/vllm#36829).
  // Anthropic itself reads the line, and gets it.
  it('sends an Anthropic-compatible provider the same system prompt from one conversation to the next, without the billing line; Anthropic gets it', async () => {
    const systems: string[] = [];
    const home = mkdtempSync(join(tmpdir(), 'ctxgate-claude-home-'));
    for (const task of ['Tell me the code in notes.txt.', 'Tell me the code in notes.txt, please.']) {
      const before = fireworks.messageRequests.length;
      const { result } = await runClaude(task, 'fireworks-glm-5', undefined, { home });
      expect(result.is_error).toBe(false);
      expect(result.result).toBe('The code is CODE-4711.');
      // (The model refuses a system message in the conversation, once: the fake's GLM as Anthropic's do.)
      const sent = fireworks.messageRequests.slice(before).filter((request) => request.status === 200);
      const first = sent.find((request) => ((request.body.tools as unknown[] | undefined)?.length ?? 0) > 0);
      systems.push(JSON.stringify(first?.body.system));
    }
    expect(systems[0]).not.toContain('x-anthropic-billing-header');
    expect(systems[0]).toContain('You are a Claude agent');
    expect(systems[1]).toBe(systems[0]);
    const before = anthropic.messageRequests.length;
    const { result } = await runClaude('Tell me the code in notes.txt.', 'claude-sonnet-4-5', undefined, {
      home,
    });
    expect(result.is_error).toBe(false);
    const system = anthropic.messageRequests.slice(before).at(-1)?.body.system as Array<{ text: string }>;
    expect(system[0]?.text).toMatch(/^x-anthropic-billing-header: cc_version=/);
  }, 300_000);

  // Volcano Engine's Ark takes no `document` block ("invalid value: `document`, supported values are: …",
  // farion1231/cc-switch#1519): once Claude Code read a PDF, every later request of the conversation failed.
  it('reads a PDF on a model of Volcano Engine’s Ark, which refuses its system message and the document block: each refused once, never to Claude Code', async () => {
    const before = ark.messageRequests.length;
    const logFrom = harness.logLines.length;
    const { result } = await runClaude('Read report.pdf.', 'doubao-seed-2.0-code', undefined);
    // Claude Code was answered every time: neither refusal reached it (it would retry a refused system
    // message by itself, one more request each time).
    expect(messagesStatuses(logFrom).every((status) => status === 200)).toBe(true);
    expect(result.is_error).toBe(false);
    const sent = ark.messageRequests.slice(before);
    // Claude Code sends a system message in the conversation, which the model refuses in Anthropic's words
    // for one that takes none (decolua/9router#1603); then the PDF. Each once, and never again.
    expect(sent.filter((request) => request.status !== 200).map((request) => request.refusal)).toEqual([
      "role 'system' is not supported on this model",
      expect.stringContaining('invalid value: `document`'),
    ]);
    // Each refusal is followed by the request as the model takes it.
    sent.forEach((request, index) => {
      if (request.status !== 200) expect(sent[index + 1]?.status).toBe(200);
    });
    // The model was shown where the PDF stood, and what Claude Code said of it.
    const last = JSON.stringify(sent.at(-1)?.body.messages);
    expect(last).toContain('[document');
    expect(result.result).toMatch(/^Read: .*report\.pdf/);
  }, 300_000);

  // Kimi's Anthropic endpoint refuses Claude Code's tool search with one message that names nothing
  // ("Invalid request Error": MoonshotAI/kimi-cli#1449, farion1231/cc-switch#2941): every request of a
  // Claude Code with an MCP server failed.
  it("reaches an MCP tool through Claude Code's tool search on Kimi's Anthropic endpoint, which refuses it naming nothing", async () => {
    const before = kimi.messageRequests.length;
    const from = harness.logLines.length;
    const { result } = await runClaude(lookupTask, 'kimi-for-coding', undefined, { inventory: true });
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('Found record X1 of kind 7: ACME-X1-7.');
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    const sent = kimi.messageRequests.slice(before);
    // Refused once, answered in the form every such endpoint takes, and that form kept.
    expect(sent.filter((request) => request.status !== 200).map((request) => request.refusal)).toEqual([
      'Invalid request Error',
    ]);
    expect(sent[0]?.status).toBe(400);
    expect(sent.slice(1).every((request) => request.status === 200)).toBe(true);
  }, 300_000);

  // ANTHROPIC_CUSTOM_HEADERS is the same for every run of Claude Code. Each run is a conversation of its
  // own (X-Claude-Code-Session-Id, which --resume keeps): kept under the one id, a second run's
  // conversation was mixed into the first's.
  it('keeps each run in a session of its own under the id, and a resumed run goes on with its own', async () => {
    const sessionId = `cc-runs-${randomUUID().slice(0, 8)}`;
    const home = mkdtempSync(join(tmpdir(), 'ctxgate-claude-home-'));
    const task = 'Tell me the code in notes.txt.';
    const totalOf = async (run: unknown): Promise<number | undefined> => {
      const response = await fetch(`${harness.baseUrl}/sessions/${sessionId}:${String(run)}`, {
        headers: { authorization: 'Bearer gw-claude-code' },
      });
      return ((await response.json()) as { counts?: { total?: number } }).counts?.total;
    };
    const first = await runClaude(task, 'claude-sonnet-4-5', sessionId, { home });
    const second = await runClaude(task, 'claude-sonnet-4-5', sessionId, { home });
    expect([first.result.result, second.result.result]).toEqual([
      'The code is CODE-4711.',
      'The code is CODE-4711.',
    ]);
    expect(second.result.session_id).not.toBe(first.result.session_id);
    const once = await totalOf(first.result.session_id);
    expect(once).toBeGreaterThanOrEqual(4);
    expect(await totalOf(second.result.session_id)).toBe(once);
    const resumed = await runClaude(task, 'claude-sonnet-4-5', sessionId, {
      home,
      resume: String(first.result.session_id),
    });
    expect(resumed.result.result).toBe('The code is CODE-4711.');
    expect(resumed.result.session_id).toBe(first.result.session_id);
    expect(await totalOf(first.result.session_id)).toBeGreaterThan(once ?? 0);
    expect(await totalOf(second.result.session_id)).toBe(once);
  }, 300_000);

  // Claude Code's own compaction asks the model for a summary through the session (its instructions and
  // tools, the conversation, then the request for a summary) and goes on with a conversation rewritten
  // from its first message: the summary, then what follows. Served without the session, the session was
  // left as it was at the compaction, and nothing Claude Code sent after it was stored or shown by the
  // inspector; the session starts over with it (docs/sessions.md#compacted-conversations).
  it('goes on after Claude Code compacts its conversation: the session starts over with the compacted conversation', async () => {
    const sessionId = `cc-compact-${randomUUID().slice(0, 8)}`;
    const home = mkdtempSync(join(tmpdir(), 'ctxgate-claude-home-'));
    const first = await runClaude('Say something.', 'claude-sonnet-4-5', sessionId, { home });
    const resume = String(first.result.session_id);
    const second = await runClaude('Say something else.', 'claude-sonnet-4-5', sessionId, { home, resume });
    const compacted = await runClaude('/compact', 'claude-sonnet-4-5', sessionId, { home, resume });
    const stored = async (): Promise<string[]> => {
      const response = await fetch(`${harness.baseUrl}/sessions/${sessionId}:${resume}/history`, {
        headers: { authorization: 'Bearer gw-claude-code' },
      });
      const { data } = (await response.json()) as { data: Json[] };
      return data.map((message) => contentText(message.content));
    };
    const atCompaction = await stored();
    const before = anthropic.messageRequests.length;
    const from = harness.logLines.length;
    const third = await runClaude('Say a third thing.', 'claude-sonnet-4-5', sessionId, { home, resume });
    expect([first, second, compacted, third].map((run) => run.result.is_error)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(atCompaction.filter((text) => text.includes('Say something.'))).toHaveLength(1);
    // Anthropic was shown the compacted conversation once: its first message no longer the first task.
    const sent = anthropic.messageRequests.slice(before).map((request) => request.body.messages as Json[]);
    expect(sent).toHaveLength(1);
    const texts = (sent[0] ?? []).map((message) => contentText(message.content));
    expect(texts[0]).toContain('Primary Request and Intent: the user asked me to say something');
    expect(texts[0]).not.toContain('Say something.');
    expect(texts.filter((text) => text.includes('Say a third thing.'))).toHaveLength(1);
    // The session holds what Claude Code sent, and the answer: the conversation before it is gone.
    const after = await stored();
    expect(after[0]).toContain('This session is being continued from a previous conversation');
    expect(after.filter((text) => text.includes('Say something.'))).toEqual([]);
    expect(after.filter((text) => text.includes('Say a third thing.'))).toHaveLength(1);
    expect(after.at(-1)).toBe('ok');
    const lines = harness.logLines
      .slice(from)
      .map(
        (line) =>
          JSON.parse(line) as {
            route?: string;
            otherConversation?: boolean;
            startedOver?: boolean;
            session?: string;
          },
      )
      .filter((line) => line.route === '/v1/messages');
    expect(lines.map((line) => [line.otherConversation, line.startedOver, typeof line.session])).toEqual([
      [undefined, true, 'string'],
    ]);
  }, 300_000);

  // Near its window Claude Code compacts by itself, part-way through a task, and goes on with the task
  // in the compacted conversation (its window made small, as its CLAUDE_CODE_AUTO_COMPACT_WINDOW does).
  it('finishes a loop Claude Code compacts part-way, in a session that starts over with the compacted conversation', async () => {
    const sessionId = `cc-autocompact-${randomUUID().slice(0, 8)}`;
    const before = wideAnthropic.messageRequests.length;
    const from = harness.logLines.length;
    const run = await runClaude(`${partsTask}.`, 'claude-haiku-4-5', sessionId, {
      env: { CLAUDE_CODE_AUTO_COMPACT_WINDOW: '40000' },
    });
    expect(run.result.result).toBe(`Read ${parts} chapters.`);
    const sent = wideAnthropic.messageRequests
      .slice(before)
      .map((request) => request.body.messages as Json[]);
    const compaction = sent.findIndex((messages) =>
      contentText(messages.at(-1)?.content).includes('create a detailed summary of the conversation so far'),
    );
    expect(compaction).toBeGreaterThan(0);
    expect(compaction).toBeLessThan(sent.length - 2);
    const response = await fetch(
      `${harness.baseUrl}/sessions/${sessionId}:${String(run.result.session_id)}/history`,
      { headers: { authorization: 'Bearer gw-claude-code' } },
    );
    const stored = ((await response.json()) as { data: Json[] }).data.map((message) =>
      contentText(message.content),
    );
    // The session holds the compacted conversation as Claude Code went on with it, and the answer.
    expect(stored[0]).toContain('This session is being continued from a previous conversation');
    expect(stored.filter((text) => text.startsWith('1\tChapter 1.'))).toEqual([]);
    expect(stored.filter((text) => text.includes(`Chapter ${parts}.`))).toHaveLength(1);
    expect(stored.at(-1)).toBe(`Read ${parts} chapters.`);
    const lines = harness.logLines
      .slice(from)
      .map(
        (line) => JSON.parse(line) as { route?: string; otherConversation?: boolean; startedOver?: boolean },
      )
      .filter((line) => line.route === '/v1/messages');
    expect(lines.filter((line) => line.otherConversation === true)).toEqual([]);
    expect(lines.filter((line) => line.startedOver === true)).toHaveLength(1);
  }, 300_000);

  it('runs on Claude Opus 5.5 as Claude Code sends it there: its system message in the conversation, effort and context management reach Anthropic', async () => {
    const before = anthropic.messageRequests.length;
    const from = harness.logLines.length;
    const { result } = await runClaude(
      'Tell me the code in notes.txt.',
      'claude-opus-5-5',
      `cc-opus5-${Date.now()}`,
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    // Nothing refused on the way (the gateway refused Claude Code's system message with a 400 before).
    const statuses = messagesStatuses(from);
    expect(statuses.length).toBeGreaterThan(1);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const task = anthropic.messageRequests
      .slice(before)
      .map((request) => request.body)
      .filter(
        (body) => Array.isArray(body.tools) && (body.tools as Json[]).some((tool) => tool.name === 'Read'),
      );
    expect(task.length).toBeGreaterThan(0);
    for (const body of task) {
      expect((body.messages as Json[]).map((message) => message.role)).toContain('system');
      expect(body).toHaveProperty('output_config.effort');
      expect(body).toHaveProperty('context_management.edits');
    }
  }, 300_000);

  it('goes on natively on Claude past 100 pictures: the newest 100 are sent, not "Too much media" on every request', async () => {
    const before = anthropic.messageRequests.length;
    const from = harness.logLines.length;
    const { result } = await runClaude(
      'Look at every screenshot, shot-1.png to shot-104.png.',
      'claude-sonnet-5',
      undefined,
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The widest screenshot is 104 pixels; I was shown 100.');
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    // Anthropic refused one request for its pictures, the first that held more than 100; every one it took
    // held at most 100.
    const sent = anthropic.messageRequests.slice(before).map((request) => ({
      status: request.status,
      images: (request.body.messages as Json[]).flatMap((message) => imageBlocks(message.content)).length,
    }));
    expect(sent.filter((request) => request.status === 400 && request.images > 100)).toHaveLength(1);
    expect(
      Math.max(...sent.filter((request) => request.status === 200).map((request) => request.images)),
    ).toBe(100);
  }, 300_000);

  it('runs the same task bridged to a Chat Completions model', async () => {
    const before = openai.chatRequests.length;
    const from = harness.logLines.length;
    const { result } = await runClaude(
      'Tell me the code in notes.txt.',
      'local-coder',
      `cc-bridged-${Date.now()}`,
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    // Its system message in the conversation went in a user message: the model's template takes a system
    // message only first, and refused nothing.
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    const sent = openai.chatRequests
      .slice(before)
      .map((request) => request.body as { messages: ChatMessage[] });
    expect(
      sent.some((body) =>
        body.messages.some(
          (message) => message.role === 'tool' && textOf(message.content).includes('CODE-4711'),
        ),
      ),
    ).toBe(true);
  }, 300_000);

  // Claude Code starts its system prompt with a billing line for Anthropic (`x-anthropic-billing-header:
  // cc_version=2.1.332.857; …`) whose last part follows the conversation's first message: bridged, every
  // conversation's and sub-agent's prompt differed from its first bytes, and no provider could reuse its
  // prefix cache for the instructions and tools after it.
  it('sends a Chat Completions model the same system prompt from one conversation to the next, without the billing line', async () => {
    const systemPrompts: string[] = [];
    // One user's two conversations: the same home (its memory's path is in the prompt).
    const home = mkdtempSync(join(tmpdir(), 'ctxgate-claude-home-'));
    for (const task of ['Tell me the code in notes.txt.', 'Please, tell me what the code in notes.txt is.']) {
      const before = openai.chatRequests.length;
      const { result } = await runClaude(task, 'local-coder', undefined, { home });
      expect(result.is_error).toBe(false);
      const first = openai.chatRequests
        .slice(before)
        .map((request) => request.body as { messages: ChatMessage[]; tools?: unknown[] })
        .find((body) => (body.tools?.length ?? 0) > 0);
      systemPrompts.push(textOf(first?.messages.find((message) => message.role === 'system')?.content));
    }
    expect(systemPrompts[0]).not.toContain('x-anthropic-billing-header');
    expect(systemPrompts[0]?.length).toBeGreaterThan(1_000);
    expect(systemPrompts[1]).toBe(systemPrompts[0]);
  }, 300_000);

  // Claude Code streams, and reads a turn's usage from the stream's message_delta (LiteLLM's Bedrock stream
  // had to be made to carry it there: BerriAI/litellm#24850): bridged, it carried the input and the output
  // alone, so Claude Code counted no cache read at all, and a context of cached tokens as if it were small.
  it("tells Claude Code what the provider's prompt cache held, bridged to a Chat Completions model that says so", async () => {
    const before = openai.chatRequests.length;
    const { result } = await runClaude('Tell me the code in notes.txt.', 'qwen3-coder-plus', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const sent = openai.chatRequests.slice(before);
    const held = sent.reduce((sum, request) => sum + (request.cachedTokens ?? 0), 0);
    // The loop's second request begins with its first: the provider held it.
    expect(held).toBeGreaterThan(1_000);
    const usage = result.usage as { cache_read_input_tokens?: number; input_tokens?: number };
    expect(usage.cache_read_input_tokens).toBe(held);
    const prompts = sent.reduce((sum, request) => sum + (request.promptTokens ?? 0), 0);
    expect(usage.input_tokens).toBe(prompts - held);
  }, 300_000);

  // OpenAI serves its Codex models through the Responses API alone ("This model is only supported in
  // v1/responses and not in v1/chat/completions."): every request of Claude Code bridged to one failed.
  it('runs the scripted task on a Codex model OpenAI serves through the Responses API alone', async () => {
    const before = openai.requests.length;
    const { result } = await runClaude('Tell me the code in notes.txt.', 'gpt-5.3-codex', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const asked = openai.requests.slice(before).filter((request) => request.path.startsWith('/v1/'));
    // One chat completion refused, then the Responses API alone: Claude Code's Read and its result there.
    expect(asked[0]?.path).toBe('/v1/chat/completions');
    expect(asked[0]?.status).toBe(404);
    expect(asked.slice(1).every((request) => request.path === '/v1/responses')).toBe(true);
    const last = asked.at(-1)?.body as { input: Array<{ type?: string; name?: string }> };
    expect(last.input.filter((item) => item.type === 'function_call').map((item) => item.name)).toEqual([
      'Read',
    ]);
    expect(last.input.some((item) => item.type === 'function_call_output')).toBe(true);
  }, 300_000);

  // OpenAI refuses a chat completion offering function tools with reasoning for gpt-5.4 and the gpt-5.6
  // family, the model's default effort too (GEMISIS/leviath#333): every request of Claude Code failed.
  it('runs the scripted task on gpt-5.6, which takes tools with reasoning only through the Responses API', async () => {
    const before = openai.requests.length;
    const { result } = await runClaude('Tell me the code in notes.txt.', 'gpt-5.6-sol', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const asked = openai.requests.slice(before).filter((request) => request.path.startsWith('/v1/'));
    expect(asked.map((request) => [request.path, request.status]).slice(0, 2)).toEqual([
      ['/v1/chat/completions', 400],
      ['/v1/responses', 200],
    ]);
    expect(asked.slice(1).every((request) => request.path === '/v1/responses')).toBe(true);
    const last = asked.at(-1)?.body as { input: Array<{ type?: string; name?: string }> };
    expect(last.input.filter((item) => item.type === 'function_call').map((item) => item.name)).toEqual([
      'Read',
    ]);
  }, 300_000);

  // Ollama refuses tools for a model whose template has none ("registry.ollama.ai/library/llama3:8b does not
  // support tools"): every request of Claude Code failed.
  it('runs the scripted task on a model whose server takes no tools: told them in its prompt, after one refusal', async () => {
    const before = openai.chatRequests.length;
    const { result } = await runClaude('Tell me the code in notes.txt.', 'llama3.3-notools', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const sent = openai.chatRequests
      .slice(before)
      .filter((request) => (request.body as { model?: string }).model === 'llama3.3-notools');
    expect(sent.filter((request) => request.status !== 200)).toHaveLength(1);
    const answered = sent.filter((request) => request.status === 200);
    for (const request of answered) expect((request.body as Json).tools).toBeUndefined();
    // The Read call Claude Code ran, and its result, went back as the model was told to write them.
    const last = answered.at(-1)?.body as { messages: ChatMessage[] };
    expect(
      last.messages.some((message) => textOf(message.content).includes('<tool_call>\n{"name": "Read"')),
    ).toBe(true);
    expect(
      last.messages.some(
        (message) => message.role === 'user' && textOf(message.content).includes('CODE-4711'),
      ),
    ).toBe(true);
  }, 300_000);

  // Claude through a Chat Completions endpoint (OpenRouter's, LiteLLM's) caches only up to the parts a
  // client marks `cache_control`: bridged, Claude Code's marks were dropped with its blocks, and every
  // request of its loop paid for its whole prompt again.
  it("keeps Claude Code's cache breakpoints on the parts they marked, bridged to Claude behind a Chat Completions endpoint", async () => {
    const before = openai.chatRequests.length;
    const sessionId = `cc-marks-${Date.now()}`;
    const { result } = await runClaude(
      'Tell me the code in notes.txt.',
      'anthropic/claude-sonnet-4.6',
      sessionId,
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    // In a session, each turn's messages lined up with those stored, marked or not: none stored twice.
    const history = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}:${String(result.session_id)}/history`, {
        headers: { authorization: 'Bearer gw-claude-code' },
      })
    ).json()) as { data: Array<{ role: string; content: unknown }> };
    expect(history.data.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const sent = openai.chatRequests
      .slice(before)
      .map((request) => request.body as { messages: ChatMessage[]; tools?: unknown[] })
      .filter((body) => (body.tools?.length ?? 0) > 0);
    expect(sent.length).toBeGreaterThan(1);
    const marksIn = (message: ChatMessage | undefined) =>
      Array.isArray(message?.content)
        ? (message.content as Array<{ cache_control?: unknown }>).filter(
            (part) => part.cache_control !== undefined,
          ).length
        : 0;
    for (const body of sent) {
      const system = body.messages.find((message) => message.role === 'system');
      expect(marksIn(system)).toBeGreaterThan(0);
      expect(JSON.stringify(system?.content)).not.toContain('x-anthropic-billing-header');
      // The newest message marked too (Claude Code marks its last block), and no more than Claude takes.
      expect(marksIn(body.messages.at(-1))).toBe(1);
      expect(body.messages.reduce((count, message) => count + marksIn(message), 0)).toBeLessThanOrEqual(4);
    }
  }, 300_000);

  // Claude Code holds an MCP server's tools back behind its ToolSearch, whose result names the tool found
  // in a `tool_reference` block: a Chat Completions model was told only "[tool_reference]".
  it("reaches an MCP server's tool through Claude Code's tool search bridged to a Chat Completions model", async () => {
    const from = harness.logLines.length;
    const earlier = new Set(openai.chatRequests);
    const { result } = await runClaude(lookupTask, 'local-coder', undefined, { inventory: true });
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('Found record X1 of kind 7: ACME-X1-7.');
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    // The deferred tools the model was given: those a search found, as Claude shows them — not Claude
    // Code's placeholder ("never call this tool").
    const given = openai.chatRequests
      .filter((request) => !earlier.has(request))
      .flatMap((request) => ((request.body as Json).tools ?? []) as Array<{ function: { name: string } }>)
      .map((tool) => tool.function.name);
    expect(given).toContain('mcp__inventory__lookup_7');
    expect(given).not.toContain('DeferredToolPlaceholder');
  }, 300_000);

  it('shows a Chat Completions model the picture its Read tool returned (a PNG), which a tool message cannot carry', async () => {
    for (const model of ['local-coder', 'devstral-coder']) {
      const fake = model === 'local-coder' ? openai : mistral;
      const before = fake.chatRequests.length;
      const from = harness.logLines.length;
      const { result } = await runClaude('How big is the picture chart.png?', model, undefined);
      expect(result.is_error).toBe(false);
      // The size of the file the test wrote, as the model saw it.
      expect(result.result).toBe('The picture is 37×23 pixels.');
      expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
      // The tool message held text, the picture came in a user message after it.
      const answered = fake.chatRequests
        .slice(before)
        .map((request) => request.body as { messages: ChatMessage[] })
        .find((body) => body.messages.some((message) => message.role === 'tool'));
      const tool = answered?.messages.find((message) => message.role === 'tool');
      expect(typeof tool?.content).toBe('string');
      expect(String(tool?.content)).toContain('[image 1: shown in the next user message]');
    }
  }, 300_000);

  it('shows a Chat Completions model the PDF its Read tool returned, which a tool message cannot carry', async () => {
    const before = openai.chatRequests.length;
    const from = harness.logLines.length;
    const { result } = await runClaude('What does page 2 of report.pdf say?', 'local-coder', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('Page 2 says: The Lisbon office opens in May.');
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    // The tool message held text, the PDF came in a user message after it.
    const answered = openai.chatRequests
      .slice(before)
      .map((request) => request.body as { messages: ChatMessage[] })
      .find((body) => body.messages.some((message) => message.role === 'tool'));
    const tool = answered?.messages.find((message) => message.role === 'tool');
    expect(typeof tool?.content).toBe('string');
    expect(String(tool?.content)).toContain('[file document.pdf: shown in the next user message]');
  }, 300_000);

  it('runs the picture task on a model that takes no images: the picture is named in its result, once the model refused it', async () => {
    const before = openai.chatRequests.length;
    const { result } = await runClaude('How big is the picture chart.png?', 'local-coder-text', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('I see no picture.');
    const sent = openai.chatRequests
      .slice(before)
      .filter((request) => (request.body as { model?: string }).model === 'local-coder-text');
    // Refused once with the picture, then sent with it named; the next run is not refused at all.
    expect(sent.map((request) => request.status)).toEqual([200, 400, 200]);
    const named = (sent[2]?.body as { messages: ChatMessage[] }).messages.find(
      (message) => message.role === 'tool',
    );
    expect(named?.content).toBe('[image: not shown, the model takes no images]');
    const again = openai.chatRequests.length;
    await runClaude('How big is the picture chart.png?', 'local-coder-text', undefined);
    expect(openai.chatRequests.slice(again).map((request) => request.status)).not.toContain(400);
  }, 300_000);

  it.each([
    ['GLM-4.7 on LM Studio', 'glm-4.7-lmstudio'],
    ['MiniMax-M2 on llama.cpp', 'minimax-m2-llamacpp'],
    ["DeepSeek V4 on DeepSeek's API", 'deepseek-v4-flash'],
    ["MiniMax-M2.5 on MiniMax's Anthropic endpoint", 'MiniMax-M2.5'],
  ])(
    'runs the same task bridged to a model whose calls come written as text (%s)',
    async (_name, model) => {
      const from = harness.logLines.length;
      const { result } = await runClaude('Tell me the code in notes.txt.', model, undefined);
      expect(result.is_error).toBe(false);
      expect(result.result).toBe('The code is CODE-4711.');
      expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    },
    300_000,
  );

  it('runs the same task bridged to a thinking model (DeepSeek V4): its reasoning goes back with its tool call', async () => {
    const before = openai.chatRequests.length;
    const from = harness.logLines.length;
    // Stateless: the conversation is Claude Code's own, its thinking blocks what it sends back.
    const { result } = await runClaude('Tell me the code in notes.txt.', 'deepseek-v4-pro', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    // The reasoning the model gave with its Read call came back with that call.
    const calls = openai.chatRequests
      .slice(before)
      .flatMap((request) => (request.body as { messages: ChatMessage[] }).messages)
      .filter((message) => message.role === 'assistant' && message.tool_calls?.length);
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) expect(call.reasoning_content).toMatch(/^Thinking before answer \d+\.$/);
  }, 300_000);

  it('runs the same task bridged to Gemini 3: its call goes back with the thought signature Gemini gave it, the first time', async () => {
    const before = openai.chatRequests.length;
    const from = harness.logLines.length;
    // Stateless: the signature rides in a thinking block Claude Code keeps and sends back.
    const { result } = await runClaude('Tell me the code in notes.txt.', 'gemini-3.1-pro-preview', undefined);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    const requests = openai.chatRequests
      .slice(before)
      .filter((request) => (request.body as { model?: string }).model === 'gemini-3.1-pro-preview');
    // None refused: as many calls to Gemini as answered requests.
    expect(requests.every((request) => request.status === 200)).toBe(true);
    const calls = requests
      .flatMap((request) => (request.body as { messages: ChatMessage[] }).messages)
      .filter((message) => message.role === 'assistant' && message.tool_calls?.length);
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls)
      expect(call.tool_calls?.[0]?.extra_content?.google?.thought_signature).toEqual(
        expect.stringMatching(/^[A-Za-z0-9+/=]{8,}$/),
      );
  }, 300_000);

  it('runs the same task bridged to Claude through OpenRouter: its step goes back with the reasoning_details Claude gave it', async () => {
    const before = openai.chatRequests.length;
    const from = harness.logLines.length;
    const { result } = await runClaude(
      'Tell me the code in notes.txt.',
      'anthropic/claude-sonnet-5',
      undefined,
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    const requests = openai.chatRequests
      .slice(before)
      .filter((request) => (request.body as { model?: string }).model === 'anthropic/claude-sonnet-5');
    expect(requests.every((request) => request.status === 200)).toBe(true);
    const steps = requests
      .flatMap((request) => (request.body as { messages: ChatMessage[] }).messages)
      .filter((message) => message.role === 'assistant' && message.tool_calls?.length);
    expect(steps.length).toBeGreaterThan(0);
    for (const step of steps)
      expect(step.reasoning_details).toEqual([
        expect.objectContaining({ type: 'reasoning.text', signature: expect.any(String) }),
      ]);
  }, 300_000);

  it('goes on natively on Claude after a turn bridged to Gemini 3: the thinking block that carried its signature is not sent to Anthropic', async () => {
    const home = mkdtempSync(join(tmpdir(), 'ctxgate-claude-home-'));
    const first = await runClaude('Tell me the code in notes.txt.', 'gemini-3.1-pro-preview', undefined, {
      home,
    });
    expect(first.result.result).toBe('The code is CODE-4711.');
    const before = anthropic.messageRequests.length;
    const from = harness.logLines.length;
    // As a user switches models (/model) and goes on: Claude Code sends the conversation so far.
    const { result } = await runClaude(
      'Tell me the code in notes.txt once more.',
      'claude-sonnet-4-5',
      undefined,
      {
        home,
        resume: String(first.result.session_id),
      },
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    expect(messagesStatuses(from).filter((status) => status !== 200)).toEqual([]);
    const sent = anthropic.messageRequests.slice(before).map((request) => request.body.messages as Json[]);
    // Claude got the earlier turn (its Read call and result) without the gateway's thinking block.
    const earlier = sent.at(-1)?.find((message) => JSON.stringify(message.content).includes('"tool_use"'));
    expect(earlier).toBeDefined();
    expect(JSON.stringify(sent)).not.toContain('ctxgate.carried');
  }, 300_000);

  // Claude's thinking signatures are bound to the model that thought (anthropics/anthropic-sdk-python#1598):
  // after /model in a session, the session's stored turns hold the other model's thinking for good, which
  // Anthropic refused on every request ("Invalid `signature` in `thinking` block") and Claude Code cannot
  // take out of a history the gateway keeps.
  it('goes on in a session after /model between Claude models: the other model’s thinking left out once refused', async () => {
    const sessionId = `cc-switch-${randomUUID().slice(0, 8)}`;
    const home = mkdtempSync(join(tmpdir(), 'ctxgate-claude-home-'));
    const first = await runClaude('Tell me the code in notes.txt.', 'claude-sonnet-4-5', sessionId, { home });
    expect(first.result.result).toBe('The code is CODE-4711.');
    const before = anthropic.messageRequests.length;
    const { result } = await runClaude(
      'Tell me the code in notes.txt once more.',
      'claude-sonnet-4-6',
      sessionId,
      {
        home,
        resume: String(first.result.session_id),
      },
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const sent = anthropic.messageRequests
      .slice(before)
      .filter((request) => request.body.model === 'claude-sonnet-4-6');
    // Refused for Sonnet 4.5's thinking, and sent again without it: answered.
    const refusals = sent.filter((request) => request.status === 400).map((request) => request.refusal);
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) expect(refusal).toMatch(/Invalid `signature` in `thinking` block/);
    expect(sent.at(-1)?.status).toBe(200);
  }, 300_000);

  it('runs the same task bridged to a provider that refuses the fields it does not know (Mistral)', async () => {
    const { result } = await runClaude(
      'Tell me the code in notes.txt.',
      'devstral-coder',
      `cc-mistral-${Date.now()}`,
    );
    expect(result.is_error).toBe(false);
    expect(result.result).toBe('The code is CODE-4711.');
    const sent = mistral.chatRequests.map((request) => request.body as Json);
    // Refused once for the fields the bridge wrote; every later request went without them.
    expect(sent[0]).toHaveProperty('user');
    expect(sent.slice(1).filter((body) => 'user' in body || 'stream_options' in body)).toEqual([]);
    expect(sent.length).toBeGreaterThan(2);
  }, 300_000);

  it('finishes a long loop on a window it was not told, without "Prompt is too long"', async () => {
    stepsMade = 0;
    const before = anthropic.messageRequests.length;
    const { result } = await runClaude(
      'Read every chapter, one at a time.',
      'claude-opus-4-1',
      `cc-loop-${Date.now()}`,
    );
    const requests = anthropic.messageRequests.slice(before);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe(`Read ${loopSteps} chapters.`);
    expect(stepsMade).toBe(loopSteps);
    // The conversation outgrew the provider's window: it refused once, and the gateway fitted the rest.
    const refused = requests.filter((request) => request.status === 400);
    expect(refused.length).toBeGreaterThan(0);
    // Refused for their size only (its system message in the conversation is taken: a beta it sends).
    expect(
      refused.filter((request) => request.inputTokens + Number(request.body.max_tokens) <= smallWindow),
    ).toEqual([]);
    expect(requests.at(-1)?.status).toBe(200);
    const full = requests.filter((request) => request.status === 200);
    expect(Math.max(...full.map((request) => request.inputTokens))).toBeLessThanOrEqual(smallWindow);
  }, 300_000);

  it('finishes the same loop bridged to a Chat Completions model whose window it was not told', async () => {
    stepsMade = 0;
    const before = openai.chatRequests.length;
    const sessionId = `cc-loop-bridged-${randomUUID().slice(0, 8)}`;
    const { result } = await runClaude('Read every chapter, one at a time.', 'local-coder-small', sessionId);
    expect(result.is_error).toBe(false);
    expect(result.result).toBe(`Read ${loopSteps} chapters.`);
    expect(stepsMade).toBe(loopSteps);
    const requests = openai.chatRequests.slice(before).map((request) => {
      const body = request.body as { max_tokens?: number; max_completion_tokens?: number };
      return (request.promptTokens ?? 0) + (body.max_completion_tokens ?? body.max_tokens ?? 0);
    });
    // Something went over the strict fake's window (it refused it), and the loop still finished: the
    // gateway learned the window and fitted the rest; the last request fitted it.
    expect(Math.max(...requests)).toBeGreaterThan(smallWindow);
    expect(requests.at(-1)).toBeLessThanOrEqual(smallWindow);
    // The session holds the conversation Claude Code resent with each request once: its task, each
    // step's call and result, the answer.
    const history = (await (
      await fetch(
        `${harness.baseUrl}/sessions/${sessionId}:${String(result.session_id)}/history?limit=1000`,
        {
          headers: { authorization: 'Bearer gw-claude-code' },
        },
      )
    ).json()) as { data: Array<{ role: string; content: unknown }> };
    expect(history.data.map((message) => message.role)).toEqual([
      'user',
      ...Array.from({ length: loopSteps }, () => ['assistant', 'tool']).flat(),
      'assistant',
    ]);
  }, 300_000);
});
