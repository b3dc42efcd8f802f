// The attempts of one chat request (docs/budgeting.md#reactive-recovery), as a table: the first
// attempt (the client's bytes when nothing changed; a fallback when the turn cannot fit the model), each
// smaller one a recovery decision asks for. What their answers teach: upstream-lessons.test.ts.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../../src/context/types.js';
import type { ChatCompletionRequest } from '../../src/chat/chat-request-schema.js';
import { isGatewayError } from '../../src/errors.js';
import { chat, ladderFor } from '../helpers/chat-attempts.js';
import { prose } from '../helpers/text.js';
import { sessionViewOf } from '../helpers/session-view.js';
import { createFieldFixes } from '../../src/upstream/field-fixes.js';

describe('the first attempt', () => {
  it('is the client’s own bytes when nothing in the conversation changes', () => {
    const request = chat(2);
    const rawBody = Buffer.from(JSON.stringify(request));
    const { ladder } = ladderFor(request, { rawBody });
    expect(ladder.first.body).toBe(rawBody);
    expect(ladder.first.fallback).toBeUndefined();
    expect(ladder.first.headers['x-context-dropped-messages']).toBe('0');
  });

  it('is written in the Messages format for an anthropic upstream, from the request as fitted', () => {
    const request = chat(40);
    request.model = 'claude-model';
    const { ladder } = ladderFor(request, { rawBody: Buffer.from(JSON.stringify(request)) });
    const { first } = ladder;
    expect(first.wire).toBe('anthropic');
    const sent = JSON.parse(String(first.body)) as {
      system: string;
      messages: Array<{ role: string; content: Array<{ type: string; text: string }> }>;
      max_tokens: number;
    };
    // Shortened (the window is 4,096), then written as Anthropic takes it: the system prompt apart,
    // user and assistant alternating, text blocks, a max_tokens.
    expect(Number(first.headers['x-context-dropped-messages'])).toBeGreaterThan(0);
    expect(sent.system).toBe('Be brief.');
    expect(sent.messages.at(-1)?.content.at(-1)?.text).toBe('Now?');
    expect(
      sent.messages.every((message, index) => message.role === (index % 2 === 0 ? 'user' : 'assistant')),
    ).toBe(true);
    expect(sent.max_tokens).toBeGreaterThan(0);
    // In chat terms, the same fitted messages: what a recall round adds to.
    expect(first.request.messages).toBe(first.prepared.messages);
  });

  it('leaves out old turns of a conversation larger than the window, and says so', () => {
    const { ladder } = ladderFor(chat(40), { rawBody: Buffer.from('{}') });
    expect(Buffer.isBuffer(ladder.first.body) && ladder.first.body.toString() === '{}').toBe(false);
    const sent = JSON.parse(String(ladder.first.body)) as { messages: Array<{ content: string }> };
    expect(sent.messages.at(-1)?.content).toBe('Now?');
    expect(Number(ladder.first.headers['x-context-dropped-messages'])).toBeGreaterThan(0);
    expect(ladder.first.promptTokens).toBeLessThanOrEqual(4_096);
  });

  it('counts a session again in a fallback’s other encoding within a bounded CPU time', () => {
    // 1,000 stored messages of 2,000 characters of random base64 (never counted before), and a question
    // of some 20,000 tokens that only the fallback's window holds.
    const question = { role: 'user', content: prose(4_000, 3) };
    const conversation: ContextMessage[] = [
      { role: 'system', content: 'Be brief.' },
      ...Array.from({ length: 1_000 }, (_unused, index) => ({
        role: index % 2 === 0 ? 'user' : 'assistant',
        content: randomBytes(1_500).toString('base64'),
      })),
      question,
    ];
    // As stored in the client's model's encoding: the question alone more than its window.
    const session = sessionViewOf(
      conversation,
      conversation.map((message) => (message === question ? 30_000 : 500)),
    );
    const request = { model: 'narrow-model', messages: [question] } as ChatCompletionRequest;
    const { ladder } = ladderFor(request, { session });
    expect(ladder.first.fallback).toBe('wide-cl100k-model');
    // Counted again, newest first, past its bound estimated: and so said.
    expect(ladder.first.prepared.estimated).toBe(true);
    // Not the stored 500 a message: the 1,400 or so each is in cl100k_base, all of it sent.
    expect(ladder.first.prepared.report.droppedMessages).toBe(0);
    expect(ladder.first.promptTokens).toBeGreaterThan(1_300_000);
  });

  it('goes to the first fallback when the current turn cannot fit the client’s model', () => {
    const { ladder } = ladderFor(chat(1, prose(6_000, 9)));
    expect(ladder.first.fallback).toBe('large-model');
    expect(ladder.first.model).toBe('large-model');
    expect(ladder.first.headers['x-context-fallback']).toBe('large-model');
  });

  it('with truncation disabled, goes whole to a fallback, or is refused when none holds it', () => {
    expect(ladderFor(chat(40), { noTruncation: true }).ladder.first.fallback).toBe('large-model');
    let error: unknown;
    try {
      ladderFor({ ...chat(200), model: 'large-model' }, { noTruncation: true });
    } catch (caught) {
      error = caught;
    }
    expect(isGatewayError(error) && error.code === 'context_length_exceeded').toBe(true);
  });
});

