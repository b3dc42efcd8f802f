// Tool calls a model wrote as text (docs/budgeting.md#tool-calls-written-as-text). Servers that run a model
// without its tool parser — Ollama with Qwen2.5-Coder (ollama/ollama#13519), LM Studio with Qwen3.6
// (lmstudio-ai/lmstudio-bug-tracker#2115), oMLX (jundot/omlx#2565), vLLM without
// `--enable-auto-tool-choice` — give the model's call in `content`, as its template writes it, and no
// `tool_calls`: every agent printed the call and never ran it (earendil-works/pi#6635,
// ollama/ollama-vscode#20). When the request offered tools, an answer without calls whose text holds
// calls in the forms such models write — Hermes' and Qwen's `<tool_call>{"name": …, "arguments": …}</tool_call>`,
// Qwen3-Coder's `<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`,
// GLM's `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>`, Mistral's
// `[TOOL_CALLS]NAME[ARGS]{…}` and `[TOOL_CALLS] [{…}]`, GPT-OSS's Harmony markup (`… to=functions.NAME
// <|constrain|>json<|message|>{…}<|call|>`), Kimi K2's `<|tool_calls_section_begin|>…`, MiniMax-M2's
// `<minimax:tool_call><invoke name=…>…`, DeepSeek's DSML (`<｜DSML｜tool_calls>…`) and V4's
// `<tool_call id=… name=…>{…}`, or a text that is nothing but `{"name": …, "arguments": …}` — is
// given those calls, in OpenAI's shape, whole and streamed: each naming one of the offered tools, with
// arguments that are a JSON object; otherwise the answer goes as it came. A stream's text is held only where
// a call may begin in it (at most a marker's length less one character), Mistral's, Kimi's and MiniMax's
// calls and a text that opens as JSON until it ends. A call drafted in the model's reasoning left in the
// text (before its `</think>`) is not made; calls that end a reasoning given under its own field are made.

import { randomUUID } from 'node:crypto';
import { isEventStream, withEventsRewritten } from './sse.js';
import { reasoningOf, type ReasoningField } from './reasoning-field.js';
import { chatChunkOf, isRecord, saysFinish } from './tool-call-shape.js';
import { withWholeBody, type UpstreamResponse } from './upstream.js';

/** The offered tools, by name: each one's parameters' schema (what a Qwen3-Coder value is read as). */
export type OfferedTools = ReadonlyMap<string, Record<string, unknown> | undefined>;

interface TextCall {
  name: string;
  /** JSON text of an object. */
  arguments: string;
}

/** A block's opening, then `>` or its attributes (DeepSeek V4's `<tool_call id="…" name="…">`). */
const open = '<tool_call';
/** Mistral's: its calls follow it to the text's end. */
const mistral = '[TOOL_CALLS]';
const toolCallsKey = Buffer.from('"tool_calls"');
const mistralKey = Buffer.from(mistral);
const close = '</tool_call>';

/** The tools a chat request offers the model, when it offers some and lets it call them; else undefined. */
export function offeredTools(request: Readonly<Record<string, unknown>>): OfferedTools | undefined {
  if (!Array.isArray(request.tools) || request.tool_choice === 'none') return undefined;
  const tools = new Map<string, Record<string, unknown> | undefined>();
  for (const tool of request.tools as unknown[]) {
    const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : undefined;
    if (fn !== undefined && typeof fn.name === 'string')
      tools.set(fn.name, isRecord(fn.parameters) ? fn.parameters : undefined);
  }
  return tools.size === 0 ? undefined : tools;
}

/**
 * Where the first block in `text` from `from` opens: `<tool_call` then `>` or a space (not `<tool_calls>`);
 * -1 when none does (nor may yet: an opening at the text's end is not one until the next text says).
 */
function blockStart(text: string, from = 0): number {
  for (let at = text.indexOf(open, from); at !== -1; at = text.indexOf(open, at + 1)) {
    const next = text[at + open.length];
    if (next === '>' || next === ' ' || next === '\n' || next === '\t') return at;
  }
  return -1;
}

/**
 * One block's inside (after `<tool_call`, up to its closing marker) as a call of an offered tool; undefined
 * when it is not one. A block of attributes names its tool and holds the call's arguments (DeepSeek V4 on
 * its own API, now and then: felinics/Memoh#435); any other opens with `>`.
 */
