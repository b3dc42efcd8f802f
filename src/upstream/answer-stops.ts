// Stop sequences the gateway holds an answer to itself (docs/budgeting.md#refused-fields): the client's,
// where the model refused them (OpenAI's reasoning models take none, OpenAI more than four) and was sent
// fewer or none. The answer's text is cut where the first of them begins, as a provider cuts it (the
// sequence itself not given), and the choice finishes there (`finish_reason: "stop"`); what the model
// wrote after it, text or calls, is dropped. A stream is cut as it comes: each choice's text held back only
// where a sequence may still begin in it (at most the longest less one character), given on as soon as
// none can; the rest of the upstream's stream is read to its end (its usage, billed as the provider counts
// it) and nothing more of the choice given. The first sequence is the first to end, as a provider that
// writes token by token stops at it.

import { withDataRewritten, withEventsRewritten } from './sse.js';
import { chatChunkOf, isRecord, saysFinish } from './tool-call-shape.js';
import { withWholeBody, type UpstreamResponse } from './upstream.js';

/**
 * The client's stop sequences as one automaton (Aho–Corasick over UTF-16 code units): an answer's text is
 * read once, character by character, whatever the number and length of the sequences — a client's 256
 * sequences cost no more per character than one. A state is the longest end of the text read that begins
 * some sequence: its depth is how much of the text a sequence may still begin in.
 */
export class StopMatcher {
  /** Each state's children, by `state * 65536 + code unit`. */
  private readonly edges = new Map<number, number>();
  private readonly fail: number[] = [0];
  private readonly depth: number[] = [0];
  /** The longest sequence that ends at each state (its own, or a shorter one's through its fail link). */
  private readonly ends: Array<string | undefined> = [undefined];

  constructor(stops: readonly string[]) {
    const parent: number[] = [0];
    const unit: number[] = [0];
    const own: Array<string | undefined> = [undefined];
    for (const stop of stops) {
      let state = 0;
      for (let index = 0; index < stop.length; index++) {
        const key = state * 65536 + stop.charCodeAt(index);
        let next = this.edges.get(key);
        if (next === undefined) {
          next = parent.length;
          this.edges.set(key, next);
          parent.push(state);
          unit.push(stop.charCodeAt(index));
          own.push(undefined);
          this.depth.push(index + 1);
        }
        state = next;
      }
      if (stop.length > 0) own[state] = stop;
    }
    // Shallower states first: each state's fail link is to a shallower one.
    const order = Array.from({ length: parent.length }, (_unused, state) => state).sort(
      (one, other) => (this.depth[one] as number) - (this.depth[other] as number),
    );
    for (const state of order) {
      if (state === 0) continue;
      this.fail[state] =
        parent[state] === 0
          ? 0
          : this.step(this.fail[parent[state] as number] as number, unit[state] as number);
      this.ends[state] = own[state] ?? this.ends[this.fail[state] as number];
    }
  }

  /** The state after `state` reads one code unit. */
  private step(state: number, code: number): number {
    for (let at = state; ; at = this.fail[at] as number) {
      const next = this.edges.get(at * 65536 + code);
      if (next !== undefined) return next;
      if (at === 0) return 0;
    }
  }

  /**
   * Reads `text` on from `state`: where in it the first sequence to end there begins (negative: that many
   * characters before `text`, in what was read earlier; undefined when none ends in it) and which it is,
   * and the state after it (or after the whole text).
   */
  read(text: string, state: number): { state: number; stopAt: number | undefined; stop?: string } {
    let at = state;
    for (let index = 0; index < text.length; index++) {
      at = this.step(at, text.charCodeAt(index));
      const stop = this.ends[at];
      if (stop !== undefined) return { state: at, stopAt: index + 1 - stop.length, stop };
    }
    return { state: at, stopAt: undefined };
  }

  /** How many characters at the end of the text read a sequence may still begin in. */
  heldBy(state: number): number {
    return this.depth[state] as number;
  }
}

/**
 * The stop as a Messages client is told it (messages/answer.ts): `stop_sequence`, and the one that matched,
 * as Claude says it — chat has no word for it (a Chat Completions client ignores the member, as it does
 * Claude's own: docs/anthropic.md).
 */
function stoppedBy(stop: string | undefined): { stop_reason: string; stop_sequence: string | null } {
  return { stop_reason: 'stop_sequence', stop_sequence: stop ?? null };
}

/** A whole completion's choices cut at their first stop; whether any was. */
function cutCompletion(completion: unknown, stops: StopMatcher): boolean {
  if (!isRecord(completion) || !Array.isArray(completion.choices)) return false;
  let cut = false;
  for (const choice of completion.choices as unknown[]) {
    if (!isRecord(choice) || !isRecord(choice.message) || typeof choice.message.content !== 'string')
      continue;
    const { stopAt, stop } = stops.read(choice.message.content, 0);
    if (stopAt === undefined) continue;
    choice.message.content = choice.message.content.slice(0, stopAt);
    delete choice.message.tool_calls;
    choice.finish_reason = 'stop';
    choice.ctxgate_anthropic_stop = stoppedBy(stop);
    cut = true;
  }
  return cut;
}

