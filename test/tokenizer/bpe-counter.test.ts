// The counter must agree with js-tiktoken's reference encoder exactly where it counts exactly, stay
// within 1% where it samples ordinary text, and count pathological input without stalling.
import { randomBytes } from 'node:crypto';
import { getEncoding } from 'js-tiktoken';
import { describe, expect, it } from 'vitest';
import { BpeCounter, exactLimitChars } from '../../src/tokenizer/bpe-counter.js';
import { seeded } from '../helpers/text.js';

const samples = [
  'Hello, world! How are you doing today?',
  "It's we're they've I'm you'll he'd — contractions",
  'function foo(bar) {\n  return bar.map((x) => x * 2);\n}\n',
  '日本語のテキストを数える。中文文本也需要计数。',
  'Привет, как дела? Всё хорошо.',
  'مرحبا بالعالم',
  '😀🎉👍🏽 emoji and ZWJ 👩‍💻 sequences',
  '   multiple   spaces\n\n\nnewlines\t\ttabs  ',
  '1234567890 3.14159 6.02e23 0xDEADBEEF',
  'a'.repeat(1_000),
  'ab'.repeat(700),
  '<|endoftext|> and <|endofprompt|> are plain text here',
  Buffer.from(Array.from({ length: 6_000 }, (_, index) => (index * 7_919) % 256)).toString('base64'),
  'Ünïcödé façade naïve café résumé Straße',
  '',
];

describe.each(['o200k_base', 'cl100k_base'] as const)('BpeCounter %s', (encoding) => {
  const counter = new BpeCounter(encoding);
  const reference = getEncoding(encoding);

  it.each(samples.map((text) => [JSON.stringify(text.slice(0, 24)), text] as const))(
    'counts %s exactly as js-tiktoken',
    (_label, text) => {
      expect(counter.count(text)).toBe(reference.encode(text, [], []).length);
    },
  );

  it('truncates to whole pieces within the limit, from the head and from the tail', () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(50);
    const head = counter.truncate(text, 40, 'head');
    const tail = counter.truncate(text, 40, 'tail');
    expect(text.startsWith(head.text)).toBe(true);
    expect(text.endsWith(tail.text)).toBe(true);
    for (const part of [head, tail]) {
      expect(part.tokens).toBe(reference.encode(part.text).length);
      expect(part.tokens).toBeLessThanOrEqual(40);
      expect(part.tokens).toBeGreaterThanOrEqual(36);
    }
  });

  it('fills the limit when tokens are long (a wider window is read), from both sides', () => {
    // About 10 characters a token: a window of 6 characters a token holds too few.
    const text = ' internationalization'.repeat(1_200);
    for (const keep of ['head', 'tail'] as const) {
      const cut = counter.truncate(text, 1_000, keep);
      expect(cut.tokens).toBe(reference.encode(cut.text).length);
      expect(cut.tokens).toBeLessThanOrEqual(1_000);
      expect(cut.tokens).toBeGreaterThanOrEqual(990);
    }
  });
});

describe('long pieces, merged with a heap', () => {
  // Pieces of 33 to 255 bytes (the counter merges pieces over 32 bytes with a heap, and slices none under
  // 256): uncommon Chinese characters, base64 words and accented Latin words, against js-tiktoken.
  const random = seeded(29);
  const pick = (alphabet: string, length: number) =>
    Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
  const base64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const texts = Array.from({ length: 60 }, (_unused, index) => {
    const words = Array.from({ length: 8 }, () => {
      if (index % 3 === 0)
        return Array.from({ length: 12 + Math.floor(random() * 73) }, () =>
          String.fromCharCode(0x4e00 + Math.floor(random() * 20_000)),
        ).join('');
      if (index % 3 === 1) return pick(base64, 33 + Math.floor(random() * 200));
      return pick('aäbcdeéèfghiïjklmnoöpqrsßtuüvwxyz', 20 + Math.floor(random() * 90));
    });
    return words.join(' ');
  });

  it.each(['o200k_base', 'cl100k_base'] as const)('counts them exactly as js-tiktoken (%s)', (encoding) => {
    const counter = new BpeCounter(encoding);
    const reference = getEncoding(encoding);
    for (const text of texts) expect(counter.count(text)).toBe(reference.encode(text, [], []).length);
  });
});