function blockCall(block: string, tools: OfferedTools): TextCall | undefined {
  const headEnd = block.indexOf('>');
  if (headEnd === -1) return undefined;
  if (headEnd > 0) return attributedCall(block.slice(0, headEnd), block.slice(headEnd + 1), tools);
  const trimmed = block.slice(1).trim();
  if (trimmed.startsWith('<function=')) return xmlCall(trimmed, tools);
  return trimmed.startsWith('{') ? jsonCall(trimmed, tools) : keyValueCall(trimmed, tools);
}

/** A block of attributes: the tool its `name` names, called with the JSON object inside. */
function attributedCall(attributes: string, inside: string, tools: OfferedTools): TextCall | undefined {
  const name = attributeOf(attributes, 'name');
  const args = parsedJson(unfenced(inside.trim()));
  return name !== undefined && tools.has(name) && isRecord(args)
    ? { name, arguments: JSON.stringify(args) }
    : undefined;
}

/** A quoted attribute's value in `attributes` (`key="…"` or `key='…'`, after a space); read with indexOf. */
function attributeOf(attributes: string, key: string): string | undefined {
  for (let at = attributes.indexOf(`${key}=`); at !== -1; at = attributes.indexOf(`${key}=`, at + 1)) {
    const quote = attributes[at + key.length + 1];
    if (!/\s/.test(attributes[at - 1] ?? '') || (quote !== '"' && quote !== "'")) continue;
    const end = attributes.indexOf(quote, at + key.length + 2);
    return end === -1 ? undefined : attributes.slice(at + key.length + 2, end);
  }
  return undefined;
}

/**
 * GLM-4.5's and later's `NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>…` (whitespace between),
 * of an offered tool (lmstudio-ai/lmstudio-bug-tracker#829); each value as its schema's type says.
 */
function keyValueCall(text: string, tools: OfferedTools): TextCall | undefined {
  const first = text.indexOf('<arg_key>');
  const name = (first === -1 ? text : text.slice(0, first)).trim();
  if (!tools.has(name)) return undefined;
  const properties = tools.get(name)?.properties;
  const args: Record<string, unknown> = {};
  let end = first === -1 ? text.length : first;
  for (let key = first; key !== -1; key = text.indexOf('<arg_key>', end)) {
    if (text.slice(end, key).trim() !== '') return undefined;
    const keyEnd = text.indexOf('</arg_key>', key);
    const value = keyEnd === -1 ? -1 : text.indexOf('<arg_value>', keyEnd);
    const valueEnd = value === -1 ? -1 : text.indexOf('</arg_value>', value);
    if (valueEnd === -1 || text.slice(keyEnd + '</arg_key>'.length, value).trim() !== '') return undefined;
    const argument = text.slice(key + '<arg_key>'.length, keyEnd).trim();
    args[argument] = valueOf(text.slice(value + '<arg_value>'.length, valueEnd), properties, argument);
    end = valueEnd + '</arg_value>'.length;
  }
  return text.slice(end).trim() === '' ? { name, arguments: JSON.stringify(args) } : undefined;
}

/** `{"name": …, "arguments": {…}}` (or `parameters`), of an offered tool. */
function jsonCall(text: string, tools: OfferedTools): TextCall | undefined {
  return callOfValue(parsedJson(text), tools);
}

/** A decoded `{"name": …, "arguments": {…}}` as a call of an offered tool. */
function callOfValue(value: unknown, tools: OfferedTools): TextCall | undefined {
  if (!isRecord(value) || typeof value.name !== 'string' || !tools.has(value.name)) return undefined;
  const given = value.arguments ?? value.parameters ?? {};
  const parsed = typeof given === 'string' ? parsedJson(given) : given;
  return isRecord(parsed) ? { name: value.name, arguments: JSON.stringify(parsed) } : undefined;
}

