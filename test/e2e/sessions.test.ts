// End to end: sessions held in a real Redis through the openai client — delta and full-resend clients
// without duplicates, one turn at a time, surviving a gateway restart, the sessions API and tenant
// isolation, and Redis going away.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, gate } from '../helpers/fake-upstream.js';
import { findFreePort, startRedisServer } from '../helpers/redis-server.js';
import { prose } from '../helpers/text.js';
import {
  counterValue,
  metricsText,
  startGateway,
  waitUntilReady,
  type GatewayHarness,
} from '../helpers/start-gateway.js';

type Message = OpenAI.ChatCompletionMessageParam;

let fake: FakeUpstream;
let upstreamUrl: string;
let harness: GatewayHarness;

const clientFor = (
  gateway: GatewayHarness,
  sessionId: string,
  extraHeaders: Record<string, string> = {},
  apiKey = 'sk-tenant-a',
) =>
  new OpenAI({
    baseURL: gateway.baseUrl,
    apiKey,
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': sessionId, ...extraHeaders },
  });

async function sessionMessages(
  gateway: GatewayHarness,
  sessionId: string,
  apiKey = 'sk-tenant-a',
): Promise<Array<{ role: string; content: unknown }>> {
  const response = await fetch(`${gateway.baseUrl}/sessions/${sessionId}/history?limit=1000`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  const page = (await response.json()) as { data: Array<{ role: string; content: unknown }> };
  return page.data;
}

beforeAll(async () => {
  fake = new FakeUpstream();
  upstreamUrl = await fake.start();
  harness = await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') } });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});
beforeEach(() => {
  fake.requests.length = 0;
  // A test that failed midway leaves no scripted answer for the next one's requests.
  fake.clearQueue();
});

describe('sessions', () => {
  it('holds the conversation for a client that sends only its new message', async () => {
    const sessionId = `delta-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    fake.enqueue({ content: 'Nice to meet you, Ada.' }, { content: 'Your name is Ada.' });
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'My name is Ada.' },
      ],
    });
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'What is my name?' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('Your name is Ada.');
    // The upstream saw the whole conversation, with the stored system prompt.
    const sent = (fake.chatRequests[1]?.body as { messages: Message[] }).messages;
    expect(sent.map((message) => [message.role, message.content])).toEqual([
      ['system', 'Be brief.'],
      ['user', 'My name is Ada.'],
      ['assistant', 'Nice to meet you, Ada.'],
      ['user', 'What is my name?'],
    ]);
    expect(response.headers.get('x-session-id')).toBe(sessionId);
    expect(response.headers.get('x-session-messages')).toBe('4');
    expect((await sessionMessages(harness, sessionId)).map((message) => message.content)).toEqual([
      'My name is Ada.',
      'Nice to meet you, Ada.',
      'What is my name?',
      'Your name is Ada.',
    ]);
  });

  it('sends an agent’s instructions, resent with every request, upstream byte for byte as the client wrote them, and a changed set as changed', async () => {
    const sessionId = `agent-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    fake.enqueue({ content: 'one' }, { content: 'two' }, { content: 'three' }, { content: 'four' });
    const instructions = (version: string): Message => ({
      role: 'system',
      content: `You are a coding agent (${version}). Quote "paths" as \\src\\x — ✓ 設定.\n`.repeat(600),
    });
    const asks = [instructions('v1'), instructions('v1'), instructions('v1'), instructions('v2')];
    for (const [turn, system] of asks.entries())
      await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [system, { role: 'user', content: `step ${turn}` }],
      });
    const bodies = fake.chatRequests.map((request) => request.rawBody);
    expect(bodies).toHaveLength(4);
    // Each body, as received, is the JSON of the session's conversation with that request's instructions.
    const answers = ['one', 'two', 'three'];
    bodies.forEach((raw, turn) => {
      const history = answers.slice(0, turn).flatMap((answer, index) => [
        { role: 'user', content: `step ${index}` },
        { role: 'assistant', content: answer },
      ]);
      const messages = [asks[turn], ...history, { role: 'user', content: `step ${turn}` }];
      const sent = JSON.parse(raw) as { messages: Array<Record<string, unknown>> };
      expect(sent.messages.map((message) => [message.role, message.content])).toEqual(
        messages.map((message) => [message?.role, message?.content]),
      );
      expect(raw).toContain(JSON.stringify(asks[turn]));
    });
    // Its instructions as the session keeps them: the last ones sent.
    const session = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
        headers: { authorization: 'Bearer sk-tenant-a' },
      })
    ).json()) as { system_prompt: unknown };
    expect(session.system_prompt).toEqual(asks[3]);
  });

  it('stores no duplicates for a client that resends the whole conversation', async () => {
    const sessionId = `full-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    const history: Message[] = [{ role: 'user', content: 'First question' }];
    for (let turn = 0; turn < 3; turn++) {
      const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: history });
      history.push({ role: 'assistant', content: completion.choices[0]?.message.content ?? '' });
      history.push({ role: 'user', content: `Follow-up ${turn}` });
    }
    const stored = await sessionMessages(harness, sessionId);
    expect(stored).toHaveLength(6);
    expect(stored.map((message) => message.content)).toEqual(
      history.map((message) => message.content).slice(0, 6),
    );
    // Each upstream request carried the conversation once.
    expect((fake.chatRequests.at(-1)?.body as { messages: Message[] }).messages).toHaveLength(5);
  });

  // Past a window of tokens the oldest turns after the first move to the archive, which a request does
  // not read: the whole conversation a client resends then holds messages the session's active list
  // does not, between its first turn and the rest. It is still this conversation, read so.
  it('stores no duplicates for a client that resends the whole conversation past the archive', async () => {
    const sessionId = `full-long-${randomUUID()}`;
    const client = clientFor(harness, sessionId, { 'x-context-window': '4096' });
    const history: Message[] = [{ role: 'user', content: 'First question' }];
    const turns = 70;
    for (let turn = 0; turn < turns; turn++) {
      const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: history });
      history.push({ role: 'assistant', content: completion.choices[0]?.message.content ?? '' });
      history.push({ role: 'user', content: `Follow-up ${turn}: ${prose(60, turn)}` });
    }
    const stored = await sessionMessages(harness, sessionId);
    expect(stored.map((message) => message.content)).toEqual(
      history.map((message) => message.content).slice(0, 2 * turns),
    );
    const session = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
        headers: { authorization: 'Bearer sk-tenant-a' },
      })
    ).json()) as { counts?: { archived?: number } };
    expect(session.counts?.archived).toBeGreaterThan(0);
    // The last request carried its question once.
    const last = (fake.chatRequests.at(-1)?.body as { messages: Message[] }).messages;
    const question = history.at(-3)?.content;
    expect(last.filter((message) => message.content === question)).toHaveLength(1);
  });

  // A chat app that resends its conversation lets its user regenerate the last answer or edit an earlier
  // question. The rewritten conversation does not continue what the session stores; taken as new
  // messages it was stored again after it.
  it('goes on from where a client that resends its conversation rewrote it: an answer regenerated, a question edited', async () => {
    const sessionId = `rewrite-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    const ask = async (messages: Message[]) =>
      (await client.chat.completions.create({ model: 'gpt-4o-mini', messages })).choices[0]?.message
        .content ?? '';
    const history: Message[] = [{ role: 'user', content: 'First question' }];
    for (const question of ['Second question', 'Third question']) {
      history.push({ role: 'assistant', content: await ask(history) }, { role: 'user', content: question });
    }
    history.push({ role: 'assistant', content: await ask(history) });
    const contents = async () =>
      (await sessionMessages(harness, sessionId)).map((message) => message.content);
    expect(await contents()).toEqual(history.map((message) => message.content));
    // The last answer regenerated: the conversation less it, sent again.
    const regenerated = await ask(history.slice(0, -1));
    expect(regenerated).not.toBe(history.at(-1)?.content);
    history[history.length - 1] = { role: 'assistant', content: regenerated };
    expect(await contents()).toEqual(history.map((message) => message.content));
    // The second question edited: what followed it is gone, the edited question and its answer stored.
    const edited: Message[] = [...history.slice(0, 2), { role: 'user', content: 'Second question, edited' }];
    const answer = await ask(edited);
    expect(await contents()).toEqual(
      [...edited, { role: 'assistant', content: answer }].map((message) => message.content),
    );
    // And the conversation goes on from there.
    const next: Message[] = [
      ...edited,
      { role: 'assistant', content: answer },
      { role: 'user', content: 'Fourth' },
    ];
    const last = await ask(next);
    expect(await contents()).toEqual(
      [...next, { role: 'assistant', content: last }].map((message) => message.content),
    );
    // The model was shown each conversation as the client sent it, once.
    expect(
      (fake.chatRequests.at(-1)?.body as { messages: Message[] }).messages.map((message) => message.content),
    ).toEqual(next.map((message) => message.content));
  });

  it('assembles and stores a streamed reply with its tool calls, and only when the stream finished', async () => {
    const sessionId = `stream-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    fake.enqueue({ toolCalls: [{ id: 'call_a', name: 'lookup', arguments: '{"q":"x"}' }] });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Look it up' }],
      stream: true,
    });
    for await (const _chunk of stream) {
      // drain
    }
    fake.enqueue({ breakAfterChunks: 2 });
    const broken = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'tool', tool_call_id: 'call_a', content: 'result' }],
      stream: true,
    });
    await expect(
      (async () => {
        for await (const _chunk of broken) {
          // drain
        }
      })(),
    ).rejects.toThrow();
    const stored = await sessionMessages(harness, sessionId);
    expect(stored).toEqual([
      { role: 'user', content: 'Look it up', tokens: expect.any(Number) },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
        ],
        tokens: expect.any(Number),
      },
    ]);
  });

  it('serves two concurrent requests on a session one after the other, in order, without a 409', async () => {
    const sessionId = `busy-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    const answerFirst = gate();
    fake.enqueue({ answerWhen: answerFirst.opened, content: 'first' }, { content: 'second' });
    const first = client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'one' }],
    });
    // The second arrives while the first holds the session (its request is upstream, unanswered).
    await fake.chatRequestHolding('"one"');
    const waits = 'ctxgate_session_waits_total';
    const waitsBefore = counterValue(await metricsText(harness), waits);
    const second = client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'two' }],
    });
    await expect.poll(async () => counterValue(await metricsText(harness), waits)).toBe(waitsBefore + 1);
    answerFirst.open();
    const answers = await Promise.all([first, second]);
    expect(answers.map((answer) => answer.choices[0]?.message.content)).toEqual(['first', 'second']);
    expect((await sessionMessages(harness, sessionId)).map((message) => message.content)).toEqual([
      'one',
      'first',
      'two',
      'second',
    ]);
  });

  it('answers 409 session_busy with Retry-After and x-should-retry only past sessions.busy_wait_ms', async () => {
    const impatient = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
      configYaml: 'sessions:\n  busy_wait_ms: 100\n',
    });
    try {
      await waitUntilReady(impatient);
      const sessionId = `impatient-${randomUUID()}`;
      const answerFirst = gate();
      fake.enqueue({ answerWhen: answerFirst.opened });
      const first = clientFor(impatient, sessionId).chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'slow' }],
      });
      // The first holds the session until the test lets the upstream answer it.
      await fake.chatRequestHolding(`"slow"`);
      const response = await fetch(`${impatient.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-tenant-a',
          'x-session-id': sessionId,
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(response.status).toBe(409);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(response.headers.get('x-should-retry')).toBe('true');
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('session_busy');
      answerFirst.open();
      await first;
      expect(await sessionMessages(impatient, sessionId)).toHaveLength(2);
    } finally {
      await impatient.close();
    }
  });

  it('an agent firing its next call as the previous stream ends never sees a 409', async () => {
    const sessionId = `agent-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    for (let step = 0; step < 20; step++) {
      fake.enqueue({ content: `step ${step} done`, chunks: 3 });
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `step ${step}` }],
        stream: true,
      });
      let content = '';
      for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
      expect(content).toBe(`step ${step} done`);
    }
    expect(await sessionMessages(harness, sessionId)).toHaveLength(40);
  });

  it('survives a gateway restart, and two gateways on one Redis serve one conversation alternately', async () => {
    const sessionId = `restart-${randomUUID()}`;
    const second = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
    });
    try {
      await expect
        .poll(async () => (await fetch(`${second.baseUrl.replace(/\/v1$/, '')}/readyz`)).status)
        .toBe(200);
      for (let turn = 0; turn < 4; turn++) {
        const gateway = turn % 2 === 0 ? harness : second;
        await clientFor(gateway, sessionId).chat.completions.create({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: `turn ${turn}` }],
        });
      }
    } finally {
      await second.close();
    }
    const restarted = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
    });
    try {
      await expect
        .poll(async () => (await fetch(`${restarted.baseUrl.replace(/\/v1$/, '')}/readyz`)).status)
        .toBe(200);
      const stored = await sessionMessages(restarted, sessionId);
      expect(stored.filter((message) => message.role === 'user').map((message) => message.content)).toEqual([
        'turn 0',
        'turn 1',
        'turn 2',
        'turn 3',
      ]);
      expect(stored).toHaveLength(8);
    } finally {
      await restarted.close();
    }
  });

  it('serves the sessions API to its own credential only, and deletes', async () => {
    const sessionId = `api-${randomUUID()}`;
    await clientFor(harness, sessionId).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'hello' },
      ],
    });
    const own = await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
      headers: { authorization: 'Bearer sk-tenant-a' },
    });
    const session = (await own.json()) as { id: string; system_prompt: unknown; counts: { total: number } };
    expect(session.id).toBe(sessionId);
    expect(session.system_prompt).toEqual({ role: 'system', content: 'sys' });
    expect(session.counts.total).toBe(2);
    const other = await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
      headers: { authorization: 'Bearer sk-tenant-b' },
    });
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const deleted = await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
      method: 'DELETE',
      headers: { authorization: 'Bearer sk-tenant-a' },
    });
    expect(await deleted.json()).toEqual({ object: 'session.deleted', id: sessionId, deleted: true });
    expect(
      (
        await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
          headers: { authorization: 'Bearer sk-tenant-a' },
        })
      ).status,
    ).toBe(404);
  });

  it('renews its hold through a turn longer than hold_ms; a turn whose hold was lost is neither stored nor answered', async () => {
    const shortHold = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
      // Long enough that a loaded machine's event-loop stalls do not outlast the renewal's margin.
      configYaml: 'sessions:\n  hold_ms: 1000\n',
    });
    try {
      await waitUntilReady(shortHold);
      const sessionId = `long-turn-${randomUUID()}`;
      const client = clientFor(shortHold, sessionId);
      // Two and a half times the hold: renewed all along, so stored and answered.
      fake.enqueue({ delayBeforeHeadersMs: 2_500, content: 'slow but fine' });
      const slow = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'slow' }],
      });
      expect(slow.choices[0]?.message.content).toBe('slow but fine');
      expect(await sessionMessages(shortHold, sessionId)).toHaveLength(2);

      // The hold disappears mid-turn (as when a replica freezes past it and another takes over).
      const answerLost = gate();
      fake.enqueue({
        answerWhen: answerLost.opened,
        content: 'too late',
      });
      const pending = client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'lost' }] })
        .catch((error: unknown) => error);
      await fake.chatRequestHolding('"lost"');
      const port = new URL(inject('redisUrl')).port;
      const holdKey = execFileSync(
        'redis-cli',
        ['-p', port, '--scan', '--pattern', `ctxgate:*${sessionId}}:hold`],
        {
          encoding: 'utf8',
        },
      ).trim();
      expect(holdKey).not.toBe('');
      execFileSync('redis-cli', ['-p', port, 'DEL', holdKey]);
      answerLost.open();
      const failure = await pending;
      expect(failure).toBeInstanceOf(OpenAI.ConflictError);
      expect((failure as InstanceType<typeof OpenAI.ConflictError>).code).toBe('session_conflict');
      expect(await sessionMessages(shortHold, sessionId)).toHaveLength(2);
      // The inspector has both: the stored turn's report (kept with it), and the lost turn's, kept after.
      const reports = async () => {
        const response = await fetch(`${shortHold.baseUrl}/sessions/${sessionId}/requests`, {
          headers: { authorization: 'Bearer sk-tenant-a' },
        });
        return ((await response.json()) as { data: Array<{ status: number; at: number }> }).data;
      };
      await expect.poll(async () => (await reports()).length).toBe(2);
      const [lost, stored] = await reports();
      expect(lost?.status).toBe(200);
      expect(stored?.status).toBe(200);
      expect(lost!.at).toBeGreaterThan(stored!.at);
    } finally {
      await shortHold.close();
    }
  });

  it('sends [DONE] on a streamed session turn only once the turn is stored, and an error event when it cannot be', async () => {
    const sessionId = `stream-store-${randomUUID()}`;
    const send = (content: string) =>
      fetch(`${harness.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-tenant-a',
          'x-session-id': sessionId,
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content }] }),
      });
    fake.enqueue({ content: 'stored fine', chunks: 3 });
    const stored = await (await send('first')).text();
    expect(stored.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await sessionMessages(harness, sessionId)).toHaveLength(2);

    // The hold disappears while the answer streams: the turn cannot be stored.
    const resume = gate();
    fake.enqueue({
      content: 'never stored',
      chunks: 4,
      pauseAfterChunks: 2,
      resumeWhen: resume.opened,
    });
    const response = await send('second');
    const port = new URL(inject('redisUrl')).port;
    const holdKey = execFileSync(
      'redis-cli',
      ['-p', port, '--scan', '--pattern', `ctxgate:*${sessionId}}:hold`],
      {
        encoding: 'utf8',
      },
    ).trim();
    expect(holdKey).not.toBe('');
    execFileSync('redis-cli', ['-p', port, 'DEL', holdKey]);
    resume.open();
    const text = await response.text();
    expect(text).not.toContain('[DONE]');
    const events = text.trim().split('\n\n');
    // The whole answer arrived, then the error in place of [DONE].
    const content = events
      .slice(0, -1)
      .map(
        (event) =>
          (JSON.parse(event.replace(/^data: /, '')) as { choices: Array<{ delta: { content?: string } }> })
            .choices[0]?.delta.content ?? '',
      )
      .join('');
    expect(content).toBe('never stored');

    expect(JSON.parse((events.at(-1) as string).replace(/^data: /, ''))).toMatchObject({
      error: { code: 'session_conflict' },
    });
    expect(await sessionMessages(harness, sessionId)).toHaveLength(2);
  });

  it('stores a tool result cut between the halves of an emoji as the replacement character, and the session goes on', async () => {
    // The openai client writes the lone half as `\ud83d`; a strict provider (DeepSeek's serde parser,
    // Anthropic's) refuses the whole body, and every later request of a session that stored it.
    const sessionId = `halves-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    fake.enqueue(
      { toolCalls: [{ id: 'call_log', name: 'read_log', arguments: '{}' }] },
      { content: 'The log says launch.' },
      { content: 'Nothing else.' },
    );
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'read_log', parameters: { type: 'object', properties: {} } } },
    ];
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [{ role: 'user', content: 'Read the log.' }],
    });
    const cut = 'launch 🚀 done'.slice(0, 8);
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [{ role: 'tool', tool_call_id: 'call_log', content: cut }],
    });
    const { choices } = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [{ role: 'user', content: 'Anything else?' }],
    });
    expect(choices[0]?.message.content).toBe('Nothing else.');
    expect(fake.chatRequests.map((request) => request.status)).toEqual([200, 200, 200]);
    const sent = (fake.chatRequests[2]?.body as { messages: Message[] }).messages.find(
      (message) => message.role === 'tool',
    );
    expect(sent?.content).toBe('launch \uFFFD');
    expect((await sessionMessages(harness, sessionId)).map((message) => message.content)).toContain(
      'launch \uFFFD',
    );
  });

  it('refuses a malformed session id with 400', async () => {
    const failure = await clientFor(harness, 'bad id!')
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
    expect((failure as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('x-session-id');
  });
});

