// The composition root's own dealings with the connections of the server it builds: Node's HTTP parser
// keeps reading each client socket natively, and shutdown does not wait for a connection that never
// sent a byte. On loopback, against the strict fake provider.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from './helpers/fake-upstream.js';
import { startGateway } from './helpers/start-gateway.js';

let fake: FakeUpstream;
let upstreamUrl: string;

beforeAll(async () => {
  fake = new FakeUpstream();
  upstreamUrl = await fake.start();
});

afterAll(async () => {
  await fake.stop();
});

describe('client connections', () => {
  it('are read by Node’s HTTP parser natively, not through a data listener', async () => {
    const harness = await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl } });
    try {
      const sockets: Socket[] = [];
      harness.gateway.app.server.on('connection', (socket: Socket) => sockets.push(socket));
      // Node's parser reads a socket from C++ (its `_consumed` mark) until someone else listens for
      // 'data' or 'readable' on it; from then on every request's bytes go through JavaScript streams
      // instead. The mark is Node's own, set where the server starts reading.
      for (let request = 0; request < 2; request++) {
        const response = await fetch(`${harness.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
        });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
      expect(sockets.length).toBeGreaterThan(0);
      for (const socket of sockets)
        expect((socket as Socket & { parser?: { _consumed?: boolean } }).parser?._consumed).toBe(true);
    } finally {
      await harness.close();
    }
  });

  it('do not hold shutdown when they never sent a byte (a client pool opens one ahead of use)', async () => {
    const harness = await startGateway({ env: { UPSTREAM_BASE_URL: upstreamUrl } });
    const { port } = new URL(harness.baseUrl);
    const accepted = new Promise<void>((resolve) =>
      harness.gateway.app.server.once('connection', () => resolve()),
    );
    const silent = connect(Number(port), '127.0.0.1');
    const closed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    silent.on('error', () => undefined);
    await accepted;
    // Without the gateway closing it, close() waits for Node's request timeout (minutes), past the
    // test's own timeout.
    await harness.close();
    await closed;
    expect(silent.destroyed).toBe(true);
  });
});
