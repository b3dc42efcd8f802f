// A provider's tool calls in the API's shape (tool-call-shape.ts), as tables: the shapes servers give
// (SGLang's null-padded deltas, llama-server's decoded arguments, ids as numbers, entries that are not
// calls) and what the gateway counts, stores and passes on of each.
import { describe, expect, it } from 'vitest';
import {
  conformCompletion,
  conformedToolCalls,
  StreamedToolCalls,
  toolCallDelta,
} from '../../src/upstream/tool-call-shape.js';

describe('toolCallDelta: what one streamed delta says of a call', () => {
  it.each([
    [
      "OpenAI's first delta",
      { index: 0, id: 'call_1', type: 'function', function: { name: 'read', arguments: '' } },
      { index: 0, id: 'call_1', type: 'function', name: 'read', arguments: '', extraContent: undefined },
    ],
    [
      "OpenAI's continuation",
      { index: 0, function: { arguments: '{"pa' } },
      {
        index: 0,
        id: undefined,
        type: undefined,
        name: undefined,
        arguments: '{"pa',
        extraContent: undefined,
      },
    ],
    [
      "SGLang's continuation, its id, type and name repeated as null",
      { index: 0, id: null, type: null, function: { name: null, arguments: 'th":1}' } },
      {
        index: 0,
        id: undefined,
        type: undefined,
        name: undefined,
        arguments: 'th":1}',
        extraContent: undefined,
      },
    ],
    [
      'arguments as the decoded object',
      { index: 1, id: 'call_2', function: { name: 'read', arguments: { path: 'a.ts' } } },
      {
        index: 1,
        id: 'call_2',
        type: undefined,
        name: 'read',
        arguments: '{"path":"a.ts"}',
        extraContent: undefined,
      },
    ],
    [
      'an id and a name as numbers, arguments as a number',
      { id: 7, function: { name: 42, arguments: 3 } },
      { index: undefined, id: '7', type: undefined, name: '42', arguments: '3', extraContent: undefined },
    ],
    [
      "Gemini's thought signature",
      { index: 0, id: 'c', extra_content: { google: { thought_signature: 'sig' } }, function: null },
      {
        index: 0,
        id: 'c',
        type: undefined,
        name: undefined,
        arguments: undefined,
        extraContent: { google: { thought_signature: 'sig' } },
      },
    ],
  ])('%s', (_name, delta, said) => {
    expect(toolCallDelta(delta)).toEqual(said);
  });

  it.each([[null], [42], ['call_1'], [[{ id: 'call_1' }]]])('%j is not a call', (entry) => {
    expect(toolCallDelta(entry)).toBeUndefined();
  });
});

describe("conformedToolCalls: a whole message's calls", () => {
  it('gives back the very array when every call is in the shape already', () => {
    const calls = [
      { id: 'call_1', type: 'function', function: { name: 'read', arguments: '{}' }, extra_content: {} },
    ];
    expect(conformedToolCalls(calls)).toBe(calls);
  });

  it.each([
    [
      'arguments as the decoded object (llama-server)',
      [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'read', arguments: { path: 'a.ts', n: [1, 2] } },
        },
      ],
      [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'read', arguments: '{"path":"a.ts","n":[1,2]}' },
        },
      ],
    ],
    [
      // No arguments are none, as OpenAI gives them: `{}` (openai/openai-agents-js#664).
      'null arguments, no type',
      [{ id: 'call_1', function: { name: 'now', arguments: null } }],
      [{ id: 'call_1', type: 'function', function: { name: 'now', arguments: '{}' } }],
    ],
    [
      // OpenRouter's and Bedrock's Claude, Ollama, vLLM (simonw/llm#1164, sigoden/aichat#1213).
      'arguments of nothing',
      [
        { id: 'call_1', type: 'function', function: { name: 'now', arguments: '' } },
        { id: 'call_2', type: 'function', function: { name: 'list', arguments: ' \n' } },
      ],
      [
        { id: 'call_1', type: 'function', function: { name: 'now', arguments: '{}' } },
        { id: 'call_2', type: 'function', function: { name: 'list', arguments: '{}' } },
      ],
    ],
    [
      'an id as a number; the call’s other fields kept',
      [
        {
          id: 3,
          index: 0,
          type: 'function',
          function: { name: 'read', arguments: '{}' },
          extra_content: { a: 1 },
        },
      ],
      [
        {
          id: '3',
          index: 0,
          type: 'function',
          function: { name: 'read', arguments: '{}' },
          extra_content: { a: 1 },
        },
      ],
    ],
    [
      'entries that are not calls left out',
      [null, 'call_1', { id: 'call_2', type: 'function', function: { name: 'read', arguments: '{}' } }, 4],
      [{ id: 'call_2', type: 'function', function: { name: 'read', arguments: '{}' } }],
    ],
    [
      'a call without a function',
      [{ id: 'call_1', type: 'function', function: 'read' }],
      [{ id: 'call_1', type: 'function', function: { name: '', arguments: '{}' } }],
    ],
  ])('%s', (_name, calls, conformed) => {
    expect(conformedToolCalls(calls)).toEqual(conformed);
  });

  it.each([[undefined], [null], [[]], [42], [{ id: 'call_1' }], [[null, 'x']]])(
    '%j holds no call',
    (calls) => {
      expect(conformedToolCalls(calls)).toBeUndefined();
    },
  );
});

