// A chat stream's tool calls each opened with its whole name (docs/budgeting.md#tool-names). OpenAI
// gives a call's name whole on its first delta, and every reader of the stream counts on it: the
// official client takes the last name it is given, the AI SDK the first, and the gateway's own readers
// (the Responses and Messages translators, the chat client's normalizer) open the call with it. Gemini
// and Mistral stream a name in pieces, as they stream arguments ('edit_ex' then 'isting_file',
// continuedev/continue#5849; openclaw/openclaw#130532): a client ran a tool that does not exist. Here a
// call whose first name is not one of the tools sent (or is the beginning of another's) is held until
// its arguments begin, another call begins, its choice finishes or the stream ends, and then opened with
// the name its pieces make; the name the client gave its tool is given back at the same time
// (tool-names.ts). The usual stream, each call named whole on its first delta, passes as it came.

import { withDataRewritten } from './sse.js';
import { chatChunkOf, isRecord, saysFinish } from './tool-call-shape.js';

const toolCallsKey = Buffer.from('"tool_calls"');
/** A delta that names a call (the name of a whole call, or a piece of it). */
const namePattern = /"name"\s*:\s*"/;

/** A call whose opening delta is held until its name is whole. */
interface HeldCall {
  choice: number;
  index: number;
  /** The id it was opened with, if any. */
  id: string | undefined;
  /** Its name so far. */
  name: string;
  /** Its opening delta with what later deltas added beside the name. */
  entry: Record<string, unknown>;
  /** The `id`, `object`, `created` and `model` of the chunk it opened in, for an event of its own. */
  envelope: Record<string, unknown>;
}

/**
 * Calls held at once, across choices: a stream that opens more (a choice index per chunk) has the rest
 * go as they came, so that no stream's calls cost more than a look each.
 */
const maxHeld = 64;

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** Arguments that begin the call's value (a piece of JSON text, or an object some servers give). */
const argumentsGiven = (fn: Record<string, unknown> | undefined): boolean =>
  fn !== undefined && fn.arguments !== undefined && fn.arguments !== null && fn.arguments !== '';

/** `entry`'s members that say something (not null), each over `into`'s. */
function withSaid(into: Record<string, unknown>, entry: Record<string, unknown>): Record<string, unknown> {
  const out = Object.assign({}, into);
  for (const [key, value] of Object.entries(entry))
    if (value !== null && value !== undefined) out[key] = value;
  return out;
}

/** Rewrites a chat stream's events so that each call opens with its whole name, given as the client named it. */
export class StreamedToolNames {
  private held: HeldCall[] = [];
  /** The names of the tools sent, in order (made when first needed). */
  private sorted: string[] | undefined;

  /**
   * `offered`: the names of the tools sent (a first name that is one of them, and the beginning of no
   * other, is whole); `toClient`: the client's name of each tool sent under another.
   */
  constructor(
    private readonly offered: ReadonlySet<string>,
    private readonly toClient: ReadonlyMap<string, string> | undefined,
  ) {}

  /** `events`: whole events (relay.ts's EventBoundaryBuffer). The same buffer when nothing changed. */
  rewrite(events: Buffer): Buffer {
    if (this.held.length === 0 && events.indexOf(toolCallsKey) === -1) return events;
    return withDataRewritten(
      events,
      (data, line) => (this.mayChange(line) ? this.rewriteData(data) : undefined),
      () => (this.held.length > 0 ? this.releaseAll() : []),
    );
  }

  /** What is still held when the stream ended: an event of its own; undefined when nothing is. */
  end(): Buffer | undefined {
    if (this.held.length === 0) return undefined;
    return Buffer.from(`${this.releaseAll().join('\n')}\n`);
  }

  private mayChange(line: string): boolean {
    if (this.held.length > 0) return true;
    return line.includes('"tool_calls"') && namePattern.test(line);
  }

