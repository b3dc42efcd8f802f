// Where the gateway's notices and summaries go: inline system messages, carried in user messages, or the
// leading system message — for chat templates that take a system message only first — with the
// current turn's user message always sent as the client wrote it, and the token change counted.
import { describe, expect, it } from 'vitest';
import {
  withUserTurn,
  placeNotices,
  forStrictTemplate,
  afterResultsText,
  modelFirstText,
  withoutSystemRole,
  type NoticePlacement,
} from '../../src/context/notice-placement.js';
import { countMessageTokens } from '../../src/context/token-accounting.js';
import type { ContextMessage } from '../../src/context/types.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';

const tokenizer = createTiktokenTokenizers().forEncoding('o200k_base');
const count = (message: ContextMessage): number => countMessageTokens(message, tokenizer);
const total = (messages: readonly ContextMessage[]): number =>
  messages.reduce((sum, message) => sum + count(message), 0);

const system: ContextMessage = { role: 'system', content: 'You are terse.' };
const summary: ContextMessage = {
  role: 'system',
  content: '[ctxgate] Summary of 8 earlier messages: vault 1 is K1-10000.',
};
const notice: ContextMessage = {
  role: 'system',
  content: '[ctxgate] 4 earlier messages of this conversation were omitted.',
};
const steps: ContextMessage = {
  role: 'system',
  content: '[ctxgate] 3 earlier steps of this task were removed.',
};
const first: ContextMessage = { role: 'user', content: 'First question.' };
const answer: ContextMessage = { role: 'assistant', content: 'First answer.' };
const later: ContextMessage = { role: 'user', content: 'A later question.' };
const laterAnswer: ContextMessage = { role: 'assistant', content: 'A later answer.' };
const current: ContextMessage = { role: 'user', content: 'The current task.' };
const call: ContextMessage = {
  role: 'assistant',
  content: null,
  tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }],
};
const result: ContextMessage = { role: 'tool', tool_call_id: 'c1', content: 'page' };

const rendered = [system, first, answer, summary, notice, later, laterAnswer, current, steps, call, result];
const place = (placement: NoticePlacement, messages = rendered, systemCount = 1) =>
  placeNotices(messages, systemCount, placement, count);

describe('placeNotices', () => {
  it('inline: as they stand', () => {
    expect(place('inline').messages).toEqual(rendered);
    expect(place('inline').tokenDelta).toBe(0);
  });

  it('user: before the user message that follows; what would join the current one goes first', () => {
    const { messages, tokenDelta } = place('user');
    expect(messages).toEqual([
      { role: 'system', content: `You are terse.\n\n${steps.content as string}` },
      first,
      answer,
      {
        role: 'user',
        content: `${summary.content as string}\n\n${notice.content as string}\n\nA later question.`,
      },
      laterAnswer,
      current,
      call,
      result,
    ]);
    // Only the first message is a system message; the current turn's user message is the client's own.
    expect(messages.slice(1).some((message) => message.role === 'system')).toBe(false);
    expect(tokenDelta).toBe(total(messages) - total(rendered));
  });

  it('leading_system: all of them appended to the leading system message, or one made first', () => {
    const { messages, tokenDelta } = place('leading_system');
    expect(messages[0]).toEqual({
      role: 'system',
      content: ['You are terse.', summary.content, notice.content, steps.content].join('\n\n'),
    });
    expect(messages.slice(1)).toEqual([first, answer, later, laterAnswer, current, call, result]);
    expect(tokenDelta).toBe(total(messages) - total(rendered));
    const without = place('leading_system', rendered.slice(1), 0);
    expect(without.messages[0]).toEqual({
      role: 'system',
      content: [summary.content, notice.content, steps.content].join('\n\n'),
    });
    expect(without.tokenDelta).toBe(total(without.messages) - total(rendered.slice(1)));
  });

  it('keeps a user message made of parts as parts', () => {
    const parts: ContextMessage = { role: 'user', content: [{ type: 'text', text: 'Look at this.' }] };
    const { messages } = place('user', [notice, parts, laterAnswer, current], 0);
    expect(messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: notice.content },
        { type: 'text', text: 'Look at this.' },
      ],
    });
  });

  it("leaves a client's own system message where it is: only the gateway's move", () => {
    const own: ContextMessage = { role: 'system', content: 'Switch to French.' };
    expect(place('user', [system, first, answer, own, current]).messages).toEqual([
      system,
      first,
      answer,
      own,
      current,
    ]);
  });
});

