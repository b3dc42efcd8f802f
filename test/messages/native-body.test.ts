// The Messages body an `anthropic` upstream is sent: what the engine left as the client sent it is the
// client's bytes (its spacing and escapes), what it changed is written anew, and the body always parses
// to the Messages request the engine's chat request translates to (anthropic-wire.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientArray, type ClientArray } from '../../src/chat/chat-body.js';
import { bridgeMessagesRequest } from '../../src/messages/bridge.js';
import { anthropicBodyWriter } from '../../src/messages/native-body.js';
import { toAnthropicRequest } from '../../src/upstream/anthropic-wire.js';

type Json = Record<string, unknown>;

/** The writer of a client's body, its messages read from its bytes as the Messages service reads them. */
const writerOf = (raw: Buffer, body: Json) =>
  anthropicBodyWriter(clientArray(raw, 'messages', body) as ClientArray, body);

/** A Claude Code request: two system blocks, a tool, a tool loop; every é written as an escape. */
function claudeCodeBody(): { raw: Buffer; body: Json } {
  const body = {
    model: 'claude-sonnet-4-5',
    max_tokens: 32_000,
    system: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
      { type: 'text', text: 'Réponds en français. Use the tools.', cache_control: { type: 'ephemeral' } },
    ],
    tools: [
      {
        name: 'Read',
        description: 'Lit un fichier (é).',
        input_schema: { type: 'object', properties: { path: { type: 'string' } } },
      },
    ],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Résume src/a.ts' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Je lis.' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'src/a.ts' } },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'export const café = 1;' }],
      },
    ],
    metadata: { user_id: 'user_é' },
  };
  const text = JSON.stringify(body, null, 1).replace(/é/g, '\\u00e9');
  return { raw: Buffer.from(text), body: JSON.parse(text) as Json };
}

const bridge = (body: Json) => bridgeMessagesRequest(body, { native: true, requireMaxTokens: true }).chatBody;

describe('the Messages body for an anthropic upstream', () => {
  it('copies the messages, system prompt, tools and metadata the engine left as they came', () => {
    const { raw, body } = claudeCodeBody();
    const chat = bridge(body);
    const sent = writerOf(raw, body)(chat).toString('utf8');
    expect(JSON.parse(sent)).toEqual(toAnthropicRequest(chat));
    // The client's spelling, indentation included, for each.
    const spelled = (value: unknown) => JSON.stringify(value, null, 1).replace(/é/g, '\\u00e9');
    const messages = body.messages as Json[];
    for (const message of messages) expect(sent).toContain(spelled(message).replaceAll('\n', '\n  '));
    expect(sent).toContain(spelled(body.system).replaceAll('\n', '\n '));
    expect(sent).toContain(spelled(body.tools).replaceAll('\n', '\n '));
    expect(sent).toContain('"user_id": "user_\\u00e9"');
    expect(sent).not.toContain('é');
  });

  it('writes anew what the engine changed, and copies the rest', () => {
    const { raw, body } = claudeCodeBody();
    const chat = bridge(body);
    const messages = chat.messages as Json[];
    // The engine masked the tool result: a new message, its content changed.
    const masked = Object.assign({}, chat, {
      messages: [...messages.slice(0, -1), Object.assign({}, messages.at(-1), { content: '[masked]' })],
    });
    const sent = writerOf(raw, body)(masked).toString('utf8');
    expect(JSON.parse(sent)).toEqual(toAnthropicRequest(masked));
    expect(sent).toContain(
      '{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"[masked]"}]}',
    );
    expect(sent).toContain('"text": "R\\u00e9sume src/a.ts"');
    // A different model (a fallback) is written as the engine chose it.
    const other = writerOf(raw, body)(Object.assign({}, chat, { model: 'claude-haiku-4-5' }));
    expect(JSON.parse(other.toString('utf8'))).toMatchObject({ model: 'claude-haiku-4-5' });
  });

  it('writes anew a message merged with another, or whose blocks were put in another order', () => {
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'caf\u00e9 one' }] },
        { role: 'user', content: [{ type: 'text', text: 'caf\u00e9 two' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'caf\u00e9 note' },
            { type: 'tool_result', tool_use_id: 't1', content: 'ok' },
          ],
        },
      ],
    };
    const text = JSON.stringify(body).replace(/é/g, '\\u00e9');
    const parsed = JSON.parse(text) as Json;
    const chat = bridge(parsed);
    const sent = writerOf(Buffer.from(text), parsed)(chat).toString('utf8');
    expect(JSON.parse(sent)).toEqual(toAnthropicRequest(chat));
    // Two user messages are sent as one, and the tool result goes before the note: neither is the
    // client's message as it came.
    expect(sent).not.toContain('\\u00e9');
    expect(sent).toContain('"tool_use_id":"t1"');
  });

  const cafe = '{"type":"text","text":"caf\\u00e9"}';
  it.each([
    [
      'a message gives a member twice',
      `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","role":"user","content":[${cafe}]}]}`,
    ],
    [
      'the body gives its messages twice',
      `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"messages":[{"role":"user","content":[${cafe}]}]}`,
    ],
    [
      'the body gives them twice, once spelled with an escape',
      `{"model":"claude-sonnet-4-5","max_tokens":10,"m\\u0065ssages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"messages":[{"role":"user","content":[${cafe}]}]}`,
    ],
    [
      'the body gives its system prompt twice',
      `{"model":"claude-sonnet-4-5","max_tokens":10,"system":[{"type":"text","text":"x"}],"system":[${cafe}],"messages":[{"role":"user","content":"hi"}]}`,
    ],
  ])('copies nothing of what the bytes cannot say for sure: %s', (_name, text) => {
    const parsed = JSON.parse(text) as Json;
    const chat = bridge(parsed);
    const sent = writerOf(Buffer.from(text), parsed)(chat).toString('utf8');
    expect(JSON.parse(sent)).toEqual(toAnthropicRequest(chat));
    expect(sent).toContain('café');
    expect(sent).not.toContain('\\u00e9');
  });

  it('writes every body of its attempts from the client’s bytes alike', () => {
    const { raw, body } = claudeCodeBody();
    const chat = bridge(body);
    const write = writerOf(raw, body);
    const first = write(chat);
    expect(write(chat).equals(first)).toBe(true);
  });
});

