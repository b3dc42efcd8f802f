// The reply a session stores, rebuilt from what was relayed: a whole completion, or a stream's deltas
// however the bytes were split (inside an event, inside a multi-byte character), with tool calls
// assembled by index, reasoning and refusals kept, other choices ignored, and malformed events counted.
import { describe, expect, it } from 'vitest';
import {
  addReasoningDetails,
  replyFromCompletion,
  StreamReplyAssembler,
} from '../../src/upstream/reply-assembler.js';

const event = (value: unknown): string =>
  `data: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`;
const delta = (value: Record<string, unknown>, index = 0, finish: string | null = null) => ({
  choices: [{ index, delta: value, finish_reason: finish }],
});

/** Feeds the stream in pieces of `size` bytes. */
function assemble(stream: string, size: number) {
  const bytes = Buffer.from(stream, 'utf8');
  const assembler = new StreamReplyAssembler();
  for (let at = 0; at < bytes.length; at += size) assembler.push(bytes.subarray(at, at + size));
  return assembler.end();
}

describe('StreamReplyAssembler', () => {
  const stream =
    event(delta({ role: 'assistant', content: '' })) +
    event(delta({ reasoning_content: 'Think ' })) +
    event(delta({ reasoning_content: 'first.' })) +
    event(delta({ content: 'Grüße, ' })) +
    event(delta({ content: '世界' })) +
    event(delta({ content: 'other choice' }, 1)) +
    event(
      delta({
        tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read', arguments: '' } }],
      }),
    ) +
    event(delta({ tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] })) +
    event(delta({ tool_calls: [{ index: 1, id: 'call_2', function: { name: 'list', arguments: '{}' } }] })) +
    event(delta({ tool_calls: [{ index: 0, function: { arguments: 'th":"a"}' } }] })) +
    event('not json') +
    event(delta({}, 0, 'tool_calls')) +
    event('[DONE]');

  it.each([1, 2, 3, 7, 64, 100_000])('rebuilds the message from pieces of %i bytes', (size) => {
    expect(assemble(stream, size)).toEqual({
      message: {
        role: 'assistant',
        content: 'Grüße, 世界',
        reasoning_content: 'Think first.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } },
          { id: 'call_2', type: 'function', function: { name: 'list', arguments: '{}' } },
        ],
      },
      finished: true,
      malformedEvents: 1,
      erred: false,
    });
  });

  it('keeps reasoning under the name the provider gives it: `reasoning` as vLLM 0.17 and OpenRouter stream it', () => {
    const vllm =
      event(delta({ role: 'assistant', content: '' })) +
      event(delta({ reasoning: 'Think ' })) +
      event(delta({ reasoning: 'first.' })) +
      event(delta({ content: 'Done.' })) +
      event(delta({}, 0, 'stop'));
    expect(assemble(vllm, 5).message).toEqual({
      role: 'assistant',
      content: 'Done.',
      reasoning: 'Think first.',
    });
  });

  it('says a stream that ended without its finish is not finished; tool calls alone leave content null', () => {
    const cut = event(
      delta({ tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{}' } }] }),
    );
    expect(assemble(cut, 5)).toEqual({
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      finished: false,
      malformedEvents: 0,
      erred: false,
    });
  });

  it('leaves no hole when a provider numbers its tool calls from 1', () => {
    const fromOne = event(
      delta({ tool_calls: [{ index: 1, id: 'c', function: { name: 'f', arguments: '{}' } }] }),
    );
    expect(assemble(fromOne, 9).message.tool_calls).toEqual([
      { id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } },
    ]);
  });

  it("assembles a call whose continuation deltas repeat its id, type and name as null (SGLang, Cloudflare's, Zen)", () => {
    // As sgl-project/sglang#35542 quotes the wire: the id and name on the first delta, null on the rest,
    // and `tool_calls: null` on the deltas without a call.
    const padded =
      event(delta({ role: 'assistant', content: null, tool_calls: null })) +
      event(
        delta({
          role: null,
          content: '',
          tool_calls: [
            { id: 'call_abc', index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        }),
      ) +
      event(
        delta({
          tool_calls: [{ id: null, index: 0, type: null, function: { name: null, arguments: '{"city":' } }],
        }),
      ) +
      event(
        delta({
          tool_calls: [{ id: null, index: 0, type: null, function: { name: null, arguments: '"Paris"}' } }],
        }),
      ) +
      event(delta({}, 0, 'tool_calls'));
    expect(assemble(padded, 13).message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'call_abc',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
        },
      ],
    });
  });

  it('takes what is not shaped as a chunk, a choice or a delta as saying nothing', () => {
    const odd =
      event(delta({ role: 'assistant', content: 'Hi' })) +
      event({ choices: { a: 1 } }) +
      event({ choices: [null, 'x'] }) +
      event(delta(null as unknown as Record<string, unknown>)) +
      event('null') +
      event('[1,2]') +
      event(delta({ content: ' there' }, 0, 'stop'));
    const assembled = assemble(odd, 5);
    expect(assembled.message).toEqual({ role: 'assistant', content: 'Hi there' });
    expect(assembled.finished).toBe(true);
  });

  it('orders calls by the index their deltas give, whatever number it is, without a hole for each', () => {
    const calls =
      event(delta({ tool_calls: [{ index: 1e9, id: 'c2', function: { name: 'g', arguments: '{}' } }] })) +
      event(delta({ tool_calls: [{ index: -1, id: 'c1', function: { name: 'f', arguments: '{}' } }] }));
    expect(assemble(calls, 11).message.tool_calls).toEqual([
      { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } },
      { id: 'c2', type: 'function', function: { name: 'g', arguments: '{}' } },
    ]);
  });

  it.each([
    [
      "OpenRouter's error during generation",
      event(delta({ role: 'assistant', content: 'The answer beg' })) +
        event({
          error: { code: 'server_error', message: 'x' },
          choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }],
        }) +
        event('[DONE]'),
    ],
    [
      'an error chunk alone, then [DONE] (vLLM, SGLang, OpenAI)',
      event(delta({ content: 'Hi' })) + event({ error: { message: 'x' } }) + event('[DONE]'),
    ],
    [
      "vLLM's own error object",
      event(delta({ content: 'Hi' })) +
        event({ object: 'error', message: 'x' }) +
        event(delta({}, 0, 'stop')),
    ],
  ])('says the answer failed when the provider reports an error in the stream: %s', (_name, stream) => {
    expect(assemble(stream, 9).erred).toBe(true);
  });

  it('says nothing failed in a stream without an error', () => {
    expect(
      assemble(event(delta({ content: 'Hi', refusal: null })) + event(delta({}, 0, 'stop')), 9).erred,
    ).toBe(false);
  });

  it('writes arguments a delta gives as the decoded object as their JSON text', () => {
    const decoded = event(
      delta({
        tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'f', arguments: { a: [1] } } }],
      }),
    );
    expect(assemble(decoded, 7).message.tool_calls).toEqual([
      { id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":[1]}' } },
    ]);
  });

  it("keeps a tool call's extra_content: Gemini's thought signature, which Gemini 3 refuses the call without", () => {
    // As Google's OpenAI-compatible endpoint streams a call: whole, its signature beside it (first call only).
    const signature = { google: { thought_signature: 'CrICAdHtim827fQ==' } };
    const gemini =
      event(
        delta({
          tool_calls: [
            {
              index: 0,
              id: 'function-call-1',
              type: 'function',
              function: { name: 'read', arguments: '{"path":"a"}' },
              extra_content: signature,
            },
          ],
        }),
      ) +
      event(
        delta({
          tool_calls: [
            {
              index: 1,
              id: 'function-call-2',
              type: 'function',
              function: { name: 'list', arguments: '{}' },
            },
          ],
        }),
      ) +
      event(delta({}, 0, 'tool_calls'));
    expect(assemble(gemini, 11).message.tool_calls).toEqual([
      {
        id: 'function-call-1',
        type: 'function',
        function: { name: 'read', arguments: '{"path":"a"}' },
        extra_content: signature,
      },
      { id: 'function-call-2', type: 'function', function: { name: 'list', arguments: '{}' } },
    ]);
  });

  it("keeps OpenRouter's reasoning_details whole: each entry's pieces joined by index, its signature last", () => {
    const openrouter =
      event(
        delta({
          reasoning: 'Read ',
          reasoning_details: [
            { type: 'reasoning.text', text: 'Read ', format: 'anthropic-claude-v1', index: 0 },
          ],
        }),
      ) +
      event(
        delta({
          reasoning: 'it.',
          reasoning_details: [
            { type: 'reasoning.text', text: 'it.', format: 'anthropic-claude-v1', index: 0 },
          ],
        }),
      ) +
      event(
        delta({
          reasoning_details: [
            { type: 'reasoning.text', signature: 'EqQBCkYI', format: 'anthropic-claude-v1', index: 0 },
          ],
        }),
      ) +
      event(
        delta({
          reasoning_details: [
            {
              type: 'reasoning.encrypted',
              data: 'gAAAA',
              id: 'rs_1',
              format: 'openai-responses-v1',
              index: 1,
            },
          ],
        }),
      ) +
      event(
        delta({
          tool_calls: [
            { index: 0, id: 'toolu_1', type: 'function', function: { name: 'read', arguments: '{}' } },
          ],
        }),
      ) +
      event(delta({}, 0, 'tool_calls'));
    expect(assemble(openrouter, 13).message).toEqual({
      role: 'assistant',
      content: null,
      reasoning: 'Read it.',
      reasoning_details: [
        {
          type: 'reasoning.text',
          text: 'Read it.',
          signature: 'EqQBCkYI',
          format: 'anthropic-claude-v1',
          index: 0,
        },
        { type: 'reasoning.encrypted', data: 'gAAAA', id: 'rs_1', format: 'openai-responses-v1', index: 1 },
      ],
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'read', arguments: '{}' } }],
    });
  });

  it("keeps an answer streamed as chunks (Mistral's reasoning models): its text, and its thinking in Mistral's form", () => {
    const chunk = (type: 'thinking' | 'text', text: string) =>
      type === 'text' ? [{ type, text }] : [{ type, thinking: [{ type: 'text', text }] }];
    const magistral =
      event(delta({ role: 'assistant', content: '' })) +
      event(delta({ content: chunk('thinking', 'Think ') })) +
      event(delta({ content: chunk('thinking', 'twice.') })) +
      event(delta({ content: chunk('text', 'Hel') })) +
      event(delta({ content: chunk('text', 'lo.') })) +
      event(delta({}, 0, 'stop'));
    expect(assemble(magistral, 7).message).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: [{ type: 'text', text: 'Think twice.' }] },
        { type: 'text', text: 'Hello.' },
      ],
    });
    // Text parts alone (as some gateways stream them) make a string, as a string would.
    expect(
      assemble(event(delta({ content: chunk('text', 'Hi.') })) + event(delta({}, 0, 'stop')), 5).message,
    ).toEqual({
      role: 'assistant',
      content: 'Hi.',
    });
  });

  it('keeps a refusal', () => {
    expect(
      assemble(event(delta({ refusal: 'I cannot ' })) + event(delta({ refusal: 'help.' }, 0, 'stop')), 4)
        .message,
    ).toEqual({
      role: 'assistant',
      content: '',
      refusal: 'I cannot help.',
    });
  });
});

