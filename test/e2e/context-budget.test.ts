// End to end: long conversations sent whole through the openai client are fitted into a small window
// in one upstream call, the strict fake upstream (which refuses over-window prompts and orphaned tool
// messages) accepts them, and the response headers say what was done.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countPromptTokens, FakeUpstream } from '../helpers/fake-upstream.js';
import { pdf } from '../helpers/pdf.js';
import { png } from '../helpers/png.js';
import { startGateway, type GatewayHarness } from '../helpers/start-gateway.js';

type Message = OpenAI.ChatCompletionMessageParam;

const sentences = [
  'We reviewed the deployment plan for the payments service and agreed to roll out region by region.',
  'The database migration adds an index on orders.customer_id and backfills the archived rows overnight.',
  'Der Bericht zeigt, dass die Latenz nach dem Update um zwölf Prozent gesunken ist.',
  'ログの解析によると、エラーの大半はタイムアウトが原因でした。',
  'function retry(fn, attempts = 3) { return fn().catch((error) => attempts > 1 ? retry(fn, attempts - 1) : Promise.reject(error)); }',
];

/** A 302-message conversation: 75 turns of user question, tool call, tool result, answer, follow-up ack. */
function longConversation(): Message[] {
  const messages: Message[] = [{ role: 'system', content: 'You are a careful engineering assistant.' }];
  for (let turn = 0; turn < 75; turn++) {
    const text = sentences[turn % sentences.length] as string;
    messages.push({ role: 'user', content: `Turn ${turn}: ${text} What should we check next?` });
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: `call_${turn}`,
          type: 'function',
          function: { name: 'search_notes', arguments: JSON.stringify({ query: `turn ${turn}` }) },
        },
      ],
    });
    messages.push({
      role: 'tool',
      tool_call_id: `call_${turn}`,
      content: `Notes for turn ${turn}: ${text} ${text} ${text}`,
    });
    messages.push({
      role: 'assistant',
      content: `For turn ${turn}, check the rollout metrics and the error budget. ${text}`,
    });
  }
  messages.push({ role: 'user', content: 'Summarize what we decided about the migration.' });
  return messages;
}

let fake: FakeUpstream;
let harness: GatewayHarness;
let client: OpenAI;
const window = 8_192;

beforeAll(async () => {
  fake = new FakeUpstream({ windows: { 'small-model': window, 'agent-model': window } });
  harness = await startGateway({
    env: { UPSTREAM_BASE_URL: await fake.start() },
    configYaml:
      `models:\n  - match: small-model\n    window: ${window}\n    output_reserve: 512\n    tokenizer: o200k_base\n    exact_tokenizer: true\n` +
      `  - match: agent-model\n    window: ${window}\n    tokenizer: o200k_base\n    exact_tokenizer: true\n`,
  });
  client = new OpenAI({ baseURL: harness.baseUrl, apiKey: 'sk-test', maxRetries: 0 });
});
afterAll(async () => {
  await harness.close();
  await fake.stop();
});
beforeEach(() => {
  fake.requests.length = 0;
});

