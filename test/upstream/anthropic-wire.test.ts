// A chat body in Anthropic's wire format and back (docs/anthropic.md): roles merged and alternating,
// tool results first in a user message, system messages after the start as user text, the original
// blocks sent only while their message is unchanged; an Anthropic message and stream as chat.
import { describe, expect, it } from 'vitest';
import { bridgeMessagesRequest } from '../../src/messages/bridge.js';
import { EventEmitter } from 'node:events';
import type { UpstreamConfig } from '../../src/config/gateway-config.js';
import type { UpstreamRequest } from '../../src/upstream/upstream.js';
import {
  AnthropicToChatStream,
  conversationFixes,
  fromAnthropicMessage,
  madeKey,
  toAnthropicRequest,
  withAnthropicUpstreams,
  withoutAnthropicBlocks,
} from '../../src/upstream/anthropic-wire.js';
import { carrierOf } from '../../src/upstream/carried-state.js';
import { StreamReplyAssembler } from '../../src/upstream/reply-assembler.js';
import { scriptedUpstream } from '../helpers/port-fakes.js';

describe('a chat body as a Messages request', () => {
  it('merges roles, puts tool results first, and sends a later system message as user text', () => {
    const body = toAnthropicRequest({
      model: 'claude-x',
      max_tokens: 50,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'w', arguments: '{"city":"Oslo"}' } }],
        },
        { role: 'user', content: '[ctxgate] 4 earlier steps were omitted.' },
        { role: 'tool', tool_call_id: 't1', content: 'rain' },
        { role: 'system', content: 'Note: be kind.' },
      ],
      tools: [{ type: 'function', function: { name: 'w', parameters: { type: 'object' } } }],
      tool_choice: 'required',
      stop: 'END',
    });
    expect(body).toEqual({
      model: 'claude-x',
      system: 'Be brief.',
      max_tokens: 50,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'w', input: { city: 'Oslo' } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: 'rain' },
            { type: 'text', text: '[ctxgate] 4 earlier steps were omitted.' },
            { type: 'text', text: 'Note: be kind.' },
          ],
        },
      ],
      tools: [{ name: 'w', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any' },
      stop_sequences: ['END'],
    });
  });

  it('sends Claude the stop sequences of some text only: one of whitespace only, or empty, it refuses', () => {
    const base = { model: 'claude-x', max_tokens: 50, messages: [{ role: 'user', content: 'Weather?' }] };
    const stopsOf = (stop: unknown) => toAnthropicRequest(Object.assign({}, base, { stop })).stop_sequences;
    expect(stopsOf(['\n\n', 'END', '', ' \t'])).toEqual(['END']);
    expect(stopsOf('\n')).toBeUndefined();
    expect(stopsOf(null)).toBeUndefined();
  });

  it('sends instructions and nothing else as the user message, which Claude refuses as no message', () => {
    const body = toAnthropicRequest({
      model: 'claude-x',
      max_tokens: 5,
      messages: [
        { role: 'system', content: 'Grade strictly.' },
        { role: 'system', content: 'Paris is the capital of France: PASS or FAIL?' },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Grade strictly.' },
          { type: 'text', text: 'Paris is the capital of France: PASS or FAIL?' },
        ],
      },
    ]);
    expect(body.system).toBeUndefined();
    // With a message of the conversation, the instructions stay the system prompt.
    const asked = toAnthropicRequest({
      model: 'claude-x',
      max_tokens: 5,
      messages: [
        { role: 'system', content: 'Grade strictly.' },
        { role: 'user', content: 'Paris?' },
      ],
    });
    expect(asked.system).toBe('Grade strictly.');
    expect(asked.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Paris?' }] }]);
  });

  it('takes parallel tool use off as the chat request asks, with or without a tool_choice, and only with tools', () => {
    const tools = [{ type: 'function', function: { name: 'w', parameters: { type: 'object' } } }];
    const base = { model: 'claude-x', max_tokens: 50, messages: [{ role: 'user', content: 'Weather?' }] };
    const choiceOf = (chat: Record<string, unknown>) =>
      toAnthropicRequest(Object.assign({}, base, chat)).tool_choice;
    expect(choiceOf({ tools, parallel_tool_calls: false })).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(choiceOf({ tools, tool_choice: 'required', parallel_tool_calls: false })).toEqual({
      type: 'any',
      disable_parallel_tool_use: true,
    });
    expect(choiceOf({ tools, parallel_tool_calls: true })).toBeUndefined();
    // Anthropic refuses a tool_choice with no tools ("tool_choice may only be specified while providing tools").
    expect(choiceOf({ parallel_tool_calls: false })).toBeUndefined();
  });

  it('leaves out text of only whitespace, which Anthropic refuses, and a message left with none', () => {
    const request = toAnthropicRequest({
      model: 'claude-x',
      messages: [
        { role: 'system', content: ' \n' },
        {
          role: 'user',
          content: [
            { type: 'text', text: '\n' },
            { type: 'text', text: 'Hi.' },
          ],
        },
        { role: 'assistant', content: '\n\n' },
        { role: 'user', content: 'Still there?' },
      ],
    });
    expect(request.system).toBeUndefined();
    expect(request.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Hi.' },
          { type: 'text', text: 'Still there?' },
        ],
      },
    ]);
  });

  it("keeps a tool result's image (a Responses request's function output) as an image block", () => {
    const body = toAnthropicRequest({
      model: 'claude-x',
      messages: [
        { role: 'user', content: 'Look.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 't1',
          content: [
            { type: 'text', text: 'screen' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
    });
    expect((body.messages as unknown[])[2]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 't1',
          content: [
            { type: 'text', text: 'screen' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          ],
        },
      ],
    });
  });

  it('puts the results of many parallel calls first, in their order, and a notice between them after', () => {
    const calls = Array.from({ length: 4 }, (_unused, index) => ({
      id: `t${index}`,
      type: 'function',
      function: { name: 'w', arguments: '{}' },
    }));
    const results = calls.map((call) => ({ role: 'tool', tool_call_id: call.id, content: call.id }));
    const body = toAnthropicRequest({
      model: 'claude-x',
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: calls },
        results[0],
        results[1],
        { role: 'user', content: 'notice' },
        results[2],
        results[3],
        { role: 'user', content: 'next' },
      ],
    }) as { messages: Array<{ role: string; content: Array<{ type: string; tool_use_id?: string }> }> };
    expect(body.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(body.messages[2]?.content.map((block) => block.tool_use_id ?? block.type)).toEqual([
      't0',
      't1',
      't2',
      't3',
      'text',
      'text',
    ]);
  });

  it('keeps a client’s own order of blocks in a user message that nothing was merged into', () => {
    const blocks = [
      { type: 'text', text: 'first' },
      { type: 'tool_result', tool_use_id: 't1', content: 'rain' },
    ];
    const own: Record<string, unknown> = { role: 'user', content: 'first' };
    own.ctxgate_anthropic = { blocks, made: madeKey(own) };
    const body = toAnthropicRequest({
      model: 'claude-x',
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'w', arguments: '{}' } }],
        },
        own,
      ],
    }) as { messages: Array<{ content: unknown }> };
    expect(body.messages[2]?.content).toEqual(blocks);
  });

  it('writes what a bridged message was bridged to in its JSON, from the message as the bridge made it', () => {
    const use = { type: 'tool_use', id: 't1', name: 'w', input: { q: 'é' } };
    const { chatBody } = bridgeMessagesRequest(
      {
        model: 'claude-x',
        max_tokens: 50,
        messages: [
          { role: 'user', content: 'Go.' },
          { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }, use] },
        ],
      },
      { native: true, requireMaxTokens: true },
    );
    const assistant = (chatBody.messages as Array<Record<string, unknown>>)[1] as Record<string, unknown>;
    const bridgedTo = JSON.stringify([
      'Looking.',
      [{ id: 't1', type: 'function', function: { name: 'w', arguments: '{"q":"é"}' } }],
    ]);
    // A copy the engine changed carries the same extension: it still says what the bridge made.
    const copy = Object.assign({}, assistant, { content: 'Changed.' });
    expect(JSON.parse(JSON.stringify(copy))).toEqual({
      role: 'assistant',
      content: 'Changed.',
      tool_calls: assistant.tool_calls,
      ctxgate_anthropic: { blocks: [{ type: 'text', text: 'Looking.' }, use], made: bridgedTo },
    });
    expect(
      (
        toAnthropicRequest(Object.assign({}, chatBody, { messages: [copy] })).messages as Array<
          Record<string, unknown>
        >
      )[0],
    ).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Changed.' },
        { type: 'tool_use', id: 't1', name: 'w', input: { q: 'é' } },
      ],
    });
  });

  it('sends the original blocks of an unchanged message, and the changed text of a changed one', () => {
    const result = {
      type: 'tool_result',
      tool_use_id: 't1',
      content: [{ type: 'text', text: 'long output' }],
      cache_control: { type: 'ephemeral' },
    };
    const { chatBody } = bridgeMessagesRequest(
      {
        model: 'claude-x',
        max_tokens: 50,
        messages: [
          { role: 'user', content: 'Go.' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hm', signature: 's1' },
              { type: 'tool_use', id: 't1', name: 'w', input: {} },
            ],
          },
          { role: 'user', content: [result] },
        ],
      },
      { native: true, requireMaxTokens: true },
    );
    const unchanged = toAnthropicRequest(chatBody);
    expect((unchanged.messages as Array<{ content: unknown[] }>)[1]?.content[0]).toEqual({
      type: 'thinking',
      thinking: 'hm',
      signature: 's1',
    });
    expect((unchanged.messages as Array<{ content: unknown[] }>)[2]?.content).toEqual([result]);
    // The engine masked the tool result: its text goes, not the stale original.
    const messages = chatBody.messages as Array<Record<string, unknown>>;
    const masked = {
      ...chatBody,
      messages: [...messages.slice(0, 2), { ...messages[2], content: '[masked]' }],
    };
    expect((toAnthropicRequest(masked).messages as Array<{ content: unknown[] }>)[2]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 't1', content: '[masked]' },
    ]);
    // Stored in a session and read back (JSON both ways): the unchanged messages still send their
    // blocks, the changed one its text.
    const stored = JSON.parse(JSON.stringify(masked)) as Record<string, unknown>;
    const reread = toAnthropicRequest(stored).messages as Array<{ content: unknown[] }>;
    expect(reread[1]?.content[0]).toEqual({ type: 'thinking', thinking: 'hm', signature: 's1' });
    expect(reread[2]?.content).toEqual([{ type: 'tool_result', tool_use_id: 't1', content: '[masked]' }]);
    const storedWhole = JSON.parse(JSON.stringify(chatBody)) as Record<string, unknown>;
    expect((toAnthropicRequest(storedWhole).messages as Array<{ content: unknown[] }>)[2]?.content).toEqual([
      result,
    ]);
    // The messages as the bridge made them are known as such: their blocks go without their content
    // written out again to compare (a `made` no longer matching shows it is not compared).
    const asMade = messages[2]?.ctxgate_anthropic as { made: string };
    Object.defineProperty(asMade, 'made', { value: 'stale', enumerable: true, writable: true });
    expect((toAnthropicRequest(chatBody).messages as Array<{ content: unknown[] }>)[2]?.content).toEqual([
      result,
    ]);
    const restored = JSON.parse(JSON.stringify(chatBody)) as Record<string, unknown>;
    expect((toAnthropicRequest(restored).messages as Array<{ content: unknown[] }>)[2]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 't1', content: 'long output' },
    ]);
    asMade.made = madeKey(messages[2] as Record<string, unknown>);
    // A stored message changed since (its text, not its blocks, is what the engine kept).
    const storedMessages = storedWhole.messages as Array<Record<string, unknown>>;
    const edited = {
      ...storedWhole,
      messages: [...storedMessages.slice(0, 2), { ...storedMessages[2], content: 'cut' }],
    };
    expect((toAnthropicRequest(edited).messages as Array<{ content: unknown[] }>)[2]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 't1', content: 'cut' },
    ]);
  });
});

