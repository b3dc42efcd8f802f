// The upstream body built from known message bytes must be exactly what JSON.stringify gives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../../src/context/types.js';
import {
  bodyStringBytes,
  bridgedMessageBytes,
  clientArray,
  clientMessageBytes,
  jsonArrayBytes,
  recordBytes,
  serializeChatBody,
  toolsKeyOf,
  withLeadingBytes,
} from '../../src/chat/chat-body.js';
import { inputItemId } from '../../src/store/response-store.js';
import { knownBytesText } from '../helpers/known-bytes.js';
import { bridgeMessagesRequest } from '../../src/messages/bridge.js';
import { bridgeRequest } from '../../src/responses/bridge.js';

const message = fc.record({
  role: fc.constantFrom('user', 'assistant', 'tool'),
  content: fc.oneof(fc.string({ unit: 'grapheme' }), fc.constant(null)),
  name: fc.option(fc.string(), { nil: undefined }),
});

describe('serializeChatBody', () => {
  it('equals JSON.stringify of the request with its messages replaced, known bytes or not', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string().filter((key) => key !== '__proto__' && key !== 'messages'),
          fc.jsonValue(),
        ),
        fc.constantFrom('first', 'last', 'absent'),
        fc.array(fc.tuple(message, fc.boolean()), { maxLength: 8 }),
        (fields, position, entries) => {
          const messages = entries.map(([entry]) => entry as ContextMessage);
          const known = entries.map(([entry, isKnown]) =>
            isKnown ? Buffer.from(JSON.stringify(entry)) : undefined,
          );
          const request: Record<string, unknown> =
            position === 'first'
              ? { messages: [], ...fields }
              : position === 'last'
                ? { ...fields, skipped: undefined, messages: [] }
                : { ...fields };
          const body = serializeChatBody(request, messages, known);

          expect(body.toString('utf8')).toBe(JSON.stringify({ ...request, messages }));
        },
      ),
    );
  });
});

describe('clientMessageBytes: the messages a stateless request sends as they came, in the client’s bytes', () => {
  /** A body as a client may write it: indented, and é sent as an escape. */
  const written = (body: unknown) => JSON.stringify(body, null, 2).replace(/é/g, '\\u00e9');

  it('copies kept messages from the client’s body and serializes the rest, to the same request', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(message, fc.constantFrom('kept', 'rewritten', 'dropped')), { maxLength: 10 }),
        (entries) => {
          const body = { model: 'm', messages: entries.map(([entry]) => entry), temperature: 0.5 };
          const raw = Buffer.from(written(body));
          const parsed = JSON.parse(raw.toString()) as { messages: ContextMessage[] };
          // What an engine sends: some messages as they came (the same objects), some rewritten, some left out.
          const sent = parsed.messages.flatMap((entry, index) => {
            const fate = (entries[index] as [unknown, string])[1];
            return fate === 'kept' ? [entry] : fate === 'rewritten' ? [{ ...entry, content: 'short' }] : [];
          });
          const known = clientMessageBytes(raw, parsed)?.(sent) ?? [];
          const out = serializeChatBody(parsed, sent, known).toString();

          expect(JSON.parse(out)).toEqual({ ...parsed, messages: sent });
          // A kept message goes in the client's bytes: as written, two levels deeper in the body; a
          // rewritten one has none.
          sent.forEach((entry, index) => {
            if (parsed.messages.includes(entry))
              expect(out).toContain(written(entry).replace(/\n/g, '\n    '));
            else expect(known[index]).toBeUndefined();
          });
          // Kept neighbours are one part: what lies between them in the client's body goes with them.
          const kept = sent.filter((entry) => parsed.messages.includes(entry));
          const neighbours = kept.some(
            (entry, index) =>
              index > 0 &&
              parsed.messages.indexOf(entry) ===
                parsed.messages.indexOf(kept[index - 1] as ContextMessage) + 1 &&
              sent.indexOf(entry) === sent.indexOf(kept[index - 1] as ContextMessage) + 1,
          );
          if (neighbours) expect(out).toContain('},\n    {');
        },
      ),
    );
  });

  it('keeps the client’s escapes and spacing of the messages sent as they came', () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'system', content: 'Résumé first.' },
        { role: 'user', content: 'old' },
        { role: 'assistant', content: 'old answer' },
        { role: 'user', content: 'Café?' },
      ],
    };
    const raw = Buffer.from(written(body));
    const parsed = JSON.parse(raw.toString()) as { messages: ContextMessage[] };
    const [system, , , question] = parsed.messages as [
      ContextMessage,
      ContextMessage,
      ContextMessage,
      ContextMessage,
    ];
    const sent = [
      system,
      { role: 'system', content: '[ctxgate] 2 earlier messages were omitted.' },
      question,
    ];
    const out = serializeChatBody(parsed, sent, clientMessageBytes(raw, parsed)?.(sent)).toString();

    expect(out).toContain('"content": "R\\u00e9sum\\u00e9 first."');
    expect(out).toContain('"content": "Caf\\u00e9?"');
    expect(JSON.parse(out)).toEqual({ ...parsed, messages: sent });
  });

  it.each([
    {
      name: 'gives messages twice',
      raw: '{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}',
    },
    { name: 'holds a message that is not an object', raw: '{"messages":[{"role":"user","content":"a"},7]}' },
  ])('has none for a body that $name: the messages are serialized', ({ raw }) => {
    const parsed = JSON.parse(raw) as { messages: ContextMessage[] };
    const sent = parsed.messages.filter((entry) => typeof entry === 'object');
    const known = clientMessageBytes(Buffer.from(raw), parsed)?.(sent);

    expect(known?.every((bytes) => bytes === undefined)).toBe(true);
    expect(JSON.parse(serializeChatBody(parsed, sent, known).toString())).toEqual({
      ...parsed,
      messages: sent,
    });
  });

  it('has none without the client’s bytes (a bridged request) or without messages', () => {
    expect(clientMessageBytes(undefined, { messages: [] })).toBeUndefined();
    expect(clientMessageBytes(Buffer.from('{"input":[]}'), { input: [] })).toBeUndefined();
  });
});

