// Tool calls a model wrote as text, given as calls (docs/budgeting.md#tool-calls-written-as-text). Servers
// that run a model without its tool parser — Ollama with Qwen2.5-Coder (ollama/ollama#13519), LM Studio with
// Qwen3.6 (lmstudio-ai/lmstudio-bug-tracker#2115), oMLX (jundot/omlx#2565), vLLM without
// `--enable-auto-tool-choice`, and hosted models now and then (DeepSeek V4, Kimi K2.6) — give the model's
// call in `content`, as its template writes it, and no `tool_calls`: every agent printed the call and never
// ran it (earendil-works/pi#6635, ollama/ollama-vscode#20). When the request offered tools, an answer
// without calls whose text holds calls in the forms text-call-forms.ts reads is given those calls, in
// OpenAI's shape, whole and streamed; otherwise the answer goes as it came. A stream's text is held only
// where a call may begin in it (at most a marker's length less one character); once one begins, every
// form's calls but a `<tool_call>` block's after the reasoning, and a text that opens as JSON, until the
// answer ends. Calls that end a reasoning given under its own field, with no text, are made too.

import { randomUUID } from 'node:crypto';
import { isEventStream, withEventsRewritten } from './sse.js';
import { reasoningOf, type ReasoningField } from './reasoning-field.js';
import { chatChunkOf, isRecord, saysFinish } from './tool-call-shape.js';
import { withWholeBody, type UpstreamResponse } from './upstream.js';

import {
  blockCall,
  blockStart,
  callsEnding,
  callClosings,
  callOpenings,
  callsInText,
  close,
  heldTail,
  longestReasoningEnd,
  markerIn,
  mistral,
  open,
  reasoningEnds,
  sectionStart,
  type OfferedTools,
  type TextCall,
} from './text-call-forms.js';

export type { OfferedTools } from './text-call-forms.js';

const toolCallsKey = Buffer.from('"tool_calls"');
const mistralKey = Buffer.from(mistral);
/** What `<` (and `=`, `>`, `?` and the digits) are escaped to in JSON, in either case: `\u003c`. */
const escapedLess = Buffer.from('\\u003');

/**
 * On a chat request the gateway sent with `tool_choice: "none"` in place of a choice left to the model
 * (field-fixes.ts autoToolChoiceField): its calls are read from its text all the same. A symbol, never
 * written out.
 */
export const callsReadFromText = Symbol('ctxgate.callsReadFromText');

/**
 * On a chat request sent without its tools, told in its prompt instead (tools-as-text.ts): those tools, whose
 * calls the model writes as text. A symbol, never written out.
 */
export const toolsToldAsText = Symbol('ctxgate.toolsToldAsText');

/** The tools a chat request offers the model, when it offers some and lets it call them; else undefined. */
export function offeredTools(request: Readonly<Record<string | symbol, unknown>>): OfferedTools | undefined {
  const told = request[toolsToldAsText];
  const given = Array.isArray(request.tools) ? request.tools : Array.isArray(told) ? told : undefined;
  if (given === undefined) return undefined;
  if (request.tool_choice === 'none' && request[callsReadFromText] !== true) return undefined;
  const tools = new Map<string, Record<string, unknown> | undefined>();
  for (const tool of given as unknown[]) {
    const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : undefined;
    if (fn !== undefined && typeof fn.name === 'string')
      tools.set(fn.name, isRecord(fn.parameters) ? fn.parameters : undefined);
  }
  return tools.size === 0 ? undefined : tools;
}

const callOf = (call: TextCall, index: number) => ({
  index,
  id: `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`,
  type: 'function',
  function: { name: call.name, arguments: call.arguments },
});

/** A whole completion's first choice given the calls its text holds; true when it changed. */
function callsOfCompletion(completion: unknown, tools: OfferedTools, jsonAlone: boolean): boolean {
  const choice =
    isRecord(completion) && Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  const message = isRecord(choice) ? choice.message : undefined;
  if (!isRecord(choice) || !isRecord(message)) return false;
  if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) return false;
  const content = message.content ?? '';
  if (typeof content !== 'string') return false;
  const found = callsInText(content, tools, jsonAlone) ?? callsEndingReasoning(message, content, tools);
  if (found === undefined) return false;
  if (found.text !== undefined) message.content = found.text === '' ? null : found.text;
  message.tool_calls = found.calls.map((call, index) => {
    const { index: _index, ...whole } = callOf(call, index);
    return whole;
  });
  choice.finish_reason = 'tool_calls';
  return true;
}

