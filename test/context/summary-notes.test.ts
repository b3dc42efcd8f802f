// The notes region of a session summary: the user's own sentences that state a fact, copied out of the
// covered turns verbatim (numbering and pasted material aside), carried from summary to summary and
// bounded by tokens, the oldest leaving first; for a summary of an agent turn's steps, the agent's calls.
import { describe, expect, it } from 'vitest';
import {
  formatTurnSegment,
  parseTurnSegments,
  callsHeading,
  callStatements,
  joinSummaryText,
  mergeNotes,
  notesHeading,
  splitSummaryText,
  userStatements,
} from '../../src/context/summary-notes.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';

const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');

describe('userStatements', () => {
  it.each<[string, string, string[]]>([
    [
      'a numbered list: the fact line without its number',
      'Notes for today:\n1. lamp river stone\n2. The access code for vault 3 is K3-12345.\n3. quiet field',
      ['The access code for vault 3 is K3-12345.'],
    ],
    [
      'sentences in a line',
      'Ship it on Friday. Our invoice is INV-2024-0042. Thanks!',
      ['Our invoice is INV-2024-0042.'],
    ],
    [
      'a path and an amount',
      'Put it in src/billing/invoice.ts and charge 1,250.50 EUR',
      ['Put it in src/billing/invoice.ts and charge 1,250.50 EUR'],
    ],
    ['no fact: small counts and plain words', 'Give me 3 options for turn 12, please.', []],
    [
      'pasted material (a long message) is not a statement',
      `README: ${'see docs/setup_guide.md '.repeat(80)}`,
      [],
    ],
  ])('%s', (_name, text, expected) => {
    expect(userStatements([{ role: 'user', content: text }])).toEqual(expected);
  });

  it('reads user messages only', () => {
    expect(
      userStatements([
        { role: 'assistant', content: 'The code is K9-99999.' },
        { role: 'tool', tool_call_id: 'a', content: 'version 4.12.7' },
        { role: 'user', content: 'Mine is K1-10000.' },
      ]),
    ).toEqual(['Mine is K1-10000.']);
  });

  it('never cuts a long sentence between the two halves of an emoji, wherever the cut falls', () => {
    for (let shift = 0; shift < 4; shift++) {
      const sentence = `${'🎉'.repeat(80)}${'x'.repeat(shift)} The code is K7-55555 ${'🚀'.repeat(100)}`;
      const [statement] = userStatements([{ role: 'user', content: sentence }]);
      expect(statement).toContain('K7-55555');
      expect(statement?.isWellFormed()).toBe(true);
    }
  });
});

describe('mergeNotes', () => {
  it('keeps each statement once, the repeated one as the newest', () => {
    expect(mergeNotes(['A is K1-1.', 'B is K2-2.'], ['a  is k1-1.', 'C is K3-3.'], 1_000, tokenizer)).toEqual(
      ['B is K2-2.', 'a  is k1-1.', 'C is K3-3.'],
    );
  });

  it('drops the oldest first when over the budget', () => {
    const notes = Array.from(
      { length: 40 },
      (_unused, index) => `The code for vault ${index} is K${index}-12345.`,
    );
    const kept = mergeNotes(notes.slice(0, 20), notes.slice(20), 150, tokenizer);
    expect(kept.at(-1)).toBe(notes[39]);
    expect(kept.length).toBeLessThan(40);
    expect(kept).toEqual(notes.slice(40 - kept.length));
    const tokens = kept.reduce((sum, note) => sum + tokenizer.count(note) + 2, 0);
    expect(tokens).toBeLessThanOrEqual(150);
  });

  it('keeps nothing with no budget', () => {
    expect(mergeNotes(['A is K1-1.'], ['B is K2-2.'], 0, tokenizer)).toEqual([]);
  });
});

describe('the stored text', () => {
  it('splits back into the prose and the notes it was joined from', () => {
    const text = joinSummaryText('They agreed on the rollout.', ['Vault 1 is K1-10000.', 'Pay 1,250 EUR.']);
    expect(text).toContain(notesHeading);
    expect(splitSummaryText(text)).toEqual({
      prose: 'They agreed on the rollout.',
      notes: ['Vault 1 is K1-10000.', 'Pay 1,250 EUR.'],
    });
  });

  it('is the prose alone without notes, and a summary stored before notes existed reads as prose', () => {
    expect(joinSummaryText('Prose only.', [])).toBe('Prose only.');
    expect(splitSummaryText('Prose only.')).toEqual({ prose: 'Prose only.', notes: [] });
    expect(splitSummaryText(undefined)).toEqual({ prose: undefined, notes: [] });
  });
});

