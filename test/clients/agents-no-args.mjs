// The OpenAI Agents SDK running a tool that takes no arguments (a listing, an MCP server's `health`), with
// its Chat Completions model or its Responses model, whole or streamed. Many providers give such a call's
// arguments as "" rather than "{}" (OpenRouter's Claude, Bedrock, Ollama), which the SDK parses as JSON
// (openai/openai-agents-js#664). Driven by test/e2e/empty-arguments.test.ts under Node 22.
import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { report } from './pages.mjs';

const { baseURL, model, api, stream } = JSON.parse(process.argv[2]);
setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey: 'sk-no-args', maxRetries: 0 });

const ran = [];
const agent = new Agent({
  name: 'Lister',
  instructions: 'List the files with list_files, then say what they are.',
  model: api === 'responses' ? new OpenAIResponsesModel(client, model) : new OpenAIChatCompletionsModel(client, model),
  tools: [
    tool({
      name: 'list_files',
      description: 'Lists the files of the project.',
      parameters: z.object({}),
      execute: async (input) => {
        ran.push(input);
        return 'a.ts, b.ts';
      },
    }),
  ],
});

await report(async () => {
  const result = await run(agent, 'Which files are there?', stream ? { stream: true } : {});
  if (stream) {
    for await (const _event of result) {
      // Read to the end.
    }
    await result.completed;
  }
  return { answer: result.finalOutput, ran };
});