describe("tool call ids Claude refuses, in a chat body's history", () => {
  const turn = (id: string, text: string) => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'read', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: id, content: text },
  ];
  const idsOf = (body: Record<string, unknown>) =>
    (body.messages as Array<{ content: Array<Record<string, unknown>> }>).flatMap((message) =>
      message.content.flatMap((block) =>
        block.type === 'tool_use' ? [block.id] : block.type === 'tool_result' ? [block.tool_use_id] : [],
      ),
    );

  it("Kimi's ids, one given in two turns: each tool_use an id Claude takes, once, its result with it", () => {
    const body = toAnthropicRequest({
      model: 'claude-x',
      messages: [
        { role: 'user', content: 'Read it.' },
        ...turn('functions.read:0', 'one'),
        ...turn('functions.read:0', 'two'),
        ...turn('toolu_01ok', 'three'),
      ],
    });
    const ids = idsOf(body) as string[];
    const [first, , second, , third] = ids;
    expect(ids).toEqual([first, first, second, second, 'toolu_01ok', 'toolu_01ok']);
    expect(first).not.toBe(second);
    expect([first, second, third].every((id) => /^[a-zA-Z0-9_-]+$/.test(id as string))).toBe(true);
  });

  it('ids Claude takes go as they are', () => {
    const body = toAnthropicRequest({
      model: 'claude-x',
      messages: [
        { role: 'user', content: 'Read it.' },
        ...turn('toolu_01a', 'one'),
        ...turn('call_b-2', 'two'),
      ],
    });
    expect(idsOf(body)).toEqual(['toolu_01a', 'toolu_01a', 'call_b-2', 'call_b-2']);
  });
});