describe('bridgedMessageBytes: a bridged request’s plain messages, in the client’s bytes', () => {
  /** A body as a client may write it: indented, and é sent as an escape. */
  const written = (body: unknown) => JSON.stringify(body, null, 2).replace(/é/g, '\\u00e9');
  /** Text long enough to be copied when it is a message's content among other fields (1,024 characters or more). */
  const page = ' Une page de texte.'.repeat(60);
  /** Strings as fast-check makes them, and as long as a tool result. */
  const text = fc.oneof(
    fc.string(),
    fc.string().map((start) => `${start}${page}`),
  );

  /** What the gateway writes upstream for the Responses body `raw`, every message it made sent as it came. */
  function sentForResponses(raw: Buffer) {
    const parsed = JSON.parse(raw.toString()) as Record<string, unknown>;
    const bridged = bridgeRequest(parsed);
    const messages = bridged.messages as ContextMessage[];
    const known = bridgedMessageBytes(
      clientArray(raw, 'input', parsed),
      messages,
      0,
      bridged.sources,
    )?.(messages);
    return {
      out: serializeChatBody(bridged.chatFields, messages, known).toString(),
      fields: bridged.chatFields,
      messages,
    };
  }

  /** The same for the Messages body `raw`. */
  function sentForMessages(raw: Buffer) {
    const parsed = JSON.parse(raw.toString()) as Record<string, unknown>;
    const bridged = bridgeMessagesRequest(parsed, { native: false, requireMaxTokens: true });
    const messages = bridged.chatBody.messages as ContextMessage[];
    const { messages: _all, ...fields } = bridged.chatBody;
    const known = bridgedMessageBytes(
      clientArray(raw, 'messages', parsed),
      messages,
      0,
      bridged.sources,
    )?.(messages);
    return { out: serializeChatBody(fields, messages, known).toString(), fields, messages };
  }

  /** Input items of every kind the Responses bridge reads, plain `{role, content}` messages among them. */
  const item = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'assistant', 'system', 'developer'), content: fc.string() }),
    fc.record({
      type: fc.constant('message'),
      role: fc.constantFrom('user', 'assistant'),
      content: text,
    }),
    fc.record({ role: fc.constant('user'), content: fc.constant([{ type: 'input_text', text: 'Café' }]) }),
    fc.record({ role: fc.constant('user'), content: fc.string(), status: fc.constant('completed') }),
    fc.record({ type: fc.constant('function_call'), call_id: fc.constant('c1'), name: fc.constant('f') }),
    fc.record({ type: fc.constant('function_call_output'), call_id: fc.constant('c1'), output: text }),
    fc.record({ type: fc.constant('reasoning'), summary: fc.constant([]) }),
  );

  it('Responses: copies the plain items it keeps and serializes the rest, to the same request', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(item, fc.constantFrom('kept', 'rewritten', 'dropped')), { maxLength: 10 }),
        fc.boolean(),
        (entries, withInstructions) => {
          const raw = Buffer.from(
            written({ model: 'm', input: entries.map(([entry]) => entry), store: false }),
          );
          const parsed = JSON.parse(raw.toString()) as Record<string, unknown>;
          const bridged = bridgeRequest(parsed);
          const before = withInstructions ? [{ role: 'system', content: 'Café first.' }] : [];
          const messages = [...before, ...bridged.messages] as ContextMessage[];
          const sent = messages.flatMap((entry, index) => {
            const fate = entries[index % Math.max(1, entries.length)]?.[1] ?? 'kept';
            return fate === 'kept' ? [entry] : fate === 'rewritten' ? [{ ...entry, content: 'short' }] : [];
          });
          const known = bridgedMessageBytes(
            clientArray(raw, 'input', parsed),
            messages,
            before.length,
            bridged.sources,
          )?.(sent);
          const out = serializeChatBody(bridged.chatFields, sent, known).toString();

          expect(JSON.parse(out)).toEqual({ ...bridged.chatFields, messages: sent });
        },
      ),
    );
  });

  it('Responses: a plain item goes as the client wrote it; of a typed one, or one with more fields, only the text', () => {
    const input = [
      { role: 'user', content: 'Café?' },
      { type: 'message', role: 'assistant', content: `Oui, café.${page}` },
      { role: 'user', content: `Encore un café.${page}`, status: 'completed' },
      { role: 'user', content: 'Café au lait.' },
      { type: 'message', role: 'user', content: 'Un café court.' },
    ];
    const raw = Buffer.from(written({ model: 'm', input }));
    const { out, fields, messages } = sentForResponses(raw);

    expect(out).toContain('{\n      "role": "user",\n      "content": "Caf\\u00e9?"\n    }');
    expect(out).toContain('"content": "Caf\\u00e9 au lait."');
    // Written anew, their long content copied: no `type` or `status` travels, the text as the client wrote it.
    expect(out).toContain(`{"role":"assistant","content":"Oui, caf\\u00e9.${page}"}`);
    expect(out).toContain(`{"role":"user","content":"Encore un caf\\u00e9.${page}"}`);
    expect(out).not.toContain('status');
    // A short one is written whole: copying it would cost more than writing it.
    expect(out).toContain('{"role":"user","content":"Un café court."}');
    expect(JSON.parse(out)).toEqual({ ...fields, messages });
  });

  it.each([
    { name: 'content', raw: '{"model":"m","input":[{"role":"user","content":"A","content":"B"}]}' },
    { name: 'role', raw: '{"model":"m","input":[{"role":"system","content":"B","role":"user"}]}' },
  ])('Responses: an item whose bytes give $name twice is serialized, not copied', ({ raw }) => {
    const parsed = JSON.parse(raw) as Record<string, unknown>;
    const bridged = bridgeRequest(parsed);
    const messages = bridged.messages as ContextMessage[];
    const known = bridgedMessageBytes(
      clientArray(Buffer.from(raw), 'input', parsed),
      messages,
      0,
      bridged.sources,
    )?.(messages);
    const out = serializeChatBody(bridged.chatFields, messages, known).toString();

    expect(out).toBe('{"model":"m","messages":[{"role":"user","content":"B"}]}');
  });

  it('Messages: copies plain messages, not a system prompt or messages of blocks', () => {
    const body = {
      model: 'm',
      max_tokens: 16,
      system: 'Be brief, café.',
      messages: [
        { role: 'user', content: 'Café?' },
        { role: 'assistant', content: [{ type: 'text', text: 'Oui, café.' }] },
        { role: 'user', content: 'Encore, café.' },
      ],
    };
    const raw = Buffer.from(written(body));
    const { out, fields, messages } = sentForMessages(raw);

    expect(out).toContain('{\n      "role": "user",\n      "content": "Caf\\u00e9?"\n    }');
    expect(out).toContain('"content": "Encore, caf\\u00e9."');
    expect(out).toContain('{"role":"system","content":"Be brief, café."}');
    expect(out).toContain('{"role":"assistant","content":"Oui, café."}');
    expect(JSON.parse(out)).toEqual({ ...fields, messages });
  });

  it('Responses: a function call’s output goes as the client wrote it, unless its bytes give it twice', () => {
    const raw = Buffer.from(
      '{"model":"m","input":[{"role":"user","content":"Go."},' +
        '{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},' +
        `{"type":"function_call_output","call_id":"c1","output":"Caf\\u00e9 \\"ok\\"${page}"},` +
        '{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},' +
        `{"type":"function_call_output","call_id":"c2","output":"A${page}","output":"B${page}"},` +
        '{"type":"function_call","call_id":"c3","name":"f","arguments":"{}"},' +
        '{"type":"function_call_output","call_id":"c3","output":{"rows":2}}]}',
    );
    const { out, fields, messages } = sentForResponses(raw);

    expect(out).toContain(`{"role":"tool","tool_call_id":"c1","content":"Caf\\u00e9 \\"ok\\"${page}"}`);
    expect(out).toContain(`{"role":"tool","tool_call_id":"c2","content":"B${page}"}`);
    expect(out).not.toContain(`"A${page}"`);
    expect(out).toContain('{"role":"tool","tool_call_id":"c3","content":"{\\"rows\\":2}"}');
    expect(JSON.parse(out)).toEqual({ ...fields, messages });
  });

  it('Responses: of content parts, a long text and an image’s URL go as the client wrote them, the rest anew', () => {
    // As some clients write a URL: every slash escaped.
    const image = `data:image\\/png;base64,${'iVBORw0KGgo'.repeat(200)}`;
    // A short text that reads like what stands in for a copy while the rest is written.
    const lookalike = '\u0000ctxgate copy 0\u0000';
    const raw = Buffer.from(
      '{"model":"m","input":[{"role":"user","content":[' +
        `{"type":"input_text","text":"Caf\\u00e9${page}"},` +
        `{"type":"input_image","image_url":"${image}","detail":"low"},` +
        '{"type":"input_text","text":"Caf\\u00e9, short."}]},' +
        `{"role":"assistant","content":[{"type":"output_text","text":"R\\u00e9ponse${page}"}]},` +
        `{"role":"user","content":[{"type":"input_text","text":"Caf\\u00e9${page}"},` +
        `{"type":"input_text","text":${JSON.stringify(lookalike)}}]}]}`,
    );
    const { out, fields, messages } = sentForResponses(raw);

    expect(JSON.parse(out)).toEqual({ ...fields, messages });
    expect(out).toContain(`{"role":"user","content":[{"type":"text","text":"Caf\\u00e9${page}"},`);
    expect(out).toContain(`{"type":"image_url","image_url":{"url":"${image}","detail":"low"}}`);
    expect(out).toContain(`{"type":"text","text":"R\\u00e9ponse${page}"}`);
    // The short text is written anew (é as UTF-8); the message whose own string reads like a
    // placeholder is written whole rather than risk a wrong copy.
    expect(out).toContain('"text":"Café, short."');
    expect(out).toContain(`"text":"Café${page}"},{"type":"text","text":${JSON.stringify(lookalike)}}`);
  });

  it('Responses: copies every long part of a message of many, and writes it whole when a string of its own reads like a placeholder', () => {
    const parts = (count: number) =>
      Array.from(
        { length: count },
        (_unused, index) => `{"type":"input_text","text":"Caf\\u00e9 ${index}.${page}"}`,
      );
    const lookalike = JSON.stringify('\u0000ctxgate copy 99\u0000');
    const raw = Buffer.from(
      `{"model":"m","input":[{"role":"user","content":[${parts(30).join(',')}]},` +
        `{"role":"assistant","content":"Ok."},` +
        `{"role":"user","content":[${[...parts(3), `{"type":"input_text","text":${lookalike}}`].join(',')}]}]}`,
    );
    const { out, fields, messages } = sentForResponses(raw);

    expect(JSON.parse(out)).toEqual({ ...fields, messages });
    const [many, , odd] = JSON.parse(out).messages as Array<{ content: unknown[] }>;
    expect(many?.content).toHaveLength(30);
    for (let index = 0; index < 30; index++)
      expect(out).toContain(`{"type":"text","text":"Caf\\u00e9 ${index}.${page}"}`);
    expect(odd?.content).toHaveLength(4);
    expect(out).toContain(`{"type":"text","text":"Café 2.${page}"},{"type":"text","text":${lookalike}}`);
  });

  /** Messages of every shape the Messages bridge reads: plain, blocks, tool uses and their results. */
  const anthropicMessage = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.string({ minLength: 1 }) }),
    fc.record({
      role: fc.constant('assistant'),
      content: fc.constant([
        { type: 'text', text: 'Café.' },
        { type: 'tool_use', id: 't1', name: 'f', input: { q: 'é' } },
      ]),
    }),
    fc.record({
      role: fc.constant('user'),
      content: fc.array(
        fc.oneof(
          fc.record({
            type: fc.constant('tool_result'),
            tool_use_id: fc.constant('t1'),
            content: fc.string(),
          }),
          fc.record({
            type: fc.constant('tool_result'),
            tool_use_id: fc.constant('t1'),
            content: fc.string(),
            is_error: fc.boolean(),
          }),
          fc.record({
            type: fc.constant('tool_result'),
            tool_use_id: fc.constant('t1'),
            content: fc.constant([{ type: 'text', text: 'Café' }]),
          }),
          fc.record({ type: fc.constant('text'), text: fc.string() }),
        ),
        { minLength: 1, maxLength: 4 },
      ),
    }),
  );

  it('Messages: copies the plain messages and tool results it keeps and serializes the rest, to the same request', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(anthropicMessage, fc.constantFrom('kept', 'rewritten', 'dropped')), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.option(fc.constant('Be brief, café.'), { nil: undefined }),
        (entries, system) => {
          const body = { model: 'm', max_tokens: 16, system, messages: entries.map(([entry]) => entry) };
          const raw = Buffer.from(written(body));
          const parsed = JSON.parse(raw.toString()) as Record<string, unknown>;
          const bridged = bridgeMessagesRequest(parsed, { native: false, requireMaxTokens: true });
          const messages = bridged.chatBody.messages as ContextMessage[];
          const { messages: _all, ...fields } = bridged.chatBody;
          const sent = messages.flatMap((entry, index) => {
            const fate = entries[index % entries.length]?.[1] ?? 'kept';
            return fate === 'kept' ? [entry] : fate === 'rewritten' ? [{ ...entry, content: 'short' }] : [];
          });
          const known = bridgedMessageBytes(
            clientArray(raw, 'messages', parsed),
            messages,
            0,
            bridged.sources,
          )?.(sent);
          const out = serializeChatBody(fields, sent, known).toString();

          expect(JSON.parse(out)).toEqual({ ...fields, messages: sent });
        },
      ),
    );
  });

  it('Messages: each tool result of a message goes as the client wrote it; an error’s is written anew', () => {
    const body = {
      model: 'm',
      max_tokens: 16,
      messages: [
        { role: 'user', content: 'Go.' },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 't1', name: 'f', input: {} },
            { type: 'tool_use', id: 't2', name: 'f', input: {} },
            { type: 'tool_use', id: 't3', name: 'f', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: `Café one.${page}` },
            { type: 'tool_result', tool_use_id: 't2', content: `Café two.${page}`, is_error: true },
            { type: 'text', text: 'And?' },
            { type: 'tool_result', tool_use_id: 't3', content: `Café three.${page}` },
          ],
        },
      ],
    };
    const raw = Buffer.from(written(body));
    const { out, fields, messages } = sentForMessages(raw);

    expect(out).toContain(`{"role":"tool","tool_call_id":"t1","content":"Caf\\u00e9 one.${page}"}`);
    expect(out).toContain(`{"role":"tool","tool_call_id":"t2","content":"Error: Café two.${page}"}`);
    expect(out).toContain(`{"role":"tool","tool_call_id":"t3","content":"Caf\\u00e9 three.${page}"}`);
    expect(JSON.parse(out)).toEqual({ ...fields, messages });
  });

  it('Messages: a content of one text block, and a tool result of one, goes as the client wrote its text; joined texts anew', () => {
    const body = {
      model: 'm',
      max_tokens: 16,
      messages: [
        { role: 'user', content: [{ type: 'text', text: `Café, read this.${page}` }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: `Réponse.${page}` },
            { type: 'tool_use', id: 't1', name: 'f', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't1',
              content: [{ type: 'text', text: `Café rows.${page}` }],
            },
            { type: 'text', text: `Café, first.${page}` },
            { type: 'text', text: `Café, second.${page}` },
          ],
        },
      ],
    };
    const raw = Buffer.from(written(body));
    const { out, fields, messages } = sentForMessages(raw);

    expect(JSON.parse(out)).toEqual({ ...fields, messages });
    expect(out).toContain(`{"role":"user","content":"Caf\\u00e9, read this.${page}"}`);
    expect(out).toContain(`"content":"R\\u00e9ponse.${page}"`);
    expect(out).toContain(`{"role":"tool","tool_call_id":"t1","content":"Caf\\u00e9 rows.${page}"}`);
    // Two text blocks are one string joined by the bridge: written anew.
    expect(out).toContain(`"content":"Café, first.${page}\\nCafé, second.${page}"`);
  });

  it('has none without the client’s bytes', () => {
    expect(
      bridgedMessageBytes(clientArray(undefined, 'input', { input: [] }), [], 0, {
        origins: new Int32Array(0),
      }),
    ).toBeUndefined();
  });
});

