// The OpenAI Agents SDK's coding agent: its local shell tool (`shellTool`, a Shell that runs the commands
// it is given) and its apply_patch tool (`applyPatchTool`, an Editor that applies V4A diffs with the SDK's
// own `applyDiff`), both of which the Responses API defines and the client runs. Asked to list the files
// and write a note; reports the answer, the commands the shell ran and the files the editor holds.
// Driven by test/e2e/newest-clients.test.ts under Node 22.
import { Agent, OpenAIResponsesModel, applyDiff, applyPatchTool, run, setTracingDisabled, shellTool } from '@openai/agents';
import OpenAI from 'openai';
import { report } from './pages.mjs';

const { baseURL, model, stream } = JSON.parse(process.argv[2]);
setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey: 'sk-newest-clients', maxRetries: 0 });

// A workspace in memory: what the shell lists, what the editor writes.
const files = new Map([['README.md', 'Run the tests with npm test.\n']]);
const commands = [];
const shell = {
  async run(action) {
    return {
      output: action.commands.map((command) => {
        commands.push(command);
        if (command === 'ls') return { stdout: `${[...files.keys()].sort().join('\n')}\n`, stderr: '', outcome: { type: 'exit', exitCode: 0 } };
        if (command.startsWith('cat ')) {
          const text = files.get(command.slice(4));
          return text === undefined
            ? { stdout: '', stderr: `cat: ${command.slice(4)}: No such file or directory\n`, outcome: { type: 'exit', exitCode: 1 } }
            : { stdout: text, stderr: '', outcome: { type: 'exit', exitCode: 0 } };
        }
        return { stdout: '', stderr: `${command}: command not found\n`, outcome: { type: 'exit', exitCode: 127 } };
      }),
    };
  },
};
const editor = {
  async createFile(operation) {
    files.set(operation.path, applyDiff('', operation.diff, 'create'));
    return { status: 'completed', output: `Created ${operation.path}` };
  },
  async updateFile(operation) {
    const text = files.get(operation.path);
    if (text === undefined) return { status: 'failed', output: `No file ${operation.path}` };
    files.set(operation.path, applyDiff(text, operation.diff));
    return { status: 'completed', output: `Updated ${operation.path}` };
  },
  async deleteFile(operation) {
    files.delete(operation.path);
    return { status: 'completed', output: `Deleted ${operation.path}` };
  },
};

const agent = new Agent({
  name: 'Coder',
  instructions: 'You are a coding agent. Use the shell to look around and apply_patch to edit files.',
  model: new OpenAIResponsesModel(client, model),
  tools: [shellTool({ shell }), applyPatchTool({ editor })],
});

await report(async () => {
  const task = 'Task agents-shell: list the files, fix the README to say "npm run test", and write notes.txt.';
  if (stream) {
    const result = await run(agent, task, { stream: true });
    for await (const _event of result);
    await result.completed;
    return { answer: result.finalOutput, commands, files: Object.fromEntries(files) };
  }
  const result = await run(agent, task);
  return { answer: result.finalOutput, commands, files: Object.fromEntries(files) };
});
