// What OpenAI's reasoning models (the o-series, GPT-5 and later) refuse that every other chat model
// takes: `max_tokens` ("Unsupported parameter: 'max_tokens' is not supported with this model. Use
// 'max_completion_tokens' instead.") and a `temperature` other than 1. Fields the gateway itself writes
// (a Responses request's `max_output_tokens`, the summarizer's cap and temperature) follow the model they
// go to: providers that serve open models mostly take only `max_tokens`, so that stays their name.

/** True for OpenAI's reasoning models, by name (a routing prefix such as `openai/` aside). */
export function isOpenAIReasoningModel(model: string): boolean {
  const name = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  const gpt = /^gpt-(\d+)/.exec(name);
  return /^o\d/.test(name) || (gpt !== null && Number(gpt[1]) >= 5);
}

/** The field that caps an answer's tokens for this model. */
export function outputCapField(model: string): 'max_tokens' | 'max_completion_tokens' {
  return isOpenAIReasoningModel(model) ? 'max_completion_tokens' : 'max_tokens';
}

/**
 * True for Moonshot's Kimi K2 and later models, by name (a routing prefix such as `moonshotai/` aside):
 * their chat template writes tool call ids as `functions.<name>:<n>`, and a history of other ids puts
 * them off their training (field-fixes.ts withToolCallIdsAsKimiTakes).
 */
export function isKimiModel(model: string): boolean {
  return /^kimi-k\d/i.test(model.slice(model.lastIndexOf('/') + 1));
}
