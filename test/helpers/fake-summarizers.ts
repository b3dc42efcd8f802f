// Three summarizers for the strict fake provider, as real ones behave: an ideal extractive one (copies
// every fact line), a realistic one (restates each stated fact in its own words, keeping codes and
// names, and drops filler, turn counters and list numbering), and a lossy one (realistic, but loses a
// fifth of the facts at random). Each answers the gateway's summary requests and its repair requests.
import { seeded, textOf } from './text.js';

export type Summarizer = (messages: ReadonlyArray<{ role: string; content?: unknown }>) => string;

/** The request's text, split into sentences and lines, without the transcript's role labels. */
function sentencesOf(messages: ReadonlyArray<{ role: string; content?: unknown }>): string[] {
  const text = messages
    .slice(1)
    .map((message) => textOf(message.content))
    .join('\n');
  return text
    .split(/\n+|(?<=[.!?])\s+/)
    .map((sentence) => sentence.replace(/^\s*(?:- |\[[a-z ]+[^\]]*\]\s*)/, '').trim())
    .filter((sentence) => sentence !== '');
}

export interface FactShape {
  /** Finds a fact in a sentence and gives what identifies it and the value it states. */
  find(sentence: string): { key: string; value: string } | undefined;
  /** The realistic summarizer's own words for a fact. */
  restate(key: string, value: string): string;
}

/** Copies every sentence that states a fact, as it is. */
export function extractiveSummarizer(shape: FactShape): Summarizer {
  return (messages) => {
    const lines = new Set<string>();
    for (const sentence of sentencesOf(messages)) if (shape.find(sentence) !== undefined) lines.add(sentence);
    return [...lines].join('\n');
  };
}

/**
 * Restates each fact once in its own words; with `loseShare`, loses that share of the facts it was
 * given (each call decides afresh, as a model would).
 */
export function paraphrasingSummarizer(
  shape: FactShape,
  options: { loseShare?: number; seed?: number } = {},
): Summarizer {
  const random = seeded(options.seed ?? 7);
  return (messages) => {
    const facts = new Map<string, string>();
    for (const sentence of sentencesOf(messages)) {
      const fact = shape.find(sentence);
      if (fact !== undefined) facts.set(fact.key, fact.value);
    }
    const lines: string[] = [];
    for (const [key, value] of facts) {
      if (options.loseShare !== undefined && random() < options.loseShare) continue;
      lines.push(shape.restate(key, value));
    }
    return lines.length === 0 ? 'Nothing of note was decided.' : lines.join('\n');
  };
}
