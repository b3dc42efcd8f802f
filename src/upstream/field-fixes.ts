// Request fields a provider does not take, and what the gateway sends instead
// (docs/budgeting.md#refused-fields). OpenAI's reasoning models refuse `max_tokens` ("Use
// 'max_completion_tokens' instead") and any `temperature` but 1; Mistral's API refuses fields it does not
// know, `max_completion_tokens` and `stream_options` among them, which the gateway's bridges write
// themselves. The gateway tells the reasoning models by name where it can (model-family.ts); the rest
// are found by their refusal: the request goes again with the field renamed or left out, and the model's
// fix is kept for its later requests. Mistral's refusal of another provider's tool call ids is fixed so
// too (toolCallIdsField), Gemini's of a tool call without its thought signature
// (thoughtSignaturesField), and a text-only model's of a tool result's image (toolImagesField). Kimi K2,
// which refuses no id but goes silent on another model's, is given its own kind by name
// (withToolCallIdsAsKimiTakes).

import {
  fnv1a,
  hashDigits,
  withCallIdsGiven,
  withPortableCallIds,
  type CallIdSlots,
} from './tool-call-ids.js';
import { isRecord } from './tool-call-shape.js';
import {
  conversationFixes,
  openToolLoop,
  type ConversationFixes,
  type ForeignThinkingStep,
} from './anthropic-wire.js';
import { toolNameOf } from './tool-names.js';
import { forStrictTemplate, withUserTurn, withoutSystemRole } from '../context/notice-placement.js';
import type { ContextMessage } from '../context/types.js';

/**
 * Not a field of the body: the ids of the messages' tool calls (and of the tool messages answering them),
 * which Mistral's API and Mistral's chat templates take only as 9 letters and digits ("Tool call id was
 * call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9."). Ids another provider gave — a
 * conversation a fallback brings from an OpenAI model, or a client that switched models — are sent as
 * such ids, the same for the same id (withToolCallIdsAsMistralTakes).
 */
export const toolCallIdsField = 'messages[].tool_calls[].id';

/**
 * Not a field of the body: the thought signature Gemini 3 gives the first tool call of each answer
 * (`extra_content.google.thought_signature` on Google's OpenAI-compatible endpoint) and refuses that
 * call back without ("Function call is missing a thought_signature in functionCall parts."). A call
 * another model made (a fallback, a client that switched models), or one a client or a bridge sent back
 * without it, gets the signature Google documents for calls it has none of (withThoughtSignatures).
 */
export const thoughtSignaturesField = 'messages[].tool_calls[].extra_content.google.thought_signature';

/**
 * Not a field of the body: the images of tool results, which the gateway sends a Chat Completions
 * provider in a user message after them (tool-media.ts). A model that takes no images refuses them (vLLM:
 * "<model> is not a multimodal model"; DeepSeek's API: "unknown variant `image_url`, expected `text`"):
 * it gets each named in its result instead, as `[image: not shown, the model takes no images]`.
 */
export const toolImagesField = 'messages[].tool.images';

/**
 * Not a field of the body: the file parts of its messages (a PDF a client attached: OpenAI's `file` part,
 * what the bridges make of a Responses `input_file` and a Messages `document`), which a model that takes
 * none refuses (DeepSeek's API: "unknown variant `file`, expected `text`"; vLLM: "Unsupported chat content
 * part type: 'file'"). Every later request of the conversation would be refused the same: each file is
 * named where it stood instead, a text file given as its text (tool-media.ts withFilesNamed).
 */
export const filesField = 'messages[].files';

/**
 * Not a field of the body: how many images the request carries, which a provider caps (Anthropic at 100:
 * "Too much media: 0 document pages + 103 images > 100"; vLLM at its --limit-mm-per-prompt: "At most 5
 * image(s) may be provided in one request."). The fix says how many fit (`atMost`): the newest are kept
 * and each older one is named where it stood (tool-media.ts withImagesAtMost). A long agent session that
 * reads screenshots passes any such cap, and every later request of it would be refused the same.
 */
export const imageCountField = 'messages[].images';

/**
 * Not a field of the body: how large the images of a request of many may be. Anthropic takes an image of
 * up to 8000 pixels a side, and only up to 2000 in a request of more than 20 images ("At least one of the
 * image dimensions exceed max allowed size for many-image requests: 2000 pixels"): a screenshot of a
 * phone or a large display, once the session has read 20 pictures. The fix says the size (`atMost`):
 * each larger image is named where it stood, or, when the newest is one, the newest 20 are kept
 * (tool-media.ts withImagesWithin).
 */
export const imageSizeField = 'messages[].images.size';

/**
 * Not fields of the body: the largest image a model takes at all — Anthropic's 8000 pixels a side ("At
 * least one of the image dimensions exceed max allowed size: 8000 pixels") and 5 MB of base64 ("image
 * exceeds 5 MB maximum: 5312420 bytes > 5242880 bytes"). A screenshot of a large display read once stays
 * in the conversation and every later request of it was refused the same. The fix says the size
 * (`atMost`): each larger image is named where it stood (tool-media.ts withImagesNoLargerThan).
 */
export const imageSideField = 'messages[].images.side';
export const imageBytesField = 'messages[].images.bytes';

/**
 * Not a field of the body: its size in bytes, which providers cap apart from the window — Anthropic at
 * 32 MB ("request_too_large": "Request exceeds the maximum size"), GitHub Copilot's chat endpoint at about
 * 5.2 MB, a proxy or a server at its own (any 413 that is not about tokens). Pictures and PDFs are what
 * make a conversation that large: a session of screenshots passes the cap, and every later request of it
 * would be refused the same. The refusal gives no number: the fix's `atMost` is 90% of the body refused
 * (chat-turn.ts), lowered again by each later refusal; the oldest images and files are named where they
 * stood until the body is within it (tool-media.ts withImagesWithinBytes).
 */
export const requestBytesField = 'request.bytes';

/**
 * Not a field of the body: the cache breakpoints of a chat request's content parts (`cache_control`, which
 * OpenRouter and LiteLLM send on to Claude), which OpenRouter refuses for a model none of whose endpoints
 * caches so, with a 404 ("No endpoints found that support cache control": Kimi K2 and Gemini 2.5 from
 * Roo Code and Claude Code's routers, musistudio/claude-code-router#207, RooCodeInc/Roo-Code#2913,
 * BerriAI/litellm#12787). Every request failed. Each mark is left out, on the wire only
 * (cache-breakpoints.ts chatWithoutCacheMarks): such a model caches by itself or not at all.
 */
export const cacheMarksField = 'messages[].content[].cache_control';

/** Google's stand-in for the signature of a call Gemini did not make (ai.google.dev thought signatures). */
const noThoughtSignature = 'skip_thought_signature_validator';

/**
 * Fields of a message, or of a tool call, that are another answer's leftovers rather than the
 * conversation: what a thinking model gave (its reasoning under either name, OpenRouter's details),
 * what OpenAI's answers carry beside the text (`refusal`, `annotations`, `audio`), the OpenAI SDK's
 * parse helper's `parsed`, Gemini's `extra_content` on a call, a stream's `index` of a call. A provider
 * whose schema has no place for them (Mistral's API refuses every field it does not know, in messages too)
 * could not read them: left out when refused, as `messages[].<field>` (or `messages[].tool_calls[].<field>`).
 */
const leftoverFields = new Set([
  'reasoning_content',
  'reasoning',
  'reasoning_details',
  'refusal',
  'annotations',
  'audio',
  'parsed',
  'extra_content',
  // A stream's call index, which a client that joins a stream's calls keeps on them (FastGPT: OpenAI refuses
  // it, "Unknown parameter: 'messages[2].tool_calls[0].index'.").
  'index',
]);

/**
 * The fix for a field a provider refuses in a message (`path` is where in the message: the field, or
 * `tool_calls` and the field of a call); undefined: the client's to fix.
 */
export function fixForMessageField(path: readonly string[]): FieldFix | undefined {
  const field = path.at(-1);
  if (path.length === 1 && field === 'name') return { field: messageNameField };
  // A content part's cache breakpoint (a client's, or one the Messages bridge carries for Claude), refused
  // wherever it stood: no mark is sent, as for OpenRouter's 404 (cacheMarksField).
  if (field === 'cache_control') return { field: cacheMarksField };
  if (field === undefined || !leftoverFields.has(field)) return undefined;
  if (path.length === 1) return { field: `messages[].${field}` };
  return path.length === 2 && path[0] === 'tool_calls'
    ? { field: `messages[].tool_calls[].${field}` }
    : undefined;
}

/**
 * The messages without the fields `fixes` leave out of them (fixForMessageField); the messages that
 * hold none are the same objects (their bytes are copied), and the same array when none does.
 */
export function withoutMessageFields(
  messages: ContextMessage[],
  fixes: readonly FieldFix[],
): ContextMessage[] {
  const own = new Set<string>();
  const ofCalls = new Set<string>();
  for (const { field } of fixes)
    if (field.startsWith('messages[].tool_calls[].')) {
      const name = field.slice('messages[].tool_calls[].'.length);
      if (leftoverFields.has(name)) ofCalls.add(name);
    } else if (field === messageNameField) own.add('name');
    else if (field.startsWith('messages[].') && leftoverFields.has(field.slice('messages[].'.length)))
      own.add(field.slice('messages[].'.length));
  if (own.size === 0 && ofCalls.size === 0) return messages;
  const ownNames = [...own];
  const callNames = [...ofCalls];
  let out: ContextMessage[] | undefined;
  messages.forEach((message, index) => {
    const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as unknown[]) : undefined;
    const callsChange = calls?.some(
      (call) => typeof call === 'object' && call !== null && callNames.some((name) => name in call),
    );
    if (!callsChange && !ownNames.some((name) => name in message)) return;
    const changed: ContextMessage = Object.assign({}, message);
    for (const name of ownNames) delete changed[name];
    if (callsChange && calls !== undefined)
      changed.tool_calls = calls.map((call) => {
        if (typeof call !== 'object' || call === null) return call;
        const kept = Object.assign({}, call) as Record<string, unknown>;
        for (const name of callNames) delete kept[name];
        return kept;
      }) as NonNullable<ContextMessage['tool_calls']>;
    out ??= [...messages];
    out[index] = changed;
  });
  return out ?? messages;
}

/**
 * A tool's description longer than the provider takes: GitHub Copilot's chat endpoint and Azure OpenAI
 * take 1,024 characters ("Invalid 'tools[13].function.description': string too long. Expected a string
 * with maximum length 1024, but got a string with length 1103 instead.": an MCP server's tools,
 * getsentry/sentry-mcp#106, higebu/3gpp-mcp#238), and one such tool fails every request. The fix says
 * the length (`atMost`): a longer description is cut at the last white space before it, and the rest is
 * given as the description of the tool's parameters, which has no such limit
 * (withToolDescriptionsWithin).
 */
export const toolDescriptionsField = 'tools[].function.description';

/**
 * Not a field of the body: the JSON schemas of the tools' parameters, of which each provider takes its
 * own — OpenAI refuses an array without `items` ("Invalid schema for function 'X': In
 * context=('properties', 'values'), array schema missing items."), Anthropic alternatives at the top
 * ("input_schema does not support oneOf, allOf, or anyOf at the top level"). An MCP server's tools fail
 * every request so; once refused, the model's schemas have what they refuse repaired, all else as it
 * was (tool-schemas.ts repairedParameters).
 */
export const toolSchemasField = 'tools[].function.parameters';

/**
 * Not a field of the body: the keywords of the tools' schemas, of which Gemini takes those of its Schema
 * object only ("Unknown name \"additionalProperties\" at 'tools[0].function_declarations[0].parameters':
 * Cannot find field."; a list of types, an enum of numbers). Once refused, the model's schemas are
 * written in that subset (tool-schemas.ts portableParameters).
 */
export const toolSchemaKeywordsField = 'tools[].function.parameters.keywords';

/**
 * Not a field of the body: the tools' schemas in Moonshot's flavored JSON Schema, which its validator
 * holds Kimi's tools to ("tools.function.parameters is not a valid moonshot flavored json schema,
 * details: <At path 'root': when using anyOf, type should be defined in anyOf items instead of the
 * parent schema>"; an enum of no type, a schema of `true`, references into `definitions`). Once refused,
 * the model's schemas are written so, each fault at once (tool-schemas.ts mfjsParameters).
 */
export const toolSchemaMfjsField = 'tools[].function.parameters.mfjs';

/**
 * Not a field of the body: how many tools it offers, which OpenAI caps at 128 ("Invalid 'tools': array too
 * long. Expected an array with maximum length 128, but got an array with length 142 instead." — GitHub
 * Copilot's GPT-5.1 in OpenCode, anomalyco/opencode#4909; Claude Code's tools and MCP servers on GPT-5
 * through a router, musistudio/claude-code-router#686). An agent with many MCP servers failed every
 * request so. The fix says how many (`atMost`): the tool the request's `tool_choice` names, the gateway's
 * recall tool and the tools the conversation called, newest first, are kept, then the others in the
 * client's order (withToolsAtMost).
 */
export const toolCountField = 'tools.length';

