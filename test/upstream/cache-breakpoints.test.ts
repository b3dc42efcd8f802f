// At most 4 cache breakpoints in a request (docs/anthropic.md): the newest in the conversation kept, the
// request's own, its tools' and its system prompt's always; what is left out is left out of copies. No
// 1-hour mark in the conversation after a 5-minute one.
import { describe, expect, it } from 'vitest';
import {
  chatWithinCacheBreakpoints,
  chatWithoutCacheMarks,
  withinCacheBreakpoints,
} from '../../src/upstream/cache-breakpoints.js';

type Json = Record<string, unknown>;

const mark = { type: 'ephemeral' };
const part = (text: string, marked = true) => ({
  type: 'text',
  text,
  ...(marked ? { cache_control: mark } : {}),
});
/** Which messages (by index) carry a breakpoint, and how many. */
const marksOf = (messages: ReadonlyArray<{ content?: unknown }>) =>
  messages.map((message) =>
    Array.isArray(message.content)
      ? (message.content as Json[]).filter((block) => block.cache_control !== undefined).length
      : 0,
  );

describe('chat messages (a content part marked as OpenRouter and LiteLLM send it on to Claude)', () => {
  it.each([
    ['none', [{ role: 'user', content: 'Hi.' }], [0]],
    [
      'four, as they came',
      [
        { role: 'system', content: [part('Rules.')] },
        { role: 'user', content: [part('One.')] },
        { role: 'assistant', content: 'Ok.' },
        { role: 'user', content: [part('Two.'), part('Three.')] },
      ],
      [1, 1, 0, 2],
    ],
    [
      "six: the system prompt's and the newest three",
      [
        { role: 'system', content: [part('Rules.')] },
        { role: 'developer', content: [part('More rules.')] },
        { role: 'user', content: [part('One.')] },
        { role: 'assistant', content: 'Ok.' },
        { role: 'user', content: [part('Two.'), part('Three.')] },
      ],
      [1, 1, 0, 0, 2],
    ],
    [
      'the oldest parts of one message left out first',
      [
        { role: 'user', content: [part('a'), part('b'), part('c')] },
        { role: 'assistant', content: 'Ok.' },
        { role: 'user', content: [part('d'), part('e')] },
      ],
      [2, 0, 2],
    ],
    [
      "a system prompt of more than four: the client's own, every other left out",
      [
        { role: 'system', content: [part('1'), part('2'), part('3'), part('4'), part('5')] },
        { role: 'user', content: [part('One.')] },
      ],
      [5, 0],
    ],
  ])('%s', (_name, messages, expected) => {
    const before = JSON.stringify(messages);
    const out = chatWithinCacheBreakpoints(messages as Json[]);
    expect(marksOf(out)).toEqual(expected);
    // The client's messages are not changed; within four, the very array comes back.
    expect(JSON.stringify(messages)).toBe(before);
    if (marksOf(messages).reduce((total, count) => total + count, 0) <= 4) expect(out).toBe(messages);
  });

  it('keeps the unchanged messages themselves (their known bytes are copied by identity)', () => {
    const newest = { role: 'user', content: [part('Two.')] };
    const messages = [
      { role: 'user', content: [part('a')] },
      { role: 'user', content: [part('b')] },
      { role: 'user', content: [part('c')] },
      { role: 'user', content: [part('d')] },
      newest,
    ];
    const out = chatWithinCacheBreakpoints(messages);
    expect(out[0]).not.toBe(messages[0]);
    expect(out[0]).toEqual({ role: 'user', content: [part('a', false)] });
    expect(out.slice(1)).toEqual(messages.slice(1));
    out.slice(1).forEach((message, index) => expect(message).toBe(messages[index + 1]));
  });
});

describe('a Messages request', () => {
  it("counts the request's own breakpoint, its tools' and its system blocks' before the conversation's", () => {
    const result = (id: string, inner: Json[]) => ({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: id, content: inner, cache_control: mark }],
    });
    const body: Json = {
      cache_control: mark,
      tools: [{ name: 'Read', input_schema: { type: 'object' }, cache_control: mark }],
      system: [part('Rules.')],
      messages: [
        { role: 'user', content: [part('Go.')] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
        result('t1', [part('inner a'), part('inner b')]),
      ],
    };
    withinCacheBreakpoints(body);
    // One left for the conversation: the tool result's own, which ends its inner blocks.
    expect(body.messages).toEqual([
      { role: 'user', content: [part('Go.', false)] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 't1',
            content: [part('inner a', false), part('inner b', false)],
            cache_control: mark,
          },
        ],
      },
    ]);
  });
});

