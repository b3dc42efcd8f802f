// The AI SDK 7 with @ai-sdk/openai 4's default provider, openai(model): the Responses API, as its users
// write it (no truncation, no store setting), a PDF attached as a file part. Driven by test/e2e/newest-clients.test.ts under Node 22.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { page, report } from './pages.mjs';

const { baseURL, model, scenario } = JSON.parse(process.argv[2]);
const openai = createOpenAI({ baseURL, apiKey: 'sk-newest-clients' });

/** Three turns; from the second on, the SDK sends its earlier answers as item_reference items. */
async function turns() {
  const messages = [];
  const seen = [];
  for (let turn = 1; turn <= 3; turn++) {
    messages.push({ role: 'user', content: `Turn ${turn}: name a code word.` });
    // include.requestBody only keeps the body in the result, for the test to see what the SDK sent.
    const result = await generateText({ model: openai(model), messages, maxRetries: 0, include: { requestBody: true } });
    const body = result.request.body;
    const input = (typeof body === 'string' ? JSON.parse(body) : body).input;
    seen.push({ text: result.text, itemReferences: input.filter((item) => item.type === 'item_reference').length });
    messages.push(...result.response.messages);
  }
  return { turns: seen };
}

/** One agent run of up to 30 steps, each reading a ~1,500-token page: far more than the window holds. */
async function loop() {
  const result = await generateText({
    model: openai(model),
    prompt: 'Task ai-sdk-loop: read the log page by page with read_page, then say how many pages you read.',
    maxRetries: 0,
    tools: {
      read_page: tool({
        description: 'Reads one page of the log.',
        inputSchema: jsonSchema({
          type: 'object',
          properties: { page: { type: 'number' } },
          required: ['page'],
        }),
        execute: async ({ page: number }) => page(number),
      }),
    },
    stopWhen: stepCountIs(30),
  });
  return {
    steps: result.steps.length,
    toolCalls: result.steps.reduce((sum, step) => sum + step.toolCalls.length, 0),
    text: result.text,
  };
}

/** A question about a PDF the user attaches (a file part, which the provider sends as input_file). */
async function pdf() {
  const { pdfBase64 } = JSON.parse(process.argv[2]);
  const result = await generateText({
    model: openai(model),
    maxRetries: 0,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Task ai-sdk-pdf: what does page 3 of the report say?' },
          { type: 'file', data: Buffer.from(pdfBase64, 'base64'), mediaType: 'application/pdf', filename: 'report.pdf' },
        ],
      },
    ],
  });
  return { text: result.text };
}

await report({ turns, loop, pdf }[scenario] ?? loop);
