// An answer's content as a string or as chunks (Mistral's reasoning models, gateways that send text
// parts): read as its text and its thinking; Mistral's form written back.
import { describe, expect, it } from 'vitest';
import { chunkTexts, thinkingChunks } from '../../src/upstream/content-chunks.js';

describe('chunkTexts', () => {
  it.each<[string, unknown, { text: string; thinking: string }]>([
    ['a string', 'Hello.', { text: 'Hello.', thinking: '' }],
    [
      "Magistral's thinking, then its text",
      [
        {
          type: 'thinking',
          thinking: [
            { type: 'text', text: 'Think ' },
            { type: 'text', text: 'twice.' },
          ],
        },
        { type: 'text', text: 'Hello.' },
      ],
      { text: 'Hello.', thinking: 'Think twice.' },
    ],
    [
      'text parts as some gateways stream them',
      [
        { type: 'output_text', text: 'A ' },
        { type: 'text', text: 'B' },
      ],
      { text: 'A B', thinking: '' },
    ],
    ['thinking as a plain string', [{ type: 'thinking', thinking: 'Hm.' }], { text: '', thinking: 'Hm.' }],
    [
      'parts of no text (an image, a reference), nulls',
      [{ type: 'image_url', image_url: 'x' }, null, 3],
      { text: '', thinking: '' },
    ],
    ['null', null, { text: '', thinking: '' }],
  ])('%s', (_name, content, expected) => {
    expect(chunkTexts(content)).toEqual(expected);
  });

  it("writes an answer that thought in Mistral's form, which reads back the same", () => {
    const chunks = thinkingChunks('Think.', 'Hello.');
    expect(chunks).toEqual([
      { type: 'thinking', thinking: [{ type: 'text', text: 'Think.' }] },
      { type: 'text', text: 'Hello.' },
    ]);
    expect(chunkTexts(chunks)).toEqual({ text: 'Hello.', thinking: 'Think.' });
    // A tool call's answer has no text: only its thinking.
    expect(thinkingChunks('Think.', '')).toHaveLength(1);
  });
});
