// The fields a model refuses and what is sent instead (docs/budgeting.md#refused-fields): the rewrite
// as a table, and the memory that keeps each model's fixes.
import { describe, expect, it } from 'vitest';
import {
  fixesForKey,
  keyScopeOf,
  applyFieldFixes,
  createFieldFixes,
  fixForUnknownField,
  fixForUnsupportedField,
  toolCallIdsField,
  fixForMessageField,
  thoughtSignaturesField,
  foreignThinkingField,
  withCarriedStateAsTaken,
  withoutMessageFields,
  withThoughtSignatures,
  withToolCallIdsAsKimiTakes,
  withToolCallIdsEveryProviderTakes,
  withToolDescriptionsWithin,
  withToolsAtMost,
  withEmptyTextsFilled,
  withDeveloperAsSystem,
  withTextPartsAsText,
  withNullContentsAsText,
  withToolArgumentsAsObjects,
  withToolChoiceUnforced,
  withToolChoiceAsString,
  withoutEmptyToolCalls,
  withoutToolFieldsWhenNoTools,
  withReasoningStandIns,
  withContinueAfterPrefill,
  continueText,
  withMessageFixes,
  withJsonModeTold,
  withBetaFixes,
  effortInstead,
  withAnthropicFixes,
  fixForAnthropicMember,
  fixForBlockMember,
  withResponseFormatAsTaken,
  formatsTakenWith,
  withToolHistoryAsText,
  heldStopsOf,
  withStopsAtMost,
  withToolCallIdsAsMistralTakes,
  fittedName,
  type FieldFix,
} from '../../src/upstream/field-fixes.js';
import type { ContextMessage } from '../../src/context/types.js';
import { toAnthropicRequest } from '../../src/upstream/anthropic-wire.js';
import { bridgeMessagesRequest } from '../../src/messages/bridge.js';

const rename: FieldFix = { field: 'max_tokens', renameTo: 'max_completion_tokens' };
const drop: FieldFix = { field: 'temperature' };

describe('applyFieldFixes', () => {
  it.each([
    [
      'renames a field, its value kept',
      { max_tokens: 50, n: 1 },
      [rename],
      { max_completion_tokens: 50, n: 1 },
    ],
    ['leaves a field out', { temperature: 0, n: 1 }, [drop], { n: 1 }],
    ['applies both', { max_tokens: 5, temperature: 0.3 }, [rename, drop], { max_completion_tokens: 5 }],
    [
      'keeps a value the body already has under the new name',
      { max_tokens: 50, max_completion_tokens: 80 },
      [rename],
      { max_completion_tokens: 80 },
    ],
    ['treats a null field as absent', { max_tokens: null, n: 1 }, [rename], { max_tokens: null, n: 1 }],
  ] as const)('%s', (_name, body, fixes, expected) => {
    const copy = structuredClone(body);
    expect(applyFieldFixes(body as object, fixes)).toEqual(expected);
    // The caller's body is not touched.
    expect(body).toEqual(copy);
  });

  it('returns the body itself when no fix changes it', () => {
    const body = { model: 'm', n: 2 };
    expect(applyFieldFixes(body, [rename, drop])).toBe(body);
    expect(applyFieldFixes(body, [])).toBe(body);
  });
});

// A refusal for a key (its credits, its plan) is kept for that key: the upstream's when the gateway sends its
// own key there, else the client's own key's, read after the model's.
describe('fixes for a key', () => {
  const fast = { field: 'speed', ofKey: true as const };
  const store = new Map<string, readonly FieldFix[]>([
    ['shared\u0000claude-opus-4-8', [{ field: 'temperature' }]],
    ['own#key:t-alice\u0000claude-opus-4-8', [fast]],
    ['own\u0000claude-opus-4-8', [{ field: 'top_k' }]],
  ]);
  const fixesOf = (upstream: string, model: string) => store.get(`${upstream}\u0000${model}`) ?? [];
  const shared = { name: 'shared', apiKey: 'sk-operator' };
  const own = { name: 'own', apiKey: undefined };

  it.each([
    ['the gateway’s key: the upstream’s', shared, 't-alice', 'shared', [{ field: 'temperature' }]],
    [
      'a client’s key: its own, after the model’s',
      own,
      't-alice',
      'own#key:t-alice',
      [{ field: 'top_k' }, fast],
    ],
    ['another client’s key: the model’s alone', own, 't-bob', 'own#key:t-bob', [{ field: 'top_k' }]],
  ] as const)('%s', (_name, upstream, tenant, scope, fixes) => {
    expect(keyScopeOf(upstream, tenant)).toBe(scope);
    expect(fixesForKey(fixesOf, upstream, tenant, 'claude-opus-4-8')).toEqual(fixes);
  });
});

describe('createFieldFixes', () => {
  it('keeps each fix once, per upstream and model', () => {
    const fixes = createFieldFixes({ maxEntries: 10 });
    expect(fixes.fixesFor('azure', 'prod-gpt5')).toEqual([]);
    expect(fixes.remember('azure', 'prod-gpt5', rename)).toBe(true);
    expect(fixes.remember('azure', 'prod-gpt5', rename)).toBe(false);
    expect(fixes.remember('azure', 'prod-gpt5', drop)).toBe(true);
    expect(fixes.fixesFor('azure', 'prod-gpt5')).toEqual([rename, drop]);
    expect(fixes.fixesFor('openai', 'prod-gpt5')).toEqual([]);
    expect(fixes.fixesFor('azure', 'prod-gpt4o')).toEqual([]);
  });

  it('forgets a fix of one model (tried on a refusal that named nothing), and tells it once', () => {
    const forgotten: string[] = [];
    const fixes = createFieldFixes({
      maxEntries: 10,
      onForgotten: (upstream, model, fix) => forgotten.push(`${upstream} ${model} ${fix.field}`),
    });
    fixes.remember('kimi', 'k3', rename);
    fixes.remember('kimi', 'k3', drop);
    fixes.remember('kimi', 'k2', drop);
    fixes.forget('kimi', 'k3', drop);
    fixes.forget('kimi', 'k3', drop);
    fixes.forget('kimi', 'k9', drop);
    expect(fixes.fixesFor('kimi', 'k3')).toEqual([rename]);
    expect(fixes.fixesFor('kimi', 'k2')).toEqual([drop]);
    expect(forgotten).toEqual([`kimi k3 ${drop.field}`]);
    fixes.forget('kimi', 'k3', rename);
    expect(fixes.fixesFor('kimi', 'k3')).toEqual([]);
    // Forgotten, it is learned again from the next refusal.
    expect(fixes.remember('kimi', 'k3', drop)).toBe(true);
  });

  it('keeps the lowest cap a model refused above (documents beside the images lower it)', () => {
    const fixes = createFieldFixes({ maxEntries: 10 });
    expect(fixes.remember('anthropic', 'claude', { field: 'messages[].images', atMost: 100 })).toBe(true);
    expect(fixes.remember('anthropic', 'claude', rename)).toBe(true);
    expect(fixes.remember('anthropic', 'claude', { field: 'messages[].images', atMost: 100 })).toBe(false);
    expect(fixes.remember('anthropic', 'claude', { field: 'messages[].images', atMost: 120 })).toBe(false);
    expect(fixes.remember('anthropic', 'claude', { field: 'messages[].images', atMost: 99 })).toBe(true);
    expect(fixes.fixesFor('anthropic', 'claude')).toEqual([
      rename,
      { field: 'messages[].images', atMost: 99 },
    ]);
  });

  it('keeps each anthropic-beta flag refused, and the whole header, as fixes of their own', () => {
    const fixes = createFieldFixes({ maxEntries: 10 });
    const effort = { field: 'anthropic-beta', value: 'effort-2025-11-24' };
    const advisor = { field: 'anthropic-beta', value: 'advisor-tool-2026-03-01' };
    expect(fixes.remember('vertex', 'claude', effort)).toBe(true);
    expect(fixes.remember('vertex', 'claude', advisor)).toBe(true);
    expect(fixes.remember('vertex', 'claude', { field: 'anthropic-beta', value: 'effort-2025-11-24' })).toBe(
      false,
    );
    expect(fixes.remember('vertex', 'claude', { field: 'anthropic-beta' })).toBe(true);
    expect(fixes.fixesFor('vertex', 'claude')).toEqual([effort, advisor, { field: 'anthropic-beta' }]);
  });

  it('keeps the 128 fixes of a model learned last, however many of its own fields a client sends', () => {
    const fixes = createFieldFixes({ maxEntries: 10 });
    fixes.remember('fireworks', 'glm', rename);
    for (let index = 0; index < 300; index++)
      fixes.remember('fireworks', 'glm', { field: `ownField${index}` });
    const kept = fixes.fixesFor('fireworks', 'glm');
    expect(kept).toHaveLength(128);
    expect(kept[0]).toEqual({ field: 'ownField172' });
    expect(kept.at(-1)).toEqual({ field: 'ownField299' });
    // One learned before them went first, and is learned again from its next refusal.
    expect(fixes.remember('fireworks', 'glm', rename)).toBe(true);
  });

  it('forgets the least recently learned model beyond maxEntries', () => {
    const fixes = createFieldFixes({ maxEntries: 3 });
    for (const model of ['a', 'b', 'c']) fixes.remember('u', model, rename);
    // Learning more about `a` makes it the most recent.
    fixes.remember('u', 'a', drop);
    fixes.remember('u', 'd', rename);
    expect(['a', 'b', 'c', 'd'].map((model) => fixes.fixesFor('u', model).length)).toEqual([2, 0, 1, 1]);
  });
});

