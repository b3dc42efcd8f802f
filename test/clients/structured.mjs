// Structured output (an answer that follows a schema) with the newest clients, as their users write it, on
// a model of the other wire: the Agents SDK's `outputType` with its Responses model and with its Chat
// Completions model, LangChain's `withStructuredOutput` (JSON Schema), and the AI SDK's Anthropic provider
// (`Output.object`, Claude's `output_config.format`). Driven by test/e2e/newest-clients.test.ts under Node 22.
import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, run, setTracingDisabled } from '@openai/agents';
import { generateText, Output } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { report } from './pages.mjs';

const { baseURL, model, scenario } = JSON.parse(process.argv[2]);
setTracingDisabled(true);
const apiKey = 'sk-newest-clients';
const prompt = 'Task structured-trip: plan three days in Lisbon.';
const trip = z.object({
  city: z.string().min(2),
  days: z.int().min(1).max(14),
  stops: z.array(z.string()).max(6),
});

/** The Agents SDK's agent whose final output is a trip, with the model of `api`. */
async function agents(api) {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  const agent = new Agent({
    name: 'Planner',
    instructions: 'Plan the trip the user asks for.',
    model: api === 'responses' ? new OpenAIResponsesModel(client, model) : new OpenAIChatCompletionsModel(client, model),
    outputType: trip,
  });
  const result = await run(agent, prompt);
  return { output: result.finalOutput };
}

/** LangChain's ChatOpenAI asked for a trip by JSON Schema. */
async function langchain() {
  const chat = new ChatOpenAI({ model, apiKey, configuration: { baseURL }, maxRetries: 0 });
  const output = await chat.withStructuredOutput(trip, { method: 'jsonSchema', name: 'trip' }).invoke(prompt);
  return { output };
}

/** The AI SDK's Anthropic provider asked for a trip, as Claude's structured output. */
async function aiSdkAnthropic() {
  const anthropic = createAnthropic({ baseURL, apiKey });
  const result = await generateText({
    model: anthropic(model),
    prompt,
    maxRetries: 0,
    output: Output.object({ schema: trip }),
    providerOptions: { anthropic: { structuredOutputMode: 'outputFormat' } },
  });
  return { output: result.output };
}

await report(
  {
    'agents-responses': () => agents('responses'),
    'agents-chat': () => agents('chat'),
    langchain,
    'ai-sdk-anthropic': aiSdkAnthropic,
  }[scenario],
);
