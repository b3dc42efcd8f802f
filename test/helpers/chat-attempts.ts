// Attempts of a chat request as the attempt ladder plans them, for the tests of what is sent and of
// what the answers teach: a config with a small model (4,096 tokens, estimated, a fallback) and a large
// one, a conversation of `turns` exchanges, and a ladder over an in-process learned-limits store.
import { createFieldFixes, type FieldFixes } from '../../src/upstream/field-fixes.js';
import { createAttemptLadder } from '../../src/chat/attempt-ladder.js';
import type { ChatCompletionRequest } from '../../src/chat/chat-request-schema.js';
import { createContextPlanner } from '../../src/chat/context-planner.js';
import type { SessionView } from '../../src/context/session-view.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createMemoryLearnedLimits } from '../../src/store/learned-limits.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { writeConfigFile } from './start-gateway.js';
import { prose } from './text.js';

export const attemptsConfig = loadConfig({
  env: {
    CTXGATE_CONFIG: writeConfigFile(
      [
        'models:',
        '  - match: small-model',
        '    window: 4096',
        '    output_reserve: 256',
        '    fallbacks: [large-model]',
        '  - match: large-model',
        '    window: 32768',
        '    output_reserve: 256',
        '  - match: narrow-model',
        '    window: 4096',
        '    output_reserve: 256',
        '    fallbacks: [wide-cl100k-model]',
        '  - match: wide-cl100k-model',
        '    window: 2000000',
        '    output_reserve: 256',
        '    tokenizer: cl100k_base',
        '  - match: exact-model',
        '    window: 8192',
        '    output_reserve: 256',
        '    exact_tokenizer: true',
        '  - match: claude-model',
        '    window: 4096',
        '    output_reserve: 256',
        'upstreams:',
        '  - name: claude',
        '    base_url: http://127.0.0.1:9/v1',
        '    kind: anthropic',
        '    models: [claude-model]',
        '',
      ].join('\n'),
    ),
  },
});
const tokenizers = createTiktokenTokenizers();
const settings = { windowTtlMs: 86_400_000, reprobeAfterMs: 3_600_000 };

export function ladderFor(
  request: ChatCompletionRequest,
  options: {
    noTruncation?: boolean;
    rawBody?: Buffer;
    fieldFixes?: FieldFixes;
    precision?: 'exact' | 'sampled';
    session?: SessionView;
  } = {},
) {
  const learnedLimits = createMemoryLearnedLimits({ settings, maxEntries: 100 });
  const planner = createContextPlanner({ config: attemptsConfig, tokenizers, learnedLimits });
  const ladder = createAttemptLadder({
    planner,
    config: attemptsConfig,
    tokenizers,
    chatRequest: request,
    overrides: { historyMode: 'auto', ...(options.noTruncation === true ? { noTruncation: true } : {}) },
    session: options.session,
    target: attemptsConfig.routing.upstreamFor(request.model),
    fieldFixes: options.fieldFixes ?? createFieldFixes({ maxEntries: 10 }),
    precision: options.precision ?? 'exact',
    rawBody: options.rawBody,
    tenant: 'tenant-a',
  });
  return { ladder, learnedLimits };
}

/** A system prompt, `turns` exchanges of prose and a last user message. */
export function chat(turns: number, last = 'Now?'): ChatCompletionRequest {
  const messages: Array<{ role: string; content: string }> = [{ role: 'system', content: 'Be brief.' }];
  for (let turn = 0; turn < turns; turn++)
    messages.push(
      { role: 'user', content: prose(120, turn) },
      { role: 'assistant', content: prose(60, 50 + turn) },
    );
  messages.push({ role: 'user', content: last });
  return { model: 'small-model', messages } as ChatCompletionRequest;
}
