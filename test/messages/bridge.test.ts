// The Messages → Chat Completions bridge (docs/anthropic.md): what each part of a Messages request
// becomes, what is dropped for a Chat Completions upstream, what is kept for an Anthropic one, and the
// field errors in Anthropic's words.
import { canonicalMessage } from '../../src/context/reconcile.js';
import type { ContextMessage } from '../../src/context/types.js';
import { describe, expect, it } from 'vitest';
import { messageOf, MessagesStreamTranslator } from '../../src/messages/answer.js';
import { bridgeMessagesRequest, endUserId } from '../../src/messages/bridge.js';
import { isGatewayError } from '../../src/errors.js';
import { compactedHistory, compactionRequest, readCarrier } from '../../src/upstream/carried-state.js';
import { sseEventData } from '../helpers/sse-events.js';

/** The content blocks an Anthropic event stream builds, as the SDK accumulates them. */
function blocksOfStream(text: string): Array<Record<string, unknown>> {
  const blocks: Array<Record<string, unknown>> = [];
  const json: string[] = [];
  for (const event of sseEventData(text)) {
    const index = event.index as number;
    if (event.type === 'content_block_start') {
      blocks[index] = { ...(event.content_block as Record<string, unknown>) };
      json[index] = '';
    }
    if (event.type !== 'content_block_delta') continue;
    const block = blocks[index] as Record<string, unknown>;
    const delta = event.delta as Record<string, string>;
    if (delta.type === 'text_delta') block.text = String(block.text) + delta.text;
    if (delta.type === 'thinking_delta') block.thinking = String(block.thinking) + delta.thinking;
    if (delta.type === 'signature_delta') block.signature = delta.signature;
    if (delta.type === 'input_json_delta') json[index] = `${json[index] ?? ''}${delta.partial_json ?? ''}`;
  }
  blocks.forEach((block, index) => {
    if (block.type === 'tool_use' && json[index] !== '') block.input = JSON.parse(json[index] as string);
  });
  return blocks;
}

const bridged = (body: Record<string, unknown>, native = false) =>
  bridgeMessagesRequest({ model: 'm', max_tokens: 100, ...body }, { native, requireMaxTokens: true });

