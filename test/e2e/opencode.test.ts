// OpenCode (its Linux binary, `opencode run`) pointed at the gateway as its users configure a custom
// provider in opencode.json: an AI SDK provider package, the gateway as its baseURL, the model's limits.
// OpenCode sends its whole conversation with every request and its own session id with each, as both
// `X-Session-Id` and `x-session-affinity` (for sticky routing), its title request under the same id at
// the same moment as the agent's first: the gateway keeps no session for it, so neither conversation is
// mixed into the other. Over Chat Completions, Anthropic's Messages API and the Responses API, each
// bridged to the strict fake Chat Completions provider, whose model writes a note with OpenCode's bash
// tool (appending, so a second run of the command shows), then answers. (The Responses API keeps no
// session for any `X-Session-Id`: its row passed before too, and is kept as coverage.)
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream, type ChatMessage } from '../helpers/fake-upstream.js';
import { clientsDirectory, runProgram } from '../helpers/newest-clients.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';
import { textOf } from '../helpers/text.js';

const opencode = join(clientsDirectory, 'node_modules/opencode-linux-x64/bin/opencode');
const model = 'opencode-32k';
const task = 'Write the note.';
const titlePrompt = 'Generate a title for this conversation';

let fake: FakeUpstream;
let harness: GatewayHarness;

/** OpenCode's title request: its first user message asks for a title. */
const isTitleRequest = (messages: ReadonlyArray<ChatMessage>): boolean =>
  textOf(messages.find((message) => message.role === 'user')?.content).startsWith(titlePrompt);

beforeAll(async () => {
  fake = new FakeUpstream({
    windows: { [model]: 32_768 },
    respond: (messages) => {
      if (isTitleRequest(messages)) return { content: 'Writing a note' };
      if (!messages.some((message) => message.role === 'tool'))
        return {
          toolCalls: [
            {
              id: 'call_note',
              name: 'bash',
              arguments: JSON.stringify({
                command: "printf 'hello\\n' >> note.txt",
                description: 'Write the note',
              }),
            },
          ],
        };
      return { content: 'Done: note written.' };
    },
  });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') },
  });
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

/** Runs `opencode run <task>` in a fresh project and home, its provider speaking through `npm`. */
async function runOpenCode(npm: string) {
  const home = mkdtempSync(join(tmpdir(), 'ctxgate-opencode-home-'));
  const project = mkdtempSync(join(tmpdir(), 'ctxgate-opencode-'));
  writeFileSync(
    join(project, 'opencode.json'),
    JSON.stringify({
      $schema: 'https://opencode.ai/config.json',
      provider: {
        ctxgate: {
          npm,
          name: 'ctxgate',
          options: { baseURL: harness.baseUrl, apiKey: 'sk-opencode' },
          models: { [model]: { name: 'Through ctxgate', limit: { context: 32_768, output: 4_096 } } },
        },
      },
      model: `ctxgate/${model}`,
      autoupdate: false,
      share: 'disabled',
    }),
  );
  const finished = await runProgram(opencode, ['run', task], {
    cwd: project,
    env: { HOME: home, OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1' },
  });
  const note = join(project, 'note.txt');
  return { finished, note: existsSync(note) ? readFileSync(note, 'utf8') : undefined };
}

describe('OpenCode', () => {
  it.each([
    ['Chat Completions', '@ai-sdk/openai-compatible', '/v1/chat/completions'],
    ["Anthropic's Messages API", '@ai-sdk/anthropic', '/v1/messages'],
    ['the Responses API', '@ai-sdk/openai', '/v1/responses'],
  ])(
    'over %s, its title request and its agent are each their own conversation under its one session id',
    async (_api, npm, route) => {
      const seen = new Set(fake.chatRequests);
      const logged = harness.logLines.length;
      const { finished, note } = await runOpenCode(npm);

      expect(finished.status, finished.stderr.slice(-2_000)).toBe(0);
      expect(finished.stdout).toContain('Done: note written.');
      // The command ran once: its step was not lost from the agent's conversation.
      expect(note).toBe('hello\n');
      const requests = fake.chatRequests.filter((request) => !seen.has(request));
      const conversations = requests.map((request) => (request.body as { messages: ChatMessage[] }).messages);
      const titles = conversations.filter(isTitleRequest);
      const agent = conversations.filter((messages) => !isTitleRequest(messages));
      expect(titles.length).toBeGreaterThan(0);
      expect(agent.length).toBe(2);
      for (const messages of titles)
        expect(messages.filter((message) => message.role !== 'system' && message.role !== 'user')).toEqual(
          [],
        );
      for (const messages of agent) {
        const texts = messages.map((message) => textOf(message.content));
        expect(texts.some((text) => text.includes(titlePrompt))).toBe(false);
        expect(texts.some((text) => text.includes('[ctxgate]'))).toBe(false);
      }
      expect(agent.map((messages) => messages.map((message) => message.role))).toEqual([
        ['system', 'user'],
        ['system', 'user', 'assistant', 'tool'],
      ]);
      // No session was kept for its id: each request line names none.
      const lines = harness.logLines
        .slice(logged)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.route === route);
      expect(lines.length).toBe(requests.length);
      expect(lines.filter((line) => line.session !== undefined)).toEqual([]);
    },
  );
});