describe('Redis eviction policy', () => {
  it('warns at start when maxmemory-policy could evict session keys, and not with noeviction', async () => {
    const evicting = await startRedisServer(['--maxmemory-policy', 'allkeys-lru']);
    const safe = await startRedisServer(['--maxmemory-policy', 'noeviction']);
    const gateways = [
      await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: evicting.url } }),
      await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: safe.url } }),
    ];
    try {
      await Promise.all(gateways.map(waitUntilReady));
      const warned = (gateway: GatewayHarness) =>
        gateway.logLines.some((line) => line.includes('maxmemory-policy can evict'));
      await expect.poll(() => warned(gateways[0] as GatewayHarness)).toBe(true);
      // The check runs once Redis is ready; give the safe one as long again before saying it stayed quiet.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(warned(gateways[1] as GatewayHarness)).toBe(false);
    } finally {
      for (const gateway of gateways) await gateway.close();
      await evicting.stop();
      await safe.stop();
    }
  });
});

describe('sessions with Redis paused', () => {
  it('answers 503 while Redis is paused (CLIENT PAUSE), without waiting for it, and serves again after', async () => {
    const redis = await startRedisServer();
    const gateway = await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: redis.url } });
    try {
      await waitUntilReady(gateway);
      // As main.ts does at start: the first request must not pay for loading the tokenizer.
      gateway.gateway.warmUp();
      // A 503 shows the gateway did not wait for Redis: had it waited out the pause, the turn would have
      // been stored and answered 200 (how fast it answers is the bench's to measure, not a test's).
      execFileSync('redis-cli', ['-p', String(redis.port), 'CLIENT', 'PAUSE', '5000', 'ALL']);
      const failure = await clientFor(gateway, 'paused-1')
        .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
        .catch((error: unknown) => error);
      expect((failure as { status?: number }).status).toBe(503);
      expect((failure as { code?: string }).code).toBe('session_store_unavailable');
      let completion: OpenAI.ChatCompletion | undefined;
      for (let attempt = 0; attempt < 50 && completion === undefined; attempt++) {
        completion = await clientFor(gateway, 'paused-1')
          .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
          .catch(async () => {
            await new Promise((resolve) => setTimeout(resolve, 100));
            return undefined;
          });
      }
      expect(completion?.choices).toHaveLength(1);
    } finally {
      await gateway.close();
      await redis.stop();
    }
  });
});

