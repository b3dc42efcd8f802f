// Built-in model table: context windows, default output reserves and tokenizers of current model
// families, matched by name glob in order (most specific first). The config file's `models` entries
// come before these; `X-Context-Window` overrides the window per request.
import type { NoticePlacement } from '../context/notice-placement.js';
import type { EncodingName } from '../tokenizer/bpe-counter.js';

export interface ModelEntry {
  match: string;
  window: number;
  outputReserve: number;
  /**
   * The most prompt tokens the provider takes whatever the answer asks for, when less than the window
   * less the answer: GPT-5's 400,000 tokens are 272,000 of input and 128,000 of output.
   */
  maxInput?: number;
  tokenizer: EncodingName;
  /** True when the tokenizer is the model's own (OpenAI families); false for estimates. */
  exactTokenizer: boolean;
  /** How its provider writes tool definitions into the prompt: OpenAI's TypeScript namespace, or JSON. */
  toolFormat: 'typescript' | 'json';
  /**
   * Where the gateway's notices and summaries go: `inline` system messages (OpenAI's API takes them
   * anywhere), or `user` / `leading_system` for chat templates that accept a system message only first.
   */
  noticePlacement: NoticePlacement;
  /** `off`: calls the model wrote as text are left as text (config `text_tool_calls`); else read. */
  textToolCalls?: 'read' | 'off';
  /** Scale estimates by the ratio learned from the upstream's usage (estimated models only); default on. */
  calibration?: boolean;
  /** Larger-window models to send a request to when it does not fit this one (config `fallbacks`). */
  fallbacks?: readonly string[];
}

/** True for a model counted by estimate whose estimates follow the ratio learned from its upstream. */
export function isCalibrated(model: ModelEntry): boolean {
  return !model.exactTokenizer && model.calibration !== false;
}

const openai = (
  match: string,
  window: number,
  tokenizer: EncodingName,
  outputReserve = 4_096,
): ModelEntry => ({
  match,
  window,
  outputReserve,
  tokenizer,
  exactTokenizer: true,
  toolFormat: 'typescript',
  noticePlacement: 'inline',
});
const other = (match: string, window: number, outputReserve = 4_096): ModelEntry => ({
  match,
  window,
  outputReserve,
  tokenizer: 'o200k_base',
  exactTokenizer: false,
  toolFormat: 'json',
  noticePlacement: 'user',
});

/** OpenAI's 400,000-token models: 272,000 of input (docs/budgeting.md#models-and-windows). */
const gpt5Input = (entry: ModelEntry): ModelEntry => Object.assign({}, entry, { maxInput: 272_000 });

export const builtInModelTable: readonly ModelEntry[] = [
  // GPT-6 to 6.2 (Astra, Sol, Terra, Luna) and GPT-5.6 (Sol, Terra, Luna): 1,050,000 tokens each, Luna
  // too; counted with o200k_base, as every OpenAI model since GPT-4o (a count over 2% off the
  // provider's teaches a ratio: docs/budgeting.md). GPT-5.4 and 5.5: 1,050,000 tokens; their mini and
  // nano 400,000, as GPT-5's; Codex Spark 128,000. OpenAI's 400,000 are 272,000 of input and 128,000 of
  // output: a longer prompt is refused ("Input tokens exceed the configured limit of 272000 tokens")
  // whatever max_tokens asks, so those models' prompts are capped at 272,000.
  openai('gpt-6*', 1_050_000, 'o200k_base', 16_384),
  openai('gpt-5.6*', 1_050_000, 'o200k_base', 16_384),
  gpt5Input(openai('gpt-5.4-mini*', 400_000, 'o200k_base', 16_384)),
  gpt5Input(openai('gpt-5.4-nano*', 400_000, 'o200k_base', 16_384)),
  gpt5Input(openai('gpt-5.5-mini*', 400_000, 'o200k_base', 16_384)),
  gpt5Input(openai('gpt-5.5-nano*', 400_000, 'o200k_base', 16_384)),
  openai('gpt-5.4*', 1_050_000, 'o200k_base', 16_384),
  openai('gpt-5.5*', 1_050_000, 'o200k_base', 16_384),
  openai('gpt-5.3-codex-spark*', 128_000, 'o200k_base', 16_384),
  gpt5Input(openai('gpt-5*', 400_000, 'o200k_base', 16_384)),
  openai('gpt-4.1*', 1_047_576, 'o200k_base'),
  openai('gpt-4.5*', 128_000, 'o200k_base'),
  openai('gpt-4o*', 128_000, 'o200k_base'),
  openai('chatgpt-4o*', 128_000, 'o200k_base'),
  openai('o1-mini*', 128_000, 'o200k_base', 16_384),
  openai('o1*', 200_000, 'o200k_base', 16_384),
  openai('o3*', 200_000, 'o200k_base', 16_384),
  openai('o4*', 200_000, 'o200k_base', 16_384),
  // Open weights, served by vLLM, Ollama or llama.cpp with their own chat template.
  Object.assign({}, openai('gpt-oss*', 131_072, 'o200k_base', 8_192), { noticePlacement: 'user' }),
  openai('gpt-4-32k*', 32_768, 'cl100k_base'),
  openai('gpt-4-turbo*', 128_000, 'cl100k_base'),
  openai('gpt-4-1106*', 128_000, 'cl100k_base'),
  openai('gpt-4-0125*', 128_000, 'cl100k_base'),
  openai('gpt-4*', 8_192, 'cl100k_base', 1_024),
  openai('gpt-3.5-turbo*', 16_385, 'cl100k_base', 1_024),
  // Anthropic's Claude families; no public tokenizer, so counts are estimates calibrated by usage. Claude
  // 4.6 and later hold 1M tokens (Anthropic's model pages), also under Bedrock's, Vertex's and
  // OpenRouter's names; earlier ones 200,000 (1M for Sonnet 4 and 4.5 only with a beta header the
  // gateway does not assume).
  other('*claude-opus-4?6*', 1_000_000, 16_384),
  other('*claude-opus-4?7*', 1_000_000, 16_384),
  other('*claude-opus-4?8*', 1_000_000, 16_384),
  other('*claude-sonnet-4?6*', 1_000_000, 16_384),
  other('*claude-opus-5*', 1_000_000, 16_384),
  other('*claude-sonnet-5*', 1_000_000, 16_384),
  other('*claude-haiku-5*', 1_000_000, 16_384),
  other('*claude-fable-5*', 1_000_000, 16_384),
  other('*claude-mythos-5*', 1_000_000, 16_384),
  other('claude-opus-4*', 200_000, 16_384),
  other('claude-sonnet-4*', 200_000, 16_384),
  other('claude-haiku-4*', 200_000, 16_384),
  other('claude-3-7-sonnet*', 200_000, 16_384),
  other('claude-3-5-haiku*', 200_000, 8_192),
  other('*claude*', 200_000, 8_192),
  other('gemini-1.5-pro*', 2_097_152, 8_192),
  other('*gemini*', 1_048_576, 8_192),
  other('grok-4*', 256_000, 8_192),
  other('*grok*', 131_072),
  other('*deepseek*', 128_000, 8_192),
  other('*qwen2.5*', 32_768),
  other('*qwen*', 131_072),
  other('*llama*', 131_072),
  other('*codestral*', 256_000),
  other('*mistral-large*', 131_072),
  other('*mistral*', 32_768),
  other('*mixtral*', 32_768),
  other('*command-r*', 128_000),
];

export const fallbackModelEntry: ModelEntry = other('*', 128_000);