/**
 * Not a field of the body: a choice of tools left to the model, which vLLM started without
 * `--enable-auto-tool-choice` refuses ("\"auto\" tool choice requires --enable-auto-tool-choice and
 * --tool-call-parser to be set": vllm-project/vllm#9986) — and it takes `tool_choice` absent as "auto", so
 * every request that offered tools failed. Asked with "none" instead: the model's template still shows it
 * the tools, and the calls it writes as text are read as calls (text-tool-calls.ts, `text_tool_calls`).
 */
export const autoToolChoiceField = 'tool_choice.auto';

/**
 * Not a field of the body: a tool choice of `auto` named, which a relay that writes a chat request for the
 * Responses API turns into an object that API refuses ("Invalid value: 'auto'. Supported values are:
 * 'code_interpreter', …" at `tool_choice.type`: CLIProxyAPI in front of gpt-5.6-sol, Kilo-Org/kilocode#13082)
 * — and Kilo names it with every request. Left out: `auto` is the default wherever tools are offered.
 */
export const defaultToolChoiceField = 'tool_choice.default';

/**
 * Not a field of the body: the hottest temperature the model takes. OpenAI's API takes up to 2, and chat
 * clients send 1.2 or 1.5 (a preset, an app's creative mode); Claude takes up to 1 and refuses more
 * ("temperature: range: 0..1", and so Claude on Bedrock behind a relay): routed to Claude, every request of
 * such a client failed. The fix says the hottest (`atMost`): a request asking for more asks for that.
 */
export const temperatureRangeField = 'temperature.value';

/**
 * Not a field of the body: the longest answer the model gives, which a request's `max_tokens` (or
 * `max_completion_tokens`) may not pass — DeepSeek's 8,192 ("Invalid max_tokens value, the valid range of
 * max_tokens is [1, 8192]"), OpenAI's 16,384 for GPT-4o ("max_tokens is too large: 32000. This model
 * supports at most 16384 completion tokens"), Anthropic's per model ("max_tokens: 128001 > 64000, which is
 * the maximum allowed number of output tokens for claude-opus-4-5"). Claude Code asks for 32,000 on any
 * model, and every request of it failed so (Gitlawb/openclaude#35, mnfst/llm-gateway#1177). The fix says
 * the longest (`atMost`): a request asking for more asks for that, planned so (attempt-ladder.ts).
 */
export const answerTokensField = 'max_tokens.value';

/**
 * Not a field of the body: messages of no text, which Gemini refuses ("Unable to submit request because
 * it has an empty text parameter. Add a value to the parameter and try again." on its OpenAI-compatible
 * endpoint: microsoft/autogen#5762, FoundationAgents/OpenManus#913; "contents.parts must not be empty").
 * An agent's command that printed nothing (`mkdir`, `git add`) gives a tool result of `""`, and every
 * later request of the conversation was refused. Each such message is given text instead
 * (withEmptyTextsFilled).
 */
export const emptyTextField = 'messages[].content.empty';

/**
 * Not a field of the body: a message whose content is null or left out. OpenAI takes that beside tool
 * calls only, and refuses it elsewhere ("Invalid value for 'content': expected a string, got null.":
 * docker-agent#63) — an answer of a refusal (`refusal` beside no content) or of reasoning only, replayed by
 * the client or from a session, failed every later request, on OpenAI itself; Ollama refuses it likewise
 * ("invalid message content type: <nil>"), LM Studio beside calls too ("'content' field must be a string
 * or an array of objects": lmstudio-bug-tracker#261, the OpenAI client's own answer to a tool call sent
 * back), a serde server a content left out ("missing field `content`": lablup/mlxcel#91). Each such
 * content is sent as the empty text (withNullContentsAsText).
 */
export const nullContentField = 'messages[].content.null';

/**
 * Not a field of the body: the messages' roles in an order a chat template refuses. Chat templates of
 * open models as vLLM and llama.cpp serve them take one system message, first — Qwen 3.5's and 3.6's
 * ("System message must be at the beginning.": vllm-project/vllm#41114, a second system message first
 * too), Qwen 3's no developer role ("Unexpected message role."), Mistral's and Devstral's user and
 * assistant messages alternating ("After the optional system message, conversation roles must alternate
 * user/assistant/user/assistant/..."), and Mistral's API no user message right after tool results
 * ("Unexpected role 'user' after role 'tool'": zed-industries/zed#37021, a call the user cancelled).
 * Clients send them so — two system prompts first (oh-my-pi#958), a task instruction mid-conversation
 * (Hermes Agent), Dify's agents, Zed's agent panel — and every request failed. The messages are sent as
 * such a template takes them (notice-placement.ts's forStrictTemplate), as a bridged request to such a
 * model already is.
 */
export const strictTemplateField = 'messages[].roles';

/**
 * Not a field of the body: a user message, which GLM's API refuses a conversation without ("[1214] The
 * messages parameter is illegal. Please check the documentation.": a Claude Code conversation whose
 * prompt the client's compaction left out is the system prompt, then calls and their results only —
 * diegosouzapw/OmniRoute#11209 verified it live), nor Qwen on Alibaba's DashScope ("The input messages do not
 * contain elements with the role of user": coze-dev/coze-studio#2557). A conversation with none is given one before the model's
 * first message (notice-placement.ts's withUserTurn); one that has one goes as it was.
 */
export const userTurnField = 'messages[].role.user';

/**
 * Not a field of the body: a conversation's tool calls and results in a request that offers no tools,
 * which Bedrock refuses ("The toolConfig field must be defined when using toolUse and toolResult content
 * blocks.": as Claude is served behind LiteLLM or aws-samples/bedrock-access-gateway, #239; langgenius/dify#17545)
 * and Claude did ("Requests which include tool_use or tool_result blocks must define tools."). A client's
 * compaction or summary of its conversation (OpenCode's, a side chat's), or an agent's last step without
 * tools, sends one. The calls are told in their answers' text and the results as user text where they
 * stood, on the wire only, when the request offers no tools (withToolHistoryAsText).
 */
export const toolHistoryField = 'messages[].tool_calls.without_tools';

/**
 * Not a field of the body: a call sent back whose arguments are not a JSON object. A model's answer cut at
 * its max_tokens in the middle of a call, or one that wrote a quote unescaped, leaves such a call in the
 * conversation — stored in a session, replayed by the client — and vLLM reads every call's arguments as
 * JSON before its template runs ("Unterminated string starting at: line 1 column 14 (char 13)":
 * vllm-project/vllm#43995, #48922), as llama.cpp's server does ("Failed to parse tool call arguments as
 * JSON", a 500 until ggml-org/llama.cpp#25583), Kimi ("arguments must be a valid JSON object string") and
 * NEAR AI: every later request of the conversation failed. Such a call is sent with the arguments `{}`
 * (withToolArgumentsAsObjects); its result, which says what became of it, goes as it was.
 */
export const toolArgumentsField = 'messages[].tool_calls[].function.arguments';

/**
 * Not a field of the body: a tool choice given as an object — a named tool, allowed tools — which LM Studio's
 * server refuses, taking only `none`, `auto` and `required` ("Invalid tool_choice type: 'object'. Supported
 * string values: none, auto, required"): structured output by a tool (instructor, LangChain's
 * with_structured_output) and an agent's forced step failed on every request. Asked as `required` with that
 * tool (or those allowed) alone offered: the call is still forced (withToolChoiceAsString).
 */
export const toolChoiceObjectField = 'tool_choice.object';

/**
 * Not a field of the body: a forced tool choice (`required`, a named tool), which a model that thinks on
 * every request does not take — DeepSeek V4 ("Thinking mode does not support this tool_choice":
 * deepseek-ai/DeepSeek-V3#1376, BerriAI/litellm#37470), Qwen on Alibaba DashScope ("The tool_choice
 * parameter does not support being set to required or object in thinking mode": cloudwego/eino#994),
 * Claude with thinking on ("Thinking may not be enabled when tool_choice forces tool use."). Agent
 * frameworks force one for structured output and to make an agent act, and every such request failed. The
 * choice is left to the model: `auto`, a named tool offered alone (withToolChoiceUnforced).
 */
export const toolChoiceField = 'tool_choice.forced';
/**
 * The value of a forced choice's fix learned from Claude's refusal, which is of a tool forced with thinking
 * on only: natively to Claude, the choice is left to it only while thinking is on (withAnthropicFixes).
 */
export const thinkingToolChoice = 'thinking';

/**
 * Not a field the model refuses: thinking another model signed, in the conversation. Anthropic refuses a
 * thinking block whose signature it did not give ("messages.1.content.0: Invalid `signature` in
 * `thinking` block"; its data, "Invalid data in redacted_thinking block") — z.ai's GLM or MiniMax
 * thought there before a switch to Claude (tombii/better-ccflare#52, decolua/9router#922), a fallback
 * carried on. Never learned: it is the conversation's, not the model's. The request is made again without
 * that thinking (AttemptState foreignThinking: first what a tool loop being answered does not need, then
 * all of it), up to twice (recovery-policy.ts).
 */
export const foreignThinkingField = 'messages[].thinking.signature';

/**
 * Not a field of the body: an answer sent back without the reasoning a thinking model wants back with it.
 * DeepSeek V4 ("The `reasoning_content` in the thinking mode must be passed back to the API.":
 * earendil-works/pi#3636), its reasoner before it ("Missing `reasoning_content` field in the assistant
 * message at message index 4": continuedev/continue#10193) and Kimi ("reasoning_content is missing in
 * assistant tool call message": continuedev/continue#11600) refuse a tool loop whose answers come back
 * without it, and a client that keeps only OpenAI's fields of an answer drops it: every request of its
 * tool loops failed. A session and the bridges give the reasoning back; what none holds is sent with a
 * stand-in of one space (which they take, and not an empty one: NousResearch/hermes-agent#17341)
 * (withReasoningStandIns).
 */
export const reasoningStandInField = 'messages[].reasoning_content.missing';

/**
 * Not a field of the body: a conversation that ends with an answer (a prefill: the client asks the model
 * to go on from it), which Claude Sonnet and Opus 4.6 and later refuse ("This model does not support
 * assistant message prefill. The conversation must end with a user message.": through OpenRouter and
 * GitHub Copilot too, NousResearch/hermes-agent#50055, aj47/SpeakMCP#1037; an OpenCode subagent's history
 * after context pruning, cortexkit/magic-context#511), as Mistral's API does ("Expected last role User or
 * Tool (or Assistant with prefix True) for serving but got assistant"). A user message asking the model to
 * go on from its answer is sent after it (withContinueAfterPrefill).
 */
export const prefillField = 'messages[].prefill';

/**
 * A message's `name` (who spoke: an agent's name, which LangChain's agents, AutoGen and Semantic Kernel
 * give each answer, langchain-ai/langchain#34254), which a provider does not take: xAI's on any message but
 * the user's ("Only message of role user can have a name.": pipecat-ai/pipecat#2274), Mistral's on any
 * but a tool result, Perplexity's and strict gateways' at all (TencentCloud/Octop#807: every request after
 * an agent's first answer failed). Left out of every message (withoutMessageFields): such a provider does
 * not read them.
 */
export const messageNameField = 'messages[].name';

/**
 * Not a field of the body: a message's `name` of other than letters, digits, `_` and `-`, which OpenAI
 * refuses ("Invalid 'messages[2].name': string does not match pattern. Expected a string that matches the
 * pattern '^[a-zA-Z0-9_-]+$'.": an agent named "Research Agent", microsoft/semantic-kernel#9340,
 * microsoft/autogen#3582). Each name is written to fit (withNamesFitted), so that speakers stay told apart.
 */
export const messageNamePatternField = 'messages[].name.pattern';

/** What the model is asked after an answer a conversation ends with, where it takes no prefill. */
export const continueText = 'Continue your last message from exactly where it ends, without repeating it.';

/**
 * Not a field of the body: the `developer` role, which OpenAI's newer models take in place of `system`
 * and which Codex and the AI SDK send them — and which DeepSeek's API refuses ("messages[1].role: unknown
 * variant `developer`, expected one of `system`, `user`, `assistant`, `tool`": Codex on DeepSeek V4,
 * icebear0828/codex-proxy#589, earendil-works/pi#1048). Every request of such a client failed. Each
 * developer message is sent as a system message where it stood (withDeveloperAsSystem).
 */
export const developerRoleField = 'messages[].role.developer';

/**
 * Not a field of the body: the system role, which Gemma's templates do not have ("System role not
 * supported" as vLLM and SGLang serve Gemma 2, huggingface/chat-ui#1386) nor Gemma on Google's API
 * ("Developer instruction is not enabled for models/gemma-3-27b-it": lobehub/lobehub#7128,
 * google/adk-python#3900 — every agent framework sends a system prompt). Every request with one failed.
 * The system prompt is sent at the start of the first user message, as Google's Gemma integration does
 * (notice-placement.ts's withoutSystemRole).
 */
export const systemRoleField = 'messages[].role.system';

