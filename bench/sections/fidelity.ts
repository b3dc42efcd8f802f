// Bench section "fidelity" (issue "Context fidelity"): how well the context engine uses the window and
// counts what the provider counts. Figures only; nothing asserted.
// - fill (prompt + reserve over window) over 500 generated conversations on 8,192 tokens;
// - the share of consecutive requests sharing the whole previous prompt in a 300-turn session;
// - estimate error per request shape against a provider counting its own way (tools as JSON);
// - POST /v1/context/render against what the chat request then sent;
// - facts recalled after 300 summarized turns, per summarizer (ideal, realistic ~70%, lossy ~40%);
// - agent loops (stateless and delta sessions, 8,192, 32,768 and 131,072 tokens): prefix reuse beside
//   what any schedule could reach, over-masking, the summarizer's share of prompt tokens, and headers
//   that account for every message once; and loops of several tasks in one stateless conversation: how
//   often the history start moves backwards.
import OpenAI from 'openai';
import { renderContext } from '../../src/context/render.js';
import type { ContextMessage } from '../../src/context/types.js';
import { builtInPolicy } from '../../src/config/policy-defaults.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { FakeUpstream, isSummaryRequest, type ChatMessage } from '../../test/helpers/fake-upstream.js';
import { startGateway } from '../../test/helpers/start-gateway.js';
import { prose, seeded } from '../../test/helpers/text.js';
import { extractiveSummarizer, paraphrasingSummarizer } from '../../test/helpers/fake-summarizers.js';
import { answerFromPrompt, factsAnswered, searchingModel, shape } from '../../test/helpers/fact-session.js';
import { agentLoopFigures } from '../lib/agent-loop-figures.js';

function conversation(random: () => number): ContextMessage[] {
  const between = (low: number, high: number): number => low + Math.floor(random() * (high - low + 1));
  const messages: ContextMessage[] = [{ role: 'system', content: 'You are a careful assistant.' }];
  let ids = 0;
  for (let turn = between(8, 60); turn > 0; turn--) {
    if (random() < 0.6) {
      messages.push({
        role: 'user',
        content: `${random() < 0.1 ? '[pin] ' : ''}${prose(between(5, 400), turn)}`,
      });
      messages.push({ role: 'assistant', content: prose(between(5, 500), turn + 1) });
      continue;
    }
    messages.push({ role: 'user', content: prose(between(5, 200), turn) });
    for (let step = between(1, 4); step > 0; step--) {
      const id = `call_${++ids}`;
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'search', arguments: '{}' } }],
      });
      messages.push({
        role: 'tool',
        tool_call_id: id,
        content: prose(random() < 0.3 ? between(800, 4_000) : between(10, 300), step),
      });
    }
    messages.push({ role: 'assistant', content: prose(60, turn) });
  }
  messages.push({ role: 'user', content: prose(between(5, 120), 3) });
  return messages;
}

/** A tool set of one shape: flat, nested `depth` levels, enums, arrays of objects, anyOf. */
function toolSetOf(
  shape: 'flat' | 'nested' | 'enums' | 'arrays of objects' | 'anyOf',
): OpenAI.ChatCompletionTool[] {
  const nested = (depth: number): Record<string, unknown> =>
    depth === 0
      ? { type: 'string', description: 'A leaf value.' }
      : {
          type: 'object',
          description: `Level ${depth}.`,
          properties: { [`level_${depth}`]: nested(depth - 1), note: { type: 'string' } },
        };
  const parameters: Record<string, Record<string, unknown>> = {
    flat: {
      path: { type: 'string', description: 'Where.' },
      depth: { type: 'integer' },
      force: { type: 'boolean' },
    },
    nested: { root: nested(4) },
    enums: {
      unit: { type: 'string', enum: ['celsius', 'fahrenheit', 'kelvin'] },
      mode: { type: 'string', enum: ['fast', 'slow'] },
    },
    'arrays of objects': {
      items: {
        type: 'array',
        items: {
          type: 'object',
          properties: { id: { type: 'string' }, qty: { type: 'number' } },
          required: ['id'],
        },
      },
    },
    anyOf: {
      value: {
        anyOf: [
          { type: 'string' },
          { type: 'number' },
          { type: 'object', properties: { raw: { type: 'string' } } },
        ],
      },
    },
  };
  return Array.from({ length: 5 }, (_unused, index) => ({
    type: 'function',
    function: {
      name: `${shape.replaceAll(' ', '_')}_${index}`,
      description: `A ${shape} tool, number ${index}.`,
      parameters: { type: 'object', properties: parameters[shape] as Record<string, unknown>, required: [] },
    },
  }));
}

