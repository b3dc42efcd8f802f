// The facts scenario of the summary-fidelity test and the fidelity bench: a 300-turn session in which
// the user states a fact every 10 turns (numbered turns, the fact in a numbered list: incidental numbers
// a real summarizer drops) and pastes a README excerpt every 10 (more identifiers than any summary
// keeps), then asks one question per fact; the fake model answers from what its prompt holds.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { FakeUpstream } from './fake-upstream.js';
import type { FactShape, Summarizer } from './fake-summarizers.js';
import type { GatewayHarness } from './start-gateway.js';
import { textOf } from './text.js';

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
export const codeFor = (fact: number): string => `K${fact}-${((fact * 7_919 + 104_729) % 90_000) + 10_000}`;

export const shape: FactShape = {
  find(sentence) {
    const match = /access code for vault (\d+) is (K\d+-\d+)/.exec(sentence);
    return match === null ? undefined : { key: match[1] as string, value: match[2] as string };
  },
  restate: (key, value) => `Vault ${key} opens with code ${value}.`,
};

/** The fake model: a vault's code when its prompt holds it, in whatever words; else filler. */
export function answerFromPrompt(messages: ReadonlyArray<{ role: string; content?: unknown }>): string {
  const question = /What is the access code for vault (\d+)\?/.exec(textOf(messages.at(-1)?.content));
  if (question === null) return `Noted. ${filler(30, messages.length)}`;
  const code = new RegExp(`\\bK${question[1]}-\\d{5}\\b`);
  for (const message of messages) {
    const found = code.exec(textOf(message.content));
    if (found !== null) return `The access code for vault ${question[1]} is ${found[0]}.`;
  }
  return 'I do not know that code.';
}

/** 300 numbered turns with a fact every 10, then a question per fact; the number answered right. */
export async function factsAnswered(
  harness: GatewayHarness,
  fake: FakeUpstream,
  model: string,
  summarizer: Summarizer,
): Promise<{ answered: number; retries: number }> {
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
