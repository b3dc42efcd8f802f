// `npm run bench [section…]`: throughput and latency of ctxgate side by side with baselines measured in
// the same run, reported as ratios and percentiles. Nothing here asserts on time; it prints figures.
// Each section lives in bench/sections/; what they share, in bench/lib/.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { abortSection } from './sections/abort.js';
import { agentsSection } from './sections/agents.js';
import { budgetsSection } from './sections/budgets.js';
import { decodeSection } from './sections/decode.js';
import { fidelitySection } from './sections/fidelity.js';
import { memoryStoreSection, sseSection } from './sections/hardening.js';
import { hostileBodiesSection } from './sections/hostile-bodies.js';
import { idleSection } from './sections/idle.js';
import { instructionsSection } from './sections/instructions.js';
import { fuzzSection } from './sections/fuzz.js';
import { responsesChainsSection } from './sections/responses-chains.js';
import { learnedSection } from './sections/learned.js';
import { proxySection } from './sections/proxy.js';
import { recoverySection } from './sections/recovery.js';
import { redisCommandsSection } from './sections/redis-commands.js';
import { renderSection } from './sections/render.js';
import { serviceSection } from './sections/service.js';
import { sessionsSection } from './sections/sessions.js';
import { summarizationSection } from './sections/summarization.js';
import { tokenizerSection } from './sections/tokenizer.js';

const sections: Record<string, () => Promise<void>> = {
  budgets: budgetsSection,
  sessions: sessionsSection,
  'redis-commands': redisCommandsSection,
  summarization: summarizationSection,
  proxy: proxySection,
  agents: agentsSection,
  instructions: instructionsSection,
  service: serviceSection,
  abort: abortSection,
  render: renderSection,
  tokenizer: tokenizerSection,
  decode: decodeSection,
  sse: sseSection,
  'memory-store': memoryStoreSection,
  'hostile-bodies': hostileBodiesSection,
  fuzz: fuzzSection,
  'responses-chains': responsesChainsSection,
  learned: learnedSection,
  idle: idleSection,
  fidelity: fidelitySection,
  recovery: recoverySection,
};
const selected = process.argv.slice(2);
const unknown = selected.filter((name) => !(name in sections));
if (unknown.length > 0) {
  console.error(`unknown section(s): ${unknown.join(', ')}; sections: ${Object.keys(sections).join(', ')}`);
  process.exit(2);
}
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
  stdio: 'inherit',
});
// What the sections and the servers they start write under os.tmpdir() lands in the run's own
// directory (children inherit TMPDIR), removed when the run ends.
const runDirectory = mkdtempSync(join(tmpdir(), 'ctxgate-bench-run-'));
process.env.TMPDIR = runDirectory;
try {
  for (const [name, section] of Object.entries(sections)) {
    if (selected.length === 0 || selected.includes(name)) await section();
  }
} finally {
  rmSync(runDirectory, { recursive: true, force: true });
}