/** A text's JSON value; undefined when it is not JSON. */
function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Qwen3-Coder's `<function=NAME><parameter=KEY>VALUE</parameter>…</function>`, of an offered tool. */
function xmlCall(text: string, tools: OfferedTools): TextCall | undefined {
  const head = /^<function=([^>\n]{1,200})>/.exec(text);
  const name = head?.[1]?.trim();
  if (head === null || name === undefined || !tools.has(name)) return undefined;
  const rest = text.slice(head[0].length).trimEnd();
  const body = rest.endsWith('</function>') ? rest.slice(0, -'</function>'.length) : rest;
  const args = parametersOf(body, tools.get(name)?.properties);
  return args === undefined ? undefined : { name, arguments: JSON.stringify(args) };
}

/**
 * A body of nothing but `OPENING KEY>VALUE CLOSING` elements (space between), as an object: each key
 * unquoted, each value as its `string` attribute says (DSML's `string="true"` the text, `"false"` JSON) or
 * else as its schema's type does; undefined when anything else is in it, or a value said to be JSON is not.
 * Read with indexOf, each parameter's end found once: a body of openings without ends costs its length.
 */
function parametersOf(
  body: string,
  properties: unknown,
  opening = parameterOpen,
  closing = parameterClose,
): Record<string, unknown> | undefined {
  const args: Record<string, unknown> = {};
  let end = 0;
  for (let start = body.indexOf(opening); start !== -1; start = body.indexOf(opening, end)) {
    const keyEnd = body.indexOf('>', start);
    const valueEnd = keyEnd === -1 ? -1 : body.indexOf(closing, keyEnd);
    if (valueEnd === -1 || body.slice(end, start).trim() !== '') return undefined;
    const attributes = body.slice(start + opening.length, keyEnd).trim();
    const key = leadingValue(attributes);
    const text = withoutEdgeNewlines(body.slice(keyEnd + 1, valueEnd));
    const literal = attributeOf(attributes, 'string');
    const value =
      literal === 'false'
        ? parsedJson(text.trim())
        : literal === 'true'
          ? text
          : valueOf(text, properties, key);
    if (value === undefined) return undefined;
    args[key] = value;
    end = valueEnd + closing.length;
  }
  return body.slice(end).trim() === '' ? args : undefined;
}

/** The first value of attributes that begin with it: quoted (`"city" string="true"`), or all of them. */
function leadingValue(attributes: string): string {
  const quote = attributes[0];
  if (quote !== '"' && quote !== "'") return attributes;
  const end = attributes.indexOf(quote, 1);
  return end === -1 ? attributes : attributes.slice(1, end);
}

/** Markup of `<invoke name="NAME">` elements of `<parameter name="KEY">VALUE</parameter>` in blocks. */
interface InvokeMarkup {
  /** Each block's opening and closing marker. */
  blocks: ReadonlyArray<readonly [string, string]>;
  invoke: string;
  invokeEnd: string;
  parameter: string;
  parameterEnd: string;
  /** What every one of its markers begins with. */
  prefix: string;
  /** Its invokes may stand outside a block. */
  bare: boolean;
}

/** MiniMax-M2's (llama.cpp and Ollama without its parser: ggml-org/llama.cpp#16904, ollama/ollama#13582). */
const minimaxMarkup: InvokeMarkup = {
  blocks: [['<minimax:tool_call>', '</minimax:tool_call>']],
  invoke: '<invoke name=',
  invokeEnd: '</invoke>',
  parameter: '<parameter name=',
  parameterEnd: '</parameter>',
  prefix: '<minimax:tool_call>',
  bare: false,
};

/**
 * DeepSeek V3.2's and V4's DSML, left in the text by servers whose parser missed it (vllm-project/vllm#54686,
 * sgl-project/sglang#40236 — invokes without a block among them — and a hosted provider: cline/cline#14156).
 */
const dsmlMarkup: InvokeMarkup = {
  blocks: [
    ['<｜DSML｜tool_calls>', '</｜DSML｜tool_calls>'],
    ['<｜DSML｜function_calls>', '</｜DSML｜function_calls>'],
  ],
  invoke: '<｜DSML｜invoke name=',
  invokeEnd: '</｜DSML｜invoke>',
  parameter: '<｜DSML｜parameter name=',
  parameterEnd: '</｜DSML｜parameter>',
  prefix: '<｜DSML｜',
  bare: true,
};

