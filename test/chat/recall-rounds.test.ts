// The recall rounds between the gateway and the upstream, with a scripted upstream at the port: what
// each round sends, what the client gets, what the rounds cost, and the bounds (room, rounds).
import { describe, expect, it } from 'vitest';
import { answerRecallCalls } from '../../src/chat/recall-rounds.js';
import type { ContextMessage } from '../../src/context/types.js';
import { recallLimitReached, recallNoRoom } from '../../src/context/recall.js';
import { answerOf, scriptedUpstream, type ScriptedAnswer } from '../helpers/port-fakes.js';
import type { UpstreamResponse } from '../../src/upstream/upstream.js';

const json = { 'content-type': 'application/json' };
const recallCall = (id: string, query: string) => ({
  id,
  type: 'function',
  function: { name: 'ctxgate_recall', arguments: JSON.stringify({ query }) },
});
const whole = (message: Record<string, unknown>, usage = { prompt_tokens: 900, completion_tokens: 12 }) =>
  ({
    status: 200,
    headers: json,
    chunks: [
      JSON.stringify({
        id: 'c',
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', ...message },
            finish_reason: message.tool_calls === undefined ? 'stop' : 'tool_calls',
          },
        ],
        usage,
      }),
    ],
  }) satisfies ScriptedAnswer;

const firstRequest = {
  model: 'm',
  messages: [{ role: 'user', content: 'What is the code of vault 7?' }],
};

function rounds(
  script: ScriptedAnswer[],
  first: ScriptedAnswer | UpstreamResponse,
  overrides: { room?: number; maxCalls?: number; streaming?: boolean } = {},
) {
  const upstream = scriptedUpstream(script);
  const searched: Array<{ query: string; maxTokens: number }> = [];
  const outcome = answerRecallCalls({
    response: 'status' in first ? answerOf(first) : first,
    request: firstRequest,
    streaming: overrides.streaming ?? false,
    maxCalls: overrides.maxCalls ?? 2,
    resultTokens: 500,
    room: overrides.room ?? 2_000,
    // Four characters a token: the count the test can check by hand.
    count: (message: ContextMessage) => Math.ceil(JSON.stringify(message).length / 4),
    promptTokens: 800,
    search: async (query, maxTokens) => {
      searched.push({ query, maxTokens });
      return `Found for ${query}: K7-12345.`;
    },
    send: (body) =>
      upstream.send({
        upstream: {} as never,
        method: 'POST',
        path: '/chat/completions',
        headers: {},
        body,
        signal: {} as never,
      }),
  });
  return { upstream, searched, outcome };
}

const bodyOf = (body: unknown) => JSON.parse(String(body)) as { messages: Array<Record<string, unknown>> };

