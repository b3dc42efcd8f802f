// Fuzzing the real gateway process (src/main.ts) over raw HTTP with fast-check: request targets (chat
// completions, the Responses API, Anthropic's Messages API — bridged, and natively to a fake Anthropic —
// forwarded endpoints, the sessions API, and spellings of all of them a router or a provider may read
// alike) with bodies of their kind (random JSON, broken JSON, random messages, blocks, items, parts, tool
// calls and fields) and headers (session, context and budget headers with random values, content types
// and encodings). Whatever arrives: no 5xx but the documented upstream ones, no stack trace in any body,
// every error in its API's shape (OpenAI's, or Anthropic's on /v1/messages: both have error.type and
// error.message) with x-request-id, and the process still up at the end. Bounded in runs and in time.
// What each request costs in CPU is the bench's (`npm run bench -- fuzz`), not a test's: a loaded
// machine would fail it.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAnthropic } from '../helpers/fake-anthropic.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { forwardedAnswers, fuzzRequest, headers } from '../helpers/fuzz-arbitraries.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

/** 5xx answers the gateway may give, all about the upstream or the store, each with its own code. */
const documented5xx = new Set(['upstream_unreachable', 'upstream_bad_response', 'upstream_timeout']);

describe('fuzzed requests against the gateway process', () => {
  let fake: FakeUpstream;
  let anthropic: FakeAnthropic;
  let gateway: ServerProcess;
  let port: number;

  beforeAll(async () => {
    fake = new FakeUpstream({ defaultWindow: 16_000, recordLimit: 50, otherRoutes: forwardedAnswers });
    anthropic = new FakeAnthropic({ window: 16_000 });
    const config = [
      'sessions:',
      '  anonymous_tenant: fuzz',
      'upstreams:',
      '  - name: anthropic',
      `    base_url: ${await anthropic.start()}`,
      '    kind: anthropic',
      '    models: ["claude-*"]',
      '',
    ].join('\n');
    gateway = await startServerProcess([process.execPath, '--import', 'tsx', 'src/main.ts'], {
      PORT: '0',
      UPSTREAM_BASE_URL: await fake.start(),
      CTXGATE_CONFIG: writeConfigFile(config),
      LOG_LEVEL: 'info',
    });
    port = Number(new URL(gateway.url).port);
  }, 60_000);
  afterAll(async () => {
    await gateway.stop();
    await fake.stop();
    await anthropic.stop();
  });

  it('never fails in an undocumented way and never leaks a stack, on any route or spelling of one', async () => {
    let runs = 0;
    const statuses = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fuzzRequest, headers, fc.boolean(), async (request, sent, withKey) => {
        runs++;
        const response = await rawRequest({
          port,
          method: request.method,
          target: request.target,
          headers: { ...sent, ...(withKey ? { authorization: 'Bearer sk-fuzz' } : {}) },
          ...(request.body === undefined ? {} : { body: request.body }),
        });
        const answer = response.body;
        const tally = `${request.target.split('?')[0]?.split('/')[2] ?? ''} ${response.status}`;
        statuses.set(tally, (statuses.get(tally) ?? 0) + 1);
        // A wrong answer throws, so fast-check shrinks it to a small case.
        const label = `${request.method} ${request.target} ${JSON.stringify(sent)} ${(request.body ?? '').slice(0, 2_000)}`;
        const fail = (problem: string): never => {
          throw new Error(`${problem}: ${label}\n${answer.slice(0, 500)}`);
        };
        if (response.status === 0) fail('no HTTP answer');
        if (/\bat [\w.<>]+ \(|node:internal|\.ts:\d+/.test(answer)) fail('stack in body');
        if (response.headers['x-request-id'] === undefined) fail('no x-request-id');
        if (response.status >= 400 && response.headers['content-type']?.includes('json')) {
          const parsed = JSON.parse(answer) as {
            error?: { message?: unknown; type?: unknown; code?: unknown };
          };
          if (typeof parsed.error?.message !== 'string' || typeof parsed.error.type !== 'string')
            fail(`not OpenAI-shaped (${response.status})`);
          if (response.status >= 500 && !documented5xx.has(String(parsed.error?.code)))
            fail(`${response.status} ${String(parsed.error?.code)}`);
        } else if (response.status >= 500) {
          fail(`${response.status} without a JSON error`);
        }
      }),
      { numRuns: 500, interruptAfterTimeLimit: 40_000, seed: Date.now() % 100_000 },
    );
    expect(runs).toBeGreaterThanOrEqual(100);
    // Still up, still answering.
    expect((await fetch(`${gateway.url.replace(/\/v1$/, '')}/healthz`)).status).toBe(200);
    expect(gateway.child.exitCode).toBeNull();
    console.log(`fuzz: ${runs} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  }, 90_000);
});
