// What a chat attempt's answers teach (upstream-lessons.ts; docs/budgeting.md#what-the-gateway-learns),
// as tables: an overflow teaches a window only on evidence — numbers that agree with the gateway's own
// count of what was sent and quote nothing the client sent, or a failure without numbers that a smaller
// size going through then brackets — and a successful answer teaches estimate ratios, tool-set costs,
// and raises the alarm when the upstream counted far fewer tokens than were sent.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../../src/chat/chat-request-schema.js';
import { createUpstreamLessons, quotesRequest } from '../../src/chat/upstream-lessons.js';
import { createMetrics } from '../../src/metrics.js';
import type { LearnedLimits } from '../../src/store/learned-limits.js';
import { classifyUpstreamError } from '../../src/upstream/classify-upstream-error.js';
import { chat, ladderFor } from '../helpers/chat-attempts.js';

function lessonsFor(learnedLimits: LearnedLimits) {
  const logged: Array<{ level: 'info' | 'warn'; fields: Record<string, unknown> }> = [];
  const metrics = createMetrics({ collectProcessMetrics: false });
  const lessons = createUpstreamLessons({
    learnedLimits,
    metrics,
    warn: (fields) => logged.push({ level: 'warn', fields }),
    info: (fields) => logged.push({ level: 'info', fields }),
  });
  return { lessons, logged, metrics };
}

function overflow(message: string) {
  const verdict = classifyUpstreamError({
    status: 400,
    body: JSON.stringify({
      error: { message, type: 'invalid_request_error', code: 'context_length_exceeded' },
    }),
  });
  if (verdict.kind !== 'context_overflow') throw new Error(`not an overflow: ${message}`);
  return verdict;
}

const openAiOverflow = (window: number, counted: number) =>
  `This model's maximum context length is ${window} tokens. However, your messages resulted in ${counted} tokens. Please reduce the length of the messages.`;

describe('an overflow', () => {
  const same = (request: ChatCompletionRequest) => request;
  it.each<{
    name: string;
    message: (sent: number) => string;
    shape: (request: ChatCompletionRequest) => ChatCompletionRequest;
    lesson: string;
    window: number | undefined;
  }>([
    {
      name: 'states a window, its count agreeing with what was sent',
      message: (sent) => openAiOverflow(3_000, sent),
      shape: same,
      lesson: 'window',
      window: 3_000,
    },
    {
      name: 'states a window, its count within a few percent',
      message: (sent) => openAiOverflow(3_000, Math.round(sent * 1.04)),
      shape: same,
      lesson: 'window',
      window: 3_000,
    },
    {
      name: 'counts three times what was sent',
      message: (sent) => openAiOverflow(3_000, sent * 3),
      shape: same,
      lesson: 'disagreeing',
      window: undefined,
    },
    {
      name: 'quotes the numbers of a sentence the client itself sent',
      // A window alone, over what was sent: believed, were it not the client's own sentence echoed back.
      message: () => "This model's maximum context length is 3000 tokens.",
      shape: (request) => ({
        ...request,
        messages: [
          ...request.messages.slice(0, -1),
          { role: 'user', content: "Why do I get: This model's maximum context length is 3000 tokens." },
        ] as ChatCompletionRequest['messages'],
      }),
      lesson: 'quoted',
      window: undefined,
    },
    {
      name: 'states a window alone, what was sent close to it',
      message: () => "This model's maximum context length is 3000 tokens.",
      shape: same,
      lesson: 'window',
      window: 3_000,
    },
    {
      // GPT-5's input cap: the prompt may be 2,500 tokens whatever the answer asks for, so the size the
      // model takes is 2,500 plus the max_tokens sent (none here).
      name: 'states a cap on the input, its count agreeing with what was sent',
      message: (sent) =>
        `Input tokens exceed the configured limit of 2500 tokens. Your messages resulted in ${sent} tokens. Please reduce the length of the messages.`,
      shape: same,
      lesson: 'window',
      window: 2_500,
    },
    {
      name: 'states a cap on the input, the request asking for an answer of 300',
      message: (sent) =>
        `Input tokens exceed the configured limit of 2500 tokens. Your messages resulted in ${sent} tokens. Please reduce the length of the messages.`,
      shape: (request) => ({ ...request, max_tokens: 300 }),
      lesson: 'window',
      window: 2_800,
    },
    {
      name: 'says too long without numbers',
      message: () => 'The prompt is too long for this model.',
      shape: same,
      lesson: 'failure',
      window: undefined,
    },
  ])('that $name is a lesson of kind $lesson', ({ message, shape, lesson, window }) => {
    const { ladder, learnedLimits } = ladderFor(shape(chat(12)));
    const { lessons, logged } = lessonsFor(learnedLimits);
    lessons.overflow(overflow(message(ladder.first.promptTokens)), ladder.first, 400);
    expect(logged).toEqual([
      { level: 'info', fields: expect.objectContaining({ lesson, model: 'small-model' }) },
    ]);
    expect(learnedLimits.get('default', 'small-model', 'tenant-a').window).toBe(window);
    // Learned for the tenant that saw it, not yet for another.
    expect(learnedLimits.get('default', 'small-model', 'tenant-b').window).toBeUndefined();
  });

  it('without numbers, teaches a window once a smaller size goes through', () => {
    const { ladder, learnedLimits } = ladderFor(chat(12));
    const { lessons } = lessonsFor(learnedLimits);
    lessons.overflow(overflow('The prompt is too long for this model.'), ladder.first, 400);
    expect(learnedLimits.get('default', 'small-model', 'tenant-a').window).toBeUndefined();
    const smaller = ladder.smaller(
      { action: 're_render', reduction: 'drop_oldest_half', promptCap: 2_000 },
      ladder.first,
    );
    if (smaller === undefined) throw new Error('expected a smaller attempt');
    lessons.usage(smaller.promptTokens, smaller);
    expect(learnedLimits.get('default', 'small-model', 'tenant-a').window).toBe(smaller.promptTokens);
  });

  it('that states only a window is believed when what was sent could be over it', () => {
    const { ladder, learnedLimits } = ladderFor(chat(12));
    const { lessons } = lessonsFor(learnedLimits);
    // A window far above what was sent (more than a fifth above it) says something else went on.
    lessons.overflow(
      overflow(`This model's maximum context length is ${ladder.first.sentSize * 2} tokens.`),
      ladder.first,
      400,
    );
    expect(learnedLimits.get('default', 'small-model', 'tenant-a').window).toBeUndefined();
    lessons.overflow(
      overflow(`This model's maximum context length is ${ladder.first.sentSize - 10} tokens.`),
      ladder.first,
      400,
    );
    expect(learnedLimits.get('default', 'small-model', 'tenant-a').window).toBe(ladder.first.sentSize - 10);
  });
});