describe('a Messages request as a chat request', () => {
  it.each([
    [
      'a string system prompt',
      { system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] },
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    ],
    [
      'system blocks, joined',
      {
        system: [
          { type: 'text', text: 'A' },
          { type: 'text', text: 'B', cache_control: { type: 'ephemeral' } },
        ],
        messages: [{ role: 'user', content: 'Hi' }],
      },
      [
        { role: 'system', content: 'A\n\nB' },
        { role: 'user', content: 'Hi' },
      ],
    ],
    [
      // Claude Code's first system block (2.1.332, captured), a string prompt starting with the line (an SDK
      // caller's), and one that is the line alone.
      "Claude Code's billing attribution left out",
      {
        system: [
          {
            type: 'text',
            text: 'x-anthropic-billing-header: cc_version=2.1.332.857; cc_entrypoint=sdk-cli;',
          },
          { type: 'text', text: 'You are a Claude agent.', cache_control: { type: 'ephemeral' } },
          {
            type: 'text',
            text: 'x-anthropic-billing-header: cc_version=2.1.332.a3f; cch=97bd6;\n\nBe brief.',
          },
        ],
        messages: [{ role: 'user', content: 'Hi' }],
      },
      [
        { role: 'system', content: 'You are a Claude agent.\n\nBe brief.' },
        { role: 'user', content: 'Hi' },
      ],
    ],
    [
      'a system prompt of the billing attribution alone: none',
      {
        system: 'x-anthropic-billing-header: cc_version=2.1.332.857; cc_entrypoint=cli;',
        messages: [{ role: 'user', content: 'Hi' }],
      },
      [{ role: 'user', content: 'Hi' }],
    ],
    [
      'an image block, as a data URL',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'See' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            ],
          },
        ],
      },
      [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'See' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
    ],
    [
      'a tool round trip: tool_use as tool_calls, tool results first as tool messages',
      {
        messages: [
          { role: 'user', content: 'Weather?' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Looking.' },
              { type: 'tool_use', id: 't1', name: 'w', input: { city: 'Oslo' } },
              { type: 'tool_use', id: 't2', name: 'w', input: {} },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Here.' },
              { type: 'tool_result', tool_use_id: 't1', content: 'rain' },
              {
                type: 'tool_result',
                tool_use_id: 't2',
                is_error: true,
                content: [{ type: 'text', text: 'no city' }],
              },
            ],
          },
        ],
      },
      [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: 'Looking.',
          tool_calls: [
            { id: 't1', type: 'function', function: { name: 'w', arguments: '{"city":"Oslo"}' } },
            { id: 't2', type: 'function', function: { name: 'w', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 't1', content: 'rain' },
        { role: 'tool', tool_call_id: 't2', content: 'Error: no city' },
        { role: 'user', content: 'Here.' },
      ],
    ],
    [
      "a tool result's picture (Claude Code's Read of a PNG) kept as a part beside its text; an error's too",
      {
        messages: [
          { role: 'user', content: 'Look.' },
          {
            role: 'assistant',
            content: [
              { type: 'tool_use', id: 't1', name: 'Read', input: {} },
              { type: 'tool_use', id: 't2', name: 'Read', input: {} },
            ],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't1',
                content: [
                  { type: 'text', text: 'chart.png' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
                ],
              },
              {
                type: 'tool_result',
                tool_use_id: 't2',
                is_error: true,
                content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/x.png' } }],
              },
            ],
          },
        ],
      },
      [
        { role: 'user', content: 'Look.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 't1', type: 'function', function: { name: 'Read', arguments: '{}' } },
            { id: 't2', type: 'function', function: { name: 'Read', arguments: '{}' } },
          ],
        },
        {
          role: 'tool',
          tool_call_id: 't1',
          content: [
            { type: 'text', text: 'chart.png' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
        {
          role: 'tool',
          tool_call_id: 't2',
          content: [
            { type: 'text', text: 'Error:' },
            { type: 'image_url', image_url: { url: 'https://example.com/x.png' } },
          ],
        },
      ],
    ],
  ])('%s', (_name, body, messages) => {
    expect(bridged(body).chatBody.messages).toEqual(messages);
  });

  it("keeps the client's cache breakpoints on the parts they marked for Claude behind a Chat Completions endpoint", () => {
    const mark = { type: 'ephemeral' };
    const body = {
      model: 'anthropic/claude-sonnet-4.6',
      max_tokens: 100,
      system: [
        { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332.857;' },
        { type: 'text', text: 'You are a Claude agent.', cache_control: mark },
        { type: 'text', text: 'Be brief.' },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Read it.' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: 'CODE-4711', cache_control: mark },
            { type: 'text', text: 'And now?', cache_control: mark },
          ],
        },
      ],
    };
    const marked = bridgeMessagesRequest(body, { native: false, cacheMarks: true, requireMaxTokens: true });
    expect(marked.chatBody.messages).toEqual([
      {
        role: 'system',
        content: [
          { type: 'text', text: 'You are a Claude agent.', cache_control: mark },
          { type: 'text', text: '\n\nBe brief.' },
        ],
      },
      { role: 'user', content: 'Read it.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'Read', arguments: '{}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 't1',
        content: [{ type: 'text', text: 'CODE-4711', cache_control: mark }],
      },
      { role: 'user', content: [{ type: 'text', text: 'And now?', cache_control: mark }] },
    ]);
    // Another model caches by prefix on its own: plain strings, as before.
    const plain = bridgeMessagesRequest(body, { native: false, requireMaxTokens: true });
    expect(JSON.stringify(plain.chatBody.messages)).not.toContain('cache_control');
    // Each marked message reads as its plain form does: a session lines them up.
    (marked.chatBody.messages as ContextMessage[]).forEach((message, index) =>
      expect(canonicalMessage(message)).toBe(
        canonicalMessage((plain.chatBody.messages as ContextMessage[])[index]!),
      ),
    );
  });

  it('marks a message of several texts as one part, which a session lines up with the same message unmarked', () => {
    const mark = { type: 'ephemeral' };
    const message = (marked: boolean) => ({
      role: 'user',
      content: [
        { type: 'text', text: '<system-reminder>Today is Monday.</system-reminder>' },
        { type: 'text', text: 'Fix the test.', ...(marked ? { cache_control: mark } : {}) },
      ],
    });
    const bridge = (marked: boolean) =>
      bridgeMessagesRequest(
        { model: 'anthropic/claude-sonnet-4.6', max_tokens: 100, messages: [message(marked)] },
        { native: false, cacheMarks: true, requireMaxTokens: true },
      ).chatBody.messages as ContextMessage[];
    const [marked] = bridge(true);
    const [unmarked] = bridge(false);
    expect(marked?.content).toEqual([
      {
        type: 'text',
        text: '<system-reminder>Today is Monday.</system-reminder>\nFix the test.',
        cache_control: mark,
      },
    ]);
    expect(unmarked?.content).toBe('<system-reminder>Today is Monday.</system-reminder>\nFix the test.');
    expect(canonicalMessage(marked as ContextMessage)).toBe(canonicalMessage(unmarked as ContextMessage));
  });

  it("keeps Claude Code's billing attribution for an anthropic upstream, whose key it is", () => {
    const system = [
      { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332.857; cc_entrypoint=sdk-cli;' },
      { type: 'text', text: 'You are a Claude agent.' },
    ];
    const [message] = bridged({ system, messages: [{ role: 'user', content: 'Hi' }] }, true).chatBody
      .messages as Array<{ content: string }>;
    expect(message?.content).toBe(
      'x-anthropic-billing-header: cc_version=2.1.332.857; cc_entrypoint=sdk-cli;\n\nYou are a Claude agent.',
    );
  });

  it.each([
    ['claude-sonnet-4-5', 'max_tokens'],
    ['llama-3.1-70b', 'max_tokens'],
    // OpenAI's reasoning models refuse max_tokens (Claude Code pointed at one through the gateway).
    ['gpt-5', 'max_completion_tokens'],
    ['o4-mini', 'max_completion_tokens'],
  ])('caps the answer of %s as %s', (model, field) => {
    const { chatBody } = bridged({ model, messages: [{ role: 'user', content: 'Hi' }] });
    expect(chatBody[field]).toBe(100);
    expect(Object.keys(chatBody).filter((key) => /^max_(?:completion_)?tokens$/.test(key))).toEqual([field]);
  });

  it('maps tools, tool_choice, sampling, stop sequences and the user id', () => {
    const { chatBody, dropped } = bridged({
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [
        { name: 'w', description: 'Weather.', input_schema: { type: 'object' } },
        { type: 'web_search_20250305', name: 'web_search' },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      temperature: 0.2,
      top_p: 0.9,
      top_k: 5,
      stop_sequences: ['END'],
      metadata: { user_id: 'u-1' },
      stream: true,
    });
    expect(chatBody).toMatchObject({
      tools: [
        {
          type: 'function',
          function: { name: 'w', description: 'Weather.', parameters: { type: 'object' } },
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      temperature: 0.2,
      top_p: 0.9,
      stop: ['END'],
      user: 'u-1',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 100,
    });
    expect(dropped).toEqual(['tools.1 (web_search_20250305)', 'top_k']);
    expect(chatBody).not.toHaveProperty('ctxgate_anthropic');
  });

  it("gives Anthropic's client tools (bash, the text editor, memory) as functions of their names; computer use is dropped", () => {
    const { chatBody, dropped } = bridged({
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [
        { type: 'bash_20250124', name: 'bash' },
        { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool', max_characters: 10_000 },
        { type: 'memory_20250818', name: 'memory' },
        { type: 'computer_20250124', name: 'computer', display_width_px: 1024, display_height_px: 768 },
      ],
      tool_choice: { type: 'tool', name: 'bash' },
    });
    const tools = chatBody.tools as Array<{ function: { name: string; parameters: { properties: object } } }>;
    expect(
      tools.map((tool) => [tool.function.name, Object.keys(tool.function.parameters.properties)]),
    ).toEqual([
      ['bash', ['command', 'restart']],
      [
        'str_replace_based_edit_tool',
        ['command', 'path', 'file_text', 'old_str', 'new_str', 'insert_line', 'view_range'],
      ],
      [
        'memory',
        [
          'command',
          'path',
          'file_text',
          'old_str',
          'new_str',
          'insert_line',
          'insert_text',
          'view_range',
          'old_path',
          'new_path',
        ],
      ],
    ]);
    expect(chatBody.tool_choice).toEqual({ type: 'function', function: { name: 'bash' } });
    expect(dropped).toEqual(['tools.3 (computer_20250124)']);
  });

  it("sends a chat provider's thinking back as reasoning_content, and drops and names Claude's own", () => {
    const assistant = (signature: string | undefined) => ({
      role: 'assistant',
      content: [
        {
          type: 'thinking',
          thinking: 'I should read it.',
          ...(signature === undefined ? {} : { signature }),
        },
        { type: 'tool_use', id: 't1', name: 'Read', input: {} },
      ],
    });
    const conversation = (signature: string | undefined) =>
      bridgeMessagesRequest(
        {
          model: 'deepseek-v4-pro',
          max_tokens: 100,
          messages: [
            { role: 'user', content: 'Read it.' },
            assistant(signature),
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] },
          ],
        },
        { native: false, requireMaxTokens: true },
      );
    // The gateway answers a chat provider's reasoning_content as a thinking block with an empty signature.
    for (const signature of ['', undefined]) {
      const { chatBody, dropped } = conversation(signature);
      expect((chatBody.messages as Array<Record<string, unknown>>)[1]).toMatchObject({
        role: 'assistant',
        reasoning_content: 'I should read it.',
        tool_calls: [{ id: 't1' }],
      });
      expect(dropped).toEqual([]);
    }
    const claude = conversation('EqQBCkYIBxgCKkDs…');
    expect((claude.chatBody.messages as Array<Record<string, unknown>>)[1]).not.toHaveProperty(
      'reasoning_content',
    );
    expect(claude.dropped).toEqual(['thinking']);
  });

  it("gives back, on each call, what its provider attached to it (Gemini's thought signature), from a whole answer and a stream", () => {
    const signature = { google: { thought_signature: 'CrICAdHtim827fQ==' } };
    const calls = [
      {
        id: 'function-call-1',
        type: 'function',
        function: { name: 'Read', arguments: '{"a":1}' },
        extra_content: signature,
      },
      { id: 'function-call-2', type: 'function', function: { name: 'Read', arguments: '{}' } },
    ];
    const whole = messageOf(
      {
        choices: [
          {
            message: { role: 'assistant', content: 'Reading.', tool_calls: calls },
            finish_reason: 'tool_calls',
          },
        ],
      },
      { id: 'msg_1', model: 'gemini-3-pro-preview' },
    ).content as Array<Record<string, unknown>>;
    // A thinking block of no text, its signature the gateway's, before the calls.
    expect(whole.map((block) => block.type)).toEqual(['text', 'thinking', 'tool_use', 'tool_use']);
    expect(whole[1]).toEqual({ type: 'thinking', thinking: '', signature: expect.any(String) });
    const translator = new MessagesStreamTranslator({ id: 'msg_2', model: 'gemini-3-pro-preview' }, 0);
    const streamed = blocksOfStream(
      translator.start() +
        translator.push(
          [
            { choices: [{ index: 0, delta: { content: 'Reading.' } }] },
            { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...calls[0] }] } }] },
            { choices: [{ index: 0, delta: { tool_calls: [{ index: 1, ...calls[1] }] } }] },
            { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
          ]
            .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
            .join('') + 'data: [DONE]\n\n',
        ),
    );
    expect(streamed).toEqual(whole);
    // As Claude Code sends the step back: its blocks as it got them, then the results.
    const { chatBody, dropped } = bridged({
      model: 'gemini-3-pro-preview',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'Read it.' },
        { role: 'assistant', content: streamed },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'function-call-1', content: 'one' },
            { type: 'tool_result', tool_use_id: 'function-call-2', content: 'two' },
          ],
        },
      ],
    });
    expect(dropped).toEqual([]);
    expect((chatBody.messages as Array<Record<string, unknown>>)[1]).toEqual({
      role: 'assistant',
      content: 'Reading.',
      tool_calls: calls,
    });
  });

  it("gives back OpenRouter's reasoning_details with the answer they came with, from a whole answer and a stream", () => {
    const details = [{ type: 'reasoning.text', text: 'Read it.', signature: 'EqQB', index: 0 }];
    const whole = messageOf(
      {
        choices: [
          {
            message: { role: 'assistant', content: 'Done.', reasoning_details: details },
            finish_reason: 'stop',
          },
        ],
      },
      { id: 'msg_1', model: 'anthropic/claude-sonnet-5' },
    ).content as Array<Record<string, unknown>>;
    // Before the text: a client takes the last block for the answer's text.
    expect(whole.map((block) => block.type)).toEqual(['thinking', 'text']);
    const translator = new MessagesStreamTranslator({ id: 'msg_2', model: 'anthropic/claude-sonnet-5' }, 0);
    const piece = (fields: Record<string, unknown>) => ({
      choices: [
        { index: 0, delta: { reasoning_details: [{ type: 'reasoning.text', index: 0, ...fields }] } },
      ],
    });
    const streamed = blocksOfStream(
      translator.start() +
        translator.push(
          [
            piece({ text: 'Read ' }),
            piece({ text: 'it.' }),
            piece({ signature: 'EqQB' }),
            { choices: [{ index: 0, delta: { content: 'Done.' } }] },
            { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
          ]
            .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
            .join('') + 'data: [DONE]\n\n',
        ),
    );
    // The same blocks, the carrier holding the same (its entries' fields in the order they came).
    expect(streamed.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(readCarrier(String(streamed[0]?.signature))).toEqual(readCarrier(String(whole[0]?.signature)));
    const { chatBody } = bridged({
      model: 'anthropic/claude-sonnet-5',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'Read it.' },
        { role: 'assistant', content: streamed },
        { role: 'user', content: 'Again.' },
      ],
    });
    expect((chatBody.messages as Array<Record<string, unknown>>)[1]).toEqual({
      role: 'assistant',
      content: 'Done.',
      reasoning_details: details,
    });
  });

  it('makes a PDF document a Chat Completions file part (its title its name), and drops one by URL', () => {
    const { chatBody, dropped } = bridged({
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'document',
              source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' },
              title: 'q3.pdf',
            },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBF' } },
            { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
            { type: 'text', text: 'Read them.' },
          ],
        },
      ],
    });
    expect((chatBody.messages as Array<Record<string, unknown>>)[0]?.content).toEqual([
      { type: 'file', file: { filename: 'q3.pdf', file_data: 'data:application/pdf;base64,JVBE' } },
      { type: 'file', file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBF' } },
      { type: 'text', text: 'Read them.' },
    ]);
    expect(dropped).toEqual(['document']);
  });

  it('leaves blank text blocks out of what goes to an anthropic upstream, and a message of only blank text beside tool results', () => {
    const use = { type: 'tool_use', id: 't1', name: 'w', input: {} };
    const { chatBody } = bridged(
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: ' ' },
              { type: 'text', text: 'Go.' },
            ],
          },
          { role: 'assistant', content: [{ type: 'text', text: '\n\n' }, use] },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 't1', content: 'ok' },
              { type: 'text', text: '' },
            ],
          },
        ],
      },
      true,
    );
    const messages = chatBody.messages as Array<Record<string, unknown>>;
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages.map((message) => (message.ctxgate_anthropic as { blocks: unknown[] }).blocks)).toEqual([
      [{ type: 'text', text: 'Go.' }],
      [use],
      [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }],
    ]);
  });

  it('keeps every original block for an anthropic upstream, and drops nothing', () => {
    const assistant = [
      { type: 'thinking', thinking: 'hmm', signature: 'sig-1' },
      { type: 'tool_use', id: 't1', name: 'w', input: {} },
    ];
    const { chatBody, dropped } = bridged(
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' } },
              { type: 'text', text: 'Read it.' },
            ],
          },
          { role: 'assistant', content: assistant },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 't1', content: 'ok', cache_control: { type: 'ephemeral' } },
            ],
          },
        ],
        thinking: { type: 'enabled', budget_tokens: 1_024 },
        top_k: 3,
      },
      true,
    );
    expect(dropped).toEqual([]);
    const messages = chatBody.messages as Array<Record<string, unknown>>;
    expect((messages[1]?.ctxgate_anthropic as { blocks: unknown }).blocks).toEqual(assistant);
    expect((messages[2]?.ctxgate_anthropic as { blocks: unknown[] }).blocks[0]).toMatchObject({
      cache_control: { type: 'ephemeral' },
    });
    expect(chatBody.ctxgate_anthropic).toEqual({
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      top_k: 3,
    });
  });
});

