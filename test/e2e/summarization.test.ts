// End to end: summarization of long sessions through the openai client, a real Redis and the strict
// fake provider acting as an extractive summarizer and as a model that answers from what it was sent.
// 300 turns in an 8,192-token window with a fact planted every 10 turns: with summaries the facts are
// still answered at the end; without them (the same conversation, summarization off) they are not.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { passThroughTenantId } from '../../src/config/tenant-id.js';
import { createRedisBudgetStore } from '../../src/store/redis-budget-store.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import {
  countPromptTokens,
  FakeUpstream,
  isSummaryRequest,
  type FakeUpstreamOptions,
} from '../helpers/fake-upstream.js';

import {
  counterValue,
  metricsText,
  startGateway,
  waitUntilReady,
  type GatewayHarness,
} from '../helpers/start-gateway.js';
import { textOf } from '../helpers/text.js';

const model = 'small-model';
const window = 8_192;
const outputReserve = 512;
const factPattern = /^Fact \d+: the access code for vault \d+ is K\d+-\d+\.$/;

const words = ['river', 'stone', 'lamp', 'green', 'window', 'quiet', 'harbor', 'paper', 'silver', 'field'];
const filler = (count: number, offset = 0): string =>
  Array.from({ length: count }, (_unused, index) => words[(index * 7 + offset) % words.length]).join(' ');
const codeFor = (fact: number): string => `K${fact}-${((fact * 7_919 + 104_729) % 90_000) + 10_000}`;

/** The fake model: answers a question about a vault from what its prompt holds, anything else with filler. */
function answerFromPrompt(messages: ReadonlyArray<{ role: string; content?: unknown }>): string {
  const question = /What is the access code for vault (\d+)\?/.exec(textOf(messages.at(-1)?.content));
  if (question === null) return `Understood. ${filler(40, messages.length)}`;
  const vault = question[1] as string;
  const fact = new RegExp(`access code for vault ${vault} is (K\\d+-\\d+)\\.`);
  for (const message of messages) {
    const found = fact.exec(textOf(message.content));
    if (found !== null) return `The access code for vault ${vault} is ${found[1]}.`;
  }
  return 'I do not know that code.';
}

let fake: FakeUpstream;
let upstreamUrl: string;
let harness: GatewayHarness;
const configYaml = [
  'models:',
  `  - match: ${model}`,
  `    window: ${window}`,
  `    output_reserve: ${outputReserve}`,
  'policies:',
  '  nosummary:',
  "    summarization: 'off'",
  '',
].join('\n');