describe('a successful answer', () => {
  it.each<[string, string, (estimated: number) => number, number | undefined]>([
    [
      'an estimated model learns the ratio of the upstream’s count',
      'small-model',
      (estimated) => Math.round(estimated * 1.3),
      1.3,
    ],
    [
      'an exactly counted model learns nothing from a count that agrees',
      'exact-model',
      (estimated) => estimated + 1,
      undefined,
    ],
    [
      'an exactly counted model learns a ratio when the upstream counts more',
      'exact-model',
      (estimated) => Math.round(estimated * 1.25),
      1.25,
    ],
  ])('%s', (_name, model, reported, ratio) => {
    const { ladder, learnedLimits } = ladderFor({ ...chat(3), model } as ChatCompletionRequest);
    const { lessons } = lessonsFor(learnedLimits);
    const estimated = ladder.first.prepared.report.inputTokens;
    // Ratios are learned from several samples: the same answer five times.
    for (let sample = 0; sample < 5; sample++) lessons.usage(reported(estimated), ladder.first);
    const learned = learnedLimits.get('default', model, 'tenant-a').ratio;
    // Nothing recorded at all when nothing is to be learned (no sample written per request).
    const samples = learnedLimits.list().flatMap((entry) => entry.ratio?.tenants ?? []);
    expect(samples.map((sample) => sample.samples)).toEqual(ratio === undefined ? [] : [5]);
    if (ratio === undefined) expect(learned).toBeUndefined();
    else expect(learned).toBeCloseTo(ratio, 1);
  });

  it.each(['small-model', 'exact-model'])(
    '%s learns no ratio from a prompt counted from samples (a body over 4 MB)',
    (model) => {
      const { ladder, learnedLimits } = ladderFor({ ...chat(3), model } as ChatCompletionRequest, {
        precision: 'sampled',
      });
      const { lessons } = lessonsFor(learnedLimits);
      const estimated = ladder.first.prepared.report.inputTokens;
      for (let sample = 0; sample < 5; sample++) lessons.usage(Math.round(estimated * 1.25), ladder.first);
      expect(learnedLimits.get('default', model, 'tenant-a').ratio).toBeUndefined();
      // What went through is still learned: the window holds at least that much.
      expect(learnedLimits.list().length).toBeGreaterThan(0);
    },
  );

  it.each(['small-model', 'exact-model'])(
    '%s learns no ratio from a prompt counted past the counting bound (megabytes of text never counted before)',
    (model) => {
      // 600 earlier messages of 2,000 characters of random base64 before three turns of prose.
      const { messages } = chat(3);
      const earlier = Array.from({ length: 600 }, (_unused, index) => ({
        role: index % 2 === 0 ? 'user' : 'assistant',
        content: randomBytes(1_500).toString('base64'),
      }));
      const request = { model, messages: [messages[0], ...earlier, ...messages.slice(1)] };
      const { ladder, learnedLimits } = ladderFor(request as ChatCompletionRequest);
      expect(ladder.first.prepared.estimated).toBe(true);
      const { lessons } = lessonsFor(learnedLimits);
      const estimated = ladder.first.prepared.report.inputTokens;
      for (let sample = 0; sample < 5; sample++) lessons.usage(Math.round(estimated * 1.25), ladder.first);
      expect(learnedLimits.get('default', model, 'tenant-a').ratio).toBeUndefined();
    },
  );

  it('an estimated model learns its ratio from a first prompt of a few hundred tokens', () => {
    const { ladder, learnedLimits } = ladderFor(chat(2));
    const { lessons } = lessonsFor(learnedLimits);
    const estimated = ladder.first.prepared.report.inputTokens;
    expect(estimated).toBeGreaterThanOrEqual(256);
    expect(estimated).toBeLessThan(512);
    // A tokenizer that counts 1.3 times o200k: the next request's estimate is the provider's count.
    lessons.usage(Math.round(estimated * 1.3), ladder.first);
    expect(learnedLimits.get('default', 'small-model', 'tenant-a').ratio).toBeCloseTo(1.3, 2);
  });

  it.each(['small-model', 'exact-model'])(
    '%s learns no ratio from a prompt under 256 tokens, which a chat template’s own tokens would bend',
    (model) => {
      const { ladder, learnedLimits } = ladderFor({ ...chat(0, 'hi'), model } as ChatCompletionRequest);
      const { lessons } = lessonsFor(learnedLimits);
      const estimated = ladder.first.prepared.report.inputTokens;
      expect(estimated).toBeLessThan(256);
      // Llama 3's template adds its date header, some 30 tokens, to every prompt.
      for (let sample = 0; sample < 5; sample++) lessons.usage(estimated + 30, ladder.first);
      expect(learnedLimits.get('default', model, 'tenant-a').ratio).toBeUndefined();
    },
  );

  it.each<[string, (estimated: number) => number]>([
    // Not a tokenizer's difference: the prompt was cut, or counted only past the provider's cache.
    ['counts under three quarters of the gateway’s count', (estimated) => Math.floor(estimated * 0.7)],
    ['counts nothing at all (Ollama, for a prompt its cache held)', () => 0],
  ])('an estimated model learns no ratio from an answer that %s', (_name, reported) => {
    const { ladder, learnedLimits } = ladderFor(chat(12));
    const { lessons, logged } = lessonsFor(learnedLimits);
    for (let sample = 0; sample < 5; sample++)
      expect(lessons.usage(reported(ladder.first.prepared.report.inputTokens), ladder.first)).toBe(false);
    expect(learnedLimits.get('default', 'small-model', 'tenant-a').ratio).toBeUndefined();
    // Neither is a cut prompt: no alarm.
    expect(logged).toEqual([]);
  });

  it('learns what the upstream counts for a tool set, from requests without tool messages only', () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'read_file',
          description: 'Reads a file.',
          parameters: { type: 'object', properties: { path: { type: 'string' } } },
        },
      },
    ];
    const plain = { ...chat(2), model: 'exact-model', tools } as ChatCompletionRequest;
    const withCalls = {
      ...plain,
      messages: [
        ...plain.messages,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'file text' },
      ],
    } as ChatCompletionRequest;
    for (const [request, learns] of [
      [withCalls, false],
      [plain, true],
    ] as const) {
      const { ladder, learnedLimits } = ladderFor(request);
      const attempt = ladder.first;
      if (attempt.toolSet === undefined || attempt.toolFormula === undefined)
        throw new Error('expected a tool set');
      const messagesEstimate = attempt.prepared.report.inputTokens - attempt.prepared.report.regions.tools;
      // The upstream counts 20 tokens more than the gateway's formula for the tool set.
      const { lessons } = lessonsFor(learnedLimits);
      for (let sample = 0; sample < 5; sample++)
        lessons.usage(messagesEstimate + attempt.toolFormula + 20, attempt);
      const learned = learnedLimits.toolSetTokens(
        'default',
        'exact-model',
        attempt.toolSet,
        'tenant-a',
        attempt.toolFormula,
      );
      if (learns) expect(learned).toBe(attempt.toolFormula + 20);
      else expect(learned).toBeUndefined();
    }
  });

  it('learns a tool set the upstream counts at 60% of the formula, though the whole prompt is then under ¾ of the estimate', () => {
    const tools = Array.from({ length: 6 }, (_unused, index) => ({
      type: 'function',
      function: {
        name: `tool_${index}`,
        description: `Reads the ${index}th kind of thing. `.repeat(12),
        parameters: { type: 'object', properties: { path: { type: 'string', description: 'Where.' } } },
      },
    }));
    const { ladder, learnedLimits } = ladderFor({
      ...chat(0, 'Read it.'),
      model: 'exact-model',
      tools,
    } as ChatCompletionRequest);
    const attempt = ladder.first;
    if (attempt.toolSet === undefined || attempt.toolFormula === undefined)
      throw new Error('expected a tool set');
    const messagesEstimate = attempt.prepared.report.inputTokens - attempt.prepared.report.regions.tools;
    const reported = messagesEstimate + Math.round(attempt.toolFormula * 0.6);
    expect(reported).toBeLessThan(0.75 * attempt.prepared.report.inputTokens);
    const { lessons } = lessonsFor(learnedLimits);
    lessons.usage(reported, attempt);
    expect(
      learnedLimits.toolSetTokens('default', 'exact-model', attempt.toolSet, 'tenant-a', attempt.toolFormula),
    ).toBe(Math.round(attempt.toolFormula * 0.6));
  });

  it.each<{ name: string; reported: (sent: number) => number | undefined; alarm: boolean }>([
    { name: 'about as many tokens as were sent', reported: (sent) => sent, alarm: false },
    { name: 'no count at all', reported: () => undefined, alarm: false },
    { name: 'over half of what was sent', reported: (sent) => Math.ceil(sent * 0.55), alarm: false },
    { name: 'under half of what was sent', reported: (sent) => Math.floor(sent * 0.3), alarm: true },
  ])('that counted $name raises the truncation alarm: $alarm', async ({ reported, alarm }) => {
    const { ladder, learnedLimits } = ladderFor(chat(12));
    const { lessons, logged, metrics } = lessonsFor(learnedLimits);
    expect(lessons.usage(reported(ladder.first.promptTokens), ladder.first)).toBe(alarm);
    expect(logged.filter((line) => line.level === 'warn').length).toBe(alarm ? 1 : 0);
    const exposition = await metrics.render();
    expect(/ctxgate_upstream_truncations_total\{[^}]*\} 1/.test(exposition)).toBe(alarm);
  });
});

