// The classifier as a table over real captured bodies (test/fixtures/context-errors.json, a copy of the
// shared sample), plus cases written from provider documentation and server source, look-alikes included.
import { contextErrorFixtures, surveyFixtures } from '../fixtures/context-errors.js';
import { describe, expect, it } from 'vitest';
import {
  classifyUpstreamError,
  type OverflowNumbers,
  type UpstreamAnswer,
  withPromptFromTotal,
} from '../../src/upstream/classify-upstream-error.js';

const fixtures = contextErrorFixtures;

const fieldNames: Record<string, keyof OverflowNumbers> = {
  max_context: 'maxContext',
  prompt_tokens: 'promptTokens',
  prompt_tokens_lower_bound: 'promptTokensLowerBound',
  requested: 'requested',
  completion_tokens: 'completionTokens',
  excess_tokens: 'excessTokens',
  prompt_chars: 'promptChars',
  max_input_tokens: 'maxInputTokens',
};

describe.each([
  ['the captured sample', fixtures, 60],
  ['the survey of public threads and server source', surveyFixtures, 100],
] as const)('classifyUpstreamError over %s', (_name, rows, size) => {
  it('has every body', () => {
    expect(rows.length).toBeGreaterThanOrEqual(size);
    expect(new Set(rows.map((row) => row.id)).size).toBe(rows.length);
    // The survey names where each body was seen: a public thread or the server's source.
    if (rows === surveyFixtures)
      for (const row of rows)
        expect(row.source, row.id).toMatch(/^https:\/\/github\.com\/[\w.-]+\/[\w.-]+\//);
  });

  it.each(rows.map((fixture) => [`${fixture.id} ${fixture.provider}`, fixture] as const))(
    '%s',
    (_name, fixture) => {
      // The gRPC text has no HTTP status; it reaches the gateway as a 400 from whatever fronts it.
      const outcome = classifyUpstreamError({ status: fixture.status ?? 400, body: fixture.body });
      if (fixture.expect === 'not_overflow') {
        expect(outcome.kind).not.toBe('context_overflow');
        return;
      }
      expect(outcome.kind).toBe('context_overflow');
      if (outcome.kind !== 'context_overflow') return;
      expect(fixture.expect.split('|')).toContain(outcome.remedy);
      for (const [name, value] of Object.entries(fixture.parsed)) {
        const field = fieldNames[name];
        expect(field, `a field for ${name}`).toBeDefined();
        expect(outcome.numbers[field as keyof OverflowNumbers], name).toBe(value);
      }
    },
  );
});

const openAIError = (message: string, code: string | null, type = 'invalid_request_error'): string =>
  JSON.stringify({ error: { message, type, param: null, code } });

const ownCases: ReadonlyArray<{
  name: string;
  answer: UpstreamAnswer;
  expected: ReturnType<typeof classifyUpstreamError>;
}> = [
  {
    name: 'Groq: context_length_exceeded with numbers',
    answer: {
      status: 400,
      body: openAIError(
        "Please reduce the length of the messages or completion. This model's maximum context length is 8192 tokens. However, you requested 9001 tokens (9001 in the messages, 0 in the completion).",
        'context_length_exceeded',
      ),
    },
    expected: {
      kind: 'context_overflow',
      remedy: 'compress',
      numbers: { maxContext: 8192, requested: 9001, promptTokens: 9001, completionTokens: 0 },
      evidence: [
        'you requested 9001 tokens (9001 in the messages, 0 in the completion)',
        'maximum context length is 8192',
      ],
    },
  },
  {
    name: 'an overflow as the first event of a 200 stream (OpenAI chat shape)',
    answer: {
      status: 200,
      body: `data: ${openAIError("This model's maximum context length is 16385 tokens. However, your messages resulted in 17000 tokens.", 'context_length_exceeded')}\n\n`,
    },
    expected: {
      kind: 'context_overflow',
      remedy: 'compress',
      numbers: { maxContext: 16385, promptTokens: 17000 },
      evidence: ['resulted in 17000 tokens', 'maximum context length is 16385'],
    },
  },
  {
    name: 'Fireworks: "prompt is too long" with the model maximum (thousands separators)',
    answer: {
      status: 400,
      body: openAIError('The prompt is too long: 140,012, model maximum context length: 131,072', null),
    },
    expected: {
      kind: 'context_overflow',
      remedy: 'compress',
      numbers: { promptTokens: 140_012, maxContext: 131_072 },
      evidence: [
        'maximum context length: 131,072',
        'prompt is too long: 140,012,',
        'model maximum context length: 131,072',
      ],
    },
  },
  {
    // Vertex, as LiteLLM and relays pass it on (QuantumNous/new-api#2975): Claude Code's newer flags.
    name: 'Anthropic on Vertex: "Unexpected value(s) `…`, `…` for the `anthropic-beta` header"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'Unexpected value(s) `prompt-caching-scope-2026-01-05`, `structured-outputs-2025-12-15` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.',
        },
      }),
    },
    expected: {
      kind: 'refused_field',
      fixes: [
        { field: 'anthropic-beta', value: 'prompt-caching-scope-2026-01-05' },
        { field: 'anthropic-beta', value: 'structured-outputs-2025-12-15' },
      ],
    },
  },
  {
    // Bedrock names no flag (anthropics/claude-code#49370), here inside LiteLLM's own message (#21676).
    name: 'Bedrock: "invalid beta flag", as LiteLLM passes it on',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            '{"message":"invalid beta flag"}. Received Model Group=claude-opus-4-5-20251101\nAvailable Model Group Fallbacks=None',
          type: 'None',
          param: 'None',
          code: '400',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'anthropic-beta' }] },
  },
  {
    // Claude on Vertex or Bedrock without the feature's flag (anthropics/claude-code#21612, #49548).
    name: 'Claude on Vertex: "context_management: Extra inputs are not permitted"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'context_management: Extra inputs are not permitted',
        },
        request_id: 'req_vrtx_011CYSfBejG6JC8wpMay8JFs',
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'context_management' }] },
  },
  {
    // A member of one tool, as LiteLLM passes Bedrock's words on (anthropics/claude-code#11678, #82549).
    name: 'Bedrock: "tools.3.custom.input_examples: Extra inputs are not permitted", through LiteLLM',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            '{"message":"tools.3.custom.input_examples: Extra inputs are not permitted"}. Received Model Group=claude-sonnet-4-5-20250929\nAvailable Model Group Fallbacks=None',
          type: 'None',
          param: 'None',
          code: '400',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools[].input_examples' }] },
  },
  {
    // Kimi's Anthropic endpoint, which names nothing (MoonshotAI/kimi-cli#1449): tried in a conservative form.
    name: 'Kimi: "Invalid request Error", the whole of its message',
    answer: {
      status: 400,
      body: '{"error":{"type":"invalid_request_error","message":"Invalid request Error"},"type":"error"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'request.unexplained' }] },
  },
  {
    // Fireworks' schema check as it serves Kimi K2.6: conditionals merged across allOf (pi-subagents#325).
    name: 'Fireworks: "Conflict in schema definitions for key \'if\'"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          type: 'invalid_request_error',
          message:
            "Conflict in schema definitions for key 'if'. Previous: {'required': ['expand']}, New: {'required': ['collect']}",
        },
        type: 'error',
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools[].function.parameters.keywords' }] },
  },
  {
    // OpenRouter for a model none of whose endpoints caches so (musistudio/claude-code-router#207).
    name: 'OpenRouter: 404 "No endpoints found that support cache control"',
    answer: {
      status: 404,
      body: '{"error":{"message":"No endpoints found that support cache control","code":404}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].content[].cache_control' }] },
  },
  {
    // A relay of the Messages API before ChatGPT's Codex backend (router-for-me/CLIProxyAPI#3625).
    name: 'a relay: "System messages are not allowed" (Claude Code\'s system message in the conversation)',
    answer: { status: 400, body: '{"detail":"System messages are not allowed"}' },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].role.system.mid_conversation' }] },
  },
  ...(
    [
      [
        'deepseek-reasoner does not support this tool_choice',
        { field: 'tool_choice.forced' },
        'a forced tool (awesome-deepseek-integration#598)',
      ],
      [
        'thinking options type cannot be disabled when reasoning_effort is set',
        { field: 'thinking.type.disabled' },
        "a sub-agent's thinking turned off beside an effort (DeepSeek-V3#1397)",
      ],

      [
        "Invalid 'user_id': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        { field: 'metadata' },
        "Claude Code's user id (awesome-deepseek-agent#67)",
      ],
    ] as const
  ).map(([message, fix, what]) => ({
    name: `DeepSeek's Anthropic endpoint: ${what}`,
    answer: {
      status: 400,
      body: JSON.stringify({
        error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request_error' },
      }),
    },
    expected: { kind: 'refused_field' as const, fixes: [fix] },
  })),
  {
    // A system message in the conversation on Volcengine's Anthropic endpoint, its place masked
    // (QuantumNous/new-api#2288).
    name: 'Volcengine: "The parameter `***.role` … invalid value: `system`, supported values are: `assistant`, `user`"',
    answer: {
      status: 400,
      body: '{"error":{"type":"InvalidParameter","message":"The parameter `***.role` specified in the request are not valid: invalid value: `system`, supported values are: `assistant`, `user`. Request id: 021763978070916513ce85330429ea14b25f1ce17f48ff98e2241"},"type":"error"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].role.system.mid_conversation' }] },
  },
  {
    // A model that always thinks, on Volcengine's Anthropic endpoint (GLM-5.3: VicBilibily/GCMP#376): thinking
    // turned off is left out, as beside an effort on DeepSeek's.
    name: 'Volcengine: thinking turned off, of a model that always thinks',
    answer: {
      status: 400,
      body: '{"error":{"code":"InvalidParameter","message":"thinking.type `disabled` is not supported by this model Request id: 02178709990745945323167f444566161ccbd236f48bec571a303","param":"","type":"BadRequest"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'thinking.type.disabled' }] },
  },
  {
    // The other way round on its Chat Completions and Responses endpoints: an effort beside thinking turned
    // off is refused — the effort left out, thinking stays off as the client asked.
    name: 'Volcengine: "reasoning_effort is not supported when thinking is disabled"',
    answer: {
      status: 400,
      body: '{"error":{"message":"The parameter `reasoning` specified in the request are not valid: reasoning_effort is not supported when thinking is disabled. Request id: 021787101557836682583ac3749be18cdf4b3a38443303788afb2","type":"BadRequest","code":"InvalidParameter"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'reasoning_effort' }] },
  },
  {
    // Claude's own refusal: the choice left to it only while thinking is on.
    name: 'Anthropic: "Thinking may not be enabled when tool_choice forces tool use."',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'Thinking may not be enabled when tool_choice forces tool use.',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tool_choice.forced', value: 'thinking' }] },
  },
  {
    // llama.cpp's server before gpt-oss's template, a 500 (ggml-org/llama.cpp#19703: OpenCode's answers,
    // reasoning and text beside their calls): retried, it is refused the same; the reasoning left out.
    name: 'llama.cpp: "Cannot pass both content and thinking in an assistant message with tool calls!"',
    answer: {
      status: 500,
      body: JSON.stringify({
        error: {
          code: 500,
          message:
            '\n------------\nWhile executing CallExpression at line 290, column 178 in source:\n...{%- if message.content and message.thinking %}\nError: Jinja Exception: Cannot pass both content and thinking in an assistant message with tool calls! Put the analysis message in one or the other, but not both.',
          type: 'server_error',
        },
      }),
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'messages[].reasoning_content' }, { field: 'messages[].reasoning' }],
    },
  },
  // A model whose server takes no tools: told them in its prompt.
  ...(
    [
      [
        'Ollama, a model whose template has none (langgenius/dify#13538)',
        400,
        '{"error":{"message":"registry.ollama.ai/library/llama3:8b does not support tools","type":"api_error","param":null,"code":null}}',
      ],
      [
        "Google's Gemma 3 (langchain-ai/langchainjs's Google tests)",
        400,
        '{"error":{"code":400,"message":"Function calling is not enabled for models/gemma-3-27b-it","status":"INVALID_ARGUMENT"}}',
      ],
      [
        "Mistral's Voxtral (code 3051)",
        400,
        '{"object":"Error","message":"Function calling is not enabled for this model","type":"invalid_request_error","code":3051}',
      ],
      [
        "DeepSeek R1 on DeepSeek's API",
        400,
        '{"error":{"message":"deepseek-reasoner does not support Function Calling","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
      ],
      [
        'OpenRouter, a model none of whose endpoints takes tools (a 404)',
        404,
        '{"error":{"message":"No endpoints found that support tool use. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing","code":404}}',
      ],
      [
        "Zhipu's GLM-3",
        400,
        '{"error":{"message":"\'tools\' is not supported for model glm-3","type":"invalid_request_error"}}',
      ],
      [
        "llama.cpp's server without --jinja (defilantech/LLMKube#126)",
        500,
        '{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}',
      ],
      [
        "llama.cpp's server before --jinja took tools (ggml-org/llama.cpp#10920)",
        500,
        '{"code":500,"message":"Unsupported param: tools","type":"server_error"}',
      ],
    ] as const
  ).map(([name, status, body]) => ({
    name: `tools its server takes none of: ${name}`,
    answer: { status, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'tools.as_text' }] },
  })),
  // A model served through the Responses API alone: asked there (responses-wire.ts).
  ...(
    [
      [
        "OpenAI, a Codex or pro model (a 404: BerriAI/litellm's and RubyLLM's fallbacks read it)",
        404,
        '{"error":{"message":"This model is only supported in v1/responses and not in v1/chat/completions.","type":"invalid_request_error","param":"model","code":null}}',
      ],
      [
        "Azure OpenAI's v1 API, a pro model (OperationNotSupported)",
        400,
        '{"error":{"code":"OperationNotSupported","message":"The chatCompletion operation does not work with the specified model, gpt-5.4-pro. Please choose different model and try again. You can learn more about which models can be used with each operation here: https://go.microsoft.com/fwlink/?linkid=2197993."}}',
      ],
      [
        "Bedrock's Mantle",
        400,
        '{"error":{"message":"The model \'openai.gpt-oss-120b\' does not support the \'/v1/chat/completions\' API","type":"invalid_request_error"}}',
      ],
      [
        'GitHub Copilot, gpt-5.4 and later (caozhiyuan/copilot-api#113)',
        400,
        '{"error":{"message":"model \\"gpt-5.4-mini\\" is not accessible via the /chat/completions endpoint","code":"unsupported_api_for_model"}}',
      ],
      [
        'OpenAI, gpt-5.6: function tools with reasoning on chat completions (GEMISIS/leviath#333)',
        400,
        '{"error":{"message":"Function tools with reasoning_effort are not supported for gpt-5.6-terra in /v1/chat/completions. To use function tools, use /v1/responses or set reasoning_effort to \'none\'.","type":"invalid_request_error","param":"reasoning_effort","code":null}}',
      ],
      [
        'OpenAI, gpt-5.4: the same, its earlier wording (pipecat-ai/pipecat#4043)',
        400,
        '{"error":{"message":"Function tools with reasoning_effort are not supported for gpt-5.4 in /v1/chat/completions. Please use /v1/responses instead.","type":"invalid_request_error","param":"reasoning_effort","code":null}}',
      ],
      [
        'a relay that took Chat Completions away (RhythmicWave/NovelForge#103)',
        400,
        '{"error":{"message":"Provider API error: Unsupported legacy protocol: /v1/chat/completions is not supported. Please use /v1/responses. (request id: 2026031017460545047272d8iBfaXx)","type":"invalid_request_error"}}',
      ],
    ] as const
  ).map(([name, status, body]) => ({
    name: `a model served by the Responses API alone: ${name}`,
    answer: { status, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'wire.responses' }] },
  })),
  {
    // A relay writing a chat request for the Responses API, `auto` as an object (Kilo-Org/kilocode#13082).
    name: "a relay's `auto` tool choice as the Responses API refuses it: left out",
    answer: {
      status: 400,
      body: openAIError(
        "Invalid value: 'auto'. Supported values are: 'code_interpreter', 'programmatic_tool_calling', 'function', 'namespace', 'tool_search', 'file_search', 'web_search_preview', 'web_search_preview_2025_03_11', 'image_generation', 'mcp', 'custom', 'computer', 'computer_use_preview', 'shell', and 'apply_patch'.",
        'invalid_value',
      ).replace('"param":null', '"param":"tool_choice.type"'),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tool_choice.default' }] },
  },
  {
    // LM Studio's server: a tool choice as a string only (instructor's and LangChain's structured output).
    name: 'LM Studio: "Invalid tool_choice type: \'object\'. Supported string values: none, auto, required"',
    answer: {
      status: 400,
      body: '{"error":"Invalid tool_choice type: \'object\'. Supported string values: none, auto, required"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tool_choice.object' }] },
  },
  {
    // vLLM started without --enable-auto-tool-choice (vllm-project/vllm#9986): every request offering tools.
    name: 'vLLM: "auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    answer: {
      status: 400,
      body: '{"object":"error","message":"\\"auto\\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tool_choice.auto' }] },
  },
  {
    // Kimi's Anthropic endpoint on more tools than it takes (MoonshotAI/Kimi-K2#90: Claude Code's MCP tools).
    name: 'Kimi: "a max of 128 tools can be supported"',
    answer: {
      status: 400,
      body: '{"error":{"type":"invalid_request_error","message":"a max of 128 tools can be supported"},"type":"error"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools.length', atMost: 128 }] },
  },
  {
    // A message that says more is not one that names nothing.
    name: 'a refusal that begins so and says what: "Invalid request Error: max_tokens must be positive"',
    answer: {
      status: 400,
      body: '{"error":{"type":"invalid_request_error","message":"Invalid request Error: max_tokens must be positive"},"type":"error"}',
    },
    expected: { kind: 'bad_request' },
  },
  {
    // Strict tool use, which Bedrock refuses for Sonnet 5 and Opus 5.5 (lobehub/lobehub#19876), in its own words.
    name: 'Bedrock: "tools.0.custom.strict: Extra inputs are not permitted"',
    answer: {
      status: 400,
      body: JSON.stringify({ message: 'tools.0.custom.strict: Extra inputs are not permitted' }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools[].strict' }] },
  },
  ...(
    [
      [
        "Vertex on Claude's tool call sent back with its caller (langchain-ai/langchain-google#1446)",
        'messages.7.content.1.tool_use.caller: Extra inputs are not permitted',
        [{ field: 'blocks[].tool_use.caller' }],
      ],
      [
        "Bedrock on a text's citations (anthropics/claude-code#146)",
        'messages.27.content.0.text.citations: Extra inputs are not permitted',
        [{ field: 'blocks[].text.citations' }],
      ],
      [
        'a mark on a thinking block (a proxy before Claude)',
        'messages.21.content.0.thinking.cache_control: Extra inputs are not permitted',
        [{ field: 'blocks[].thinking.cache_control' }],
      ],
      [
        "Claude Code's diagnostics on Vertex (anthropics/claude-code#82539)",
        'diagnostics: Extra inputs are not permitted',
        [{ field: 'diagnostics' }],
      ],
    ] as const
  ).map(([name, message, fixes]) => ({
    name: `a member Claude's host does not know: ${name}`,
    answer: {
      status: 400,
      body: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } }),
    },
    expected: { kind: 'refused_field' as const, fixes: fixes.map((fix) => ({ ...fix })) },
  })),
  {
    // What makes the block is not left out: the client's to fix.
    name: "a tool call's input refused as extra (not a member the gateway leaves out)",
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'messages.3.content.0.tool_use.input: Extra inputs are not permitted',
        },
      }),
    },
    expected: { kind: 'bad_request' },
  },
  {
    // A member the gateway does not leave out: the client's to fix.
    name: 'Bedrock: "messages.0.name: Extra inputs are not permitted" (not a member the gateway leaves out)',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'messages.0.name: Extra inputs are not permitted' },
      }),
    },
    expected: { kind: 'bad_request' },
  },
  {
    // Opus 4.7 and later take adaptive thinking only (zhukunpenglinyutong/jetbrains-cc-gui#1003).
    name: 'Claude Opus 4.7: "\\"thinking.type.enabled\\" is not supported for this model"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'thinking.type.enabled' }] },
  },
  {
    // MiniMax-M3's Anthropic-compatible API takes adaptive thinking only (CherryHQ/cherry-studio#16431), also
    // as a relay passes it on (HenriGrimm/Minnow#364).
    name: 'MiniMax-M3: "invalid thinking.type: \\"enabled\\" (allowed: adaptive, disabled) (2013)"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'bad_request_error',
          message:
            'Error from provider (MiniMax): invalid params, invalid thinking.type: "enabled" (allowed: adaptive, disabled) (2013)',
          http_code: '400',
        },
        request_id: '068a807bc9c47de0db57062e',
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'thinking.type.enabled' }] },
  },
  {
    // A MiniMax M3 endpoint that takes a budget only (anomalyco/opencode#35138).
    name: 'MiniMax M3 elsewhere: "Validation: thinking.type must be enabled or disabled"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'Validation: thinking.type must be enabled or disabled',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'thinking.type.adaptive' }] },
  },
  {
    // A chat app's penalties, to Gemini's OpenAI-compatible endpoint (RSSBox#132, sleepydeer666/RPGBox#2): its
    // message names each field it does not know.
    name: 'Gemini on the penalties it does not know',
    answer: {
      status: 400,
      body: JSON.stringify([
        {
          error: {
            code: 400,
            message:
              'Invalid JSON payload received. Unknown name "frequency_penalty": Cannot find field.\nInvalid JSON payload received. Unknown name "presence_penalty": Cannot find field.',
            status: 'INVALID_ARGUMENT',
          },
        },
      ]),
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'frequency_penalty' }, { field: 'presence_penalty' }],
    },
  },
  ...['Penalty is not enabled for this model', 'Penalty is not enabled for models/gemini-1.5-pro'].map(
    (message) => ({
      // Gemini behind OpenRouter or Vertex (Ikalus1988/MisakaNet#1473), and its own API (SillyTavern/SillyTavern#3015).
      name: `Gemini elsewhere: "${message}"`,
      answer: {
        status: 400,
        body: JSON.stringify({ error: { code: 400, message, status: 'INVALID_ARGUMENT' } }),
      },
      expected: {
        kind: 'refused_field' as const,
        fixes: [
          { field: 'frequency_penalty' },
          { field: 'presence_penalty' },
          { field: 'repetition_penalty' },
        ],
      },
    }),
  ),
  {
    // Haiku 4.5 takes a budget only (mnfst/llm-gateway#1928).
    name: 'Claude Haiku 4.5: "adaptive thinking is not supported on this model"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'adaptive thinking is not supported on this model' },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'thinking.type.adaptive' }] },
  },
  {
    // Sonnet 4.5 on Vertex behind LiteLLM, Claude Code 2.1.74 on (anthropics/claude-code#33506).
    name: "Vertex: \"thinking: Input tag 'adaptive' found using 'type' does not match any of the expected tags\"",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            '{"type":"error","error":{"type":"invalid_request_error","message":"thinking: Input tag \'adaptive\' found using \'type\' does not match any of the expected tags: \'disabled\', \'enabled\'"},"request_id":"req_vrtx_011CYxgzty4JMfWjn9HrqoX3"}. Received Model Group=claude-4.5-sonnet\nAvailable Model Group Fallbacks=None',
          type: 'None',
          param: 'None',
          code: '400',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'thinking.type.adaptive' }] },
  },
  {
    // GitHub Copilot's Messages endpoint (caozhiyuan/copilot-api#190): the efforts it takes, listed.
    name: 'GitHub Copilot: "output_config.effort \\"high\\" is not supported by model claude-opus-4.7; supported values: [medium]"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'output_config.effort "high" is not supported by model claude-opus-4.7; supported values: [medium]',
          code: 'invalid_reasoning_effort',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'output_config.effort', value: 'medium' }] },
  },
  {
    // Anthropic, thinking off (anthropics/claude-code#90721): the ceiling named.
    name: 'Claude without thinking: "output_config.effort \'xhigh\' is not supported when thinking is disabled"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            "output_config.effort 'xhigh' is not supported when thinking is disabled on this model. Use effort 'high' or below, or enable thinking.",
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'output_config.effort', value: 'low,medium,high' }] },
  },
  {
    // OpenRouter's Messages endpoint, a model not Anthropic's (Claude Code's tool search on GLM).
    name: 'OpenRouter: "Deferred custom tools are only supported on Anthropic models …"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'Deferred custom tools are only supported on Anthropic models and on Anthropic-compatible provider endpoints that implement deferral. Other endpoints cannot call tools omitted from tools[]. Received z-ai/glm-5.3-flash-20260826.',
          code: 400,
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools[].defer_loading' }] },
  },
  {
    // OpenRouter's Messages endpoint, a model not Anthropic's: Claude Code's context management
    // (multica-ai/multica#450).
    name: 'OpenRouter: "No endpoints available that support Anthropic\'s context management features …"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "No endpoints available that support Anthropic's context management features (context-management-2025-06-27). Context management requires a supported provider (Anthropic).",
          code: 400,
        },
      }),
    },
    expected: {
      kind: 'refused_field',
      fixes: [
        { field: 'context_management' },
        { field: 'anthropic-beta', value: 'context-management-2025-06-27' },
      ],
    },
  },
  {
    // Moonshot on a tool whose parameters give no type (farion1231/cc-switch#5046: Codex's tools on Kimi K2.7).
    name: 'Moonshot: "tools.function.parameters.type is required and must be \\"object\\""',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message: 'Invalid request: tools.function.parameters.type is required and must be "object"',
          type: 'invalid_request_error',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools[].function.parameters.mfjs' }] },
  },
  ...(
    [
      // The Notion MCP server's tool on Kimi (MoonshotAI/kimi-code#2661).
      "<At path 'root': when using anyOf, type should be defined in anyOf items instead of the parent schema>",
      // pi-subagents through OpenRouter (nicobailon/pi-subagents#127).
      "<At path 'properties.skill': when using anyOf, type should be defined in anyOf items instead of the parent schema>",
      // Pi's TypeBox schemas on Kimi K2.7 Code (earendil-works/pi#5822).
      "<At path 'properties.task': type is not defined>",
      // oh-my-pi's `outputSchema: true` on Kimi K3 (can1357/oh-my-pi#5952).
      "<At path 'properties.tasks.items.properties': property schema for 'outputSchema' must be an object>",
    ] as const
  ).map((details) => ({
    name: `Moonshot: "tools.function.parameters is not a valid moonshot flavored json schema, details: ${details}"`,
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message: `Invalid request: tools.function.parameters is not a valid moonshot flavored json schema, details: ${details}`,
          type: 'invalid_request_error',
        },
      }),
    },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'tools[].function.parameters.mfjs' }] },
  })),
  ...(
    [
      [
        "Volcano Engine's Ark, a PDF Claude Code read (farion1231/cc-switch#1519)",
        '{"error":{"code":"InvalidParameter","message":"The parameter `messages.content.type` specified in the request are not valid: invalid value: `document`, supported values are: `text`, `thinking`, `image`, \'tool_use\' and `tool_result`. Request id: 0217736355560584bb2d320cfcd0d3dcaa0804120ace3f94d4c42","param":"","type":"BadRequest"}}',
        'text,thinking,image,tool_use,tool_result',
      ],
      [
        "Ark, a tool search's result, unquoted (anthropics/claude-code#30912)",
        '{"error":{"code":"InvalidParameter","message":"The parameter messages.content.type specified in the request are not valid: invalid value: tool_reference, supported values are: text, thinking, image, \'tool_use\' and tool_result. Request id: 021772678016895c256f59b15888350023d38d3a642b0bfa2d673","param":"","type":"BadRequest"}}',
        'text,thinking,image,tool_use,tool_result',
      ],
      [
        'Ark, as Claude Code showed it cut short (anthropics/claude-code#69738): its list as it is',
        '{"type":"error","error":{"type":"invalid_request_error","message":"The parameter messages.content.type specified in the request are not valid: invalid value"}}',
        'text,thinking,image,tool_use,tool_result',
      ],
      [
        "DeepSeek's Anthropic endpoint, a picture Claude Code attached (deepseek-ai/DeepSeek-V3#1026)",
        '{"error":{"message":"Failed to deserialize the JSON body into the target type: messages[66].content: unknown variant `image`, expected one of `text`, `tool_use`, `tool_result`, `thinking` at line 1 column 971539","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
        'text,tool_use,tool_result,thinking',
      ],
      [
        "ModelScope's proxy schema, Claude Code's thinking (modelscope/modelscope#1616)",
        '{"detail":[{"type":"literal_error","loc":["body","messages",1,"content","list[union[ClaudeContentBlockText,ClaudeContentBlockImage,ClaudeContentBlockToolUse,ClaudeContentBlockToolResult]]",1,"ClaudeContentBlockText","type"],"msg":"Input should be \'text\'","input":"thinking","ctx":{"expected":"\'text\'"}}]}',
        'text,image,tool_use,tool_result',
      ],
      [
        "a local server's pydantic union, Claude Code's mid-conversation tool change (jundot/omlx#3754)",
        '{"detail":[{"type":"literal_error","loc":["body","messages",4,"content","list[union[ContentBlockText,ContentBlockImage,ContentBlockToolUse,ContentBlockToolResult,ContentBlockThinking]]",0,"ContentBlockText","type"],"msg":"Input should be \'text\'","input":"tool_addition"}]}',
        'text,image,tool_use,tool_result,thinking',
      ],
    ] as const
  ).map(([name, body, taken]) => ({
    name: `content blocks refused: ${name}`,
    answer: { status: body.startsWith('{"detail"') ? 422 : 400, body },
    expected: {
      kind: 'refused_field' as const,
      fixes: [{ field: 'messages[].content[].type', value: taken }],
    },
  })),
  ...(
    [
      [
        "DeepSeek's Anthropic endpoint, serde (deepseek-ai/DeepSeek-V3#1369)",
        400,
        '{"error":{"message":"Failed to deserialize the JSON body into the target type: messages[1].role: unknown variant `system`, expected `user` or `assistant` at line 1 column 2034","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
      ],
      [
        "a FastAPI proxy's 422 (Alishahryar1/free-claude-code#1041)",
        422,
        '{"detail":[{"type":"literal_error","loc":["body","messages",1,"role"],"msg":"Input should be \'user\' or \'assistant\'","input":"system","ctx":{"expected":"\'user\' or \'assistant\'"}}]}',
      ],
      [
        "Llama Stack's, in Python's quoting (ogx-ai/ogx#5982)",
        400,
        "{'errors': [{'loc': ['body', 'messages', 1, 'role'], 'msg': \"Input should be 'user' or 'assistant'\", 'type': 'literal_error'}]}",
      ],
      [
        'a pydantic error list inside an OpenAI-shaped error, as vLLM gives its validation errors (vllm-project/vllm#44576: Claude Code 2.1.154 on)',
        400,
        "{\"error\":{\"message\":\"[{'type': 'literal_error', 'loc': ('body', 'messages', 1, 'role'), 'msg': \\\"Input should be 'user' or 'assistant'\\\", 'input': 'system'}]\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}",
      ],
      [
        "Anthropic's for a model that takes none (Claude Code's, as a relay maps the model to an older one)",
        400,
        '{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.role: Input should be \'user\' or \'assistant\'"}}',
      ],
      [
        "Anthropic's own for a model that takes none, as a router passes it on (decolua/9router#1603)",
        400,
        '{"type":"error","error":{"type":"invalid_request_error","message":"role \'system\' is not supported on this model"},"request_id":"req_011CbcALbQefSYwgXDEWEqsW"}',
      ],
      [
        "LM Studio's standalone server, zod's words (lmstudio-ai/lmstudio-bug-tracker#2204)",
        400,
        '{"error":{"message":"Invalid discriminator value. Expected \'user\' | \'assistant\'","type":"invalid_request_error"}}',
      ],
      [
        "Ollama's Anthropic endpoint (ollama/ollama#16372)",
        400,
        '{"type":"error","error":{"type":"invalid_request_error","message":"unknown variant \'system\', expected \'user\' or \'assistant\'"}}',
      ],
      [
        "MiniMax's Anthropic endpoint, Claude Code 2.1.156 (MiniMax-AI/MiniMax-M2.7#43)",
        400,
        '{"type":"error","error":{"type":"bad_request_error","message":"invalid params, chat content has invalid message role: system (2013)","http_code":"400"},"request_id":"0660b098aa1e9dd5a6773a48c479fc89"}',
      ],
      [
        "a relay's (anthropics/claude-code#63469)",
        400,
        '{"type":"error","error":{"type":"invalid_request_error","message":"messages[1].role must be either \'user\' or \'assistant\', but got \'system\'"}}',
      ],
      [
        "Anthropic's older words, as a relay passes them on",
        400,
        '{"type":"error","error":{"type":"invalid_request_error","message":"messages: Unexpected role \\"system\\". The Messages API accepts a top-level `system` parameter, not \\"system\\" as an input message role."}}',
      ],
    ] as const
  ).map(([name, status, body]) => ({
    name: `a system message in the conversation refused: ${name}`,
    answer: { status, body },
    expected: {
      kind: 'refused_field' as const,
      fixes: [{ field: 'messages[].role.system.mid_conversation' }],
    },
  })),
  ...(
    [
      [
        'Bedrock through LiteLLM (BerriAI/litellm#15880)',
        '{"error":{"message":"{\\n      \\"message\\": \\"tools.20.custom.cache_control.ephemeral.ttl: Extra inputs are not permitted\\"\\n    }. Received Model Group=bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0\\n    Available Model Group Fallbacks=None","type":"None","param":"None","code":"400"}}',
      ],
      [
        'Bedrock through LiteLLM, a message’s breakpoint (anthropics/claude-code#12122)',
        '{"error":{"message":"{\\"message\\":\\"messages.0.content.3.text.cache_control.ephemeral.ttl: Extra inputs are not permitted\\"}. Received Model Group=claude-sonnet-4-5\\nAvailable Model Group Fallbacks=None","type":"None","param":"None","code":"400"}}',
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `a cache breakpoint's ttl refused: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'cache_control.ttl' }] },
  })),
  {
    // GitHub Copilot's Messages endpoint, Claude Code 2.1.88's scoped breakpoint (caozhiyuan/copilot-api#145).
    name: 'GitHub Copilot: "system.1.cache_control.ephemeral.scope: Extra inputs are not permitted"',
    answer: {
      status: 400,
      body: '{"message":"system.1.cache_control.ephemeral.scope: Extra inputs are not permitted"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'cache_control.scope' }] },
  },
  {
    // Bedrock's Sonnet 4.5, Claude Code's effort (anthropics/claude-code-action#1005): the effort left out.
    name: 'Bedrock: "output_config.effort: Extra inputs are not permitted"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'output_config.effort: Extra inputs are not permitted',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'output_config.effort' }] },
  },
  ...(
    [
      [
        "GLM's API (continuedev/continue#13259)",
        '{"error":{"code":"1214","message":"The messages parameter is illegal. Please check the documentation."}}',
      ],
      [
        'GLM behind OpenCode Go, as a router passes it on (diegosouzapw/OmniRoute#11209)',
        '{"error":{"message":"Error from provider (Console Go): Upstream request failed: [1214] The messages parameter is illegal. Please check the documentation.","type":"invalid_request_error"}}',
      ],
      ["GLM's API in Chinese", '{"error":{"code":"1214","message":"messages 参数非法。请检查文档。"}}'],
    ] as const
  ).map(([name, body]) => ({
    name: `a conversation with no user message refused: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].role.user' }] },
  })),
  {
    // OpenRouter's routing, a text model given a tool result's picture, as a 404 (openclaw/openclaw#99078).
    name: 'OpenRouter, 404: "No endpoints found that support image input"',
    answer: {
      status: 404,
      body: '{"error":{"code":"404","message":"No endpoints found that support image input","param":"","type":""}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool.images' }] },
  },
  {
    // Zed's forced edit_file on GLM 4.5 Air through OpenRouter (zed-industries/zed#36094).
    name: 'OpenRouter, 404: "No endpoints found that support the provided \'tool_choice\' value"',
    answer: {
      status: 404,
      body: JSON.stringify({
        error: {
          message:
            "No endpoints found that support the provided 'tool_choice' value. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing",
          code: 404,
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tool_choice.forced' }] },
  },
  {
    // A model OpenRouter does not have: nothing the gateway can write otherwise. (One that has no endpoint
    // taking tools is told them in its prompt: below.)
    name: 'OpenRouter, 404, nothing the gateway can write otherwise: "No endpoints found for acme/missing-model."',
    answer: {
      status: 404,
      body: JSON.stringify({ error: { message: 'No endpoints found for acme/missing-model.', code: 404 } }),
    },
    expected: { kind: 'bad_request' },
  },
  {
    // OpenCode Zen's Claude, a PDF in a tool result (anomalyco/opencode#43502): what a tool result takes.
    name: 'OpenCode Zen: "tool_result content type must be \\"text\\" or \\"image\\", got \\"document\\""',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'Error from provider (Console): Upstream request failed: [invalid_request_error] messages[18]: content[0]: tool_result: content[1]: tool_result content type must be "text" or "image", got "document"',
          type: 'invalid_request_error',
        },
      }),
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'messages[].content[].content[].type', value: 'text,image' }],
    },
  },
  ...(
    [
      [
        "Ollama's Anthropic endpoint, Qwen 3.8's template, a 500 (ollama/ollama#17774)",
        500,
        '{"type":"error","error":{"type":"api_error","message":"system message must be at the beginning"}}',
      ],
      [
        "llama.cpp's server, a Qwen template's Jinja exception (ggml-org/llama.cpp#21954)",
        400,
        '{"error":{"code":400,"message":"Unable to generate parser for this template. Automatic parser generation failed: While executing CallExpression at line 92, column 32 in source: ... raise_exception(\'System message must be at the beginning.\') ... Error: Jinja Exception: System message must be at the beginning.","type":"invalid_request_error"}}',
      ],
    ] as const
  ).map(([name, status, body]) => ({
    name: `a later system message a chat template refuses: ${name}`,
    answer: { status, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].roles' }] },
  })),
  {
    // Kimi through Kilo (Kilo-Org/cloud#3807): an effort refused, those it takes listed.
    name: "Kimi: \"'reasoning_effort' does not support 'none' with this model. Supported values are: …\"",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "Unsupported value: 'reasoning_effort' does not support 'none' with this model. Supported values are: 'minimal', 'low', 'medium', and 'high'.",
          type: 'invalid_request_error',
        },
      }),
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'reasoning_effort', value: 'minimal,low,medium,high' }],
    },
  },
  {
    // Haiku 4.5 takes no effort at all (anthropics/claude-code#30760).
    name: 'Claude Haiku 4.5: "This model does not support the effort parameter."',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'This model does not support the effort parameter.',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'output_config.effort' }] },
  },
  {
    // Volcano Engine's coding plan (farion1231/cc-switch#2851): Claude Code's default xhigh.
    name: 'Volcano Engine: "The parameter `output_config.effort` … expected `low`, `medium`, `high` or `max`, but got `xhigh`"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'The parameter `output_config.effort` specified in the request are not valid: expected `low`, `medium`, `high` or `max`, but got `xhigh` instead. Request id: 021778996796425d54a2e8b6146550b9b78e5e06cf50b223556ee',
          type: 'BadRequest',
        },
      }),
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'output_config.effort', value: 'low,medium,high,max' }],
    },
  },
  {
    // A relay's own words (TokenRhythm/opensquilla#1102).
    name: 'a relay: "尚未验证或不支持的 anthropic-beta：effort-2025-11-24"',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: '尚未验证或不支持的 anthropic-beta：effort-2025-11-24',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'anthropic-beta', value: 'effort-2025-11-24' }] },
  },
  {
    // ChatGPT's Codex backend (router-for-me/CLIProxyAPI#897): a FastAPI `detail`, the field named bare.
    name: 'a provider that does not keep prompt caches for 24 hours: "Unsupported parameter: prompt_cache_retention"',
    answer: { status: 400, body: '{"detail":"Unsupported parameter: prompt_cache_retention"}' },
    expected: { kind: 'refused_field', fixes: [{ field: 'prompt_cache_retention' }] },
  },
  {
    // Claude Code's `[1m]` models flag Claude's 1M window; a model or a key without it refuses the flag.
    name: 'Anthropic: "The long context beta is not yet available for this subscription."',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"The long context beta is not yet available for this subscription."}}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'anthropic-beta', value: 'context-1m-2025-08-07', ofKey: true }],
    },
  },
  {
    name: 'Anthropic, a Pro plan\'s token: "This authentication style is incompatible with the long context beta header."',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"This authentication style is incompatible with the long context beta header."}}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'anthropic-beta', value: 'context-1m-2025-08-07', ofKey: true }],
    },
  },
  {
    // Claude's million past 200,000 tokens on a key not billed for it: a 429 that waiting does not change.
    name: 'Anthropic\'s 429 "Extra usage is required for long context requests."',
    answer: {
      status: 429,
      body: '{"type":"error","error":{"type":"rate_limit_error","message":"Extra usage is required for long context requests."}}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'anthropic-beta', value: 'context-1m-2025-08-07', ofKey: true }],
    },
  },
  {
    name: 'the same, as the newer plans word it: "Usage credits are required for long context requests"',
    answer: {
      status: 429,
      body: '{"type":"error","error":{"type":"rate_limit_error","message":"Usage credits are required for long context requests."}}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'anthropic-beta', value: 'context-1m-2025-08-07', ofKey: true }],
    },
  },
  {
    // Claude's fast mode on a key with no usage credits for it: a 429 that waiting does not change (its overage
    // header says why), answered at standard speed instead.
    name: 'Anthropic\'s 429 "Usage credits are required for fast mode."',
    answer: {
      status: 429,
      headers: { 'anthropic-ratelimit-unified-overage-disabled-reason': 'out_of_credits' },
      body: '{"type":"error","error":{"type":"rate_limit_error","message":"Usage credits are required for fast mode."}}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [
        { field: 'speed', ofKey: true },
        { field: 'anthropic-beta', value: 'fast-mode-2026-02-01', ofKey: true },
      ],
    },
  },
  {
    // As an Anthropic-compatible upstream passed it on to CLIProxyAPI (router-for-me/CLIProxyAPI#4703).
    name: "the same as a relay's 503 service_unavailable_error",
    answer: {
      status: 503,
      body: '{"error":{"message":"Usage credits are required for fast mode.","type":"service_unavailable_error","code":"service_unavailable_error"}}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [
        { field: 'speed', ofKey: true },
        { field: 'anthropic-beta', value: 'fast-mode-2026-02-01', ofKey: true },
      ],
    },
  },
  {
    // Fast mode asked of the API while it was Claude Code's alone (Wei-Shaw/claude-relay-service#1003).
    name: 'Anthropic: "Fast mode is currently available in research preview in Claude Code. It is not yet available via API."',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"Fast mode is currently available in research preview in Claude Code. It is not yet available via API."},"request_id":"req_011C"}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [
        { field: 'speed', ofKey: true },
        { field: 'anthropic-beta', value: 'fast-mode-2026-02-01', ofKey: true },
      ],
    },
  },
  {
    // A rate limit that names no fast mode stays a rate limit, waited for.
    name: 'a 429 on usage credits that is about something else stays a rate limit',
    answer: {
      status: 429,
      body: '{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization\'s rate limit of 450,000 input tokens per minute."}}',
    },
    expected: { kind: 'rate_limited' },
  },
  {
    // The gpt-5.6 family keeps caches 30 minutes at least (prompt_cache_options.ttl) and refuses the old field
    // (openai/codex#39442, NousResearch/hermes-agent#91164); a client printed it without the `error` around it.
    name: 'the gpt-5.6 family: "prompt_cache_retention is not supported on this model"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message: 'prompt_cache_retention is not supported on this model',
          type: 'invalid_request_error',
          param: 'prompt_cache_retention',
          code: 'invalid_parameter',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'prompt_cache_retention' }] },
  },
  {
    name: 'the same refusal as a client printed it, without the `error` around it',
    answer: {
      status: 400,
      body: '{"message":"prompt_cache_retention is not supported on this model","type":"invalid_request_error","param":"prompt_cache_retention","code":"invalid_parameter"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'prompt_cache_retention' }] },
  },
  {
    // The same sentence of a field the answer cannot do without is the client's to fix.
    name: 'a model that refuses a field no answer does without: "messages is not supported on this model"',
    answer: {
      status: 400,
      body: '{"error":{"message":"messages is not supported on this model","type":"invalid_request_error"}}',
    },
    expected: { kind: 'bad_request' },
  },
  {
    // GPT-5's 400,000 tokens are 272,000 of input and 128,000 of output: a prompt over the input cap is
    // refused whatever max_tokens says (cline/cline#5474, bytedance/deer-flow#721).
    name: 'OpenAI GPT-5: "Input tokens exceed the configured limit" (an input cap, not the window)',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 289650 tokens. Please reduce the length of the messages.',
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      }),
    },
    expected: {
      kind: 'context_overflow',
      remedy: 'compress',
      numbers: { maxInputTokens: 272_000, promptTokens: 289_650 },
      evidence: expect.arrayContaining([
        'configured limit of 272000 tokens. Your messages resulted in 289650',
      ]),
    },
  },
  {
    name: 'Bedrock (Claude through InvokeModel): ValidationException text',
    answer: { status: 400, body: '{"message":"prompt is too long: 201000 tokens > 200000 maximum"}' },
    expected: {
      kind: 'context_overflow',
      remedy: 'compress',
      numbers: { promptTokens: 201_000, maxContext: 200_000 },
      evidence: ['201000 tokens > 200000 maximum', 'prompt is too long: 201000'],
    },
  },
  {
    name: 'look-alike: Cohere output cap ("too many tokens" about the output)',
    answer: {
      status: 400,
      body: JSON.stringify({
        id: 'a1c0c5b2-8d3e-4b0f-9a5e-1f0e6c2d7b11',
        message:
          'too many tokens: max tokens must be less than or equal to 4096, the maximum output for this model - received 8192.',
      }),
    },
    expected: { kind: 'bad_request' },
  },
  {
    // Not an overflow though it names the window: the model's longest answer, learned as a field fix.
    name: 'Groq output cap mentioning context_window',
    answer: {
      status: 400,
      body: openAIError(
        '`max_tokens` must be less than or equal to `32768`, the maximum value for `max_tokens` is less than the `context_window` for this model',
        null,
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'max_tokens.value', atMost: 32_768 }] },
  },
  {
    name: 'look-alike: Groq 413 on tokens per minute',
    answer: {
      status: 413,
      body: openAIError(
        'Request too large for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 15000, please reduce your message size and try again.',
        'rate_limit_exceeded',
        'tokens',
      ),
    },
    expected: { kind: 'rate_limited' },
  },
  // A body larger than the provider takes, in bytes (413): the request goes again with its oldest images
  // named instead (requestBytesField), not as a prompt over the window.
  {
    name: 'look-alike: a 413 byte-size limit of a proxy',
    answer: {
      status: 413,
      body: '<html><body>413 Request Entity Too Large: body exceeds 10 MB</body></html>',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'request.bytes' }] },
  },
  {
    // GitHub Copilot's ceiling with no body at all (lidge-jun/opencodex#4119: "a bare HTTP 413 and an
    // empty diagnostic body"), on a 5.5 MB request: no prompt of that size is sent to a window that refuses
    // it as too long (the gateway fits it first), so it is the bytes.
    name: 'GitHub Copilot: a bare 413 on a 5.5 MB body (its byte ceiling, not a prompt over the window)',
    answer: { status: 413, body: '', sentBytes: 5_470_000 },
    expected: { kind: 'refused_field', fixes: [{ field: 'request.bytes' }] },
  },
  {
    // Cerebras's bare 413 on an over-long prompt of a small body stays an overflow (T31 of the sample).
    name: 'Cerebras: a bare 413 on a 300 KB body (a prompt over the window)',
    answer: { status: 413, body: '', sentBytes: 300_000 },
    expected: { kind: 'context_overflow', remedy: 'compress', numbers: {}, evidence: expect.anything() },
  },
  {
    // Anthropic's 32 MB limit on a Messages request, reached by a session of screenshots
    // (earendil-works/pi#401, anthropics/claude-code#3335): every later request was refused the same.
    name: 'Anthropic: a request over 32 MB (413 request_too_large)',
    answer: {
      status: 413,
      body: '{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'request.bytes' }] },
  },
  {
    // GitHub Copilot's chat endpoint at about 5.2 MB (lidge-jun/opencodex#4119, caozhiyuan/copilot-api#257:
    // Codex's view_image pictures in the thread's history).
    name: 'GitHub Copilot: a body over its byte ceiling (413 "failed to parse request")',
    answer: { status: 413, body: '{"error":{"message":"failed to parse request","code":""}}' },
    expected: { kind: 'refused_field', fixes: [{ field: 'request.bytes' }] },
  },
  {
    // Cloudflare in front of a provider (openai/codex#7682: a long thread of attached images).
    name: 'Cloudflare: 413 Request Entity Too Large (its HTML page)',
    answer: {
      status: 413,
      body: '<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'request.bytes' }] },
  },
  {
    // Text Generation Inference's 2 MB payload limit (huggingface/text-generation-inference#1802).
    name: 'TGI: Failed to buffer the request body: length limit exceeded (413)',
    answer: { status: 413, body: 'Failed to buffer the request body: length limit exceeded' },
    expected: { kind: 'refused_field', fixes: [{ field: 'request.bytes' }] },
  },
  {
    name: 'look-alike: a schema error',
    answer: {
      status: 400,
      body: openAIError(
        "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an object instead.",
        'invalid_type',
      ),
    },
    expected: { kind: 'bad_request' },
  },
  {
    name: 'a rate limit with retry-after-ms',
    answer: {
      status: 429,
      headers: { 'retry-after-ms': '1500', 'retry-after': '2' },
      body: openAIError('Rate limit reached for requests', 'rate_limit_exceeded', 'requests'),
    },
    expected: { kind: 'rate_limited', retryAfterMs: 1500 },
  },
  {
    name: 'a rate limit with retry-after in seconds',
    answer: { status: 429, headers: { 'retry-after': '3' }, body: '' },
    expected: { kind: 'rate_limited', retryAfterMs: 3000 },
  },
  {
    name: 'a rate limit with retry-after as an HTTP date, 20 s after the answer arrived',
    answer: {
      status: 429,
      headers: { 'retry-after': 'Tue, 24 Nov 2026 21:00:20 GMT' },
      body: '',
      receivedAtMs: Date.UTC(2026, 10, 24, 21, 0, 0),
    },
    expected: { kind: 'rate_limited', retryAfterMs: 20_000 },
  },
  {
    name: 'a 503 the upstream says not to retry (x-should-retry: false)',
    answer: { status: 503, headers: { 'x-should-retry': 'false' }, body: '' },
    expected: { kind: 'server', noRetry: true },
  },
  {
    name: 'a 429 with x-should-retry: true is retried as any rate limit',
    answer: { status: 429, headers: { 'x-should-retry': 'true', 'retry-after': '1' }, body: '' },
    expected: { kind: 'rate_limited', retryAfterMs: 1_000 },
  },
  {
    name: 'Gemini quota with "retry in" in the text',
    answer: {
      status: 429,
      body: '{"error":{"code":429,"message":"Quota exceeded. Please retry in 20.5s.","status":"RESOURCE_EXHAUSTED"}}',
    },
    expected: { kind: 'rate_limited', retryAfterMs: 20_500 },
  },
  {
    // continuedev/continue#10920: a day's tokens spent, the wait in Go's duration form.
    name: 'Groq tokens per day, "try again in 9m38.016s"',
    answer: {
      status: 429,
      body: openAIError(
        'Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01kjh7p9n8f1qs6nz2bz77vy6b` service tier `on_demand` on tokens per day (TPD): Limit 100000, Used 97050, Requested 3619. Please try again in 9m38.016s. Need more tokens%3F Upgrade to Dev Tier today at https://console.groq.com/settings/billing',
        'rate_limit_exceeded',
        'tokens',
      ),
    },
    expected: { kind: 'rate_limited', retryAfterMs: 578_016 },
  },
  {
    name: 'a wait of hours, minutes and seconds ("try again in 1h2m3.5s")',
    answer: { status: 429, body: openAIError('Please try again in 1h2m3.5s.', 'rate_limit_exceeded') },
    expected: { kind: 'rate_limited', retryAfterMs: 3_723_500 },
  },
  {
    name: 'a wait of milliseconds',
    answer: { status: 429, body: openAIError('Please try again in 650ms.', 'rate_limit_exceeded') },
    expected: { kind: 'rate_limited', retryAfterMs: 650 },
  },
  {
    // Gitlawb/openclaude#936, cline/cline#5301: a day's free requests spent; the reset the body quotes
    // from OpenRouter's headers (epoch milliseconds) is hours away.
    name: "OpenRouter's free-models-per-day, its reset quoted in the body",
    answer: {
      status: 429,
      receivedAtMs: 1_777_334_400_000 - 5 * 3_600_000,
      body: JSON.stringify({
        error: {
          message:
            'Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day',
          code: 429,
          metadata: {
            headers: {
              'X-RateLimit-Limit': '50',
              'X-RateLimit-Remaining': '0',
              'X-RateLimit-Reset': '1777334400000',
            },
            provider_name: null,
          },
        },
        user_id: 'user_2x',
      }),
    },
    expected: { kind: 'rate_limited', retryAfterMs: 5 * 3_600_000 },
  },
  {
    name: 'a reset stamp in epoch seconds, already past: no wait',
    answer: {
      status: 429,
      receivedAtMs: 1_777_334_460_000,
      body: '{"error":{"message":"Rate limit exceeded","metadata":{"headers":{"x-ratelimit-reset":"1777334400"}}}}',
    },
    expected: { kind: 'rate_limited', retryAfterMs: 0 },
  },
  {
    name: 'Azure OpenAI, "Please retry after 6 seconds" (a relay that drops its retry-after header)',
    answer: {
      status: 429,
      body: '{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}',
    },
    expected: { kind: 'rate_limited', retryAfterMs: 6_000 },
  },
  {
    name: 'OpenAI insufficient_quota: billing, not a rate (never retried)',
    answer: {
      status: 429,
      headers: { 'retry-after': '7' },
      body: openAIError('You exceeded your current quota.', 'insufficient_quota', 'insufficient_quota'),
    },
    expected: { kind: 'bad_request' },
  },
  {
    name: 'a wrong key',

    answer: { status: 401, body: openAIError('Incorrect API key provided: sk-xxx.', 'invalid_api_key') },
    expected: { kind: 'auth' },
  },
  {
    name: 'an overloaded server',
    answer: {
      status: 503,
      headers: { 'retry-after': '1' },
      body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    },
    expected: { kind: 'server', retryAfterMs: 1000 },
  },
  {
    name: 'a gateway timeout',
    answer: { status: 504, body: 'upstream timed out' },
    expected: { kind: 'timeout' },
  },
  {
    // The OpenAI SDKs retry whatever carries it, whatever the status.
    name: 'a 409 the upstream says to retry (x-should-retry: true) is retried as a server error',
    answer: {
      status: 409,
      headers: { 'x-should-retry': 'true', 'retry-after-ms': '40' },
      body: openAIError('The server had an error processing your request.', 'server_error'),
    },
    expected: { kind: 'server', retryAfterMs: 40 },
  },
  {
    name: 'a 504 the upstream says to retry (x-should-retry: true) is retried as a server error',
    answer: { status: 504, headers: { 'x-should-retry': 'true' }, body: 'upstream timed out' },
    expected: { kind: 'server' },
  },
  {
    name: 'a wrong key is not retried, whatever the upstream says',
    answer: {
      status: 401,
      headers: { 'x-should-retry': 'true' },
      body: openAIError('Incorrect API key provided: sk-xxx.', 'invalid_api_key'),
    },
    expected: { kind: 'auth' },
  },
  { name: 'a broken connection', answer: { transportError: 'connection' }, expected: { kind: 'connection' } },
  {
    name: 'a timeout before an answer',
    answer: { transportError: 'timeout' },
    expected: { kind: 'timeout' },
  },
  {
    name: 'a normal completion is no error',
    answer: { status: 200, body: '{"id":"x","object":"chat.completion","choices":[]}' },
    expected: { kind: 'none' },
  },
  {
    name: "a stream's first event alone, as the gateway reads it before relaying, is no error",
    answer: { status: 200, body: 'data: {"id":"x","choices":[{"delta":{"role":"assistant"}}]}' },
    expected: { kind: 'none' },
  },
  {
    name: "a stream's first event alone that carries an error (vLLM's shape) is that error",
    answer: {
      status: 200,
      body: 'data: {"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError","code":400}',
    },
    expected: {
      kind: 'context_overflow',
      // 96 tokens left for an answer once the messages' 4,000 are in: lowering max_tokens is no remedy.
      remedy: 'compress',
      numbers: { maxContext: 4096, promptTokens: 4000, requested: 5000, completionTokens: 1000 },
      evidence: expect.any(Array) as unknown as string[],
    },
  },
  {
    name: 'a normal stream is no error',
    answer: {
      status: 200,
      body: 'data: {"id":"x","choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n',
    },
    expected: { kind: 'none' },
  },
  // Fields OpenAI's reasoning models refuse (docs/budgeting.md#refused-fields): the bodies as OpenAI and
  // Azure OpenAI send them, and as LiteLLM passes them on.
  {
    name: "OpenAI: 'max_tokens' is not supported with this model (o-series, GPT-5)",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'unsupported_parameter',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'max_tokens', renameTo: 'max_completion_tokens' }] },
  },
  {
    name: 'LiteLLM passing on the same refusal inside its own message',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "litellm.BadRequestError: AzureException BadRequestError - Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.. Received Model Group=gpt-5\nAvailable Model Group Fallbacks=None",
          type: null,
          param: null,
          code: '400',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'max_tokens', renameTo: 'max_completion_tokens' }] },
  },
  {
    name: 'OpenAI: a temperature other than 1 (unsupported_value)',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
          type: 'invalid_request_error',
          param: 'temperature',
          code: 'unsupported_value',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'temperature' }] },
  },
  {
    name: "o1-preview: 'temperature' is not supported at all (unsupported_parameter)",
    answer: {
      status: 400,
      body: openAIError(
        "Unsupported parameter: 'temperature' is not supported with this model.",
        'unsupported_parameter',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'temperature' }] },
  },
  {
    name: "a max_tokens the client set out of range is the client's to fix",
    answer: {
      status: 400,
      body: openAIError(
        "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.",
        'integer_below_min_value',
      ),
    },
    expected: { kind: 'bad_request' },
  },
  {
    name: 'another unsupported parameter, with no replacement named, is not rewritten',
    answer: {
      status: 400,
      body: openAIError(
        "Unsupported parameter: 'logprobs' is not supported with this model.",
        'unsupported_parameter',
      ),
    },
    expected: { kind: 'bad_request' },
  },
  {
    name: 'Mistral: the stream_options a bridge adds (422 extra_forbidden at body.stream_options)',
    answer: {
      status: 422,
      body: '{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options","include_usage"],"msg":"Extra inputs are not permitted","input":true,"url":"https://errors.pydantic.dev/2.10/v/extra_forbidden"}]},"type":"invalid_request_error","param":null,"code":null}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'stream_options' }] },
  },
  {
    // OpenAI's wording, as GitHub Copilot's chat endpoint and Azure OpenAI answer it (getsentry/sentry-mcp#106).
    name: "a tool's description longer than the provider takes (400 string_above_max_length)",
    answer: {
      status: 400,
      body: '{"error":{"message":"Invalid \'tools[13].function.description\': string too long. Expected a string with maximum length 1024, but got a string with length 1103 instead.","type":"invalid_request_error","param":"tools[13].function.description","code":"string_above_max_length"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools[].function.description', atMost: 1024 }] },
  },
  {
    // Mistral's API, 2026 (as reported in nearai/ironclaw#1241): another provider's tool call id.
    name: "Mistral: another provider's tool call id (400 invalid_function_call)",
    answer: {
      status: 400,
      body: '{"object":"error","message":"Tool call id was call_Kq3vT9xLm2Pq8Rz1 but must be a-z, A-Z, 0-9, with a length of 9.","type":"invalid_function_call","param":null,"code":"3280","raw_status_code":400}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool_calls[].id' }] },
  },
  {
    // vLLM serving a Mistral model (2024 wording, as in jackmpcollins/magentic#276).
    name: 'vLLM with a Mistral model: a tool call id of another length (400 invalid_request_error)',
    answer: {
      status: 400,
      body: '{"object":"error","message":"Tool call id was 38f04d9ea185424a8dc6ed9a88da5 but must be a-z, A-Z, 0-9, with a length of 9.","type":"invalid_request_error","param":null,"code":null}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool_calls[].id' }] },
  },
  {
    // Google's OpenAI-compatible endpoint with Gemini 3, 2026 (as reported in manthanabc/paws#103): a tool
    // call of the current turn sent back without the thought signature its answer carried.
    name: 'Gemini 3: a tool call sent back without its thought signature (400, the error in an array)',
    answer: {
      status: 400,
      body: '[{\n  "error": {\n    "code": 400,\n    "message": "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:shell` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",\n    "status": "INVALID_ARGUMENT"\n  }\n}\n]',
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'messages[].tool_calls[].extra_content.google.thought_signature' }],
    },
  },
  {
    // Anthropic, 2026, after a switch from z.ai's GLM back to Claude (tombii/better-ccflare#52; the same
    // between Claude and MiniMax, decolua/9router#922): thinking another provider signed, in the history.
    name: 'Anthropic: thinking another provider signed, in the conversation (400 Invalid `signature`)',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: Invalid `signature` in `thinking` block"},"request_id":"req_011CanLF53sqQw6EPv4FW2CR"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    // Gemini 3 on Google AI Studio's OpenAI-compatible endpoint, a call signed by another backend (OpenRouter
    // passing it on: anomalyco/opencode#4832; heyhuynhgiabuu/proxypal#119).
    name: 'Gemini 3: a thought signature another backend gave (400 "Corrupted thought signature.")',
    answer: {
      status: 400,
      body: '[{"error":{"code":400,"message":"Corrupted thought signature.","status":"INVALID_ARGUMENT"}}]',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    // Gemini 3 on Vertex (Gemini CLI's), after Claude or Antigravity's Gemini in the same chat
    // (diegosouzapw/OmniRoute#1410, decolua/9router#301).
    name: 'Vertex: "Unable to submit request because Thought signature is not valid"',
    answer: {
      status: 400,
      body: '{"error":{"code":400,"message":"Unable to submit request because Thought signature is not valid.. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini","status":"INVALID_ARGUMENT"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    // GitHub Copilot, to Codex's /fast (router-for-me/CLIProxyAPIPlus#437).
    name: 'GitHub Copilot: no service tier at all (400 "service_tier is not supported")',
    answer: {
      status: 400,
      body: '{"error":{"message":"service_tier is not supported","code":"unsupported_value","param":"service_tier","type":"invalid_request_error"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'service_tier' }] },
  },
  {
    // ChatGPT's Codex backend with a tier it does not serve (openai/codex#15099, azerozero/grob#382).
    name: 'Codex backend: one service tier it does not serve ("Unsupported service_tier: flex")',
    answer: {
      status: 400,
      body: '{"type":"error","status":400,"error":{"type":"invalid_request_error","message":"Unsupported service_tier: flex"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'service_tier', value: 'flex' }] },
  },
  {
    // A relay in front of it (james-6-23/codex2api#27).
    name: 'a relay: the service tiers it takes ("Field \'service_tier\' must be one of: auto, default, fast")',
    answer: {
      status: 400,
      body: '{"error":{"code":"invalid_parameter","message":"Field \'service_tier\' must be one of: auto, default, fast","type":"invalid_request_error"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'service_tier' }] },
  },
  {
    // Azure's Responses API on reasoning OpenAI sealed (manaflow-ai/subrouter#221; OpenAI's the same of Azure's).
    name: 'Azure: encrypted reasoning another provider sealed (400 invalid_encrypted_content)',
    answer: {
      status: 400,
      body: '{"error":{"message":"The encrypted content for item rs_0dbe189eb5b4bc68016a84091a027c87d0b71b52535d016a50 could not be verified. Reason: Encrypted content could not be decrypted or parsed.","type":"invalid_request_error","param":null,"code":"invalid_encrypted_content"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    // OpenCode Zen's gateway before an OpenAI model (can1357/oh-my-pi#11928).
    name: 'OpenCode Zen: encrypted reasoning "was not issued to this caller"',
    answer: {
      status: 400,
      body: '{"error":{"message":"Upstream request failed: [invalid_request_error] reasoning `encrypted_content` was not issued to this caller","type":"invalid_request_error"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    // Claude on Vertex behind a relay (lbjlaq/Antigravity-Manager#608): Anthropic's error as a string in
    // Google's, its backquotes gone.
    name: "Vertex: Claude's refusal of a signature, as a string inside Google's error",
    answer: {
      status: 400,
      body: '{"error":{"code":400,"message":"{\\"type\\":\\"error\\",\\"error\\":{\\"type\\":\\"invalid_request_error\\",\\"message\\":\\"messages.3.content.13: Invalid signature in thinking block\\"},\\"request_id\\":\\"req_vrtx_011CX5qTTnVwm6eZyNzmWWRi\\"}","status":"INVALID_ARGUMENT"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    // Claude on Bedrock (ValidationException), a thinking block of a model Bedrock did not serve.
    name: "Bedrock: the model's errors, a thinking block's signature among them",
    answer: {
      status: 400,
      body: '{"message":"The model returned the following errors: messages.5.content.0: Invalid `signature` in `thinking` block"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    // Anthropic's refusals of a redacted block's data, and of a thinking block sent with no signature
    // (anomalyco/opencode#25005: a switch between Claude models that dropped it).
    name: 'Anthropic: a redacted thinking block whose data it did not give',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"messages.3.content.0: Invalid data in `redacted_thinking` block"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    name: 'Bedrock: a thinking block without its signature (anomalyco/opencode#25005)',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"messages.647.content.0.thinking.signature: Field required"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].thinking.signature' }] },
  },
  {
    // vLLM serving a model that takes no images, on a tool result's picture sent in a user message (a
    // Codex run on DeepSeek V4 through vLLM quoted it so).
    name: 'vLLM: an image to a model that takes none (400 "… is not a multimodal model")',
    answer: {
      status: 400,
      body: '{"object":"error","message":"DeepSeek-V4-Flash-0731 is not a multimodal model","type":"BadRequestError","param":null,"code":400}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool.images' }] },
  },
  {
    // DeepSeek's API, 2026 (ChatLunaLab/chatluna#867, lessweb/deepcode-cli#50: a Read of an image file).
    name: 'DeepSeek: an image part (400 unknown variant `image_url`, expected `text`)',
    answer: {
      status: 400,
      body: '{"error":{"message":"Failed to deserialize the JSON body into the target type: messages[3]: unknown variant `image_url`, expected `text` at line 1 column 173667","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool.images' }] },
  },
  {
    // new-api relaying to Gemini (QuantumNous/new-api#1233): a count cap answered with a 500, which a
    // retry would only meet again.
    name: 'new-api: "500 too many images in the message, max allowed is 16" (a cap, not a server error)',
    answer: {
      status: 500,
      body: '{"error":{"message":"too many images in the message, max allowed is 16","type":"new_api_error","param":"","code":null}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 16 }] },
  },
  {
    name: 'a 500 that only mentions images is still a server error',
    answer: {
      status: 500,
      body: '{"error":{"message":"internal error while decoding images","type":"server_error"}}',
    },
    expected: { kind: 'server' },
  },
  // A model that takes no file part (a PDF a client attached): each file is named instead (filesField).
  {
    // DeepSeek's API, 2026 (danny-avila/LibreChat#13336: every later message of the conversation refused).
    name: 'DeepSeek: a file part (400 unknown variant `file`, expected `text`)',
    answer: {
      status: 400,
      body: '{"error":{"message":"Failed to deserialize the JSON body into the target type: messages[1]: unknown variant `file`, expected `text` at line 1 column 1186","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].files' }] },
  },
  {
    // Qwen on DashScope, a file Qwen Code read (QwenLM/qwen-code#1888).
    name: "DashScope: \"Invalid value: file. Supported values are: 'text','image_url','video_url' and 'video'.\"",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message: "Invalid value: file. Supported values are: 'text','image_url','video_url' and 'video'.",
          type: 'invalid_request_error',
          code: 'invalid_value',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].files' }] },
  },
  {
    // DeepSeek's API later in 2026, on a PDF (danny-avila/LibreChat#16235).
    name: 'DeepSeek: a PDF (400 ".messages[1]: file must have a file_id or file_data")',
    answer: {
      status: 400,
      body: '{"error":{"message":".messages[1]: file must have a file_id or file_data","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].files' }] },
  },
  {
    // vLLM's chat parser (vllm-project/vllm#57774, langchain-ai/openwiki#171).
    name: "vLLM: Unsupported chat content part type: 'file' (400)",
    answer: {
      status: 400,
      body: `{"object":"error","message":"Unsupported chat content part type: 'file'. Supported types: 'text', 'image_url', 'input_audio', 'video_url', 'refusal'","type":"BadRequestError","param":null,"code":400}`,
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].files' }] },
  },
  {
    // vLLM's older parser (langchain-ai/openwiki#63), as its server answered it.
    name: 'vLLM: Unknown part type: file (400)',
    answer: {
      status: 400,
      body: '{"object":"error","message":"Unknown part type: file","type":"BadRequestError","param":null,"code":400}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].files' }] },
  },
  {
    // OpenAI on a file that is not a PDF is the client's to fix, not a model without files.
    name: 'OpenAI: a markdown file as file_data (400, the client’s to fix)',
    answer: {
      status: 400,
      body: `{"error":{"message":"Invalid file data: 'messages[3].content[2].file.file_data'. Expected a base64-encoded data URL with an application/pdf MIME type (e.g. 'data:application/pdf;base64,SGVsbG8sIFdvcmxkIQ=='), but got unsupported MIME type 'text/markdown'.","type":"invalid_request_error","param":"messages[3].content[2].file.file_data","code":"invalid_value"}}`,
    },
    expected: { kind: 'bad_request' },
  },
  {
    // OpenAI's own refusal of an image outside a user message is not a model without images.
    name: "OpenAI: an image in a tool message is the gateway's to place, not a model without images",
    answer: {
      status: 400,
      body: `{"error":{"message":"Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL.","type":"invalid_request_error","param":"messages.[2].content","code":null}}`,
    },
    expected: { kind: 'bad_request' },
  },
  // More images than the model takes in one request: the request goes again with the oldest named
  // instead (imageCountField), as many kept as the refusal says fit.
  {
    // Anthropic, once a Claude Code session has read its 101st picture (anthropics/claude-code#3397,
    // #19822, #24541): every later request of the session, /compact included, was refused the same.
    name: 'Anthropic: more than 100 images (400 "Too much media: 0 document pages + 103 images > 100")',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"Too much media: 0 document pages + 103 images > 100"},"request_id":"req_011CXLuUBKMffgQcCA9wfKbV"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 100 }] },
  },
  {
    // Anthropic's other wording, with a document beside the images (anthropics/claude-code#23392).
    name: 'Anthropic: images and a document (400 "too many images and documents: 104 + 1 > 100")',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"too many images and documents: 104 + 1 > 100"},"request_id":"req_011CXqJXwaFpHuYrnwkakp1F"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 99 }] },
  },
  {
    name: 'Anthropic: document pages beside the images (400 "Too much media: 3 document pages + 98 images > 100")',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"Too much media: 3 document pages + 98 images > 100"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 97 }] },
  },
  {
    // vLLM's --limit-mm-per-prompt (vllm-project/vllm#17092; comfyui_LLM_party#99 on Qwen2-VL).
    name: 'vLLM: more images than --limit-mm-per-prompt (400 "At most 5 image(s) may be provided in one request.")',
    answer: {
      status: 400,
      body: '{"object":"error","message":"At most 5 image(s) may be provided in one request.","type":"BadRequestError","param":null,"code":400}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 5 }] },
  },
  {
    name: 'vLLM, newer: "At most 1 image(s) may be provided in one prompt."',
    answer: {
      status: 400,
      body: '{"object":"error","message":"At most 1 image(s) may be provided in one prompt.","type":"BadRequestError","param":null,"code":400}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 1 }] },
  },
  {
    // An OpenAI-compatible server's count check, passed on by LiteLLM inside its own message
    // (AgnesAI-Labs/AgnesCode#50: the fifth picture of a session).
    name: 'LiteLLM passing on "Image count 5 exceeds limit 4 per request."',
    answer: {
      status: 400,
      body: openAIError(
        'litellm.BadRequestError: OpenAIException - {"object":"error","message":"Image count 5 exceeds limit 4 per request.","type":"BadRequestError","param":null,"code":400}',
        '400',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 4 }] },
  },
  {
    // Meta's Muse Spark API (anomalyco/opencode#47721, CommandCodeAI/desktop#64).
    name: 'Muse Spark: "request contains 52 images, exceeding the maximum of 50 allowed per request"',
    answer: {
      status: 400,
      body: openAIError('request contains 52 images, exceeding the maximum of 50 allowed per request', null),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 50 }] },
  },
  {
    // GitHub Copilot's endpoint for Gemini (microsoft/vscode#303825, #306919).
    name: 'Copilot: "The request contains too many images: 11 images were provided, but the model supports a maximum of 10 images."',
    answer: {
      status: 400,
      body: openAIError(
        'The request contains too many images: 11 images were provided, but the model supports a maximum of 10 images.',
        'invalid_request_body',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 10 }] },
  },
  {
    // the-open-agent/openagent#874.
    name: 'OpenAI-compatible: "Too many images in request. Max is 10."',
    answer: { status: 400, body: openAIError('Too many images in request. Max is 10.', null) },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images', atMost: 10 }] },
  },
  {
    // Anthropic's rule for a request of more than 20 images: each at most 2000 pixels a side
    // (anthropics/claude-code#24630 on an Android emulator's screenshots, langgenius/dify#11177).
    name: 'Anthropic: a large picture in a many-image request (400 "… exceed max allowed size for many-image requests: 2000 pixels")',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"messages.19.content.27.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels"},"request_id":"req_011CXz1QTqFvBhE6eLWZ135M"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images.size', atMost: 2000 }] },
  },
  {
    // Its 2026 wording (anthropics/claude-code#49537).
    name: 'Anthropic: "An image in the conversation exceeds the dimension limit for many-image requests (2000px)"',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"An image in the conversation exceeds the dimension limit for many-image requests (2000px)."}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images.size', atMost: 2000 }] },
  },
  {
    // A picture larger than Anthropic takes at all (anthropics/claude-code#2104, #8202, #14107: "after
    // the error appears, the session doesn't recover; compaction and retries both fail").
    name: 'Anthropic: an image over 5 MB (400 "image exceeds 5 MB maximum: 5312420 bytes > 5242880 bytes")',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: 5312420 bytes > 5242880 bytes"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images.bytes', atMost: 5242880 }] },
  },
  {
    // anthropics/claude-code#27090, #29551.
    name: 'Anthropic: an image over 8000 pixels (400 "At least one of the image dimensions exceed max allowed size: 8000 pixels")',
    answer: {
      status: 400,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"messages.3.content.50.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels"}}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].images.side', atMost: 8000 }] },
  },
  {
    // Mistral's API on a thinking model's answer replayed to it (charmbracelet/crush#1590; LiteLLM #30835).
    name: "Mistral: a thinking model's reasoning_content and OpenAI's refusal in a message (422 at body.messages.N.assistant)",
    answer: {
      status: 422,
      body: '{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","messages",1,"assistant","reasoning_content"],"msg":"Extra inputs are not permitted","input":"\\n"},{"type":"extra_forbidden","loc":["body","messages",1,"assistant","refusal"],"msg":"Extra inputs are not permitted","input":null}]},"type":"invalid_request_error","param":null,"code":null}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'messages[].reasoning_content' }, { field: 'messages[].refusal' }],
    },
  },
  {
    name: "Mistral: Gemini's extra_content on a tool call (422 at body.messages.N.assistant.tool_calls.M)",
    answer: {
      status: 422,
      body: '{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","messages",3,"assistant","tool_calls",0,"extra_content"],"msg":"Extra inputs are not permitted","input":{}}]},"type":"invalid_request_error","param":null,"code":null}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool_calls[].extra_content' }] },
  },
  {
    // A user's name, which Mistral's user message has no field for (nor does it read one): left out.
    name: "Mistral: a user message's name (422 at body.messages.0.user.name)",
    answer: {
      status: 422,
      body: '{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","messages",0,"user","name"],"msg":"Extra inputs are not permitted","input":"ana"}]},"type":"invalid_request_error","param":null,"code":null}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].name' }] },
  },
  {
    // OpenAI's older models on what openai-node's parse helper leaves on a message (openai/openai-node#1161).
    name: "OpenAI: a message's parsed and refusal (Additional properties are not allowed … - 'messages.2')",
    answer: {
      status: 400,
      body: '{"error":{"message":"Additional properties are not allowed (\'parsed\', \'refusal\' were unexpected) - \'messages.2\'","type":"invalid_request_error","param":null,"code":null}}',
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'messages[].parsed' }, { field: 'messages[].refusal' }],
    },
  },
  {
    name: 'Mistral: max_completion_tokens, which it takes as max_tokens',
    answer: {
      status: 422,
      body: '{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted","input":32000}]},"type":"invalid_request_error","param":null,"code":null}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'max_completion_tokens', renameTo: 'max_tokens' }] },
  },
  {
    name: 'Mistral: every field it does not know in one refusal, its JSON nested as a string',
    answer: {
      status: 422,
      body: JSON.stringify({
        object: 'error',
        message: JSON.stringify({
          detail: [
            {
              type: 'extra_forbidden',
              loc: ['body', 'user'],
              msg: 'Extra inputs are not permitted',
              input: 'user_9f2c',
            },
            {
              type: 'extra_forbidden',
              loc: ['body', 'stream_options'],
              msg: 'Extra inputs are not permitted',
              input: { include_usage: true },
            },
          ],
        }),
        type: 'internal_error_proxy',
        param: null,
        code: '1000',
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'user' }, { field: 'stream_options' }] },
  },
  {
    // A penalty the model cannot apply: left out, the model answering unpenalized.
    name: 'Mistral behind a proxy: a penalty it does not take (frequency_penalty)',
    answer: {
      status: 422,
      body: '{"object":"error","message":"{\\"detail\\":[{\\"type\\":\\"extra_forbidden\\",\\"loc\\":[\\"body\\",\\"frequency_penalty\\"],\\"msg\\":\\"Extra inputs are not permitted\\",\\"input\\":0.0}]}","type":"internal_error_proxy","param":null,"code":"1000"}',
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'frequency_penalty' }] },
  },
  {
    name: "Mistral: a sampling setting the client chose (logit_bias) is the client's to fix",
    answer: {
      status: 422,
      body: '{"object":"error","message":"{\\"detail\\":[{\\"type\\":\\"extra_forbidden\\",\\"loc\\":[\\"body\\",\\"logit_bias\\"],\\"msg\\":\\"Extra inputs are not permitted\\",\\"input\\":{}}]}","type":"internal_error_proxy","param":null,"code":"1000"}',
    },
    expected: { kind: 'bad_request' },
  },
  {
    name: 'Mistral: a field inside a message (messages.0.user.metadata) is not a request field',
    answer: {
      status: 422,
      body: '{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","messages",0,"user","metadata"],"msg":"Extra inputs are not permitted","input":"","url":"https://errors.pydantic.dev/2.6/v/extra_forbidden"}]},"type":"invalid_request_error","param":null,"code":null}',
    },
    expected: { kind: 'bad_request' },
  },
  {
    name: 'an OpenAI-shaped relay that does not know stream_options (unknown_parameter)',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message: "Unknown parameter: 'stream_options'. (request id: 20240806214436917505976hvsFC5y2)",
          type: 'invalid_request_error',
          param: 'stream_options',
          code: 'unknown_parameter',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'stream_options' }] },
  },
  {
    name: "OpenAI's older wording for a field it does not know",
    answer: {
      status: 400,
      body: openAIError('Unrecognized request argument supplied: stream_options', null),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'stream_options' }] },
  },
  ...(
    [
      [
        'xAI: a reasoning model, of its effort (JetBrains/junie#39)',
        '{"code":"Client specified an invalid argument","error":"Model grok-4-1-fast-reasoning does not support parameter reasoningEffort."}',
        [{ field: 'reasoning_effort' }],
      ],
      [
        'xAI: its other wording (charmbracelet/crush#386)',
        'Argument not supported on this model: reasoningEffort',
        [{ field: 'reasoning_effort' }],
      ],
      [
        'xAI: the penalties a reasoning model does not take, the model’s own then',
        '{"code":"Client specified an invalid argument","error":"Argument not supported on this model: presencePenalty"}',
        [{ field: 'presence_penalty' }],
      ],
    ] as const
  ).map(([name, body, fixes]) => ({
    name,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [...fixes] },
  })),
  {
    // A field the client chose that the gateway cannot stand in for: the client's to fix.
    name: 'xAI: a field that is not the gateway’s to leave out stays a bad request',
    answer: {
      status: 400,
      body: '{"code":"Client specified an invalid argument","error":"Argument not supported on this model: logprobs"}',
    },
    expected: { kind: 'bad_request' },
  },
  {
    name: "Gemini's OpenAI-compatible endpoint: a field it cannot find (its array of errors)",
    answer: {
      status: 400,
      body: JSON.stringify([
        {
          error: {
            code: 400,
            message: 'Invalid JSON payload received. Unknown name "parallel_tool_calls": Cannot find field.',
            status: 'INVALID_ARGUMENT',
            details: [
              {
                '@type': 'type.googleapis.com/google.rpc.BadRequest',
                fieldViolations: [
                  {
                    description:
                      'Invalid JSON payload received. Unknown name "parallel_tool_calls": Cannot find field.',
                  },
                ],
              },
            ],
          },
        },
      ]),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'parallel_tool_calls' }] },
  },
  {
    name: 'Anthropic (Claude Sonnet 4.5 and later): temperature and top_p together',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: '`temperature` and `top_p` cannot both be specified for this model. Please use only one.',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'top_p' }] },
  },
  {
    name: 'the same from Bedrock, passed on by LiteLLM',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'litellm.BadRequestError: BedrockException - {"message":"The model returned the following errors: `temperature` and `top_p` cannot both be specified for this model. Please use only one."}',
          type: null,
          param: null,
          code: '400',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'top_p' }] },
  },
  {
    name: 'the same wording in a 500 is a server error, not a refusal',
    answer: {
      status: 500,
      body: openAIError(
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        'server_error',
      ),
    },
    expected: { kind: 'server' },
  },
  // A tool's parameters in JSON Schema the provider does not take: an MCP server's, on every request.
  ...[
    [
      'OpenAI: an array without items (Automattic/wordpress-mcp#103)',
      `{"error":{"message":"Invalid schema for function 'mcp_wordpress-mcp_wc_update_product': In context=('properties', 'meta_data', 'items', 'properties', 'value', 'type', '6'), array schema missing items.","code":"invalid_function_parameters"}}`,
    ],
    [
      'OpenAI: parameters that are not an object',
      openAIError(
        `Invalid schema for function 'list_things': schema must be a JSON Schema of 'type: "object"', got 'type: "None"'.`,
        'invalid_function_parameters',
      ),
    ],
    [
      'Anthropic: alternatives at the top (aliargun/mcp-server-gemini#8)',
      '{"type":"error","error":{"type":"invalid_request_error","message":"tools.80.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"}}',
    ],
    [
      'Gemini: a keyword outside its Schema object (zed-industries/zed#45552)',
      JSON.stringify({
        error: {
          code: 400,
          message:
            'Invalid JSON payload received. Unknown name "const" at \'tools[0].function_declarations[9].parameters.properties[1].value.any_of[0].properties[0].value\': Cannot find field.',
          status: 'INVALID_ARGUMENT',
        },
      }),
    ],
    [
      'MiniMax: a tool without parameters (QwenLM/qwen-code#11905)',
      '{"type":"error","error":{"type":"bad_request_error","message":"invalid params, function parameters is empty (2013)","http_code":"400"},"request_id":"060fd231159a0f4f773989e10d60dc4c"}',
    ],
    [
      'Gemini through a gateway: an enum of other than text (anomalyco/opencode#2687)',
      openAIError(
        "Invalid value at 'tools.function_declarations[16].parameters.properties[1].value.any_of[1].properties[2].value.enum[0]' (TYPE_STRING), true",
        null,
      ),
    ],
  ].map(([name, body]) => ({
    name: name as string,
    answer: { status: 400, body: body as string },
    // Gemini's refusal is of keywords: its subset; OpenAI's and Anthropic's, a repair.
    expected: {
      kind: 'refused_field' as const,
      fixes: [
        {
          field: (name as string).startsWith('Gemini')
            ? 'tools[].function.parameters.keywords'
            : 'tools[].function.parameters',
        },
      ],
    },
  })),
  {
    // anomalyco/opencode#4909 (GitHub Copilot's GPT-5.1), musistudio/claude-code-router#686.
    name: "OpenAI: more tools than it takes in one request ('tools': array too long)",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 142 instead.",
          type: 'invalid_request_error',
          param: 'tools',
          code: 'array_above_max_length',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools.length', atMost: 128 }] },
  },
  // A longer answer asked for than the model gives: each provider's words, with the longest.
  ...(
    [
      [
        'DeepSeek (Gitlawb/openclaude#35)',
        openAIError(
          'Invalid max_tokens value, the valid range of max_tokens is [1, 8192]',
          'invalid_request_error',
        ),
        8_192,
      ],
      [
        'Anthropic (anthropics/claude-code#24451)',
        '{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 128001 > 64000, which is the maximum allowed number of output tokens for claude-opus-4-5-20251101"},"request_id":"req_011CXxg3eqF8ZMvqtkKHNjKQ"}',
        64_000,
      ],
      [
        'OpenAI GPT-4o',
        openAIError(
          'max_tokens is too large: 32000. This model supports at most 16384 completion tokens, whereas you provided 32000.',
          'invalid_value',
        ),
        16_384,
      ],
      [
        'Volcano Engine (Gitlawb/openclaude#331)',
        '{"error":{"code":"InvalidParameter","message":"The parameter `max_completion_tokens` specified in the request are not valid: integer above maximum value, expected a value <= 12288, but got 32000 instead. Request id: 0217752964393142fa50af54af66c5cfb922304bfd59ea286af93","param":"max_completion_tokens","type":"BadRequest"}}',
        12_288,
      ],
      // Claude Code asks 32,000 or more: bridged to Qwen on Alibaba's DashScope, every request failed.
      [
        "Alibaba's DashScope (qwencloud error codes: Range of max_tokens should be [1, xxx])",
        '{"error":{"code":"invalid_parameter_error","param":null,"message":"<400> InternalError.Algo.InvalidParameter: Range of max_tokens should be [1, 8192]","type":"invalid_request_error"},"id":"chatcmpl-6f1c","request_id":"6f1c0b52-0a5e-9d43-8b0e-4c1f2a7d9e31"}',
        8_192,
      ],
      [
        "Zhipu's GLM, in its Chinese words (code 1210)",
        '{"error":{"code":"1210","message":"max_tokens参数非法：限制数值范围[1,131072]"}}',
        131_072,
      ],
      [
        "Ollama Cloud, a body captured for Claude Code's 131,072",
        '{"error":"max_tokens (131072) exceeds model\'s maximum output tokens (65536) for model nemotron-3-ultra (ref: 5348158a-1407-4608)"}',
        65_536,
      ],
      [
        'a relay naming max_completion_tokens so',
        openAIError(
          "max_completion_tokens (384000) exceeds model's maximum output tokens (65536)",
          'invalid_request_error',
        ),
        65_536,
      ],
      [
        "Gemini on Vertex, its range's end not in it",
        '[{"error":{"code":400,"message":"Unable to submit request because it has a maxOutputTokens value of 131072 but the supported range is from 1 (inclusive) to 65537 (exclusive). Update the value and try again.","status":"INVALID_ARGUMENT"}}]',
        65_536,
      ],
      [
        "TokenRouter's GLM (its catalog's 943,717 refused on every request)",
        openAIError('max_tokens must be at most 131072, got 943717', 'invalid_request_error'),
        131_072,
      ],
    ] as const
  ).map(([name, body, atMost]) => ({
    name: `a longer answer than the model gives: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'max_tokens.value', atMost }] },
  })),
  // A hotter temperature than the model takes: OpenAI's API takes up to 2, Claude up to 1.
  ...(
    [
      [
        'Anthropic',
        '{"type":"error","error":{"type":"invalid_request_error","message":"temperature: range: 0..1"},"request_id":"req_011CZk9pQ2wLm5Tn8vXyR4cD"}',
      ],
      [
        "Claude on Bedrock behind a relay, in the relay's shape",
        '{"error":{"message":"temperature: range: 0..1","type":"upstream_error","param":null,"code":"400"}}',
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `a hotter temperature than the model takes: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'temperature.value', atMost: 1 }] },
  })),
  {
    // microsoft/autogen#5762: Gemini's OpenAI-compatible endpoint, its error in a list.
    name: 'Gemini: a message of no text ("empty text parameter")',
    answer: {
      status: 400,
      body: JSON.stringify([
        {
          error: {
            code: 400,
            message:
              'Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini',
            status: 'INVALID_ARGUMENT',
          },
        },
      ]),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].content.empty' }] },
  },
  {
    // coze-dev/coze-studio#46: Gemini's own API.
    name: 'Gemini: "contents.parts must not be empty"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          code: 400,
          message: '* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n',
          status: 'INVALID_ARGUMENT',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].content.empty' }] },
  },
  {
    // microsoft/semantic-kernel#13872: Gemini's API, and gateways that pass its words on.
    name: 'Gemini: the developer role',
    answer: {
      status: 400,
      body: openAIError("Gemini API doesn't support author role: developer", null),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].role.developer' }] },
  },
  {
    // icebear0828/codex-proxy#589: Codex on DeepSeek V4.
    name: 'DeepSeek: the developer role (a serde enum of roles)',
    answer: {
      status: 400,
      body: openAIError(
        'Failed to deserialize the JSON body into the target type: messages[1].role: unknown variant `developer`, expected one of `system`, `user`, `assistant`, `tool`, `latest_reminder` at line 1 column 38767',
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].role.developer' }] },
  },
  ...(
    [
      [
        'a serde server (0x676e67/duckai#16)',
        openAIError(
          'Failed to deserialize the JSON body into the target type: messages[0].content: invalid type: sequence, expected a string at line 5 column 19',
          null,
        ),
      ],
      [
        "DeepSeek's API, its words naming the message (Gitlawb/openclaude#806, cline/cline#230)",
        openAIError(
          'Failed to deserialize the JSON body into the target type: messages[1]: invalid type: sequence, expected a string at line 17 column 3',
          'invalid_request_error',
        ),
      ],
      [
        'Azure (danny-avila/LibreChat#3111)',
        openAIError(
          "Invalid type for 'messages[0].content': expected a string, but got an array instead.",
          'invalid_type',
        ),
      ],
      [
        'a tool message of parts (Neroued/ninfer#57)',
        '{"error":{"message":"tool messages must contain string content"}}',
      ],
      [
        'a server written in Go (aurora-develop/aurora#50)',
        '{"error":{"code":"json: cannot unmarshal array into Go struct field api_message.messages.content of type string","message":"Request must be proper JSON","param":null,"type":"invalid_request_error"}}',
      ],
      [
        "Groq, a system prompt's (OpenHands/OpenHands#4643)",
        `{"error":{"message":"'messages.0' : for 'role:system' the following must be satisfied[('messages.0.content' : value must be a string)]","type":"invalid_request_error"}}`,
      ],
      [
        "Groq, a tool result's",
        `{"error":{"message":"'messages.3' : for 'role:tool' the following must be satisfied[('messages.3.content' : value must be a string)]","type":"invalid_request_error"}}`,
      ],
      [
        'xAI, more than one text part (nocmt/LLMSearchPlus#2)',
        '{"code":"Client specified an invalid argument","error":"The model expects a single `text` element per message."}',
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `a content of text parts refused: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].content[]' }] },
  })),
  ...(
    [
      [
        "OpenAI, of an answer's null content replayed (docker-agent#63, vercel/ai#13744)",
        JSON.stringify({
          error: {
            message: "Invalid value for 'content': expected a string, got null.",
            type: 'invalid_request_error',
            param: 'messages.[2].content',
            code: null,
          },
        }),
      ],
      [
        'OpenAI, of a content left out',
        openAIError("Missing required parameter: 'messages[3].content'.", 'missing_required_parameter'),
      ],
      [
        'Ollama (its Go middleware: `%T` of nil)',
        '{"error":{"message":"invalid message content type: <nil>"}}',
      ],
      [
        'LM Studio, beside tool calls (lmstudio-bug-tracker#261)',
        `{"error":"Invalid 'content': 'content' field must be a string or an array of objects."}`,
      ],
      [
        "llama.cpp's server (ggml-org/llama.cpp#13471)",
        '{"error":{"code":400,"message":"Expected \'content\' to be a string or an array","type":"invalid_request_error"}}',
      ],
      [
        "llama.cpp's server, of an answer of reasoning only, its content left out",
        '{"error":{"code":400,"message":"Assistant message must contain either \'content\' or \'tool_calls\'!","type":"invalid_request_error"}}',
      ],
      [
        'a serde server, of a content left out (lablup/mlxcel#91)',
        'Failed to deserialize the JSON body into the target type: messages[2]: missing field `content` at line 1 column 311',
      ],
      [
        'xAI, a call’s message of no content (langchain-ai/langchain#34140)',
        '{"code":"Client specified an invalid argument","error":"Invalid request content: Each message must have at least one content element."}',
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `a null content refused: ${name}`,
    answer: { status: name.startsWith('a serde') ? 422 : 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].content.null' }] },
  })),
  ...(
    [
      [
        "Qwen 3.6's template in vLLM (vllm-project/vllm#41114)",
        '{"error":{"message":"System message must be at the beginning.","type":"BadRequestError","param":null,"code":400}}',
      ],
      [
        "Qwen 3's template, of the developer role",
        '{"error":{"message":"Unexpected message role.","type":"BadRequestError","param":null,"code":400}}',
      ],
      [
        "Mistral's template in vLLM",
        '{"object":"error","message":"After the optional system message, conversation roles must alternate user/assistant/user/assistant/...","type":"BadRequestError","param":null,"code":400}',
      ],
      [
        "Mistral's API, a user message after tool results (zed-industries/zed#37021)",
        '{"object":"error","message":"Unexpected role \'user\' after role \'tool\'","type":"invalid_request_message_order","param":null,"code":"3230"}',
      ],
      [
        'Mistral Small 4 on vLLM (mistralai/mistral-vibe#578)',
        '{"error":{"message":"Unexpected role \'user\' after role \'tool\'","type":"BadRequestError","param":null,"code":400}}',
      ],
      [
        'through LiteLLM (langgenius/dify#39467)',
        openAIError(
          'litellm.BadRequestError: OpenAIException - System message must be at the beginning.. Received Model Group=Qwen3.6-35B',
          '400',
        ),
      ],
      [
        "Gemini, a call that is not after the user's turn (google-gemini/gemini-cli#11814)",
        '[{"error":{"code":400,"message":"Please ensure that function call turn comes immediately after a user turn or after a function response turn.","status":"INVALID_ARGUMENT"}}]',
      ],
      [
        'Perplexity (perplexityai/api-discussion#265)',
        '{"error":{"message":"After the (optional) system message(s), user and assistant roles should be alternating.","type":"invalid_message","code":400}}',
      ],
      [
        'Bedrock through LiteLLM, a conversation that starts with the model (aws-solutions-library-samples/guidance-for-multi-provider-generative-ai-gateway-on-aws#123)',
        openAIError(
          'litellm.BadRequestError: BedrockException - {"message":"A conversation must start with a user message. Try again with a conversation that starts with a user message."}\n. Received Model Group=us.anthropic.claude-3-5-sonnet-20241022-v2:0',
          '400',
        ),
      ],
      [
        'Bedrock, two messages of one role (microsoft/semantic-kernel#10281)',
        '{"message":"A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."}',
      ],
      [
        "Anthropic's older words, through an OpenAI-compatible gateway (coaidev/coai#209)",
        '{"error":{"message":"messages: roles must alternate between \\"user\\" and \\"assistant\\", but found multiple \\"user\\" roles in a row","type":"invalid_request_error"}}',
      ],
      [
        'Gemini through a gateway (continuedev/continue#11164)',
        '{"error":{"message":"{\\n  \\"error\\": {\\n    \\"code\\": 400,\\n    \\"message\\": \\"Please ensure that function call turn comes immediately after a user turn or after a function response turn.\\",\\n    \\"status\\": \\"INVALID_ARGUMENT\\"\\n  }\\n}\\n","code":400,"status":"Bad Request"}}',
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `messages in an order a chat template refuses: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].roles' }] },
  })),
  ...(
    [
      [
        'Gemma 3 on Google’s API (lobehub/lobehub#7128)',
        '[{"error":{"code":400,"message":"Developer instruction is not enabled for models/gemma-3-27b-it","status":"INVALID_ARGUMENT"}}]',
      ],
      [
        'Gemma 2 on vLLM (huggingface/chat-ui#1386)',
        '{"object":"error","message":"System role not supported","type":"BadRequestError","param":null,"code":400}',
      ],
      [
        'Gemma 2 on SGLang, the template’s exception in its words (sgl-project/sglang#1342)',
        '{"object":"error","message":"jinja2.exceptions.TemplateError: System role not supported","type":"BadRequestError","param":null,"code":400}',
      ],
      [
        'Mistral 7B v0.2’s template in MLC (mlc-ai/mlc-llm#1681)',
        '{"object":"error","message":"Only user and assistant roles are supported!","type":"BadRequestError","param":null,"code":400}',
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `no system role: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].role.system' }] },
  })),
  ...(
    [
      [
        'MiniMax (NousResearch/hermes-agent#12167)',
        400,
        '{"type":"error","error":{"type":"bad_request_error","message":"invalid params, invalid function arguments json string, tool_call_id: call_function_60llhpv7vhhb_1 (2013)","http_code":"400"},"request_id":"060fd231159a0f4f773989e10d60dc4c"}',
      ],
      [
        'MiniMax through LiteLLM (HKUDS/nanobot#2373)',
        400,
        'litellm.APIConnectionError: MinimaxException - {"type":"error","error":{"type":"badrequesterror","message":"invalid params, invalid function arguments json string, toolcallid: 5LJlV4a2z (2013)","httpcode":"400"},"requestid":"060fd231159a0f4f773989e10d60dc4c"}',
      ],
      [
        'vLLM, a call cut short (vllm-project/vllm#48922)',
        400,
        '{"error":{"message":"Unterminated string starting at: line 1 column 14 (char 13)","type":"BadRequestError","param":null,"code":400}}',
      ],
      [
        'vLLM, a quote not escaped (vllm-project/vllm#43995)',
        400,
        '{"error":{"message":"Expecting \',\' delimiter: line 1 column 54 (char 53)","type":"BadRequestError","param":null,"code":400}}',
      ],
      [
        'vLLM, arguments of nothing (vllm-project/vllm#19419)',
        400,
        '{"error":{"message":"Expecting value: line 1 column 1 (char 0)","type":"BadRequestError","param":null,"code":400}}',
      ],
      [
        "llama.cpp's server, as a 500 (ggml-org/llama.cpp#25510)",
        500,
        '{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON","type":"server_error"}}',
      ],
      [
        'Kimi (justrach/codegraff#752)',
        400,
        openAIError(
          'Invalid request: messages.70.tool_calls.0.function.arguments: arguments must be a valid JSON object string',
          'invalid_prompt',
        ),
      ],
      [
        'NEAR AI (petersalomonsen/javascriptmusic#208)',
        400,
        '{"error":{"message":"Assistant tool call function.arguments must be valid JSON."}}',
      ],
    ] as const
  ).map(([name, status, body]) => ({
    name: `a call's arguments sent back that are not JSON: ${name}`,
    answer: { status, body },
    expected: {
      kind: 'refused_field' as const,
      fixes: [{ field: 'messages[].tool_calls[].function.arguments' }],
    },
  })),
  {
    name: "a 500 of Python's words alone is a server error",
    answer: {
      status: 500,
      body: '{"error":{"message":"Expecting value: line 1 column 1 (char 0)","type":"InternalServerError"}}',
    },
    expected: { kind: 'server' },
  },
  ...(
    [
      [
        'DeepSeek V4, thinking by default (deepseek-ai/DeepSeek-V3#1376)',
        openAIError('Thinking mode does not support this tool_choice', 'invalid_request_error'),
      ],
      [
        "Alibaba DashScope's Qwen, thinking (cloudwego/eino#994)",
        openAIError(
          '<400> InternalError.Algo.InvalidParameter: The tool_choice parameter does not support being set to required or object in thinking mode',
          'invalid_parameter_error',
        ),
      ],
      [
        'through a gateway (matiasbattocchia/open-bsp-api#20)',
        openAIError(
          'Upstream request failed: [invalidrequesterror] Thinking mode does not support this tool_choice',
          null,
        ),
      ],
      [
        'Kimi K2.6, thinking by default, a named tool (can1357/oh-my-pi#1077)',
        openAIError('tool_choice specified is incompatible with thinking enabled', 'invalid_request_error'),
      ],
      [
        'Kimi K2.6, required (AstrBotDevs/AstrBot#7805)',
        openAIError("tool_choice 'required' is incompatible with thinking enabled", 'invalid_request_error'),
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `a forced tool choice refused while the model thinks: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'tool_choice.forced' }] },
  })),
  ...(
    [
      [
        'Kimi K2.6, thinking (NoFxAiOS/nofx#1415)',
        '{"error":{"message":"invalid temperature: only 1 is allowed for this model","type":"invalid_request_error"}}',
        'temperature',
      ],
      [
        'Kimi without thinking (arcsin1/oh-my-ppt#45)',
        '{"error":{"message":"invalid temperature: only 0.6 is allowed for this model","type":"invalid_request_error"}}',
        'temperature',
      ],
      [
        'Kimi, top_p',
        '{"error":{"message":"invalid top_p: only 0.95 is allowed for this model","type":"invalid_request_error"}}',
        'top_p',
      ],
    ] as const
  ).map(([name, body, field]) => ({
    name: `a sampling setting the model holds at one value: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field }] },
  })),
  ...(
    [
      [
        "Groq, a thinking model's reasoning in a message (SimonSchubert/Kai#265)",
        "'messages.2' : for 'role:assistant' the following must be satisfied[('messages.2' : property 'reasoning_content' is unsupported)]",
        'messages[].reasoning_content',
      ],
      [
        "Groq, OpenAI's refusal beside an answer",
        "'messages.2' : for 'role:assistant' the following must be satisfied[('messages.2' : property 'refusal' is unsupported, did you mean 'role'?)]",
        'messages[].refusal',
      ],
      ['Groq, store (fanenr/chatbot#21)', "property 'store' is unsupported, did you mean 'stop'?", 'store'],
    ] as const
  ).map(([name, message, field]) => ({
    name: `a field Groq does not know: ${name}`,
    answer: { status: 400, body: JSON.stringify({ error: { message, type: 'invalid_request_error' } }) },
    expected: { kind: 'refused_field' as const, fixes: [{ field }] },
  })),
  {
    name: "Groq, a message field the client made up (llama_index#14701): the client's to fix",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "'messages.2' : for 'role:assistant' the following must be satisfied[('messages.2' : property 'status' is unsupported, did you mean 'name'?)]",
          type: 'invalid_request_error',
        },
      }),
    },
    expected: { kind: 'bad_request' },
  },
  ...(
    [
      [
        'DeepSeek V4 (earendil-works/pi#3636)',
        openAIError(
          'The `reasoning_content` in the thinking mode must be passed back to the API.',
          'invalid_request_error',
        ),
      ],
      [
        'DeepSeek V3.2 and the reasoner (continuedev/continue#10193)',
        openAIError(
          'Missing `reasoning_content` field in the assistant message at message index 4. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls',
          'invalid_request_error',
        ),
      ],
      [
        'Kimi K2.5 (continuedev/continue#11600)',
        openAIError(
          'thinking is enabled but reasoning_content is missing in assistant tool call message at index 2',
          'invalid_request_error',
        ),
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `a thinking model's reasoning not sent back: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].reasoning_content.missing' }] },
  })),
  ...(
    [
      [
        'Anthropic, Claude Sonnet 4.6 (cortexkit/magic-context#511)',
        '{"type":"error","error":{"type":"invalid_request_error","message":"This model does not support assistant message prefill. The conversation must end with a user message."}}',
      ],
      [
        "Anthropic, Claude Opus 4.6 and later, in its errors page's words",
        '{"type":"error","error":{"type":"invalid_request_error","message":"Prefilling assistant messages is not supported for this model."},"request_id":"req_011CZk4mP8vQn2Rr7sYtW3aB"}',
      ],
      [
        "GitHub Copilot's chat endpoint (NousResearch/hermes-agent#50055)",
        '{"error":{"message":"This model does not support assistant message prefill. The conversation must end with a user message.","code":"invalid_request_body"}}',
      ],
      [
        "Mistral's API (0xPlaygrounds/rig#708)",
        '{"object":"error","message":"Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant","type":"invalid_request_message_order","param":null,"code":"3230"}',
      ],
      [
        "llama.cpp's server, two answers at the end (co-l/openfox#367: Qwen through LiteLLM)",
        '{"error":{"code":400,"message":"Cannot have 2 or more assistant messages at the end of the list.","type":"invalid_request_error"}}',
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `a conversation that ends with an answer, to a model that takes no prefill: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].prefill' }] },
  })),
  ...(
    [
      [
        'DeepSeek V4 (llm-exe/llm-exe#662)',
        openAIError('This response_format type is unavailable now', 'invalid_request_error'),
      ],
      [
        'DeepSeek V3 in 2025 (browser-use/browser-use#215)',
        openAIError(
          'Failed to deserialize the JSON body into the target type: response_format: response_format.type `json_schema` is unavailable now at line 1 column 12440',
          null,
        ),
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `structured output by a JSON Schema refused: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'response_format.json_schema' }] },
  })),
  ...(
    [
      [
        'LM Studio on JSON mode (lmstudio-ai/lmstudio-bug-tracker#189, LoadShine/tada#16)',
        400,
        JSON.stringify({ error: "'response_format.type' must be 'json_schema' or 'text'" }),
        [{ field: 'response_format.json_object' }],
      ],
      [
        "LM Studio's earlier words, which refused `text` too (n8n-io/self-hosted-ai-starter-kit#9)",
        400,
        JSON.stringify({ error: "'response_format.type' must be 'json_schema'" }),
        [{ field: 'response_format.json_object' }],
      ],
      [
        'an older OpenAI model on Azure on JSON mode (mrwadams/stride-gpt#19)',
        400,
        openAIError(
          "Invalid parameter: 'response_format' of type 'json_object' is not supported with this model.",
          null,
        ),
        [{ field: 'response_format.json_object' }],
      ],
      [
        'the same model on a JSON Schema',
        400,
        openAIError(
          "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model. Learn more about supported models at the Structured Outputs guide: https://platform.openai.com/docs/guides/structured-outputs",
          null,
        ),
        [{ field: 'response_format.json_schema' }],
      ],
      [
        'GPT4All on any format (rspamd/rspamd#5276)',
        400,
        openAIError("'response_format' is not supported", null),
        [{ field: 'response_format' }],
      ],
      [
        "ChatGPT's Codex backend behind a relay (router-for-me/CLIProxyAPI#2352)",
        400,
        JSON.stringify({ detail: 'Unsupported parameter: response_format' }),
        [{ field: 'response_format' }],
      ],
      [
        "Azure's older API versions' words",
        400,
        openAIError('Unrecognized request argument supplied: response_format', null),
        [{ field: 'response_format' }],
      ],
      [
        "a server that validates as Mistral's does",
        422,
        JSON.stringify({
          object: 'error',
          message: {
            detail: [
              {
                type: 'extra_forbidden',
                loc: ['body', 'response_format'],
                msg: 'Extra inputs are not permitted',
                input: { type: 'json_object' },
              },
            ],
          },
        }),
        [{ field: 'response_format' }],
      ],
      [
        "Gemini's OpenAI-compatible endpoint beside tools, in its array (openai/openai-agents-python#656)",
        400,
        JSON.stringify([
          {
            error: {
              code: 400,
              message: "Function calling with a response mime type: 'application/json' is unsupported",
              status: 'INVALID_ARGUMENT',
            },
          },
        ]),
        [{ field: 'response_format.with_tools' }],
      ],
      [
        "Gemini's other words for it (snailyp/gemini-balance#264)",
        400,
        JSON.stringify({
          error: {
            code: 400,
            message: "Tool use with a response mime type: 'application/json' is unsupported",
            status: 'INVALID_ARGUMENT',
          },
        }),
        [{ field: 'response_format.with_tools' }],
      ],
    ] as const
  ).map(([name, status, body, fixes]) => ({
    name: `structured output in a form the server does not take: ${name}`,
    answer: { status, body },
    expected: { kind: 'refused_field' as const, fixes: [...fixes] },
  })),
  ...(
    [
      [
        'Claude Opus 4.7 natively (sipeed/picoclaw#2939)',
        JSON.stringify({
          type: 'error',
          error: { type: 'invalid_request_error', message: '`temperature` is deprecated for this model.' },
        }),
        [{ field: 'temperature' }],
      ],
      [
        'Claude Opus 4.7 on Bedrock behind LiteLLM (RooCodeInc/Roo-Code#12162)',
        openAIError(
          'litellm.BadRequestError: BedrockException - {"message":"The model returned the following errors: {\\"type\\":\\"error\\",\\"error\\":{\\"type\\":\\"invalid_request_error\\",\\"message\\":\\"`temperature` is deprecated for this model.\\"}}"}',
          null,
        ),
        [{ field: 'temperature' }],
      ],
      [
        'Claude Opus 4.8 on OpenCode Zen (ltmoerdani/opencode-copilot-chat#20)',
        JSON.stringify({ message: 'temperature is deprecated for this model.' }),
        [{ field: 'temperature' }],
      ],
      [
        'its top_k',
        JSON.stringify({
          type: 'error',
          error: { type: 'invalid_request_error', message: '`top_k` is deprecated for this model.' },
        }),
        [{ field: 'top_k' }],
      ],
    ] as const
  ).map(([name, body, fixes]) => ({
    name: `a sampling setting the model takes none of: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [...fixes] },
  })),
  ...(
    [
      [
        'Mistral (OpenHands/OpenHands#8685)',
        JSON.stringify({
          object: 'error',
          message: 'Assistant message must have either content or tool_calls, but not none.',
          type: 'invalid_request_message_order',
          param: null,
          code: '3230',
        }),
      ],
      [
        'Zhipu (BerriAI/litellm#3736)',
        JSON.stringify({
          error: { code: '1214', message: "messages[4]:content and tool_calls fields can't both be empty" },
        }),
      ],
      [
        'Zhipu, in its Chinese words (songquanpeng/one-api#1153)',
        JSON.stringify({
          error: { code: '1214', message: 'messages[2]:content和tool_calls 字段不能同时为空' },
        }),
      ],
    ] as const
  ).map(([name, body]) => ({
    name: `an answer of neither text nor calls: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].content.empty' }] },
  })),
  {
    name: "a seed, to Gemini's OpenAI-compatible endpoint (mcpchecker/mcpchecker#188)",
    answer: {
      status: 400,
      body: JSON.stringify([
        {
          error: {
            code: 400,
            message: 'Invalid JSON payload received. Unknown name "seed": Cannot find field.',
            status: 'INVALID_ARGUMENT',
          },
        },
      ]),
    },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'seed' }] },
  },
  ...(
    [
      [
        "OpenAI's reasoning models (huggingface/smolagents#1893, crewAIInc/crewAI#2738)",
        JSON.stringify({
          error: {
            message: "Unsupported parameter: 'stop' is not supported with this model.",
            type: 'invalid_request_error',
            param: 'stop',
            code: 'unsupported_parameter',
          },
        }),
        [{ field: 'stop' }],
      ],
      [
        "xAI's reasoning models",
        JSON.stringify({
          code: 'Client specified an invalid argument',
          error: 'Argument not supported on this model: stop',
        }),
        [{ field: 'stop' }],
      ],
      [
        "OpenAI's cap of 4",
        openAIError(
          "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length 5 instead.",
          'array_above_max_length',
        ),
        [{ field: 'stop[]', atMost: 4 }],
      ],
      [
        "Groq's cap of 4 (letta-ai/letta#1272)",
        JSON.stringify({
          error: { message: 'len(stop) > 4 is not supported', type: 'invalid_request_error' },
        }),
        [{ field: 'stop[]', atMost: 4 }],
      ],
      [
        "Zhipu's cap of 4, in its words (QwenLM/Qwen-Agent#370)",
        JSON.stringify({
          error: {
            message: 'stop:最大只能有4个停止词 (request id: 2024092911495580)',
            type: '',
            param: '',
            code: '1214',
          },
        }),
        [{ field: 'stop[]', atMost: 4 }],
      ],
      [
        "FastDeploy's cap",
        JSON.stringify({
          object: 'error',
          message:
            'Length of stop ([2, 16, 2, 1, 3, 3]) exceeds the limit max_model_len(5).Please reduce the number of stop or set a lager max_stop_seqs_num by `FD_MAX_STOP_SEQS_NUM`',
          code: 400,
        }),
        [{ field: 'stop[]', atMost: 5 }],
      ],
      [
        "DeepSeek's, which names no number (continuedev/continue#1513)",
        JSON.stringify({ detail: 'Stop string array too long' }),
        [{ field: 'stop' }],
      ],
      [
        "an older Azure API's (langchain-ai/langchain#20234)",
        openAIError(
          "'$.stop' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
          null,
        ),
        [{ field: 'stop' }],
      ],
      [
        "FastDeploy's on one stop too long",
        JSON.stringify({
          object: 'error',
          message:
            'Length of stop_seqs(16) exceeds the limit max_model_len(8).Please reduce the length of stop sequences or set a larger stop_seqs_max_len by `FD_STOP_SEQS_MAX_LEN`',
          code: 400,
        }),
        [{ field: 'stop' }],
      ],
    ] as const
  ).map(([name, body, fixes]) => ({
    name: `stop sequences the model does not take: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [...fixes] },
  })),
  ...(
    [
      [
        "Claude on a schema outside its subset (OpenRouter's words passed on)",
        "output_config.format.schema: For 'array' type, property 'maxItems' is not supported",
        [{ field: 'response_format.json_schema' }],
      ],
      [
        "Claude's beta field on an open object (ax-llm/ax#458)",
        "output_format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false",
        [{ field: 'response_format.json_schema' }],
      ],
      [
        'Claude past the optional properties it compiles (strict tools counted)',
        'Schemas contains too many optional parameters (28), which would make grammar compilation inefficient. Reduce the number of optional parameters in your tool schemas (limit: 24).',
        [{ field: 'response_format.json_schema' }, { field: 'tools[].strict' }],
      ],
      [
        'Claude past the unions it compiles',
        'Schemas contains too many parameters with union types (24 parameters with type arrays or anyOf). Reduce the number of parameters with unions (limit: 16 parameters with unions).',
        [{ field: 'response_format.json_schema' }, { field: 'tools[].strict' }],
      ],
      [
        'Claude on Vertex without structured outputs (anthropics/anthropic-sdk-csharp#132)',
        'output_config: Extra inputs are not permitted',
        [{ field: 'output_config' }, { field: 'response_format.json_schema' }],
      ],
      [
        'an effort alone: not the structured output',
        'output_config.effort: Extra inputs are not permitted',
        [{ field: 'output_config.effort' }],
      ],
    ] as const
  ).map(([name, message, fixes]) => ({
    name: `structured output Claude does not take: ${name}`,
    answer: {
      status: 400,
      body: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } }),
    },
    expected: { kind: 'refused_field' as const, fixes: fixes.map((fix) => ({ ...fix })) },
  })),
  {
    // Alibaba's DashScope for Qwen (coze-dev/coze-studio#2557).
    name: 'DashScope on a conversation of no user message: a user turn given',
    answer: {
      status: 400,
      body: openAIError(
        '<400> InternalError.Algo.InvalidParameter: The input messages do not contain elements with the role of user',
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].role.user' }] },
  },
  ...(
    [
      [
        // microsoft/semantic-kernel#9340, microsoft/autogen#3582: an agent's name of spaces, to OpenAI.
        'OpenAI on a name not of its pattern',
        openAIError(
          "Invalid 'messages[2].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
          'invalid_value',
        ),
        'messages[].name.pattern',
      ],
      [
        // microsoft/autogen#941: its older wording.
        'OpenAI on a name not of its pattern, in its older words',
        openAIError("' Content_Generator' does not match '^[a-zA-Z0-9_-]{1,64}$' - 'messages.3.name'", null),
        'messages[].name.pattern',
      ],
      [
        // pipecat-ai/pipecat#2274: an assistant's name, to Grok.
        "xAI on a name of a message not the user's",
        JSON.stringify({
          code: 'Client specified an invalid argument',
          error: 'Invalid request content: Only message of role user can have a name.',
        }),
        'messages[].name',
      ],
      [
        // TencentCloud/Octop#807: an agent's answer with its name, to a strict OpenAI-compatible gateway.
        'a gateway that takes no name in a message',
        openAIError('messages[2]: "name" is not supported', null),
        'messages[].name',
      ],
      [
        // BerriAI/litellm#2373: a user's name, to Perplexity.
        "Perplexity on a name, in pydantic's words",
        JSON.stringify({
          error: {
            message:
              '["At body -> messages -> 1: ChatMessage.__init__() got an unexpected keyword argument \'name\'"]',
            type: 'bad_request',
            code: 400,
          },
        }),
        'messages[].name',
      ],
      [
        'Groq on a name it does not take in a message',
        openAIError(
          "'messages.1' : for 'role:user' the following must be satisfied[('messages.1' : property 'name' is unsupported)]",
          null,
        ),
        'messages[].name',
      ],
    ] as const
  ).map(([name, body, field]) => ({
    name: `a message's name: ${name}`,
    answer: { status: 400, body },
    expected: { kind: 'refused_field' as const, fixes: [{ field }] },
  })),
  ...(
    [
      [
        'Cerebras, the property named by its path (Kilo-Org/kilocode#10375)',
        "messages.2.assistant.reasoning_content: property 'messages.2.assistant.reasoning_content' is unsupported",
      ],
      [
        'Cerebras, the property by its name',
        "messages.3.assistant.reasoning_content: property 'reasoning_content' is unsupported",
      ],
      [
        'Groq, the path in the location',
        "'messages.1' : for 'role':'assistant' the following must be satisfied[('messages.1.reasoning_content' : property 'reasoning_content' is unsupported)]",
      ],
    ] as const
  ).map(([name, message]) => ({
    name: `a thinking model's reasoning sent back: ${name}`,
    answer: {
      status: 400,
      body: JSON.stringify({
        message,
        type: 'invalid_request_error',
        param: 'validation_error',
        code: 'wrong_api_format',
      }),
    },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].reasoning_content' }] },
  })),
  ...(
    [
      [
        'Ollama on a model that does not think (Gitlawb/openclaude#1371)',
        '"llama3.1:8b" does not support thinking',
        { field: 'reasoning_effort' },
      ],
      [
        'Ollama on an effort a model does not take (ollama/ollama#12561)',
        'think value "medium" is not supported for this model',
        { field: 'reasoning_effort' },
      ],
      [
        "Ollama on Codex's xhigh (ollama/ollama#17252)",
        'invalid reasoning value: "xhigh" (must be "high", "medium", "low", "max", or "none")',
        { field: 'reasoning_effort', value: 'high,medium,low,max,none' },
      ],
    ] as const
  ).map(([name, message, fix]) => ({
    name,
    answer: { status: 400, body: openAIError(message, 'invalid_request_error') },
    expected: { kind: 'refused_field' as const, fixes: [{ ...fix }] },
  })),
  {
    // aws-samples/bedrock-access-gateway#239, langgenius/dify#17545: a compaction's history of calls, no tools.
    name: 'Bedrock behind LiteLLM on tool calls in a request of no tools',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'litellm.BadRequestError: BedrockException - {"message":"The toolConfig field must be defined when using toolUse and toolResult content blocks."}',
          type: null,
          param: null,
          code: '400',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool_calls.without_tools' }] },
  },
  {
    // A blank answer in the history, to Bedrock behind LiteLLM.
    name: 'Bedrock on a blank text field',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'litellm.BadRequestError: BedrockException - {"message":"The text field in the ContentBlock object at messages.1.content.0 is blank. Add text to the text field, and try again."}',
          type: null,
          param: null,
          code: '400',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].content.empty' }] },
  },
  {
    // anthropics/anthropic-sdk-python#494: Claude's words for it.
    name: 'Claude on tool blocks in a request of no tools',
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'Requests which include tool_use or tool_result blocks must define tools.',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool_calls.without_tools' }] },
  },
  {
    // open-webui/open-webui#9266, Aider-AI/aider#2974, CherryHQ/cherry-studio#2580: DeepSeek R1.
    name: 'DeepSeek R1 on two messages of one role in a row',
    answer: {
      status: 400,
      body: openAIError(
        'deepseek-reasoner does not support successive user or assistant messages (messages[10] and messages[11] in your input). You should interleave the user/assistant messages in the message sequence.',
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].roles' }] },
  },
  {
    name: 'DeepSeek R1 on a conversation that ends with an answer',
    answer: {
      status: 400,
      body: openAIError(
        'The last message of deepseek-reasoner must be a user message, or an assistant message with prefix mode on (refer to https://api-docs.deepseek.com/guides/chat_prefix_completion).',
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].prefill' }] },
  },
  {
    // CherryHQ/cherry-studio#1313: a model's empty turn in the history, to Moonshot.
    name: 'Moonshot on an empty answer in the history, by its position',
    answer: {
      status: 400,
      body: openAIError(
        "Invalid request: the message at position 4 with role 'assistant' must not be empty",
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].content.empty' }] },
  },
  {
    // decolua/9router#2268: a relay passing Claude Code's thinking on to MiniMax on NVIDIA's NIM.
    name: "NVIDIA's NIM naming the fields it does not know, a list",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message: 'Validation: Unsupported parameter(s): thinking, chat_template_kwargs, tools',
          type: 'Bad Request',
          code: 400,
        },
      }),
    },
    // What shapes the answer (tools) is the client's: only the hints are left out.
    expected: { kind: 'refused_field', fixes: [{ field: 'thinking' }, { field: 'chat_template_kwargs' }] },
  },
  {
    name: "Cerebras on a call's field, by its path",
    answer: {
      status: 400,
      body: JSON.stringify({
        message:
          "messages.2.assistant.tool_calls.0.extra_content: property 'messages.2.assistant.tool_calls.0.extra_content' is unsupported",
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool_calls[].extra_content' }] },
  },
  {
    // langchain-ai/langchain#33940: a request of one system message, in the array Gemini's
    // OpenAI-compatible endpoint answers with.
    name: "Gemini on instructions only: 'contents is not specified'",
    answer: {
      status: 400,
      body: JSON.stringify([
        {
          error: {
            code: 400,
            message: '* GenerateContentRequest.contents: contents is not specified\n',
            status: 'INVALID_ARGUMENT',
          },
        },
      ]),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].role.user' }] },
  },
  {
    // agentscope-ai/agentscope#425: one system message to qwen-plus on DashScope.
    name: 'DashScope on instructions only',
    answer: {
      status: 400,
      body: openAIError(
        '<400> InternalError.Algo.InvalidParameter: The messages list should not contain only one message with role "system". Please include at least one other role in the messages.',
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].role.user' }] },
  },
  {
    // HKUDS/nanobot#2469: Qwen 3.5 on DashScope, a call's arguments not JSON.
    name: "DashScope on a call's arguments: 'must be in JSON format'",
    answer: {
      status: 400,
      body: openAIError(
        '<400> InternalError.Algo.InvalidParameter: The "function.arguments" parameter of the code model must be in JSON format.',
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool_calls[].function.arguments' }] },
  },
  {
    // langchain-ai/langchain#31657: Claude's words, as a relay in front of it passes them on.
    name: "Claude behind a relay on instructions only: 'messages: at least one message is required'",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message: 'Provider returned error',
          code: 400,
          metadata: {
            raw: '{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"}}',
            provider_name: 'Anthropic',
          },
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].role.user' }] },
  },
  {
    // Z.AI's GLM through OpenRouter (vectorize-io/hindsight#4246): auto is the only tool choice it takes.
    name: 'Z.AI on a forced tool choice: "Tool choice must be auto"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: { message: 'Tool choice must be auto', code: 400, metadata: { provider_name: 'Z.AI' } },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tool_choice.forced' }] },
  },
  {
    // A call's arguments the client sent wrong are the client's to fix: not the tools' schemas.
    name: "OpenAI on a call's arguments in the history: not a schema refusal",
    answer: {
      status: 400,
      body: openAIError(
        "Invalid 'messages[2].tool_calls[0].function.arguments': string too long. Expected a string with maximum length 10485760.",
        'string_above_max_length',
      ),
    },
    expected: { kind: 'bad_request' },
  },
  {
    // GitHub Copilot's Messages endpoint on Claude Code's first system line (ericc-ch/copilot-api#174).
    name: 'GitHub Copilot: "x-anthropic-billing-header is a reserved keyword and may not be used in the system prompt."',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'x-anthropic-billing-header is a reserved keyword and may not be used in the system prompt.',
          code: 'invalid_request_body',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'system.billing_attribution' }] },
  },
  {
    // Claude on Bedrock through claude-code-router (musistudio/claude-code-router#1161).
    name: 'Bedrock through a router: "ValidationException: x-anthropic-billing-header is a reserved keyword …"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            'Error from provider(jk,claude-sonnet-4-5-20250929: 400): {"error":{"message":"Provider API error: InvokeModelWithResponseStream: operation error Bedrock Runtime: InvokeModelWithResponseStream, https response error StatusCode: 400, RequestID: d529ab16-da2c-4500-a93e-78b37334acdb, ValidationException: x-anthropic-billing-header is a reserved keyword and may not be used in the system prompt.","type":"system_error"}}',
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'system.billing_attribution' }] },
  },
  // A content part's cache breakpoint refused (a Chat Completions endpoint serving Claude that takes none):
  // no mark is sent, in each wording of a field refused.
  ...[
    [
      "OpenAI's schema words",
      JSON.stringify({
        error: {
          message:
            "Additional properties are not allowed ('cache_control' was unexpected) - 'messages.0.content.0'",
          type: 'invalid_request_error',
        },
      }),
    ],
    [
      "Mistral's validation error, by its place",
      JSON.stringify({
        object: 'error',
        message: {
          detail: [
            {
              type: 'extra_forbidden',
              loc: ['body', 'messages', 0, 'system', 'content', 0, 'text', 'cache_control'],
              msg: 'Extra inputs are not permitted',
              input: { type: 'ephemeral' },
            },
          ],
        },
        type: 'invalid_request_error',
      }),
    ],
    [
      "a serde server's",
      JSON.stringify({
        error: { message: 'Failed to deserialize the JSON body: unknown field `cache_control`' },
      }),
    ],
  ].map(([wording, body]) => ({
    name: `a content part's cache_control refused: ${wording as string}`,
    answer: { status: 400, body: body as string },
    expected: { kind: 'refused_field' as const, fixes: [{ field: 'messages[].content[].cache_control' }] },
  })),
  // Fireworks' words for a field its schema does not have ("Extra inputs are not permitted, field: '<path>'",
  // pydantic's error by its place in brackets), which OpenCode Zen and Go, Venice and Azure AI give too.
  {
    // OpenCode's tools on Zen's Messages endpoint for MiniMax (anomalyco/opencode#24975): every tool refused.
    name: "OpenCode Zen's Messages endpoint: \"Extra inputs are not permitted, field: 'tools[0].eager_input_streaming'\"",
    answer: {
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            "Error from provider: 3 request validation errors:\nExtra inputs are not permitted, field: 'tools[0].eager_input_streaming', value: True;\nExtra inputs are not permitted, field: 'tools[1].eager_input_streaming', value: True;\nExtra inputs are not permitted, field: 'tools[2].eager_input_streaming', value: True;",
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'tools[].eager_input_streaming' }] },
  },
  {
    // Fireworks' Anthropic-compatible endpoint on a tool's cache breakpoint too (pi's Fireworks provider).
    name: "Fireworks' Messages endpoint: two members of tools, one refusal",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          type: 'invalid_request_error',
          message:
            "Extra inputs are not permitted, field: 'tools[0].eager_input_streaming'; Extra inputs are not permitted, field: 'tools[4].cache_control'",
        },
        type: 'error',
      }),
    },
    expected: {
      kind: 'refused_field',
      fixes: [{ field: 'tools[].eager_input_streaming' }, { field: 'tools[].cache_control' }],
    },
  },
  {
    // Kimi through OpenCode Go, on the reasoning a client sends back (anomalyco/opencode#27852): every
    // conversation failed at its second request.
    name: 'OpenCode Go: "Extra inputs are not permitted, field: \'messages[2].reasoning\'"',
    answer: {
      status: 400,
      body: openAIError(
        "Error from provider: Extra inputs are not permitted, field: 'messages[2].reasoning'",
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].reasoning' }] },
  },
  // OpenAI's API, in its words by the field's place (its `param` too): read as Fireworks' are.
  ...(
    [
      ['messages[2].reasoning', 'messages[].reasoning'],
      ['messages[4].reasoning_details', 'messages[].reasoning_details'],
      // FastGPT's calls, which keep a stream's call index.
      ['messages[2].tool_calls[0].index', 'messages[].tool_calls[].index'],
      // OpenCode's own field.
      ['delegateTo', 'delegateTo'],
    ] as const
  ).map(([place, field]) => ({
    name: `OpenAI: "Unknown parameter: '${place}'."`,
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message: `Unknown parameter: '${place}'.`,
          type: 'invalid_request_error',
          param: place,
          code: 'unknown_parameter',
        },
      }),
    },
    expected: { kind: 'refused_field' as const, fixes: [{ field }] },
  })),
  {
    // Azure's older words list several (a relay's prompt cache key beside OpenCode's own field).
    name: 'Azure: "Unrecognized request arguments supplied: prompt_cache_key, workspace"',
    answer: {
      status: 400,
      body: openAIError(
        'Unrecognized request arguments supplied: prompt_cache_key, workspace',
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'prompt_cache_key' }, { field: 'workspace' }] },
  },
  {
    // A member of a message of the client's own, and a field asking for part of the answer: the client's.
    name: "OpenAI: \"Unknown parameter: 'messages[0].id'.\" and Azure's of logprobs are relayed",
    answer: {
      status: 400,
      body: openAIError(
        "Unknown parameter: 'messages[0].id'. Unrecognized request argument supplied: logprobs",
        'invalid_request_error',
      ),
    },
    expected: { kind: 'bad_request' },
  },
  {
    // Gemini's thought signature on a call sent on to Fireworks after a switch of models.
    name: 'Fireworks: "Extra inputs are not permitted, field: \'messages[3].tool_calls[0].extra_content\'"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          object: 'error',
          type: 'invalid_request_error',
          code: 'invalid_request_error',
          message: "Extra inputs are not permitted, field: 'messages[3].tool_calls[0].extra_content'",
        },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].tool_calls[].extra_content' }] },
  },
  {
    // Venice (a Rust client's test of a real body): a field that asks for something beside the answer.
    name: "Venice: \"Extra inputs are not permitted, field: 'prompt_cache_retention', value: 'default'\"",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: "Extra inputs are not permitted, field: 'prompt_cache_retention', value: 'default'",
        request_id: 'qM_DmKSXKF07wRxmQJ-hc',
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'prompt_cache_retention' }] },
  },
  {
    // A client's own field that no API defines (OpenCode's agent delegation, anomalyco/opencode#40462; its
    // `workspace`, #45101): no provider could act on it.
    name: "OpenCode Zen: \"Extra inputs are not permitted, field: 'delegateTo', value: 'build'\"",
    answer: {
      status: 400,
      body: openAIError(
        "Error from provider (Console): Upstream request failed: [invalid_request_error] Extra inputs are not permitted, field: 'delegateTo', value: 'build'",
        'invalid_request_error',
      ),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'delegateTo' }] },
  },
  {
    // Unquoted, of a content part's cache breakpoint: the marks left out, as for OpenRouter's 404.
    name: 'A strict server: "Extra inputs are not permitted, field: messages[1].content[0].cache_control"',
    answer: {
      status: 400,
      body: JSON.stringify({
        error: { message: 'Extra inputs are not permitted, field: messages[1].content[0].cache_control' },
      }),
    },
    expected: { kind: 'refused_field', fixes: [{ field: 'messages[].content[].cache_control' }] },
  },
  {
    // A field of the chat API that asks for part of the answer: the client asked it, the client's to fix.
    name: "Fireworks: \"Extra inputs are not permitted, field: 'logprobs'\" (the client's to fix)",
    answer: {
      status: 400,
      body: openAIError("Extra inputs are not permitted, field: 'logprobs'", 'invalid_request_error'),
    },
    expected: { kind: 'bad_request' },
  },
  {
    // A client's own member of a tool (Azure AI on GitHub Copilot's MCP tools, through LiteLLM) and of a
    // message (Hermes's `tool_name`): what it meant is the client's to know.
    name: "Azure AI: \"Extra inputs are not permitted, field: 'tools[0].copilot_mcp_server_name'\" (the client's to fix)",
    answer: {
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "2 request validation errors: Extra inputs are not permitted, field: 'tools[0].copilot_mcp_server_name', value: 'github-mcp-server'; Extra inputs are not permitted, field: 'messages[3].tool_name', value: 'ide'",
        },
      }),
    },
    expected: { kind: 'bad_request' },
  },
  ...[
    { status: 400, code: 5021, prefix: 'AiError: ' },
    { status: 413, code: 3010, prefix: '3010: AiError: ' },
  ].map(({ status, code, prefix }) => ({
    // Cloudflare Workers AI states the total, the prompt and the max_tokens asked together, and the window.
    name: `Cloudflare Workers AI: ${code} (a ${status}), the total and the window`,
    answer: {
      status,
      body: JSON.stringify({
        errors: [
          {
            message: `${prefix}The estimated number of input and maximum output tokens (35000) exceeded this model context window limit (24000)`,
            code,
          },
        ],
        success: false,
        result: {},
        messages: [],
      }),
    },
    expected: {
      kind: 'context_overflow' as const,
      remedy: 'compress' as const,
      numbers: { requested: 35_000, maxContext: 24_000 },
      evidence: ['input and maximum output tokens (35000) exceeded this model context window limit (24000'],
    },
  })),
];