describe('forStrictTemplate', () => {
  const developer = (content: string): ContextMessage => ({ role: 'developer', content });
  const own = (content: string): ContextMessage => ({ role: 'system', content });
  const user = (content: string): ContextMessage => ({ role: 'user', content });
  const assistant = (content: string): ContextMessage => ({ role: 'assistant', content });
  const tool = (id: string, content: string): ContextMessage => ({ role: 'tool', tool_call_id: id, content });
  const calls = (...ids: string[]): ContextMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'read', arguments: '{}' } })),
  });

  // [what the bridge made, what a template that takes one system message, first, is sent]
  const cases: Array<[string, ContextMessage[], ContextMessage[]]> = [
    [
      'nothing to change',
      [own('Be terse.'), user('Hi.'), assistant('Hello.')],
      [own('Be terse.'), user('Hi.'), assistant('Hello.')],
    ],
    [
      'a developer message alone: a system message',
      [developer('Be terse.'), user('Hi.')],
      [own('Be terse.'), user('Hi.')],
    ],
    [
      'instructions and developer messages (Codex): one system message',
      [own('You are Codex.'), developer('Sandbox: none.'), developer('Approvals: never.'), user('Hi.')],
      [own('You are Codex.\n\nSandbox: none.\n\nApprovals: never.'), user('Hi.')],
    ],
    [
      'a later one before a user message: at the start of it',
      [own('S'), user('One.'), assistant('A.'), developer('Plan mode.'), user('Two.')],
      [own('S'), user('One.'), assistant('A.'), user('Plan mode.\n\nTwo.')],
    ],
    [
      'right after a user message (Claude Code): at the end of it',
      [own('S'), user('One.'), own('# Environment'), assistant('A.')],
      [own('S'), user('One.\n\n# Environment'), assistant('A.')],
    ],
    [
      'after tool results: at the end of the last of them',
      [
        own('S'),
        user('One.'),
        calls('a', 'b'),
        tool('a', 'x'),
        tool('b', 'y'),
        own('Reminder.'),
        assistant('Done.'),
      ],
      [
        own('S'),
        user('One.'),
        calls('a', 'b'),
        tool('a', 'x'),
        tool('b', 'y\n\nReminder.'),
        assistant('Done.'),
      ],
    ],
    [
      'between a call and its results: after the results',
      [own('S'), user('One.'), calls('a'), own('Reminder.'), tool('a', 'x'), assistant('Done.')],
      [own('S'), user('One.'), calls('a'), tool('a', 'x\n\nReminder.'), assistant('Done.')],
    ],
    [
      'after an answer, last: a user message of its own',
      [own('S'), user('One.'), assistant('A.'), own('Note.')],
      [own('S'), user('One.'), assistant('A.'), user('Note.')],
    ],
    [
      'two in a row: together',
      [own('S'), user('One.'), assistant('A.'), own('X.'), developer('Y.'), user('Two.')],
      [own('S'), user('One.'), assistant('A.'), user('X.\n\nY.\n\nTwo.')],
    ],
    [
      'two user messages in a row (Codex: its environment, then the task): one',
      [own('S'), user('<environment_context/>'), user('Write the note.')],
      [own('S'), user('<environment_context/>\n\nWrite the note.')],
    ],
    [
      'a user message right after tool results: at the end of the last one',
      [own('S'), user('One.'), calls('a'), tool('a', 'x'), user('<system-reminder/>'), assistant('Done.')],
      [own('S'), user('One.'), calls('a'), tool('a', 'x\n\n<system-reminder/>'), assistant('Done.')],
    ],
    [
      'a user message after tool results and an answer: as it was',
      [own('S'), user('One.'), calls('a'), tool('a', 'x'), assistant('Done.'), user('Two.')],
      [own('S'), user('One.'), calls('a'), tool('a', 'x'), assistant('Done.'), user('Two.')],
    ],
    [
      'two answers in a row: one',
      [own('S'), user('One.'), assistant('A.'), assistant('B.'), user('Two.')],
      [own('S'), user('One.'), assistant('A.\n\nB.'), user('Two.')],
    ],
    [
      "the model's text, then its calls, as two messages: one message",
      [own('S'), user('One.'), assistant('Reading it.'), calls('a'), tool('a', 'x'), assistant('Done.')],
      [
        own('S'),
        user('One.'),
        Object.assign({}, calls('a'), { content: 'Reading it.' }),
        tool('a', 'x'),
        assistant('Done.'),
      ],
    ],
    [
      "two answers, then the model's calls: one message, the texts beside the calls",
      [
        own('S'),
        user('One.'),
        assistant('A.'),
        assistant('B.'),
        calls('a'),
        tool('a', 'x'),
        assistant('Done.'),
      ],
      [
        own('S'),
        user('One.'),
        Object.assign({}, calls('a'), { content: 'A.\n\nB.' }),
        tool('a', 'x'),
        assistant('Done.'),
      ],
    ],
    [
      "a greeting first (a chat widget's): a user message before it",
      [own('S'), assistant('Hi! How can I help?'), user('Where is my order?')],
      [own('S'), user(modelFirstText), assistant('Hi! How can I help?'), user('Where is my order?')],
    ],
    [
      'a call first, none leading: a user message before it',
      [calls('a'), tool('a', 'x'), assistant('Done.')],
      [user(modelFirstText), calls('a'), tool('a', 'x'), assistant('Done.')],
    ],
    [
      'system messages only (instructions, no prompt): the user’s message',
      [own('Choose one.'), developer('Be brief.')],
      [user('Choose one.\n\nBe brief.')],
    ],
    [
      'none leading: the conversation as it was',
      [user('One.'), own('X.'), assistant('A.')],
      [user('One.\n\nX.'), assistant('A.')],
    ],
  ];

  it.each(cases)('%s', (_name, made, sent) => {
    const out = forStrictTemplate(made);
    expect(out).toEqual(sent);
    // What the template refuses is gone: no developer message, no system message but the first.
    expect(
      out.some((message, index) => message.role === 'developer' || (index > 0 && message.role === 'system')),
    ).toBe(false);
    // User and assistant messages alternate, from a user message, tool calls and results aside.
    const turns = out.filter(
      (message, index) =>
        !(index === 0 && message.role === 'system') &&
        message.role !== 'tool' &&
        !(message.role === 'assistant' && message.tool_calls !== undefined),
    );
    expect(turns.map((message) => message.role)).toEqual(
      turns.map((_message, index) => (index % 2 === 0 ? 'user' : 'assistant')),
    );
  });

  it("joins parts as parts, and puts a word of the model's before an image after tool results", () => {
    const image: ContextMessage = {
      role: 'user',
      content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }],
    };
    const parts: ContextMessage = { role: 'user', content: [{ type: 'text', text: 'Look.' }] };
    expect(forStrictTemplate([own('S'), user('One.'), parts])).toEqual([
      own('S'),
      {
        role: 'user',
        content: [
          { type: 'text', text: 'One.' },
          { type: 'text', text: 'Look.' },
        ],
      },
    ]);
    const afterResults = [own('S'), user('One.'), calls('a'), tool('a', 'x'), image];
    expect(forStrictTemplate(afterResults)).toEqual([
      ...afterResults.slice(0, 4),
      assistant(afterResultsText),
      image,
    ]);
    const answered = [own('S'), user('One.'), calls('a'), tool('a', 'x'), assistant('Done.'), image];
    expect(forStrictTemplate(answered)).toEqual(answered);
  });

  it("leaves the messages it keeps as the same objects (their bytes are copied from the client's)", () => {
    const first = user('One.');
    const answer = assistant('A.');
    const out = forStrictTemplate([developer('D'), first, answer, own('X.'), user('Two.')]);
    expect(out[1]).toBe(first);
    expect(out[2]).toBe(answer);
  });

  it('no system role (Gemma): the system prompt at the start of the first user message', () => {
    expect(withoutSystemRole([own('Answer in French.'), user('Hi.'), assistant('Salut.')])).toEqual([
      user('Answer in French.\n\nHi.'),
      assistant('Salut.'),
    ]);
    expect(withoutSystemRole([own('A.'), developer('B.'), assistant('Hello!'), user('Hi.')])).toEqual([
      user(`A.\n\nB.\n\n${modelFirstText}`),
      assistant('Hello!'),
      user('Hi.'),
    ]);
    expect(withoutSystemRole([own('Only this.')])).toEqual([user('Only this.')]);
    expect(withoutSystemRole([own(''), user('Hi.')])).toEqual([user('Hi.')]);
    expect(withoutSystemRole([user('Hi.'), own('Later.'), assistant('A.')])).toEqual([
      user('Hi.\n\nLater.'),
      assistant('A.'),
    ]);
  });

  it('adds to parts as a part', () => {
    const parts: ContextMessage = { role: 'user', content: [{ type: 'text', text: 'Look.' }] };
    expect(forStrictTemplate([own('S'), parts, own('Note.')])).toEqual([
      own('S'),
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look.' },
          { type: 'text', text: 'Note.' },
        ],
      },
    ]);
  });
});

