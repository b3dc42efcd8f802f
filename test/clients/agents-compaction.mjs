// The OpenAI Agents SDK's compaction session (OpenAIResponsesCompactionSession, its defaults) over turns
// of a conversation, each turn a tool call and an answer: after each turn it asks POST
// /v1/responses/compact once its history holds ten items or more, and keeps what that answers (the user's
// messages and a compaction item) in place of the history: by default naming the last response
// (previous_response_id), or, with compactionMode 'input', sending the history. Driven by test/e2e/newest-clients.test.ts.
import { Agent, MemorySession, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import { OpenAIResponsesCompactionSession } from '@openai/agents-openai';
import OpenAI from 'openai';
import { z } from 'zod';
import { page, report } from './pages.mjs';

const { baseURL, model, turns, compactionMode } = JSON.parse(process.argv[2]);
setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey: 'sk-newest-clients', maxRetries: 0 });
const session = new OpenAIResponsesCompactionSession({
  client,
  model,
  underlyingSession: new MemorySession(),
  ...(compactionMode === undefined ? {} : { compactionMode }),
});

const agent = new Agent({
  name: 'Reader',
  instructions: 'Read the page the user asks for with read_page, then say you read it.',
  model: new OpenAIResponsesModel(client, model),
  tools: [
    tool({
      name: 'read_page',
      description: 'Reads one page of the log.',
      parameters: z.object({ page: z.number() }),
      execute: async ({ page: number }) => page(number, 300),
    }),
  ],
});

await report(async () => {
  const answers = [];
  for (let turn = 1; turn <= turns; turn++) {
    const result = await run(agent, `Task agents-compaction: read page ${turn}.`, { session });
    answers.push(result.finalOutput);
  }
  const items = await session.getItems();
  return { answers, items: items.map((item) => (item.type === 'message' ? `message:${item.role}` : item.type)) };
});
