// The gateway's own "does not fit" (README.md): 400 context_length_exceeded in OpenAI's words, quoting
// the window exactly as configured or stated in X-Context-Window — never a window scaled by the ratio
// learned for an estimated model — with counts in the provider's units.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { planSend } from '../../src/context/plan-send.js';
import type { ContextMessage } from '../../src/context/types.js';
import type { ChatCompletionRequest } from '../../src/chat/chat-request-schema.js';
import { loadConfig } from '../../src/config/load-config.js';
import { isGatewayError } from '../../src/errors.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { countPromptTokens } from '../helpers/fake-upstream.js';
import { prose } from '../helpers/text.js';
import { sessionViewOf } from '../helpers/session-view.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const config = loadConfig({
  env: {
    CTXGATE_CONFIG: writeConfigFile(
      'models:\n  - match: "capped-*"\n    window: 16000\n    max_input: 2000\n    output_reserve: 1000\n' +
        '  - match: "tight-*"\n    window: 4000\n    max_input: 3000\n' +
        '  - match: "acme-*"\n    window: 16000\n    output_reserve: 1000\n',
    ),
  },
});
const tokenizers = createTiktokenTokenizers();

function refusal(options: { contextWindow?: number; estimateRatio?: number; maxTokens?: number }): Error {
  const chatRequest = {
    model: 'acme-large',
    messages: [{ role: 'user', content: prose(20_000, 1) }],
    ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens }),
  } as ChatCompletionRequest;
  try {
    planSend({
      config,
      tokenizers,
      request: chatRequest,
      overrides: {
        historyMode: 'auto',
        ...(options.contextWindow === undefined ? {} : { contextWindow: options.contextWindow }),
      },
      learned: { ratio: options.estimateRatio },
    });
  } catch (error) {
    return error as Error;
  }
  throw new Error('the turn was expected not to fit');
}

describe('a turn that cannot fit', () => {
  it.each<[string, { contextWindow?: number; estimateRatio?: number }, number]>([
    ['the configured window', {}, 16_000],
    ['X-Context-Window as given', { contextWindow: 8_192 }, 8_192],
    ['X-Context-Window as given, with a learned ratio', { contextWindow: 8_192, estimateRatio: 1.3 }, 8_192],
  ])('quotes %s, and the max_tokens asked for', (_name, options, window) => {
    const error = refusal({ ...options, maxTokens: 1_000 });
    expect(isGatewayError(error) && error.status === 400 && error.code === 'context_length_exceeded').toBe(
      true,
    );
    const stated =
      /maximum context length is (\d+) tokens\. However, you requested (\d+) tokens \((\d+) in the messages, 1000 in the completion\)/.exec(
        error.message,
      );
    expect(stated?.[1]).toBe(String(window));
    // The prompt asked for is more than the window: 20,000 words of one token each, scaled by the ratio.
    const ratio = options.estimateRatio ?? 1;
    expect(Number(stated?.[3])).toBeGreaterThanOrEqual(Math.floor(20_000 * ratio));
    expect(Number(stated?.[2])).toBe(Number(stated?.[3]) + 1_000);
  });
});

describe('a turn that cannot fit, without max_tokens', () => {
  it('never quotes the room the gateway keeps for the answer as requested', () => {
    const error = refusal({ contextWindow: 2_048 });
    expect(error.message).toMatch(
      /^This model's maximum context length is 2048 tokens\. However, your messages resulted in \d+ tokens\. /,
    );
    expect(error.message).not.toMatch(/you requested|in the completion/);
    // A quarter of a small window at most (512 of 2,048, not the model's 1,000), and before refusing it
    // gave way down to an eighth: the refusal names the smallest room it tried.
    expect(error.message).toMatch(/room kept for the answer \(256; send max_tokens to choose it\)/);
  });

  it('counts a system prompt that alone exceeds the room in full', () => {
    const chatRequest = {
      model: 'acme-large',
      messages: [
        { role: 'system', content: prose(15_500, 2) },
        { role: 'user', content: 'Next step.' },
      ],
    } as ChatCompletionRequest;
    let error: Error | undefined;
    try {
      planSend({ config, tokenizers, request: chatRequest, overrides: { historyMode: 'auto' } });
    } catch (caught) {
      error = caught as Error;
    }
    const resulted = /However, your messages resulted in (\d+) tokens\./.exec(error?.message ?? '');
    // The prompt quoted is all of it, as the provider's tokenizer counts it (within the estimate's
    // error), not what is left of the window after the reserve and margin.
    const counted = countPromptTokens(chatRequest.messages as never, undefined);
    expect(Math.abs(Number(resulted?.[1]) - counted)).toBeLessThan(counted * 0.05);
  });
});

