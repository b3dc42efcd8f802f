import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../../src/context/types.js';
import {
  withImagesAtMost,
  withImagesNoLargerThan,
  withImagesWithin,
  withImagesWithinBytes,
  withFilesNamed,
  withToolMediaAsText,
  withToolMediaInUserMessages,
} from '../../src/upstream/tool-media.js';
import { png } from '../helpers/png.js';

const image = (name: string) => ({ type: 'image_url', image_url: { url: `data:image/png;base64,${name}` } });
const call = (id: string, name: string) => ({ id, type: 'function', function: { name, arguments: '{}' } });

const step: ContextMessage[] = [
  { role: 'user', content: 'Look at both.' },
  { role: 'assistant', content: null, tool_calls: [call('c1', 'Read'), call('c2', 'ls')] },
  { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'chart.png' }, image('AAAA')] },
  { role: 'tool', tool_call_id: 'c2', content: 'chart.png notes.txt' },
];

describe('withToolMediaInUserMessages', () => {
  it('returns the same messages when no tool result holds an image', () => {
    const messages: ContextMessage[] = [
      step[0] as ContextMessage,
      step[1] as ContextMessage,
      { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'only text' }] },
      step[3] as ContextMessage,
    ];
    expect(withToolMediaInUserMessages(messages, false)).toBe(messages);
  });

  it('moves the images to a user message after the whole run of results, each result keeping a line for them', () => {
    expect(withToolMediaInUserMessages(step, false)).toEqual([
      step[0],
      step[1],
      { role: 'tool', tool_call_id: 'c1', content: 'chart.png\n[image 1: shown in the next user message]' },
      step[3],
      {
        role: 'user',
        content: [{ type: 'text', text: 'Image 1, of the result of Read (call c1):' }, image('AAAA')],
      },
    ]);
  });

  it('moves a PDF a tool read (Claude Code’s Read) the same way, named by its file name', () => {
    const pdf = {
      type: 'file',
      file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBE' },
    };
    const read: ContextMessage[] = [
      step[0] as ContextMessage,
      { role: 'assistant', content: null, tool_calls: [call('c1', 'Read')] },
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: [{ type: 'text', text: 'PDF file read: /tmp/q3.pdf' }, pdf],
      },
    ];
    expect(withToolMediaInUserMessages(read, true).slice(2)).toEqual([
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: 'PDF file read: /tmp/q3.pdf\n[file document.pdf: shown in the next user message]',
      },
      { role: 'assistant', content: '[ctxgate] The tool results above hold files: they follow.' },
      {
        role: 'user',
        content: [{ type: 'text', text: 'File document.pdf, of the result of Read (call c1):' }, pdf],
      },
    ]);
    // To a model that refused images, it is named in its result.
    expect(withToolMediaAsText(read)[2]?.content).toBe('PDF file read: /tmp/q3.pdf\n[file document.pdf]');
  });

  it('numbers the images of several results, and puts them first in a user message that follows the run', () => {
    const messages: ContextMessage[] = [
      step[0] as ContextMessage,
      step[1] as ContextMessage,
      { role: 'tool', tool_call_id: 'c1', content: [image('AAAA'), image('BBBB')] },
      { role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: 'listing' }, image('CCCC')] },
      { role: 'user', content: 'Now compare them.' },
    ];
    expect(withToolMediaInUserMessages(messages, true)).toEqual([
      messages[0],
      messages[1],
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: '[image 1: shown in the next user message]\n[image 2: shown in the next user message]',
      },
      { role: 'tool', tool_call_id: 'c2', content: 'listing\n[image 3: shown in the next user message]' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Images 1–2, of the result of Read (call c1):' },
          image('AAAA'),
          image('BBBB'),
          { type: 'text', text: 'Image 3, of the result of ls (call c2):' },
          image('CCCC'),
          { type: 'text', text: 'Now compare them.' },
        ],
      },
    ]);
  });

  it('moves images and files only: another part of a result with one is named by its type, a result without one is left', () => {
    const audio = { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } };
    const messages: ContextMessage[] = [
      step[0] as ContextMessage,
      step[1] as ContextMessage,
      { role: 'tool', tool_call_id: 'c1', content: [audio, image('AAAA')] },
      { role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: 'a sound' }, audio] },
    ];
    const sent = withToolMediaInUserMessages(messages, false);
    expect(sent[2]).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: '[input_audio]\n[image 1: shown in the next user message]',
    });
    expect(sent[3]).toBe(messages[3]);
    expect(
      withToolMediaInUserMessages([messages[0], messages[1], messages[3]] as ContextMessage[], false),
    ).toEqual([messages[0], messages[1], messages[3]]);
  });

  it('puts an assistant message before the images for a template that makes user and assistant alternate', () => {
    const sent = withToolMediaInUserMessages(step, true);
    expect(sent.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'user',
    ]);
    expect(sent[4]).toEqual({
      role: 'assistant',
      content: '[ctxgate] The tool results above hold images: they follow.',
    });
  });

  it('writes the same messages for the same conversation (the next request repeats the prefix)', () => {
    const later = [...step, { role: 'assistant', content: 'A chart.' } as ContextMessage];
    const first = JSON.stringify(withToolMediaInUserMessages(step, false));
    expect(JSON.stringify(withToolMediaInUserMessages(later, false)).startsWith(first.slice(0, -1))).toBe(
      true,
    );
  });
});

