// LangChain's ChatOpenAI, newest release (on openai 7), with its Chat Completions API or, with
// `useResponsesApi`, the Responses API: many turns of a conversation its user keeps (the messages
// array), each turn a tool call and an answer; or one prompt too long for the model, which its user
// catches as LangChain's ContextOverflowError. Defaults otherwise. Driven by
// test/e2e/newest-clients.test.ts under Node 22.
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { page, report } from './pages.mjs';

const { baseURL, model, api, turns, scenario } = JSON.parse(process.argv[2]);
const chat = new ChatOpenAI({
  model,
  apiKey: 'sk-newest-clients',
  maxRetries: 0,
  useResponsesApi: api === 'responses',
  configuration: { baseURL },
});

const readPage = {
  type: 'function',
  function: {
    name: 'read_page',
    description: 'Reads one page of the log.',
    parameters: { type: 'object', properties: { page: { type: 'number' } }, required: ['page'] },
  },
};

await report(async () => {
  if (scenario === 'overflow') {
    await chat.invoke([new HumanMessage(`Summarize this. ${page(1, 30_000)}`)]);
    return { answered: true };
  }
  const withTools = chat.bindTools([readPage]);
  const messages = [];
  const answers = [];
  for (let turn = 1; turn <= turns; turn++) {
    messages.push(new HumanMessage(`Task agents-langchain${api}: read page ${turn}.`));
    for (let step = 0; step < 3; step++) {
      const answer = await withTools.invoke(messages);
      messages.push(answer);
      if (!answer.tool_calls?.length) {
        answers.push(String(answer.text ?? answer.content));
        break;
      }
      for (const call of answer.tool_calls)
        messages.push(new ToolMessage({ content: page(call.args.page), tool_call_id: call.id }));
    }
  }
  return { answers };
});