describe('callStatements', () => {
  const call = (name: string, args: string) => ({
    id: `call_${name}`,
    type: 'function' as const,
    function: { name, arguments: args },
  });

  it('gives each call of the covered steps as tool(arguments), oldest first, results and text aside', () => {
    expect(
      callStatements([
        { role: 'user', content: 'The path is src/app.ts.' },
        {
          role: 'assistant',
          content: 'Reading both.',
          tool_calls: [call('read_file', '{"path": "src/a.ts"}'), call('grep', '{\n  "pattern": "retry"\n}')],
        },
        { role: 'tool', tool_call_id: 'call_read_file', content: 'export const a = 1; // src/other.ts' },
        { role: 'assistant', content: null, tool_calls: [call('list_dir', '')] },
      ]),
    ).toEqual(['read_file({"path": "src/a.ts"})', 'grep({ "pattern": "retry" })', 'list_dir()']);
  });

  it('cuts a call with long arguments to one line of 300 characters', () => {
    const [line] = callStatements([
      {
        role: 'assistant',
        content: null,
        tool_calls: [call('write_file', `{"text":"${'x'.repeat(2_000)}"}`)],
      },
    ]);
    expect(line).toHaveLength(300);
    expect(line?.startsWith('write_file({"text":"xxx')).toBe(true);
    expect(line?.endsWith('…')).toBe(true);
  });

  it('never cuts a call between the two halves of an emoji, wherever the cut falls', () => {
    // Half an emoji is written `\\ud83d`, which strict providers refuse with the whole body.
    for (let shift = 0; shift < 4; shift++) {
      const [line] = callStatements([
        {
          role: 'assistant',
          content: null,
          tool_calls: [call('write_file', `{"text":"${'x'.repeat(270 + shift)}${'🚀'.repeat(40)}"}`)],
        },
      ]);
      expect(line?.isWellFormed()).toBe(true);
      expect(line?.endsWith('🚀…')).toBe(true);
    }
  });

  it('is stored under its own heading, which a history summary does not read as its notes', () => {
    const text = joinSummaryText('Read the retry modules.', ['read_file({"path":"src/a.ts"})'], callsHeading);
    expect(splitSummaryText(text, callsHeading)).toEqual({
      prose: 'Read the retry modules.',
      notes: ['read_file({"path":"src/a.ts"})'],
    });
    expect(splitSummaryText(text).notes).toEqual([]);
  });
});

describe("a turn summary's segments", () => {
  const segment = (fromStep: number, toStep: number, prose: string, calls: string[]) => ({
    fromStep,
    toStep,
    messages: 2 * (toStep - fromStep + 1),
    prose,
    calls,
  });

  it('reads back what was written, segment by segment and in order', () => {
    const written = [
      segment(1, 3, 'Read the config loader.\nFound the retry budget in two places.', [
        'read_file({"path":"a.ts"})',
      ]),
      segment(4, 4, 'Ran the tests: 2 failures.', []),
      segment(5, 7, 'Fixed retry.ts.', ['edit({"path":"retry.ts"})', 'run("npm test")']),
    ];
    const text = written.map(formatTurnSegment).join('\n\n');
    expect(parseTurnSegments(text)).toEqual(written);
  });

  it('opens each segment with its steps and messages, and puts its calls under their heading', () => {
    expect(formatTurnSegment(segment(4, 5, 'Read two files.', ['read_file({"path":"b.ts"})']))).toBe(
      [
        '[ctxgate] Steps 4 to 5 (4 messages):',
        'Read two files.',
        '',
        "[ctxgate] The agent's calls in these steps, kept verbatim:",
        '- read_file({"path":"b.ts"})',
      ].join('\n'),
    );
  });

  it('takes a summary written before segments as one segment of unknown steps', () => {
    const old = "Read the files.\n\n[ctxgate] The agent's calls in these steps, kept verbatim:\n- ls()";
    expect(parseTurnSegments(old)).toEqual([
      { fromStep: 0, toStep: 0, messages: 0, prose: 'Read the files.', calls: ['ls()'] },
    ]);
  });

  it.each<[string, string | undefined]>([
    ['no summary', undefined],
    ['an empty one', ''],
    ['blank lines', '\n\n'],
  ])('reads %s as no segments', (_name, text) => {
    expect(parseTurnSegments(text)).toEqual([]);
  });
});
