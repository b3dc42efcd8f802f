// Tools told in the prompt for a model whose server takes none: what the request and the messages become.
import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../../src/context/types.js';
import { offeredTools } from '../../src/upstream/text-tool-calls.js';
import { toolsPrompt, withToolsAsText } from '../../src/upstream/tools-as-text.js';

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The forecast for a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('toolsPrompt', () => {
  it('tells each function tool as JSON, and the form a call is written in', () => {
    const prompt = toolsPrompt([weather, { type: 'web_search' }], 'auto') ?? '';
    expect(prompt).toContain(
      '{"name":"get_weather","description":"The forecast for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}',
    );
    expect(prompt).not.toContain('web_search');
    expect(prompt).toContain(
      '<tool_call>\n{"name": "<tool name>", "arguments": <the arguments as a JSON object>}\n</tool_call>',
    );
    expect(prompt).not.toContain('Call ');
  });

  it('asks for a call when the choice forces one', () => {
    expect(toolsPrompt([weather], 'required')).toMatch(/Call at least one tool in this answer\.$/);
    expect(toolsPrompt([weather], { type: 'function', function: { name: 'get_weather' } })).toMatch(
      /Call get_weather in this answer\.$/,
    );
  });

  it('is undefined with no function tool', () => {
    expect(toolsPrompt([{ type: 'web_search' }], 'auto')).toBeUndefined();
  });
});

describe('withToolsAsText', () => {
  const messages: ContextMessage[] = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'c1', content: '18 °C' },
  ];

  it('sends no tools, tells them after the system prompt, and writes the history as the model is told to', () => {
    const request = { model: 'llama3:8b', tools: [weather], tool_choice: 'auto', parallel_tool_calls: true };
    const out = withToolsAsText(request, messages);
    expect(Object.keys(out.request)).toEqual(['model']);
    // The tools are still those the answer's calls are read against.
    expect([...(offeredTools(out.request)?.keys() ?? [])]).toEqual(['get_weather']);
    expect(out.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(String(out.messages[0]?.content)).toMatch(/^Be brief\.\n\n# Tools\n/);
    expect(out.messages[2]?.content).toBe(
      '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call>',
    );
    expect(out.messages[3]?.content).toBe('<tool_response name="get_weather">\n18 °C');
    // The caller's objects are not touched.
    expect(request.tools).toEqual([weather]);
    expect(messages[2]?.tool_calls).toHaveLength(1);
  });

  it('gives the tools a system message of their own first when none leads, and a part after parts', () => {
    const withoutSystem = withToolsAsText({ tools: [weather] }, messages.slice(1, 2));
    expect(withoutSystem.messages.map((message) => message.role)).toEqual(['system', 'user']);
    const parts = withToolsAsText({ tools: [weather] }, [
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      { role: 'user', content: 'Paris?' },
    ]);
    const content = parts.messages[0]?.content as Array<{ text: string }>;
    expect(content).toHaveLength(2);
    expect(content[1]?.text).toMatch(/^\n\n# Tools\n/);
  });

  it('tells no tool to a client that forbade calls, or of none that is a function; the history still as text', () => {
    for (const request of [
      { model: 'm', tools: [weather], tool_choice: 'none' },
      { model: 'm', tools: [{ type: 'web_search' }] },
    ]) {
      const out = withToolsAsText(request, messages);
      expect(out.request).toEqual({ model: 'm' });
      expect(offeredTools(out.request)).toBeUndefined();
      expect(out.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
      expect(out.messages[2]?.content).toContain('<tool_call>');
    }
  });

  it('is the same request and messages when there is nothing to change', () => {
    const request = { model: 'm' };
    const plain: ContextMessage[] = [{ role: 'user', content: 'Hi' }];
    const out = withToolsAsText(request, plain);
    expect(out.request).toBe(request);
    expect(out.messages).toBe(plain);
  });
});