describe('the Messages body of a session’s request', () => {
  /**
   * A session that stored the bridged conversation (each message as its JSON, and read back from it, as
   * the Redis store does) and a request that sends one new message, `delta`: the chat request the
   * engine sends, its stored messages' bytes, and the writer of the new request's body.
   */
  function session() {
    const { body } = claudeCodeBody();
    const storedMessages = bridge(body).messages as Json[];
    const bytes = storedMessages.map((message) => Buffer.from(JSON.stringify(message)));
    const stored = bytes.map((buffer) => JSON.parse(buffer.toString('utf8')) as Json);
    const delta = {
      model: body.model,
      max_tokens: body.max_tokens,
      system: body.system,
      messages: [{ role: 'assistant', content: [{ type: 'text', text: 'Done: café.' }] }],
    };
    const raw = Buffer.from(JSON.stringify(delta));
    const fresh = bridge(JSON.parse(raw.toString('utf8')) as Json);
    const chat = Object.assign({}, fresh, {
      messages: [...stored, ...(fresh.messages as Json[]).slice(1)],
    });
    const known = [...bytes, ...(fresh.messages as Json[]).slice(1).map(() => undefined)];
    return { chat, stored, bytes, known, write: writerOf(raw, JSON.parse(raw.toString('utf8')) as Json) };
  }

  /**
   * `bytes` with `from` (of the same length as `to`) changed to `to`, in place, where it stands in the
   * stored blocks: its second occurrence (the message's own content or tool calls come first).
   */
  const mark = (bytes: Buffer, from: string, to: string) => {
    const at = bytes.indexOf(from, bytes.indexOf(from) + 1);
    expect(bytes.toString('utf8', 0, at)).toContain('"blocks":[');
    bytes.write(to, at);
  };

  it('copies its stored messages and system prompt from the bytes the session stores, and writes the same body', () => {
    const { chat, bytes, known, write } = session();
    expect(write(chat, known).toString('utf8')).toBe(JSON.stringify(toAnthropicRequest(chat)));
    // Copied, not written again: a stored byte changed after the message was read shows in the body.
    mark(bytes[0] as Buffer, 'official CLI', 'OFFICIAL CLI');
    mark(bytes.at(-1) as Buffer, 'const caf', 'CONST caf');
    mark(bytes.at(-2) as Buffer, '"Read"', '"READ"');
    const sent = write(chat, known).toString('utf8');
    expect(sent).toContain('OFFICIAL CLI');
    expect(sent).toContain('CONST caf');
    expect(sent).toContain('"READ"');
    // Without the stored bytes, written anew.
    expect(write(chat).toString('utf8')).toBe(JSON.stringify(toAnthropicRequest(chat)));
  });

  it('writes anew a stored message the engine changed, and a merged one whose blocks are not all stored runs', () => {
    const { chat, bytes, known, write } = session();
    const messages = chat.messages as Json[];
    mark(bytes.at(-1) as Buffer, 'const caf', 'CONST caf');
    // The tool result masked: a copy, its content changed (it keeps the extension).
    const masked = Object.assign({}, chat, {
      messages: messages.map((message, index) =>
        index === messages.length - 2 ? Object.assign({}, message, { content: '[masked]' }) : message,
      ),
    });
    const sent = write(masked, known).toString('utf8');
    expect(JSON.parse(sent)).toEqual(toAnthropicRequest(masked));
    expect(sent).not.toContain('CONST caf');
    // A stored user message followed by a new one: merged into one Messages message, written anew.
    const merged = Object.assign({}, chat, {
      messages: [...messages.slice(0, -1), { role: 'user', content: 'And now?' }],
    });
    const mergedSent = write(merged, [...known.slice(0, -1), undefined]).toString('utf8');
    expect(JSON.parse(mergedSent)).toEqual(toAnthropicRequest(merged));
    expect(mergedSent).not.toContain('CONST caf');
  });
});

