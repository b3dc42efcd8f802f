// At most 4 cache breakpoints (`cache_control`) in a request, as Anthropic takes them ("A maximum of 4
// blocks with cache_control may be provided. Found 5."), natively and behind a Chat Completions endpoint
// that sends a content part's `cache_control` on to Claude (OpenRouter, LiteLLM). A session's stored
// messages keep the breakpoint each had when it was its client's newest, and a client that marks its
// newest message every turn (Claude Code, the SDKs, OpenRouter's docs) would carry one more each turn:
// refused from its fourth turn on. Past 4, the oldest breakpoints in the conversation are left out, so the
// newest (the longest cached prefixes) stay; the request's own, its tools' and its system prompt's are
// the client's and stay. Blocks and messages changed are copies: no byte of a stored or client message is
// copied for them (the body writers compare by identity).

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

/** `messages` with breakpoints past the newest `allowed` left out: the same array when they are within. */
function newestBreakpoints<T extends { content?: unknown }>(messages: T[], allowed: number): T[] {
  let count = 0;
  for (const message of messages) count += breakpointsIn(message.content);
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

/** A Messages request's `messages` within the breakpoints its own, its tools' and its system prompt's leave. */
export function withinCacheBreakpoints(body: Json): void {
  const fixed = (isMarked(body) ? 1 : 0) + breakpointsIn(body.tools) + breakpointsIn(body.system);
  body.messages = newestBreakpoints(body.messages as Json[], maxCacheBreakpoints - fixed);
}

/**
 * Chat messages whose content parts carry no more than 4 breakpoints, the leading system prompt's kept:
 * the same array when they are within.
 */
export function chatWithinCacheBreakpoints<T extends { role?: unknown; content?: unknown }>(
  messages: T[],
): T[] {
  let count = 0;
  for (const message of messages) count += breakpointsIn(message.content);
  if (count <= maxCacheBreakpoints) return messages;
  let leading = 0;
  while (leading < messages.length && isInstructions(messages[leading]?.role)) leading++;
  const system = messages.slice(0, leading);
  const rest = messages.slice(leading);
  let fixed = 0;
  for (const message of system) fixed += breakpointsIn(message.content);
  const kept = newestBreakpoints(rest, maxCacheBreakpoints - fixed);
  return kept === rest ? messages : [...system, ...kept];
}

const isInstructions = (role: unknown): boolean => role === 'system' || role === 'developer';
