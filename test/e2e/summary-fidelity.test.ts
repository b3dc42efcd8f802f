// Summaries that real summarizers can pass: a 300-turn session in an 8,192-token window with a fact
// stated by the user every 10 turns, the turns numbered and the facts in numbered lists (incidental
// numbers a real summarizer drops), and README excerpts pasted along the way (paths, versions, URLs: more
// identifiers than any summary keeps). Summarized by three fake summarizers written as real ones behave —
// ideal extractive; realistic (restates what it keeps in its own words, drops numbering, and keeps about
// 70% of the facts it is given, deciding afresh at every call); lossy (keeps about 40%) — then one
// question per fact, answered by a fake model from what its prompt holds. openai client, real Redis, the
// strict fake provider.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { extractiveSummarizer, paraphrasingSummarizer } from '../helpers/fake-summarizers.js';
import { answerFromPrompt, factsAnswered, shape } from '../helpers/fact-session.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const model = 'small-model';
const window = 8_192;
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

describe('summaries that real summarizers can pass', () => {
  it('keeps every fact with an ideal extractive summarizer', async () => {
    const rejectedBefore = await metric('ctxgate_summarization_runs_total{outcome="rejected"}');
    const extractive = await factsAnswered(harness, fake, model, extractiveSummarizer(shape));
    console.log(`facts answered: extractive ${extractive.answered}/30`);
    expect(extractive.answered).toBe(30);
    expect(extractive.retries).toBe(0);
    expect(await metric('ctxgate_summarization_runs_total{outcome="rejected"}')).toBe(rejectedBefore);
    expect(await metric('ctxgate_summarization_runs_total{outcome="stored"}')).toBeGreaterThan(4);
  }, 180_000);

  it('keeps ≥ 28 of 30 facts with a realistic summarizer that keeps about 70% of them', async () => {
    const realistic = await factsAnswered(
      harness,
      fake,
      model,
      paraphrasingSummarizer(shape, { loseShare: 0.3, seed: 5 }),
    );
    console.log(`facts answered: realistic ${realistic.answered}/30`);
    expect(realistic.answered).toBeGreaterThanOrEqual(28);
    expect(realistic.retries).toBe(0);
  }, 180_000);

  it('keeps ≥ 24 of 30 facts with a lossy summarizer that keeps about 40% of them', async () => {
    const lossy = await factsAnswered(
      harness,
      fake,
      model,
      paraphrasingSummarizer(shape, { loseShare: 0.6, seed: 11 }),
    );
    console.log(`facts answered: lossy ${lossy.answered}/30`);
    expect(lossy.answered).toBeGreaterThanOrEqual(24);
  }, 180_000);
});
