// A chat completion stream as the Responses event sequence (docs/responses.md): the same events however
// the bytes are split, sequence numbers in order, text and function calls as items, the completed
// response with usage; an error event fails the response.
import { describe, expect, it } from 'vitest';
import { ResponsesStreamTranslator } from '../../src/responses/stream-translator.js';
import { eventsWrittenAsJson, sseEventData } from '../helpers/sse-events.js';

const meta = { id: 'resp_1', createdAt: 1, model: 'm', echo: {} };
const chunks = [
  { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
  { choices: [{ index: 0, delta: { content: 'Hé' } }] },
  { choices: [{ index: 0, delta: { content: 'llo' } }] },
  {
    choices: [
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, id: 'c1', function: { name: 'w', arguments: '{"a"' } }] },
      },
    ],
  },
  { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }] },
  { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
  { choices: [], usage: { prompt_tokens: 40, completion_tokens: 6 } },
];
const wire = Buffer.from(
  `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`,
);

function translate(size: number) {
  const translator = new ResponsesStreamTranslator(meta);
  let out = translator.start();
  for (let at = 0; at < wire.length; at += size) out += translator.push(wire.subarray(at, at + size));
  const { events, response } = translator.finish();
  return { events: sseEventData(out + events), response, reply: translator.reply() };
}

describe('a chat stream as Responses events', () => {
  it.each([1, 5, wire.length])('gives the same events however the bytes are split (every %i)', (size) => {
    const { events, response, reply } = translate(size);
    // Item ids are made afresh for each response: compared without them.
    const withoutIds = (value: unknown) =>
      JSON.stringify(value).replace(/"(?:msg|fc)_[A-Za-z0-9_-]+"/g, '"id"');
    expect(withoutIds(events)).toBe(withoutIds(translate(wire.length).events));
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_event, index) => index));
    expect(events[0]?.type).toBe('response.created');
    expect(events.at(-1)?.type).toBe('response.completed');
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta)
      .join('');
    expect(text).toBe('Héllo');
    // The closing events carry the deltas joined whole.
    expect(events.find((event) => event.type === 'response.output_text.done')).toMatchObject({
      text: 'Héllo',
    });
    expect(events.find((event) => event.type === 'response.content_part.done')).toMatchObject({
      part: { text: 'Héllo' },
    });
    expect(events.find((event) => event.type === 'response.function_call_arguments.done')).toMatchObject({
      arguments: '{"a":1}',
    });
    expect(response).toMatchObject({
      status: 'completed',
      usage: { input_tokens: 40, output_tokens: 6 },
      output: [
        { type: 'message', content: [{ type: 'output_text', text: 'Héllo' }] },
        { type: 'function_call', call_id: 'c1', name: 'w', arguments: '{"a":1}' },
      ],
    });
    expect(reply).toMatchObject({
      role: 'assistant',
      content: 'Héllo',
      tool_calls: [{ id: 'c1', function: { name: 'w', arguments: '{"a":1}' } }],
    });
  });

  it('writes each event as JSON.stringify writes its object, the delta events included', () => {
    const translator = new ResponsesStreamTranslator(meta);
    const deltas = ['plain', 'quote " and \\ back', 'line\nbreak\ttab \u0001', 'é ☃ 😀', '\ud800 alone'];
    const calls = ['{"path":"a\\b"}', '\u2028'];
    let text = translator.start();
    for (const content of deltas)
      text += translator.push(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`);
    for (const [at, args] of calls.entries())
      text += translator.push(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...(at === 0 ? { id: 'c', function: { name: 'f', arguments: args } } : { function: { arguments: args } }) }] } }] })}\n\n`,
      );
    // Every event's data line is the compact JSON of its own object, members in the documented order.
    const events = eventsWrittenAsJson(text);
    const textDeltas = events.filter((event) => event.type === 'response.output_text.delta');
    expect(textDeltas.map((event) => event.delta)).toEqual(deltas);
    expect(Object.keys(textDeltas[0] as object)).toEqual([
      'type',
      'sequence_number',
      'item_id',
      'output_index',
      'content_index',
      'delta',
      'logprobs',
    ]);
    const argumentDeltas = events.filter((event) => event.type === 'response.function_call_arguments.delta');
    expect(argumentDeltas.map((event) => event.delta)).toEqual(calls);
    expect(argumentDeltas[1]).toMatchObject({ output_index: 1 });
    expect(Object.keys(argumentDeltas[0] as object)).toEqual([
      'type',
      'sequence_number',
      'item_id',
      'output_index',
      'delta',
    ]);
  });

  it('fails the response on an error event', () => {
    const translator = new ResponsesStreamTranslator(meta);
    translator.start();
    const out = translator.push('data: {"error":{"code":"server_error","message":"boom"}}\n\n');
    expect(translator.succeeded).toBe(false);
    expect(sseEventData(out)).toEqual([
      expect.objectContaining({ type: 'error', code: 'server_error', message: 'boom' }),
    ]);
  });
});
