// The OpenAI Agents SDK's tool search: an agent with a catalog of tools it defers (`deferLoading`), which
// the model loads with `toolSearchTool()` — run by OpenAI (the default) or, with `execution: 'client'`,
// by the SDK's own loader (`{ paths }`). The SDK refuses a call of a deferred tool that was not loaded
// ("Model produced deferred function call … before it was loaded via tool_search"). Driven by
// test/e2e/newest-clients.test.ts under Node 22.
import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool, toolSearchTool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { report } from './pages.mjs';

const { baseURL, model, execution } = JSON.parse(process.argv[2]);
setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey: 'sk-newest-clients', maxRetries: 0 });

const lookup = (kind) =>
  tool({
    name: `lookup_${kind}`,
    description: `Looks up a record of kind ${kind} in the inventory by its id.`,
    parameters: z.object({ id: z.string() }),
    deferLoading: true,
    execute: async ({ id }) => `record ${id} of kind ${kind}: ACME-${id}-${kind}`,
  });

const agent = new Agent({
  name: 'Clerk',
  instructions: 'Look up the records the user asks for.',
  model: new OpenAIResponsesModel(client, model),
  tools: [
    toolSearchTool(execution === 'client' ? { execution: 'client' } : {}),
    ...Array.from({ length: 12 }, (_unused, kind) => lookup(kind)),
  ],
});

await report(async () => {
  const result = await run(agent, 'Look up record X1 of kind 7.');
  return { answer: result.finalOutput, items: result.newItems.map((item) => item.type) };
});
