// End to end: a temperature past what the model takes. OpenAI's API takes one up to 2, and chat clients
// send 1.2 or 1.5 as a matter of course (a preset in LibreChat or Open WebUI, an app's "creative" mode);
// Claude takes up to 1 and refuses more in its words ("temperature: range: 0..1", as Bedrock's Claude
// behind a relay does too): routed to Claude, every request of such a client failed. Through the official
// client, with a strict fake that refuses so: answered after one refusal, then at once
// (docs/budgeting.md#refused-fields).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAnthropic, startGatewayWithClaude } from '../helpers/fake-anthropic.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import type { GatewayHarness } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
let claude: FakeAnthropic;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({});
  claude = new FakeAnthropic({});
  harness = await startGatewayWithClaude(fake, claude, inject('redisUrl'));
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
  await claude.stop();
});

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-temperature', maxRetries: 0 });

describe('a chat client’s temperature of 1.3, routed to Claude (which takes up to 1)', () => {
  it('is answered after one refusal, sent as 1; the next request goes so at once; a cooler one as asked', async () => {
    const before = claude.requests.length;
    const answer = await client().chat.completions.create({
      model: 'claude-sonnet-4-5',
      temperature: 1.3,
      messages: [{ role: 'user', content: 'Write a haiku.' }],
    });
    expect(answer.choices[0]?.message.content).toBe('Hello from the fake Anthropic.');
    const sent = claude.requests.slice(before);
    expect(sent.map((request) => [request.status, request.body.temperature])).toEqual([
      [400, 1.3],
      [200, 1],
    ]);
    const again = claude.requests.length;
    const stream = await client().chat.completions.create({
      model: 'claude-sonnet-4-5',
      temperature: 1.5,
      stream: true,
      messages: [{ role: 'user', content: 'Another.' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello from the fake Anthropic.');
    expect(claude.requests.slice(again).map((request) => [request.status, request.body.temperature])).toEqual(
      [[200, 1]],
    );
    await client().chat.completions.create({
      model: 'claude-sonnet-4-5',
      temperature: 0.4,
      messages: [{ role: 'user', content: 'A calm one.' }],
    });
    expect(claude.requests.at(-1)?.body.temperature).toBe(0.4);
  });
});
