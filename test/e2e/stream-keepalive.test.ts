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

describe('an open stream the upstream leaves silent', () => {
  it('gets SSE comments on Chat Completions, which the OpenAI SDK skips', async () => {
    const { text, atPause } = await streamThroughPause(
      '/chat/completions',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Think first.' }] },
      (read) => read.includes(': keepalive\n\n'),
    );
    expect(atPause).toContain(': keepalive\n\n');
    // Between whole events: every event the stream holds is a comment or data.
    for (const event of text.split('\n\n').filter((part) => part !== ''))
      expect(event).toMatch(/^(?:: keepalive|data: )/);
    const stream = OpenAIStream.fromSSEResponse<OpenAI.ChatCompletionChunk>(
      sseResponse(text),
      new AbortController(),
    );
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    expect(content).toBe('Thought it through.');
  });

  it("gets Anthropic's ping on the Messages API, which the Anthropic SDK skips", async () => {
    // message_start carries a ping of its own: a second one is the keep-alive.
    const { text, atPause } = await streamThroughPause(
      '/messages',
      { model: 'gpt-4o-mini', max_tokens: 200, messages: [{ role: 'user', content: 'Think first.' }] },
      (read) => read.split('event: ping\n').length > 2,
      { 'anthropic-version': '2023-06-01' },
    );
    expect(atPause.split('event: ping\ndata: {"type":"ping"}\n\n').length).toBeGreaterThan(2);
    const stream = AnthropicStream.fromSSEResponse<Anthropic.RawMessageStreamEvent>(
      sseResponse(text),
      new AbortController(),
    );
    let content = '';
    const types = new Set<string>();
    for await (const event of stream) {
      types.add(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
        content += event.delta.text;
    }
    expect(content).toBe('Thought it through.');
    expect(types.has('message_stop')).toBe(true);
  });

  it('gets SSE comments on the Responses API, which the OpenAI SDK skips', async () => {
    const { text, atPause } = await streamThroughPause(
      '/responses',
      { model: 'gpt-4o-mini', input: 'Think first.' },
      (read) => read.includes(': keepalive\n\n'),
    );
    expect(atPause).toContain(': keepalive\n\n');
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
    expect(content).toBe('Thought it through.');
    expect(completed).toBe(true);
  });
});

// OpenAI's Chat Completions sends a stream's headers at once and nothing more while a reasoning model thinks
// (OpenRouter sends its processing comments): a client whose wait for headers is bounded (10 s in pi's Codex
// provider and opencode 1.15's OpenAI one, earendil-works/pi#5631, anomalyco/opencode#29548; 5 minutes in
// Node's fetch) gets them from the provider, and must get them from the gateway too, with the keep-alives
// after them — not only once the upstream's first chunk has come.
describe('an upstream that thinks before its first chunk', () => {
  it('opens a Chat Completions stream and keeps it alive while the first chunk is awaited', async () => {
    const { text, atPause } = await streamThroughPause(
      '/chat/completions',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Think long first.' }] },
      (read) => read.includes(': keepalive\n\n'),
      {},
      0,
    );
    expect(atPause).toContain(': keepalive\n\n');
    expect(atPause).not.toContain('data: ');
    const stream = OpenAIStream.fromSSEResponse<OpenAI.ChatCompletionChunk>(
      sseResponse(text),
      new AbortController(),
    );
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    expect(content).toBe('Thought it through.');
  });

  it('opens a Messages stream (message_start) and pings it while the first chunk is awaited', async () => {
    const { text, atPause } = await streamThroughPause(
      '/messages',
      { model: 'gpt-4o-mini', max_tokens: 200, messages: [{ role: 'user', content: 'Think long first.' }] },
      (read) => read.split('event: ping\n').length > 2,
      { 'anthropic-version': '2023-06-01' },
      0,
    );
    expect(atPause).toContain('event: message_start\n');
    expect(atPause).not.toContain('content_block_delta');
    const stream = AnthropicStream.fromSSEResponse<Anthropic.RawMessageStreamEvent>(
      sseResponse(text),
      new AbortController(),
    );
    let content = '';
    for await (const event of stream)
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
        content += event.delta.text;
    expect(content).toBe('Thought it through.');
  });

  it('opens a Responses stream (response.created) and keeps it alive while the first chunk is awaited', async () => {
    const { text, atPause } = await streamThroughPause(
      '/responses',
      { model: 'gpt-4o-mini', input: 'Think long first.' },
      (read) => read.includes(': keepalive\n\n'),
      {},
      0,
    );
    expect(atPause).toContain('response.created');
    expect(atPause).not.toContain('response.output_text.delta');
    const stream = OpenAIStream.fromSSEResponse<OpenAI.Responses.ResponseStreamEvent>(
      sseResponse(text),
      new AbortController(),
    );
    let content = '';
    for await (const event of stream) if (event.type === 'response.output_text.delta') content += event.delta;
    expect(content).toBe('Thought it through.');
  });
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