/**
 * Not a field of the body: a message's content given as text parts (`[{type: "text", text}]`), which
 * OpenAI's spec allows and some servers refuse ("messages[0].content: invalid type: sequence, expected a
 * string" from a serde server, 0x676e67/duckai#16; Azure's "Invalid type for 'messages[0].content':
 * expected a string, but got an array instead", danny-avila/LibreChat#3111; "tool messages must contain
 * string content", Neroued/ninfer#57 — Qwen Code sends its tool results so; Groq's "('messages.0.content' :
 * value must be a string)" of any message but the user's, OpenHands/OpenHands#4643). Every request of such a
 * client failed. A content of text parts only is sent as their texts, one per line (withTextPartsAsText).
 */
export const textPartsField = 'messages[].content[]';

/**
 * Not a field of the body: structured output by a JSON Schema (`response_format: {type: "json_schema"}`),
 * which the AI SDK's and LangChain's structured output and Codex's `--output-schema` ask for, and which
 * DeepSeek's API refuses ("This response_format type is unavailable now": llm-exe/llm-exe#662,
 * UKGovernmentBEIS/inspect_ai#4916) — it takes JSON mode (`json_object`) only, with the word "json" in
 * the prompt. Every such request failed. It is asked in JSON mode with the schema in its system message
 * (withResponseFormatAsTaken): the answer is JSON the schema describes, no longer enforced by the provider.
 */
export const jsonSchemaField = 'response_format.json_schema';

/**
 * Not a field of the body: JSON mode (`response_format: {type: "json_object"}`, which the AI SDK's
 * OpenAI-compatible provider sends for structured output, and LangChain's JSON mode), which LM Studio
 * refuses — it takes a JSON Schema only ("'response_format.type' must be 'json_schema' or 'text'":
 * lmstudio-ai/lmstudio-bug-tracker#189, LoadShine/tada#16, lfnovo/esperanto#46) — as OpenAI's and Azure's
 * older models do ("Invalid parameter: 'response_format' of type 'json_object' is not supported with this
 * model."). Every such request failed. JSON mode is asked as a JSON Schema of any object, and a `text`
 * format (the default, which LM Studio's earlier versions refused too) left out
 * (withResponseFormatAsTaken). With jsonSchemaField learned too, neither is taken: as responseFormatField.
 */
export const jsonModeField = 'response_format.json_object';

/**
 * `response_format` itself, which some servers take in no form ("'response_format' is not supported":
 * GPT4All, rspamd/rspamd#5276; "Unsupported parameter: response_format": the ChatGPT Codex backend behind
 * a relay, router-for-me/CLIProxyAPI#2352): left out, and what it asked told at the end of the system
 * message instead — the schema (jsonSchemaTold), or to answer in JSON (jsonModeText) when no message says
 * "json" (withResponseFormatAsTaken).
 */
export const responseFormatField = 'response_format';

/**
 * Not a field of the body: structured output beside tools, which Gemini refuses ("Function calling with a
 * response mime type: 'application/json' is unsupported", also "Tool use with…": openai/openai-agents-python#656,
 * googleapis/python-genai#867, Simpleyyt/ai-manus#101) — the Agents SDK sends both for an agent with tools
 * and an output type, as does the AI SDK's structured output with tools. A request with tools sends no
 * `response_format`, what it asked told at the end of the system message (as responseFormatField); one
 * without tools sends it as it was (formatsTakenWith).
 */
export const responseFormatWithToolsField = 'response_format.with_tools';

/**
 * Stop sequences, which OpenAI's reasoning models take none of ("Unsupported parameter: 'stop' is not
 * supported with this model.": GPT-5 and later, o3, o4-mini — smolagents' CodeAgent, LangChain's ReAct
 * agents, CrewAI, Flowise and Dify sent them, and every request failed: huggingface/smolagents#1893,
 * crewAIInc/crewAI#2738, FlowiseAI/Flowise#5046), nor xAI's ("Argument not supported on this model: stop").
 * Left out, and held by the gateway: each choice's text cut where the first of them begins
 * (answer-stops.ts, heldStopsOf).
 */
export const stopField = 'stop';

/**
 * More stop sequences than the provider takes: OpenAI takes 4 ("Invalid 'stop': array too long. Expected
 * an array with maximum length 4, but got an array with length 5 instead."; a Messages client's
 * `stop_sequences`, of which Anthropic takes more). The first that many sent, every one held by the
 * gateway (heldStopsOf).
 */
export const stopCountField = 'stop[]';

/** A field to rename (its value kept), or to leave out when `renameTo` is undefined. */
export interface FieldFix {
  field: string;
  renameTo?: string;
  /** A number the provider caps (images in a request, pixels a side, bytes: the image fields above). */
  atMost?: number;
  /**
   * One value of the field: the `anthropic-beta` flag refused (anthropicBetaField; none: all of them); for
   * an effort (effortField, `reasoning_effort`) those the model takes, comma-separated (none: no effort);
   * for content blocks (blockTypesField) the types the upstream takes, comma-separated.
   */
  value?: string;
  /**
   * A refusal for the key the request went with (its plan, its credits), not for the model: kept for the
   * model with that key (keyScopeOf) — the upstream's when the gateway's own key goes to it, else the
   * client's own key's, which says nothing of the next client's.
   */
  ofKey?: true;
}

/**
 * Where a model's fixes for one key are kept (FieldFix.ofKey): under the upstream's name when the gateway
 * sends it its own key, else beside it for the client's key that reaches it (the tenant, a digest of it).
 */
export function keyScopeOf(upstream: { name: string; apiKey: string | undefined }, tenant: string): string {
  return upstream.apiKey !== undefined ? upstream.name : `${upstream.name}#key:${tenant}`;
}

/** A model's fixes for a request: the model's, and those of the client's own key (keyScopeOf) after them. */
export function fixesForKey(
  fixesOf: (upstream: string, model: string) => readonly FieldFix[],
  upstream: { name: string; apiKey: string | undefined },
  tenant: string,
  model: string,
): readonly FieldFix[] {
  const fixes = fixesOf(upstream.name, model);
  if (upstream.apiKey !== undefined) return fixes;
  const ofKey = fixesOf(keyScopeOf(upstream, tenant), model);
  return ofKey.length === 0 ? fixes : fixes.length === 0 ? ofKey : [...fixes, ...ofKey];
}

/**
 * Not a field of the body: the `anthropic-beta` header's flags an Anthropic-compatible upstream refuses —
 * Vertex and LiteLLM before it ("Unexpected value(s) `prompt-caching-scope-2026-01-05` for the
 * `anthropic-beta` header. … try again without the header.": QuantumNous/new-api#2975), Bedrock ("invalid
 * beta flag", every flag but a few: anthropics/claude-code#49370), relays in their own words. Claude Code
 * sends its flags with every request, so every request failed. The flags named are left out (FieldFix.value),
 * or the whole header when the refusal names none (withBetaFixes).
 */
export const anthropicBetaField = 'anthropic-beta';

/** The `anthropic-beta` flag that asks Claude's 1M window (docs/budgeting.md#claudes-1m-window). */
export const longContextBetaFlag = 'context-1m-2025-08-07';

/** What asks Claude's fast mode: `speed: "fast"` and its `anthropic-beta` flag (docs/budgeting.md#refused-fields). */
export const fastModeFixes: readonly FieldFix[] = [
  { field: 'speed', ofKey: true },
  { field: anthropicBetaField, value: 'fast-mode-2026-02-01', ofKey: true },
];

/**
 * The members of a Messages request it cannot do without, or that the gateway writes from the chat
 * request (and those of a chat request the answer cannot do without, where a server words its refusal so):
 * never left out as refused.
 */
const anthropicCoreMembers = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'tools',
  'tool_choice',
  'stream',
  'temperature',
  'top_p',
  'stop_sequences',
  'stop',
  'n',
  'response_format',
  // Fields of Chat Completions that ask for part of the answer (its log probabilities, its audio, the
  // legacy functions a model calls): the client asked them, and an answer without them is not what it asked.
  'functions',
  'function_call',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'modalities',
  'audio',
  'web_search_options',
]);

/**
 * Members of a Messages request, and of its tool definitions, that an Anthropic-compatible upstream
 * without the feature refuses ("context_management: Extra inputs are not permitted", Claude on Vertex and
 * Bedrock: anthropics/claude-code#21612, #49548; "tools.11.custom.defer_loading: Extra inputs are not
 * permitted", #82549; "tools.3.custom.input_examples: …", #11678) — Claude Code sends them with every
 * request, and with their `anthropic-beta` flags left out (anthropicBetaField) Bedrock refuses them so
 * (Wei-Shaw/sub2api#2726); GitHub Copilot's refuses `output_config` (anomalyco/opencode#24527), and
 * OpenRouter's tools loaded on demand for a model not Anthropic's ("Deferred custom tools are only supported
 * on Anthropic models and on Anthropic-compatible provider endpoints that implement deferral."); Bedrock
 * refuses strict tool use for some models ("tools.0.custom.strict: …": Sonnet 5, Opus 5.5,
 * BerriAI/litellm#33193, lobehub/lobehub#19876). Each asks for something the answer can do without:
 * clearing old thinking or tool results, how hard to think, tools loaded on demand, examples of a tool's
 * input, a tool's input held to its schema by the sampler (the schema is still given). Left out when
 * refused, of the request and of every tool (withAnthropicFixes); the fields are the member's name
 * (`context_management`, `output_config`) and `tools[].<member>`. So is any other member of the request
 * but those it cannot do without (anthropicCoreMembers): a feature the upstream does not offer (Claude
 * Code's `diagnostics` on Vertex, anthropics/claude-code#82539; an `instructions` a proxy sent,
 * anomalyco/opencode#4282).
 */
const isRefusableMember = (field: string): boolean => /^\w+$/.test(field) && !anthropicCoreMembers.has(field);

/** The members of a tool definition left out when refused (above): the rest of a tool is what makes it. */
const anthropicOptionalToolMembers = new Set([
  'defer_loading',
  'input_examples',
  'eager_input_streaming',
  'strict',
  // A tool's cache breakpoint, which Fireworks' Anthropic-compatible endpoint refuses ("Extra inputs are not
  // permitted, field: 'tools[4].cache_control'"): the tools are then not cached apart, as there.
  'cache_control',
]);

/** The field of a fix that leaves `member` out of every tool (withAnthropicFixes reads it back). */
const toolMemberPrefix = 'tools[].';
export const toolMemberField = (member: string): string => `${toolMemberPrefix}${member}`;

/**
 * Not a field of the body: the types of content block an Anthropic-compatible upstream takes, which
 * Volcano Engine's Ark lists when it refuses another ("invalid value: `document`, supported values are:
 * `text`, `thinking`, `image`, 'tool_use' and `tool_result`": a PDF Claude Code read,
 * farion1231/cc-switch#1519; a web search Claude ran, Wei-Shaw/sub2api#3677; a tool search's result,
 * anthropics/claude-code#30912), DeepSeek's too, and a proxy's schema names (its pydantic union of
 * `ClaudeContentBlockText`, …: ModelScope). Every later
 * request of the conversation failed. The fix says the types taken (FieldFix.value, comma-separated):
 * each block of another type is told as text where it stood (block-stand-ins.ts).
 */
export const blockTypesField = 'messages[].content[].type';

/**
 * Not a field of the body: the types of block a tool result may hold, where an upstream takes fewer than
 * in a message (OpenCode Zen's: "tool_result content type must be \"text\" or \"image\", got
 * \"document\"" — a PDF a `read` tool gave, anomalyco/opencode#43502). Each other block in a result is
 * told as text; a message's own go as they were.
 */
export const resultBlockTypesField = 'messages[].content[].content[].type';

/**
 * Not a field of the body: a system message in the conversation (Anthropic's mid-conversation system
 * messages, which Claude Code sends with a model it knows as recent), which Anthropic-compatible endpoints
 * that predate them refuse — DeepSeek's ("messages[1].role: unknown variant `system`, expected `user` or
 * `assistant`": deepseek-ai/DeepSeek-V3#1369), a FastAPI one's ("Input should be 'user' or 'assistant'":
 * Zhipu's GLM endpoint, zai-org/GLM-5#74; Alishahryar1/free-claude-code#1041, ogx-ai/ogx#5982), MiniMax's
 * ("chat content has invalid message role: system (2013)"), Anthropic's for a model that takes none
 * ("messages.1.role: Input should be 'user' or 'assistant'") and its older words ("Unexpected role
 * \"system\""). Every request failed. Each is sent as user text where it stood (anthropic-wire.ts).
 */
export const systemMessagesField = 'messages[].role.system.mid_conversation';

/**
 * Not a field of the body: Claude Code's billing attribution, the first line of its system prompt
 * (`x-anthropic-billing-header: cc_version=…`), which Claude on Bedrock — behind a relay such as LiteLLM or
 * claude-code-router — and GitHub Copilot's Messages endpoint refuse ("x-anthropic-billing-header is a
 * reserved keyword and may not be used in the system prompt.": musistudio/claude-code-router#1161,
 * ericc-ch/copilot-api#174, anthropics/claude-code#24168). Every request of Claude Code failed. The line is
 * then left out of the system prompt (anthropic-wire.ts withoutBillingAttribution); Anthropic itself,
 * which reads it, keeps getting it.
 */
export const billingAttributionField = 'system.billing_attribution';