describe("Claude's blocks of an answer (anthropic-wire.ts)", () => {
  const blocks = [
    { type: 'thinking', thinking: 'Check.', signature: 'sig-1' },
    { type: 'tool_use', id: 't1', name: 'w', input: {} },
  ];

  it('stores them with what the chat form was when they came at the end of a stream', () => {
    const { message } = assemble(
      event(delta({ reasoning_content: 'Check.' })) +
        event(
          delta({
            tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'w', arguments: '{}' } }],
          }),
        ) +
        event(delta({ ctxgate_anthropic_blocks: blocks }, 0, 'tool_calls')) +
        event('[DONE]'),
      7,
    );
    expect(message.ctxgate_anthropic).toEqual({
      blocks,
      made: JSON.stringify([message.content, message.tool_calls]),
    });
  });

  it('keeps them from a whole answer, and nothing that is not them', () => {
    const extension = { blocks, made: '[null,[{"id":"t1"}]]' };
    const message = {
      content: null,
      tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    };
    expect(
      replyFromCompletion({ choices: [{ message: { ...message, ctxgate_anthropic: extension } }] }),
    ).toEqual({
      role: 'assistant',
      ...message,
      ctxgate_anthropic: extension,
    });
    expect(
      replyFromCompletion({ choices: [{ message: { ...message, ctxgate_anthropic: { blocks: 'x' } } }] }),
    ).toEqual({
      role: 'assistant',
      ...message,
    });
  });
});