describe('classifyUpstreamError on cases from provider documentation and server source', () => {
  it.each(ownCases.map((entry) => [entry.name, entry] as const))('%s', (_name, entry) => {
    expect(classifyUpstreamError(entry.answer)).toEqual(entry.expected);
  });
});

describe('withPromptFromTotal: a total the provider stated, read against the max_tokens the attempt asked', () => {
  const agreement = { min: 0.5, max: 2 };
  const cerebras = (requested: number, window: number) =>
    classifyUpstreamError({
      status: 400,
      body: openAIError(
        `Please reduce the length of the messages or completion. Current length is ${requested} while limit is ${window}`,
        'context_length_exceeded',
      ),
    }) as Extract<ReturnType<typeof classifyUpstreamError>, { kind: 'context_overflow' }>;

  it('takes the total less the max_tokens asked as the prompt: one that fits keeps it, the answer shrinks', () => {
    // 3,000 of prompt and 32,000 of answer asked, on a window of 24,000.
    const verdict = withPromptFromTotal(cerebras(35_000, 24_000), 32_000, 2_900, agreement);
    expect(verdict.numbers).toMatchObject({
      promptTokens: 3_000,
      completionTokens: 32_000,
      maxContext: 24_000,
    });
    expect(verdict.remedy).toBe('reduce_max_tokens');
  });

  it('compresses when the prompt so counted is itself over the window', () => {
    const verdict = withPromptFromTotal(cerebras(30_400, 24_000), 400, 28_000, agreement);
    expect(verdict.numbers.promptTokens).toBe(30_000);
    expect(verdict.remedy).toBe('compress');
  });

  it.each([
    ['no max_tokens was asked (the provider’s default is not known)', undefined, 2_900],
    ['the difference is no count of this prompt (a total that left the answer out)', 32_000, 30_000],
  ])('leaves the verdict as it was when %s', (_name, asked, estimated) => {
    const verdict = cerebras(35_000, 24_000);
    expect(withPromptFromTotal(verdict, asked, estimated, agreement)).toBe(verdict);
  });

  it('leaves a verdict that states the prompt as it was', () => {
    const stated = classifyUpstreamError({
      status: 400,
      body: openAIError(
        "This model's maximum context length is 8192 tokens. However, you requested 9001 tokens (1001 in the messages, 8000 in the completion).",
        'context_length_exceeded',
      ),
    }) as Extract<ReturnType<typeof classifyUpstreamError>, { kind: 'context_overflow' }>;
    expect(withPromptFromTotal(stated, 6_000, 1_000, agreement)).toBe(stated);
  });
});