describe('a model that caps its input below its window', () => {
  it('fits the prompt within the cap whatever the answer asks for', () => {
    for (const maxTokens of [undefined, 200, 8_000]) {
      const request = { ...longChat(), model: 'capped-large' } as ChatCompletionRequest;
      if (maxTokens !== undefined) request.max_tokens = maxTokens;
      const prepared = planSend({ config, tokenizers, request, overrides: { historyMode: 'auto' } });
      // The twelve turns are about 3,700 tokens, within the 16,000 window with any of these answers.
      const sent = countPromptTokens(prepared.messages as never, undefined);
      expect(sent).toBeLessThanOrEqual(2_000);
      expect(sent).toBeGreaterThan(1_000);
      expect(prepared.report.droppedMessages).toBeGreaterThan(0);
    }
  });

  it('keeps the cap under a window stated in X-Context-Window', () => {
    const request = { ...longChat(), model: 'capped-large' } as ChatCompletionRequest;
    const prepared = planSend({
      config,
      tokenizers,
      request,
      overrides: { historyMode: 'auto', contextWindow: 100_000 },
    });
    expect(prepared.report.window).toBe(100_000);
    expect(countPromptTokens(prepared.messages as never, undefined)).toBeLessThanOrEqual(2_000);
  });

  it('refuses a turn over the cap in OpenAI’s own words for it', () => {
    let error: Error | undefined;
    const messages = [{ role: 'user' as const, content: prose(3_000, 1) }];
    try {
      planSend({
        config,
        tokenizers,
        request: { model: 'capped-large', messages },
        overrides: { historyMode: 'auto' },
      });
    } catch (caught) {
      error = caught as Error;
    }
    expect(isGatewayError(error) && error.code === 'context_length_exceeded').toBe(true);
    const stated =
      /^Input tokens exceed the configured limit of 2000 tokens\. Your messages resulted in (\d+) tokens\./.exec(
        error?.message ?? '',
      );
    // The whole prompt as the provider counts it, not what was left of the cap.
    const counted = countPromptTokens(messages as never, undefined);
    expect(Math.abs(Number(stated?.[1]) - counted)).toBeLessThan(counted * 0.05);
    expect(error?.message).not.toMatch(/maximum context length|lower max_tokens/);
  });

  it('quotes the window when the answer asked for, not the cap, leaves the turn no room', () => {
    let error: Error | undefined;
    try {
      planSend({
        config,
        tokenizers,
        // 2,000 of 4,000 for the answer leaves the prompt less than its cap of 3,000.
        request: {
          model: 'tight-large',
          max_tokens: 2_000,
          messages: [{ role: 'user', content: prose(2_500, 1) }],
        },
        overrides: { historyMode: 'auto' },
      });
    } catch (caught) {
      error = caught as Error;
    }
    expect(error?.message).toMatch(
      /^This model's maximum context length is 4000 tokens\. However, you requested/,
    );
    expect(error?.message).not.toMatch(/configured limit/);
  });
});

/** Freezes a value and everything in it: a decision that writes into what it was given throws. */
function deepFrozen<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFrozen(inner);
  }
  return value;
}

/** Twelve turns of about 300 tokens each and a new question: more than a 2,048-token window holds. */
function longChat(turns = 12): ChatCompletionRequest {
  const messages: Array<{ role: string; content: string }> = [{ role: 'system', content: 'Be brief.' }];
  for (let turn = 0; turn < turns; turn++)
    messages.push(
      { role: 'user', content: prose(150, 10 + turn) },
      { role: 'assistant', content: prose(150, 40 + turn) },
    );
  messages.push({ role: 'user', content: 'And now?' });
  return { model: 'acme-large', messages } as ChatCompletionRequest;
}

