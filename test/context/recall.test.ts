// The recall tool's pure part: which messages it searches (what the model was not shown whole), the
// search itself, and when a request may be offered the tool.
import { describe, expect, it } from 'vitest';
import {
  maxSearchedChars,
  omittedSources,
  recallAllowed,
  recallQuery,
  recallTool,
  searchRecall,
  searchTerms,
  type RecallSource,
} from '../../src/context/recall.js';
import type { ContextMessage } from '../../src/context/types.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';

const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');

const words = ['river', 'stone', 'lamp', 'green', 'window', 'quiet', 'harbor', 'paper'];
const filler = (count: number, offset: number): string =>
  Array.from({ length: count }, (_unused, index) => words[(index * 3 + offset) % words.length]).join(' ');

describe('omittedSources', () => {
  const system: ContextMessage = { role: 'system', content: 'Be brief.' };
  const first: ContextMessage = { role: 'user', content: 'The deploy key is DK-4471.' };
  const firstReply: ContextMessage = { role: 'assistant', content: 'Noted.' };
  const call: ContextMessage = {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
    ],
  };
  const result: ContextMessage = { role: 'tool', tool_call_id: 'c1', content: 'export const retries = 7;' };
  const question: ContextMessage = { role: 'user', content: 'What is the deploy key?' };
  const conversation = [system, first, firstReply, call, result, question];

  it('gives the messages not sent, and the original text of those sent changed, numbered as the history is', () => {
    const masked: ContextMessage = { ...result, content: '[result masked — ~9 tokens removed]' };
    const sources = omittedSources(conversation, [system, call, masked, question], (index) => index + 100);
    expect(sources).toEqual([
      { position: 101, role: 'user', tool: undefined, text: 'The deploy key is DK-4471.' },
      { position: 102, role: 'assistant', tool: undefined, text: 'Noted.' },
      { position: 104, role: 'tool', tool: 'read_file', text: 'export const retries = 7;' },
    ]);
  });

  it('gives nothing when everything was sent as it is, and never the system prompt', () => {
    expect(omittedSources(conversation, conversation)).toEqual([]);
    expect(omittedSources([system, question], [question])).toEqual([]);
  });
});

