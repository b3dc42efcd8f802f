// A thinking model's reasoning in Chat Completions, which no OpenAI spec names: `reasoning_content` as

// DeepSeek first named it (DeepSeek, Kimi, SGLang, llama.cpp), or `reasoning` (vLLM 0.17 and later,
// OpenRouter, Ollama). A provider reads it back under its own name — DeepSeek and Kimi refuse a tool call
// sent back without it, vLLM passes `reasoning` to the chat template and ignores the other — so what the
// gateway sends back of a client's thinking blocks or reasoning items goes under the name the model's
// answers last used, remembered per model by each gateway process (until an answer shows one:
// `reasoning_content`). Pure but for the memory createReasoningNames makes.
import type { ContextMessage } from '../context/types.js';
import { setWithin } from '../bounded-memory.js';

/** The two names a chat provider gives a thinking model's reasoning. */
export type ReasoningField = 'reasoning_content' | 'reasoning';

/** A chat message's (or delta's) reasoning and the name it came under; undefined when it has none. */
export function reasoningOf(
  message: Record<string, unknown> | undefined,
): { field: ReasoningField; text: string } | undefined {
  for (const field of ['reasoning_content', 'reasoning'] as const) {
    const text = message?.[field];
    if (typeof text === 'string' && text !== '') return { field, text };
  }
  return undefined;
}

/**
 * The messages with each assistant message's reasoning under `field`; the same array when none has it
 * under the other name (the messages left as they were are the same objects: their bytes are copied).
 */
export function reasoningNamed(messages: ContextMessage[], field: ReasoningField): ContextMessage[] {
  const other: ReasoningField = field === 'reasoning' ? 'reasoning_content' : 'reasoning';
  if (!messages.some((message) => message.role === 'assistant' && typeof message[other] === 'string'))
    return messages;
  return messages.map((message) => {
    const text = message[other];
    if (message.role !== 'assistant' || typeof text !== 'string') return message;
    const renamed: ContextMessage = Object.assign({}, message, { [field]: text });
    delete renamed[other];
    return renamed;
  });
}

/** The name each model's answers last gave its reasoning, in this process. */
export interface ReasoningNames {
  of(model: string): ReasoningField;
  /** An answer of `model` gave its reasoning under `field` (undefined: it had none). */
  saw(model: string, field: ReasoningField | undefined): void;
}

/** At most this many models remembered: a client naming a new model with every request cannot grow it. */
const maxModels = 1_000;

export function createReasoningNames(): ReasoningNames {
  const names = new Map<string, ReasoningField>();
  return {
    of: (model) => names.get(model) ?? 'reasoning_content',
    saw(model, field) {
      if (field === undefined || names.get(model) === field) return;
      setWithin(names, model, field, maxModels);
    },
  };
}
