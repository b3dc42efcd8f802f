// Agent loops as coding agents run them, for the fidelity figures: tool results of realistic sizes
// (log-normal, median 658 tokens, p99 about 15,000), 2–4 parallel calls a step, 40 steps, a summarizer
// that answers in a seventh of what it reads (identifiers lost as a paraphrase loses them), stateless
// (the whole conversation every time) or in a delta session, on 8,192 and 32,768 tokens. Measured from
// what the provider received: the share of each prompt that is a byte-identical prefix of the previous
// one (what a prompt cache reuses), steps where a masked result could have been sent whole, the
// summarizer's share of prompt tokens, and whether sent + summarized + dropped is the conversation.
import OpenAI from 'openai';
import {
  countPromptTokens,
  FakeUpstream,
  isSummaryRequest,
  type ChatMessage,
} from '../../test/helpers/fake-upstream.js';
import { startGateway } from '../../test/helpers/start-gateway.js';
import { prose, seeded } from '../../test/helpers/text.js';
import { oldestFirstReuseBound, type LoopShape } from './reuse-bound.js';

export interface AgentLoopFigures {
  requests: number;
  /** Mean share of each prompt that repeats the previous prompt of its loop byte for byte. */
  prefixReuse: number;
  /**
   * The most a gateway can reuse that shortens a loop only from its oldest end (results masked oldest
   * first, as no needless masking requires; steps dropped or summarized oldest first):
   * bench/lib/reuse-bound.ts, over each loop's own sizes. `newestStepWhole`: the same for a gateway that
   * sends the newest step's results whole while they fit, as the gateway does; `any`: one free to mask
   * every result but the newest, those the model has not seen included. Single-task loops only.
   */
  reuseBound: { newestStepWhole: number; any: number } | undefined;
  /**
   * Steps where the newest masked result would have fit: the prompt with it sent whole, counted as the
   * provider counts, within the usable window.
   */
  overMasked: number;
  /** The same, within the usable window less clear_at_least (what the gateway keeps free for the next steps). */
  overMaskedBeyondStep: number;
  /** Of the over-masked steps, those whose newest masked result is of the newest step: one the model has not seen. */
  overMaskedUnseen: number;
  /** Summarizer prompt tokens over the conversation's own prompt tokens. */
  summarizerShare: number;
  /** Calls the summarizer made (repairs included). */
  summarizerCalls: number;
  /** Requests whose headers account for every message once (sessions: sent + summarized + dropped). */
  headersAgree: number;
  /**
   * Requests whose history reached further back than the request before it: fewer earlier messages
   * omitted, or a tool result of a past task sent whole that the request before had masked.
   */
  startBackwards: number;
  /**
   * The same, within a task: each task's first request left out (there the turn just finished becomes
   * history and is sent in history's forms, so its prompt differs from the request before's anyway).
   */
  startBackwardsWithinTask: number;
}

const commonPrefix = (a: string, b: string): number => {
  let index = 0;
  while (index < a.length && index < b.length && a.charCodeAt(index) === b.charCodeAt(index)) index++;
  return index;
};

