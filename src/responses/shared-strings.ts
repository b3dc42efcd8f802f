// Which strings of a stored response's input items and Response its chat messages hold too, so that
// Redis holds each once (response-store.ts SharedString): found from what the bridge says each message
// was made of and from the answer's output items, each checked to be the same string.
import { valueAt, type JsonPath } from '../json-paths.js';
import type { SharedString } from '../store/response-store.js';
import type { BridgedRequest } from './bridge.js';

/** A shorter string is held twice: where it stands costs about as many bytes to say. */
const minSharedChars = 256;

const content: JsonPath = ['content'];
const argumentsPath: JsonPath = ['arguments'];

/** Where the arguments of tool call `index` stand in an assistant message. */
const callArguments = (index: number): JsonPath => ['tool_calls', index, 'function', 'arguments'];

/** Field `name` of `value` when it is an object. */
const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;

/**
 * The strings of `inputItems` and `response` (the Response object) that `messages` hold too, of 256
 * characters or more: `messages` are the bridged request's messages, then the assistant's reply, and
 * `inputItems` its input items as stored.
 */
export function sharedStrings(
  bridged: Pick<BridgedRequest, 'sources' | 'itemSources'>,
  messages: readonly unknown[],
  inputItems: readonly unknown[],
  response: Record<string, unknown>,
): SharedString[] {
  const shared: SharedString[] = [];
  /** Whether `value` is long and the string at `inMessage` of message `position`; named, when it is. */
  const share = (
    value: unknown,
    held: readonly (string | number)[],
    inHeld: JsonPath,
    position: number,
    inMessage: JsonPath,
  ): boolean => {
    if (typeof value !== 'string' || value.length < minSharedChars) return false;
    if (value !== valueAt(messages[position], inMessage)) return false;
    shared.push([held.concat(inHeld), [position as string | number].concat(inMessage)]);
    return true;
  };
  // An input item's strings, in the messages made of the element it is.
  const itemOf: number[] = [];
  bridged.itemSources.origins.forEach((element, item) => {
    if (element >= 0) itemOf[element] = item;
  });
  const { origins, strings = [] } = bridged.sources;
  origins.forEach((element, position) => {
    const item = element < 0 ? undefined : itemOf[element];
    if (item === undefined || position >= messages.length - 1) return;
    const held = inputItems[item];
    // A plain message's text is its item's content (the bridge names only the strings it moved).
    const plain = share(field(held, 'content'), ['inputItems', item], content, position, content);
    for (const { inMessage, inElement } of strings[position] ?? []) {
      if (plain && inElement.length === 1 && inElement[0] === 'content') continue;
      share(valueAt(held, inElement), ['inputItems', item], inElement, position, inMessage);
    }
  });
  // A tool call's arguments, in the assistant message its function_call item joined (by its call id).
  const callItems = new Map<unknown, number>();
  inputItems.forEach((item, index) => {
    if (field(item, 'type') === 'function_call') callItems.set(field(item, 'call_id'), index);
  });
  messages.forEach((message, position) => {
    const calls = position < messages.length - 1 ? field(message, 'tool_calls') : undefined;
    if (!Array.isArray(calls)) return;
    calls.forEach((call: unknown, index) => {
      const item = callItems.get(field(call, 'id'));
      if (item === undefined) return;
      share(
        field(inputItems[item], 'arguments'),
        ['inputItems', item],
        argumentsPath,
        position,
        callArguments(index),
      );
    });
  });
  // The answer's text and tool-call arguments, in the Response's output items.
  const reply = messages.length - 1;
  const calls = field(messages[reply], 'tool_calls');
  const inReply: JsonPath[] = [
    content,
    ...(Array.isArray(calls) ? calls.map((_call, index) => callArguments(index)) : []),
  ];
  const output = Array.isArray(response.output) ? (response.output as unknown[]) : [];
  output.forEach((item, index) => {
    const parts = field(item, 'content');
    const places: JsonPath[] = [
      argumentsPath,
      ...(Array.isArray(parts) ? parts.map((_part, part) => ['content', part, 'text']) : []),
    ];
    for (const place of places) {
      const value = valueAt(item, place);
      inReply.some((from) => share(value, ['response', 'output', index], place, reply, from));
    }
  });
  return shared;
}
