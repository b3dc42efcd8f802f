// Tool names as providers take them (docs/budgeting.md#tool-names). MCP allows a dot in a tool's name
// (`calendar.read`, `github.create_issue`), and so do Gemini and the clients that pass MCP tools on;
// OpenAI and Anthropic refuse any name of other characters than letters, digits, `_` and `-`, or of
// more than 64 ("Invalid 'tools[48].name': string does not match pattern. Expected a string that matches
// the pattern '^[a-zA-Z0-9_-]+$'", openai/codex#8174; "tools.19.custom.name: String should match pattern",
// github/copilot-cli#2581), and Gemini one whose first character is not a letter or `_`: one such tool
// fails every request. On the wire such a name is written as one they all take, in the tools, the tool
// choice and the calls of the history; the answer's calls are given their names back before anything
// reads them (the client, a session, a bridge).

import { EventBoundaryBuffer, withEventsRewritten } from './sse.js';
import { StreamedToolNames } from './streamed-tool-names.js';
import { fnv1a, hashDigits } from './tool-call-ids.js';
import { isRecord } from './tool-call-shape.js';
import { withWholeBody, type UpstreamResponse } from './upstream.js';

const toolCallsKey = Buffer.from('"tool_calls"');

/**
 * A name OpenAI, Anthropic and Gemini all take: 1 to 64 letters, digits, `_` and `-`, the first a letter
 * or `_` (Gemini's "Invalid function name. Must start with a letter or an underscore": an MCP server named
 * with a digit first, 21st.dev's `21st_magic_component_builder`, SuperClaude-Org/SuperGemini_Framework#12).
 */
const portableName = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/** The names of a request's tools that go otherwise, both ways. */
export interface WireToolNames {
  /** The client's name → the name sent. */
  toWire: ReadonlyMap<string, string>;
  /** The name sent → the client's. */
  toClient: ReadonlyMap<string, string>;
}

/** The name of a chat tool definition (or tool choice, or call): a function's, or a custom tool's. */
export function toolNameOf(tool: unknown): string | undefined {
  if (!isRecord(tool)) return undefined;
  const named = isRecord(tool.function) ? tool.function : isRecord(tool.custom) ? tool.custom : undefined;
  return typeof named?.name === 'string' ? named.name : undefined;
}

/**
 * The wire names of the tools a chat request names — its tools', and those its history's calls (and
 * tool messages' `name`) give, which OpenAI refuses as well ("Invalid
 * 'messages[9].tool_calls[0].function.name': string does not match pattern", mcp-use/mcp-use#90) —
 * whose names some provider refuses: each disallowed character as `_` (and `_` before a first digit or
 * `-`), and, when that is too long or another tool's name, 55 characters and `_` and 8 of a hash of the
 * name. Undefined when every name is one they take (the usual request: nothing changes).
 */
export function wireToolNames(tools: unknown, messages: readonly unknown[] = []): WireToolNames | undefined {
  // Each name once: a loop calls its few tools many times.
  const named = new Set<string>();
  const add = (name: string | undefined): void => void (name !== undefined && named.add(name));
  if (Array.isArray(tools)) for (const tool of tools as unknown[]) add(toolNameOf(tool));
  for (const message of messages) {
    if (!isRecord(message)) continue;
    if (Array.isArray(message.tool_calls))
      for (const call of message.tool_calls as unknown[]) add(toolNameOf(call));
    if (message.role === 'tool' && typeof message.name === 'string') add(message.name);
  }
  const names = [...named];
  if (names.every((name) => portableName.test(name))) return undefined;
  const taken = new Set(names.filter((name) => portableName.test(name)));
  const toWire = new Map<string, string>();
  const toClient = new Map<string, string>();
  for (const name of names) {
    if (portableName.test(name) || toWire.has(name)) continue;
    let wire = name.replace(/[^A-Za-z0-9_-]/g, '_').replace(/^(?=[0-9-])/, '_') || 'tool';
    if (wire.length > 64 || taken.has(wire))
      wire = `${wire.slice(0, 55)}_${hashDigits(fnv1a(name, 0x811c9dc5), 4)}${hashDigits(fnv1a(name, 0x01000193), 4)}`;
    taken.add(wire);
    toWire.set(name, wire);
    toClient.set(wire, name);
  }
  return { toWire, toClient };
}

/** A chat tool definition, a tool choice or a call with its name written as `names` says: a copy, or itself. */
function renamed<T>(value: T, names: ReadonlyMap<string, string>): T {
  if (!isRecord(value)) return value;
  for (const key of ['function', 'custom'] as const) {
    const named = value[key];
    if (!isRecord(named) || typeof named.name !== 'string') continue;
    const name = names.get(named.name);
    if (name !== undefined)
      return Object.assign({}, value, { [key]: Object.assign({}, named, { name }) }) as T;
  }
  return value;
}