describe('withUserTurn', () => {
  it('gives a conversation of no user message one before the model’s first, its system prompt first', () => {
    const messages: ContextMessage[] = [
      { role: 'system', content: 'Rules.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'sh', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    ];
    const written = withUserTurn(messages);
    expect(written.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(written[1]?.content).toBe(modelFirstText);
    expect(messages).toHaveLength(3);
  });

  it('is the same array when a user message is there, or no message at all', () => {
    const asked: ContextMessage[] = [
      { role: 'system', content: 'Rules.' },
      { role: 'assistant', content: 'Earlier answer.' },
      { role: 'user', content: 'Go on.' },
    ];
    expect(withUserTurn(asked)).toBe(asked);
    const none: ContextMessage[] = [];
    expect(withUserTurn(none)).toBe(none);
  });

  it('sends the last of instructions and nothing else as what the user asks (an LLM-as-a-judge prompt)', () => {
    const instructions: ContextMessage[] = [
      { role: 'system', content: 'Rules.' },
      { role: 'developer', content: 'Grade: Paris. Reply PASS or FAIL.' },
    ];
    expect(withUserTurn(instructions)).toEqual([
      { role: 'system', content: 'Rules.' },
      { role: 'user', content: 'Grade: Paris. Reply PASS or FAIL.' },
    ]);
    expect(instructions[1]?.role).toBe('developer');
  });
});
