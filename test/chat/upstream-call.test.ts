// One measured exchange: the tally of its calls (how many, to which upstream, the last status, the time
// on the gateway's clock, a failure's cause), the headers each upstream gets, the metrics it counts, and
// a client that left — quiet, not an error. A scripted upstream at the port; a stepped clock.
import { describe, expect, it } from 'vitest';
import { outcomeOf } from '../../src/chat/request-outcome.js';
import { measuredExchange } from '../../src/chat/upstream-call.js';
import { isGatewayError } from '../../src/errors.js';
import { createMetrics } from '../../src/metrics.js';
import { recordingClient, scriptedUpstream, upstreamConfig } from '../helpers/port-fakes.js';

const credential = { mode: 'gateway_key' as const, tenantId: 'acme', mayHoldSessions: true };

function setup(script: Parameters<typeof scriptedUpstream>[0]) {
  const upstream = scriptedUpstream(script);
  const metrics = createMetrics({ collectProcessMetrics: false });
  let clock = 1_000;
  const deps = { upstream, metrics, now: () => (clock += 25) };
  const client = recordingClient();
  const context = {
    target: upstreamConfig('primary', 'sk-primary'),
    client,
    clientHeaders: { authorization: 'Bearer gw-key', 'x-trace': 'abc' },
    credential,
  };
  return { upstream, metrics, deps, client, context };
}

describe('measuredExchange', () => {
  it('tallies every call of the exchange, the last upstream and status, and the time from first send to the end', async () => {
    const { deps, context, upstream } = setup([
      { status: 503, chunks: ['{}'] },
      { status: 200, chunks: ['{"ok":true}'] },
    ]);
    const fallback = upstreamConfig('fallback', 'sk-fallback');
    const { value, tally } = await measuredExchange(deps, context, async (exchange) => {
      await exchange.send({ method: 'POST', path: '/chat/completions', body: '{}' });
      const answer = await exchange.send({
        method: 'POST',
        path: '/chat/completions',
        body: '{}',
        target: fallback,
      });
      return (await answer.readAll()).toString();
    });
    expect(value).toBe('{"ok":true}');
    // Two reads of the stepped clock: start and end.
    expect(tally).toEqual({ name: 'fallback', status: 200, ms: 25, attempts: 2, errorCause: undefined });
    // Each upstream gets its own key, never the gateway's.
    expect(upstream.sent.map((request) => request.headers.authorization)).toEqual([
      'Bearer sk-primary',
      'Bearer sk-fallback',
    ]);
  });

  it("fails with the call's error and the tally on it: the network's own words, counted by upstream and code", async () => {
    const { deps, context, metrics } = setup([{ status: 0, refused: true }]);
    const failure = await measuredExchange(deps, context, async (exchange) => {
      await exchange.send({ method: 'POST', path: '/chat/completions', body: '{}' });
    }).catch((error: unknown) => error);
    expect(isGatewayError(failure) && failure.code).toBe('upstream_unreachable');
    expect(outcomeOf(failure).upstream).toEqual({
      name: 'primary',
      status: undefined,
      ms: 25,
      attempts: 1,
      errorCause: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9',
    });
    const text = await metrics.render();
    expect(text).toContain('ctxgate_upstream_errors_total{upstream="primary",code="upstream_unreachable"} 1');
    expect(text).toMatch(/ctxgate_upstream_duration_seconds_count\{upstream="primary",status="error"\} 1/);
  });

  it('ends quietly when the client left: no value, the connection dropped, nothing counted as an error', async () => {
    const { deps, context, client, metrics } = setup([
      { status: 200, chunks: ['data: {}\n\n'], breaks: true },
    ]);
    const result = await measuredExchange(deps, context, async (exchange) => {
      const answer = await exchange.send({ method: 'POST', path: '/chat/completions', body: '{}' });
      client.leave();
      await answer.readAll();
      return 'never';
    });
    expect(result.value).toBeUndefined();
    expect(result.tally.status).toBe(200);
    expect(client.destroyed).toBe(true);
    expect(await metrics.render()).not.toContain('ctxgate_upstream_errors_total{');
  });

  it('ends its time with the last upstream body: what the exchange does after it is the gateway’s own', async () => {
    const { deps, context } = setup([{ status: 200, chunks: ['{"ok":true}'] }]);
    let clock = 1_000;
    deps.now = () => clock;
    const { tally } = await measuredExchange(deps, context, async (exchange) => {
      clock += 40;
      const answer = await exchange.send({ method: 'POST', path: '/chat/completions', body: '{}' });
      clock += 30;
      const body = await answer.readAll();
      // After the body: a session's turn stored, the client written.
      clock += 5_000;
      return body;
    });
    expect(tally.ms).toBe(70);
  });

  it('counts a later call from its send: a body that ended before it does not end the time', async () => {
    const { deps, context } = setup([
      { status: 503, chunks: ['{}'] },
      { status: 0, refused: true },
    ]);
    let clock = 1_000;
    deps.now = () => clock;
    const failure = await measuredExchange(deps, context, async (exchange) => {
      await (await exchange.send({ method: 'POST', path: '/chat/completions', body: '{}' })).readAll();
      clock += 500;
      await exchange.send({ method: 'POST', path: '/chat/completions', body: '{}' });
    }).catch((error: unknown) => error);
    expect(outcomeOf(failure).upstream?.ms).toBe(500);
  });
});
