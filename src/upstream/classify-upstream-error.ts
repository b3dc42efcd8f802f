// The upstream error classifier (docs/budgeting.md#reactive-recovery): one pure function from what an upstream answered — status,
// headers, body as text — to what the gateway should do about it. Context-window overflows are told
// apart from their look-alikes (rate limits on tokens per minute, output caps, byte-size limits,
// schema errors) by the shapes and phrasing families providers use, not by exact strings, and the
// numbers the text gives (window, prompt tokens, requested, completion) are taken out of it.
import {
  anthropicBetaField,
  fastModeFixes,
  longContextBetaFlag,
  billingAttributionField,
  fixForAnthropicMember,
  fixForBlockMember,
  fixForExtraInput,
  toolMemberField,
  unexplainedRefusalField,
  cacheMarksField,
  effortField,
  effortsUpTo,
  thinkingAdaptiveField,
  thinkingEnabledField,
  fixForMessageField,
  fixForUnknownField,
  fixForUnsupportedField,
  thoughtSignaturesField,
  foreignThinkingField,
  toolCallIdsField,
  toolImagesField,
  imageCountField,
  imageSizeField,
  imageSideField,
  toolDescriptionsField,
  toolSchemasField,
  toolSchemaKeywordsField,
  toolSchemaMfjsField,
  blockTypesField,
  resultBlockTypesField,
  systemMessagesField,
  userTurnField,
  toolHistoryField,
  cacheMemberField,
  toolCountField,
  answerTokensField,
  emptyTextField,
  developerRoleField,
  textPartsField,
  nullContentField,
  strictTemplateField,
  systemRoleField,
  toolArgumentsField,
  toolChoiceField,
  toolChoiceObjectField,
  thinkingToolChoice,
  thinkingDisabledField,
  reasoningStandInField,
  prefillField,
  temperatureRangeField,
  autoToolChoiceField,
  defaultToolChoiceField,
  messageNameField,
  messageNamePatternField,
  jsonSchemaField,
  jsonModeField,
  responseFormatField,
  responseFormatWithToolsField,
  stopCountField,
  stopField,
  imageBytesField,
  requestBytesField,
  filesField,
  type FieldFix,
} from './field-fixes.js';
import { responsesWireField } from './responses-wire.js';
import { toolsAsTextField } from './tools-as-text.js';

export interface OverflowNumbers {
  /** The model's context window. */
  maxContext?: number;
  /** Prompt tokens the upstream counted (a lower bound when `promptTokensLowerBound`). */
  promptTokens?: number;
  promptTokensLowerBound?: boolean;
  /** Prompt plus completion tokens the request asked for. */
  requested?: number;
  /** The completion tokens (`max_tokens`) the request asked for. */
  completionTokens?: number;
  /** How far over the limit the request was. */
  excessTokens?: number;
  /** The prompt's size in characters, when a server counts those instead of tokens. */
  promptChars?: number;
  /** The longest prompt the server would take with the requested completion. */
  maxInputTokens?: number;
}

export type UpstreamErrorClass =
  | {
      kind: 'context_overflow';
      /** `compress`: the prompt itself is too long; `reduce_max_tokens`: prompt + max_tokens is. */
      remedy: 'compress' | 'reduce_max_tokens';
      numbers: OverflowNumbers;
      /**
       * The passages of the text the numbers were read from: a provider that quotes the client's own
       * input back (a validation error echoing a value) may quote numbers the client chose, and a
       * passage found in the request itself teaches nothing.
       */
      evidence: string[];
    }
  /** `noRetry`: the upstream said not to retry (`x-should-retry: false`, as OpenAI's API says it). */
  | { kind: 'rate_limited'; retryAfterMs?: number; noRetry?: true }
  | { kind: 'auth' }
  /** The provider refuses request fields the gateway can rename or leave out (field-fixes.ts). */
  | { kind: 'refused_field'; fixes: FieldFix[] }
  | { kind: 'bad_request' }
  | { kind: 'server'; retryAfterMs?: number; noRetry?: true }
  | { kind: 'timeout' }
  | { kind: 'connection' }
  /** A 2xx answer that carries no error. */
  | { kind: 'none' };

export type UpstreamAnswer =
  | {
      status: number;
      headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
      body: string;
      /** When the answer arrived (epoch ms): a `Retry-After` HTTP date is read against it. */
      receivedAtMs?: number;
      /** The bytes of the request it answers, when known: what a bare 413 is about (looksLikeOverflow). */
      sentBytes?: number;
    }
  | { transportError: 'timeout' | 'connection' };

/** Below this many tokens left for the answer, lowering max_tokens is no remedy: compress instead. */
export const minimumAnswerTokens = 1_024;

/**
 * A model whose answers show thinking counts it in max_tokens (DeepSeek, Kimi, GLM, Qwen as vLLM serves it;
 * OpenAI's reasoning models in max_completion_tokens): lowered below this many tokens, its answer may be
 * cut while it thinks — empty, `finish_reason: "length"`.
 */
export const thinkingAnswerTokens = 8_192;

/**
 * The least max_tokens the gateway lowers a request's to, to keep a conversation whole: 1,024, or for a
 * model whose answers show thinking 8,192 — the max_tokens asked, when fewer: never lowered — below which
 * the history gives way instead (docs/budgeting.md).
 */
export function answerFloorOf(asked: number | undefined, thinks: boolean): number {
  if (!thinks) return minimumAnswerTokens;
  return Math.max(minimumAnswerTokens, Math.min(asked ?? thinkingAnswerTokens, thinkingAnswerTokens));
}

export function classifyUpstreamError(answer: UpstreamAnswer): UpstreamErrorClass {
  if ('transportError' in answer) return { kind: answer.transportError };
  const { status, body } = answer;
  // The common case, a success (a stream's first event): one parse, and none of its text collected.
  if (status >= 200 && status < 300 && isPlainSuccess(body)) return { kind: 'none' };
  const content = readBody(body);
  if (status >= 200 && status < 300 && !content.isError) return { kind: 'none' };
  const text = content.texts.join('\n');
  const retryAfterMs =
    retryAfterFrom(answer.headers, text, answer.receivedAtMs) ??
    untilReset(content.fields.get(resetField), answer.receivedAtMs);
  const shouldRetry = headerValue(answer.headers, 'x-should-retry')?.trim().toLowerCase();
  const noRetry = shouldRetry === 'false';
  const retryFields = (): { retryAfterMs?: number; noRetry?: true } =>
    Object.assign(
      {},
      retryAfterMs === undefined ? {} : { retryAfterMs },
      noRetry ? { noRetry: true as const } : {},
    );

  // OpenAI's "insufficient_quota" is billing, not a rate: waiting does not help.
  if (/\binsufficient_quota\b/.test(text)) return { kind: 'bad_request' };
  // Claude's 1M window past 200,000 tokens on a key or plan that is not billed for it: a 429 that is no
  // rate ("Extra usage is required for long context requests"): its flag left out, the window the model has.
  if (/(?:extra usage|usage credits) (?:is|are) required for long context/i.test(text))
    return {
      kind: 'refused_field',
      fixes: [{ field: anthropicBetaField, value: longContextBetaFlag, ofKey: true }],
    };
  // Claude's fast mode on a key with no usage credits for it (a 429 — a relay's 503 — that is no rate), on a
  // model or an API without it: asked no more (`speed` and its flag left out), answered at standard speed,
  // as Anthropic's fast mode guide has a client fall back.
  if (
    /usage credits are required for fast mode|fast mode is (?:currently available in research preview in claude code|not (?:yet )?(?:available|supported))|does not support fast mode/i.test(
      text,
    )
  )
    return { kind: 'refused_field', fixes: [...fastModeFixes] };
  if (status === 429 || rateLimitPhrase.test(text)) return { kind: 'rate_limited', ...retryFields() };
  if (looksLikeOverflow(status, body, text, answer.sentBytes)) {
    const { numbers, evidence } = overflowNumbers(text, content.fields);
    return { kind: 'context_overflow', remedy: remedyFor(numbers, text), numbers, evidence };
  }
  if (status === 401 || status === 403) return { kind: 'auth' };
  // The upstream's own word, which the OpenAI SDKs obey whatever the status: what it marks
  // `x-should-retry: true` is retried like a server error.
  if (shouldRetry === 'true') return { kind: 'server', ...retryFields() };
  // A model served through the Responses API alone (OpenAI's Codex and pro models: a 404; Azure's; Bedrock's
  // Mantle; relays that took Chat Completions away): asked there after one refusal (responses-wire.ts).
  if (status >= 400 && status < 500 && responsesOnly.test(text))
    return { kind: 'refused_field', fixes: [{ field: responsesWireField }] };
  if (status === 408 || status === 504) return { kind: 'timeout' };
  // A relay that answers a model's image cap with a 500 (new-api before Gemini: "too many images in the
  // message, max allowed is 16"): retried, it is refused the same; it is the cap.
  const relayedCap = status >= 500 ? imageCap(text) : undefined;
  if (relayedCap !== undefined)
    return { kind: 'refused_field', fixes: [{ field: imageCountField, atMost: relayedCap }] };
  // llama.cpp's server answers a call sent back whose arguments are not JSON with a 500 (before
  // ggml-org/llama.cpp#25583): retried, it is refused the same.
  if (status >= 500 && /failed to parse tool call arguments as json/i.test(text))
    return { kind: 'refused_field', fixes: [{ field: toolArgumentsField }] };
  // Ollama answers a chat template's refusal of a later system message with a 500 (its Anthropic endpoint
  // and Claude Code's mid-conversation system message: ollama/ollama#17774): retried, it is refused the same.
  // (The strict template's fix puts its text in the user's turn: on an `anthropic` upstream too.)
  if (status >= 500 && /system message must be at the beginning/i.test(text))
    return { kind: 'refused_field', fixes: [{ field: strictTemplateField }] };
  // llama.cpp's server without `--jinja`, which takes no tools, with a 500: the tools told in the prompt.
  if (status >= 500 && /tools param requires --jinja flag|unsupported param:?\s*tools\b/i.test(text))
    return { kind: 'refused_field', fixes: [{ field: toolsAsTextField }] };
  // llama.cpp's server before gpt-oss's template, of an answer with reasoning and text beside its calls
  // (ggml-org/llama.cpp#19703): a 500, refused the same when retried. The answers' reasoning left out.
  if (
    status >= 500 &&
    /cannot pass both content and thinking in an assistant message with tool calls/i.test(text)
  )
    return {
      kind: 'refused_field',
      fixes: [{ field: 'messages[].reasoning_content' }, { field: 'messages[].reasoning' }],
    };
  if (status >= 500 || (status >= 200 && status < 300)) return { kind: 'server', ...retryFields() };
  // A body larger than the provider takes in bytes (not tokens: looksLikeOverflow): Anthropic's
  // "request_too_large", GitHub Copilot's "failed to parse request", a proxy's page.
  if (status === 413) return { kind: 'refused_field', fixes: [{ field: requestBytesField }] };
  // OpenRouter (and routers like it: GitHub Copilot's, Xiaomi's) refuse what no endpoint of the model takes
  // with a 404 ("No endpoints found that support image input", "… the provided 'tool_choice' value"): a
  // field to fix, not a missing model.
  const routed = status === 404 && /no endpoints found that support/i.test(text);
  const fixes = status === 400 || status === 422 || routed ? refusedFields(text, body) : [];
  if (fixes.length > 0) return { kind: 'refused_field', fixes };
  // A refusal that names nothing (Kimi's Anthropic endpoint: "Invalid request Error"): sent once more in
  // the form every such endpoint takes, kept only if answered (field-fixes.ts unexplainedRefusalField).
  if (status === 400 && content.texts.some((each) => unexplainedRefusal.test(each)))
    return { kind: 'refused_field', fixes: [{ field: unexplainedRefusalField }] };
  return { kind: 'bad_request' };
}

