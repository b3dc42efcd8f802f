// The session inspector (docs/inspector.md) in a real browser: headless Chromium from the OS packages,
// driven by playwright-core (which downloads nothing). A scripted 300-turn session on an 8,192-token
// window — summaries from the extractive fake summarizer, an agent turn whose tool results get masked,
// a message carrying markup — is opened after signing in; what the page shows is checked against the
// session API; another tenant's session is neither listed nor openable. A screenshot of each view is
// saved in test-artifacts/.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { prose } from '../helpers/text.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const chromiumPath = '/usr/bin/chromium';
const artifacts = join(process.cwd(), 'test-artifacts');
const model = 'inspect-model';
const window = 8_192;
const keys = { mine: 'sk-inspector-mine', theirs: 'sk-inspector-theirs' };
const sessionId = `inspected-${Date.now()}`;
const otherSessionId = `theirs-${Date.now()}`;
const markup = 'Look: <script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> done';

let fake: FakeUpstream;
let harness: GatewayHarness;
let browser: Browser;
let chainHead = '';
let chainRoot = '';
let otherChain = '';

const clientFor = (key: string, session: string) =>
  new OpenAI({
    baseURL: harness.baseUrl,
    apiKey: key,
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': session },
  });

beforeAll(async () => {
  fake = new FakeUpstream({
    windows: { [model]: window },
    extractiveSummaries: /^Fact \d+: .*$/,
    recordLimit: 100,
  });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
    configYaml: `models:\n  - match: ${model}\n    window: ${window}\n    output_reserve: 512\n`,
  });
  await waitUntilReady(harness);
  const client = clientFor(keys.mine, sessionId);
  fake.setDefault({ content: 'Noted.' });
  for (let turn = 0; turn < 300; turn++) {
    const content =
      turn === 7
        ? markup
        : turn % 10 === 5
          ? `About the doors.\nFact ${turn}: the code for door ${turn} is D${turn * 7}.`
          : `${prose(60, turn)} (turn ${turn})`;
    await client.chat.completions.create({ model, messages: [{ role: 'user', content }] });
  }
  // An agent turn at the end: five tool results of ~1,500 tokens each cannot all go whole.
  fake.enqueue({
    toolCalls: [1, 2, 3, 4, 5].map((index) => ({
      id: `call_${index}`,
      name: 'read_file',
      arguments: `{"n":${index}}`,
    })),
  });
  const calls = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Read the five files.' }],
    tools: [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } }],
  });
  const toolCalls = calls.choices[0]?.message.tool_calls ?? [];
  await client.chat.completions.create({
    model,
    messages: toolCalls.map((call, index) => ({
      role: 'tool' as const,
      tool_call_id: call.id,
      content: prose(1_500, 900 + index),
    })),
    tools: [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } }],
  });
  await harness.gateway.summarizer.idle();
  console.log(
    harness.logLines
      .filter((line) => line.includes('summariz'))
      .slice(-3)
      .join('\n')
      .slice(0, 3000),
  );
  await clientFor(keys.theirs, otherSessionId).chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Their secret session.' }],
  });
  // Responses chains: two responses of mine, one of theirs.
  const responses = new OpenAI({ baseURL: harness.baseUrl, apiKey: keys.mine, maxRetries: 0 });
  fake.setDefault({ content: 'First <b>answer</b>.' });
  const first = await responses.responses.create({ model, input: 'Start a chain.' });
  fake.setDefault({ content: 'Second answer.' });
  chainHead = (await responses.responses.create({ model, input: 'Go on.', previous_response_id: first.id }))
    .id;
  chainRoot = first.id;
  otherChain = (
    await new OpenAI({ baseURL: harness.baseUrl, apiKey: keys.theirs, maxRetries: 0 }).responses.create({
      model,
      input: 'Their chain.',
    })
  ).id;
  mkdirSync(artifacts, { recursive: true });
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
  await fake?.stop();
});

const gatewayRoot = () => harness.baseUrl.replace(/\/v1$/, '');

async function api<T>(path: string, key = keys.mine): Promise<T> {
  const response = await fetch(`${harness.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return (await response.json()) as T;
}

async function signedIn(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${gatewayRoot()}/ui/`);
  await page.fill('#api-key', keys.mine);
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#sessions-table tbody tr');
  return page;
}

/** What the page's elements carry (no DOM types in a Node test's compile). */
type WithData = { dataset: Record<string, string | undefined> };

interface Report {
  model: string;
  window: number;
  outputReserve: number;
  safetyMargin: number;
  regions: Record<string, number>;
  fates: Array<[number, number, string]>;
}