/**
 * What Claude Code 2.1.332 sends Claude Opus 5.5 (captured, texts shortened): a system message after the
 * first user message (Anthropic's mid-conversation system messages, Opus 4.8 and later), the effort in
 * `output_config`, and `context_management`.
 */
const claudeCodeOpus5 = {
  model: 'claude-opus-5-5',
  max_tokens: 128_000,
  system: [{ type: 'text', text: 'You are Claude Code.' }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'Tell me the code in notes.txt.' }] },
    { role: 'system', content: [{ type: 'text', text: '# Environment\nPrimary working directory: /work' }] },
  ],
  thinking: { type: 'adaptive', display: 'omitted' },
  context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
  output_config: { effort: 'medium' },
  stream: true,
};

describe('a Messages request of the newest Claude models (Claude Code on Opus 5.5)', () => {
  it('takes a system message in the conversation: a system message where it stands, its blocks kept natively', () => {
    const native = bridgeMessagesRequest(claudeCodeOpus5, { native: true, requireMaxTokens: true });
    const messages = native.chatBody.messages as Array<Record<string, unknown>>;
    expect(messages.map((message) => [message.role, message.content])).toEqual([
      ['system', 'You are Claude Code.'],
      ['user', 'Tell me the code in notes.txt.'],
      ['system', '# Environment\nPrimary working directory: /work'],
    ]);
    expect((messages[2]?.ctxgate_anthropic as { blocks: unknown }).blocks).toEqual(
      claudeCodeOpus5.messages[1]?.content,
    );
  });

  it('bridged, keeps it a system message where it stands (the service places it for a strict template)', () => {
    const chat = bridgeMessagesRequest(claudeCodeOpus5, { native: false, requireMaxTokens: true });
    expect(chat.chatBody.messages).toEqual([
      { role: 'system', content: 'You are Claude Code.' },
      { role: 'user', content: 'Tell me the code in notes.txt.' },
      { role: 'system', content: '# Environment\nPrimary working directory: /work' },
    ]);
  });

  it('carries every field it does not translate to an anthropic upstream, and names them for any other (the effort translated)', () => {
    const native = bridgeMessagesRequest(claudeCodeOpus5, { native: true, requireMaxTokens: true });
    expect(native.dropped).toEqual([]);
    expect(native.chatBody.ctxgate_anthropic).toEqual({
      thinking: claudeCodeOpus5.thinking,
      context_management: claudeCodeOpus5.context_management,
      output_config: claudeCodeOpus5.output_config,
    });
    const chat = bridgeMessagesRequest(claudeCodeOpus5, { native: false, requireMaxTokens: true });
    // The effort is chat's `reasoning_effort` (test/upstream/output-format.test.ts).
    expect(chat.dropped).toEqual(['thinking', 'context_management']);
    expect(chat.chatBody.reasoning_effort).toBe('medium');
    expect(chat.chatBody).not.toHaveProperty('ctxgate_anthropic');
    expect((chat.chatBody.messages as Array<{ role: string }>).map((message) => message.role)).toEqual([
      'system',
      'user',
      'system',
    ]);
  });
});

