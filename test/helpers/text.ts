// Small pieces the tests, the fakes and the bench share: a seeded random source, a message content's
// text, and prose of a known token count.

/** A seeded random source (mulberry32), so a run is reproducible. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A message content's text: the string, or its parts' texts joined. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part: { text?: unknown }) => (typeof part.text === 'string' ? part.text : ''))
      .join('');
  return '';
}

const vocabulary = [
  'ledger',
  'orbit',
  'harbor',
  'quartz',
  'signal',
  'meadow',
  'vector',
  'cinder',
  'pilot',
  'lantern',
];

/** `tokens` words that o200k_base counts one token each, varied by `seed`. */
export const prose = (tokens: number, seed: number): string =>
  Array.from({ length: tokens }, (_unused, index) => vocabulary[(index * 7 + seed) % vocabulary.length]).join(
    ' ',
  );
