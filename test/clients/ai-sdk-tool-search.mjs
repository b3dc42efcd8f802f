// The AI SDK 7's tool search with @ai-sdk/openai 4: a catalog of tools it defers (`deferLoading`), which
// the model loads with `openai.tools.toolSearch()`, run by OpenAI. Driven by
// test/e2e/newest-clients.test.ts under Node 22.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { report } from './pages.mjs';

const { baseURL, model } = JSON.parse(process.argv[2]);
const openai = createOpenAI({ baseURL, apiKey: 'sk-newest-clients' });

const lookup = (kind) =>
  tool({
    description: `Looks up a record of kind ${kind} in the inventory by its id.`,
    inputSchema: jsonSchema({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }),
    providerOptions: { openai: { deferLoading: true } },
    execute: async ({ id }) => `record ${id} of kind ${kind}: ACME-${id}-${kind}`,
  });

await report(async () => {
  const result = await generateText({
    model: openai(model),
    prompt: 'Look up record X1 of kind 7.',
    maxRetries: 0,
    tools: {
      tool_search: openai.tools.toolSearch(),
      ...Object.fromEntries(Array.from({ length: 12 }, (_unused, kind) => [`lookup_${kind}`, lookup(kind)])),
    },
    stopWhen: stepCountIs(5),
  });
  return {
    text: result.text,
    steps: result.steps.map((step) => step.content.map((part) => part.type).join(',')),
  };
});