describe('what is sent, decided from explicit inputs', () => {
  const overrides = { historyMode: 'auto' as const, contextWindow: 2_048 };

  it('changes nothing it is given, and the same inputs give the same messages', () => {
    const request = deepFrozen(longChat());
    const inputs = deepFrozen({
      config,
      tokenizers,
      request,
      overrides,
      learned: { window: 1_800, ratio: 1.1 },
      attempt: { reduction: 'drop_oldest_half' as const, maxTokens: 200, promptCap: 1_200 },
    });
    const first = planSend(inputs);
    const second = planSend(inputs);
    expect(second.messages).toEqual(first.messages);
    expect(second.report).toEqual(first.report);
    // The policy the reduction asked for belongs to this decision only: a fresh one has its own.
    const fresh = planSend({ config, tokenizers, request, overrides });
    expect(fresh.settings.policy.keep_first_turns).not.toBe(0);
    expect(first.settings.policy.keep_first_turns).toBe(0);
  });

  it('says when what it counted holds an estimate: past the counting bound, or a session’s estimated new messages', () => {
    // A cold body of megabytes: 600 earlier messages of random base64 before the conversation.
    const request = longChat();
    const earlier = Array.from({ length: 600 }, (_unused, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: randomBytes(1_500).toString('base64'),
    }));
    const large = Object.assign({}, request, {
      messages: [request.messages[0], ...earlier, ...request.messages.slice(1)],
    }) as ChatCompletionRequest;
    expect(planSend({ config, tokenizers, request: large, overrides }).estimated).toBe(true);
    expect(planSend({ config, tokenizers, request, overrides }).estimated).toBeUndefined();
    // A session's view, its counts given: whether they hold an estimate is the view's to say.
    const conversation = request.messages as ContextMessage[];
    const view = (estimated: boolean) =>
      sessionViewOf(
        conversation,
        conversation.map(() => 300),
        estimated ? { estimatedCounts: true } : {},
      );
    expect(planSend({ config, tokenizers, request, overrides, session: view(true) }).estimated).toBe(true);
    expect(
      planSend({ config, tokenizers, request, overrides, session: view(false) }).estimated,
    ).toBeUndefined();
  });

  it('sends the max_tokens the attempt names, and fits the prompt under its cap', () => {
    const prepared = planSend({
      config,
      tokenizers,
      request: longChat(),
      overrides,
      attempt: { reduction: 'none', maxTokens: 120, promptCap: 900 },
    });
    expect(prepared.loweredMaxTokens).toBe(120);
    expect(prepared.report.inputTokens).toBeLessThanOrEqual(900);
    expect(prepared.messages.at(-1)).toEqual({ role: 'user', content: 'And now?' });
  });

  it('tries the configured window first while a learned one is unconfirmed, and the learned one on a retry', () => {
    // No X-Context-Window: the model's configured 16,000 against a learned 1,024.
    const own = { historyMode: 'auto' as const };
    const learned = { window: 1_024, probe: true };
    const request = longChat();
    const first = planSend({ config, tokenizers, request, overrides: own, learned });
    const retry = planSend({
      config,
      tokenizers,
      request,
      overrides: own,
      learned,
      attempt: { reduction: 'drop_oldest_half', maxTokens: undefined },
    });
    expect(first.report.window).toBe(16_000);
    expect(first.report.droppedMessages).toBe(0);
    expect(retry.report.window).toBe(1_024);
    const confirmed = planSend({ config, tokenizers, request, overrides: own, learned: { window: 1_024 } });
    expect(confirmed.report.window).toBe(1_024);
    expect(confirmed.report.droppedMessages).toBeGreaterThan(0);
  });

  it('sends only the system prompt and the current turn at the minimal step, and counts the rest as left out', () => {
    const request = longChat();
    const prepared = planSend({
      config,
      tokenizers,
      request,
      overrides,
      attempt: { reduction: 'minimal', maxTokens: undefined },
    });
    expect(prepared.messages.filter((message) => message.role !== 'system')).toEqual([
      { role: 'user', content: 'And now?' },
    ]);
    const system = prepared.messages[0] as { role: string; content: string };
    expect(system.role).toBe('system');
    expect(system.content.startsWith('Be brief.')).toBe(true);
    expect(system.content).toContain(`${request.messages.length - 2} earlier messages`);
    expect(prepared.report.droppedMessages).toBe(request.messages.length - 2);
  });
});

// A thinking model counts its thinking in max_tokens (DeepSeek, Kimi, Qwen on vLLM): a max_tokens the
// gateway lowered to keep the conversation whole came back cut while it thought — empty, at length.
describe('a max_tokens the whole conversation leaves too little room for, under a learned window', () => {
  const request = { ...longChat(10), max_tokens: 6_000 } as ChatCompletionRequest;
  const planned = (thinks: boolean, window: number) =>
    planSend({
      config,
      tokenizers,
      request,
      overrides: { historyMode: 'auto' },
      learned: { window, thinks },
    });

  it('is lowered to what is left, keeping every message, for a model that does not think', () => {
    const whole = planned(false, 100_000).report.inputTokens;
    const prepared = planned(false, whole + 4_000);
    expect(prepared.report.droppedMessages).toBe(0);
    expect(prepared.loweredMaxTokens).toBe(whole + 4_000 - prepared.settings.safetyMarginTokens - whole);
    expect(prepared.loweredMaxTokens).toBeLessThan(6_000);
  });

  it('is lowered past a retry’s max_tokens that would take the margin’s room from the prompt the provider took', () => {
    // The provider refused the prompt with the answer asked for, and its numbers left this max_tokens
    // for the answer (the window less the prompt and 1%): the prompt is sent again whole, not cut to
    // make room for the margin beside that answer.
    const whole = planned(false, 100_000).report.inputTokens;
    const window = whole + 4_000;
    const retry = planSend({
      config,
      tokenizers,
      request,
      overrides: { historyMode: 'auto' },
      learned: { window },
      attempt: { reduction: 'none', maxTokens: window - whole - window / 100, promptCap: whole },
    });
    expect(retry.report.droppedMessages).toBe(0);
    expect(retry.report.inputTokens).toBe(whole);
    expect(retry.loweredMaxTokens).toBe(window - retry.settings.safetyMarginTokens - whole);
  });

  it('is kept for a model whose answers show thinking, the oldest turns giving way', () => {
    const whole = planned(true, 100_000).report.inputTokens;
    const prepared = planned(true, whole + 4_000);
    expect(prepared.loweredMaxTokens).toBeUndefined();
    expect(prepared.report.droppedMessages).toBeGreaterThan(0);
    // Lowered still, though not below 8,192 tokens, when more was asked.
    const long = planSend({
      config,
      tokenizers,
      request: { ...request, max_tokens: 20_000 },
      overrides: { historyMode: 'auto' },
      learned: { window: whole + 12_000, thinks: true },
    });
    expect(long.report.droppedMessages).toBe(0);
    expect(long.loweredMaxTokens).toBeGreaterThanOrEqual(8_192);
    expect(long.loweredMaxTokens).toBeLessThan(20_000);
  });
});

