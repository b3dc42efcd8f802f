// A chat completion asked of the Responses API, for a model served there alone: the chat body written as
// a Responses body (input items in their order, tools flattened, what the Responses API has no word for
// left out), the answer — whole or streamed, events cut anywhere — read back as chat, and the port that
// does so only for the attempts marked for it.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  fromResponsesAnswer,
  ResponsesToChatStream,
  toResponsesRequest,
  withResponsesWire,
} from '../../src/upstream/responses-wire.js';
import { scriptedUpstream, upstreamConfig } from '../helpers/port-fakes.js';

describe('toResponsesRequest', () => {
  it('writes a tool loop as input items in their order, the call’s output after its call', () => {
    const body = toResponsesRequest({
      model: 'gpt-5.3-codex',
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 4_096,
      reasoning_effort: 'high',
      temperature: 1,
      stop: ['\n\n'],
      n: 1,
      seed: 7,
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is here?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Looking.',
          reasoning_content: 'I should list the files.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{"path":"."}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'a.txt' }] },
      ],
      tools: [
        { type: 'function', function: { name: 'ls', description: 'Lists.', parameters: { type: 'object' } } },
      ],
      tool_choice: { type: 'function', function: { name: 'ls' } },
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' } } },
    });
    expect(body).toEqual({
      model: 'gpt-5.3-codex',
      stream: true,
      temperature: 1,
      store: false,
      max_output_tokens: 4_096,
      reasoning: { effort: 'high' },
      include: ['reasoning.encrypted_content'],
      input: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is here?' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
          ],
        },
        { role: 'assistant', content: 'Looking.' },
        { type: 'function_call', call_id: 'call_1', name: 'ls', arguments: '{"path":"."}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'a.txt' },
      ],
      tools: [{ type: 'function', name: 'ls', description: 'Lists.', parameters: { type: 'object' } }],
      tool_choice: { type: 'function', name: 'ls' },
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' } } },
    });
  });

  it('sends the encrypted reasoning a step gave back before its text and calls, none with nothing after it', () => {
    const encrypted = (data: string) => ({
      type: 'reasoning.encrypted',
      data,
      format: 'openai-responses-v1',
      index: 0,
    });
    const body = toResponsesRequest({
      model: 'gpt-5.6-terra',
      reasoning_effort: 'medium',
      messages: [
        { role: 'user', content: 'Go.' },
        {
          role: 'assistant',
          content: null,
          // Another provider's state (OpenRouter's Claude) is not the Responses API's: left out.
          reasoning_details: [
            encrypted('R1'),
            { type: 'reasoning.text', text: 'Claude thought.', format: 'anthropic-claude-v1' },
          ],
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'a.txt' },
        { role: 'assistant', content: 'Listed.', reasoning_details: [encrypted('R2')] },
        { role: 'assistant', content: '', reasoning_details: [encrypted('R3')] },
        { role: 'user', content: 'Again.' },
      ],
    });
    expect(body.input).toEqual([
      { role: 'user', content: 'Go.' },
      { type: 'reasoning', summary: [], encrypted_content: 'R1' },
      { type: 'function_call', call_id: 'call_1', name: 'ls', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'a.txt' },
      { type: 'reasoning', summary: [], encrypted_content: 'R2' },
      { role: 'assistant', content: 'Listed.' },
      { role: 'user', content: 'Again.' },
    ]);
    // Asked for only where there is reasoning to ask for, and nothing is stored at the provider.
    expect(body.include).toEqual(['reasoning.encrypted_content']);
    expect(
      toResponsesRequest({ model: 'gpt-5.6-terra', reasoning_effort: 'none', messages: [] }),
    ).not.toHaveProperty('include');
    expect(toResponsesRequest({ model: 'gpt-5.6-terra', messages: [] })).not.toHaveProperty('include');
    expect(
      toResponsesRequest({ model: 'o3-pro', reasoning_effort: 'high', store: true, messages: [] }),
    ).not.toHaveProperty('include');
  });

  it('keeps a client’s own store and max_tokens; writes an assistant’s parts as output text', () => {
    expect(
      toResponsesRequest({
        model: 'o3-pro',
        store: true,
        max_tokens: 100,
        response_format: { type: 'json_object' },
        messages: [{ role: 'assistant', content: [{ type: 'text', text: 'Earlier.' }] }],
      }),
    ).toEqual({
      model: 'o3-pro',
      store: true,
      max_output_tokens: 100,
      input: [{ role: 'assistant', content: [{ type: 'output_text', text: 'Earlier.' }] }],
      text: { format: { type: 'json_object' } },
    });
  });
});