/**
 * A chat request's tools, tool choice, history calls and messages' `name` with the wire names (the
 * body's other members as they are); the messages that hold no such name are the same objects.
 */
export function withWireToolNames<R extends Record<string, unknown>, M extends { tool_calls?: unknown }>(
  request: R,
  messages: readonly M[],
  names: WireToolNames,
): { request: R; messages: M[] } {
  const out: Record<string, unknown> = Object.assign({}, request);
  if (Array.isArray(request.tools))
    out.tools = (request.tools as unknown[]).map((tool) => renamed(tool, names.toWire));
  if (request.tool_choice !== undefined) out.tool_choice = renamed(request.tool_choice, names.toWire);
  const sent = messages.map((message) => {
    const named = (message as { name?: unknown }).name;
    const name = typeof named === 'string' ? names.toWire.get(named) : undefined;
    const withName = name === undefined ? message : Object.assign({}, message, { name });
    const calls = message.tool_calls;
    if (!Array.isArray(calls)) return withName;
    const wire = calls.map((call) => renamed(call, names.toWire));
    return wire.every((call, at) => call === calls[at])
      ? withName
      : Object.assign({}, withName, { tool_calls: wire });
  });
  return { request: out as R, messages: sent };
}

/** The calls of a parsed completion or chunk given their client's names, in place; true when any was. */
function restoreNames(answer: unknown, names: ReadonlyMap<string, string>): boolean {
  if (!isRecord(answer) || !Array.isArray(answer.choices)) return false;
  let changed = false;
  for (const choice of answer.choices as unknown[]) {
    if (!isRecord(choice)) continue;
    for (const holder of [choice.message, choice.delta]) {
      if (!isRecord(holder) || !Array.isArray(holder.tool_calls)) continue;
      for (const call of holder.tool_calls as unknown[]) {
        const fn = isRecord(call) ? call.function : undefined;
        const name = isRecord(fn) && typeof fn.name === 'string' ? names.get(fn.name) : undefined;
        if (name === undefined || !isRecord(fn)) continue;
        fn.name = name;
        changed = true;
      }
    }
  }
  return changed;
}

/** What an answer's calls are read with (streamed-tool-names.ts). */
export interface AnswerToolNames {
  /** The names of the tools sent. */
  offered: ReadonlySet<string>;
  /** The client's name of each tool sent under another; undefined when none was. */
  toClient: ReadonlyMap<string, string> | undefined;
}

/**
 * What the answer to a chat request whose `tools` are as sent is read with; undefined when it sends no
 * tool and renamed none (no call of the answer needs it).
 */
export function answerToolNames(
  tools: unknown,
  toClient: ReadonlyMap<string, string> | undefined,
): AnswerToolNames | undefined {
  const offered = new Set<string>();
  if (Array.isArray(tools))
    for (const tool of tools as unknown[]) {
      const name = toolNameOf(tool);
      if (name !== undefined) offered.add(name);
    }
  return offered.size === 0 && toClient === undefined ? undefined : { offered, toClient };
}

/**
 * A chat answer (a whole completion or an event stream) whose calls are read as the client named its
 * tools, each streamed call opened with its whole name (streamed-tool-names.ts). Any other status, and
 * an answer that is not JSON, as it came.
 */
export function withAnswerToolNames(response: UpstreamResponse, names: AnswerToolNames): UpstreamResponse {
  if (response.statusCode >= 300) return response;
  const type = response.headers['content-type'];
  const streamed = (Array.isArray(type) ? type.join(',') : (type ?? '')).includes('text/event-stream');
  const { toClient } = names;
  if (!streamed) {
    if (toClient === undefined) return response;
    const restore = (body: Buffer): Buffer => {
      try {
        const completion: unknown = JSON.parse(body.toString('utf8'));
        return restoreNames(completion, toClient) ? Buffer.from(JSON.stringify(completion)) : body;
      } catch {
        return body;
      }
    };
    return withWholeBody(response, restore);
  }
  const fresh = (): StreamedToolNames => new StreamedToolNames(names.offered, toClient);
  // A look at the first events sees them as the client will: its whole events, read afresh each time a
  // call is among them. The look grows by a chunk at a time (up to 256 KB of an answer's reasoning before
  // a recall round knows its lead): what was seen to hold no call is not searched again.
  let callFree = 0;
  const view = (received: Buffer): Buffer => {
    const whole = new EventBoundaryBuffer().push(received) ?? Buffer.alloc(0);
    if (whole.indexOf(toolCallsKey, Math.max(0, callFree - toolCallsKey.length)) === -1) {
      callFree = whole.length;
      return whole;
    }
    return fresh().rewrite(whole);
  };
  return withEventsRewritten(response, fresh, async (enough, wait) =>
    view(await response.peek((received) => enough(view(received)), wait)),
  );
}
