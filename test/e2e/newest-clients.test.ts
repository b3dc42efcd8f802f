// The newest client majors, as a new user installs them today, with their defaults (no truncation, no
// store setting), against the strict fake provider with an 8,192-token window: the AI SDK 7's default
// provider (the Responses API: item_reference on later turns, a 30-step tool loop), the Agents SDK's
// Responses and Chat Completions models over 25 turns, LangChain's ChatOpenAI with either API, the
// Anthropic SDK bridged over 25 turns, and openai 7. The AI SDK's loop and the Agents SDK's Responses
// turns run again on a model that thinks as DeepSeek V4 does and refuses a tool call sent back without its
// reasoning. The Agents SDK's compaction session compacts through POST /v1/responses/compact, and a tool
// of its that returns a picture has the model shown it; its coding agent's shell and apply_patch, which
// it runs itself, run what the model asks. The Agents SDK's tool search (run by OpenAI or by
// the SDK) and the AI SDK's load a tool of a deferred catalog, and the run answers. The AI SDK's Anthropic
// provider, natively to a strict fake Claude: a conversation Claude compacts, and a tool loop with
// thinking on, stateless and in a session; bridged: an on-demand compaction, a deferred tool a tool change
// surfaces. LangChain's ChatAnthropic, streaming natively: a tool loop with thinking on, stateless and in a
// session, and a web search Claude runs and the next turn reads. The Anthropic SDK's tool runner bridged (its
// Threads refused as Anthropic refuses a lost one, so it sends each turn whole; a tool it adds; a compaction
// it asks for), and with Anthropic's client tools (bash, the text editor, its memory tool). Structured output on a
// model of the other wire: the Agents SDK's outputType and LangChain's withStructuredOutput on Claude, the AI
// SDK's Anthropic provider's Output.object on a Chat Completions model. All but the Anthropic SDK need Node 22, so they
// all run under the Node 22 of test/clients/runtime (see test/helpers/newest-clients.ts).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  callsSeen,
  FakeUpstream,
  isSummaryRequest,
  type Behaviour,
  type ChatMessage,
} from '../helpers/fake-upstream.js';
import { runDriver } from '../helpers/newest-clients.js';
import {
  anthropicUpstreamYaml,
  FakeAnthropic,
  webSearchBlocks,
  type AnthropicReply,
} from '../helpers/fake-anthropic.js';
import { pictureSeenSinceLastCall, png } from '../helpers/png.js';
import { pdf, pdfOfDataUrl, pdfPageTexts } from '../helpers/pdf.js';
import { textOf as contentText } from '../helpers/text.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const model = 'agent-8k';
/** The same window, thinking as DeepSeek V4 does: its reasoning must come back with its tool calls. */
const thinkingModel = 'thinking-8k';
/** The same window, as Gemini 3 is served: each call must come back with its thought signature. */
const geminiModel = 'gemini-3-8k';
/** The same window, as OpenRouter serves Claude with reasoning on: each step must come back with its reasoning_details. */
const openRouterModel = 'anthropic/claude-8k';
const window = 8_192;
const loopSteps = 30;
/** A model the Agents SDK compacts for (it asks only for OpenAI's names), with room for every turn. */
const compactingModel = 'gpt-5.4-mini';

/** The prompt of test/clients/structured.mjs, and the trip a model plans: JSON when asked a schema, else prose. */
const structuredTask = 'Task structured-trip';
const plannedTrip = { city: 'Lisbon', days: 3, stops: ['Alfama', 'Belém'] };
const tripAnswer = (format: unknown): string =>
  (format as { type?: unknown } | undefined)?.type === 'json_schema'
    ? JSON.stringify(plannedTrip)
    : 'Three days in Lisbon: Alfama first, then Belém.';

interface Failure {
  error?: { kind: string; status?: number; message: string };
}

/** A message's text, whether a string or parts. */
const textOf = (message: ChatMessage | undefined): string => contentText(message?.content);

/**
 * The fake model, reading its prompt as a model would: a code word per turn; the AI SDK loop reads pages
 * until it sees it made 29 calls (its calls in the prompt, plus those a notice says were removed), then
 * answers; the Agents SDK's turns read the page the last user message asks for, then say so.
 */