export async function agentLoopFigures(options: {
  window: number;
  mode: 'stateless' | 'session';
  loops: number;
  steps: number;
  /**
   * Tasks a loop works through one after the other: after `steps` steps a task ends
   * with the model's answer and the next task's user message follows. One when not given.
   */
  tasks?: number;
  /** The masking step: clear_at_least and trim_to (docs/budgeting.md); the defaults when not given. */
  step?: { clear_at_least: number; trim_to: number } | undefined;
}): Promise<AgentLoopFigures> {
  const model = 'bench-agent';
  const random = seeded(options.window + (options.mode === 'session' ? 1 : 0));
  let callNumber = 0;
  const fake = new FakeUpstream({
    windows: { [model]: options.window },
    recordLimit: 10_000,
    tokenCounting: 'tiktoken',
    // As a model summarizes: an answer about a seventh of what it read (previous summary included).
    summarizer: (messages) => {
      const words = String(messages.at(-1)?.content ?? '').split(/\s+/);
      return words.filter((_word, index) => index % 7 === 0).join(' ');
    },
    respond: () => ({
      toolCalls: Array.from({ length: 2 + Math.floor(random() * 3) }, () => {
        callNumber++;
        return {
          id: `call_${callNumber}`,
          name: 'read_file',
          arguments: `{"path":"src/file_${callNumber}.ts"}`,
        };
      }),
    }),
  });
  const clearAtLeast = options.step?.clear_at_least ?? 2_000;
  const trimTo = options.step === undefined ? '' : `  trim_to: ${options.step.trim_to}\n`;
  const gateway = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), LOG_LEVEL: 'warn' },
    configYaml: `models:\n  - { match: ${model}, window: ${options.window}, output_reserve: 1024, exact_tokenizer: true }\ncontext:\n  clear_at_least: ${clearAtLeast}\n${trimTo}`,
  });
  // What a prompt may use: the window less the output reserve and the safety margin (5%).
  const usable = options.window - 1_024 - Math.ceil(options.window * 0.05);
  /** Each result's text, to count a prompt with a masked one sent whole. */
  const contentOf = new Map<string, string>();
  const figures = {
    requests: 0,
    prefix: 0,
    overMasked: 0,
    overMaskedBeyondStep: 0,
    overMaskedUnseen: 0,
    agree: 0,
    sessionRequests: 0,
    startBackwards: 0,
    startBackwardsWithinTask: 0,
  };
  const bounds: Array<{ newestStepWhole: number; any: number }> = [];
  try {
    for (let loop = 0; loop < options.loops; loop++) {
      const client = new OpenAI({
        baseURL: gateway.baseUrl,
        apiKey: 'sk-bench',
        maxRetries: 0,
        defaultHeaders:
          options.mode === 'session'
            ? { 'x-session-id': `loop-${options.window}-${loop}`, 'x-session-history': 'delta' }
            : {},
      });
      const conversation: OpenAI.ChatCompletionMessageParam[] = [
        { role: 'system', content: `You are a coding agent. ${prose(300, loop)}` },
        { role: 'user', content: `Task ${loop}: find where the retry budget is computed and fix it.` },
      ];
      let toSend = conversation.slice();
      let previous: string | undefined;
      let previousStart: { omitted: number; masked: Set<string> } | undefined;
      for (let step = 0; step < options.steps * (options.tasks ?? 1); step++) {
        if (step > 0 && step % options.steps === 0) {
          // The task ends with the model's answer; the next one starts (the client resends it all).
          conversation.push(
            { role: 'assistant', content: `Done: ${prose(40, step)}` },
            { role: 'user', content: `Task ${loop}.${step / options.steps}: ${prose(30, step)}` },
          );
          // A stateless client resends it all; a delta session sends the last results, the answer and the new task.
          toSend = options.mode === 'session' ? [...toSend, ...conversation.slice(-2)] : conversation.slice();
        }
        const { data, response } = await client.chat.completions
          .create({ model, messages: toSend, max_tokens: 1_024 })
          .withResponse();
        await gateway.gateway.summarizer.idle();
        const sent = fake.chatRequests.filter((request) => !isSummaryRequest(request.body)).at(-1);
        const messages = (sent?.body as { messages: ChatMessage[] }).messages;
        const prompt = JSON.stringify(messages);
        figures.requests++;
        if (previous !== undefined) {
          figures.prefix += commonPrefix(previous, prompt) / prompt.length;
        }
        previous = prompt;
        // Where history starts: the earlier messages not shown (those the omission notice counts, and
        // those a session's summary stands for: no message is counted by both), and the past tasks'
        // results sent masked. Reaching back further than the request before is a move backwards.
        const omitted = messages.reduce((sum, message) => {
          const counts = String(message.content ?? '').matchAll(
            /\[ctxgate\] (?:(\d+) earlier messages of this conversation were omitted|Summary of (\d+) earlier messages of this conversation)/g,
          );
          for (const count of counts) sum += Number(count[1] ?? count[2]);
          return sum;
        }, 0);
        const pastTasks = messages.slice(
          0,
          messages.findLastIndex((message) => message.role === 'user'),
        );
        const isMasked = (message: ChatMessage) => String(message.content).startsWith('[result masked');
        const start = {
          omitted,
          masked: new Set(
            pastTasks.filter((m) => m.role === 'tool' && isMasked(m)).map((m) => String(m.tool_call_id)),
          ),
        };
        if (
          previousStart !== undefined &&
          (omitted < previousStart.omitted ||
            pastTasks.some(
              (m) => m.role === 'tool' && !isMasked(m) && previousStart?.masked.has(String(m.tool_call_id)),
            ))
        ) {
          figures.startBackwards++;
          if (step % options.steps !== 0) figures.startBackwardsWithinTask++;
        }
        previousStart = start;
        // Over-masking: the prompt with its newest masked result sent whole, counted as the provider counts.
        const newestMasked = messages.findLastIndex(
          (message) => message.role === 'tool' && String(message.content).startsWith('[result masked'),
        );
        if (newestMasked !== -1) {
          const whole = messages.map((message, index) =>
            index === newestMasked
              ? { ...message, content: contentOf.get(message.tool_call_id ?? '') ?? message.content }
              : message,
          );
          const tokens = countPromptTokens(whole, undefined);
          if (tokens <= usable) figures.overMasked++;
          const newestCall = messages.findLastIndex((message) => message.role === 'assistant');
          if (tokens <= usable && newestMasked > newestCall) figures.overMaskedUnseen++;
          if (tokens <= usable - clearAtLeast) figures.overMaskedBeyondStep++;
        }
        if (options.mode === 'session') {
          figures.sessionRequests++;
          const own = messages.filter(
            (message) => !String(message.content ?? '').startsWith('[ctxgate]'),
          ).length;
          const accounted =
            own +
            Number(response.headers.get('x-context-dropped-messages')) +
            Number(response.headers.get('x-context-summarized-messages'));
          if (accounted === conversation.length) figures.agree++;
        }
        const answer = data.choices[0]?.message as OpenAI.ChatCompletionMessageParam & {
          tool_calls?: Array<{ id: string }>;
        };
        const results: OpenAI.ChatCompletionMessageParam[] = (answer.tool_calls ?? []).map((call) => {
          const tokens = Math.min(15_000, Math.max(20, Math.round(658 * Math.exp(1.345 * gaussian(random)))));
          const content = prose(tokens, callNumber);
          contentOf.set(call.id, content);
          return { role: 'tool', tool_call_id: call.id, content };
        });
        conversation.push(
          { role: 'assistant', content: null, tool_calls: answer.tool_calls } as never,
          ...results,
        );
        toSend = options.mode === 'session' ? results : conversation.slice();
      }
      // The loop as its prompts held it; the last step's results were never sent.
      if ((options.tasks ?? 1) === 1) {
        const shape = loopShape(conversation, usable);
        bounds.push({
          newestStepWhole: oldestFirstReuseBound(shape, { newestStepWhole: true }),
          any: oldestFirstReuseBound(shape),
        });
      }
    }
    const summaryTokens = fake.summaryRequests.reduce((sum, request) => sum + (request.promptTokens ?? 0), 0);
    const chatTokens = fake.chatRequests
      .filter((request) => !isSummaryRequest(request.body))
      .reduce((sum, request) => sum + (request.promptTokens ?? 0), 0);
    return {
      requests: figures.requests,
      prefixReuse: figures.prefix / Math.max(1, figures.requests - options.loops),
      reuseBound:
        bounds.length === 0
          ? undefined
          : {
              newestStepWhole: bounds.reduce((sum, bound) => sum + bound.newestStepWhole, 0) / bounds.length,
              any: bounds.reduce((sum, bound) => sum + bound.any, 0) / bounds.length,
            },
      overMasked: figures.overMasked,
      overMaskedBeyondStep: figures.overMaskedBeyondStep,
      overMaskedUnseen: figures.overMaskedUnseen,
      summarizerShare: summaryTokens / Math.max(1, chatTokens),
      summarizerCalls: fake.summaryRequests.length,
      headersAgree: options.mode === 'session' ? figures.agree / Math.max(1, figures.sessionRequests) : 1,
      startBackwards: figures.startBackwards,
      startBackwardsWithinTask: figures.startBackwardsWithinTask,
    };
  } finally {
    await gateway.close();
    await fake.stop();
  }
}

/**
 * A single-task loop's sizes as the provider counts them: each result whole (cut at max_tool_result_tokens,
 * 8,000, as the gateway cuts it) and masked; the last step left out, as no request sent it.
 */
function loopShape(conversation: OpenAI.ChatCompletionMessageParam[], usable: number): LoopShape {
  const tokens = (message: ChatMessage) =>
    countPromptTokens([message], undefined) - countPromptTokens([], undefined);
  const [system, task, ...rest] = conversation as ChatMessage[];
  const steps: LoopShape['steps'] = [];
  for (const message of rest) {
    if (message.role === 'assistant') steps.push({ call: tokens(message), results: [] });
    else {
      const whole = Math.min(tokens(message), 8_000);
      const masked = tokens({ ...message, content: `[result masked — ~${whole} tokens removed]` });
      steps.at(-1)?.results.push({ whole, masked });
    }
  }
  return {
    base: countPromptTokens([system, task] as ChatMessage[], undefined),
    steps: steps.slice(0, -1),
    usable,
  };
}

/** A standard normal draw (Box–Muller). */
function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}