describe('smaller attempts', () => {
  it.each([
    ['the learned window', { action: 're_render', reduction: 'none', promptCap: 2_000 }],
    ['half the turns', { action: 're_render', reduction: 'drop_oldest_half', promptCap: 2_500 }],
  ] as const)('re-renders with %s: fewer prompt tokens, the current turn kept', (_name, decision) => {
    const { ladder } = ladderFor(chat(12));
    const next = ladder.smaller(decision, ladder.first);
    expect(next).toBeDefined();
    expect(next?.promptTokens).toBeLessThan(ladder.first.promptTokens);
    expect(next?.promptTokens).toBeLessThanOrEqual(decision.promptCap);
    const sent = JSON.parse(String(next?.body)) as { messages: Array<{ content: string }> };
    expect(sent.messages.at(-1)?.content).toBe('Now?');
  });

  it('goes to the fallback instead when the smaller attempt would drop more than the policy allows', () => {
    const { ladder } = ladderFor(chat(12));
    const next = ladder.smaller(
      { action: 're_render', reduction: 'minimal', promptCap: 3_000 },
      ladder.first,
    );
    expect(next?.fallback).toBe('large-model');
    expect(next?.prepared.report.droppedMessages).toBe(0);
  });

  it('lowers max_tokens without letting the prompt grow', () => {
    const request = { ...chat(3), max_tokens: 1_000 } as ChatCompletionRequest;
    const { ladder } = ladderFor(request);
    const next = ladder.smaller({ action: 'lower_max_tokens', maxTokens: 400 }, ladder.first);
    expect(next?.sentMaxTokens).toBe(400);
    expect(next?.promptTokens).toBeLessThanOrEqual(ladder.first.promptTokens);
    expect((JSON.parse(String(next?.body)) as { max_tokens: number }).max_tokens).toBe(400);
  });

  it('sends nothing smaller with truncation disabled', () => {
    const { ladder } = ladderFor(chat(2), { noTruncation: true });
    expect(
      ladder.smaller({ action: 're_render', reduction: 'minimal', promptCap: 10 }, ladder.first),
    ).toBeUndefined();
  });
});