describe("a Messages request's structured output and effort, for a Chat Completions model", () => {
  const schema = { type: 'object', properties: { city: { type: 'string' } }, additionalProperties: false };
  const request = (fields: Record<string, unknown>) =>
    bridgeMessagesRequest(
      { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'Plan it.' }], ...fields },
      { native: false, requireMaxTokens: true },
    );

  it.each([
    [
      'a format and an effort, a task budget beside them',
      {
        output_config: {
          format: { type: 'json_schema', schema },
          effort: 'low',
          task_budget: { type: 'tokens', total: 9 },
        },
      },
      {
        response_format: { type: 'json_schema', json_schema: { name: 'response', schema } },
        reasoning_effort: 'low',
      },
      ['output_config.task_budget'],
    ],
    [
      "the beta's output_format",
      { output_format: { type: 'json_schema', schema } },
      { response_format: { type: 'json_schema', json_schema: { name: 'response', schema } } },
      [],
    ],
    [
      'a format of another type and an effort chat has no word for',
      { output_config: { format: { type: 'text' }, effort: 'ultra' } },
      {},
      ['output_config.format', 'output_config.effort'],
    ],
    ['an output_config that is not an object', { output_config: 'high' }, {}, ['output_config']],
    // Claude Code's thinking budgets ("think", "think hard", "ultrathink") as the effort a chat model takes.
    [
      'a thinking budget of 4,000',
      { thinking: { type: 'enabled', budget_tokens: 4_000 } },
      { reasoning_effort: 'low' },
      [],
    ],
    [
      'a thinking budget of 10,000',
      { thinking: { type: 'enabled', budget_tokens: 10_000 } },
      { reasoning_effort: 'medium' },
      [],
    ],
    [
      'a thinking budget of 31,999',
      { thinking: { type: 'enabled', budget_tokens: 31_999 } },
      { reasoning_effort: 'high' },
      [],
    ],
    [
      'a budget beside an effort: the effort',
      { thinking: { type: 'enabled', budget_tokens: 31_999 }, output_config: { effort: 'low' } },
      { reasoning_effort: 'low' },
      ['thinking'],
    ],
    ['adaptive thinking: the model’s own', { thinking: { type: 'adaptive' } }, {}, ['thinking']],
    ['thinking off', { thinking: { type: 'disabled' } }, {}, ['thinking']],
  ])('%s', (_case, fields, chatFields, dropped) => {
    const bridged = request(fields);
    expect(bridged.dropped).toEqual(dropped);
    expect({
      response_format: bridged.chatBody.response_format,
      reasoning_effort: bridged.chatBody.reasoning_effort,
    }).toEqual({ response_format: undefined, reasoning_effort: undefined, ...chatFields });
  });
});