describe('what is sent instead of a refused field', () => {
  it.each([
    // The provider does not know the field.
    ['unknown', 'stream_options', undefined, { field: 'stream_options' }],
    ['unknown', 'user', undefined, { field: 'user' }],
    ['unknown', 'metadata', undefined, { field: 'metadata' }],
    ['unknown', 'reasoning_effort', undefined, { field: 'reasoning_effort' }],
    ['unknown', 'verbosity', undefined, { field: 'verbosity' }],
    ['unknown', 'parallel_tool_calls', undefined, { field: 'parallel_tool_calls' }],
    // Prompt caching's directives (OpenAI's; a provider without its cache could not act on them).
    ['unknown', 'prompt_cache_retention', undefined, { field: 'prompt_cache_retention' }],
    ['unknown', 'prompt_cache_options', undefined, { field: 'prompt_cache_options' }],
    [
      'unknown',
      'max_completion_tokens',
      undefined,
      { field: 'max_completion_tokens', renameTo: 'max_tokens' },
    ],
    ['unknown', 'max_tokens', undefined, { field: 'max_tokens', renameTo: 'max_completion_tokens' }],
    // What shapes the answer is the client's to decide…
    ['unknown', 'tools', undefined, undefined],
    ['unknown', 'temperature', undefined, undefined],
    // …but the penalties a provider cannot apply (Gemini's OpenAI-compatible endpoint: n4ze3m/page-assist#418).
    ['unknown', 'frequency_penalty', undefined, { field: 'frequency_penalty' }],
    ['unknown', 'presence_penalty', undefined, { field: 'presence_penalty' }],
    // Structured output a server takes in no form: left out, what it asked told in the system message.
    ['unknown', 'response_format', undefined, { field: 'response_format' }],
    ['unsupported', 'response_format', undefined, { field: 'response_format' }],
    // Stop sequences a model takes none of: left out, held by the gateway.
    ['unsupported', 'stop', undefined, { field: 'stop' }],
    // A server's own hints a model that does not know them could not act on.
    ['unknown', 'enable_thinking', undefined, { field: 'enable_thinking' }],
    ['unknown', 'chat_template_kwargs', undefined, { field: 'chat_template_kwargs' }],
    ['unknown', 'top_k', undefined, { field: 'top_k' }],
    // A hint to write faster, the answer the same without it.
    ['unknown', 'prediction', undefined, { field: 'prediction' }],
    ['unsupported', 'prediction', undefined, { field: 'prediction' }],
    // The model does not support the field (OpenAI's reasoning models).
    [
      'unsupported',
      'max_tokens',
      'max_completion_tokens',
      { field: 'max_tokens', renameTo: 'max_completion_tokens' },
    ],
    ['unsupported', 'max_tokens', 'max_output_tokens', undefined],
    ['unsupported', 'temperature', undefined, { field: 'temperature' }],
    ['unsupported', 'top_p', undefined, { field: 'top_p' }],
    ['unsupported', 'logprobs', undefined, undefined],
    ['unsupported', 'stream_options', undefined, { field: 'stream_options' }],
    // gpt-4o given Codex's reasoning effort.
    ['unsupported', 'reasoning_effort', undefined, { field: 'reasoning_effort' }],
  ] as const)('%s %s (replacement %s)', (kind, field, replacement, expected) => {
    const fix = kind === 'unknown' ? fixForUnknownField(field) : fixForUnsupportedField(field, replacement);
    expect(fix).toEqual(expected);
  });
});

describe('withToolCallIdsAsMistralTakes', () => {
  const call = (...ids: string[]): ContextMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } })),
  });
  const result = (id: string): ContextMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' });
  const idsOf = (messages: ContextMessage[]) =>
    messages.flatMap((message) => [
      ...(message.tool_calls ?? []).map((one) => one.id as string),
      ...(message.tool_call_id === undefined ? [] : [message.tool_call_id]),
    ]);

  it('writes ids of other providers as 9 letters and digits, a call and its result alike', () => {
    const messages = [
      { role: 'user', content: 'Go.' },
      call('call_Kq3vT9xLm2Pq8Rz1', 'toolu_01A09q90qw90lq917835lq9'),
      result('call_Kq3vT9xLm2Pq8Rz1'),
      result('toolu_01A09q90qw90lq917835lq9'),
    ];
    const ids = idsOf(withToolCallIdsAsMistralTakes(messages));
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(ids[2]).toBe(ids[0]);
    expect(ids[3]).toBe(ids[1]);
    expect(ids[0]).not.toBe(ids[1]);
    // The same for the same id, request after request: the prompt keeps its prefix.
    expect(idsOf(withToolCallIdsAsMistralTakes(messages))).toEqual(ids);
    // Not the field of a body: the body's fixes leave it alone.
    expect(applyFieldFixes({ model: 'm' }, [{ field: toolCallIdsField }])).toEqual({ model: 'm' });
  });

  it("leaves Mistral's own ids, and the messages holding only them, as they are", () => {
    const own = call('aB3xK9mP2');
    const messages = [own, result('aB3xK9mP2')];
    expect(withToolCallIdsAsMistralTakes(messages)).toBe(messages);
    const mixed = withToolCallIdsAsMistralTakes([own, result('aB3xK9mP2'), call('call_1'), result('call_1')]);
    expect(mixed[0]).toBe(own);
    expect(idsOf(mixed).slice(0, 2)).toEqual(['aB3xK9mP2', 'aB3xK9mP2']);
  });

  it('gives 10,000 different ids 10,000 different ids', () => {
    const ids = Array.from({ length: 10_000 }, (_unused, index) => `call_${index}`);
    const written = idsOf(withToolCallIdsAsMistralTakes([call(...ids)]));
    expect(new Set(written).size).toBe(10_000);
  });
});

describe('withThoughtSignatures', () => {
  const signed = (signature: string) => ({ google: { thought_signature: signature } });
  const calls = (...extras: Array<Record<string, unknown> | undefined>): ContextMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: extras.map((extra, index) => ({
      id: `call_${index}`,
      type: 'function',
      function: { name: 'f', arguments: '{}' },
      ...(extra === undefined ? {} : { extra_content: extra }),
    })),
  });
  const signaturesOf = (messages: ContextMessage[]) =>
    messages.map((message) =>
      (message.tool_calls ?? []).map(
        (call) =>
          (call.extra_content as { google?: { thought_signature?: string } } | undefined)?.google
            ?.thought_signature,
      ),
    );

  it("gives each step's first call without a signature the one Google documents for calls without one", () => {
    // A step another model made (a fallback, a client that switched), and a client that dropped the field.
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Go.' },
      calls(undefined, undefined),
      { role: 'tool', tool_call_id: 'call_0', content: 'a' },
      { role: 'tool', tool_call_id: 'call_1', content: 'b' },
      calls({ other: { kept: true } }),
      { role: 'tool', tool_call_id: 'call_0', content: 'c' },
    ];
    const fixed = withThoughtSignatures(messages, [{ field: thoughtSignaturesField }]);
    expect(signaturesOf(fixed)).toEqual([
      [],
      ['skip_thought_signature_validator', undefined],
      [],
      [],
      ['skip_thought_signature_validator'],
      [],
    ]);
    // Whatever else the call's extra_content holds stays; the client's messages are not touched.
    expect(fixed[4]?.tool_calls?.[0]?.extra_content).toEqual({
      other: { kept: true },
      google: { thought_signature: 'skip_thought_signature_validator' },
    });
    expect(signaturesOf(messages)[1]).toEqual([undefined, undefined]);
    expect(fixed[0]).toBe(messages[0]);
    // Not the field of a body: the body's fixes leave it alone.
    expect(applyFieldFixes({ model: 'm' }, [{ field: thoughtSignaturesField }])).toEqual({ model: 'm' });
  });

  it("keeps Gemini's own signatures, and the messages holding them, as they are", () => {
    const own = calls(signed('CrICAdHtim827fQ=='), undefined);
    const messages = [{ role: 'user', content: 'Go.' }, own];
    expect(withThoughtSignatures(messages, [{ field: thoughtSignaturesField }])).toBe(messages);
  });

  it('gives every signed call the stand-in after Gemini refused one another backend gave, this request only', () => {
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Go.' },
      calls(signed('c3R1ZGlvLWdhdmUtaXQ='), signed('c2Vjb25k')),
      { role: 'tool', tool_call_id: 'call_0', content: 'a' },
      { role: 'tool', tool_call_id: 'call_1', content: 'b' },
      calls(undefined),
      { role: 'tool', tool_call_id: 'call_0', content: 'c' },
    ];
    const fixed = withThoughtSignatures(messages, [{ field: foreignThinkingField, value: 'all' }]);
    // A call of no signature stays so (Gemini asks one only of the current turn's: the learned fix gives it).
    expect(signaturesOf(fixed)).toEqual([
      [],
      ['skip_thought_signature_validator', 'c2Vjb25k'],
      [],
      [],
      [undefined],
      [],
    ]);
    expect(fixed[4]).toBe(messages[4]);
    expect(withThoughtSignatures(messages, [])).toBe(messages);
  });
});