describe('the Messages body of a session’s request, for any stored conversation', () => {
  const text = fc.string({ unit: 'grapheme', maxLength: 12 });
  const block = fc.oneof(
    text.map((value) => ({ type: 'text', text: value })),
    text.map((value) => ({ type: 'text', text: value, cache_control: { type: 'ephemeral' } })),
  );
  /** A conversation as Claude Code sends it: user blocks, steps of tool calls and their results. */
  const conversation = fc
    .array(
      fc.record({
        said: fc.array(block, { minLength: 1, maxLength: 3 }),
        calls: fc.array(text, { maxLength: 3 }),
        results: fc.array(fc.oneof(text, fc.array(block, { minLength: 1, maxLength: 2 })), {
          minLength: 3,
          maxLength: 3,
        }),
      }),
      { minLength: 1, maxLength: 5 },
    )
    .map((steps) =>
      steps.flatMap((step, index) => [
        { role: 'user', content: step.said },
        ...(step.calls.length === 0
          ? []
          : [
              {
                role: 'assistant',
                content: step.calls.map((input, call) => ({
                  type: 'tool_use',
                  id: `toolu_${index}_${call}`,
                  name: 'Read',
                  input: { path: input },
                })),
              },
              {
                role: 'user',
                content: step.calls.map((_input, call) => ({
                  type: 'tool_result',
                  tool_use_id: `toolu_${index}_${call}`,
                  content: step.results[call],
                })),
              },
            ]),
        { role: 'assistant', content: [{ type: 'text', text: `step ${index}` }] },
      ]),
    );

  it('is what JSON.stringify writes, whichever stored messages the engine kept, changed or left out', () => {
    fc.assert(
      fc.property(
        conversation,
        fc.array(fc.constantFrom('keep', 'change', 'drop'), { minLength: 40, maxLength: 40 }),
        (messages, fates) => {
          const body = {
            model: 'claude-sonnet-4-5',
            max_tokens: 100,
            system: [{ type: 'text', text: 'Rules.' }],
            messages,
          };
          const bridged = bridge(body).messages as Json[];
          const bytes = bridged.map((message) => Buffer.from(JSON.stringify(message)));
          const stored = bytes.map((buffer) => JSON.parse(buffer.toString('utf8')) as Json);
          const kept: Json[] = [];
          const known: Array<Buffer | undefined> = [];
          stored.forEach((message, index) => {
            const fate = index === 0 ? 'keep' : fates[index % fates.length];
            if (fate === 'drop') return;
            kept.push(fate === 'keep' ? message : Object.assign({}, message, { content: '[changed]' }));
            known.push(fate === 'keep' ? bytes[index] : undefined);
          });
          const delta = {
            model: body.model,
            max_tokens: 100,
            messages: [{ role: 'user', content: 'Go on.' }],
          };
          const raw = Buffer.from(JSON.stringify(delta));
          const client = JSON.parse(raw.toString('utf8')) as Json;
          const chat = Object.assign({}, bridge(client), { messages: kept });
          expect(writerOf(raw, client)(chat, known).toString('utf8')).toBe(
            JSON.stringify(toAnthropicRequest(chat)),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