function respond(
  messages: ReadonlyArray<ChatMessage>,
  body?: Record<string, unknown>,
): Behaviour | undefined {
  const users = messages.filter((message) => message.role === 'user').map(textOf);
  const lastUser = users.at(-1) ?? '';
  if (lastUser === lookupTask) return lookUp(messages, body);
  if (lastUser.startsWith(structuredTask)) return { content: tripAnswer(body?.response_format) };
  // The AI SDK's on-demand compaction: a summary when asked for one, else what the summary says.
  // (Two user messages in a row are one for this model's template: the request joins the last.)
  if (users.some((text) => text.includes('Task ai-sdk-on-demand'))) {
    if (lastUser.includes('Write a summary of this conversation'))
      return { content: 'Trip: Lisbon, May, 1,800 euros, Alfama.' };
    const summary = users.find((text) => text.includes('this summary of it was written then'));
    return { content: summary?.includes('Alfama') === true ? 'Stay in Alfama.' : 'I do not know.' };
  }
  // The Anthropic SDK's tool runner: note, then look up with the tool the runner added, then — compacted —
  // answer from the summary alone.
  if (users.some((text) => text.includes('Task tool-runner') || text.includes('record X1 looked up'))) {
    // (The request for a summary joins the last tool result, for this model's template: it is read there.)
    if (textOf(messages.at(-1)).includes('Write a summary of this conversation'))
      return { content: 'The user had a request noted and record X1 looked up: ACME-7.' };
    if (users.some((text) => text.includes('this summary of it was written then')))
      return { content: /ACME-7/.test(users.join(' ')) ? 'Record X1 is ACME-7.' : 'I do not know.' };
    const results = messages.filter((message) => message.role === 'tool').map(textOf);
    const tools = ((body?.tools ?? []) as Array<{ function: { name: string } }>).map(
      (tool) => tool.function.name,
    );
    if (results.length === 0)
      return { toolCalls: [{ id: 'call_note', name: 'note', arguments: '{"text":"X1"}' }] };
    if (results.length === 1 && tools.includes('lookup'))
      return { toolCalls: [{ id: 'call_lookup', name: 'lookup', arguments: '{"id":"X1"}' }] };
    return { content: `Tools: ${tools.join(', ')}; results: ${results.join(' ')}` };
  }
  const codeTurn = /^Turn (\d): name a code word\.$/.exec(lastUser);
  if (codeTurn !== null)
    return { content: ['Larkspur.', 'Juniper.', 'Larkspur and Juniper.'][Number(codeTurn[1]) - 1] ?? '' };
  if (users.some((text) => text.startsWith('Task ai-sdk-loop'))) {
    const seen = callsSeen(messages);
    if (seen >= loopSteps - 1) return { content: `I read ${seen} pages.` };
    return {
      toolCalls: [{ id: `call_loop_${seen + 1}`, name: 'read_page', arguments: `{"page":${seen + 1}}` }],
    };
  }
  // Asked for a summary of the conversation (not given a task): it names the pages it read, those a
  // summary says were read before included.
  if (messages.at(-1)?.role === 'user' && /\bsummary\b/i.test(lastUser) && !lastUser.startsWith('Task ')) {
    const read = messages.flatMap((message) => {
      const text = textOf(message);
      const summary = /Pages read: ([\d, ]+)\./.exec(text)?.[1];
      if (summary !== undefined) return summary.split(', ').map(Number);
      const page = message.role === 'tool' ? /^Page (\d+)\./.exec(text)?.[1] : undefined;
      return page === undefined ? [] : [Number(page)];
    });
    return { content: `Pages read: ${[...new Set(read)].sort((a, b) => a - b).join(', ')}.` };
  }
  // Asked about a PDF: it reads the page asked for, as OpenAI extracts a PDF's text.
  if (lastUser.startsWith('Task ai-sdk-pdf')) {
    const parts = messages.at(-1)?.content;
    const file = Array.isArray(parts)
      ? (parts as Array<{ type?: string; file?: { file_data?: unknown } }>).find(
          (part) => part.type === 'file',
        )
      : undefined;
    const pdf = pdfOfDataUrl(file?.file?.file_data);
    return {
      content: pdf === undefined ? 'I see no PDF.' : `Page 3 says: ${pdfPageTexts(pdf)[2] ?? 'nothing'}`,
    };
  }
  // The Agents SDK's coding agent: it lists the files with its shell, then fixes the README and writes a
  // note of what it listed with apply_patch (two calls at once), then says what the editor answered.
  if (users.some((text) => /^Task (agents|ai-sdk)-shell/.test(text))) return codingAgent(messages, body);
  if (users.some((text) => text.startsWith('Task client-tools'))) return clientToolsAgent(messages, body);
  // Asked about a screenshot: it takes one, then says the size of the picture it was shown.
  if (users.some((text) => text.startsWith('Task agents-picture'))) {
    if (!messages.some((message) => (message.tool_calls?.length ?? 0) > 0))
      return { toolCalls: [{ id: 'call_screenshot', name: 'screenshot', arguments: '{}' }] };
    const seen = pictureSeenSinceLastCall(messages);
    return {
      content:
        seen === undefined ? 'I see no picture.' : `The screenshot is ${seen.width}×${seen.height} pixels.`,
    };
  }
  // A deferred tool a tool change surfaced: called when it is among the model's tools.
  if (users.some((text) => text.includes('Task ai-sdk-tool-changes'))) {
    const result = messages.find((message) => message.role === 'tool');
    if (result !== undefined) return { content: `Found ${textOf(result)}` };
    const tools = ((body?.tools ?? []) as Array<{ function: { name: string } }>).map(
      (tool) => tool.function.name,
    );
    return tools.includes('lookup')
      ? { toolCalls: [{ id: 'call_lookup_x1', name: 'lookup', arguments: '{"id":"X1"}' }] }
      : { content: `No lookup tool among: ${tools.join(', ')}.` };
  }
  // The AI SDK's Anthropic provider's tool loop: pages 1 and 2, then what they hold.
  if (users.some((text) => text.startsWith('Task ai-sdk-thinking'))) {
    const read = messages.filter((message) => message.role === 'tool').length;
    if (read >= 2) return { content: 'Pages 1 and 2 hold the log.' };
    return {
      toolCalls: [{ id: `call_thinking_${read + 1}`, name: 'read_page', arguments: `{"page":${read + 1}}` }],
    };
  }
  const asked = /^Task agents-(\w+): read page (\d+)\.$/.exec(lastUser);
  if (asked !== null) {
    if (messages.at(-1)?.role === 'tool') return { content: `I read page ${asked[2]}.` };
    return {
      toolCalls: [
        { id: `call_${asked[1]}_${asked[2]}`, name: 'read_page', arguments: `{"page":${asked[2]}}` },
      ],
    };
  }
  return undefined;
}