describe('conformCompletion: a parsed whole answer, in place', () => {
  const completionOf = (message: unknown, finish = 'tool_calls') => ({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message, finish_reason: finish }],
  });

  it('changes nothing, and says so, in an answer in the shape', () => {
    const message = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read', arguments: '{}' } }],
    };
    const completion = completionOf(structuredClone(message));
    expect(conformCompletion(completion)).toBe(false);
    expect(completion).toEqual(completionOf(message));
  });

  it.each([
    ['no tool_calls', { role: 'assistant', content: 'Hi' }],
    ['tool_calls null', { role: 'assistant', content: 'Hi', tool_calls: null }],
    ['tool_calls empty', { role: 'assistant', content: 'Hi', tool_calls: [] }],
  ])('leaves an answer with %s as it is', (_name, message) => {
    const completion = completionOf(structuredClone(message), 'stop');
    expect(conformCompletion(completion)).toBe(false);
    expect(completion).toEqual(completionOf(message, 'stop'));
  });

  it('writes decoded arguments as text and takes out tool_calls that hold no call (each given its finish)', () => {
    const completion = {
      choices: [
        {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', function: { name: 'f', arguments: { a: 1 } } }],
          },
        },
        { message: { role: 'assistant', content: 'Hi', tool_calls: 42 } },
      ],
    };
    expect(conformCompletion(completion)).toBe(true);
    expect(completion).toEqual({
      choices: [
        {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
          },
          finish_reason: 'tool_calls',
        },
        { message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' },
      ],
    });
  });
});

