// A strict fake OpenAI-compatible provider for tests and benchmarks. It refuses what the real API
// refuses (orphaned tool messages, tool calls without results, a call sent back whose id, name or
// arguments are not text, images outside user messages, prompts over the model's window, bad keys, the
// escape of a lone surrogate half as DeepSeek's serde parser does), answers like OpenAI (chat.completion objects, SSE chunks, [DONE]), and can be scripted per
// request to delay, stall, break off or fail; a `respond` (a fake agent reading its own trajectory)
// decides only on a request it answers, as a model never sees one refused before it. Token counts use
// js-tiktoken directly with the cookbook method, independently of the gateway's own accounting.
import {
  fireworksSchemaRefusal,
  geminiSchemaRefusal,
  moonshotSchemaRefusal,
  openAISchemaRefusal,
} from './tool-schema-rules.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEncoding, type Tiktoken } from 'js-tiktoken';
import { firstLoneHalf } from './lone-surrogates.js';
import { pdfOfDataUrl, pdfPageTexts } from './pdf.js';

export interface ScriptedToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** How the fake answers one request; anything left out takes the default behaviour. */
export interface Behaviour {
  /** Answer with this status and raw body instead of a completion. */
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  content?: string;
  toolCalls?: ScriptedToolCall[];
  /** Number of content chunks a stream is split into (default 5). */
  chunks?: number;
  delayBeforeHeadersMs?: number;
  chunkDelayMs?: number;
  /** Destroy the socket after this many stream chunks. */
  breakAfterChunks?: number;
  /** Like breakAfterChunks, but first send half of the next chunk: the cut falls inside an event. */
  breakMidEvent?: boolean;
  /** End the response cleanly (no finish, no [DONE]) after this many stream chunks. */
  endAfterChunks?: number;
  /** Stop sending (but keep the connection open) after this many stream chunks. */
  stallAfterChunks?: number;
  omitDone?: boolean;
  /** Non-streaming: send the headers and half of the JSON body, then fall silent. */
  stallMidBody?: boolean;
  /** Answer only once this settles (after `delayBeforeHeadersMs`): the test says when, not a clock. */
  answerWhen?: Promise<unknown>;
  /** Stream: after this many chunks, send the rest only once `resumeWhen` settles. */
  pauseAfterChunks?: number;
  resumeWhen?: Promise<unknown>;
}

/** A promise the test opens when it chooses: for `answerWhen` and `resumeWhen`. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  rawBody: string;
  /** The body's bytes as received (multipart uploads, audio). */
  bodyBytes: Buffer;
  /** The request target's query string, without the `?`. */
  query: string;
  body: unknown;
  promptTokens: number | undefined;
  /** What the usage said the prompt cache held (reportsCachedTokens). */
  cachedTokens?: number;
  receivedAtMs: number;
  /** Resolves with the time the client side closed the connection before the answer was complete. */
  closedEarly: Promise<number>;
  completed: boolean;
  /** The status it was answered with, once its head was written. */
  status?: number;
  /** On a summarization request: how many others were received and not yet answered when it came. */
  summariesOpenOnArrival?: number;
}