/** The fake model as a coding agent with a shell and apply_patch (the Agents SDK's, run by the client). */
function codingAgent(messages: ReadonlyArray<ChatMessage>, body?: Record<string, unknown>): Behaviour {
  const tools = ((body?.tools ?? []) as Array<{ function: { name: string; parameters?: unknown } }>).map(
    (tool) => tool.function,
  );
  const shell = tools.find((tool) => tool.name === 'shell');
  const patch = tools.find((tool) => tool.name === 'apply_patch');
  if (shell === undefined || patch === undefined)
    return { content: `I cannot: my tools are ${tools.map((tool) => tool.name).join(', ') || 'none'}.` };
  const results = messages.filter((message) => message.role === 'tool').map(textOf);
  if (results.length === 0)
    return {
      toolCalls: [{ id: 'call_shell_1', name: 'shell', arguments: '{"commands":["ls","cat README.md"]}' }],
    };
  if (results.length === 1) {
    // What `ls` printed, up to how it ended.
    const listing = (results[0] ?? '').split('\n\n')[0] ?? '';
    const notes = listing
      .split('\n')
      .map((line) => `+${line}`)
      .join('\n');
    const fix = '@@\n-Run the tests with npm test.\n+Run the tests with npm run test.\n';
    return {
      toolCalls: [
        {
          id: 'call_patch_readme',
          name: 'apply_patch',
          arguments: JSON.stringify({ type: 'update_file', path: 'README.md', diff: fix }),
        },
        {
          id: 'call_patch_notes',
          name: 'apply_patch',
          arguments: JSON.stringify({ type: 'create_file', path: 'notes.txt', diff: `${notes}\n` }),
        },
      ],
    };
  }
  return { content: results.slice(1).join(' | ') };
}

/**
 * The fake model with Anthropic's client tools (bash, the text editor, memory: the client runs them),
 * reading each tool's parameters as it is given them: it lists the files, then fixes the README and
 * records it in memory at once, then says what the tools answered.
 */
function clientToolsAgent(messages: ReadonlyArray<ChatMessage>, body?: Record<string, unknown>): Behaviour {
  const tools = ((body?.tools ?? []) as Array<{ function: { name: string; parameters?: unknown } }>).map(
    (tool) => tool.function,
  );
  const takes = (name: string, parameter: string) =>
    JSON.stringify(tools.find((tool) => tool.name === name)?.parameters ?? {}).includes(`"${parameter}"`);
  if (
    !takes('bash', 'command') ||
    !takes('str_replace_based_edit_tool', 'old_str') ||
    !takes('memory', 'file_text')
  )
    return { content: `I cannot: my tools are ${tools.map((tool) => tool.name).join(', ') || 'none'}.` };
  const results = messages.filter((message) => message.role === 'tool').map(textOf);
  if (results.length === 0)
    return { toolCalls: [{ id: 'toolu_bash', name: 'bash', arguments: '{"command":"ls"}' }] };
  if (results.length === 1) {
    const readme = (results[0] ?? '').split('\n').find((name) => name.startsWith('README')) ?? 'README';
    return {
      toolCalls: [
        {
          id: 'toolu_edit',
          name: 'str_replace_based_edit_tool',
          arguments: JSON.stringify({
            command: 'str_replace',
            path: readme,
            old_str: 'npm test',
            new_str: 'npm run test',
          }),
        },
        {
          id: 'toolu_memory',
          name: 'memory',
          arguments: JSON.stringify({
            command: 'create',
            path: '/memories/progress.md',
            file_text: `Fixed ${readme}.`,
          }),
        },
      ],
    };
  }
  return { content: results.slice(1).join(' ') };
}

/** A task for a tool of a deferred catalog (the Agents SDK's tool search). */
const lookupTask = 'Look up record X1 of kind 7.';

/**
 * The model given the lookup task: it calls the tool for kind 7 when it is among its tools, else loads it
 * with the tool search whose description names it, and answers with what the tool returned.
 */
function lookUp(messages: ReadonlyArray<ChatMessage>, body: Record<string, unknown> | undefined): Behaviour {
  const result = messages.map(textOf).find((text) => text.includes('ACME-'));
  if (messages.at(-1)?.role === 'tool' && result !== undefined) return { content: `Found ${result}.` };
  const tools = ((body?.tools ?? []) as Array<{ function: { name: string; description?: string } }>).map(
    (tool) => tool.function,
  );
  if (tools.some((tool) => tool.name === 'lookup_7'))
    return { toolCalls: [{ id: 'call_lookup', name: 'lookup_7', arguments: '{"id":"X1"}' }] };
  const search = tools.find((tool) => tool.name === 'tool_search');
  if (search?.description?.includes('lookup_7: ') === true)
    return { toolCalls: [{ id: 'call_search', name: 'tool_search', arguments: '{"paths":["lookup_7"]}' }] };
  return { content: 'I have no tool for that.' };
}

let fake: FakeUpstream;
let harness: GatewayHarness;

/**
 * The requests `model` got that are not among `earlier` (the requests recorded before), summaries aside:
 * found by identity, not by position, as the fake keeps only its newest requests (recordLimit). More
 * than ten, every one answered the first time.
 */
function answeredAtOnce(earlier: ReadonlySet<unknown>, model: string) {
  const requests = fake.chatRequests.filter(
    (request) =>
      !earlier.has(request) &&
      (request.body as { model?: string } | undefined)?.model === model &&
      !isSummaryRequest(request.body),
  );
  expect(requests.length).toBeGreaterThan(10);
  expect(requests.every((request) => request.status === 200)).toBe(true);
  return requests.map((request) => (request.body as { messages: ChatMessage[] }).messages);
}