describe('sessions with Redis full', () => {
  // The gateway asks for noeviction (above): past maxmemory Redis then refuses every write ("OOM command not
  // allowed when used memory > 'maxmemory'"), and every session request answered 503 with nothing in the
  // log to say why while Redis answered PING.
  it('answers 503 with Redis’s own words on the request’s line, stateless requests unharmed, and recovers', async () => {
    const redis = await startRedisServer(['--maxmemory', '4mb', '--maxmemory-policy', 'noeviction']);
    const gateway = await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: redis.url } });
    /** Redis past its maxmemory with keys of its own, and back under it. */
    const redisEval = (script: string) =>
      execFileSync('redis-cli', ['-p', String(redis.port), 'EVAL', script, '0']);
    const filled = () =>
      redisEval("for i = 1, 6000 do redis.call('SET', 'filler:' .. i, string.rep('x', 1000)) end return 1");
    const emptied = () => redisEval("return redis.call('DEL', unpack(redis.call('KEYS', 'filler:*')))");
    const ask = (sessionId: string) =>
      clientFor(gateway, sessionId)
        .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
        .catch((error: unknown) => error);
    try {
      await waitUntilReady(gateway);
      expect(await ask('full-1')).toMatchObject({ object: 'chat.completion' });
      filled();
      const from = gateway.logLines.length;
      const failure = await ask('full-1');
      expect(failure).toMatchObject({ status: 503, code: 'session_store_unavailable' });
      const line = gateway.logLines
        .slice(from)
        .map((text) => JSON.parse(text) as { msg?: string; status?: number; errorCause?: string })
        .find((entry) => entry.msg === 'request' && entry.status === 503);
      expect(line?.errorCause).toMatch(/^OOM command not allowed when used memory > 'maxmemory'/);
      // Without a session, nothing is written to Redis.
      const stateless = await new OpenAI({
        baseURL: gateway.baseUrl,
        apiKey: 'sk-test',
        maxRetries: 0,
      }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
      expect(stateless.choices).toHaveLength(1);
      emptied();
      expect(await ask('full-1')).toMatchObject({ object: 'chat.completion' });
      // Full while a streamed turn is upstream: the answer streams, its turn cannot be stored, and the
      // client's error event and the request's line say so — the line in Redis's words.
      const upstreamAnswers = gate();
      const asked = fake.requests.length;
      fake.enqueue({ content: 'Streamed before the store filled.', answerWhen: upstreamAnswers.opened });
      const streamed = clientFor(gateway, 'full-2').chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      const before = gateway.logLines.length;
      await expect.poll(() => fake.requests.length).toBe(asked + 1);
      filled();
      upstreamAnswers.open();
      let text = '';
      const broken = await (async () => {
        for await (const chunk of await streamed) text += chunk.choices[0]?.delta.content ?? '';
      })().catch((error: unknown) => error);
      expect(text).toBe('Streamed before the store filled.');
      expect(broken).toBeInstanceOf(Error);
      await expect
        .poll(() =>
          gateway.logLines
            .slice(before)
            .map(
              (line) => JSON.parse(line) as { msg?: string; streamErrorCode?: string; errorCause?: string },
            )
            .find(
              (entry) => entry.msg === 'request' && entry.streamErrorCode === 'session_store_unavailable',
            ),
        )
        .toMatchObject({ errorCause: expect.stringMatching(/^OOM command not allowed/) });
      emptied();
    } finally {
      await gateway.close();
      await redis.stop();
    }
  });
});

