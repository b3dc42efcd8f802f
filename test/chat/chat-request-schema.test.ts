// The request schema accepts what the OpenAI API accepts and keeps every field it does not know.
import { describe, expect, it } from 'vitest';
import { parseChatCompletionRequest } from '../../src/chat/chat-request-schema.js';

const accepted: Array<{ name: string; body: Record<string, unknown> }> = [
  { name: 'a plain user message', body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } },
  {
    name: 'system and developer messages',
    body: {
      model: 'o3',
      messages: [
        { role: 'developer', content: 'x' },
        { role: 'system', content: [{ type: 'text', text: 'y' }] },
        { role: 'user', content: 'z' },
      ],
    },
  },
  {
    name: 'image, audio and file parts',
    body: {
      model: 'gpt-4o',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
            { type: 'file', file: { file_id: 'file-abc' } },
          ],
        },
      ],
    },
  },
  {
    name: 'an assistant tool call with null content and its tool result',
    body: {
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'sunny' }] },
      ],
      tools: [{ type: 'function', function: { name: 'w', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'w' } },
      parallel_tool_calls: false,
    },
  },
  {
    name: 'an assistant refusal part',
    body: {
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] },
        { role: 'user', content: 'y' },
      ],
    },
  },
  {
    name: 'a legacy function message',
    body: { model: 'gpt-3.5-turbo', messages: [{ role: 'function', name: 'f', content: 'r' }] },
  },
  {
    name: 'response_format, stream_options and null optional fields',
    body: {
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_object' },
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: null,
      max_completion_tokens: 100,
      temperature: null,
    },
  },
  {
    name: 'vendor fields and vendor part types',
    body: {
      model: 'deepseek-reasoner',
      messages: [
        { role: 'user', content: [{ type: 'video_url', video_url: { url: 'x' } }] },
        { role: 'assistant', content: 'a', reasoning_content: 'thinking', prefix: true },
      ],
      top_k: 40,
      chat_template_kwargs: { enable_thinking: false },
    },
  },
];

describe('parseChatCompletionRequest', () => {
  it.each(accepted)('accepts $name and keeps every field', ({ body }) => {
    expect(parseChatCompletionRequest(structuredClone(body))).toEqual(body);
  });

  it.each(accepted)(
    "keeps the keys of $name in the client's order (what a prompt cache compares)",
    ({ body }) => {
      const reversed = (value: unknown): unknown =>
        Array.isArray(value)
          ? value.map(reversed)
          : typeof value === 'object' && value !== null
            ? Object.fromEntries(
                Object.entries(value)
                  .reverse()
                  .map(([key, inner]) => [key, reversed(inner)]),
              )
            : value;
      const written = reversed(body);
      expect(JSON.stringify(parseChatCompletionRequest(structuredClone(written)))).toBe(
        JSON.stringify(written),
      );
    },
  );
});