describe('long texts', () => {
  const counter = new BpeCounter('o200k_base');
  const reference = getEncoding('o200k_base');
  const ordinary = {
    english:
      'The committee reviewed the proposal in detail, asked for revised cost estimates, and scheduled a follow-up meeting for next Tuesday. ',
    code: 'export async function load(path: string): Promise<Config> {\n  const text = await readFile(path, "utf8");\n  return parse(text);\n}\n',
    markdown:
      '## Findings\n\n- Latency improved by 12% after the cache change.\n- Error rate stayed flat at 0.3%.\n\n',
    cjk: '会議では新しい提案について詳しく検討し、費用の見積もりを修正するよう求めました。',
  };

  it.each(Object.entries(ordinary))('estimates %s text over the exact limit within 1%%', (_kind, unit) => {
    const text = unit.repeat(Math.ceil((exactLimitChars * 2.5) / unit.length));
    expect(text.length).toBeGreaterThan(exactLimitChars);
    const exact = reference.encode(text, [], []).length;
    expect(Math.abs(counter.count(text) - exact)).toBeLessThanOrEqual(exact * 0.01);
  });

  it('counts a megabyte of one repeated character, of base64 and of emoji (the inputs that stall js-tiktoken)', () => {
    const base64 = Buffer.from(
      Array.from({ length: 750_000 }, (_, index) => (index * 7_919 + (index >> 3)) % 256),
    ).toString('base64');
    for (const text of ['a'.repeat(1_000_000), base64, '😀🎉👍🏽 '.repeat(150_000)]) {
      const tokens = counter.count(text);
      expect(tokens).toBeGreaterThan(text.length / 16);
      expect(tokens).toBeLessThan(text.length);
    }
  });
});

describe('quick estimates for very large requests', () => {
  const counter = new BpeCounter('o200k_base');
  const reference = getEncoding('o200k_base');
  it('counts short texts exactly and long ordinary prose within 10%', () => {
    const short = 'The committee reviewed the proposal in detail.';
    expect(counter.estimateQuickly(short)).toBe(reference.encode(short).length);
    const prose =
      'The committee reviewed the proposal in detail, asked for revised cost estimates, and scheduled a follow-up meeting for next Tuesday. '.repeat(
        60,
      );
    const exact = reference.encode(prose).length;
    expect(Math.abs(counter.estimateQuickly(prose) - exact) / exact).toBeLessThan(0.1);
  });
});

describe('workDone: what counting has cost, by what the text makes it do', () => {
  const random = seeded(29);
  // 200,000 characters of each kind, every text new.
  const kinds: Record<string, () => string> = {
    prose: () =>
      `The committee reviewed proposal ${Math.floor(random() * 1e6)} and asked for estimates. `.repeat(25),
    base64: () => randomBytes(1_500).toString('base64'),
    'letters without spaces': () =>
      Array.from({ length: 2_000 }, () => String.fromCharCode(97 + Math.floor(random() * 26))).join(''),
    'uncommon Chinese': () =>
      Array.from({ length: 2_000 }, () => String.fromCharCode(0x4e00 + Math.floor(random() * 20_000))).join(
        '',
      ),
  };
  const workPerChar = (kind: string): number => {
    const counter = new BpeCounter('o200k_base');
    const texts = Array.from({ length: 100 }, kinds[kind] as () => string);
    const before = counter.workDone;
    for (const text of texts) counter.count(text);
    return (counter.workDone - before) / texts.reduce((sum, text) => sum + text.length, 0);
  };

  it.each(['base64', 'letters without spaces', 'uncommon Chinese'])(
    '%s, whose pieces are new, costs several times what prose of known words does',
    (kind) => {
      expect(workPerChar(kind)).toBeGreaterThan(5 * workPerChar('prose'));
    },
  );

  it('costs nothing more for a piece counted before than for scanning it', () => {
    const counter = new BpeCounter('o200k_base');
    const text = randomBytes(1_500).toString('base64');
    const first = counter.workDone;
    counter.count(text);
    const second = counter.workDone;
    counter.count(text);
    expect(counter.workDone - second).toBeLessThan((second - first) / 3);
  });
});
