// End to end: the `developer` role, which Codex sends (its permissions and environment as developer
// items) and the official clients send OpenAI's newer models, to DeepSeek's API, which refuses it
// ("messages[1].role: unknown variant `developer`, expected one of `system`, `user`, `assistant`, `tool`,
// `latest_reminder`": Codex on DeepSeek V4, icebear0828/codex-proxy#589, BenedictKing/ccx#149). Through
// the official client, with a strict fake that refuses so: a chat client's is answered after one refusal,
// each developer message sent as a system message where it stood, the next request at once
// (docs/budgeting.md#refused-fields); a Responses request's developer items are system messages already.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({ noDeveloperRole: ['deepseek-v4-flash', 'deepseek-chat'] });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-developer', maxRetries: 0 });
const rolesSent = () =>
  (fake.chatRequests.at(-1)?.body as { messages: ChatMessage[] }).messages.map((message) => message.role);

describe('developer messages to DeepSeek, which knows no such role', () => {
  it('a Responses request as Codex sends it goes at once: the bridge writes its developer items as system', async () => {
    const before = fake.chatRequests.length;
    const response = await client().responses.create({
      model: 'deepseek-v4-flash',
      store: false,
      instructions: 'You are Codex.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>…' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files.' }] },
      ],
    });
    expect(response.output_text.length).toBeGreaterThan(0);
    expect(fake.chatRequests.length - before).toBe(1);
    expect(rolesSent()).not.toContain('developer');
  });

  it('a chat client’s developer message goes as a system message where it stood, after one refusal', async () => {
    const before = fake.chatRequests.length;
    const answer = await client().chat.completions.create({
      model: 'deepseek-chat',
      messages: [
        { role: 'developer', content: 'Answer tersely.' },
        { role: 'user', content: 'Hello' },
      ],
    });
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(rolesSent()).toEqual(['system', 'user']);
    expect(fake.chatRequests.length - before).toBe(2);
    const again = fake.chatRequests.length;
    await client().chat.completions.create({
      model: 'deepseek-chat',
      messages: [
        { role: 'developer', content: 'Answer tersely.' },
        { role: 'user', content: 'Again' },
      ],
    });
    expect(fake.chatRequests.length - again).toBe(1);
  });
});
