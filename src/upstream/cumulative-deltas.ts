// Chat streams whose every delta is the whole text so far (docs/budgeting.md#deltas-that-repeat-the-text-so-far).
// DashScope's Coding Plan paths and QwenLM's chat API stream `delta.content`, and the reasoning beside
// it, as everything written until then, not what is new (QwenLM/qwen-code#3896,
// CherryHQ/cherry-studio#833): a client joins deltas, as OpenAI's stream contract says, and showed each
// prefix again, and a session stored that as the answer. Such a stream is given as OpenAI streams: each
// delta what its text adds.
//
// A stream is watched from its start, its deltas' text read as the provider escaped it (no event is
// parsed): it is cumulative when a delta begins with the whole of its channel's text so far and goes on
// (that text holding a letter or a digit: a first "\n" or "**" followed by more of the same is a stream
// as OpenAI's), or repeats it exactly at 64 characters or more. A stream found cumulative late — its
// first delta of no letter, its second beginning with it — is given as OpenAI's from its third delta,
// the first repeated once. A cumulative stream shows itself by its third delta of text: after that
// (or 1,024 characters of one channel) without a sign, the stream is as OpenAI's and is read no more.
// Streams of more than one choice are not read.

/** The fields whose text a delta carries. */
type Channel = 'content' | 'reasoning_content' | 'reasoning';

/**
 * A delta's text, as the provider escaped it (its bytes as latin1 characters): the field, and the JSON
 * string's inside.
 */
const deltaText = /"(content|reasoning_content|reasoning)":\s?"((?:[^"\\]|\\.)*)"/g;

const deltaKey = Buffer.from('"delta"');

/** An exact repeat of the text so far this long is a cumulative stream's, not a model repeating itself. */
const repeatAtLeast = 64;
/**
 * A channel's text this long, or this many deltas of text after each channel's first, without a sign: a
 * stream as OpenAI's.
 */
const watchedChars = 1024;
const watchedDeltas = 2;

interface Watched {
  /** The channel's text so far, as the provider escaped it. */
  text: string;
  /** Its last delta, as escaped. */
  last: string;
}

/** One chat stream's deltas given as what each adds, when the provider gave each as the whole so far. */
export class CumulativeDeltas {
  private mode: 'watching' | 'incremental' | 'cumulative' = 'watching';
  private readonly watched = new Map<Channel, Watched>();
  private deltas = 0;
  /** Once cumulative: each channel's whole text so far (decoded). */
  private readonly whole = new Map<string, string>();

  /** `events`: whole events (relay.ts's EventBoundaryBuffer). The same buffer when nothing changed. */
  rewrite(events: Buffer): Buffer {
    if (this.mode === 'incremental') return events;
    if (this.mode === 'cumulative') return this.suffixesIn(events);
    const from = this.watch(events);
    return from === undefined
      ? events
      : Buffer.concat([events.subarray(0, from), this.suffixesIn(events.subarray(from))]);
  }

  /**
   * Reads the texts of events while the stream's kind is not known, each byte as a character (latin1: no
   * decoding, and a prefix of the bytes is one of the text): where the event that found the stream
   * cumulative begins, if one did.
   */
  private watch(events: Buffer): number | undefined {
    for (let delta = events.indexOf(deltaKey); delta !== -1;) {
      const lineEnd = events.indexOf(0x0a, delta);
      const end = lineEnd === -1 ? events.length : lineEnd;
      const next = events.indexOf(deltaKey, delta + deltaKey.length);
      // Two choices in one chunk (n > 1): not read.
      if (next !== -1 && next < end) return void this.stopWatching();
      const found = this.watchTexts(events.toString('latin1', delta, end));
      if (found === 'cumulative') return events.lastIndexOf(0x0a, delta) + 1;
      if (found === 'incremental') return undefined;
      delta = next;
    }
    return undefined;
  }

