// Images in tool results, on the wire to a Chat Completions provider (docs/budgeting.md#images-in-tool-results).
// A tool message carries text only there: OpenAI answers 400 "Image URLs are only allowed for messages
// with role 'user', but this message with role 'tool' contains an image URL" (its newer models take the
// request and do not see the image), and the chat templates of open models render a tool message's text.
// Claude Code's Read of a PNG, Codex's view_image and an MCP screenshot put images there through the
// bridges. So the images go in a user message right after the run of tool results (every result of the
// step, so parallel results stay together), each result's text keeping a line in their place; a user
// message that follows the run already takes them first. A template that makes user and assistant
// messages alternate (Mistral's API refuses "Unexpected role 'user' after role 'tool'") gets a short
// assistant message between. A model that takes no images (it refused one: field-fixes.ts
// toolImagesField) gets each named in its result instead. Until then — fitted, masked, counted,
// stored — an image stays in its result: masked with it, dropped with it. And, on the wire to any
// provider, no more images, nor larger ones, than the model was found to take in a request (its refusal:
// field-fixes.ts imageCountField, imageSizeField): the newest kept, each other named where it stood
// (docs/budgeting.md#refused-fields). Deterministic, so the next request repeats the prefix. Pure.
import type { ContextMessage } from '../context/types.js';
import { dataUrlImageSize } from '../context/image-tokens.js';
import { base64DataUrl } from '../context/file-tokens.js';

type Part = Record<string, unknown>;

const isImage = (part: unknown): boolean => (part as Part | null)?.type === 'image_url';
const isFile = (part: unknown): boolean => (part as Part | null)?.type === 'file';

/**
 * A part's text in a tool message sent as text: a text part's, a file's name, or another part named by
 * its type.
 */
const textOf = (part: Part): string =>
  part.type === 'text'
    ? String(part.text ?? '')
    : isFile(part)
      ? `[file ${fileNameOf(part)}]`
      : `[${String(part.type ?? 'part')}]`;

/** A tool message holding an image or a file (Claude Code's Read of a PDF). */
function holdsMedia(message: ContextMessage): boolean {
  return (
    message.role === 'tool' &&
    Array.isArray(message.content) &&
    (message.content as unknown[]).some((part) => isImage(part) || isFile(part))
  );
}

/** The name of the tool each call of `message` called, by call id. */
function toolNames(message: ContextMessage | undefined): Map<string, string> {
  const names = new Map<string, string>();
  for (const call of message?.tool_calls ?? []) names.set(call.id, call.function?.name ?? 'tool');
  return names;
}

/**
 * The messages as a Chat Completions provider takes them: the images of tool results in a user message
 * after their run (`alternating`: an assistant message before it). The same array when no tool message
 * holds one.
 */
export function withToolMediaInUserMessages(
  messages: ContextMessage[],
  alternating: boolean,
): ContextMessage[] {
  if (!messages.some(holdsMedia)) return messages;
  const out: ContextMessage[] = [];
  let index = 0;
  while (index < messages.length) {
    const message = messages[index] as ContextMessage;
    if (message.role !== 'tool') {
      out.push(message);
      index++;
      continue;
    }
    // The first of a run of tool results: the calls they answer are the message before.
    const names = toolNames(messages[index - 1]);
    const media: Part[] = [];
    let images = 0;
    let files = 0;
    for (; index < messages.length && (messages[index] as ContextMessage).role === 'tool'; index++) {
      const result = messages[index] as ContextMessage;
      if (!holdsMedia(result)) {
        out.push(result);
        continue;
      }
      const parts = result.content as Part[];
      const id = result.tool_call_id ?? '';
      const first = images + 1;
      const texts: string[] = [];
      const moved: Part[] = [];
      const movedFiles: Part[] = [];
      const of = `of the result of ${names.get(id) ?? 'tool'} (call ${id})`;
      for (const part of parts) {
        if (isImage(part)) {
          images++;
          texts.push(`[image ${images}: shown in the next user message]`);
          moved.push(part);
        } else if (isFile(part)) {
          files++;
          texts.push(`[file ${fileNameOf(part)}: shown in the next user message]`);
          movedFiles.push({ type: 'text', text: `File ${fileNameOf(part)}, ${of}:` }, part);
        } else texts.push(textOf(part));
      }
      if (moved.length > 0) {
        const range = images === first ? `Image ${first}` : `Images ${first}–${images}`;
        media.push({ type: 'text', text: `${range}, ${of}:` }, ...moved);
      }
      media.push(...movedFiles);
      out.push(Object.assign({}, result, { content: texts.join('\n') }));
    }
    if (media.length === 0) continue;
    const next = messages[index];
    if (next?.role === 'user') {
      out.push(Object.assign({}, next, { content: [...media, ...partsOf(next.content)] }));
      index++;
      continue;
    }
    if (alternating) {
      const held = files === 0 ? 'images' : images === 0 ? 'files' : 'images and files';
      out.push({ role: 'assistant', content: `[ctxgate] The tool results above hold ${held}: they follow.` });
    }
    out.push({ role: 'user', content: media });
  }
  return out;
}