describe('a max_tokens larger than the window leaves for it', () => {
  it('fits the prompt with a quarter of the window kept for the answer, and asks for what is left', () => {
    // An agent asking for its model's longest answer (128,000) on a window it does not know is 16,000.
    // Sixty turns: more than the window holds, so turns are left out too.
    const request = { ...longChat(60), max_tokens: 128_000 } as ChatCompletionRequest;
    const prepared = planSend({
      config,
      tokenizers,
      request,
      overrides: { historyMode: 'auto' },
      learned: { window: 16_000 },
    });
    const margin = prepared.settings.safetyMarginTokens;
    expect(prepared.loweredMaxTokens).toBe(16_000 - margin - prepared.report.inputTokens);
    expect(prepared.loweredMaxTokens).toBeGreaterThanOrEqual(4_000);
    expect(prepared.messages.at(-1)).toEqual({ role: 'user', content: 'And now?' });
    expect(prepared.report.droppedMessages).toBeGreaterThan(0);
  });

  it('still refuses a max_tokens within half the window that leaves the turn no room', () => {
    expect(refusal({ contextWindow: 8_192, maxTokens: 4_000 }).message).toMatch(/4000 in the completion/);
  });
});

describe('a request that fits the window by its own count, but not beside the safety margin', () => {
  // Qwen Code on a local model of 24,000 tokens: some 16,000 tokens of instructions and tools and
  // max_tokens 6,000 — 22,000 in all, which the model takes; the gateway refused it ("maximum context
  // length is 24000 tokens. However, you requested 22432 tokens"), for want of its 10% margin.
  const agent = (turns: number, maxTokens: number) => {
    const messages: Array<{ role: string; content: string }> = [{ role: 'system', content: prose(8_500, 3) }];
    for (let turn = 0; turn < turns; turn++)
      messages.push(
        { role: 'user', content: prose(200, 60 + turn) },
        { role: 'assistant', content: prose(200, 80 + turn) },
      );
    messages.push({ role: 'user', content: 'Read the chapters, then say how many.' });
    return { model: 'acme-large', messages, max_tokens: maxTokens } as ChatCompletionRequest;
  };
  const plan = (request: ChatCompletionRequest) =>
    planSend({ config, tokenizers, request, overrides: { historyMode: 'auto' } });

  it.each([
    ['its first request', 0],
    ['a later one: the earlier turns left out', 3],
  ])('is sent, the margin giving way as far as the turn needs (%s)', (_name, turns) => {
    const request = agent(turns, 6_000);
    const prepared = plan(request);
    const sent = prepared.messages as Array<{ role: string; content: string }>;
    // The system prompt (with the notice of what was left out, where there was any) and the turn.
    expect(sent.map((message) => message.role)).toEqual(['system', 'user']);
    expect(sent[0]?.content.startsWith(String(request.messages[0]?.content))).toBe(true);
    expect(sent[0]?.content.includes(`${turns * 2} earlier messages`)).toBe(turns > 0);
    expect(sent[1]).toEqual(request.messages.at(-1));
    // As asked: the answer's room is the client's; the prompt and it fit the window, by the provider's count too.
    expect(prepared.loweredMaxTokens).toBeUndefined();
    expect(prepared.report.droppedMessages).toBe(turns * 2);
    expect(countPromptTokens(sent as never, undefined) + 6_000).toBeLessThanOrEqual(16_000);
    // Without a margin to give, as it was: a window too small for the prompt and the answer.
    expect(() => plan(agent(turns, 8_000))).toThrow(/maximum context length is 16000 tokens/);
  });
});
