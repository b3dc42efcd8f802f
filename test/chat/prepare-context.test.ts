// The gateway's own "does not fit" (README.md): 400 context_length_exceeded in OpenAI's words, quoting
// the window exactly as configured or stated in X-Context-Window — never a window scaled by the ratio
// learned for an estimated model — with counts in the provider's units.
import { describe, expect, it } from 'vitest';
import { prepareContext } from '../../src/chat/prepare-context.js';
import type { ChatCompletionRequest } from '../../src/chat/chat-request-schema.js';
import { loadConfig } from '../../src/config/load-config.js';
import { isGatewayError } from '../../src/errors.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { countPromptTokens } from '../helpers/fake-upstream.js';
import { prose } from '../helpers/text.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const config = loadConfig({
  env: {
    CTXGATE_CONFIG: writeConfigFile(
      'models:\n  - match: "acme-*"\n    window: 16000\n    output_reserve: 1000\n',
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
    prepareContext({
      config,
      tokenizers,
      chatRequest,
      overrides: {
        historyMode: 'auto',
        ...(options.contextWindow === undefined ? {} : { contextWindow: options.contextWindow }),
      },
      estimateRatio: options.estimateRatio,
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
      prepareContext({ config, tokenizers, chatRequest, overrides: { historyMode: 'auto' } });
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