function partsOf(content: unknown): unknown[] {
  if (Array.isArray(content)) return content as unknown[];
  return typeof content === 'string' && content !== '' ? [{ type: 'text', text: content }] : [];
}

/** What stands for an image in a tool result sent to a model that takes none. */
const imageNotShown = '[image: not shown, the model takes no images]';

/**
 * The messages as a model that takes no images is sent them: each image of a tool result named in its
 * text. The same array when no tool message holds one.
 */
export function withToolMediaAsText(messages: ContextMessage[]): ContextMessage[] {
  if (!messages.some(holdsMedia)) return messages;
  return messages.map((message) =>
    holdsMedia(message)
      ? Object.assign({}, message, {
          content: (message.content as Part[])
            .map((part) => (isImage(part) ? imageNotShown : textOf(part)))
            .join('\n'),
        })
      : message,
  );
}

/**
 * The messages with at most `atMost` images (a provider's cap per request: field-fixes.ts
 * imageCountField): the newest kept, each older one — a user's or a tool result's — named where it stood,
 * `[image: left out, the model takes at most N images in a request]`. The messages that keep theirs are
 * the same objects, and the same array when no more than `atMost` are held.
 */
export function withImagesAtMost(messages: ContextMessage[], atMost: number): ContextMessage[] {
  let kept = 0;
  return withImagesLeftOut(
    messages,
    () => kept++ < atMost,
    `[image: left out, the model takes at most ${atMost} images in a request]`,
  );
}

/** Images a request may hold of any size the model takes (Anthropic's rule for many-image requests). */
const manyImages = 20;

/**
 * The messages as a model that takes images of at most `maxSide` pixels a side in a request of more than
 * 20 (field-fixes.ts imageSizeField) is sent them: each larger image named where it stood, or, when the
 * newest image is one (the picture just read), the newest 20 kept and each older one named. The same
 * array when no more than 20 images, or none larger, are held.
 */
export function withImagesWithin(messages: ContextMessage[], maxSide: number): ContextMessage[] {
  const sides: number[] = [];
  for (const message of messages)
    if (Array.isArray(message.content))
      for (const part of message.content as unknown[])
        if (isImage(part)) {
          const url = (part as { image_url?: { url?: unknown } }).image_url?.url;
          const size = typeof url === 'string' ? dataUrlImageSize(url) : undefined;
          sides.push(size === undefined ? 0 : Math.max(size.width, size.height));
        }
  if (sides.length <= manyImages || !sides.some((side) => side > maxSide)) return messages;
  if ((sides.at(-1) as number) > maxSide) return withImagesAtMost(messages, manyImages);
  // Asked from the newest image to the oldest.
  let index = sides.length;
  return withImagesLeftOut(
    messages,
    () => (sides[--index] as number) <= maxSide,
    `[image: left out, larger than ${maxSide} pixels, which the model takes only in a request of at most ${manyImages} images]`,
  );
}

/**
 * The messages as a model that takes no image larger than `maxSide` pixels a side or `maxBytes` of base64
 * (field-fixes.ts imageSideField, imageBytesField) is sent them: each larger one named where it stood.
 * The same array when every image fits.
 */
export function withImagesNoLargerThan(
  messages: ContextMessage[],
  limits: { maxSide?: number | undefined; maxBytes?: number | undefined },
): ContextMessage[] {
  const maxSide = limits.maxSide ?? Infinity;
  const maxBytes = limits.maxBytes ?? Infinity;
  const limit = [
    maxSide < Infinity ? `${maxSide} pixels a side` : '',
    maxBytes < Infinity ? `${maxBytes} bytes` : '',
  ]
    .filter((text) => text !== '')
    .join(', ');
  return withImagesLeftOut(
    messages,
    (part) => {
      const url = (part as { image_url?: { url?: unknown } }).image_url?.url;
      if (typeof url !== 'string') return true;
      const data = url.indexOf(';base64,');
      if (data !== -1 && url.length - data - ';base64,'.length > maxBytes) return false;
      const size = maxSide < Infinity ? dataUrlImageSize(url) : undefined;
      return size === undefined || Math.max(size.width, size.height) <= maxSide;
    },
    `[image: left out, larger than the model takes (${limit})]`,
  );
}