describe('recordBytes: stored input items, in the client’s bytes where they hold them', () => {
  /** A body as a client may write it: indented, and é sent as an escape. */
  const written = (body: unknown) => JSON.stringify(body, null, 2).replace(/é/g, '\\u00e9');
  const page = ' Une page de texte, café.'.repeat(50);
  const text = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ maxLength: 40 }).map((start) => `${start}${page}`),
  );
  const part = fc.oneof(
    fc.record({ type: fc.constant('input_text'), text }),
    fc.record({ type: fc.constant('input_text'), text, cache_control: fc.constant({ type: 'ephemeral' }) }),
    fc.record({ type: fc.constant('input_image'), image_url: fc.constant('https://example.com/a.png') }),
  );
  /** Items as clients send them: plain, typed, of content parts, tool calls and outputs — some with fields the API does not define, some with their own ids. */
  const item = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'assistant'), content: text }),
    fc.record({ type: fc.constant('message'), role: fc.constant('user'), content: text }),
    fc.record({ role: fc.constant('user'), content: fc.array(part, { minLength: 1, maxLength: 3 }) }),
    fc.record({ role: fc.constant('user'), content: text, metadata: fc.constant({ from: 'app' }) }),
    fc.record({ id: fc.constant('msg_clients_own'), role: fc.constant('user'), content: text }),
    fc.record({
      type: fc.constant('function_call'),
      call_id: fc.constant('c1'),
      name: fc.constant('f'),
      arguments: text.map((value) => JSON.stringify({ value })),
    }),
    fc.record({ type: fc.constant('function_call_output'), call_id: fc.constant('c1'), output: text }),
  );
  /** Whether an item as sent holds nothing the API leaves out, and no id: stored as it came. */
  const storedWhole = (sent: Record<string, unknown>) =>
    !('id' in sent) &&
    !('metadata' in sent) &&
    !(Array.isArray(sent.content) && sent.content.some((entry) => 'cache_control' in entry));

  it('writes every record to the same value, and an item stored as it came in the client’s bytes', () => {
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 8 }), (input) => {
        const raw = Buffer.from(written({ model: 'm', input }));
        const parsed = JSON.parse(raw.toString()) as { input: Array<Record<string, unknown>> };
        const bridged = bridgeRequest(parsed);
        const records = bridged.inputItems.map((entry, index) => ({
          id: inputItemId(`resp_${'ab'.repeat(24)}`, index),
          ...entry,
        }));
        const { origins, fields } = bridged.itemSources;
        const known = recordBytes(clientArray(raw, 'input', parsed), records, origins, fields);
        const out = jsonArrayBytes(records, known).toString();

        expect(JSON.parse(out)).toEqual(records);
        records.forEach((_record, index) => {
          const sent = parsed.input[origins[index] as number] as Record<string, unknown>;
          const bytes = known[index];
          const copied = knownBytesText(bytes) ?? '';
          // The client's indentation and escapes come with what is copied of its bytes.
          // (one of 256 bytes or more: a shorter one costs less to write anew)
          if (storedWhole(sent) && JSON.stringify(sent).includes(page)) expect(copied).toContain('\n');
          if (!storedWhole(sent)) expect(copied).not.toContain('\n');
          if (copied.includes('\n') && JSON.stringify(sent).includes('é'))
            expect(copied).toContain('\\u00e9');
        });
      }),
    );
  });

  it('has none without the client’s bytes', () => {
    const records = [{ id: 'msg_1', type: 'message', role: 'user', content: 'Hi' }];
    expect(recordBytes(undefined, records, Int32Array.of(0), ['content'])).toEqual([]);
  });
});

