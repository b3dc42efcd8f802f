// Tools told in the prompt, for a model whose server takes none (docs/budgeting.md#refused-fields): Ollama
// for a model whose template has no tools ("registry.ollama.ai/library/llama3:8b does not support tools":
// langgenius/dify#13538, pydantic/pydantic-ai#703, cline/cline#460), llama.cpp's server without `--jinja`
// ("tools param requires --jinja flag", defilantech/LLMKube#126; "Unsupported param: tools",
// ggml-org/llama.cpp#10920), Google's Gemma and Mistral's Voxtral ("Function calling is not enabled for …"),
// DeepSeek R1, GLM-3, OpenRouter for a model none of whose endpoints takes tools (a 404). Every request of
// an agent failed so. The request goes without `tools`: the system prompt tells them and
// the form a call is written in — Hermes' `<tool_call>{"name": …, "arguments": …}</tool_call>`, which the
// gateway reads as a call in the answer (text-tool-calls.ts) — the conversation's calls are written in that
// form and their results given as user text, so the model sees how it is done. Pure.

import type { ContextMessage } from '../context/types.js';
import { withToolHistoryAsText, type ToolHistoryWords } from './field-fixes.js';
import { toolsToldAsText } from './text-tool-calls.js';
import { isRecord } from './tool-call-shape.js';

/** Not a field of the body: tools, which the model's server takes none of (the module's comment). */
export const toolsAsTextField = 'tools.as_text';

/** A call as Hermes writes one, and a result as its template gives one back. */
const hermesWords: ToolHistoryWords = {
  call: (name, argumentsText) =>
    `<tool_call>\n{"name": ${JSON.stringify(name)}, "arguments": ${argumentsText.trim() === '' ? '{}' : argumentsText}}\n</tool_call>`,
  result: (name) => `<tool_response name=${JSON.stringify(name)}>`,
};

/** The text that tells the model its tools and how to call them; undefined when none is a function. */
export function toolsPrompt(tools: readonly unknown[], choice: unknown): string | undefined {
  const lines: string[] = [];
  for (const tool of tools) {
    const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : undefined;
    if (fn === undefined || typeof fn.name !== 'string') continue;
    lines.push(
      JSON.stringify({
        name: fn.name,
        ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
        parameters: isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} },
      }),
    );
  }
  if (lines.length === 0) return undefined;
  const forced =
    choice === 'required'
      ? '\nCall at least one tool in this answer.'
      : isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string'
        ? `\nCall ${choice.function.name} in this answer.`
        : '';
  return [
    '# Tools',
    '',
    'You may call one or more of these tools. Each is given as JSON, its parameters as a JSON Schema:',
    '<tools>',
    ...lines,
    '</tools>',
    '',
    'To call a tool, write each call on its own, in this form, and end your answer after the calls:',
    '<tool_call>',
    '{"name": "<tool name>", "arguments": <the arguments as a JSON object>}',
    '</tool_call>',
    `The results come back in the next user message, each after <tool_response name="<tool name>">.${forced}`,
  ].join('\n');
}

/**
 * The request without its tools, and the messages telling them (toolsAsTextField): the tools' text after
 * the leading system message's (or in one of its own, first), the history's calls and results written as
 * the model is told to write them. The request keeps its tools under a symbol, so that the calls the model
 * writes are read (text-tool-calls.ts). With no function tool, or a client's `none`, none is told and the
 * history still goes as text; the same request and messages when there is nothing to change.
 */
export function withToolsAsText<R extends Record<string, unknown>>(
  request: R,
  messages: ContextMessage[],
): { request: R; messages: ContextMessage[] } {
  const tools = Array.isArray(request.tools) ? (request.tools as unknown[]) : [];
  // A client that forbade calls is told no tools; its history goes as text all the same.
  const prompt = request.tool_choice === 'none' ? undefined : toolsPrompt(tools, request.tool_choice);
  const told = withToolHistoryAsText(messages, hermesWords);
  const {
    tools: _tools,
    tool_choice: _choice,
    parallel_tool_calls: _parallel,
    ...rest
  } = request as Record<string, unknown>;
  if (prompt === undefined)
    return Object.keys(rest).length === Object.keys(request).length && told === messages
      ? { request, messages }
      : { request: rest as R, messages: told };
  const first = told[0];
  const content = first?.role === 'system' ? withPromptAfter(first.content, prompt) : undefined;
  const withPrompt: ContextMessage[] =
    content === undefined
      ? [{ role: 'system', content: prompt }, ...told]
      : [Object.assign({}, first, { content }), ...told.slice(1)];
  return { request: Object.assign(rest, { [toolsToldAsText]: tools }) as unknown as R, messages: withPrompt };
}

/** A system message's content with the tools' text after it: a string's, or parts' as a part of its own. */
function withPromptAfter(content: unknown, prompt: string): unknown {
  if (typeof content === 'string') return content === '' ? prompt : `${content}\n\n${prompt}`;
  return Array.isArray(content)
    ? [...(content as unknown[]), { type: 'text', text: `\n\n${prompt}` }]
    : undefined;
}