/**
 * The OpenRouter model answered every request the first time (the fake refuses a step sent back without
 * the reasoning_details it gave), and more than ten steps went back with them.
 */
function expectReasoningDetailsBack(earlier: ReadonlySet<unknown>) {
  const steps = answeredAtOnce(earlier, openRouterModel).flatMap((messages) =>
    messages.filter((message) => (message.tool_calls?.length ?? 0) > 0),
  );
  expect(steps.filter((step) => Array.isArray(step.reasoning_details)).length).toBeGreaterThan(10);
}

/**
 * The Gemini model answered every request the first time, each call it held sent back with a signature
 * Gemini gave (the fake refuses any other but Google's stand-in, which none holds).
 */
function expectGeminiOwnSignatures(earlier: ReadonlySet<unknown>) {
  const requests = answeredAtOnce(earlier, geminiModel);
  const signatures = requests.flatMap((messages) =>
    messages.flatMap((message) =>
      message.tool_calls?.[0] === undefined
        ? []
        : [message.tool_calls[0].extra_content?.google?.thought_signature],
    ),
  );
  expect(signatures.length).toBeGreaterThan(10);
  expect(signatures.filter((signature) => signature === 'skip_thought_signature_validator')).toEqual([]);
}

/** The gateway's request lines for a route since a point in its log. */
function requestLines(from: number, route: string) {
  return harness.logLines
    .slice(from)
    .map(
      (line) =>
        JSON.parse(line) as { msg: string; route?: string; status?: number; context?: { modified: boolean } },
    )
    .filter((line) => line.msg === 'request' && line.route === route);
}

/**
 * Runs a driver's 25 turns, each reading the page its user message asks for, and checks what its user
 * got (each answer names its page) and what the gateway logged on `route`: 50 requests answered, more
 * than 10 of them fitted (25 pages of ~1,500 tokens do not fit 8,192). Returns the driver's report.
 */
async function expectTwentyFiveTurns<T extends object>(
  script: string,
  input: Record<string, unknown>,
  route: string,
): Promise<T> {
  const from = harness.logLines.length;
  const result = await runDriver<Failure & { answers: string[] } & T>(script, {
    baseURL: harness.baseUrl,
    model,
    turns: 25,
    ...input,
  });
  expect(result.error).toBeUndefined();
  expect(result.answers).toEqual(Array.from({ length: 25 }, (_unused, index) => `I read page ${index + 1}.`));
  const lines = requestLines(from, route);
  expect(lines).toHaveLength(50);
  expect(lines.every((line) => line.status === 200)).toBe(true);
  expect(lines.filter((line) => line.context?.modified === true).length).toBeGreaterThan(10);
  return result;
}

/** Claude, natively (an `anthropic` upstream), with a window the gateway is told. */
const claudeWindow = 30_000;
let claude: FakeAnthropic;

/**
 * Claude, reading its prompt: it reads pages 1 and 2 with read_page, then says so (thinking first when
 * thinking is on, as the fake does); any other prompt gets a line naming the facts it was told.
 */
function respondAsClaude(body: Record<string, unknown>): AnthropicReply {
  const messages = body.messages as Array<{ role: string; content: unknown }>;
  const text = JSON.stringify(messages);
  if (text.includes(structuredTask))
    return { text: tripAnswer((body.output_config as { format?: unknown } | undefined)?.format) };
  if (text.includes('Task langchain-search')) {
    const asked = (text.match(/Task langchain-search/g) ?? []).length;
    if (asked === 1)
      return {
        blocks: webSearchBlocks('srvtoolu_lc', 'https://example.com/ctxgate-1-0'),
        text: 'ctxgate 1.0 came out in May.',
      };
    // Asked where: what its search found, when the search is still in the conversation.
    const url = /https:\/\/example\.com\/[\w-]+/.exec(text)?.[0];
    return { text: url === undefined ? 'I do not remember.' : `I read it at ${url}.` };
  }
  if (text.includes('Task ai-sdk-thinking') || text.includes('Task langchain-thinking')) {
    const read = (text.match(/Page \d+\./g) ?? []).length;
    return read >= 2
      ? { text: 'Pages 1 and 2 hold the log.' }
      : { toolUse: { name: 'read_page', input: { page: read + 1 } } };
  }
  return { text: `Noted (${(text.match(/Fact \d+/g) ?? []).length} facts in view).` };
}

beforeAll(async () => {
  fake = new FakeUpstream({
    windows: {
      [model]: window,
      [thinkingModel]: window,
      [geminiModel]: window,
      [openRouterModel]: window,
      [compactingModel]: 131_072,
    },
    systemOnlyFirst: true,
    thinking: [thinkingModel],
    thoughtSignatures: [geminiModel],
    reasoningDetails: [openRouterModel],
    recordLimit: 200,
    respond,
  });
  claude = new FakeAnthropic({ window: claudeWindow });
  claude.respond = respondAsClaude;
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    configYaml: [
      'upstreams:',
      ...anthropicUpstreamYaml('claude', await claude.start(), ['claude-*']),
      'models:',
      ...[model, thinkingModel, geminiModel, openRouterModel].map(
        (name) => `  - match: "${name}"\n    window: ${window}`,
      ),
      '  - match: "claude-*"',
      `    window: ${claudeWindow}`,
      '',
    ].join('\n'),
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await claude.stop();
});