export interface FakeUpstreamOptions {
  /** Context windows by model name; other models get `defaultWindow`. */
  windows?: Record<string, number>;
  defaultWindow?: number;
  /** When set, requests must carry `Authorization: Bearer <key>`. */
  requiredApiKey?: string;
  /** Keep only the last N recorded requests (benchmarks send many). */
  recordLimit?: number;
  /** `approximate` (characters / 4) keeps the fake cheap when it is not what a benchmark measures. */
  tokenCounting?: 'tiktoken' | 'approximate';
  /**
   * How the fake refuses a request over its window, when not as OpenAI does: another provider's
   * status and body (an SSE body is sent as a 200 event stream).
   */
  overflowAnswer?: (overflow: OverflowFacts) => {
    status: number;
    body: string;
    /** An SSE answer: its headers and a processing comment at once, the body only once this settles. */
    heldUntil?: Promise<unknown>;
  };
  /** Prompt tokens of a model count this many times the cookbook count (another tokenizer). */
  promptTokenScale?: Record<string, number>;
  /** Tokens the provider counts for each image part (its own sizing; the gateway's formula may differ). */
  imageTokens?: number;
  /**
   * Tokens a model's chat template adds to every prompt, whatever its length (Llama 3's date header,
   * Qwen's default system prompt), by model.
   */
  templateTokens?: Record<string, number>;
  /**
   * Models whose usage counts only the prompt tokens past what the previous request to them left in
   * the server's prompt cache (Ollama 0.30 did: a conversation's next turn reports its new tokens).
   */
  countsUncachedOnly?: readonly string[];
  /** Models whose prompts over the window are cut and answered anyway, reporting the kept tokens. */
  truncateSilently?: readonly string[];
  /**
   * An extractive summarizer: a request whose system message asks for a summary is answered with the
   * lines of its other messages that match this pattern (each once, in order).
   */
  extractiveSummaries?: RegExp;
  /**
   * Models with a cap on the prompt alone, below their window (OpenAI's GPT-5 family: 272,000 of its
   * 400,000 tokens), refusing a prompt over it whatever max_tokens asks, in OpenAI's words.
   */
  inputLimits?: Readonly<Record<string, number>>;
  /** Answers summarization requests (and their repair requests) instead (test/helpers/fake-summarizers.ts). */
  summarizer?: (messages: ReadonlyArray<{ role: string; content?: unknown }>) => string;
  /**
   * How an ordinary request is answered, decided from the messages it carries (a fake agent that reads
   * its own trajectory); undefined: as usual.
   */
  respond?: (messages: ReadonlyArray<ChatMessage>, body: Record<string, unknown>) => Behaviour | undefined;
  /** Answers a request to any path but chat completions and the model list (embeddings, audio, files…). */
  otherRoutes?: (
    request: RecordedRequest,
  ) => { status: number; headers?: Record<string, string>; body: string | Buffer } | undefined;
  /**
   * Models (or all, `true`) served with a chat template that accepts one system message, first: a
   * developer message is refused with vLLM's 400 as Qwen's template refuses it, a system message anywhere
   * but first as Mistral's and Gemma's templates refuse it.
   */
  systemOnlyFirst?: readonly string[] | true;
  /**
   * Models served with no system role at all, as Gemma's: a system or developer message anywhere is
   * refused — a Gemma 3 model (`gemma-3…`) as Google's API serves it ("Developer instruction is not
   * enabled for models/gemma-3-27b-it", lobehub/lobehub#7128, google/adk-python#3900), any other as vLLM
   * serves Gemma 2 with its own template ("System role not supported", huggingface/chat-ui#1386).
   */
  noSystemRole?: readonly string[];
  /** Models served as vLLM serves one that takes no images: a request holding an image is refused. */
  textOnly?: readonly string[];
  /**
   * Models as OpenRouter routes them when no endpoint has what a request asks: a request holding an image,
   * forcing a tool (`required`, a named one), or marking a content part for caching (`cache_control`), is
   * refused with a 404 in its words (openclaw/openclaw#99078, zed-industries/zed#36094,
   * musistudio/claude-code-router#207).
   */
  openRouterRouting?: readonly string[];
  /**
   * Models served as DeepSeek's API serves its own, which takes no file part: a request holding one is
   * refused ("Failed to deserialize the JSON body into the target type: messages[1]: unknown variant
   * `file`, expected `text`").
   */
  noFiles?: readonly string[];
  /**
   * Models served as vLLM serves one with `--limit-mm-per-prompt`, by the most images it takes in a
   * request: a request holding more is refused ("At most 4 image(s) may be provided in one request.").
   */
  imageLimits?: Readonly<Record<string, number>>;
  /**
   * The most bytes a request body may have, as GitHub Copilot's chat endpoint takes about 5.2 MB: a
   * larger one is refused with its 413 (`{"error":{"message":"failed to parse request","code":""}}`).
   */
  maxRequestBytes?: number;
  /** Refuses a body over `maxRequestBytes` with a bare 413, no body at all (as Copilot has been seen to). */
  bareTooLarge?: boolean;
  /**
   * Models (or all) whose template also checks that user and assistant messages alternate after the
   * system message, tool calls and their results aside, as Devstral's and Mistral's tool templates do
   * (two user messages in a row are refused).
   */
  alternating?: readonly string[] | true;
  /**
   * Models as Perplexity's API serves them: system messages only first, then user and assistant messages
   * alternating from a user message, refused in its words ("After the (optional) system message(s), user
   * and assistant roles should be alternating.": perplexityai/api-discussion#265).
   */
  perplexityRules?: readonly string[];
  /**
   * Models as Bedrock's Converse API serves them behind LiteLLM: a conversation must start with a user
   * message after its system messages (one of system messages only too), refused in Bedrock's words as
   * LiteLLM passes them on (pydantic/pydantic-ai#4495, aws-solutions-library-samples/guidance-for-multi-
   * provider-generative-ai-gateway-on-aws#123).
   */
  userFirst?: readonly string[];
  /**
   * Models that think as DeepSeek's V4 and Kimi's K2 do, thinking on by default: every answer carries
   * `reasoning_content` (streamed before the answer), and an assistant message with tool calls sent back
   * without its `reasoning_content` is refused with DeepSeek's 400.
   */
  thinking?: readonly string[];
  /**
   * The name the thinking models give their reasoning: `reasoning_content` (the default, as DeepSeek and
   * Kimi, which refuse a tool call sent back without it), or `reasoning` as vLLM 0.17 and later serve
   * Qwen or Kimi — which refuse nothing: what comes back under another name never reaches the template.
   */
  reasoningField?: 'reasoning_content' | 'reasoning';
  /**
   * Models served as OpenAI serves its reasoning models (o-series, GPT-5): `max_tokens` and a
   * `temperature` other than 1 are refused with OpenAI's 400 (`unsupported_parameter`, `unsupported_value`).
   */
  reasoningModels?: readonly string[];
  /**
   * Top-level request fields refused as Mistral's API refuses what it does not know: a 422 whose
   * validation errors (`extra_forbidden`) name every such field the request carries.
   */
  forbiddenFields?: readonly string[];
  /**
   * Tool call ids as Mistral's API has them: its answers' ids are 9 letters and digits, and a request
   * holding any other (a call's id or a tool message's) is refused with Mistral's 400.
   */
  mistralToolCallIds?: boolean;
  /**
   * Messages as Mistral's API takes them: a field its schema does not have for the message's role (a
   * thinking model's `reasoning_content`, OpenRouter's `reasoning_details`, a user's `name`, even when
   * null) or for a tool call (Gemini's `extra_content`) is refused with the 422 `extra_forbidden` it
   * gives for a top-level field (with `forbiddenFields`), located in the message; and a user message right
   * after tool results is refused as out of order.
   */
  mistralMessages?: boolean;
  /**
   * Models that think as Mistral's reasoning models (Magistral) do: an answer's content is a list of
   * chunks, its thinking (`{type: "thinking", thinking: [{type: "text", text}]}`) then its text
   * (`{type: "text", text}`); a stream's deltas carry such lists as their content, the thinking in pieces,
   * then the text in pieces.
   */
  mistralThinking?: readonly string[];
  /**
   * Models that think in their content, as Ollama, llama.cpp and vLLM without a reasoning parser serve
   * DeepSeek-R1's distills, QwQ and Qwen3: an answer's content starts with `<think>`, the thinking,
   * `</think>`, then the answer (a stream carries the same text in pieces).
   */
  thinkTags?: readonly string[];
  /**
   * Models that think before every answer and count their thinking in the answer's cap, as DeepSeek,
   * Kimi, GLM and Gemini do by default (a Kimi K2.5 answer at `max_tokens: 200`: content '', finish
   * "length", 199 reasoning tokens of 200 — BerriAI/litellm-docs#559): model → the tokens each answer
   * thinks. An answer whose cap (`max_tokens` or `max_completion_tokens`) is not above them is cut while
   * thinking: no content, `finish_reason: "length"`, all of its tokens reasoning tokens. Whole answers only.
   */
  thinkingSpends?: Readonly<Record<string, number>>;
  /**
   * Models served as Gemini 3 is through Google's OpenAI-compatible endpoint: the first tool call of each
   * answer carries `extra_content.google.thought_signature` (in the stream, on the call's first delta),
   * and a request whose current turn (after its last user message) holds an assistant message whose
   * first tool call has no signature is refused with Gemini's 400, an array around the error as Google
   * sends it. A signature this fake did not give, nor one of the two Google documents for calls another
   * model made, is refused as corrupted.
   */
  thoughtSignatures?: readonly string[];
  /**
   * Models served as OpenRouter serves Claude with reasoning on: each answer carries its reasoning as
   * `reasoning` and as `reasoning_details` (a `reasoning.text` entry with Claude's signature; in a stream,
   * the text in pieces and the signature last, each a delta of index 0), and a request whose last
   * assistant message with tool calls after the last user message has no `reasoning_details` with a
   * signature this fake gave is refused as OpenRouter passes Anthropic's refusal on, and so is one holding a
   * signature it gave another model anywhere; so is a request of more than 4 content parts marked with
   * `cache_control` (Claude's cache breakpoints).
   */
  reasoningDetails?: readonly string[];
  /**
   * Models served as SGLang, Cloudflare Workers AI and OpenCode's Zen gateway stream tool calls
   * (sgl-project/sglang#35542, anomalyco/opencode#43328): each continuation delta of a call repeats
   * `id`, `type` and `function.name` as null instead of leaving them out, and the text-only deltas say
   * `tool_calls: null`.
   */
  nullPaddedToolDeltas?: readonly string[];
  /**
   * Models served as llama-server builds of March 2026 served them (ggml-org/llama.cpp#20198, and
   * `--tool-args-object` since): a whole answer's tool call gives its `arguments` as the decoded JSON
   * object rather than its text. Requests may send either form, as llama-server accepts both.
   */
  decodedToolArguments?: readonly string[];
  /**
   * Models served as some OpenAI-compatible endpoints serve them (openai/openai-dotnet#428,
   * pydantic/pydantic-ai#1879): every tool call's id is empty, and each result answers the calls in
   * their order.
   */
  emptyToolCallIds?: readonly string[];
  /**
   * Models whose streamed tool calls depart from OpenAI's deltas as some servers' do
   * (docs/budgeting.md#tool-calls-as-providers-give-them):
   * - `same-index`: every call at index 0, each beginning with its own id and name (Gemini's
   *   OpenAI-compatible endpoint, NousResearch/hermes-agent#62937; SGLang, sgl-project/sglang#6310);
   * - `repeated-fields`: every delta of a call repeats its index, id, type and whole name (MiniMax on
   *   NVIDIA NIM, NousResearch/hermes-agent#8259; Fireworks, SillyTavern/SillyTavern#5948);
   * - `indexless-whole`: each call whole in one delta without an index (a gateway translating Gemini's
   *   or Bedrock's answers, QuantumNous/new-api#672, envoyproxy/ai-gateway#1468).
   */
  toolDeltaDialects?: Readonly<
    Record<string, 'same-index' | 'repeated-fields' | 'indexless-whole' | 'name-in-pieces'>
  >;
  /**
   * Models served as Kimi K2 is: its tool call ids are `functions.<name>:<n>`, n counting the calls of
   * the conversation (moonshotai/Kimi-K2's chat template), and a history holding another id (another
   * model's `call_…`, after a client switched models) puts it off its training: it ends the turn at once
   * with nothing (getkimchi/kimchi#1063: 1 turn in 10 acted).
   */
  kimiToolCallIds?: readonly string[];
  /**
   * Models served as OpenVINO's model server streams them: chunks without an `id`
   * (openvinotoolkit/model_server#3553), which strict clients refuse (64bit/async-openai#408); and a whole
   * answer without its `id` and `created`, as some OpenAI-compatible servers give one (dongri/openai-api-rs#146).
   */
  idlessChunks?: readonly string[];
  /**
   * Models served as OpenCode's Zen gateway streams them: after the answer's chunks, an event of its cost
   * alone, `{"choices":[],"cost":"0"}`, without the `id`, `object`, `created` and `model` every chunk has
   * (anomalyco/opencode#39061: strict decoders fail on it with "missing field id").
   */
  costChunks?: readonly string[];
  /**
   * Models answered as GitHub Copilot's API and Azure-flavored endpoints answer: a whole answer with its
   * `id` but without `object` and `created` (0xPlaygrounds/rig#1451, spring-projects/spring-ai#6010).
   */
  noCreated?: readonly string[];
  /**
   * Models served as MiniMax's API, Baidu Qianfan and Snowflake Cortex stream them: every delta says
   * `role: ""` (Th0rgal/sandboxed.sh#143), which the AI SDK's OpenAI provider refuses (it takes
   * `"assistant"` or none).
   */
  emptyRoles?: readonly string[];
  /**
   * Models whose stream's usage chunk has no `choices` (Vercel's v0 API: vercel/ai#7417; ROCm/ATOM#1711),
   * which the AI SDK refuses ("expected array, received undefined").
   */
  usageWithoutChoices?: readonly string[];
  /**
   * Models streamed as Cloudflare Workers AI's OpenAI-compatible endpoint streams them: choices without
   * their `index` (vercel/ai#4031), which the AI SDK's OpenAI provider refuses ("expected number").
   */
  choicesWithoutIndex?: readonly string[];
  /**
   * Models served as DashScope's Coding Plan paths and QwenLM's chat API stream them: each delta of the
   * text and of the reasoning is the whole of it so far, not what is new (QwenLM/qwen-code#3896,
   * CherryHQ/cherry-studio#833) — clients that join deltas show and keep every prefix again.
   */
  cumulativeDeltas?: readonly string[];
  /**
   * Models whose streamed calls' arguments come as DeepSeek's and Baidu Qianfan's in cumulative mode, and
   * some llama.cpp builds', do: each delta the whole of them so far (NousResearch/hermes-agent#35718,
   * openclaw/openclaw#89070), and once whole, the whole again, as a proxy before Claude or Gemini
   * re-sends them (mudler/cogito#66). A client that joins them has `{…}{…}`, which is not JSON.
   */
  cumulativeArguments?: readonly string[];
  /**
   * Models whose usage says what the provider's prompt cache held, as OpenAI and DeepSeek say it: the
   * tokens of the previous request to the model when this one begins with its messages, as
   * `prompt_tokens_details.cached_tokens` (and DeepSeek's `prompt_cache_hit_tokens` for a `deepseek-` model).
   */
  reportsCachedTokens?: readonly string[];
  /**
   * Models served as some OpenAI-compatible servers serve them: an answer reports no `usage`, whole or
   * streamed, whatever `stream_options` asks (anomalyco/opencode#13141, charmbracelet/crush#2891).
   */
  noUsage?: readonly string[];
  /**
   * Models whose every answer finishes for one reason whatever it holds: `stop`, as Gemini's
   * OpenAI-compatible endpoint and LiteLLM before Ollama say it after calls too (anomalyco/opencode#14972,
   * #20719); `tool_calls`, as a proxy before Claude said it of an answer of no call (mastra-ai/mastra#14187);
   * another server's word, as Together says `eos` (vespa-engine/vespa#33327).
   */
  finishReasons?: Readonly<Record<string, string>>;
  /**
   * Models served as SGLang 0.4.3 and Ollama's OpenAI-compatible endpoint of 2024 stream them: every chunk
   * before the last says `finish_reason: ""`, not null (sgl-project/sglang#3912, ollama/ollama#4357), or
   * the string `"null"` as KoboldCpp did (PowerShell/AIShell#350), or `"None"` as SGLang did in August 2024
   * (vercel/ai#2548), which strongly typed clients refuse
   * ("Unknown ChatFinishReason value."); and a whole answer says no finish at all, as KoboldCpp's did.
   */
  blankFinishes?: Readonly<Record<string, '' | 'null' | 'None'>>;
  /**
   * Models served as Ollama's OpenAI-compatible endpoint writes its JSON, with Go's encoding/json: `<`, `>`
   * and `&` in strings as `\u003c`, `\u003e` and `\u0026` (`"content":"\u003ctool_call\u003e …"`).
   */
  goJson?: readonly string[];
  /**
   * Models served without their tool parser, which write a call as their template does, in `content`,
   * and give no `tool_calls` (finishing `stop`): Hermes' and Qwen's `<tool_call>{json}</tool_call>` (LM
   * Studio, vLLM without --enable-auto-tool-choice), Qwen3-Coder's `<tool_call><function=…>` form
   * (lmstudio-ai/lmstudio-bug-tracker#2115), GLM's `<tool_call>NAME<arg_key>…` form
   * (lmstudio-ai/lmstudio-bug-tracker#829), the call's JSON alone (Ollama's qwen2.5-coder,
   * ollama/ollama#13519), or Mistral's `[TOOL_CALLS]name[ARGS]{…}` (Mistral Small 3.2, Devstral:
   * lmstudio-ai/lmstudio-bug-tracker#797) and `[TOOL_CALLS][{…}]` (Mistral 7B v0.3), or GPT-OSS's Harmony
   * markup (lablup/mlxcel#654), or Kimi K2's section (`<|tool_calls_section_begin|>…`: Kimi K2.6 through
   * OpenRouter, NousResearch/hermes-agent#24534), or MiniMax-M2's `<minimax:tool_call><invoke name=…>`
   * (llama.cpp without its parser: ggml-org/llama.cpp#16904), or DeepSeek V4's `<tool_call id="…" name="…">{…}`
   * (its own API, now and then: felinics/Memoh#435), or DeepSeek V4's DSML (`<｜DSML｜tool_calls>…`: vLLM's
   * parser missed it, vllm-project/vllm#54686), or LFM2's Python calls (`<|tool_call_start|>[f(k='v')]…`:
   * lmstudio-ai/lmstudio-bug-tracker#1979), or Llama 4's JSON between `<|python_start|>` and `<|python_end|>`
   * (Bedrock: pydantic/pydantic-ai#2033). `lead` puts a sentence before the calls.
   * `draft` writes the model's reasoning first, in which it drafts the same calls before it makes them, as
   * Qwen's thinking models do (PrimeIntellect-ai/renderers#78): its `<think>` opened by the model, or by its
   * template (the text begins inside the reasoning and only closes it). `inReasoning` writes the calls at the end of the
   * model's reasoning, which its server gives under its reasoning field, with no text and no call (vLLM
   * 0.19's parsers with Qwen3.5: vllm-project/vllm#39056).
   */
  textToolCalls?: Readonly<
    Record<
      string,
      {
        form: TextCallForm;
        lead?: string;
        draft?: 'opened' | 'template';
        inReasoning?: boolean;
      }
    >
  >;
  /**
   * Models served as Claude is behind an OpenAI-compatible endpoint (OpenRouter, LiteLLM): a tool call id
   * of anything but letters, digits, `_` and `-` is refused as Anthropic refuses it, passed on in
   * OpenAI's shape (farion1231/cc-switch#1181: Kimi's `functions.<name>:<n>` after a switch to Claude).
   */
  claudeToolCallIds?: readonly string[];
  /**
   * Models served as GitHub Copilot's chat endpoint and Azure OpenAI serve them: a tool description
   * longer than this many characters is refused in OpenAI's words (getsentry/sentry-mcp#106).
   */
  toolDescriptionLimit?: Readonly<Record<string, number>>;
  /**
   * Models served as Gemini serves them, behind its OpenAI-compatible endpoint or a gateway: a tool whose
   * parameters hold a keyword outside Gemini's Schema object (`$schema`, `additionalProperties`, `const`),
   * a list of types or an enum of other than text is refused in Gemini's words (zed-industries/zed#45552),
   * and so is a message of no text (a tool result of `""`: microsoft/autogen#5762), a `seed` and the penalties.
   */
  geminiRules?: readonly string[];
  /**
   * Models served as Moonshot serves Kimi: a tool's parameters are held to its flavored JSON Schema and the
   * first fault refused in its words, with its place (test/helpers/tool-schema-rules.ts), and an answer of
   * neither text nor calls in the history refused in its words, with its position (CherryHQ/cherry-studio#1313).
   */
  moonshotRules?: readonly string[];
  /**
   * Models served as Fireworks serves Kimi: the branches of a tool's `allOf` merged into one schema, a
   * keyword two of them give differently refused in its words (test/helpers/tool-schema-rules.ts).
   */
  fireworksRules?: readonly string[];
  /**
   * Models' longest answers: a larger `max_tokens` (or `max_completion_tokens`) is refused in DeepSeek's
   * words for a `deepseek-` model (Gitlawb/openclaude#35), in OpenAI's for any other.
   */
  maxAnswerTokens?: Readonly<Record<string, number>>;
  /**
   * Models served as DeepSeek's API serves them: a `developer` message is refused in its words (serde's
   * enum of roles: icebear0828/codex-proxy#589).
   */
  noDeveloperRole?: readonly string[];
  /**
   * Models served by a server that takes a message's content only as a string: text parts are refused
   * in serde's words (0x676e67/duckai#16).
   */
  stringContentOnly?: readonly string[];
  /**
   * Models served as DeepSeek's API serves them: a tool message's content given as parts is refused at the
   * message, in serde's words ("messages[5]: invalid type: sequence, expected a string": Gitlawb/openclaude#806).
   */
  stringToolContent?: readonly string[];
  /**
   * Models served as LM Studio served them: a null content is refused beside tool calls too, in its words
   * (lmstudio-ai/lmstudio-bug-tracker#261).
   */
  noNullContent?: readonly string[];
  /**
   * Models served as vLLM serves them: every call sent back has its arguments read as JSON before the
   * template runs, and one that is not JSON is refused with Python's words (vllm-project/vllm#43995).
   */
  jsonToolArguments?: readonly string[];
  /**
   * Models that think on every request and then take no forced tool choice (`required`, a named tool):
   * refused in DeepSeek V4's words for a `deepseek-` model (deepseek-ai/DeepSeek-V3#1376), in Alibaba
   * DashScope's for any other (cloudwego/eino#994).
   */
  thinkingToolChoice?: readonly string[];
  /**
   * Models served as Z.AI serves GLM: a tool choice other than `auto` refused in its words, as OpenRouter
   * passes them on ("Tool choice must be auto": vectorize-io/hindsight#4246).
   */
  autoToolChoiceOnly?: readonly string[];
  /**
   * Models as a relay that writes a chat request for the Responses API serves them, a tool choice of `auto`
   * written as `{"type": "auto"}`, which the Responses API refuses (CLIProxyAPI in front of gpt-5.6-sol:
   * Kilo-Org/kilocode#13082); a request that names no choice takes the default, as the Responses API does.
   */
  autoChoiceAsObject?: readonly string[];
  /**
   * Models as MiniMax's OpenAI-compatible API serves them: a function tool without `parameters` is refused
   * ("invalid params, function parameters is empty (2013)": QwenLM/qwen-code#11905, which leaves them out
   * of a tool that takes none), and so is a call sent back whose arguments are not a JSON object ("invalid
   * params, invalid function arguments json string, tool_call_id: … (2013)": NousResearch/hermes-agent#12167).
   */
  minimaxRules?: readonly string[];
  /**
   * Models as xAI's API serves its reasoning models: `reasoning_effort` is refused in its words ("Model
   * grok-4-1-fast-reasoning does not support parameter reasoningEffort.": JetBrains/junie#39), and so is a
   * message of no content, a call's included ("Invalid request content: Each message must have at least
   * one content element.": langchain-ai/langchain#34140), and a `name` on a message not the user's
   * ("Invalid request content: Only message of role user can have a name.": pipecat-ai/pipecat#2274).
   */
  xaiRules?: readonly string[];
  /**
   * Models served as OpenAI serves them: a message's `name` of other than letters, digits, `_` and `-` (an
   * agent named "Research Agent") refused in OpenAI's words (microsoft/semantic-kernel#9340).
   */
  openaiNames?: readonly string[];
  /** Models that hold their temperature at one value (Kimi's thinking models: 1): any other is refused in Kimi's words. */
  fixedTemperature?: Readonly<Record<string, number>>;
  /**
   * Models served as Groq serves them: `store`, a message field its schema does not have (a thinking
   * model's `reasoning_content`, OpenAI's `refusal` and `annotations`) and the content of a message other
   * than the user's as parts are refused in its words (SimonSchubert/Kai#265, fanenr/chatbot#21,
   * OpenHands/OpenHands#4643).
   */
  groqRules?: readonly string[];
  /**
   * Models served as Cerebras serves them: a message field its schema does not have (a thinking model's
   * `reasoning_content`, which Kilo Code and Qwen Code send back) refused in its words, the property named
   * by its path (Kilo-Org/kilocode#10375).
   */
  cerebrasRules?: readonly string[];
  /**
   * Models served as GLM's API serves them: a conversation with no user message is refused in its words
   * (diegosouzapw/OmniRoute#11209, continuedev/continue#13259); a `qwen` one as Alibaba's DashScope serves it,
   * in its words (coze-dev/coze-studio#2557); a `gemini` one as Gemini's OpenAI-compatible endpoint serves
   * it: a request of system messages only refused ("contents is not specified": langchain-ai/langchain#33940).
   */
  userTurnRequired?: readonly string[];
  /**
   * Models that take no prefill, as GitHub Copilot's chat endpoint serves Claude Sonnet 4.6: a conversation
   * that ends with an answer calling no tool is refused in Anthropic's words (NousResearch/hermes-agent#50055).
   */
  noPrefill?: readonly string[];
  /**
   * Models served as DeepSeek's API serves them: structured output by a JSON Schema is refused, and JSON
   * mode without the word "json" in the prompt too, in its words (llm-exe/llm-exe#662).
   */
  jsonModeOnly?: readonly string[];
  /**
   * Models served as LM Studio serves them: JSON mode refused, in its words — it takes a JSON Schema only
   * ("'response_format.type' must be 'json_schema' or 'text'": lmstudio-ai/lmstudio-bug-tracker#189).
   */
  schemaFormatOnly?: readonly string[];
  /**
   * Models as OpenAI and Azure serve their older ones (gpt-4-0613): JSON mode and a JSON Schema both
   * refused ("Invalid parameter: 'response_format' of type 'json_object' is not supported with this model.").
   */
  noJsonFormats?: readonly string[];
  /**
   * Models that take no stop sequences, as OpenAI's reasoning models (GPT-5 and later, o3, o4-mini): any
   * refused in OpenAI's words (huggingface/smolagents#1893). Every other model takes up to 4, as OpenAI's do,
   * and ends its answer where the first of them begins.
   */
  noStop?: readonly string[];
  /**
   * Models served with another cap on stop sequences than OpenAI's 4, and the body of its refusal in the
   * provider's words (DeepSeek's 16: `{"detail":"Stop string array too long"}`, continuedev/continue#1513).
   */
  stopLimits?: Readonly<Record<string, { max: number; refusal: string }>>;
  /** Models served as GPT4All serves them: a `response_format` in any form refused ("'response_format' is not supported"). */
  noResponseFormat?: readonly string[];
  /**
   * Models as Gemini serves them: a `response_format` beside tools refused in its words, in the array its
   * OpenAI-compatible endpoint answers with ("Function calling with a response mime type: 'application/json'
   * is unsupported": openai/openai-agents-python#656); either alone taken.
   */
  noFormatWithTools?: readonly string[];
  /** The reasoning efforts each model takes: another refused in OpenAI's words, those taken listed (Kilo-Org/cloud#3807). */
  reasoningEfforts?: Readonly<Record<string, readonly string[]>>;
  /**
   * The efforts each model takes as Ollama serves it (none: a model that does not think), another refused
   * in Ollama's words ('invalid reasoning value: "xhigh" (must be …)': ollama/ollama#17252; '"llama3.1:8b"
   * does not support thinking': Gitlawb/openclaude#1371).
   */
  ollamaEfforts?: Readonly<Record<string, readonly string[]>>;
  /** Request fields this provider accepts beyond OpenAI's (a vendor's or vLLM's extensions). */
  extraFields?: readonly string[];
  /**
   * OpenAI's fields a model's API does not know, refused in Azure's words ("Unrecognized request argument
   * supplied: prediction", an older API version: continuedev/continue#2981), by model.
   */
  unknownFields?: Readonly<Record<string, readonly string[]>>;
  /**
   * The service tiers a model is served with, by model: another is refused in OpenAI's words ("Unsupported
   * service_tier: flex": openai/codex#15099), and `none` refuses any in GitHub Copilot's ("service_tier is not
   * supported", Codex's /fast through Copilot: router-for-me/CLIProxyAPIPlus#437).
   */
  serviceTiers?: Readonly<Record<string, readonly string[] | 'none'>>;
  /**
   * Models as OpenAI serves the gpt-5.6 family, which keeps every prompt cache at least 30 minutes and took
   * `prompt_cache_retention` away (`prompt_cache_options.ttl` instead): a request naming it refused, on Chat
   * Completions and the Responses API, in its words ("prompt_cache_retention is not supported on this model":
   * openai/codex#39442, NousResearch/hermes-agent#91164).
   */
  noCacheRetention?: readonly string[];
  /**
   * Models as NVIDIA's NIM serves them: every field it does not know named in one refusal, in its words
   * ("Validation: Unsupported parameter(s): thinking": decolua/9router#2268).
   */
  nimRules?: readonly string[];
  /**
   * Models as Fireworks serves them (and OpenCode Zen and Go pass its refusals on): a field its schema does
   * not have — top-level, of a message for its role, of a tool call — refused by its place, every one in
   * one 400 ("Extra inputs are not permitted, field: 'messages[2].reasoning'": anomalyco/opencode#27852,
   * #40462).
   */
  extraInputs?: readonly string[];
  /**
   * Models as OpenAI's API serves them: the first field its schema does not have — top-level, of a message
   * for its role, of a content part, of a tool call — refused by its place, in its words ("Unknown
   * parameter: 'messages[2].reasoning'.", the place as `param`; "… 'messages[2].tool_calls[0].index'.", a
   * client that keeps a stream's call indexes: FastGPT).
   */
  unknownParameters?: readonly string[];
  /**
   * Models as vLLM serves them without `--enable-auto-tool-choice`: a request that offers tools and lets the
   * model choose (`tool_choice` absent or "auto") refused in its words ("\"auto\" tool choice requires
   * --enable-auto-tool-choice and --tool-call-parser to be set": vllm-project/vllm#9986); with "none" the
   * model is shown the tools by its template, and no parser reads its calls (with `textToolCalls`, written
   * as text).
   */
  noAutoToolChoice?: readonly string[];
  /**
   * Models as LM Studio's server serves them: a `tool_choice` given as an object (a named tool) refused in its
   * words ("Invalid tool_choice type: 'object'. Supported string values: none, auto, required").
   */
  stringToolChoice?: readonly string[];
  /**
   * Models as Ollama serves one whose template has no tools: a request that offers tools refused in its
   * words ("registry.ollama.ai/library/llama3:8b does not support tools": langgenius/dify#13538), and a
   * tool message, which such a template cannot show, refused the same.
   */
  noTools?: readonly string[];
  /**
   * Models as OpenAI serves its Codex and pro models: a chat completion refused with its 404 ("This model is
   * only supported in v1/responses and not in v1/chat/completions."), the Responses API answering
   * (answerResponses: its parameters alone, every call output after its call).
   */
  responsesOnly?: readonly string[];
  /**
   * Models as OpenAI serves gpt-5.4 and the gpt-5.6 family: a chat completion that offers function tools
   * refused (a 400 naming `reasoning_effort`: pipecat-ai/pipecat#4043, GEMISIS/leviath#333) unless it asks
   * `reasoning_effort: 'none'` — one that asks none refused too, the model's default effort applying
   * (laurent22/joplin#16451); the Responses API answering them all.
   */
  toolsNeedResponses?: readonly string[];
  /** The models `GET /v1/models` lists (OpenAI's shape); `gpt-4o-mini` alone by default. */
  listedModels?: readonly string[];
  /**
   * Models as Bedrock serves them behind LiteLLM: tool calls or results in a request that offers no tools
   * refused in Bedrock's words ("The toolConfig field must be defined when using toolUse and toolResult
   * content blocks.": langgenius/dify#17545, aws-samples/bedrock-access-gateway#239), a message of blank
   * text ("The text field in the ContentBlock object at messages.1.content.0 is blank."), and messages whose
   * roles do not alternate ("A conversation must alternate between user and assistant roles.").
   */
  bedrockRules?: readonly string[];
  /** The content of an ordinary answer, from the messages it answers (a fake model that can look things up). */
  answer?: (messages: ReadonlyArray<{ role: string; content?: unknown }>) => string;
}

