// The forms in which models write tool calls as text (text-call-forms.ts), as tables of the forms servers
// without a tool parser give — Hermes' and Qwen's JSON blocks, Qwen3-Coder's XML, GLM's, Mistral's, Kimi's,
// MiniMax's, DeepSeek's, GPT-OSS's, a call's JSON alone — of calls drafted in a reasoning, and of text that
// is not a call.
import { describe, expect, it } from 'vitest';
import { callsInText } from '../../src/upstream/text-call-forms.js';
import { drafted, dsml, hermes, qwenCoder, tools } from '../helpers/text-call-fixtures.js';

describe('callsInText', () => {
  it.each([
    ["Hermes' and Qwen's block", hermes, [['edit', { path: 'a.ts', line: 3 }]], ''],
    [
      "Qwen3-Coder's block, each value as its schema's type says",
      qwenCoder,
      [['edit', { path: 'src/a b.ts', line: 3, flags: ['x'] }]],
      '',
    ],
    [
      'a sentence, then two blocks',
      `Let me edit.\n${hermes}\n${hermes}`,
      [
        ['edit', { path: 'a.ts', line: 3 }],
        ['edit', { path: 'a.ts', line: 3 }],
      ],
      'Let me edit.',
    ],
    [
      'a block its end of turn cut before its closing marker',
      '<tool_call>\n{"name": "list", "arguments": {}}',
      [['list', {}]],
      '',
    ],
    ['the JSON alone', '{"name": "edit", "arguments": {"path": "a.ts"}}', [['edit', { path: 'a.ts' }]], ''],
    [
      "GLM's block, each value as its schema's type says; one of no arguments",
      '<tool_call>edit\n<arg_key>path</arg_key>\n<arg_value>a.ts</arg_value>\n<arg_key>line</arg_key>\n<arg_value>7</arg_value>\n</tool_call><tool_call>list</tool_call>',
      [
        ['edit', { path: 'a.ts', line: 7 }],
        ['list', {}],
      ],
      '',
    ],
    [
      "Mistral's, a sentence first (Devstral, Mistral Small 3.2)",
      'I will list.[TOOL_CALLS]list[ARGS]{}[TOOL_CALLS]edit[CALL_ID]a1b2c3d4e[ARGS]{"line": 2}',
      [
        ['list', {}],
        ['edit', { line: 2 }],
      ],
      'I will list.',
    ],
    [
      "GPT-OSS's Harmony markup: its calls (json glued to one name), its final channel the text",
      '<|channel|>analysis<|message|>Need to edit.<|end|><|start|>assistant<|channel|>commentary to=functions.edit <|constrain|>json<|message|>{"line": 1}<|call|><|start|>assistant<|channel|>commentary to=functions.listjson<|message|>{}<|call|><|start|>assistant<|channel|>final<|message|>Done.<|return|>',
      [
        ['edit', { line: 1 }],
        ['list', {}],
      ],
      'Done.',
    ],
    [
      "a block whose sentence names Harmony's recipient",
      `Calls go to=functions.list in GPT-OSS.\n${hermes}`,
      [['edit', { path: 'a.ts', line: 3 }]],
      'Calls go to=functions.list in GPT-OSS.',
    ],
    [
      "Kimi K2's section, a sentence first (moonshotai/kimi-k2.6 through OpenRouter)",
      'I will edit.<|tool_calls_section_begin|><|tool_call_begin|>functions.edit:0<|tool_call_argument_begin|>{"path": "a.ts"}<|tool_call_end|> <|tool_call_begin|> functions.list:1 <|tool_call_argument_begin|> {} <|tool_call_end|><|tool_calls_section_end|>',
      [
        ['edit', { path: 'a.ts' }],
        ['list', {}],
      ],
      'I will edit.',
    ],
    [
      "MiniMax-M2's block of two invokes, each value as its schema's type says (llama.cpp, ggml-org/llama.cpp#16904)",
      '<think>Two edits.</think>\n<minimax:tool_call>\n<invoke name="edit">\n<parameter name="path">a b.ts</parameter>\n<parameter name="line">3</parameter>\n</invoke>\n<invoke name="list">\n</invoke>\n</minimax:tool_call>',
      [
        ['edit', { path: 'a b.ts', line: 3 }],
        ['list', {}],
      ],
      '<think>Two edits.</think>',
    ],
    [
      "DeepSeek V4's blocks of attributes, its arguments inside (the hosted API, now and then: felinics/Memoh#435)",
      'Checking.\n<tool_call id="call_00_ab12" name="edit">\n{"path": "a.ts", "line": 3}\n</tool_call>\n<tool_call name=\'list\'>{}</tool_call>',
      [
        ['edit', { path: 'a.ts', line: 3 }],
        ['list', {}],
      ],
      'Checking.',
    ],
    [
      "DeepSeek V4's DSML, each value as its `string` attribute says (vllm-project/vllm#54686, cline/cline#14156)",
      dsml(
        'Editing.\n\n<D|tool_calls>\n<D|invoke name="edit">\n<D|parameter name="path" string="true">7</D|parameter>\n<D|parameter name="line" string="false">3</D|parameter>\n</D|invoke>\n<D|invoke name="list">\n</D|invoke>\n</D|tool_calls>',
      ),
      [
        ['edit', { path: '7', line: 3 }],
        ['list', {}],
      ],
      'Editing.',
    ],
    [
      "DeepSeek V3.2's DSML block (`function_calls`), its values typed by the schema without the attribute",
      dsml(
        '<D|function_calls><D|invoke name="edit"><D|parameter name="line">4</D|parameter></D|invoke></D|function_calls>',
      ),
      [['edit', { line: 4 }]],
      '',
    ],
    [
      "DSML's invokes without a block, the last cut (sgl-project/sglang#40236)",
      dsml(
        '<D|invoke name="list"></D|invoke>\n<D|invoke name="edit"><D|parameter name="path" string="true">a.ts</D|parameter>',
      ),
      [
        ['list', {}],
        ['edit', { path: 'a.ts' }],
      ],
      '',
    ],
    [
      "LFM2's Python calls between its markers (lmstudio-ai/lmstudio-bug-tracker#1979, vllm-project/vllm#39243)",
      'Looking.\n<|tool_call_start|>[edit(path="a b.ts", line=3), list()]<|tool_call_end|>',
      [
        ['edit', { path: 'a b.ts', line: 3 }],
        ['list', {}],
      ],
      'Looking.',
    ],
    [
      "LFM2's values as Python writes them: quotes, escapes, True, None, lists and dicts",
      `<|tool_call_start|>[edit(path='it\\'s "x"\\n', line=-2, flags=[True, None, 1.5, {'k': False}])]<|tool_call_end|>`,
      [['edit', { path: 'it\'s "x"\n', line: -2, flags: [true, null, 1.5, { k: false }] }]],
      '',
    ],
    [
      "Llama 4's JSON between its markers, text around it (on Bedrock: pydantic/pydantic-ai#2033)",
      'I\'ll look.\n\n<|python_start|>{"name": "edit", "parameters": {"path": "a.ts"}}<|python_end|>\n\nLet me see.',
      [['edit', { path: 'a.ts' }]],
      "I'll look.\n\nLet me see.",
    ],
    [
      "Llama 3.1's after its tag, two separated by `;` (raullenchai/Rapid-MLX#703)",
      '<|python_tag|>{"name": "list", "parameters": {}}; {"name": "edit", "parameters": {"line": 2, "path": "a;{b}.ts"}}<|eom_id|>',
      [
        ['list', {}],
        ['edit', { line: 2, path: 'a;{b}.ts' }],
      ],
      '',
    ],
    [
      "Llama 3.1's custom tool form, `<function=NAME>{…}</function>`",
      'Editing: <function=edit>{"path": "a.ts", "line": 9}</function>',
      [['edit', { path: 'a.ts', line: 9 }]],
      'Editing:',
    ],
    [
      "Qwen3-Coder's block whose server took out its `<tool_call>` markers",
      '<function=edit>\n<parameter=line>\n4\n</parameter>\n</function>\n',
      [['edit', { line: 4 }]],
      '',
    ],
    [
      "Kimi's singular markers, a name without `functions.`",
      '<|tool_call_section_begin|><|tool_call_begin|>list:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_section_end|>',
      [['list', {}]],
      '',
    ],
    [
      "Mistral's list (Mistral 7B v0.3)",
      '[TOOL_CALLS] [{"name": "list", "arguments": {}}]',
      [['list', {}]],
      '',
    ],
    [
      'the JSON in a fence, arguments as text',
      '```json\n{"name": "list", "parameters": "{}"}\n```',
      [['list', {}]],
      '',
    ],
    [
      "a reasoning that ends in the answer's call, nothing after (vllm-project/vllm#39056)",
      `<think>\nNeed the list.\n<tool_call>{"name": "list", "arguments": {}}</tool_call>\n</think>\n`,
      [['list', {}]],
      '<think>\nNeed the list.\n</think>',
    ],
    [
      "a call whose arguments hold the reasoning's closing marker",
      '<tool_call>{"name": "edit", "arguments": {"path": "</think>"}}</tool_call>',
      [['edit', { path: '</think>' }]],
      '',
    ],
    [
      "Magistral's: the call drafted in [THINK] left, the answer's taken",
      '[THINK]Maybe [TOOL_CALLS]edit[ARGS]{}, no.[/THINK]Listing.[TOOL_CALLS]list[ARGS]{}',
      [['list', {}]],
      '[THINK]Maybe [TOOL_CALLS]edit[ARGS]{}, no.[/THINK]Listing.',
    ],
    [
      "the JSON alone after the model's reasoning",
      '<think>A list.</think>\n\n{"name": "list", "arguments": {}}',
      [['list', {}]],
      '<think>A list.</think>',
    ],
  ])('%s: its calls', (_name, text, calls, rest) => {
    const found = callsInText(text, tools);
    expect(found?.calls.map((call) => [call.name, JSON.parse(call.arguments)])).toEqual(calls);
    expect(found?.text).toBe(rest);
  });

  it.each([
    [
      "Qwen3-Coder's",
      '<tool_call>\n<function=edit>\n<parameter=__proto__>\na\n</parameter>\n<parameter=constructor>\nb\n</parameter>\n</function>\n</tool_call>',
    ],
    [
      "GLM's",
      '<tool_call>edit\n<arg_key>__proto__</arg_key>\n<arg_value>a</arg_value>\n<arg_key>constructor</arg_key>\n<arg_value>b</arg_value>\n</tool_call>',
    ],
    [
      "MiniMax-M2's",
      '<minimax:tool_call>\n<invoke name="edit">\n<parameter name="__proto__">a</parameter>\n<parameter name="constructor">b</parameter>\n</invoke>\n</minimax:tool_call>',
    ],
    ["LFM2's", `<|tool_call_start|>[edit(__proto__='a', constructor='b')]<|tool_call_end|>`],
    [
      "Hermes' JSON",
      '<tool_call>{"name": "edit", "arguments": {"__proto__": "a", "constructor": "b"}}</tool_call>',
    ],
  ])('%s call of arguments named `__proto__` and `constructor`: both sent, as written', (_name, text) => {
    expect(callsInText(text, tools)?.calls.map((call) => call.arguments)).toEqual([
      '{"__proto__":"a","constructor":"b"}',
    ]);
  });

  it('a Python dict of a `__proto__` key (LFM2): the key is kept, not made the prototype of the value', () => {
    const text = `<|tool_call_start|>[edit(flags=[{'__proto__': {'path': 'x'}}])]<|tool_call_end|>`;
    expect(callsInText(text, tools)?.calls.map((call) => call.arguments)).toEqual([
      '{"flags":[{"__proto__":{"path":"x"}}]}',
    ]);
  });

  it.each(drafted)('a call drafted in the reasoning, then made (%s): made once', (_name, text, rest) => {
    const found = callsInText(text, tools);
    expect(found?.calls.map((call) => [call.name, JSON.parse(call.arguments)])).toEqual([
      ['edit', { path: 'a.ts', line: 3 }],
    ]);
    expect(found?.text).toBe(rest);
  });

  it.each([
    ['a tool not offered', '<tool_call>\n{"name": "rm", "arguments": {}}\n</tool_call>'],
    ['a block beside one not offered', `${hermes}<tool_call>{"name": "rm"}</tool_call>`],
    ['arguments that are not an object', '<tool_call>{"name": "edit", "arguments": [1]}</tool_call>'],
    ['a block that is not JSON', '<tool_call>edit a.ts</tool_call>'],
    ["Mistral's of a tool not offered", '[TOOL_CALLS]rm[ARGS]{}'],
    ["Mistral's without arguments", '[TOOL_CALLS]list'],
    [
      "GPT-OSS's of a tool not offered",
      '<|channel|>commentary to=functions.rm <|constrain|>json<|message|>{}<|call|>',
    ],
    [
      "GPT-OSS's of arguments that are not JSON",
      '<|channel|>commentary to=functions.list<|message|>ls -la<|call|>',
    ],
    [
      "Kimi's of a tool not offered",
      '<|tool_calls_section_begin|><|tool_call_begin|>functions.rm:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>',
    ],
    [
      "Kimi's of arguments that are not JSON",
      '<|tool_calls_section_begin|><|tool_call_begin|>functions.list:0<|tool_call_argument_begin|>ls<|tool_call_end|><|tool_calls_section_end|>',
    ],
    ["Kimi's section of no call", '<|tool_calls_section_begin|><|tool_calls_section_end|>'],
    [
      "MiniMax's of a tool not offered",
      '<minimax:tool_call><invoke name="rm"><parameter name="path">/</parameter></invoke></minimax:tool_call>',
    ],
    [
      "MiniMax's with text between its invokes",
      '<minimax:tool_call><invoke name="list"></invoke> and <invoke name="list"></invoke></minimax:tool_call>',
    ],
    ["MiniMax's block of no invoke", '<minimax:tool_call>\n</minimax:tool_call>'],
    ["Llama 3.1's built-in tool call", '<|python_tag|>brave_search.call(query="weather")'],
    ["Llama's custom form of a tool not offered", '<function=rm>{"path": "/"}</function>'],
    ["Llama's JSON of a tool not offered", '<|python_start|>{"name": "rm", "parameters": {}}<|python_end|>'],
    ["LFM2's of a tool not offered", '<|tool_call_start|>[rm(path="/")]<|tool_call_end|>'],
    ["LFM2's of an argument without its name", '<|tool_call_start|>[edit("a.ts")]<|tool_call_end|>'],
    ["LFM2's of a string never closed", '<|tool_call_start|>[edit(path="a.ts)]<|tool_call_end|>'],
    ["LFM2's of text after its list", '<|tool_call_start|>[list()] and more<|tool_call_end|>'],
    ["DSML's of a tool not offered", dsml('<D|tool_calls><D|invoke name="rm"></D|invoke></D|tool_calls>')],
    [
      "DSML's of a value that is not JSON where it says so",
      dsml(
        '<D|tool_calls><D|invoke name="edit"><D|parameter name="line" string="false">three</D|parameter></D|invoke></D|tool_calls>',
      ),
    ],
    ["DeepSeek's of a tool not offered", '<tool_call id="c1" name="rm">{"path": "/"}</tool_call>'],
    ["DeepSeek's without a name", '<tool_call id="c1">{"path": "a.ts"}</tool_call>'],
    [
      'a marker that only begins as a block does',
      '<tool_calls>{"name": "list", "arguments": {}}</tool_calls>',
    ],
    ["GLM's with a key and no value", '<tool_call>edit\n<arg_key>path</arg_key>\n</tool_call>'],
    ['JSON that is not a call', '{"path": "a.ts"}'],
    ['prose', 'Models write <tool_call> blocks.'],
    ['text of no marker', 'Hello.'],
    [
      'a call drafted in the reasoning, then an answer of text (a rehearsal, not a call)',
      `<think>I could run ${hermes} but it is not needed.</think>The file is fine as it is.`,
    ],
  ])('%s: none', (_name, text) => {
    expect(callsInText(text, tools)).toBeUndefined();
  });
});