/**
 * A refusal of Chat Completions for a model the Responses API serves: OpenAI's, Azure's (its v1 API:
 * OperationNotSupported, "The chatCompletion operation does not work with the specified model, gpt-5.4-pro"),
 * Bedrock Mantle's, GitHub Copilot's ("model \"gpt-5.4-mini\" is not accessible via the /chat/completions
 * endpoint", `unsupported_api_for_model`), a relay's; and OpenAI's of function tools with reasoning
 * (gpt-5.4, the gpt-5.6 family: "Function tools with reasoning_effort are not supported for gpt-5.6-terra
 * in /v1/chat/completions", the model's default effort refused too), which the Responses API takes together.
 */
const responsesOnly =
  /only supported in v1\/responses\b|function tools with reasoning_effort are not supported for .{1,200} in \/v1\/chat\/completions|is not accessible via the \/chat\/completions endpoint|the chatcompletion operation does not work with the specified model|does not support the \W?\/v1\/chat\/completions\W? api|\/v1\/chat\/completions is not supported\. please use \/v1\/responses/i;

/**
 * Refusals of reasoning another model or provider signed (foreignThinkingField): Anthropic's of thinking
 * blocks it did not give as they are; OpenAI's and Azure's of encrypted reasoning the other sealed ("The
 * encrypted content for item rs_… could not be verified.": manaflow-ai/subrouter#259), OpenCode Zen's;
 * Gemini's of a thought signature another backend gave ("Corrupted thought signature.", Vertex's "Thought
 * signature is not valid").
 */
const foreignThinking =
  /invalid\W{0,2}signature\W{0,2} in\W{0,2}thinking\W{0,2} block|invalid data in\W{0,2}redacted_thinking\W{0,2} block|\bthinking\.signature: field required|thinking\W{0,2} blocks? in the latest assistant message cannot be modified|the encrypted content (?:for item )?\S{1,200} could not be verified|encrypted_content\W{0,2} was not issued to this caller|corrupted thought signature|thought signature is not valid/i;

/** Kimi's whole answer to a Messages request it does not take. */
const unexplainedRefusal = /^\s*invalid request error\s*$/i;

/**
 * The fields a refusal names that the gateway can fix: OpenAI's and Azure's wording for a field a model
 * does not support ("Unsupported parameter: 'max_tokens' … Use 'max_completion_tokens' instead",
 * "Unsupported value: 'temperature' …") or does not know ("Unknown parameter: 'stream_options'",
 * "Unrecognized request argument supplied: user"), Gemini's "Unknown name \"parallel_tool_calls\": Cannot
 * find field.", a serde "unknown field `user`", Gemini 3's "Function call is missing a thought_signature",
 * a text-only model's refusal of an image ("… is not a multimodal model", toolImagesField),
 * OpenAI's "Additional properties are not allowed" in a message, Groq's "property 'store' is
 * unsupported" (in a message too), and Mistral's validation errors
 * (`extra_forbidden` at `["body", "<field>", …]` or in a message, `["body", "messages", N, "<role>",
 * "<field>"]`, its JSON sometimes nested as a string); xAI's of a field by its camelCase name ("does not
 * support parameter reasoningEffort"); and Anthropic's refusal of `temperature` with
 * `top_p`. Also when a proxy such as LiteLLM passes
 * the wording on inside its own message.
 */