/**
 * The calls a whole answer of no text wrote at the end of its reasoning, which its server gave under its
 * reasoning field (vllm-project/vllm#39056: vLLM 0.19's Qwen3.5 parsers), the reasoning before them left
 * there; undefined when it holds none, or the answer said some text.
 */
function callsEndingReasoning(
  message: Record<string, unknown>,
  content: string,
  tools: OfferedTools,
): { calls: TextCall[]; text?: string } | undefined {
  const thought = content.trim() === '' ? reasoningOf(message) : undefined;
  const tail = thought === undefined ? undefined : callsEnding(thought.text, tools);
  if (thought === undefined || tail === undefined) return undefined;
  message[thought.field] = tail.text.trim();
  return { calls: tail.calls };
}

/**
 * A stream's reasoning (under the name its provider gives it), held from where a call's marker begins in
 * it — each marker one token of its model's, met whole — until the reasoning goes on past its calls or the
 * answer says text (a draft: all of it given back), or the answer ends (calls, when it ends in them).
 */
class HeldReasoning {
  private pieces: string[] = [];
  private field: ReasoningField = 'reasoning_content';
  /** Inside a block or section of what is held: its text is the call's, not more reasoning. */
  private inside = false;

  get holding(): boolean {
    return this.pieces.length > 0;
  }

  /** A delta's reasoning read: from a marker on, taken out of it and held; true when the delta changed. */
  take(delta: Record<string, unknown> | undefined): boolean {
    const thought = reasoningOf(delta);
    if (delta === undefined || thought === undefined) return false;
    const at = this.holding ? 0 : markerIn(thought.text);
    if (at === -1) return false;
    if (!this.holding) this.field = thought.field;
    const piece = thought.text.slice(at);
    this.pieces.push(piece);
    if (at === 0) delete delta[thought.field];
    else delta[thought.field] = thought.text.slice(0, at);
    // Reasoning said after the calls so far: they were drafts.
    if (this.reasoningAfterCalls(piece)) this.release(delta);
    return true;
  }

  /** Whether `piece` (held) goes on with reasoning past a closed block or section, its calls' state kept. */
  private reasoningAfterCalls(piece: string): boolean {
    const opened = Math.max(...callOpenings.map((marker) => piece.lastIndexOf(marker)));
    let closed = -1;
    for (const marker of callClosings) {
      const at = piece.lastIndexOf(marker);
      if (at !== -1 && at + marker.length > closed) closed = at + marker.length;
    }
    if (opened !== -1 && opened >= closed) this.inside = true;
    else if (closed !== -1) this.inside = false;
    const after = closed !== -1 && closed > opened ? piece.slice(closed) : opened === -1 ? piece : '';
    return !this.inside && after.trim() !== '';
  }

  /** All that is held, given back in `delta` after its own reasoning (what `take` left of it came before). */
  release(delta: Record<string, unknown>): void {
    const own = delta[this.field];
    delta[this.field] = (typeof own === 'string' ? own : '') + this.pieces.join('');
    this.pieces = [];
    this.inside = false;
  }

  /** At the answer's end: the calls the reasoning ends in, what of it is left given in `delta`. */
  callsAtEnd(delta: Record<string, unknown>, tools: OfferedTools): TextCall[] {
    const tail = callsEnding(this.pieces.join(''), tools);
    if (tail === undefined) {
      this.release(delta);
      return [];
    }
    this.pieces = [];
    this.inside = false;
    const own = delta[this.field];
    if (tail.text.trim() !== '') delta[this.field] = (typeof own === 'string' ? own : '') + tail.text;
    return tail.calls;
  }
}

