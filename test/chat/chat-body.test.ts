// The upstream body built from known message bytes must be exactly what JSON.stringify gives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../../src/context/types.js';
import { serializeChatBody } from '../../src/chat/chat-body.js';

const message = fc.record({
  role: fc.constantFrom('user', 'assistant', 'tool'),
  content: fc.oneof(fc.string({ unit: 'grapheme' }), fc.constant(null)),
  name: fc.option(fc.string(), { nil: undefined }),
});

describe('serializeChatBody', () => {
  it('equals JSON.stringify of the request with its messages replaced, known bytes or not', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string().filter((key) => key !== '__proto__' && key !== 'messages'),
          fc.jsonValue(),
        ),
        fc.constantFrom('first', 'last', 'absent'),
        fc.array(fc.tuple(message, fc.boolean()), { maxLength: 8 }),
        (fields, position, entries) => {
          const messages = entries.map(([entry]) => entry as ContextMessage);
          const known = entries.map(([entry, isKnown]) =>
            isKnown ? Buffer.from(JSON.stringify(entry)) : undefined,
          );
          const request: Record<string, unknown> =
            position === 'first'
              ? { messages: [], ...fields }
              : position === 'last'
                ? { ...fields, skipped: undefined, messages: [] }
                : { ...fields };
          const body = serializeChatBody(request, messages, known);

          expect(body.toString('utf8')).toBe(JSON.stringify({ ...request, messages }));
        },
      ),
    );
  });
});
