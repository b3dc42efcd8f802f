// The official openai client, newest major: a chat completion, a stream and a two-turn Responses chain.
// Driven by test/e2e/newest-clients.test.ts under Node 22.
import OpenAI from 'openai';
import { VERSION as version } from 'openai/version';
import { report } from './pages.mjs';

const { baseURL, model } = JSON.parse(process.argv[2]);
const client = new OpenAI({ baseURL, apiKey: 'sk-newest-clients', maxRetries: 0 });

await report(async () => {
  const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello.' }] });
  let streamed = '';
  const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello.' }], stream: true });
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
  const first = await client.responses.create({ model, input: 'Remember the word Larkspur.' });
  const second = await client.responses.create({ model, input: 'Which word?', previous_response_id: first.id });
  return { version, chat: chat.choices[0]?.message.content, streamed, first: first.output_text, second: second.output_text };
});