/** One stream's first choice: its text passed on, held where a call may begin, its calls given as calls. */
class StreamTextCalls {
  private mode: 'text' | 'call' | 'json' = 'text';
  /** Text not yet given: held in `text` mode, a block's inside in `call`, all of it in `json`. */
  private held = '';
  private saidText = false;
  /** In `call` mode: the block's inside so far, in pieces, and its last characters (a marker may begin there). */
  private block: string[] = [];
  private blockTail = '';
  private calls = 0;
  /**
   * Whether the model's reasoning ended in the text given (a block after it is the answer's: a call when it
   * closes); until then a block is held with all that follows, read at the answer's end (callsInText).
   */
  private reasoningClosed = false;
  /** The given text's last characters: a reasoning's closing marker may begin there. */
  private givenTail = '';
  /** Whether `givenTail` holds a `<` or `[`, where a reasoning's closing marker may have begun. */
  private endMayBegin = false;
  /** The native calls of the answer: then its text is left as it is. */
  private native = false;
  /** The reasoning held from a call's marker in it (calls written there, vllm-project/vllm#39056). */
  private readonly thought = new HeldReasoning();
  /** The last chunk read: what an event of the stream's own is written like. */
  private lastChunk: Record<string, unknown> = {};

  constructor(
    private readonly tools: OfferedTools,
    private readonly jsonAlone: boolean,
  ) {}

  rewrite(events: Buffer): Buffer {
    if (this.native) return events;
    // Text that cannot begin a call, once the answer said some and holds nothing: as it came, unparsed.
    if (
      this.saidText &&
      this.mode === 'text' &&
      !this.thought.holding &&
      // A reasoning's closing marker may have begun in the text given: it is read whole.
      (this.reasoningClosed || !this.endMayBegin) &&
      this.held === '' &&
      this.calls === 0 &&
      events.indexOf(0x3c) === -1 &&
      // `<` as Go's encoding/json writes it (`\u003c`: Ollama's endpoint), or `\u003C`.
      events.indexOf(escapedLess) === -1 &&
      // Mistral's marker is one token of its model's: it comes whole in a delta.
      events.indexOf(mistralKey) === -1 &&
      events.indexOf(toolCallsKey) === -1
    )
      return events;
    const text = events.toString('utf8');
    if (
      !text.includes('"content"') &&
      !text.includes('"finish_reason"') &&
      this.held === '' &&
      // A reasoning that may hold a call's marker (`<tool_call>`, Kimi's `<|tool_calls_section_begin|>`).
      !this.thought.holding &&
      !text.includes('tool_call')
    )
      return events;
    let changed = false;
    const lines = text.split('\n');
    for (let position = 0; position < lines.length; position++) {
      const line = lines[position] as string;
      if (!line.startsWith('data:')) continue;
      // A stream that says [DONE] without a finish: what is held goes before it.
      const rewritten = /^data: ?\[DONE\]/.test(line) ? this.beforeDone(line) : this.rewriteLine(line);
      if (rewritten === undefined) continue;
      lines[position] = rewritten;
      changed = true;
    }
    return changed ? Buffer.from(lines.join('\n')) : events;
  }

  private beforeDone(line: string): string | undefined {
    const held = this.end();
    return held === undefined ? undefined : `${held.toString('utf8')}${line}`;
  }