/** What is known of one choice of a stream. */
interface ChoiceText {
  /** Text received and not given on yet: where a stop may begin. */
  held: string;
  /** The matcher's state after the text received. */
  state: number;
  /** A stop was found: nothing more of the choice is given. */
  stopped: boolean;
}

/** Cuts a chat stream's choices at their first stop, event by event (whole events: EventBoundaryBuffer). */
export class StreamStops {
  private readonly choices = new Map<number, ChoiceText>();
  /** The `id`, `object`, `created` and `model` of the last chunk, for an event of held text of its own. */
  private envelope: Record<string, unknown> = { object: 'chat.completion.chunk' };
  constructor(private readonly stops: StopMatcher) {}

  /** `events`: whole events. The same buffer when nothing in them changed. */
  rewrite(events: Buffer): Buffer {
    return withDataRewritten(
      events,
      (data) => {
        const chunk = chatChunkOf(data);
        // A chunk of no choice (the usage at the end) passes as it came.
        return chunk === undefined || chunk.choices.length === 0 ? undefined : this.rewriteChunk(chunk);
      },
      // Text still held goes before the stream's end.
      () => this.heldLines(),
    );
  }

  /** At the stream's end: an event of the text still held, when a stream ended without finishing it. */
  end(): Buffer | undefined {
    const rest = this.heldLines();
    return rest.length === 0 ? undefined : Buffer.from(`${rest.join('\n')}\n`);
  }

  /** A chunk's data as given on: written anew, or null when nothing of it is left to give. */
  private rewriteChunk(chunk: Record<string, unknown> & { choices: unknown[] }): string | null {
    this.envelope = {
      id: chunk.id,
      object: chunk.object ?? 'chat.completion.chunk',
      created: chunk.created,
      model: chunk.model,
    };
    const kept: unknown[] = [];
    for (const choice of chunk.choices) {
      if (!isRecord(choice)) {
        kept.push(choice);
        continue;
      }
      const index = typeof choice.index === 'number' ? choice.index : 0;
      let state = this.choices.get(index);
      if (state === undefined) this.choices.set(index, (state = { held: '', state: 0, stopped: false }));
      if (this.rewriteChoice(choice, state)) kept.push(choice);
    }
    if (kept.length === 0 && chunk.usage === undefined) return null;
    chunk.choices = kept;
    return JSON.stringify(chunk);
  }

  /** One choice of a chunk, rewritten in place; whether anything of it is left to give. */
  private rewriteChoice(choice: Record<string, unknown>, state: ChoiceText): boolean {
    const delta = isRecord(choice.delta) ? choice.delta : undefined;
    if (state.stopped) return false;
    const finishing = saysFinish(choice.finish_reason);
    if (delta === undefined) return true;
    const given = typeof delta.content === 'string' ? delta.content : undefined;
    // Text held goes before calls, and at the choice's end; an answer of parts passes as it came.
    if (given === undefined && state.held === '') return true;
    if (given === undefined && !finishing && delta.tool_calls === undefined) return true;
    const text = state.held + (given ?? '');
    const read = this.stops.read(given ?? '', state.state);
    if (read.stopAt !== undefined) {
      delta.content = text.slice(0, state.held.length + read.stopAt);
      delete delta.tool_calls;
      delta.ctxgate_anthropic_stop = stoppedBy(read.stop);
      choice.finish_reason = 'stop';
      state.held = '';
      state.stopped = true;
      return true;
    }
    // All of it given at the choice's end or before its calls; else all but where a stop may begin.
    const ends = finishing || delta.tool_calls !== undefined;
    state.state = ends ? 0 : read.state;
    let keep = Math.max(0, text.length - this.stops.heldBy(state.state));
    // Never between the halves of a character written as two UTF-16 units.
    if (keep > 0 && keep < text.length && isHighSurrogate(text.charCodeAt(keep - 1))) keep--;
    delta.content = text.slice(0, keep);
    state.held = text.slice(keep);
    return true;
  }

  /** The lines of an event of every choice's held text (its data and the blank line ending it); none when none is held. */
  private heldLines(): string[] {
    const choices: unknown[] = [];
    for (const [index, state] of this.choices) {
      if (state.stopped || state.held === '') continue;
      choices.push({ index, delta: { content: state.held }, logprobs: null, finish_reason: null });
      state.held = '';
    }
    if (choices.length === 0) return [];
    return [`data: ${JSON.stringify(Object.assign({}, this.envelope, { choices }))}`, ''];
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * A chat answer (a whole completion or an event stream) cut at the first of `stops` in each choice's
 * text. Any other status, and an answer that is not JSON, as it came.
 */
export function withAnswerStops(response: UpstreamResponse, stops: readonly string[]): UpstreamResponse {
  if (response.statusCode >= 300 || stops.length === 0) return response;
  const matcher = new StopMatcher(stops);
  const type = response.headers['content-type'];
  const streamed = (Array.isArray(type) ? type.join(',') : (type ?? '')).includes('text/event-stream');
  if (!streamed)
    return withWholeBody(response, (body) => {
      try {
        const completion: unknown = JSON.parse(body.toString('utf8'));
        return cutCompletion(completion, matcher) ? Buffer.from(JSON.stringify(completion)) : body;
      } catch {
        return body;
      }
    });
  // A look at the first events sees them as the upstream gave them (an error, a recall call's lead).
  return withEventsRewritten(response, () => new StreamStops(matcher));
}