describe('withToolMediaAsText', () => {
  it('names each image of a tool result in its text for a model that takes none, and leaves the rest', () => {
    expect(withToolMediaAsText(step)).toEqual([
      step[0],
      step[1],
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: 'chart.png\n[image: not shown, the model takes no images]',
      },
      step[3],
    ]);
    const plain = [step[0] as ContextMessage, step[3] as ContextMessage];
    expect(withToolMediaAsText(plain)).toBe(plain);
  });
});

describe('withImagesAtMost', () => {
  const shots: ContextMessage[] = [
    { role: 'user', content: [{ type: 'text', text: 'Compare these.' }, image('U1'), image('U2')] },
    { role: 'assistant', content: null, tool_calls: [call('c1', 'Read'), call('c2', 'Read')] },
    { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'a.png' }, image('T1')] },
    { role: 'tool', tool_call_id: 'c2', content: [image('T2')] },
    { role: 'assistant', content: null, tool_calls: [call('c3', 'Read')] },
    { role: 'tool', tool_call_id: 'c3', content: [image('T3')] },
  ];
  const left = { type: 'text', text: '[image: left out, the model takes at most 3 images in a request]' };

  it('returns the same messages when they hold no more images than fit', () => {
    expect(withImagesAtMost(shots, 5)).toBe(shots);
    expect(withImagesAtMost(shots, 6)).toBe(shots);
  });

  it('keeps the newest images and names each older one where it stood, in user and tool messages alike', () => {
    expect(withImagesAtMost(shots, 3)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Compare these.' }, left, left] },
      shots[1],
      shots[2],
      shots[3],
      shots[4],
      shots[5],
    ]);
    // Messages it does not change are the same objects (their bytes are copied).
    const capped = withImagesAtMost(shots, 3);
    expect(capped[2]).toBe(shots[2]);
    expect(capped[5]).toBe(shots[5]);
    // One fewer: the oldest tool result's image is named too, its text kept.
    expect(withImagesAtMost(shots, 2)[2]).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: [
        { type: 'text', text: 'a.png' },
        { type: 'text', text: '[image: left out, the model takes at most 2 images in a request]' },
      ],
    });
  });

  it('names every image when none fits, and leaves the caller’s messages as they were', () => {
    const before = JSON.stringify(shots);
    const capped = withImagesAtMost(shots, 0);
    expect(JSON.stringify(capped)).not.toContain('image_url');
    expect(JSON.stringify(capped).match(/left out, the model takes at most 0 images/g)).toHaveLength(5);
    expect(JSON.stringify(shots)).toBe(before);
  });

  it('then moves the images kept of tool results to a user message, as before', () => {
    const sent = withToolMediaInUserMessages(withImagesAtMost(shots, 2), false);
    const images = JSON.stringify(sent).match(/data:image\/png;base64,(\w+)/g);
    expect(images).toEqual(['data:image/png;base64,T2', 'data:image/png;base64,T3']);
  });
});