describe('thinking another model signed, left out after Anthropic refused it', () => {
  // A Messages client's conversation: GLM thought and called a tool, answered; Claude thought and called
  // one, whose result is being sent.
  const body = {
    model: 'claude-sonnet-4-6',
    max_tokens: 4_000,
    thinking: { type: 'enabled', budget_tokens: 1_024 },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    messages: [
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'GLM thinks.', signature: 'zai-1-0f0f0f0f' },
          { type: 'redacted_thinking', data: 'zai-redacted' },
          { type: 'text', text: 'Which Oslo?' },
        ],
      },
      { role: 'user', content: 'Norway.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Claude thinks.', signature: 'sig-2-0a0a0a0a' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny' }] },
    ],
  };
  const sentWith = (stage: 'earlier' | 'all' | undefined, messages: unknown[] = body.messages) => {
    const { chatBody } = bridgeMessagesRequest(Object.assign({}, body, { messages }), {
      native: true,
      requireMaxTokens: true,
    });
    return toAnthropicRequest(
      stage === undefined
        ? chatBody
        : Object.assign({}, chatBody, { [conversationFixes]: { foreignThinking: stage } }),
    );
  };
  const types = (sent: Record<string, unknown>) =>
    (sent.messages as Array<{ content: Array<{ type: string }> }>).map((message) =>
      message.content.map((block) => block.type),
    );

  it('sends every block as it came when nothing was refused', () => {
    const sent = sentWith(undefined);
    expect(types(sent)[1]).toEqual(['thinking', 'redacted_thinking', 'text']);
    expect(sent.thinking).toEqual(body.thinking);
  });

  it('first step: all but the thinking of the call being answered, thinking on', () => {
    const sent = sentWith('earlier');
    expect(types(sent)).toEqual([['text'], ['text'], ['text'], ['thinking', 'tool_use'], ['tool_result']]);
    expect(sent.thinking).toEqual(body.thinking);
    expect(sent.context_management).toEqual(body.context_management);
  });

  it('second step: all of it, and thinking off with no edit clearing thinking', () => {
    const sent = sentWith('all');
    expect(types(sent)).toEqual([['text'], ['text'], ['text'], ['tool_use'], ['tool_result']]);
    expect(sent.thinking).toBeUndefined();
    expect(sent.context_management).toBeUndefined();
  });

  it('with no call being answered: every thinking block goes at the first step, thinking stays on', () => {
    const sent = sentWith('earlier', [...body.messages.slice(0, 4), { role: 'user', content: 'Thanks.' }]);
    expect(types(sent).flat()).not.toContain('thinking');
    expect(sent.thinking).toEqual(body.thinking);
  });

  it('an answer that was thinking alone goes, and the turns around it are one user message', () => {
    const sent = sentWith('all', [
      { role: 'user', content: 'One.' },
      {
        role: 'assistant',
        content: [{ type: 'thinking', thinking: 'Cut off.', signature: 'zai-1-1a1a1a1a' }],
      },
      { role: 'user', content: 'Two.' },
    ]);
    expect(sent.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'One.' },
          { type: 'text', text: 'Two.' },
        ],
      },
    ]);
    // Thinking off only where a call's thinking went: here none was answered.
    expect(sent.thinking).toEqual(body.thinking);
  });
});