describe('sessions with Redis down', () => {
  it('answers 503 session_store_unavailable, keeps stateless requests working, and recovers', async () => {
    const port = await findFreePort();
    const redis = await startRedisServer([], port);
    const gateway = await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: redis.url } });
    const root = gateway.baseUrl.replace(/\/v1$/, '');
    try {
      await expect.poll(async () => (await fetch(`${root}/readyz`)).status).toBe(200);
      // As main.ts does at start: the first request must not pay for loading the tokenizer.
      gateway.gateway.warmUp();
      await redis.stop();
      const failure = await clientFor(gateway, 'down-1')
        .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(OpenAI.InternalServerError);
      expect((failure as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(503);
      expect((failure as InstanceType<typeof OpenAI.InternalServerError>).code).toBe(
        'session_store_unavailable',
      );
      const stateless = new OpenAI({ baseURL: gateway.baseUrl, apiKey: 'sk-x', maxRetries: 0 });
      expect(
        (
          await stateless.chat.completions.create({
            model: 'gpt-4o-mini',
            messages: [{ role: 'user', content: 'x' }],
          })
        ).choices,
      ).toHaveLength(1);
      const restarted = await startRedisServer([], port);
      try {
        await expect
          .poll(async () => (await fetch(`${root}/readyz`)).status, { timeout: 10_000, interval: 100 })
          .toBe(200);
        const completion = await clientFor(gateway, 'down-1').chat.completions.create({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'x' }],
        });
        expect(completion.choices).toHaveLength(1);
      } finally {
        await restarted.stop();
      }
    } finally {
      await gateway.close();
      await redis.stop();
    }
  });
});
