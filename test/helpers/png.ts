// Small PNG images for tests that send pictures (a screenshot a tool returns): a valid file of a given
// size, and the size read back from one — what a vision model would see of it.
import { crc32, deflateSync } from 'node:zlib';
import { seeded } from './text.js';

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const sum = Buffer.alloc(4);
  sum.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, sum]);
}

/** An RGB PNG of `width` × `height` pixels of seeded noise (`seed` 0: all black, a few KB however large). */
export function png(width: number, height: number, seed = 1): Buffer {
  const random = seed === 0 ? () => 0 : seeded(seed);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = Buffer.alloc(height * (1 + width * 3));
  for (let row = 0; row < height; row++)
    for (let byte = 1; byte <= width * 3; byte++)
      rows[row * (1 + width * 3) + byte] = Math.floor(random() * 256);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The size of the PNG in a data URL (`data:image/png;base64,…`); undefined for anything else. */
export function pngSizeOf(url: string): { width: number; height: number } | undefined {
  const data = /^data:image\/png;base64,(.*)$/s.exec(url)?.[1];
  if (data === undefined) return undefined;
  const bytes = Buffer.from(data.slice(0, 64), 'base64');
  if (bytes.length < 24 || bytes.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

interface Message {
  role: string;
  content?: unknown;
  tool_calls?: unknown[] | null | undefined;
}

/**
 * The size of the first PNG a vision model was shown since its last tool call, as Chat Completions
 * providers show images: in a user message (an image in a tool message is refused, or not seen).
 */
export function pictureSeenSinceLastCall(
  messages: readonly Message[],
): { width: number; height: number } | undefined {
  const called = messages.findLastIndex(
    (message) => message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0,
  );
  return messages
    .slice(called + 1)
    .filter((message) => message.role === 'user' && Array.isArray(message.content))
    .flatMap((message) => message.content as Array<{ type?: unknown; image_url?: { url?: unknown } }>)
    .map((part) => (part.type === 'image_url' ? pngSizeOf(String(part.image_url?.url)) : undefined))
    .find((size) => size !== undefined);
}
