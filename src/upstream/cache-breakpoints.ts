// At most 4 cache breakpoints (`cache_control`) in a request, as Anthropic takes them ("A maximum of 4
// blocks with cache_control may be provided. Found 5."), natively and behind a Chat Completions endpoint
// that sends a content part's `cache_control` on to Claude (OpenRouter, LiteLLM). A session's stored
// messages keep the breakpoint each had when it was its client's newest, and a client that marks its
// newest message every turn (Claude Code, the SDKs, OpenRouter's docs) would carry one more each turn:
// refused from its fourth turn on. Past 4, the oldest breakpoints in the conversation are left out, so the
// newest (the longest cached prefixes) stay; the request's own, its tools' and its system prompt's are
// the client's and stay. Nor a 1-hour mark in the conversation after a 5-minute one, in the order Claude
// reads them (tools, system, messages): Claude Code asks the hour in its main loop and 5 minutes in a
// side question, and a stored message keeps the mark of its request; such a mark is made a 5-minute one.
// Blocks and messages changed are copies: no byte of a stored or client message is copied for them (the
// body writers compare by identity).

type Json = Record<string, unknown>;

/** The cache breakpoints Anthropic takes in one request. */
export const maxCacheBreakpoints = 4;

const isMarked = (block: unknown): boolean =>
  typeof block === 'object' && block !== null && (block as Json).cache_control != null;

/** Blocks marked with a cache breakpoint: each block's own, and a tool result's inner blocks'. */
function breakpointsIn(blocks: unknown): number {
  if (!Array.isArray(blocks)) return 0;
  let count = 0;
  for (const block of blocks as unknown[]) {
    if (isMarked(block)) count++;
    if ((block as Json | null)?.type === 'tool_result') count += breakpointsIn((block as Json).content);
  }
  return count;
}

function withoutMark(object: Json): Json {
  const copy = Object.assign({}, object);
  delete copy.cache_control;
  return copy;
}

/**
 * `blocks` with their breakpoints past the newest `keep.left` left out (a tool result's inner blocks
 * counted after the result's own, which ends them), `keep.left` lowered by those kept: the same array
 * when none is left out.
 */
function keptNewest(blocks: unknown[], keep: { left: number }): unknown[] {
  let out: unknown[] | undefined;
  for (let index = blocks.length - 1; index >= 0; index--) {
    const block = blocks[index] as Json;
    if (typeof block !== 'object' || block === null) continue;
    let kept = block;
    // A tool result's own breakpoint ends it: newer than its inner blocks'.
    if (isMarked(block)) {
      if (keep.left > 0) keep.left--;
      else kept = withoutMark(block);
    }
    if (block.type === 'tool_result' && Array.isArray(block.content)) {
      const inner = keptNewest(block.content as unknown[], keep);
      if (inner !== block.content) kept = Object.assign({}, kept, { content: inner });
    }
    if (kept === block) continue;
    out ??= blocks.slice();
    out[index] = kept;
  }
  return out ?? blocks;
}

/** The breakpoints of `messages`' blocks. */
function breakpointsOf(messages: ReadonlyArray<{ content?: unknown }>): number {
  let count = 0;
  for (const message of messages) count += breakpointsIn(message.content);
  return count;
}

/**
 * `messages` (of `count` breakpoints) with those past the newest `allowed` left out: the same array when
 * they are within.
 */
function newestBreakpoints<T extends { content?: unknown }>(
  messages: T[],
  count: number,
  allowed: number,
): T[] {
  if (count <= allowed) return messages;
  const keep = { left: Math.max(0, allowed) };
  const out = messages.slice();
  for (let at = out.length - 1; at >= 0; at--) {
    const message = out[at] as T;
    if (!Array.isArray(message.content)) continue;
    const content = keptNewest(message.content as unknown[], keep);
    if (content !== message.content) out[at] = Object.assign({}, message, { content });
  }
  return out;
}

/** Whether any of `blocks` (a tool result's inner blocks too) is marked for the 5-minute cache. */
function hasShortMark(blocks: unknown): boolean {
  if (!Array.isArray(blocks)) return false;
  return (blocks as unknown[]).some(
    (block) =>
      (isMarked(block) && !isLong(block)) ||
      ((block as Json | null)?.type === 'tool_result' && hasShortMark((block as Json).content)),
  );
}

const isLong = (block: unknown): boolean => ((block as Json).cache_control as Json | undefined)?.ttl === '1h';

/** A cache breakpoint's mark without `members` (without its `ttl`: a 5-minute one). */
function markWithout(mark: Json, members: ReadonlySet<string>): Json {
  const copy = Object.assign({}, mark);
  for (const member of members) delete copy[member];
  return copy;
}

const ttl: ReadonlySet<string> = new Set(['ttl']);

/**
 * `blocks` with `edit` applied to each, in order (a tool result's inner blocks before the result itself):
 * copies of those it changed, as keptNewest; the same array when it changed none.
 */
function eachBlock(blocks: unknown[], edit: (block: Json) => Json): unknown[] {
  let out: unknown[] | undefined;
  blocks.forEach((block, index) => {
    if (typeof block !== 'object' || block === null) return;
    let kept = block as Json;
    if (kept.type === 'tool_result' && Array.isArray(kept.content)) {
      const inner = eachBlock(kept.content as unknown[], edit);
      if (inner !== kept.content) kept = Object.assign({}, kept, { content: inner });
    }
    kept = edit(kept);
    if (kept === block) return;
    out ??= blocks.slice();
    out[index] = kept;
  });
  return out ?? blocks;
}