  /** A chunk's data written anew; undefined when it is as it was, null when nothing of it is left. */
  private rewriteData(data: string): string | undefined | null {
    const chunk = chatChunkOf(data);
    if (chunk === undefined) return undefined;
    let changed = false;
    let said = false;
    for (const choice of chunk.choices) {
      if (!isRecord(choice)) continue;
      const at = typeof choice.index === 'number' ? choice.index : 0;
      const delta = isRecord(choice.delta) ? choice.delta : undefined;
      const given = Array.isArray(delta?.tool_calls) ? (delta.tool_calls as unknown[]) : undefined;
      const out: unknown[] = [];
      for (const entry of given ?? []) changed = this.take(at, entry, chunk, out) || changed;
      // A choice that finishes opens what it holds first.
      const finishes = saysFinish(choice.finish_reason);
      if (finishes && this.held.some((call) => call.choice === at)) {
        out.unshift(...this.release((call) => call.choice === at));
        changed = true;
      }
      if (delta !== undefined && given !== undefined) {
        if (out.length > 0) delta.tool_calls = out;
        else delete delta.tool_calls;
      } else if (out.length > 0) choice.delta = Object.assign({}, delta, { tool_calls: out });
      said ||= finishes || (isRecord(choice.delta) && Object.keys(choice.delta).length > 0);
    }
    if (!changed) return undefined;
    // A chunk that only held a call's piece is left out (an event with nothing to say).
    const usage = chunk.usage;
    return said || (usage !== undefined && usage !== null) ? JSON.stringify(chunk) : null;
  }

  /** One delta of a choice's calls: what of it goes on is added to `out`; true when it changed. */
  private take(choice: number, entry: unknown, chunk: Record<string, unknown>, out: unknown[]): boolean {
    if (!isRecord(entry)) {
      out.push(entry);
      return false;
    }
    const index = typeof entry.index === 'number' ? entry.index : undefined;
    const fn = isRecord(entry.function) ? entry.function : undefined;
    const name = nonEmpty(fn?.name) ? fn.name : undefined;
    const id = nonEmpty(entry.id) ? entry.id : undefined;
    const held = this.held.find((call) => call.choice === choice && call.index === index);
    if (held !== undefined && (id === undefined || held.id === undefined || id === held.id)) {
      // A piece of the held call: a name's next piece (a server that repeats the whole name says it again).
      if (name !== undefined && name !== held.name) held.name += name;
      const { function: _function, ...rest } = entry;
      held.entry = withSaid(held.entry, rest);
      if (fn !== undefined)
        held.entry.function = withSaid(
          isRecord(held.entry.function) ? held.entry.function : {},
          Object.assign({}, fn, { name: undefined }),
        );
      if (argumentsGiven(fn)) out.push(...this.release((call) => call === held));
      return true;
    }
    // A call that begins: what is held of this choice opens before it.
    let changed = false;
    if (name !== undefined && this.held.some((call) => call.choice === choice)) {
      out.push(...this.release((call) => call.choice === choice));
      changed = true;
    }
    if (
      name !== undefined &&
      index !== undefined &&
      this.held.length < maxHeld &&
      !argumentsGiven(fn) &&
      !this.isWhole(name)
    ) {
      const envelope: Record<string, unknown> = {};
      for (const key of ['id', 'object', 'created', 'model'])
        if (chunk[key] !== undefined) envelope[key] = chunk[key];
      this.held.push({ choice, index, id, name, entry: Object.assign({}, entry), envelope });
      return true;
    }
    const client = name === undefined ? undefined : this.toClient?.get(name);
    if (client !== undefined && fn !== undefined) {
      out.push(Object.assign({}, entry, { function: Object.assign({}, fn, { name: client }) }));
      return true;
    }
    out.push(entry);
    return changed;
  }

  /** True when a call's first name is a tool sent and the beginning of no other's name. */
  private isWhole(name: string): boolean {
    if (!this.offered.has(name)) return false;
    // In order, the names that begin with `name` come right after it: one look, however many tools.
    const sorted = (this.sorted ??= [...this.offered].sort());
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((sorted[middle] as string) <= name) low = middle + 1;
      else high = middle;
    }
    return !(sorted[low]?.startsWith(name) ?? false);
  }

  /** The held calls `which` picks, each as the delta that opens it with its whole name, in the order held. */
  private release(which: (call: HeldCall) => boolean): Record<string, unknown>[] {
    const released = this.held.filter(which);
    this.held = this.held.filter((call) => !which(call));
    return released.map((call) => {
      const fn = isRecord(call.entry.function) ? call.entry.function : {};
      const name = this.toClient?.get(call.name) ?? call.name;
      return Object.assign({}, call.entry, { function: Object.assign({}, fn, { name }) });
    });
  }

  /** Every held call, each in a chunk of its own (a stream that ended, or said `[DONE]`, without them). */
  private releaseAll(): string[] {
    const calls = [...this.held];
    return calls.flatMap((call) => {
      const [opening] = this.release((held) => held === call);
      const choices = [{ index: call.choice, delta: { tool_calls: [opening] }, finish_reason: null }];
      return [`data: ${JSON.stringify(Object.assign({}, call.envelope, { choices }))}`, ''];
    });
  }
}