describe('fromResponsesAnswer', () => {
  const usage = {
    input_tokens: 120,
    input_tokens_details: { cached_tokens: 100 },
    output_tokens: 30,
    output_tokens_details: { reasoning_tokens: 20 },
    total_tokens: 150,
  };

  it('reads a reasoning item’s encrypted content as the message’s reasoning_details', () => {
    const answer = fromResponsesAnswer({
      id: 'resp_2',
      model: 'gpt-5.6-terra',
      status: 'completed',
      output: [
        { type: 'reasoning', id: 'rs_9', summary: [], encrypted_content: 'ENC' },
        { type: 'function_call', call_id: 'call_1', name: 'ls', arguments: '{}' },
      ],
    }) as { choices: Array<{ message: Record<string, unknown> }> };
    expect(answer.choices[0]?.message.reasoning_details).toEqual([
      { type: 'reasoning.encrypted', data: 'ENC', format: 'openai-responses-v1', index: 0, id: 'rs_9' },
    ]);
  });

  it('reads a message, its reasoning left out, and the usage as chat counts it', () => {
    expect(
      fromResponsesAnswer({
        id: 'resp_1',
        created_at: 1_700_000_000,
        model: 'gpt-5.3-codex',
        status: 'completed',
        output: [
          { type: 'reasoning', id: 'rs_1', summary: [] },
          {
            type: 'message',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'Done.', annotations: [] }],
          },
        ],
        usage,
      }),
    ).toEqual({
      id: 'resp_1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'gpt-5.3-codex',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Done.' }, finish_reason: 'stop', logprobs: null },
      ],
      usage: {
        prompt_tokens: 120,
        completion_tokens: 30,
        total_tokens: 150,
        prompt_tokens_details: { cached_tokens: 100 },
        completion_tokens_details: { reasoning_tokens: 20 },
      },
    });
  });

  it('reads calls as tool calls, and an answer cut by its cap as cut by length', () => {
    const calls = fromResponsesAnswer({
      status: 'completed',
      output: [
        { type: 'function_call', call_id: 'call_a', name: 'ls', arguments: '{}' },
        { type: 'function_call', call_id: 'call_b', name: 'cat', arguments: '{"f":1}' },
      ],
    });
    expect(calls.choices).toEqual([
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'ls', arguments: '{}' } },
            { id: 'call_b', type: 'function', function: { name: 'cat', arguments: '{"f":1}' } },
          ],
        },
        finish_reason: 'tool_calls',
        logprobs: null,
      },
    ]);
    const cut = fromResponsesAnswer({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'Half' }] }],
    });
    expect((cut.choices as Array<{ finish_reason: string }>)[0]?.finish_reason).toBe('length');
  });
});

/** The events of a streamed answer: text, then a call, then the end with its usage. */
const events = [
  { type: 'response.created', response: { id: 'resp_s', model: 'gpt-5.3-codex', created_at: 1_700_000_001 } },
  { type: 'response.in_progress', response: { id: 'resp_s' } },
  { type: 'response.output_item.added', output_index: 0, item: { type: 'message', id: 'msg_1' } },
  { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, delta: 'Lis' },
  { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, delta: 'ting.' },
  {
    type: 'response.output_item.added',
    output_index: 1,
    item: { type: 'function_call', id: 'fc_1', call_id: 'call_x', name: 'ls', arguments: '' },
  },
  { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 1, delta: '{"pa' },
  { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 1, delta: 'th":"."}' },
  {
    type: 'response.completed',
    response: { status: 'completed', usage: { input_tokens: 50, output_tokens: 9 } },
  },
];
const streamText = events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join('');

/** The chat chunks a translated stream holds, [DONE] aside. */
function chunksOf(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n\n')
    .map((event) => event.replace(/^data: /, ''))
    .filter((data) => data !== '' && data !== '[DONE]')
    .map((data) => JSON.parse(data) as Record<string, unknown>);
}