describe('withCarriedStateAsTaken', () => {
  const step = (details: unknown[]): ContextMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    reasoning_details: details,
  });
  const sealed = { type: 'reasoning.encrypted', data: 'gAAAAB…', format: 'openai-responses-v1', index: 0 };
  const summary = { type: 'reasoning.summary', summary: 'Look it up.', index: 1 };

  it('leaves encrypted reasoning out after a refusal of it, this request only; a summary stays', () => {
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Go.' },
      step([sealed, summary]),
      step([sealed]),
    ];
    const fixed = withCarriedStateAsTaken(messages, [{ field: foreignThinkingField, value: 'all' }]);
    expect(fixed.map((message) => message.reasoning_details)).toEqual([undefined, [summary], undefined]);
    expect(fixed[0]).toBe(messages[0]);
    expect(messages[1]?.reasoning_details).toEqual([sealed, summary]);
    expect(withCarriedStateAsTaken(messages, [])).toBe(messages);
  });

  it("at the first step keeps the sealed reasoning of the tool loop being answered, Claude's signed thinking too", () => {
    const claudes = {
      type: 'reasoning.text',
      text: 'Think.',
      signature: 'c2ln',
      format: 'anthropic-claude-v1',
    };
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Go.' },
      step([claudes]),
      { role: 'tool', tool_call_id: 'call_1', content: 'a' },
      { role: 'user', content: 'Again.' },
      step([sealed]),
      { role: 'tool', tool_call_id: 'call_1', content: 'b' },
    ];
    const earlier = withCarriedStateAsTaken(messages, [{ field: foreignThinkingField, value: 'earlier' }]);
    expect(earlier.map((message) => message.reasoning_details)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      [sealed],
      undefined,
    ]);
    expect(earlier[4]).toBe(messages[4]);
    const all = withCarriedStateAsTaken(messages, [{ field: foreignThinkingField, value: 'all' }]);
    expect(all[4]?.reasoning_details).toBeUndefined();
  });
});

describe('leftovers of another answer in messages', () => {
  it.each([
    [['reasoning_content'], { field: 'messages[].reasoning_content' }],
    [['reasoning_details'], { field: 'messages[].reasoning_details' }],
    [['annotations'], { field: 'messages[].annotations' }],
    [['tool_calls', 'extra_content'], { field: 'messages[].tool_calls[].extra_content' }],
    // Who said it, where the provider does not read it (below); what the conversation says is the client's.
    [['name'], { field: 'messages[].name' }],
    [['tool_calls', 'name'], undefined],
    [['content'], undefined],
    [['tool_calls'], undefined],
    [['tool_calls', 'function'], undefined],
    [[], undefined],
  ])('%j: %j', (path, expected) => {
    expect(fixForMessageField(path)).toEqual(expected);
  });

  it('leaves the fixed fields out of every message and call, and the messages without them as they are', () => {
    const plain = { role: 'user', content: 'Go.' };
    const messages: ContextMessage[] = [
      plain,
      {
        role: 'assistant',
        content: 'Done.',
        reasoning_content: 'r',
        refusal: null,
        tool_calls: [
          {
            id: 'a',
            type: 'function',
            function: { name: 'f', arguments: '{}' },
            extra_content: { google: {} },
          },
        ],
      },
    ];
    const fixes = [
      { field: 'messages[].reasoning_content' },
      { field: 'messages[].refusal' },
      { field: 'messages[].tool_calls[].extra_content' },
      // Not a leftover: never left out, whatever a fix says.
      { field: 'messages[].content' },
    ];
    const fixed = withoutMessageFields(messages, fixes);
    expect(fixed[0]).toBe(plain);
    expect(fixed[1]).toEqual({
      role: 'assistant',
      content: 'Done.',
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }],
    });
    // The client's messages are not touched.
    expect(messages[1]).toHaveProperty('reasoning_content', 'r');
    expect(withoutMessageFields([plain], fixes)).toEqual([plain]);
    expect(withoutMessageFields(messages, [{ field: 'max_tokens' }])).toBe(messages);
  });
});

describe('withToolCallIdsAsKimiTakes', () => {
  const call = (...calls: Array<[string, string]>): ContextMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: calls.map(([id, name]) => ({ id, type: 'function', function: { name, arguments: '{}' } })),
  });
  const result = (id: string): ContextMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' });
  const idsOf = (messages: ContextMessage[]) =>
    messages.flatMap((message) => [
      ...(message.tool_calls ?? []).map((one) => one.id as string),
      ...(message.tool_call_id === undefined ? [] : [message.tool_call_id]),
    ]);

  it("writes every id as Kimi's template counts calls once another model's are in the history", () => {
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Go.' },
      call(['functions.read:0', 'read']),
      result('functions.read:0'),
      call(['call_a', 'grep'], ['call_b', 'read']),
      result('call_b'),
      result('call_a'),
      // Two calls of one id (an endpoint that gives every call an empty id): answered in their order.
      call(['', 'ls'], ['', 'ls']),
      result(''),
      result(''),
    ];
    expect(idsOf(withToolCallIdsAsKimiTakes(messages))).toEqual([
      'functions.read:0',
      'functions.read:0',
      'functions.grep:1',
      'functions.read:2',
      'functions.read:2',
      'functions.grep:1',
      'functions.ls:3',
      'functions.ls:4',
      'functions.ls:3',
      'functions.ls:4',
    ]);
    // The client's messages are not changed.
    expect(idsOf(messages).slice(2, 4)).toEqual(['call_a', 'call_b']);
  });

  it("leaves a history of Kimi's own ids as it is", () => {
    const messages = [call(['functions.read:0', 'read']), result('functions.read:0')];
    expect(withToolCallIdsAsKimiTakes(messages)).toBe(messages);
  });
});

