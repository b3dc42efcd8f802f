// Token accounting for chat requests, by the OpenAI cookbook method: 3 tokens of framing per message,
// every string field of a message encoded (role, content, name, tool_call_id, reasoning content, …),
// 1 more per name, 3 to prime the reply; tool definitions by the cookbook's function formula. The
// cookbook leaves some shapes out; for those: text parts count as their text, images by the tile
// formula, each tool call as its id, function name and arguments, null or missing content as nothing.
import { imageTokens } from './image-tokens.js';
import type { ContextMessage, Tokenizer } from './types.js';

export const tokensPerMessage = 3;
export const tokensPerName = 1;
export const replyPrimingTokens = 3;

interface FunctionFormula {
  functionInit: number;
  propertyInit: number;
  propertyKey: number;
  enumInit: number;
  enumItem: number;
  functionEnd: number;
}

const functionFormulas: Record<string, FunctionFormula> = {
  o200k_base: {
    functionInit: 7,
    propertyInit: 3,
    propertyKey: 3,
    enumInit: -3,
    enumItem: 3,
    functionEnd: 12,
  },
  cl100k_base: {
    functionInit: 10,
    propertyInit: 3,
    propertyKey: 3,
    enumInit: -3,
    enumItem: 3,
    functionEnd: 12,
  },
};

function contentTokens(content: unknown, tokenizer: Tokenizer): number {
  if (typeof content === 'string') return tokenizer.count(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content as Array<Record<string, unknown>>) {
    if (typeof part !== 'object' || part === null) continue;
    if (typeof part.text === 'string') total += tokenizer.count(part.text);
    else if (typeof part.refusal === 'string') total += tokenizer.count(part.refusal);
    else if (part.type === 'image_url') {
      const image = part.image_url as { url?: unknown; detail?: unknown } | undefined;
      total += imageTokens(
        typeof image?.url === 'string' ? image.url : '',
        typeof image?.detail === 'string' ? image.detail : undefined,
      );
    }
  }
  return total;
}

/** Tokens one message adds to a prompt, framing included. */
export function countMessageTokens(message: ContextMessage, tokenizer: Tokenizer): number {
  let total = tokensPerMessage;
  for (const key in message) {
    const value = message[key];
    if (key === 'content') total += contentTokens(value, tokenizer);
    else if (key === 'tool_calls') {
      for (const call of (value as ContextMessage['tool_calls']) ?? []) {
        total +=
          tokenizer.count(call.id ?? '') +
          tokenizer.count(call.function?.name ?? '') +
          tokenizer.count(call.function?.arguments ?? '');
      }
    } else if (typeof value === 'string') {
      total += tokenizer.count(value);
      if (key === 'name') total += tokensPerName;
    }
  }
  return total;
}

interface FunctionDefinition {
  name?: unknown;
  description?: unknown;
  parameters?: { properties?: Record<string, { type?: unknown; description?: unknown; enum?: unknown }> };
}

/** Tokens the tool definitions add, by the cookbook's function formula. */
export function countToolTokens(tools: unknown, tokenizer: Tokenizer): number {
  if (!Array.isArray(tools) || tools.length === 0) return 0;
  const formula = functionFormulas[tokenizer.encoding] ?? (functionFormulas.o200k_base as FunctionFormula);
  const stripDot = (text: string): string => (text.endsWith('.') ? text.slice(0, -1) : text);
  let total = 0;
  for (const tool of tools as Array<{ function?: FunctionDefinition } & FunctionDefinition>) {
    const definition = tool?.function ?? tool;
    if (typeof definition !== 'object' || definition === null) continue;
    total += formula.functionInit;
    const name = typeof definition.name === 'string' ? definition.name : '';
    const description = typeof definition.description === 'string' ? definition.description : '';
    total += tokenizer.count(`${name}:${stripDot(description)}`);
    const properties = definition.parameters?.properties;
    if (typeof properties === 'object' && properties !== null && Object.keys(properties).length > 0) {
      total += formula.propertyInit;
      for (const [key, property] of Object.entries(properties)) {
        total += formula.propertyKey;
        if (Array.isArray(property?.enum)) {
          total += formula.enumInit;
          for (const item of property.enum) total += formula.enumItem + tokenizer.count(String(item));
        }
        const type = typeof property?.type === 'string' ? property.type : '';
        const propertyDescription = typeof property?.description === 'string' ? property.description : '';
        total += tokenizer.count(`${key}:${type}:${stripDot(propertyDescription)}`);
      }
    }
  }
  return total + formula.functionEnd;
}

/** The whole prompt: every message, the reply priming and the tool definitions. */
export function countPromptTokens(
  messages: readonly ContextMessage[],
  tools: unknown,
  tokenizer: Tokenizer,
): number {
  let total = replyPrimingTokens + countToolTokens(tools, tokenizer);
  for (const message of messages) total += countMessageTokens(message, tokenizer);
  return total;
}