const invokeMarkups = [minimaxMarkup, dsmlMarkup];
const blockOpenings = invokeMarkups.flatMap((markup) => markup.blocks.map(([opening]) => opening));
const blockClosings = invokeMarkups.flatMap((markup) => markup.blocks.map(([, closing]) => closing));

/** The invoke markup block `text` ends with (its markers), if it ends with one's closing marker. */
function invokeBlockEnding(
  text: string,
): { markup: InvokeMarkup; opening: string; closing: string } | undefined {
  for (const markup of invokeMarkups)
    for (const [opening, closing] of markup.blocks)
      if (text.endsWith(closing)) return { markup, opening, closing };
  return undefined;
}

/**
 * A block's inside: its invokes, one or more (space between), each naming an offered tool; undefined when
 * one does not, or the block holds anything else. An invoke the answer's end cut is read to the end.
 */
function invokedCalls(inside: string, markup: InvokeMarkup, tools: OfferedTools): TextCall[] | undefined {
  const calls: TextCall[] = [];
  let end = 0;
  for (let start = inside.indexOf(markup.invoke); start !== -1; start = inside.indexOf(markup.invoke, end)) {
    const nameEnd = inside.indexOf('>', start);
    if (nameEnd === -1 || inside.slice(end, start).trim() !== '') return undefined;
    const name = leadingValue(inside.slice(start + markup.invoke.length, nameEnd).trim());
    const close = inside.indexOf(markup.invokeEnd, nameEnd);
    const body = inside.slice(nameEnd + 1, close === -1 ? inside.length : close);
    const properties = tools.get(name)?.properties;
    const args = tools.has(name)
      ? parametersOf(body, properties, markup.parameter, markup.parameterEnd)
      : undefined;
    if (args === undefined) return undefined;
    calls.push({ name, arguments: JSON.stringify(args) });
    end = close === -1 ? inside.length : close + markup.invokeEnd.length;
  }
  return calls.length === 0 || inside.slice(end).trim() !== '' ? undefined : calls;
}

/**
 * The calls of a text whose first marker is this markup's — its blocks, and its invokes outside a block
 * where it allows them — and the text around them; undefined when one is not a call of an offered tool.
 */
function markupCalls(
  text: string,
  markup: InvokeMarkup,
  tools: OfferedTools,
): { calls: TextCall[]; text: string } | undefined {
  const calls: TextCall[] = [];
  const blocks = invokeBlocksOf(text, markup);
  let rest = '';
  let at = 0;
  for (;;) {
    const next = blocks(at);
    if (next === undefined) break;
    rest += text.slice(at, next.at);
    const end = next.closing === '' ? -1 : text.indexOf(next.closing, next.at + next.opening.length);
    // An invoke outside a block is read to its own end.
    const stop = next.closing === '' ? text.indexOf(markup.invokeEnd, next.at) : end;
    const through = stop === -1 ? text.length : stop + (next.closing === '' ? markup.invokeEnd.length : 0);
    const inside = text.slice(next.at + (next.closing === '' ? 0 : next.opening.length), through);
    const found = invokedCalls(inside, markup, tools);
    if (found === undefined) return undefined;
    calls.push(...found);
    at = next.closing === '' || end === -1 ? through : end + next.closing.length;
  }
  rest += text.slice(at);
  return calls.length === 0 ? undefined : { calls, text: rest.trim() };
}

/**
 * The markup's blocks (and invokes outside one: no closing) in `text`, asked for with `from` growing: each
 * marker's next place is searched for again only once passed, so all of a text's blocks cost its length.
 */
function invokeBlocksOf(
  text: string,
  markup: InvokeMarkup,
): (from: number) => { at: number; opening: string; closing: string } | undefined {
  const candidates: Array<readonly [string, string]> = [...markup.blocks];
  if (markup.bare) candidates.push([markup.invoke, '']);
  const next = candidates.map(() => -2);
  return (from) => {
    let found: { at: number; opening: string; closing: string } | undefined;
    for (const [position, [opening, closing]] of candidates.entries()) {
      let at = next[position] as number;
      if (at === -2 || (at !== -1 && at < from)) next[position] = at = text.indexOf(opening, from);
      if (at !== -1 && (found === undefined || at < found.at)) found = { at, opening, closing };
    }
    return found;
  };
}

const parameterOpen = '<parameter=';
const parameterClose = '</parameter>';