describe('withImagesWithin', () => {
  /** A PNG data URL of that size (its header is all that is read). */
  const sized = (width: number, height: number) => ({
    type: 'image_url',
    image_url: { url: `data:image/png;base64,${png(width, height, 0).toString('base64')}` },
  });
  /** `count` user messages of one image each, the ones at `large` 2400×1600, the others 100×80. */
  const pictures = (count: number, large: readonly number[]): ContextMessage[] =>
    Array.from({ length: count }, (_unused, index) => ({
      role: 'user',
      content: [
        { type: 'text', text: `Picture ${index + 1}.` },
        large.includes(index) ? sized(2400, 1600) : sized(100, 80),
      ],
    }));
  const kinds = (messages: ContextMessage[]) =>
    messages.map((message) => {
      const part = (message.content as Array<Record<string, unknown>>)[1];
      return part?.type === 'image_url' ? 'image' : String(part?.text);
    });
  const tooLarge =
    '[image: left out, larger than 2000 pixels, which the model takes only in a request of at most 20 images]';

  it('returns the same messages with 20 images or fewer, large or not', () => {
    const messages = pictures(20, [0, 5, 19]);
    expect(withImagesWithin(messages, 2000)).toBe(messages);
  });

  it('returns the same messages when none is larger than the size, however many', () => {
    const messages = pictures(30, []);
    expect(withImagesWithin(messages, 2000)).toBe(messages);
  });

  it('names each large image of a request of more than 20 when the newest is not large', () => {
    const sent = withImagesWithin(pictures(24, [1, 7]), 2000);
    expect(kinds(sent).filter((kind) => kind === 'image')).toHaveLength(22);
    expect(kinds(sent)[1]).toBe(tooLarge);
    expect(kinds(sent)[7]).toBe(tooLarge);
  });

  it('keeps the newest 20 images when the newest is large (the picture just read is kept whole)', () => {
    const sent = withImagesWithin(pictures(24, [1, 23]), 2000);
    expect(
      kinds(sent)
        .slice(4)
        .every((kind) => kind === 'image'),
    ).toBe(true);
    expect(kinds(sent).slice(0, 4)).toEqual(
      Array.from({ length: 4 }, () => '[image: left out, the model takes at most 20 images in a request]'),
    );
  });
});

describe('withImagesNoLargerThan', () => {
  const url = (width: number, height: number, seed: number) =>
    `data:image/png;base64,${png(width, height, seed).toString('base64')}`;
  const messages: ContextMessage[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Look.' },
        { type: 'image_url', image_url: { url: url(9000, 20, 0) } },
      ],
    },
    { role: 'assistant', content: 'Seen.' },
    { role: 'user', content: [{ type: 'image_url', image_url: { url: url(60, 40, 3) } }] },
  ];

  it('names each image with a side over the size, and keeps the others as they were', () => {
    const sent = withImagesNoLargerThan(messages, { maxSide: 8000 });
    expect(sent[0]?.content).toEqual([
      { type: 'text', text: 'Look.' },
      { type: 'text', text: '[image: left out, larger than the model takes (8000 pixels a side)]' },
    ]);
    expect(sent[2]).toBe(messages[2]);
  });

  it('names each image whose base64 data is longer than the bytes the model takes', () => {
    const small = (messages[0]?.content as Array<{ image_url?: { url: string } }>)[1]?.image_url?.url ?? '';
    const limit = small.length - 'data:image/png;base64,'.length;
    // The flat 9000×20 picture fits in `limit`; the 60×40 noise does not.
    const sent = withImagesNoLargerThan(messages, { maxBytes: limit });
    expect(sent[0]).toBe(messages[0]);
    expect(sent[2]?.content).toEqual([
      { type: 'text', text: `[image: left out, larger than the model takes (${limit} bytes)]` },
    ]);
  });

  it('returns the same messages when every image fits', () => {
    expect(withImagesNoLargerThan(messages, { maxSide: 9000, maxBytes: 10_000_000 })).toBe(messages);
  });
});