describe("the cache's lifetimes, in the order Anthropic reads them (tools, system, messages)", () => {
  const hour = { type: 'ephemeral', ttl: '1h' };
  const long = (text: string) => ({ type: 'text', text, cache_control: hour });
  const ttlsOf = (messages: ReadonlyArray<{ content?: unknown }>) =>
    messages.flatMap((message) =>
      Array.isArray(message.content)
        ? (message.content as Json[])
            .filter((block) => block.cache_control !== undefined)
            .map((block) => (block.cache_control as Json).ttl ?? '5m')
        : [],
    );

  it.each([
    [
      "a stored hour's mark after the system prompt's 5 minutes: made a 5 minutes' one",
      [
        { role: 'system', content: [part('Rules.')] },
        { role: 'user', content: [long('One.')] },
        { role: 'assistant', content: 'Ok.' },
        { role: 'user', content: [part('Two.')] },
      ],
      ['5m', '5m', '5m'],
    ],
    [
      'hours before minutes: as they came',
      [
        { role: 'system', content: [long('Rules.')] },
        { role: 'user', content: [long('One.')] },
        { role: 'user', content: [part('Two.')] },
      ],
      ['1h', '1h', '5m'],
    ],
    [
      "an hour's mark after a message's 5 minutes",
      [
        { role: 'user', content: [part('One.')] },
        { role: 'user', content: [long('Two.')] },
      ],
      ['5m', '5m'],
    ],
  ])('chat: %s', (_name, messages, expected) => {
    const out = chatWithinCacheBreakpoints(messages as Json[]);
    expect(ttlsOf(out)).toEqual(expected);
    if (JSON.stringify(ttlsOf(messages)) === JSON.stringify(expected)) expect(out).toBe(messages);
  });

  it("Messages: the request's own mark (automatic caching, on its last block) comes after every other", () => {
    const messages = [{ role: 'user', content: [long('Go.')] }];
    const body: Json = { cache_control: mark, system: [long('Rules.')], messages };
    withinCacheBreakpoints(body);
    expect(body.messages).toBe(messages);
  });

  it("Messages: a tool result's inner hour's mark after the tools' 5 minutes", () => {
    const body: Json = {
      tools: [{ name: 'Read', input_schema: { type: 'object' }, cache_control: mark }],
      system: [long('Rules.')],
      messages: [
        { role: 'user', content: [long('Go.')] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [long('inner')] }] },
      ],
    };
    withinCacheBreakpoints(body);
    // The system prompt's is the client's own, as it came (Anthropic refuses it); the conversation's follow.
    expect(body.system).toEqual([long('Rules.')]);
    expect(body.messages).toEqual([
      { role: 'user', content: [part('Go.')] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [part('inner')] }] },
    ]);
  });
});

describe('to an upstream that refused a breakpoint’s ttl (Claude on Bedrock before its hour-long cache)', () => {
  it('asks the 5-minute cache at every breakpoint, where it stood, the client’s blocks untouched', () => {
    const hour = { type: 'ephemeral', ttl: '1h' };
    const minutes = { type: 'ephemeral', ttl: '5m' };
    const stored = { type: 'text', text: 'Go.', cache_control: hour };
    const inner = { type: 'text', text: 'inner', cache_control: minutes };
    const body: Json = {
      cache_control: hour,
      tools: [{ name: 'Read', input_schema: { type: 'object' }, cache_control: hour }],
      system: [{ type: 'text', text: 'Rules.' }],
      messages: [
        { role: 'user', content: [stored] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [inner] }] },
      ],
    };
    withinCacheBreakpoints(body, new Set(['ttl']));
    expect(body).toEqual({
      cache_control: mark,
      tools: [{ name: 'Read', input_schema: { type: 'object' }, cache_control: mark }],
      system: [part('Rules.', false)],
      messages: [
        { role: 'user', content: [part('Go.')] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [part('inner')] }] },
      ],
    });
    // A session's stored block is the session's: copied, not changed.
    expect(stored.cache_control).toBe(hour);
    expect(inner.cache_control).toBe(minutes);
  });
});

describe("to an upstream that refused a breakpoint's scope (GitHub Copilot's, of Claude Code's)", () => {
  it('sends every mark without it, its lifetime kept', () => {
    const scoped = { type: 'ephemeral', ttl: '1h', scope: 'global' };
    const body: Json = {
      system: [{ type: 'text', text: 'Rules.', cache_control: scoped }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Go.', cache_control: scoped }] }],
    };
    withinCacheBreakpoints(body, new Set(['scope']));
    const hour = { type: 'ephemeral', ttl: '1h' };
    expect(body).toEqual({
      system: [{ type: 'text', text: 'Rules.', cache_control: hour }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Go.', cache_control: hour }] }],
    });
  });
});

describe('to a model none of whose endpoints caches so (OpenRouter\'s "No endpoints found that support cache control")', () => {
  it('leaves every mark out, the parts that had none and the messages with none the same objects', () => {
    const plain = { type: 'text', text: 'Read it.' };
    const untouched = { role: 'user', content: [plain] };
    const messages = [
      {
        role: 'system',
        content: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      },
      untouched,
      {
        role: 'user',
        content: [plain, { type: 'text', text: 'Now.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      },
    ];
    const out = chatWithoutCacheMarks(messages);
    expect(out).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      untouched,
      { role: 'user', content: [plain, { type: 'text', text: 'Now.' }] },
    ]);
    expect(out[1]).toBe(untouched);
    expect((out[2]?.content as unknown[])[0]).toBe(plain);
    expect(messages[0]?.content[0]).toHaveProperty('cache_control');
  });

  it('is the same array when no part is marked', () => {
    const messages = [{ role: 'user', content: 'Hi' }];
    expect(chatWithoutCacheMarks(messages)).toBe(messages);
  });
});
