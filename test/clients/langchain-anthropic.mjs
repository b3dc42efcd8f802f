// LangChain's ChatAnthropic (@langchain/anthropic), newest release, natively to Claude through the
// gateway: a tool loop with thinking on, streamed, the conversation its user keeps (the AIMessages as
// LangChain returns them), optionally under a gateway session; and a web search (Anthropic's server
// tool) it streams. Driven by test/e2e/newest-clients.test.ts under Node 22.
import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { page, report } from './pages.mjs';

const { baseURL, model, scenario, headers = {} } = JSON.parse(process.argv[2]);
const chat = new ChatAnthropic({
  model,
  apiKey: 'sk-newest-clients',
  anthropicApiUrl: baseURL.replace(/\/v1$/, ''),
  maxRetries: 0,
  maxTokens: 2_000,
  streaming: true,
  clientOptions: { defaultHeaders: headers },
  ...(scenario === 'thinking' ? { thinking: { type: 'enabled', budget_tokens: 1_024 } } : {}),
});

const readPage = {
  name: 'read_page',
  description: 'Reads one page of the log.',
  input_schema: { type: 'object', properties: { page: { type: 'number' } }, required: ['page'] },
};

/** Reads pages with read_page until the model answers. */
async function thinking() {
  const withTools = chat.bindTools([readPage]);
  const messages = [new HumanMessage('Task langchain-thinking: read pages 1 and 2 with read_page, then say what they hold.')];
  for (let step = 0; step < 4; step++) {
    const answer = await withTools.invoke(messages);
    messages.push(answer);
    if (answer.tool_calls.length === 0) return { steps: step + 1, text: answer.text };
    for (const call of answer.tool_calls)
      messages.push(new ToolMessage({ tool_call_id: call.id, content: page(call.args.page, 100) }));
  }
  return { steps: 4, text: 'no answer' };
}

/** A web search Claude runs itself (the web_search server tool), then a question about it. */
async function search() {
  const withSearch = chat.bindTools([{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }]);
  const messages = [new HumanMessage('Task langchain-search: when was ctxgate released?')];
  const answer = await withSearch.invoke(messages);
  messages.push(answer, new HumanMessage('Task langchain-search: and where did you read it?'));
  const second = await withSearch.invoke(messages);
  const blocks = Array.isArray(answer.content) ? answer.content.map((block) => block.type) : [typeof answer.content];
  return { blocks, text: answer.text, second: second.text };
}

await report({ thinking, search }[scenario] ?? thinking);