describe('a Messages request the bridge refuses', () => {
  it.each([
    ['no max_tokens', { model: 'm', messages: [] }, 'max_tokens: Field required'],
    ['no model', { max_tokens: 10, messages: [] }, 'model: Field required'],
    [
      'a role the Messages API does not have',
      { model: 'm', max_tokens: 10, messages: [{ role: 'tool', content: 'x' }] },
      "messages.0.role: Input should be 'user', 'assistant' or 'system'",
    ],
    [
      'content that is neither string nor blocks',
      { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 5 }] },
      'messages.0.content: Input should be a valid string or list',
    ],
    [
      'a tool without input_schema',
      { model: 'm', max_tokens: 10, messages: [], tools: [{ name: 'w' }] },
      'tools.0.input_schema: Field required',
    ],
  ])('%s', (_name, body, message) => {
    let error: unknown;
    try {
      bridgeMessagesRequest(body, { native: false, requireMaxTokens: true });
    } catch (caught) {
      error = caught;
    }
    expect(isGatewayError(error) && error.status === 400 ? error.message : error).toBe(message);
  });
});

describe('the chat messages a Messages request becomes, counted before any is made', () => {
  const body = {
    model: 'm',
    max_tokens: 10,
    messages: [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 't1', name: 'w', input: {} },
          { type: 'tool_use', id: 't2', name: 'w', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'a' },
          { type: 'tool_result', tool_use_id: 't2', content: 'b' },
          { type: 'text', text: 'and?' },
        ],
      },
    ],
  };

  it('is each tool result one message and the rest of a user message one more: 5 here', () => {
    const { chatBody } = bridgeMessagesRequest(body, {
      native: false,
      requireMaxTokens: true,
      maxMessages: 5,
    });
    expect((chatBody.messages as unknown[]).length).toBe(5);
  });

  it('refuses one more than the limit, with the count, as chat completions words it', () => {
    let error: unknown;
    try {
      bridgeMessagesRequest(body, { native: false, requireMaxTokens: true, maxMessages: 4 });
    } catch (caught) {
      error = caught;
    }
    expect(isGatewayError(error) ? [error.status, error.message] : error).toEqual([
      400,
      "Invalid 'messages': array too long. Expected an array with at most 4 messages, but got 5.",
    ]);
  });
});

