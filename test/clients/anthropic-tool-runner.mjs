// The Anthropic SDK's tool runner (client.beta.messages.toolRunner), newest release, bridged onto a Chat
// Completions model: the model calls a tool, the runner adds another mid-conversation (addTools: a
// system message of a tool_addition), the model calls that one, then the runner compacts the
// conversation (compactBeforeNextTurn: an on-demand compaction) and the model answers from the summary.
// Driven by test/e2e/newest-clients.test.ts under Node 22.
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { report } from './pages.mjs';

const { baseURL, model } = JSON.parse(process.argv[2]);
const client = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey: 'sk-newest-clients', maxRetries: 0 });

const note = betaTool({
  name: 'note',
  description: 'Notes what the user asked.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  run: async () => 'Noted.',
});
const lookup = betaTool({
  name: 'lookup',
  description: 'Looks a record up by its id.',
  inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  run: async ({ id }) => `Record ${id}: ACME-7.`,
});

await report(async () => {
  const runner = client.beta.messages.toolRunner({
    model,
    max_tokens: 1_000,
    tools: [note],
    messages: [{ role: 'user', content: 'Task tool-runner: note my request, then look up record X1.' }],
  }, { headers: { 'anthropic-beta': 'inline-tools-2026-09-15,compact-2026-09-04' } });
  const seen = [];
  for await (const message of runner) {
    const calls = message.content.filter((block) => block.type === 'tool_use').map((block) => block.name);
    seen.push({ stop: message.stop_reason, calls, types: message.content.map((block) => block.type) });
    if (calls.includes('note')) runner.addTools(lookup);
    if (calls.includes('lookup')) runner.compactBeforeNextTurn();
  }
  const last = await runner.done();
  return { seen, text: last.content.filter((block) => block.type === 'text').map((block) => block.text).join('') };
});
