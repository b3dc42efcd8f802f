// The AI SDK 7 with @ai-sdk/anthropic 4, natively to Claude through the gateway as its users write it:
// a conversation the app keeps whose earlier context Claude compacts (`contextManagement` edit
// `compact_20260112`, streamText, the response messages appended every turn), and a tool loop with
// thinking on (`thinking: {type: 'enabled'}`), optionally under a gateway session; and, on any model, a
// compaction asked on demand (the `compaction` option) and the conversation going on from it, and a
// deferred tool a mid-conversation tool change surfaces (`toolChanges`). Driven by
// test/e2e/newest-clients.test.ts under Node 22.
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { page, report } from './pages.mjs';

const { baseURL, model, scenario, turns = 12, trigger = 9_000, headers = {} } = JSON.parse(process.argv[2]);
const anthropic = createAnthropic({ baseURL, apiKey: 'sk-newest-clients', headers });

/** Turns of a conversation the app keeps; Claude compacts its earlier context past the trigger. */
async function compaction() {
  const messages = [];
  const seen = [];
  for (let turn = 1; turn <= turns; turn++) {
    messages.push({ role: 'user', content: `Fact ${turn}: room ${turn} has code R${turn * 7}. ${page(turn, 1_200)}` });
    const result = streamText({
      model: anthropic(model),
      messages,
      maxRetries: 0,
      providerOptions: {
        anthropic: {
          contextManagement: {
            edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: trigger } }],
          },
        },
      },
    });
    const text = await result.text;
    const response = await result.response;
    const compacted = response.messages.some(
      (message) =>
        Array.isArray(message.content) &&
        message.content.some((part) => part.providerOptions?.anthropic?.type === 'compaction'),
    );
    seen.push({ text, compacted });
    messages.push(...response.messages);
  }
  return { turns: seen };
}

/** A tool loop with thinking on: Claude thinks, calls read_page, and answers from what it read. */
async function thinking() {
  const result = await generateText({
    model: anthropic(model),
    prompt: 'Task ai-sdk-thinking: read pages 1 and 2 with read_page, then say what they hold.',
    maxRetries: 0,
    providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1_024 } } },
    tools: {
      read_page: tool({
        description: 'Reads one page of the log.',
        inputSchema: jsonSchema({ type: 'object', properties: { page: { type: 'number' } }, required: ['page'] }),
        execute: async ({ page: number }) => page(number, 100),
      }),
    },
    stopWhen: stepCountIs(5),
  });
  return { steps: result.steps.length, text: result.text };
}

/**
 * A compaction asked on demand (the `compaction` option), then the conversation going on from the summary
 * alone, as the provider's documentation writes it.
 */
async function onDemand() {
  const history = [
    { role: 'user', content: 'Task ai-sdk-on-demand: I plan a trip to Lisbon in May, on 1,800 euros.' },
    { role: 'assistant', content: 'Noted: Lisbon in May.' },
    { role: 'user', content: 'I prefer Alfama.' },
  ];
  const summary = await generateText({
    model: anthropic(model),
    messages: history,
    maxRetries: 0,
    providerOptions: { anthropic: { compaction: { type: 'summarize' } } },
  });
  if (summary.rawFinishReason !== 'compaction') return { finish: summary.rawFinishReason, text: summary.text };
  const [compactionMessage] = summary.finalStep.response.messages;
  const continuation = await generateText({
    model: anthropic(model),
    maxRetries: 0,
    messages: [compactionMessage, { role: 'user', content: 'Task ai-sdk-on-demand: where do I stay?' }],
  });
  return { finish: summary.rawFinishReason, summary: summary.text, text: continuation.text };
}

/**
 * A deferred tool (`deferLoading`) surfaced by a mid-conversation tool change (the `toolChanges` of a
 * system message, by reference), as the provider's documentation writes it; the model calls it.
 */
async function toolChanges() {
  const result = await generateText({
    model: anthropic(model),
    maxRetries: 0,
    allowSystemInMessages: true,
    messages: [
      { role: 'user', content: 'Task ai-sdk-tool-changes: look up record X1.' },
      {
        role: 'system',
        content: '',
        providerOptions: { anthropic: { toolChanges: [{ type: 'tool_addition', toolName: 'lookup' }] } },
      },
    ],
    tools: {
      lookup: tool({
        description: 'Looks a record up by its id.',
        inputSchema: jsonSchema({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }),
        execute: async ({ id }) => `Record ${id}: ACME-7.`,
        providerOptions: { anthropic: { deferLoading: true } },
      }),
    },
    stopWhen: stepCountIs(3),
  });
  return { steps: result.steps.length, text: result.text };
}

await report({ compaction, thinking, onDemand, toolChanges }[scenario] ?? thinking);