describe('a Messages request of the newest Claude models, written back for Anthropic', () => {
  const body = {
    model: 'claude-opus-5-5',
    max_tokens: 128_000,
    system: 'You are Claude Code.',
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Go.' }] },
      {
        role: 'system',
        content: [{ type: 'text', text: 'Environment: /work', cache_control: { type: 'ephemeral' } }],
      },
      { role: 'user', content: 'And then?' },
    ],
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'medium' },
  };

  it("sends the client's own system message where it stood, as a system message with its blocks, and every field it carried", () => {
    const { chatBody } = bridgeMessagesRequest(body, { native: true, requireMaxTokens: true });
    const sent = toAnthropicRequest(chatBody);
    expect(sent.system).toBe('You are Claude Code.');
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Go.' }] },
      body.messages[1],
      { role: 'user', content: [{ type: 'text', text: 'And then?' }] },
    ]);
    expect(sent).toMatchObject({
      context_management: body.context_management,
      output_config: body.output_config,
    });
  });

  it("still sends the gateway's own system notices as user text, merged with the user turn", () => {
    const { chatBody } = bridgeMessagesRequest(body, { native: true, requireMaxTokens: true });
    const messages = chatBody.messages as Array<Record<string, unknown>>;
    const withNotice = {
      ...chatBody,
      messages: [
        ...messages.slice(0, 3),
        { role: 'system', content: '[ctxgate] 4 earlier messages omitted.' },
        ...messages.slice(3),
      ],
    };
    const sent = toAnthropicRequest(withNotice).messages as Array<{ role: string; content: unknown[] }>;
    expect(sent.map((message) => message.role)).toEqual(['user', 'system', 'user']);
    expect(sent[2]?.content).toEqual([
      { type: 'text', text: '[ctxgate] 4 earlier messages omitted.' },
      { type: 'text', text: 'And then?' },
    ]);
  });
});

describe("a thinking budget, when the gateway lowered the client's max_tokens", () => {
  const asked = (thinking: Record<string, unknown>, maxTokens = 20_000) =>
    bridgeMessagesRequest(
      {
        model: 'claude-sonnet-4-5',
        max_tokens: maxTokens,
        thinking,
        messages: [{ role: 'user', content: 'Go.' }],
      },
      { native: true, requireMaxTokens: true },
    ).chatBody;
  const sentWith = (chatBody: Record<string, unknown>, maxTokens: number) =>
    toAnthropicRequest({ ...chatBody, max_tokens: maxTokens });

  it('goes one token under the max_tokens sent, as Anthropic requires', () => {
    expect(sentWith(asked({ type: 'enabled', budget_tokens: 12_000 }), 9_000).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 8_999,
    });
    // A budget already under it, and adaptive thinking, as they came.
    expect(sentWith(asked({ type: 'enabled', budget_tokens: 4_000 }), 9_000).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 4_000,
    });
    expect(sentWith(asked({ type: 'adaptive' }), 9_000).thinking).toEqual({ type: 'adaptive' });
  });

  it('asks without thinking where no budget of 1,024 fits under it', () => {
    const sent = sentWith(asked({ type: 'enabled', budget_tokens: 12_000 }), 1_024);
    expect(sent.max_tokens).toBe(1_024);
    expect(sent.thinking).toBeUndefined();
  });

  it('leaves a budget the client itself set over its max_tokens (interleaved thinking takes that)', () => {
    const chatBody = asked({ type: 'enabled', budget_tokens: 63_999 }, 32_000);
    expect(sentWith(chatBody, 32_000).thinking).toEqual({ type: 'enabled', budget_tokens: 63_999 });
  });
});