/**
 * Not fields of the body: members of a cache breakpoint's mark an Anthropic-compatible upstream does not
 * know — its `ttl` (`{"type": "ephemeral", "ttl": "1h"}`, which Claude Code asks in its main loop), which
 * Claude on Bedrock before its hour-long cache refuses ("messages.0.content.3.text.cache_control.ephemeral.ttl:
 * Extra inputs are not permitted": anthropics/claude-code#12122, BerriAI/litellm#15880), and its `scope`
 * (Claude Code's with its `prompt-caching-scope` flag), which GitHub Copilot's endpoint refuses
 * ("system.1.cache_control.ephemeral.scope: Extra inputs are not permitted": caozhiyuan/copilot-api#145).
 * Every request failed. Each mark is then sent without it, where it stood (cache-breakpoints.ts): without
 * its `ttl`, the 5-minute cache.
 */
const cacheMembers = new Set(['ttl', 'scope']);
const cacheMemberPrefix = 'cache_control.';
export const cacheMemberField = (member: string): string | undefined =>
  cacheMembers.has(member) ? `${cacheMemberPrefix}${member}` : undefined;

/**
 * Not a field of the body: a refusal that names nothing — Kimi's Anthropic endpoint answers every
 * request it does not take with a 400 of one message, "Invalid request Error": Claude Code's tool search
 * (a deferred tool, a `tool_reference` in a tool result: MoonshotAI/kimi-cli#1449, farion1231/cc-switch#2941),
 * its beta features (MoonshotAI/Kimi-K2.5#5, fixed by CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS), and the
 * conversation goes no further. Sent again once in the form every Anthropic-compatible endpoint takes
 * (conservativeAnthropicFixes); those fixes are kept for the model only if that is answered
 * (FieldFixes.forget: chat-turn.ts), else the client gets the refusal and nothing is learned.
 */
export const unexplainedRefusalField = 'request.unexplained';

/**
 * What an `anthropic` upstream is sent again after a refusal that names nothing: the Messages API as its
 * compatible endpoints first took it — no `anthropic-beta` flag, no `context_management` or
 * `output_config`, no member of a tool but its name, description and schema (deferred tools sent whole,
 * Anthropic's tool search left out), blocks of the types of the API's first years only (a tool search's
 * result, a server tool's blocks told as text where they stood; text and images in a tool result), a
 * system message in the conversation as user text, cache marks of no `ttl` or `scope`.
 */
export const conservativeAnthropicFixes: readonly FieldFix[] = [
  { field: anthropicBetaField },
  { field: 'context_management' },
  { field: 'output_config' },
  ...[...anthropicOptionalToolMembers].map((member) => ({ field: toolMemberField(member) })),
  {
    field: blockTypesField,
    value: 'text,image,document,thinking,redacted_thinking,tool_use,tool_result',
  },
  { field: resultBlockTypesField, value: 'text,image' },
  { field: systemMessagesField },
  ...[...cacheMembers].map((member) => ({ field: `${cacheMemberPrefix}${member}` })),
];

/** The fix for a member of a Messages request (`tools.N.custom.M` for one of a tool) an upstream refused as extra. */
export function fixForAnthropicMember(path: string): FieldFix | undefined {
  const tool = /^tools\.\d+\.(?:custom\.)?(\w+)$/.exec(path)?.[1];
  if (tool !== undefined)
    return anthropicOptionalToolMembers.has(tool) ? { field: toolMemberField(tool) } : undefined;
  return isRefusableMember(path) ? { field: path } : undefined;
}

/**
 * The fix for a field refused by its place, as Fireworks words it — "Extra inputs are not permitted, field:
 * '<path>'", pydantic's error with the place in brackets — on its chat and Anthropic-compatible endpoints,
 * as OpenCode Zen and Go pass it on (of Kimi, GLM, MiniMax), and Venice and Azure AI: a top-level field
 * (`workspace`; one of those above), a member of a message (`messages[2].reasoning`: a leftover), of a call
 * (`messages[3].tool_calls[0].extra_content`) or of a tool (`tools[0].eager_input_streaming`), a content
 * part's cache breakpoint. Undefined: the client's to fix (a member of a message or of a tool of its own).
 */
export function fixForExtraInput(path: string): FieldFix | undefined {
  const parts = path.split(/[.[\]]+/).filter((part) => part !== '');
  const [head, index] = parts;
  if (head === undefined) return undefined;
  if (parts.length === 1) return fixForUnknownField(head) ?? fixForAnthropicMember(head);
  if (index === undefined || !/^\d+$/.test(index)) return undefined;
  const rest = parts.slice(2);
  if (head === 'tools' && rest.length === 1)
    return fixForAnthropicMember(`tools.${index}.${rest[0] as string}`);
  if (head !== 'messages') return undefined;
  return fixForMessageField(rest.filter((part) => !/^\d+$/.test(part)));
}

/**
 * Thinking a Claude model takes in one mode only: Opus 4.7 and later refuse a budget ("\"thinking.type.enabled\"
 * is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" …":
 * zhukunpenglinyutong/jetbrains-cc-gui#1003, AAswordman/Operit#568), Sonnet 4.5 and Haiku 4.5 refuse
 * adaptive thinking ("adaptive thinking is not supported on this model": mnfst/llm-gateway#1928). A
 * client asks the mode of the model it names; a fallback to a model of the other kind — Sonnet 4.5's
 * 200,000 tokens to Opus 4.8's million — was refused. The fields name the mode refused.
 */
export const thinkingEnabledField = 'thinking.type.enabled';
export const thinkingAdaptiveField = 'thinking.type.adaptive';
/**
 * Thinking turned off, which DeepSeek's Anthropic endpoint refuses beside an effort ("thinking options type
 * cannot be disabled when reasoning_effort is set": Claude Code 2.1.166 and later turn it off for every
 * sub-agent, and `CLAUDE_CODE_EFFORT_LEVEL` sets the effort: deepseek-ai/DeepSeek-V3#1397). Left out: the
 * model thinks as it does by default, at the effort asked, as before Claude Code turned it off.
 */
export const thinkingDisabledField = 'thinking.type.disabled';

/**
 * An effort (`output_config.effort`) the model refused, asked as one it takes (FieldFix.value): GitHub
 * Copilot's Opus 4.7 takes `medium` only ("output_config.effort \"high\" is not supported by model
 * claude-opus-4.7; supported values: [medium]": caozhiyuan/copilot-api#190, microsoft/vscode#310826), and
 * Claude without thinking `high` at most ("output_config.effort 'xhigh' is not supported when thinking is
 * disabled on this model. Use effort 'high' or below": anthropics/claude-code#90721).
 */
export const effortField = 'output_config.effort';

/** The efforts Claude and OpenAI's models take (`reasoning_effort`, `output_config.effort`), least first. */
const efforts = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];

/** Claude's efforts up to `ceiling` (none when it is not one). */
export function effortsUpTo(ceiling: string | undefined): string[] {
  const at = ceiling === undefined ? -1 : efforts.indexOf(ceiling);
  return at < 0 ? [] : efforts.slice(efforts.indexOf('low'), at + 1);
}

/**
 * The effort to ask instead of `refused` of a model that takes `supported`: `refused` itself when it is
 * one of them, else the highest of them not above it (the lowest when all are above); undefined when none
 * is an effort.
 */
export function effortInstead(refused: string, supported: readonly string[]): string | undefined {
  const rank = (effort: string) => efforts.indexOf(effort);
  const known = supported.filter((effort) => rank(effort) >= 0).sort((a, b) => rank(a) - rank(b));
  return known.filter((effort) => rank(effort) <= rank(refused)).at(-1) ?? known[0];
}

/** `asked` as a model takes it, by each of its fixes of `field` in turn (the efforts each found it to take). */
function effortTaken(asked: string, fixes: readonly FieldFix[], field: string): string {
  let effort = asked;
  for (const fix of fixes)
    if (fix.field === field && fix.value !== undefined)
      effort = effortInstead(effort, fix.value.split(',')) ?? effort;
  return effort;
}

/**
 * `thinking` as the model takes it: a budget as adaptive thinking (thinkingEnabledField; the effort the
 * client gave, if any, stays in `output_config`), adaptive thinking as a budget of half the answer
 * (thinkingAdaptiveField; none under 1,024 tokens, Anthropic's least, leaves thinking out: undefined).
 */
function thinkingAsTaken(thinking: unknown, fixes: readonly FieldFix[], maxTokens: unknown): unknown {
  if (!isRecord(thinking)) return thinking;
  if (thinking.type === 'disabled' && fixes.some((fix) => fix.field === thinkingDisabledField))
    return undefined;
  if (thinking.type === 'enabled' && fixes.some((fix) => fix.field === thinkingEnabledField))
    return { type: 'adaptive' };
  if (thinking.type !== 'adaptive' || !fixes.some((fix) => fix.field === thinkingAdaptiveField))
    return thinking;
  const budget = typeof maxTokens === 'number' ? Math.floor(maxTokens / 2) : 0;
  return budget >= 1_024 ? { type: 'enabled', budget_tokens: budget } : undefined;
}

/**
 * `output_config` with its effort as the model takes it (effortTaken), or without one for a model that
 * takes none (an effort fix of no value) — undefined when nothing else is in it; the same object when
 * nothing changes.
 */
function outputConfigAsTaken(config: unknown, fixes: readonly FieldFix[]): unknown {
  if (!isRecord(config) || config.effort === undefined) return config;
  if (fixes.some((fix) => fix.field === effortField && fix.value === undefined)) {
    const { effort: _refused, ...rest } = config;
    return Object.keys(rest).length === 0 ? undefined : rest;
  }
  if (typeof config.effort !== 'string') return config;
  const effort = effortTaken(config.effort, fixes, effortField);
  return effort === config.effort ? config : Object.assign({}, config, { effort });
}

/**
 * A chat request bound for an `anthropic` upstream (its Messages members in `ctxgate_anthropic`, as the
 * Messages service carries them) as the model takes it: without the members it refused
 * (fixForAnthropicMember), its thinking in the mode it takes (thinkingAsTaken); the same object when
 * nothing changes.
 */
export function withAnthropicFixes<R extends Record<string, unknown>>(
  asked: R,
  fixes: readonly FieldFix[],
): R {
  const request = withConversationAsTaken(asked, fixes);
  const extension = request.ctxgate_anthropic;
  if (!isRecord(extension) || fixes.length === 0) return request;
  let kept: Record<string, unknown> | undefined;
  const edited = (): Record<string, unknown> => (kept ??= Object.assign({}, extension));
  for (const fix of fixes)
    if (isRefusableMember(fix.field) && extension[fix.field] !== undefined) delete edited()[fix.field];
  const toolMembers = membersUnder(fixes, toolMemberPrefix);
  const refusedIn = (tool: unknown) => isRecord(tool) && toolMembers.some((name) => tool[name] !== undefined);
  const given = Array.isArray(extension.tools) ? (extension.tools as unknown[]) : [];
  // With no tool loaded on demand, Anthropic's tool search tool has nothing to search: left out too.
  let tools = toolMembers.includes('defer_loading')
    ? given.filter((tool) => !(isRecord(tool) && String(tool.type).startsWith('tool_search_tool')))
    : given;
  // No more tools than the model takes (Kimi's 128): the client's, as the chat ones are (withToolsAtMost).
  const toolCount = fixes.find((fix) => fix.field === toolCountField)?.atMost;
  if (toolCount !== undefined && tools.length > toolCount)
    tools = withToolsAtMost(
      { tools, tool_choice: extension.tool_choice },
      Array.isArray(request.messages) ? (request.messages as { tool_calls?: unknown }[]) : [],
      toolCount,
      [],
      messagesToolName,
    ).tools;
  // A forced tool the model does not take (DeepSeek's endpoint, a tool forced with thinking on to Claude —
  // only while thinking is on): the choice left to it, the tool alone.
  const choice = extension.tool_choice;
  const thinks =
    isRecord(extension.thinking) &&
    (extension.thinking.type === 'enabled' || extension.thinking.type === 'adaptive');
  if (
    fixes.some((fix) => fix.field === toolChoiceField && (fix.value !== thinkingToolChoice || thinks)) &&
    isRecord(choice) &&
    (choice.type === 'any' || choice.type === 'tool')
  ) {
    edited().tool_choice = Object.assign(
      { type: 'auto' },
      choice.disable_parallel_tool_use === true ? { disable_parallel_tool_use: true } : {},
    );
    const alone = tools.filter((tool) => choice.type === 'tool' && messagesToolName(tool) === choice.name);
    if (alone.length > 0) tools = alone;
  }
  if (tools.length < given.length || tools.some(refusedIn))
    edited().tools = tools.map((tool) => {
      if (!refusedIn(tool)) return tool;
      const without = Object.assign({}, tool as Record<string, unknown>);
      for (const name of toolMembers) delete without[name];
      return without;
    });
  // What is left of `output_config` (none when it was refused whole), its effort as the model takes it.
  const config = (kept ?? extension).output_config;
  const taken = outputConfigAsTaken(config, fixes);
  if (taken !== config) {
    if (taken === undefined) delete edited().output_config;
    else edited().output_config = taken;
  }
  const thinking = thinkingAsTaken(extension.thinking, fixes, request.max_tokens);
  if (thinking !== extension.thinking) {
    if (thinking === undefined) delete edited().thinking;
    else edited().thinking = thinking;
  }
  const out = kept === undefined ? request : Object.assign({}, request, { ctxgate_anthropic: kept });
  // The metadata refused: its user id too, which the chat request carries as `user` (anthropic-wire.ts).
  if (out.user === undefined || !fixes.some((fix) => fix.field === 'metadata')) return out;
  const { user: _userId, ...withoutUser } = out;
  return withoutUser as R;
}