describe('withLeadingBytes: a chain’s stored messages before the client’s input', () => {
  const stored = [
    { role: 'user', content: 'caf\u00e9' },
    { role: 'assistant', content: 'noted' },
  ];
  const storedBytes = [
    Buffer.from('{"role":"user","content":"caf\\u00e9"}'),
    Buffer.from('{ "role": "assistant", "content": "noted" }'),
  ];
  const input = { role: 'user', content: 'and now?' };
  const instructions = { role: 'system', content: 'Be brief.' };
  const original: ContextMessage[] = [instructions, ...stored, input];
  const leading = [undefined, ...storedBytes];
  const known = (sent: ContextMessage[], rest?: Parameters<typeof withLeadingBytes>[2]) =>
    withLeadingBytes(original, leading, rest)?.(sent).map((bytes) => bytes?.toString());

  it.each([
    ['all sent', original, [undefined, storedBytes[0]?.toString(), storedBytes[1]?.toString(), undefined]],
    [
      'the oldest left out',
      [instructions, stored[1], input],
      [undefined, storedBytes[1]?.toString(), undefined],
    ],
    // What the engine changed (a new object) is written anew, whatever it holds.
    [
      'one changed',
      [instructions, { ...stored[0] }, stored[1], input],
      [undefined, undefined, storedBytes[1]?.toString(), undefined],
    ],
  ] as Array<[string, ContextMessage[], Array<string | undefined>]>)(
    'gives each stored message its bytes by position: %s',
    (_name, sent, expected) => {
      expect(known(sent)).toEqual(expected);
      // Sent with them, the body is the same request as written anew.
      const bytes = withLeadingBytes(original, leading, undefined)?.(sent);
      expect(JSON.parse(serializeChatBody({ model: 'm', messages: [] }, sent, bytes).toString())).toEqual({
        model: 'm',
        messages: sent,
      });
    },
  );

  it('keeps what the client’s bytes give, and gives nothing to add without stored bytes', () => {
    const fromClient = (sent: readonly ContextMessage[]) =>
      sent.map((message) =>
        message === input ? Buffer.from('{"role":"user","content":"and now?"}') : undefined,
      );
    expect(known(original, fromClient)?.at(-1)).toBe('{"role":"user","content":"and now?"}');
    expect(withLeadingBytes(original, [undefined, undefined, undefined], fromClient)).toBe(fromClient);
    expect(withLeadingBytes(original, [], undefined)).toBeUndefined();
  });
});

