// What a session request waits on before its turn is open: the hold and the read of the session go to
// Redis together (one command), one round trip, not two. Seen through a TCP relay in front of the real redis-server
// that holds every answer back a while and notes the order of what passes through it.
import { inSession } from '../helpers/in-session.js';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { ContextMessage } from '../../src/context/types.js';
import { createHoldQueue } from '../../src/sessions/hold-queue.js';
import { beginSessionTurn } from '../../src/sessions/session-turn.js';
import { createRedisConnection } from '../../src/store/redis-client.js';
import { createRedisSessionStore } from '../../src/store/redis-session-store.js';
import type { SessionStore } from '../../src/store/session-store.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';

interface Relay {
  url: string;
  /** 'sent <command bytes>' as the client's bytes arrive; 'answered' as an answer is passed back. */
  events: string[];
  close(): Promise<void>;
}

async function startRelay(target: string, answerDelayMs: number): Promise<Relay> {
  const { hostname, port } = new URL(target);
  const events: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const redis = net.connect(Number(port), hostname);
    sockets.add(client).add(redis);
    client.on('data', (bytes: Buffer) => {
      events.push(`sent ${bytes.toString('latin1')}`);
      redis.write(bytes);
    });
    redis.on('data', (bytes: Buffer) =>
      setTimeout(() => {
        events.push('answered');
        client.write(bytes);
      }, answerDelayMs),
    );
    const end = (): void => {
      client.destroy();
      redis.destroy();
    };
    client.on('close', end).on('error', end);
    redis.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: relayPort } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${relayPort}`,
    events,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openTurn(store: SessionStore, key: { tenantId: string; sessionId: string }, text: string) {
  return inSession(
    beginSessionTurn({
      holdQueue: createHoldQueue(),
      store,
      key,
      historyMode: 'delta',
      incoming: [{ role: 'user', content: text }] as ContextMessage[],
      tokenizer,
      holdMs: 30_000,
      maxTurnMessages: 1_000,
    }),
  );
}

describe('opening a session turn on Redis', () => {
  it('sends the read of the session before the hold is answered, and reads the turn before it', async () => {
    const relay = await startRelay(inject('redisUrl'), 30);
    cleanups.push(() => relay.close());
    const store = createRedisSessionStore({
      redis: createRedisConnection({ mode: 'standalone', url: relay.url }),
      limits: { maxActiveMessages: 100, minActiveMessages: 4, idleTtlSeconds: 600 },
    });
    cleanups.push(() => store.close());
    for (let attempt = 0; attempt < 100 && !(await store.ping()); attempt++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const key = { tenantId: 'round-trips', sessionId: randomUUID() };

    const first = await openTurn(store, key, 'first question');
    await first.commit(
      { role: 'assistant', content: 'first answer' },
      { window: 128_000, historyStartIndex: 0, keepFirstTurns: 1 },
    );
    await first.release();

    relay.events.length = 0;
    const second = await openTurn(store, key, 'second question');
    try {
      const holdSent = relay.events.findIndex((event) => event.startsWith('sent') && event.includes(':hold'));
      const readSent = relay.events.findIndex(
        (event) => event.startsWith('sent') && event.includes(':active'),
      );
      const firstAnswer = relay.events.indexOf('answered');
      expect(holdSent).not.toBe(-1);
      expect(readSent).toBeGreaterThanOrEqual(holdSent);
      // Not waited for: the read went out while the hold's answer was still on its way.
      expect(readSent).toBeLessThan(firstAnswer);
      expect(second.conversation.map((message) => message.content)).toEqual([
        'first question',
        'first answer',
        'second question',
      ]);
    } finally {
      await second.release();
    }
  });
});
