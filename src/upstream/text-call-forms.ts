// The forms in which models write tool calls as text (docs/budgeting.md#tool-calls-written-as-text), read
// from a whole text: Hermes' and Qwen's `<tool_call>{"name": …, "arguments": …}</tool_call>`, DeepSeek V4's
// `<tool_call id=… name=…>{…}</tool_call>`, Qwen3-Coder's
// `<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`, GLM's
// `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>`, Mistral's
// `[TOOL_CALLS]NAME[ARGS]{…}` and `[TOOL_CALLS] [{…}]`, GPT-OSS's Harmony markup (`… to=functions.NAME
// <|constrain|>json<|message|>{…}<|call|>`), Kimi K2's `<|tool_calls_section_begin|>…`, MiniMax-M2's
// `<minimax:tool_call><invoke name=…>…`, DeepSeek's DSML (`<｜DSML｜tool_calls>…`), LFM2's Python calls
// (`<|tool_call_start|>[NAME(KEY=VALUE)]<|tool_call_end|>`), Llama's (`<|python_start|>{…}`,
// `<|python_tag|>{…}`, `<function=NAME>{…}</function>`), or a text that is
// nothing but `{"name": …, "arguments": …}` — each call naming an offered tool, with arguments that are a
// JSON object. A text that holds the model's reasoning is read for calls after it; calls drafted in it are
// not made. And where in a text a call may begin: what a stream holds (text-tool-calls.ts). Pure.

import { isRecord } from './tool-call-shape.js';

/** The offered tools, by name: each one's parameters' schema (what a Qwen3-Coder value is read as). */
export type OfferedTools = ReadonlyMap<string, Record<string, unknown> | undefined>;

export interface TextCall {
  name: string;
  /** JSON text of an object. */
  arguments: string;
}

/** A block's opening, then `>` or its attributes (DeepSeek V4's `<tool_call id="…" name="…">`). */
export const open = '<tool_call';
/** Mistral's: its calls follow it to the text's end. */
export const mistral = '[TOOL_CALLS]';
export const close = '</tool_call>';

/**
 * Where the first block in `text` from `from` opens: `<tool_call` then `>` or a space (not `<tool_calls>`);
 * -1 when none does (nor may yet: an opening at the text's end is not one until the next text says).
 */