describe('bodyStringBytes: a message made of a string of the body, that string in the client’s bytes', () => {
  const long = `Rules: paths like src/a.ts, “quotes” and é. ${'More rules. '.repeat(100)}`;
  const bytesText = knownBytesText;
  /** The client's spelling: '/' as '\/', é as an escape. */
  const spelled = JSON.stringify(long).replaceAll('/', '\\/').replaceAll('é', '\\u00e9');

  it.each<[string, string, (string | number)[], boolean]>([
    [
      'a top-level string, after spaces',
      `\n {"model":"m","instructions": ${spelled} }`,
      ['instructions'],
      true,
    ],
    [
      'a text block of an array',
      `{"system":[{"type":"text","text":${spelled}}]}`,
      ['system', 0, 'text'],
      true,
    ],
    // JSON.parse keeps the last of a key given twice: the bytes cannot say which one is meant.
    [
      'a key given twice',
      `{"instructions":${JSON.stringify(long.toUpperCase())},"instructions":${spelled}}`,
      ['instructions'],
      false,
    ],
    [
      'a key spelled with escapes, given twice',
      `{"instructions":${JSON.stringify(long.toUpperCase())},"instruction\\u0073":${spelled}}`,
      ['instructions'],
      false,
    ],
  ])('%s', (_label, text, inBody, copied) => {
    const raw = Buffer.from(text);
    const body = JSON.parse(text) as unknown;
    const message = { role: 'system', content: long };
    const bytes = bytesText(bodyStringBytes(raw, body, inBody, message, ['content']));
    if (!copied) return expect(bytes).toBeUndefined();
    expect(JSON.parse(bytes as string)).toEqual(message);
    expect(bytes).toContain(spelled);
  });

  it('gives nothing for a short string, a message holding another string, or no bytes', () => {
    const raw = Buffer.from(JSON.stringify({ instructions: long, short: 'Be brief.' }));
    const body = JSON.parse(raw.toString()) as unknown;
    expect(
      bodyStringBytes(raw, body, ['short'], { role: 'system', content: 'Be brief.' }, ['content']),
    ).toBeUndefined();
    expect(
      bodyStringBytes(raw, body, ['instructions'], { role: 'system', content: `${long}!` }, ['content']),
    ).toBeUndefined();
    expect(
      bodyStringBytes(undefined, body, ['instructions'], { role: 'system', content: long }, ['content']),
    ).toBeUndefined();
    expect(
      bytesText(bodyStringBytes(raw, body, ['instructions'], { role: 'system', content: long }, ['content'])),
    ).toBe(JSON.stringify({ role: 'system', content: long }));
  });
});