/** The calls an agent can see it made: the tool calls in its prompt, and the steps a notice says went. */
export function callsSeen(messages: ReadonlyArray<ChatMessage>): number {
  let calls = 0;
  for (const message of messages) {
    calls += message.tool_calls?.length ?? 0;
    const text = contentText(message.content);
    // The steps a notice says were removed, and those a summary's segments say they stand for.
    const notice = /\[ctxgate\] (\d+) earlier steps/.exec(text);
    if (notice !== null) calls += Number(notice[1]);
    for (const segment of text.matchAll(/^\[ctxgate\] Steps (\d+) to (\d+) \(/gm))
      calls += Number(segment[2]) - Number(segment[1]) + 1;
  }
  return calls;
}

/** True when a request is a summarization request (its system message asks for a summary). */
export function isSummaryRequest(body: unknown): boolean {
  const first = (body as { messages?: Array<{ role?: string; content?: unknown }> } | undefined)
    ?.messages?.[0];
  return (
    first?.role === 'system' && /^You (?:write|complete) the running summary/.test(contentText(first.content))
  );
}

export interface OverflowFacts {
  window: number;
  promptTokens: number;
  completionTokens: number;
  /** The prompt alone is over the window, or only prompt plus max_tokens is. */
  kind: 'prompt' | 'prompt_plus_completion';
}

export interface ChatMessage {
  role: string;
  content?: unknown;
  name?: string;
  tool_calls?: Array<{
    id: string;
    type?: string;
    function?: { name: string; arguments: string };
    extra_content?: { google?: { thought_signature?: unknown } };
  }> | null;
  /** OpenRouter's structured reasoning, sent back. */
  reasoning_details?: unknown;
  tool_call_id?: string;
  /** A thinking model's reasoning, sent back (DeepSeek, Kimi). */
  reasoning_content?: unknown;
}

/** Anthropic's refusal as OpenRouter passes it on: its own error around Claude's body. */
function openRouterAnthropicRefusal(message: string): string {
  const anthropic = JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } });
  return JSON.stringify({
    error: {
      message: 'Provider returned error',
      code: 400,
      metadata: { raw: anthropic, provider_name: 'Anthropic' },
    },
  });
}

/** Gemini's refusal (its own API's, as its OpenAI-compatible endpoint gives it): a list of one error. */
function geminiError(message: string): string {
  return JSON.stringify([{ error: { code: 400, message, status: 'INVALID_ARGUMENT' } }]);
}

function openAIError(message: string, type: string, param: string | null, code: string | null): string {
  return JSON.stringify({ error: { message, type, param, code } });
}

/** The parameters OpenAI's Responses API takes; any other is refused ("Unknown parameter: 'stop'."). */
const responsesParameters = new Set([
  'model',
  'input',
  'instructions',
  'stream',
  'store',
  'temperature',
  'top_p',
  'user',
  'metadata',
  'parallel_tool_calls',
  'service_tier',
  'safety_identifier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'prompt_cache_options',
  'top_logprobs',
  'max_output_tokens',
  'tools',
  'tool_choice',
  'reasoning',
  'text',
  'include',
  'previous_response_id',
  'truncation',
]);

/** A Responses input as the chat messages it stands for: calls on the assistant message, outputs as tool messages. */
function messagesOfInput(input: unknown): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const messages: ChatMessage[] = [];
  for (const item of Array.isArray(input) ? (input as Array<Record<string, unknown>>) : []) {
    if (item.type === 'function_call') {
      const call = {
        id: String(item.call_id),
        type: 'function',
        function: { name: String(item.name), arguments: String(item.arguments) },
      };
      const last = messages.at(-1);
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output')
      messages.push({ role: 'tool', tool_call_id: String(item.call_id), content: String(item.output) });
    else if (typeof item.role === 'string') {
      const content = Array.isArray(item.content)
        ? (item.content as Array<Record<string, unknown>>).map((part) =>
            typeof part.text === 'string' ? { type: 'text', text: part.text } : part,
          )
        : item.content;
      messages.push({ role: item.role, content } as ChatMessage);
    }
  }
  return messages;
}

/** The opaque reasoning the fake Responses API gives a model (its `encrypted_content`), and reads back. */
const reasoningTokenPrefix = 'fake-rs.';
const reasoningToken = (model: unknown, step: number): string =>
  reasoningTokenPrefix + Buffer.from(JSON.stringify({ model, step })).toString('base64url');
function reasoningTokenModel(token: unknown): unknown {
  if (typeof token !== 'string' || !token.startsWith(reasoningTokenPrefix)) return undefined;
  try {
    return (
      JSON.parse(Buffer.from(token.slice(reasoningTokenPrefix.length), 'base64url').toString()) as {
        model?: unknown;
      }
    ).model;
  } catch {
    return undefined;
  }
}

/**
 * A reasoning item of the input, as OpenAI refuses one: content it did not encrypt for this model, or no
 * item after it (its message or call: "Item 'rs_…' of type 'reasoning' was provided without its required
 * following item.", coder/mux#59); undefined when it takes them all.
 */
function reasoningRefusal(body: Record<string, unknown>): string | undefined {
  const input = Array.isArray(body.input) ? (body.input as Array<Record<string, unknown>>) : [];
  for (const [index, item] of input.entries()) {
    if (item.type !== 'reasoning') continue;
    if (reasoningTokenModel(item.encrypted_content) !== body.model)
      return `The encrypted content for item input[${index}] could not be verified.`;
    const next = input[index + 1];
    if (next === undefined || !(next.type === 'function_call' || next.role === 'assistant'))
      return `Item 'input[${index}]' of type 'reasoning' was provided without its required following item.`;
  }
  return undefined;
}

/** What OpenAI's Responses API refuses of a body, in its words; undefined when it takes it. */
function responsesRefusal(body: Record<string, unknown>): string | undefined {
  const reasoning = reasoningRefusal(body);
  if (reasoning !== undefined) return reasoning;
  for (const key of Object.keys(body))
    if (!responsesParameters.has(key)) return `Unknown parameter: '${key}'.`;
  const tools = Array.isArray(body.tools) ? body.tools : [];
  for (const [index, tool] of tools.entries())
    if (typeof (tool as { name?: unknown }).name !== 'string')
      return `Missing required parameter: 'tools[${index}].name'.`;
  const calls = new Set<unknown>();
  for (const item of Array.isArray(body.input) ? (body.input as Array<Record<string, unknown>>) : []) {
    if (item.type === 'function_call') calls.add(item.call_id);
    if (item.type === 'function_call_output' && !calls.has(item.call_id))
      return `No tool call found for function call output with call_id ${String(item.call_id)}.`;
    if (item.type === undefined && !['user', 'assistant', 'system', 'developer'].includes(String(item.role)))
      return `Invalid value: '${String(item.role)}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`;
  }
  return undefined;
}

/** A request's JSON body; undefined once it is refused in OpenAI's words as one that does not parse. */
function parsedBody(
  raw: string,
  sendJson: (status: number, body: string) => void,
): Record<string, unknown> | undefined {
  try {
    return JSON.parse(raw) as Record<string, unknown>;
  } catch {
    sendJson(
      400,
      openAIError('We could not parse the JSON body of your request.', 'invalid_request_error', null, null),
    );
    return undefined;
  }
}

/**
 * The Responses API's answer to `recorded` (OpenAI's shape): the behaviour's tool calls as function_call
 * items, else its content as a message; streamed as OpenAI streams it when asked.
 */
/** Whether the model is one of `noCacheRetention` and the request names a prompt cache retention. */
function cacheRetentionRefused(body: unknown, options: FakeUpstreamOptions): boolean {
  const { model, prompt_cache_retention: retention } = (body ?? {}) as Record<string, unknown>;
  return retention != null && options.noCacheRetention?.includes(String(model)) === true;
}

/** OpenAI's refusal of `prompt_cache_retention` by a gpt-5.6 model, as it words it. */
const cacheRetentionRefusal = openAIError(
  'prompt_cache_retention is not supported on this model',
  'invalid_request_error',
  'prompt_cache_retention',
  'invalid_parameter',
);

