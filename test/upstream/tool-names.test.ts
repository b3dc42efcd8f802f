// Tool names as providers take them (tool-names.ts): the wire names of tools named as MCP allows, the
// request written with them, and the answer's calls read back under the client's names.
import { describe, expect, it } from 'vitest';
import {
  answerToolNames,
  wireToolNames,
  withAnswerToolNames,
  withWireToolNames,
} from '../../src/upstream/tool-names.js';
import type { UpstreamRequest } from '../../src/upstream/upstream.js';
import { scriptedUpstream } from '../helpers/port-fakes.js';

const request = {} as UpstreamRequest;

const fn = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });
/** A name OpenAI, Anthropic and Gemini all take as a tool's. */
const taken = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

describe('wireToolNames', () => {
  it('is undefined when every name is one OpenAI and Anthropic take', () => {
    expect(wireToolNames([fn('read_file'), fn('Bash'), fn('mcp__github__create-issue')])).toBeUndefined();
    expect(wireToolNames(undefined)).toBeUndefined();
  });

  it('writes a dot (and any other character they refuse) as _, and keeps the others', () => {
    const names = wireToolNames([
      fn('calendar.read'),
      fn('read_file'),
      fn('local.netcore server getMacroList'),
    ]);
    expect([...(names?.toWire ?? [])]).toEqual([
      ['calendar.read', 'calendar_read'],
      ['local.netcore server getMacroList', 'local_netcore_server_getMacroList'],
    ]);
    expect(names?.toClient.get('calendar_read')).toBe('calendar.read');
  });

  it("takes the names the history's calls and tool messages give, of tools no longer offered too", () => {
    const names = wireToolNames(
      [fn('read_file')],
      [
        { role: 'user', content: 'Go.' },
        {
          role: 'assistant',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'gmail.send', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', name: 'drive.search', content: 'ok' },
      ],
    );
    expect([...(names?.toWire ?? [])]).toEqual([
      ['gmail.send', 'gmail_send'],
      ['drive.search', 'drive_search'],
    ]);
    expect(
      wireToolNames([fn('read_file')], [{ role: 'tool', tool_call_id: 'c1', name: 'read_file' }]),
    ).toBeUndefined();
  });

  it('begins a name that Gemini refuses for its first character (a digit, a dash) with _', () => {
    const names = wireToolNames([fn('21st_magic_component_builder'), fn('-x'), fn('read_file')]);
    expect([...(names?.toWire ?? [])]).toEqual([
      ['21st_magic_component_builder', '_21st_magic_component_builder'],
      ['-x', '_-x'],
    ]);
    const long = wireToolNames([fn(`9${'x'.repeat(63)}`)])?.toWire.get(`9${'x'.repeat(63)}`) ?? '';
    expect(long).toMatch(taken);
  });

  it("gives a name that would be another tool's, or too long, one of its own", () => {
    const long = `${'x'.repeat(60)}.y`;
    const names = wireToolNames([
      fn('a.b'),
      fn('a_b'),
      fn('a:b'),
      fn(long),
      { type: 'custom', custom: { name: 'c.d' } },
    ]);
    const wire = [...(names?.toWire.values() ?? [])];
    expect(wire).toHaveLength(4);
    expect(wire.every((name) => taken.test(name))).toBe(true);
    expect(new Set([...wire, 'a_b']).size).toBe(5);
    expect(names?.toWire.get('c.d')).toBe('c_d');
  });
});

describe('withWireToolNames', () => {
  it("writes the tools, the tool choice and the history's calls with the wire names, and nothing else", () => {
    const names = wireToolNames([fn('calendar.read'), fn('read_file')]);
    if (names === undefined) throw new Error('names expected');
    const request = {
      model: 'm',
      tools: [fn('calendar.read'), fn('read_file')],
      tool_choice: { type: 'function', function: { name: 'calendar.read' } },
    };
    const question = { role: 'user', content: 'Today?' };
    const result = { role: 'tool', tool_call_id: 'c1', name: 'calendar.read', content: 'ok' };
    const call = (name: string) => ({
      id: `c_${name}`,
      type: 'function',
      function: { name, arguments: '{}' },
    });
    const messages: Array<{ role: string; content: string | null; tool_calls?: unknown[] }> = [
      question,
      { role: 'assistant', content: null, tool_calls: [call('calendar.read'), call('read_file')] },
      result,
    ];
    const out = withWireToolNames(request, messages, names);
    expect(out.request).toEqual({
      model: 'm',
      tools: [fn('calendar_read'), fn('read_file')],
      tool_choice: { type: 'function', function: { name: 'calendar_read' } },
    });
    expect(out.messages[0]).toBe(question);
    expect(out.messages[1]?.tool_calls).toEqual([
      { id: 'c_calendar.read', type: 'function', function: { name: 'calendar_read', arguments: '{}' } },
      call('read_file'),
    ]);
    expect(out.messages[2]).toEqual({ ...result, name: 'calendar_read' });
    // The client's request is as it came.
    expect(request.tools[0]?.function.name).toBe('calendar.read');
  });
});

describe('answerToolNames', () => {
  it('is undefined when no tool is sent and none renamed', () => {
    expect(answerToolNames(undefined, undefined)).toBeUndefined();
    expect(answerToolNames([], undefined)).toBeUndefined();
  });

  it("holds the names of the tools sent, functions' and custom tools'", () => {
    const custom = { type: 'custom', custom: { name: 'apply_patch' } };
    expect([...(answerToolNames([fn('read_file'), custom], undefined)?.offered ?? [])]).toEqual([
      'read_file',
      'apply_patch',
    ]);
  });
});

describe('withAnswerToolNames', () => {
  const names = {
    offered: new Set(['calendar_read']),
    toClient: new Map([['calendar_read', 'calendar.read']]),
  };
  const completion = {
    id: 'x',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calendar_read', arguments: '{}' } }],
        },
      },
    ],
  };

  it("gives a whole answer's calls their client's names", async () => {
    const upstream = scriptedUpstream([{ status: 200, chunks: [JSON.stringify(completion)] }]);
    const response = withAnswerToolNames(await upstream.send(request), names);
    const read = JSON.parse((await response.readAll()).toString()) as typeof completion;
    expect(read.choices[0]?.message.tool_calls[0]?.function.name).toBe('calendar.read');
  });

  it("gives a stream's calls their client's names, however its bytes are cut", async () => {
    const chunk = (delta: unknown) =>
      `data: ${JSON.stringify({ id: 'x', choices: [{ index: 0, delta }] })}\n\n`;
    const text =
      chunk({
        tool_calls: [
          { index: 0, id: 'c1', type: 'function', function: { name: 'calendar_read', arguments: '' } },
        ],
      }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }) +
      'data: [DONE]\n\n';
    for (const size of [1, 7, text.length]) {
      const pieces: string[] = [];
      for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
      const upstream = scriptedUpstream([
        { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: pieces },
      ]);
      const response = withAnswerToolNames(await upstream.send(request), names);
      const out: Buffer[] = [];
      await response.forEachChunk((bytes) => void out.push(bytes));
      expect(Buffer.concat(out).toString()).toBe(text.replace('calendar_read', 'calendar.read'));
    }
  });

  it('passes an error, and an answer of no such call, as it came', async () => {
    const refusal = JSON.stringify({ error: { message: 'calendar_read is busy' } });
    const upstream = scriptedUpstream([
      { status: 400, chunks: [refusal] },
      { status: 200, chunks: ['{"choices":[{"message":{"content":"calendar_read"}}]}'] },
    ]);
    expect((await withAnswerToolNames(await upstream.send(request), names).readAll()).toString()).toBe(
      refusal,
    );
    expect((await withAnswerToolNames(await upstream.send(request), names).readAll()).toString()).toBe(
      '{"choices":[{"message":{"content":"calendar_read"}}]}',
    );
  });
});