describe('recall rounds on whole answers', () => {
  it('answers a call alone, asks again with the call and its result, and hands on the answer that follows', async () => {
    const { upstream, searched, outcome } = rounds(
      [whole({ content: 'The code is K7-12345.' }, { prompt_tokens: 1_000, completion_tokens: 8 })],
      whole({ content: null, tool_calls: [recallCall('call_a', 'vault 7')] }),
    );
    const done = await outcome;
    expect(searched).toEqual([{ query: 'vault 7', maxTokens: 500 }]);
    expect(upstream.sent).toHaveLength(1);
    const sent = bodyOf(upstream.sent[0]?.body);
    expect(sent.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [recallCall('call_a', 'vault 7')] },
      { role: 'tool', tool_call_id: 'call_a', content: 'Found for vault 7: K7-12345.' },
    ]);
    expect(done.calls).toBe(1);
    // The round the client never saw, as the upstream counted it.
    expect(done.usage).toEqual({ promptTokens: 900, completionTokens: 12, estimated: false });
    expect(JSON.parse((await done.response.readAll()).toString()).choices[0].message.content).toBe(
      'The code is K7-12345.',
    );
  });

  it("sends a thinking model's reasoning back with its call, as DeepSeek and Kimi require", async () => {
    const { upstream, outcome } = rounds(
      [whole({ content: 'The code is K7-12345.' })],
      whole({
        content: null,
        reasoning_content: 'Vault 7 was summarized.',
        tool_calls: [recallCall('call_a', 'vault 7')],
      }),
    );
    await outcome;
    expect(bodyOf(upstream.sent[0]?.body).messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [recallCall('call_a', 'vault 7')],
      reasoning_content: 'Vault 7 was summarized.',
    });
  });

  it("sends the call back with what its provider attached to it (Gemini 3's thought signature), whole and streamed", async () => {
    const signed = {
      ...recallCall('call_a', 'vault 7'),
      extra_content: { google: { thought_signature: 'CrIC==' } },
    };
    const { upstream, outcome } = rounds(
      [whole({ content: 'The code is K7-12345.' })],
      whole({ content: null, tool_calls: [signed] }),
    );
    await outcome;
    expect(bodyOf(upstream.sent[0]?.body).messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [signed],
    });
    const streamed = rounds(
      [whole({ content: 'ok' })],
      {
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        chunks: [
          `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...signed }] } }] })}\n\n`,
          `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] })}\n\ndata: [DONE]\n\n`,
        ],
      },
      { streaming: true },
    );
    await streamed.outcome;
    expect(bodyOf(streamed.upstream.sent[0]?.body).messages[1]?.tool_calls).toEqual([signed]);
  });

  it('gives each call of a round its share of the room, and says so when none is left', async () => {
    const twoCalls = whole({
      content: null,
      tool_calls: [recallCall('call_a', 'a'), recallCall('call_b', 'b')],
    });
    const roomy = rounds([whole({ content: 'ok' })], twoCalls, { room: 700 });
    await roomy.outcome;
    // 700 less the assistant's call (its JSON over four), shared by two, less the framing kept.
    const assistantTokens = Math.ceil(
      JSON.stringify(bodyOf(roomy.upstream.sent[0]?.body).messages[1]).length / 4,
    );
    expect(roomy.searched[0]?.maxTokens).toBe(Math.min(500, Math.floor((700 - assistantTokens) / 2) - 24));
    const tight = rounds([whole({ content: 'ok' })], twoCalls, { room: 60 });
    await tight.outcome;
    expect(tight.searched).toEqual([]);
    const results = bodyOf(tight.upstream.sent[0]?.body).messages.slice(2);
    expect(results.map((message) => message.content)).toEqual([recallNoRoom, recallNoRoom]);
  });

  it('answers that the search is over after maxCalls rounds, then hands on whatever comes, calls taken out', async () => {
    const again = () => whole({ content: null, tool_calls: [recallCall(`call_${Math.random()}`, 'x')] });
    const { upstream, searched, outcome } = rounds([again(), again(), again()], again(), { maxCalls: 1 });
    const done = await outcome;
    expect(searched).toHaveLength(1);
    expect(upstream.sent).toHaveLength(2);
    expect(bodyOf(upstream.sent[1]?.body).messages.at(-1)?.content).toBe(recallLimitReached);
    const message = JSON.parse((await done.response.readAll()).toString()).choices[0];
    expect(message).toMatchObject({ message: { role: 'assistant', content: '' }, finish_reason: 'stop' });
    expect(done.calls).toBe(2);
  });

  it("hands on an answer with the client's own calls, recall calls taken out, without asking again", async () => {
    const { upstream, outcome } = rounds(
      [],
      whole({
        content: null,
        tool_calls: [
          recallCall('call_a', 'x'),
          { id: 'call_b', type: 'function', function: { name: 'lookup', arguments: '{}' } },
        ],
      }),
    );
    const done = await outcome;
    expect(upstream.sent).toHaveLength(0);
    expect(done.calls).toBe(0);
    const message = JSON.parse((await done.response.readAll()).toString()).choices[0].message;
    expect(message.tool_calls.map((call: { function: { name: string } }) => call.function.name)).toEqual([
      'lookup',
    ]);
  });

  it('hands on a refusal as it came', async () => {
    const refusal = { status: 429, headers: json, chunks: ['{"error":{"message":"slow down"}}'] };
    const { upstream, outcome } = rounds([], refusal);
    const done = await outcome;
    expect(done.response.statusCode).toBe(429);
    expect(upstream.sent).toHaveLength(0);
  });
});

