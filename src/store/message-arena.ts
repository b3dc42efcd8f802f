// A session's stored messages' JSON bytes as a replica keeps them: written one after the other in one
// buffer with a comma between two, so that a run of them sent upstream as they were stored is copied
// as one view (see `SessionSnapshot.messageRuns`). Bytes are only ever added after the last written: a
// view handed out is never written over.

const comma = 0x2c;

/** The memory a session's message bytes are written in, and how much of it is written. */
export interface MessageArena {
  readonly memory: Buffer;
  used: number;
}

/** A session's messages' bytes: a view of each, and where each starts and ends in the arena's memory. */
export interface ArenaMessages {
  views: Buffer[];
  starts: number[];
  ends: number[];
}

/** Room to grow, as a share of what a new arena is made to hold: it is copied whole when it runs out. */
const roomShare = 0.25;
const minRoomBytes = 1024;

/**
 * `jsons`' UTF-8 bytes added after `messages` (those a session holds, which end at `end` in `arena`).
 * Written right after them while nothing was written there since and the memory has room; else all of
 * them are copied to new memory with room to grow, their views and offsets replaced. Returns the
 * memory they are in and where they end.
 */
export function appendMessageBytes(
  arena: MessageArena | undefined,
  end: number,
  messages: ArenaMessages,
  jsons: readonly string[],
): { arena: MessageArena; end: number } {
  let needed = 0;
  for (const json of jsons) needed += Buffer.byteLength(json) + 1;
  if (arena !== undefined && arena.used === end && end + needed <= arena.memory.length) {
    arena.used = writeJsons(arena.memory, end, jsons, messages);
    return { arena, end: arena.used };
  }
  let held = 0;
  for (const view of messages.views) held += view.length + 1;
  const memory = Buffer.allocUnsafe(Math.ceil((held + needed) * (1 + roomShare)) + minRoomBytes);
  let at = 0;
  messages.views.forEach((view, index) => {
    if (index > 0) memory[at++] = comma;
    messages.starts[index] = at;
    at += view.copy(memory, at);
    messages.ends[index] = at;
    messages.views[index] = memory.subarray(messages.starts[index], at);
  });
  const fresh = { memory, used: writeJsons(memory, at, jsons, messages) };
  return { arena: fresh, end: fresh.used };
}

function writeJsons(memory: Buffer, from: number, jsons: readonly string[], messages: ArenaMessages): number {
  let at = from;
  for (const json of jsons) {
    if (at > 0) memory[at++] = comma;
    const written = memory.write(json, at);
    messages.views.push(memory.subarray(at, at + written));
    messages.starts.push(at);
    at += written;
    messages.ends.push(at);
  }
  return at;
}