export function blockStart(text: string, from = 0): number {
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
export function blockCall(block: string, tools: OfferedTools): TextCall | undefined {
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
    setMember(
      args,
      argument,
      valueOf(text.slice(value + '<arg_value>'.length, valueEnd), properties, argument),
    );
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
    setMember(args, key, value);
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
 * Sets a member of arguments read from a model's text as its own, whatever its name: an assignment to
 * `__proto__` would set the object's prototype instead, and the argument would not be sent (JSON.parse, which
 * reads the JSON forms, defines members so too).
 */
function setMember(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * A parameter's text as the tool's schema (its `properties`) types `key`: a string's as it is; another's
 * read as JSON, else as text.
 */
function valueOf(text: string, properties: unknown, key: string): unknown {
  const schema = isRecord(properties) && Object.hasOwn(properties, key) ? properties[key] : undefined;
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
export const reasoningEnds = ['</think>', '[/THINK]'];
export const longestReasoningEnd = Math.max(...reasoningEnds.map((marker) => marker.length));

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
export function callsEnding(
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
  // The form whose marker comes first reads the text.
  const section = text.indexOf(mistral);
  const kimi = kimiSection(text);
  const python = text.indexOf(pythonStart);
  const llama = llamaForms.map((form) => text.indexOf(form.start));
  const forms: Array<{ at: number; read: () => { calls: TextCall[]; text: string } | undefined }> = [
    ...llamaForms.map((form, position) => ({
      at: llama[position] as number,
      read: () => llamaCalls(text, llama[position] as number, form, tools),
    })),
    { at: text.indexOf(functionOpen), read: () => functionCalls(text, tools) },
    { at: blockStart(text), read: () => blockCalls(text, tools) },
    { at: kimi?.at ?? -1, read: () => (kimi === undefined ? undefined : kimiCalls(text, kimi, tools)) },
    { at: python, read: () => pythonCalls(text, python, tools) },
    {
      at: section,
      read: () => {
        const calls = mistralCalls(text.slice(section + mistral.length), tools);
        return calls === undefined ? undefined : { calls, text: text.slice(0, section).trim() };
      },
    },
    ...invokeMarkups.map((markup) => ({
      at: invokeBlocksOf(text, markup)(0)?.at ?? -1,
      read: () => markupCalls(text, markup, tools),
    })),
  ];
  let first: (typeof forms)[number] | undefined;
  for (const form of forms) if (form.at !== -1 && (first === undefined || form.at < first.at)) first = form;
  return first?.read();
}

/** A text's `<tool_call>` blocks and the text around them; undefined when one is not a call of an offered tool. */
function blockCalls(text: string, tools: OfferedTools): { calls: TextCall[]; text: string } | undefined {
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
 * Llama's JSON calls after a marker of its own: 3.1's and 3.2's `<|python_tag|>` (ipython mode, several
 * separated by `;`: raullenchai/Rapid-MLX#703) to its `<|eom_id|>`, and 4's and 3.3's between
 * `<|python_start|>` and `<|python_end|>` (Bedrock: pydantic/pydantic-ai#2033).
 */
const llamaForms = [
  { start: '<|python_start|>', ends: ['<|python_end|>'] },
  { start: '<|python_tag|>', ends: ['<|eom_id|>', '<|eot_id|>'] },
];

/**
 * Llama's `{"name": …, "parameters": {…}}` objects (a list of them too) after its marker at `start`, to
 * its end, and the text around them; undefined when they are not calls of offered tools alone.
 */
function llamaCalls(
  text: string,
  start: number,
  form: { start: string; ends: readonly string[] },
  tools: OfferedTools,
): { calls: TextCall[]; text: string } | undefined {
  const from = start + form.start.length;
  let end = text.length;
  let after = text.length;
  for (const marker of form.ends) {
    const at = text.indexOf(marker, from);
    if (at !== -1 && at < end) [end, after] = [at, at + marker.length];
  }
  const values = jsonSequence(text.slice(from, end));
  const calls = values?.flatMap((value) => (Array.isArray(value) ? value : [value]));
  const read = calls?.map((value) => callOfValue(value, tools));
  if (read === undefined || read.length === 0 || read.some((call) => call === undefined)) return undefined;
  return { calls: read as TextCall[], text: around(text, start, after) };
}

/**
 * JSON objects and lists one after another, `;`, `,` or space between; undefined when anything else is
 * there. Each value's end is found by counting brackets outside strings: the text is read once.
 */
function jsonSequence(text: string): unknown[] | undefined {
  const values: unknown[] = [];
  let at = 0;
  for (;;) {
    while (at < text.length && /[\s;,]/.test(text[at] as string)) at++;
    if (at === text.length) return values;
    if (text[at] !== '{' && text[at] !== '[') return undefined;
    let depth = 0;
    let end = -1;
    for (let position = at; position < text.length && end === -1; position++) {
      const char = text[position];
      if (char === '"') {
        for (position++; position < text.length && text[position] !== '"'; position++)
          if (text[position] === '\\') position++;
      } else if (char === '{' || char === '[') {
        // No call nests so deep: a hostile text is refused before JSON.parse meets it.
        if (++depth > 256) return undefined;
      } else if ((char === '}' || char === ']') && --depth === 0) end = position;
    }
    const value = end === -1 ? undefined : parsedJson(text.slice(at, end + 1));
    if (value === undefined) return undefined;
    values.push(value);
    at = end + 1;
  }
}

const functionOpen = '<function=';
const functionClose = '</function>';

/**
 * Calls written as `<function=NAME>…</function>` outside a block: Llama 3.1's custom tools, its arguments
 * the JSON object inside, or Qwen3-Coder's whose server took out its `<tool_call>` markers, its
 * `<parameter=…>` elements inside; the text around them the answer's.
 */
function functionCalls(text: string, tools: OfferedTools): { calls: TextCall[]; text: string } | undefined {
  const calls: TextCall[] = [];
  let rest = '';
  let at = 0;
  for (let start = text.indexOf(functionOpen); start !== -1; start = text.indexOf(functionOpen, at)) {
    rest += text.slice(at, start);
    const end = text.indexOf(functionClose, start);
    const element = text.slice(start, end === -1 ? text.length : end + functionClose.length);
    const head = element.indexOf('>');
    const name = head === -1 ? undefined : element.slice(functionOpen.length, head).trim();
    const inside = head === -1 ? '' : element.slice(head + 1, end === -1 ? undefined : -functionClose.length);
    const args = inside.trim().startsWith('{') ? parsedJson(inside.trim()) : undefined;
    const call =
      args === undefined
        ? xmlCall(element.trim(), tools)
        : name !== undefined && tools.has(name) && isRecord(args)
          ? { name, arguments: JSON.stringify(args) }
          : undefined;
    if (call === undefined) return undefined;
    calls.push(call);
    at = end === -1 ? text.length : end + functionClose.length;
  }
  rest += text.slice(at);
  return calls.length === 0 ? undefined : { calls, text: rest.trim() };
}

/** The text before `start` and from `after` on, each trimmed, a blank line between: what calls leave. */
function around(text: string, start: number, after: number): string {
  return [text.slice(0, start).trim(), text.slice(after).trim()].filter((part) => part !== '').join('\n\n');
}

const pythonStart = '<|tool_call_start|>';
const pythonEnd = '<|tool_call_end|>';

/**
 * LFM2's calls: a Python list of calls between its markers, `<|tool_call_start|>[NAME(KEY=VALUE, …), …]
 * <|tool_call_end|>` (LM Studio, mlx and vLLM before its parser: lmstudio-ai/lmstudio-bug-tracker#1979,
 * vllm-project/vllm#39243), each argument named, each value a Python literal; the text around them the
 * answer's. Undefined when any is not a call of an offered tool, or the list is not such calls alone.
 */
function pythonCalls(
  text: string,
  start: number,
  tools: OfferedTools,
): { calls: TextCall[]; text: string } | undefined {
  const from = start + pythonStart.length;
  const end = text.indexOf(pythonEnd, from);
  const calls = new PythonCalls(text.slice(from, end === -1 ? text.length : end).trim()).calls();
  if (calls === undefined || calls.some((call) => !tools.has(call.name))) return undefined;
  const after = end === -1 ? '' : text.slice(end + pythonEnd.length).trim();
  return { calls, text: `${text.slice(0, start).trim()} ${after}`.trim() };
}

/**
 * A Python list of calls with named arguments, read in one pass (no `eval`): strings in either quote with
 * their escapes, numbers, `True`/`False`/`None` (JSON's words too), lists and dicts, at most 64 deep.
 */
class PythonCalls {
  private at = 0;

  constructor(private readonly text: string) {}

  /** The calls, when the text is nothing but their list; else undefined. */
  calls(): TextCall[] | undefined {
    const calls: TextCall[] = [];
    if (!this.take('[')) return undefined;
    while (!this.take(']')) {
      if (calls.length > 0 && !this.take(',')) return undefined;
      this.space();
      const name = /^[A-Za-z_][\w.-]*/.exec(this.rest())?.[0];
      if (name === undefined) return undefined;
      this.at += name.length;
      const args = this.arguments();
      if (args === undefined) return undefined;
      calls.push({ name, arguments: JSON.stringify(args) });
    }
    this.space();
    return calls.length > 0 && this.at === this.text.length ? calls : undefined;
  }

  /** `(KEY=VALUE, …)`: an object; undefined when an argument has no name. */
  private arguments(): Record<string, unknown> | undefined {
    const args: Record<string, unknown> = {};
    if (!this.take('(')) return undefined;
    for (let count = 0; !this.take(')'); count++) {
      if (count > 0 && !this.take(',')) return undefined;
      this.space();
      const key = /^[A-Za-z_]\w*/.exec(this.rest())?.[0];
      if (key === undefined) return undefined;
      this.at += key.length;
      if (!this.take('=')) return undefined;
      const value = this.value(0);
      if (value === undefined) return undefined;
      setMember(args, key, value);
    }
    return args;
  }

  /** One literal; undefined when there is none here (None is null). */
  private value(depth: number): unknown {
    this.space();
    if (depth > 64) return undefined;
    const head = this.text[this.at];
    if (head === '"' || head === "'") return this.string(head);
    if (head === '[') return this.sequence(depth);
    if (head === '{') return this.mapping(depth);
    const word = /^(?:True|False|None|true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(
      this.rest(),
    )?.[0];
    if (word === undefined) return undefined;
    this.at += word.length;
    const words: Record<string, unknown> = { True: true, true: true, False: false, false: false, None: null };
    return word in words ? words[word] : word === 'null' ? null : Number(word);
  }

  private sequence(depth: number): unknown[] | undefined {
    const list: unknown[] = [];
    this.at++;
    while (!this.take(']')) {
      if (list.length > 0 && !this.take(',')) return undefined;
      if (this.take(']')) break;
      const value = this.value(depth + 1);
      if (value === undefined) return undefined;
      list.push(value);
    }
    return list;
  }

  private mapping(depth: number): Record<string, unknown> | undefined {
    const map: Record<string, unknown> = {};
    this.at++;
    for (let count = 0; !this.take('}'); count++) {
      if (count > 0 && !this.take(',')) return undefined;
      this.space();
      const quote = this.text[this.at];
      const key = quote === '"' || quote === "'" ? this.string(quote) : undefined;
      if (key === undefined || !this.take(':')) return undefined;
      const value = this.value(depth + 1);
      if (value === undefined) return undefined;
      setMember(map, key, value);
    }
    return map;
  }

  /** A quoted string from here, its escapes read as Python reads them; undefined when it never closes. */
  private string(quote: string): string | undefined {
    let out = '';
    for (let at = this.at + 1; at < this.text.length; at++) {
      const char = this.text[at] as string;
      if (char === quote) {
        this.at = at + 1;
        return out;
      }
      if (char !== '\\') {
        out += char;
        continue;
      }
      const next = this.text[++at] ?? '';
      const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"' };
      if (next in escapes) out += escapes[next];
      else if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(this.text.slice(at + 1, at + 5))) {
        out += String.fromCharCode(Number.parseInt(this.text.slice(at + 1, at + 5), 16));
        at += 4;
      } else out += `\\${next}`;
    }
    return undefined;
  }

  /** Skips space, then `token` if it is next: whether it was. */
  private take(token: string): boolean {
    this.space();
    if (!this.text.startsWith(token, this.at)) return false;
    this.at += token.length;
    return true;
  }

  private space(): void {
    while (/\s/.test(this.text[this.at] ?? '')) this.at++;
  }

  /** The text from here (a view for the anchored regexes, which read only its start). */
  private rest(): string {
    return this.text.slice(this.at, this.at + 256);
  }
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

/** The markers that open a block or section of calls, and those that close one (a reasoning field's calls). */
export const callOpenings = [
  open,
  ...invokeMarkups.flatMap((markup) => markup.blocks.map(([opening]) => opening)),
  ...kimiBegins,
];
export const callClosings = [
  close,
  ...invokeMarkups.flatMap((markup) => markup.blocks.map(([, closing]) => closing)),
  ...kimiEnds,
];

/** Where a call's first marker (`<tool_call>`, Kimi's section) begins in a reasoning's text; or -1. */
export function markerIn(text: string): number {
  const block = blockStart(text);
  const section = sectionStart(text);
  return block === -1 || (section !== -1 && section < block) ? section : block;
}

/**
 * Where the first Mistral, Kimi, LFM2, MiniMax or DSML marker in `text` begins (each but DSML's one token of
 * its model's, met whole; DSML's prefix is held while it may begin); or -1.
 */
export function sectionStart(text: string): number {
  let first = -1;
  const markups = invokeMarkups.map((markup) => text.indexOf(markup.prefix));
  for (const at of [
    text.indexOf(mistral),
    kimiSection(text)?.at ?? -1,
    text.indexOf(pythonStart),
    ...markups,
    ...llamaForms.map((form) => text.indexOf(form.start)),
    text.indexOf(functionOpen),
  ])
    if (at !== -1 && (first === -1 || at < first)) first = at;
  return first;
}

/**
 * How much of `text`'s end may begin a marker (`<tool_call`, `[TOOL_CALLS]`, `<｜DSML｜`, `<function=`): held
 * until the next text says.
 */
export function heldTail(text: string): number {
  for (let keep = Math.min(mistral.length - 1, text.length); keep > 0; keep--) {
    const end = text.slice(text.length - keep);
    if ([open, mistral, dsmlMarkup.prefix, functionOpen].some((marker) => marker.startsWith(end)))
      return keep;
  }
  return 0;
}