/**
 * The request marked with what the upstream refused of the conversation (anthropic-wire.ts
 * ConversationFixes): the block types it takes (blockTypesField, resultBlockTypesField: those every
 * refusal named taken), a system message in the conversation (systemMessagesField), members of a
 * breakpoint's mark (cacheMemberField), members of a block by its type (fixForBlockMember); the same
 * object with no such fix.
 */
function withConversationAsTaken<R extends Record<string, unknown>>(
  request: R,
  fixes: readonly FieldFix[],
): R {
  const takenIn = (field: string): Set<string> | undefined => {
    let taken: Set<string> | undefined;
    for (const fix of fixes) {
      if (fix.field !== field || fix.value === undefined) continue;
      const types = fix.value.split(',');
      taken = taken === undefined ? new Set(types) : new Set(types.filter((type) => taken?.has(type)));
    }
    return taken;
  };
  const found: ConversationFixes = {};
  const blocks = takenIn(blockTypesField);
  const inResults = takenIn(resultBlockTypesField);
  if (blocks !== undefined || inResults !== undefined) found.blockTypes = { blocks, inResults };
  if (fixes.some((fix) => fix.field === systemMessagesField)) found.noSystemMessages = true;
  if (fixes.some((fix) => fix.field === billingAttributionField)) found.noBillingAttribution = true;
  const foreign = fixes.find((fix) => fix.field === foreignThinkingField)?.value;
  if (foreign === 'earlier' || foreign === 'all') found.foreignThinking = foreign;
  const cacheMembers = membersUnder(fixes, cacheMemberPrefix);
  if (cacheMembers.length > 0) found.cacheMembers = new Set(cacheMembers);
  const blockMembers = new Map<string, Set<string>>();
  for (const path of membersUnder(fixes, blockMemberPrefix)) {
    const [type = '', member = ''] = path.split('.');
    blockMembers.set(type, (blockMembers.get(type) ?? new Set()).add(member));
  }
  if (blockMembers.size > 0) found.blockMembers = blockMembers;
  return Object.keys(found).length === 0
    ? request
    : Object.assign({}, request, { [conversationFixes]: found });
}

/**
 * A model's learned fixes with what an attempt's own state leaves out of the conversation (the thinking
 * another model signed: foreignThinkingField), which is never learned; the same list without it.
 */
export function withAttemptFixes(
  fixes: readonly FieldFix[],
  state: { foreignThinking?: ForeignThinkingStep | undefined },
): readonly FieldFix[] {
  const stage = state.foreignThinking;
  return stage === undefined ? fixes : [...fixes, { field: foreignThinkingField, value: stage }];
}

/** The members whose fields sit under `prefix` among the fixes (`tools[].defer_loading` → `defer_loading`). */
const membersUnder = (fixes: readonly FieldFix[], prefix: string): string[] =>
  fixes.filter((fix) => fix.field.startsWith(prefix)).map((fix) => fix.field.slice(prefix.length));

/**
 * A member of a content block an Anthropic-compatible upstream does not know, by the block's type
 * (`blocks[].<type>.<member>`): Claude's answers carry members Vertex and Bedrock refuse when the client
 * sends the block back — a tool call's `caller` ("messages.7.content.1.tool_use.caller: Extra inputs are
 * not permitted": langchain-ai/langchain-google#1446), a text's `citations` (anthropics/claude-code#146) —
 * and a client may add one (#4378, a tool call's `text`), and every later request of the conversation was
 * refused. Left out of every block of that type; what makes the block (blockCoreMembers) never is.
 */
const blockMemberPrefix = 'blocks[].';

/** The members each block type cannot do without. */
const blockCoreMembers: Readonly<Record<string, readonly string[]>> = {
  text: ['text'],
  tool_use: ['id', 'name', 'input'],
  server_tool_use: ['id', 'name', 'input'],
  tool_result: ['tool_use_id', 'content'],
  thinking: ['thinking', 'signature'],
  redacted_thinking: ['data'],
  image: ['source'],
  document: ['source'],
};

/** The fix for a member of a block a refusal names; undefined for what makes the block. */
export function fixForBlockMember(type: string, member: string): FieldFix | undefined {
  if (member === 'type' || blockCoreMembers[type]?.includes(member) === true) return undefined;
  return { field: `${blockMemberPrefix}${type}.${member}` };
}

/** The `anthropic-beta` flags among a model's fixes (anthropicBetaField); undefined when there is none. */
export function betaFixesOf(fixes: readonly FieldFix[]): readonly FieldFix[] | undefined {
  return fixes.some((fix) => fix.field === anthropicBetaField)
    ? fixes.filter((fix) => fix.field === anthropicBetaField)
    : undefined;
}

/**
 * The upstream request's headers without the `anthropic-beta` flags the model refused (anthropicBetaField):
 * the header left out when a fix names no flag or none is left; the same object when nothing changes.
 */
export function withBetaFixes(
  headers: Record<string, string>,
  fixes: readonly FieldFix[],
): Record<string, string> {
  const given = headers['anthropic-beta'];
  if (given === undefined || !fixes.some((fix) => fix.field === anthropicBetaField)) return headers;
  const refused = new Set<string | undefined>();
  for (const fix of fixes) if (fix.field === anthropicBetaField) refused.add(fix.value);
  const kept = refused.has(undefined)
    ? []
    : given
        .split(',')
        .map((flag) => flag.trim())
        .filter((flag) => flag !== '' && !refused.has(flag));
  const { 'anthropic-beta': _refused, ...rest } = headers;
  return kept.length === 0 ? rest : Object.assign(rest, { 'anthropic-beta': kept.join(',') });
}

/** The same setting under each provider's name for it: the one a provider does not take is renamed. */
const otherNameOf: Readonly<Record<string, string>> = {
  max_tokens: 'max_completion_tokens',
  max_completion_tokens: 'max_tokens',
};

/**
 * Fields that ask the provider for something beside the answer — usage in a stream, an end user's id,
 * storage, a service tier, cache routing and retention — or give a hint only some models take — how hard to reason,
 * how long to write, whether tool calls may come in parallel (Codex sends these on every request), a seed for
 * sampling that is deterministic at best (an evaluation harness's). A
 * bridge or a client adds them and a provider may not know them: left out when refused, as a provider
 * that does not know them could not act on them.
 */
const besideTheAnswer = new Set([
  'stream_options',
  'user',
  'metadata',
  'store',
  'service_tier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'prompt_cache_options',
  'safety_identifier',
  'reasoning_effort',
  'verbosity',
  'parallel_tool_calls',
  // Predicted Outputs (`prediction`: the text an edit will mostly repeat, to write it faster), which
  // Continue's edit mode sends and Azure's API versions and other providers refuse ("Unrecognized request
  // argument supplied: prediction": continuedev/continue#2981): the answer is the same without it.
  'prediction',
  // Sampling deterministically, at best: Gemini's OpenAI-compatible endpoint knows none ("Invalid JSON
  // payload received. Unknown name \"seed\": Cannot find field.": mcpchecker/mcpchecker#188).
  'seed',
  // Servers' own hints, for thinking (Qwen's, GLM's, Kimi's and DeepSeek's switches, vLLM's and llama.cpp's
  // template arguments, OpenRouter's reasoning) and sampling (vLLM's and OpenRouter's), which a client
  // sends its model and OpenAI refuses ("Unrecognized request argument supplied: enable_thinking": a
  // fallback from Qwen to GPT-5, LianjiaTech/bella-openapi#331; Cherry Studio, CherryHQ/cherry-studio#6155;
  // "… thinking", nashsu/llm_wiki#336; "… top_k"): a model that does not know them could not act on them.
  'thinking',
  'enable_thinking',
  'chat_template_kwargs',
  'reasoning',
  'include_reasoning',
  'top_k',
  'min_p',
  'repetition_penalty',
  // The penalties on repetition, which chat apps send by default (NextChat, Page Assist: n4ze3m/page-assist#418)
  // and Gemini's OpenAI-compatible endpoint does not know ("Invalid JSON payload received. Unknown name
  // \"frequency_penalty\": Cannot find field.": versun/RSSBox#132, sleepydeer666/RPGBox#2; "Penalty is not
  // enabled for this model" behind OpenRouter and Vertex): every request failed, where the model answers
  // as it would unpenalized.
  'frequency_penalty',
  'presence_penalty',
]);

/**
 * Sampling settings reasoning models take only at their defaults (OpenAI's: temperature, top_p; xAI's: the
 * penalties): left out when refused, the model's own then.
 */
const defaultsOnly = new Set(['temperature', 'top_p', 'presence_penalty', 'frequency_penalty']);

/** What to send instead of a top-level field the provider does not know; undefined: the client's to fix. */
export function fixForUnknownField(field: string): FieldFix | undefined {
  // A serde server names a content part's field without its place ("unknown field `cache_control`").
  if (field === 'cache_control') return { field: cacheMarksField };
  const other = otherNameOf[field];
  if (other !== undefined) return { field, renameTo: other };
  // Structured output: left out, what it asked told in the system message (withResponseFormatAsTaken);
  // stop sequences: left out, held by the gateway (heldStopsOf).
  return besideTheAnswer.has(field) || field === responseFormatField || field === stopField
    ? { field }
    : undefined;
}

/**
 * What to send instead of a field the model does not support, given the replacement the provider named
 * (a rename only to the field's other name); undefined: the client's to fix.
 */
export function fixForUnsupportedField(field: string, replacement: string | undefined): FieldFix | undefined {
  if (replacement !== undefined)
    return otherNameOf[field] === replacement ? { field, renameTo: replacement } : undefined;
  return defaultsOnly.has(field) ? { field } : fixForUnknownField(field);
}

/**
 * The body with each fix applied: a field renamed (unless the body already has the new name) or left
 * out. The same object when no fix changes it; a new one otherwise (the caller's is not touched).
 */
export function applyFieldFixes<B extends object>(body: B, fixes: readonly FieldFix[]): B {
  let fixed: Record<string, unknown> | undefined;
  for (const { field, renameTo, value } of fixes) {
    const current = fixed ?? (body as Record<string, unknown>);
    if (current[field] === undefined || current[field] === null) continue;
    // A service tier refused by its value: that one left out, another asked as it was.
    if (field === 'service_tier' && value !== undefined && current[field] !== value) continue;
    if (field === 'reasoning_effort' && value !== undefined) {
      // An effort the model does not take: the nearest of those it was found to take.
      const asked = current[field];
      const taken = typeof asked === 'string' ? effortInstead(asked, value.split(',')) : undefined;
      if (taken !== undefined && taken !== asked)
        (fixed ??= Object.assign({}, body) as Record<string, unknown>)[field] = taken;
      continue;
    }
    fixed ??= Object.assign({}, body) as Record<string, unknown>;
    if (renameTo !== undefined && (fixed[renameTo] === undefined || fixed[renameTo] === null))
      fixed[renameTo] = fixed[field];
    delete fixed[field];
  }
  return (fixed ?? body) as B;
}

export interface FieldFixes {
  /** The fixes learned for a model on an upstream; an empty list for most. */
  fixesFor(upstream: string, model: string): readonly FieldFix[];
  /** Keeps a fix for the model; true when it was not known yet. */
  remember(upstream: string, model: string, fix: FieldFix): boolean;
  /** Forgets a fix kept for the model (one tried on a refusal that named nothing, and refused again). */
  forget(upstream: string, model: string, fix: FieldFix): void;
}

const none: readonly FieldFix[] = [];

/**
 * Where the fixes of each model are kept: the learned limits (store/learned-limits.ts), which replicas share
 * through Redis, or a map of the process's own (memoryFixStore).
 */
export interface FieldFixStore {
  /** A model's fixes; an empty list for most. Never waits on a store. */
  fixesOf(upstream: string, model: string): readonly FieldFix[];
  /**
   * Changes a model's fixes to what `update` makes of them — applied here at once, and again to what
   * another replica wrote when its write came first: `update` must make the same of any list.
   */
  updateFixes(
    upstream: string,
    model: string,
    update: (fixes: readonly FieldFix[]) => readonly FieldFix[],
  ): void;
}

const sameFix = (a: FieldFix, b: FieldFix): boolean => a.field === b.field && a.value === b.value;

/**
 * The most fixes a model keeps: far more than the fields any provider refuses (some 30 are known). A
 * client's own fields are learned by name, and a client that sent a new one with every request would
 * otherwise grow the list — and the work of every later request of the model — without end.
 */
export const fixesPerModel = 128;

/**
 * The fixes with `fix` among them: the same list when it is there already, with no higher cap; past
 * `fixesPerModel`, the one learned first goes.
 */
