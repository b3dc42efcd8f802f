// The Anthropic SDK's tool runner with Anthropic's client tools — bash (`bash_20250124`), the text editor
// (`text_editor_20250728`) and the SDK's own memory tool (`betaMemoryTool`, `memory_20250818`) — each
// run by the application, bridged onto a Chat Completions model. Asked to fix a README and remember it;
// reports the commands run, the files and memories written and the answer. Driven by
// test/e2e/newest-clients.test.ts under Node 22.
import Anthropic from '@anthropic-ai/sdk';
import { betaMemoryTool } from '@anthropic-ai/sdk/helpers/beta/memory';
import { report } from './pages.mjs';

const { baseURL, model } = JSON.parse(process.argv[2]);
const client = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey: 'sk-newest-clients', maxRetries: 0 });

const files = new Map([['README.md', 'Run the tests with npm test.\n']]);
const memories = new Map();
const commands = [];
const bash = {
  type: 'bash_20250124',
  name: 'bash',
  parse: (input) => input,
  run: async ({ command }) => {
    commands.push(command);
    return command === 'ls' ? [...files.keys()].sort().join('\n') : `bash: ${command}: command not found`;
  },
};
const editor = {
  type: 'text_editor_20250728',
  name: 'str_replace_based_edit_tool',
  parse: (input) => input,
  run: async ({ command, path, old_str: oldText, new_str: newText }) => {
    const text = files.get(path);
    if (command !== 'str_replace' || text === undefined || !text.includes(oldText)) return `Error: cannot ${command} ${path}`;
    files.set(path, text.replace(oldText, newText));
    return `Replaced in ${path}.`;
  },
};
const memory = betaMemoryTool({
  view: async () => [...memories.keys()].join('\n'),
  create: async ({ path, file_text: text }) => {
    memories.set(path, text);
    return `Saved ${path}.`;
  },
  str_replace: async () => 'Not used.',
  insert: async () => 'Not used.',
  delete: async () => 'Not used.',
  rename: async () => 'Not used.',
});

await report(async () => {
  const runner = client.beta.messages.toolRunner({
    model,
    max_tokens: 1_000,
    tools: [bash, editor, memory],
    messages: [{ role: 'user', content: 'Task client-tools: fix the README to say "npm run test", and remember it.' }],
  });
  for await (const _message of runner);
  const last = await runner.done();
  return {
    commands,
    files: Object.fromEntries(files),
    memories: Object.fromEntries(memories),
    text: last.content.filter((block) => block.type === 'text').map((block) => block.text).join(''),
  };
});
