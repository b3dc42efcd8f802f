// End to end: an agent that compacts its own history, in a session — LangChain's createAgent with its
// summarization middleware (langchain 1.5), through the official @langchain/openai client. Past a few
// thousand tokens the middleware has its own model summarize the older messages and goes on with the
// summary and the newest messages: a conversation that does not start as the stored one. Served without
// the session from then on, the session stayed at the first summary while the agent went on
// (docs/sessions.md#compacted-conversations); it now starts over with each compacted conversation.
import { ChatOpenAI } from '@langchain/openai';
import { tool } from '@langchain/core/tools';
import * as langchain from 'langchain';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { FakeUpstream, isSummaryRequest, type ChatMessage } from '../helpers/fake-upstream.js';
import { prose, textOf } from '../helpers/text.js';
import { type GatewayHarness, startGatewayOn } from '../helpers/start-gateway.js';

/**
 * The part of langchain's agents API used here. Its own types do not check under this project's
 * exactOptionalPropertyTypes (the middleware's zod-made options resolve to never), so it is called
 * through this, as its documentation shows it called.
 */
interface Agents {
  createAgent(options: {
    model: ChatOpenAI;
    tools: unknown[];
    systemPrompt: string;
    middleware: unknown[];
  }): {
    invoke(
      input: { messages: Array<{ role: string; content: string }> },
      config: { recursionLimit: number },
    ): Promise<{ messages: Array<{ content: unknown }> }>;
  };
  summarizationMiddleware(options: {
    model: ChatOpenAI;
    trigger: { tokens: number };
    keep: { messages: number };
  }): unknown;
}
const { createAgent, summarizationMiddleware } = langchain as unknown as Agents;

const files = 12;
const task = `Read file-1.txt to file-${files}.txt one at a time, then say how many you read.`;

let fake: FakeUpstream;
let harness: GatewayHarness;
let directory: string;

/** The newest file a conversation shows read: by a tool result, or by the summary that stands for it. */
const newestRead = (messages: ReadonlyArray<ChatMessage>): number =>
  Math.max(
    0,
    ...messages.flatMap((message) =>
      [...textOf(message.content).matchAll(/File (\d+)\.|read up to file (\d+)/g)].map((match) =>
        Number(match[1] ?? match[2]),
      ),
    ),
  );

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'ctxgate-compacting-'));
  for (let file = 1; file <= files; file++)
    writeFileSync(join(directory, `file-${file}.txt`), `File ${file}.\n${prose(800, file)}\n`);
  fake = new FakeUpstream({
    respond: (messages, body) => {
      if (isSummaryRequest(body)) return undefined;
      // The middleware's own summary request carries no tools: the summary says how far the agent got.
      if (!Array.isArray(body.tools))
        return { content: `The user asked for files to be read; read up to file ${newestRead(messages)}.` };
      const next = newestRead(messages) + 1;
      if (next > files) return { content: `Read ${files} files.` };
      return {
        toolCalls: [
          { id: `call_${next}`, name: 'read_file', arguments: JSON.stringify({ path: `file-${next}.txt` }) },
        ],
      };
    },
  });
  harness = await startGatewayOn(fake, inject('redisUrl'));
});

afterAll(async () => {
  await harness.close();
  await fake.stop();
});

describe('an agent that compacts its own history, in a session', () => {
  it("LangChain's summarization middleware: the session starts over with each compacted conversation", async () => {
    const sessionId = `langchain-${randomUUID()}`;
    const from = harness.logLines.length;
    const before = fake.chatRequests.length;
    const model = new ChatOpenAI({
      model: 'gpt-4o-mini',
      apiKey: 'sk-agent',
      configuration: { baseURL: harness.baseUrl, defaultHeaders: { 'x-session-id': sessionId } },
    });
    const summarizer = new ChatOpenAI({
      model: 'gpt-4o-mini',
      apiKey: 'sk-agent',
      configuration: { baseURL: harness.baseUrl },
    });
    const readFile = tool(async ({ path }: { path: string }) => readFileSync(join(directory, path), 'utf8'), {
      name: 'read_file',
      description: 'Reads a file of the working directory.',
      schema: z.object({ path: z.string() }),
    });
    const compaction = summarizationMiddleware({
      model: summarizer,
      trigger: { tokens: 4_000 },
      keep: { messages: 4 },
    });
    const agent = createAgent({
      model,
      tools: [readFile],
      systemPrompt: 'You read files for the user.',
      middleware: [compaction],
    });
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: task }] },
      { recursionLimit: 100 },
    );
    expect(result.messages.at(-1)?.content).toBe(`Read ${files} files.`);

    // The agent compacted part-way: its later requests start with the middleware's summary.
    const agentRequests = fake.chatRequests
      .slice(before)
      .map((request) => request.body as { messages: ChatMessage[]; tools?: unknown })
      .filter((body) => Array.isArray(body.tools));
    const compacted = agentRequests.filter((body) =>
      textOf(body.messages[1]?.content).startsWith('Here is a summary of the conversation to date'),
    );
    expect(compacted.length).toBeGreaterThan(0);
    expect(compacted.length).toBeLessThan(agentRequests.length);

    // The session holds the conversation the agent sent last, and the answer.
    const history = (await (
      await fetch(`${harness.baseUrl}/sessions/${sessionId}/history`, {
        headers: { authorization: 'Bearer sk-agent' },
      })
    ).json()) as { data: ChatMessage[] };
    const last = agentRequests.at(-1)?.messages ?? [];
    expect(history.data.map((message) => textOf(message.content))).toEqual([
      ...last.slice(1).map((message) => textOf(message.content)),
      `Read ${files} files.`,
    ]);
    expect(textOf(history.data[0]?.content)).toMatch(/^Here is a summary of the conversation to date/);
    const lines = harness.logLines
      .slice(from)
      .map(
        (line) =>
          JSON.parse(line) as { session?: string; otherConversation?: boolean; startedOver?: boolean },
      )
      .filter((line) => line.session !== undefined);
    expect(lines.filter((line) => line.otherConversation === true)).toEqual([]);
    expect(lines.filter((line) => line.startedOver === true).length).toBeGreaterThan(0);
  }, 60_000);
});
