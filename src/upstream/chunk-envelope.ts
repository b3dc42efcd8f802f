// A chat stream's chunks in the envelope strict clients take (docs/budgeting.md#tool-calls-as-providers-give-them):
// every chunk with the stream's one id (OpenVINO's model server gives none, OpenCode's Zen closes with a cost
// event without one), `delta.role` "assistant" or none (MiniMax, Baidu Qianfan and Snowflake Cortex say ""
// on every delta), `choices` a list (Vercel's v0 API gives its usage chunk none), each choice with its
// `index` (Cloudflare Workers AI gives none). Strict decoders (async-openai, Spring AI) and the AI SDK
// refuse such a chunk, and the answer with it. Streams already in shape are read without a parse: a few
// byte searches per event.

import { randomUUID } from 'node:crypto';
import { chatChunkOf, isRecord } from './tool-call-shape.js';

const emptyRole = Buffer.from('"role":""');
const choiceOpen = Buffer.from('"choices":[{');
const indexKey = Buffer.from('"index"');
const usageGiven = Buffer.from('"usage":{');

/** One stream's chunk envelope: what its first chunk said, and each later chunk put in shape. */
export class ChunkEnvelope {
  /**
   * The id the stream's chunks are given when its first chunk has none (openvinotoolkit/model_server#3553,
   * refused by 64bit/async-openai#408 and spring-projects/spring-ai#6928); '' when it has its own,
   * undefined until its first chunk came.
   */
  private madeId: string | undefined;
  /**
   * The first chunk's line when it has its own id: what a later chunk without one is given (its id,
   * `object`, `created` and `model`), read only then — Zen's `{"choices":[],"cost":"0"}`
   * (anomalyco/opencode#39061).
   */
  private firstLine: string | undefined;
  /**
   * Events still read for `role: ""` before the stream is taken not to say it: servers that say it do on
   * every delta, or on every one after the first (Qianfan). True once one did: every event is read then.
   */
  private roleChecks: number | true = 4;
  /** The same for choices without their `index` (Cloudflare Workers AI: vercel/ai#4031). */
  private indexChecks: number | true = 4;
  /** A finish was said: a usage chunk may come, the stream's last (a search an event, only then). */
  private finished = false;

  /** Reads the stream's first chunk, from the first whole events that hold one. */
  see(events: Buffer): void {
    if (this.madeId !== undefined) return;
    this.madeId = madeIdFor(events);
    if (this.madeId === '') this.firstLine = firstDataLine(events);
  }

  /** Tells that a choice's finish was said (the usage chunk comes after it). */
  finish(): void {
    this.finished = true;
  }

  /** Whether every chunk of whole events is in shape, so that none needs reading. */
  fits(events: Buffer): boolean {
    if (this.madeId !== '' || !everyChunkSaysId(events)) return false;
    if (this.roleChecks === true || this.roleChecks > 0) {
      if (events.indexOf(emptyRole) !== -1) {
        this.roleChecks = true;
        return false;
      }
      if (this.roleChecks !== true) this.roleChecks--;
    }
    if (this.indexChecks === true) return false;
    if (this.indexChecks > 0) {
      if (events.indexOf(choiceOpen) !== -1 && events.indexOf(indexKey) === -1) {
        this.indexChecks = true;
        return false;
      }
      this.indexChecks--;
    }
    return !this.finished || events.indexOf(usageGiven) === -1;
  }

  /** One event's `data:` line in shape; undefined when it already is. */
  conform(line: string): string | undefined {
    const madeId = this.madeId ?? '';
    let out =
      madeId === '' && line.includes('"id"')
        ? undefined
        : withIdGiven(line, () => (madeId === '' ? envelopeOf(this.firstLine) : { id: madeId }));
    // MiniMax's `role: ""` (Th0rgal/sandboxed.sh#143): the AI SDK's OpenAI provider takes "assistant" or none.
    if ((out ?? line).includes('"role":""'))
      out = (out ?? line).replaceAll('"role":""', '"role":"assistant"');
    const current = out ?? line;
    if (current.includes('"usage":{') && !current.includes('"choices":[')) out = withChoices(current) ?? out;
    const now = out ?? line;
    if ((this.indexChecks === true || !now.includes('"index"')) && now.includes('"choices":[{'))
      out = withChoiceIndexes(now) ?? out;
    return out;
  }
}

/**
 * A chunk whose choices say no `index` (Cloudflare Workers AI: vercel/ai#4031) with each given its
 * place, as OpenAI numbers them; undefined when every choice has its own.
 */
function withChoiceIndexes(line: string): string | undefined {
  const chunk = chatChunkOf(line.slice(5).trim());
  if (chunk === undefined) return undefined;
  let changed = false;
  chunk.choices.forEach((choice, place) => {
    if (!isRecord(choice) || typeof choice.index === 'number') return;
    choice.index = place;
    changed = true;
  });
  return changed ? `data: ${JSON.stringify(chunk)}${line.endsWith('\r') ? '\r' : ''}` : undefined;
}