describe('the AI SDK 7, default provider openai(model)', () => {
  it('holds three turns whose earlier answers it sends as item_reference items', async () => {
    const result = await runDriver<Failure & { turns: Array<{ text: string; itemReferences: number }> }>(
      'ai-sdk.mjs',
      { baseURL: harness.baseUrl, model, scenario: 'turns' },
    );
    expect(result.error).toBeUndefined();
    expect(result.turns).toEqual([
      { text: 'Larkspur.', itemReferences: 0 },
      { text: 'Juniper.', itemReferences: 1 },
      { text: 'Larkspur and Juniper.', itemReferences: 2 },
    ]);
  });

  it('answers a question about a PDF the user attaches (input_file, a Chat Completions file part upstream)', async () => {
    const report = pdf(['Revenue grew.', 'Costs fell.', 'The Lisbon office opens in May.', 'Appendix.']);
    const before = fake.chatRequests.length;
    const result = await runDriver<Failure & { text: string }>('ai-sdk.mjs', {
      baseURL: harness.baseUrl,
      model,
      scenario: 'pdf',
      pdfBase64: report.toString('base64'),
    });
    expect(result.error).toBeUndefined();
    expect(result.text).toBe('Page 3 says: The Lisbon office opens in May.');
    // The PDF went on as OpenAI takes a file: its data URL, named.
    const sent = fake.chatRequests
      .slice(before)
      .map((request) => request.body as { messages: ChatMessage[] });
    expect(sent.at(-1)?.messages.at(-1)?.content).toEqual([
      { type: 'text', text: 'Task ai-sdk-pdf: what does page 3 of the report say?' },
      {
        type: 'file',
        file: {
          filename: 'report.pdf',
          file_data: `data:application/pdf;base64,${report.toString('base64')}`,
        },
      },
    ]);
  });

  it.each([
    ['', model],
    [' that thinks (DeepSeek V4: its reasoning goes back with each call)', thinkingModel],
    [' served as Gemini 3 is (each call goes back with its thought signature)', geminiModel],
    [' served as OpenRouter serves Claude (each step goes back with its reasoning_details)', openRouterModel],
  ])(
    'finishes a 30-step stopWhen loop of ~1,500-token tool results on an 8,192-token model%s',
    async (_name, name) => {
      const from = harness.logLines.length;
      const earlier = new Set<unknown>(fake.chatRequests);
      const result = await runDriver<Failure & { steps: number; toolCalls: number; text: string }>(
        'ai-sdk.mjs',
        {
          baseURL: harness.baseUrl,
          model: name,
          scenario: 'loop',
        },
      );
      expect(result.error).toBeUndefined();
      // 29 pages read, then the answer: the model saw all of its trajectory, what was fitted away named.
      expect(result).toMatchObject({
        steps: loopSteps,
        toolCalls: loopSteps - 1,
        text: `I read ${loopSteps - 1} pages.`,
      });
      const lines = requestLines(from, '/v1/responses');
      expect(lines).toHaveLength(loopSteps);
      expect(lines.every((line) => line.status === 200)).toBe(true);
      expect(lines.filter((line) => line.context?.modified === true).length).toBeGreaterThan(loopSteps / 2);
      if (name === geminiModel) expectGeminiOwnSignatures(earlier);
      if (name === openRouterModel) expectReasoningDetailsBack(earlier);
    },
  );
});

describe('the Agents SDK over 25 turns', () => {
  it('with its responses model on a model that thinks (DeepSeek V4: its reasoning goes back with each call)', async () => {
    await expectTwentyFiveTurns('agents.mjs', { api: 'responses', model: thinkingModel }, '/v1/responses');
  });

  it('with its responses model on a model served as Gemini 3 is (each call goes back with its thought signature)', async () => {
    const earlier = new Set<unknown>(fake.chatRequests);
    await expectTwentyFiveTurns('agents.mjs', { api: 'responses', model: geminiModel }, '/v1/responses');
    expectGeminiOwnSignatures(earlier);
  });

  it('with its responses model on a model served as OpenRouter serves Claude (each step goes back with its reasoning_details)', async () => {
    const earlier = new Set<unknown>(fake.chatRequests);
    await expectTwentyFiveTurns('agents.mjs', { api: 'responses', model: openRouterModel }, '/v1/responses');
    expectReasoningDetailsBack(earlier);
  });

  it.each(['responses', 'chat'])('with its %s model', async (api) => {
    await expectTwentyFiveTurns(
      'agents.mjs',
      { api },
      api === 'responses' ? '/v1/responses' : '/v1/chat/completions',
    );
  });
});

// The Agents SDK refuses a call of a deferred tool no search loaded ("Model produced deferred function
// call lookup_7 before it was loaded via tool_search"): the model, shown every tool, called it at once,
// and the run failed — with OpenAI's search (dropped) and with its own (whose loader reads `paths`).
describe("the Agents SDK's tool search over a catalog of deferred tools", () => {
  it.each(['server', 'client'])(
    'loads the tool the model needs, run by %s, and the run answers',
    async (execution) => {
      // Found by identity: the fake keeps only its newest requests (recordLimit).
      const earlier = new Set(fake.chatRequests);
      const result = await runDriver<Failure & { answer: string; items: string[] }>(
        'agents-tool-search.mjs',
        {
          baseURL: harness.baseUrl,
          model,
          execution,
        },
      );
      expect(result.error).toBeUndefined();
      expect(result.answer).toBe('Found record X1 of kind 7: ACME-X1-7.');
      expect(result.items.slice(0, 3)).toEqual([
        'tool_search_call_item',
        'tool_search_output_item',
        'tool_call_item',
      ]);
      const first = fake.chatRequests.find((request) => !earlier.has(request))?.body as {
        tools: Array<{ function: { name: string } }>;
      };
      const names = first.tools.map((tool) => tool.function.name);
      // Run by the SDK: the catalog held back until loaded, named in the search; by OpenAI: every tool given.
      if (execution === 'client') expect(names).toEqual(['tool_search']);
      else expect(names).toHaveLength(12);
    },
  );
});

