// An answer's open stream kept from going silent while the upstream is (docs/configuration.md#silent-streams):
// a load balancer in front cuts a connection silent for 60 s, and a reasoning model, a relay's processing
// comments the bridges cannot pass, or a held tool call leave the client's stream silent far longer. The
// strict fake pauses mid-stream until the test has seen the keep-alive the client's API has (an SSE comment
// for Chat Completions and the Responses API, Anthropic's `ping` for Messages), then goes on; the whole
// stream, keep-alives included, is then read by the official SDK of that API, which must skip them.
import type Anthropic from '@anthropic-ai/sdk';
import { Stream as AnthropicStream } from '@anthropic-ai/sdk/core/streaming';
import type OpenAI from 'openai';
import { Stream as OpenAIStream } from 'openai/core/streaming';
import { createOpenAI } from '@ai-sdk/openai';
import { streamText } from 'ai';
import OpenAIClient from 'openai';
import { describe, expect, it } from 'vitest';
import { FakeUpstream, gate } from '../helpers/fake-upstream.js';
import { gatewayBefore } from '../helpers/start-gateway.js';

const fake = new FakeUpstream();
const started = gatewayBefore(fake, 'server:\n  stream_keepalive_ms: 40\n');

/**
 * Posts a streamed request, reads its bytes until `seen` holds of them (or a generous guard runs out: then
 * the test fails on what was read), opens the paused upstream, and returns the whole stream's text.
 */
async function streamThroughPause(
  path: string,
  body: Record<string, unknown>,
  seen: (text: string) => boolean,
  headers: Record<string, string> = {},
  pauseAfterChunks = 2,
): Promise<{ text: string; atPause: string; contentType: string | null }> {
  const resume = gate();
  fake.enqueue({ pauseAfterChunks, resumeWhen: resume.opened, content: 'Thought it through.', chunks: 4 });
  // Should the gateway answer nothing while the upstream is paused, the upstream goes on after a while, and
  // the test fails on what was read then rather than waiting for ever.
  const unstuck = setTimeout(() => resume.open(), 10_000);
  const response = await fetch(`${started.harness.baseUrl}${path}`, {
    method: 'POST',
    headers: Object.assign({ 'content-type': 'application/json', authorization: 'Bearer sk-test' }, headers),
    body: JSON.stringify(Object.assign({ stream: true }, body)),
  });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const guard = setTimeout(() => void reader.cancel(), 20_000);
  try {
    while (!seen(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    const atPause = text;
    resume.open();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    return { text, atPause, contentType: response.headers.get('content-type') };
  } finally {
    clearTimeout(guard);
    clearTimeout(unstuck);
    resume.open();
  }
}

const sseResponse = (text: string): Response =>
  new Response(text, { headers: { 'content-type': 'text/event-stream' } });

/** The answer's text as the OpenAI SDK's SSE reader reads a Chat Completions stream. */
async function chatText(text: string): Promise<string> {
  const stream = OpenAIStream.fromSSEResponse<OpenAI.ChatCompletionChunk>(
    sseResponse(text),
    new AbortController(),
  );
  let content = '';
  for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
  return content;
}

/** The answer's text as the Anthropic SDK's SSE reader reads a Messages stream, if it reached message_stop. */
async function messagesText(text: string): Promise<string | undefined> {
  const stream = AnthropicStream.fromSSEResponse<Anthropic.RawMessageStreamEvent>(
    sseResponse(text),
    new AbortController(),
  );
  let content = '';
  let stopped = false;
  for await (const event of stream) {
    if (event.type === 'message_stop') stopped = true;
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
      content += event.delta.text;
  }
  return stopped ? content : undefined;
}

/** The answer's text as the OpenAI SDK's SSE reader reads a Responses stream, if it reached response.completed. */
async function responsesText(text: string): Promise<string | undefined> {
  const stream = OpenAIStream.fromSSEResponse<OpenAI.Responses.ResponseStreamEvent>(
    sseResponse(text),
    new AbortController(),
  );
  let content = '';
  let completed = false;
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta') content += event.delta;
    if (event.type === 'response.completed') completed = true;
  }
  return completed ? content : undefined;
}

const sawComment = (read: string): boolean => read.includes(': keepalive\n\n');
// message_start carries a ping of its own: a second one is the keep-alive.
const sawSecondPing = (read: string): boolean => read.split('event: ping\n').length > 2;

/** Each API's streamed request, the keep-alive its client skips, and how its SDK reads the answer. */
const apis = [
  {
    api: 'Chat Completions (an SSE comment)',
    path: '/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Think first.' }] },
    headers: {},
    seen: sawComment,
    read: chatText,
    // Before the first chunk, nothing of the answer; at the pause mid-stream, its first chunks.
    answerMark: 'data: ',
    firstEvent: '',
  },
  {
    api: "the Messages API (Anthropic's ping)",
    path: '/messages',
    body: { model: 'gpt-4o-mini', max_tokens: 200, messages: [{ role: 'user', content: 'Think first.' }] },
    headers: { 'anthropic-version': '2023-06-01' },
    seen: sawSecondPing,
    read: messagesText,
    answerMark: 'content_block_delta',
    // A bridge opens with its API's first event.
    firstEvent: 'event: message_start\n',
  },
  {
    api: 'the Responses API (an SSE comment)',
    path: '/responses',
    body: { model: 'gpt-4o-mini', input: 'Think first.' },
    headers: {},
    seen: sawComment,
    read: responsesText,
    answerMark: 'response.output_text.delta',
    firstEvent: 'event: response.created\n',
  },
] as const;

