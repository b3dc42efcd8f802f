// Request bodies for the load sections: a fixed 2 KB chat request, and conversations whose vocabulary is
// as varied as a real one's.

export function chatBody(stream: boolean, model = 'gpt-4o-mini'): string {
  const filler = 'The quick brown fox jumps over the lazy dog while the gateway counts every token. ';
  return JSON.stringify({
    model,
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: filler.repeat(24) },
    ],
    temperature: 0.2,
    stream,
  });
}

/** A deterministic generator (a linear congruential one): the same bodies in every run. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

/** Syllables of made-up words: identifiers and names no tokenizer has seen whole. */
const syllables = [
  'ka',
  'lo',
  'mi',
  'tren',
  'sto',
  'da',
  'vel',
  'qui',
  'ran',
  'po',
  'zu',
  'ber',
  'ex',
  'ion',
  'ter',
  'sha',
  'gr',
  'an',
];

/**
 * A conversation of `count` messages, as a client would resend it: prose, identifiers, numbers and some
 * German and Japanese from a deterministic generator, so that the vocabulary is as varied as a real
 * conversation's (a few repeated phrases would make first-time counting unrealistically cheap).
 */
export function benchConversation(
  count: number,
  charsPerMessage: number,
): Array<{ role: string; content: string }> {
  const random = seededRandom(42);
  const common = [
    'the',
    'and',
    'deployment',
    'latency',
    'service',
    'queue',
    'error',
    'retry',
    'database',
    'migration',
    'we',
    'should',
    'check',
    'because',
    'über',
    'Datenbank',
    '設定',
    '確認',
    'タイムアウト',
  ];
  const word = (): string => {
    const roll = random();
    if (roll < 0.45) return common[Math.floor(random() * common.length)] as string;
    if (roll < 0.55) return String(Math.floor(random() * 100_000));
    if (roll < 0.62)
      return `${syllables[Math.floor(random() * syllables.length)]}_${syllables[Math.floor(random() * syllables.length)]}Id`;
    const length = 1 + Math.floor(random() * 3);
    return Array.from({ length }, () => syllables[Math.floor(random() * syllables.length)]).join('');
  };
  return Array.from({ length: count }, (_unused, index) => {
    let content = `Message ${index}:`;
    while (content.length < charsPerMessage) content += (random() < 0.08 ? '. ' : ' ') + word();
    return { role: index % 2 === 0 ? 'user' : 'assistant', content };
  });
}

/**
 * ~2 KB chat requests whose user message is new every time: words drawn from a vocabulary of 4,000
 * made-up words and numbers, so the gateway really counts each one (no cache can know it).
 */
export function uniqueChatBodies(seed = 7): () => string {
  const random = seededRandom(seed);
  // The first 14 syllables only: the bodies stay the ones earlier figures were measured with.
  const shortSyllables = syllables.slice(0, 14);
  const vocabulary = Array.from({ length: 4_000 }, (_unused, index) =>
    index % 10 === 0
      ? String(Math.floor(random() * 1_000_000))
      : Array.from(
          { length: 1 + Math.floor(random() * 4) },
          () => shortSyllables[Math.floor(random() * shortSyllables.length)],
        ).join(''),
  );
  return () => {
    let content = '';
    while (content.length < 1_900) content += `${vocabulary[Math.floor(random() * vocabulary.length)]} `;
    return JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content },
      ],
      temperature: 0.2,
      stream: false,
    });
  };
}

/**
 * A Claude Code request (its shape as seen from the CLI, December 2026): two system blocks (the last
 * with cache_control, some 15 KB), its tools with long descriptions, a first user message of system
 * reminders and the task, then `steps` steps of a tool loop — the assistant's text and one tool_use,
 * the user's tool_result (a file's lines) — with cache_control on the last result. Texts from
 * benchConversation's generator, so that nothing is cheap to count.
 */
export function claudeCodeBody(steps: number, model: string): string {
  const texts = benchConversation(3 * steps + 60, 900).map((message) => message.content);
  let next = 0;
  const text = (chars: number): string => {
    let out = '';
    while (out.length < chars) out += `${texts[next++ % texts.length] as string}\n`;
    return out.slice(0, chars);
  };
  const tools = [
    'Bash',
    'Read',
    'Edit',
    'Write',
    'Glob',
    'Grep',
    'Task',
    'TodoWrite',
    'WebFetch',
    'WebSearch',
  ].map((name) => ({
    name,
    description: text(2_400),
    input_schema: {
      type: 'object',
      properties: { path: { type: 'string', description: text(200) }, limit: { type: 'number' } },
      required: ['path'],
      additionalProperties: false,
      $schema: 'http://json-schema.org/draft-07/schema#',
    },
  }));
  const messages: unknown[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: `<system-reminder>\n${text(3_000)}\n</system-reminder>` },
        { type: 'text', text: 'Find why the deployment retries and fix it.' },
      ],
    },
  ];
  for (let step = 0; step < steps; step++) {
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: text(200) },
        {
          type: 'tool_use',
          id: `toolu_bench_${step}`,
          name: 'Read',
          input: { path: `src/module${step}.ts` },
        },
      ],
    });
    const lines = text(1_400)
      .split('\n')
      .map((line, index) => `${String(index + 1).padStart(6)}\t${line}`)
      .join('\n');
    const result: Record<string, unknown> = {
      type: 'tool_result',
      tool_use_id: `toolu_bench_${step}`,
      content: lines,
    };
    if (step === steps - 1) result.cache_control = { type: 'ephemeral' };
    messages.push({ role: 'user', content: [result] });
  }
  return JSON.stringify({
    model,
    max_tokens: 32_000,
    system: [
      {
        type: 'text',
        text: "You are Claude Code, Anthropic's official CLI for Claude.",
        cache_control: { type: 'ephemeral' },
      },
      { type: 'text', text: text(15_000), cache_control: { type: 'ephemeral' } },
    ],
    tools,
    messages,
    metadata: { user_id: `user_${'0'.repeat(64)}_account__session_bench` },
    stream: false,
  });
}
