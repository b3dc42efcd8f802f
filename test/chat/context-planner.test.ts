// What the planner gathers for the decision of what is sent (context-planner.ts), as tables: the window
// and ratio learned for the request's model, upstream and tenant (another tenant's lesson does not apply
// until a second tenant agrees), the tool set known by a key of its definitions and counted by the
// gateway's formula once, its learned cost used in place of the formula, and the same plan for the same
// request every time (the preview equals what is sent).
import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../../src/chat/chat-request-schema.js';
import { createContextPlanner } from '../../src/chat/context-planner.js';
import { findModelEntry } from '../../src/context/context-settings.js';
import { firstAttempt, type AttemptState } from '../../src/context/plan-send.js';
import { countToolTokens } from '../../src/context/token-accounting.js';
import { createMemoryLearnedLimits } from '../../src/store/learned-limits.js';
import { createTiktokenTokenizers } from '../../src/tokenizer/tiktoken-tokenizers.js';
import { attemptsConfig as config, chat } from '../helpers/chat-attempts.js';

const tokenizers = createTiktokenTokenizers();

function planner(now?: () => number) {
  const learnedLimits = createMemoryLearnedLimits({
    settings: { windowTtlMs: 86_400_000, reprobeAfterMs: 3_600_000 },
    maxEntries: 100,
    ...(now === undefined ? {} : { now }),
  });
  return { planner: createContextPlanner({ config, tokenizers, learnedLimits }), learnedLimits };
}

const plan = (
  of: ReturnType<typeof planner>,
  chatRequest: ChatCompletionRequest,
  tenant = 'tenant-a',
  attempt: AttemptState = firstAttempt,
  preview = false,
) =>
  of.planner.plan({
    chatRequest,
    overrides: { historyMode: 'auto' },
    session: undefined,
    target: config.defaultUpstream,
    precision: 'exact',
    attempt,
    tenant,
    preview,
  });

const tool = (name: string) => ({
  type: 'function',
  function: {
    name,
    description: `Runs ${name}.`,
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
  },
});
const withTools = (tools: unknown[]) => ({ ...chat(2), tools }) as ChatCompletionRequest;

