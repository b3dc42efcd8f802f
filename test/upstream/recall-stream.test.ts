// The recall tool's calls in upstream answers, before the client sees them: how a stream leads, the
// filter that takes recall calls out of a relayed stream (cut at every byte, as a network cuts it), and
// a whole completion without them.
import { describe, expect, it } from 'vitest';
import {
  completionWithoutRecallCalls,
  RecallDeltaFilter,
  StreamLead,
} from '../../src/upstream/recall-stream.js';

const event = (delta: Record<string, unknown>, finish: string | null = null): string =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const role = event({ role: 'assistant', content: '' });
const callStart = (index: number, name: string, id = `call_${index}`): string =>
  event({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] });
const callArguments = (index: number, text: string): string =>
  event({ tool_calls: [{ index, function: { arguments: text } }] });
const done = 'data: [DONE]\n\n';

function leadOf(stream: string, byByte = false): string {
  const lead = new StreamLead();
  const bytes = Buffer.from(stream);
  if (!byByte) return lead.push(bytes);
  for (let index = 0; index < bytes.length; index++) lead.push(bytes.subarray(index, index + 1));
  return lead.lead;
}

describe('how a stream leads', () => {
  it.each([
    ['content first', role + event({ content: 'Hello' }), 'client'],
    ['a recall call first', role + callStart(0, 'ctxgate_recall'), 'recall'],
    [
      'reasoning, then a recall call',
      role + event({ reasoning_content: 'Let me look.' }) + callStart(0, 'ctxgate_recall'),
      'recall',
    ],
    [
      "the client's own call first",
      role + callStart(0, 'read_file') + callStart(1, 'ctxgate_recall'),
      'client',
    ],
    ['a refusal', role + event({ refusal: 'No.' }), 'client'],
    ['a finish with nothing', role + event({}, 'stop'), 'client'],
    ['[DONE]', done, 'client'],
    ['an error event', 'data: {"error":{"message":"x"}}\n\n', 'client'],
    ['only its role so far', role, 'undecided'],
  ])('%s: %s', (_name, stream, expected) => {
    expect(leadOf(stream)).toBe(expected);
    expect(leadOf(stream, true)).toBe(expected);
  });
});

/** The filter's output for a stream fed in pieces of `size` bytes. */
function filtered(stream: string, size: number): { text: string; removed: number } {
  const filter = new RecallDeltaFilter();
  const bytes = Buffer.from(stream);
  const out: Buffer[] = [];
  for (let index = 0; index < bytes.length; index += size) {
    const piece = filter.push(bytes.subarray(index, index + size));
    if (piece !== undefined) out.push(piece);
  }
  const rest = filter.end();
  if (rest !== undefined) out.push(rest);
  return { text: Buffer.concat(out).toString('utf8'), removed: filter.removed };
}

const chunksOf = (text: string) =>
  text
    .split('\n\n')
    .filter((line) => line.startsWith('data: {'))
    .map(
      (line) =>
        JSON.parse(line.slice(6)) as {
          choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>;
        },
    );

describe('the filter of a relayed stream', () => {
  const mixed =
    role +
    callStart(0, 'ctxgate_recall') +
    callArguments(0, '{"query":"vault"}') +
    callStart(1, 'lookup') +
    callArguments(1, '{"vault":1}') +
    event({}, 'tool_calls') +
    done;

  it("takes a recall call out and numbers the client's calls from 0, cut anywhere", () => {
    const whole = filtered(mixed, mixed.length);
    expect(whole.removed).toBe(1);
    const calls = chunksOf(whole.text).flatMap(
      (chunk) => (chunk.choices[0]?.delta.tool_calls as Array<Record<string, unknown>> | undefined) ?? [],
    );
    expect(calls).toEqual([
      { index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } },
      { index: 0, function: { arguments: '{"vault":1}' } },
    ]);
    expect(whole.text).not.toContain('ctxgate_recall');
    expect(chunksOf(whole.text).at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(whole.text.endsWith(done)).toBe(true);
    for (const size of [1, 2, 7, 64]) expect(filtered(mixed, size).text).toBe(whole.text);
  });

  it('makes a finish by tool calls a stop when only recall calls were in it, and leaves content byte for byte', () => {
    const stream =
      role +
      event({ content: 'The code is ' }) +
      event({ content: 'K1-2.' }) +
      callStart(0, 'ctxgate_recall') +
      event({}, 'tool_calls') +
      done;
    const out = filtered(stream, 5).text;
    expect(out.startsWith(role + event({ content: 'The code is ' }) + event({ content: 'K1-2.' }))).toBe(
      true,
    );
    expect(out).not.toContain('ctxgate_recall');
    expect(chunksOf(out).at(-1)?.choices[0]?.finish_reason).toBe('stop');
  });

  it('passes a stream without recall calls unchanged', () => {
    const stream = role + callStart(0, 'read_file') + callArguments(0, '{}') + event({}, 'tool_calls') + done;
    expect(filtered(stream, 3).text).toBe(stream);
  });
});

describe('a whole completion', () => {
  const completion = (calls: Array<{ name: string }>, content: string | null = null) => ({
    id: 'c',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          tool_calls: calls.map((call, index) => ({
            id: `call_${index}`,
            type: 'function',
            function: { name: call.name, arguments: '{}' },
          })),
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 5 },
  });

  it("keeps the client's calls and its finish", () => {
    const out = completionWithoutRecallCalls(
      completion([{ name: 'ctxgate_recall' }, { name: 'lookup' }]),
    ) as ReturnType<typeof completion>;
    expect(out.choices[0]?.message.tool_calls.map((call) => call.function.name)).toEqual(['lookup']);
    expect(out.choices[0]?.finish_reason).toBe('tool_calls');
    expect(out.usage).toEqual({ prompt_tokens: 5 });
  });

  it('makes an answer of recall calls alone an empty stop', () => {
    const out = completionWithoutRecallCalls(completion([{ name: 'ctxgate_recall' }])) as {
      choices: Array<{ message: Record<string, unknown>; finish_reason: string }>;
    };
    expect(out.choices[0]?.message).toEqual({ role: 'assistant', content: '' });
    expect(out.choices[0]?.finish_reason).toBe('stop');
  });

  it('returns a completion without recall calls as it was', () => {
    const plain = completion([{ name: 'lookup' }], 'hi');
    expect(completionWithoutRecallCalls(plain)).toBe(plain);
  });
});
