import { classifyUpstreamError } from '../src/upstream/classify-upstream-error.js';
const cases: Array<[number, string]> = [
  [400, JSON.stringify({ error: { message: "This model's maximum prompt length is 131072 but the request contains 134201 tokens.", type: 'invalid_request_error', code: 'invalid_argument' } })],
  [400, JSON.stringify({ error: { code: 400, message: 'the request exceeds the available context size, try increasing it', type: 'exceed_context_size_error', n_prompt_tokens: 9000, n_ctx: 8192 } })],
  [400, JSON.stringify({ object: 'error', message: 'The decoder prompt (length 140000) is longer than the maximum model length of 131072. Make sure that `max_model_len` is no smaller than the number of text tokens.', type: 'BadRequestError', code: 400 })],
  [400, JSON.stringify({ error: { message: 'Invalid request: Your request exceeded model token limit: 262144', type: 'invalid_request_error' } })],
  [400, JSON.stringify({ error: { code: '1261', message: 'Prompt exceeds max length' } })],
  [400, JSON.stringify({ base_resp: { status_code: 2013, status_msg: 'invalid params, context window exceeds limit' } })],
  [400, JSON.stringify({ error: { message: 'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 32769. Given: 32000 `inputs` tokens and 2000 `max_new_tokens`', type: 'invalid_request_error' } })],
  [400, JSON.stringify({ error: { message: 'The prompt is too long: 140000, model maximum context length: 131072', code: 'INVALID_ARGUMENT' } })],
  [400, JSON.stringify({ message: 'too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4500. Try using a shorter prompt or a smaller max_tokens value.' })],
  [400, JSON.stringify({ error: { message: "This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (138000 of text input, 2000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.", code: 400 } })],
  [400, JSON.stringify({ error: { code: 400, message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).', status: 'INVALID_ARGUMENT' } })],
  [400, JSON.stringify({ message: 'Input is too long for requested model.' })],
  [400, JSON.stringify({ object: 'error', message: 'Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum context length', type: 'invalid_request_error', code: 3051 })],
  [500, JSON.stringify({ error: 'prompt too long; exceeded max context length by 1877 tokens' })],
  [400, JSON.stringify({ error: { message: 'The number of tokens to keep from the initial prompt is greater than the context length. Try to load the model with a larger context length, or provide a shorter input' } })],
  [400, JSON.stringify({ error: { message: 'Requested token count exceeds the model\'s maximum context length of 131072 tokens. You requested a total of 140000 tokens: 138000 tokens from the input messages and 2000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.', type: 'invalid_request_error', code: 'context_length_exceeded' } })],
  [400, JSON.stringify({ error: { message: 'Your input exceeds the context window of this model. Please adjust your input and try again.', type: 'invalid_request_error', code: 'context_length_exceeded' } })],
  [400, JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 215000 tokens > 200000 maximum' } })],
  [413, JSON.stringify({ error: { message: 'Request too large for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 14000, please reduce your message size and try again.', type: 'tokens', code: 'rate_limit_exceeded' } })],
  [400, JSON.stringify({ error: { message: 'Please reduce the length of the messages or completion.', type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } })],
  [400, JSON.stringify({ detail: 'Input length 140000 exceeds the maximum allowed length 131072' })],
  [400, JSON.stringify({ error: { message: 'input length and `max_tokens` exceed context limit: 190000 + 32000 > 200000, decrease input length or `max_tokens` and try again', type: 'invalid_request_error' } })],
  [400, JSON.stringify({ error: { message: 'messages: total length of messages exceeds 128000 tokens', type: 'invalid_request_error' } })],
  [400, JSON.stringify({ code: 'InvalidParameter', message: '<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 129024]' })],
  [400, JSON.stringify({ error: { message: 'Total tokens of image and text exceed max message tokens.', type: 'invalid_request_error' } })],
  [400, JSON.stringify({ error: { message: 'max_tokens (32000) + prompt tokens (100000) exceeds context window (128000)', type: 'BadRequest' } })],
];
for (const [status, body] of cases) {
  const c = classifyUpstreamError({ status, body });
  console.log(c.kind.padEnd(18), 'remedy' in c ? `${c.remedy} ${JSON.stringify(c.numbers)}` : '', '|', body.slice(0, 110));
}
