// The OpenAI Agents SDK with a tool that returns a picture (the SDK's image tool output, which its
// Responses model sends as an input_image in the function_call_output), asked what the picture shows.
// Driven by test/e2e/newest-clients.test.ts under Node 22.
import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { report } from './pages.mjs';

const { baseURL, model, picture } = JSON.parse(process.argv[2]);
setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey: 'sk-newest-clients', maxRetries: 0 });

const agent = new Agent({
  name: 'Looker',
  instructions: 'Take a screenshot with the screenshot tool, then say how big it is.',
  model: new OpenAIResponsesModel(client, model),
  tools: [
    tool({
      name: 'screenshot',
      description: 'Takes a screenshot of the screen.',
      parameters: z.object({}),
      execute: async () => ({ type: 'image', image: `data:image/png;base64,${picture}` }),
    }),
  ],
});

await report(async () => {
  const result = await run(agent, 'Task agents-picture: how big is the screenshot?');
  return { answer: result.finalOutput };
});
