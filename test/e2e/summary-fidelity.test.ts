// Summaries that real summarizers can pass: a 300-turn session in an 8,192-token window with a fact
// stated by the user every 10 turns, the turns numbered and the facts in numbered lists (incidental
// numbers a real summarizer drops), and README excerpts pasted along the way (paths, versions, URLs: more
// identifiers than any summary keeps). Summarized by three fake summarizers written as real ones behave —
// ideal extractive; realistic (restates what it keeps in its own words, drops numbering, and keeps about
// 70% of the facts it is given, deciding afresh at every call); lossy (keeps about 40%) — then one
// question per fact, answered by a fake model from what its prompt holds. openai client, real Redis, the
// strict fake provider.
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
/** A README excerpt the user pastes: a dozen identifiers (paths, versions, URLs, names) in prose. */
const readme = (index: number): string =>
  `Here is the README of service ${index}: ${filler(60, index)} Build it with npm run build_svc${index} ` +
  `and configure packages/svc_${index}/config/settings_${index % 9}.yaml before release v${index % 7}.${index % 11}.${index % 5}. ` +
  `${filler(60, index + 3)} The API lives at https://svc${index}.example.com/api/v${index % 3} and logs to ` +
  `/var/log/svc_${index}/app.log; owners are team_${index % 13} and ops_${index % 17}. ${filler(60, index + 5)} ` +
  `Migrations: db/migrate/${2_000 + index}_add_index.sql, rollback with make rollback_${index}.`;
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
  fake = new FakeUpstream({
    windows: { [model]: window },
    systemOnlyFirst: true,
    answer: answerFromPrompt,
    recordLimit: 2_000,
  });
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
      fact !== undefined
        ? `Turn ${index}. Notes for today:\n1. ${filler(30, index)}\n2. The access code for vault ${fact} is ${codeFor(fact)}.\n3. ${filler(30, index + 1)}`
        : index % 10 === 2
          ? `Turn ${index}. ${readme(index)}`
          : `Turn ${index}. ${filler(90, index)}`,
    );
  }
  await harness.gateway.summarizer.idle();
  let answered = 0;
  for (let fact = 1; fact <= 30; fact++)
    if ((await ask(`What is the access code for vault ${fact}?`)).includes(codeFor(fact))) answered++;
  return { answered, retries };
}

describe('summaries that real summarizers can pass', () => {
  it('keeps every fact with an ideal extractive summarizer', async () => {
    const rejectedBefore = await metric('ctxgate_summarization_runs_total{outcome="rejected"}');
    const extractive = await factsAnswered(extractiveSummarizer(shape));
    console.log(`facts answered: extractive ${extractive.answered}/30`);
    expect(extractive.answered).toBe(30);
    expect(extractive.retries).toBe(0);
    expect(await metric('ctxgate_summarization_runs_total{outcome="rejected"}')).toBe(rejectedBefore);
    expect(await metric('ctxgate_summarization_runs_total{outcome="stored"}')).toBeGreaterThan(4);
  }, 180_000);

  it('keeps ≥ 28 of 30 facts with a realistic summarizer that keeps about 70% of them', async () => {
    const realistic = await factsAnswered(paraphrasingSummarizer(shape, { loseShare: 0.3, seed: 5 }));
    console.log(`facts answered: realistic ${realistic.answered}/30`);
    expect(realistic.answered).toBeGreaterThanOrEqual(28);
    expect(realistic.retries).toBe(0);
  }, 180_000);

  it('keeps ≥ 24 of 30 facts with a lossy summarizer that keeps about 40% of them', async () => {
    const lossy = await factsAnswered(paraphrasingSummarizer(shape, { loseShare: 0.6, seed: 11 }));
    console.log(`facts answered: lossy ${lossy.answered}/30`);
    expect(lossy.answered).toBeGreaterThanOrEqual(24);
  }, 180_000);
});
