// End to end: tools named as MCP allows — with a dot (`calendar.read`) — which OpenAI and Anthropic
// refuse ("Invalid 'tools[48].name': string does not match pattern", openai/codex#8174; "tools.19.custom.name:
// String should match pattern", github/copilot-cli#2581): through the official clients, with strict fakes
// that refuse such a name and a model that calls a tool by the name it was shown, the client's calls
// come back under its own names and its loop goes on (docs/budgeting.md#tool-names).
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic, startGatewayWithClaude } from '../helpers/fake-anthropic.js';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import type { GatewayHarness } from '../helpers/start-gateway.js';

/** A model that calls the first tool it was shown, by the name it was shown, then says what it read. */
function callThenAnswer(messages: ReadonlyArray<ChatMessage>, body: Record<string, unknown>) {
  const last = messages.at(-1);
  if (last?.role === 'tool') return { content: `Read: ${String(last.content)}` };
  const shown = (body.tools as Array<{ function: { name: string } }> | undefined)?.[0]?.function.name;
  return shown === undefined
    ? undefined
    : { toolCalls: [{ id: 'call_cal_1', name: shown, arguments: '{"day":"today"}' }] };
}

/** A model as GitHub Copilot's chat endpoint serves it: tool descriptions of at most 1,024 characters. */
const copilot = 'gpt-4.1';
/** A model as Gemini's OpenAI-compatible endpoint serves it: a function's name begins with a letter or _. */
const gemini = 'gemini-2.5-pro';

let fake: FakeUpstream;
let claude: FakeAnthropic;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({
    respond: callThenAnswer,
    toolDescriptionLimit: { [copilot]: 1024 },
    geminiRules: [gemini],
  });
  claude = new FakeAnthropic();
  claude.respond = (body) => {
    const messages = body.messages as Array<{ content: unknown }>;
    const last = messages.at(-1)?.content;
    if (Array.isArray(last) && last.some((block) => (block as { type?: string }).type === 'tool_result'))
      return { text: 'Read it.' };
    const shown = (body.tools as Array<{ name: string }> | undefined)?.[0]?.name ?? 'none';
    return { toolUse: { name: shown, input: { day: 'today' } } };
  };
  harness = await startGatewayWithClaude(fake, claude, inject('redisUrl'));
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await claude.stop();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-names', maxRetries: 0, defaultHeaders: headers });

/** Google Workspace's MCP tools as Codex lists them (openai/codex#8174). */
const tools: OpenAI.ChatCompletionTool[] = ['calendar.read', 'calendar.updateEvent', 'gmail.send'].map(
  (name) => ({
    type: 'function',
    function: { name, parameters: { type: 'object', properties: { day: { type: 'string' } } } },
  }),
);