describe('withImagesWithinBytes', () => {
  /** An image of `bytes` characters of base64 (its data URL 22 more). */
  const weighing = (bytes: number, letter: string) => ({
    type: 'image_url',
    image_url: { url: `data:image/png;base64,${letter.repeat(bytes)}` },
  });
  const messages: ContextMessage[] = [
    {
      role: 'user',
      content: [{ type: 'text', text: 'Compare.' }, weighing(1_000, 'A'), weighing(1_000, 'B')],
    },
    { role: 'assistant', content: 'Compared.' },
    {
      role: 'user',
      content: [{ type: 'image_url', image_url: { url: 'https://example.com/c.png' } }, weighing(1_000, 'C')],
    },
  ];
  const named = {
    type: 'text',
    text: '[image: left out, the request would be larger than the provider takes]',
  };
  const letters = (sent: ContextMessage[]) =>
    JSON.stringify(sent).match(/base64,(\w)|example\.com|left out/g);

  it('returns the same messages when nothing is over', () => {
    expect(withImagesWithinBytes(messages, 0)).toBe(messages);
  });

  it('names the oldest images sent as data until they weigh the bytes over, a linked one kept', () => {
    // 500 bytes over: the oldest image (about 950 saved) is enough.
    expect(letters(withImagesWithinBytes(messages, 500))).toEqual([
      'left out',
      'base64,B',
      'example.com',
      'base64,C',
    ]);
    // 1,500 over: two, the link kept whatever it weighs.
    expect(letters(withImagesWithinBytes(messages, 1_500))).toEqual([
      'left out',
      'left out',
      'example.com',
      'base64,C',
    ]);
    expect(withImagesWithinBytes(messages, 1_500)[0]?.content).toEqual([
      { type: 'text', text: 'Compare.' },
      named,
      named,
    ]);
    // More than all of them weigh: every image sent as data, and only those.
    expect(letters(withImagesWithinBytes(messages, 1_000_000))).toEqual([
      'left out',
      'left out',
      'example.com',
      'left out',
    ]);
  });

  it('weighs a file sent as data like an image, and names it by its file name; one by id weighs nothing', () => {
    const withFiles: ContextMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'file', file: { file_id: 'file-abc' } },
          {
            type: 'file',
            file: { filename: 'q3.pdf', file_data: `data:application/pdf;base64,${'P'.repeat(2_000)}` },
          },
        ],
      },
      ...messages,
    ];
    const sent = withImagesWithinBytes(withFiles, 1_500);
    expect(sent[0]?.content).toEqual([
      { type: 'file', file: { file_id: 'file-abc' } },
      { type: 'text', text: '[file q3.pdf: left out, the request would be larger than the provider takes]' },
    ]);
    expect(sent.slice(1)).toEqual(messages);
  });

  it('leaves the messages it keeps whole as the same objects, and the caller’s as they were', () => {
    const before = JSON.stringify(messages);
    const sent = withImagesWithinBytes(messages, 500);
    expect(sent[1]).toBe(messages[1]);
    expect(sent[2]).toBe(messages[2]);
    expect(JSON.stringify(messages)).toBe(before);
  });
});

describe('withFilesNamed', () => {
  const text = (value: string) => ({ type: 'text', text: value });
  const messages: ContextMessage[] = [
    {
      role: 'user',
      content: [
        text('Read these.'),
        { type: 'file', file: { filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } },
        {
          type: 'file',
          file: {
            filename: 'notes.md',
            file_data: `data:text/markdown;base64,${Buffer.from('# Notes\nShip on Friday.').toString('base64')}`,
          },
        },
        { type: 'file', file: { file_id: 'file-abc123' } },
      ],
    },
    { role: 'assistant', content: 'Read.' },
  ];

  it('names each file where it stood, a text file given as its text, the other messages the same objects', () => {
    const named = withFilesNamed(messages);
    expect(named[0]?.content).toEqual([
      text('Read these.'),
      text('[file report.pdf: not shown, the model takes no files]'),
      text('[file notes.md]\n# Notes\nShip on Friday.'),
      text('[file file-abc123: not shown, the model takes no files]'),
    ]);
    expect(named[1]).toBe(messages[1]);
  });

  it('returns the same messages when none holds a file', () => {
    const plain = messages.slice(1);
    expect(withFilesNamed(plain)).toBe(plain);
  });
});
