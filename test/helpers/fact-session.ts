// The facts scenario of the summary-fidelity test and the fidelity bench: a 300-turn session in which
// the user states a fact every 10 turns (numbered turns, the fact in a numbered list: incidental numbers
// a real summarizer drops) and pastes a README excerpt every 10 (more identifiers than any summary
// keeps), then asks one question per fact; the fake model answers from what its prompt holds.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { Behaviour, ChatMessage, FakeUpstream } from './fake-upstream.js';
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

/** The fake model: a vault's code when its prompt holds it (a tool's result included), in whatever words; else filler. */
export function answerFromPrompt(messages: ReadonlyArray<{ role: string; content?: unknown }>): string {
  // The question is the last user message (a tool's result may follow it: the model looked it up).
  const asked = messages.findLast((message) => message.role === 'user');
  const question = /What is the access code for vault (\d+)\?/.exec(textOf(asked?.content));
  if (question === null) return `Noted. ${filler(30, messages.length)}`;
  const code = new RegExp(`\\bK${question[1]}-\\d{5}\\b`);
  for (const message of messages) {
    const found = code.exec(textOf(message.content));
    if (found !== null) return `The access code for vault ${question[1]} is ${found[0]}.`;
  }
  return 'I do not know that code.';
}

/**
 * The fake model where the recall tool is offered (docs/budgeting.md#recall): asked for a vault's code
 * its prompt does not hold, it searches for it once, as a model that knows it can look things up does;
 * with the result (or without the tool) it answers as answerFromPrompt.
 */
export function searchingModel(
  messages: ReadonlyArray<ChatMessage>,
  body: Record<string, unknown>,
): Behaviour | undefined {
  const question = /What is the access code for vault (\d+)\?/.exec(textOf(messages.at(-1)?.content));
  const offered =
    Array.isArray(body.tools) &&
    (body.tools as Array<{ function?: { name?: string } }>).some(
      (tool) => tool.function?.name === 'ctxgate_recall',
    );
  if (question === null || !offered) return undefined;
  const code = new RegExp(`\\bK${question[1]}-\\d{5}\\b`);
  if (messages.some((message) => code.test(textOf(message.content)))) return undefined;
  return {
    toolCalls: [
      {
        id: `call_recall_${randomUUID().slice(0, 8)}`,
        name: 'ctxgate_recall',
        arguments: JSON.stringify({ query: `access code vault ${question[1]}` }),
      },
    ],
  };
}

/** 300 numbered turns with a fact every 10, then a question per fact; the number answered right. */
export async function factsAnswered(
  harness: GatewayHarness,
  fake: FakeUpstream,
  model: string,
  summarizer: Summarizer,
  headers: Record<string, string> = {},
): Promise<{ answered: number; retries: number }> {
  fake.setSummarizer(summarizer);
  const client = new OpenAI({
    baseURL: harness.baseUrl,
    apiKey: 'sk-fidelity',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': `fidelity-${randomUUID()}`, ...headers },
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