describe("conformCompletion: an answer's finish as its calls say it", () => {
  const call = { id: 'call_1', type: 'function', function: { name: 'read', arguments: '{}' } };
  const answer = (finish: string | null, calls?: unknown[]) => ({
    choices: [
      {
        index: 0,
        message: Object.assign(
          { role: 'assistant', content: null },
          calls === undefined ? {} : { tool_calls: calls },
        ),
        finish_reason: finish,
      },
    ],
  });

  it.each([
    // Gemini's OpenAI-compatible endpoint, LiteLLM before Ollama (anomalyco/opencode#14972, #20719).
    ['calls that finish as "stop"', answer('stop', [call]), 'tool_calls'],
    // Claude behind a proxy: "tool_use" and no call (mastra-ai/mastra#14187), which loops an agent.
    ['"tool_calls" and no call', answer('tool_calls'), 'stop'],
    ['"tool_calls" and an empty list', answer('tool_calls', []), 'stop'],
    // Other servers' words for OpenAI's (Together's "eos", TGI's "eos_token", Claude's and Gemini's through a
    // relay): strongly typed clients refuse a finish they do not know, the AI SDK reads it as "other".
    ['"eos" (Together)', answer('eos'), 'stop'],
    ['"eos_token" (TGI)', answer('eos_token'), 'stop'],
    ['"end_turn" (Claude through a relay)', answer('end_turn'), 'stop'],
    ['"stop_sequence"', answer('stop_sequence'), 'stop'],
    ['"STOP" (Gemini through a relay)', answer('STOP'), 'stop'],
    ['"max_tokens"', answer('max_tokens', [call]), 'length'],
    ['"MAX_TOKENS"', answer('MAX_TOKENS'), 'length'],
    ['"tool_use" with a call', answer('tool_use', [call]), 'tool_calls'],
    ['"tool_use" with none', answer('tool_use'), 'stop'],
    ['"SAFETY"', answer('SAFETY'), 'content_filter'],
    // No finish said (KoboldCpp), or SGLang's and KoboldCpp's words for none: OpenAI's always say one.
    ['no finish', answer(null), 'stop'],
    ['no finish, with a call', answer(null, [call]), 'tool_calls'],
    ['""', answer(''), 'stop'],
    ['"null" with a call', answer('null', [call]), 'tool_calls'],
    ['"None" (SGLang, August 2024)', answer('None'), 'stop'],
  ])('%s: the finish its calls say', (_name, completion, finish) => {
    expect(conformCompletion(completion)).toBe(true);
    expect(completion.choices[0]?.finish_reason).toBe(finish);
  });

  it.each([
    ['calls that finish as "tool_calls"', answer('tool_calls', [call])],
    ['text that finishes as "stop"', answer('stop')],
    // A call cut short by the cap says so: the client is not told it may run it.
    ['calls cut at the cap', answer('length', [call])],
    ['a filtered answer', answer('content_filter')],
    // A word nobody is known to mean anything by: as it came.
    ['"banana"', answer('banana')],
  ])('%s: as it came', (_name, completion) => {
    const before = structuredClone(completion);
    expect(conformCompletion(completion)).toBe(false);
    expect(completion).toEqual(before);
  });
});