/** An agent's messages: `steps` steps of one to three parallel calls, each with its result. */
function toolCallConversation(steps: number): OpenAI.ChatCompletionMessageParam[] {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: prose(40, 9) }];
  for (let step = 0; step < steps; step++) {
    const calls = Array.from({ length: 1 + (step % 3) }, (_unused, index) => ({
      id: `call_${step}_${index}_Xk2b9QmZ`,
      type: 'function' as const,
      function: {
        name: 'read_file',
        arguments: JSON.stringify({ path: `/src/module_${step}_${index}.ts`, lines: [1, 80] }),
      },
    }));
    messages.push({ role: 'assistant', content: null, tool_calls: calls });
    for (const call of calls)
      messages.push({ role: 'tool', tool_call_id: call.id, content: prose(30, step) });
  }
  messages.push({ role: 'user', content: 'What did you find?' });
  return messages;
}

const percentile = (sorted: number[], share: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] as number;

export async function fidelitySection(): Promise<void> {
  console.log('\n== fidelity ==');
  // Fill.
  const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');
  const random = seeded(14);
  for (const reserve of ['default 4096', '256-2048'] as const) {
    const fills: number[] = [];
    for (let index = 0; index < 500; index++) {
      const outputReserve = reserve === 'default 4096' ? 4_096 : 256 + Math.floor(random() * 1_793);
      const outcome = renderContext({
        messages: conversation(random),
        tokenizer,
        window: 8_192,
        outputReserve,
        safetyMarginTokens: 410,
        policy: builtInPolicy,
      });
      if (outcome.ok) fills.push((outcome.report.inputTokens + outputReserve) / 8_192);
    }
    fills.sort((a, b) => a - b);
    console.log(
      `fill, 500 conversations, reserve ${reserve}: p10 ${percentile(fills, 0.1).toFixed(2)}  median ${percentile(fills, 0.5).toFixed(2)}  p90 ${percentile(fills, 0.9).toFixed(2)}  (${fills.length} fitted)`,
    );
  }

  const model = 'bench-model';
  const fake = new FakeUpstream({
    windows: { [model]: 8_192 },
    recordLimit: 1_000,
    promptTokenScale: { 'bench-estimated': 1.3 },
  });
  const gateway = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), LOG_LEVEL: 'warn' },
    configYaml: `models:\n  - { match: ${model}, window: 8192, output_reserve: 512, exact_tokenizer: true }\n`,
  });
  try {
    // Prefix kept over a 300-turn session.
    const client = new OpenAI({
      baseURL: gateway.baseUrl,
      apiKey: 'sk-bench',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': 'fidelity' },
    });
    for (let turn = 0; turn < 300; turn++)
      await client.chat.completions.create({ model, messages: [{ role: 'user', content: prose(90, turn) }] });
    await gateway.gateway.summarizer.idle();
    const prompts = fake.chatRequests
      .filter((request) => !isSummaryRequest(request.body))
      .map((request) => JSON.stringify((request.body as { messages: ChatMessage[] }).messages));
    const firstTrimmed = prompts.findIndex((prompt) => prompt.includes('[ctxgate] '));
    let kept = 0;
    for (let index = firstTrimmed + 1; index < prompts.length; index++)
      if ((prompts[index] as string).startsWith((prompts[index - 1] as string).slice(0, -1))) kept++;
    console.log(
      `prefix kept after the first trimming step: ${kept} of ${prompts.length - firstTrimmed - 1} consecutive requests`,
    );

    // Estimate error per request shape.
    const stateless = new OpenAI({ baseURL: gateway.baseUrl, apiKey: 'sk-bench', maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = Array.from({ length: 8 }, (_unused, index) => ({
      type: 'function',
      function: {
        name: `tool_${index}`,
        description: `Tool ${index}.`,
        parameters: {
          type: 'object',
          properties: {
            a: { type: 'object', properties: { b: { type: 'array', items: { type: 'string' } } } },
          },
        },
      },
    }));
    const shapes: Array<[string, OpenAI.ChatCompletionCreateParamsNonStreaming]> = [
      ['plain messages', { model, messages: [{ role: 'user', content: prose(300, 1) }] }],
      ['tools, first request', { model, messages: [{ role: 'user', content: prose(50, 2) }], tools }],
      ['tools, second request', { model, messages: [{ role: 'user', content: prose(80, 3) }], tools }],
      [
        'estimated model, first',
        { model: 'bench-estimated', messages: [{ role: 'user', content: prose(300, 4) }] },
      ],
      [
        'estimated model, second',
        { model: 'bench-estimated', messages: [{ role: 'user', content: prose(300, 5) }] },
      ],
      ['tool calls in messages (30 steps), exact model', { model, messages: toolCallConversation(30) }],
      [
        'tool calls in messages (30 steps), estimated model',
        { model: 'bench-estimated', messages: toolCallConversation(30) },
      ],
      ...(['flat', 'nested', 'enums', 'arrays of objects', 'anyOf'] as const).map(
        (shape): [string, OpenAI.ChatCompletionCreateParamsNonStreaming] => [
          `new tool set (${shape}), estimated model`,
          {
            model: 'bench-estimated',
            messages: [{ role: 'user', content: prose(20, 6) }],
            tools: toolSetOf(shape),
          },
        ],
      ),
    ];
    for (const [name, body] of shapes) {
      const { response } = await stateless.chat.completions.create(body).withResponse();
      const estimate = Number(response.headers.get('x-context-input-tokens'));
      const counted = fake.chatRequests.at(-1)?.promptTokens as number;
      console.log(
        `estimate error, ${name}: ${(((estimate - counted) / counted) * 100).toFixed(1)}% (gateway ${estimate}, provider ${counted})`,
      );
    }

    // Render equals run.
    let equal = 0;
    for (let index = 0; index < 200; index++) {
      const messages = conversation(random).filter(
        (message) => message.role !== 'tool' && message.tool_calls === undefined,
      );
      const body = { model: index % 2 === 0 ? model : 'bench-estimated', messages, max_tokens: 512 };
      const preview = await fetch(`${gateway.baseUrl}/context/render`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
        body: JSON.stringify(body),
      });
      const shown = JSON.stringify(((await preview.json()) as { messages?: unknown }).messages);
      const before = fake.chatRequests.length;
      await stateless.chat.completions
        .create(body as OpenAI.ChatCompletionCreateParamsNonStreaming)
        .catch(() => undefined);
      if (
        JSON.stringify((fake.chatRequests[before]?.body as { messages?: unknown } | undefined)?.messages) ===
        shown
      )
        equal++;
    }
    console.log(`render equals run: ${equal} of 200`);
  } finally {
    await gateway.close();
    await fake.stop();
  }
  await factsFigures();
  // The default masking step, then none (trim_to 1, clear_at_least 0: every result that fits is sent
  // whole): what the step costs in masked results and buys in prefix reuse (docs/budgeting.md).
  // 131,072 tokens with the default step only: where a step is a small part of the window.
  for (const step of [undefined, { clear_at_least: 0, trim_to: 1 }])
    for (const window of step === undefined ? [8_192, 32_768, 131_072] : [8_192, 32_768])
      for (const mode of ['stateless', 'session'] as const) {
        const figures = await agentLoopFigures({ window, mode, loops: 3, steps: 40, step });
        console.log(
          `agent loop, ${mode}, ${window} tokens, ${step === undefined ? 'default step' : 'no step (trim_to 1, clear_at_least 0)'}, ${figures.requests} requests: ` +
            `prefix reuse ${figures.prefixReuse.toFixed(2)} (masking oldest first, at most ${figures.reuseBound?.newestStepWhole.toFixed(2)} sending the newest step whole, ` +
            `${figures.reuseBound?.any.toFixed(2)} masking any result but the newest)  ` +
            `over-masked steps ${figures.overMasked} (${figures.overMaskedBeyondStep} beyond clear_at_least, ${figures.overMaskedUnseen} of the newest step)  ` +
            `summarizer share ${(figures.summarizerShare * 100).toFixed(1)}% (${figures.summarizerCalls} calls)  headers agree ${(figures.headersAgree * 100).toFixed(0)}%`,
        );
      }
  // Tasks one after another in one conversation: does the history start ever move backwards?
  for (const window of [8_192, 32_768])
    for (const mode of ['stateless', 'session'] as const) {
      const figures = await agentLoopFigures({ window, mode, loops: 3, steps: 8, tasks: 6 });
      console.log(
        `agent loops of 6 tasks × 8 steps, ${mode}, ${window} tokens, ${figures.requests} requests: ` +
          `history start moved backwards in ${figures.startBackwards} (${figures.startBackwardsWithinTask} within a task)  ` +
          `prefix reuse ${figures.prefixReuse.toFixed(2)}  over-masked steps ${figures.overMasked}  ` +
          `headers agree ${(figures.headersAgree * 100).toFixed(0)}%`,
      );
    }
}

