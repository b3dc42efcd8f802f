// An upstream's error message as the warn line logs it: the provider's own wording kept, what it quotes
// of the request elided — quoted passages, and words the request's text carries even when unquoted (a
// provider that echoes the input).
import { describe, expect, it } from 'vitest';
import { chatTextsOf, upstreamMessageForLog } from '../../src/upstream/upstream-message.js';

describe('upstreamMessageForLog', () => {
  it("keeps a provider's own wording whole", () => {
    const message = 'Incorrect API key provided. You can find your API key at https://platform.openai.com.';
    expect(upstreamMessageForLog(message, ['Summarize the quarterly report.'])).toBe(message);
  });

  it('elides quoted passages', () => {
    expect(
      upstreamMessageForLog("Invalid value for 'content': 'my secret plan'. Expected a string.", []),
    ).toBe("Invalid value for '…': '…'. Expected a string.");
  });

  it("elides words of the request's text the provider echoes without quotes", () => {
    const texts = [
      ...chatTextsOf([{ role: 'user', content: [{ type: 'text', text: 'Deploy Zephyrine-7 tonight' }] }]),
    ];
    expect(upstreamMessageForLog('Request blocked: Deploy Zephyrine-7 tonight violates policy', texts)).toBe(
      'Request blocked: … … … violates policy',
    );
  });

  it('reads tool call arguments as request text, and cuts the message at 200 characters', () => {
    const texts = [
      ...chatTextsOf([
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c', type: 'function', function: { name: 'f', arguments: '{"path":"/data/payroll"}' } },
          ],
        },
      ]),
    ];
    expect(upstreamMessageForLog('Cannot open /data/payroll', texts)).toBe('Cannot open /…/…');
    expect(upstreamMessageForLog('x'.repeat(1_000), [])).toHaveLength(200);
  });
});