describe('classifyUpstreamError on bodies that quote the request back', () => {
  const overflow =
    "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.";
  const quoted = 'context length '.repeat(20_000);

  it('reads an overflow the same with 300 KB of the prompt quoted after it', () => {
    const plain = classifyUpstreamError({
      status: 400,
      body: JSON.stringify({ error: { message: overflow } }),
    });
    const withQuote = classifyUpstreamError({
      status: 400,
      body: JSON.stringify({ error: { message: overflow, input: quoted } }),
    });
    expect(plain.kind).toBe('context_overflow');
    expect(withQuote).toEqual(plain);
  });

  it('names the field Mistral refuses when its 422 quotes 300 KB of the value back', () => {
    const detail = [
      {
        type: 'extra_forbidden',
        loc: ['body', 'user'],
        msg: 'Extra inputs are not permitted',
        input: quoted,
      },
    ];
    const body = JSON.stringify({ object: 'error', message: { detail }, type: 'invalid_request_error' });
    expect(classifyUpstreamError({ status: 422, body })).toEqual({
      kind: 'refused_field',
      fixes: [{ field: 'user' }],
    });
  });

  it('reads the same of 20 MB quoted back, braces and escaped quotes in it too', () => {
    // A client's schema of 20 MB: a string with JSON in it, which is no provider's message to read further.
    const huge = `{"type":"object","description":"${'context length \\"x\\" '.repeat(1_000_000)}"}`;
    const detail = [
      { type: 'extra_forbidden', loc: ['body', 'user'], msg: 'Extra inputs are not permitted', input: huge },
    ];
    const refused = JSON.stringify({ object: 'error', message: { detail }, type: 'invalid_request_error' });
    expect(classifyUpstreamError({ status: 422, body: refused })).toEqual({
      kind: 'refused_field',
      fixes: [{ field: 'user' }],
    });
    const overflowed = JSON.stringify({ error: { message: overflow, input: huge } });
    expect(classifyUpstreamError({ status: 400, body: overflowed }).kind).toBe('context_overflow');
  });
});