describe('withToolCallIdsEveryProviderTakes', () => {
  const calls = (...ids: string[]): ContextMessage => ({
    role: 'assistant',
    content: 'Looking.',
    tool_calls: ids.map((id) => ({
      id,
      type: 'function',
      function: { name: 'read', arguments: '{}' },
      extra_content: { google: { thought_signature: 'sig' } },
    })),
  });
  const result = (id: string, content: string): ContextMessage => ({
    role: 'tool',
    tool_call_id: id,
    content,
  });

  it('gives the calls of empty ids an id each that every provider takes, each result its call’s', () => {
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Go.' },
      calls('', ''),
      result('', 'first'),
      result('', 'second'),
    ];
    const out = withToolCallIdsEveryProviderTakes(messages);
    const ids = (out[1]?.tool_calls ?? []).map((call) => call.id as string);
    expect(ids.every((id) => /^[A-Za-z0-9_-]{1,40}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(2);
    expect(out.slice(2)).toEqual([result(ids[0] as string, 'first'), result(ids[1] as string, 'second')]);
    // All but the id as it was: the message's content, the call's name, arguments and signature.
    expect(out[1]).toEqual({
      ...calls('', ''),
      tool_calls: ids.map((id) => ({ ...(calls(id).tool_calls?.[0] as object) })),
    });
    // The client's messages are not changed; the user's message is the same object.
    expect(messages[1]?.tool_calls?.map((call) => call.id)).toEqual(['', '']);
    expect(out[0]).toBe(messages[0]);
  });

  it('is the same array when every id is one every provider takes, given once', () => {
    const messages = [
      calls('call_a', 'toolu_01A09q90qw90lq917835lq9'),
      result('call_a', 'a'),
      result('toolu_01A09q90qw90lq917835lq9', 'b'),
    ];
    expect(withToolCallIdsEveryProviderTakes(messages)).toBe(messages);
  });
});

describe('withToolDescriptionsWithin', () => {
  const words = (count: number) => Array.from({ length: count }, (_, at) => `word${at}`).join(' ');
  const tool = (description: string, parameters?: Record<string, unknown>) => ({
    type: 'function',
    function: { name: 'list_issues', description, ...(parameters === undefined ? {} : { parameters }) },
  });

  it('cuts a longer description at white space and gives the rest as its parameters’ description', () => {
    const long = words(300);
    const request = {
      model: 'm',
      tools: [tool(long, { type: 'object', properties: { q: { type: 'string' } } })],
    };
    const out = withToolDescriptionsWithin(request, 1024);
    const fn = (out.tools[0] as unknown as { function: unknown }).function as {
      description: string;
      parameters: { description: string; properties: unknown };
    };
    expect(fn.description.length).toBeLessThanOrEqual(1024);
    expect(fn.description.length).toBeGreaterThan(512);
    expect(`${fn.description} ${fn.parameters.description}`).toBe(long);
    expect(fn.parameters.properties).toEqual({ q: { type: 'string' } });
    // The client's tool is as it came.
    expect(request.tools[0]?.function.description).toBe(long);
  });

  it('keeps a description the parameters had, first, and makes a schema for a tool without one', () => {
    const long = 'x'.repeat(1500);
    const out = withToolDescriptionsWithin(
      { tools: [tool(long, { type: 'object', description: 'Filters.' }), tool(long)] },
      1024,
    );
    const [first, second] = out.tools as Array<{
      function: { description: string; parameters: Record<string, unknown> };
    }>;
    expect(first?.function.description).toBe('x'.repeat(1024));
    expect(first?.function.parameters.description).toBe(`Filters.\n\n${'x'.repeat(476)}`);
    expect(second?.function.parameters).toEqual({
      type: 'object',
      properties: {},
      description: 'x'.repeat(476),
    });
  });

  it('is the same request when no description is longer', () => {
    const request = { tools: [tool(words(10))] };
    expect(withToolDescriptionsWithin(request, 1024)).toBe(request);
  });
});

describe('withToolsAtMost', () => {
  const tool = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });
  const names = (request: { tools?: unknown }) =>
    (request.tools as Array<{ function: { name: string } }>).map((entry) => entry.function.name);
  const tools = ['a', 'b', 'c', 'd', 'e', 'f'].map(tool);
  const calls = (...called: string[]) => ({
    tool_calls: called.map((name, at) => ({
      id: `c${at}`,
      type: 'function',
      function: { name, arguments: '{}' },
    })),
  });

  it.each([
    {
      name: 'none called: the first in the client’s order',
      messages: [],
      kept: [],
      expected: ['a', 'b', 'c'],
    },
    {
      name: 'the newest called first, each in its place',
      messages: [calls('f'), calls('e', 'd'), calls('b')],
      kept: [],
      expected: ['b', 'd', 'e'],
    },
    {
      name: 'a tool kept by name (the recall tool)',
      messages: [calls('e')],
      kept: ['f'],
      expected: ['a', 'e', 'f'],
    },
    {
      name: 'a call of a tool no longer offered counts for none',
      messages: [calls('zzz')],
      kept: [],
      expected: ['a', 'b', 'c'],
    },
  ])('$name', ({ messages, kept, expected }) => {
    expect(names(withToolsAtMost({ tools }, messages, 3, kept))).toEqual(expected);
  });

  it('keeps the tool that tool_choice names', () => {
    const request = { tools, tool_choice: { type: 'function', function: { name: 'f' } } };
    expect(names(withToolsAtMost(request, [calls('e', 'd')], 2))).toEqual(['e', 'f']);
  });

  it('is the same request within the cap', () => {
    const request = { tools };
    expect(withToolsAtMost(request, [], 6)).toBe(request);
  });
});

describe('withEmptyTextsFilled', () => {
  const call = { id: 'c1', type: 'function', function: { name: 'shell', arguments: '{}' } };
  it.each([
    {
      name: 'a tool result of ""',
      message: { role: 'tool', tool_call_id: 'c1', content: '' },
      content: '(no output)',
    },
    {
      name: 'a tool result of white space',
      message: { role: 'tool', tool_call_id: 'c1', content: ' \n' },
      content: '(no output)',
    },
    {
      name: 'calls with "" beside them',
      message: { role: 'assistant', content: '', tool_calls: [call] },
      content: null,
    },
    { name: 'an empty answer', message: { role: 'assistant', content: '' }, content: '(empty)' },
    {
      name: 'an answer of no content and no calls',
      message: { role: 'assistant', content: null },
      content: '(empty)',
    },
    {
      name: 'blank text parts beside a picture: left out',
      message: {
        role: 'user',
        content: [
          { type: 'text', text: '' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } },
        ],
      },
      content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }],
    },
    {
      name: 'only blank text parts',
      message: { role: 'user', content: [{ type: 'text', text: '' }] },
      content: '(empty)',
    },
  ])('$name', ({ message, content }) => {
    const [filled] = withEmptyTextsFilled([message as ContextMessage]);
    expect(filled?.content).toEqual(content);
  });

  it('is the same array when every message has text, calls with null content among them', () => {
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    ] as ContextMessage[];
    expect(withEmptyTextsFilled(messages)).toBe(messages);
  });
});

describe('withDeveloperAsSystem', () => {
  it('writes each developer message as a system one where it stood', () => {
    const messages = [
      { role: 'developer', content: 'Be terse.' },
      { role: 'user', content: 'Hi' },
      { role: 'developer', content: [{ type: 'text', text: 'Now in French.' }] },
    ] as ContextMessage[];
    expect(withDeveloperAsSystem(messages)).toEqual([
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Hi' },
      { role: 'system', content: [{ type: 'text', text: 'Now in French.' }] },
    ]);
  });

  it('is the same array when none is', () => {
    const messages = [{ role: 'system', content: 'x' }] as ContextMessage[];
    expect(withDeveloperAsSystem(messages)).toBe(messages);
  });
});

describe('withTextPartsAsText', () => {
  it('writes a content of text parts only as their texts, one per line; one with a picture as it was', () => {
    const picture = [
      { type: 'text', text: 'see' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } },
    ];
    const messages = [
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      { role: 'user', content: picture },
      { role: 'user', content: 'plain' },
    ] as ContextMessage[];
    expect(withTextPartsAsText(messages).map((message) => message.content)).toEqual([
      'a\nb',
      picture,
      'plain',
    ]);
  });

  it('is the same array when no content is of text parts only', () => {
    const messages = [{ role: 'user', content: 'x' }] as ContextMessage[];
    expect(withTextPartsAsText(messages)).toBe(messages);
  });
});

describe('withNullContentsAsText', () => {
  const call = { id: 'c1', type: 'function', function: { name: 'shell', arguments: '{}' } };

  it('gives each null or left-out content the empty text, beside calls too', () => {
    const messages = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: null, refusal: "I'm sorry, I can't help with that." },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'assistant', tool_calls: [call] },
    ] as ContextMessage[];
    expect(withNullContentsAsText(messages).map((message) => message.content)).toEqual([
      'Hi',
      '',
      '',
      'ok',
      '',
    ]);
    expect(messages[1]?.content).toBeNull();
  });

  it('is the same array when every message has its content', () => {
    const messages = [{ role: 'user', content: '' }] as ContextMessage[];
    expect(withNullContentsAsText(messages)).toBe(messages);
  });
});

describe('withToolArgumentsAsObjects', () => {
  const call = (id: string, args: unknown) => ({
    id,
    type: 'function',
    function: { name: 'write', arguments: args },
  });

  it.each([
    { name: 'cut short at max_tokens', args: '{"path": "a.ts", "content": "export const', sent: '{}' },
    { name: 'of nothing', args: '', sent: '{}' },
    { name: 'a quote not escaped', args: '{"s": "He said "hi""}', sent: '{}' },
    { name: 'JSON, not an object', args: '["a"]', sent: '{}' },
    { name: 'an object, not its text (decoded)', args: { path: 'a.ts' }, sent: '{"path":"a.ts"}' },
    { name: 'left out', args: undefined, sent: '{}' },
    { name: 'an object', args: '{"path":"a.ts"}', sent: '{"path":"a.ts"}' },
    { name: 'an object with white space around', args: ' {"a": 1}\n', sent: ' {"a": 1}\n' },
  ])('a call whose arguments are $name', ({ args, sent }) => {
    const [message] = withToolArgumentsAsObjects([
      { role: 'assistant', content: null, tool_calls: [call('c1', args)] },
    ] as ContextMessage[]);
    const calls = message?.tool_calls as unknown as Array<{ function: { arguments: unknown } }>;
    expect(calls[0]?.function.arguments).toBe(sent);
  });

  it('leaves the other calls of the message, and the message itself when all are objects, as they were', () => {
    const good = call('c1', '{"a":1}');
    const messages = [
      { role: 'assistant', content: null, tool_calls: [good, call('c2', '{"b":')] },
      { role: 'assistant', content: null, tool_calls: [call('c3', '{}')] },
    ] as ContextMessage[];
    const out = withToolArgumentsAsObjects(messages);
    expect((out[0]?.tool_calls as unknown[])[0]).toBe(good);
    expect(out[1]).toBe(messages[1]);
    expect(
      (messages[0]?.tool_calls as unknown as Array<{ function: { arguments: string } }>)[1]?.function
        .arguments,
    ).toBe('{"b":');
  });

  it('is the same array when every call is sent back with an object', () => {
    const messages = [
      { role: 'assistant', content: null, tool_calls: [call('c1', '{}')] },
    ] as ContextMessage[];
    expect(withToolArgumentsAsObjects(messages)).toBe(messages);
  });
});

