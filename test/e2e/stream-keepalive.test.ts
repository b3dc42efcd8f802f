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
): Promise<{ text: string; atPause: string; contentType: string | null }> {
  const resume = gate();
  fake.enqueue({ pauseAfterChunks: 2, resumeWhen: resume.opened, content: 'Thought it through.', chunks: 4 });
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