/** A file part's name: its file name, or its id. */
export function fileNameOf(part: Part): string {
  const file = (part?.file ?? {}) as { filename?: unknown; file_id?: unknown };
  if (typeof file.filename === 'string' && file.filename !== '') return file.filename;
  return typeof file.file_id === 'string' ? file.file_id : 'file';
}

/** A text file's text, from its data URL (`data:text/…;base64,…`); undefined for any other file. */
function textFileOf(part: Part): string | undefined {
  const data = (part.file as { file_data?: unknown } | undefined)?.file_data;
  if (typeof data !== 'string') return undefined;
  const url = base64DataUrl(data);
  return url?.mediaType.startsWith('text/') === true
    ? Buffer.from(url.base64, 'base64').toString('utf8')
    : undefined;
}

/**
 * The messages as a model that takes no file part is sent them (field-fixes.ts filesField): each file
 * named where it stood, `[file report.pdf: not shown, the model takes no files]`, a text file given as its
 * text after its name. The same array when no message holds one.
 */
export function withFilesNamed(messages: ContextMessage[]): ContextMessage[] {
  let out: ContextMessage[] | undefined;
  messages.forEach((message, index) => {
    if (!Array.isArray(message.content)) return;
    const parts = message.content as Part[];
    if (!parts.some((part) => part?.type === 'file')) return;
    out ??= messages.slice();
    out[index] = Object.assign({}, message, {
      content: parts.map((part) => {
        if (part?.type !== 'file') return part;
        const text = textFileOf(part);
        return {
          type: 'text',
          text:
            text === undefined
              ? `[file ${fileNameOf(part)}: not shown, the model takes no files]`
              : `[file ${fileNameOf(part)}]\n${text}`,
        };
      }),
    });
  });
  return out ?? messages;
}

/** What stands for an image left out for the body's size. */
const tooManyBytes = '[image: left out, the request would be larger than the provider takes]';

/** The bytes of a part sent as data: an image's data URL, a file's data; 0 for a link or an id. */
function dataBytesOf(part: unknown): number {
  const data = isImage(part)
    ? (part as { image_url?: { url?: unknown } }).image_url?.url
    : isFile(part)
      ? (part as { file?: { file_data?: unknown } }).file?.file_data
      : undefined;
  return typeof data === 'string' && (isFile(part) || data.startsWith('data:')) ? data.length : 0;
}

/**
 * The messages with their oldest images and files sent as data (base64) named where they stood, as many
 * as weigh `excessBytes` (a body over a provider's cap on its size: field-fixes.ts requestBytesField); an
 * image by link, or a file by id, weighs nothing. The same array when none is named.
 */
export function withImagesWithinBytes(messages: ContextMessage[], excessBytes: number): ContextMessage[] {
  const leftOut = new Set<unknown>();
  let saved = 0;
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as unknown[]) {
      if (saved >= excessBytes) break;
      const bytes = dataBytesOf(part);
      if (bytes === 0) continue;
      leftOut.add(part);
      saved += bytes - tooManyBytes.length;
    }
  }
  return leftOut.size === 0
    ? messages
    : withPartsLeftOut(
        messages,
        (part) => (isImage(part) || isFile(part)) && leftOut.has(part),
        (part) =>
          isFile(part)
            ? `[file ${fileNameOf(part as Part)}: left out, the request would be larger than the provider takes]`
            : tooManyBytes,
      );
}

/**
 * The messages with each image `keep` says no to named by `text` where it stood, asked from the newest
 * image to the oldest; the messages that keep theirs are the same objects, and the same array when all
 * are kept.
 */
function withImagesLeftOut(
  messages: ContextMessage[],
  keep: (image: unknown) => boolean,
  text: string,
): ContextMessage[] {
  const named = { type: 'text', text };
  return withPartsLeftOut(
    messages,
    (part) => isImage(part) && !keep(part),
    () => named,
  );
}

/**
 * The messages with each part `leaveOut` says yes to replaced by the text part `named` gives, asked from
 * the newest part to the oldest; the messages that keep theirs are the same objects, and the same array
 * when none is left out.
 */
function withPartsLeftOut(
  messages: ContextMessage[],
  leaveOut: (part: unknown) => boolean,
  named: (part: unknown) => unknown,
): ContextMessage[] {
  let out: ContextMessage[] | undefined;
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index] as ContextMessage;
    if (!Array.isArray(message.content)) continue;
    const parts = message.content as unknown[];
    let changed: unknown[] | undefined;
    for (let at = parts.length - 1; at >= 0; at--) {
      if (!leaveOut(parts[at])) continue;
      changed ??= parts.slice();
      const text = named(parts[at]);
      changed[at] = typeof text === 'string' ? { type: 'text', text } : text;
    }
    if (changed === undefined) continue;
    out ??= messages.slice();
    out[index] = Object.assign({}, message, { content: changed });
  }
  return out ?? messages;
}