describe('endUserId', () => {
  it.each([
    ['a short id as it is', 'u-1', 'u-1'],
    ['64 characters as they are', 'a'.repeat(64), 'a'.repeat(64)],
    // sha256 of 65 a's, as `printf 'a%.0s' {1..65} | sha256sum` prints it.
    [
      'a longer one as its SHA-256 in hex',
      'a'.repeat(65),
      '635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0',
    ],
  ])('keeps %s', (_name, id, expected) => {
    expect(endUserId(id)).toBe(expected);
  });
});

/** Claude Code 2.1.332's tool search (captured): a ToolSearch it runs, its found tool deferred, a placeholder. */
const toolSearchRequest = {
  tools: [
    { name: 'Read', input_schema: { type: 'object', properties: {} } },
    { name: 'ToolSearch', input_schema: { type: 'object', properties: { query: { type: 'string' } } } },
    {
      name: 'DeferredToolPlaceholder',
      description: 'Reserved placeholder that keeps deferred tool loading active; never call this tool.',
      input_schema: { type: 'object', properties: {} },
      defer_loading: true,
    },
    {
      name: 'mcp__inv__lookup_7',
      input_schema: { type: 'object', properties: { id: { type: 'string' } } },
      defer_loading: true,
    },
  ],
  messages: [
    { role: 'user', content: 'Look up record X1 of kind 7.' },
    {
      role: 'assistant',
      content: [
        {
          type: 'tool_use',
          id: 'toolu_1',
          name: 'ToolSearch',
          input: { query: 'select:mcp__inv__lookup_7' },
        },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: [{ type: 'tool_reference', tool_name: 'mcp__inv__lookup_7' }],
        },
        { type: 'text', text: 'Tool loaded.' },
      ],
    },
  ],
};

describe('tool search (deferred tools, tool_reference)', () => {
  const toolNames = (chatBody: Record<string, unknown>) =>
    ((chatBody.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);

  it('counts natively only the deferred tools a message references, as Claude does, and sends them all', () => {
    const native = bridged(toolSearchRequest, true);
    expect(toolNames(native.chatBody)).toEqual(['Read', 'ToolSearch', 'mcp__inv__lookup_7']);
    expect(native.referencedTools).toEqual(['mcp__inv__lookup_7']);
    expect((native.chatBody.ctxgate_anthropic as { tools: unknown }).tools).toBe(toolSearchRequest.tools);
    // A server search's result references its tools too.
    const serverSearch = bridged(
      {
        ...toolSearchRequest,
        messages: [
          ...toolSearchRequest.messages.slice(0, 1),
          {
            role: 'assistant',
            content: [
              { type: 'server_tool_use', id: 'srvtoolu_1', name: 'tool_search_tool_regex', input: {} },
              {
                type: 'tool_search_tool_result',
                tool_use_id: 'srvtoolu_1',
                content: {
                  type: 'tool_search_tool_search_result',
                  tool_references: [{ type: 'tool_reference', tool_name: 'DeferredToolPlaceholder' }],
                },
              },
            ],
          },
        ],
      },
      true,
    );
    expect(toolNames(serverSearch.chatBody)).toEqual(['Read', 'ToolSearch', 'DeferredToolPlaceholder']);
    // No deferred tool: every tool counts, and nothing is read of the messages.
    const plain = bridged({ ...toolSearchRequest, tools: toolSearchRequest.tools.slice(0, 2) }, true);
    expect(toolNames(plain.chatBody)).toEqual(['Read', 'ToolSearch']);
    expect(plain.referencedTools).toBeUndefined();
  });

  it("gives a Chat Completions model the deferred tools a message references, as Claude shows them (not Claude Code's placeholder), and a tool_reference as the tool it names", () => {
    const chat = bridged(toolSearchRequest);
    expect(toolNames(chat.chatBody)).toEqual(['Read', 'ToolSearch', 'mcp__inv__lookup_7']);
    expect(chat.referencedTools).toEqual(['mcp__inv__lookup_7']);
    // Beside Anthropic's own search, which a Chat Completions model cannot run: every tool.
    const serverSearch = bridged({
      ...toolSearchRequest,
      tools: [
        ...toolSearchRequest.tools,
        { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' },
      ],
    });
    expect(toolNames(serverSearch.chatBody)).toEqual([
      'Read',
      'ToolSearch',
      'DeferredToolPlaceholder',
      'mcp__inv__lookup_7',
    ]);
    expect(serverSearch.referencedTools).toBeUndefined();
    expect((chat.chatBody.messages as Array<Record<string, unknown>>).slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'toolu_1', content: 'Tool found: mcp__inv__lookup_7' },
      { role: 'user', content: 'Tool loaded.' },
    ]);
  });
});