function answerResponses(
  recorded: RecordedRequest,
  behaviour: Behaviour,
  response: ServerResponse,
  sendJson: (status: number, body: string) => void,
  options: FakeUpstreamOptions,
): void {
  const body = parsedBody(recorded.rawBody, sendJson);
  if (body === undefined) return;
  recorded.body = body;
  const refusal = responsesRefusal(body);
  if (refusal !== undefined) {
    sendJson(400, openAIError(refusal, 'invalid_request_error', null, null));
    return;
  }
  if (cacheRetentionRefused(body, options)) {
    sendJson(400, cacheRetentionRefusal);
    return;
  }
  // An input over the model's window refused in OpenAI's words for the Responses API (it states no numbers).
  const conversation = messagesOfInput(body.input);
  const promptTokens = countPromptTokens(conversation, body.tools, options.imageTokens);
  recorded.promptTokens = promptTokens;
  const window = options.windows?.[String(body.model)] ?? options.defaultWindow ?? 128_000;
  if (promptTokens > window) {
    sendJson(
      400,
      openAIError(
        'Your input exceeds the context window of this model. Please adjust your input and try again.',
        'invalid_request_error',
        'input',
        'context_length_exceeded',
      ),
    );
    return;
  }
  // The model decides as it does on a chat completion: from the conversation the input stands for.
  const decided = options.respond?.(conversation, body);
  if (decided !== undefined) Object.assign(behaviour, decided);
  const text = behaviour.content ?? 'Hello from the Responses API.';
  // A reasoning model's reasoning comes first, its encrypted content when the request includes it.
  const thinks =
    Array.isArray(body.include) &&
    body.include.includes('reasoning.encrypted_content') &&
    typeof (body.reasoning as { effort?: unknown } | undefined)?.effort === 'string';
  const steps = (Array.isArray(body.input) ? body.input : []).length;
  const reasoning = thinks
    ? [
        {
          type: 'reasoning',
          id: `rs_fake${steps}`,
          summary: [],
          encrypted_content: reasoningToken(body.model, steps),
        },
      ]
    : [];
  const answers =
    behaviour.toolCalls === undefined
      ? [
          {
            type: 'message',
            id: 'msg_fake',
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text, annotations: [] }],
          },
        ]
      : behaviour.toolCalls.map((call, index) => ({
          type: 'function_call',
          id: `fc_fake${index}`,
          status: 'completed',
          call_id: call.id,
          name: call.name,
          arguments: call.arguments,
        }));
  const output: Array<Record<string, unknown>> = [...reasoning, ...answers];
  const usage = {
    input_tokens: promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 7,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: promptTokens + 7,
  };
  const answered = {
    id: 'resp_fake',
    object: 'response',
    created_at: 1_700_000_000,
    status: 'completed',
    model: body.model,
    output,
    usage,
  };
  if (body.stream !== true) {
    sendJson(200, JSON.stringify(answered));
    return;
  }
  recorded.status = 200;
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>): void =>
    void response.write(
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`,
    );
  const started = Object.assign({}, answered, { status: 'in_progress', output: [], usage: null });
  event('response.created', { response: started });
  event('response.in_progress', { response: started });
  for (const [index, item] of output.entries()) {
    if (item.type === 'reasoning') {
      // Its encrypted content only once it is done, as OpenAI streams it.
      event('response.output_item.added', {
        output_index: index,
        item: { type: 'reasoning', id: item.id, summary: [] },
      });
    } else if (item.type === 'message') {
      event('response.output_item.added', {
        output_index: index,
        item: Object.assign({}, item, { content: [] }),
      });
      for (const piece of text.match(/.{1,5}/gs) ?? [])
        event('response.output_text.delta', {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          delta: piece,
        });
    } else {
      event('response.output_item.added', {
        output_index: index,
        item: Object.assign({}, item, { arguments: '' }),
      });
      const args = String((item as { arguments: string }).arguments);
      for (const piece of args.match(/.{1,8}/gs) ?? [])
        event('response.function_call_arguments.delta', {
          item_id: item.id,
          output_index: index,
          delta: piece,
        });
    }
    event('response.output_item.done', { output_index: index, item });
  }
  event('response.completed', { response: answered });
  response.end();
  recorded.completed = true;
}

/**
 * The refusal of a `response_format` the model takes in no form (GPT4All's words), or not beside tools
 * (Gemini's), or not of its type: JSON mode where only a JSON Schema is taken (LM Studio's), either JSON
 * format on an older OpenAI model (OpenAI's). Undefined when the model takes it.
 */
function responseFormatRefusal(
  options: FakeUpstreamOptions,
  model: string,
  body: object,
): string | undefined {
  const given = (body as { response_format?: { type?: unknown } }).response_format;
  if (given === undefined) return undefined;
  if (options.noResponseFormat?.includes(model) === true)
    return openAIError("'response_format' is not supported", 'invalid_request_error', null, null);
  const tools = (body as { tools?: unknown }).tools;
  if (
    (given.type === 'json_object' || given.type === 'json_schema') &&
    Array.isArray(tools) &&
    tools.length > 0 &&
    options.noFormatWithTools?.includes(model) === true
  )
    return JSON.stringify([
      {
        error: {
          code: 400,
          message: "Function calling with a response mime type: 'application/json' is unsupported",
          status: 'INVALID_ARGUMENT',
        },
      },
    ]);
  if (given.type === 'json_object' && options.schemaFormatOnly?.includes(model) === true)
    return JSON.stringify({ error: "'response_format.type' must be 'json_schema' or 'text'" });
  if (
    (given.type === 'json_object' || given.type === 'json_schema') &&
    options.noJsonFormats?.includes(model)
  )
    return openAIError(
      `Invalid parameter: 'response_format' of type '${given.type}' is not supported with this model.`,
      'invalid_request_error',
      'response_format',
      null,
    );
  return undefined;
}

/** `text` cut where the first of `stop` (one string, or a list) begins: as a provider ends its answer there. */
function cutAtStop(text: string, stop: unknown): string {
  const stops = (Array.isArray(stop) ? (stop as unknown[]) : [stop]).filter(
    (one): one is string => typeof one === 'string' && one !== '',
  );
  const at = Math.min(...stops.map((one) => text.indexOf(one)).filter((index) => index !== -1));
  return Number.isFinite(at) ? text.slice(0, at) : text;
}

/**
 * OpenAI's refusal of stop sequences: any, to a model that takes none (its reasoning models: `noStop`), or
 * more than 4. Undefined when they are taken.
 */
function stopRefusal(options: FakeUpstreamOptions, model: string, stop: unknown): string | undefined {
  if (stop === undefined || stop === null) return undefined;
  if (options.noStop?.includes(model) === true)
    return openAIError(
      "Unsupported parameter: 'stop' is not supported with this model.",
      'invalid_request_error',
      'stop',
      'unsupported_parameter',
    );
  const limit = options.stopLimits?.[model];
  if (limit !== undefined) return Array.isArray(stop) && stop.length > limit.max ? limit.refusal : undefined;
  if (Array.isArray(stop) && stop.length > 4)
    return openAIError(
      `Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length ${stop.length} instead.`,
      'invalid_request_error',
      'stop',
      'array_above_max_length',
    );
  return undefined;
}

/** The first field of a call sent back that OpenAI refuses for its type (the id, name or arguments not text). */
function mistypedCallField(
  messages: ReadonlyArray<ChatMessage>,
  decodedArguments = false,
): { param: string; got: string } | undefined {
  const typeName = (value: unknown): string =>
    value === null
      ? 'null'
      : Array.isArray(value)
        ? 'an array'
        : typeof value === 'object'
          ? 'an object'
          : `a ${typeof value}`;
  for (const [index, message] of messages.entries()) {
    for (const [at, call] of (message.role === 'assistant' ? (message.tool_calls ?? []) : []).entries()) {
      const fields: Array<[string, unknown]> = [
        ['id', (call as { id?: unknown }).id],
        ['function.name', call.function?.name],
        ['function.arguments', call.function?.arguments],
      ];
      for (const [field, value] of fields) {
        if (typeof value === 'string') continue;
        if (field === 'function.arguments' && decodedArguments && typeof value === 'object') continue;
        return { param: `messages[${index}].tool_calls[${at}].${field}`, got: typeName(value) };
      }
    }
  }
  return undefined;
}

/**
 * The first tool call id of the messages that OpenAI refuses — an empty one, or one of more than 40
 * characters (openai/openai-dotnet#428, Portkey-AI/gateway#1062) — or, for a model served as Claude is,
 * one Anthropic's pattern refuses; as each words it.
 */
function refusedCallId(
  messages: ReadonlyArray<ChatMessage>,
  claude: boolean,
): { message: string; param: string | null; code: string | null } | undefined {
  for (const [index, message] of messages.entries()) {
    for (const [at, call] of (message.role === 'assistant' ? (message.tool_calls ?? []) : []).entries()) {
      const id = (call as { id?: unknown }).id;
      if (typeof id !== 'string') continue;
      const param = `messages[${index}].tool_calls[${at}].id`;
      if (id === '')
        return {
          message: `Invalid '${param}': empty string. Expected a string with minimum length 1, but got an empty string instead.`,
          param,
          code: 'empty_string',
        };
      if (id.length > 40)
        return {
          message: `Invalid '${param}': string too long. Expected a string with maximum length 40, but got a string with length ${id.length} instead.`,
          param,
          code: 'string_above_max_length',
        };
      if (claude && !/^[a-zA-Z0-9_-]+$/.test(id))
        return {
          message: `messages.${index}.content.${at + (message.content ? 1 : 0)}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`,
          param: null,
          code: null,
        };
    }
  }
  return undefined;
}

/**
 * OpenAI's refusal of a message whose content is null or left out with no tool calls beside it (an
 * assistant message of a refusal or of reasoning only, replayed); with `everywhere`, LM Studio's of a
 * null content beside calls too. Undefined when every message has its content.
 */
function nullContentAt(messages: ReadonlyArray<ChatMessage>, everywhere: boolean): string | undefined {
  const index = messages.findIndex(
    (message) =>
      (message.content === null || message.content === undefined) &&
      (everywhere || !(message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0)),
  );
  const message = messages[index];
  if (message === undefined) return undefined;
  if (everywhere && message.content === null)
    return JSON.stringify({
      error: "Invalid 'content': 'content' field must be a string or an array of objects.",
    });
  return message.content === null
    ? openAIError(
        "Invalid value for 'content': expected a string, got null.",
        'invalid_request_error',
        `messages.[${index}].content`,
        null,
      )
    : openAIError(
        `Missing required parameter: 'messages[${index}].content'.`,
        'invalid_request_error',
        `messages[${index}].content`,
        'missing_required_parameter',
      );
}

/**
 * What Python's json.loads says of the first call sent back whose arguments are not JSON, as vLLM passes
 * it on: "Expecting value" for none, "Unterminated string starting at" for a string cut short (an answer
 * cut at its max_tokens), "Expecting ',' delimiter" for anything else. Undefined when every call's are.
 */
function pythonDecodeError(messages: ReadonlyArray<ChatMessage>): string | undefined {
  for (const message of messages)
    for (const call of message.tool_calls ?? []) {
      const text = call.function?.arguments;
      if (typeof text !== 'string') continue;
      try {
        JSON.parse(text);
        continue;
      } catch {
        // Worded below.
      }
      const at = (position: number): string => `line 1 column ${position + 1} (char ${position})`;
      if (text.trim() === '') return `Expecting value: ${at(0)}`;
      const quotes = [...text.matchAll(/(?<!\\)"/g)];
      if (quotes.length % 2 === 1) return `Unterminated string starting at: ${at(quotes.at(-1)?.index ?? 0)}`;
      return `Expecting ',' delimiter: ${at(text.length)}`;
    }
  return undefined;
}

/** Groq's refusal of `store` or of a message field its schema does not have; undefined when it takes the body. */
function groqRefusalOf(body: { messages?: ChatMessage[]; store?: unknown }): string | undefined {
  if (body.store !== undefined) return "property 'store' is unsupported, did you mean 'stop'?";
  const known = new Set(['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'reasoning']);
  for (const [index, message] of (body.messages ?? []).entries()) {
    for (const field of Object.keys(message))
      if (!known.has(field))
        return `'messages.${index}' : for 'role:${message.role}' the following must be satisfied[('messages.${index}' : property '${field}' is unsupported)]`;
    // Parts only in a user message (a picture); any other role's content is a string.
    if (message.role !== 'user' && Array.isArray(message.content))
      return `'messages.${index}' : for 'role:${message.role}' the following must be satisfied[('messages.${index}.content' : value must be a string)]`;
  }
  return undefined;
}

/** Cerebras's refusal of a message field it does not know, in its words; undefined when there is none. */
function cerebrasRefusalOf(body: { messages?: ChatMessage[] }): string | undefined {
  const known = new Set(['role', 'content', 'name', 'tool_calls', 'tool_call_id']);
  for (const [index, message] of (body.messages ?? []).entries())
    for (const field of Object.keys(message))
      if (!known.has(field)) {
        const path = `messages.${index}.${message.role}.${field}`;
        return JSON.stringify({
          message: `${path}: property '${path}' is unsupported`,
          type: 'invalid_request_error',
          param: 'validation_error',
          code: 'wrong_api_format',
        });
      }
  return undefined;
}

/** The fields Mistral's chat completions API takes in a message of each role, and in a tool call. */
const mistralMessageFields: Readonly<Record<string, readonly string[]>> = {
  system: ['role', 'content'],
  user: ['role', 'content'],
  assistant: ['role', 'content', 'tool_calls', 'prefix'],
  tool: ['role', 'content', 'tool_call_id', 'name'],
};
const mistralToolCallFields = ['id', 'type', 'function', 'index'];

/** Each field of the messages that Mistral's API refuses, where pydantic locates it, and its value. */
function mistralMessageExtras(
  messages: ReadonlyArray<ChatMessage>,
): Array<{ loc: Array<string | number>; input: unknown }> {
  const extras: Array<{ loc: Array<string | number>; input: unknown }> = [];
  messages.forEach((message, index) => {
    const allowed = mistralMessageFields[message.role] ?? [];
    for (const [field, value] of Object.entries(message))
      if (!allowed.includes(field)) extras.push({ loc: [index, message.role, field], input: value });
    (message.role === 'assistant' ? (message.tool_calls ?? []) : []).forEach((call, at) => {
      for (const [field, value] of Object.entries(call))
        if (!mistralToolCallFields.includes(field))
          extras.push({ loc: [index, 'assistant', 'tool_calls', at, field], input: value });
    });
  });
  return extras;
}

/** The fields of a chat message OpenAI's schema has, by role; and of a tool call. */
const openAIMessageFields: Readonly<Record<string, readonly string[]>> = {
  system: ['role', 'content', 'name'],
  developer: ['role', 'content', 'name'],
  user: ['role', 'content', 'name'],
  assistant: ['role', 'content', 'name', 'tool_calls', 'refusal', 'audio', 'function_call'],
  tool: ['role', 'content', 'tool_call_id'],
};
const openAIToolCallFields = ['id', 'type', 'function'];
/** The fields of a content part OpenAI's schema has, by its type. */
const openAIPartFields: Readonly<Record<string, readonly string[]>> = {
  text: ['type', 'text'],
  image_url: ['type', 'image_url'],
  input_audio: ['type', 'input_audio'],
  file: ['type', 'file'],
  refusal: ['type', 'refusal'],
};

/** What a Fireworks-like schema refuses of a chat request (`extraInputs`), each by its place. */
function extraInputsOf(body: { messages?: ChatMessage[] }): Array<{ place: string; value: unknown }> {
  const extras: Array<{ place: string; value: unknown }> = [];
  for (const [field, value] of Object.entries(body))
    if (!chatFields.has(field)) extras.push({ place: field, value });
  (body.messages ?? []).forEach((message, index) => {
    const allowed = openAIMessageFields[message.role] ?? [];
    for (const [field, value] of Object.entries(message))
      if (!allowed.includes(field)) extras.push({ place: `messages[${index}].${field}`, value });
    (Array.isArray(message.content) ? (message.content as Array<Record<string, unknown>>) : []).forEach(
      (part, at) => {
        const fields = openAIPartFields[String(part.type)] ?? [];
        for (const [field, value] of Object.entries(part))
          if (!fields.includes(field))
            extras.push({ place: `messages[${index}].content[${at}].${field}`, value });
      },
    );
    (message.role === 'assistant' ? (message.tool_calls ?? []) : []).forEach((call, at) => {
      for (const [field, value] of Object.entries(call as object))
        if (!openAIToolCallFields.includes(field))
          extras.push({ place: `messages[${index}].tool_calls[${at}].${field}`, value });
    });
  });
  return extras;
}

/** A value as pydantic's message shows it after the field (`, value: 'build'`, `, value: True`), or nothing. */
function pythonValue(value: unknown): string {
  if (typeof value === 'string') return `, value: '${value}'`;
  if (typeof value === 'boolean') return `, value: ${value ? 'True' : 'False'}`;
  return typeof value === 'number' ? `, value: ${value}` : '';
}

/**
 * Request fields that clients and the gateway's bridges send and Mistral's chat completions API does not
 * know (it refuses each with a 422 `extra_forbidden`): for `forbiddenFields`.
 */
export const mistralUnknownFields: readonly string[] = [
  'stream_options',
  'user',
  'max_completion_tokens',
  'reasoning_effort',
  'verbosity',
  'prompt_cache_key',
  'prompt_cache_retention',
  'prompt_cache_options',
  'store',
  'service_tier',
  'metadata',
  'safety_identifier',
];

/** The request fields OpenAI's Chat Completions accepts; any other is refused as the real API refuses it. */
const chatFields = new Set([
  'messages',
  'model',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'prompt_cache_options',
  'prompt_cache_retention',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
]);

let encoding: Tiktoken | undefined;
function countText(text: string): number {
  encoding ??= getEncoding('o200k_base');
  return encoding.encode(text).length;
}

/** The forms of FakeUpstreamOptions.textToolCalls. */
type TextCallForm =
  | 'hermes'
  | 'qwen3-coder'
  | 'glm'
  | 'json'
  | 'mistral'
  | 'mistral-list'
  | 'harmony'
  | 'kimi'
  | 'minimax'
  | 'attributes'
  | 'dsml'
  | 'lfm2'
  | 'llama4';

/** Scripted calls written as a model without its tool parser writes them (FakeUpstreamOptions.textToolCalls). */
function callsAsText(calls: ReadonlyArray<{ name: string; arguments: string }>, form: TextCallForm): string {
  if (form === 'llama4')
    return calls
      .map(
        (call) =>
          `<|python_start|>${JSON.stringify({ name: call.name, parameters: JSON.parse(call.arguments) })}<|python_end|>`,
      )
      .join('');
  if (form === 'lfm2')
    return `<|tool_call_start|>[${calls
      .map(
        (call) =>
          `${call.name}(${Object.entries(JSON.parse(call.arguments) as Record<string, unknown>)
            .map(
              ([key, value]) => `${key}=${typeof value === 'string' ? `'${value}'` : JSON.stringify(value)}`,
            )
            .join(', ')})`,
      )
      .join(', ')}]<|tool_call_end|>`;
  if (form === 'dsml')
    return `<｜DSML｜tool_calls>\n${calls
      .map(
        (call) =>
          `<｜DSML｜invoke name="${call.name}">\n${Object.entries(
            JSON.parse(call.arguments) as Record<string, unknown>,
          )
            .map(
              ([key, value]) =>
                `<｜DSML｜parameter name="${key}" string="${typeof value === 'string'}">${typeof value === 'string' ? value : JSON.stringify(value)}</｜DSML｜parameter>`,
            )
            .join('\n')}\n</｜DSML｜invoke>`,
      )
      .join('\n')}\n</｜DSML｜tool_calls>`;
  if (form === 'attributes')
    return calls
      .map(
        (call, index) =>
          `<tool_call id="call_0${index}_fake" name="${call.name}">\n${call.arguments}\n</tool_call>`,
      )
      .join('\n');
  if (form === 'minimax')
    return `<minimax:tool_call>\n${calls
      .map(
        (call) =>
          `<invoke name="${call.name}">\n${Object.entries(
            JSON.parse(call.arguments) as Record<string, unknown>,
          )
            .map(
              ([key, value]) =>
                `<parameter name="${key}">${typeof value === 'string' ? value : JSON.stringify(value)}</parameter>`,
            )
            .join('\n')}\n</invoke>`,
      )
      .join('\n')}\n</minimax:tool_call>`;
  if (form === 'kimi')
    return `<|tool_calls_section_begin|>${calls
      .map(
        (call, index) =>
          `<|tool_call_begin|>functions.${call.name}:${index}<|tool_call_argument_begin|>${call.arguments}<|tool_call_end|>`,
      )
      .join('')}<|tool_calls_section_end|>`;
  if (form === 'harmony')
    return `<|channel|>analysis<|message|>Need to use the tool.<|end|>${calls
      .map(
        (call) =>
          `<|start|>assistant<|channel|>commentary to=functions.${call.name} <|constrain|>json<|message|>${call.arguments}<|call|>`,
      )
      .join('')}`;
  if (form === 'mistral')
    return calls.map((call) => `[TOOL_CALLS]${call.name}[ARGS]${call.arguments}`).join('');
  if (form === 'mistral-list')
    return `[TOOL_CALLS] ${JSON.stringify(calls.map((call) => ({ name: call.name, arguments: JSON.parse(call.arguments) })))}`;
  if (form === 'json') {
    const [call] = calls;
    return call === undefined
      ? ''
      : JSON.stringify({ name: call.name, arguments: JSON.parse(call.arguments) });
  }
  return calls
    .map((call) => {
      if (form === 'glm')
        return `<tool_call>${call.name}\n${Object.entries(
          JSON.parse(call.arguments) as Record<string, unknown>,
        )
          .map(
            ([key, value]) =>
              `<arg_key>${key}</arg_key>\n<arg_value>${typeof value === 'string' ? value : JSON.stringify(value)}</arg_value>`,
          )
          .join('\n')}\n</tool_call>`;
      if (form === 'hermes')
        return `<tool_call>\n${JSON.stringify({ name: call.name, arguments: JSON.parse(call.arguments) })}\n</tool_call>`;
      const parameters = Object.entries(JSON.parse(call.arguments) as Record<string, unknown>)
        .map(
          ([key, value]) =>
            `<parameter=${key}>\n${typeof value === 'string' ? value : JSON.stringify(value)}\n</parameter>`,
        )
        .join('\n');
      return `<tool_call>\n<function=${call.name}>\n${parameters}\n</function>\n</tool_call>`;
    })
    .join('\n');
}

/** JSON text as Go's encoding/json writes it: `<`, `>` and `&` escaped (FakeUpstreamOptions.goJson). */
function goEscaped(json: string): string {
  return json.replaceAll('<', '\\u003c').replaceAll('>', '\\u003e').replaceAll('&', '\\u0026');
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: { type?: string; text?: string; refusal?: string }) =>
      part.type === 'text' ? (part.text ?? '') : part.type === 'refusal' ? (part.refusal ?? '') : '',
    )
    .join('');
}

/** A picture of a page of a PDF, as OpenAI counts it (a page at high detail: 85 + 4 tiles of 170). */
const pdfPageImageTokens = 765;

/**
 * A file part's tokens as OpenAI counts a PDF: "both the extracted text and an image of each page" (what
 * the fake cannot read counts nothing).
 */
function fileTokens(part: { file?: { file_data?: unknown } }): number {
  const file = pdfOfDataUrl(part.file?.file_data);
  if (file === undefined) return 0;
  return pdfPageTexts(file).reduce((total, text) => total + countText(text) + pdfPageImageTokens, 0);
}

/**
 * The OpenAI cookbook count: 3 tokens per message, 1 per name, 3 to prime the reply, 3 around each
 * function call (as the API counts one). Images count `imageTokens` each when given (a provider sizes
 * them its own way), else nothing; a PDF its pages' text and a picture of each.
 */
export function countPromptTokens(messages: ChatMessage[], tools: unknown, imageTokens = 0): number {
  let total = 3;
  for (const message of messages) {
    total += 3 + countText(message.role) + countText(contentText(message.content));
    if (Array.isArray(message.content))
      for (const part of message.content as Array<{ type?: string; file?: { file_data?: unknown } }>)
        if (part?.type === 'image_url') total += imageTokens;
        else if (part?.type === 'file') total += fileTokens(part);
    if (message.name !== undefined) total += 1 + countText(message.name);
    if (message.tool_call_id !== undefined) total += countText(message.tool_call_id);
    for (const call of message.tool_calls ?? []) {
      total +=
        3 +
        countText(call.id) +
        countText(call.function?.name ?? '') +
        countText(
          typeof call.function?.arguments === 'string'
            ? call.function.arguments
            : JSON.stringify(call.function?.arguments ?? ''),
        );
    }
  }
  if (Array.isArray(tools) && tools.length > 0) total += countText(JSON.stringify(tools));
  return total;
}

/**
 * OpenAI's refusal of a file part it cannot take, or undefined: data that is not a PDF's data URL ("Invalid
 * file data: … Expected a base64-encoded data URL with an application/pdf MIME type …"), data without a
 * file name (it asks for an id then).
 */
export function findFileRefusal(messages: ChatMessage[]): string | undefined {
  for (const [index, message] of messages.entries()) {
    if (!Array.isArray(message.content)) continue;
    for (const [at, part] of (message.content as Array<Record<string, unknown>>).entries()) {
      if (part?.type !== 'file') continue;
      const file = (part.file ?? {}) as { file_data?: unknown; file_id?: unknown; filename?: unknown };
      const param = `messages[${index}].content[${at}].file`;
      if (typeof file.file_data === 'string') {
        const type = /^data:([^;,]*)[;,]/.exec(file.file_data)?.[1];
        if (type !== 'application/pdf')
          return openAIError(
            `Invalid file data: '${param}.file_data'. Expected a base64-encoded data URL with an application/pdf MIME type (e.g. 'data:application/pdf;base64,SGVsbG8sIFdvcmxkIQ=='), but got ${type === undefined ? 'an invalid base64-encoded value' : `unsupported MIME type '${type}'`}.`,
            'invalid_request_error',
            `${param}.file_data`,
            'invalid_value',
          );
        if (typeof file.filename !== 'string')
          return openAIError(
            `Missing required parameter: '${param}.file_id'.`,
            'invalid_request_error',
            `${param}.file_id`,
            'missing_required_parameter',
          );
      } else if (typeof file.file_id !== 'string')
        return openAIError(
          `Missing required parameter: '${param}.file_id'.`,
          'invalid_request_error',
          `${param}.file_id`,
          'missing_required_parameter',
        );
    }
  }
  return undefined;
}

/** Returns an error message when the sequence would be refused by OpenAI, else undefined. */
export function findToolPairingError(
  messages: ChatMessage[],
): { message: string; param: string } | undefined {
  // Calls waiting for a result, by id: how many (a server that gives its calls one id, or none, takes
  // one result for each, in their order).
  let pending = new Map<string, number>();
  const unanswered = (): string =>
    `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending.keys()].join(', ')}`;
  for (const [index, message] of messages.entries()) {
    if (message.role === 'tool') {
      const left = message.tool_call_id === undefined ? undefined : pending.get(message.tool_call_id);
      if (left === undefined) {
        return {
          message:
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          param: `messages.[${index}].role`,
        };
      }
      if (left > 1) pending.set(message.tool_call_id as string, left - 1);
      else pending.delete(message.tool_call_id as string);
      continue;
    }
    if (pending.size > 0) return { message: unanswered(), param: 'messages' };
    pending = new Map();
    for (const call of message.role === 'assistant' ? (message.tool_calls ?? []) : [])
      pending.set(call.id, (pending.get(call.id) ?? 0) + 1);
  }
  if (pending.size > 0) return { message: unanswered(), param: 'messages' };
  return undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * OpenAI's refusal of a `response_format` of a JSON Schema: one without a name ("Missing required
 * parameter"), and under `strict` an object not closed or not requiring every property, in its words.
 */
function responseSchemaRefusal(body: object): { message: string; param: string } | undefined {
  const given = (body as { response_format?: { json_schema?: Record<string, unknown> } }).response_format
    ?.json_schema;
  if (typeof given?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(given.name))
    return {
      message: "Missing required parameter: 'response_format.json_schema.name'.",
      param: 'response_format.json_schema.name',
    };
  if (given.strict !== true) return undefined;
  const fault = (schema: unknown, context: string[]): string | undefined => {
    if (typeof schema !== 'object' || schema === null) return undefined;
    const node = schema as Record<string, unknown>;
    const properties = (node.properties ?? {}) as Record<string, unknown>;
    const where = `In context=(${context.map((part) => `'${part}'`).join(', ')})`;
    if (node.type === 'object') {
      if (node.additionalProperties !== false)
        return `${where}, 'additionalProperties' is required to be supplied and to be false.`;
      const required = Array.isArray(node.required) ? (node.required as string[]) : [];
      const missing = Object.keys(properties).find((name) => !required.includes(name));
      if (missing !== undefined)
        return `${where}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`;
    }
    for (const [name, inner] of Object.entries(properties)) {
      const found = fault(inner, [...context, 'properties', name]);
      if (found !== undefined) return found;
    }
    return fault(node.items, [...context, 'items']);
  };
  const found = fault(given.schema, []);
  return found === undefined
    ? undefined
    : { message: `Invalid schema for response_format '${given.name}': ${found}`, param: 'response_format' };
}

export class FakeUpstream {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: Behaviour[] = [];
  private defaultBehaviour: Behaviour = {};
  private summaryBehaviour: Behaviour = {};
  private readonly summaryQueue: Behaviour[] = [];
  /** Summarization requests received, all of them (`requests` keeps only the newest `recordLimit`). */
  summaryRequestsSeen = 0;
  /** Summarization requests received whose answer has not ended yet. */
  private summariesOpen = 0;

  private server: Server | undefined;
  private readonly options: FakeUpstreamOptions;
  private sequence = 0;
  /** The previous prompt of each model that counts only uncached tokens: its messages' JSON and count. */
  private readonly cachedPrompts = new Map<string, { messages: string; tokens: number }>();
  /** What each model's last request left in the provider's prompt cache, for reportsCachedTokens. */
  private readonly reportedCaches = new Map<string, { messages: string; tokens: number }>();

  /** A scripted call's id as this provider gives it: Mistral's are 9 letters and digits. */
  /** A whole answer's JSON as the model's server writes it (goJson: escaped as Go escapes). */
  private asServed(model: string, answer: unknown): string {
    if (this.options.noCreated?.includes(model) === true && typeof answer === 'object' && answer !== null)
      for (const key of ['object', 'created']) Reflect.deleteProperty(answer, key);
    const json = JSON.stringify(answer);
    return this.options.goJson?.includes(model) === true ? goEscaped(json) : json;
  }

  private answerId(id: string, model: unknown): string {
    if (this.options.emptyToolCallIds?.includes(String(model)) === true) return '';
    if (this.options.mistralToolCallIds !== true) return id;
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    let hash = 7;
    for (const char of id) hash = (Math.imul(hash, 31) + (char.codePointAt(0) ?? 0)) >>> 0;
    let out = '';
    for (let digit = 0; digit < 9; digit++) {
      out += letters[hash % 62];
      hash = (Math.imul(hash, 1_103_515_245) + 12_345) >>> 0;
    }
    return out;
  }

  /** Signatures given, as Gemini's are opaque: only these (and Google's two for other models' calls) are taken back. */
  private readonly signaturesGiven = new Set<string>();

  /** A Gemini answer's `extra_content` for its tool call at `index`: the first call of an answer only. */
  private signatureOf(model: string, callId: string, index: number): Record<string, unknown> {
    if (index > 0 || this.options.thoughtSignatures?.includes(model) !== true) return {};
    const signature = this.given(Buffer.from(`thought ${this.sequence} ${callId}`).toString('base64'));
    return { extra_content: { google: { thought_signature: signature } } };
  }

  /** A signature this fake gives, kept to be taken back. */
  private given(signature: string): string {
    this.signaturesGiven.add(signature);
    return signature;
  }

  /** The model each of Claude's signatures (OpenRouter's `reasoning_details`) was given for. */
  private readonly claudeSignatures = new Map<string, string>();

  /** A signature Claude gives for `model`: taken back by that model alone, as Anthropic's are. */
  private givenFor(model: string, signature: string): string {
    this.claudeSignatures.set(signature, model);
    return this.given(signature);
  }

  /** Gemini's refusal of a current turn's tool call sent back without its signature, or with a made-up one. */
  private thoughtSignatureRefusal(messages: ReadonlyArray<ChatMessage>): string | undefined {
    const lastUser = messages.findLastIndex((message) => message.role === 'user');
    const leadingSystem = messages.findIndex((message) => message.role !== 'system');
    for (const [index, message] of messages.entries()) {
      const first = message.role === 'assistant' ? message.tool_calls?.[0] : undefined;
      if (first === undefined) continue;
      const signature = first.extra_content?.google?.thought_signature;
      const error =
        signature === undefined
          ? index > lastUser
            ? `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${first.function?.name ?? ''}\` , position ${index - Math.max(0, leadingSystem)}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`
            : undefined
          : typeof signature === 'string' &&
              (this.signaturesGiven.has(signature) ||
                signature === 'skip_thought_signature_validator' ||
                signature === 'context_engineering_is_the_way_to_go')
            ? undefined
            : 'Corrupted thought signature.';
      if (error !== undefined) return geminiError(error);
    }
    return undefined;
  }

  constructor(options: FakeUpstreamOptions = {}) {
    this.options = options;
  }

  /** The next request gets this behaviour (queued, first in first out). */
  enqueue(...behaviours: Behaviour[]): void {
    this.queue.push(...behaviours);
  }

  /** Forgets queued behaviours no request used. */
  clearQueue(): void {
    this.queue.length = 0;
  }

  setDefault(behaviour: Behaviour): void {
    this.defaultBehaviour = behaviour;
  }

  /** How summarization requests are answered (default: extractively; see `extractiveSummaries`). */
  setSummaryBehaviour(behaviour: Behaviour): void {
    this.summaryBehaviour = behaviour;
  }

  /** The next summarization requests get these behaviours, in order, before `setSummaryBehaviour`'s. */
  enqueueSummary(...behaviours: Behaviour[]): void {
    this.summaryQueue.push(...behaviours);
  }

  get summaryRequests(): RecordedRequest[] {
    return this.chatRequests.filter((request) => isSummaryRequest(request.body));
  }

  private extractSummary(messages: ChatMessage[]): string {
    const pattern = this.options.extractiveSummaries as RegExp;
    const lines = new Set<string>();
    for (const message of messages.slice(1)) {
      for (const line of contentText(message.content).split('\n')) {
        const trimmed = line.trim();
        if (pattern.test(trimmed)) lines.add(trimmed);
      }
    }
    return [...lines].join('\n');
  }

  /** Who answers summarization requests from now on. */
  setSummarizer(summarizer: FakeUpstreamOptions['summarizer']): void {
    if (summarizer === undefined) delete this.options.summarizer;
    else this.options.summarizer = summarizer;
  }

  setWindow(model: string, window: number): void {
    this.options.windows = { ...this.options.windows, [model]: window };
  }

  /** The first chat request whose body holds `text`, once one has arrived (recorded ones included). */
  async chatRequestHolding(text: string): Promise<RecordedRequest> {
    for (;;) {
      const found = this.chatRequests.find((request) => request.rawBody.includes(text));
      if (found !== undefined) return found;
      await sleep(5);
    }
  }

  get chatRequests(): RecordedRequest[] {
    return this.requests.filter((request) => request.path.endsWith('/chat/completions'));
  }

  async start(port = 0): Promise<string> {
    this.server = createServer((request, response) => void this.handle(request, response));
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => this.server?.listen(port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const bodyBytes = Buffer.concat(chunks);
    const rawBody = bodyBytes.toString('utf8');
    let closedAt: (time: number) => void = () => {};
    const recorded: RecordedRequest = {
      method: request.method ?? 'GET',
      path: (request.url ?? '/').split('?')[0] ?? '/',
      query: (request.url ?? '').split('?')[1] ?? '',
      headers: request.headers,
      rawBody,
      bodyBytes,
      body: undefined,
      promptTokens: undefined,
      receivedAtMs: performance.now(),
      closedEarly: new Promise((resolve) => (closedAt = resolve)),
      completed: false,
    };
    response.once('close', () => {
      if (!response.writableFinished) closedAt(performance.now());
    });
    this.requests.push(recorded);
    if (this.options.recordLimit !== undefined && this.requests.length > this.options.recordLimit)
      this.requests.shift();
    let summaryRequest = false;
    try {
      summaryRequest = isSummaryRequest(JSON.parse(rawBody));
    } catch {
      // Not JSON: answered below as OpenAI does.
    }
    if (summaryRequest) {
      this.summaryRequestsSeen++;
      recorded.summariesOpenOnArrival = this.summariesOpen++;
      response.once('close', () => this.summariesOpen--);
    }
    // Summarization requests run beside the conversation: they never take its scripted behaviours.
    const behaviour = summaryRequest
      ? { ...(this.summaryQueue.shift() ?? this.summaryBehaviour) }
      : { ...this.defaultBehaviour, ...(this.queue.shift() ?? {}) };

    const sendJson = (status: number, body: string, headers: Record<string, string> = {}): void => {
      recorded.status = status;
      response.writeHead(status, { 'content-type': 'application/json', ...headers });
      if (behaviour.stallMidBody === true) {
        response.write(body.slice(0, Math.floor(body.length / 2)));
        return;
      }
      response.end(body);
      recorded.completed = true;
    };

    if (this.options.maxRequestBytes !== undefined && bodyBytes.length > this.options.maxRequestBytes) {
      sendJson(
        413,
        this.options.bareTooLarge === true
          ? ''
          : JSON.stringify({ error: { message: 'failed to parse request', code: '' } }),
      );
      return;
    }
    if (
      this.options.requiredApiKey !== undefined &&
      request.headers.authorization !== `Bearer ${this.options.requiredApiKey}`
    ) {
      sendJson(
        401,
        openAIError('Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key'),
      );
      return;
    }
    const listed = this.options.listedModels ?? ['gpt-4o-mini'];
    const modelObject = (id: string) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'fake' });
    if (recorded.method === 'GET' && recorded.path === '/v1/models') {
      sendJson(200, JSON.stringify({ object: 'list', data: listed.map(modelObject) }));
      return;
    }
    // One model, as OpenAI's `GET /v1/models/{model}` gives it (a name with a slash, a router's, whole);
    // one it does not serve is a 404 in OpenAI's words.
    if (recorded.method === 'GET' && recorded.path.startsWith('/v1/models/')) {
      const id = decodeURIComponent(recorded.path.slice('/v1/models/'.length));
      if (listed.includes(id)) sendJson(200, JSON.stringify(modelObject(id)));
      else
        sendJson(
          404,
          openAIError(
            `The model '${id}' does not exist`,
            'invalid_request_error',
            'model',
            'model_not_found',
          ),
        );
      return;
    }
    const other = this.options.otherRoutes?.(recorded);
    if (other !== undefined) {
      response.writeHead(other.status, { 'content-type': 'application/json', ...other.headers });
      response.end(other.body);
      recorded.completed = true;
      return;
    }
    if (recorded.method === 'POST' && recorded.path === '/v1/responses') {
      answerResponses(recorded, behaviour, response, sendJson, this.options);
      return;
    }
    if (recorded.method !== 'POST' || recorded.path !== '/v1/chat/completions') {
      sendJson(
        404,
        openAIError(`Invalid URL (${recorded.method} ${recorded.path})`, 'invalid_request_error', null, null),
      );
      return;
    }
    const chatBody = (() => {
      try {
        return JSON.parse(rawBody) as { model?: unknown; tools?: unknown; reasoning_effort?: unknown };
      } catch {
        return undefined;
      }
    })();
    const chatModel = chatBody?.model;
    if (
      typeof chatModel === 'string' &&
      this.options.toolsNeedResponses?.includes(chatModel) === true &&
      Array.isArray(chatBody?.tools) &&
      chatBody.tools.length > 0 &&
      chatBody.reasoning_effort !== 'none'
    ) {
      sendJson(
        400,
        openAIError(
          `Function tools with reasoning_effort are not supported for ${chatModel} in /v1/chat/completions. To use function tools, use /v1/responses or set reasoning_effort to 'none'.`,
          'invalid_request_error',
          'reasoning_effort',
          null,
        ),
      );
      return;
    }
    if (typeof chatModel === 'string' && this.options.responsesOnly?.includes(chatModel) === true) {
      sendJson(
        404,
        openAIError(
          'This model is only supported in v1/responses and not in v1/chat/completions.',
          'invalid_request_error',
          'model',
          null,
        ),
      );
      return;
    }
    if (behaviour.delayBeforeHeadersMs !== undefined) await sleep(behaviour.delayBeforeHeadersMs);
    if (behaviour.answerWhen !== undefined) await behaviour.answerWhen;
    if (response.destroyed) return;
    if (behaviour.status !== undefined) {
      response.writeHead(behaviour.status, { 'content-type': 'application/json', ...behaviour.headers });
      response.end(behaviour.body ?? '');
      recorded.completed = true;
      return;
    }

    type ChatBody = {
      model?: unknown;
      messages?: ChatMessage[];
      stream?: boolean;
      max_tokens?: number;
      max_completion_tokens?: number;
      tools?: unknown;
      stream_options?: { include_usage?: boolean };
    };
    // A lone surrogate half's escape is no JSON to a strict parser (serde's words, as DeepSeek gives them).
    const loneHalf = firstLoneHalf(rawBody);
    if (loneHalf !== undefined) {
      sendJson(
        400,
        openAIError(
          `Failed to parse the request body as JSON: lone leading surrogate in hex escape at line 1 column ${loneHalf.at + 1}`,
          'invalid_request_error',
          null,
          'invalid_request_error',
        ),
      );
      return;
    }
    const parsed = parsedBody(rawBody, sendJson);
    if (parsed === undefined) return;
    const body = parsed as ChatBody;
    recorded.body = body;
    if (this.options.bedrockRules?.includes(String(body?.model)) === true) {
      const messages = Array.isArray(body?.messages) ? body.messages : [];
      const history = messages.some(
        (message) => message.role === 'tool' || (message.tool_calls?.length ?? 0) > 0,
      );
      const tools = Array.isArray(body?.tools) && body.tools.length > 0;
      const turns = messages.filter((message) => message.role !== 'system');
      const repeats = turns.some(
        (message, at) => at > 0 && message.role !== 'tool' && message.role === turns[at - 1]?.role,
      );
      const blankAt = messages.findIndex(
        (message) =>
          message.role !== 'system' &&
          typeof message.content === 'string' &&
          message.content.trim() === '' &&
          (message.tool_calls?.length ?? 0) === 0,
      );
      const refusal =
        blankAt !== -1
          ? `The text field in the ContentBlock object at messages.${blankAt}.content.0 is blank. Add text to the text field, and try again.`
          : history && !tools
            ? 'The toolConfig field must be defined when using toolUse and toolResult content blocks.'
            : repeats
              ? 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.'
              : undefined;
      if (refusal !== undefined) {
        sendJson(
          400,
          JSON.stringify({
            error: {
              message: `litellm.BadRequestError: BedrockException - ${JSON.stringify({ message: refusal })}`,
              type: null,
              param: null,
              code: '400',
            },
          }),
        );
        return;
      }
    }
    if (
      this.options.noAutoToolChoice?.includes(String(body?.model)) === true &&
      Array.isArray(body?.tools) &&
      (body.tools as unknown[]).length > 0 &&
      ((body as { tool_choice?: unknown }).tool_choice === undefined ||
        (body as { tool_choice?: unknown }).tool_choice === 'auto')
    ) {
      sendJson(
        400,
        JSON.stringify({
          object: 'error',
          message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
          type: 'BadRequestError',
          param: null,
          code: 400,
        }),
      );
      return;
    }
    if (
      this.options.noTools?.includes(String(body?.model)) === true &&
      ((Array.isArray(body?.tools) && (body.tools as unknown[]).length > 0) ||
        (body?.messages ?? []).some(
          (message) => message.role === 'tool' || (message.tool_calls?.length ?? 0) > 0,
        ))
    ) {
      sendJson(
        400,
        JSON.stringify({
          error: {
            message: `registry.ollama.ai/library/${String(body?.model)} does not support tools`,
            type: 'api_error',
            param: null,
            code: null,
          },
        }),
      );
      return;
    }
    if (
      this.options.stringToolChoice?.includes(String(body?.model)) === true &&
      typeof (body as { tool_choice?: unknown }).tool_choice === 'object' &&
      (body as { tool_choice?: unknown }).tool_choice !== null
    ) {
      sendJson(
        400,
        JSON.stringify({
          error: "Invalid tool_choice type: 'object'. Supported string values: none, auto, required",
        }),
      );
      return;
    }
    const unknown =
      this.options.unknownParameters?.includes(String(body?.model)) === true
        ? extraInputsOf(body)[0]
        : undefined;
    if (unknown !== undefined) {
      sendJson(
        400,
        JSON.stringify({
          error: {
            message: `Unknown parameter: '${unknown.place}'.`,
            type: 'invalid_request_error',
            param: unknown.place,
            code: 'unknown_parameter',
          },
        }),
      );
      return;
    }
    const extras =
      this.options.extraInputs?.includes(String(body?.model)) === true ? extraInputsOf(body) : [];
    if (extras.length > 0) {
      const each = extras.map(
        ({ place, value }) => `Extra inputs are not permitted, field: '${place}'${pythonValue(value)}`,
      );
      sendJson(
        400,
        JSON.stringify({
          error: {
            object: 'error',
            type: 'invalid_request_error',
            code: 'invalid_request_error',
            message:
              each.length === 1 ? each[0] : `${each.length} request validation errors: ${each.join('; ')}`,
          },
        }),
      );
      return;
    }
    if (this.options.nimRules?.includes(String(body?.model)) === true) {
      const unsupported = Object.keys(body ?? {}).filter((field) => !chatFields.has(field));
      if (unsupported.length > 0) {
        sendJson(
          400,
          JSON.stringify({
            error: {
              message: `Validation: Unsupported parameter(s): ${unsupported.join(', ')}`,
              type: 'Bad Request',
              code: 400,
            },
          }),
        );
        return;
      }
    }
    if (cacheRetentionRefused(body, this.options)) {
      sendJson(400, cacheRetentionRefusal);
      return;
    }
    const tiers = this.options.serviceTiers?.[String(body?.model)];
    const tier = (body as Record<string, unknown>).service_tier;
    if (tiers !== undefined && tier !== undefined && (tiers === 'none' || !tiers.includes(String(tier)))) {
      sendJson(
        400,
        tiers === 'none'
          ? openAIError(
              'service_tier is not supported',
              'invalid_request_error',
              'service_tier',
              'unsupported_value',
            )
          : openAIError(
              `Unsupported service_tier: ${String(tier)}`,
              'invalid_request_error',
              'service_tier',
              null,
            ),
      );
      return;
    }
    const unknownHere = this.options.unknownFields?.[String(body?.model)] ?? [];
    const unrecognized = Object.keys(body ?? {}).find(
      (field) =>
        unknownHere.includes(field) ||
        (!chatFields.has(field) && this.options.extraFields?.includes(field) !== true),
    );
    if (unrecognized !== undefined) {
      sendJson(
        400,
        openAIError(
          `Unrecognized request argument supplied: ${unrecognized}`,
          'invalid_request_error',
          null,
          null,
        ),
      );
      return;
    }
    if (typeof body.model !== 'string' || !Array.isArray(body.messages) || body.messages.length === 0) {
      sendJson(
        400,
        openAIError("Invalid 'messages': empty array.", 'invalid_request_error', 'messages', 'empty_array'),
      );
      return;
    }
    // OpenAI's rule for a message's content: null or left out only beside tool calls (docker-agent#63,
    // vercel/ai#13744); a server as LM Studio's refuses null even there (lmstudio-bug-tracker#261).
    const nullContent = nullContentAt(
      body.messages,
      this.options.noNullContent?.includes(body.model) === true,
    );
    if (nullContent !== undefined) {
      sendJson(400, nullContent);
      return;
    }
    // OpenAI's: a message's tool calls as an empty list (openai/openai-node#1341, which its parse helper wrote).
    const noCalls = body.messages.findIndex(
      (message) => Array.isArray(message.tool_calls) && message.tool_calls.length === 0,
    );
    if (noCalls !== -1) {
      sendJson(
        400,
        openAIError(
          `Invalid 'messages[${noCalls}].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
          'invalid_request_error',
          `messages[${noCalls}].tool_calls`,
          'empty_array',
        ),
      );
      return;
    }
    const cerebrasRefusal =
      this.options.cerebrasRules?.includes(body.model) === true ? cerebrasRefusalOf(body) : undefined;
    if (cerebrasRefusal !== undefined) {
      sendJson(400, cerebrasRefusal);
      return;
    }
    const groqRefusal =
      this.options.groqRules?.includes(body.model) === true ? groqRefusalOf(body) : undefined;
    if (groqRefusal !== undefined) {
      sendJson(400, JSON.stringify({ error: { message: groqRefusal, type: 'invalid_request_error' } }));
      return;
    }
    const ending = body.messages.at(-1);
    if (
      this.options.noPrefill?.includes(body.model) === true &&
      ending?.role === 'assistant' &&
      (ending.tool_calls?.length ?? 0) === 0
    ) {
      sendJson(
        400,
        JSON.stringify({
          error: {
            message:
              'This model does not support assistant message prefill. The conversation must end with a user message.',
            code: 'invalid_request_body',
          },
        }),
      );
      return;
    }
    const fixedTemperature = this.options.fixedTemperature?.[body.model];
    const temperature = (body as { temperature?: unknown }).temperature;
    if (fixedTemperature !== undefined && temperature !== undefined && temperature !== fixedTemperature) {
      sendJson(
        400,
        JSON.stringify({
          error: {
            message: `invalid temperature: only ${fixedTemperature} is allowed for this model`,
            type: 'invalid_request_error',
          },
        }),
      );
      return;
    }
    const choice = (body as { tool_choice?: unknown }).tool_choice;
    // OpenAI's: tools given as an empty list (continuedev/continue#3370), a tool choice with no tools.
    const tools = (body as { tools?: unknown }).tools;
    if (Array.isArray(tools) && tools.length === 0) {
      sendJson(
        400,
        openAIError(
          "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
          'invalid_request_error',
          'tools',
          'empty_array',
        ),
      );
      return;
    }
    if (choice !== undefined && tools === undefined) {
      sendJson(
        400,
        openAIError(
          "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
          'invalid_request_error',
          'tool_choice',
          null,
        ),
      );
      return;
    }
    if (this.options.autoChoiceAsObject?.includes(body.model) === true && choice === 'auto') {
      sendJson(
        400,
        openAIError(
          "Invalid value: 'auto'. Supported values are: 'code_interpreter', 'programmatic_tool_calling', 'function', 'namespace', 'tool_search', 'file_search', 'web_search_preview', 'web_search_preview_2025_03_11', 'image_generation', 'mcp', 'custom', 'computer', 'computer_use_preview', 'shell', and 'apply_patch'.",
          'invalid_request_error',
          'tool_choice.type',
          'invalid_value',
        ),
      );
      return;
    }
    if (
      this.options.autoToolChoiceOnly?.includes(body.model) === true &&
      choice !== undefined &&
      choice !== 'auto'
    ) {
      sendJson(
        400,
        JSON.stringify({
          error: { message: 'Tool choice must be auto', code: 400, metadata: { provider_name: 'Z.AI' } },
        }),
      );
      return;
    }
    if (
      this.options.thinkingToolChoice?.includes(body.model) === true &&
      (choice === 'required' || (typeof choice === 'object' && choice !== null))
    ) {
      sendJson(
        400,
        body.model.startsWith('deepseek-')
          ? openAIError(
              'Thinking mode does not support this tool_choice',
              'invalid_request_error',
              null,
              'invalid_request_error',
            )
          : openAIError(
              '<400> InternalError.Algo.InvalidParameter: The tool_choice parameter does not support being set to required or object in thinking mode',
              'invalid_request_error',
              null,
              'invalid_parameter_error',
            ),
      );
      return;
    }
    if (this.options.xaiRules?.includes(body.model) === true) {
      const refusal =
        (body as { reasoning_effort?: unknown }).reasoning_effort !== undefined
          ? `Model ${String(body.model)} does not support parameter reasoningEffort.`
          : body.messages.some((message) => message.content == null)
            ? 'Invalid request content: Each message must have at least one content element.'
            : body.messages.some((message) => message.role !== 'user' && message.name !== undefined)
              ? 'Invalid request content: Only message of role user can have a name.'
              : undefined;
      if (refusal !== undefined) {
        sendJson(400, JSON.stringify({ code: 'Client specified an invalid argument', error: refusal }));
        return;
      }
    }
    const misnamed = body.messages.findIndex(
      (message) => message.name !== undefined && !/^[a-zA-Z0-9_-]+$/.test(String(message.name)),
    );
    if (misnamed !== -1 && this.options.openaiNames?.includes(body.model) === true) {
      sendJson(
        400,
        JSON.stringify({
          error: {
            message: `Invalid 'messages[${misnamed}].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
            type: 'invalid_request_error',
            param: `messages[${misnamed}].name`,
            code: 'invalid_value',
          },
        }),
      );
      return;
    }
    if (this.options.minimaxRules?.includes(body.model) === true) {
      const bare = (
        Array.isArray(body.tools) ? (body.tools as Array<{ function?: { parameters?: unknown } }>) : []
      ).some((tool) => tool.function !== undefined && tool.function.parameters === undefined);
      const notObject = (text: unknown): boolean => {
        try {
          const value: unknown = typeof text === 'string' ? JSON.parse(text) : undefined;
          return typeof value !== 'object' || value === null || Array.isArray(value);
        } catch {
          return true;
        }
      };
      const badCall = body.messages
        .flatMap((message) => message.tool_calls ?? [])
        .find((call: { function?: { arguments?: unknown } }) => notObject(call.function?.arguments));
      if (bare || badCall !== undefined) {
        sendJson(
          400,
          JSON.stringify({
            type: 'error',
            error: {
              type: 'bad_request_error',
              message: bare
                ? 'invalid params, function parameters is empty (2013)'
                : `invalid params, invalid function arguments json string, tool_call_id: ${String((badCall as { id?: unknown }).id)} (2013)`,
              http_code: '400',
            },
            request_id: '060fd231159a0f4f773989e10d60dc4c',
          }),
        );
        return;
      }
    }
    if (this.options.jsonToolArguments?.includes(body.model) === true) {
      const decodeError = pythonDecodeError(body.messages);
      if (decodeError !== undefined) {
        sendJson(
          400,
          JSON.stringify({
            error: { message: decodeError, type: 'BadRequestError', param: null, code: 400 },
          }),
        );
        return;
      }
    }
    // OpenAI's types for a call sent back: text, each (a llama-server that gives decoded arguments also
    // takes them back).
    const mistyped = mistypedCallField(
      body.messages,
      this.options.decodedToolArguments?.includes(body.model),
    );
    if (mistyped !== undefined) {
      sendJson(
        400,
        openAIError(
          `Invalid type for '${mistyped.param}': expected a string, but got ${mistyped.got} instead.`,
          'invalid_request_error',
          mistyped.param,
          'invalid_type',
        ),
      );
      return;
    }
    // OpenAI's rule for a tool's name (openai/codex#8174: an MCP tool named with a dot).
    const badTool = (
      Array.isArray(body.tools) ? (body.tools as Array<{ function?: { name?: unknown } }>) : []
    ).findIndex(
      (tool) => typeof tool?.function?.name === 'string' && !/^[a-zA-Z0-9_-]{1,64}$/.test(tool.function.name),
    );
    if (badTool !== -1) {
      const name = String((body.tools as Array<{ function: { name: string } }>)[badTool]?.function.name);
      const param = `tools[${badTool}].function.name`;
      sendJson(
        400,
        openAIError(
          name.length > 64
            ? `Invalid '${param}': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`
            : `Invalid '${param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
          'invalid_request_error',
          param,
          name.length > 64 ? 'string_above_max_length' : 'invalid_value',
        ),
      );
      return;
    }
    const effort = (body as Record<string, unknown>).reasoning_effort;
    const ollama = this.options.ollamaEfforts?.[String(body.model)];
    if (ollama !== undefined && typeof effort === 'string' && !ollama.includes(effort)) {
      const listed = ollama.map((value) => `"${value}"`);
      sendJson(
        400,
        openAIError(
          ollama.length === 0
            ? `"${String(body.model)}" does not support thinking`
            : `invalid reasoning value: "${effort}" (must be ${listed.slice(0, -1).join(', ')}, or ${String(listed.at(-1))})`,
          'invalid_request_error',
          null,
          null,
        ),
      );
      return;
    }
    const efforts = this.options.reasoningEfforts?.[String(body.model)];
    if (efforts !== undefined && typeof effort === 'string' && !efforts.includes(effort)) {
      const listed = efforts.map((value) => `'${value}'`);
      sendJson(
        400,
        openAIError(
          `Unsupported value: 'reasoning_effort' does not support '${effort}' with this model. Supported values are: ${listed.slice(0, -1).join(', ')}, and ${String(listed.at(-1))}.`,
          'invalid_request_error',
          'reasoning_effort',
          'unsupported_value',
        ),
      );
      return;
    }
    // OpenAI's: parallel tool calls with no tool to call (Upsonic/Upsonic#323, camel-ai/camel#3706).
    if (
      (body as Record<string, unknown>).parallel_tool_calls !== undefined &&
      (!Array.isArray(body.tools) || body.tools.length === 0)
    ) {
      sendJson(
        400,
        openAIError(
          "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
          'invalid_request_error',
          'parallel_tool_calls',
          null,
        ),
      );
      return;
    }
    const format = (body as { response_format?: { type?: unknown } }).response_format?.type;
    const formatRefusal =
      responseFormatRefusal(this.options, String(body.model), body) ??
      stopRefusal(this.options, String(body.model), (body as { stop?: unknown }).stop);
    if (formatRefusal !== undefined) {
      sendJson(400, formatRefusal);
      return;
    }
    const jsonModeOnly = this.options.jsonModeOnly?.includes(String(body.model)) === true;
    if (jsonModeOnly && format === 'json_schema') {
      sendJson(
        400,
        openAIError(
          'This response_format type is unavailable now',
          'invalid_request_error',
          null,
          'invalid_request_error',
        ),
      );
      return;
    }
    // A schema for the answer as OpenAI takes one: named, and under `strict` closed with every property required.
    const schemaRefusal = format === 'json_schema' ? responseSchemaRefusal(body) : undefined;
    if (schemaRefusal !== undefined) {
      sendJson(400, openAIError(schemaRefusal.message, 'invalid_request_error', schemaRefusal.param, null));
      return;
    }
    // JSON mode asks for the word in the messages, as OpenAI, Azure, DashScope and DeepSeek do (each in its
    // own words): a model never told to answer in JSON may write whitespace until its max_tokens.
    if (format === 'json_object' && !/json/i.test(JSON.stringify(body.messages ?? []))) {
      sendJson(
        400,
        jsonModeOnly
          ? openAIError(
              "Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'.",
              'invalid_request_error',
              null,
              'invalid_request_error',
            )
          : openAIError(
              "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
              'invalid_request_error',
              'messages',
              null,
            ),
      );
      return;
    }
    const geminiServed = String(body.model).startsWith('gemini');
    if (
      this.options.userTurnRequired?.includes(String(body.model)) === true &&
      !(body.messages ?? []).some((message) =>
        geminiServed ? message.role !== 'system' && message.role !== 'developer' : message.role === 'user',
      )
    ) {
      sendJson(
        400,
        geminiServed
          ? JSON.stringify([
              {
                error: {
                  code: 400,
                  message: '* GenerateContentRequest.contents: contents is not specified\n',
                  status: 'INVALID_ARGUMENT',
                },
              },
            ])
          : String(body.model).startsWith('qwen')
            ? openAIError(
                (body.messages ?? []).every((message) => message.role === 'system')
                  ? // agentscope-ai/agentscope#425: instructions only.
                    '<400> InternalError.Algo.InvalidParameter: The messages list should not contain only one message with role "system". Please include at least one other role in the messages.'
                  : '<400> InternalError.Algo.InvalidParameter: The input messages do not contain elements with the role of user',
                'invalid_request_error',
                null,
                'invalid_parameter_error',
              )
            : JSON.stringify({
                error: {
                  code: '1214',
                  message: 'The messages parameter is illegal. Please check the documentation.',
                },
              }),
      );
      return;
    }
    const parts = (body.messages ?? []).findIndex((message) => Array.isArray(message.content));
    if (parts !== -1 && this.options.stringContentOnly?.includes(String(body.model)) === true) {
      sendJson(
        400,
        openAIError(
          `Failed to deserialize the JSON body into the target type: messages[${parts}].content: invalid type: sequence, expected a string at line 1 column 80`,
          'invalid_request_error',
          null,
          null,
        ),
      );
      return;
    }
    const toolParts = (body.messages ?? []).findIndex(
      (message) => message.role === 'tool' && Array.isArray(message.content),
    );
    if (toolParts !== -1 && this.options.stringToolContent?.includes(String(body.model)) === true) {
      sendJson(
        400,
        openAIError(
          `Failed to deserialize the JSON body into the target type: messages[${toolParts}]: invalid type: sequence, expected a string at line 1 column 412`,
          'invalid_request_error',
          null,
          'invalid_request_error',
        ),
      );
      return;
    }
    const developer = (body.messages ?? []).findIndex((message) => message.role === 'developer');
    if (developer !== -1 && this.options.noDeveloperRole?.includes(String(body.model)) === true) {
      sendJson(
        400,
        openAIError(
          `Failed to deserialize the JSON body into the target type: messages[${developer}].role: unknown variant \`developer\`, expected one of \`system\`, \`user\`, \`assistant\`, \`tool\`, \`latest_reminder\` at line 1 column 120`,
          'invalid_request_error',
          null,
          'invalid_request_error',
        ),
      );
      return;
    }
    const longest = this.options.maxAnswerTokens?.[String(body.model)];
    const asked = body.max_completion_tokens ?? body.max_tokens;
    if (longest !== undefined && asked !== undefined && asked > longest) {
      const field = body.max_completion_tokens === undefined ? 'max_tokens' : 'max_completion_tokens';
      sendJson(
        400,
        String(body.model).startsWith('deepseek-')
          ? openAIError(
              `Invalid max_tokens value, the valid range of max_tokens is [1, ${longest}]`,
              'invalid_request_error',
              null,
              'invalid_request_error',
            )
          : openAIError(
              `${field} is too large: ${asked}. This model supports at most ${longest} completion tokens, whereas you provided ${asked}.`,
              'invalid_request_error',
              field,
              'invalid_value',
            ),
      );
      return;
    }
    // OpenAI's cap on the tools of a request (anomalyco/opencode#4909: many MCP servers' tools).
    if (Array.isArray(body.tools) && body.tools.length > 128) {
      sendJson(
        400,
        openAIError(
          `Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length ${body.tools.length} instead.`,
          'invalid_request_error',
          'tools',
          'array_above_max_length',
        ),
      );
      return;
    }
    // OpenAI's rules for a function's parameters (opencode#20273: an MCP tool's array without items),
    // and Gemini's for its Schema object.
    const gemini = this.options.geminiRules?.includes(String(body.model)) === true;
    const moonshot = this.options.moonshotRules?.includes(String(body.model)) === true;
    const fireworks = this.options.fireworksRules?.includes(String(body.model)) === true;
    const textless = (message: ChatMessage): boolean =>
      Array.isArray(message.content)
        ? (message.content as Array<{ type?: string; text?: unknown }>).every(
            (part) => part.type === 'text' && part.text === '',
          )
        : message.content === '' ||
          (message.content == null &&
            !(message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0));
    // Gemini's OpenAI-compatible endpoint knows no `seed` (mcpchecker/mcpchecker#188) nor penalties
    // (n4ze3m/page-assist#418): each named, one line each.
    const unknownToGemini = ['seed', 'frequency_penalty', 'presence_penalty'].filter(
      (field) => (body as Record<string, unknown>)[field] !== undefined,
    );
    if (gemini && unknownToGemini.length > 0) {
      sendJson(
        400,
        geminiError(
          unknownToGemini
            .map((field) => `Invalid JSON payload received. Unknown name "${field}": Cannot find field.`)
            .join('\n'),
        ),
      );
      return;
    }
    if (gemini && (body.messages ?? []).some(textless)) {
      sendJson(
        400,
        geminiError(
          'Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini',
        ),
      );
      return;
    }
    // Gemini's rule for a call's turn: right after a user turn or a function response (its system messages
    // are its system instruction, not turns): a history that starts with the model's call (Hermes Agent's
    // background workers, lbjlaq/Antigravity-Manager#3396) or a call after the model's text is refused.
    const turns = (body.messages ?? []).filter(
      (message) => message.role !== 'system' && message.role !== 'developer',
    );
    const callOutOfTurn = turns.findIndex(
      (message, index) =>
        message.role === 'assistant' &&
        (message.tool_calls?.length ?? 0) > 0 &&
        turns[index - 1]?.role !== 'user' &&
        turns[index - 1]?.role !== 'tool',
    );
    if (gemini && callOutOfTurn !== -1) {
      sendJson(
        400,
        geminiError(
          'Please ensure that function call turn comes immediately after a user turn or after a function response turn.',
        ),
      );
      return;
    }
    for (const [index, tool] of (Array.isArray(body.tools)
      ? (body.tools as Array<{ function?: { name?: unknown; parameters?: unknown } }>)
      : []
    ).entries()) {
      const fn = tool?.function;
      if (fn === undefined) continue;
      // Gemini's rule for a function's name (its own API's words, as its OpenAI-compatible endpoint and
      // gateways pass them on: CherryHQ/cherry-studio#4087; 21st.dev's `21st_magic_component_builder`).
      const badName = gemini && !/^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/.test(String(fn.name));
      const refusal = badName
        ? `* GenerateContentRequest.tools[0].function_declarations[${index}].name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.\n`
        : gemini
          ? geminiSchemaRefusal(index, fn.parameters)
          : moonshot
            ? moonshotSchemaRefusal(fn.parameters)
            : fireworks
              ? fireworksSchemaRefusal(fn.parameters)
              : openAISchemaRefusal(String(fn.name), fn.parameters);
      if (refusal === undefined) continue;
      sendJson(
        400,
        gemini
          ? geminiError(refusal)
          : moonshot || fireworks
            ? JSON.stringify({ error: { message: refusal, type: 'invalid_request_error' } })
            : openAIError(refusal, 'invalid_request_error', null, 'invalid_function_parameters'),
      );
      return;
    }
    const describedUpTo = this.options.toolDescriptionLimit?.[String(body.model)];
    const tooLong =
      describedUpTo === undefined
        ? -1
        : (Array.isArray(body.tools)
            ? (body.tools as Array<{ function?: { description?: unknown } }>)
            : []
          ).findIndex(
            (tool) =>
              typeof tool?.function?.description === 'string' &&
              [...tool.function.description].length > describedUpTo,
          );
    if (tooLong !== -1) {
      const length = [
        ...String(
          (body.tools as Array<{ function: { description: string } }>)[tooLong]?.function.description,
        ),
      ].length;
      const param = `tools[${tooLong}].function.description`;
      sendJson(
        400,
        openAIError(
          `Invalid '${param}': string too long. Expected a string with maximum length ${describedUpTo}, but got a string with length ${length} instead.`,
          'invalid_request_error',
          param,
          'string_above_max_length',
        ),
      );
      return;
    }
    // And for the name of a call in the history (mcp-use/mcp-use#90).
    const badCall = body.messages.flatMap((message, index) =>
      (message.role === 'assistant' ? (message.tool_calls ?? []) : []).flatMap((call, at) =>
        typeof call.function?.name === 'string' && !/^[a-zA-Z0-9_-]{1,64}$/.test(call.function.name)
          ? [`messages[${index}].tool_calls[${at}].function.name`]
          : [],
      ),
    )[0];
    if (badCall !== undefined) {
      sendJson(
        400,
        openAIError(
          `Invalid '${badCall}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
          'invalid_request_error',
          badCall,
          'invalid_value',
        ),
      );
      return;
    }
    const refusedId = refusedCallId(
      body.messages,
      this.options.claudeToolCallIds?.includes(body.model) === true,
    );
    if (refusedId !== undefined) {
      sendJson(400, openAIError(refusedId.message, 'invalid_request_error', refusedId.param, refusedId.code));
      return;
    }
    const pairingError = findToolPairingError(body.messages);
    if (pairingError !== undefined) {
      sendJson(400, openAIError(pairingError.message, 'invalid_request_error', pairingError.param, null));
      return;
    }
    // As OpenRouter routes a model none of whose endpoints takes images, or a forced tool choice.
    if (this.options.openRouterRouting?.includes(String(body.model)) === true) {
      const image = body.messages.some(
        (message) =>
          Array.isArray(message.content) &&
          (message.content as Array<{ type?: unknown }>).some((part) => part?.type === 'image_url'),
      );
      const choice = (body as { tool_choice?: unknown }).tool_choice;
      const forced = choice === 'required' || (typeof choice === 'object' && choice !== null);
      const cached = body.messages.some(
        (message) =>
          Array.isArray(message.content) &&
          (message.content as Array<{ cache_control?: unknown }>).some((part) => part?.cache_control != null),
      );
      if (image || forced || cached) {
        const what = image ? 'image input' : forced ? "the provided 'tool_choice' value" : 'cache control';
        sendJson(
          404,
          JSON.stringify({
            error: {
              message: `No endpoints found that support ${what}. To learn more about provider routing, visit: https://openrouter.ai/docs/guides/routing/provider-selection`,
              code: 404,
            },
          }),
        );
        return;
      }
    }
    // As vLLM serves a model that takes no images: any image refused.
    if (
      this.options.textOnly?.includes(String(body.model)) === true &&
      body.messages.some(
        (message) =>
          Array.isArray(message.content) &&
          (message.content as Array<{ type?: unknown }>).some((part) => part?.type === 'image_url'),
      )
    ) {
      sendJson(
        400,
        JSON.stringify({
          object: 'error',
          message: `${String(body.model)} is not a multimodal model`,
          type: 'BadRequestError',
          param: null,
          code: 400,
        }),
      );
      return;
    }
    const fileAt = body.messages.findIndex(
      (message) =>
        Array.isArray(message.content) &&
        (message.content as Array<{ type?: unknown }>).some((part) => part?.type === 'file'),
    );
    if (this.options.noFiles?.includes(String(body.model)) === true && fileAt !== -1) {
      sendJson(
        400,
        openAIError(
          `Failed to deserialize the JSON body into the target type: messages[${fileAt}]: unknown variant \`file\`, expected \`text\` at line 1 column ${rawBody.indexOf('"file"') + 1}`,
          'invalid_request_error',
          null,
          'invalid_request_error',
        ),
      );
      return;
    }
    const imageLimit = this.options.imageLimits?.[String(body.model)];
    const images = body.messages.reduce(
      (total, message) =>
        total +
        (Array.isArray(message.content)
          ? (message.content as Array<{ type?: unknown }>).filter((part) => part?.type === 'image_url').length
          : 0),
      0,
    );
    if (imageLimit !== undefined && images > imageLimit) {
      sendJson(
        400,
        JSON.stringify({
          object: 'error',
          message: `At most ${imageLimit} image(s) may be provided in one request.`,
          type: 'BadRequestError',
          param: null,
          code: 400,
        }),
      );
      return;
    }
    // As OpenAI refuses an image anywhere but in a user message (a tool result's included).
    const imageAt = body.messages.findIndex(
      (message) =>
        message.role !== 'user' &&
        Array.isArray(message.content) &&
        (message.content as Array<{ type?: unknown }>).some((part) => part?.type === 'image_url'),
    );
    if (imageAt !== -1) {
      const role = String(body.messages[imageAt]?.role);
      sendJson(
        400,
        openAIError(
          `Invalid 'messages[${imageAt}]'. Image URLs are only allowed for messages with role 'user', but this message with role '${role}' contains an image URL.`,
          'invalid_request_error',
          `messages.[${imageAt}].content`,
          null,
        ),
      );
      return;
    }
    // As OpenAI takes a file part: a PDF's data URL with its file name (or an uploaded file's id).
    const fileRefusal = findFileRefusal(body.messages);
    if (fileRefusal !== undefined) {
      sendJson(400, fileRefusal);
      return;
    }
    // OpenAI takes an end-user id of at most 64 characters.
    const user = (body as Record<string, unknown>).user;
    if (typeof user === 'string' && user.length > 64) {
      sendJson(
        400,
        openAIError(
          `Invalid 'user': string too long. Expected a string with maximum length 64, but got a string with length ${user.length} instead.`,
          'invalid_request_error',
          'user',
          'string_above_max_length',
        ),
      );
      return;
    }
    const forbidden = (this.options.forbiddenFields ?? []).filter(
      (field) => (body as Record<string, unknown>)[field] !== undefined,
    );
    const inMessages = this.options.mistralMessages === true ? mistralMessageExtras(body.messages) : [];
    if (forbidden.length > 0 || inMessages.length > 0) {
      const detail = forbidden
        .map((field) => ({
          type: 'extra_forbidden',
          loc: ['body', field] as Array<string | number>,
          msg: 'Extra inputs are not permitted',
          input: (body as Record<string, unknown>)[field],
        }))
        .concat(
          inMessages.map(({ loc, input }) => ({
            type: 'extra_forbidden',
            loc: ['body', 'messages', ...loc],
            msg: 'Extra inputs are not permitted',
            input,
          })),
        );
      sendJson(
        422,
        JSON.stringify({
          object: 'error',
          message: { detail },
          type: 'invalid_request_error',
          param: null,
          code: null,
        }),
      );
      return;
    }
    // Mistral's API: no user message right after tool results (zed-industries/zed#37021).
    const afterTool = body.messages.findIndex(
      (message, index) => message.role === 'user' && body.messages?.[index - 1]?.role === 'tool',
    );
    if (this.options.mistralMessages === true && afterTool !== -1) {
      sendJson(
        400,
        JSON.stringify({
          object: 'error',
          message: "Unexpected role 'user' after role 'tool'",
          type: 'invalid_request_message_order',
          param: null,
          code: '3230',
        }),
      );
      return;
    }
    // Mistral's API: an answer of neither text nor calls (an empty turn kept in the history: OpenHands#8685).
    const said = (content: unknown): boolean =>
      typeof content === 'string' ? content !== '' : Array.isArray(content) && content.length > 0;
    const emptyTurn = body.messages.findIndex(
      (message) =>
        message.role === 'assistant' && !said(message.content) && (message.tool_calls?.length ?? 0) === 0,
    );
    if (emptyTurn !== -1 && this.options.moonshotRules?.includes(String(body.model)) === true) {
      sendJson(
        400,
        JSON.stringify({
          error: {
            message: `Invalid request: the message at position ${emptyTurn} with role 'assistant' must not be empty`,
            type: 'invalid_request_error',
          },
        }),
      );
      return;
    }
    if (
      this.options.mistralMessages === true &&
      body.messages.some(
        (message) =>
          message.role === 'assistant' && !said(message.content) && (message.tool_calls?.length ?? 0) === 0,
      )
    ) {
      sendJson(
        400,
        JSON.stringify({
          object: 'error',
          message: 'Assistant message must have either content or tool_calls, but not none.',
          type: 'invalid_request_message_order',
          param: null,
          code: '3230',
        }),
      );
      return;
    }
    if (this.options.mistralToolCallIds === true) {
      const ids = body.messages.flatMap((message) => [
        ...(message.tool_calls ?? []).map((call) => call.id),
        ...(message.role === 'tool' ? [message.tool_call_id] : []),
      ]);
      const wrong = ids.find((id) => typeof id !== 'string' || !/^[A-Za-z0-9]{9}$/.test(id));
      if (wrong !== undefined) {
        sendJson(
          400,
          JSON.stringify({
            object: 'error',
            message: `Tool call id was ${String(wrong)} but must be a-z, A-Z, 0-9, with a length of 9.`,
            type: 'invalid_function_call',
            param: null,
            code: '3280',
            raw_status_code: 400,
          }),
        );
        return;
      }
    }
    if (this.options.reasoningModels?.includes(String(body.model)) === true) {
      const raw = body as Record<string, unknown>;
      const refusal =
        raw.max_tokens !== undefined && raw.max_tokens !== null
          ? {
              message:
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
              param: 'max_tokens',
              code: 'unsupported_parameter',
            }
          : typeof raw.temperature === 'number' && raw.temperature !== 1
            ? {
                message: `Unsupported value: 'temperature' does not support ${raw.temperature} with this model. Only the default (1) value is supported.`,
                param: 'temperature',
                code: 'unsupported_value',
              }
            : undefined;
      if (refusal !== undefined) {
        sendJson(400, JSON.stringify({ error: { ...refusal, type: 'invalid_request_error' } }));
        return;
      }
    }
    if (
      this.options.noSystemRole?.includes(String(body.model)) === true &&
      body.messages.some((message) => message.role === 'system' || message.role === 'developer')
    ) {
      sendJson(
        400,
        /gemma-3/i.test(String(body.model))
          ? geminiError(`Developer instruction is not enabled for models/${String(body.model)}`)
          : JSON.stringify({
              object: 'error',
              message: 'System role not supported',
              type: 'BadRequestError',
              param: null,
              code: 400,
            }),
      );
      return;
    }
    // A chat template that takes one system message, first (Qwen's, Mistral's, Gemma's… as vLLM serves
    // them): a developer message is a role it does not know; a system message anywhere else breaks the
    // alternation it checks.
    const strictTemplate = this.options.systemOnlyFirst;
    if (strictTemplate === true || strictTemplate?.includes(String(body.model)) === true) {
      const refusal = body.messages.some((message) => message.role === 'developer')
        ? { error: { message: 'Unexpected message role.', type: 'BadRequestError', param: null, code: 400 } }
        : body.messages.some((message, index) => index > 0 && message.role === 'system')
          ? /qwen3\.[5-9]/i.test(String(body.model))
            ? // Qwen 3.5's and 3.6's template (vllm-project/vllm#41114): a second system message too.
              {
                error: {
                  message: 'System message must be at the beginning.',
                  type: 'BadRequestError',
                  param: null,
                  code: 400,
                },
              }
            : {
                object: 'error',
                message:
                  'After the optional system message, conversation roles must alternate user/assistant/user/assistant/...',
                type: 'BadRequestError',
                param: null,
                code: 400,
              }
          : undefined;
      if (refusal !== undefined) {
        sendJson(400, JSON.stringify(refusal));
        return;
      }
    }
    if (this.options.reasoningDetails?.includes(String(body.model)) === true) {
      // Claude takes at most 4 cache breakpoints (OpenRouter sends a content part's `cache_control` on).
      const breakpoints = body.messages.reduce(
        (total, message) =>
          total +
          (Array.isArray(message.content)
            ? (message.content as Array<{ cache_control?: unknown }>).filter(
                (part) => part?.cache_control != null,
              ).length
            : 0),
        0,
      );
      if (breakpoints > 4) {
        sendJson(
          400,
          openRouterAnthropicRefusal(
            `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`,
          ),
        );
        return;
      }
      // A signature another Claude model gave, or none of Claude's, anywhere: refused as Anthropic refuses it
      // (linanwx/nagobot#21, through OpenRouter: "messages.7.content.2: Invalid signature in thinking block").
      const foreign = body.messages.findIndex(
        (message) =>
          message.role === 'assistant' &&
          Array.isArray(message.reasoning_details) &&
          (message.reasoning_details as Array<{ signature?: unknown }>).some(
            (detail) =>
              typeof detail?.signature === 'string' &&
              this.claudeSignatures.get(detail.signature) !== String(body.model),
          ),
      );
      if (foreign !== -1) {
        sendJson(
          400,
          openRouterAnthropicRefusal(
            `messages.${foreign}.content.0: Invalid \`signature\` in \`thinking\` block`,
          ),
        );
        return;
      }
      const lastUser = body.messages.findLastIndex((message) => message.role === 'user');
      const index = body.messages.findLastIndex(
        (message, at) =>
          at > lastUser && message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0,
      );
      const details = body.messages[index]?.reasoning_details;
      const signed =
        Array.isArray(details) &&
        details.some(
          (detail: { signature?: unknown }) =>
            typeof detail?.signature === 'string' && this.signaturesGiven.has(detail.signature),
        );
      if (index >= 0 && !signed) {
        sendJson(
          400,
          openRouterAnthropicRefusal(
            `messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`tool_use\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
          ),
        );
        return;
      }
    }
    if (this.options.thoughtSignatures?.includes(String(body.model)) === true) {
      const refusal = this.thoughtSignatureRefusal(body.messages);
      if (refusal !== undefined) {
        sendJson(400, refusal);
        return;
      }
    }
    if (
      this.options.thinking?.includes(String(body.model)) === true &&
      (this.options.reasoningField ?? 'reasoning_content') === 'reasoning_content' &&
      body.messages.some(
        (message) =>
          message.role === 'assistant' &&
          Array.isArray(message.tool_calls) &&
          message.tool_calls.length > 0 &&
          (typeof message.reasoning_content !== 'string' || message.reasoning_content === ''),
      )
    ) {
      sendJson(
        400,
        JSON.stringify({
          error: {
            message: 'The `reasoning_content` in the thinking mode must be passed back to the API.',
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_request_error',
          },
        }),
      );
      return;
    }
    if (
      this.options.userFirst?.includes(String(body.model)) === true &&
      body.messages.find((message) => message.role !== 'system' && message.role !== 'developer')?.role !==
        'user'
    ) {
      sendJson(
        400,
        openAIError(
          `litellm.BadRequestError: BedrockException - {"message":"A conversation must start with a user message. Try again with a conversation that starts with a user message."}\n. Received Model Group=${String(body.model)}`,
          'invalid_request_error',
          null,
          '400',
        ),
      );
      return;
    }
    const alternating = this.options.alternating;
    const perplexity = this.options.perplexityRules?.includes(String(body.model)) === true;
    if (alternating === true || alternating?.includes(String(body.model)) === true || perplexity) {
      const leading = perplexity ? body.messages.findIndex((message) => message.role !== 'system') : 1;
      const turns = body.messages.filter(
        (message, index) =>
          !(index < leading && message.role === 'system') &&
          message.role !== 'tool' &&
          !(
            message.role === 'assistant' &&
            Array.isArray(message.tool_calls) &&
            message.tool_calls.length > 0
          ),
      );
      const systemLater =
        perplexity && body.messages.some((message, index) => index >= leading && message.role === 'system');
      const broken = turns.findIndex((message, index) => (message.role === 'user') !== (index % 2 === 0));
      if (systemLater || broken !== -1) {
        const deepseek = String(body.model).startsWith('deepseek-reasoner');
        sendJson(
          400,
          deepseek
            ? openAIError(
                // Its words (open-webui/open-webui#9266, Aider-AI/aider#2974): the two messages by their place.
                `deepseek-reasoner does not support successive user or assistant messages (messages[${broken - 1}] and messages[${broken}] in your input). You should interleave the user/assistant messages in the message sequence.`,
                'invalid_request_error',
                null,
                'invalid_request_error',
              )
            : perplexity
              ? JSON.stringify({
                  error: {
                    message:
                      'After the (optional) system message(s), user and assistant roles should be alternating.',
                    type: 'invalid_message',
                    code: 400,
                  },
                })
              : JSON.stringify({
                  object: 'error',
                  message:
                    'After the optional system message, conversation roles must alternate user and assistant roles except for tool calls and results.',
                  type: 'BadRequestError',
                  param: null,
                  code: 400,
                }),
        );
        return;
      }
    }
    const counted =
      this.options.tokenCounting === 'approximate'
        ? Math.ceil(rawBody.length / 4)
        : countPromptTokens(body.messages, body.tools, this.options.imageTokens);
    // A model whose own tokenizer counts differently from the cookbook count.
    const scale = typeof body.model === 'string' ? (this.options.promptTokenScale?.[body.model] ?? 1) : 1;
    const template = typeof body.model === 'string' ? (this.options.templateTokens?.[body.model] ?? 0) : 0;
    let promptTokens = Math.ceil(counted * scale) + template;
    recorded.promptTokens = promptTokens;
    // What the usage reports: all of it, or only what the prompt cache did not hold.
    let uncached: number | undefined;
    if (typeof body.model === 'string' && this.options.countsUncachedOnly?.includes(body.model)) {
      const messages = JSON.stringify(body.messages);
      const cached = this.cachedPrompts.get(body.model);
      this.cachedPrompts.set(body.model, { messages, tokens: promptTokens });
      if (cached !== undefined && messages.startsWith(cached.messages.slice(0, -1)))
        uncached = Math.max(0, promptTokens - cached.tokens);
    }
    let cachedTokens: number | undefined;
    if (typeof body.model === 'string' && this.options.reportsCachedTokens?.includes(body.model)) {
      const messages = JSON.stringify(body.messages);
      const previous = this.reportedCaches.get(body.model);
      this.reportedCaches.set(body.model, { messages, tokens: promptTokens });
      cachedTokens =
        previous !== undefined && messages.startsWith(previous.messages.slice(0, -1)) ? previous.tokens : 0;
      recorded.cachedTokens = cachedTokens;
    }
    const window = this.options.windows?.[body.model] ?? this.options.defaultWindow ?? 128_000;
    const completionTokens = body.max_completion_tokens ?? body.max_tokens ?? 0;
    // Servers that cut an over-long prompt instead of refusing it (Ollama's default): the answer
    // reports only what was kept.
    if (
      this.options.truncateSilently?.includes(String(body.model)) === true &&
      promptTokens + completionTokens > window
    ) {
      promptTokens = Math.max(0, window - completionTokens);
    }
    const overflowAnswer = this.options.overflowAnswer;
    if (overflowAnswer !== undefined && promptTokens + completionTokens > window) {
      const answer = overflowAnswer({
        window,
        promptTokens,
        completionTokens,
        kind: promptTokens > window ? 'prompt' : 'prompt_plus_completion',
      });
      const sse = /^(?:data|event|error):/.test(answer.body);
      recorded.status = answer.status;
      response.writeHead(answer.status, {
        'content-type': sse
          ? 'text/event-stream'
          : answer.body.startsWith('{') || answer.body.startsWith('[')
            ? 'application/json'
            : 'text/plain',
      });
      // As OpenRouter: the stream open and a comment written while the provider is asked.
      if (sse && answer.heldUntil !== undefined) {
        response.write(': OPENROUTER PROCESSING\n\n');
        await answer.heldUntil;
      }
      response.end(answer.body);
      recorded.completed = true;
      return;
    }
    const inputLimit = this.options.inputLimits?.[String(body.model)];
    if (inputLimit !== undefined && promptTokens > inputLimit) {
      sendJson(
        400,
        openAIError(
          `Input tokens exceed the configured limit of ${inputLimit} tokens. Your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
          'invalid_request_error',
          'messages',
          'context_length_exceeded',
        ),
      );
      return;
    }
    if (promptTokens > window) {
      sendJson(
        400,
        openAIError(
          `This model's maximum context length is ${window} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
          'invalid_request_error',
          'messages',
          'context_length_exceeded',
        ),
      );
      return;
    }
    if (promptTokens + completionTokens > window) {
      sendJson(
        400,
        openAIError(
          `This model's maximum context length is ${window} tokens. However, you requested ${promptTokens + completionTokens} tokens (${promptTokens} in the messages, ${completionTokens} in the completion). Please reduce the length of the messages or completion.`,
          'invalid_request_error',
          'messages',
          'context_length_exceeded',
        ),
      );
      return;
    }

    // The model decides only on a prompt it takes: a refused request leaves its plans as they were.
    if (!summaryRequest && this.options.respond !== undefined) {
      const decided = this.options.respond(body.messages, body as unknown as Record<string, unknown>);
      if (decided !== undefined) Object.assign(behaviour, decided);
    }
    // As Kimi K2 takes a history holding another model's tool call ids: the turn ends with nothing.
    const kimi = this.options.kimiToolCallIds?.includes(String(body.model)) === true;
    const callsBefore = body.messages.flatMap((message) => message.tool_calls ?? []);
    if (
      !summaryRequest &&
      kimi &&
      callsBefore.some((call) => !/^functions\.[^:]*:\d+$/.test(String(call.id)))
    ) {
      delete behaviour.toolCalls;
      behaviour.content = '';
    }
    /** A scripted call's id as this provider gives it: Kimi's count the conversation's calls. */
    const idOf = (call: { id: string; name: string }, position: number): string =>
      kimi ? `functions.${call.name}:${callsBefore.length + position}` : this.answerId(call.id, body.model);
    const asText = this.options.textToolCalls?.[String(body.model)];
    let calledInReasoning: string | undefined;
    if (asText?.inReasoning === true && behaviour.toolCalls !== undefined) {
      calledInReasoning = `The user asked for this.\n${callsAsText(behaviour.toolCalls, asText.form)}\n`;
      behaviour.content = '';
      delete behaviour.toolCalls;
    }
    if (asText !== undefined && behaviour.toolCalls !== undefined) {
      const calls = callsAsText(behaviour.toolCalls, asText.form);
      const reasoning =
        asText.draft === undefined
          ? ''
          : `${asText.draft === 'opened' ? '<think>\n' : ''}The user asked for this. The call:\n${calls}\nThat is it.\n</think>\n\n`;
      behaviour.content = reasoning + (asText.lead ?? '') + calls;
      delete behaviour.toolCalls;
    }
    const id = `chatcmpl-fake${++this.sequence}`;
    const created = Math.floor(Date.now() / 1000);
    const written =
      behaviour.toolCalls === undefined
        ? (behaviour.content ??
          (summaryRequest
            ? (this.options.summarizer?.(body.messages) ??
              (this.options.extractiveSummaries === undefined
                ? undefined
                : this.extractSummary(body.messages)))
            : undefined) ??
          this.options.answer?.(body.messages) ??
          `Answer ${this.sequence}.`)
        : null;
    // Stop sequences taken as OpenAI takes them: the answer ends where the first of them begins.
    const content = written === null ? null : cutAtStop(written, (body as { stop?: unknown }).stop);
    const thinksInContent = this.options.thinkTags?.includes(String(body.model)) === true;
    const thinkingInContent =
      thinksInContent && content !== null
        ? `<think>\nThe user wants this answered. Let me think about answer ${this.sequence} step by step: the earlier turns, what was asked, what to keep.\n</think>\n\n${content}`
        : content;
    const completionCount =
      content === null
        ? 10
        : this.options.tokenCounting === 'approximate'
          ? Math.ceil(content.length / 4)
          : countText(content);

    // Thinking counted in the answer's cap: cut while thinking when the cap is not above it.
    const thinks = this.options.thinkingSpends?.[String(body.model)];
    const answerCap = body.max_completion_tokens ?? body.max_tokens;
    const thinkingCut = thinks !== undefined && answerCap !== undefined && answerCap <= thinks;
    const reasoningTokens = thinks === undefined ? undefined : thinkingCut ? (answerCap as number) : thinks;
    const answerTokens = thinkingCut ? (answerCap as number) : completionCount + (reasoningTokens ?? 0);
    const usage = {
      prompt_tokens: uncached ?? promptTokens,
      completion_tokens: answerTokens,
      total_tokens: (uncached ?? promptTokens) + answerTokens,
      ...(reasoningTokens === undefined
        ? {}
        : { completion_tokens_details: { reasoning_tokens: reasoningTokens } }),
      ...(cachedTokens === undefined ? {} : { prompt_tokens_details: { cached_tokens: cachedTokens } }),
      ...(cachedTokens === undefined || !String(body.model).startsWith('deepseek-')
        ? {}
        : { prompt_cache_hit_tokens: cachedTokens, prompt_cache_miss_tokens: promptTokens - cachedTokens }),
    };
    const finishReason = thinkingCut
      ? 'length'
      : (this.options.finishReasons?.[String(body.model)] ??
        (behaviour.toolCalls === undefined ? 'stop' : 'tool_calls'));
    const reasoning =
      calledInReasoning ??
      (this.options.thinking?.includes(String(body.model)) === true
        ? `Thinking before answer ${this.sequence}.`
        : undefined);
    const details =
      this.options.reasoningDetails?.includes(String(body.model)) === true
        ? {
            text: `Claude thinks before answer ${this.sequence}.`,
            signature: this.givenFor(
              String(body.model),
              Buffer.from(`claude ${this.sequence}`).toString('base64'),
            ),
            format: 'anthropic-claude-v1',
          }
        : undefined;

    const thinkingChunk =
      this.options.mistralThinking?.includes(String(body.model)) === true
        ? `Magistral thinks before answer ${this.sequence}.`
        : undefined;
    if (body.stream !== true) {
      const message: Record<string, unknown> = {
        role: 'assistant',
        // Cut while thinking: nothing said, or, thinking in its content, its thinking never closed.
        content: thinkingCut
          ? thinksInContent
            ? '<think>\nThe user wants this answered. Let me'
            : ''
          : thinkingInContent,
        refusal: null,
        annotations: [],
      };
      // OpenAI's reasoning models (o-series, GPT-5 and later) never show their reasoning: usage counts it;
      // a model that thinks in its content shows it there.
      if (thinks !== undefined && !thinksInContent && !/^(?:o\d|gpt-(?:[5-9]|\d\d))/.test(String(body.model)))
        message.reasoning_content = `Thinking about answer ${this.sequence} `.repeat(8);
      if (thinkingChunk !== undefined)
        message.content = [
          { type: 'thinking', thinking: [{ type: 'text', text: thinkingChunk }] },
          ...(content === null ? [] : [{ type: 'text', text: content }]),
        ];
      if (reasoning !== undefined) message[this.options.reasoningField ?? 'reasoning_content'] = reasoning;
      if (details !== undefined) {
        message.reasoning = details.text;
        message.reasoning_details = [
          {
            type: 'reasoning.text',
            text: details.text,
            signature: details.signature,
            format: details.format,
            index: 0,
          },
        ];
      }
      if (behaviour.toolCalls !== undefined) {
        const decoded = this.options.decodedToolArguments?.includes(String(body.model)) === true;
        message.tool_calls = behaviour.toolCalls.map((call, index) => ({
          id: idOf(call, index),
          type: 'function',
          function: {
            name: call.name,
            arguments: decoded ? (JSON.parse(call.arguments) as unknown) : call.arguments,
          },
          ...this.signatureOf(String(body.model), call.id, index),
        }));
      }
      sendJson(
        200,
        this.asServed(String(body.model), {
          ...(this.options.idlessChunks?.includes(String(body.model)) === true ? {} : { id, created }),
          object: 'chat.completion',
          model: body.model,
          choices: [
            {
              index: 0,
              message,
              logprobs: null,
              finish_reason:
                this.options.blankFinishes?.[String(body.model)] === undefined ? finishReason : null,
            },
          ],
          usage: this.options.noUsage?.includes(String(body.model)) === true ? undefined : usage,
          system_fingerprint: 'fp_fake',
        }),
        behaviour.headers,
      );
      return;
    }

    recorded.status = 200;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      ...behaviour.headers,
    });
    // As OpenAI's API: a stream's headers go at once, its first chunk once the model has thought (a
    // reasoning model streams nothing while it thinks: mezmo/aura#62).
    response.flushHeaders();
    const idless = this.options.idlessChunks?.includes(String(body.model)) === true;
    const frame = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
      `data: ${JSON.stringify({ ...(idless ? {} : { id }), object: 'chat.completion.chunk', created, model: body.model, system_fingerprint: 'fp_fake', choices, ...extra })}\n\n`;
    const padded = this.options.nullPaddedToolDeltas?.includes(String(body.model)) === true;
    const frames: string[] = [
      frame([
        {
          index: 0,
          delta: padded
            ? { role: 'assistant', content: '', refusal: null, tool_calls: null }
            : { role: 'assistant', content: '', refusal: null },
          logprobs: null,
          finish_reason: null,
        },
      ]),
    ];
    const cumulative = this.options.cumulativeDeltas?.includes(String(body.model)) === true;
    if (reasoning !== undefined)
      // A cumulative model's reasoning in three deltas, each the whole of it so far; calls written in it, as
      // its tokens (each marker a delta of its own).
      for (const piece of cumulative
        ? [9, 20, reasoning.length].map((end) => reasoning.slice(0, end))
        : calledInReasoning === undefined
          ? [reasoning]
          : reasoning.split(/(<\/?tool_call>|<\|tool_call[a-z_]*\|>)/).filter((token) => token !== ''))
        frames.push(
          frame([
            {
              index: 0,
              delta: { [this.options.reasoningField ?? 'reasoning_content']: piece },
              logprobs: null,
              finish_reason: null,
            },
          ]),
        );
    if (thinkingChunk !== undefined) {
      const half = Math.ceil(thinkingChunk.length / 2);
      for (const piece of [thinkingChunk.slice(0, half), thinkingChunk.slice(half)])
        frames.push(
          frame([
            {
              index: 0,
              delta: { content: [{ type: 'thinking', thinking: [{ type: 'text', text: piece }] }] },
              logprobs: null,
              finish_reason: null,
            },
          ]),
        );
    }
    if (details !== undefined) {
      const half = Math.ceil(details.text.length / 2);
      for (const piece of [
        { text: details.text.slice(0, half) },
        { text: details.text.slice(half) },
        { signature: details.signature },
      ])
        frames.push(
          frame([
            {
              index: 0,
              delta: {
                ...(piece.text === undefined ? {} : { reasoning: piece.text }),
                reasoning_details: [{ type: 'reasoning.text', ...piece, format: details.format, index: 0 }],
              },
              logprobs: null,
              finish_reason: null,
            },
          ]),
        );
    }
    if (behaviour.toolCalls !== undefined) {
      const dialect = this.options.toolDeltaDialects?.[String(body.model)];
      const callFrame = (call: Record<string, unknown>): string =>
        frame([{ index: 0, delta: { tool_calls: [call] }, logprobs: null, finish_reason: null }]);
      for (const [position, call] of behaviour.toolCalls.entries()) {
        const id = idOf(call, position);
        const signature = this.signatureOf(String(body.model), call.id, position);
        if (dialect === 'indexless-whole') {
          frames.push(
            callFrame({ id, type: 'function', function: { name: call.name, arguments: call.arguments } }),
          );
          continue;
        }
        const index = dialect === 'same-index' ? 0 : position;
        // Gemini and Mistral may stream a name in pieces, as they stream arguments: the first piece
        // opens the call, the next comes alone, the last with the arguments' first piece.
        const third = Math.ceil(call.name.length / 3);
        const split = dialect === 'name-in-pieces';
        frames.push(
          callFrame({
            index,
            id,
            type: 'function',
            function: { name: split ? call.name.slice(0, third) : call.name, arguments: '' },
            ...signature,
          }),
        );
        if (split) frames.push(callFrame({ index, function: { name: call.name.slice(third, 2 * third) } }));
        const half = Math.ceil(call.arguments.length / 2);
        const argumentPieces = this.options.cumulativeArguments?.includes(String(body.model))
          ? [call.arguments.slice(0, half), call.arguments, call.arguments]
          : [call.arguments.slice(0, half), call.arguments.slice(half)];
        for (const [at, piece] of argumentPieces.entries())
          frames.push(
            callFrame(
              padded
                ? { index, id: null, type: null, function: { name: null, arguments: piece } }
                : dialect === 'repeated-fields'
                  ? { index, id, type: 'function', function: { name: call.name, arguments: piece } }
                  : split && at === 0
                    ? { index, function: { name: call.name.slice(2 * third), arguments: piece } }
                    : { index, function: { arguments: piece } },
            ),
          );
      }
    } else {
      const text = thinkingInContent ?? '';
      const count = Math.max(1, behaviour.chunks ?? 5);
      const size = Math.ceil(text.length / count) || 1;
      const pieces: string[] = [];
      for (let start = 0; start < text.length; start += size)
        pieces.push(text.slice(cumulative ? 0 : start, start + size));
      // Mistral's and Kimi's markers are tokens of their models': each a delta of its own, the text between
      // them split.
      const tokens =
        asText?.form.startsWith('mistral') === true
          ? text.split(/(\[TOOL_CALLS\]|\[ARGS\])/)
          : asText?.form === 'kimi' ||
              asText?.form === 'minimax' ||
              asText?.form === 'lfm2' ||
              asText?.form === 'llama4'
            ? text.split(/(<\|tool_call[a-z_]*\|>|<\/?minimax:tool_call>|<\|python_(?:start|end)\|>)/)
            : undefined;
      for (const piece of tokens?.filter((token) => token !== '') ?? pieces) {
        frames.push(
          frame([
            {
              index: 0,
              delta: { content: thinkingChunk === undefined ? piece : [{ type: 'text', text: piece }] },
              logprobs: null,
              finish_reason: null,
            },
          ]),
        );
      }
    }
    const blank = this.options.blankFinishes?.[String(body.model)];
    if (blank !== undefined)
      for (const [at, text] of frames.entries())
        frames[at] = text.replaceAll('"finish_reason":null', `"finish_reason":"${blank}"`);
    frames.push(frame([{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason }]));
    if (this.options.goJson?.includes(String(body.model)) === true)
      for (const [at, text] of frames.entries()) frames[at] = goEscaped(text);
    if (
      body.stream_options?.include_usage === true &&
      this.options.noUsage?.includes(String(body.model)) !== true
    )
      frames.push(frame([], { usage }));
    if (this.options.usageWithoutChoices?.includes(String(body.model)) === true)
      for (const [at, text] of frames.entries())
        if (text.includes('"usage":{')) frames[at] = text.replace('"choices":[],', '');
    if (this.options.choicesWithoutIndex?.includes(String(body.model)) === true)
      for (const [at, text] of frames.entries())
        frames[at] = text.replace('"choices":[{"index":0,', '"choices":[{');
    if (this.options.emptyRoles?.includes(String(body.model)) === true)
      for (const [at, text] of frames.entries())
        frames[at] = text.includes('"role":"assistant"')
          ? text.replace('"role":"assistant"', '"role":""')
          : text.replace('"delta":{"', '"delta":{"role":"","');
    if (this.options.costChunks?.includes(String(body.model)) === true)
      frames.push(`data: ${JSON.stringify({ choices: [], cost: '0' })}\n\n`);
    if (behaviour.omitDone !== true) frames.push('data: [DONE]\n\n');

    for (const [index, text] of frames.entries()) {
      if (behaviour.breakAfterChunks !== undefined && index >= behaviour.breakAfterChunks) {
        if (behaviour.breakMidEvent === true) response.write(text.slice(0, Math.floor(text.length / 2)));
        // Let what was written reach the client first, then cut the connection without an end.
        await new Promise<void>((resolve) => response.write('', () => resolve()));
        response.socket?.resetAndDestroy();
        return;
      }
      if (behaviour.endAfterChunks !== undefined && index >= behaviour.endAfterChunks) {
        response.end();
        return;
      }
      if (behaviour.stallAfterChunks !== undefined && index >= behaviour.stallAfterChunks) return;
      if (index === behaviour.pauseAfterChunks) await behaviour.resumeWhen;
      if (response.destroyed) return;
      response.write(text);
      if (behaviour.chunkDelayMs !== undefined) await sleep(behaviour.chunkDelayMs);
    }
    response.end();
    recorded.completed = true;
  }
}