/** `blocks` with a 1-hour mark after a 5-minute one (`short.seen`) made a 5-minute one. */
function inTtlOrder(blocks: unknown[], short: { seen: boolean }): unknown[] {
  return eachBlock(blocks, (block) => {
    if (!isMarked(block)) return block;
    if (isLong(block) && short.seen)
      return Object.assign({}, block, { cache_control: markWithout(block.cache_control as Json, ttl) });
    if (!isLong(block)) short.seen = true;
    return block;
  });
}

/**
 * `messages` with no 1-hour mark after a 5-minute one, in the order Anthropic reads them (tools, system,
 * messages: "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"): a
 * session's stored message keeps the 1-hour mark of the request it came in, and Claude Code asks for the
 * 5-minute cache in some requests (a side question) and the hour in others. Such a mark is made a
 * 5-minute one. The same array when none is.
 */
function messagesInTtlOrder<T extends { content?: unknown }>(messages: T[], shortBefore: boolean): T[] {
  const short = { seen: shortBefore };
  let out: T[] | undefined;
  messages.forEach((message, at) => {
    if (!Array.isArray(message.content)) return;
    const content = inTtlOrder(message.content as unknown[], short);
    if (content === message.content) return;
    out ??= messages.slice();
    out[at] = Object.assign({}, message, { content });
  });
  return out ?? messages;
}

/**
 * A Messages request's `messages` within the breakpoints its own, its tools' and its system prompt's
 * leave; without the members of a breakpoint's mark an upstream refused (`refused`: its `ttl` — Claude on
 * Bedrock before its hour-long cache — or its `scope`, GitHub Copilot's), every mark without them (no
 * `ttl`: the 5-minute cache).
 */
export function withinCacheBreakpoints(body: Json, refused: ReadonlySet<string> = new Set()): void {
  const fixed = (isMarked(body) ? 1 : 0) + breakpointsIn(body.tools) + breakpointsIn(body.system);
  const inMessages = breakpointsOf(body.messages as Json[]);
  if (fixed + inMessages === 0) return;
  let kept = newestBreakpoints(body.messages as Json[], inMessages, maxCacheBreakpoints - fixed);
  if (refused.size > 0) {
    for (const key of ['tools', 'system'] as const)
      if (Array.isArray(body[key])) body[key] = withoutMembers(body[key] as unknown[], refused);
    if (hasMember(body, refused)) body.cache_control = markWithout(body.cache_control as Json, refused);
    kept = kept.map((message) => {
      if (!Array.isArray(message.content)) return message;
      const content = withoutMembers(message.content as unknown[], refused);
      return content === message.content ? message : Object.assign({}, message, { content });
    });
  }
  // The request's own mark (automatic caching) falls on its last block: after every other.
  body.messages = messagesInTtlOrder(kept, hasShortMark(body.tools) || hasShortMark(body.system));
}

/** Whether a block's mark has one of `members`. */
function hasMember(block: unknown, members: ReadonlySet<string>): boolean {
  const mark = (block as Json | null)?.cache_control as Json | undefined;
  return mark !== undefined && mark !== null && [...members].some((member) => mark[member] !== undefined);
}

/** `blocks` (a tool result's inner ones too) with their marks without `members`. */
function withoutMembers(blocks: unknown[], members: ReadonlySet<string>): unknown[] {
  return eachBlock(blocks, (block) =>
    hasMember(block, members)
      ? Object.assign({}, block, { cache_control: markWithout(block.cache_control as Json, members) })
      : block,
  );
}

/**
 * Chat messages whose content parts carry no more than 4 breakpoints, the leading system prompt's kept,
 * and no 1-hour one after a 5-minute one: the same array when they are so already.
 */
export function chatWithinCacheBreakpoints<T extends { role?: unknown; content?: unknown }>(
  messages: T[],
): T[] {
  const count = breakpointsOf(messages);
  if (count === 0) return messages;
  let leading = 0;
  while (leading < messages.length && isInstructions(messages[leading]?.role)) leading++;
  const system = messages.slice(0, leading);
  const rest = messages.slice(leading);
  const fixed = breakpointsOf(system);
  const capped =
    count <= maxCacheBreakpoints ? rest : newestBreakpoints(rest, count - fixed, maxCacheBreakpoints - fixed);
  const kept = messagesInTtlOrder(
    capped,
    system.some((message) => hasShortMark(message.content)),
  );
  return kept === rest ? messages : [...system, ...kept];
}

const isInstructions = (role: unknown): boolean => role === 'system' || role === 'developer';

/**
 * Chat messages with no cache breakpoint on any content part (field-fixes.ts cacheMarksField): a provider
 * that caches by itself or not at all. The same array when none has one.
 */
export function chatWithoutCacheMarks<T extends { content?: unknown }>(messages: T[]): T[] {
  if (breakpointsOf(messages) === 0) return messages;
  return messages.map((message) =>
    breakpointsIn(message.content) === 0
      ? message
      : Object.assign({}, message, {
          content: eachBlock(message.content as unknown[], (block) =>
            isMarked(block) ? withoutMark(block) : block,
          ),
        }),
  );
}