// The AI SDK reads the search items the gateway gives before a deferred tool's first call as its
// provider-run tool search's call and result.
describe("the AI SDK's tool search (run by OpenAI) over a catalog of deferred tools", () => {
  it('calls the tool the model needs, and the run answers', async () => {
    const result = await runDriver<Failure & { text: string; steps: string[] }>('ai-sdk-tool-search.mjs', {
      baseURL: harness.baseUrl,
      model,
    });
    expect(result.error).toBeUndefined();
    expect(result.text).toBe('Found record X1 of kind 7: ACME-X1-7.');
    expect(result.steps).toEqual(['tool-call,tool-result,tool-call,tool-result', 'text']);
  });
});

describe('the Agents SDK with a tool that returns a picture', () => {
  it('shows the model the picture (an input_image in the function_call_output, which a tool message cannot carry)', async () => {
    const from = harness.logLines.length;
    const result = await runDriver<Failure & { answer: string }>('agents-picture.mjs', {
      baseURL: harness.baseUrl,
      model,
      picture: png(41, 17).toString('base64'),
    });
    expect(result.error).toBeUndefined();
    expect(result.answer).toBe('The screenshot is 41×17 pixels.');
    const lines = requestLines(from, '/v1/responses');
    expect(lines).toHaveLength(2);
    expect(lines.every((line) => line.status === 200)).toBe(true);
  });
});

// The Agents SDK's coding agent, as OpenAI's guide builds it: a local shell and apply_patch, tools the
// Responses API defines and the client runs. They were dropped as built-in tools OpenAI runs: the model
// was never given them, and the agent could do nothing.
describe("the Agents SDK's coding agent (shellTool and applyPatchTool)", () => {
  it.each([false, true])(
    'runs the commands and applies the patches the model asks (stream: %s)',
    async (stream) => {
      const from = harness.logLines.length;
      const result = await runDriver<
        Failure & { answer: string; commands: string[]; files: Record<string, string> }
      >('agents-shell.mjs', { baseURL: harness.baseUrl, model, stream });
      expect(result.error).toBeUndefined();
      expect(result.commands).toEqual(['ls', 'cat README.md']);
      expect(result.files).toEqual({
        'README.md': 'Run the tests with npm run test.\n',
        // (The SDK's applyDiff writes a created file without a last newline.)
        'notes.txt': 'README.md',
      });
      expect(result.answer).toBe('Done: Updated README.md | Done: Created notes.txt');
      const lines = requestLines(from, '/v1/responses');
      expect(lines.map((line) => line.status)).toEqual([200, 200, 200]);
    },
  );

  it("the AI SDK's openai.tools.shell and applyPatch, streamed: run what the model asks", async () => {
    const from = harness.logLines.length;
    const result = await runDriver<
      Failure & { text: string; commands: string[]; files: Record<string, string> }
    >('ai-sdk-shell.mjs', { baseURL: harness.baseUrl, model });
    expect(result.error).toBeUndefined();
    expect(result.commands).toEqual(['ls', 'cat README.md']);
    expect(result.files).toEqual({
      'README.md': 'Run the tests with npm run test.\n',
      'notes.txt': 'README.md',
    });
    expect(result.text).toBe('Done: Updated README.md | Done: Created notes.txt');
    expect(requestLines(from, '/v1/responses').map((line) => line.status)).toEqual([200, 200, 200]);
  });
});

describe("the Agents SDK's compaction session (OpenAIResponsesCompactionSession)", () => {
  it.each([
    ['by default (the last response named: previous_response_id)', undefined],
    ["with compactionMode 'input' (the history sent)", 'input'],
  ])(
    'compacts through the gateway %s: the user messages and one compaction item, whose summary the model reads on later turns',
    async (_name, compactionMode) => {
      const from = harness.logLines.length;
      const earlier = new Set<unknown>(fake.chatRequests);
      const turns = 8;
      const result = await runDriver<Failure & { answers: string[]; items: string[] }>(
        'agents-compaction.mjs',
        {
          baseURL: harness.baseUrl,
          model: compactingModel,
          turns,
          ...(compactionMode === undefined ? {} : { compactionMode }),
        },
      );
      expect(result.error).toBeUndefined();
      expect(result.answers).toEqual(
        Array.from({ length: turns }, (_unused, index) => `I read page ${index + 1}.`),
      );
      const compactions = requestLines(from, '/v1/responses/compact');
      expect(compactions.length).toBeGreaterThan(0);
      expect(compactions.every((line) => line.status === 200)).toBe(true);
      // What the session keeps: every task the user gave, and one compaction item for what came between.
      expect(result.items.filter((item) => item === 'message:user')).toHaveLength(turns);
      expect(result.items.filter((item) => item === 'compaction')).toHaveLength(1);
      // After the first compaction the model read the summary, not the pages' results it summarized.
      const sent = fake.chatRequests
        .filter((request) => !earlier.has(request))
        .map((request) => (request.body as { messages: ChatMessage[] }).messages);
      const first = sent.findIndex((messages) => textOf(messages.at(-1)).includes('summary'));
      expect(first).toBeGreaterThan(0);
      const later = sent.slice(first + 1).filter((messages) => messages.at(-1)?.role === 'user');
      expect(later.length).toBeGreaterThan(0);
      for (const messages of later) {
        expect(messages.some((message) => /Pages read: 1, 2, 3, 4\./.test(textOf(message)))).toBe(true);
        expect(
          messages.filter((message) => message.role === 'tool' && /^Page [1-4]\./.test(textOf(message))),
        ).toEqual([]);
      }
    },
  );
});