describe('withoutToolFieldsWhenNoTools and withoutEmptyToolCalls', () => {
  const tool = { type: 'function', function: { name: 'w', parameters: { type: 'object' } } };
  it.each([
    ['an empty tool list with a choice', { tools: [], tool_choice: 'auto' }, {}],
    ['a choice and parallel calls of no tools', { tool_choice: 'none', parallel_tool_calls: false }, {}],
    ['an empty tool list alone', { tools: [], temperature: 0 }, { temperature: 0 }],
  ])('%s: left out', (_case, fields, kept) => {
    expect(withoutToolFieldsWhenNoTools({ model: 'm', ...fields })).toEqual({ model: 'm', ...kept });
  });

  it('is the same request with tools, or with nothing of them', () => {
    const withTools = { model: 'm', tools: [tool], tool_choice: 'required', parallel_tool_calls: false };
    expect(withoutToolFieldsWhenNoTools(withTools)).toBe(withTools);
    const plain = { model: 'm', temperature: 1 };
    expect(withoutToolFieldsWhenNoTools(plain)).toBe(plain);
  });

  it('sends an answer with an empty list of calls without it (the empty text for no content); else the same array', () => {
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Hi.' },
      { role: 'assistant', content: 'Hello.', tool_calls: [] },
      { role: 'assistant', content: null, tool_calls: [] },
    ];
    expect(withoutEmptyToolCalls(messages)).toEqual([
      { role: 'user', content: 'Hi.' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'assistant', content: '' },
    ]);
    expect(messages[1]).toHaveProperty('tool_calls');
    const plain: ContextMessage[] = [{ role: 'user', content: 'Hi.' }];
    expect(withoutEmptyToolCalls(plain)).toBe(plain);
  });
});

describe('withToolChoiceUnforced', () => {
  const tool = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });
  const tools = [tool('search'), tool('emit_answer')];

  it.each([
    {
      name: 'required: auto, every tool',
      choice: 'required',
      sent: 'auto',
      offered: ['search', 'emit_answer'],
    },
    {
      name: 'a named function (structured output by a tool): auto, that tool alone',
      choice: { type: 'function', function: { name: 'emit_answer' } },
      sent: 'auto',
      offered: ['emit_answer'],
    },
    {
      name: 'a named function the tools do not hold: auto, every tool',
      choice: { type: 'function', function: { name: 'gone' } },
      sent: 'auto',
      offered: ['search', 'emit_answer'],
    },
    {
      name: 'allowed tools, required: their mode auto',
      choice: {
        type: 'allowed_tools',
        allowed_tools: { mode: 'required', tools: [{ type: 'function', name: 'search' }] },
      },
      sent: {
        type: 'allowed_tools',
        allowed_tools: { mode: 'auto', tools: [{ type: 'function', name: 'search' }] },
      },
      offered: ['search', 'emit_answer'],
    },
  ])('$name', ({ choice, sent, offered }) => {
    const out = withToolChoiceUnforced({ model: 'm', tools, tool_choice: choice });
    expect(out.tool_choice).toEqual(sent);
    expect((out.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(offered);
  });

  it('is the same request when nothing is forced', () => {
    for (const choice of ['auto', 'none', undefined]) {
      const request = { model: 'm', tools, tool_choice: choice };
      expect(withToolChoiceUnforced(request)).toBe(request);
    }
  });
});

describe('withToolChoiceAsString', () => {
  const tool = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });
  const tools = [tool('search'), tool('emit_answer'), tool('read')];

  it.each([
    {
      name: 'a named function: required, that tool alone',
      choice: { type: 'function', function: { name: 'emit_answer' } },
      sent: 'required',
      offered: ['emit_answer'],
    },
    {
      name: 'a named function the tools do not hold: required, every tool',
      choice: { type: 'function', function: { name: 'gone' } },
      sent: 'required',
      offered: ['search', 'emit_answer', 'read'],
    },
    {
      name: 'allowed tools, required: required, those tools alone',
      choice: {
        type: 'allowed_tools',
        allowed_tools: {
          mode: 'required',
          tools: [
            { type: 'function', name: 'search' },
            { type: 'function', name: 'read' },
          ],
        },
      },
      sent: 'required',
      offered: ['search', 'read'],
    },
    {
      name: 'allowed tools in chat terms, auto: auto, those tools alone',
      choice: {
        type: 'allowed_tools',
        allowed_tools: { mode: 'auto', tools: [{ type: 'function', function: { name: 'read' } }] },
      },
      sent: 'auto',
      offered: ['read'],
    },
  ])('$name', ({ choice, sent, offered }) => {
    const out = withToolChoiceAsString({ model: 'm', tools, tool_choice: choice });
    expect(out.tool_choice).toEqual(sent);
    expect((out.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(offered);
  });

  it('is the same request when the choice is a string already, or none', () => {
    for (const choice of ['auto', 'none', 'required', undefined]) {
      const request = { model: 'm', tools, tool_choice: choice };
      expect(withToolChoiceAsString(request)).toBe(request);
    }
  });
});

describe('withReasoningStandIns', () => {
  const call = { id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } };

  it('gives each answer of no reasoning a stand-in of one space, and leaves the reasoning given', () => {
    const messages = [
      { role: 'user', content: 'Go.' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'assistant', content: 'Done.', reasoning_content: '' },
      { role: 'assistant', content: 'Again.', reasoning_content: 'I looked.' },
      { role: 'assistant', content: 'Other.', reasoning: 'Under the other name.' },
    ] as ContextMessage[];
    const out = withReasoningStandIns(messages);
    expect(out.map((message) => message.reasoning_content)).toEqual([
      undefined,
      ' ',
      undefined,
      ' ',
      'I looked.',
      undefined,
    ]);
    expect(out[4]).toBe(messages[4]);
    expect(out[5]).toBe(messages[5]);
  });

  it('is the same array when every answer has its reasoning', () => {
    const messages = [{ role: 'assistant', content: 'x', reasoning_content: 'y' }] as ContextMessage[];
    expect(withReasoningStandIns(messages)).toBe(messages);
  });
});

describe('withContinueAfterPrefill', () => {
  const call = { id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } };

  it('asks the model to go on after a last answer that calls no tool', () => {
    const messages = [
      { role: 'user', content: 'Write a haiku.' },
      { role: 'assistant', content: 'Autumn wind —' },
    ] as ContextMessage[];
    expect(withContinueAfterPrefill(messages)).toEqual([
      ...messages,
      { role: 'user', content: continueText },
    ]);
  });

  it('is the same array when the conversation ends with a user message, a tool result or a call', () => {
    for (const last of [
      { role: 'user', content: 'Hi' },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'assistant', content: null, tool_calls: [call] },
    ]) {
      const messages = [{ role: 'user', content: 'Go.' }, last] as ContextMessage[];
      expect(withContinueAfterPrefill(messages)).toBe(messages);
    }
  });
});

describe('withMessageFixes', () => {
  const call = { id: 'c1', type: 'function', function: { name: 'shell', arguments: '{}' } };
  const messages = [
    { role: 'assistant', content: null },
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: 'c1', content: '' },
  ] as ContextMessage[];

  it('a model that refuses null contents and empty texts alike: calls with no content beside them', () => {
    const out = withMessageFixes(messages, [
      { field: 'messages[].content.null' },
      { field: 'messages[].content.empty' },
    ]);
    expect(out[0]?.content).toBe('(empty)');
    expect(out[1]).toEqual({ role: 'assistant', tool_calls: [call] });
    expect(out[2]?.content).toBe('(no output)');
  });

  it('one whose template takes one system message, first: the system messages so', () => {
    const out = withMessageFixes(
      [
        { role: 'system', content: 'Agent.' },
        { role: 'developer', content: 'Terse.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello' },
        { role: 'system', content: 'Summarize now.' },
        { role: 'user', content: 'Go' },
      ] as ContextMessage[],
      [{ field: 'messages[].roles' }],
    );
    expect(out).toEqual([
      { role: 'system', content: 'Agent.\n\nTerse.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello' },
      { role: 'user', content: 'Summarize now.\n\nGo' },
    ]);
  });

  it('one that refuses empty texts only keeps null beside calls', () => {
    const out = withMessageFixes(messages, [{ field: 'messages[].content.empty' }]);
    expect(out[1]?.content).toBeNull();
  });
});