/** Facts recalled at the end of 300 summarized turns on 8,192 tokens, per summarizer. */
async function factsFigures(): Promise<void> {
  const model = 'bench-facts';
  const fake = new FakeUpstream({
    windows: { [model]: 8_192 },
    answer: answerFromPrompt,
    recordLimit: 2_000,
  });
  const gateway = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), LOG_LEVEL: 'warn' },
    configYaml: `models:\n  - { match: ${model}, window: 8192, output_reserve: 512 }\n`,
  });
  try {
    for (const [name, summarizer] of [
      ['ideal (extractive)', extractiveSummarizer(shape)],
      ['realistic (keeps ~70%)', paraphrasingSummarizer(shape, { loseShare: 0.3, seed: 5 })],
      ['lossy (keeps ~40%)', paraphrasingSummarizer(shape, { loseShare: 0.6, seed: 11 })],
    ] as const) {
      const before = fake.summaryRequests.length;
      const { answered } = await factsAnswered(gateway, fake, model, summarizer);
      const repairs = fake.summaryRequests
        .slice(before)
        .filter((request) =>
          JSON.stringify(request.body).includes('Statements whose facts are missing'),
        ).length;
      console.log(
        `facts recalled after 300 turns, ${name} summarizer: ${answered} of 30 (${fake.summaryRequests.length - before} summarizer calls, ${repairs} of them repairs)`,
      );
    }
  } finally {
    await gateway.close();
    await fake.stop();
  }
  await recallFactsFigures();
}