describe('toolsKeyOf: a request’s tools named by the client’s bytes of the members they are made of', () => {
  const key = (text: string) =>
    toolsKeyOf(clientArray(Buffer.from(text), 'messages', JSON.parse(text)), 'api', ['tools', 'tool_choice']);
  const messages = '"messages":[{"role":"user","content":"Hi"}]';

  it.each([
    [
      'another conversation',
      `{${messages},"tools":[{"name":"a"}]}`,
      `{"tools":[{"name":"a"}],"messages":[]}`,
      true,
    ],
    [
      'another member',
      `{${messages},"tools":[{"name":"a"}]}`,
      `{${messages},"tools":[{"name":"a"}],"x":1}`,
      true,
    ],
    ['another tool', `{${messages},"tools":[{"name":"a"}]}`, `{${messages},"tools":[{"name":"b"}]}`, false],
    ['a tool_choice', `{${messages},"tools":[]}`, `{${messages},"tools":[],"tool_choice":"auto"}`, false],
    // Which member is missing is told apart.
    ['tools, or none', `{${messages},"tools":1}`, `{${messages},"tool_choice":1}`, false],
  ])('%s: the same name %s', (_name, a, b, same) => {
    expect(key(a)).toBeDefined();
    expect(key(a) === key(b)).toBe(same);
  });

  it.each([
    ['tools given twice', `{"tools":[{"name":"a"}],${messages},"tools":[{"name":"b"}]}`],
    [
      'tools given twice, once spelled with an escape',
      `{"tools":[{"name":"a"}],${messages},"t\\u006fols":[]}`,
    ],
    ['tool_choice given twice', `{"tool_choice":"auto",${messages},"tool_choice":"none"}`],
  ])('%s: no name', (_name, text) => {
    expect(key(text)).toBeUndefined();
  });
});