describe('an open stream the upstream leaves silent', () => {
  it.each(apis)(
    'gets keep-alives on $api, which its SDK skips',
    async ({ path, body, headers, seen, read }) => {
      const { text, atPause } = await streamThroughPause(path, body, seen, headers);
      expect(seen(atPause)).toBe(true);
      // Between whole events: every event the stream holds is a comment, or an event of the answer.
      for (const event of text.split('\n\n').filter((part) => part !== ''))
        expect(event).toMatch(/^(?:: keepalive|data: |event: )/);
      expect(await read(text)).toBe('Thought it through.');
    },
  );
});

// OpenAI's Chat Completions sends a stream's headers at once and nothing more while a reasoning model thinks
// (OpenRouter sends its processing comments): a client whose wait for headers is bounded (10 s in pi's Codex
// provider and opencode 1.15's OpenAI one, earendil-works/pi#5631, anomalyco/opencode#29548; 5 minutes in
// Node's fetch) gets them from the provider, and must get them from the gateway too, with the keep-alives
// after them — not only once the upstream's first chunk has come.
describe('an upstream that thinks before its first chunk', () => {
  it.each(apis)(
    'opens $api stream and keeps it alive while the first chunk is awaited',
    async ({ path, body, headers, seen, read, answerMark, firstEvent }) => {
      const { text, atPause } = await streamThroughPause(path, body, seen, headers, 0);
      expect(seen(atPause)).toBe(true);
      expect(atPause).toContain(firstEvent);
      expect(atPause).not.toContain(answerMark);
      expect(await read(text)).toBe('Thought it through.');
    },
  );
});

// What waiting no longer for the first event gives up: an upstream that refuses the prompt only after a long
// silence (a relay asking one provider after another) has the stream already open, so the refusal reaches
// the client as the provider's error event, with no smaller attempt. Refusals come at once in practice.
describe('an upstream that refuses after the stream was opened', () => {
  const held = gate();
  const refusing = new FakeUpstream({
    defaultWindow: 20,
    overflowAnswer: (facts) => ({
      status: 200,
      body: `data: ${JSON.stringify({ error: { message: `This model's maximum context length is ${facts.window} tokens. However, your messages resulted in ${facts.promptTokens} tokens.`, type: 'invalid_request_error', code: 'context_length_exceeded' } })}\n\n`,
      heldUntil: held.opened,
    }),
  });
  const gateway = gatewayBefore(refusing, 'server:\n  stream_keepalive_ms: 40\n');

  it("relays the refusal as the provider's error event, which the OpenAI SDK throws", async () => {
    const client = new OpenAIClient({ apiKey: 'sk-test', baseURL: gateway.harness.baseUrl, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'relay/thinker',
      stream: true,
      messages: [{ role: 'user', content: 'A question longer than this model takes, by a good many words.' }],
    });
    // The stream is open (its headers came) while the upstream has said nothing yet.
    held.open();
    const failure = await (async () => {
      for await (const chunk of stream) void chunk;
    })().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(OpenAIClient.APIError);
    expect((failure as Error).message).toContain('maximum context length is 20 tokens');
    expect(refusing.requests.filter((request) => request.path.endsWith('/chat/completions'))).toHaveLength(1);
  });
});

// OpenRouter numbers its errors (`"code": 400`), in a stream too, and ends the stream there. Such an error
// reaches a Responses client as the Responses API's `error` event, whose `code` is a string or null — the AI
// SDK validates it, and a number there was no error it could read but a failed validation — and once: the
// stream that ended with the provider's error was not also reported cut off.
describe("a relay's numbered error in a stream", () => {
  const relay = new FakeUpstream({
    defaultWindow: 20,
    overflowAnswer: (facts) => ({
      status: 200,
      body: `data: ${JSON.stringify({ error: { code: 400, message: `This endpoint's maximum context length is ${facts.window} tokens. However, you requested about ${facts.promptTokens} tokens.`, metadata: { provider_name: 'Chutes' } } })}\n\n`,
    }),
  });
  const gateway = gatewayBefore(relay, 'server:\n  stream_keepalive_ms: 40\n');

  it('reaches an AI SDK Responses client as the one error it reads', async () => {
    const provider = createOpenAI({ baseURL: gateway.harness.baseUrl, apiKey: 'sk-test' });
    const errors: unknown[] = [];
    const result = streamText({
      model: provider('relay/thinker'),
      prompt: 'A question longer than this model takes, by a good many words.',
      maxRetries: 0,
      onError: ({ error }) => void errors.push(error),
    });
    for await (const part of result.fullStream) void part;
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toContain('maximum context length is 20 tokens');
  });
});
