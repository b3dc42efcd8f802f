// The AI SDK 7's coding tools with @ai-sdk/openai 4: `openai.tools.shell` and `openai.tools.applyPatch`,
// which the Responses API defines and the application runs (its `execute`), streamed. Asked to list the
// files and write a note; reports the text, the commands run and the files written. Driven by
// test/e2e/newest-clients.test.ts under Node 22.
import { createOpenAI } from '@ai-sdk/openai';
import { applyDiff } from '@openai/agents';
import { stepCountIs, streamText } from 'ai';
import { report } from './pages.mjs';

const { baseURL, model } = JSON.parse(process.argv[2]);
const openai = createOpenAI({ baseURL, apiKey: 'sk-newest-clients' });

const files = new Map([['README.md', 'Run the tests with npm test.\n']]);
const commands = [];
const ran = (command) => {
  commands.push(command);
  if (command === 'ls') return { stdout: `${[...files.keys()].sort().join('\n')}\n`, stderr: '', outcome: { type: 'exit', exitCode: 0 } };
  const text = command.startsWith('cat ') ? files.get(command.slice(4)) : undefined;
  return text === undefined
    ? { stdout: '', stderr: `${command}: failed\n`, outcome: { type: 'exit', exitCode: 1 } }
    : { stdout: text, stderr: '', outcome: { type: 'exit', exitCode: 0 } };
};

await report(async () => {
  const result = streamText({
    model: openai(model),
    prompt: 'Task ai-sdk-shell: list the files, fix the README to say "npm run test", and write notes.txt.',
    maxRetries: 0,
    tools: {
      shell: openai.tools.shell({ execute: async ({ action }) => ({ output: action.commands.map(ran) }) }),
      apply_patch: openai.tools.applyPatch({
        execute: async ({ operation }) => {
          if (operation.type === 'delete_file') files.delete(operation.path);
          else if (operation.type === 'create_file') files.set(operation.path, applyDiff('', operation.diff, 'create'));
          else files.set(operation.path, applyDiff(files.get(operation.path) ?? '', operation.diff));
          return { status: 'completed', output: `${operation.type === 'create_file' ? 'Created' : 'Updated'} ${operation.path}` };
        },
      }),
    },
    stopWhen: stepCountIs(5),
  });
  const text = await result.text;
  return { text, commands, files: Object.fromEntries(files) };
});