describe('render-time budgeting through the gateway', () => {
  it('fits a 300-message conversation with tool calls into an 8,192-token window in exactly one upstream call', async () => {
    const messages = longConversation();
    expect(messages.length).toBeGreaterThanOrEqual(300);
    const full = countPromptTokens(messages as never, undefined);
    expect(full).toBeGreaterThan(window * 1.5);

    const { data, response } = await client.chat.completions
      .create({ model: 'small-model', messages, max_tokens: 512 })
      .withResponse();
    expect(data.choices[0]?.message.role).toBe('assistant');
    expect(fake.chatRequests).toHaveLength(1);

    const sent = fake.chatRequests[0]?.body as { messages: Message[] };
    const sentTokens = fake.chatRequests[0]?.promptTokens as number;
    // The fake (an independent count) accepted it: prompt + max_tokens within the window.
    expect(sentTokens + 512).toBeLessThanOrEqual(window);
    // The window is not wasted: history fills at least trim_to (0.7) of the history budget.
    const systemTokens = countPromptTokens([messages[0]] as never, undefined) - 3;
    const safetyMargin = Math.ceil(window * 0.05);
    const historyBudget = window - systemTokens - 512 - safetyMargin - 3;
    const historyTokens = sentTokens - systemTokens - 3;
    expect(historyTokens).toBeGreaterThanOrEqual(0.7 * historyBudget);
    // System first, the current question last, an omission notice in between.
    expect(sent.messages[0]).toEqual(messages[0]);
    expect(sent.messages.at(-1)).toEqual(messages.at(-1));
    expect(
      sent.messages.some(
        (message) => message.role === 'system' && String(message.content).includes('earlier messages'),
      ),
    ).toBe(true);
    // Headers report what was done.
    const dropped = Number(response.headers.get('x-context-dropped-messages'));
    expect(dropped).toBe(messages.length - sent.messages.length + 1);
    expect(response.headers.get('x-context-window')).toBe(String(window));
    expect(Number(response.headers.get('x-context-input-tokens'))).toBeGreaterThan(0);
    expect(Number(response.headers.get('x-context-usage'))).toBeLessThanOrEqual(1);
    expect(response.headers.get('x-context-summary')).toBe('none');
    expect(response.headers.get('x-context-retries')).toBe('0');
  });

  it('keeps the same start when the same conversation grows by one turn (cache-stable prefix)', async () => {
    const messages = longConversation();
    await client.chat.completions.create({ model: 'small-model', messages, max_tokens: 512 });
    const grown: Message[] = [
      ...messages,
      { role: 'assistant', content: 'We decided to backfill overnight.' },
      { role: 'user', content: 'And the index?' },
    ];
    await client.chat.completions.create({ model: 'small-model', messages: grown, max_tokens: 512 });
    const [first, second] = fake.chatRequests.map(
      (request) => (request.body as { messages: Message[] }).messages,
    );
    // Everything the first request sent, up to its current turn, is the byte-identical prefix of the second.
    const prefix = (first as Message[]).slice(0, -1);
    expect(JSON.stringify((second as Message[]).slice(0, prefix.length))).toBe(JSON.stringify(prefix));
  });

  it('streams a fitted conversation with the context headers before the first byte', async () => {
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'small-model',
        messages: longConversation(),
        max_tokens: 512,
        stream: true,
      }),
    });
    expect(response.headers.get('x-context-window')).toBe(String(window));
    expect(Number(response.headers.get('x-context-dropped-messages'))).toBeGreaterThan(0);
    expect((await response.text()).trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('sends a conversation that fits byte for byte, with zero reductions', async () => {
    // A seed beyond 2^53 survives only if the client's own bytes are forwarded.
    const body =
      '{"model": "small-model", "messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 100, "seed": 12345678901234567890}';

    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(200);
    expect(fake.chatRequests[0]?.rawBody).toBe(body);
    expect(response.headers.get('x-context-dropped-messages')).toBe('0');
  });

  it("answers 400 context_length_exceeded in OpenAI's words, without calling upstream, when the last user message alone cannot fit", async () => {
    const huge = 'word '.repeat(12_000);
    const failure = await client.chat.completions
      .create({ model: 'small-model', messages: [{ role: 'user', content: huge }] })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
    const error = failure as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error.code).toBe('context_length_exceeded');
    // What LangChain and other frameworks look for to recognise an overflow.
    // No max_tokens asked for: the messages alone, as OpenAI words it then.
    expect(error.message).toMatch(
      /maximum context length is \d+ tokens\. However, your messages resulted in \d+ tokens/,
    );
    expect(fake.chatRequests).toHaveLength(0);
  });

  it('lets a reserve the client did not ask for give way to a large fixed prompt, down to an eighth of the window', async () => {
    // An agent's instructions and tools can take most of a small window (Codex: about 6,300 of 8,192).
    // The default reserve is a quarter of the window (2,048) and the margin 5% (410): a 6,000-token
    // system prompt fits only when the reserve shrinks toward an eighth (1,024).
    const systemOf = (tokens: number): Message => {
      const count = (content: string) => countPromptTokens([{ role: 'system', content }], undefined);
      const cycle = `${sentences.join(' ')} `;
      let content = cycle.repeat(Math.floor(tokens / count(cycle)) - 1);
      for (let index = 0; count(content) < tokens; index++)
        content += `${sentences[index % sentences.length] as string} `;
      return { role: 'system', content };
    };
    const user: Message = { role: 'user', content: 'Run the next step.' };
    const fits = [systemOf(6_000), user];
    const full = countPromptTokens(fits as never, undefined);
    expect(full + 2_048 + 410).toBeGreaterThan(window);
    expect(full + 1_024 + 410).toBeLessThanOrEqual(window);

    const { response } = await client.chat.completions
      .create({ model: 'agent-model', messages: fits })
      .withResponse();
    expect(response.status).toBe(200);
    expect(fake.chatRequests).toHaveLength(1);
    expect(fake.chatRequests[0]?.promptTokens).toBe(full);
    expect(response.headers.get('x-context-dropped-messages')).toBe('0');

    // What the client asked for is its own: max_tokens 2,048 is not lowered to make room. The prompt and
    // it fit the window (8,048 of 8,192), so the margin gives way and it is sent as asked; past the
    // window it is refused.
    const asked = await client.chat.completions.create({
      model: 'agent-model',
      messages: fits,
      max_tokens: 2_048,
    });
    expect(asked.choices[0]?.finish_reason).toBe('stop');
    expect(fake.chatRequests).toHaveLength(2);
    expect((fake.chatRequests[1]?.body as { max_tokens?: number }).max_tokens).toBe(2_048);
    const tooMuch = await client.chat.completions
      .create({ model: 'agent-model', messages: fits, max_tokens: 2_300 })
      .catch((error: unknown) => error);
    expect(tooMuch).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tooMuch as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(
      /2300 in the completion/,
    );

    // Beyond the eighth (and the margin) the request is refused as before, without an upstream call.
    const tooBig = await client.chat.completions
      .create({ model: 'agent-model', messages: [systemOf(7_300), user] })
      .catch((error: unknown) => error);
    expect(tooBig).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tooBig as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
    expect(fake.chatRequests).toHaveLength(2);
  });

  it('honours X-Context-Window and X-Context-Max-History-Tokens', async () => {
    const render = async (headers: Record<string, string>) => {
      const response = await fetch(`${harness.baseUrl}/context/render`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ model: 'small-model', messages: longConversation(), max_tokens: 512 }),
      });
      return (await response.json()) as {
        window: number;
        report: { inputTokens: number; historyBudget: number };
      };
    };
    const wide = await render({ 'x-context-window': '20000' });
    expect(wide.window).toBe(20_000);
    const capped = await render({ 'x-context-max-history-tokens': '1000' });
    expect(capped.report.historyBudget).toBe(1_000);
    expect(capped.report.inputTokens).toBeLessThan(wide.report.inputTokens);
    const bad = await fetch(`${harness.baseUrl}/context/render`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-context-window': 'lots' },
      body: JSON.stringify({ model: 'small-model', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: {
        message: 'Invalid header x-context-window: expected an integer of at least 1.',
        type: 'invalid_request_error',
        param: 'x-context-window',
        code: 'invalid_header',
      },
    });
  });

  it("sends a tool message's image in a user message after it, as OpenAI takes it, and previews what it sends", async () => {
    const messages: Message[] = [
      { role: 'user', content: 'How big is the screenshot?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_shot', type: 'function', function: { name: 'screenshot', arguments: '{}' } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_shot',
        content: [
          { type: 'text', text: 'Taken.' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png(9, 4).toString('base64')}` } },
        ] as never,
      },
    ];
    // The fake refuses an image in a tool message with OpenAI's 400.
    await client.chat.completions.create({ model: 'small-model', messages, max_tokens: 64 });
    const sent = (fake.chatRequests.at(-1)?.body as { messages: unknown[] }).messages;
    expect(sent.slice(2)).toEqual([
      {
        role: 'tool',
        tool_call_id: 'call_shot',
        content: 'Taken.\n[image 1: shown in the next user message]',
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Image 1, of the result of screenshot (call call_shot):' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png(9, 4).toString('base64')}` } },
        ],
      },
    ]);
    const preview = await fetch(`${harness.baseUrl}/context/render`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'small-model', messages, max_tokens: 64 }),
    });
    expect(((await preview.json()) as { messages: unknown[] }).messages).toEqual(sent);
  });

  it('counts a PDF a user attached by its pages: a conversation it would push past the window fits in one call', async () => {
    // A 6-page report (OpenAI counts each page's text and a picture of it: about 800 tokens a page here),
    // then the turns after it; the report's turn is what has to go.
    const report = pdf(Array.from({ length: 6 }, (_, page) => `Page ${page + 1}. ${sentences[page % 5]}`));
    const messages: Message[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Here is the quarterly report.' },
          {
            type: 'file',
            file: {
              filename: 'report.pdf',
              file_data: `data:application/pdf;base64,${report.toString('base64')}`,
            },
          },
        ],
      },
      { role: 'assistant', content: 'I read the report.' },
    ];
    for (let turn = 0; turn < 14; turn++)
      messages.push(
        { role: 'user', content: `Turn ${turn}: ${sentences.join(' ')} ${sentences.join(' ')}` },
        { role: 'assistant', content: `Noted turn ${turn}. ${sentences.join(' ')}` },
      );
    messages.push({ role: 'user', content: 'What should we check next?' });
    // The fake's own count: over the window with the report, within it without.
    expect(countPromptTokens(messages as never, undefined) + 512).toBeGreaterThan(window);
    expect(countPromptTokens(messages.slice(2) as never, undefined) + 512).toBeLessThan(window);

    const { data, response } = await client.chat.completions
      .create({ model: 'small-model', messages, max_tokens: 512 })
      .withResponse();
    expect(data.choices[0]?.message.role).toBe('assistant');
    expect(fake.chatRequests.map((request) => request.status)).toEqual([200]);
    expect(response.headers.get('x-context-retries')).toBe('0');
    const sent = fake.chatRequests[0]?.body as { messages: Message[] };
    expect(JSON.stringify(sent.messages)).not.toContain('application/pdf');
    expect(sent.messages.at(-1)).toEqual(messages.at(-1));
  });

  it('renders without calling the upstream and reports every region', async () => {
    const response = await fetch(`${harness.baseUrl}/context/render`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-context-policy': 'economy' },
      body: JSON.stringify({ model: 'small-model', messages: longConversation(), max_tokens: 512 }),
    });
    const rendered = (await response.json()) as {
      policy: string;
      messages: Message[];
      report: { regions: Record<string, number>; inputTokens: number };
    };
    expect(fake.chatRequests).toHaveLength(0);
    expect(rendered.policy).toBe('economy');
    expect(Object.keys(rendered.report.regions).sort()).toEqual([
      'currentTurn',
      'history',
      'notice',
      'outputReserve',
      'safetyMargin',
      'summary',
      'system',
      'tools',
    ]);
    // economy caps history at 8,000 tokens, but this window is smaller still: the tighter limit wins.
    expect(rendered.report.inputTokens).toBeLessThanOrEqual(window - 512);
  });
});
