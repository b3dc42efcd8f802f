// End to end: a long session against a small window, through the openai client and a real Redis. The
// strict fake refuses any prompt over the window, so every turn passing proves the fit; the prefix
// checks prove the stored history start (cache-stable trimming across requests); the sessions API
// proves the bounded active list with the archive behind it.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const window = 3_000;
let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream();
  fake.setWindow('window-model', window);
  const upstreamUrl = await fake.start();
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
    // Without summaries: this is what the sliding window alone does (summaries: summarization.test.ts).
    configYaml: `context:\n  summarization: "off"\nmodels:\n  - match: window-model\n    window: ${window}\n    output_reserve: 200\n`,
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const words = (turn: number, count: number): string =>
  Array.from({ length: count }, (_unused, index) => `word${(turn * 7 + index) % 97}`).join(' ');

/** The body up to the end of its last message: what the next request must repeat byte for byte. */
const messagesPrefix = (request: RecordedRequest): string =>
  request.rawBody.slice(0, request.rawBody.lastIndexOf('}]') + 1);

describe('a long session in a small window', () => {
  it('stays inside the window, keeps its first turn, moves the start in steps, and archives what the window cannot use', async () => {
    const sessionId = `window-${randomUUID()}`;
    const client = new OpenAI({
      baseURL: harness.baseUrl,
      apiKey: 'sk-window',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': sessionId },
    });
    const turns = 70;
    const sent: Array<{ role: string; content: string }> = [];
    const upstream: RecordedRequest[] = [];
    for (let turn = 0; turn < turns; turn++) {
      const user = { role: 'user' as const, content: `Turn ${turn}: ${words(turn, 30)}` };
      const answer = `Answer ${turn}: ${words(turn + 1, 30)}`;
      fake.enqueue({ content: answer });
      const messages: OpenAI.ChatCompletionMessageParam[] =
        turn === 0 ? [{ role: 'system', content: 'Keep answers short.' }, user] : [user];
      const completion = await client.chat.completions.create({ model: 'window-model', messages });
      expect(completion.choices[0]?.message.content).toBe(answer);
      sent.push(user, { role: 'assistant', content: answer });
      upstream.push(fake.chatRequests.at(-1) as RecordedRequest);
    }

    let steps = 0;
    for (const [index, request] of upstream.entries()) {
      const body = request.body as { messages: Array<{ role: string; content: string }> };
      // The system prompt and the first turn lead every request, trimmed or not.
      expect(body.messages.slice(0, 3).map((message) => message.content)).toEqual(
        ['Keep answers short.', sent[0]?.content, sent[1]?.content].slice(0, index === 0 ? 2 : 3),
      );

      expect(request.promptTokens).toBeLessThanOrEqual(window - 200);
      const previous = upstream[index - 1];
      if (previous !== undefined && !request.rawBody.startsWith(messagesPrefix(previous))) steps++;
    }
    // History outgrew the window, so the start moved, but in steps (trim_to 0.7 of the budget), not
    // on every turn: consecutive requests mostly share their whole previous prompt.
    expect(steps).toBeGreaterThan(0);
    expect(steps).toBeLessThanOrEqual(turns / 5);

    const auth = { authorization: 'Bearer sk-window' };
    const session = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}`, { headers: auth })
    ).json()) as {
      counts: { active: number; archived: number; total: number };
      messages: Array<{ content: string }>;
    };
    // 140 messages of ~45 tokens: far over a 3,000-token window, so the active list keeps its minimum
    // of 100 messages (the first turn among them) and the rest moved to the archive.
    expect(session.counts).toEqual({ active: 100, archived: 40, total: 140 });
    expect(session.messages[0]?.content).toBe(sent[0]?.content);
    expect(session.messages.at(-1)?.content).toBe(sent.at(-1)?.content);
    const history = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}/history?limit=1000`, { headers: auth })
    ).json()) as { data: Array<{ role: string; content: string }> };
    expect(history.data.map(({ role, content }) => ({ role, content }))).toEqual(sent);

    // /v1/context/render with the session: what the next request would send, and nothing changes.
    const next = { role: 'user', content: `Turn ${turns}: ${words(turns, 30)}` };
    const renderResponse = await fetch(`${harness.baseUrl}/context/render`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'x-session-id': sessionId },
      body: JSON.stringify({ model: 'window-model', messages: [next] }),
    });
    expect(renderResponse.status).toBe(200);
    expect(renderResponse.headers.get('x-session-id')).toBe(sessionId);
    const rendered = (await renderResponse.json()) as { messages: unknown[] };
    const after = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}`, { headers: auth })
    ).json()) as {
      counts: unknown;
    };
    expect(after.counts).toEqual(session.counts);
    fake.enqueue({ content: 'last' });
    await client.chat.completions.create({
      model: 'window-model',
      messages: [next as OpenAI.ChatCompletionMessageParam],
    });
    expect((fake.chatRequests.at(-1)?.body as { messages: unknown[] }).messages).toEqual(rendered.messages);
  });
});