describe('a stored bridged message, read back for every request of a session', () => {
  // Its blocks, which its text alone would not give back (the breakpoint).
  const original = [
    { type: 'tool_result', tool_use_id: 't1', content: 'output', cache_control: { type: 'ephemeral' } },
  ];
  const stored = () => {
    const { chatBody } = bridgeMessagesRequest(
      {
        model: 'claude-x',
        max_tokens: 50,
        messages: [
          { role: 'user', content: 'Go.' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'w', input: {} }] },
          { role: 'user', content: [original[0]] },
        ],
      },
      { native: true, requireMaxTokens: true },
    );
    return JSON.parse(JSON.stringify(chatBody)) as { messages: Array<Record<string, unknown>> };
  };
  const resultOf = (body: Record<string, unknown>) =>
    (toAnthropicRequest(body).messages as Array<{ content: unknown[] }>)[2]?.content;

  it('is checked against what it was bridged to once, while its content is the same', () => {
    const body = stored();
    expect(resultOf(body)).toEqual(original);
    // Checked: a `made` that no longer matches is not compared again while the content is the one checked.
    const extension = body.messages[2]?.ctxgate_anthropic as { made: string };
    extension.made = 'stale';
    expect(resultOf(body)).toEqual(original);
    // Its content replaced: checked again, and its text goes.
    (body.messages[2] as Record<string, unknown>).content = 'cut';
    expect(resultOf(body)).toEqual([{ type: 'tool_result', tool_use_id: 't1', content: 'cut' }]);
    // A copy is checked on its own.
    const copy = stored();
    expect(resultOf(copy)).toEqual(original);
    const edited = {
      ...copy,
      messages: [...copy.messages.slice(0, 2), { ...copy.messages[2], content: 'x' }],
    };
    expect(resultOf(edited)).toEqual([{ type: 'tool_result', tool_use_id: 't1', content: 'x' }]);
    expect(JSON.parse(JSON.stringify(copy))).toEqual(stored());
  });

  it('is read, and checked once, when it is frozen (a session shares its held system prompt)', () => {
    const body = stored();
    const frozen = { ...body, messages: body.messages.map((message) => Object.freeze(message)) };
    expect(resultOf(frozen)).toEqual(original);
    // Checked once too: its extension is not frozen.
    (frozen.messages[2]?.ctxgate_anthropic as { made: string }).made = 'stale';
    expect(resultOf(frozen)).toEqual(original);
  });
});

describe('cache breakpoints, at most the 4 Anthropic takes', () => {
  const mark = { type: 'ephemeral' };
  /** A Messages request as a client sends it, natively bridged: what the engine hands the wire. */
  const sent = (request: Record<string, unknown>) =>
    toAnthropicRequest(bridgeMessagesRequest(request, { native: true, requireMaxTokens: true }).chatBody);
  /** Where the breakpoints are: `system.i`, `tools.i`, `messages.i.j` (and `.k` inside a tool result). */
  const breakpoints = (body: Record<string, unknown>): string[] => {
    const found: string[] = [];
    const walk = (blocks: unknown, at: string): void => {
      if (!Array.isArray(blocks)) return;
      blocks.forEach((block: Record<string, unknown>, index) => {
        if (block.cache_control !== undefined) found.push(`${at}.${index}`);
        if (block.type === 'tool_result') walk(block.content, `${at}.${index}`);
      });
    };
    if (body.cache_control !== undefined) found.push('top');
    walk(body.tools, 'tools');
    walk(body.system, 'system');
    (body.messages as Array<{ content: unknown }>).forEach((message, index) =>
      walk(message.content, `messages.${index}`),
    );
    return found;
  };
  const text = (words: string, marked = false) => ({
    type: 'text',
    text: words,
    ...(marked ? { cache_control: mark } : {}),
  });
  const use = (id: string) => ({
    role: 'assistant',
    content: [{ type: 'tool_use', id, name: 'Read', input: {} }],
  });
  const result = (id: string, marked: boolean, inner?: unknown[]) => ({
    role: 'user',
    content: [
      {
        type: 'tool_result',
        tool_use_id: id,
        content: inner ?? 'output',
        ...(marked ? { cache_control: mark } : {}),
      },
    ],
  });
  // A session's stored steps keep the breakpoint each had when it was the client's newest (Claude Code:
  // two on its system prompt, one on its newest message).
  const system = [text('You are Claude Code.', true), text('Work carefully.', true)];
  const steps = [
    { role: 'user', content: [text('Read the files.', true)] },
    use('t1'),
    result('t1', true),
    use('t2'),
    result('t2', true),
  ];

  it.each([
    [
      'five: the oldest in the conversation left out',
      { system, messages: steps },
      ['system.0', 'system.1', 'messages.2.0', 'messages.4.0'],
    ],
    [
      'seven: the two newest in the conversation kept',
      { system, messages: [...steps, use('t3'), result('t3', true), use('t4'), result('t4', true)] },
      ['system.0', 'system.1', 'messages.6.0', 'messages.8.0'],
    ],
    [
      "a tool result's inner blocks counted, the newest kept",
      { system, messages: [...steps.slice(0, 4), result('t2', false, [text('a', true), text('b', true)])] },
      ['system.0', 'system.1', 'messages.4.0.0', 'messages.4.0.1'],
    ],
    [
      "the request's own (automatic caching) and its tools' stay",
      {
        cache_control: mark,
        tools: [{ name: 'Read', input_schema: { type: 'object' }, cache_control: mark }],
        system,
        messages: steps,
      },
      ['top', 'tools.0', 'system.0', 'system.1'],
    ],
    [
      'four: as they came',
      { system, messages: steps.slice(0, 3) },
      ['system.0', 'system.1', 'messages.0.0', 'messages.2.0'],
    ],
  ])('%s', (_name, request, expected) => {
    const body = sent({ model: 'claude-x', max_tokens: 50, ...request });
    expect(breakpoints(body)).toEqual(expected);
  });

  it("leaves the client's blocks as they came where none is left out, and copies the ones it changes", () => {
    const messages = [...steps, use('t3'), result('t3', true)];
    const { chatBody } = bridgeMessagesRequest(
      { model: 'claude-x', max_tokens: 50, system, messages },
      { native: true, requireMaxTokens: true },
    );
    const body = toAnthropicRequest(chatBody) as { messages: Array<{ content: unknown[] }> };
    // The oldest two left out, on copies: the client's own blocks keep their breakpoints.
    expect(body.messages[0]?.content[0]).toEqual(text('Read the files.'));
    expect(messages[0]?.content[0]).toEqual(text('Read the files.', true));
    expect(body.messages[2]?.content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 't1',
      content: 'output',
    });
    expect(body.messages[4]?.content[0]).toBe(messages[4]?.content[0]);
    expect(body.messages[6]?.content[0]).toBe(messages[6]?.content[0]);
  });
});