export function withFix(fixes: readonly FieldFix[], fix: FieldFix): readonly FieldFix[] {
  // A cap already known is lowered by a refusal that gives a lower one (documents beside the images).
  const same = fixes.find((kept) => sameFix(kept, fix));
  if (same !== undefined && !(fix.atMost !== undefined && fix.atMost < (same.atMost ?? Infinity)))
    return fixes;
  const kept = [...fixes.filter((each) => each !== same), fix];
  return kept.length > fixesPerModel ? kept.slice(kept.length - fixesPerModel) : kept;
}

/** The fixes without `fix`; the same list when it is not among them. */
export function withoutFix(fixes: readonly FieldFix[], fix: FieldFix): readonly FieldFix[] {
  const kept = fixes.filter((each) => !sameFix(each, fix));
  return kept.length === fixes.length ? fixes : kept;
}

/** The fixes of at most `maxEntries` models, kept in the process (the least recently changed go first). */
export function memoryFixStore(maxEntries: number): FieldFixStore {
  const byModel = new Map<string, readonly FieldFix[]>();
  const keyOf = (upstream: string, model: string) => `${upstream}\u0000${model}`;
  return {
    fixesOf(upstream, model) {
      if (byModel.size === 0) return none;
      return byModel.get(keyOf(upstream, model)) ?? none;
    },
    updateFixes(upstream, model, update) {
      const key = keyOf(upstream, model);
      const fixes = update(byModel.get(key) ?? none);
      byModel.delete(key);
      if (fixes.length > 0) byModel.set(key, fixes);
      if (byModel.size > maxEntries) byModel.delete(byModel.keys().next().value as string);
    },
  };
}

/** Each fix learned, told to the log once: upstream, model, the field and what it became. */
export function loggedFieldFixes(
  logger: { info: (fields: Record<string, unknown>, message: string) => void },
  store: FieldFixStore = memoryFixStore(1_000),
): FieldFixes {
  return createFieldFixes({
    store,
    onLearned: (upstream, model, fix) =>
      logger.info(
        {
          upstream,
          model,
          field: fix.field,
          renamedTo: fix.renameTo ?? null,
          atMost: fix.atMost ?? null,
          value: fix.value ?? null,
        },
        'model refuses a request field',
      ),
    // A fix tried on a refusal that named nothing, refused again: the model was not shown to refuse it.
    onForgotten: (upstream, model, fix) =>
      logger.info(
        { upstream, model, field: fix.field, value: fix.value ?? null },
        'request field fix forgotten',
      ),
  });
}

/**
 * The fixes learned, kept in `store`: the learned limits, which replicas share, so a model's refusal is paid
 * for once, not once per replica; or, without one, the process's own for at most `maxEntries` models.
 */
export function createFieldFixes(options: {
  store?: FieldFixStore;
  maxEntries?: number;
  /** Told each fix the first time this replica learns it (the log line `model refuses a request field`). */
  onLearned?: (upstream: string, model: string, fix: FieldFix) => void;
  /** Told each fix this replica forgets (the log line `request field fix forgotten`). */
  onForgotten?: (upstream: string, model: string, fix: FieldFix) => void;
}): FieldFixes {
  const store = options.store ?? memoryFixStore(options.maxEntries ?? 1_000);
  return {
    fixesFor: (upstream, model) => store.fixesOf(upstream, model),
    remember(upstream, model, fix) {
      const known = store.fixesOf(upstream, model);
      if (withFix(known, fix) === known) return false;
      store.updateFixes(upstream, model, (fixes) => withFix(fixes, fix));
      options.onLearned?.(upstream, model, fix);
      return true;
    },
    forget(upstream, model, fix) {
      const known = store.fixesOf(upstream, model);
      if (withoutFix(known, fix) === known) return;
      store.updateFixes(upstream, model, (fixes) => withoutFix(fixes, fix));
      options.onForgotten?.(upstream, model, fix);
    },
  };
}

const mistralId = /^[A-Za-z0-9]{9}$/;
/** An id as Mistral takes it: itself when it is one, else 9 letters and digits made from it. */
function asMistralId(id: string): string {
  if (mistralId.test(id)) return id;
  // 5 digits of one hash and 4 of another: 62^5 and 62^4 both under 2^32.
  return hashDigits(fnv1a(id, 0x811c9dc5), 5) + hashDigits(fnv1a(id, 0x01000193), 4);
}

/**
 * The messages with every tool call id Mistral would refuse written as one it takes, in the call and in
 * the tool message that answers it alike; the messages that hold none are the same objects (their bytes
 * are copied), and the same array when none does.
 */
export function withToolCallIdsAsMistralTakes(messages: ContextMessage[]): ContextMessage[] {
  let out: ContextMessage[] | undefined;
  messages.forEach((message, index) => {
    let changed: ContextMessage | undefined;
    if (typeof message.tool_call_id === 'string' && !mistralId.test(message.tool_call_id))
      changed = Object.assign({}, message, { tool_call_id: asMistralId(message.tool_call_id) });
    const calls = message.tool_calls;
    if (
      Array.isArray(calls) &&
      calls.some((call: { id?: unknown }) => typeof call?.id === 'string' && !mistralId.test(call.id))
    )
      changed = Object.assign({}, message, {
        tool_calls: calls.map((call: { id?: unknown }) =>
          typeof call?.id === 'string' ? Object.assign({}, call, { id: asMistralId(call.id) }) : call,
        ),
      });
    if (changed === undefined) return;
    out ??= [...messages];
    out[index] = changed;
  });
  return out ?? messages;
}

/**
 * The messages with what providers gave to be sent back as the model takes it: Gemini's thought signatures
 * (withThoughtSignatures) and — after a refusal of state another model or provider signed
 * (foreignThinkingField: OpenAI's "The encrypted content for item rs_… could not be verified.", Azure's the
 * same of OpenAI's, Claude's through OpenRouter) — without the Responses API's encrypted reasoning and
 * Claude's signed thinking (`reasoning_details` of type `reasoning.encrypted`, or signed): at the fix's
 * `earlier` step but the tool loop's being answered, at `all` everywhere. The same array when nothing
 * changes.
 */
export function withCarriedStateAsTaken(
  messages: ContextMessage[],
  fixes: readonly FieldFix[],
): ContextMessage[] {
  const stage = fixes.find((fix) => fix.field === foreignThinkingField)?.value;
  const loop = stage === 'earlier' ? openToolLoop(messages) : -1;
  const signed = withThoughtSignatures(messages, fixes, loop);
  if (stage === undefined) return signed;
  const sealed = (detail: unknown) =>
    isRecord(detail) && (detail.type === 'reasoning.encrypted' || typeof detail.signature === 'string');
  let out: ContextMessage[] | undefined;
  signed.forEach((message, index) => {
    const details = message.reasoning_details;
    if (index === loop || !Array.isArray(details) || !details.some(sealed)) return;
    const kept = details.filter((detail) => !sealed(detail));
    out ??= [...signed];
    const copy: ContextMessage = Object.assign({}, message, { reasoning_details: kept });
    if (kept.length === 0) delete copy.reasoning_details;
    out[index] = copy;
  });
  return out ?? signed;
}

/**
 * The messages with each assistant message's first tool call — where Gemini puts a step's signature —
 * given Google's stand-in when it carries no signature (thoughtSignaturesField, learned) or — after Gemini
 * refused one another backend gave (foreignThinkingField, this request only) — when it carries one, but
 * the message at `kept` (the tool loop being answered, at the fix's first step); anything else its
 * `extra_content` holds is kept; the messages that need none are the same objects, and the same array when
 * none does.
 */
export function withThoughtSignatures(
  messages: ContextMessage[],
  fixes: readonly FieldFix[],
  kept = -1,
): ContextMessage[] {
  const missing = fixes.some((fix) => fix.field === thoughtSignaturesField);
  const given = fixes.some((fix) => fix.field === foreignThinkingField);
  if (!missing && !given) return messages;
  let out: ContextMessage[] | undefined;
  messages.forEach((message, index) => {
    const calls = message.tool_calls;
    const first = Array.isArray(calls) ? (calls[0] as Record<string, unknown> | undefined) : undefined;
    if (first === undefined || first === null || typeof first !== 'object') return;
    const extra = first.extra_content as { google?: { thought_signature?: unknown } } | undefined;
    const signature = extra?.google?.thought_signature;
    // None: the stand-in once learned; another backend's: the stand-in in this request, but the loop's kept.
    const replaced =
      typeof signature === 'string' ? given && index !== kept && signature !== noThoughtSignature : missing;
    if (!replaced) return;
    const google = Object.assign({}, extra?.google, { thought_signature: noThoughtSignature });
    const signed = Object.assign({}, first, { extra_content: Object.assign({}, extra, { google }) });
    out ??= [...messages];
    out[index] = Object.assign({}, message, { tool_calls: [signed, ...(calls as unknown[]).slice(1)] });
  });
  return out ?? messages;
}

/** Where to cut `text` to at most `atMost` characters: at its last white space past half of them, else there. */
function cutAt(text: string, atMost: number): number {
  const space = text.slice(0, atMost + 1).search(/\s\S*$/);
  if (space >= atMost / 2) return space;
  // Not inside a character of two UTF-16 units.
  const code = text.charCodeAt(atMost - 1);
  return code >= 0xd800 && code <= 0xdbff ? atMost - 1 : atMost;
}

/**
 * The request with each tool description longer than `atMost` cut there (toolDescriptionsField), the
 * rest given as the description of the tool's parameters (after one it had); the same request when
 * none is longer, the client's tools untouched.
 */
export function withToolDescriptionsWithin<R extends Record<string, unknown>>(request: R, atMost: number): R {
  if (!Array.isArray(request.tools)) return request;
  let changed = false;
  const tools = (request.tools as unknown[]).map((tool) => {
    const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : undefined;
    const text = fn?.description;
    if (fn === undefined || typeof text !== 'string' || text.length <= atMost) return tool;
    changed = true;
    const at = cutAt(text, atMost);
    const schema = isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} };
    const rest = text.slice(at).trim();
    const described =
      typeof schema.description === 'string' && schema.description !== ''
        ? `${schema.description}\n\n${rest}`
        : rest;
    const parameters = Object.assign({}, schema, { description: described });
    return Object.assign({}, tool, {
      function: Object.assign({}, fn, { description: text.slice(0, at).trimEnd(), parameters }),
    });
  });
  return changed ? Object.assign({}, request, { tools }) : request;
}

/**
 * The request with its forced tool choice left to the model (toolChoiceField): `required` as `auto`; a named
 * function or custom tool as `auto` with that tool alone offered, when the tools hold it; allowed tools
 * required as allowed tools in `auto` mode. The same request when nothing is forced.
 */
export function withToolChoiceUnforced<R extends Record<string, unknown>>(request: R): R {
  const choice = request.tool_choice;
  if (choice === 'required') return Object.assign({}, request, { tool_choice: 'auto' });
  if (!isRecord(choice)) return request;
  if (choice.type === 'allowed_tools' && isRecord(choice.allowed_tools))
    return choice.allowed_tools.mode === 'required'
      ? Object.assign({}, request, {
          tool_choice: Object.assign({}, choice, {
            allowed_tools: Object.assign({}, choice.allowed_tools, { mode: 'auto' }),
          }),
        })
      : request;
  const name = toolNameOf(choice);
  if (name === undefined) return request;
  const alone = Array.isArray(request.tools)
    ? (request.tools as unknown[]).filter((tool) => toolNameOf(tool) === name)
    : [];
  return Object.assign({}, request, { tool_choice: 'auto' }, alone.length > 0 ? { tools: alone } : {});
}

/**
 * The request with its tool choice given as a string (toolChoiceObjectField): a named function or custom
 * tool as `required` with that tool alone offered (when the tools hold it); allowed tools as their mode with
 * those tools alone offered. The same request when the choice is a string already.
 */
export function withToolChoiceAsString<R extends Record<string, unknown>>(request: R): R {
  const choice = request.tool_choice;
  if (!isRecord(choice)) return request;
  const tools = Array.isArray(request.tools) ? (request.tools as unknown[]) : [];
  if (choice.type === 'allowed_tools' && isRecord(choice.allowed_tools)) {
    const { mode, tools: allowed } = choice.allowed_tools;
    // Chat's `{type, function: {name}}`, or the Responses API's `{type, name}`.
    const nameIn = (entry: unknown) =>
      toolNameOf(entry) ?? (isRecord(entry) && typeof entry.name === 'string' ? entry.name : undefined);
    const names = new Set((Array.isArray(allowed) ? (allowed as unknown[]) : []).map(nameIn));
    const kept = tools.filter((tool) => names.has(toolNameOf(tool) as string));
    return Object.assign({}, request, {
      tool_choice: mode === 'required' ? 'required' : 'auto',
      ...(kept.length > 0 ? { tools: kept } : {}),
    });
  }
  const name = toolNameOf(choice);
  const alone = name === undefined ? [] : tools.filter((tool) => toolNameOf(tool) === name);
  return Object.assign({}, request, { tool_choice: 'required' }, alone.length > 0 ? { tools: alone } : {});
}

