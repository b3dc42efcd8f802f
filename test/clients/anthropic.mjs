// The Anthropic SDK, newest release, bridged onto a Chat Completions model: many turns of a
// conversation its user keeps (the messages array), each turn a tool_use and an answer, every other
// turn streamed; or one prompt too long for the model, which its user catches as a 400. Defaults
// otherwise. Driven by test/e2e/newest-clients.test.ts under Node 22.
import Anthropic from '@anthropic-ai/sdk';
import { VERSION as version } from '@anthropic-ai/sdk/version';
import { page, report } from './pages.mjs';

const { baseURL, model, turns, scenario } = JSON.parse(process.argv[2]);
const client = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey: 'sk-newest-clients', maxRetries: 0 });

const readPage = {
  name: 'read_page',
  description: 'Reads one page of the log.',
  input_schema: { type: 'object', properties: { page: { type: 'number' } }, required: ['page'] },
};

await report(async () => {
  if (scenario === 'overflow') {
    await client.messages.create({
      model,
      max_tokens: 256,
      messages: [{ role: 'user', content: `Summarize this. ${page(1, 30_000)}` }],
    });
    return { answered: true };
  }
  const messages = [];
  const answers = [];
  for (let turn = 1; turn <= turns; turn++) {
    messages.push({ role: 'user', content: `Task agents-anthropic: read page ${turn}.` });
    for (let step = 0; step < 3; step++) {
      const request = { model, max_tokens: 256, tools: [readPage], messages };
      const answer =
        turn % 2 === 0 ? await client.messages.stream(request).finalMessage() : await client.messages.create(request);
      messages.push({ role: 'assistant', content: answer.content });
      const calls = answer.content.filter((block) => block.type === 'tool_use');
      if (calls.length === 0) {
        answers.push(answer.content.map((block) => (block.type === 'text' ? block.text : '')).join(''));
        break;
      }
      messages.push({
        role: 'user',
        content: calls.map((call) => ({ type: 'tool_result', tool_use_id: call.id, content: page(call.input.page) })),
      });
    }
  }
  return { answers, version };
});