describe('the Upstream port for an anthropic upstream', () => {
  const claude: UpstreamConfig = {
    name: 'claude',
    baseUrl: 'http://127.0.0.1:9/v1',
    apiKey: 'sk-ant-test',
    modelGlobs: ['claude-*'],
    maxConnections: 1,
    kind: 'anthropic',
    billingLine: 'drop',
  };
  const answer = {
    status: 200,
    headers: { 'content-type': 'application/json' },
    chunks: [
      JSON.stringify({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-x',
        content: [{ type: 'text', text: 'Hi.' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 12, output_tokens: 2 },
      }),
    ],
  };
  const request = (body: string, wire?: 'anthropic'): UpstreamRequest => ({
    upstream: claude,
    method: 'POST',
    path: '/chat/completions',
    headers: { authorization: 'Bearer sk-ant-test', 'content-type': 'application/json' },
    body,
    ...(wire === undefined ? {} : { wire }),
    signal: new EventEmitter(),
  });

  it('sends a body already written in the Messages format as it is, and answers in chat', async () => {
    const inner = scriptedUpstream([answer]);
    const messagesBody = JSON.stringify({
      model: 'claude-x',
      system: 'Be brief.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hi?', cache_control: { type: 'ephemeral' } }] },
      ],
      max_tokens: 64,
    });
    const response = await withAnthropicUpstreams(inner).send(request(messagesBody, 'anthropic'));
    expect(inner.sent[0]?.path).toBe('/messages');
    expect(inner.sent[0]?.body).toBe(messagesBody);
    expect(inner.sent[0]?.headers['x-api-key']).toBe('sk-ant-test');
    const completion = JSON.parse((await response.readAll()).toString()) as {
      choices: Array<{ message: { content: string } }>;
    };
    expect(completion.choices[0]?.message.content).toBe('Hi.');
  });

  it('translates a chat body (a summary job’s) into the Messages format', async () => {
    const inner = scriptedUpstream([answer]);
    const chatBody = JSON.stringify({
      model: 'claude-x',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi?' },
      ],
    });
    await withAnthropicUpstreams(inner).send(request(chatBody));
    expect(JSON.parse(String(inner.sent[0]?.body))).toEqual({
      model: 'claude-x',
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi?' }] }],
      max_tokens: 4_096,
    });
  });
});

