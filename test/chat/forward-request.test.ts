// A forwarded call as the client receives it and as its outcome says: an event stream relayed event by
// event (an upstream that breaks mid-stream ends it with an error event), a body relayed chunk by chunk
// (a break cuts the connection), a whole answer; usage read from what was relayed.
import { describe, expect, it } from 'vitest';
import { createForwarder } from '../../src/chat/forward-request.js';
import { createMetrics } from '../../src/metrics.js';
import {
  recordingClient,
  scriptedUpstream,
  upstreamConfig,
  type ScriptedAnswer,
} from '../helpers/port-fakes.js';

const credential = { mode: 'pass_through' as const, tenantId: 'acme', mayHoldSessions: false };
const sse = { 'content-type': 'text/event-stream' };

async function forward(answer: ScriptedAnswer, streamBody = false) {
  const upstream = scriptedUpstream([answer]);
  const forwarder = createForwarder({
    upstream,
    metrics: createMetrics({ collectProcessMetrics: false }),
    now: () => 0,
  });
  const client = recordingClient();
  const outcome = await forwarder.forward(
    {
      target: upstreamConfig('primary'),
      method: 'POST',
      path: '/completions',
      body: '{"model":"m"}',
      streamBody,
      clientHeaders: { authorization: 'Bearer sk-client' },
      credential,
    },
    client,
  );
  return { outcome, client, upstream };
}

describe('the forwarder', () => {
  it.each<
    [
      string,
      ScriptedAnswer,
      boolean,
      {
        received: string;
        totalTokens: number | undefined;
        streamErrorCode: string | undefined;
        destroyed: boolean;
      },
    ]
  >([
    [
      'an event stream, with the usage of its last event',
      {
        status: 200,
        headers: sse,
        chunks: [
          'data: {"choices":[{"text":"hi"}]}\n\n',
          'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\ndata: [DONE]\n\n',
        ],
      },
      false,
      {
        received:
          'data: {"choices":[{"text":"hi"}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\ndata: [DONE]\n\n',
        totalTokens: 10,
        streamErrorCode: undefined,
        destroyed: false,
      },
    ],
    [
      'an event stream the upstream breaks: an error event ends it',
      { status: 200, headers: sse, chunks: ['data: {"choices":[{"text":"hi"}]}\n\n'], breaks: true },
      false,
      {
        received: 'data: {"choices":[{"text":"hi"}]}\n\n',
        totalTokens: undefined,
        streamErrorCode: 'upstream_unreachable',
        destroyed: false,
      },
    ],
    [
      'a body chunk by chunk, its usage read from its tail',
      {
        status: 200,
        headers: { 'content-type': 'application/json' },
        chunks: ['{"id":"x",', '"usage":{"total_tokens":12}}'],
      },
      true,
      {
        received: '{"id":"x","usage":{"total_tokens":12}}',
        totalTokens: 12,
        streamErrorCode: undefined,
        destroyed: false,
      },
    ],
    [
      'a body chunk by chunk that breaks: the connection is cut',
      {
        status: 200,
        headers: { 'content-type': 'application/octet-stream' },
        chunks: ['RIFF'],
        breaks: true,
      },
      true,
      { received: 'RIFF', totalTokens: undefined, streamErrorCode: 'upstream_unreachable', destroyed: true },
    ],
    [
      'a refusal, whole',
      {
        status: 404,
        headers: { 'content-type': 'application/json' },
        chunks: ['{"error":{"message":"no"}}'],
      },
      false,
      {
        received: '{"error":{"message":"no"}}',
        totalTokens: undefined,
        streamErrorCode: undefined,
        destroyed: false,
      },
    ],
  ])('relays %s', async (_name, answer, streamBody, expected) => {
    const { outcome, client } = await forward(answer, streamBody);
    expect(client.received.startsWith(expected.received)).toBe(true);
    if (expected.streamErrorCode === undefined) expect(client.received).toBe(expected.received);
    else if (!expected.destroyed)
      expect(client.received.slice(expected.received.length)).toMatch(/^event: error\n|^data: \{"error"/);
    expect(client.destroyed).toBe(expected.destroyed);
    expect(outcome).toMatchObject({
      answered: true,
      totalTokens: expected.totalTokens,
      streamErrorCode: expected.streamErrorCode,
      upstream: { name: 'primary', status: answer.status, attempts: 1 },
    });
  });

  it('sends the client its own key when the upstream has none, and the body as given', async () => {
    const { upstream } = await forward({ status: 200, chunks: ['{}'] });
    expect(upstream.sent[0]?.headers.authorization).toBe('Bearer sk-client');
    expect(upstream.sent[0]?.body).toBe('{"model":"m"}');
    expect(upstream.sent[0]?.path).toBe('/completions');
  });
});