/** The same facts where the recall tool is offered (docs/budgeting.md#recall) and the model searches when it lacks a code. */
async function recallFactsFigures(): Promise<void> {
  const model = 'bench-facts';
  const fake = new FakeUpstream({
    windows: { [model]: 8_192 },
    answer: answerFromPrompt,
    respond: searchingModel,
    recordLimit: 2_000,
  });
  const gateway = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), LOG_LEVEL: 'warn' },
    configYaml:
      `models:\n  - { match: ${model}, window: 8192, output_reserve: 512 }\n` +
      `policies:\n  recall_only: { summarization: 'off', recall: 'on' }\n  summaries_and_recall: { recall: 'on' }\n`,
  });
  try {
    for (const [name, policy, summarizer] of [
      ['summarization off, recall on', 'recall_only', extractiveSummarizer(shape)],
      [
        'lossy (keeps ~40%) summarizer, recall on',
        'summaries_and_recall',
        paraphrasingSummarizer(shape, { loseShare: 0.6, seed: 11 }),
      ],
    ] as const) {
      const before = fake.chatRequests.length;
      const { answered } = await factsAnswered(gateway, fake, model, summarizer, {
        'x-context-policy': policy,
      });
      const recallRounds = fake.chatRequests
        .slice(before)
        .filter((request) => JSON.stringify(request.body).includes('"role":"tool"')).length;
      console.log(
        `facts recalled after 300 turns, ${name}: ${answered} of 30 (${recallRounds} recall rounds)`,
      );
    }
  } finally {
    await gateway.close();
    await fake.stop();
  }
}