/**
 * The request without what speaks of tools when it gives none: `tools` as an empty list, and with no tools
 * a `tool_choice` or `parallel_tool_calls`, which mean nothing then and which OpenAI refuses ("Invalid
 * 'tools': empty array …": continuedev/continue#3370; "'tool_choice' is only allowed when 'tools' are
 * specified."), as DeepSeek (runebookai/tome#87) and Z.AI do ("Invalid API parameter", code 1210: the AI SDK's
 * OpenAI-compatible provider with every tool its own, code-yeongyu/oh-my-openagent#6753). Sent so to every
 * Chat Completions provider, as it means the same. The same request when it has tools, or none of these.
 */
export function withoutToolFieldsWhenNoTools<R extends Record<string, unknown>>(request: R): R {
  const { tools } = request;
  if (Array.isArray(tools) && tools.length > 0) return request;
  if (tools === undefined && request.tool_choice === undefined && request.parallel_tool_calls === undefined)
    return request;
  const { tools: _none, tool_choice: _choice, parallel_tool_calls: _parallel, ...rest } = request;
  return rest as R;
}

/**
 * The messages without a tool call list that is empty (`tool_calls: []`, which OpenAI's SDK once wrote back:
 * "Invalid 'messages[1].tool_calls': empty array", openai/openai-node#1341), a message of no content then
 * given the empty text; the same array when none has one.
 */
export function withoutEmptyToolCalls(messages: ContextMessage[]): ContextMessage[] {
  const empty = (message: ContextMessage): boolean =>
    Array.isArray(message.tool_calls) && message.tool_calls.length === 0;
  if (!messages.some(empty)) return messages;
  return messages.map((message) => {
    if (!empty(message)) return message;
    const { tool_calls: _none, ...rest } = message;
    return (
      rest.content === null || rest.content === undefined ? Object.assign(rest, { content: '' }) : rest
    ) as ContextMessage;
  });
}

/**
 * The request with at most `atMost` tools (toolCountField): the one `tool_choice` names, the tools named
 * `kept`, and those the messages' calls name, newest first, then the rest in order — each in its place
 * among the client's. The same request when it has no more.
 */
export function withToolsAtMost<R extends Record<string, unknown>>(
  request: R,
  messages: readonly { tool_calls?: unknown }[],
  atMost: number,
  kept: readonly string[] = [],
  nameOf: (tool: unknown) => string | undefined = toolNameOf,
): R {
  const tools = request.tools;
  if (!Array.isArray(tools) || tools.length <= atMost) return request;
  const wanted: string[] = [];
  const chosen = isRecord(request.tool_choice) ? nameOf(request.tool_choice) : undefined;
  if (chosen !== undefined) wanted.push(chosen);
  wanted.push(...kept);
  for (let index = messages.length - 1; index >= 0; index--) {
    const calls = messages[index]?.tool_calls;
    if (Array.isArray(calls)) for (const call of calls as unknown[]) wanted.push(toolNameOf(call) ?? '');
  }
  const keep = new Set<number>();
  const positions = new Map<string, number>();
  (tools as unknown[]).forEach((tool, position) => {
    const name = nameOf(tool);
    if (name !== undefined && !positions.has(name)) positions.set(name, position);
  });
  for (const name of wanted) {
    if (keep.size >= atMost) break;
    const position = positions.get(name);
    if (position !== undefined) keep.add(position);
  }
  for (let position = 0; position < tools.length && keep.size < atMost; position++) keep.add(position);
  return Object.assign({}, request, {
    tools: (tools as unknown[]).filter((_, position) => keep.has(position)),
  });
}

/** The name of a Messages tool, or of the one a Messages `tool_choice` names. */
const messagesToolName = (tool: unknown): string | undefined =>
  isRecord(tool) && typeof tool.name === 'string' ? tool.name : undefined;

/** What a tool result of no text is sent as, to a provider that refuses none (emptyTextField). */
export const noOutputText = '(no output)';
/** And any other message of no text. */
const emptyText = '(empty)';

const blank = (text: unknown): boolean => typeof text === 'string' && text.trim() === '';

/**
 * A message of no text (blank text parts left out) as one with text, or itself. A call's message says
 * nothing beside its calls: its content null, or left out when the model refuses null too (`noNull`).
 */
function filledMessage(message: ContextMessage, noNull: boolean): ContextMessage {
  const { content } = message;
  const calls = Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
  if (Array.isArray(content)) {
    const parts = (content as unknown[]).filter(
      (part) => !(isRecord(part) && part.type === 'text' && blank(part.text)),
    );
    if (parts.length === content.length) return message;
    if (parts.length > 0) return Object.assign({}, message, { content: parts });
  } else if (!(blank(content) || (content == null && message.role === 'assistant' && !calls))) return message;
  if (message.role === 'assistant' && calls) {
    if (!noNull) return Object.assign({}, message, { content: null });
    const said: Record<string, unknown> = Object.assign({}, message);
    delete said.content;
    return said as ContextMessage;
  }
  return Object.assign({}, message, { content: message.role === 'tool' ? noOutputText : emptyText });
}

/**
 * The messages with each of no text given text (emptyTextField): a tool result `(no output)`, an
 * assistant message with calls no content (null, or none with `noNull`), any other `(empty)`; blank text
 * parts left out. The same array when none is empty.
 */
export function withEmptyTextsFilled(messages: ContextMessage[], noNull = false): ContextMessage[] {
  let out: ContextMessage[] | undefined;
  messages.forEach((message, index) => {
    const filled = filledMessage(message, noNull);
    if (filled !== message) (out ??= messages.slice())[index] = filled;
  });
  return out ?? messages;
}

/** The messages with each null or left-out content the empty text (nullContentField); the same array when none is. */
export function withNullContentsAsText(messages: ContextMessage[]): ContextMessage[] {
  if (!messages.some((message) => message.content == null)) return messages;
  return messages.map((message) =>
    message.content == null ? Object.assign({}, message, { content: '' }) : message,
  );
}

/** Whether a call's arguments are a JSON object's text (white space around it allowed). */
function isObjectText(text: unknown): text is string {
  if (typeof text !== 'string') return false;
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') || !trimmed.endsWith('}')) return false;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isRecord(value);
  } catch {
    return false;
  }
}

/**
 * The messages with each call whose arguments are not a JSON object's text sent with `{}` — or, given as
 * an object (decoded, as some servers give them), with its text (toolArgumentsField); the same message when
 * all of its calls' are, the same array when every call's are.
 */
export function withToolArgumentsAsObjects(messages: ContextMessage[]): ContextMessage[] {
  let out: ContextMessage[] | undefined;
  messages.forEach((message, index) => {
    const calls = message.tool_calls;
    if (!Array.isArray(calls)) return;
    const bad = (call: unknown): call is { function: Record<string, unknown> } =>
      isRecord(call) && isRecord(call.function) && !isObjectText(call.function.arguments);
    if (!calls.some(bad)) return;
    const fixed = calls.map((call: unknown) => {
      if (!bad(call)) return call;
      const given = call.function.arguments;
      const text = isRecord(given) ? JSON.stringify(given) : '{}';
      return Object.assign({}, call, { function: Object.assign({}, call.function, { arguments: text }) });
    });
    (out ??= messages.slice())[index] = Object.assign({}, message, { tool_calls: fixed });
  });
  return out ?? messages;
}

/**
 * The messages with each assistant message of no reasoning (`reasoning_content` or `reasoning` absent or
 * empty) given `reasoning_content: " "` (reasoningStandInField); the same array when every one has some.
 */
export function withReasoningStandIns(messages: ContextMessage[]): ContextMessage[] {
  const given = (text: unknown): boolean => typeof text === 'string' && text !== '';
  const lacks = (message: ContextMessage): boolean =>
    message.role === 'assistant' && !given(message.reasoning_content) && !given(message.reasoning);
  if (!messages.some(lacks)) return messages;
  return messages.map((message) =>
    lacks(message) ? Object.assign({}, message, { reasoning_content: ' ' }) : message,
  );
}

/**
 * The messages with a user message asking to go on after a last answer that calls no tool (prefillField);
 * the same array when the conversation ends otherwise.
 */
export function withContinueAfterPrefill(messages: ContextMessage[]): ContextMessage[] {
  const last = messages.at(-1);
  const calls = last?.tool_calls;
  if (last?.role !== 'assistant' || (Array.isArray(calls) && calls.length > 0)) return messages;
  return [...messages, { role: 'user', content: continueText }];
}

/** The messages with each content of text parts only as their texts, one per line (textPartsField); the same array when none is. */
export function withTextPartsAsText(messages: ContextMessage[]): ContextMessage[] {
  const textOnly = (content: unknown): content is Array<{ text: string }> =>
    Array.isArray(content) &&
    content.length > 0 &&
    content.every((part) => isRecord(part) && part.type === 'text' && typeof part.text === 'string');
  if (!messages.some((message) => textOnly(message.content))) return messages;
  return messages.map((message) =>
    textOnly(message.content)
      ? Object.assign({}, message, { content: message.content.map((part) => part.text).join('\n') })
      : message,
  );
}

/**
 * The messages with `line` at the end of the first system (or developer) message, after a blank line (a
 * system message of it first when there is none). Pure.
 */
function withSystemLine<M extends { role: string; content?: unknown }>(
  messages: readonly M[],
  line: string,
): M[] {
  const first = messages.findIndex((message) => message.role === 'system' || message.role === 'developer');
  const out = messages.slice();
  const system = out[first];
  if (system !== undefined && typeof system.content === 'string')
    out[first] = Object.assign({}, system, { content: `${system.content}\n\n${line}` });
  else if (system !== undefined && Array.isArray(system.content))
    out[first] = Object.assign({}, system, {
      content: [...(system.content as unknown[]), { type: 'text', text: line }],
    });
  else out.unshift({ role: 'system', content: line } as M);
  return out;
}

/**
 * What a request for structured output by a JSON Schema is told in JSON mode (withResponseFormatAsTaken):
 * the schema, whole. Undefined when the request asks for no schema.
 */
export function jsonSchemaTold(responseFormat: unknown): string | undefined {
  if (!isRecord(responseFormat) || responseFormat.type !== 'json_schema') return undefined;
  const given = isRecord(responseFormat.json_schema) ? responseFormat.json_schema : {};
  const schema = JSON.stringify(given.schema ?? {});
  const named = typeof given.name === 'string' ? ` (${given.name})` : '';
  return `Answer with one JSON object${named} that follows this JSON Schema, and nothing else:\n${schema}`;
}

/**
 * The longest stop sequence the gateway holds an answer to (heldStopsOf): a stream's text is held back by
 * as much, and looked through for each sequence as it comes. A stop of more is not held.
 */
const maxHeldStopChars = 256;

/** A request's stop sequences (`stop`: one string, or a list) the gateway would hold: text, not too long. */
function stopsOf(stop: unknown): string[] {
  const given = Array.isArray(stop) ? (stop as unknown[]) : [stop];
  return given.filter(
    (one): one is string => typeof one === 'string' && one !== '' && one.length <= maxHeldStopChars,
  );
}

/**
 * The client's stop sequences the gateway holds the answer to (answer-stops.ts): every one of them, where
 * the model refused them (stopField) or more of them than it takes (stopCountField), or, to Claude's wire,
 * where one is of whitespace only, which Claude refuses ("stop_sequences: each stop sequence must contain
 * non-whitespace": a chat client's "\n", BerriAI/litellm#3286; an autocompleter's "\n\n",
 * continuedev/continue#1660) and the wire does not send (anthropic-wire.ts); undefined where the model is
 * sent them all. A stop of no text, or of more than maxHeldStopChars, is not held.
 */
export function heldStopsOf(
  stop: unknown,
  fixes: readonly FieldFix[],
  wire: 'anthropic' | 'responses' | undefined,
): readonly string[] | undefined {
  if (stop === undefined || stop === null) return undefined;
  const stops = stopsOf(stop);
  if (stops.length === 0) return undefined;
  if (wire === 'anthropic') return stops.some((one) => !/\S/.test(one)) ? stops : undefined;
  // The Responses API takes no stop sequences: the gateway holds them all.
  if (wire === 'responses') return stops;
  const refused = fixes.some((fix) => fix.field === stopField);
  const cap = fixes.find((fix) => fix.field === stopCountField)?.atMost;
  return refused || (cap !== undefined && stops.length > cap) ? stops : undefined;
}

/** The request with no more stop sequences than the model takes (stopCountField): the first of them. */
export function withStopsAtMost<R extends { stop?: unknown }>(request: R, fixes: readonly FieldFix[]): R {
  const cap = fixes.find((fix) => fix.field === stopCountField)?.atMost;
  if (cap === undefined || !Array.isArray(request.stop) || request.stop.length <= cap) return request;
  return Object.assign({}, request, { stop: (request.stop as unknown[]).slice(0, cap) });
}

/** What a model takes of `response_format` (withResponseFormatAsTaken): a JSON Schema, JSON mode. */
export interface FormatsTaken {
  schema: boolean;
  jsonMode: boolean;
}

/**
 * The forms of `response_format` a model takes, by its learned fixes (jsonSchemaField, jsonModeField,
 * responseFormatField; responseFormatWithToolsField for a request with tools).
 */
