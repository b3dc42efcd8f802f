// The OpenAI Agents SDK with its Responses model or its Chat Completions model, over many turns of a
// conversation its user keeps (result.history), each turn a tool call and an answer. Defaults only: no
// truncation. Driven by test/e2e/newest-clients.test.ts under Node 22.
import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { page, report } from './pages.mjs';

const { baseURL, model, api, turns } = JSON.parse(process.argv[2]);
setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey: 'sk-newest-clients', maxRetries: 0 });

const agent = new Agent({
  name: 'Reader',
  instructions: 'Read the page the user asks for with read_page, then say you read it.',
  model: api === 'responses' ? new OpenAIResponsesModel(client, model) : new OpenAIChatCompletionsModel(client, model),
  tools: [
    tool({
      name: 'read_page',
      description: 'Reads one page of the log.',
      parameters: z.object({ page: z.number() }),
      execute: async ({ page: number }) => page(number),
    }),
  ],
});

await report(async () => {
  let history = [];
  const answers = [];
  for (let turn = 1; turn <= turns; turn++) {
    const result = await run(agent, [...history, { role: 'user', content: `Task agents-${api}: read page ${turn}.` }]);
    answers.push(result.finalOutput);
    history = result.history;
  }
  return { answers, historyItems: history.length };
});