describe('the session inspector in Chromium', () => {
  it('lists the tenant’s Responses chains only, and shows one from its newest response back', async () => {
    const page = await signedIn();
    await page.waitForSelector('#chains-table tbody tr');
    const listed = await page.locator('#chains-table tbody tr td:first-child').allTextContents();
    expect(listed).toContain(chainHead);
    expect(listed).not.toContain(otherChain);
    const row = await page
      .locator('#chains-table tbody tr', { hasText: chainHead })
      .locator('td')
      .allTextContents();
    expect(row.slice(1, 3)).toEqual([chainRoot, '2']);
    await page.click(`#chains-table a:text-is("${chainHead}")`);
    await page.waitForSelector('#chain-table tbody tr:nth-child(2)');
    const ids = await page.locator('#chain-table tbody tr td:first-child').allTextContents();
    expect(ids).toEqual([chainHead, chainRoot]);
    expect(await page.locator('#chain-table tbody tr', { hasText: chainRoot }).textContent()).toContain(
      'First <b>answer</b>.',
    );
    await page.goto(`${gatewayRoot()}/ui/#/chain/${otherChain}`);
    await page.waitForSelector('#chain-error:not([hidden])');
    expect(await page.locator('#chain-table tbody tr').count()).toBe(0);
    await page.close();
  });

  it('is served with a strict Content-Security-Policy, and Chromium is the OS package', async () => {
    expect(existsSync(chromiumPath)).toBe(true);
    const response = await fetch(`${gatewayRoot()}/ui/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('lists the tenant’s sessions only, and keeps the key out of the URL and cookies', async () => {
    const page = await signedIn();
    const listed = await page.locator('#sessions-table tbody tr td:first-child').allTextContents();
    expect(listed).toContain(sessionId);
    expect(listed).not.toContain(otherSessionId);
    const listing = await api<{
      data: Array<{ id: string; counts: { active: number; archived: number }; tokens: { active: number } }>;
    }>('/sessions');
    const mine = listing.data.find((session) => session.id === sessionId);
    expect(listing.data.map((session) => session.id)).not.toContain(otherSessionId);
    const cells = await page
      .locator('#sessions-table tbody tr', { hasText: sessionId })
      .locator('td')
      .allTextContents();
    expect(cells.slice(2, 6)).toEqual([
      String(mine?.counts.active),
      String(mine?.counts.archived),
      String(mine?.tokens.active),
      'yes',
    ]);
    expect(page.url()).not.toContain(keys.mine);
    expect(await page.context().cookies()).toEqual([]);
    await page.screenshot({ path: join(artifacts, 'inspector-sessions.png'), fullPage: true });
    await page.close();
  });

  it('draws the last request’s window and every message’s fate as the session API reports them', async () => {
    const page = await signedIn();
    await page.click(`#sessions-table a:text-is("${sessionId}")`);
    await page.waitForSelector('#messages-table tbody tr');
    // A locator's wait, not waitForFunction: a predicate polled in the page is evaluated as a string,
    // which the inspector's CSP (no 'unsafe-eval') refuses once the first look did not find it done.
    await page.locator('#preview').filter({ hasNotText: 'Computing…' }).waitFor();
    const requests = await api<{ data: Report[] }>(`/sessions/${sessionId}/requests`);
    const last = requests.data[0] as Report;
    const history = await api<{ total: number }>(`/sessions/${sessionId}/history?limit=1`);
    const session = await api<{ summary: { text: string } | null }>(`/sessions/${sessionId}`);

    // The bar: each region's tokens as the report has them.
    const bar = await page.$$eval('#window-bar > div', (pieces) =>
      pieces.map((piece) => [
        (piece as unknown as WithData).dataset.region,
        Number((piece as unknown as WithData).dataset.tokens),
      ]),
    );
    expect(Object.fromEntries(bar)).toMatchObject({
      'System prompt': last.regions.system,
      'Summary and notes': last.regions.summary,
      History: last.regions.history,
      'Current turn': last.regions.current,
      'Output reserve': last.outputReserve,
      'Safety margin': last.safetyMargin,
    });
    expect(last.regions.summary).toBeGreaterThan(0);

    // Every message of the history, archive included, with the fate the report gives its position.
    const rows = await page.$$eval('#messages-table tbody tr', (trs) =>
      trs.map((tr) => {
        const data = (tr as unknown as WithData).dataset;
        return [Number(data.position), data.fate];
      }),
    );
    expect(rows).toHaveLength(history.total);
    const expected = (position: number) =>
      last.fates.find(([first, count]) => position >= first && position < first + count)?.[2] ??
      'not yet sent';
    for (const [position, fate] of rows) expect(fate).toBe(expected(position as number));
    const fates = new Set(rows.map(([, fate]) => fate));
    expect(fates).toContain('summarized');
    expect(fates).toContain('masked');
    expect(fates).toContain('sent');
    expect(await page.textContent('#summary-text')).toBe(session.summary?.text);

    // The timeline: a point per recorded request.
    expect(await page.locator('#timeline .request-point').count()).toBe(requests.data.length);
    expect(requests.data.length).toBe(200);
    await page.screenshot({ path: join(artifacts, 'inspector-session.png'), fullPage: false });
    await page.close();
  });

  it('shows markup in a message as text, never as markup', async () => {
    const page = await signedIn();
    await page.goto(`${gatewayRoot()}/ui/#/session/${sessionId}`);
    await page.waitForSelector('#messages-table tbody tr');
    const cell = page.locator('#messages-table td.text', { hasText: '<script>window.__xss = 1</script>' });
    expect(await cell.count()).toBe(1);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('#messages-table img').count()).toBe(0);
    await page.close();
  });

  it('does not open another tenant’s session', async () => {
    const page = await signedIn();
    await page.goto(`${gatewayRoot()}/ui/#/session/${otherSessionId}`);
    await page.waitForSelector('#session-error:not([hidden])');
    expect(await page.textContent('#session-error')).toContain(`No session '${otherSessionId}'`);
    expect(await page.locator('#messages-table tbody tr').count()).toBe(0);
    await page.screenshot({ path: join(artifacts, 'inspector-refused.png') });
    await page.close();
  });
});