describe('searchRecall', () => {
  const sources: RecallSource[] = Array.from({ length: 60 }, (_unused, index) => ({
    position: index,
    role: index % 2 === 0 ? 'user' : 'assistant',
    text:
      index === 17
        ? `${filler(40, index)}\nThe access code for vault 7 is K7-38216.\n${filler(40, index + 1)}`
        : index === 33
          ? `${filler(30, index)} The access code for vault 17 is K17-99120. ${filler(30, index)}`
          : `${filler(80, index)} access ${filler(10, index)}`,
  }));

  it('finds the passage that holds every term first, and not the one that only looks alike', () => {
    const answer = searchRecall({ query: 'access code for vault 7', sources, tokenizer, maxTokens: 120 });
    expect(answer.text).toContain('K7-38216');
    expect(answer.text).toContain('[message 17, assistant]');
    expect(answer.text).not.toContain('K17-99120');
    expect(tokenizer.count(answer.text)).toBeLessThanOrEqual(120);
  });

  it('tells "vault 1" from a list numbered 1, 2, 3 that every note has', () => {
    const notes: RecallSource[] = Array.from({ length: 9 }, (_unused, index) => ({
      position: index * 10,
      role: 'user',
      text: `Notes for today:\n1. ${filler(12, index)}\n2. The access code for vault ${index + 1} is K${index + 1}-1000${index}.\n3. ${filler(12, index + 1)}`,
    }));
    for (const vault of [1, 2, 3]) {
      const answer = searchRecall({
        query: `access code vault ${vault}`,
        sources: notes,
        tokenizer,
        maxTokens: 90,
      });
      expect(answer.passages).toBe(1);
      expect(answer.text).toContain(`K${vault}-1000${vault - 1}`);
    }
  });

  it('looks for the first 32 distinct terms of a query, not the thousands after them', () => {
    const chatter = Array.from({ length: 2_000 }, (_unused, index) => `word${index}`).join(' ');
    const first = searchRecall({ query: `vault 7 ${chatter}`, sources, tokenizer, maxTokens: 400 });
    expect(first.text).toContain('K7-38216');
    // "K17-99120" stands as the 2,001st term: past the first 32, not looked for.
    const late = searchRecall({ query: `${chatter} K17-99120`, sources, tokenizer, maxTokens: 400 });
    expect(late.text).not.toContain('K17-99120');
    expect(searchRecall({ query: 'K17-99120', sources, tokenizer, maxTokens: 120 }).text).toContain(
      'K17-99120',
    );
  });

  it('reads at most its bound of text, the newest first', () => {
    const long = 'lamp '.repeat(Math.ceil(maxSearchedChars / 15) + 10);
    const bulky: RecallSource[] = [
      { position: 0, role: 'user', text: 'The oldest note: code ZX-1 here.' },
      ...Array.from({ length: 3 }, (_unused, index) => ({ position: index + 1, role: 'tool', text: long })),
      { position: 4, role: 'user', text: 'The newest note: code ZX-2 here.' },
    ];
    expect(bulky.reduce((sum, source) => sum + source.text.length, 0)).toBeGreaterThan(maxSearchedChars);
    expect(searchRecall({ query: 'ZX-2', sources: bulky, tokenizer, maxTokens: 400 }).text).toContain(
      'The newest note',
    );
    // Past the bound: the oldest note is not read (what matches part of the query is the newest one).
    expect(searchRecall({ query: 'ZX-1', sources: bulky, tokenizer, maxTokens: 400 }).text).not.toContain(
      'The oldest note',
    );
    const within = [bulky[0] as RecallSource, bulky[4] as RecallSource];
    expect(searchRecall({ query: 'ZX-1', sources: within, tokenizer, maxTokens: 400 }).text).toContain(
      'The oldest note',
    );
  });

  it('finds an identifier by itself, and by its parts', () => {
    expect(searchRecall({ query: 'K17-99120', sources, tokenizer, maxTokens: 400 }).text).toContain(
      '[message 33, assistant]',
    );
    const paths: RecallSource[] = [
      {
        position: 3,
        role: 'tool',
        tool: 'read_file',
        text: 'config lives in packages/svc_12/config/settings_3.yaml',
      },
      { position: 4, role: 'user', text: filler(50, 1) },
    ];
    const byPart = searchRecall({ query: 'settings_3', sources: paths, tokenizer, maxTokens: 400 });
    expect(byPart.text).toContain('[message 3, tool result of read_file]');
  });

  it('gives passages in the conversation’s order within the cap, and says how many matched', () => {
    const answer = searchRecall({ query: 'access', sources, tokenizer, maxTokens: 2_000 });
    const positions = [...answer.text.matchAll(/\[message (\d+),/g)].map((match) => Number(match[1]));
    expect(positions.length).toBeGreaterThan(3);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(tokenizer.count(answer.text)).toBeLessThanOrEqual(2_000);
    expect(answer.text).toMatch(/\(\d+ of 60 matching passages\)$/);
  });

  it('says so when nothing matches, nothing is left out, the query holds no words, or nothing fits', () => {
    expect(searchRecall({ query: 'zebra', sources, tokenizer, maxTokens: 400 }).text).toBe(
      'Nothing in the earlier messages that are not shown matches "zebra".',
    );
    expect(searchRecall({ query: 'access', sources: [], tokenizer, maxTokens: 400 }).passages).toBe(0);
    expect(searchRecall({ query: 'what is it?', sources, tokenizer, maxTokens: 400 }).text).toMatch(
      /holds no words to look for/,
    );
    expect(searchRecall({ query: 'vault 7', sources, tokenizer, maxTokens: 20 }).text).toMatch(
      /none fits in the room left/,
    );
  });
});

describe('the tool and its calls', () => {
  it('is offered only where the model is free to choose a tool and gives one answer', () => {
    expect(recallAllowed({})).toBe(true);
    expect(
      recallAllowed({ tool_choice: 'auto', tools: [{ type: 'function', function: { name: 'f' } }] }),
    ).toBe(true);
    expect(recallAllowed({ tool_choice: 'none' })).toBe(false);
    expect(recallAllowed({ tool_choice: 'required' })).toBe(false);
    expect(recallAllowed({ tool_choice: { type: 'function', function: { name: 'f' } } })).toBe(false);
    expect(recallAllowed({ n: 2 })).toBe(false);
    expect(recallAllowed({ tools: [recallTool] })).toBe(false);
  });

  it('reads the query from the call’s arguments, or takes them as they are', () => {
    expect(recallQuery('{"query":"vault 7"}')).toBe('vault 7');
    expect(recallQuery('vault 7')).toBe('vault 7');
    expect(recallQuery(undefined)).toBe('');
  });

  it('splits identifiers into terms and their parts, and leaves out words that say nothing', () => {
    expect(searchTerms('What is the code of svc_12 v1.2?')).toEqual([
      'code',
      'svc_12',
      'svc',
      '12',
      'v1.2',
      'v1',
    ]);
  });
});

describe('searchRecall: what it quotes and cuts', () => {
  // Half an emoji is written `\\ud83d`, which strict providers refuse with the whole body: the
  // answer goes back to the model in the request the gateway continues.
  it('never cuts a query, a long line or the searched text between the two halves of an emoji', () => {
    for (let shift = 0; shift < 4; shift++) {
      const line = `${'x'.repeat(shift)}${'🚀'.repeat(400)} vault 7 ${'🎉'.repeat(400)}`;
      const sources: RecallSource[] = [
        { text: `${'🎉'.repeat(shift)}${'x'.repeat(maxSearchedChars)}`, role: 'user', position: 0 },
        { text: line, role: 'tool', position: 1 },
      ];
      const found = searchRecall({ query: 'vault 7', sources, tokenizer, maxTokens: 4_000 });
      expect(found.passages).toBeGreaterThan(0);
      expect(found.text.isWellFormed()).toBe(true);
      const quoted = searchRecall({
        query: `${'x'.repeat(shift)}${'😀'.repeat(120)} nothing-matches-this`,
        sources,
        tokenizer,
        maxTokens: 4_000,
      });
      expect(quoted.text).toContain('😀');
      expect(quoted.text.isWellFormed()).toBe(true);
    }
  });
});