describe("a message's name", () => {
  // What LangChain's createAgent sends for an agent named "Research Agent": its answer with its name, then
  // the tool's result with the tool's.
  const conversation = [
    { role: 'system', content: 'You research.' },
    { role: 'user', content: 'Find the retry budget.', name: 'ada' },
    {
      role: 'assistant',
      content: '',
      name: 'Research Agent',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'grep', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'src/retry.ts', name: 'grep' },
  ] as ContextMessage[];

  it('where the provider takes none: left out of every message, the rest as it was', () => {
    expect(fixForMessageField(['name'])).toEqual({ field: 'messages[].name' });
    const out = withMessageFixes(conversation, [{ field: 'messages[].name' }]);
    expect(out.map((message) => 'name' in message)).toEqual([false, false, false, false]);
    expect(out[0]).toBe(conversation[0]);
    expect(out[2]).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'grep', arguments: '{}' } }],
    });
    expect(conversation[2]?.name).toBe('Research Agent');
  });

  it("where OpenAI's pattern holds: each name written to fit, the names that fit the same objects", () => {
    const out = withMessageFixes(conversation, [{ field: 'messages[].name.pattern' }]);
    expect(out.map((message) => message.name)).toEqual([undefined, 'ada', 'Research_Agent', 'grep']);
    expect(out[1]).toBe(conversation[1]);
    expect(out[3]).toBe(conversation[3]);
    expect(conversation[2]?.name).toBe('Research Agent');
    const fitting = conversation.slice(0, 2);
    expect(withMessageFixes(fitting, [{ field: 'messages[].name.pattern' }])).toBe(fitting);
  });

  it.each([
    ['Research Agent', 'Research_Agent'],
    ['reviewer <2>', 'reviewer_2_'],
    ['a/b\\c|d', 'a_b_c_d'],
    ['x'.repeat(80), 'x'.repeat(64)],
    ['Zoë', 'Zo_'],
  ])('fittedName(%j) is %j', (name, fitted) => {
    expect(fittedName(name)).toBe(fitted);
    expect(fittedName(name)).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });

  it('names of no letter OpenAI takes stay apart', () => {
    const researcher = fittedName('研究员');
    const reviewer = fittedName('审稿人');
    expect(researcher).toMatch(/^name_[a-zA-Z0-9]{5}$/);
    expect(reviewer).toMatch(/^name_[a-zA-Z0-9]{5}$/);
    expect(researcher).not.toBe(reviewer);
    expect(fittedName('研究员')).toBe(researcher);
    expect(fittedName('  ')).toMatch(/^name_[a-zA-Z0-9]{5}$/);
  });
});

describe('heldStopsOf and withStopsAtMost', () => {
  const five = ['a', 'b', 'c', 'd', 'e'];
  const capped = [{ field: 'stop[]', atMost: 4 }];

  it('holds every stop of a model that takes none, one given as a string too, and leaves the request to the fix', () => {
    expect(heldStopsOf(five, [{ field: 'stop' }], undefined)).toEqual(five);
    expect(heldStopsOf('Observation:', [{ field: 'stop' }], undefined)).toEqual(['Observation:']);
    expect(applyFieldFixes({ model: 'gpt-5.2', stop: five }, [{ field: 'stop' }])).toEqual({
      model: 'gpt-5.2',
    });
  });

  it('holds every stop of more than a model takes, and sends the first that many', () => {
    expect(heldStopsOf(five, capped, undefined)).toEqual(five);
    expect(withStopsAtMost({ stop: five }, capped)).toEqual({ stop: ['a', 'b', 'c', 'd'] });
  });

  it("holds every stop, to Claude's wire, where one is of whitespace only; none where none is", () => {
    expect(heldStopsOf(['\n\n', 'END'], [], 'anthropic')).toEqual(['\n\n', 'END']);
    expect(heldStopsOf('\n', [], 'anthropic')).toEqual(['\n']);
    expect(heldStopsOf(['END'], [], 'anthropic')).toBeUndefined();
  });

  it('holds every stop to the Responses API, which takes none (responses-wire.ts leaves them out)', () => {
    expect(heldStopsOf(['Observation:', '\n\n'], [], 'responses')).toEqual(['Observation:', '\n\n']);
    expect(heldStopsOf('END', [], 'responses')).toEqual(['END']);
    expect(heldStopsOf(undefined, [], 'responses')).toBeUndefined();
  });

  it('holds no stop longer than it looks for', () => {
    expect(heldStopsOf(['x'.repeat(257), 'ok'], [{ field: 'stop' }], undefined)).toEqual(['ok']);
    expect(heldStopsOf(['x'.repeat(256)], [{ field: 'stop' }], undefined)).toEqual(['x'.repeat(256)]);
  });

  it('holds none where the model is sent them all, none of no text, and none without a fix', () => {
    expect(heldStopsOf(['a', 'b'], capped, undefined)).toBeUndefined();
    expect(heldStopsOf(five, [{ field: 'top_p' }], undefined)).toBeUndefined();
    expect(heldStopsOf(five, [], undefined)).toBeUndefined();
    expect(heldStopsOf(['', null], [{ field: 'stop' }], undefined)).toBeUndefined();
    expect(heldStopsOf(undefined, [{ field: 'stop' }], undefined)).toBeUndefined();
    const request = { stop: ['a'] };
    expect(withStopsAtMost(request, capped)).toBe(request);
  });
});

describe('withResponseFormatAsTaken', () => {
  const format = { type: 'json_schema', json_schema: { name: 'weather', schema: { type: 'object' } } };
  const told =
    'Answer with one JSON object (weather) that follows this JSON Schema, and nothing else:\n{"type":"object"}';
  /** DeepSeek's: JSON mode only. */
  const jsonModeOnly = formatsTakenWith([{ field: 'response_format.json_schema' }]);
  /** LM Studio's: a JSON Schema only. */
  const schemaOnly = formatsTakenWith([{ field: 'response_format.json_object' }]);
  /** GPT4All's, and an older OpenAI model's once both refusals are learned: neither. */
  const neither = formatsTakenWith([{ field: 'response_format' }]);
  const both = formatsTakenWith([{ field: 'top_p' }]);

  it('reads what a model takes from its learned fixes', () => {
    expect(jsonModeOnly).toEqual({ schema: false, jsonMode: true });
    expect(schemaOnly).toEqual({ schema: true, jsonMode: false });
    expect(neither).toEqual({ schema: false, jsonMode: false });
    expect(
      formatsTakenWith([{ field: 'response_format.json_schema' }, { field: 'response_format.json_object' }]),
    ).toEqual({ schema: false, jsonMode: false });
    expect(both).toEqual({ schema: true, jsonMode: true });
    // Gemini's: either, but not beside tools.
    const gemini = [{ field: 'response_format.with_tools' }];
    expect(formatsTakenWith(gemini)).toEqual({ schema: true, jsonMode: true });
    expect(formatsTakenWith(gemini, true)).toEqual({ schema: false, jsonMode: false });
    expect(formatsTakenWith([{ field: 'response_format.json_schema' }], true)).toEqual(jsonModeOnly);
  });

  it('a schema the model does not take: asked in JSON mode, the first system message told the schema', () => {
    const out = withResponseFormatAsTaken(
      format,
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Paris?' },
      ],
      jsonModeOnly,
    );
    expect(out).toEqual({
      responseFormat: { type: 'json_object' },
      messages: [
        { role: 'system', content: `Be brief.\n\n${told}` },
        { role: 'user', content: 'Paris?' },
      ],
    });
  });

  it('puts a system message of it first when there is none, and a part after a system message of parts', () => {
    expect(
      withResponseFormatAsTaken(format, [{ role: 'user', content: 'Paris?' }], jsonModeOnly)?.messages,
    ).toEqual([
      { role: 'system', content: told },
      { role: 'user', content: 'Paris?' },
    ]);
    expect(
      withResponseFormatAsTaken(
        format,
        [{ role: 'system', content: [{ type: 'text', text: 'Be brief.' }] }],
        jsonModeOnly,
      )?.messages[0]?.content,
    ).toEqual([
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: told },
    ]);
  });

  it('a schema to a model that takes neither: no format, the schema told', () => {
    expect(withResponseFormatAsTaken(format, [{ role: 'user', content: 'Paris?' }], neither)).toEqual({
      responseFormat: undefined,
      messages: [
        { role: 'system', content: told },
        { role: 'user', content: 'Paris?' },
      ],
    });
  });

  it('JSON mode to a model that takes a schema only: a schema of any object, the messages as they were', () => {
    const messages = [{ role: 'user', content: 'Paris, in JSON?' }];
    const out = withResponseFormatAsTaken({ type: 'json_object' }, messages, schemaOnly);
    expect(out?.responseFormat).toEqual({
      type: 'json_schema',
      json_schema: { name: 'response', schema: { type: 'object' } },
    });
    expect(out?.messages).toBe(messages);
  });

  it('JSON mode to a model that takes neither: no format, told to answer in JSON unless a message says so', () => {
    expect(
      withResponseFormatAsTaken({ type: 'json_object' }, [{ role: 'user', content: 'Paris?' }], neither),
    ).toEqual({
      responseFormat: undefined,
      messages: [
        { role: 'system', content: 'Answer with one JSON object, and nothing else.' },
        { role: 'user', content: 'Paris?' },
      ],
    });
    const saysJson = [{ role: 'user', content: 'Paris, as json?' }];
    expect(withResponseFormatAsTaken({ type: 'json_object' }, saysJson, neither)?.messages).toBe(saysJson);
  });

  it('a text format (the default) is left out where either JSON format is not taken', () => {
    for (const taken of [jsonModeOnly, schemaOnly, neither])
      expect(withResponseFormatAsTaken({ type: 'text' }, [], taken)).toEqual({
        responseFormat: undefined,
        messages: [],
      });
    expect(withResponseFormatAsTaken({ type: 'text' }, [], both)).toBeUndefined();
  });

  it('is undefined where the model takes what is asked, and for no format', () => {
    expect(withResponseFormatAsTaken(format, [], both)).toBeUndefined();
    expect(withResponseFormatAsTaken(format, [], schemaOnly)).toBeUndefined();
    expect(withResponseFormatAsTaken({ type: 'json_object' }, [], jsonModeOnly)).toBeUndefined();
    for (const taken of [jsonModeOnly, schemaOnly, neither, both])
      expect(withResponseFormatAsTaken(undefined, [], taken)).toBeUndefined();
  });
});