// Anthropic's search results (RAG with citations) and documents of content blocks are text: a Chat
// Completions model was shown nothing of them (the blocks dropped, "[search_result]" in a tool result),
// and natively their words went uncounted.
describe('search results and documents of content blocks', () => {
  const searchResult = {
    type: 'search_result',
    source: 'https://docs.example.com/leave',
    title: 'Leave policy',
    content: [
      { type: 'text', text: 'Staff get 30 days of leave.' },
      { type: 'text', text: 'Unused days carry over once.' },
    ],
    citations: { enabled: true },
  };
  const asText =
    'Leave policy (https://docs.example.com/leave)\nStaff get 30 days of leave.\nUnused days carry over once.';

  it('gives a Chat Completions model their text, in a user message and in a tool result', () => {
    const { chatBody, dropped } = bridged({
      messages: [
        { role: 'user', content: [searchResult, { type: 'text', text: 'How much leave?' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 't1', name: 'search', input: { q: 'leave' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [searchResult] }] },
        {
          role: 'user',
          content: [
            {
              type: 'document',
              title: 'Handbook',
              source: { type: 'content', content: [{ type: 'text', text: 'Offices close at six.' }] },
            },
            { type: 'text', text: 'And the hours?' },
          ],
        },
      ],
    });
    expect(dropped).toEqual([]);
    const messages = chatBody.messages as Array<Record<string, unknown>>;
    expect(messages[0]?.content).toBe(`${asText}\nHow much leave?`);
    expect(messages[2]).toEqual({ role: 'tool', tool_call_id: 't1', content: asText });
    expect(messages[3]?.content).toBe('Handbook\nOffices close at six.\nAnd the hours?');
  });

  it('counts their words natively, where they go to Claude as they came', () => {
    const native = bridged({ messages: [{ role: 'user', content: [searchResult] }] }, true);
    expect((native.chatBody.messages as Array<Record<string, unknown>>)[0]?.content).toBe(asText);
  });
});

describe("Claude's compaction blocks", () => {
  // Anthropic's compaction (server-side `compact_20260112`, or on demand): Claude answers a `compaction`
  // block holding a summary, the client sends its whole history back with it, and Claude reads the
  // conversation from the last such block on — every block before it is dropped.
  const summary = 'The user is planning a trip to Lisbon in May; the budget is 1,800 euros.';
  const history = [
    { role: 'user', content: 'I want to plan a trip.' },
    { role: 'assistant', content: 'Where to?' },
    { role: 'user', content: 'Lisbon, in May, on 1,800 euros.' },
    {
      role: 'assistant',
      content: [
        { type: 'compaction', content: summary },
        { type: 'text', text: 'Noted: Lisbon in May.' },
      ],
    },
    { role: 'user', content: 'Which district should I stay in?' },
  ];
  const originsOf = (result: ReturnType<typeof bridged>) => [...result.sources.origins];

  it('gives a Chat Completions model the summary in place of what it summarizes, and nothing before it', () => {
    const result = bridged({ messages: history });
    expect(result.chatBody.messages).toEqual([
      { role: 'user', content: `${compactedHistory}${summary}` },
      { role: 'assistant', content: 'Noted: Lisbon in May.' },
      { role: 'user', content: 'Which district should I stay in?' },
    ]);
    expect(result.dropped).toEqual([]);
    expect(originsOf(result)).toEqual([3, 3, 4]);
  });

  it('sends Claude the conversation it reads, from the block on, and counts the summary', () => {
    const result = bridged({ system: 'Be brief.', messages: history }, true);
    const messages = result.chatBody.messages as Array<Record<string, unknown>>;
    expect(messages.map((message) => message.role)).toEqual(['system', 'assistant', 'user']);
    expect(messages[1]?.content).toContain(summary);
    expect((messages[1]?.ctxgate_anthropic as { blocks: unknown[] }).blocks).toEqual(history[3]?.content);
    expect(originsOf(result)).toEqual([-1, 3, 4]);
  });

  it('reads from the last summary, and leaves the blocks before it in its message out', () => {
    const later = 'Lisbon in May, 1,800 euros; staying in Alfama.';
    const messages = [
      ...history,
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Alfama.' },
          { type: 'compaction', content: later },
        ],
      },
      { role: 'user', content: 'And the airport?' },
    ];
    expect(bridged({ messages }).chatBody.messages).toEqual([
      { role: 'user', content: `${compactedHistory}${later}` },
      { role: 'user', content: 'And the airport?' },
    ]);
    const native = bridged({ messages }, true).chatBody.messages as Array<Record<string, unknown>>;
    expect((native[0]?.ctxgate_anthropic as { blocks: unknown[] }).blocks).toEqual([
      { type: 'compaction', content: later },
    ]);
    expect(native).toHaveLength(2);
  });

  it('takes a compaction that failed (no summary: Claude ignores it) as nothing, and cuts nothing', () => {
    const messages = [
      { role: 'user', content: 'Hi' },
      {
        role: 'assistant',
        content: [
          { type: 'compaction', content: null },
          { type: 'text', text: 'Hello.' },
        ],
      },
      { role: 'user', content: 'Bye' },
    ];
    const result = bridged({ messages });
    expect(result.chatBody.messages).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'Bye' },
    ]);
    expect(result.dropped).toEqual([]);
    expect(bridged({ messages }, true).chatBody.messages).toHaveLength(3);
  });
});

describe('a compaction asked on demand (`compaction: {"type": "summarize"}`), bridged', () => {
  const messages = [
    { role: 'user', content: 'Plan a trip to Lisbon.' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'search', input: { q: 'Lisbon' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'Alfama, Baixa.' }] },
  ];
  const tools = [{ name: 'search', input_schema: { type: 'object' } }];

  it('asks the model for a summary of the conversation, whole and with no tool called, and names nothing dropped', () => {
    const result = bridged({ messages, tools, stream: true, compaction: { type: 'summarize' } });
    expect(result.compaction).toBe(true);
    expect(result.dropped).toEqual([]);
    const chat = result.chatBody.messages as Array<Record<string, unknown>>;
    expect(chat.at(-1)).toEqual({ role: 'user', content: compactionRequest });
    expect(chat).toHaveLength(4);
    expect(result.chatBody.tool_choice).toBe('none');
    expect(result.chatBody.stream).toBeUndefined();
    expect(result.stream).toBe(true);
  });

  it("asks with the client's instructions in place of the gateway's, when it gives some", () => {
    const chat = bridged({
      messages,
      compaction: { type: 'summarize', instructions: 'Keep every district.' },
    }).chatBody.messages as Array<Record<string, unknown>>;
    expect(chat.at(-1)).toEqual({ role: 'user', content: 'Keep every district.' });
    const blank = bridged({ messages, compaction: { type: 'summarize', instructions: '  ' } }).chatBody
      .messages as Array<Record<string, unknown>>;
    expect(blank.at(-1)).toEqual({ role: 'user', content: compactionRequest });
  });

  it('goes natively to Claude as it came, which compacts itself', () => {
    const result = bridged({ messages, compaction: { type: 'summarize' } }, true);
    expect(result.compaction).toBeUndefined();
    expect((result.chatBody.ctxgate_anthropic as Record<string, unknown>).compaction).toEqual({
      type: 'summarize',
    });
  });
});

