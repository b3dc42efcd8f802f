// End to end (docs/budgeting.md#tool-calls-as-providers-give-them): a call of a tool that takes no
// arguments, whose arguments many providers give as "" rather than OpenAI's "{}" — OpenRouter's and
// Bedrock's Claude, GLM through OpenRouter, Ollama, vLLM (simonw/llm#1164, sigoden/aichat#1213,
// Lexus2016/hermes-agent-evolution#1170). Clients parse them as JSON: the OpenAI Agents SDK threw
// "Unexpected end of JSON input" and the run failed (openai/openai-agents-js#664); AutoGen, Open WebUI and
// others did the same. Through the real Agents SDK, on both of its models, whole and streamed, and the
// official OpenAI client: the client is given "{}", and the tool runs.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { runDriver } from '../helpers/newest-clients.js';
import { type GatewayHarness, startGateway } from '../helpers/start-gateway.js';

/** A model that gives a call of no arguments as "" (as OpenRouter gives Claude's). */
const model = 'anthropic/claude-sonnet-4.6';
const answer = 'There are two files: a.ts and b.ts.';

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  // The listing, then its answer once the listing is in the conversation.
  fake = new FakeUpstream({
    respond: (messages: ReadonlyArray<ChatMessage>) =>
      messages.some((message) => message.role === 'tool')
        ? { content: answer }
        : { toolCalls: [{ id: 'call_list_1', name: 'list_files', arguments: '' }] },
  });
  harness = await startGateway({ env: { UPSTREAM_BASE_URL: await fake.start() } });
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-no-args', maxRetries: 0 });
const ask = { model, messages: [{ role: 'user' as const, content: 'Which files are there?' }] };

describe('a call of no arguments, given as ""', () => {
  it('the OpenAI client is given "{}", whole and streamed', async () => {
    const whole = await client().chat.completions.create(ask);
    expect(whole.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      id: 'call_list_1',
      function: { name: 'list_files', arguments: '{}' },
    });
    const streamed = await client().chat.completions.stream(ask).finalChatCompletion();
    expect(streamed.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      id: 'call_list_1',
      function: { name: 'list_files', arguments: '{}' },
    });
  });

  it.each([
    ['chat', false],
    ['chat', true],
    ['responses', false],
    ['responses', true],
  ])("the Agents SDK's %s model (streamed: %s) runs the tool and answers", async (api, stream) => {
    const before = fake.chatRequests.length;
    const result = await runDriver<{ answer?: string; ran?: unknown[]; error?: unknown }>(
      'agents-no-args.mjs',
      {
        baseURL: harness.baseUrl,
        model,
        api,
        stream,
      },
    );
    expect(result.error).toBeUndefined();
    expect(result).toEqual({ answer, ran: [{}] });
    // The model was shown the listing, not an error in its stead.
    const shown = (fake.chatRequests.slice(before).at(-1)?.body as { messages: ChatMessage[] }).messages.find(
      (message) => message.role === 'tool',
    );
    expect(shown?.content).toBe('a.ts, b.ts');
  });
});
