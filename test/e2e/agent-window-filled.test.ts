// End to end: an agent whose instructions, tools and max_tokens nearly fill a small local model's window,
// through the official openai client as Qwen Code 0.24 sends its requests (found running it: its
// OpenAI-compatible provider, a session by its `customHeaders`; docs/clients.md#qwen-code): some 16,000
// tokens of instructions and tools, max_tokens 6,000 and a stream with every request, its whole
// conversation each time, on a model of 24,000 tokens the gateway knows from its config and counts by
// estimate (a 10% safety margin). The model takes 16,000 + 6,000; the gateway refused it ("This model's
// maximum context length is 24000 tokens. However, you requested 22432 tokens"), as it refused every
// later step. The strict fake provider's model reads twenty chapters one by one, each step going on from
// the chapter the newest tool result shows.
import OpenAI from 'openai';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, isSummaryRequest, type ChatMessage } from '../helpers/fake-upstream.js';
import { prose, textOf } from '../helpers/text.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const model = 'local-qwen-24k';
const window = 24_000;
const chapters = 20;
const task = `Read the chapters one at a time, from chapter-1.txt to chapter-${chapters}.txt, then say how many you read.`;

let fake: FakeUpstream;
let harness: GatewayHarness;

/** The chapter the newest tool result shows, when the newest message is one. */
const chapterShown = (messages: ReadonlyArray<ChatMessage>): number | undefined => {
  const last = messages.at(-1);
  const shown = last?.role === 'tool' ? /^Chapter (\d+)\./.exec(textOf(last.content)) : null;
  return shown === null ? undefined : Number(shown[1]);
};

beforeAll(async () => {
  fake = new FakeUpstream({
    windows: { [model]: window },
    respond: (messages, body) => {
      if (isSummaryRequest(body)) return undefined;
      const next = (chapterShown(messages) ?? 0) + 1;
      if (next > chapters) return { content: `Read ${chapters} chapters.` };
      return {
        toolCalls: [
          {
            id: `call_read_${next}`,
            name: 'read_file',
            arguments: JSON.stringify({ file_path: `chapter-${next}.txt` }),
          },
        ],
      };
    },
  });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    configYaml: ['models:', `  - match: ${model}`, `    window: ${window}`, ''].join('\n'),
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

/** Qwen Code's tools, as many as it sends, each with a description of some length. */
const tools: OpenAI.ChatCompletionTool[] = Array.from({ length: 28 }, (_unused, index) => ({
  type: 'function',
  function: {
    name: index === 0 ? 'read_file' : `tool_${index}`,
    description: prose(120, 200 + index),
    parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
  },
}));

describe('an agent whose instructions, tools and max_tokens nearly fill the window', () => {
  it('runs its whole loop in a session: nothing refused, every step shown its newest result', async () => {
    const client = new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: 'sk-agent',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': `qwen-${randomUUID()}` },
    });
    const conversation: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: prose(10_000, 7) },
      { role: 'user', content: task },
    ];
    const seen = new Set(fake.chatRequests);
    let answer = '';
    for (let step = 0; step <= chapters && answer === ''; step++) {
      const stream = await client.chat.completions.create({
        model,
        messages: conversation,
        tools,
        max_tokens: 6_000,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      const calls: Array<{ id: string; name: string; arguments: string }> = [];
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
          calls[delta.index] ??= { id: '', name: '', arguments: '' };
          const call = calls[delta.index] as { id: string; name: string; arguments: string };
          call.id += delta.id ?? '';
          call.name += delta.function?.name ?? '';
          call.arguments += delta.function?.arguments ?? '';
        }
      }
      if (calls.length === 0) {
        answer = text;
        break;
      }
      conversation.push({
        role: 'assistant',
        content: null,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
      });
      for (const call of calls) {
        const { file_path: file } = JSON.parse(call.arguments) as { file_path: string };
        const chapter = Number(/(\d+)/.exec(file)?.[1]);
        conversation.push({
          role: 'tool',
          tool_call_id: call.id,
          content: `Chapter ${chapter}.\n${prose(600, chapter)}`,
        });
      }
    }
    // The agent's requests (the session's summaries of its older steps go to the same model).
    const requests = fake.chatRequests.filter(
      (request) => !seen.has(request) && !isSummaryRequest(request.body),
    );
    // Nothing refused, by the gateway or the model: one request per chapter and the answer.
    expect(requests.map((request) => request.status)).toEqual(
      Array.from({ length: chapters + 1 }, () => 200),
    );
    expect(
      requests.map((request) => chapterShown((request.body as { messages: ChatMessage[] }).messages)),
    ).toEqual([undefined, ...Array.from({ length: chapters }, (_unused, index) => index + 1)]);
    // Its max_tokens as it asked, and within the window by the provider's own count.
    for (const request of requests) {
      expect((request.body as { max_tokens?: number }).max_tokens).toBe(6_000);
      expect((request.promptTokens ?? Infinity) + 6_000).toBeLessThanOrEqual(window);
    }
  });
});