describe('LangChain ChatOpenAI, newest (on openai 7)', () => {
  it.each(['chat', 'responses'])('keeps 25 turns of tool calls with its %s API', async (api) => {
    await expectTwentyFiveTurns(
      'langchain.mjs',
      { api },
      api === 'responses' ? '/v1/responses' : '/v1/chat/completions',
    );
  });

  it.each(['chat', 'responses'])(
    'gets a prompt too long for the model as ContextOverflowError with its %s API',
    async (api) => {
      const asked = fake.chatRequests.length;
      const result = await runDriver<Failure>('langchain.mjs', {
        baseURL: harness.baseUrl,
        model,
        api,
        scenario: 'overflow',
      });
      expect(result.error).toMatchObject({ kind: 'ContextOverflowError', status: 400 });
      // Refused by the gateway: the provider was never asked.
      expect(fake.chatRequests.length).toBe(asked);
    },
  );
});

describe('the Anthropic SDK, newest, bridged onto a Chat Completions model', () => {
  it('keeps 25 turns of tool_use, every other one streamed', async () => {
    const result = await expectTwentyFiveTurns<{ version: string }>('anthropic.mjs', {}, '/v1/messages');
    expect(result.version).toMatch(/^1\./);
  });

  it("gets a prompt too long for the model as a 400 in Anthropic's words", async () => {
    const asked = fake.chatRequests.length;
    const result = await runDriver<Failure>('anthropic.mjs', {
      baseURL: harness.baseUrl,
      model,
      scenario: 'overflow',
    });
    expect(result.error).toMatchObject({ kind: 'BadRequestError', status: 400 });
    expect(result.error?.message).toContain('prompt is too long');
    expect(fake.chatRequests.length).toBe(asked);
  });
});

describe('openai 7', () => {
  it('chats, streams and chains two Responses turns', async () => {
    fake.setDefault({ content: 'Larkspur.' });
    const result = await runDriver<Failure & Record<string, string>>('openai.mjs', {
      baseURL: harness.baseUrl,
      model,
    });
    expect(result.error).toBeUndefined();
    expect(result.version).toMatch(/^7\./);
    expect(result).toMatchObject({
      chat: 'Larkspur.',
      streamed: 'Larkspur.',
      first: 'Larkspur.',
      second: 'Larkspur.',
    });
    // The second turn reached the model with the first.
    const last = fake.chatRequests.at(-1)?.body as { messages: ChatMessage[] };
    expect(last.messages.map(textOf)).toEqual(['Remember the word Larkspur.', 'Larkspur.', 'Which word?']);
  });
});

/**
 * Runs a driver's tool loop with thinking on natively (its `thinking` scenario, under `headers`): Claude
 * reads pages 1 and 2, then answers — three steps, each after the first sent back with Claude's thinking.
 */
async function expectThinkingLoop(script: string, headers: Record<string, string>): Promise<void> {
  const result = await runDriver<Failure & { steps: number; text: string }>(script, {
    baseURL: harness.baseUrl,
    model: 'claude-thinking',
    scenario: 'thinking',
    headers,
  });
  expect(result.error).toBeUndefined();
  expect(result).toMatchObject({ steps: 3, text: 'Pages 1 and 2 hold the log.' });
}

describe('the AI SDK 7 with @ai-sdk/anthropic, natively to Claude', () => {
  it('keeps a conversation Claude compacts (contextManagement compact_20260112), streamed, past the window', async () => {
    const before = claude.messageRequests.length;
    const result = await runDriver<Failure & { turns: Array<{ text: string; compacted: boolean }> }>(
      'ai-sdk-anthropic.mjs',
      {
        baseURL: harness.baseUrl,
        model: 'claude-compacting',
        scenario: 'compaction',
        turns: 30,
        trigger: 9_000,
      },
    );
    expect(result.error).toBeUndefined();
    expect(result.turns.filter((turn) => turn.compacted).length).toBeGreaterThan(1);
    const sent = claude.messageRequests.slice(before);
    expect(sent.every((request) => request.status === 200)).toBe(true);
    // Every request after the first compaction reached Claude from a compaction on, nothing cut.
    const last = sent.at(-1)?.body.messages as Array<{ content: Array<{ type: string }> }>;
    expect(last[0]?.content[0]?.type).toBe('compaction');
    expect(JSON.stringify(last)).not.toContain('omitted');
  });

  it.each([
    ['stateless', {}],
    ['in a session', { 'x-session-id': `ai-sdk-anthropic-${Date.now()}` }],
  ])('runs a tool loop with thinking on (%s)', async (_name, headers) => {
    await expectThinkingLoop('ai-sdk-anthropic.mjs', headers);
  });

  it('compacts on demand on a Chat Completions model, and goes on from the summary alone', async () => {
    const result = await runDriver<Failure & { finish: string; summary?: string; text: string }>(
      'ai-sdk-anthropic.mjs',
      { baseURL: harness.baseUrl, model, scenario: 'onDemand' },
    );
    expect(result).toEqual({
      finish: 'compaction',
      summary: 'Trip: Lisbon, May, 1,800 euros, Alfama.',
      text: 'Stay in Alfama.',
    });
  });

  it.each([
    ['a model that thinks as DeepSeek V4 does (its reasoning back with each call)', thinkingModel],
    ['a model served as Gemini 3 is (each call back with its thought signature)', geminiModel],
  ])('runs its tool loop with thinking on, bridged to %s', async (_name, bridgedModel) => {
    const result = await runDriver<Failure & { steps: number; text: string }>('ai-sdk-anthropic.mjs', {
      baseURL: harness.baseUrl,
      model: bridgedModel,
      scenario: 'thinking',
    });
    expect(result.error).toBeUndefined();
    expect(result).toMatchObject({ steps: 3, text: 'Pages 1 and 2 hold the log.' });
  });

  // Bridged, the tool change was dropped and named and the deferred tool stayed held back: the model
  // could not call it.
  it('calls a deferred tool a mid-conversation tool change surfaced (toolChanges), on a Chat Completions model', async () => {
    const result = await runDriver<Failure & { steps: number; text: string }>('ai-sdk-anthropic.mjs', {
      baseURL: harness.baseUrl,
      model,
      scenario: 'toolChanges',
    });
    expect(result).toEqual({ steps: 2, text: 'Found Record X1: ACME-7.' });
  });
});