export function formatsTakenWith(fixes: readonly FieldFix[], withTools = false): FormatsTaken {
  const learned = (field: string): boolean => fixes.some((fix) => fix.field === field);
  const none = learned(responseFormatField) || (withTools && learned(responseFormatWithToolsField));
  return { schema: !none && !learned(jsonSchemaField), jsonMode: !none && !learned(jsonModeField) };
}

/** JSON mode asked as a JSON Schema (jsonModeField): any object, what JSON mode holds the answer to. */
const anyObjectFormat = {
  type: 'json_schema',
  json_schema: { name: 'response', schema: { type: 'object' } },
};

/**
 * Structured output as a model takes it (`taken`: formatsTakenWith): the `response_format` to send
 * (undefined: none) and the messages. A JSON Schema the model does not take is asked in JSON mode, or
 * not at all, its schema told at the end of the first system message (a system message of it first when
 * there is none), as `toldOf` says it — written once for a request's every attempt: a schema can be
 * megabytes; JSON mode the model does not take is asked as a JSON Schema of any object, or not at all,
 * told to answer in JSON when no message says so (withJsonModeTold); a `text` format, the default, left
 * out where either is not taken. Undefined when nothing changes.
 */
export function withResponseFormatAsTaken<M extends { role: string; content?: unknown }>(
  responseFormat: unknown,
  messages: M[],
  taken: FormatsTaken,
  toldOf: (responseFormat: unknown) => string | undefined = jsonSchemaTold,
): { responseFormat: Record<string, unknown> | undefined; messages: M[] } | undefined {
  if (!isRecord(responseFormat)) return undefined;
  const told = responseFormat.type === 'json_schema' && !taken.schema ? toldOf(responseFormat) : undefined;
  if (told !== undefined)
    return {
      responseFormat: taken.jsonMode ? { type: 'json_object' } : undefined,
      messages: withSystemLine(messages, told),
    };
  if (responseFormat.type === 'json_object' && !taken.jsonMode)
    return taken.schema
      ? { responseFormat: anyObjectFormat, messages }
      : { responseFormat: undefined, messages: withJsonModeTold(responseFormat, messages) };
  if (responseFormat.type === 'text' && !(taken.schema && taken.jsonMode))
    return { responseFormat: undefined, messages };
  return undefined;
}

/** What JSON mode's messages are told when none of the client's says "json" (withJsonModeTold). */
export const jsonModeText = 'Answer with one JSON object, and nothing else.';

/**
 * JSON mode (`response_format: {type: "json_object"}`) whose system, developer and user messages never
 * say "json" (in any case, as part of any word) — a client's prompt that does not (mem0's custom ones),
 * or the only message that did left out to fit the window — told so at the end of the first system
 * message (jsonModeText). OpenAI, Azure, DashScope and DeepSeek refuse it otherwise ("'messages' must
 * contain the word 'json' in some form, to use 'response_format' of type 'json_object'."): a model never
 * told to answer in JSON may write whitespace up to its max_tokens. The same array when nothing is told.
 */
export function withJsonModeTold<M extends { role: string; content?: unknown }>(
  responseFormat: unknown,
  messages: M[],
): M[] {
  if (!isRecord(responseFormat) || responseFormat.type !== 'json_object') return messages;
  const saysJson = (content: unknown): boolean =>
    typeof content === 'string'
      ? /json/i.test(content)
      : Array.isArray(content) &&
        content.some((part) => isRecord(part) && typeof part.text === 'string' && /json/i.test(part.text));
  const told = messages.some(
    (message) =>
      (message.role === 'system' || message.role === 'developer' || message.role === 'user') &&
      saysJson(message.content),
  );
  return told ? messages : withSystemLine(messages, jsonModeText);
}

/** The messages with each `developer` message a `system` one (developerRoleField); the same array when none is. */
export function withDeveloperAsSystem(messages: ContextMessage[]): ContextMessage[] {
  if (!messages.some((message) => message.role === 'developer')) return messages;
  return messages.map((message) =>
    message.role === 'developer' ? Object.assign({}, message, { role: 'system' }) : message,
  );
}

/** A name as OpenAI takes it: 1 to 64 letters, digits, `_` and `-`. */
const fittingName = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `name` written to fit OpenAI's pattern: each run of other characters one `_` ("Research Agent" is
 * "Research_Agent"), at most 64; a name of no letter or digit it takes ("研究员") is `name_` and five of
 * its hash, so that two such names stay apart.
 */
export function fittedName(name: string): string {
  if (fittingName.test(name)) return name;
  const kept = name.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 64);
  return /[A-Za-z0-9]/.test(kept) ? kept : `name_${hashDigits(fnv1a(name, 0x811c9dc5), 5)}`;
}

/**
 * The messages with each `name` OpenAI refuses written to fit (messageNamePatternField); the messages whose
 * names fit (or that have none) are the same objects, and the same array when all are.
 */
function withNamesFitted(messages: ContextMessage[]): ContextMessage[] {
  let out: ContextMessage[] | undefined;
  messages.forEach((message, index) => {
    if (typeof message.name !== 'string' || fittingName.test(message.name)) return;
    (out ??= messages.slice())[index] = Object.assign({}, message, { name: fittedName(message.name) });
  });
  return out ?? messages;
}

/**
 * The fixes that write the messages anew, each with its field, in order: a null content is given the empty
 * text before texts are filled, which then leaves a call's message without content (neither taken).
 */
const messageRewrites: ReadonlyArray<
  readonly [string, (messages: ContextMessage[], fixes: readonly FieldFix[]) => ContextMessage[]]
> = [
  [nullContentField, withNullContentsAsText],
  [
    emptyTextField,
    (messages, fixes) =>
      withEmptyTextsFilled(
        messages,
        fixes.some((fix) => fix.field === nullContentField),
      ),
  ],
  [developerRoleField, withDeveloperAsSystem],
  [textPartsField, withTextPartsAsText],
  [strictTemplateField, forStrictTemplate],
  [systemRoleField, withoutSystemRole],
  [userTurnField, withUserTurn],
  [toolArgumentsField, withToolArgumentsAsObjects],
  [reasoningStandInField, withReasoningStandIns],
  [prefillField, withContinueAfterPrefill],
  [messageNamePatternField, withNamesFitted],
];

/**
 * The messages as the model's learned fixes have them on the wire: the fields it refuses left out, and
 * null contents as empty texts, messages of no text given text, developer messages as system ones, text
 * parts as text, the messages in the order a strict chat template takes (the system prompt in the first
 * user message where there is no system role), a user message where there is none, calls' arguments JSON
 * objects,
 * a stand-in for reasoning not sent back, a user message after a last answer, as its fixes say; the same
 * array when none applies.
 */
export function withMessageFixes(
  messages: ContextMessage[],
  fixes: readonly FieldFix[],
  offersTools = true,
): ContextMessage[] {
  let out = withoutMessageFields(messages, fixes);
  for (const [field, rewrite] of messageRewrites)
    if (fixes.some((fix) => fix.field === field)) out = rewrite(out, fixes);
  if (!offersTools && fixes.some((fix) => fix.field === toolHistoryField)) out = withToolHistoryAsText(out);
  return out;
}

/** How a conversation's calls and results are told as text (withToolHistoryAsText). */
export interface ToolHistoryWords {
  /** A call, told at the end of its answer's text. */
  call(name: string, argumentsText: string): string;
  /** What a result's text is put after, naming the tool it came from. */
  result(name: string): string;
}

/** The words of toolHistoryField: "[called read_file({"path":"a.ts"})]", "[result of read_file]". */
const bracketWords: ToolHistoryWords = {
  call: (name, argumentsText) => `[called ${name}(${argumentsText})]`,
  result: (name) => `[result of ${name}]`,
};

/**
 * A conversation's tool calls and results as text (toolHistoryField): each call told at the end of its
 * answer's text ("[called read_file({"path":"a.ts"})]"), each result a user message where it stood
 * ("[result of read_file]" and its content, parts kept), joined with the user messages after it so that
 * the roles still alternate; in other `words` when given. The same array when it holds neither. Pure.
 */
export function withToolHistoryAsText(
  messages: ContextMessage[],
  words: ToolHistoryWords = bracketWords,
): ContextMessage[] {
  if (!messages.some((message) => message.role === 'tool' || (message.tool_calls?.length ?? 0) > 0))
    return messages;
  const names = new Map<string, string>();
  const out: ContextMessage[] = [];
  // The contents of the user message being made of results (and the user messages beside them).
  let joined: unknown[] | undefined;
  const flush = (): void => {
    if (joined !== undefined) out.push({ role: 'user', content: joinedContents(joined) });
    joined = undefined;
  };
  for (const message of messages) {
    const calls = message.tool_calls ?? [];
    if (message.role === 'tool' || (message.role === 'user' && joined !== undefined)) {
      const name = names.get(String(message.tool_call_id)) ?? message.name ?? 'tool';
      (joined ??= []).push(
        message.role === 'tool' ? withTextBefore(message.content, words.result(name)) : message.content,
      );
      continue;
    }
    flush();
    if (message.role !== 'assistant' || calls.length === 0) {
      out.push(message);
      continue;
    }
    for (const call of calls) names.set(call.id, call.function?.name ?? 'tool');
    const told = calls
      .map((call) => words.call(call.function?.name ?? 'tool', call.function?.arguments ?? ''))
      .join('\n');
    const { tool_calls: _calls, ...rest } = message;
    out.push(Object.assign(rest, { content: withTextAfter(message.content, told) }));
  }
  flush();
  return out;
}

/** A message's content with `text` after it: a string joined, parts given a text part. */
function withTextAfter(content: unknown, text: string): unknown {
  if (Array.isArray(content)) return [...(content as unknown[]), { type: 'text', text }];
  return typeof content === 'string' && content !== '' ? `${content}\n${text}` : text;
}

/** A message's content with `text` before it. */
function withTextBefore(content: unknown, text: string): unknown {
  if (Array.isArray(content)) return [{ type: 'text', text }, ...(content as unknown[])];
  return typeof content === 'string' && content !== '' ? `${text}\n${content}` : text;
}

/** Contents as one: strings joined by a blank line, else all as parts. */
function joinedContents(contents: readonly unknown[]): unknown {
  if (contents.every((content) => typeof content === 'string')) return contents.join('\n\n');
  return contents.flatMap((content) =>
    Array.isArray(content) ? (content as unknown[]) : [{ type: 'text', text: String(content ?? '') }],
  );
}

/** A tool call id as Kimi's chat template writes one: `functions.<name>:<n>`, n counting the calls. */
const kimiId = /^functions\.[^:]*:\d+$/;

type ToolCallLike = { id?: unknown; function?: { name?: unknown } } | null | undefined;

/** Where chat messages hold call ids: an assistant message's `tool_calls`, a tool message's `tool_call_id`. */
const chatSlots: CallIdSlots<ContextMessage> = {
  callIds: (message) => (message.tool_calls as readonly ToolCallLike[] | undefined)?.map((call) => call?.id),
  resultIds: (message) =>
    message.role === 'tool' && 'tool_call_id' in message ? [message.tool_call_id] : undefined,
  withCallIds: (message, ids) =>
    Object.assign({}, message, {
      tool_calls: (message.tool_calls as readonly ToolCallLike[]).map((call, at) =>
        Object.assign({}, call, { id: ids[at] }),
      ),
    }),
  withResultIds: (message, ids) => Object.assign({}, message, { tool_call_id: ids[0] }),
};

/**
 * The messages with every tool call id written as Kimi's chat template writes an id it is not given:
 * `functions.<name>:<n>`, n counting the calls from the first (moonshotai/Kimi-K2's tool_call_guidance).
 * Kimi K2 models put off their training by other ids in their history — another model's `call_…`, after
 * a client switched models or a fallback — end the turn at once with nothing (getkimchi/kimchi#1063: 1
 * turn in 10 acted, 12 in 12 with the ids rewritten). Each result gets the id its call got, in the order
 * its message gave them; a history of Kimi's own ids only is the same array.
 */
export function withToolCallIdsAsKimiTakes(messages: ContextMessage[]): ContextMessage[] {
  const foreign = messages.some(
    (message) =>
      Array.isArray(message.tool_calls) &&
      message.tool_calls.some(
        (call: { id?: unknown }) => typeof call?.id !== 'string' || !kimiId.test(call.id),
      ),
  );
  if (!foreign) return messages;
  return withCallIdsGiven(
    messages,
    chatSlots,
    (_id, ordinal, message, at) =>
      `functions.${String((message.tool_calls as readonly ToolCallLike[])[at]?.function?.name ?? '')}:${ordinal}`,
  ) as ContextMessage[];
}

/**
 * The messages with every tool call id some provider would refuse — empty, of more than 40 characters,
 * of anything but letters, digits, `_` and `-`, or given before — written as one every provider takes
 * (tool-call-ids.ts), each result following its call; the same array when every id is one.
 */
export function withToolCallIdsEveryProviderTakes(messages: ContextMessage[]): ContextMessage[] {
  return withPortableCallIds(messages, chatSlots) as ContextMessage[];
}