describe('a successful answer to a prompt with parts the provider sizes its own way', () => {
  const parts: Array<[string, Record<string, unknown>]> = [
    ['a remote image', { type: 'image_url', image_url: { url: 'https://example.test/a.png' } }],
    [
      'a low-detail image',
      { type: 'image_url', image_url: { url: 'https://example.test/a.png', detail: 'low' } },
    ],
    ['audio', { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZF', format: 'wav' } }],
    [
      'a file',
      { type: 'file', file: { filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } },
    ],
  ];
  /** A conversation whose last user message carries `part` beside its text. */
  const withPart = (model: string, part: Record<string, unknown>, turns = 3): ChatCompletionRequest => {
    const request = { ...chat(turns), model } as ChatCompletionRequest;
    return {
      ...request,
      messages: [
        ...request.messages.slice(0, -1),
        { role: 'user', content: [{ type: 'text', text: 'What is in this?' }, part] },
      ] as ChatCompletionRequest['messages'],
    };
  };

  it.each(
    parts.flatMap(([name, part]) =>
      ['small-model', 'exact-model'].map((model) => [name, model, part] as const),
    ),
  )(
    '%s teaches %s no ratio, whether the provider counts it far above or below the estimate',
    (_name, model, part) => {
      for (const factor of [6, 0.4]) {
        const { ladder, learnedLimits } = ladderFor(withPart(model, part));
        const { lessons } = lessonsFor(learnedLimits);
        const estimated = ladder.first.prepared.report.inputTokens;
        for (let sample = 0; sample < 5; sample++)
          lessons.usage(Math.round(estimated * factor), ladder.first);
        expect(learnedLimits.get('default', model, 'tenant-a').ratio).toBeUndefined();
        expect(learnedLimits.list().flatMap((entry) => entry.ratio?.tenants ?? [])).toEqual([]);
      }
    },
  );

  it('does not raise the size the model is known to take past what the gateway counted', () => {
    // Both requests on one learned-limits store (the large model, 32,768 tokens): the image request's
    // answer, then a plain request's overflow.
    const [, image] = parts[0] as [string, Record<string, unknown>];
    const { ladder: withImage, learnedLimits } = ladderFor(withPart('large-model', image, 12));
    const { ladder: plain } = ladderFor({ ...chat(40), model: 'large-model' } as ChatCompletionRequest);
    const { lessons } = lessonsFor(learnedLimits);
    // gpt-4o-mini's usage counts an image for its price, here past the whole window.
    lessons.usage(withImage.first.prepared.report.inputTokens + 50_000, withImage.first);
    // The window stated is above what the image request took by the gateway's count, below what was sent.
    const stated = plain.first.promptTokens - 1_000;
    expect(stated).toBeGreaterThan(withImage.first.prepared.report.inputTokens);
    lessons.overflow(overflow(openAiOverflow(stated, plain.first.promptTokens)), plain.first, 400);
    expect(learnedLimits.get('default', 'large-model', 'tenant-a').window).toBe(stated);
  });

  it('teaches a tool set no cost', () => {
    const tools = [
      { type: 'function', function: { name: 'look', parameters: { type: 'object', properties: {} } } },
    ];
    const [, image] = parts[0] as [string, Record<string, unknown>];
    const { ladder, learnedLimits } = ladderFor({
      ...withPart('exact-model', image),
      tools,
    } as ChatCompletionRequest);
    const attempt = ladder.first;
    if (attempt.toolSet === undefined || attempt.toolFormula === undefined)
      throw new Error('expected a tool set');
    const { lessons } = lessonsFor(learnedLimits);
    for (let sample = 0; sample < 5; sample++)
      lessons.usage(attempt.prepared.report.inputTokens + 1_000, attempt);
    expect(
      learnedLimits.toolSetTokens('default', 'exact-model', attempt.toolSet, 'tenant-a', attempt.toolFormula),
    ).toBeUndefined();
  });

  it.each<{ name: string; images: number; reported: (text: number) => number; alarm: boolean }>([
    // Eight remote images of unknown size: the gateway guesses 765 tokens each; small ones count 85.
    { name: 'sized its images below the guess', images: 8, reported: (text) => text + 8 * 85, alarm: false },
    {
      name: 'counted under half of the text alone',
      images: 8,
      reported: (text) => Math.floor(text * 0.3),
      alarm: true,
    },
  ])('that $name raises the truncation alarm: $alarm', ({ images, reported, alarm }) => {
    const image = { type: 'image_url', image_url: { url: 'https://example.test/a.png' } };
    // The large model: the text and eight guessed images fit its window whole.
    const request = withPart('large-model', image, 12);
    const last = request.messages.at(-1) as { content: unknown[] };
    last.content.push(...Array.from({ length: images - 1 }, () => image));
    const { ladder: textOnly } = ladderFor({ ...chat(12), model: 'large-model' } as ChatCompletionRequest);
    const { ladder, learnedLimits } = ladderFor(request);
    const { lessons, logged } = lessonsFor(learnedLimits);
    expect(lessons.usage(reported(textOnly.first.prepared.report.inputTokens), ladder.first)).toBe(alarm);
    expect(logged.filter((line) => line.level === 'warn').length).toBe(alarm ? 1 : 0);
  });
});

describe('quotesRequest', () => {
  it.each<[string, string[], boolean]>([
    ['a passage the body holds', ['maximum context length is 3000 tokens'], true],
    ['a passage the body does not hold', ['maximum context length is 4000 tokens'], false],
    ['a short passage the body holds', ['3000 tokens'], false],
    ['no passage', [], false],
  ])('%s: %s', (_name, evidence, quoted) => {
    const body = '{"messages":[{"role":"user","content":"why: maximum context length is 3000 tokens"}]}';
    expect(quotesRequest(evidence, body)).toBe(quoted);
    expect(quotesRequest(evidence, Buffer.from(body))).toBe(quoted);
  });
});