describe('tools named with a dot, to a provider that refuses such a name', () => {
  it('a streamed call comes back under the client’s name, and its result is answered', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is on today?' }];
    const stream = await client().chat.completions.create({
      model: 'gpt-5.2',
      stream: true,
      tools,
      messages,
    });
    let name = '';
    let id = '';
    for await (const chunk of stream)
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += call.function?.name ?? '';
        id ||= call.id ?? '';
      }
    expect(name).toBe('calendar.read');
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name, arguments: '{"day":"today"}' } }],
      },
      { role: 'tool', tool_call_id: id, content: 'Standup at 10:00' },
    );
    const second = await client().chat.completions.create({ model: 'gpt-5.2', tools, messages });
    expect(second.choices[0]?.message.content).toBe('Read: Standup at 10:00');
  });

  it("a session's loop: the call it stores is under the client's name, and the next request is answered", async () => {
    const chat = client({ 'x-session-id': `names-${randomUUID()}` });
    const first = await chat.chat.completions.create({
      model: 'gpt-5.2',
      tools,
      messages: [{ role: 'user', content: 'What is on today?' }],
    });
    const call = first.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('calendar.read');
    const second = await chat.chat.completions.create({
      model: 'gpt-5.2',
      tools,
      messages: [{ role: 'tool', tool_call_id: call.id, content: 'Standup at 10:00' }],
    });
    expect(second.choices[0]?.message.content).toBe('Read: Standup at 10:00');
  });

  it('a history that calls a tool named so, no longer offered: the call goes under a name OpenAI takes', async () => {
    const answer = await client().chat.completions.create({
      model: 'gpt-5.2',
      tools: [tools[2] as OpenAI.ChatCompletionTool],
      messages: [
        { role: 'user', content: 'What is on today?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calendar.read', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'Standup at 10:00' },
      ],
    });
    expect(answer.choices[0]?.message.content).toBe('Read: Standup at 10:00');
  });

  it('the Responses API (Codex) gives the function_call under the client’s name', async () => {
    const response = await client().responses.create({
      model: 'gpt-5.2',
      store: false,
      input: 'What is on today?',
      tools: tools.map((tool) => ({
        type: 'function' as const,
        name: (tool as OpenAI.ChatCompletionFunctionTool).function.name,
        parameters: null,
        strict: false,
      })),
    });
    expect(response.output.find((item) => item.type === 'function_call')).toMatchObject({
      name: 'calendar.read',
      arguments: '{"day":"today"}',
    });
  });

  it('Claude, from a chat client: the call comes back under the client’s name', async () => {
    const answer = await client().chat.completions.create({
      model: 'claude-sonnet-4-6',
      tools,
      messages: [{ role: 'user', content: 'What is on today?' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      function: { name: 'calendar.read', arguments: '{"day":"today"}' },
    });
  });
});

describe('a tool described at more length than the provider takes (GitHub Copilot, Azure OpenAI)', () => {
  // As Sentry's MCP server describes list_issues (getsentry/sentry-mcp#106): some 1,100 characters.
  const description = Array.from({ length: 160 }, (_, at) => `note${at}`).join(' ');
  const described: OpenAI.ChatCompletionTool[] = [
    {
      type: 'function',
      function: { name: 'list_issues', description, parameters: { type: 'object', properties: {} } },
    },
  ];

  it('is answered, the description cut and its rest in the parameters; the next request goes so at once', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: copilot,
      tools: described,
      messages: [{ role: 'user', content: 'Any new issues?' }],
    });
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'list_issues' } });
    // One refused call, then the one answered.
    expect(fake.chatRequests.length - before).toBe(2);
    const sent = (
      fake.chatRequests.at(-1)?.body as {
        tools: Array<{ function: { description: string; parameters: { description: string } } }>;
      }
    ).tools[0]?.function;
    expect(sent?.description.length).toBeLessThanOrEqual(1024);
    expect(`${sent?.description} ${sent?.parameters.description}`).toBe(description);
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model: copilot,
      tools: described,
      messages: [{ role: 'user', content: 'And now?' }],
    });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});

describe('a tool named with a digit first, to Gemini (21st.dev Magic MCP: SuperClaude-Org/SuperGemini_Framework#12)', () => {
  const magic: OpenAI.ChatCompletionTool[] = [
    '21st_magic_component_builder',
    '21st_magic_component_refiner',
  ].map((name) => ({
    type: 'function',
    function: { name, parameters: { type: 'object', properties: { day: { type: 'string' } } } },
  }));

  it('goes at once under a name Gemini takes; the call comes back under the client’s, its result answered', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Build a navbar.' }];
    const before = fake.chatRequests.length;
    const first = await client().chat.completions.create({ model: gemini, tools: magic, messages });
    expect(fake.chatRequests.length - before).toBe(1);
    const call = first.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('21st_magic_component_builder');
    messages.push(first.choices[0]?.message as OpenAI.ChatCompletionMessage, {
      role: 'tool',
      tool_call_id: call.id,
      content: '<nav/>',
    });
    const second = await client().chat.completions.create({ model: gemini, tools: magic, messages });
    expect(second.choices[0]?.message.content).toBe('Read: <nav/>');
  });
});