beforeAll(async () => {
  fake = new FakeUpstream({
    // A chat template that takes a system message only first: the gateway's notices must not be there.
    systemOnlyFirst: true,
    windows: { [model]: window },
    extractiveSummaries: factPattern,
    answer: answerFromPrompt,
    recordLimit: 5_000,
  });
  upstreamUrl = await fake.start();
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
    configYaml,
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

const clientFor = (gateway: GatewayHarness, sessionId: string, headers: Record<string, string> = {}) =>
  new OpenAI({
    baseURL: gateway.baseUrl,
    apiKey: 'sk-summaries',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': sessionId, ...headers },
  });

interface TurnRecord {
  content: string;
  retries: string | null;
  summary: string | null;
  dropped: number;
  summarized: number;
  /** What the provider was sent: the conversation's own messages, and the gateway's summary and notice. */
  sent: number;
  summaryCovers: number;
  noticeOmits: number;
}

async function turn(client: OpenAI, content: string): Promise<TurnRecord> {
  const { data, response } = await client.chat.completions
    .create({ model, messages: [{ role: 'user', content }] })
    .withResponse();
  const upstream = fake.chatRequests.filter((request) => !isSummaryRequest(request.body)).at(-1);
  const sentMessages =
    (upstream?.body as { messages?: Array<{ role: string; content: string }> } | undefined)?.messages ?? [];
  const texts = sentMessages.map((message) => message.content);
  const stated = (pattern: RegExp): number =>
    texts.reduce((sum, text) => sum + Number(pattern.exec(text)?.[1] ?? 0), 0);
  return {
    content: data.choices[0]?.message.content ?? '',
    retries: response.headers.get('x-context-retries'),
    summary: response.headers.get('x-context-summary'),
    dropped: Number(response.headers.get('x-context-dropped-messages')),
    summarized: Number(response.headers.get('x-context-summarized-messages')),
    // The conversation has no system prompt: a system message is the gateway's (or carries its notices).
    sent: sentMessages.filter((message) => message.role !== 'system').length,
    summaryCovers: stated(/\[ctxgate\] Summary of (\d+) earlier messages/),
    noticeOmits: stated(/\[ctxgate\] (\d+) earlier messages of this conversation were omitted/),
  };
}

/** 300 turns with a fact every 10 turns, then one question per fact; returns what came back. */
async function converse(
  gateway: GatewayHarness,
  sessionId: string,
  headers: Record<string, string> = {},
): Promise<{ turns: TurnRecord[]; answers: Array<{ fact: number; answer: string }> }> {
  const client = clientFor(gateway, sessionId, headers);
  const turns: TurnRecord[] = [];
  for (let index = 0; index < 300; index++) {
    const fact = index % 10 === 5 ? (index - 5) / 10 + 1 : undefined;
    const content =
      fact === undefined
        ? `${filler(90, index)}`
        : `${filler(60, index)}\nFact ${fact}: the access code for vault ${fact} is ${codeFor(fact)}.\n${filler(30, index)}`;
    turns.push(await turn(client, content));
  }
  await gateway.gateway.summarizer.idle();
  const answers: Array<{ fact: number; answer: string }> = [];
  for (let fact = 1; fact <= 30; fact++) {
    const record = await turn(client, `What is the access code for vault ${fact}?`);
    turns.push(record);
    answers.push({ fact, answer: record.content });
  }
  return { turns, answers };
}

const correct = (answers: Array<{ fact: number; answer: string }>): number =>
  answers.filter(({ fact, answer }) => answer.includes(codeFor(fact))).length;

describe('summarization of a long session', () => {
  it('answers the facts of 300 turns in an 8,192-token window, every request fitting first time', async () => {
    fake.requests.length = 0;
    const sessionId = `facts-${randomUUID()}`;
    const { turns, answers } = await converse(harness, sessionId);

    expect(correct(answers)).toBeGreaterThanOrEqual(Math.ceil(0.95 * answers.length));
    // Fitted first time: no compressed retry, and the provider never saw a prompt over its window.
    expect(turns.every((record) => record.retries === '0')).toBe(true);
    const requests = fake.chatRequests;
    for (const request of requests) {
      const maxTokens = (request.body as { max_tokens?: number }).max_tokens ?? outputReserve;
      expect((request.promptTokens ?? Infinity) + maxTokens).toBeLessThanOrEqual(window);
    }
    const summaryRequests = requests.filter((request) => isSummaryRequest(request.body));
    expect(summaryRequests.length).toBeGreaterThan(3);
    // The summary is sent once one exists, and said so.
    expect(turns[0]?.summary).toBe('none');
    expect(turns.at(-1)?.summary).toBe('used');
    // Every message of the conversation is sent, summarized or dropped — exactly one of the three — and
    // the headers, the summary and the notice agree on the numbers.
    for (const [index, record] of turns.entries()) {
      expect(record.sent + record.summarized + record.dropped).toBe(2 * index + 1);
      expect(record.summarized).toBe(record.summaryCovers);
      expect(record.dropped).toBe(record.noticeOmits);
    }
    expect(turns.at(-1)?.summarized).toBeGreaterThan(200);

    // The sessions API shows the summary and the range it stands for; the archive lost nothing.
    const headers = { authorization: 'Bearer sk-summaries' };
    const session = (await (await fetch(`${harness.baseUrl}/sessions/${sessionId}`, { headers })).json()) as {
      summary: {
        text: string;
        tokens: number;
        covers: { from_message: number; to_message: number; messages: number };
      };
      counts: { archived: number; total: number };
    };
    expect(session.summary.covers.from_message).toBe(2);
    expect(session.summary.covers.to_message).toBeGreaterThan(300);
    expect(session.summary.covers.messages).toBe(session.summary.covers.to_message - 2);
    expect(session.summary.text).toContain(`Fact 1: the access code for vault 1 is ${codeFor(1)}.`);
    expect(session.counts.archived).toBeGreaterThanOrEqual(session.summary.covers.messages);
    expect(session.counts.total).toBe(2 * 330);
    const history = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}/history?limit=1000`, { headers })
    ).json()) as { data: Array<{ role: string; content: string }> };
    expect(history.data).toHaveLength(660);
    expect(
      history.data.filter((message) => factPattern.test(message.content.split('\n')[1] ?? '')),
    ).toHaveLength(30);

    // The render preview shows the summary region (what the next request would send).
    const preview = (await (
      await fetch(`${harness.baseUrl}/context/render`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'x-session-id': sessionId },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'And now?' }] }),
      })
    ).json()) as {
      messages: Array<{ role: string; content: string }>;
      report: { summaryUsed: boolean; regions: { summary: number } };
    };
    expect(preview.report.summaryUsed).toBe(true);
    // The summary as the gateway writes it; this model's template takes a system message only first, so
    // it is carried at the start of the user message after the kept first turn (notice_placement user).
    const summaryText = `[ctxgate] Summary of ${session.summary.covers.messages} earlier messages of this conversation, which are not shown:\n${session.summary.text}`;
    // Counted as the provider counts it (the fake's own cookbook count, less its 3 reply tokens).
    expect(preview.report.regions.summary).toBe(
      countPromptTokens([{ role: 'system', content: summaryText }], undefined) - 3,
    );
    expect(preview.messages[2]?.role).toBe('user');
    expect(preview.messages[2]?.content.startsWith(`${summaryText}\n\n`)).toBe(true);
    expect(preview.messages.slice(1).some((message) => message.role === 'system')).toBe(false);

    const metrics = await metricsText(harness);
    expect(counterValue(metrics, 'ctxgate_summarization_runs_total{outcome="stored"}')).toBe(
      summaryRequests.length,
    );
    expect(counterValue(metrics, 'ctxgate_summarization_tokens_saved_total')).toBeGreaterThan(10_000);
    expect(metrics).toContain('ctxgate_summarization_compression_ratio_count');
    expect(counterValue(metrics, 'ctxgate_summarization_duration_seconds_count{outcome="stored"}')).toBe(
      summaryRequests.length,
    );
    const logLine = harness.logLines.find((line) => line.includes('"msg":"summarization"'));
    expect(JSON.parse(logLine as string)).toMatchObject({
      outcome: 'stored',
      model,
      coveredMessages: expect.any(Number),
    });
    // Neither the summary nor any message text reaches the logs, nor the session id: a hash of it does.
    expect(harness.logLines.some((line) => line.includes('access code'))).toBe(false);
    expect(harness.logLines.some((line) => line.includes(sessionId))).toBe(false);
    const requestLine = harness.logLines
      .map((line) => JSON.parse(line) as { msg: string; session?: string })
      .find((line) => line.msg === 'request' && line.session !== undefined);
    expect(requestLine?.session).toMatch(/^[0-9a-f]{16}$/);
  });

  it('without summaries the same conversation loses its early facts (the test above can fail)', async () => {
    fake.requests.length = 0;
    const { turns, answers } = await converse(harness, `no-summary-${randomUUID()}`, {
      'x-context-policy': 'nosummary',
    });
    expect(correct(answers)).toBeLessThan(answers.length / 2);
    expect(turns.every((record) => record.summary === 'none')).toBe(true);
    expect(fake.summaryRequests).toHaveLength(0);
  });
});

describe('summarization jobs', () => {
  /** Turns of about 500 tokens: a session passes summarize_at after a dozen. */
  async function fill(client: OpenAI, from: number, count: number): Promise<TurnRecord[]> {
    const records: TurnRecord[] = [];
    for (let index = from; index < from + count; index++)
      records.push(
        await turn(
          client,
          `${filler(400, index)}\nFact ${index}: the access code for vault ${index} is ${codeFor(index)}.`,
        ),
      );
    return records;
  }
  const sessionOf = async (gateway: GatewayHarness, sessionId: string) =>
    (await (
      await fetch(`${gateway.baseUrl}/sessions/${sessionId}`, {
        headers: { authorization: 'Bearer sk-summaries' },
      })
    ).json()) as {
      summary: { covers: { to_message: number } } | null;
      counts: { active: number; total: number };
    };

  it('refuses a bad summary or a failed call without changing the session, and tries again at a later turn', async () => {
    const sessionId = `guarded-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    let next = 0;
    /** Turns until the counter rises (failed sessions wait 0, 1, 3, 7 turns between tries). */
    const turnsUntilCounted = async (series: string): Promise<number> => {
      const start = counterValue(await metricsText(harness), series);
      for (let turns = 1; turns <= 10; turns++) {
        await fill(client, next++, 1);
        await harness.gateway.summarizer.idle();
        if (counterValue(await metricsText(harness), series) > start) return turns;
      }
      throw new Error(`${series} was not counted`);
    };
    await fill(client, next, 11);
    next += 11;

    fake.setSummaryBehaviour({ content: "I'm sorry, but I can't help with summarizing this conversation." });
    await turnsUntilCounted('ctxgate_summarization_rejections_total{reason="error_text"}');
    const afterRejection = await sessionOf(harness, sessionId);
    expect(afterRejection.summary).toBeNull();
    expect(afterRejection.counts).toMatchObject({ total: 2 * next, active: 2 * next });

    fake.setSummaryBehaviour({ status: 500, body: '{"error":{"message":"boom","type":"server_error"}}' });
    // Tried again at the next turn; after the second failure in a row the session waits a turn, after
    // the third three turns.
    expect(
      await turnsUntilCounted('ctxgate_summarization_failures_total{reason="upstream_status_500"}'),
    ).toBe(1);
    expect((await sessionOf(harness, sessionId)).summary).toBeNull();

    // A summary that dropped the identifier-like facts is not refused: it is repaired (the repair call
    // answers no better here) and the facts' own sentences are appended to it.
    fake.setSummaryBehaviour({ content: 'The user talked about vaults.' });
    expect(await turnsUntilCounted('ctxgate_summarization_runs_total{outcome="stored"}')).toBe(2);
    const repaired = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}`, {
        headers: { authorization: 'Bearer sk-summaries' },
      })
    ).json()) as { summary: { text: string; covers: { to_message: number } } };
    expect(repaired.summary.text.startsWith('The user talked about vaults.')).toBe(true);
    expect(repaired.summary.text).toContain(`Fact 1: the access code for vault 1 is ${codeFor(1)}.`);
    // Stored: the covered turns left the active list, the archive holds them all.
    fake.setSummaryBehaviour({});
    const stored = await sessionOf(harness, sessionId);
    expect(stored.summary?.covers.to_message).toBeGreaterThan(2);
    expect(stored.counts.total).toBe(2 * next);
    expect(stored.counts.active).toBeLessThan(stored.counts.total);
  });

  it('retries a summarizer that is rate limited or down for a moment as a request is retried: the same job stores the summary', async () => {
    const sessionId = `retried-${randomUUID()}`;
    const client = clientFor(harness, sessionId);
    const rateLimited = 'ctxgate_summarization_failures_total{reason="upstream_status_429"}';
    const failuresBefore = counterValue(await metricsText(harness), rateLimited);
    const callsBefore = fake.summaryRequestsSeen;
    fake.setSummaryBehaviour({});
    fake.enqueueSummary(
      {
        status: 429,
        headers: { 'retry-after': '0' },
        body: '{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}',
      },
      { status: 503, body: '{"error":{"message":"The server is overloaded","type":"server_error"}}' },
    );
    let turns = 0;
    while (fake.summaryRequestsSeen === callsBefore && turns < 30) {
      await fill(client, 1_000 + turns, 1);
      turns++;
    }
    await harness.gateway.summarizer.idle();
    // The first job's call was refused twice and answered the third time: no failure, a summary.
    expect(fake.summaryRequestsSeen - callsBefore).toBeGreaterThanOrEqual(3);
    expect(counterValue(await metricsText(harness), rateLimited)).toBe(failuresBefore);
    expect((await sessionOf(harness, sessionId)).summary).not.toBeNull();
  });

  it("counts summary calls against the session's budget, like any request", async () => {
    const budgeted = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
      configYaml: `${configYaml}budgets:\n  defaults:\n    session_tokens: { limit: 100000000, mode: hard }\n`,
    });
    const redis = createRedisConnection({ mode: 'standalone', url: inject('redisUrl') });
    try {
      await waitUntilReady(budgeted);
      const sessionId = `budgeted-${randomUUID()}`;
      const client = clientFor(budgeted, sessionId);
      fake.requests.length = 0;
      let chatTokens = 0;
      for (let index = 0; index < 16; index++) {
        const completion = await client.chat.completions.create({
          model,
          messages: [
            {
              role: 'user',
              content: `${filler(400, index)}\nFact ${index}: the access code for vault ${index} is ${codeFor(index)}.`,
            },
          ],
        });
        chatTokens += completion.usage?.total_tokens ?? Number.NaN;
      }
      await budgeted.gateway.summarizer.idle();
      const summaryPrompts = fake.summaryRequests.reduce(
        (sum, request) => sum + (request.promptTokens ?? 0),
        0,
      );
      expect(summaryPrompts).toBeGreaterThan(0);
      while (redis.status !== 'ready') await new Promise((resolve) => setTimeout(resolve, 20));
      const tenantId = passThroughTenantId(['sk-summaries']);
      const [usage] = await createRedisBudgetStore({ redis }).read(
        [{ name: 'session_tokens', tenantId, sessionId, periodId: 'lifetime', ttlSeconds: 60 }],
        Date.now(),
      );
      // The conversation's own usage, plus each summary call's prompt and its (short) answer.
      expect(usage?.used).toBeGreaterThan(chatTokens + summaryPrompts);
      expect(usage?.used).toBeLessThan(chatTokens + summaryPrompts + 2_000);
      expect(usage?.estimated).toBe(0);
    } finally {
      redis.disconnect();
      await budgeted.close();
    }
  });

  it('runs one job per session across two gateways, and never makes the triggering request wait', async () => {
    const second = await startGateway({
      env: { UPSTREAM_BASE_URL: upstreamUrl, REDIS_URL: inject('redisUrl') },
      configYaml,
    });
    try {
      await waitUntilReady(second);
      const sessionId = `shared-${randomUUID()}`;
      fake.setSummaryBehaviour({ delayBeforeHeadersMs: 1_500 });
      const first = clientFor(harness, sessionId);
      await fill(first, 0, 11);
      fake.requests.length = 0;
      // Over summarize_at from here: each turn would start a job; the first one holds the lock.
      for (let index = 11; index < 16; index++) {
        const gateway = index % 2 === 0 ? harness : second;
        await fill(clientFor(gateway, sessionId), index, 1);
        // The turn is answered while its summary is still being written.
        const pending = fake.summaryRequests;
        if (pending.length > 0) expect(pending.every((request) => request.completed)).toBe(false);
      }
      await Promise.all([harness.gateway.summarizer.idle(), second.gateway.summarizer.idle()]);
      const summaryRequests = fake.summaryRequests;
      expect(summaryRequests.length).toBeGreaterThanOrEqual(1);
      // Never two at once: each summary request came when no other was open.
      expect(summaryRequests.map((request) => request.summariesOpenOnArrival)).toEqual(
        summaryRequests.map(() => 0),
      );
      const skipped = 'ctxgate_summarization_runs_total{outcome="skipped"}';
      const skips =
        counterValue(await metricsText(harness), skipped) + counterValue(await metricsText(second), skipped);
      expect(skips).toBeGreaterThan(0);
      expect((await sessionOf(harness, sessionId)).summary).not.toBeNull();
    } finally {
      fake.setSummaryBehaviour({});
      await second.close();
    }
  });
});

describe('a reasoning model as its own summarizer', () => {
  /**
   * A session of 140 fact-stating turns on a model served as OpenAI serves its reasoning models (it
   * refuses max_tokens and a temperature other than 1): the summary requests it got, and whether the
   * last answer used a summary.
   */
  async function summarizedBy(
    model: string,
    thinks: Pick<
      FakeUpstreamOptions,
      'mistralThinking' | 'thinkTags' | 'reasoningModels' | 'thinkingSpends'
    > = {
      reasoningModels: [model],
    },
  ): Promise<{ asked: Array<Record<string, unknown>>; summary: string | null; stored: string | undefined }> {
    const strict = new FakeUpstream({
      ...thinks,
      windows: { [model]: window },
      extractiveSummaries: factPattern,
      answer: answerFromPrompt,
    });
    const gateway = await startGateway({
      env: { UPSTREAM_BASE_URL: await strict.start(), REDIS_URL: inject('redisUrl') },
      configYaml: `models:\n  - match: ${model}\n    window: ${window}\n    output_reserve: ${outputReserve}\n`,
    });
    try {
      await waitUntilReady(gateway);
      const sessionId = `reasoning-${randomUUID()}`;
      const client = clientFor(gateway, sessionId);
      let summary: string | null = null;
      for (let index = 0; index < 140; index++) {
        const { response } = await client.chat.completions
          .create({
            model,
            messages: [
              {
                role: 'user',
                content: `${filler(60, index)}\nFact ${index}: the access code for vault ${index} is ${codeFor(index)}.`,
              },
            ],
          })
          .withResponse();
        summary = response.headers.get('x-context-summary');
        await gateway.gateway.summarizer.idle();
      }
      const session = (await (
        await fetch(`${gateway.baseUrl}/sessions/${sessionId}`, {
          headers: { authorization: 'Bearer sk-summaries' },
        })
      ).json()) as { summary: { text: string } | null };
      return {
        asked: strict.summaryRequests.map((request) => request.body as Record<string, unknown>),
        summary,
        stored: session.summary?.text,
      };
    } finally {
      await gateway.close();
      await strict.stop();
    }
  }

  it('is asked for its summaries as OpenAI takes them: max_completion_tokens, no temperature', async () => {
    const { asked, summary } = await summarizedBy('gpt-5-mini');
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((body) => 'max_tokens' in body || 'temperature' in body)).toEqual([]);
    expect(asked.every((body) => typeof body.max_completion_tokens === 'number')).toBe(true);
    // Summaries were made and are sent.
    expect(summary).toBe('used');
  });

  // A model that thinks before it answers gives its summary after its thinking: Mistral's Magistral as
  // a list of chunks (the thinking, then the text), DeepSeek-R1's distills, QwQ and Qwen3 as Ollama and
  // vLLM without a reasoning parser serve them, in its content between <think> tags (dify#38587,
  // R2R#2123). The summary is the answer after the thinking.
  it.each([
    [
      'Magistral: chunks of thinking, then the text',
      'magistral-small-2509',
      { mistralThinking: ['magistral-small-2509'] },
    ],
    [
      'DeepSeek-R1 on Ollama: thinking between <think> tags',
      'deepseek-r1:14b',
      { thinkTags: ['deepseek-r1:14b'] },
    ],
  ])('takes the summary a thinking model writes after its thinking (%s)', async (_name, model, thinks) => {
    const { asked, summary, stored } = await summarizedBy(model, thinks);
    expect(asked.length).toBeGreaterThan(0);
    expect(summary).toBe('used');
    expect(stored).toContain(`Fact 1: the access code for vault 1 is ${codeFor(1)}.`);
    expect(stored?.split('\n').filter((line) => /think/i.test(line))).toEqual([]);
  });

  // DeepSeek, Kimi, GLM and Gemini think by default and count their thinking in max_tokens: a summary
  // call's 1,024 tokens went to thinking, the answer came back empty and cut ("length"), and so did
  // every later one — the session was never summarized.
  it('gives a model that spends the summary cap thinking four times the room, and it summarizes', async () => {
    const { asked, summary, stored } = await summarizedBy('kimi-k2.5', {
      thinkingSpends: { 'kimi-k2.5': 1_500 },
    });
    expect(asked[0]?.max_tokens).toBe(1_024);
    expect(asked.slice(1).map((body) => body.max_tokens)).toContain(4_096);
    expect(asked.slice(1).every((body) => body.max_tokens === 4_096)).toBe(true);
    expect(summary).toBe('used');
    expect(stored).toContain(`Fact 1: the access code for vault 1 is ${codeFor(1)}.`);
  });

  it('learns the fields a reasoning model served under another name takes from its refusals', async () => {
    // An Azure deployment can be called anything: the gateway cannot tell it by name.
    const { asked, summary } = await summarizedBy('prod-summaries');
    // The first summary request was refused twice (max_tokens, then temperature 0); every one after
    // it was asked as the model takes it.
    expect(
      asked.slice(0, 3).map((body) => [body.max_tokens, body.max_completion_tokens, body.temperature]),
    ).toEqual([
      [1_024, undefined, 0],
      [undefined, 1_024, 0],
      [undefined, 1_024, undefined],
    ]);
    expect(asked.length).toBeGreaterThan(3);
    expect(asked.slice(3).filter((body) => 'max_tokens' in body || 'temperature' in body)).toEqual([]);
    expect(summary).toBe('used');
  });
});