// Before: the schema was dropped on the way to the model's wire, the model wrote prose, and each client
// failed to parse its answer.
describe('structured output, the newest clients, on a model of the other wire', () => {
  it.each([
    [
      "the Agents SDK's outputType with its Responses model, on Claude",
      'agents-responses',
      'claude-structured',
    ],
    [
      "the Agents SDK's outputType with its Chat Completions model, on Claude",
      'agents-chat',
      'claude-structured',
    ],
    ["LangChain's withStructuredOutput (JSON Schema), on Claude", 'langchain', 'claude-structured'],
    [
      "the AI SDK's Anthropic provider (Output.object), on a Chat Completions model",
      'ai-sdk-anthropic',
      model,
    ],
  ])('%s', async (_name, scenario, asked) => {
    const result = await runDriver<Failure & { output: unknown }>('structured.mjs', {
      baseURL: harness.baseUrl,
      model: asked,
      scenario,
    });
    expect(result.error).toBeUndefined();
    expect(result.output).toEqual(plannedTrip);
  });
});

describe('LangChain ChatAnthropic, newest, natively to Claude (streaming)', () => {
  it.each([
    ['stateless', {}],
    ['in a session', { 'x-session-id': `langchain-anthropic-${Date.now()}` }],
  ])('runs a tool loop with thinking on (%s)', async (_name, headers) => {
    await expectThinkingLoop('langchain-anthropic.mjs', headers);
  });

  it('keeps a web search Claude ran (its server tool blocks), and the next turn reads what it found', async () => {
    const result = await runDriver<Failure & { blocks: string[]; text: string; second: string }>(
      'langchain-anthropic.mjs',
      { baseURL: harness.baseUrl, model: 'claude-search', scenario: 'search' },
    );
    expect(result.error).toBeUndefined();
    // (LangChain's stream aggregation keeps an `input_json_delta` entry of its own beside the server tool's use.)
    expect(result.blocks).toEqual(
      expect.arrayContaining(['server_tool_use', 'web_search_tool_result', 'text']),
    );
    expect(result.second).toBe('I read it at https://example.com/ctxgate-1-0.');
  });
});

// The Anthropic SDK's tool runner on a Chat Completions model: a tool it adds mid-conversation (addTools,
// a system message of a tool_addition: dropped before, so the model never had it) and a compaction it asks
// for (compactBeforeNextTurn, an on-demand compaction: dropped before, so the runner got no summary).
// Anthropic's client tools (bash, the text editor, the SDK's memory tool) have a versioned type and no
// schema: they were dropped as server tools, so a model behind the bridge was never given them.
describe("Anthropic's client tools in the SDK's tool runner, bridged onto a Chat Completions model", () => {
  it('runs the bash command, the edit and the memory the model asks, and answers', async () => {
    const result = await runDriver<
      Failure & {
        commands: string[];
        files: Record<string, string>;
        memories: Record<string, string>;
        text: string;
      }
    >('anthropic-client-tools.mjs', { baseURL: harness.baseUrl, model });
    expect(result.error).toBeUndefined();
    expect(result.commands).toEqual(['ls']);
    expect(result.files).toEqual({ 'README.md': 'Run the tests with npm run test.\n' });
    expect(result.memories).toEqual({ '/memories/progress.md': 'Fixed README.md.' });
    expect(result.text).toBe('Replaced in README.md. Saved /memories/progress.md.');
  });
});

describe("the Anthropic SDK's tool runner, newest, bridged onto a Chat Completions model", () => {
  it('calls the tool it added, compacts, and answers from the summary alone', async () => {
    const result = await runDriver<
      Failure & { seen: Array<{ stop: string; calls: string[]; types: string[] }>; text: string }
    >('anthropic-tool-runner.mjs', { baseURL: harness.baseUrl, model });
    expect(result.error).toBeUndefined();
    expect(result.seen.map((message) => [message.stop, message.calls])).toEqual([
      ['tool_use', ['note']],
      ['tool_use', ['lookup']],
      ['compaction', []],
      ['end_turn', []],
    ]);
    expect(result.text).toBe('Record X1 is ACME-7.');
  });
});