describe('replyFromCompletion', () => {
  it.each<[string, Record<string, unknown>, Record<string, unknown> | undefined]>([
    [
      'text',
      { choices: [{ message: { role: 'assistant', content: 'Hi.' } }] },
      { role: 'assistant', content: 'Hi.' },
    ],
    [
      'tool calls, content null',
      {
        choices: [
          {
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
            },
          },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
    ],
    [
      'tool calls not in the shape (tool-call-shape.ts): arguments as an object, a null entry',
      {
        choices: [
          {
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [null, { id: 'c', function: { name: 'f', arguments: { a: 1 } } }],
            },
          },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
    ],
    [
      'reasoning and refusal kept, other fields not',
      { choices: [{ message: { content: 'x', reasoning_content: 'r', refusal: 'no', annotations: [] } }] },
      { role: 'assistant', content: 'x', reasoning_content: 'r', refusal: 'no' },
    ],
    [
      'reasoning named `reasoning` (vLLM 0.17, OpenRouter): kept under that name',
      { choices: [{ message: { content: 'x', reasoning: 'r' } }] },
      { role: 'assistant', content: 'x', reasoning: 'r' },
    ],
    [
      "OpenRouter's reasoning_details (Claude's thinking and its signature): kept whole",
      {
        choices: [
          {
            message: {
              content: null,
              reasoning: 'r',
              reasoning_details: [{ type: 'reasoning.text', text: 'r', signature: 's', index: 0 }],
              tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
            },
          },
        ],
      },
      {
        role: 'assistant',
        content: null,
        reasoning: 'r',
        reasoning_details: [{ type: 'reasoning.text', text: 'r', signature: 's', index: 0 }],
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
    ],
    ['no choices', { object: 'chat.completion' }, undefined],
    ['a choice without a message', { choices: [{}] }, undefined],
  ])('%s', (_name, completion, expected) => {
    expect(replyFromCompletion(completion)).toEqual(expected);
  });
});

describe('addReasoningDetails', () => {
  it('joins pieces by their index; an index far past the entries, or not whole, starts the next entry', () => {
    const into: Array<Record<string, unknown>> = [];
    addReasoningDetails(into, [{ type: 'reasoning.text', text: 'Think', index: 1 }]);
    addReasoningDetails(into, [
      { text: ' more', index: 1 },
      { signature: 'sig', index: 1 },
    ]);
    addReasoningDetails(into, [{ type: 'reasoning.encrypted', data: 'x', index: 1e9 }]);
    addReasoningDetails(into, [{ type: 'reasoning.summary', summary: 's', index: 0.5 }, 'not a piece']);
    // A provider that numbers from 1 leaves one hole, which readers skip; a billion leaves none.
    expect(into.length).toBe(4);
    expect(into.filter((entry) => entry !== undefined)).toEqual([
      { type: 'reasoning.text', text: 'Think more', index: 1, signature: 'sig' },
      { type: 'reasoning.encrypted', data: 'x', index: 1e9 },
      { type: 'reasoning.summary', summary: 's', index: 0.5 },
    ]);
  });
});