describe('refusals built of what the patterns look for, long (a provider’s text is read once, whatever it holds)', () => {
  // Each a run of a fragment some pattern repeats, ending where that pattern cannot match: a pattern that
  // tries every way to split such a run (a repeated group of words) never ends on it.
  const runs: ReadonlyArray<readonly [string, string]> = [
    ['a tool result’s types', `tool_result content type must be ${'a'.repeat(60)}!`],
    ['a pydantic union', `list[union[${'ContentBlockA'.repeat(60)}!`],
    ['a list of block types', `supported values are: ${'a, '.repeat(2_000)}`],
    ['a schema’s place', `not a valid moonshot flavored json schema ${"'properties.".repeat(2_000)}`],
    ['a cache mark', 'cache_control.ephemeral.'.repeat(2_000)],
    ['a place in brackets', `Extra inputs are not permitted, field: '${'messages[1].'.repeat(2_000)}`],
    ['a refusal of many places', "Extra inputs are not permitted, field: 'messages[1].a'; ".repeat(2_000)],
  ];
  it.each(runs)('%s: classified', (_name, message) => {
    const answer = classifyUpstreamError({ status: 400, body: JSON.stringify({ error: { message } }) });
    expect(['bad_request', 'refused_field']).toContain(answer.kind);
  });
});