describe('the plan of a request', () => {
  it("takes Claude's 1M window when the request flags it to an Anthropic upstream, a learned window still below it", () => {
    const of = planner();
    const request = Object.assign({}, chat(2), { model: 'claude-sonnet-4-5' }) as ChatCompletionRequest;
    const flagged = { historyMode: 'auto' as const, longContextAsked: true };
    const claude = Object.assign({}, config.defaultUpstream, { name: 'claude', kind: 'anthropic' as const });
    const windowOf = (target: typeof claude, overrides: typeof flagged | { historyMode: 'auto' }) =>
      of.planner.plan({
        chatRequest: request,
        overrides,
        session: undefined,
        target,
        precision: 'exact',
        attempt: firstAttempt,
        tenant: 't',
      }).prepared.report.window;
    expect(windowOf(claude, { historyMode: 'auto' })).toBe(200_000);
    expect(windowOf(claude, flagged)).toBe(1_000_000);
    // Another kind of upstream has its own model behind the name: the flag asks nothing of it.
    expect(windowOf(config.defaultUpstream as typeof claude, flagged)).toBe(200_000);
    of.learnedLimits.recordOverflow('claude', 'claude-sonnet-4-5', 't', {
      stated: 200_000,
      failedSize: 300_000,
      status: 400,
      textClass: 'numbers',
    });
    expect(windowOf(claude, flagged)).toBe(200_000);
    // A model found to refuse the flag is sent without it: the window it has.
    of.learnedLimits.updateFixes('claude', 'claude-opus-4-1', () => [
      { field: 'anthropic-beta', value: 'context-1m-2025-08-07' },
    ]);
    const opus = Object.assign({}, request, { model: 'claude-opus-4-1' });
    expect(
      of.planner.plan({
        chatRequest: opus,
        overrides: flagged,
        session: undefined,
        target: claude,
        precision: 'exact',
        attempt: firstAttempt,
        tenant: 't',
      }).prepared.report.window,
    ).toBe(200_000);
  });

  it('fits the window a tenant’s overflow taught, for that tenant only', () => {
    const of = planner();
    const request = chat(12);
    const before = plan(of, request);
    expect(before.prepared.report.droppedMessages).toBe(0);
    of.learnedLimits.recordOverflow('default', 'small-model', 'tenant-a', {
      stated: 2_000,
      failedSize: before.prepared.report.inputTokens,
      status: 400,
      textClass: 'numbers',
    });
    const taught = plan(of, request);
    expect(taught.learned.window).toBe(2_000);
    expect(taught.prepared.report.inputTokens).toBeLessThanOrEqual(2_000);
    expect(taught.prepared.report.droppedMessages).toBeGreaterThan(0);
    const other = plan(of, request, 'tenant-b');
    expect(other.learned.window).toBeUndefined();
    expect(other.prepared.report.inputTokens).toBe(before.prepared.report.inputTokens);
  });

  it('shows a preview the configured window a due re-probe will try, and the request then tries it', () => {
    let nowMs = 1_000_000;
    const of = planner(() => nowMs);
    const request = chat(12);
    const whole = plan(of, request).prepared.report.inputTokens;
    of.learnedLimits.recordOverflow('default', 'small-model', 'tenant-a', {
      stated: 2_000,
      failedSize: whole,
      status: 400,
      textClass: 'numbers',
    });
    nowMs += 3_600_000;
    const previews = [1, 2].map(() => plan(of, request, 'tenant-a', firstAttempt, true).prepared);
    const sent = plan(of, request).prepared;
    const after = plan(of, request).prepared;
    expect(previews.map((shown) => shown.report.inputTokens)).toEqual([whole, whole]);
    expect(sent.messages).toEqual(previews[0]?.messages);
    // The probe was this interval's one: the next request keeps the lesson.
    expect(after.report.inputTokens).toBeLessThanOrEqual(2_000);
  });

  it.each<{ name: string; a: unknown[] | undefined; b: unknown[] | undefined; same: boolean }>([
    { name: 'no tools', a: undefined, b: undefined, same: true },
    { name: 'the same definitions', a: [tool('read')], b: [tool('read')], same: true },
    { name: 'another tool', a: [tool('read')], b: [tool('write')], same: false },
    {
      name: 'the same tools in another order',
      a: [tool('read'), tool('write')],
      b: [tool('write'), tool('read')],
      same: false,
    },
  ])('knows a tool set by its definitions: $name', ({ a, b, same }) => {
    const of = planner();
    const first = plan(of, a === undefined ? chat(2) : withTools(a));
    const second = plan(of, b === undefined ? chat(2) : withTools(b));
    expect(first.toolSet === second.toolSet).toBe(same);
    if (a === undefined) expect([first.toolSet, first.toolFormula]).toEqual([undefined, undefined]);
    else {
      expect(first.toolSet).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(first.toolFormula).toBe(first.prepared.report.regions.tools);
    }
  });

  it.each([
    { model: 'small-model', format: 'json' },
    { model: 'exact-model', format: 'typescript' },
  ])(
    'counts a tool set once and each prompt’s as its template writes it, beside whatever comes first: $model ($format)',
    ({ model, format }) => {
      const of = planner();
      const tools = [tool('read'), tool('write')];
      const entry = findModelEntry(config, model);
      expect(entry.toolFormat).toBe(format);
      const tokenizer = tokenizers.forEncoding(entry.tokenizer);
      const firsts = [
        { role: 'system', content: 'Be brief.' },
        { role: 'system', content: 'You are a careful reviewer of pull requests.\nAnswer in English' },
        { role: 'user', content: 'Read the README.' },
      ];
      for (const first of firsts) {
        const request = {
          model,
          messages: [first, { role: 'user', content: 'Now?' }],
          tools,
        } as ChatCompletionRequest;
        const firstSystemText = first.role === 'system' ? first.content : undefined;
        expect(plan(of, request).prepared.report.regions.tools).toBe(
          countToolTokens(tools, tokenizer, { firstSystemText, format: entry.toolFormat }),
        );
      }
    },
  );

  it('finds a tool set by the name of the client’s bytes it came from, without its definitions', () => {
    const of = planner();
    const named = (tools: unknown[], toolsKey: string | undefined) =>
      of.planner.plan({
        chatRequest: withTools(tools),
        overrides: { historyMode: 'auto' },
        session: undefined,
        target: config.defaultUpstream,
        precision: 'exact',
        attempt: firstAttempt,
        tenant: 'tenant-a',
        toolsKey,
      });
    const first = named([tool('read'), tool('write')], 'messages\u0000[read,write]');
    expect(named([tool('read'), tool('write')], undefined).toolSet).toBe(first.toolSet);
    // The name is the client's bytes: the planner takes it for the set it named before.
    const again = named([tool('read')], 'messages\u0000[read,write]');
    expect([again.toolSet, again.toolFormula]).toEqual([first.toolSet, first.toolFormula]);
    expect(named([tool('read')], 'messages\u0000[read]').toolSet).not.toBe(first.toolSet);
  });

  it('counts a tool set at what the upstream was seen to count for it, once learned', () => {
    const of = planner();
    const request = withTools([tool('read'), tool('write')]);
    const before = plan(of, request);
    const formula = before.toolFormula as number;
    for (let sample = 0; sample < 5; sample++)
      of.learnedLimits.recordToolSetTokens(
        'default',
        'small-model',
        before.toolSet as string,
        'tenant-a',
        formula + 30,
        formula,
      );
    const after = plan(of, request);
    expect(after.prepared.report.regions.tools).toBe(formula + 30);
    expect(after.prepared.report.inputTokens).toBe(before.prepared.report.inputTokens + 30);
    // The formula stays the gateway's own count.
    expect(after.toolFormula).toBe(formula);
  });

  it('is the same for the same request, planned again or by another planner (the preview’s and the send’s)', () => {
    const of = planner();
    const request = withTools([tool('read')]);
    const once = plan(of, request);
    const again = plan(of, request);
    const fresh = plan(planner(), request);
    expect(once.prepared.report.droppedMessages + once.prepared.messages.length).toBe(
      request.messages.length,
    );
    for (const other of [again, fresh]) {
      expect(other.prepared.messages).toEqual(once.prepared.messages);
      expect(other.prepared.report.inputTokens).toBe(once.prepared.report.inputTokens);
      expect(other.toolSet).toBe(once.toolSet);
    }
  });

  it('sends a lowered max_tokens the attempt asks for, the client’s otherwise', () => {
    const of = planner();
    const request = { ...chat(2), max_tokens: 900 } as ChatCompletionRequest;
    expect(plan(of, request).outgoing.max_tokens).toBe(900);
    expect(plan(of, request, 'tenant-a', { ...firstAttempt, maxTokens: 300 }).outgoing.max_tokens).toBe(300);
  });
});