describe('withJsonModeTold', () => {
  const jsonMode = { type: 'json_object' };
  const toldLine = /^Answer with one JSON object/;

  it('tells the first system message when no system, developer or user message says "json"', () => {
    const messages = [
      { role: 'system', content: 'Extract the facts.' },
      { role: 'user', content: 'I moved to Lyon.' },
      // A result or an answer that says it is not an instruction to the model.
      { role: 'assistant', content: 'Saved to facts.json.' },
    ];
    const out = withJsonModeTold(jsonMode, messages);
    expect(out.slice(1)).toEqual(messages.slice(1));
    expect(out[0]?.content).toMatch(/^Extract the facts\.\n\nAnswer with one JSON object/);
    expect(messages[0]?.content).toBe('Extract the facts.');
  });

  it('tells a developer message, or a system message of it first when there is none', () => {
    expect(
      String(withJsonModeTold(jsonMode, [{ role: 'developer', content: 'Be brief.' }])[0]?.content),
    ).toMatch(/^Be brief\.\n\nAnswer with one JSON object/);
    const out = withJsonModeTold(jsonMode, [{ role: 'user', content: 'Paris?' }]);
    expect(out.map((message) => message.role)).toEqual(['system', 'user']);
    expect(String(out[0]?.content)).toMatch(toldLine);
  });

  it('leaves messages that say it in any case, in a word or a text part, as they are', () => {
    for (const messages of <Array<Array<{ role: string; content: unknown }>>>[
      [{ role: 'user', content: 'Reply as Json.' }],
      [{ role: 'system', content: 'Write JSONL lines.' }],
      [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'x' } },
            { type: 'text', text: 'as json' },
          ],
        },
      ],
    ])
      expect(withJsonModeTold(jsonMode, messages)).toBe(messages);
  });

  it('leaves a request not in JSON mode as it is', () => {
    const messages = [{ role: 'user', content: 'Paris?' }];
    for (const other of [
      { type: 'text' },
      { type: 'json_schema', json_schema: {} },
      undefined,
      'json_object',
    ])
      expect(withJsonModeTold(other, messages)).toBe(messages);
  });
});

describe('withBetaFixes', () => {
  const headers = {
    'x-api-key': 'k',
    'anthropic-beta': 'claude-code-20250219, effort-2025-11-24,advisor-tool-2026-03-01',
  };

  it('leaves out the flags refused, the others kept in their order', () => {
    expect(
      withBetaFixes(headers, [
        { field: 'anthropic-beta', value: 'effort-2025-11-24' },
        { field: 'anthropic-beta', value: 'advisor-tool-2026-03-01' },
      ]),
    ).toEqual({ 'x-api-key': 'k', 'anthropic-beta': 'claude-code-20250219' });
    expect(headers['anthropic-beta']).toContain('effort-2025-11-24');
  });

  it('leaves out the header when a refusal named no flag, or when no flag is left', () => {
    expect(withBetaFixes(headers, [{ field: 'anthropic-beta' }])).toEqual({ 'x-api-key': 'k' });
    expect(
      withBetaFixes({ 'anthropic-beta': 'effort-2025-11-24' }, [
        { field: 'anthropic-beta', value: 'effort-2025-11-24' },
      ]),
    ).toEqual({});
  });

  it('is the same headers without a flag refused or without the header', () => {
    expect(withBetaFixes(headers, [{ field: 'temperature' }])).toBe(headers);
    const none = { 'x-api-key': 'k' };
    expect(withBetaFixes(none, [{ field: 'anthropic-beta' }])).toBe(none);
  });
});

describe('fixForAnthropicMember and withAnthropicFixes', () => {
  it('leaves out a member the request can do without and the on-demand members of tools, nothing else', () => {
    expect(fixForAnthropicMember('context_management')).toEqual({ field: 'context_management' });
    // Claude Code's, which Vertex refuses (anthropics/claude-code#82539); a thinking it does not offer.
    expect(fixForAnthropicMember('diagnostics')).toEqual({ field: 'diagnostics' });
    expect(fixForAnthropicMember('thinking')).toEqual({ field: 'thinking' });
    expect(fixForAnthropicMember('tools.11.custom.defer_loading')).toEqual({
      field: 'tools[].defer_loading',
    });
    expect(fixForAnthropicMember('tools.0.input_examples')).toEqual({ field: 'tools[].input_examples' });
    for (const other of ['model', 'messages', 'max_tokens', 'tools.2.custom.input_schema', 'system', 'tools'])
      expect(fixForAnthropicMember(other)).toBeUndefined();
  });

  it('takes them out of the Messages members a request carries, and of every tool that has them', () => {
    const plain = { name: 'list_files', input_schema: { type: 'object' } };
    const deferred = { name: 'weather', input_schema: { type: 'object' }, defer_loading: true };
    const request = {
      model: 'claude',
      ctxgate_anthropic: {
        thinking: { type: 'adaptive' },
        context_management: { edits: [] },
        tools: [plain, deferred],
      },
    };
    const out = withAnthropicFixes(request, [
      { field: 'context_management' },
      { field: 'tools[].defer_loading' },
    ]);
    expect(out).toEqual({
      model: 'claude',
      ctxgate_anthropic: {
        thinking: { type: 'adaptive' },
        tools: [plain, { name: 'weather', input_schema: { type: 'object' } }],
      },
    });
    expect(out.ctxgate_anthropic.tools[0]).toBe(plain);
    expect(request.ctxgate_anthropic.context_management).toEqual({ edits: [] });
    expect(deferred.defer_loading).toBe(true);
  });

  it("sends every block of a type without a member refused of it, and the rest as they were (Claude's tool call's caller)", () => {
    expect(fixForBlockMember('tool_use', 'caller')).toEqual({ field: 'blocks[].tool_use.caller' });
    for (const [type, member] of [
      ['tool_use', 'input'],
      ['text', 'text'],
      ['thinking', 'signature'],
      ['image', 'type'],
    ])
      expect(fixForBlockMember(type as string, member as string)).toBeUndefined();
    const call = { type: 'tool_use', id: 'toolu_1', name: 'w', input: {}, caller: { type: 'direct' } };
    const text = { type: 'text', text: 'Checking.', citations: null };
    const { chatBody } = bridgeMessagesRequest(
      {
        model: 'claude',
        max_tokens: 10,
        tools: [{ name: 'w', input_schema: { type: 'object' } }],
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: [text, call] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'rain' }] },
        ],
      },
      { native: true, requireMaxTokens: true },
    );
    const sent = toAnthropicRequest(withAnthropicFixes(chatBody, [{ field: 'blocks[].tool_use.caller' }]));
    expect((sent.messages as Array<{ content: unknown }>)[1]?.content).toEqual([
      text,
      { type: 'tool_use', id: 'toolu_1', name: 'w', input: {} },
    ]);
    expect(call.caller).toEqual({ type: 'direct' });
  });

  it("leaves Claude Code's billing line out of the system prompt of an upstream that refused it, the rest as it was", () => {
    const billing = 'x-anthropic-billing-header: cc_version=2.1.332.857; cc_entrypoint=cli;';
    const system = [
      { type: 'text', text: billing },
      { type: 'text', text: 'You are a Claude agent.', cache_control: { type: 'ephemeral' } },
    ];
    const bridge = (prompt: unknown) =>
      bridgeMessagesRequest(
        { model: 'claude', max_tokens: 10, system: prompt, messages: [{ role: 'user', content: 'Hi' }] },
        { native: true, requireMaxTokens: true },
      ).chatBody;
    const fix = [{ field: 'system.billing_attribution' }];
    expect(toAnthropicRequest(withAnthropicFixes(bridge(system), fix)).system).toEqual([system[1]]);
    expect(toAnthropicRequest(withAnthropicFixes(bridge(`${billing}\n\nBe brief.`), fix)).system).toBe(
      'Be brief.',
    );
    // Anthropic itself, which refused nothing, is sent it.
    expect(toAnthropicRequest(withAnthropicFixes(bridge(system), [])).system).toEqual(system);
  });

  it('is the same request when nothing refused is there, or for a chat request', () => {
    const request = { model: 'claude', ctxgate_anthropic: { thinking: { type: 'adaptive' } } };
    expect(withAnthropicFixes(request, [{ field: 'context_management' }])).toBe(request);
    const chat = { model: 'gpt', context_management: { edits: [] } };
    expect(withAnthropicFixes(chat, [{ field: 'context_management' }])).toBe(chat);
  });
});

