// The built-in model table: real model names land on their family's window (the first match wins, so a
// more specific family must stand before a broader one), and docs/budgeting.md lists every entry with
// the window and reserve the code uses.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { globToRegExp } from '../../src/config/glob.js';
import { builtInModelTable, fallbackModelEntry, type ModelEntry } from '../../src/config/model-table.js';

const entryFor = (model: string): ModelEntry =>
  builtInModelTable.find((entry) => globToRegExp(entry.match).test(model)) ?? fallbackModelEntry;

describe('the built-in model table', () => {
  it.each<[string, number, number, string]>([
    // Windows and reserves as the providers publish them.
    ['gpt-5', 400_000, 16_384, 'o200k_base'],
    ['gpt-5-mini-2025-08-07', 400_000, 16_384, 'o200k_base'],
    // GPT-5.4 and 5.5 hold 1,050,000 tokens, their mini and nano 400,000; GPT-5.3 Codex Spark 128,000.
    ['gpt-5.4', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-5.4-2026-03-05', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-5.5-pro', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-5.4-mini', 400_000, 16_384, 'o200k_base'],
    ['gpt-5.4-nano-2026-03-17', 400_000, 16_384, 'o200k_base'],
    ['gpt-5.3-codex-spark', 128_000, 16_384, 'o200k_base'],
    ['gpt-5.3-codex', 400_000, 16_384, 'o200k_base'],
    // GPT-5.6 (Sol, Terra, Luna) and GPT-6 to 6.2 (Astra, Sol, Terra, Luna): 1,050,000 each, Luna too.
    ['gpt-5.6', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-5.6-sol', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-5.6-terra', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-5.6-luna', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-6-astra', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-6-luna', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-6.1-terra', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-6.2-sol', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-6.2-astra', 1_050_000, 16_384, 'o200k_base'],
    ['gpt-4.1-nano', 1_047_576, 4_096, 'o200k_base'],
    ['gpt-4o-mini-2024-07-18', 128_000, 4_096, 'o200k_base'],
    ['chatgpt-4o-latest', 128_000, 4_096, 'o200k_base'],
    ['o1-mini-2024-09-12', 128_000, 16_384, 'o200k_base'],
    ['o1-preview', 200_000, 16_384, 'o200k_base'],
    ['o3-mini', 200_000, 16_384, 'o200k_base'],
    ['o4-mini', 200_000, 16_384, 'o200k_base'],
    ['gpt-oss-20b', 131_072, 8_192, 'o200k_base'],
    ['gpt-4-32k-0613', 32_768, 4_096, 'cl100k_base'],
    ['gpt-4-turbo-2024-04-09', 128_000, 4_096, 'cl100k_base'],
    ['gpt-4-1106-preview', 128_000, 4_096, 'cl100k_base'],
    ['gpt-4-0125-preview', 128_000, 4_096, 'cl100k_base'],
    ['gpt-4-0613', 8_192, 1_024, 'cl100k_base'],
    ['gpt-3.5-turbo-0125', 16_385, 1_024, 'cl100k_base'],
    // Claude 4.6 and later: 1M tokens natively (Anthropic's model pages), under the names Anthropic,
    // Bedrock, Vertex and OpenRouter give them.
    ['claude-opus-4-6', 1_000_000, 16_384, 'o200k_base'],
    ['claude-opus-4-7', 1_000_000, 16_384, 'o200k_base'],
    ['claude-opus-4-8', 1_000_000, 16_384, 'o200k_base'],
    ['claude-sonnet-4-6', 1_000_000, 16_384, 'o200k_base'],
    ['us.anthropic.claude-opus-4-8-v1:0', 1_000_000, 16_384, 'o200k_base'],
    ['anthropic/claude-sonnet-4.6', 1_000_000, 16_384, 'o200k_base'],
    ['claude-opus-5', 1_000_000, 16_384, 'o200k_base'],
    ['claude-opus-5-5', 1_000_000, 16_384, 'o200k_base'],
    ['claude-sonnet-5', 1_000_000, 16_384, 'o200k_base'],
    ['claude-sonnet-5-5@20260901', 1_000_000, 16_384, 'o200k_base'],
    ['claude-haiku-5-5', 1_000_000, 16_384, 'o200k_base'],
    ['claude-fable-5-2', 1_000_000, 16_384, 'o200k_base'],
    ['claude-mythos-5-1', 1_000_000, 16_384, 'o200k_base'],
    // Claude 4.5 and earlier: 200,000.
    ['claude-opus-4-5-20251101', 200_000, 16_384, 'o200k_base'],
    ['claude-haiku-4-5-20251001', 200_000, 16_384, 'o200k_base'],
    ['claude-sonnet-4-5-20250929', 200_000, 16_384, 'o200k_base'],
    ['claude-opus-4-20250514', 200_000, 16_384, 'o200k_base'],
    ['claude-opus-4-1-20250806', 200_000, 16_384, 'o200k_base'],
    ['claude-opus-4-1', 200_000, 16_384, 'o200k_base'],
    ['claude-3-5-haiku-latest', 200_000, 8_192, 'o200k_base'],
    ['anthropic/claude-3-opus', 200_000, 8_192, 'o200k_base'],
    ['gemini-1.5-pro-002', 2_097_152, 8_192, 'o200k_base'],
    ['models/gemini-2.5-flash', 1_048_576, 8_192, 'o200k_base'],
    ['grok-4-0709', 256_000, 8_192, 'o200k_base'],
    ['grok-3-mini', 131_072, 4_096, 'o200k_base'],
    ['deepseek-chat', 128_000, 8_192, 'o200k_base'],
    ['Qwen2.5-Coder-7B-Instruct', 32_768, 4_096, 'o200k_base'],
    ['qwen3-32b', 131_072, 4_096, 'o200k_base'],
    ['meta-llama/Llama-3.3-70B-Instruct', 131_072, 4_096, 'o200k_base'],
    ['codestral-2501', 256_000, 4_096, 'o200k_base'],
    ['mistral-large-latest', 131_072, 4_096, 'o200k_base'],
    ['mistral-small-latest', 32_768, 4_096, 'o200k_base'],
    ['open-mixtral-8x22b', 32_768, 4_096, 'o200k_base'],
    ['command-r-plus', 128_000, 4_096, 'o200k_base'],
    ['some-local-model', 128_000, 4_096, 'o200k_base'],
  ])('puts %s at %i tokens, reserve %i, counted with %s', (model, window, reserve, tokenizer) => {
    const entry = entryFor(model);
    expect({ window: entry.window, reserve: entry.outputReserve, tokenizer: entry.tokenizer }).toEqual({
      window,
      reserve,
      tokenizer,
    });
  });

  it('counts exactly only what OpenAI tokenizes, and places notices inline only for its API', () => {
    for (const entry of builtInModelTable) {
      const openAIHosted = /^(gpt-|chatgpt-|o\d)/.test(entry.match) && !entry.match.startsWith('gpt-oss');
      expect(entry.noticePlacement === 'inline', entry.match).toBe(openAIHosted);
      expect(entry.exactTokenizer, entry.match).toBe(openAIHosted || entry.match.startsWith('gpt-oss'));
    }
  });

  it.each(['gpt-5.6-luna', 'gpt-6.2-sol', 'gpt-6-astra'])(
    'counts %s exactly, as OpenAI tokenizes it, with notices inline',
    (model) => {
      const entry = entryFor(model);
      expect({
        exact: entry.exactTokenizer,
        notices: entry.noticePlacement,
        tools: entry.toolFormat,
      }).toEqual({
        exact: true,
        notices: 'inline',
        tools: 'typescript',
      });
    },
  );

  it('is listed in docs/budgeting.md as it is, entry by entry and in order', () => {
    const docs = readFileSync(new URL('../../docs/budgeting.md', import.meta.url), 'utf8');
    const section = docs.slice(docs.indexOf('## Models and windows'), docs.indexOf('## Reactive recovery'));
    const number = (text: string | undefined) => Number((text ?? '').replace(/ /g, ''));
    // | `glob` | window | reserve | `tokenizer` or estimate | `placement` |
    const documented = [
      ...section.matchAll(/^\| (`[^`]+`|anything else) \| ([\d ]+) \| ([\d ]+) \| ([^|]+) \| `(\w+)` \|$/gm),
    ].map(([, glob, window, reserve, tokens, notices]) => ({
      match: glob === 'anything else' ? '*' : (glob ?? '').slice(1, -1),
      window: number(window),
      outputReserve: number(reserve),
      tokens: (tokens ?? '').trim(),
      noticePlacement: notices,
    }));
    const inCode = [...builtInModelTable, fallbackModelEntry].map((entry) => ({
      match: entry.match,
      window: entry.window,
      outputReserve: entry.outputReserve,
      tokens: entry.exactTokenizer ? `\`${entry.tokenizer}\`` : 'estimate',
      noticePlacement: entry.noticePlacement,
    }));
    expect(documented).toEqual(inCode);
    // And the models whose prompt is capped below their window, with the cap.
    const capped = /Capped at ([\d ]+) prompt tokens: ((?:`[^`]+`,?\s*)+)\./.exec(section);
    const cappedInCode = builtInModelTable.filter((entry) => entry.maxInput !== undefined);
    expect(cappedInCode.map((entry) => entry.maxInput)).toEqual(cappedInCode.map(() => number(capped?.[1])));
    expect([...(capped?.[2] ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1])).toEqual(
      cappedInCode.map((entry) => entry.match),
    );
  });

  it.each(['gpt-5', 'gpt-5.2-codex', 'gpt-5-mini-2025-08-07', 'gpt-5.4-nano'])(
    'caps %s’s prompt at 272,000 of its 400,000 tokens, as OpenAI refuses past it',
    (model) => {
      expect({ window: entryFor(model).window, maxInput: entryFor(model).maxInput }).toEqual({
        window: 400_000,
        maxInput: 272_000,
      });
    },
  );

  it.each(['gpt-5.4', 'gpt-4.1', 'claude-opus-4-5-20251101', 'some-local-model'])(
    'caps nothing below the window for %s',
    (model) => {
      expect(entryFor(model).maxInput).toBeUndefined();
    },
  );
});
