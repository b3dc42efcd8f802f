// A browser app calling the gateway itself (docs/configuration.md#browser-apps), as BetterChatGPT,
// Chatbox and Open WebUI's direct connections do: the official OpenAI client (its browser build, served
// as the package ships it) in a page of another origin, in headless Chromium. The browser asks first
// (a preflight: OPTIONS, no key) whether the page may send an Authorization header; the gateway answered
// that with a 404, so every request of such an app failed before it was sent (BricksLLM#45,
// llama-swap#42, opencode#31041 all answered so). With `server.cors_origins` naming the page's origin its
// requests go, whole and streamed, in a session, and it reads the gateway's headers; without it, or from
// an origin not named, none reaches the provider.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

const chromiumPath = '/usr/bin/chromium';
const openaiPackage = join(process.cwd(), 'node_modules/openai');
const appPage = `<!doctype html><title>chat app</title>
<script type="module">import OpenAI from '/openai/index.mjs'; globalThis.OpenAI = OpenAI;</script>`;

let app: Server;
let appOrigin = '';
let fake: FakeUpstream;
let allowing: GatewayHarness;
let closed: GatewayHarness;
let browser: Browser;

/** The app: its page, and the OpenAI client's files as the package ships them. */
function startApp(): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    if (path === '/') {
      response.writeHead(200, { 'content-type': 'text/html' }).end(appPage);
      return;
    }
    const file = normalize(join(openaiPackage, path.replace(/^\/openai\//, '')));
    if (!path.startsWith('/openai/') || !file.startsWith(openaiPackage)) {
      response.writeHead(404).end();
      return;
    }
    readFile(file).then(
      (bytes) => response.writeHead(200, { 'content-type': 'text/javascript' }).end(bytes),
      () => response.writeHead(404).end(),
    );
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  app = await startApp();
  appOrigin = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  fake = new FakeUpstream();
  const upstream = await fake.start();
  allowing = await startGateway({
    env: { UPSTREAM_BASE_URL: upstream },
    configYaml: `server:\n  cors_origins: ["${appOrigin}"]\n`,
  });
  closed = await startGateway({ env: { UPSTREAM_BASE_URL: upstream } });
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await allowing?.close();
  await closed?.close();
  await fake?.stop();
  await new Promise((resolve) => app?.close(resolve));
});

/** The app's page, at its origin or (`elsewhere`) at another: the same server named `localhost`. */
async function appOpened(elsewhere = false): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${elsewhere ? appOrigin.replace('127.0.0.1', 'localhost') : appOrigin}/`);
  await page.waitForFunction(() => 'OpenAI' in globalThis);
  return page;
}

interface Asked {
  whole?: string;
  streamed?: string;
  inputTokens?: string | null;
  error?: string;
}

/** What the page's OpenAI client got from `baseURL`: an answer whole, one streamed, and a header read. */
function askFrom(page: Page, baseURL: string): Promise<Asked> {
  return page.evaluate(async (baseURL) => {
    type Completion = { choices: Array<{ message: { content: string | null } }> };
    type Chunk = { choices: Array<{ delta?: { content?: string | null } }> };
    type Created = Promise<AsyncIterable<Chunk>> & {
      withResponse(): Promise<{ data: Completion; response: Response }>;
    };
    type Client = { chat: { completions: { create(body: unknown): Created } } };
    const OpenAI = (globalThis as unknown as { OpenAI: new (options: unknown) => Client }).OpenAI;
    const client = new OpenAI({
      baseURL,
      apiKey: 'sk-browser',
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
      defaultHeaders: { 'x-session-id': 'browser-app' },
    });
    const messages = [{ role: 'user', content: 'Hello from the page.' }];
    try {
      const { data, response } = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages })
        .withResponse();
      let streamed = '';
      for await (const chunk of await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages,
        stream: true,
      }))
        streamed += chunk.choices[0]?.delta?.content ?? '';
      return {
        whole: data.choices[0]?.message.content ?? '',
        streamed,
        inputTokens: response.headers.get('x-context-input-tokens'),
      };
    } catch (error) {
      return { error: `${(error as Error).constructor.name}: ${(error as Error).message}` };
    }
  }, baseURL);
}

describe('a browser app of another origin', () => {
  it('talks to a gateway that names its origin: answers whole and streamed, in a session, its headers read', async () => {
    const page = await appOpened();
    const before = fake.requests.length;
    fake.setDefault({ content: 'Hello, page.' });
    const asked = await askFrom(page, allowing.baseUrl);
    expect(asked.error).toBeUndefined();
    expect(asked.whole).toBe('Hello, page.');
    expect(asked.streamed).toBe('Hello, page.');
    expect(Number(asked.inputTokens)).toBeGreaterThan(5);
    // Both reached the provider, the second with the session's first turn before it.
    expect(fake.requests.length - before).toBe(2);
    expect((fake.requests.at(-1)?.body as { messages: unknown[] }).messages).toHaveLength(3);
    await page.close();
  });

  it.each([
    ['a gateway that names no origin', false, () => closed.baseUrl],
    ['a gateway that names another origin', true, () => allowing.baseUrl],
  ])('cannot talk to %s: nothing reaches the provider', async (_name, elsewhere, baseUrl) => {
    const page = await appOpened(elsewhere);
    const before = fake.requests.length;
    const asked = await askFrom(page, baseUrl());
    expect(asked.error).toMatch(/^APIConnectionError/);
    expect(fake.requests.length).toBe(before);
    await page.close();
  });
});