/** A value as Qwen3-Coder writes it, a newline after its opening and before its end taken off. */
function withoutEdgeNewlines(text: string): string {
  const from = text.startsWith('\n') ? 1 : 0;
  return text.slice(from, text.endsWith('\n') && text.length > from ? -1 : undefined);
}

/**
 * A parameter's text as the tool's schema (its `properties`) types `key`: a string's as it is; another's
 * read as JSON, else as text.
 */
function valueOf(text: string, properties: unknown, key: string): unknown {
  const schema = isRecord(properties) ? properties[key] : undefined;
  const type = isRecord(schema) ? schema.type : undefined;
  if (type === 'string' || type === undefined) return text;
  const parsed = parsedJson(text.trim());
  return parsed === undefined ? text : parsed;
}

/**
 * The calls a whole text holds — its blocks, or itself as one JSON call — and the text around them; undefined
 * when it holds none, or a block that is not a call of an offered tool. A text that holds the model's
 * reasoning (up to its first `</think>` or `[/THINK]` outside a block — the opening marker is the
 * template's in many, not the text's) is read for calls after it; a call drafted in the reasoning is not
 * made (PrimeIntellect-ai/renderers#78, verl-project/verl#4757: made twice, or made when the model then
 * decided against it), unless the answer is nothing else and the reasoning ends in it
 * (vllm-project/vllm#39056: Qwen3.5 writes its call before `</think>`).
 */
export function callsInText(
  text: string,
  tools: OfferedTools,
  jsonAlone = true,
): { calls: TextCall[]; text: string } | undefined {
  const end = reasoningEnd(text);
  if (end === undefined) return callsInAnswer(text, tools, jsonAlone);
  const reasoning = text.slice(0, end.at);
  const answer = text.slice(end.at + end.marker.length);
  const found = callsInAnswer(answer, tools, jsonAlone);
  if (found !== undefined) {
    const space = answer.slice(0, answer.length - answer.trimStart().length);
    return {
      calls: found.calls,
      text: reasoning + end.marker + (found.text === '' ? '' : space + found.text),
    };
  }
  if (answer.trim() !== '') return undefined;
  const tail = callsEnding(reasoning, tools);
  return tail === undefined ? undefined : { calls: tail.calls, text: (tail.text + end.marker).trim() };
}

/** The markers that end a model's reasoning: Qwen's, DeepSeek's and most others', and Magistral's. */
const reasoningEnds = ['</think>', '[/THINK]'];
const longestReasoningEnd = Math.max(...reasoningEnds.map((marker) => marker.length));
/** What `<` (and `=`, `>`, `?` and the digits) are escaped to in JSON, in either case: `\u003c`. */
const escapedLess = Buffer.from('\\u003');

/**
 * Where the reasoning a text begins with ends: its first closing marker outside a `<tool_call>` block (a
 * call's arguments may hold one); undefined when it has none. Each block is passed once: linear.
 */
function reasoningEnd(text: string): { at: number; marker: string } | undefined {
  let from = 0;
  // Each marker's next place, searched for again only once passed.
  const next = reasoningEnds.map((marker) => text.indexOf(marker));
  for (;;) {
    let end: { at: number; marker: string } | undefined;
    for (const [position, marker] of reasoningEnds.entries()) {
      let at = next[position] as number;
      if (at !== -1 && at < from) next[position] = at = text.indexOf(marker, from);
      if (at !== -1 && (end === undefined || at < end.at)) end = { at, marker };
    }
    if (end === undefined) return undefined;
    const block = blockStart(text, from);
    if (block === -1 || block > end.at) return end;
    const closed = text.indexOf(close, block + open.length);
    if (closed === -1) return undefined;
    from = closed + close.length;
  }
}

