// Summaries that real summarizers can pass (SPEC §7): a 300-turn session in an 8,192-token window with a
// fact planted every 10 turns, the turns numbered and the facts in numbered lists (incidental numbers a
// real summarizer drops), summarized by three fake summarizers — ideal extractive, realistic (restates
// facts in its own words, drops filler and numbering) and lossy (loses a fifth of the facts at random).
// Then one question per fact, answered by a fake model from what its prompt holds. openai client, real
// Redis, the strict fake provider.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import {
  extractiveSummarizer,
  paraphrasingSummarizer,
  type FactShape,
  type Summarizer,
} from '../helpers/fake-summarizers.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';
import { textOf } from '../helpers/text.js';

const model = 'small-model';
const window = 8_192;
const words = ['river', 'stone', 'lamp', 'green', 'window', 'quiet', 'harbor', 'paper', 'silver', 'field'];
const filler = (count: number, offset = 0): string =>
  Array.from({ length: count }, (_unused, index) => words[(index * 7 + offset) % words.length]).join(' ');
const codeFor = (fact: number): string => `K${fact}-${((fact * 7_919 + 104_729) % 90_000) + 10_000}`;

const shape: FactShape = {
  find(sentence) {
    const match = /access code for vault (\d+) is (K\d+-\d+)/.exec(sentence);
    return match === null ? undefined : { key: match[1] as string, value: match[2] as string };
  },
  restate: (key, value) => `Vault ${key} opens with code ${value}.`,
};

/** The fake model: a vault's code when its prompt holds it, in whatever words; else filler. */
function answerFromPrompt(messages: ReadonlyArray<{ role: string; content?: unknown }>): string {
  const question = /What is the access code for vault (\d+)\?/.exec(textOf(messages.at(-1)?.content));
  if (question === null) return `Noted. ${filler(30, messages.length)}`;
  const code = new RegExp(`\\bK${question[1]}-\\d{5}\\b`);
  for (const message of messages) {
    const found = code.exec(textOf(message.content));
    if (found !== null) return `The access code for vault ${question[1]} is ${found[0]}.`;
  }
  return 'I do not know that code.';
}

let fake: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream({ windows: { [model]: window }, answer: answerFromPrompt, recordLimit: 2_000 });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    configYaml: `models:\n  - match: ${model}\n    window: ${window}\n    output_reserve: 512\n`,
  });
  await waitUntilReady(harness);
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});

async function metric(series: string): Promise<number> {
  const text = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** 300 numbered turns with a fact every 10, then a question per fact; the number answered right. */
async function factsAnswered(summarizer: Summarizer): Promise<{ answered: number; retries: number }> {
  fake.setSummarizer(summarizer);
  const client = new OpenAI({
    baseURL: harness.baseUrl,
    apiKey: 'sk-fidelity',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': `fidelity-${randomUUID()}` },
  });
  let retries = 0;
  const ask = async (content: string): Promise<string> => {
    const { data, response } = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content }] })
      .withResponse();
    retries += Number(response.headers.get('x-context-retries'));
    return data.choices[0]?.message.content ?? '';
  };
  for (let index = 0; index < 300; index++) {
    const fact = index % 10 === 5 ? (index - 5) / 10 + 1 : undefined;
    await ask(
      fact === undefined
        ? `Turn ${index}. ${filler(90, index)}`
        : `Turn ${index}. Notes for today:\n1. ${filler(30, index)}\n2. The access code for vault ${fact} is ${codeFor(fact)}.\n3. ${filler(30, index + 1)}`,
    );
  }
  await harness.gateway.summarizer.idle();
  let answered = 0;
  for (let fact = 1; fact <= 30; fact++)
    if ((await ask(`What is the access code for vault ${fact}?`)).includes(codeFor(fact))) answered++;
  return { answered, retries };
}

describe('summaries that real summarizers can pass', () => {
  it('keeps ≥ 95% of 30 facts with the ideal and the realistic summarizer, none refused', async () => {
    const rejectedBefore = await metric('ctxgate_summarization_runs_total{outcome="rejected"}');
    const extractive = await factsAnswered(extractiveSummarizer(shape));
    const realistic = await factsAnswered(paraphrasingSummarizer(shape));
    console.log(`facts answered: extractive ${extractive.answered}/30, realistic ${realistic.answered}/30`);
    expect(extractive.answered).toBeGreaterThanOrEqual(29);
    expect(realistic.answered).toBeGreaterThanOrEqual(29);
    expect(extractive.retries + realistic.retries).toBe(0);
    expect(await metric('ctxgate_summarization_runs_total{outcome="rejected"}')).toBe(rejectedBefore);
    expect(await metric('ctxgate_summarization_runs_total{outcome="stored"}')).toBeGreaterThan(4);
  }, 120_000);

  it('keeps ≥ 90% of the facts with a summarizer that loses a fifth of them, by repairing its summaries', async () => {
    const repairsBefore = fake.summaryRequests.length;
    const lossy = await factsAnswered(paraphrasingSummarizer(shape, { loseShare: 0.2, seed: 11 }));
    console.log(`facts answered: lossy ${lossy.answered}/30`);
    expect(lossy.answered).toBeGreaterThanOrEqual(27);
    // The repair calls happened: more summarizer calls than stored summaries.
    const repairCalls = fake.summaryRequests
      .slice(repairsBefore)
      .filter((request) => JSON.stringify(request.body).includes('Statements whose facts are missing'));
    expect(repairCalls.length).toBeGreaterThan(0);
    expect(await metric('ctxgate_summarization_fact_recall_count{stage="after_repair"}')).toBeGreaterThan(0);
  }, 120_000);
});