function refusedFields(text: string, body: string): FieldFix[] {
  const fixes = new Map<string, FieldFix>();
  const add = (fix: FieldFix | undefined): void => {
    const key = fix === undefined ? '' : `${fix.field}\u0000${fix.value ?? ''}`;
    if (fix !== undefined && !fixes.has(key)) fixes.set(key, fix);
  };
  for (const fix of anthropicRefusals(text)) add(fix);
  // Fireworks' words, by the field's place in brackets (fixForExtraInput), one or several in a refusal.
  for (const match of text.matchAll(/extra inputs are not permitted, field: '?([\w.[\]]{1,200})/gi))
    add(fixForExtraInput(match[1] as string));
  const effort = reasoningEffortFix(text);
  if (effort !== undefined) add(effort);
  else
    for (const match of text.matchAll(/unsupported (?:parameter|value):?\s*['"`]?(\w+)['"`]?([^\n]*)/gi)) {
      const replacement = /\buse\s*['"`]?(\w+)/i.exec(match[2] ?? '')?.[1];
      add(fixForUnsupportedField(match[1] as string, replacement));
    }
  // OpenAI's words (and Azure's older ones) read as Fireworks' are, by the field's place: "Unknown parameter:
  // 'messages[2].reasoning'.", "… 'messages[2].tool_calls[0].index'." — or a client's own field by its name.
  for (const match of text.matchAll(/unknown parameter:?\s*['"`]([\w.[\]]{1,200})['"`]/gi))
    add(fixForExtraInput(match[1] as string));
  for (const match of text.matchAll(
    /unrecognized request arguments? supplied:?\s*(\w+(?:\s*,\s*\w+){0,29})/gi,
  ))
    for (const name of (match[1] as string).matchAll(/\w+/g)) add(fixForExtraInput(name[0]));
  // A serde server's words, and Gemini's: a top-level field by its name.
  for (const match of text.matchAll(/(?:unknown parameter|unknown field|unknown name):?\s*['"`]?(\w+)/gi))
    add(fixForUnknownField(match[1] as string));
  // NVIDIA's NIM, a list of them ("Validation: Unsupported parameter(s): thinking": a relay passing Claude
  // Code's thinking on to MiniMax there, decolua/9router#2268).
  for (const match of text.matchAll(/unsupported parameter\(s\):?\s*([\w ,'"`]{1,200})/gi))
    for (const name of (match[1] as string).matchAll(/\w+/g)) add(fixForUnknownField(name[0]));
  // xAI's words, of a field by its camelCase name ("Model grok-4-1-fast-reasoning does not support parameter
  // reasoningEffort.", "Argument not supported on this model: presencePenalty").
  for (const match of text.matchAll(
    /(?:does not support parameter|argument not supported on this model):?\s*['"`]?([A-Za-z]\w*)/gi,
  ))
    add(
      fixForUnsupportedField(
        (match[1] as string).replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`),
        undefined,
      ),
    );
  for (const fix of samplingRefusals(text)) add(fix);
  // A service tier the model is not served with (Codex's /fast asks `priority`, a flex tier): OpenAI's and
  // ChatGPT's Codex backend's "Unsupported service_tier: flex" (openai/codex#15099), that one left out; GitHub
  // Copilot's "service_tier is not supported" (router-for-me/CLIProxyAPIPlus#437) or a relay's "Field
  // 'service_tier' must be one of: …", all of them. The model then serves its default tier.
  const tier = /unsupported service_tier:?\s*['"`]?([\w-]{1,40})/i.exec(text)?.[1];
  if (tier !== undefined) add({ field: 'service_tier', value: tier });
  else if (/\bservice_tier\W{0,3}(?:is not supported|must be one of)/i.test(text))
    add({ field: 'service_tier' });
  // A field the model was served without, named first in the provider's sentence: the gpt-5.6 family's
  // "prompt_cache_retention is not supported on this model" (openai/codex#39442; its caches are kept 30
  // minutes at least, prompt_cache_options.ttl): left out when it is one the answer does without.
  for (const match of text.matchAll(
    /^\W{0,3}([a-z][a-z0-9_]{1,60})\W{0,3} is not supported (?:on|for|with|by) this model/gim,
  ))
    add(fixForUnsupportedField(match[1] as string, undefined));
  // Claude Sonnet 4.5 and later take `temperature` or `top_p`, not both: temperature is kept (what
  // Anthropic advises changing).
  if (/temperature\W{0,3} and \W{0,3}top_p\W{0,3} cannot both be specified/i.test(text))
    add({ field: 'top_p' });
  // A sampling setting the model holds at one value, Kimi's thinking models' ("invalid temperature: only 1
  // is allowed for this model"; 0.6 without thinking): left out, the model takes its own.
  for (const match of text.matchAll(
    /invalid (temperature|top_p|presence_penalty|frequency_penalty)\W{0,3}:?\s*only -?[\d.]+ is allowed/gi,
  ))
    add({ field: (match[1] as string).toLowerCase() });
  // Mistral's API (and a Mistral template in vLLM or mlx) on another provider's tool call ids.
  if (/tool call id was [^\n]{0,300}? but must be a-z, a-z, 0-9, with a length of 9/i.test(text))
    add({ field: toolCallIdsField });
  // Gemini 3 (its OpenAI-compatible endpoint) on a tool call sent back without its thought signature (one
  // another backend gave: foreignThinking).
  if (/function call is missing a thought_signature/i.test(text)) add({ field: thoughtSignaturesField });
  // A model that takes no images, on a tool result's (vLLM, DeepSeek's API, llama.cpp without its
  // projector, Ollama, OpenRouter, OpenAI's older models).
  if (
    /is not a multimodal model|does not support (?:images?|vision|image input)|image input is not supported|unknown variant `?image_url`?|image_url is only supported by certain models|missing data required for image input|no endpoints found that support image input/i.test(
      text,
    )
  )
    add({ field: toolImagesField });
  // A model that takes no file part (DeepSeek's API, vLLM, Qwen on DashScope: QwenLM/qwen-code#1888).
  if (
    /unknown variant `?file`?|unsupported chat content part type: '?file\b|unknown part type: '?file\b|file must have a file_id or file_data|invalid value: '?file'?\. supported values are/i.test(
      text,
    )
  )
    add({ field: filesField });
  // A tool's description longer than the provider takes (GitHub Copilot, Azure OpenAI): its length.
  const described =
    /tools\[\d+\]\.function\.description\W{0,3}:?\s*string too long\. expected a string with maximum length (\d+)/i.exec(
      text,
    );
  if (described !== null) add({ field: toolDescriptionsField, atMost: Number(described[1]) });
  for (const fix of requestShapeFixes(text, body)) add(fix);
  // More images than the model takes in one request: how many fit, as the refusal says.
  const images = imageCap(text);
  if (images !== undefined) add({ field: imageCountField, atMost: images });
  // Anthropic's size for the images of a request of more than 20.
  const side =
    /exceeds? max allowed size for many-image requests: (\d+) pixels/i.exec(text) ??
    /exceeds the dimension limit for many-image requests \((\d+)\s*px\)/i.exec(text);
  if (side !== null) add({ field: imageSizeField, atMost: Number(side[1]) });
  // And the largest image Anthropic takes at all.
  const largest = /image dimensions exceed max allowed size: (\d+) pixels/i.exec(text);
  if (largest !== null) add({ field: imageSideField, atMost: Number(largest[1]) });
  const heaviest = /image exceeds [\w. ]{0,20}maximum: \d+ bytes > (\d+) bytes/i.exec(text);
  if (heaviest !== null) add({ field: imageBytesField, atMost: Number(heaviest[1]) });
  for (const fix of fieldsOfRefusedShapes(text, body)) add(fix);
  return [...fixes.values()];
}

/**
 * The fields a refusal names by their place in the body, top-level or in a message: Mistral's validation
 * errors (`extra_forbidden` at `["body", "<field>", …]` or `["body", "messages", N, "<role>", "<field>"]`,
 * its JSON sometimes nested as a string), Groq's and Cerebras's "property … is unsupported", OpenAI's
 * older models' "Additional properties are not allowed" (refusedFields).
 */
function fieldsOfRefusedShapes(text: string, body: string): Array<FieldFix | undefined> {
  const found: Array<FieldFix | undefined> = [];
  if (body.includes('extra_forbidden'))
    for (const match of (body.includes('\\"') ? body.replace(/\\+"/g, '"') : body).matchAll(
      /"extra_forbidden"\s*,\s*"loc"\s*:\s*\[\s*"body"\s*,\s*([^\]]{1,200})\]/g,
    )) {
      // The location in the body: a top-level field, or in a message (its index and role, then the field,
      // or `tool_calls`, the call's index and its field).
      const loc = [...(match[1] as string).matchAll(/"(\w+)"|\d+/g)].map((part) => part[1] ?? '#');
      if (loc[0] === 'messages' && loc[1] === '#')
        found.push(fixForMessageField(loc.slice(3).filter((part) => part !== '#')));
      else if (loc[0] !== undefined && loc[0] !== '#') found.push(fixForUnknownField(loc[0]));
    }
  // Groq's on a field of a message ("'messages.2' : for 'role:assistant' the following must be
  // satisfied[('messages.2' : property 'reasoning_content' is unsupported)]", or "('messages.1.reasoning_content'
  // : property …)") or of the body ("property 'store' is unsupported, did you mean 'stop'?"); Cerebras's,
  // the property named by its path ("messages.2.assistant.reasoning_content: property
  // 'messages.2.assistant.reasoning_content' is unsupported": Kilo-Org/kilocode#10375). Paths are bounded,
  // so that a body of "messages.1" over and over is not read again from each.
  for (const match of text.matchAll(
    /(?:'?(messages\.\d+[\w.]{0,80})'?\s*:\s*)?property '([\w.]{1,120})' is unsupported/gi,
  )) {
    const where = `${match[1] ?? ''} ${match[2] as string}`;
    const field = (match[2] as string).split('.').at(-1) as string;
    if (!/messages\.\d+/.test(where)) found.push(fixForUnknownField(field));
    else found.push(fixForMessageField(/\.tool_calls\.\d+/.test(where) ? ['tool_calls', field] : [field]));
  }
  // OpenAI's older models on a field of a message ("Additional properties are not allowed ('refusal',
  // 'parsed' were unexpected) - 'messages.2'").
  for (const match of text.matchAll(
    /additional properties are not allowed \(([^)]{1,300})\) - '?messages\.\d+'?/gi,
  ))
    for (const name of (match[1] as string).matchAll(/'(\w+)'/g))
      found.push(fixForMessageField([name[1] as string]));
  return found;
}

/**
 * The `anthropic-beta` flags a refusal names: Anthropic's own wording, as Vertex and the proxies before it
 * pass it on ("Unexpected value(s) `a`, `b` for the `anthropic-beta` header."), and a relay's ("尚未验证或
 * 不支持的 anthropic-beta：effort-2025-11-24", TokenRhythm/opensquilla#1102; "unsupported anthropic-beta: …").
 */
function refusedBetas(text: string): string[] {
  const listed =
    /unexpected values?(?:\(s\))? ((?:`[^`\n]{1,100}`[,\s]*(?:and\s+)?){1,30})for the `?anthropic-beta`? header/i.exec(
      text,
    );
  if (listed !== null)
    return [...(listed[1] as string).matchAll(/`([^`\n]+)`/g)].map((flag) => flag[1] as string);
  const named =
    /(?:不支持的|unsupported|unknown|invalid) anthropic-beta(?: header)?\s*[：:]\s*([\w.-]+(?:\s*,\s*[\w.-]+){0,29})/i.exec(
      text,
    );
  return named === null ? [] : (named[1] as string).split(',').map((flag) => flag.trim());
}

/**
 * What an Anthropic-compatible upstream refuses of a Messages request that the gateway can fix: members
 * it does not know, an effort or a thinking mode the model does not take, `anthropic-beta` flags.
 */
function anthropicRefusals(text: string): FieldFix[] {
  const fixes: Array<FieldFix | undefined> = [];
  // Members of a Messages request an Anthropic-compatible upstream does not know (Claude on Vertex or
  // Bedrock): "context_management: Extra inputs are not permitted", "tools.11.custom.defer_loading: …" —
  // not the word before Fireworks' sentence, which names its field after it ("Error from provider: Extra
  // inputs are not permitted, field: …", "2 request validation errors: …": refusedFields).
  for (const match of text.matchAll(
    /(?<![\w.])((?:tools\.\d+\.(?:custom\.)?)?\w+): extra inputs are not permitted(?!, field:)/gi,
  )) {
    const fix = fixForAnthropicMember(match[1] as string);
    fixes.push(fix);
    // With `output_config`, the structured output a chat client asked goes too: its schema told instead.
    if (fix?.field === 'output_config') fixes.push({ field: jsonSchemaField });
  }
  // Structured output Claude does not take: a schema it refuses ("output_config.format.schema: For
  // 'integer' type, properties maximum, minimum are not supported"; `output_format` in the beta), or one
  // past what it compiles ("Schemas contains too many optional parameters (28), which would make grammar
  // compilation inefficient … (limit: 24)", "too many parameters with union types", "too complex for
  // grammar compilation"), which counts strict tools too: the schema told instead, the tools not strict.
  if (/\boutput_(?:config\.)?format\b/i.test(text)) fixes.push({ field: jsonSchemaField });
  if (
    /schemas? contains? too many (?:optional )?parameters|too many parameters with union types|too complex for grammar compilation/i.test(
      text,
    )
  )
    fixes.push({ field: jsonSchemaField }, { field: toolMemberField('strict') });
  // Thinking it did not sign, in the conversation (another provider's model thought there): "messages.1.
  // content.0: Invalid `signature` in `thinking` block", through Bedrock and Vertex too (and the like of a
  // redacted block, a missing signature); reasoning another provider encrypted (OpenAI's, Azure's).
  if (foreignThinking.test(text)) fixes.push({ field: foreignThinkingField });
  // Members of a block it does not know, by the block's type: "messages.7.content.1.tool_use.caller: …".
  for (const match of text.matchAll(
    /\bmessages\.\d+\.content\.\d+\.(\w+)\.(\w+): extra inputs are not permitted/gi,
  ))
    fixes.push(fixForBlockMember(match[1] as string, match[2] as string));
  // Claude Code's billing attribution, refused by Bedrock and GitHub Copilot's endpoint.
  if (/x-anthropic-billing-header\W{0,3} is a reserved keyword/i.test(text))
    fixes.push({ field: billingAttributionField });
  // OpenRouter's Messages endpoint for a model not Anthropic's: no tool loaded on demand.
  if (/deferred custom tools are only supported on anthropic models/i.test(text))
    fixes.push({ field: toolMemberField('defer_loading') });
  // An effort the Claude model does not take: GitHub Copilot's list of those it does, Anthropic's ceiling
  // without thinking.
  const effort =
    /output_config\.effort\W{0,3}\w+\W{0,3} is not supported by model [^;\n]{1,100}; supported values: \[([^\]]{1,200})\]/i.exec(
      text,
    );
  const ceiling =
    /output_config\.effort\W{0,3}\w+\W{0,3} is not supported when thinking is disabled[^.]{0,40}\. use effort \W?(\w+)\W? or below/i.exec(
      text,
    )?.[1];
  // Volcano Engine's: "… `output_config.effort` specified in the request are not valid: expected `low`,
  // `medium`, `high` or `max`, but got `xhigh` instead." (farion1231/cc-switch#2851).
  const expected =
    /output_config\.effort`? specified in the request (?:are|is) not valid: expected ([^\n]{1,120}?), but got/i.exec(
      text,
    )?.[1];
  const listed = effort?.[1] ?? expected;
  const taken =
    listed === undefined
      ? effortsUpTo(ceiling?.toLowerCase())
      : [...listed.matchAll(/\w+/g)].map((value) => value[0]).filter((word) => word !== 'or');
  if (taken.length > 0) fixes.push({ field: effortField, value: taken.join(',') });
  // A model that takes no effort at all (Haiku 4.5: anthropics/claude-code#30760).
  else if (/this model does not support the effort parameter/i.test(text)) fixes.push({ field: effortField });
  fixes.push(...thinkingModeRefusals(text));
  // A user id of characters the endpoint does not take (DeepSeek's: Claude Code's `metadata.user_id`,
  // deepseek-ai/awesome-deepseek-agent#67): the metadata left out.
  if (/invalid \W?user_id\W?: string does not match pattern/i.test(text)) fixes.push({ field: 'metadata' });
  const blocks = blockTypesFix(text);
  if (blocks !== undefined) fixes.push(blocks);
  // A member of a cache breakpoint's mark, by the breakpoint's place: its `ttl` (Claude on Bedrock before its
  // hour-long cache: "tools.20.custom.cache_control.ephemeral.ttl: Extra inputs are not permitted"), its
  // `scope` (GitHub Copilot's).
  for (const match of text.matchAll(
    /cache_control(?:\.ephemeral)?\.(\w+)\W{0,3}:?\s*extra inputs are not permitted/gi,
  )) {
    const field = cacheMemberField((match[1] as string).toLowerCase());
    if (field !== undefined) fixes.push({ field });
  }
  // Effort on an upstream that does not know it (Bedrock's Sonnet 4.5: anthropics/claude-code-action#1005).
  if (/output_config\.effort\W{0,3}:?\s*extra inputs are not permitted/i.test(text))
    fixes.push({ field: effortField });

  // OpenRouter's Messages endpoint for a model not Anthropic's: no context management, its member nor its
  // flag ("No endpoints available that support Anthropic's context management features
  // (context-management-2025-06-27)": multica-ai/multica#450).
  const management =
    /no endpoints (?:available|found) that support anthropic\W{0,3}s context management features(?: \(([\w.-]{1,100})\))?/i.exec(
      text,
    );
  if (management !== null) {
    fixes.push(fixForAnthropicMember('context_management'));
    fixes.push({ field: anthropicBetaField, value: management[1] ?? 'context-management-2025-06-27' });
  }
  fixes.push(...betaRefusals(text));
  return fixes.filter((fix): fix is FieldFix => fix !== undefined);
}

/** Sampling settings and efforts refused as a model takes none of them, or not beside thinking turned off. */
function samplingRefusals(text: string): FieldFix[] {
  const found: FieldFix[] = [];
  // Sampling settings a model takes none of: Claude Opus 4.7 and later ("`temperature` is deprecated for
  // this model.", natively, through Bedrock and the relays that pass it on: sipeed/picoclaw#2939,
  // RooCodeInc/Roo-Code#12162, The-PR-Agent/pr-agent#2456): left out, the model's own.
  for (const match of text.matchAll(/\b(temperature|top_p|top_k)\W{0,2} is deprecated for this model/gi))
    found.push({ field: (match[1] as string).toLowerCase() });
  // An effort beside thinking turned off, which Volcengine's endpoints refuse ("… reasoning_effort is not
  // supported when thinking is disabled"): the effort left out, thinking off as the client asked.
  if (/\breasoning_effort\W{0,3} is not supported when thinking is disabled/i.test(text))
    found.push({ field: 'reasoning_effort' });
  return found;
}

/** The thinking modes a model refused (Claude's, and those of the Anthropic-compatible endpoints). */
function thinkingModeRefusals(text: string): FieldFix[] {
  const fixes: FieldFix[] = [];
  // A thinking mode the Claude model does not take: a budget (Opus 4.7 and later; MiniMax-M3 on its
  // Anthropic-compatible API: "invalid thinking.type: \"enabled\" (allowed: adaptive, disabled) (2013)"), or
  // adaptive thinking (Sonnet 4.5, Haiku 4.5).
  if (
    /thinking\.type\.enabled\W{0,3} is not supported for this model|invalid thinking\.type\W{0,4}enabled\W{0,4} \(allowed: [\w ,]{0,40}\badaptive\b/i.test(
      text,
    )
  )
    fixes.push({ field: thinkingEnabledField });
  // Thinking turned off beside an effort (DeepSeek's Anthropic endpoint: deepseek-ai/DeepSeek-V3#1397), or
  // at all, of a model that always thinks (Volcengine's GLM-5.3: "thinking.type `disabled` is not supported by
  // this model", VicBilibily/GCMP#376).
  if (
    /thinking options type cannot be disabled when reasoning_effort is set|thinking\.type\W{0,3}disabled\W{0,3} is not supported by this model/i.test(
      text,
    )
  )
    fixes.push({ field: thinkingDisabledField });
  // Vertex's and Bedrock's schema, older than adaptive thinking (anthropics/claude-code#33506: "thinking: Input
  // tag 'adaptive' found using 'type' does not match any of the expected tags: 'disabled', 'enabled'"), and
  // a MiniMax M3 endpoint's words for it (anomalyco/opencode#35138).
  if (
    /adaptive thinking is not supported (?:on|for|by) this model|thinking\.type must be enabled or disabled|thinking\W{0,3}:?\s*input tag \W?adaptive\W? found using \W?type\W? does not match any of the expected tags/i.test(
      text,
    )
  )
    fixes.push({ field: thinkingAdaptiveField });
  return fixes;
}

/** The `anthropic-beta` flags a refusal has left out (refusedBetas), Claude's 1M window's for the key. */
function betaRefusals(text: string): FieldFix[] {
  const found: FieldFix[] = [];
  // Claude's 1M window asked of a model or a key without it (Claude Code's `[1m]` models, a fallback to
  // Haiku): "The long context beta is not yet available for this subscription.", "This authentication style
  // is incompatible with the long context beta header." — that flag left out for the key, the window the
  // model has.
  if (/long context beta is not yet available|incompatible with the long context beta header/i.test(text))
    found.push({ field: anthropicBetaField, value: longContextBetaFlag, ofKey: true });
  // An Anthropic-compatible upstream's refusal of `anthropic-beta` flags: those it names, or all of them.
  else for (const flag of refusedBetas(text)) found.push({ field: anthropicBetaField, value: flag });
  if (/\binvalid beta flag\b/i.test(text)) found.push({ field: anthropicBetaField });
  return found;
}

/** The block types Volcano Engine's Ark takes, as it lists them. */
const arksBlockTypes = 'text,thinking,image,tool_use,tool_result';

/**
 * A content block type an Anthropic-compatible upstream does not take, with those it does: Volcano Engine's
 * Ark lists them (its list as it is when a refusal gives none), DeepSeek's serde words list them, a proxy's
 * pydantic schema names them (`list[union[ClaudeContentBlockText,ClaudeContentBlockImage,…]]`: ModelScope's;
 * `ContentBlockText, …`: a local server's), OpenCode Zen those of a tool result.
 */
function blockTypesFix(text: string): FieldFix | undefined {
  const ark =
    /messages\.content\.type\W{0,3} specified in the request (?:are|is) not valid: invalid value(?:\W{0,3}\w+\W{0,3}, supported values are: ([^\n]{1,200}?)(?:\.\s*request id|\.?\s*$|"))?/im.exec(
      text,
    );
  if (ark !== null) {
    const listed = ark[1] === undefined ? [] : [...ark[1].matchAll(/\w+/g)].map((word) => word[0]);
    const taken = listed.filter((word) => word !== 'and');
    return { field: blockTypesField, value: taken.length > 0 ? taken.join(',') : arksBlockTypes };
  }
  // DeepSeek's Anthropic endpoint (serde): "messages[66].content: unknown variant `image`, expected one of
  // `text`, `tool_use`, `tool_result`, `thinking`" (deepseek-ai/DeepSeek-V3#1026) — a list of blocks, not
  // of a chat content's parts.
  const serde = /\.content: unknown variant `\w+`, expected one of ((?:`\w+`(?:,\s*|\s+or\s+)?)+)/i.exec(
    text,
  )?.[1];
  const variants =
    serde === undefined ? [] : [...serde.matchAll(/`(\w+)`/g)].map((name) => name[1] as string);
  if (variants.includes('tool_use') || variants.includes('tool_result'))
    return { field: blockTypesField, value: variants.join(',') };
  // OpenCode Zen's, of a tool result's (anomalyco/opencode#43502): the types it takes there.
  // (Each pattern here reads a bounded run of text once: an upstream's text is not to cost the CPU.)
  const inResult = /tool_result content type must be ([^\n]{1,200}?), got/i.exec(text)?.[1];
  if (inResult !== undefined)
    return {
      field: resultBlockTypesField,
      value: [...inResult.matchAll(/\w+/g)]
        .map((word) => word[0])
        .filter((word) => word !== 'or')
        .join(','),
    };
  const union = /list\[union\[([\w, ]{1,500})\]\]/.exec(text)?.[1];
  const taken = (union ?? '')
    .split(',')
    .map((name) => /^\s*(?:Claude)?ContentBlock(\w+)\s*$/.exec(name)?.[1])
    .filter((name): name is string => name !== undefined)
    .map((name) => name.replace(/(?<=.)([A-Z])/g, '_$1').toLowerCase());
  return taken.length === 0 ? undefined : { field: blockTypesField, value: taken.join(',') };
}

/**
 * A reasoning effort the model does not take, with those it does (Codex's `xhigh`, a client's `none` to Kimi:
 * Kilo-Org/cloud#3807): the efforts it takes, so that each request asks the nearest (effortInstead).
 */
function reasoningEffortFix(text: string): FieldFix | undefined {
  const refused =
    /unsupported value:?\s*'reasoning_effort' does not support '\w+' with this model\. supported values are:([^\n]{1,200})/i.exec(
      text,
    ) ??
    // Ollama's, of Codex's xhigh or minimal: 'invalid reasoning value: "xhigh" (must be "high", "medium",
    // "low", "max", or "none")' (ollama/ollama#17252).
    /invalid reasoning value:?\s*\W{0,2}\w+\W{0,2}\s*\(must be ([^)\n]{1,200})\)/i.exec(text);
  const taken =
    refused === null ? [] : [...(refused[1] as string).matchAll(/['"](\w+)['"]/g)].map((value) => value[1]);
  if (taken.length > 0) return { field: 'reasoning_effort', value: taken.join(',') };
  // A model of Ollama's that does not think ('"llama3.1:8b" does not support thinking': Gitlawb/openclaude#1371),
  // or not at that effort ('think value "medium" is not supported for this model': ollama/ollama#12561): none.
  return /"[^"\n]{1,200}" does not support thinking|think value \W{0,2}\w+\W{0,2} is not supported for this model/i.test(
    text,
  )
    ? { field: 'reasoning_effort' }
    : undefined;
}

/** The longest answer a model gives, from a refusal of a longer `max_tokens`; undefined for any other. */
function answerCap(text: string): number | undefined {
  const said =
    /valid range of max_tokens is \[\s*\d+\s*,\s*(\d+)\s*\]/i.exec(text) ??
    /max_tokens\W{0,3}:?\s*\d+ > (\d+), which is the maximum allowed number of output tokens/i.exec(text) ??
    /(?:max_tokens|max_completion_tokens)\W{0,3} is too large: \d+\. this model supports at most (\d+) completion tokens/i.exec(
      text,
    ) ??
    /max_(?:completion_)?tokens\W{0,3} specified in the request are not valid: integer above maximum value, expected a value <= (\d+)/i.exec(
      text,
    ) ??
    /max_(?:completion_)?tokens\W{0,3} must be less than or equal to \W{0,3}(\d+)/i.exec(text) ??
    /maximum tokens you requested exceeds the model limit of (\d+)/i.exec(text) ??
    // Alibaba's DashScope (Qwen), and Zhipu's GLM in its Chinese words ("max_tokens参数非法：限制数值范围[1,131072]").
    /range of max_tokens should be \[\s*\d+\s*,\s*(\d+)\s*\]/i.exec(text) ??
    /max_tokens\s*参数非法[^\n\d]{0,20}\[\s*\d+\s*,\s*(\d+)\s*\]/.exec(text) ??
    // Ollama Cloud's and relays' ("max_tokens (131072) exceeds model's maximum output tokens (65536)").
    /max_(?:completion_)?tokens\W{0,3} \(\d+\) exceeds model\W{0,3}s maximum output tokens \((\d+)\)/i.exec(
      text,
    ) ??
    // TokenRouter's ("max_tokens must be at most 131072, got 943717").
    /max_(?:completion_)?tokens\W{0,3} must be at most (\d+), got \d+/i.exec(text);
  // Gemini on Vertex, its range's end not in it ("a maxOutputTokens value of 131072 but the supported range
  // is from 1 (inclusive) to 65537 (exclusive)"), as the relays before it pass it on.
  const vertex =
    /maxOutputTokens value of \d+ but the supported range is from \d+ \(inclusive\)\s*to (\d+) \(exclusive\)/i.exec(
      text,
    );
  const cap = said !== null ? Number(said[1]) : vertex !== null ? Number(vertex[1]) - 1 : 0;
  return cap >= 1 ? cap : undefined;
}

/**
 * Refusals of a request's shape read by their wording alone, each with the field its fix goes by, in the
 * order their fixes are given (requestShapeFixes).
 */
const shapeWordings: ReadonlyArray<readonly [string, RegExp]> = [
  // A content part marked for caching, which no endpoint of the model takes (OpenRouter's 404).
  [cacheMarksField, /no endpoints found that support cache control/i],
  // A message of no text, which Gemini refuses (its OpenAI-compatible endpoint and its own API); an answer
  // of neither text nor calls (an empty turn kept in the history), which Mistral refuses (OpenHands#8685)
  // and Zhipu (BerriAI/litellm#3736, in its English and its Chinese words), Moonshot and Bedrock (a blank
  // text field, as LiteLLM passes its words on).
  [
    emptyTextField,
    /empty text parameter|contents\.parts must not be empty|required oneof field 'data' must have one initialized field|assistant message must have either content or tool_calls|content and tool_calls fields can't both be empty|content\s*和\s*tool_calls\s*字段不能同时为空|message at position \d+ with role 'assistant' must not be empty|agent message content is empty|text field in the contentblock object at [\w.]{1,80} is blank/i,
  ],
  // The `developer` role, which DeepSeek's API (a serde enum), Gemini's and some servers do not know.
  [
    developerRoleField,
    /unknown variant `developer`|(?:message )?role\W{0,3}developer\W{0,3} (?:is )?not supported|invalid (?:message )?role\W{0,3}developer|support author role\W{0,3}developer/i,
  ],
  // A message's content as parts, where the server takes only a string (or one text part, as xAI's): a serde
  // server's words, Azure's, a Go server's (encoding/json's), Groq's (a message not the user's), and others'.
  [
    textPartsField,
    /messages\[\d+\](?:\.content)?\W{0,3}:?\s*(?:invalid type: sequence, expected a string|expected a string, but got an array)|\('messages\.\d+\.content' : value must be a string\)|\b(?:tool|system|assistant|user) messages? must (?:contain|have|be) (?:a )?string content|expects a single `text` element per message|cannot unmarshal array into go struct field [\w.]{0,80}messages\.content of type string/i,
  ],
  // A null content, or one left out: OpenAI's wordings (where no call is beside it), Ollama's, LM Studio's,
  // llama.cpp's server's (of either), a serde server's and xAI's (beside calls too). A refusal of another
  // type of content (a number, an object) reads alike: its fix then changes nothing, and the refusal goes
  // back as it came.
  [
    nullContentField,
    /invalid value for 'content'\W{0,3}:?\s*expected a string, got null|missing required parameter\W{0,3}:?\s*'messages\[\d+\]\.content'|invalid message content type: <nil>|'content' field must be a string or an array of objects|expected 'content' to be a string or an array|assistant message must contain either 'content' or 'tool_calls'|messages\[\d+\]\W{0,3}:?\s*missing field `content`|each message must have at least one content element/i,
  ],
  // Messages in an order a chat template refuses: Qwen 3.5's and 3.6's system message past the first, Qwen
  // 3's role it does not know (the developer role), Mistral's and Gemma's alternation, as vLLM and
  // llama.cpp give them, Mistral's API's user message after tool results, Gemini's call that does not
  // follow the user's turn or a function's response, Perplexity's alternation, Bedrock's (and Anthropic's
  // older words) and Bedrock's user's turn first.
  [
    strictTemplateField,
    /system message must be at the beginning|unexpected message role|conversation roles must alternate|unexpected role '\w+' after role '\w+'|function call turn comes immediately after a user turn|user and assistant roles should be alternating|roles must alternate between \W{0,2}user\W{0,2} and \W{0,2}assistant|conversation must (?:alternate between user and assistant roles|start with a user message)|does not support successive user or assistant messages/i,
  ],
  // No user message (GLM's API, in English and Chinese; Alibaba's DashScope for Qwen, coze-dev/coze-studio#2557),
  // or no message but instructions (Gemini's words; Claude's, behind a relay): a conversation with none is
  // given one; one that has one goes as it was (the refusal back as it came).
  [
    userTurnField,
    /the messages parameter is illegal|messages\s*参数非法|input messages do not contain elements with the role of user|contents is not specified|messages: at least one message is required|messages list should not contain only one message with role \W{0,2}system/i,
  ],
  // Tool calls and results in a request of no tools: Bedrock's words (Claude's earlier ones).
  [
    toolHistoryField,
    /toolconfig field must be defined when using (?:the )?tooluse and toolresult|requests which include \W?tool_use\W? or \W?tool_result\W? blocks must define tools/i,
  ],
  // No system role at all: Gemma's templates as vLLM and SGLang give it, Gemma on Google's API, and Mistral
  // 7B's first templates.
  [
    systemRoleField,
    /system role not supported|developer instruction is not enabled for models\/|only user and assistant roles are supported/i,
  ],
  // A call sent back whose arguments are not JSON: Python's json.loads as vLLM passes its words on (the body
  // the gateway sends is JSON, so what is not is a text inside it), llama.cpp's server's, Kimi's, NEAR AI's,
  // MiniMax's.
  [
    toolArgumentsField,
    /(?:expecting [a-z ',:]{1,40}|unterminated string starting at|invalid (?:\\escape|control character at)|extra data): line \d+ column \d+ \(char \d+\)|failed to parse tool call arguments as json|function\.arguments\W{1,3}(?:arguments )?must be (?:a )?valid json|invalid function arguments json string|function\.arguments\W{1,3} parameter of the code model must be in json format/i,
  ],
  // Tools, which the model takes none of, told in the prompt: Ollama's words for a model whose template has
  // none, Google's and Mistral's (Gemma, Voxtral), DeepSeek R1's, Zhipu's of GLM-3; OpenRouter's 404 for a
  // model none of whose endpoints takes tools.
  [
    toolsAsTextField,
    /\bdoes not support tools\b|no endpoints found that support tool use|function calling is not enabled for|does not support function calling|\Wtools\W{1,3} is not supported for model/i,
  ],
  // A tool choice as an object, which LM Studio's server does not take (only `none`, `auto`, `required`).
  [toolChoiceObjectField, /invalid tool_choice type:?\s*\W?object\W?/i],
  // A forced tool choice, which a model that thinks does not take: DeepSeek V4's (its Anthropic endpoint's
  // too, which names the model it routes to: "deepseek-reasoner does not support this tool_choice"),
  // DashScope's, Kimi's wordings (Anthropic's, refused only while thinking is on: thinkingToolChoice); and
  // Z.AI's for GLM, which takes `auto` only ("Tool choice must be auto": vectorize-io/hindsight#4246).
  [
    toolChoiceField,
    /tool choice must be auto|thinking mode does not support (?:this )?tool_choice|tool_choice parameter does not support being set to required|tool_choice\W{0,3}(?:required|specified)\W{0,3} is incompatible with thinking|no endpoints found that support the provided \W?tool_choice\W? value|deepseek-reasoner does not support (?:this )?tool_choice/i,
  ],
  // An answer sent back without the reasoning a thinking model wants back: DeepSeek's and Kimi's wordings.
  [
    reasoningStandInField,
    /reasoning_content\W{0,3} in the thinking mode must be passed back|missing \W{0,3}reasoning_content\W{0,3} field in the assistant message|reasoning_content is missing in assistant|must include reasoning_content/i,
  ],
  // A conversation that ends with an answer, where the model takes no prefill: Anthropic's wording (also
  // through OpenRouter and GitHub Copilot), Mistral's, and llama.cpp's of two answers at the end.
  [
    prefillField,
    /does not support assistant message prefill|prefilling assistant messages is not supported|cannot have 2 or more assistant messages at the end of the list|conversation must end with a user message|expected last role user or tool \(or assistant with prefix true\)|last message of [\w.-]{1,80} must be a user message, or an assistant message with prefix mode on/i,
  ],
  // Structured output by a JSON Schema, where the provider has JSON mode only (DeepSeek's API).
  [
    jsonSchemaField,
    /response_format type is unavailable|response_format\.type\W{0,3}json_schema\W{0,3} is unavailable|json_schema\W{0,3} (?:response[_ ]format )?is not supported/i,
  ],
  // JSON mode, where the provider takes a JSON Schema only (LM Studio) or not that either (OpenAI's and
  // Azure's older models); and `response_format` in no form (GPT4All's words; the others' for a field they
  // do not know go by fixForUnknownField).
  [
    jsonModeField,
    /response_format\.type\W{0,3} must be \W{0,3}json_schema\b|response_format\W{0,3} of type \W{0,3}json_object\W{0,3} is not supported/i,
  ],
  [responseFormatField, /\bresponse_format\W{0,3} is not supported\b/i],
  // A message's name not of OpenAI's pattern (an agent's name of spaces): its words, and its older ones.
  [
    messageNamePatternField,
    /invalid 'messages\[\d+\]\.name': string does not match pattern|does not match '[^'\n]{1,60}' - 'messages\.\d+\.name'/i,
  ],
  // A message's name where the provider takes none: xAI's words (for any message but the user's), a strict
  // gateway's, Perplexity's (pydantic's); Mistral's and Groq's name the field by its place (fieldsOfRefusedShapes).
  [
    messageNameField,
    /only message of role user can have a name|messages\[\d+\]\W{1,6}name\W{1,4}is not supported|messages -> \d+: \w+\.__init__\(\) got an unexpected keyword argument \W{0,2}name\b/i,
  ],
  // Structured output beside tools (Gemini's words).
  [
    responseFormatWithToolsField,
    /(?:function calling|tool use) with a response mime type\W{0,4}application\/json\W{0,3} is unsupported/i,
  ],
];

/**
 * What a refusal says of the request's shape that the gateway can write otherwise: tools' schemas, how many
 * tools and how long an answer a model takes, messages of no text, null contents, the developer role, text
 * parts, messages in an order a chat template refuses, calls' arguments that are not JSON, a forced tool
 * choice, reasoning not sent back, a conversation that ends with an answer, and structured output by a
 * schema (docs/budgeting.md#refused-fields).
 */
function requestShapeFixes(text: string, body: string): FieldFix[] {
  const fixes: FieldFix[] = [];
  // Penalties the model does not take (Gemini behind OpenRouter or Vertex, and its own API before them).
  if (/penalty is not enabled for (?:this model|models\/)/i.test(text))
    fixes.push(
      { field: 'frequency_penalty' },
      { field: 'presence_penalty' },
      { field: 'repetition_penalty' },
    );
  // A tool's parameters in JSON Schema the provider does not take: OpenAI's and Anthropic's wordings,
  // MiniMax's of none at all, Gemini's of a keyword (its own API's, and through its OpenAI-compatible
  // endpoint or a gateway), and Moonshot's of any fault its validator finds — no `type` at the top
  // included (cc-switch#5046, kimi-code#2661).
  if (
    /invalid schema for function\b|"code"\s*:\s*"invalid_function_parameters"|input_schema does not support (?:oneof|allof|anyof)|tools\.\d+\.(?:custom\.)?input_schema\b|function parameters is empty/i.test(
      text,
    ) ||
    body.includes('invalid_function_parameters')
  )
    fixes.push({ field: toolSchemasField });
  // Gemini's of a keyword outside its subset; Fireworks' of conditionals it merges across an `allOf`
  // ("Conflict in schema definitions for key 'if'": Kimi K2.6, nicobailon/pi-subagents#265, #325), which
  // the subset has none of.
  if (/function_declarations\[\d+\]\.parameters|conflict in schema definitions for key\b/i.test(text))
    fixes.push({ field: toolSchemaKeywordsField });
  // A system message in the conversation, which an Anthropic-compatible endpoint that predates them
  // refuses: DeepSeek's, Qwen's and Ollama's serde words, Anthropic's older ones and its own for a model
  // that takes none (now
  // "role 'system' is not supported on this model"; before, the message's place, then its words), a
  // relay's, MiniMax's, LM Studio's (zod's), a FastAPI proxy's (the role's place in the body, then its words),
  // a relay's before ChatGPT's Codex backend ("System messages are not allowed": router-for-me/CLIProxyAPI#3625),
  // Volcengine's, its place masked ("The parameter `***.role` … invalid value: `system`, supported values are:
  // `assistant`, `user`": QuantumNous/new-api#2288).
  if (
    /\.role\W{0,3} specified in the request are not valid: invalid value: \W?system\W?, supported values are: \W?assistant\W?, \W?user\W?|unknown variant [`']system[`'], expected [`']user[`'] or [`']assistant[`']|unexpected role \W?system\W? ?\. the messages api accepts a top-level `system` parameter|messages\.\d+\.role: input should be 'user' or 'assistant'|messages\[\d+\]\.role must be either 'user' or 'assistant', but got 'system'|chat content has invalid message role:? system|role \W?system\W? is not supported on this model|invalid discriminator value\. expected 'user' \| 'assistant'|\bsystem messages are not allowed\b/i.test(
      text,
    ) ||
    /messages\W{1,4}\d+\W{1,4}role\W{1,6}msg\W{1,6}Input should be 'user' or 'assistant'/.test(body)
  )
    fixes.push({ field: systemMessagesField });
  if (/not a valid moonshot flavored json schema|tools\.function\.parameters\.type is required/i.test(text))
    fixes.push({ field: toolSchemaMfjsField });
  // A longer answer asked for than the model gives: DeepSeek's, OpenAI's, Anthropic's, Volcano Engine's,
  // Groq's, Bedrock's, DashScope's, Zhipu's, Ollama Cloud's, Vertex's Gemini's wordings, each with the longest.
  const answer = answerCap(text);
  if (answer !== undefined) fixes.push({ field: answerTokensField, atMost: answer });
  // vLLM started without its auto tool choice, which takes a choice left to the model as "auto".
  if (/\Wauto\W{1,3}tool choice requires --enable-auto-tool-choice/i.test(text))
    fixes.push({ field: autoToolChoiceField });
  // A relay that wrote a named `auto` as an object the Responses API refuses (its types listed).
  if (
    /invalid value: 'auto'\. supported values are: [^.]{0,600}'function'/i.test(text) &&
    body.includes('tool_choice')
  )
    fixes.push({ field: defaultToolChoiceField });
  // A hotter temperature than the model takes: Claude's words ("temperature: range: 0..1"), with the hottest.
  const hottest = /\btemperature\W{0,3}:\s*range:\s*-?\d+(?:\.\d+)?\s*\.\.\s*(\d+(?:\.\d+)?)\b/i.exec(text);
  if (hottest !== null) fixes.push({ field: temperatureRangeField, atMost: Number(hottest[1]) });
  for (const [field, wording] of shapeWordings) if (wording.test(text)) fixes.push({ field });
  // Claude's refusal of a tool forced with thinking on: the choice left to it only while thinking is on.
  if (/thinking may not be enabled when tool_choice forces tool use/i.test(text))
    fixes.push({ field: toolChoiceField, value: thinkingToolChoice });
  // More tools than the provider takes in one request (OpenAI: 128; Kimi's Anthropic endpoint, in its
  // words "a max of 128 tools can be supported": Claude Code with its MCP servers' tools, MoonshotAI/Kimi-K2#90).
  // More stop sequences than the provider takes: the first that many sent, all held by the gateway —
  // OpenAI's words (4), Groq's (letta-ai/letta#1272), Zhipu's (QwenLM/Qwen-Agent#370), FastDeploy's; where
  // no number is said (DeepSeek: continuedev/continue#1513; an older Azure API's "'$.stop' is invalid",
  // langchain-ai/langchain#20234; one stop too long for FastDeploy), none sent, all held.
  const stops =
    /invalid 'stop'\W{0,3}:?\s*array too long\. expected an array with maximum length (\d+)/i.exec(text) ??
    /\blen\(stop\) > (\d+) is not supported/i.exec(text) ??
    /\bstop\s*[:：]\s*最大只能有\s*(\d+)\s*个停止词/.exec(text) ??
    /\blength of stop \(\[[\d, ]{0,400}\]\) exceeds the limit max_model_len\((\d+)\)/i.exec(text);
  if (stops !== null) fixes.push({ field: stopCountField, atMost: Number(stops[1]) });
  else if (
    /stop string array too long|'\$\.stop' is invalid|length of stop_seqs\(\d+\) exceeds the limit/i.test(
      text,
    )
  )
    fixes.push({ field: stopField });
  const tools =
    /invalid 'tools'\W{0,3}:?\s*array too long\. expected an array with maximum length (\d+)/i.exec(text) ??
    /\ba max of (\d{1,6}) tools can be supported\b/i.exec(text);
  if (tools !== null) fixes.push({ field: toolCountField, atMost: Number(tools[1]) });
  return fixes;
}

/**
 * How many images fit in one request, from a refusal of more: Anthropic's "Too much media: 0 document
 * pages + 103 images > 100" and "too many images and documents: 104 + 1 > 100" (documents take their
 * share of the cap), vLLM's "At most 5 image(s) may be provided in one request" (or "prompt"), "request
 * contains 52 images, exceeding the maximum of 50", "Image count 5 exceeds limit 4 per request", "too
 * many images: 11 images were provided, but the model supports a maximum of 10 images", "Too many images
 * in request. Max is 10."
 */
function imageCap(text: string): number | undefined {
  const anthropic =
    /too much media: (\d+) document pages? \+ \d+ images? > (\d+)/i.exec(text) ??
    /too many images and documents: \d+ \+ (\d+) > (\d+)/i.exec(text);
  if (anthropic !== null) return Math.max(0, Number(anthropic[2]) - Number(anthropic[1]));
  const stated =
    /at most (\d+) image\(s\) may be provided/i.exec(text) ??
    /contains \d+ images?, exceeding the maximum of (\d+)/i.exec(text) ??
    /image count \d+ exceeds (?:the )?limit (?:of )?(\d+)/i.exec(text) ??
    /too many images[^\n]{0,120}? supports? (?:a maximum of|at most|up to) (\d+) images?/i.exec(text) ??
    /too many images in (?:the )?(?:request|message|prompt)\W{1,3}max(?:imum)?(?: allowed)? is (\d+)/i.exec(
      text,
    );
  return stated === null ? undefined : Number(stated[1]);
}

// ---- reading the body ------------------------------------------------------------------------------

/**
 * What of an error body is read: the head of each string, and of all of them together. A provider's
 * own message is a few hundred characters; what makes a body long is the request quoted back (a
 * validation error's `input`), which the client chose — and the phrases below, each tried from every
 * place a phrase could start, took 5 s of CPU for 300 KB of "context length " quoted back.
 */
const maxStringChars = 4_096;
const maxBodyChars = 16_384;
/** The longest string read for upstream JSON nested in it: a provider's message nests its upstream's, short. */
const maxNestedChars = 1_048_576;

interface BodyContent {
  /** Every string found (the head of each, within maxBodyChars): messages, codes, types, nested JSON's strings; or the plain text. */
  texts: string[];
  /** Characters in `texts`. */
  chars: number;
  /** Numeric fields by name (llama.cpp reports n_ctx and n_prompt_tokens as fields). */
  fields: Map<string, number>;
  /** The body says it is an error (an `error` member, an SSE error event, or not JSON at all). */
  isError: boolean;
}

function readBody(body: string): BodyContent {
  const content: BodyContent = { texts: [], chars: 0, fields: new Map(), isError: false };
  const trimmed = body.trim();
  if (trimmed === '') return content;
  const parsed = tryParse(trimmed);
  if (parsed !== undefined) {
    collect(parsed, content, 0);
    content.isError = hasErrorMember(parsed);
    return content;
  }
  // Server-sent events (`data: …`, llama.cpp's `error: …`) or plain text.
  let sawEvent = false;
  let eventName = '';
  for (const line of trimmed.split(/\r?\n/)) {
    const name = /^event:\s?(.*)$/.exec(line);
    if (name !== null) {
      eventName = name[1] ?? '';
      continue;
    }
    const event = /^(data|error):\s?(.*)$/.exec(line);
    if (event === null) continue;
    const value = tryParse(event[2] ?? '');
    if (value === undefined) continue;
    sawEvent = true;
    collect(value, content, 0);
    // Bedrock's event streams name their failures: `event: exception`, `…Exception`.
    if (event[1] === 'error' || hasErrorMember(value) || /error|exception/i.test(eventName))
      content.isError = true;
  }
  if (!sawEvent) {
    content.texts.push(trimmed.slice(0, maxBodyChars));
    content.isError = true;
  }
  return content;
}

/**
 * A JSON body with no error member, or a stream's event of one `data:` line holding one: what readBody
 * would find no error in.
 */
function isPlainSuccess(body: string): boolean {
  let text = body.trim();
  if (text.startsWith('data:') && !text.includes('\n') && !text.includes('\r')) text = text.slice(5).trim();
  const parsed = tryParse(text);
  return parsed !== undefined && !hasErrorMember(parsed);
}

function tryParse(text: string): unknown {
  if (!/^[[{]/.test(text)) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function hasErrorMember(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasErrorMember);
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  if ((record.error !== undefined && record.error !== null) || record.errors !== undefined) return true;
  if (record.type === 'error' || record.object === 'error') return true;
  // OpenAI Responses' `response.failed` event carries its error inside the response.
  return hasErrorMember(record.response);
}

function collect(value: unknown, content: BodyContent, depth: number): void {
  if (depth > 12 || content.chars >= maxBodyChars) return;
  if (typeof value === 'string') {
    const head = value.slice(0, Math.min(maxStringChars, maxBodyChars - content.chars));
    content.texts.push(head);
    content.chars += head.length;
    // Upstream JSON nested as an escaped string inside a message ("AiError: {…} (id)"); not in a string of
    // more than maxNestedChars, which is the request quoted back, not a provider's message.
    const start = value.length > maxNestedChars ? -1 : value.indexOf('{');
    const end = start === -1 ? -1 : value.lastIndexOf('}');
    if (start >= 0 && end > start) {
      const nested = tryParse(value.slice(start, end + 1));
      if (nested !== undefined) collect(nested, content, depth + 1);
    }
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collect(item, content, depth + 1);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, item] of Object.entries(value)) {
    if (typeof item === 'number' && Number.isFinite(item)) content.fields.set(key, item);
    // OpenRouter's rate limits quote their headers in the body (`metadata.headers`), the reset as a
    // string of epoch milliseconds.
    else if (typeof item === 'string' && /^x-ratelimit-reset$/i.test(key) && /^\d{10,13}$/.test(item))
      content.fields.set(resetField, Number(item));
    else collect(item, content, depth + 1);
  }
}

// ---- telling overflows from look-alikes -------------------------------------------------------------

/** Limits per time window or on spending: a rate limit, whatever the status. */
const rateLimitPhrase =
  /\b(?:per|a) (?:minute|min|hour|day)\b|\bTP[MD]\b|\bRP[MD]\b|rate[ _-]?limit|quota|too many requests/i;

/**
 * The families of phrases providers and servers use for a prompt that does not fit the window: a
 * subject (prompt, input, decoder prompt, request, context), a measure (length, tokens, token count,
 * size) and a verdict (exceeds, longer than, too long, more than the maximum, n_ctx) — in either order.
 */
const overflowPhrases: readonly RegExp[] = [
  /\b(?:decoder prompt|prompt|inputs?|request(?:ed)?|context)`?\b[^.]{0,40}?\b(?:length|tokens?|token count)\b[^.]{0,60}?\b(?:exceed(?:s|ed)?|is longer than|is larger than|is greater than|must have less than|must be <=|too long|too large)\b/i,
  /\b(?:decoder prompt|prompt|inputs?|context)`?\b[^.]{0,40}?\b(?:exceed(?:s|ed)?|must have less than|is longer than|is more than)\b[^.]{0,40}?\b(?:tokens?|token count|context (?:length|window|size))\b/i,
  /\bis longer than the maximum (?:model )?length\b/i,
  /\b(?:prompt|input|request)s? exceed(?:s|ed)? (?:the )?(?:model(?:'s)? )?(?:max(?:imum)? (?:length|context|tokens?)|token limit|context)/i,
  /\bexceed(?:s|ed)? (?:the )?model(?:'s)? (?:token|context) limit\b|\bmodel max length exceeded\b/i,
  /\brange of input length should be\b/i,
  /\bprompt_tokens \(\d+\) must be less than max_seq_len\b/i,
  /\bn_keep\b[^.]{0,200}\bn_ctx\b/i,
  /context[ _-]?(?:length|window|size|limit)[^.]{0,200}?(?:exceed|longer|too|only|greater|larger|overflow|maximum|must be|not enough)/i,
  /(?:exceed|longer than|greater than|larger than|too (?:long|large|big) for)[^.]{0,200}?(?:context|kv size)/i,
  /\b(?:maximum|max) (?:context|prompt) (?:length|lenght|size)\b/i,
  /\b(?:prompt|input|request|message)s? (?:is|are) too (?:long|large|big)\b/i,
  /\binput prompt is too big\b/i,
  /\btoo many tokens\b/i,
  /\b(?:input|prompt) token count\b[^.]{0,200}?\b(?:exceed|only supports|limit)/i,
  /\bnumber of tokens (?:allowed|to keep)\b/i,
  /tokens? \+ `?max_new_tokens`? must be/i,
  /\bexceeds budget\b|\binput_too_large\b/i,
  /context_length_exceeded|context_window_exceeded|exceed_context_size|ContextWindowExceeded/i,
  // TensorRT-LLM's server before it took OpenAI's wording: a prompt past max_num_tokens, or past max_seq_len
  // (what is left for the answer below 0).
  /\bsum of prompt length\b[\s\S]{0,80}?\bshould not exceed max_num_tokens\b/i,
  /\bdefault_max_tokens\W{0,3} \(-?\d+\) must be greater than 0\b[\s\S]{0,80}?\bmax_seq_len\b/i,
];

/** Limits that are about something else: output caps, string or byte sizes, images. */
const lookAlikePhrases: readonly RegExp[] = [
  // Cohere: "too many tokens: max tokens must be less than or equal to 4096, the maximum output for this model".
  /\bmaximum output\b|\bmax(?:imum)?[ _]tokens must be less than or equal to\b/i,
  /string too long|maximum length \d+, but got/i,
  /request_too_large|exceeds the maximum size|entity too large/i,
  /\b\d+(?:\.\d+)? ?(?:bytes|[KMG]i?B)\b/i,
];

/**
 * A body larger than this answered by a bare 413 is refused for its bytes: no prompt that large is sent
 * to a window that refuses it as too long (the gateway fits it first), and GitHub Copilot answers its
 * ~5.2 MB ceiling so.
 */
const bareTooLargeBytes = 4 * 1024 * 1024;

function looksLikeOverflow(status: number, body: string, text: string, sentBytes = 0): boolean {
  // Cerebras answers an over-long prompt with a bare 413; a 413 that talks about bytes is a size limit,
  // and so is a bare one to a body of megabytes.
  if (status === 413)
    return body.trim() === '' ? sentBytes <= bareTooLargeBytes : /token|context/i.test(text);
  if (!overflowPhrases.some((phrase) => phrase.test(text))) return false;
  return !lookAlikePhrases.some((phrase) => phrase.test(text)) || /context/i.test(text);
}

// ---- the numbers --------------------------------------------------------------------------------------

type Field = keyof OverflowNumbers;
const number = '(\\d[\\d,]*)';

/**
 * Phrasings that give numbers, each group naming its field. Tried in order; a field keeps the first
 * value found, so alternatives in one pattern may name the same field twice. `prompt2` adds to the
 * prompt (tool input counted apart).
 */
const numberPatterns: ReadonlyArray<{ pattern: RegExp; fields: ReadonlyArray<Field | 'prompt2'> }> = [
  // OpenAI, Azure, DeepSeek, vLLM, OpenRouter: "…maximum context length is N tokens. However, you
  // requested R tokens (P in the messages, C in the completion)"; OpenAI's with tools, "(P in the messages,
  // F in the functions, and C in the completion)" (FoundationAgents/OpenManus#62).
  {
    pattern: new RegExp(
      `you requested (?:about )?${number} tokens \\(${number} (?:in the messages|of text input)(?:, ${number} (?:of tool input|in the functions))?(?:,(?: and)? ${number} in the (?:completion|output))?\\)`,
      'i',
    ),
    fields: ['requested', 'promptTokens', 'prompt2', 'completionTokens'],
  },
  // A Mistral deployment's, its parenthesis misplaced and its "length" misspelt (crewAIInc/crewAI#2659):
  // "maximum context lenght is M tokens. However, you requested R tokens (P) in the messages, C in the
  // completion)".
  {
    pattern: new RegExp(
      `you requested ${number} tokens \\(${number}\\) in the messages, ${number} in the completion\\)`,
      'i',
    ),
    fields: ['requested', 'promptTokens', 'completionTokens'],
  },
  {
    pattern: new RegExp(
      `you requested a total of ${number} tokens: ${number} tokens from the input messages and ${number} tokens for the completion`,
      'i',
    ),
    fields: ['requested', 'promptTokens', 'completionTokens'],
  },
  {
    pattern: new RegExp(
      `you requested ${number} output tokens and your prompt contains (at least )?${number} input tokens, for a total of (?:at least )?${number}`,
      'i',
    ),
    fields: ['completionTokens', 'promptTokensLowerBound', 'promptTokens', 'requested'],
  },
  {
    pattern: new RegExp(
      `you requested ${number} output tokens and your prompt contains ${number} characters`,
      'i',
    ),
    fields: ['completionTokens', 'promptChars'],
  },
  // Older completions wording: "you requested R tokens (P in your prompt; C for the completion)".
  {
    pattern: new RegExp(
      `you requested ${number} tokens \\(${number} in your prompt; ${number} for the completion\\)`,
      'i',
    ),
    fields: ['requested', 'promptTokens', 'completionTokens'],
  },
  {
    pattern: new RegExp(
      `(?:you requested ${number} tokens in the messages|resulted in (?:over )?${number} tokens)`,
      'i',
    ),
    fields: ['promptTokens', 'promptTokens'],
  },
  // TensorRT-LLM: "The sum of prompt length (P.0), query length (Q) should not exceed max_num_tokens (M)"
  // (a cap on the prompt alone); "… = max_seq_len (M) - `splited_prompt_len` (P)".
  {
    pattern: new RegExp(
      `prompt length \\(${number}(?:\\.\\d+)?\\), query length \\(${number}(?:\\.\\d+)?\\) should not exceed max_num_tokens \\(${number}\\)`,
      'i',
    ),
    fields: ['promptTokens', 'prompt2', 'maxInputTokens'],
  },
  {
    pattern: new RegExp(`max_seq_len \\(${number}\\) - \`?splited_prompt_len\`? \\(${number}\\)`, 'i'),
    fields: ['maxContext', 'promptTokens'],
  },
  // Prompt and answer together, not split.
  { pattern: new RegExp(`you requested (?:about )?${number} tokens(?! \\()`, 'i'), fields: ['requested'] },
  {
    pattern: new RegExp(`(?:max_tokens|max_completion_tokens)'? is too large: ${number}`, 'i'),
    fields: ['completionTokens'],
  },
  { pattern: new RegExp(`your request has ${number} input tokens`, 'i'), fields: ['promptTokens'] },
  {
    pattern: new RegExp(
      `(?:maximum|max) (?:context|prompt) (?:length|lenght|size)(?: is| of|:)? ${number}`,
      'i',
    ),
    fields: ['maxContext'],
  },
  // Anthropic: "input length and `max_tokens` exceed context limit: P + C > M".
  {
    pattern: new RegExp(`${number} \\+ ${number} > ${number}`),
    fields: ['promptTokens', 'completionTokens', 'maxContext'],
  },
  // Anthropic: "prompt is too long: P tokens > M maximum".
  {
    pattern: new RegExp(`${number} tokens > ${number} maximum`, 'i'),
    fields: ['promptTokens', 'maxContext'],
  },
  // Gemini / Vertex.
  {
    pattern: new RegExp(
      `input token count (?:\\(|is )${number}\\)? (?:exceeds the maximum number of tokens allowed \\(|but model only supports up to )${number}`,
      'i',
    ),
    fields: ['promptTokens', 'maxContext'],
  },
  // Mistral: "Prompt contains P tokens … too large for model with M maximum context length".
  { pattern: new RegExp(`contains ${number} tokens`, 'i'), fields: ['promptTokens'] },
  { pattern: new RegExp(`with ${number} maximum context length`, 'i'), fields: ['maxContext'] },
  // TGI: "`inputs` tokens + `max_new_tokens` must be <= M. Given: P `inputs` tokens and C `max_new_tokens`".
  {
    pattern: new RegExp(
      `must be <= ${number}\\. Given: ${number} \`?inputs\`? tokens and ${number} \`?max_new_tokens`,
      'i',
    ),
    fields: ['maxContext', 'promptTokens', 'completionTokens'],
  },
  { pattern: new RegExp(`prompt is too long: ${number}`, 'i'), fields: ['promptTokens'] },
  {
    pattern: new RegExp(`maximum prompt length is ${number} but the request contains ${number}`, 'i'),
    fields: ['maxContext', 'promptTokens'],
  },
  {
    pattern: new RegExp(`\\(${number} tokens\\) exceeds budget \\(${number}`, 'i'),
    fields: ['promptTokens', 'maxContext'],
  },
  // Cohere.
  { pattern: new RegExp(`exceeded by ${number} tokens`, 'i'), fields: ['excessTokens'] },
  { pattern: new RegExp(`limit for this model is ${number}`, 'i'), fields: ['maxContext'] },
  {
    pattern: new RegExp(`\\(prompt and prediction\\) cannot exceed ${number} - received ${number}`, 'i'),
    fields: ['maxContext', 'requested'],
  },
  {
    pattern: new RegExp(`cannot exceed ${number} - received ${number}`, 'i'),
    fields: ['maxContext', 'promptTokens'],
  },
  // vLLM's engine: "The decoder prompt (length P) is longer than the maximum model length of M";
  // "Prompt length of P is longer than …".
  {
    pattern: new RegExp(
      `prompt (?:\\(length ${number}\\)|length of ${number}) is longer than the maximum model length of ${number}`,
      'i',
    ),
    fields: ['promptTokens', 'promptTokens', 'maxContext'],
  },
  // SGLang's scheduler: "Input length (P tokens) exceeds the maximum allowed length (M tokens)".
  {
    pattern: new RegExp(
      `input length \\(${number} tokens\\) exceeds the maximum allowed length \\(${number}`,
      'i',
    ),
    fields: ['promptTokens', 'maxContext'],
  },
  // TGI: "`inputs` must have less than M tokens. Given: P".
  {
    pattern: new RegExp(`must have less than ${number} tokens\\. Given: ${number}`, 'i'),
    fields: ['maxContext', 'promptTokens'],
  },
  // llama-cpp-python: "Requested tokens (P) exceed context window of M".
  {
    pattern: new RegExp(`requested tokens (?:\\(${number}\\) )?exceed context window of ${number}`, 'i'),
    fields: ['promptTokens', 'maxContext'],
  },
  // LM Studio: "Input length P exceeds context length M"; "Reached context length of M tokens".
  {
    pattern: new RegExp(`input length ${number} exceeds context length ${number}`, 'i'),
    fields: ['promptTokens', 'maxContext'],
  },
  { pattern: new RegExp(`reached context length of ${number}`, 'i'), fields: ['maxContext'] },
  {
    pattern: new RegExp(`n_keep \\(${number}\\) >= n_ctx \\(${number}`, 'i'),
    fields: ['maxInputTokens', 'maxContext'],
  },
  // Moonshot: "exceeded model token limit: M (requested: R)"; "model max length exceeded, max length:M".
  {
    pattern: new RegExp(`model token limit: ${number}(?: \\(requested: ${number})?`, 'i'),
    fields: ['maxContext', 'requested'],
  },
  { pattern: new RegExp(`max length: ?${number}`, 'i'), fields: ['maxContext'] },
  // SiliconFlow: "length of prompt_tokens (P) must be less than max_seq_len (M)".
  {
    pattern: new RegExp(`prompt_tokens \\(${number}\\) must be less than max_seq_len \\(${number}`, 'i'),
    fields: ['promptTokens', 'maxContext'],
  },
  // DashScope: "Range of input length should be [1, M]".
  { pattern: new RegExp(`range of input length should be \\[1, ${number}\\]`, 'i'), fields: ['maxContext'] },
  // vLLM renderer: "You passed P input tokens and requested C output tokens. However, the model's
  // context length is only M tokens, resulting in a maximum input length of I tokens".
  {
    pattern: new RegExp(`you passed ${number} input tokens and requested ${number} output tokens`, 'i'),
    fields: ['promptTokens', 'completionTokens'],
  },
  { pattern: new RegExp(`maximum input length of ${number}`, 'i'), fields: ['maxInputTokens'] },
  // OpenAI's GPT-5 family (400,000 = 272,000 of input + 128,000 of output): "Input tokens exceed the
  // configured limit of I tokens. Your messages resulted in P tokens" — a cap on the prompt alone.
  {
    pattern: new RegExp(`configured limit of ${number} tokens\\. your messages resulted in ${number}`, 'i'),
    fields: ['maxInputTokens', 'promptTokens'],
  },
  // "The input (P tokens) is longer than the model's context length (M tokens)"; llama.cpp's
  // "input (P tokens) is larger than the max context size (M tokens)".
  {
    pattern: new RegExp(
      `input \\(${number} tokens\\) is (?:longer|larger) than the (?:model's|max) context (?:length|size) \\(${number}`,
      'i',
    ),
    fields: ['promptTokens', 'maxContext'],
  },
  {
    pattern: new RegExp(`n_ctx\\s*=\\s*${number},\\s*n_tokens\\s*=\\s*${number}`, 'i'),
    fields: ['maxContext', 'promptTokens'],
  },
  // LM Studio: "Trying to keep the first P tokens … loaded with context length of only M tokens".
  {
    pattern: new RegExp(`keep the first (${number}) tokens`, 'i'),
    fields: ['promptTokensLowerBound', 'promptTokens'],
  },
  {
    pattern: new RegExp(`context (?:length|size|window)(?: is| of)? only ${number}`, 'i'),
    fields: ['maxContext'],
  },
  {
    pattern: new RegExp(`prompt token count of ${number} exceeds the limit of ${number}`, 'i'),
    fields: ['promptTokens', 'maxContext'],
  },
  { pattern: new RegExp(`model maximum context length: ${number}`, 'i'), fields: ['maxContext'] },
  // GitHub Models (413, `tokens_limit_reached`): "Request body too large for gpt-4o model. Max size: 8000
  // tokens." — its tier's cap on the prompt, whatever the answer asked for.
  {
    pattern: new RegExp(`too large for \\S{1,100} model\\. max size: ${number} tokens`, 'i'),
    fields: ['maxInputTokens'],
  },
  // Cerebras: "Please reduce the length of the messages or completion. Current length is R while limit
  // is M" — R the prompt and the answer asked for together, as OpenAI's same sentence counts them.
  {
    pattern: new RegExp(`current length is ${number} while limit is ${number}`, 'i'),
    fields: ['requested', 'maxContext'],
  },
  // Cloudflare Workers AI (5021, or 3010 as a 413): "The estimated number of input and maximum output
  // tokens (R) exceeded this model context window limit (M)".
  {
    pattern: new RegExp(
      `input and maximum output tokens \\(${number}\\) exceeded this model context window limit \\(${number}`,
      'i',
    ),
    fields: ['requested', 'maxContext'],
  },
  // SiliconFlow: "number of input tokens (P) have exceeded max_prompt_tokens (I) limit" — a cap on the
  // prompt alone.
  {
    pattern: new RegExp(`input tokens \\(${number}\\) have exceeded max_prompt_tokens \\(${number}`, 'i'),
    fields: ['promptTokens', 'maxInputTokens'],
  },
];

function toNumber(text: string): number {
  return Number(text.replaceAll(',', ''));
}

function overflowNumbers(
  text: string,
  fields: ReadonlyMap<string, number>,
): { numbers: OverflowNumbers; evidence: string[] } {
  const numbers: OverflowNumbers = {};
  const evidence: string[] = [];
  const set = (field: Field, value: number | boolean): void => {
    if (numbers[field] === undefined) (numbers as Record<Field, number | boolean>)[field] = value;
  };
  for (const { pattern, fields: names } of numberPatterns) {
    const match = pattern.exec(text);
    if (match === null) continue;
    evidence.push(match[0]);
    let extraPrompt = 0;
    names.forEach((name, index) => {
      const raw = match[index + 1];
      if (raw === undefined) return;
      if (name === 'prompt2') extraPrompt = toNumber(raw);
      else if (name === 'promptTokensLowerBound') {
        if (raw.trim() !== '') set(name, true);
      } else set(name, toNumber(raw));
    });
    if (extraPrompt > 0 && numbers.promptTokens !== undefined) numbers.promptTokens += extraPrompt;
  }
  const contextField = fields.get('n_ctx');
  const promptField = fields.get('n_prompt_tokens');
  if (contextField !== undefined) set('maxContext', contextField);
  if (promptField !== undefined) set('promptTokens', promptField);
  if (
    numbers.requested === undefined &&
    numbers.promptTokens !== undefined &&
    numbers.completionTokens !== undefined &&
    !numbers.promptTokensLowerBound
  ) {
    numbers.requested = numbers.promptTokens + numbers.completionTokens;
  }
  return { numbers, evidence };
}

/**
 * The verdict of a text that states the window and only the total — the prompt and the answer asked for
 * together (Cerebras's "Current length is R", Cloudflare's "input and maximum output tokens (R)",
 * OpenRouter's "requested about R tokens") — with the provider's count of the prompt: the total less the
 * max_tokens the refused attempt asked for, and the remedy those counts call for (a prompt that fits
 * keeps its history; the answer shrinks). Unchanged when the attempt asked for no max_tokens (the
 * provider's default is not known), or when the difference is no count of this prompt: not within
 * `agreement` of the gateway's own count (`estimatedPrompt`) — a total that left the answer out.
 */
export function withPromptFromTotal<
  Verdict extends Extract<UpstreamErrorClass, { kind: 'context_overflow' }>,
>(
  verdict: Verdict,
  askedMaxTokens: number | undefined,
  estimatedPrompt: number,
  agreement: { min: number; max: number },
): Verdict {
  const { numbers } = verdict;
  if (
    numbers.promptTokens !== undefined ||
    numbers.requested === undefined ||
    numbers.maxContext === undefined ||
    askedMaxTokens === undefined
  )
    return verdict;
  const promptTokens = numbers.requested - askedMaxTokens;
  const share = promptTokens / Math.max(1, estimatedPrompt);
  if (promptTokens <= 0 || share < agreement.min || share > agreement.max) return verdict;
  const counted: OverflowNumbers = Object.assign({}, numbers, {
    promptTokens,
    completionTokens: askedMaxTokens,
  });
  return Object.assign({}, verdict, { numbers: counted, remedy: remedyFor(counted, '') });
}

function remedyFor(numbers: OverflowNumbers, text: string): 'compress' | 'reduce_max_tokens' {
  const { maxContext, promptTokens, completionTokens } = numbers;
  if (maxContext !== undefined && promptTokens !== undefined) {
    return maxContext - promptTokens >= minimumAnswerTokens &&
      (completionTokens === undefined || completionTokens > 0)
      ? 'reduce_max_tokens'
      : 'compress';
  }
  // Only the completion is known (a server counting characters): the requested output alone fills the
  // window, so it is what must shrink.
  if (maxContext !== undefined && completionTokens !== undefined && completionTokens >= maxContext / 2)
    return 'reduce_max_tokens';
  return /max_tokens|max_completion_tokens|output tokens/i.test(text) && completionTokens !== undefined
    ? 'reduce_max_tokens'
    : 'compress';
}

// ---- retry-after --------------------------------------------------------------------------------------

function headerValue(
  headers: Readonly<Record<string, string | readonly string[] | undefined>> | undefined,
  name: string,
): string | undefined {
  const value = headers?.[name];
  return typeof value === 'string' ? value : value?.[0];
}

/**
 * From `retry-after-ms`, `retry-after` (seconds or an HTTP date) or the text's "retry in 20.04s", "try
 * again in 9m38.016s", "retry after 6 seconds" (a relay may pass on the body without the headers).
 */
function retryAfterFrom(
  headers: Readonly<Record<string, string | readonly string[] | undefined>> | undefined,
  text: string,
  receivedAtMs: number | undefined,
): number | undefined {
  const milliseconds = Number(headerValue(headers, 'retry-after-ms'));
  if (
    headerValue(headers, 'retry-after-ms') !== undefined &&
    Number.isFinite(milliseconds) &&
    milliseconds >= 0
  )
    return milliseconds;
  const retryAfter = headerValue(headers, 'retry-after');
  if (retryAfter !== undefined) {
    const seconds = Number(retryAfter);
    if (retryAfter.trim() !== '' && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    // An HTTP date (RFC 9110: "Wed, 21 Oct 2026 07:28:00 GMT"), read against when the answer came.
    const date = Date.parse(retryAfter);
    if (receivedAtMs !== undefined && Number.isFinite(date)) return Math.max(0, date - receivedAtMs);
  }
  const inText =
    /(?:retry|try again) (?:in|after) ((?:\d+(?:\.\d+)?(?:h|ms|m|s))+\b|\d+(?:\.\d+)? ?(?:seconds?|minutes?)\b)/i.exec(
      text,
    );
  return inText === null ? undefined : durationMs(inText[1] as string);
}

/** The field readBody keeps a rate limit's reset stamp in (an `X-RateLimit-Reset` the body quotes). */
const resetField = 'x-ratelimit-reset';

/**
 * The wait until a reset stamp (epoch seconds, or milliseconds as OpenRouter writes them): a day's free
 * requests spent ("Rate limit exceeded: free-models-per-day") resets at midnight, not in a few seconds.
 */
function untilReset(stamp: number | undefined, receivedAtMs: number | undefined): number | undefined {
  if (stamp === undefined || receivedAtMs === undefined) return undefined;
  return Math.max(0, (stamp < 1e12 ? stamp * 1000 : stamp) - receivedAtMs);
}

const durationUnitsMs: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

/**
 * A wait as providers write it: Go's durations (Groq's "9m38.016s" for a day's tokens, "650ms", OpenAI's
 * "1.2s", Gemini's "29.330403857s") or in words (Azure's "retry after 6 seconds").
 */
function durationMs(text: string): number {
  const words = /^(\d+(?:\.\d+)?) ?(second|minute)/i.exec(text);
  if (words !== null)
    return Number(words[1]) * ((words[2] as string).toLowerCase() === 'minute' ? 60_000 : 1000);
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s)/gi))
    total += Number(amount) * (durationUnitsMs[(unit as string).toLowerCase()] ?? 0);
  return total;
}