const sse = { 'content-type': 'text/event-stream' };
const event = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

describe('recall rounds on streams', () => {
  it('reads a stream that leads with a recall call to its end, answers it, and relays the next one', async () => {
    const first: ScriptedAnswer = {
      status: 200,
      headers: sse,
      chunks: [
        event({ role: 'assistant', content: '' }),
        event({
          tool_calls: [
            { index: 0, ...recallCall('call_a', ''), function: { name: 'ctxgate_recall', arguments: '' } },
          ],
        }),
        event({ tool_calls: [{ index: 0, function: { arguments: '{"query":"vault 7"}' } }] }),
        event({}, 'tool_calls') + 'data: [DONE]\n\n',
      ],
    };
    const next: ScriptedAnswer = {
      status: 200,
      headers: sse,
      chunks: [
        event({ role: 'assistant', content: '' }),
        event({ content: 'K7-12345' }),
        event({}, 'stop') + 'data: [DONE]\n\n',
      ],
    };
    const { upstream, searched, outcome } = rounds([next], first, { streaming: true });
    const done = await outcome;
    expect(searched).toEqual([{ query: 'vault 7', maxTokens: 500 }]);
    expect(upstream.sent).toHaveLength(1);
    const relayed = (await done.response.readAll()).toString();
    expect(relayed).toBe(next.chunks?.join(''));
    // No usage in the stream: the round is the gateway's estimate.
    expect(done.usage.estimated).toBe(true);
    expect(done.usage.promptTokens).toBe(800);
  });

  it('relays a stream that leads with content, a later recall call taken out, without asking again', async () => {
    const first: ScriptedAnswer = {
      status: 200,
      headers: sse,
      chunks: [
        event({ role: 'assistant', content: '' }),
        event({ content: 'Hello' }),
        event({
          tool_calls: [
            {
              index: 0,
              id: 'call_a',
              type: 'function',
              function: { name: 'ctxgate_recall', arguments: '{}' },
            },
          ],
        }),
        event({}, 'tool_calls') + 'data: [DONE]\n\n',
      ],
    };
    const { upstream, outcome } = rounds([], first, { streaming: true });
    const done = await outcome;
    const relayed = (await done.response.readAll()).toString();
    expect(upstream.sent).toHaveLength(0);
    expect(relayed).toContain('Hello');
    expect(relayed).not.toContain('ctxgate_recall');
    expect(relayed).toContain('"finish_reason":"stop"');
  });

  it('reads a stream whose events were all read before it was looked at (it had ended) as it leads', async () => {
    const whole = [
      event({ role: 'assistant', content: '' }),
      event({
        tool_calls: [
          {
            index: 0,
            id: 'call_a',
            type: 'function',
            function: { name: 'ctxgate_recall', arguments: '{"query":"v"}' },
          },
        ],
      }),
      event({}, 'tool_calls'),
      'data: [DONE]\n\n',
    ].join('');
    // As the undici port answers a peek once the body has ended: what was read, no question asked.
    const ended = {
      ...answerOf({ status: 200, headers: sse, chunks: [whole] }),
      peek: async () => Buffer.from(whole),
    };
    const next: ScriptedAnswer = {
      status: 200,
      headers: sse,
      chunks: [event({ content: 'K7' }), event({}, 'stop') + 'data: [DONE]\n\n'],
    };
    const { upstream, outcome } = rounds([next], ended, { streaming: true });
    const done = await outcome;
    expect(upstream.sent).toHaveLength(1);
    expect(done.calls).toBe(1);
    expect((await done.response.readAll()).toString()).toContain('K7');
  });
});
