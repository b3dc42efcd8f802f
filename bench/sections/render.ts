// Section "render": rendering a long conversation cold and warm.
import { benchConversation } from '../lib/bodies.js';
import { percentile, row } from '../lib/load.js';

/** Rendering a long conversation cold, then again (as the next request) with one more message. */
export async function renderSection(): Promise<void> {
  const { renderContext } = await import('../../src/context/render.js');
  const { createTiktokenTokenizers } = await import('../../src/tokenizer/tiktoken-tokenizers.js');
  const { builtInPolicy } = await import('../../src/config/policy-defaults.js');
  const tokenizers = createTiktokenTokenizers();
  const tokenizer = tokenizers.forEncoding('o200k_base');
  const conversation = benchConversation(2_000, 480);
  const render = (messages: Array<{ role: string; content: string }>) =>
    renderContext({
      messages,
      tokenizer,
      window: 128_000,
      outputReserve: 4_096,
      safetyMarginTokens: 6_400,
      policy: builtInPolicy,
    });
  // Each request parses its own body: fresh string objects, as the gateway sees them.
  const asRequest = (messages: unknown): Array<{ role: string; content: string }> =>
    JSON.parse(JSON.stringify(messages)) as Array<{ role: string; content: string }>;
  const time = (run: () => unknown): number => {
    const started = process.hrtime.bigint();
    run();
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  const first = asRequest(conversation);
  let totalTokens = 0;
  const coldMs = time(() => {
    const outcome = render(first);
    if (outcome.ok) totalTokens = outcome.report.historyBudget;
  });
  const fullTokens = (await import('../../src/context/token-accounting.js')).countPromptTokens(
    first,
    undefined,
    tokenizer,
  );
  const warm: number[] = [];
  for (let index = 0; index < 20; index++) {
    const next = asRequest([
      ...conversation,
      { role: 'user', content: `One more question, number ${index}?` },
    ]);
    warm.push(time(() => render(next)));
  }
  warm.sort((a, b) => a - b);
  const warmP50 = percentile(warm, 0.5);
  console.log(
    `\n== render: 2,000 messages (${fullTokens} tokens) into a 128k window (history budget ${totalTokens}) ==`,
  );
  console.log(row(['run', 'ms']));
  console.log(row(['first (nothing cached)', coldMs.toFixed(1)]));
  console.log(row(['again + 1 message, p50 of 20', warmP50.toFixed(2)]));
  console.log(row(['again + 1 message, max of 20', (warm.at(-1) ?? Number.NaN).toFixed(2)]));
  console.log(`   speed-up: ${(coldMs / warmP50).toFixed(1)}x  (target >= 20x)`);
}
