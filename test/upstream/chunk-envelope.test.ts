// A chat stream's chunk envelope (chunk-envelope.ts) as tables of what servers stream: chunks already in
// OpenAI's shape, read without a parse, and those strict clients refuse — no id, `role: ""`, a usage chunk
// without `choices` — put in shape.
import { describe, expect, it } from 'vitest';
import { ChunkEnvelope } from '../../src/upstream/chunk-envelope.js';

const openAIFirst =
  'data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n';

/** An envelope that has seen `first`, and what it makes of `line`. */
function conformed(line: string, first = openAIFirst): string | undefined {
  const envelope = new ChunkEnvelope();
  envelope.see(Buffer.from(first));
  return envelope.conform(line);
}

describe('ChunkEnvelope.fits', () => {
  it.each([
    [
      'one chunk, its id first (OpenAI, vLLM, SGLang)',
      'data: {"id":"chatcmpl-7","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
    ],
    [
      'one chunk, its id last (llama.cpp)',
      'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}],"created":1,"id":"chatcmpl-7"}\n\n',
    ],
    ['without the space after `data:`', 'data:{"id":"chatcmpl-7","choices":[]}\n\n'],
    [
      'two chunks and [DONE]',
      'data: {"id":"a","choices":[]}\n\ndata: {"choices":[],"id":"a"}\n\ndata: [DONE]\n\n',
    ],
    ['carriage returns', 'data: {"id":"a","choices":[]}\r\n\r\n'],
  ])('%s: in shape', (_name, events) => {
    const envelope = new ChunkEnvelope();
    envelope.see(Buffer.from(openAIFirst));
    expect(envelope.fits(Buffer.from(events))).toBe(true);
  });

  it.each([
    [
      'a chunk without an id after one with it',
      'data: {"id":"a","choices":[]}\n\ndata: {"choices":[],"cost":"0"}\n\n',
    ],
    ['a chunk without an id alone', 'data: {"choices":[],"cost":"0"}\n\n'],
    [
      "MiniMax's empty role",
      'data: {"id":"a","choices":[{"index":0,"delta":{"role":"","content":"Hi"}}]}\n\n',
    ],
    [
      "Cloudflare Workers AI's choice without its index",
      'data: {"id":"a","choices":[{"delta":{"content":"Hi"}}]}\n\n',
    ],
  ])('%s: read', (_name, events) => {
    const envelope = new ChunkEnvelope();
    envelope.see(Buffer.from(openAIFirst));
    expect(envelope.fits(Buffer.from(events))).toBe(false);
  });

  it('a usage chunk after a finish: read', () => {
    const envelope = new ChunkEnvelope();
    envelope.see(Buffer.from(openAIFirst));
    envelope.finish();
    expect(envelope.fits(Buffer.from('data: {"id":"a","usage":{"prompt_tokens":3}}\n\n'))).toBe(false);
  });

  it('`role: ""` on every delta after the first (Qianfan): every one is read', () => {
    const envelope = new ChunkEnvelope();
    envelope.see(Buffer.from(openAIFirst));
    const delta = (text: string) =>
      Buffer.from(`data: {"id":"a","choices":[{"index":0,"delta":{"role":"","content":"${text}"}}]}\n\n`);
    expect(envelope.fits(Buffer.from(openAIFirst))).toBe(true);
    expect(Array.from({ length: 20 }, (_, index) => envelope.fits(delta(String(index))))).toEqual(
      Array.from({ length: 20 }, () => false),
    );
  });

  it('a stream written `data:{` without a space is read as one written with it', () => {
    const envelope = new ChunkEnvelope();
    const first = 'data:{"id":"chatcmpl-7","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n';
    envelope.see(Buffer.from(first));
    expect(envelope.fits(Buffer.from(first))).toBe(true);
    expect(envelope.conform('data:{"choices":[],"cost":"0"}')).toBe(
      'data: {"id":"chatcmpl-7","object":"chat.completion.chunk","choices":[],"cost":"0"}',
    );
  });

  it('a stream whose first chunk has no id is always read (each chunk is given one)', () => {
    const envelope = new ChunkEnvelope();
    const idless = Buffer.from('data: {"object":"chat.completion.chunk","choices":[]}\n\n');
    envelope.see(idless);
    expect(envelope.fits(idless)).toBe(false);
  });
});

describe('ChunkEnvelope.conform', () => {
  it("gives MiniMax's and Qianfan's `role: \"\"` as the assistant's (Th0rgal/sandboxed.sh#143)", () => {
    expect(
      conformed('data: {"id":"chatcmpl-7","choices":[{"index":0,"delta":{"role":"","content":"Hi"}}]}'),
    ).toBe('data: {"id":"chatcmpl-7","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}');
  });

  it('leaves `"role":""` quoted inside a text as it is', () => {
    const line =
      'data: {"id":"chatcmpl-7","choices":[{"index":0,"delta":{"content":"{\\"role\\":\\"\\"}"}}]}';
    expect(conformed(line)).toBeUndefined();
  });

  it.each([
    [
      'none (vercel/ai#7417)',
      '{"id":"chatcmpl-7","object":"chat.completion.chunk","usage":{"prompt_tokens":3,"completion_tokens":2}}',
    ],
    [
      'null (pydantic/pydantic-ai#5165)',
      '{"id":"chatcmpl-7","choices":null,"usage":{"prompt_tokens":3,"completion_tokens":2}}',
    ],
  ])('a usage chunk whose `choices` is %s: given an empty list', (_name, chunk) => {
    const out = conformed(`data: ${chunk}`);
    expect(JSON.parse(out?.slice(6) ?? '')).toEqual({
      ...(JSON.parse(chunk) as object),
      choices: [],
    });
  });

  it('an error event stays as it came: it is no chunk', () => {
    expect(conformed('data: {"error":{"message":"overloaded"},"usage":{"prompt_tokens":3}}')).toBeUndefined();
  });

  it("gives Cloudflare Workers AI's choices without an index their places (vercel/ai#4031)", () => {
    const envelope = new ChunkEnvelope();
    envelope.see(Buffer.from(openAIFirst));
    const line = 'data: {"id":"a","choices":[{"delta":{"content":"Hi"}}]}';
    expect(envelope.fits(Buffer.from(`${line}\n\n`))).toBe(false);
    expect(JSON.parse(envelope.conform(line)?.slice(6) ?? '')).toEqual({
      id: 'a',
      choices: [{ delta: { content: 'Hi' }, index: 0 }],
    });
    // Once a stream gave one, each of its chunks is read: a call's delta has an index of its own.
    const call = 'data: {"id":"a","choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1"}]}}]}';
    expect(envelope.fits(Buffer.from(`${call}\n\n`))).toBe(false);
    expect(JSON.parse(envelope.conform(call)?.slice(6) ?? '')).toEqual({
      id: 'a',
      choices: [{ delta: { tool_calls: [{ index: 0, id: 'c1' }] }, index: 0 }],
    });
  });

  it("a chunk in OpenAI's shape stays as it is", () => {
    expect(
      conformed('data: {"id":"chatcmpl-7","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}'),
    ).toBeUndefined();
  });
});
