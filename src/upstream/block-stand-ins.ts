// Content blocks as an Anthropic-compatible upstream takes them (docs/budgeting.md#refused-fields). Not
// every endpoint that speaks Anthropic's Messages API takes every block Claude Code sends: Volcano
// Engine's Ark takes `text`, `thinking`, `image`, `tool_use` and `tool_result` only ("The parameter
// `messages.content.type` specified in the request are not valid: invalid value: `document`, supported
// values are: …"), and a PDF Claude Code read (farion1231/cc-switch#1519), a web search Claude ran before a
// switch (Wei-Shaw/sub2api#3677) or a tool search's result (anthropics/claude-code#30912) failed every later
// request of the conversation. Once refused, each block of another type is told as text where it stood.

import { isRecord } from './tool-call-shape.js';

type Json = Record<string, unknown>;

/**
 * The block types an upstream takes, where it said — in a message (`blocks`, field-fixes.ts
 * blockTypesField), in a tool result (`inResults`, resultBlockTypesField) — once it refused another.
 */
export interface BlockTypes {
  blocks?: ReadonlySet<string> | undefined;
  inResults?: ReadonlySet<string> | undefined;
}

/** A tool's call and its result, which the conversation is made of: kept whatever a list leaves out. */
const structural = new Set(['tool_use', 'tool_result']);

/** The texts of blocks (a search result's, a tool result's content), one per line. */
function textsOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) => (isRecord(block) && typeof block.text === 'string' ? block.text : ''))
    .filter((text) => text !== '')
    .join('\n');
}

/** A document's title, or what it is. */
const titleOf = (block: Json, otherwise: string): string =>
  typeof block.title === 'string' && block.title !== '' ? block.title : otherwise;

/** A document as text: a text document's text after its title, any other (a PDF) named. */
function documentText(block: Json): string {
  const source = isRecord(block.source) ? block.source : {};
  if (source.type === 'text' && typeof source.data === 'string')
    return `[document ${titleOf(block, 'text')}]\n${source.data}`;
  if (source.type === 'content') return `[document ${titleOf(block, 'text')}]\n${textsOf(source.content)}`;
  return `[document ${titleOf(block, 'PDF')}: not shown, the model takes no documents]`;
}

/** A web search's results as text: each page's title and address, or the search's error. */
function searchResultsText(block: Json): string {
  const content = block.content;
  if (!Array.isArray(content))
    return `[web search failed: ${String((isRecord(content) && content.error_code) || 'error')}]`;
  const pages = content
    .filter(isRecord)
    .map((page) => `- ${String(page.title ?? '')} (${String(page.url ?? '')})`);
  return pages.length === 0 ? '[web search: no results]' : `Web search results:\n${pages.join('\n')}`;
}

/** A server tool's output (code execution, a web fetch): what it printed, or its document's text. */
function toolOutputText(block: Json): string {
  const content = isRecord(block.content) ? block.content : {};
  if (content.type === 'web_fetch_result' && isRecord(content.content))
    return `[web fetch ${String(content.url ?? '')}]\n${documentText(content.content)}`;
  const printed = [content.stdout, content.stderr, content.content]
    .map((output) => (typeof output === 'string' ? output : ''))
    .filter((output) => output.trim() !== '')
    .join('\n');
  return printed === '' ? `[${String(block.type)}]` : `[${String(block.type)}]\n${printed}`;
}

/** A mid-conversation tool change (Claude Code's deferred tools, an MCP server's) by the tool it names. */
function toolChangeText(block: Json): string {
  const tool = isRecord(block.tool) ? block.tool : {};
  const definition = isRecord(tool.definition) ? tool.definition : {};
  const name = typeof tool.name === 'string' ? tool.name : definition.name;
  return `${block.type === 'tool_removal' ? 'Tool removed' : 'Tool added'}: ${String(name ?? 'a tool')}`;
}

/** A block of a type the upstream does not take, as text (undefined: left out — thinking). */
function standIn(block: Json): Json | undefined {
  const type = String(block.type);
  let text: string;
  if (type === 'thinking' || type === 'redacted_thinking') return undefined;
  else if (type === 'document') text = documentText(block);
  else if (type === 'image') text = '[image: not shown, the model takes no images]';
  else if (type === 'tool_reference') text = `Tool found: ${String(block.tool_name)}`;
  else if (type === 'search_result')
    text = `${String(block.title ?? '')} (${String(block.source ?? '')})\n${textsOf(block.content)}`;
  else if (type === 'web_search_tool_result') text = searchResultsText(block);
  else if (type === 'server_tool_use' || type === 'mcp_tool_use')
    text = `[${String(block.name)}: ${JSON.stringify(block.input ?? {})}]`;
  else if (type === 'mcp_tool_result') text = textsOf(block.content) || '[mcp_tool_result]';
  else if (type === 'compaction' && typeof block.content === 'string') text = block.content;
  else if (type === 'tool_addition' || type === 'tool_removal') text = toolChangeText(block);
  else if (type.endsWith('_tool_result')) text = toolOutputText(block);
  else text = `[${type}]`;
  return { type: 'text', text: text.trim() === '' ? `[${type}]` : text };
}

/**
 * `blocks` with each of a type the upstream does not take (not in `taken.blocks`; in a tool result, not in
 * `taken.inResults` either) told as text where it stood (thinking left out); a tool's call and its result
 * kept. The same array when every block is taken.
 */
export function blocksAsTaken(blocks: readonly Json[], taken: BlockTypes, inResult = false): Json[] {
  const takes = (type: string): boolean =>
    (!inResult && structural.has(type)) ||
    ((taken.blocks?.has(type) ?? true) && (!inResult || (taken.inResults?.has(type) ?? true)));
  let out: Json[] | undefined;
  blocks.forEach((block, index) => {
    let written: Json | undefined = block;
    if (!takes(String(block.type))) written = standIn(block);
    else if (block.type === 'tool_result' && Array.isArray(block.content) && block.content.every(isRecord)) {
      const content = blocksAsTaken(block.content as Json[], taken, true);
      if (content !== block.content) written = Object.assign({}, block, { content });
    }
    if (written === block && out === undefined) return;
    out ??= blocks.slice(0, index);
    if (written !== undefined) out.push(written);
  });
  return out ?? (blocks as Json[]);
}