describe('ResponsesToChatStream', () => {
  it('gives a reasoning item’s encrypted content once the item is done, as reasoning_details', () => {
    const stream = new ResponsesToChatStream();
    const reasoning = { type: 'reasoning', id: 'rs_1', summary: [] };
    const out = stream.push(
      [
        { type: 'response.created', response: { id: 'resp_r', model: 'gpt-5.6-terra' } },
        { type: 'response.output_item.added', output_index: 0, item: reasoning },
        {
          type: 'response.output_item.done',
          output_index: 0,
          item: { ...reasoning, encrypted_content: 'ENC' },
        },
        { type: 'response.completed', response: { status: 'completed' } },
      ]
        .map((event) => `data: ${JSON.stringify(event)}\n\n`)
        .join(''),
    );
    const details = chunksOf(out).flatMap((chunk) =>
      (chunk.choices as Array<{ delta: { reasoning_details?: unknown[] } }>).flatMap(
        (choice) => choice.delta.reasoning_details ?? [],
      ),
    );
    expect(details).toEqual([
      { type: 'reasoning.encrypted', data: 'ENC', format: 'openai-responses-v1', index: 0, id: 'rs_1' },
    ]);
  });

  it.each([1, 7, 64, streamText.length])(
    'reads the events as chat chunks, cut every %i characters',
    (size) => {
      const stream = new ResponsesToChatStream();
      let out = '';
      for (let at = 0; at < streamText.length; at += size)
        out += stream.push(Buffer.from(streamText.slice(at, at + size)));
      expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
      const chunks = chunksOf(out);
      const deltas = chunks.flatMap((chunk) =>
        (chunk.choices as Array<{ delta: Record<string, unknown>; finish_reason: string | null }>).map(
          (choice) => choice,
        ),
      );
      expect(deltas.map((choice) => choice.delta.content ?? '').join('')).toBe('Listing.');
      expect(deltas[0]?.delta.role).toBe('assistant');
      const calls = deltas.flatMap(
        (choice) => (choice.delta.tool_calls as Array<Record<string, unknown>>) ?? [],
      );
      expect(calls[0]).toEqual({
        index: 0,
        id: 'call_x',
        type: 'function',
        function: { name: 'ls', arguments: '' },
      });
      expect(calls.map((call) => (call.function as { arguments: string }).arguments).join('')).toBe(
        '{"path":"."}',
      );
      expect(deltas.at(-1)?.finish_reason).toBe('tool_calls');
      expect(chunks.at(-1)).toMatchObject({
        id: 'resp_s',
        model: 'gpt-5.3-codex',
        choices: [],
        usage: { prompt_tokens: 50, completion_tokens: 9, total_tokens: 59 },
      });
    },
  );

  it('ends with an error event when the answer failed', () => {
    const failed = `data: ${JSON.stringify({ type: 'response.failed', response: { error: { code: 'server_error', message: 'The model failed.' } } })}\n\n`;
    expect(chunksOf(new ResponsesToChatStream().push(failed))).toEqual([
      { error: { message: 'The model failed.', type: 'server_error', code: 'server_error' } },
    ]);
  });
});

describe('withResponsesWire', () => {
  const chat = JSON.stringify({ model: 'gpt-5.3-codex', messages: [{ role: 'user', content: 'Hi' }] });
  const send = (upstream: ReturnType<typeof scriptedUpstream>, wire?: 'responses') =>
    withResponsesWire(upstream).send({
      upstream: upstreamConfig('openai'),
      method: 'POST',
      path: '/chat/completions',
      headers: { authorization: 'Bearer sk' },
      body: chat,
      signal: new EventEmitter(),
      ...(wire === undefined ? {} : { wire }),
    });

  it('asks /responses for an attempt marked so, and reads the answer back as chat', async () => {
    const upstream = scriptedUpstream([
      {
        status: 200,
        chunks: [
          JSON.stringify({
            status: 'completed',
            output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello.' }] }],
          }),
        ],
      },
    ]);
    const answer = await send(upstream, 'responses');
    expect(upstream.sent.map((request) => [request.path, request.wire])).toEqual([['/responses', undefined]]);
    expect(JSON.parse(String(upstream.sent[0]?.body))).toEqual({
      model: 'gpt-5.3-codex',
      store: false,
      input: [{ role: 'user', content: 'Hi' }],
    });
    expect(JSON.parse((await answer.readAll()).toString()).choices[0].message.content).toBe('Hello.');
  });

  it('leaves every other request, and a refusal, as they are', async () => {
    const refusal = '{"error":{"message":"Unknown parameter: \'x\'."}}';
    const upstream = scriptedUpstream([
      { status: 200, chunks: ['{}'] },
      { status: 400, chunks: [refusal] },
    ]);
    await send(upstream);
    expect(upstream.sent[0]?.path).toBe('/chat/completions');
    expect(upstream.sent[0]?.body).toBe(chat);
    const refused = await send(upstream, 'responses');
    expect([refused.statusCode, (await refused.readAll()).toString()]).toEqual([400, refusal]);
  });
});
