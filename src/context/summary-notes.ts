// The notes region of a session's summary: what the user stated, kept verbatim beside the summarizer's
// prose. A summarizer paraphrases and drops what it judges minor — real ones keep 40–70% of the
// identifiers they are given, and a running summary loses more at every rewrite — so the user's own
// sentences that carry a fact (a code, an amount, a date, a path, a name with digits) are not left to
// it: the gateway copies them out of the covered turns, carries them from summary to summary, and bounds
// them by tokens (the oldest leave first). Pasted material (a user message longer than
// `pasteCharacters`: a README, a log) is not the user's statement and is left to the summary. A summary
// of an agent turn's steps keeps the agent's calls the same way (each tool and its arguments: the files
// read, the commands run), so the model knows what it already did and no repair call asks for the paths
// a summarizer paraphrased away. Pure.
import { identifierFacts } from './summary.js';
import { messageText } from './turns.js';
import type { ContextMessage, Tokenizer } from './types.js';
import { sliceWhole } from '../text-slices.js';

/** The line that opens the notes in a stored summary's text (the prose comes before it). */
export const notesHeading = "[ctxgate] The user's own statements, kept verbatim:";

/** The line that opens the agent's calls in a stored summary of a turn's steps. */
export const callsHeading = "[ctxgate] The agent's calls in these steps, kept verbatim:";

/** A user message longer than this is pasted material, not a statement of the user's own. */
const pasteCharacters = 1_200;
/** A statement longer than this is cut around its facts: a note is a sentence, not a paragraph. */
const noteCharacters = 300;

/** The stored summary text as its two parts: the summarizer's prose and the notes under `heading`. */
export function splitSummaryText(
  text: string | undefined,
  heading: string = notesHeading,
): { prose: string | undefined; notes: string[] } {
  if (text === undefined) return { prose: undefined, notes: [] };
  const at = text.indexOf(heading);
  if (at < 0) return { prose: text, notes: [] };
  const notes = text
    .slice(at + heading.length)
    .split('\n')
    .map((line) => line.replace(/^- /, '').trim())
    .filter((line) => line !== '');
  return { prose: text.slice(0, at).trim(), notes };
}

/** The text stored and rendered: the prose, then the notes under their heading. */
export function joinSummaryText(
  prose: string,
  notes: readonly string[],
  heading: string = notesHeading,
): string {
  if (notes.length === 0) return prose;
  return `${prose}\n\n${heading}\n${notes.map((note) => `- ${note}`).join('\n')}`;
}

/** One segment of a turn's summary: the steps it covers, the summarizer's prose, the agent's calls. */
export interface TurnSegment {
  /** The first and last step it covers, counted from the turn's start (1-based). */
  fromStep: number;
  toStep: number;
  /** Messages of the turn it covers. */
  messages: number;
  prose: string;
  calls: readonly string[];
}

const segmentLabel = /^\[ctxgate\] Steps (\d+) to (\d+) \((\d+) messages\):$/;

/**
 * A turn's summary is written in segments, each appended as the steps it covers leave the window and
 * none rewritten until they are merged into one: the text before the newest segment stays as it was.
 */
export function formatTurnSegment(segment: TurnSegment): string {
  const label = `[ctxgate] Steps ${segment.fromStep} to ${segment.toStep} (${segment.messages} messages):`;
  return `${label}\n${joinSummaryText(segment.prose, segment.calls, callsHeading)}`;
}

/**
 * A stored turn summary's segments, oldest first. Text written before segments existed (prose and the
 * calls under their heading, no label) is one segment whose steps are not known (0 to 0).
 */
export function parseTurnSegments(text: string | undefined): TurnSegment[] {
  if (text === undefined || text.trim() === '') return [];
  const segments: TurnSegment[] = [];
  let current: { head: Omit<TurnSegment, 'prose' | 'calls'>; lines: string[] } = {
    head: { fromStep: 0, toStep: 0, messages: 0 },
    lines: [],
  };
  const close = (): void => {
    const body = current.lines.join('\n').trim();
    if (body === '' && current.head.toStep === 0) return;
    const { prose, notes } = splitSummaryText(body, callsHeading);
    segments.push(Object.assign({}, current.head, { prose: prose ?? '', calls: notes }));
  };
  for (const line of text.split('\n')) {
    const label = segmentLabel.exec(line);
    if (label === null) {
      current.lines.push(line);
      continue;
    }
    close();
    current = {
      head: { fromStep: Number(label[1]), toStep: Number(label[2]), messages: Number(label[3]) },
      lines: [],
    };
  }
  close();
  return segments;
}

/** The agent's calls in `covered`, oldest first, as `tool(arguments)` on one line each (long ones cut). */
export function callStatements(covered: readonly ContextMessage[]): string[] {
  const statements: string[] = [];
  for (const message of covered)
    for (const call of message.tool_calls ?? []) {
      const name = call.function?.name ?? 'tool';
      const args = (call.function?.arguments ?? '').replace(/\s+/g, ' ').trim();
      const line = `${name}(${args})`;
      statements.push(line.length <= noteCharacters ? line : `${sliceWhole(line, 0, noteCharacters - 1)}…`);
    }
  return statements;
}

/** The sentences (or lines) of the user's own messages in `covered` that state a fact, oldest first. */
export function userStatements(covered: readonly ContextMessage[]): string[] {
  const statements: string[] = [];
  for (const message of covered) {
    if (message.role !== 'user') continue;
    const text = messageText(message);
    if (text.length > pasteCharacters) continue;
    for (const line of text.split('\n'))
      for (const raw of line.split(/(?<=[.!?])\s+/)) {
        // List numbering and bullets are the user's layout, not the fact.
        const sentence = raw.replace(/^\s*(?:\d{1,3}[.)]|[-*•])\s+/, '').trim();
        const facts = identifierFacts(sentence);
        if (facts.length === 0) continue;
        if (sentence.length <= noteCharacters) statements.push(sentence);
        else {
          const at = sentence.indexOf(facts[0] as string);
          statements.push(sliceWhole(sentence, Math.max(0, at - 140), at + 160).trim());
        }
      }
  }
  return statements;
}

const normal = (note: string): string => note.replace(/\s+/g, ' ').trim().toLowerCase();

/**
 * The notes once `fresh` statements join `previous` ones: each once (a repeated statement moves to the
 * end, as the newest), at most `budgetTokens` in all, the oldest leaving first.
 */
export function mergeNotes(
  previous: readonly string[],
  fresh: readonly string[],
  budgetTokens: number,
  tokenizer: Tokenizer,
): string[] {
  const byKey = new Map<string, string>();
  for (const note of [...previous, ...fresh]) {
    const key = normal(note);
    byKey.delete(key);
    byKey.set(key, note);
  }
  const notes = [...byKey.values()];
  let tokens = 0;
  let keepFrom = notes.length;
  while (keepFrom > 0) {
    const cost = tokenizer.count(notes[keepFrom - 1] as string) + 2;
    if (tokens + cost > budgetTokens) break;
    tokens += cost;
    keepFrom--;
  }
  return notes.slice(keepFrom);
}