describe('withAnthropicFixes: a tool forced with thinking on, and more tools than the model takes', () => {
  const tool = (name: string) => ({ name, input_schema: { type: 'object' } });
  const request = (toolChoice: unknown, thinking: unknown) => ({
    model: 'claude',
    messages: [
      { role: 'user', content: 'Hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', function: { name: 't7', arguments: '{}' } }],
      },
    ],
    ctxgate_anthropic: { tools: [tool('t1'), tool('t2'), tool('t7')], tool_choice: toolChoice, thinking },
  });
  // As learned from Claude's refusal, of a tool forced with thinking on.
  const forced = [{ field: 'tool_choice.forced', value: 'thinking' }];

  it.each([
    [
      'a named tool, a budget',
      { type: 'tool', name: 't2' },
      { type: 'enabled', budget_tokens: 2000 },
      { type: 'auto' },
      ['t2'],
    ],
    [
      'any, adaptive thinking',
      { type: 'any', disable_parallel_tool_use: true },
      { type: 'adaptive' },
      { type: 'auto', disable_parallel_tool_use: true },
      ['t1', 't2', 't7'],
    ],
  ])('%s: the choice left to Claude', (_name, choice, thinking, taken, tools) => {
    const out = withAnthropicFixes(request(choice, thinking), forced);
    expect(out.ctxgate_anthropic.tool_choice).toEqual(taken);
    expect(out.ctxgate_anthropic.tools.map((each) => each.name)).toEqual(tools);
  });

  it('leaves a forced tool as it is without thinking, or thinking disabled', () => {
    for (const thinking of [undefined, { type: 'disabled' }]) {
      const asked = request({ type: 'tool', name: 't2' }, thinking);
      expect(withAnthropicFixes(asked, forced)).toBe(asked);
    }
  });

  it("leaves the choice to the model whatever its thinking after another's refusal (DeepSeek's endpoint)", () => {
    const out = withAnthropicFixes(request({ type: 'tool', name: 't2' }, undefined), [
      { field: 'tool_choice.forced' },
    ]);
    expect(out.ctxgate_anthropic.tool_choice).toEqual({ type: 'auto' });
  });

  it('leaves out thinking turned off, and metadata with the user id the chat request carries', () => {
    const asked = Object.assign(request(undefined, { type: 'disabled' }), { user: 'u-1' });
    (asked.ctxgate_anthropic as Record<string, unknown>).metadata = { user_id: '{"device_id":"a"}' };
    const out = withAnthropicFixes(asked, [{ field: 'thinking.type.disabled' }, { field: 'metadata' }]);
    expect(out.ctxgate_anthropic).not.toHaveProperty('thinking');
    expect(out.ctxgate_anthropic).not.toHaveProperty('metadata');
    expect(out).not.toHaveProperty('user');
  });

  it('keeps at most the tools the model takes: the forced one and those the conversation called first', () => {
    const out = withAnthropicFixes(request({ type: 'tool', name: 't2' }, undefined), [
      { field: 'tools.length', atMost: 2 },
    ]);
    expect(out.ctxgate_anthropic.tools.map((each) => each.name)).toEqual(['t2', 't7']);
  });
});

describe('withAnthropicFixes: thinking in the mode the model takes', () => {
  const request = (thinking: unknown, maxTokens = 8_000) => ({
    model: 'claude',
    max_tokens: maxTokens,
    ctxgate_anthropic: { thinking, output_config: { effort: 'high' } },
  });

  it('asks a budget as adaptive thinking of a model that refused a budget, the effort kept', () => {
    expect(
      withAnthropicFixes(request({ type: 'enabled', budget_tokens: 4_000 }), [
        { field: 'thinking.type.enabled' },
      ]).ctxgate_anthropic,
    ).toEqual({ thinking: { type: 'adaptive' }, output_config: { effort: 'high' } });
  });

  it('asks adaptive thinking as a budget of half the answer of a model that refused it; none under 1,024 tokens', () => {
    const fix = [{ field: 'thinking.type.adaptive' }];
    expect(withAnthropicFixes(request({ type: 'adaptive' }), fix).ctxgate_anthropic.thinking).toEqual({
      type: 'enabled',
      budget_tokens: 4_000,
    });
    expect(withAnthropicFixes(request({ type: 'adaptive' }, 2_000), fix).ctxgate_anthropic).toEqual({
      output_config: { effort: 'high' },
    });
  });

  it('leaves a mode the model takes, and disabled thinking, as they are', () => {
    const adaptive = request({ type: 'adaptive' });
    expect(withAnthropicFixes(adaptive, [{ field: 'thinking.type.enabled' }])).toBe(adaptive);
    const disabled = request({ type: 'disabled' });
    expect(withAnthropicFixes(disabled, [{ field: 'thinking.type.adaptive' }])).toBe(disabled);
  });
});

describe('effortInstead and the effort fixes', () => {
  it('asks an effort taken as it is, else the highest taken not above it, else the lowest taken', () => {
    expect(effortInstead('medium', ['low', 'medium'])).toBe('medium');
    expect(effortInstead('high', ['medium'])).toBe('medium');
    expect(effortInstead('xhigh', ['low', 'medium', 'high'])).toBe('high');
    expect(effortInstead('none', ['minimal', 'low', 'medium', 'high'])).toBe('minimal');
    expect(effortInstead('low', ['high', 'medium'])).toBe('medium');
    expect(effortInstead('high', ['turbo'])).toBeUndefined();
  });

  it("writes output_config's effort as the model takes it, and none into one refused whole", () => {
    const request = (effort: string) => ({
      model: 'claude',
      ctxgate_anthropic: { output_config: { effort, format: { type: 'json' } } },
    });
    const fixes = [
      { field: 'output_config.effort', value: 'low,medium,high' },
      { field: 'output_config.effort', value: 'medium' },
    ];
    expect(withAnthropicFixes(request('xhigh'), fixes).ctxgate_anthropic).toEqual({
      output_config: { effort: 'medium', format: { type: 'json' } },
    });
    expect(
      withAnthropicFixes(request('xhigh'), [...fixes, { field: 'output_config' }]).ctxgate_anthropic,
    ).toEqual({});
    const taken = request('medium');
    expect(withAnthropicFixes(taken, fixes)).toBe(taken);
  });

  it('writes reasoning_effort as the nearest the model takes; an effort it takes is left as it is', () => {
    const fix = [{ field: 'reasoning_effort', value: 'low,medium,high' }];
    expect(applyFieldFixes({ reasoning_effort: 'xhigh' }, fix)).toEqual({ reasoning_effort: 'high' });
    expect(applyFieldFixes({ reasoning_effort: 'minimal' }, fix)).toEqual({ reasoning_effort: 'low' });
    const taken = { reasoning_effort: 'medium' };
    expect(applyFieldFixes(taken, fix)).toBe(taken);
  });
});

describe('withToolHistoryAsText', () => {
  const call = (id: string, name: string, args: string) => ({
    id,
    type: 'function',
    function: { name, arguments: args },
  });

  it('tells calls in their answers and results as user text, joined so that the roles alternate', () => {
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Read both files.' },
      {
        role: 'assistant',
        content: 'Reading.',
        tool_calls: [call('c1', 'read', '{"path":"a.ts"}'), call('c2', 'read', '{"path":"b.ts"}')],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'A' },
      { role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: 'B' }] },
      { role: 'user', content: 'Summarize.' },
    ];
    expect(withToolHistoryAsText(messages)).toEqual([
      { role: 'user', content: 'Read both files.' },
      {
        role: 'assistant',
        content: 'Reading.\n[called read({"path":"a.ts"})]\n[called read({"path":"b.ts"})]',
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: '[result of read]\nA' },
          { type: 'text', text: '[result of read]' },
          { type: 'text', text: 'B' },
          { type: 'text', text: 'Summarize.' },
        ],
      },
    ]);
    expect(messages[1]?.tool_calls).toHaveLength(2);
  });

  it('is the same array for a conversation of no calls', () => {
    const messages: ContextMessage[] = [
      { role: 'user', content: 'Hi.' },
      { role: 'assistant', content: 'Hello.' },
    ];
    expect(withToolHistoryAsText(messages)).toBe(messages);
  });

  it('leaves a user message after an answer as it was (only results join)', () => {
    const messages: ContextMessage[] = [
      { role: 'assistant', content: null, tool_calls: [call('c1', 'ls', '{}')] },
      { role: 'tool', tool_call_id: 'c1', content: 'a.ts' },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'Thanks.' },
    ];
    expect(withToolHistoryAsText(messages)).toEqual([
      { role: 'assistant', content: '[called ls({})]' },
      { role: 'user', content: '[result of ls]\na.ts' },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'Thanks.' },
    ]);
  });
});
