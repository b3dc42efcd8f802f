// What the relay makes of an upstream answer (relay.ts), as tables: a whole answer read and judged once
// (a 2xx that is not a JSON object is the upstream's fault, an error body is handed on unread), and an
// event stream passed on as it arrives — always cut at event boundaries, its `[DONE]` held back when
// asked, a stream that ends or breaks before its finish told as a failure, a client that leaves told
// apart from an upstream that broke. The upstream is the scripted port (answers in the chunks they
// arrive in, a connection that breaks as undici's does).
import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../src/errors.js';
import { readWholeAnswer, relayStream } from '../../src/upstream/relay.js';
import { answerOf, recordingClient, type ScriptedAnswer } from '../helpers/port-fakes.js';

const json = { 'content-type': 'application/json' };
const sse = { 'content-type': 'text/event-stream' };

const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 31, completion_tokens: 4, total_tokens: 35 },
};

const codeOf = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
  } catch (error) {
    return isGatewayError(error) ? error.code : `not a gateway error: ${String(error)}`;
  }
  return 'resolved';
};

describe('a whole answer', () => {
  it('is parsed once: the reply, and usage as the completion reports it', async () => {
    const body = JSON.stringify(completion);
    // Split inside a number: the reader joins the body before it parses it.
    const answer = await readWholeAnswer(
      answerOf({ status: 200, headers: json, chunks: [body.slice(0, 40), body.slice(40)] }),
      { expectCompletion: true },
    );
    expect(answer.status).toBe(200);
    expect(answer.body.toString()).toBe(body);
    expect(answer.reply).toMatchObject({ role: 'assistant', content: 'Hello there.' });
    expect(answer.usage).toEqual({ promptTokens: 31, completionTokens: 4 });
  });

  it.each<[string, ScriptedAnswer]>([
    ['JSON cut off mid-body', { status: 200, headers: json, chunks: ['{"id":"chatcmpl-1","choi'] }],
    ['an HTML page', { status: 200, headers: { 'content-type': 'text/html' }, chunks: ['<html>ok</html>'] }],
    ['a JSON array', { status: 200, headers: json, chunks: ['[1,2,3]'] }],
    ['an empty body', { status: 200, headers: json, chunks: [] }],
    [
      'an event stream to a request that asked for none',
      { status: 200, headers: sse, chunks: ['data: {}\n\n'] },
    ],
  ])('answering 2xx with %s is a 502 upstream_bad_response', async (_name, scripted) => {
    expect(await codeOf(readWholeAnswer(answerOf(scripted), { expectCompletion: true }))).toBe(
      'upstream_bad_response',
    );
  });

  it('is given an id (and a time) where its server gave none; only a completion', async () => {
    // Some OpenAI-compatible servers give none (dongri/openai-api-rs#146); strict clients refuse it.
    const { id: _id, ...idless } = completion;
    const given = await readWholeAnswer(
      answerOf({ status: 200, headers: json, chunks: [JSON.stringify(idless)] }),
      { expectCompletion: true },
    );
    const written = JSON.parse(given.body.toString()) as { id: unknown; created: unknown };
    expect(written.id).toMatch(/^chatcmpl-[\w-]{8,}$/);
    expect(Number.isInteger(written.created)).toBe(true);
    expect(given.usage).toEqual({ promptTokens: 31, completionTokens: 4 });
    // Another server's own body (no choices) goes as it came.
    const own = '{"model":"qwen3","message":{"role":"assistant","content":"Hi"},"done":true}';
    const kept = await readWholeAnswer(answerOf({ status: 200, headers: json, chunks: [own] }), {
      expectCompletion: true,
    });
    expect(kept.body.toString()).toBe(own);
  });

  it('is given its `object` and a time where its server gave only an id (GitHub Copilot, Azure-flavored)', async () => {
    // 0xPlaygrounds/rig#1451, spring-projects/spring-ai#6010: strict clients refuse it.
    const { object: _object, created: _created, ...timeless } = completion;
    const given = await readWholeAnswer(
      answerOf({ status: 200, headers: json, chunks: [JSON.stringify(timeless)] }),
      { expectCompletion: true },
    );
    const written = JSON.parse(given.body.toString()) as Record<string, unknown>;
    expect(written).toMatchObject({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      choices: completion.choices,
    });
    expect(Number.isInteger(written.created)).toBe(true);
  });

  it('is handed on as it came when its tool calls are in the shape, written anew when they are not', async () => {
    const call = (args: unknown) => ({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1_700_000_000,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read', arguments: args } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    });
    // Spaced as a server may space it: handed on byte for byte.
    const inShape = JSON.stringify(call('{"path":"a.ts"}'), null, 1);
    const kept = await readWholeAnswer(answerOf({ status: 200, headers: json, chunks: [inShape] }), {
      expectCompletion: true,
    });
    expect(kept.body.toString()).toBe(inShape);
    // As llama-server gave it (ggml-org/llama.cpp#20198): the client gets what the session stores.
    const decoded = JSON.stringify(call({ path: 'a.ts' }), null, 1);
    const conformed = await readWholeAnswer(answerOf({ status: 200, headers: json, chunks: [decoded] }), {
      expectCompletion: true,
    });
    expect(JSON.parse(conformed.body.toString())).toEqual(call('{"path":"a.ts"}'));
    expect(conformed.reply?.tool_calls).toEqual(call('{"path":"a.ts"}').choices[0]?.message.tool_calls);
  });

  it('hands an error body on as it came, without parsing it or reading usage into it', async () => {
    const body = '<html>502 Bad Gateway "prompt_tokens": 12</html>';
    const answer = await readWholeAnswer(answerOf({ status: 502, chunks: [body] }), {
      expectCompletion: true,
    });
    expect(answer).toMatchObject({ status: 502, completion: undefined, reply: undefined });
    expect(answer.body.toString()).toBe(body);
    expect(answer.usage).toEqual({ promptTokens: undefined, completionTokens: undefined });
  });

  it('reads usage from the end of a 2xx body that is not a completion when none is expected', async () => {
    const body = '{"object":"list","data":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}';
    const answer = await readWholeAnswer(answerOf({ status: 200, chunks: [body] }), {
      expectCompletion: false,
    });
    expect(answer.completion).toBeUndefined();
    expect(answer.usage).toEqual({ promptTokens: 7, completionTokens: 2 });
  });

  it('passes on a connection that broke while the body was read', async () => {
    expect(
      await codeOf(
        readWholeAnswer(answerOf({ status: 200, chunks: ['{"id"'], breaks: true }), {
          expectCompletion: true,
        }),
      ),
    ).toBe('upstream_unreachable');
  });
});

/** An OpenAI chat stream of `words`, each a delta event, then a finish and (optionally) usage and [DONE]. */
function streamEvents(
  words: string[],
  options: { finish?: boolean; usage?: boolean; done?: boolean } = {},
): string[] {
  const events = words.map(
    (word) =>
      `data: {"choices":[{"index":0,"delta":{"content":${JSON.stringify(word)}},"finish_reason":null}]}\n\n`,
  );
  if (options.finish !== false)
    events.push('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n');
  if (options.usage === true)
    events.push(
      'data: {"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43}}\n\n',
    );
  if (options.done !== false) events.push('data: [DONE]\n\n');
  return events;
}

/** The events cut into chunks at `every` bytes: boundaries fall anywhere, mid-event and mid-character. */
function rechunk(events: string[], every: number): Buffer[] {
  const bytes = Buffer.from(events.join(''));
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += every) chunks.push(bytes.subarray(at, at + every));
  return chunks;
}

/** The scripted answer of these chunks (bytes: a cut may fall mid-character), breaking after them if asked. */
function streamAnswer(chunks: Array<Buffer | string>, breaks = false) {
  const response = answerOf({ status: 200, headers: sse, breaks });
  return {
    ...response,
    async forEachChunk(onChunk: (chunk: Buffer) => void | Promise<void>) {
      for (const chunk of chunks) await onChunk(Buffer.from(chunk));
      if (breaks) await response.forEachChunk(() => undefined);
    },
  };
}

describe('an event stream', () => {
  const words = ['Hé', 'llo', ' wörld', '!'];

  it.each([1, 7, 64, 4_096])(
    'reaches the client whole and at event boundaries, cut every %i bytes on the way in',
    async (every) => {
      const events = streamEvents(words, { usage: true });
      const client = recordingClient();
      const writes: string[] = [];
      const write = client.write.bind(client);
      client.write = (bytes) => {
        writes.push(Buffer.from(bytes as Buffer).toString('latin1'));
        return write(bytes);
      };
      const outcome = await relayStream(streamAnswer(rechunk(events, every)), client, {
        holdDone: false,
        assemble: true,
        expectFinish: true,
      });
      expect(outcome.kind).toBe('ended');
      if (outcome.kind !== 'ended') return;
      expect(outcome.failure).toBeUndefined();
      expect(Buffer.from(writes.join(''), 'latin1').toString()).toBe(events.join(''));
      for (const write of writes) expect(write.endsWith('\n\n')).toBe(true);
      expect(outcome.reply).toMatchObject({ role: 'assistant', content: 'Héllo wörld!' });
      expect(outcome.replyComplete).toBe(true);
      expect(outcome.usage).toEqual({ promptTokens: 40, completionTokens: 3 });
      expect(outcome.dataEvents).toBe(events.length);
      expect(outcome.heldDone).toBeUndefined();
    },
  );

  it('holds back [DONE] when asked: the caller writes it, or an error event in its place', async () => {
    const client = recordingClient();
    const outcome = await relayStream(streamAnswer(rechunk(streamEvents(words), 5)), client, {
      holdDone: true,
      assemble: true,
      expectFinish: true,
    });
    expect(outcome.kind === 'ended' && outcome.heldDone?.toString()).toBe('data: [DONE]\n\n');
    expect(client.received).toContain('"finish_reason":"stop"');
    expect(client.received).not.toContain('[DONE]');
    expect(client.ended).toBe(false);
  });

  it.each<[string, string[], boolean, string]>([
    [
      'ends before its finish',
      streamEvents(words, { finish: false, done: false }),
      false,
      'upstream_bad_response',
    ],
    [
      'breaks off mid-answer',
      streamEvents(words, { finish: false, done: false }),
      true,
      'upstream_unreachable',
    ],
    [
      'carries an event that is not JSON',
      [
        'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
        'data: {not json\n\n',
        ...streamEvents([]),
      ],
      false,
      'upstream_bad_response',
    ],
  ])('that %s is a failure the client is told of', async (_name, events, breaks, code) => {
    const client = recordingClient();
    const outcome = await relayStream(streamAnswer(events, breaks), client, {
      holdDone: true,
      assemble: true,
      expectFinish: true,
    });
    expect(outcome.kind).toBe('ended');
    expect(outcome.kind === 'ended' && outcome.failure?.code).toBe(code);
    expect(client.destroyed).toBe(false);
  });

  // vLLM's and OpenRouter's errors end a stream with no finish: the provider's error is the client's, not
  // also a gateway error of a stream cut off.
  it.each([
    ['an error of its own', 'data: {"error":{"code":400,"message":"Too long."}}\n\n'],
    ["vLLM's error object", 'data: {"object":"error","message":"Too long.","code":400}\n\n'],
    ['an error, then a comment', 'data: {"error":{"message":"Too long."}}\n\n: OPENROUTER PROCESSING\n\n'],
  ])('that ends with %s is no stream cut off', async (_name, last) => {
    for (const assemble of [true, false]) {
      const client = recordingClient();
      const events = streamEvents(words, { finish: false, done: false });
      const outcome = await relayStream(streamAnswer([...events, last]), client, {
        holdDone: true,
        assemble,
        expectFinish: true,
      });
      expect(outcome.kind === 'ended' && outcome.failure).toBeUndefined();
      expect(outcome.kind === 'ended' && outcome.upstreamErred).toBe(true);
      expect(client.received).toBe(events.join('') + last);
    }
  });

  it('that ends with an answer quoting an error is still cut off', async () => {
    const events = streamEvents(['data: {"error":1}'], { finish: false, done: false });
    const outcome = await relayStream(streamAnswer(events), recordingClient(), {
      holdDone: true,
      assemble: false,
      expectFinish: true,
    });
    expect(outcome.kind === 'ended' && outcome.failure?.code).toBe('upstream_bad_response');
  });

  it('that breaks off leaves no half event with the client', async () => {
    const events = streamEvents(words, { finish: false, done: false });
    const whole = events.slice(0, 2).join('');
    const client = recordingClient();
    await relayStream(streamAnswer([whole + events[2]?.slice(0, 20)], true), client, {
      holdDone: true,
      assemble: false,
      expectFinish: true,
    });
    expect(client.received).toBe(whole);
  });

  it('whose last event has no blank line after it is sent whole as it came', async () => {
    const events = streamEvents(words, { done: false });
    const last = (events.pop() as string).trimEnd();
    const client = recordingClient();
    const outcome = await relayStream(streamAnswer([...events, last]), client, {
      holdDone: false,
      assemble: false,
      expectFinish: true,
    });
    expect(outcome.kind === 'ended' && outcome.failure).toBeUndefined();
    expect(client.received).toBe(events.join('') + last);
  });

  it('is dropped when the client leaves, with what had arrived', async () => {
    const events = streamEvents(words);
    const client = recordingClient();
    const response = answerOf({ status: 200, headers: sse });
    const outcome = await relayStream(
      {
        ...response,
        async forEachChunk(onChunk) {
          await onChunk(Buffer.from(events[0] as string));
          client.leave();
          throw new Error('aborted');
        },
      },
      client,
      { holdDone: true, assemble: true, expectFinish: true },
    );
    expect(outcome.kind).toBe('client_left');
    expect(outcome.dataEvents).toBe(1);
    expect(outcome.reply).toMatchObject({ content: 'Hé' });
    expect(client.destroyed).toBe(true);
  });
});
