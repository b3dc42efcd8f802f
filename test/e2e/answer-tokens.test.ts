// End to end: a longer answer asked for than the model gives. Claude Code asks for 32,000 tokens on any
// model, and DeepSeek's API refuses past 8,192 ("Invalid max_tokens value, the valid range of max_tokens
// is [1, 8192]", Gitlawb/openclaude#35, mnfst/llm-gateway#1177), OpenAI's GPT-4o past 16,384, Claude past
// its own ("max_tokens: 128001 > 64000, which is the maximum allowed number of output tokens",
// anthropics/claude-code#24451): every request failed. Through the official clients, with strict fakes
// that refuse so in each provider's words: answered after one refusal, then at once
// (docs/budgeting.md#refused-fields).
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic, startGatewayWithClaude } from '../helpers/fake-anthropic.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import type { GatewayHarness } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
let claude: FakeAnthropic;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({ maxAnswerTokens: { 'deepseek-chat': 8_192, 'gpt-4o': 16_384 } });
  claude = new FakeAnthropic({ maxOutputTokens: 64_000 });
  harness = await startGatewayWithClaude(fake, claude, inject('redisUrl'));
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await claude.stop();
});

const anthropic = () =>
  new Anthropic({ baseURL: harness.baseUrl.replace(/\/v1$/, ''), apiKey: 'sk-answer', maxRetries: 0 });
/** The longest answer the last chat request asked for. */
const askedOfChat = () => {
  const body = fake.chatRequests.at(-1)?.body as { max_tokens?: number; max_completion_tokens?: number };
  return body.max_completion_tokens ?? body.max_tokens;
};

describe('Claude Code’s 32,000 tokens asked of DeepSeek (8,192 at most)', () => {
  it('is answered after one refusal, asking 8,192; the next request goes so at once', async () => {
    const before = fake.chatRequests.length;
    // Claude Code streams: the SDK refuses a whole answer this long.
    const message = await anthropic()
      .messages.stream({
        model: 'deepseek-chat',
        max_tokens: 32_000,
        messages: [{ role: 'user', content: 'Hello' }],
      })
      .finalMessage();
    expect(message.content[0]?.type).toBe('text');
    expect(fake.chatRequests.length - before).toBe(2);
    expect(askedOfChat()).toBe(8_192);
    const again = fake.chatRequests.length;
    await anthropic()
      .messages.stream({
        model: 'deepseek-chat',
        max_tokens: 32_000,
        messages: [{ role: 'user', content: 'Again' }],
      })
      .finalMessage();
    expect(fake.chatRequests.length - again).toBe(1);
    // Less than the longest goes as asked.
    await anthropic().messages.create({
      model: 'deepseek-chat',
      max_tokens: 1_000,
      messages: [{ role: 'user', content: 'Briefly' }],
    });
    expect(askedOfChat()).toBe(1_000);
  });
});

describe('a chat client’s max_completion_tokens past GPT-4o’s 16,384', () => {
  it('a stream is answered, asking 16,384', async () => {
    const stream = await new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: 'sk-answer',
      maxRetries: 0,
    }).chat.completions.create({
      model: 'gpt-4o',
      max_completion_tokens: 32_000,
      stream: true,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(askedOfChat()).toBe(16_384);
  });
});

describe('Claude asked for more than the model gives, thinking', () => {
  it('is answered after one refusal, asking 64,000, its thinking budget under it', async () => {
    const before = claude.messageRequests.length;
    const message = await anthropic()
      .messages.stream({
        model: 'claude-opus-4-6',
        max_tokens: 128_001,
        thinking: { type: 'enabled', budget_tokens: 100_000 },
        messages: [{ role: 'user', content: 'Think hard.' }],
      })
      .finalMessage();
    expect(message.content.length).toBeGreaterThan(0);
    expect(claude.messageRequests.length - before).toBe(2);
    const sent = claude.messageRequests.at(-1)?.body as {
      max_tokens: number;
      thinking: { budget_tokens: number };
    };
    expect(sent.max_tokens).toBe(64_000);
    expect(sent.thinking.budget_tokens).toBeLessThan(64_000);
  });
});