  /** What is still held, when the stream ended without a finish: an event of its own. */
  end(): Buffer | undefined {
    const delta = this.flush() ?? (this.thought.holding ? {} : undefined);
    if (delta === undefined) return undefined;
    if (this.thought.holding) this.thought.release(delta);
    const { id, object, created, model } = this.lastChunk;
    const chunk = { id, object, created, model, choices: [{ index: 0, delta, finish_reason: null }] };
    return Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`);
  }

  private rewriteLine(line: string): string | undefined {
    const chunk = chatChunkOf(line.slice(5).trim());
    if (chunk === undefined) return undefined;
    const choice = chunk.choices.find((entry) => isRecord(entry) && (entry.index ?? 0) === 0);
    if (!isRecord(choice)) return undefined;
    this.lastChunk = chunk;
    const delta = isRecord(choice.delta) ? choice.delta : undefined;
    if (Array.isArray(delta?.tool_calls) && delta.tool_calls.length > 0) this.native = true;
    if (this.native) {
      const holding = this.thought.holding;
      if (holding && delta !== undefined) {
        this.thought.take(delta);
        this.thought.release(delta);
      }
      if (this.held === '' && this.mode === 'text')
        return holding ? `data: ${JSON.stringify(chunk)}${line.endsWith('\r') ? '\r' : ''}` : undefined;
      // Calls of its own after held text: the text goes as it came, before them.
      const before = this.raw();
      this.held = '';
      this.mode = 'text';
      if (delta !== undefined)
        delta.content = before + (typeof delta.content === 'string' ? delta.content : '');
      return `data: ${JSON.stringify(chunk)}${line.endsWith('\r') ? '\r' : ''}`;
    }
    const given = typeof delta?.content === 'string' ? delta.content : '';
    let thoughtChanged = this.thought.take(delta);
    // Text said after a call in the reasoning: that call was a draft.
    if (this.thought.holding && given.trim() !== '' && delta !== undefined) {
      this.thought.release(delta);
      thoughtChanged = true;
    }
    const out = this.take(given);
    const finishing = saysFinish(choice.finish_reason);
    const flushed = finishing ? this.flush() : undefined;
    const content = out.content + (typeof flushed?.content === 'string' ? flushed.content : '');
    const calls = [...out.calls, ...((flushed?.tool_calls as unknown[] | undefined) ?? [])];
    if (finishing && this.thought.holding) {
      const written = delta ?? (choice.delta = {});
      thoughtChanged = true;
      if (calls.length > 0 || this.calls > 0 || this.saidText || content.trim() !== '')
        this.thought.release(written);
      else
        for (const call of this.thought.callsAtEnd(written, this.tools))
          calls.push(callOf(call, this.calls++));
    }
    const callsFinish = finishing && this.calls > 0 && choice.finish_reason === 'stop';
    if (content === given && calls.length === 0 && !callsFinish && !thoughtChanged) return undefined;
    const written = delta ?? (choice.delta = {});
    if (content !== '' || typeof written.content === 'string') written.content = content;
    if (calls.length > 0) written.tool_calls = calls;
    if (callsFinish) choice.finish_reason = 'tool_calls';
    return `data: ${JSON.stringify(chunk)}${line.endsWith('\r') ? '\r' : ''}`;
  }

  /** A delta's text taken: what of it, and of what was held, goes now, and the calls that closed. */
  private take(given: string): { content: string; calls: unknown[] } {
    let content = '';
    const calls: unknown[] = [];
    let fresh = given;
    for (;;) {
      if (this.mode === 'json') {
        this.held += fresh;
        return { content, calls };
      }
      if (this.mode === 'call') {
        const closed = this.closeIn(fresh);
        if (closed === undefined) return { content, calls };
        this.mode = 'text';
        const call = blockCall(closed.inside, this.tools);
        if (call !== undefined && !this.reasoningClosed) {
          // A call before any reasoning ended may be a draft in it: all that follows held, read at the end.
          this.held = open + closed.inside + close;
          this.mode = 'json';
        } else if (call === undefined) content += open + closed.inside + close;
        else calls.push(callOf(call, this.calls++));
        fresh = closed.rest;
        continue;
      }
      this.held += fresh;
      fresh = '';
      const answerFrom = this.reasoningClosed ? undefined : this.answerStart();
      if (answerFrom !== undefined) {
        // The reasoning ended: the answer begins after it, read as an answer's start is.
        const said = this.held.slice(0, answerFrom);
        this.given(said);
        content += said;
        fresh = this.held.slice(answerFrom);
        this.held = '';
        this.reasoningClosed = true;
        if (this.calls === 0) this.saidText = false;
        continue;
      }
      if (!this.saidText && this.calls === 0) {
        const start = this.held.trimStart();
        if (start === '') return { content, calls };
        // GPT-OSS's markup from the answer's start: all of it held, read at its end.
        const harmony = start.startsWith('<|channel|>') || start.startsWith('<|start|>');
        if (harmony || (this.jsonAlone && (start.startsWith('{') || start.startsWith('```')))) {
          this.mode = 'json';
          return { content, calls };
        }
      }
      const section = sectionStart(this.held);
      if (section !== -1) {
        // Every other form's calls: all that follows held to the answer's end, read there (as a text that
        // opens as JSON) — the text after a section is said there too.
        content += this.held.slice(0, section);
        this.held = this.held.slice(section);
        this.mode = 'json';
        return { content, calls };
      }
      const begins = blockStart(this.held);
      if (begins !== -1) {
        content += this.held.slice(0, begins);
        fresh = this.held.slice(begins + open.length);
        this.held = '';
        this.mode = 'call';
        continue;
      }
      const keep = heldTail(this.held);
      const now = this.held.slice(0, this.held.length - keep);
      if (now.trim() !== '') this.saidText = true;
      this.given(now);
      content += now;
      this.held = this.held.slice(this.held.length - keep);
      return { content, calls };
    }
  }

  /** Text given as it came: its last characters kept, where a reasoning's closing marker may begin. */
  private given(now: string): void {
    if (this.reasoningClosed || now === '') return;
    this.givenTail = (this.givenTail + now).slice(-(longestReasoningEnd - 1));
    this.endMayBegin = this.givenTail.includes('<') || this.givenTail.includes('[');
  }

  /**
   * Where in the held text the model's reasoning ends (after its closing marker, which may have begun in
   * the text given), when it ends before any call's marker; else undefined.
   */
  private answerStart(): number | undefined {
    const probe = this.givenTail + this.held;
    const block = blockStart(probe);
    const section = sectionStart(probe);
    let end: number | undefined;
    for (const marker of reasoningEnds) {
      const at = probe.indexOf(marker);
      if (at === -1 || (block !== -1 && block < at) || (section !== -1 && section < at)) continue;
      const after = at + marker.length - this.givenTail.length;
      if (end === undefined || after < end) end = after;
    }
    return end;
  }

  /**
   * A block's next text read for its closing marker: the block's inside and what follows the marker when
   * it closes. Only the text that came and the end of the block before it are searched — a block of many
   * deltas costs its length — and the block is kept in pieces, joined once.
   */
  private closeIn(fresh: string): { inside: string; rest: string } | undefined {
    const probe = this.blockTail + fresh;
    const at = probe.indexOf(close);
    if (at === -1) {
      this.block.push(fresh);
      this.blockTail = probe.slice(-(close.length - 1));
      return undefined;
    }
    // Where the marker begins in `fresh`: below 0 when it began in the block's tail.
    const before = at - this.blockTail.length;
    const sofar = this.takeBlock();
    const inside = before >= 0 ? sofar + fresh.slice(0, before) : sofar.slice(0, sofar.length + before);
    return { inside, rest: fresh.slice(before + close.length) };
  }

  /** The block's inside so far, no longer held. */
  private takeBlock(): string {
    const inside = this.block.join('');
    this.block = [];
    this.blockTail = '';
    return inside;
  }

  /** All that is held, given at the answer's end: calls where it holds them, else as it came. */
  private flush(): Record<string, unknown> | undefined {
    if (this.held === '' && this.mode === 'text') return undefined;
    let content = '';
    const calls: unknown[] = [];
    if (this.mode === 'json') {
      const found = callsInText(this.held, this.tools, this.jsonAlone);
      if (found === undefined) content = this.held;
      else {
        content = found.text;
        for (const call of found.calls) calls.push(callOf(call, this.calls++));
      }
    } else if (this.mode === 'call') {
      // A block the model ended without its closing marker (its end of turn cut it).
      const inside = this.takeBlock();
      const call = blockCall(inside, this.tools);
      if (call === undefined) content = open + inside;
      else calls.push(callOf(call, this.calls++));
    } else content = this.held;
    this.held = '';
    this.mode = 'text';
    return calls.length > 0 ? { content, tool_calls: calls } : { content };
  }

  /** What is held, as the model wrote it, no longer held. */
  private raw(): string {
    const held = this.mode === 'call' ? open + this.takeBlock() : this.held;
    this.held = '';
    return held;
  }
}

/**
 * A chat answer (a whole completion or an event stream) to a request that offered `tools`, given the calls
 * its text holds. Any other status, and an answer that is not JSON, as it came. To a request that asked
 * for a JSON answer (`response_format`), a text of JSON alone is its answer, not a call: not held.
 */
export function withTextToolCalls(
  response: UpstreamResponse,
  tools: OfferedTools,
  request: Readonly<Record<string, unknown>> = {},
): UpstreamResponse {
  const format = isRecord(request.response_format) ? request.response_format.type : undefined;
  const jsonAlone = format !== 'json_object' && format !== 'json_schema';
  if (response.statusCode >= 300) return response;
  if (!isEventStream(response.headers))
    return withWholeBody(response, (body) => {
      if (body.indexOf('"content"') === -1) return body;
      try {
        const completion: unknown = JSON.parse(body.toString('utf8'));
        return callsOfCompletion(completion, tools, jsonAlone)
          ? Buffer.from(JSON.stringify(completion))
          : body;
      } catch {
        return body;
      }
    });
  return withEventsRewritten(response, () => new StreamTextCalls(tools, jsonAlone));
}