/**
 * A chunk that gives usage without a list of `choices` (none, or null: vercel/ai#7417, ROCm/ATOM#1711) with
 * an empty one, as OpenAI's usage chunk says it; undefined when it is no such chunk (an error, not JSON).
 */
function withChoices(line: string): string | undefined {
  let chunk: unknown;
  try {
    chunk = JSON.parse(line.slice(5).trim());
  } catch {
    return undefined;
  }
  if (!isRecord(chunk) || Array.isArray(chunk.choices) || chunk.error !== undefined) return undefined;
  chunk.choices = [];
  return `data: ${JSON.stringify(chunk)}${line.endsWith('\r') ? '\r' : ''}`;
}

/**
 * The id to give a stream's chunks, decided on its first chunk: '' when it says one (the usual case: the
 * line is not parsed), a made one when it says none, undefined while no chunk has come.
 */
function madeIdFor(events: Buffer): string | undefined {
  const line = firstDataLine(events);
  if (line === undefined) return undefined;
  return line.includes('"id"') ? '' : `chatcmpl-${randomUUID()}`;
}

const dataField = Buffer.from('data:');
const lineDataField = Buffer.from('\ndata:');
const idKey = Buffer.from('"id"');
const doneKey = Buffer.from('[DONE]');

/**
 * Whether every chunk of whole events says `"id"` on its line (a chunk without one names no id at all):
 * a few indexOf per event, no parse; `[DONE]` is no chunk.
 */
function everyChunkSaysId(events: Buffer): boolean {
  // Most often one event, its id first (OpenAI, vLLM, SGLang): read without a search.
  const end = events.indexOf(0x0a);
  if (end !== -1 && events.length - end <= 4 && startsWithId(events)) return true;
  for (let at = events.indexOf(dataField) === 0 ? 0 : nextDataLine(events, 0); at !== -1;) {
    const end = events.indexOf(0x0a, at);
    const id = events.indexOf(idKey, at);
    const saysId = id !== -1 && (end === -1 || id < end);
    if (!saysId && !events.subarray(at, at + 16).includes(doneKey)) return false;
    if (end === -1) return true;
    at = nextDataLine(events, end);
  }
  return true;
}

const idFirst = Buffer.from('data: {"id"');

/** Whether whole events begin with a chunk whose first member is its id (`data:` and a space or not). */
function startsWithId(events: Buffer): boolean {
  const skip = events[5] === 0x20 ? 0 : 1;
  if (events.length < idFirst.length - skip) return false;
  for (let at = 0; at < idFirst.length; at++) {
    if (at === 5 && skip === 1) continue;
    if (events[at - (at > 5 ? skip : 0)] !== idFirst[at]) return false;
  }
  return true;
}

/** Where the next `data:` line of whole events begins, from `from` on; -1 when none does. */
function nextDataLine(events: Buffer, from: number): number {
  const at = events.indexOf(lineDataField, from);
  return at === -1 ? -1 : at + 1;
}

/** The first `data:` line of whole events that holds an object (`data: {` or `data:{`). */
function firstDataLine(events: Buffer): string | undefined {
  for (let at = events.indexOf(dataField) === 0 ? 0 : nextDataLine(events, 0); at !== -1;) {
    const end = events.indexOf(0x0a, at);
    const open = events[at + 5] === 0x20 ? at + 6 : at + 5;
    if (events[open] === 0x7b) return events.toString('utf8', at, end === -1 ? events.length : end);
    if (end === -1) return undefined;
    at = nextDataLine(events, end);
  }
  return undefined;
}

/** What every chunk of a stream says as its first chunk said it: its id, `object`, `created` and `model`. */
function envelopeOf(firstLine: string | undefined): Record<string, unknown> {
  const first = chatChunkOf(firstLine?.slice(5).trim() ?? '');
  const envelope: Record<string, unknown> = { object: 'chat.completion.chunk' };
  for (const key of ['id', 'object', 'created', 'model'])
    if (first?.[key] !== undefined && first[key] !== null) envelope[key] = first[key];
  return envelope;
}

/**
 * An event's line with the stream's envelope (its id, OpenAI's `object`, and `created` and `model` when
 * known) where its chunk says no id; the chunk's own members are kept. Undefined when it says one.
 */
function withIdGiven(line: string, envelopeOfStream: () => Record<string, unknown>): string | undefined {
  const chunk = chatChunkOf(line.slice(5).trim());
  if (chunk === undefined || typeof chunk.id === 'string') return undefined;
  const envelope = envelopeOfStream();
  if (typeof envelope.id !== 'string') return undefined;
  const given = Object.assign({ id: envelope.id, object: 'chat.completion.chunk' }, envelope, chunk, {
    id: envelope.id,
  });
  return `data: ${JSON.stringify(given)}${line.endsWith('\r') ? '\r' : ''}`;
}