describe('fields the model refuses (docs/budgeting.md#refused-fields)', () => {
  const rename = { field: 'max_tokens', renameTo: 'max_completion_tokens' };
  type Sent = {
    max_tokens?: number;
    max_completion_tokens?: number;
    temperature?: number;
    messages: unknown[];
  };
  const sentOf = (body: string | Buffer | undefined) => JSON.parse(String(body)) as Sent;

  it('makes the attempt again with a field fixed once its model is known to refuse it', () => {
    const request = { ...chat(3), max_tokens: 700, temperature: 0 } as ChatCompletionRequest;
    const rawBody = Buffer.from(JSON.stringify(request));
    const fieldFixes = createFieldFixes({ maxEntries: 10 });
    const { ladder } = ladderFor(request, { rawBody, fieldFixes });
    expect(ladder.first.body).toBe(rawBody);
    // Nothing known yet: the same attempt again would be the refused one.
    expect(ladder.again(ladder.first)).toBeUndefined();
    fieldFixes.remember(ladder.first.target.name, 'small-model', rename);
    const fixed = ladder.again(ladder.first);
    expect(sentOf(fixed?.body)).toEqual({
      ...sentOf(rawBody),
      max_tokens: undefined,
      max_completion_tokens: 700,
    });
    expect(sentOf(fixed?.body)).not.toHaveProperty('max_tokens');
    fieldFixes.remember(ladder.first.target.name, 'small-model', { field: 'temperature' });
    expect(sentOf(ladder.again(ladder.first)?.body)).not.toHaveProperty('temperature');
  });

  it('sends every later attempt of that model fixed: the first, and a lowered max_tokens', () => {
    const request = { ...chat(3), max_tokens: 1_000 } as ChatCompletionRequest;
    const fieldFixes = createFieldFixes({ maxEntries: 10 });
    fieldFixes.remember('default', 'small-model', rename);
    const { ladder } = ladderFor(request, { rawBody: Buffer.from(JSON.stringify(request)), fieldFixes });
    expect(ladder.first.target.name).toBe('default');
    expect(sentOf(ladder.first.body).max_completion_tokens).toBe(1_000);
    expect(sentOf(ladder.first.body)).not.toHaveProperty('max_tokens');
    const lowered = ladder.smaller({ action: 'lower_max_tokens', maxTokens: 400 }, ladder.first);
    expect(sentOf(lowered?.body)).toMatchObject({ max_completion_tokens: 400 });
    expect(sentOf(lowered?.body)).not.toHaveProperty('max_tokens');
    // A request without the field has nothing to fix.
    const plain = ladderFor(chat(3), { fieldFixes }).ladder;
    expect(plain.again(plain.first)).toBeUndefined();
  });

  it('sends a model with a cap on a body’s bytes the newest images that fit under it, the same each time', () => {
    const picture = (letter: string) => ({
      type: 'image_url',
      image_url: { url: `data:image/png;base64,${letter.repeat(3_000)}` },
    });
    const request = {
      model: 'small-model',
      messages: ['A', 'B', 'C'].flatMap((letter) => [
        { role: 'user', content: [{ type: 'text', text: `Picture ${letter}?` }, picture(letter)] },
        { role: 'assistant', content: 'Seen.' },
      ]),
    } as unknown as ChatCompletionRequest;
    request.messages.pop();
    const rawBody = Buffer.from(JSON.stringify(request));
    const fieldFixes = createFieldFixes({ maxEntries: 10 });
    const { ladder } = ladderFor(request, { rawBody, fieldFixes });
    expect(ladder.first.body).toBe(rawBody);
    // 2,500 bytes under the body sent: one picture (3,000 bytes) is enough to leave out, the oldest.
    fieldFixes.remember('default', 'small-model', { field: 'request.bytes', atMost: rawBody.length - 2_500 });
    const within = ladder.again(ladder.first);
    expect(Buffer.byteLength(String(within?.body))).toBeLessThanOrEqual(rawBody.length - 2_500);
    expect(String(within?.body).match(/base64,(\w)|left out, the request would be larger/g)).toEqual([
      'left out, the request would be larger',
      'base64,B',
      'base64,C',
    ]);
    // A cap under the client's own bytes: the first attempt of a later request is within it at once.
    const next = ladderFor(request, { rawBody, fieldFixes }).ladder.first;
    expect(String(next.body)).toBe(String(within?.body));
    // Written for an anthropic upstream, the same picture left out.
    const claude = { ...request, model: 'claude-model' } as ChatCompletionRequest;
    fieldFixes.remember('claude', 'claude-model', {
      field: 'request.bytes',
      atMost: rawBody.length - 2_500,
    });
    const messages = ladderFor(claude, { fieldFixes }).ladder.first;
    expect(messages.wire).toBe('anthropic');
    expect(String(messages.body).match(/"data":"(\w)|left out, the request would be larger/g)).toEqual([
      'left out, the request would be larger',
      '"data":"B',
      '"data":"C',
    ]);
  });

  it('keeps a model’s fix to that model: its fallback is asked as its client wrote it', () => {
    const request = { ...chat(1, prose(6_000, 9)), max_tokens: 500 } as ChatCompletionRequest;
    const fieldFixes = createFieldFixes({ maxEntries: 10 });
    fieldFixes.remember('default', 'small-model', rename);
    const { ladder } = ladderFor(request, { fieldFixes });
    expect(ladder.first.fallback).toBe('large-model');
    expect(sentOf(ladder.first.body).max_tokens).toBe(500);
    expect(sentOf(ladder.first.body)).not.toHaveProperty('max_completion_tokens');
  });
});