/** The blocks a reasoning ends in (only space after and between them): its calls, and the text before. */
function callsEnding(
  reasoning: string,
  tools: OfferedTools,
): { calls: TextCall[]; text: string } | undefined {
  const calls: TextCall[] = [];
  let rest = reasoning.trimEnd();
  for (;;) {
    if (rest.endsWith(close)) {
      const start = rest.lastIndexOf(open, rest.length - close.length);
      if (start === -1) return undefined;
      const call = blockCall(rest.slice(start + open.length, rest.length - close.length), tools);
      if (call === undefined) return undefined;
      calls.unshift(call);
      rest = rest.slice(0, start).trimEnd();
      continue;
    }
    // MiniMax-M2's and DSML's blocks (waybarrios/vllm-mlx#98: MiniMax's reasoning parser takes the block in).
    const ending = invokeBlockEnding(rest);
    if (ending !== undefined) {
      const start = rest.lastIndexOf(ending.opening);
      const inside = rest.slice(start + ending.opening.length, rest.length - ending.closing.length);
      const found = start === -1 ? undefined : invokedCalls(inside, ending.markup, tools);
      if (found === undefined) return undefined;
      calls.unshift(...found);
      rest = rest.slice(0, start).trimEnd();
      continue;
    }
    // Kimi K2 Thinking's section at the reasoning's end (vybestack/llxprt-code#749).
    if (!kimiEnds.some((marker) => rest.endsWith(marker))) break;
    // Its opening, the nearest before (both spellings end so): each section costs its own length.
    const start = rest.lastIndexOf('<|', rest.lastIndexOf(kimiBeginEnd));
    const marker = kimiBegins.find((begin) => rest.startsWith(begin, start));
    const found = marker === undefined ? undefined : kimiCalls(rest.slice(start), { at: 0, marker }, tools);
    if (found === undefined) return undefined;
    calls.unshift(...found.calls);
    rest = rest.slice(0, start).trimEnd();
  }
  return calls.length === 0 ? undefined : { calls, text: `${rest}\n` };
}

/** The calls of an answer that holds no reasoning: as callsInText says. */
function callsInAnswer(
  text: string,
  tools: OfferedTools,
  jsonAlone: boolean,
): { calls: TextCall[]; text: string } | undefined {
  const bare = unfenced(text.trim());
  if (jsonAlone && bare.startsWith('{')) {
    const call = jsonCall(bare, tools);
    return call === undefined ? undefined : { calls: [call], text: '' };
  }
  // Harmony's first: its messages hold no other form's markers; a text that only names its recipient is
  // read for the others.
  const harmony = text.includes(recipient) ? harmonyCalls(text, tools) : undefined;
  if (harmony !== undefined) return harmony;
  const section = text.indexOf(mistral);
  const block = blockStart(text);
  const kimi = kimiSection(text);
  const before = (at: number, other: number) => at !== -1 && (other === -1 || at < other);
  for (const markup of invokeMarkups) {
    const at = invokeBlocksOf(text, markup)(0)?.at ?? -1;
    if (before(at, section) && before(at, block) && before(at, kimi?.at ?? -1))
      return markupCalls(text, markup, tools);
  }
  if (kimi !== undefined && before(kimi.at, section) && before(kimi.at, block))
    return kimiCalls(text, kimi, tools);
  if (before(section, block)) {
    const calls = mistralCalls(text.slice(section + mistral.length), tools);
    return calls === undefined ? undefined : { calls, text: text.slice(0, section).trim() };
  }
  const calls: TextCall[] = [];
  let rest = '';
  let at = 0;
  for (let start = blockStart(text); start !== -1; start = blockStart(text, at)) {
    rest += text.slice(at, start);
    const end = text.indexOf(close, start + open.length);
    const call = blockCall(text.slice(start + open.length, end === -1 ? text.length : end), tools);
    if (call === undefined) return undefined;
    calls.push(call);
    at = end === -1 ? text.length : end + close.length;
  }
  rest += text.slice(at);
  return calls.length === 0 ? undefined : { calls, text: rest.trim() };
}

/**
 * Mistral's calls, all that follows its first `[TOOL_CALLS]`: `NAME[ARGS]{…}` (Mistral Small 3.2, Devstral,
 * Magistral; `NAME[CALL_ID]ID[ARGS]{…}` in some), or a JSON list of `{"name": …, "arguments": …}` (Mistral
 * 7B v0.3, Nemo), each after a marker of its own; undefined when any is not a call of an offered tool.
 */