describe('an Anthropic answer as chat', () => {
  it('maps a whole message, usage counting cached input as prompt', () => {
    const completion = fromAnthropicMessage({
      id: 'msg_1',
      model: 'claude-x',
      content: [
        { type: 'thinking', thinking: 'hm', signature: 's1' },
        { type: 'text', text: 'Hi.' },
        { type: 'tool_use', id: 't1', name: 'w', input: { a: 1 } },
      ],
      stop_reason: 'tool_use',
      usage: {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_input_tokens: 90,
        cache_creation_input_tokens: 0,
      },
    });
    expect(completion.choices).toEqual([
      expect.objectContaining({
        finish_reason: 'tool_calls',
        message: expect.objectContaining({
          content: 'Hi.',
          reasoning_content: 'hm',
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'w', arguments: '{"a":1}' } }],
        }),
      }),
    ]);
    expect(completion.usage).toMatchObject({
      prompt_tokens: 100,
      completion_tokens: 5,
      prompt_tokens_details: { cached_tokens: 90 },
    });
  });

  it('takes an event that is not an object as saying nothing', () => {
    // `data: null` once threw inside the upstream body's 'data' event, and the process ended.
    const wire =
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"claude-x"}}\n\n' +
      'event: content_block_start\ndata: null\n\n' +
      'event: content_block_start\ndata: [1,2]\n\n' +
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n';
    const text = new AnthropicToChatStream()
      .push(wire)
      .split('\n\n')
      .filter((block) => block.startsWith('data: {'))
      .map((block) => JSON.parse(block.slice(6)) as { choices: Array<{ delta: { content?: string } }> })
      .map((chunk) => chunk.choices[0]?.delta.content ?? '')
      .join('');
    expect(text).toBe('Hi');
  });

  it('gives a tool call the input its start gave whole, when no input_json_delta follows', () => {
    // Anthropic-compatible endpoints that give a call's input whole in content_block_start and send no
    // input_json_delta (yannikzz/narracat-novel-agent#16): the call had no arguments.
    const events = [
      { type: 'message_start', message: { id: 'msg_1', model: 'glm-x', usage: { input_tokens: 3 } } },
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 't1', name: 'w', input: { city: 'Paris' } },
      },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 't2', name: 'w', input: { city: 'Oslo' } },
      },
      {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: '{"city":"Lyon"}' },
      },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 5 } },
      { type: 'message_stop' },
    ];
    const out = new AnthropicToChatStream().push(
      events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''),
    );
    const assembler = new StreamReplyAssembler();
    assembler.push(Buffer.from(out));
    expect(assembler.end().message.tool_calls).toEqual([
      { id: 't1', type: 'function', function: { name: 'w', arguments: '{"city":"Paris"}' } },
      { id: 't2', type: 'function', function: { name: 'w', arguments: '{"city":"Lyon"}' } },
    ]);
  });

  it('translates a stream split at every byte into the same chat chunks', () => {
    const events = [
      {
        type: 'message_start',
        message: { id: 'msg_1', model: 'claude-x', usage: { input_tokens: 30, output_tokens: 1 } },
      },
      { type: 'ping' },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Héllo' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 't1', name: 'w', input: {} },
      },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '1}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 12 } },
      { type: 'message_stop' },
    ];
    const wire = Buffer.from(
      events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''),
    );
    const whole = new AnthropicToChatStream().push(wire);
    const split = new AnthropicToChatStream();
    let bytewise = '';
    for (let at = 0; at < wire.length; at++) bytewise += split.push(wire.subarray(at, at + 1));
    expect(bytewise).toBe(whole);
    const chunks = whole
      .split('\n\n')
      .filter((block) => block.startsWith('data: ') && block !== 'data: [DONE]')
      .map(
        (block) =>
          JSON.parse(block.slice(6)) as {
            choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>;
            usage?: unknown;
          },
      );
    const content = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe('Héllo');
    const args = chunks.flatMap(
      (chunk) =>
        (chunk.choices[0]?.delta.tool_calls as Array<{ function: { arguments: string } }> | undefined) ?? [],
    );
    expect(args.map((call) => call.function.arguments).join('')).toBe('{"a":1}');
    expect(
      chunks.find(
        (chunk) => chunk.choices[0]?.finish_reason !== null && chunk.choices[0]?.finish_reason !== undefined,
      )?.choices[0]?.finish_reason,
    ).toBe('tool_calls');
    expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 30, completion_tokens: 12 });
    expect(whole.endsWith('data: [DONE]\n\n')).toBe(true);
  });
});