// Mid-conversation tool changes (Anthropic's `inline-tools` and `mid-conversation-tool-changes` betas: the
// AI SDK's `toolChanges`, the Anthropic SDK tool runner's addTools): a system message of `tool_addition`
// and `tool_removal` blocks changes the tool set from that point on. Bridged, the blocks were dropped and
// named — a tool added so never reached the model, one surfaced by reference stayed held back — and
// natively a tool defined so was not counted.
describe('mid-conversation tool changes (tool_addition, tool_removal)', () => {
  const toolNames = (chatBody: Record<string, unknown>) =>
    ((chatBody.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);
  const weather = {
    name: 'get_weather',
    input_schema: { type: 'object', properties: { city: { type: 'string' } } },
  };
  const lookup = {
    name: 'lookup',
    description: 'Looks a record up.',
    input_schema: { type: 'object', properties: { id: { type: 'string' } } },
    defer_loading: true,
  };
  const changes = (...blocks: Array<Record<string, unknown>>) => ({ role: 'system', content: blocks });
  const add = (definition: Record<string, unknown>) => ({
    type: 'tool_addition',
    tool: { type: 'tool_definition', definition },
  });
  const surface = (name: string) => ({ type: 'tool_addition', tool: { type: 'tool_reference', name } });
  const remove = (name: string) => ({ type: 'tool_removal', tool: { type: 'tool_reference', name } });
  const forecast = { name: 'forecast', description: 'Five days ahead.', input_schema: { type: 'object' } };

  it('gives a Chat Completions model the tool set in effect at the end: added, surfaced and removed in order', () => {
    const result = bridged({
      tools: [weather, lookup],
      messages: [
        { role: 'user', content: 'Weather?' },
        changes(add(forecast), surface('lookup')),
        { role: 'assistant', content: 'Which city?' },
        { role: 'user', content: 'Oslo.' },
        changes(remove('get_weather')),
      ],
    });
    expect(toolNames(result.chatBody)).toEqual(['lookup', 'forecast']);
    expect((result.chatBody.tools as Array<{ function: Record<string, unknown> }>)[1]?.function).toEqual({
      name: 'forecast',
      description: 'Five days ahead.',
      parameters: { type: 'object' },
    });
    // The system messages that carried only changes are no messages; nothing is named dropped.
    expect((result.chatBody.messages as Array<{ role: string }>).map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'user',
    ]);
    expect(result.dropped).toEqual([]);
  });

  it('takes a definition by value under an existing name as the one in effect, and a removed tool added again', () => {
    const newer = {
      name: 'get_weather',
      description: 'Weather, in Celsius.',
      input_schema: { type: 'object' },
    };
    const result = bridged({
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather?' },
        changes(remove('get_weather')),
        { role: 'assistant', content: 'One moment.' },
        changes(add(newer)),
      ],
    });
    expect(result.chatBody.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather, in Celsius.',
          parameters: { type: 'object' },
        },
      },
    ]);
  });

  it('natively sends the changes as they came, counts a tool defined so, and counts a deferred tool once it is surfaced', () => {
    const result = bridged(
      {
        tools: [weather, lookup],
        messages: [{ role: 'user', content: 'Hi' }, changes(add(forecast), surface('lookup'))],
      },
      true,
    );
    const messages = result.chatBody.messages as Array<Record<string, unknown>>;
    expect((messages[1]?.ctxgate_anthropic as { blocks: unknown[] }).blocks).toEqual([
      add(forecast),
      surface('lookup'),
    ]);
    expect(String(messages[1]?.content)).toContain('Five days ahead.');
    expect(toolNames(result.chatBody)).toEqual(['get_weather', 'lookup']);
    expect((result.chatBody.ctxgate_anthropic as { tools: unknown[] }).tools).toEqual([weather, lookup]);
  });

  it("starts from a compaction's tool changes, those of the range it summarized", () => {
    const result = bridged({
      tools: [weather],
      messages: [
        { role: 'user', content: 'Hi' },
        changes(add(forecast)),
        {
          role: 'assistant',
          content: [
            { type: 'compaction', content: 'Said hi.', tool_changes: [remove('get_weather'), add(forecast)] },
          ],
        },
        { role: 'user', content: 'Forecast?' },
      ],
    });
    expect(toolNames(result.chatBody)).toEqual(['forecast']);
  });
});

// Anthropic's message Threads: the SDK's tool runner sends a turn's new messages only, on a conversation
// the server keeps. The gateway read them as the whole conversation — a tool result whose call it could not
// see was removed as an orphan, and a Chat Completions model was given the new messages alone.
describe('Threads (thread: create / continue)', () => {
  it('answers a continued Thread as Anthropic answers one it does not have: not found, thread_not_found', () => {
    let thrown: unknown;
    try {
      bridged({
        thread: { type: 'continue', previous_message_id: 'msg_1' },
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'Sunny' }] }],
      });
    } catch (error) {
      thrown = error;
    }
    expect(isGatewayError(thrown)).toBe(true);
    expect(thrown).toMatchObject({
      code: 'not_found',
      status: 404,
      param: 'thread.previous_message_id',
      details: { error_code: 'thread_not_found' },
    });
  });

  it('takes a Thread created as a whole conversation, sent without `thread` and naming nothing dropped', () => {
    const body = { thread: { type: 'create' }, messages: [{ role: 'user', content: 'Hi' }] };
    expect(bridged(body).dropped).toEqual([]);
    expect(bridged(body, true).chatBody.ctxgate_anthropic).toBeUndefined();
  });
});