describe("StreamedToolCalls: a stream's calls, however a provider's deltas say them", () => {
  /** A delta's call: index, id, name and arguments as a provider sends them (undefined: left out). */
  const said = (index?: number, id?: string, name?: string, args?: string) => ({
    ...(index === undefined ? {} : { index }),
    ...(id === undefined ? {} : { id, type: 'function' }),
    function: { ...(name === undefined ? {} : { name }), ...(args === undefined ? {} : { arguments: args }) },
  });
  const callsOf = (deltas: unknown[]) => {
    const calls = new StreamedToolCalls();
    for (const delta of deltas) {
      const read = toolCallDelta(delta);
      if (read !== undefined) calls.take(read);
    }
    // An id no delta said shows as 'made' when it is one made for the call (tool-call-ids.ts).
    const given = new Set(deltas.map((delta) => (delta as { id?: unknown }).id));
    return calls.calls.map(({ id, name, arguments: text }) => [
      !given.has(id) && /^call_[A-Za-z0-9]{20}$/.test(id) ? 'made' : id,
      name,
      text,
    ]);
  };

  it.each([
    [
      "OpenAI's: an index per call, the id and name on its first delta",
      [
        said(0, 'a', 'f', ''),
        said(0, undefined, undefined, '{"x":'),
        said(0, undefined, undefined, '1}'),
        said(1, 'b', 'g', '{}'),
      ],
      [
        ['a', 'f', '{"x":1}'],
        ['b', 'g', '{}'],
      ],
    ],
    [
      "Gemini's OpenAI-compatible endpoint: parallel calls all at index 0, each with its id and name",
      [
        said(0, 'a', 'f', ''),
        said(0, undefined, undefined, '{"c":"P"}'),
        said(0, 'b', 'f', ''),
        said(0, undefined, undefined, '{"c":"L"}'),
      ],
      [
        ['a', 'f', '{"c":"P"}'],
        ['b', 'f', '{"c":"L"}'],
      ],
    ],
    [
      'parallel calls whole at index 0',
      [said(0, 'a', 'f', '{"c":"P"}'), said(0, 'b', 'g', '{"c":"L"}')],
      [
        ['a', 'f', '{"c":"P"}'],
        ['b', 'g', '{"c":"L"}'],
      ],
    ],
    [
      'parallel calls at index 0 with empty ids, each named before its arguments',
      [
        said(0, '', 'f', ''),
        said(0, undefined, undefined, '{"c":"P"}'),
        said(0, '', 'g', ''),
        said(0, undefined, undefined, '{"c":"L"}'),
      ],
      [
        ['made', 'f', '{"c":"P"}'],
        ['made', 'g', '{"c":"L"}'],
      ],
    ],
    [
      'parallel calls at index 0 without ids, each whole with its name',
      [said(0, undefined, 'f', '{"c":"P"}'), said(0, undefined, 'f', '{"c":"L"}')],
      [
        ['made', 'f', '{"c":"P"}'],
        ['made', 'f', '{"c":"L"}'],
      ],
    ],
    [
      'MiniMax on NVIDIA NIM and Fireworks: the id, type and whole name on every delta',
      [said(0, 'a', 'f', '{"c":'), said(0, 'a', 'f', '"P"}'), said(0, 'a', 'f', '')],
      [['a', 'f', '{"c":"P"}']],
    ],
    [
      'the whole name on every delta, no id',
      [said(0, undefined, 'f', '{"c":'), said(0, undefined, 'f', '"P"}')],
      [['made', 'f', '{"c":"P"}']],
    ],
    [
      'a name given in pieces',
      [said(0, 'a', 'edit_ex', ''), said(0, undefined, 'isting_file', '{}')],
      [['a', 'edit_existing_file', '{}']],
    ],
    [
      'calls whole without an index (a gateway that translates Gemini or Bedrock)',
      [said(undefined, 'a', 'f', '{}'), said(undefined, 'b', 'g', '{}')],
      [
        ['a', 'f', '{}'],
        ['b', 'g', '{}'],
      ],
    ],
    [
      "a call's continuations without an index",
      [
        said(undefined, 'a', 'f', ''),
        said(undefined, undefined, undefined, '{"x":'),
        said(undefined, undefined, undefined, '1}'),
      ],
      [['a', 'f', '{"x":1}']],
    ],
    [
      'braces and quotes inside strings do not end the arguments early',
      [
        said(0, 'a', 'f', '{"s":"}{"'),
        said(0, undefined, 'f', ',"t":"\\"}"}'),
        said(0, undefined, 'f', '{"u":1}'),
      ],
      [
        ['a', 'f', '{"s":"}{","t":"\\"}"}'],
        ['made', 'f', '{"u":1}'],
      ],
    ],
    [
      'white space after whole arguments, with the name again',
      [said(0, 'a', 'f', '{}'), said(0, undefined, 'f', '\n')],
      [['a', 'f', '{}\n']],
    ],
    [
      'arguments that are not JSON, with the name on every delta',
      [said(0, undefined, 'f', 'hello'), said(0, undefined, 'f', ' world')],
      [['made', 'f', 'hello world']],
    ],
    [
      'another id, without a name, before the arguments are whole',
      [said(0, 'a', 'f', '{"x":'), said(0, 'b', undefined, '1}')],
      [['a', 'f', '{"x":1}']],
    ],
  ])('%s', (_name, deltas, expected) => {
    expect(callsOf(deltas)).toEqual(expected);
  });

  it('says which call each delta went to, whether it began, and the arguments it added', () => {
    const calls = new StreamedToolCalls();
    const take = (delta: unknown) => {
      const step = calls.take(toolCallDelta(delta) ?? expect.fail('a call'));
      return [step.call.position, step.began, step.arguments];
    };
    expect(take(said(0, 'a', 'f', ''))).toEqual([0, true, '']);
    expect(take(said(0, undefined, undefined, '{}'))).toEqual([0, false, '{}']);
    expect(take(said(0, 'b', 'g', '{"x":1}'))).toEqual([1, true, '{"x":1}']);
  });
});