function mistralCalls(text: string, tools: OfferedTools): TextCall[] | undefined {
  const calls: TextCall[] = [];
  for (const part of text.split(mistral)) {
    const segment = part.trim();
    if (segment.startsWith('[')) {
      const list = parsedJson(segment);
      if (!Array.isArray(list) || list.length === 0) return undefined;
      for (const entry of list) {
        const call = callOfValue(entry, tools);
        if (call === undefined) return undefined;
        calls.push(call);
      }
      continue;
    }
    const args = segment.indexOf('[ARGS]');
    const name = args === -1 ? '' : segment.slice(0, args).split('[CALL_ID]')[0]?.trim();
    const given = args === -1 ? undefined : parsedJson(segment.slice(args + '[ARGS]'.length).trim());
    if (name === undefined || !tools.has(name) || !isRecord(given)) return undefined;
    calls.push({ name, arguments: JSON.stringify(given) });
  }
  return calls.length === 0 ? undefined : calls;
}

/** Kimi K2's markers (each one token of its model's); the section's in the singular too (vLLM reads both). */
const kimiBegins = ['<|tool_calls_section_begin|>', '<|tool_call_section_begin|>'];
const kimiEnds = ['<|tool_calls_section_end|>', '<|tool_call_section_end|>'];
const kimiBeginEnd = '_section_begin|>';
const kimiCall = '<|tool_call_begin|>';
const kimiArguments = '<|tool_call_argument_begin|>';
const kimiCallEnd = '<|tool_call_end|>';

/** Where a text's first Kimi section begins, and its marker; undefined when it has none. */
function kimiSection(text: string): { at: number; marker: string } | undefined {
  let found: { at: number; marker: string } | undefined;
  for (const marker of kimiBegins) {
    const at = text.indexOf(marker);
    if (at !== -1 && (found === undefined || at < found.at)) found = { at, marker };
  }
  return found;
}

/**
 * Kimi K2's section, as Moonshot's and OpenRouter's endpoints give it in the text with few tools
 * (NousResearch/hermes-agent#24534): `<|tool_calls_section_begin|>`, then each call's
 * `<|tool_call_begin|>functions.NAME:N<|tool_call_argument_begin|>{…}<|tool_call_end|>`, then
 * `<|tool_calls_section_end|>`; the text before and after it the answer's. Undefined when a call is not one
 * of an offered tool, or the section holds none.
 */
function kimiCalls(
  text: string,
  section: { at: number; marker: string },
  tools: OfferedTools,
): { calls: TextCall[]; text: string } | undefined {
  const from = section.at + section.marker.length;
  let end = text.length;
  let after = text.length;
  for (const marker of kimiEnds) {
    const at = text.indexOf(marker, from);
    if (at !== -1 && at < end) [end, after] = [at, at + marker.length];
  }
  const calls: TextCall[] = [];
  for (const part of text.slice(from, end).split(kimiCall)) {
    if (part.trim() === '') continue;
    const args = part.indexOf(kimiArguments);
    if (args === -1) return undefined;
    const name = /^(?:functions\.)?(.+?):\d+$/.exec(part.slice(0, args).trim())?.[1];
    const given = parsedJson(
      part
        .slice(args + kimiArguments.length)
        .split(kimiCallEnd)[0]
        ?.trim() ?? '',
    );
    if (name === undefined || !tools.has(name) || !isRecord(given)) return undefined;
    calls.push({ name, arguments: JSON.stringify(given) });
  }
  const rest = `${text.slice(0, section.at).trim()} ${text.slice(after).trim()}`.trim();
  return calls.length === 0 ? undefined : { calls, text: rest };
}

/**
 * GPT-OSS's Harmony markup left in the text (lablup/mlxcel#654, kekzl/imp#1716): each
 * `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>` a call (`json` glued to
 * the name tolerated, as llama.cpp met it: ggml-org/llama.cpp#15158), and the `final` channel's message the
 * answer's text; the analysis channel is the model's reasoning, not its answer, and is left out.
 */
