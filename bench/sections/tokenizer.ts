// Section "tokenizer": CPU to count a megabyte of each kind of text.
import { row } from '../lib/load.js';

/** CPU to count 1 MB of each kind of text with a cold tokenizer (no cache, no memo). */
export async function tokenizerSection(): Promise<void> {
  const { BpeCounter } = await import('../../src/tokenizer/bpe-counter.js');
  const megabyte = 1_000_000;
  const fill = (unit: string): string => unit.repeat(Math.ceil(megabyte / unit.length)).slice(0, megabyte);
  const kinds: Record<string, string> = {
    english: fill('The committee reviewed the proposal in detail and asked for revised cost estimates. '),
    code: fill(
      'export async function load(path: string): Promise<Config> { return parse(await readFile(path, "utf8")); }\n',
    ),
    cjk: fill('会議では新しい提案について詳しく検討し、費用の見積もりを修正するよう求めました。'),
    emoji: fill('😀🎉👍🏽 👩‍💻 '),
    base64: Buffer.from(
      Array.from({ length: 750_000 }, (_unused, index) => (index * 7_919 + (index >> 3)) % 256),
    )
      .toString('base64')
      .slice(0, megabyte),
    'one repeated character': 'a'.repeat(megabyte),
  };
  console.log('\n== tokenizer: CPU to count 1 MB (1,000,000 characters) with a cold counter ==');
  console.log(row(['text', 'tokens', 'CPU ms']));
  for (const [kind, text] of Object.entries(kinds)) {
    const counter = new BpeCounter('o200k_base');
    const before = process.cpuUsage();
    const tokens = counter.count(text);
    const used = process.cpuUsage(before);
    console.log(row([kind, tokens, ((used.user + used.system) / 1000).toFixed(1)]));
  }
  console.log('   target: <= 200 ms each');
}