  /** One event's texts (its line from its delta on) read while watching: what the stream is found to be. */
  private watchTexts(line: string): CumulativeDeltas['mode'] {
    const texts: Array<[Channel, string]> = [];
    deltaText.lastIndex = 0;
    for (let match = deltaText.exec(line); match !== null; match = deltaText.exec(line))
      if (match[2] !== '') texts.push([match[1] as Channel, match[2] as string]);
    for (const [channel, escaped] of texts) {
      const seen = this.watched.get(channel);
      const base = seen === undefined ? undefined : cumulativeBase(seen, escaped);
      if (base === undefined) continue;
      this.mode = 'cumulative';
      for (const [other, { text }] of this.watched) this.whole.set(other, decoded(text) ?? '');
      this.whole.set(channel, decoded(base) ?? '');
      this.watched.clear();
      return this.mode;
    }
    for (const [channel, escaped] of texts) {
      const seen = this.watched.get(channel);
      if (seen === undefined) this.watched.set(channel, { text: escaped, last: escaped });
      else {
        seen.text += escaped;
        seen.last = escaped;
        if (seen.text.length >= watchedChars || ++this.deltas >= watchedDeltas) return this.stopWatching();
      }
    }
    return this.mode;
  }

  /** The stream is as OpenAI's: no longer read. */
  private stopWatching(): 'incremental' {
    this.mode = 'incremental';
    this.watched.clear();
    return this.mode;
  }

  /** Events of a cumulative stream with each text as what it adds. The same buffer when nothing changed. */
  private suffixesIn(events: Buffer): Buffer {
    const lines = events.toString('utf8').split('\n');
    let changed = false;
    for (let position = 0; position < lines.length; position++) {
      const line = lines[position] as string;
      const rewritten = line.startsWith('data:') ? this.suffixesOf(line) : undefined;
      if (rewritten === undefined) continue;
      lines[position] = rewritten;
      changed = true;
    }
    return changed ? Buffer.from(lines.join('\n')) : events;
  }

  /** One event of a cumulative stream with each text as what it adds; undefined when it stays as it is. */
  private suffixesOf(line: string): string | undefined {
    let chunk: unknown;
    try {
      chunk = JSON.parse(line.slice(5));
    } catch {
      return undefined;
    }
    const choices = (chunk as { choices?: unknown } | null)?.choices;
    if (!Array.isArray(choices)) return undefined;
    let changed = false;
    for (const choice of choices) {
      const delta = (choice as { delta?: unknown } | null)?.delta as Record<string, unknown> | undefined;
      if (typeof delta !== 'object' || delta === null) continue;
      for (const channel of ['content', 'reasoning_content', 'reasoning'] as const) {
        const text = delta[channel];
        if (typeof text !== 'string' || text === '') continue;
        const added = this.added(channel, text);
        if (added === text) continue;
        delta[channel] = added;
        changed = true;
      }
    }
    return changed ? `data: ${JSON.stringify(chunk)}${line.endsWith('\r') ? '\r' : ''}` : undefined;
  }

  /**
   * What a delta of a cumulative stream adds to its channel's text: what follows the text so far; nothing
   * when it repeats some of it; the whole delta when it is not the text so far at all (the provider went
   * on as OpenAI does).
   */
  private added(channel: string, text: string): string {
    const before = this.whole.get(channel) ?? '';
    if (text.startsWith(before)) {
      this.whole.set(channel, text);
      return text.slice(before.length);
    }
    if (before.startsWith(text)) return '';
    this.whole.set(channel, before + text);
    return text;
  }
}

/**
 * When `escaped` (a channel's next delta) shows the stream gives each delta as the whole text so far: the
 * text it is the whole of (escaped) — the text so far, when the delta begins with it and goes on or
 * repeats it at length; found late, the last delta, when the delta begins with it and it began with all
 * the text before it.
 */
function cumulativeBase(seen: Watched, escaped: string): string | undefined {
  const { text, last } = seen;
  if (
    escaped.startsWith(text) &&
    (escaped.length > text.length ? holdsWord(text) : text.length >= repeatAtLeast)
  )
    return text;
  const earlier = text.slice(0, text.length - last.length);
  if (
    earlier !== '' &&
    last.startsWith(earlier) &&
    escaped.length > last.length &&
    escaped.startsWith(last) &&
    holdsWord(last)
  )
    return last;
  return undefined;
}

/** Whether an escaped text holds a letter or a digit. */
function holdsWord(escaped: string): boolean {
  return /[\p{L}\p{N}]/u.test(decoded(escaped) ?? '');
}

/** An escaped JSON string's inside (its bytes as latin1 characters), decoded; undefined when it is not one. */
function decoded(escaped: string): string | undefined {
  try {
    return JSON.parse(`"${Buffer.from(escaped, 'latin1').toString('utf8')}"`) as string;
  } catch {
    return undefined;
  }
}