function harmonyCalls(text: string, tools: OfferedTools): { calls: TextCall[]; text: string } | undefined {
  const calls: TextCall[] = [];
  const endAfter = harmonyEnds(text);
  for (let at = text.indexOf(recipient); at !== -1; at = text.indexOf(recipient, at + 1)) {
    let end = at + recipient.length;
    while (end < text.length && !/[\s<]/.test(text[end] as string)) end++;
    const said = text.slice(at + recipient.length, end);
    const name = tools.has(said) || !said.endsWith('json') ? said : said.slice(0, -'json'.length);
    const message = text.indexOf(harmonyMessage, end);
    if (!tools.has(name) || message === -1) return undefined;
    const from = message + harmonyMessage.length;
    const stop = endAfter(from);
    const args = parsedJson(text.slice(from, stop).trim());
    if (!isRecord(args)) return undefined;
    calls.push({ name, arguments: JSON.stringify(args) });
    at = stop - 1;
  }
  const final = text.indexOf(harmonyFinal);
  const answer =
    final === -1
      ? ''
      : text.slice(final + harmonyFinal.length, harmonyEnds(text)(final + harmonyFinal.length));
  return calls.length === 0 ? undefined : { calls, text: answer.trim() };
}

const recipient = 'to=functions.';
const harmonyMessage = '<|message|>';
const harmonyFinal = '<|channel|>final<|message|>';

/**
 * Where a Harmony message that begins at `from` ends — its `<|call|>`, `<|end|>`, `<|return|>` or the next
 * `<|start|>`, or the text's end — asked with `from` growing: each marker's next place is searched for
 * again only once passed, so all the calls of a text cost its length.
 */
function harmonyEnds(text: string): (from: number) => number {
  const markers = ['<|call|>', '<|end|>', '<|return|>', '<|start|>'];
  const next = markers.map(() => -2);
  return (from) => {
    let end = text.length;
    for (const [position, marker] of markers.entries()) {
      let at = next[position] as number;
      if (at === -2 || (at !== -1 && at < from)) next[position] = at = text.indexOf(marker, from);
      if (at !== -1 && at < end) end = at;
    }
    return end;
  };
}

/** A text in a ``` fence (```json), its inside; else as it is. */
function unfenced(text: string): string {
  if (!text.startsWith('```') || !text.endsWith('```') || text.length < 6) return text;
  const inside = text.slice(3, -3);
  return (inside.startsWith('json') ? inside.slice(4) : inside).trim();
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
    const opened = Math.max(
      ...[open, ...blockOpenings, ...kimiBegins].map((marker) => piece.lastIndexOf(marker)),
    );
    let closed = -1;
    for (const marker of [close, ...blockClosings, ...kimiEnds]) {
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

/** Where a call's first marker (`<tool_call>`, Kimi's section) begins in a reasoning's text; or -1. */
function markerIn(text: string): number {
  const block = blockStart(text);
  const section = sectionStart(text);
  return block === -1 || (section !== -1 && section < block) ? section : block;
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
        if (call === undefined) content += open + closed.inside + close;
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
        // Mistral's and Kimi's calls run to the answer's end (Kimi's may have text after its section, said
        // there): all of it held, read there (as a text that opens as JSON).
        content += this.held.slice(0, section);
        this.held = this.held.slice(section);
        this.mode = 'json';
        return { content, calls };
      }
      const begins = blockStart(this.held);
      if (begins !== -1) {
        content += this.held.slice(0, begins);
        if (!this.reasoningClosed) {
          // Perhaps a draft in the model's reasoning: all of it held, read at the answer's end.
          this.held = this.held.slice(begins);
          this.mode = 'json';
          return { content, calls };
        }
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
 * Where the first Mistral, Kimi, MiniMax or DSML marker in `text` begins (each but DSML's one token of its
 * model's, met whole; DSML's prefix is held while it may begin); or -1.
 */
function sectionStart(text: string): number {
  let first = -1;
  const markups = invokeMarkups.map((markup) => text.indexOf(markup.prefix));
  for (const at of [text.indexOf(mistral), kimiSection(text)?.at ?? -1, ...markups])
    if (at !== -1 && (first === -1 || at < first)) first = at;
  return first;
}

/** How much of `text`'s end may begin a marker (`<tool_call>`, `[TOOL_CALLS]`): held until the next text says. */
function heldTail(text: string): number {
  for (let keep = Math.min(mistral.length - 1, text.length); keep > 0; keep--) {
    const end = text.slice(text.length - keep);
    if (open.startsWith(end) || mistral.startsWith(end) || dsmlMarkup.prefix.startsWith(end)) return keep;
  }
  return 0;
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
