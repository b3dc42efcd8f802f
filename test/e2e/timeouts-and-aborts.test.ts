// End to end: the gateway's timeouts, client aborts in every phase, upstream streams that break off,
// and an unreachable upstream.
import { spawn, type ChildProcess } from 'node:child_process';
import { Socket } from 'node:net';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { findFreePort } from '../helpers/redis-server.js';
import { gatewayBefore, startGateway } from '../helpers/start-gateway.js';

const chatBody = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], ...extra });

function post(baseUrl: string, body: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    ...(signal === undefined ? {} : { signal }),
  });
}

async function waitFor<T>(probe: () => T | undefined, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('timeouts', () => {
  const fake = new FakeUpstream();
  const gateway = gatewayBefore(fake, 'timeouts:\n  upstream_first_byte_ms: 300\n  upstream_idle_ms: 300\n');

  it('answers 504 upstream_timeout when the upstream sends no headers in time', async () => {
    fake.enqueue({ delayBeforeHeadersMs: 2_000 });
    const response = await post(gateway.harness.baseUrl, chatBody());
    expect(response.status).toBe(504);
    expect(await response.json()).toEqual({
      error: {
        message: 'Upstream did not answer within 300 ms.',
        type: 'server_error',
        param: null,
        code: 'upstream_timeout',
      },
    });
  });

  it('answers 504 when a non-streaming body stalls', async () => {
    fake.enqueue({ stallMidBody: true });
    const response = await post(gateway.harness.baseUrl, chatBody());
    expect(response.status).toBe(504);
    expect(await response.json()).toEqual({
      error: {
        message: 'Upstream sent nothing for 300 ms.',
        type: 'server_error',
        param: null,
        code: 'upstream_timeout',
      },
    });
  });

  it('ends a stream that goes idle with an error event and no [DONE]', async () => {
    fake.enqueue({ stallAfterChunks: 3, content: 'a b c d e f g h', chunks: 8 });
    const response = await post(gateway.harness.baseUrl, chatBody({ stream: true }));
    expect(response.status).toBe(200);
    const events = (await response.text()).split('\n\n').filter(Boolean);
    expect(events).toHaveLength(4);
    expect(events).not.toContain('data: [DONE]');
    expect(JSON.parse(events.at(-1)!.slice('data: '.length))).toEqual({
      error: {
        message: 'Upstream sent nothing for 300 ms.',
        type: 'server_error',
        param: null,
        code: 'upstream_timeout',
      },
    });
  });

  it('makes the openai client raise when the stream goes idle', async () => {
    fake.enqueue({ stallAfterChunks: 2 });
    const client = new OpenAI({ baseURL: gateway.harness.baseUrl, apiKey: 'sk-x', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const consume = async (): Promise<void> => {
      for await (const _chunk of stream) {
        // read to the end
      }
    };
    await expect(consume()).rejects.toThrow(/Upstream sent nothing for 300 ms/);
  });
});

// OpenAI's Chat Completions API sends a reasoning model's stream headers at once and then nothing while
// the model thinks — minutes at a high effort (mezmo/aura#62: gpt-5.2; charmbracelet/crush#1158). That
// wait is the answer's first byte, not a stall between two chunks: it was cut at upstream_idle_ms (504).
describe('a reasoning model that thinks before its first chunk', () => {
  const fake = new FakeUpstream();
  const gateway = gatewayBefore(fake, 'timeouts:\n  upstream_first_byte_ms: 5000\n  upstream_idle_ms: 300\n');

  it('is waited for up to upstream_first_byte_ms, then streamed; a stall after its first chunk still ends it', async () => {
    const thinking = new Promise((resolve) => setTimeout(resolve, 1_200));
    fake.enqueue({ pauseAfterChunks: 0, resumeWhen: thinking, content: 'Thought it through.', chunks: 3 });
    const client = new OpenAI({ baseURL: gateway.harness.baseUrl, apiKey: 'sk-x', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'gpt-5.2',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Thought it through.');

    fake.enqueue({ stallAfterChunks: 2 });
    const stalled = await client.chat.completions.create({
      model: 'gpt-5.2',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const consume = async (): Promise<void> => {
      for await (const _chunk of stalled) {
        // read to the end
      }
    };
    await expect(consume()).rejects.toThrow(/Upstream sent nothing for 300 ms/);
  });
});

describe('upstream connection failures', () => {
  it('answers 502 upstream_unreachable when nothing listens at the upstream address', async () => {
    const port = await findFreePort();
    const harness = await startGateway({ env: { UPSTREAM_BASE_URL: `http://127.0.0.1:${port}/v1` } });
    try {
      const response = await post(harness.baseUrl, chatBody());
      expect(response.status).toBe(502);
      expect(await response.json()).toEqual({
        error: {
          message: 'Upstream could not be reached or closed the connection.',
          type: 'server_error',
          param: null,
          code: 'upstream_unreachable',
        },
      });
      // The log line says why, not only that it failed.
      const line = harness.logLines.find((entry) => entry.includes('"msg":"request"'));
      expect(JSON.parse(line ?? '{}')).toMatchObject({
        status: 502,
        errorCode: 'upstream_unreachable',
        errorCause: expect.stringContaining('ECONNREFUSED'),
      });
      const metrics = await (await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
      expect(metrics).toContain(
        'ctxgate_upstream_errors_total{upstream="default",code="upstream_unreachable"} 1',
      );
    } finally {
      await harness.close();
    }
  });

  it('answers 504 when the upstream does not accept the connection in time', async () => {
    // A listener whose accept queue is full: further connection attempts hang in SYN_SENT.
    const port = await findFreePort();
    const listener: ChildProcess = spawn(
      'python3',
      [
        '-c',
        `import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(("127.0.0.1",${port}))\ns.listen(0)\nprint("ready",flush=True)\ntime.sleep(60)`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise((resolve) => listener.stdout?.once('data', resolve));
    const fillers = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<Socket>((resolve) => {
            const socket = new Socket();
            socket.on('error', () => {});
            socket.connect(port, '127.0.0.1');
            setTimeout(() => resolve(socket), 100);
          }),
      ),
    );
    const harness = await startGateway({
      env: { UPSTREAM_BASE_URL: `http://127.0.0.1:${port}/v1` },
      configYaml: 'timeouts:\n  upstream_connect_ms: 300\n',
    });
    try {
      const response = await post(harness.baseUrl, chatBody());
      expect(response.status).toBe(504);
      expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
        'Upstream did not accept a connection within 300 ms.',
      );
    } finally {
      await harness.close();
      for (const socket of fillers) socket.destroy();
      listener.kill('SIGKILL');
    }
  });
});

describe('client aborts and broken streams', () => {
  const fake = new FakeUpstream();
  const gateway = gatewayBefore(fake);

  /**
   * Starts a request, aborts it once `abortWhen` resolves, and waits for the upstream call to close: it
   * closes early only when the gateway passed the abort on (the fake would answer after 10 s otherwise,
   * and the test's own timeout would end it).
   */
  async function abortAndSeeUpstreamClosed(
    body: string,
    behaviour: Parameters<FakeUpstream['enqueue']>[0],
    abortWhen: (response: Promise<Response>) => Promise<void>,
  ): Promise<void> {
    fake.requests.length = 0;
    fake.enqueue(behaviour);
    const controller = new AbortController();
    const responsePromise = post(gateway.harness.baseUrl, body, controller.signal);
    responsePromise.catch(() => {});
    await abortWhen(responsePromise);
    const upstreamRequest = await waitFor(() => fake.chatRequests[0]);
    controller.abort();
    await upstreamRequest.closedEarly;
    expect(upstreamRequest.completed).toBe(false);
  }

  it('aborts the upstream call when the client leaves before the upstream answered (non-streaming)', async () => {
    // The upstream would have answered after 10 s; the abort reached it before.
    await abortAndSeeUpstreamClosed(chatBody(), { delayBeforeHeadersMs: 10_000 }, async () => {
      await waitFor(() => fake.chatRequests[0]);
    });
  });

  it('aborts the upstream call when a streaming client leaves before the first byte', async () => {
    await abortAndSeeUpstreamClosed(
      chatBody({ stream: true }),
      { delayBeforeHeadersMs: 10_000 },
      async () => {
        await waitFor(() => fake.chatRequests[0]);
      },
    );
  });

  it('aborts the upstream stream when the client leaves mid-stream', async () => {
    // 50 chunks 200 ms apart: the stream would end after 10 s.
    await abortAndSeeUpstreamClosed(
      chatBody({ stream: true }),
      { chunkDelayMs: 200, chunks: 50, content: 'x '.repeat(100) },
      async (responsePromise) => {
        const response = await responsePromise;
        const reader = response.body!.getReader();
        await reader.read();
      },
    );
  });

  it('ends the client stream with an error event when the upstream breaks off mid-stream', async () => {
    fake.enqueue({ breakAfterChunks: 3, content: 'a b c d e f', chunks: 6 });
    const response = await post(gateway.harness.baseUrl, chatBody({ stream: true }));
    expect(response.status).toBe(200);
    const events = (await response.text()).split('\n\n').filter(Boolean);
    expect(events).not.toContain('data: [DONE]');
    expect(events).toHaveLength(4);
    const last = JSON.parse(events.at(-1)!.slice('data: '.length)) as {
      error: { code: string; type: string };
    };
    expect(last.error.code).toBe('upstream_unreachable');
    expect(last.error.type).toBe('server_error');
  });

  it('ends the client stream with an error event when the upstream closes cleanly before its finish', async () => {
    fake.enqueue({ endAfterChunks: 2 });
    const response = await post(gateway.harness.baseUrl, chatBody({ stream: true }));
    const events = (await response.text()).split('\n\n').filter(Boolean);
    expect(events).not.toContain('data: [DONE]');
    expect(events.at(-1)).toMatch(/^data: \{"error":/);
  });
});