// A session stores Claude's streamed answer from the chat chunks: where they cannot say it all (signed
// thinking, a server tool's use and results), the stream carries Claude's blocks at its end.
describe("a stream's blocks as Claude gave them", () => {
  const wireOf = (events: Array<Record<string, unknown>>) =>
    events.map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`).join('');
  const start = {
    type: 'message_start',
    message: { id: 'msg_1', model: 'claude-x', usage: { input_tokens: 3 } },
  };
  const block = (index: number, content_block: Record<string, unknown>) => ({
    type: 'content_block_start',
    index,
    content_block,
  });
  const delta = (index: number, value: Record<string, unknown>) => ({
    type: 'content_block_delta',
    index,
    delta: value,
  });
  const stop = (index: number) => ({ type: 'content_block_stop', index });
  const end = [
    { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } },
    { type: 'message_stop' },
  ];
  const finishDelta = (text: string) => {
    const chunks = text
      .split('\n\n')
      .filter((part) => part.startsWith('data: {'))
      .map(
        (part) =>
          JSON.parse(part.slice(6)) as {
            choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>;
          },
      );
    return chunks.find((chunk) => chunk.choices[0]?.finish_reason != null)?.choices[0]?.delta;
  };

  it('gives them at the end, inputs read from their deltas, when the chat chunks cannot say them', () => {
    const events = [
      start,
      block(0, { type: 'thinking', thinking: '', signature: '' }),
      delta(0, { type: 'thinking_delta', thinking: 'Search first.' }),
      delta(0, { type: 'signature_delta', signature: 'sig-7' }),
      stop(0),
      block(1, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }),
      delta(1, { type: 'input_json_delta', partial_json: '{"query":' }),
      delta(1, { type: 'input_json_delta', partial_json: '"oslo"}' }),
      stop(1),
      block(2, { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] }),
      stop(2),
      block(3, { type: 'text', text: '' }),
      delta(3, { type: 'text_delta', text: 'Sunny.' }),
      delta(3, { type: 'citations_delta', citation: { type: 'web_search_result_location', url: 'u' } }),
      stop(3),
      block(4, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }),
      delta(4, { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' }),
      stop(4),
      ...end,
    ];
    expect(finishDelta(new AnthropicToChatStream().push(wireOf(events)))?.ctxgate_anthropic_blocks).toEqual([
      { type: 'thinking', thinking: 'Search first.', signature: 'sig-7' },
      { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'oslo' } },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
      { type: 'text', text: 'Sunny.', citations: [{ type: 'web_search_result_location', url: 'u' }] },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
    ]);
  });

  it('gives none when text and tool calls say it all', () => {
    const events = [
      start,
      block(0, { type: 'text', text: '' }),
      delta(0, { type: 'text_delta', text: 'Let me check.' }),
      stop(0),
      block(1, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }),
      delta(1, { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' }),
      stop(1),
      ...end,
    ];
    expect(finishDelta(new AnthropicToChatStream().push(wireOf(events)))).toEqual({});
  });
});

describe('withoutAnthropicBlocks (what a Chat Completions upstream is sent)', () => {
  const blocksOf = (...blocks: Array<Record<string, unknown>>) => ({ blocks, made: '[]' });

  it('is the same array when no message carries blocks', () => {
    const messages = [{ role: 'user', content: 'Hi' }];
    expect(withoutAnthropicBlocks(messages)).toBe(messages);
  });

  it("leaves the blocks out, and Claude's thinking where they hold Claude's signed thinking", () => {
    const plain = { role: 'user', content: 'Hi' };
    const messages = [
      plain,
      { role: 'user', content: 'One.', ctxgate_anthropic: blocksOf({ type: 'text', text: 'One.' }) },
      {
        role: 'assistant',
        content: 'Noted.',
        reasoning_content: 'Weighing it.',
        ctxgate_anthropic: blocksOf({
          type: 'thinking',
          thinking: 'Weighing it.',
          signature: 'EqQBCkYIBxgC',
        }),
      },
      // A thinking block the gateway made (a chat model's reasoning; a carrier of its extras) is no Claude's.
      {
        role: 'assistant',
        content: 'Done.',
        reasoning_content: 'Chat reasoning.',
        ctxgate_anthropic: blocksOf(
          { type: 'thinking', thinking: 'Chat reasoning.', signature: '' },
          { type: 'thinking', thinking: '', signature: carrierOf({ calls: [], message: { a: 1 } }) },
        ),
      },
    ];
    const sent = withoutAnthropicBlocks(messages);
    expect(sent).toEqual([
      plain,
      { role: 'user', content: 'One.' },
      { role: 'assistant', content: 'Noted.' },
      { role: 'assistant', content: 'Done.', reasoning_content: 'Chat reasoning.' },
    ]);
    expect(sent[0]).toBe(plain);
    expect(messages[2]).toHaveProperty('ctxgate_anthropic');
  });
});

describe("a chat client's file part, for Claude", () => {
  const filePart = (filename: string, mediaType: string, text: string) => ({
    type: 'file',
    file: { filename, file_data: `data:${mediaType};base64,${Buffer.from(text).toString('base64')}` },
  });

  it.each([
    ['page.html', 'text/html', '<p>Hi</p>'],
    ['main.py', 'text/x-python', 'print(1)'],
    ['data.json', 'application/json', '{"a":1}'],
  ])(
    'sends %s (%s) as a plain-text document, which Anthropic takes (LibreChat#16054)',
    (filename, mediaType, text) => {
      const body = toAnthropicRequest({
        model: 'claude-sonnet-4-6',
        messages: [
          {
            role: 'user',
            content: [filePart(filename, mediaType, text), { type: 'text', text: 'Read it.' }],
          },
        ],
      });
      expect((body.messages as Array<{ content: unknown[] }>)[0]?.content[0]).toEqual({
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: text },
        title: filename,
      });
    },
  );

  it('names a file of another kind, which Anthropic cannot be sent', () => {
    const body = toAnthropicRequest({
      model: 'claude-sonnet-4-6',
      messages: [{ role: 'user', content: [filePart('a.zip', 'application/zip', 'PK')] }],
    });
    expect((body.messages as Array<{ content: unknown[] }>)[0]?.content[0]).toEqual({
      type: 'text',
      text: '[file a.zip: not sent, Anthropic takes PDFs and text files sent as data]',
    });
  });
});
